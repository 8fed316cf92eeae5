import CMiniAppTestSupport
public import Foundation
import Glibc
import NIOConcurrencyHelpers

/// A process the tests start: posix_spawn and waitpid, never Foundation's `Process`.
///
/// Foundation's `Process.run()` lists `/proc/self/fd` to close what the child should not inherit, and
/// past about 1,360 open descriptors it reads past the end of that listing and crashes the whole test
/// process (SIGSEGV in `memcpy`); it also ends the process with a `try!` when a close is interrupted
/// (EINTR). The suite holds about 2,000 descriptors in its first minutes (a few hundred clients' event
/// loops and sockets at once), so every start goes through here instead:
/// - the child gets `/dev/null` (or the file asked for) on stdin, the outputs asked for, and no other descriptor (glibc's
///   `closefrom` action), so no pipe of the test runner's stays open in a grandchild;
/// - its signal mask is empty and every signal has its default action (the runner's threads block
///   some, and a child would inherit that mask across exec);
/// - it is reaped once, under a lock, so a signal is never sent to a reused process ID.
public final class ChildProcess: Sendable {
    /// Where the child's stdout or stderr goes.
    public enum Output: Sendable {
        /// `/dev/null`.
        case null
        /// The file at this path, created or truncated.
        case file(String)
        /// A copy of this open descriptor of the caller's.
        case descriptor(Int32)
        /// The one pipe that ``readToEnd()`` and ``readLine()`` read; stdout and stderr both given
        /// `.pipe` share it.
        case pipe
        /// For stderr: wherever stdout goes.
        case standardOutput
    }

    /// How the child ended.
    public enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    /// A child that could not be started.
    public struct StartError: Error, CustomStringConvertible {
        public var executable: String
        public var errno: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }
    }

    public let processIdentifier: Int32
    /// The reading end of the output pipe, when an output was `.pipe`.
    private let pipe: Int32?
    /// The wait status once reaped.
    private let reaped = NIOLockedValueBox<Int32?>(nil)

    /// Starts `executable` (an absolute path) with `arguments`, in `directory` when given, with
    /// `environment` or else this process's, and `stdin` (a path opened for reading) on stdin.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: String = "/dev/null", stdout: Output = .null, stderr: Output = .null
    ) throws {
        var pipeEnds: [Int32] = [-1, -1]
        let wantsPipe = [stdout, stderr].contains { if case .pipe = $0 { true } else { false } }
        if wantsPipe, CMiniAppTestSupport_closeOnExecPipe(&pipeEnds) != 0 { throw StartError(executable: executable, errno: errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        for (output, target) in [(stdout, Int32(1)), (stderr, Int32(2))] {
            switch output {
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            case .pipe: posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], target)
            case .standardOutput: posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
        }
        let prepared = CMiniAppTestSupport_closeOthersAndChangeDirectory(&actions, directory)
        guard prepared == 0 else {
            if wantsPipe { pipeEnds.forEach { close($0) } }
            throw StartError(executable: executable, errno: prepared)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        var pid = pid_t()
        let spawned = if envp != nil {
            posix_spawn(&pid, executable, &actions, &attributes, argv, &envp!)
        } else {
            posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        if wantsPipe { close(pipeEnds[1]) }
        guard spawned == 0 else {
            if wantsPipe { close(pipeEnds[0]) }
            throw StartError(executable: executable, errno: spawned)
        }
        processIdentifier = pid
        pipe = wantsPipe ? pipeEnds[0] : nil
    }

    deinit {
        if let pipe { close(pipe) }
        // Nobody can signal it any more: it is reaped whenever it ends (a server a test stopped with
        // `terminate()`), so no zombie stays behind.
        if reaped.withLockedValue({ $0 }) == nil {
            let pid = processIdentifier
            Thread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            }.start()
        }
    }

    /// Whether the child has not ended yet; one that has is reaped.
    public var isRunning: Bool {
        reaped.withLockedValue { status in
            if status != nil { return false }
            var waited: Int32 = 0
            guard waitpid(processIdentifier, &waited, WNOHANG) == processIdentifier else { return true }
            status = waited
            return false
        }
    }

    /// Sends `signal` (SIGKILL unless told) unless the child has been reaped.
    public func kill(_ signal: Int32 = SIGKILL) {
        reaped.withLockedValue { status in
            if status == nil { _ = Glibc.kill(processIdentifier, signal) }
        }
    }

    /// Sends SIGTERM, as Foundation's `terminate()` does.
    public func terminate() { kill(SIGTERM) }

    /// Sends SIGINT, as Foundation's `interrupt()` does.
    public func interrupt() { kill(SIGINT) }

    /// Kills the child and reaps it on a thread of its own: for a `defer` in an async test, which must
    /// neither block the pool nor leave a zombie.
    public func stop() {
        kill()
        Thread { self.waitUntilExit() }.start()
    }

    /// Blocks until the child ends and returns its ``terminationStatus``: for threads of one's own
    /// (``offPool(_:)``), a `defer` or a static.
    @discardableResult
    public func waitUntilExit() -> Int32 {
        if reaped.withLockedValue({ $0 }) == nil {
            // Waits without reaping, so that the reaping, and a kill, stay under the lock.
            var info = siginfo_t()
            while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
            reaped.withLockedValue { status in
                guard status == nil else { return }
                var waited: Int32 = 0
                while waitpid(processIdentifier, &waited, 0) < 0, errno == EINTR {}
                status = waited
            }
        }
        return terminationStatus
    }

    /// Waits, off Swift's cooperative pool, until the child ends; returns its ``terminationStatus``.
    @discardableResult
    public func exited() async -> Int32 {
        await offPool { self.waitUntilExit() }
    }

    private var status: Int32 {
        guard let status = reaped.withLockedValue({ $0 }) else { preconditionFailure("the child has not ended") }
        return status
    }

    /// The exit code, or the signal that ended the child; once it has ended.
    public var terminationStatus: Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }

    /// Whether the child exited or was ended by a signal; once it has ended.
    public var terminationReason: TerminationReason {
        status & 0x7F == 0 ? .exit : .uncaughtSignal
    }

    /// Everything written to the pipe until every writer has closed it (the child and whatever it
    /// started); blocking.
    public func readToEnd() -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while let count = read(into: &buffer), count > 0 { data.append(contentsOf: buffer[..<count]) }
        return data
    }

    /// The next line written to the pipe, without its newline; nil at the end. Blocking, and reads a
    /// byte at a time, so that nothing after the line is taken from the pipe.
    public func readLine() -> String? {
        var line: [UInt8] = []
        var byte = [UInt8](repeating: 0, count: 1)
        while let count = read(into: &byte), count == 1 {
            if byte[0] == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte[0])
        }
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
    }

    /// One read from the pipe; nil on an error.
    private func read(into buffer: inout [UInt8]) -> Int? {
        guard let pipe else { preconditionFailure("no output of the child goes to a pipe") }
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(pipe, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            return count < 0 ? nil : count
        }
    }

    /// Runs `executable` with stdout (and stderr, when `mergeErrors`) in a pipe; returns its status and
    /// what it printed, read and waited for off Swift's cooperative pool.
    public static func output(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, mergeErrors: Bool = false
    ) async throws -> (status: Int32, output: String) {
        let child = try ChildProcess(executable, arguments, environment: environment, stdout: .pipe, stderr: mergeErrors ? .pipe : .null)
        return await offPool {
            let data = child.readToEnd()
            return (child.waitUntilExit(), String(decoding: data, as: UTF8.self))
        }
    }
}
