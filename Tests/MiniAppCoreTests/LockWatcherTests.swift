import Foundation
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppCore

/// The lock watcher against real holders: util-linux's `flock` in another process, which lets go by
/// exiting or by being killed, never by an explicit unlock.
struct LockWatcherTests {
    /// Starts `flock` holding an exclusive lock on `path` and becoming `sleep` for `seconds` (one process,
    /// which holds the lock until it ends); returns once it holds it.
    private func holder(_ path: String, seconds: Int) async throws -> ChildProcess {
        let process = try ChildProcess("/usr/bin/flock", ["--exclusive", "--no-fork", path, "sleep", String(seconds)])
        await offPool {
            let probe = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(probe) }
            // Until the holder has it, a lock try of ours succeeds: give it back and look again.
            while probe < 0 || flock(probe, LOCK_EX | LOCK_NB) == 0 {
                if probe >= 0 { flock(probe, LOCK_UN) }
                usleep(2_000)
            }
        }
        return process
    }

    /// Whether `process` has ended (a zombie: nothing reaps it before the test's end).
    private static func hasEnded(_ process: ChildProcess) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(end, offsetBy: 2)] == "Z"
    }

    private func lockFile() throws -> String {
        let path = try TemporaryDirectory.make().path + "/held.lock"
        try writeTestFile(path, [UInt8]())
        return path
    }

    @Test func aLockIsTakenWhenItsHolderExits() async throws {
        let path = try lockFile()
        let process = try await holder(path, seconds: 1)
        defer { process.stop() }
        let executor = BlockingExecutor()
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        #expect(await executor.locks.lockExclusively(descriptor, until: .now + .seconds(120)) == .acquired)
        #expect(Self.hasEnded(process), "the lock was taken while its holder still ran")
        await executor.shutdown()
    }

    @Test func aLockIsTakenWhenItsHolderIsKilled() async throws {
        let path = try lockFile()
        let process = try await holder(path, seconds: 900)
        defer { process.stop() }
        let executor = BlockingExecutor()
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        let waiter = Task { await executor.locks.lockExclusively(descriptor, until: .now + .seconds(120)) }
        try await Task.sleep(for: .milliseconds(100))
        process.kill()
        #expect(await waiter.value == .acquired)
        await executor.shutdown()
    }

    @Test func aLockOnAFolderIsTakenWhenItsHolderExits() async throws {
        let folder = try TemporaryDirectory.make().path
        let process = try await holder(folder, seconds: 1)
        defer { process.stop() }
        let executor = BlockingExecutor()
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(descriptor) }
        // Files coming and going in the folder wake nobody for good: the lock is still held.
        let waiter = Task { await executor.locks.lockExclusively(descriptor, until: .now + .seconds(120)) }
        for name in 0..<20 { try writeTestFile(folder + "/\(name)", [1]) }
        #expect(await waiter.value == .acquired)
        #expect(Self.hasEnded(process), "the lock was taken while its holder still ran")
        await executor.shutdown()
    }

    @Test func aWaitEndsAtItsDeadlineOrWhenCancelled() async throws {
        let path = try lockFile()
        let process = try await holder(path, seconds: 900)
        defer { process.stop() }
        let executor = BlockingExecutor()
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        #expect(await executor.locks.lockExclusively(descriptor, until: .now + .milliseconds(200)) == .timedOut)
        let waiter = Task { await executor.locks.lockExclusively(descriptor, until: .now + .seconds(60)) }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        #expect(await waiter.value == .cancelled)
        // A task cancelled before it waits gets the same answer.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await executor.locks.lockExclusively(descriptor, until: .now + .seconds(60))
        }
        #expect(await early.value == .cancelled)
        await executor.shutdown()
    }

    /// Holds a new lock file's lock, starts `count` tasks that each call `take` with its path and their
    /// number, lets go after 50 ms (by closing alone, as a killed holder does) and returns what they
    /// returned.
    private func takeInTurns<T: Sendable>(_ count: Int, _ take: @escaping @Sendable (String, Int) async -> T) async throws -> [T] {
        let path = try lockFile()
        let first = open(path, O_RDONLY | O_CLOEXEC)
        #expect(flock(first, LOCK_EX | LOCK_NB) == 0)
        let tasks = (0..<count).map { number in Task { await take(path, number) } }
        try await Task.sleep(for: .milliseconds(50))
        close(first)
        var values: [T] = []
        for task in tasks { values.append(await task.value) }
        return values
    }

    @Test func waitersInOneProcessTakeTheLockInTurn() async throws {
        let executor = BlockingExecutor()
        let turns = Turns()
        let outcomes = try await takeInTurns(8) { path, _ in
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            let outcome = await executor.locks.lockExclusively(descriptor, until: .now + .seconds(120))
            turns.enter()
            turns.leave()
            close(descriptor)
            return outcome
        }
        #expect(outcomes == Array(repeating: .acquired, count: 8))
        #expect(!turns.overlapped, "two waiters held the lock at once")
        await executor.shutdown()
    }

    @Test func aCriticalSectionRunsTheMomentItsLockIsHeld() async throws {
        let executor = BlockingExecutor()
        let turns = Turns()
        let sections = try await takeInTurns(6) { path, number in
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            return await executor.whileLocked(descriptor, until: .now + .seconds(120)) {
                turns.enter()
                usleep(2_000)
                turns.leave()
                close(descriptor)
                return number
            }
        }
        #expect(sections.map(\.outcome) == Array(repeating: .acquired, count: 6))
        #expect(sections.map(\.value) == Array(0..<6))
        #expect(!turns.overlapped, "two sections held the lock at once")
        await executor.shutdown()
    }
}

/// How many waiters hold the lock at once, and whether that was ever more than one.
private final class Turns: Sendable {
    private let holding = Atomic<Int>(0)
    private let twoAtOnce = Atomic<Bool>(false)

    func enter() {
        if holding.add(1, ordering: .relaxed).newValue > 1 { twoAtOnce.store(true, ordering: .relaxed) }
    }

    func leave() {
        holding.subtract(1, ordering: .relaxed)
    }

    var overlapped: Bool { twoAtOnce.load(ordering: .relaxed) }
}
