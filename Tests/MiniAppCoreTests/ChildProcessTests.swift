import Foundation
import MiniAppTestSupport
import Testing

/// The test support's process starter, which every test that runs a tool or `miniapp` goes through.
struct ChildProcessTests {
    /// What `/proc/<shell>/fd` lists, from a shell the starter started.
    private static func descriptors() async throws -> [String] {
        let (status, output) = try await ChildProcess.output("/bin/sh", ["-c", "ls /proc/$$/fd"])
        #expect(status == 0)
        return output.split(separator: "\n").map(String.init)
    }

    @Test func aChildGetsTheThreeStandardDescriptorsAndDefaultSignalsOnly() async throws {
        // Descriptors of the test process's without close-on-exec, as a careless library leaves them.
        let open = (0..<8).map { _ in Glibc.open("/dev/null", O_RDONLY) }
        defer { open.forEach { close($0) } }
        #expect(try await Self.descriptors() == ["0", "1", "2"])
        // grep's own masks, as it got them (a shell changes its mask while it waits for a child), started
        // from a thread that blocks SIGTERM and SIGUSR1, as threads of a test runner may.
        let output = try await offPool { () throws -> String in
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            sigaddset(&blocked, SIGUSR1)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            let child = try ChildProcess("/bin/grep", ["-E", "^Sig(Blk|Ign)", "/proc/self/status"], stdout: .pipe)
            let data = child.readToEnd()
            #expect(child.waitUntilExit() == 0)
            return String(decoding: data, as: UTF8.self)
        }
        // Signals 1 to 31 (bits 0 to 30): neither blocked nor ignored. Above them, glibc keeps two for
        // itself, which posix_spawn cannot reset.
        let masks = output.split(separator: "\n").compactMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }
        #expect(masks.count == 2)
        #expect(masks.allSatisfy { $0 & 0x7FFF_FFFF == 0 }, "\(output)")
    }

    /// Foundation's `Process.run()` crashed the test process past about 1,360 open descriptors; the
    /// suite holds about 2,000 in its first minutes.
    @Test func startsWorkWithThousandsOfDescriptorsOpen() async throws {
        let open = (0..<3_000).map { _ in Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { open.forEach { close($0) } }
        try #require(open.allSatisfy { $0 >= 0 })
        for _ in 0..<20 {
            #expect(try await ChildProcess("/bin/true", []).exited() == 0)
        }
        #expect(try await Self.descriptors() == ["0", "1", "2"])
    }

    @Test func aKilledChildEndsBySignalAndIsSignalledNoMoreOnceReaped() async throws {
        let child = try ChildProcess("/bin/sleep", ["900"])
        #expect(child.isRunning)
        child.kill()
        #expect(await child.exited() == SIGKILL)
        #expect(child.terminationReason == .uncaughtSignal)
        #expect(!child.isRunning)
        child.kill()
        #expect(try await ChildProcess("/bin/sh", ["-c", "exit 3"]).exited() == 3)
        #expect(throws: ChildProcess.StartError.self) { try ChildProcess("/nonexistent/tool", []) }
    }
}
