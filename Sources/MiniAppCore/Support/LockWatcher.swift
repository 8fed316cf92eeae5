import Glibc
import Synchronization
internal import CMiniAppSystem

/// Waits for `flock`s that other processes hold, without polling and without holding a thread per wait.
///
/// A lock's release makes no event of its own, but its holder lets go by closing the file (or by dying,
/// which closes it), and inotify reports that close. So a waiter's file is watched (through
/// `/proc/self/fd`, which names exactly the open file) before its lock is tried once more, so that no
/// release between the two is missed; then the waiter is suspended. One thread of the executor's, started
/// while anyone waits, reads the events, tries each woken waiter's lock with `LOCK_NB`, and ends the
/// waits whose deadline has passed.
///
/// The kernel reports a close just before it drops the lock of the file closed (a holder that lets go
/// or dies), so a waiter woken by a close that still finds the lock taken looks again a few times
/// after (1 ms, doubling, for about 2 s: the closing thread may be preempted between the two on a
/// loaded machine, and no later event would come), then waits for the next event. Where inotify cannot be had (the user's
/// instances are used up, no `/proc`), a waiter looks every 50 ms instead.
package final class LockWatcher: Sendable {
    package enum Outcome: Sendable, Equatable {
        case acquired
        case timedOut
        case cancelled
        /// `flock` failed for a reason other than another holder: its `errno`.
        case failed(Int32)
    }

    private struct Waiter {
        let descriptor: Int32
        /// The inotify watch of its file, -1 when it has none.
        let watch: Int32
        let deadline: ContinuousClock.Instant
        /// When to look again without an event: after a close that did not free the lock, or always
        /// for a waiter without a watch.
        var nextLook: ContinuousClock.Instant?
        var pause: Duration = .zero
        /// Called once, with how the wait ended.
        let finish: @Sendable (Outcome) -> Void
    }

    private struct State {
        /// The inotify descriptor and the pipe that wakes the thread (its read and write ends), made at
        /// the first wait.
        var notify: Int32 = -1
        var wake: (read: Int32, write: Int32) = (-1, -1)
        var waiters: [UInt64: Waiter] = [:]
        /// How many waiters use each watch (one per file: inotify gives the same watch for one inode).
        var watchUsers: [Int32: Int] = [:]
        /// Waits not registered yet, and whether their task was cancelled meanwhile.
        var unregistered: [UInt64: Bool] = [:]
        var nextID: UInt64 = 0
        var threadRunning = false
    }

    private let state = Mutex(State())
    private static let events = UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_ATTRIB)
    private static let unwatchedPause = Duration.milliseconds(50)
    private static let firstSettle = Duration.milliseconds(1)
    private static let lastSettle = Duration.milliseconds(1024)

    init() {}

    deinit {
        state.withLock { state in
            if state.notify >= 0 { close(state.notify) }
            if state.wake.read >= 0 {
                close(state.wake.read)
                close(state.wake.write)
            }
        }
    }

    /// Takes an exclusive `flock` on `descriptor`, waiting (suspended) until it is free, `deadline`
    /// passes or the task is cancelled. The descriptor must stay open until this returns.
    package func lockExclusively(_ descriptor: Int32, until deadline: ContinuousClock.Instant) async -> Outcome {
        if let outcome = Self.tryLock(descriptor) { return outcome }
        return await suspended(descriptor, until: deadline) { outcome, continuation in continuation.resume(returning: outcome) }
    }

    /// Takes an exclusive `flock` on `descriptor` as ``lockExclusively(_:until:)`` does, and the moment
    /// it holds it hands blocking `body` to `start`, which runs it on a thread at once: no hop through the
    /// caller's executor or a queue between, for a short critical section (`body` lets go of the lock)
    /// whose length other processes wait for. The value is `body`'s when the outcome is `acquired`.
    package func lockExclusively<T: Sendable>(
        _ descriptor: Int32, until deadline: ContinuousClock.Instant, thenRun body: @escaping @Sendable () -> T,
        startingWith start: @escaping @Sendable (_ work: @escaping @Sendable () -> Void) -> Void
    ) async -> (outcome: Outcome, value: T?) {
        await suspended(descriptor, until: deadline) { outcome, continuation in
            guard outcome == .acquired else { return continuation.resume(returning: (outcome, nil)) }
            start { continuation.resume(returning: (.acquired, body())) }
        }
    }

    /// Registers a wait for `descriptor`'s lock and suspends until `finish`, called once with how the
    /// wait ended (on whichever thread learns it), resumes the continuation.
    private func suspended<T: Sendable>(
        _ descriptor: Int32, until deadline: ContinuousClock.Instant,
        _ finish: @escaping @Sendable (Outcome, CheckedContinuation<T, Never>) -> Void
    ) async -> T {
        let id = state.withLock { state in
            state.nextID += 1
            state.unregistered[state.nextID] = false
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                register(id: id, descriptor: descriptor, deadline: deadline) { finish($0, continuation) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    private func cancel(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                // Not waiting yet (it will end at once) or already ended (nothing to do).
                if state.unregistered[id] != nil { state.unregistered[id] = true }
                return nil
            }
            Self.release(waiter.watch, in: &state)
            return waiter
        }
        waiter?.finish(.cancelled)
    }

    /// `acquired`, `failed`, or `nil` when another holder has the lock.
    private static func tryLock(_ descriptor: Int32) -> Outcome? {
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return .acquired }
        return errno == EWOULDBLOCK || errno == EINTR ? nil : .failed(errno)
    }

    private func register(id: UInt64, descriptor: Int32, deadline: ContinuousClock.Instant, finish: @escaping @Sendable (Outcome) -> Void) {
        enum Next { case answered(Outcome), waiting(startThread: Bool) }
        let next = state.withLock { state -> Next in
            if state.unregistered.removeValue(forKey: id) == true { return .answered(.cancelled) }
            if state.wake.read < 0 {
                var ends: [Int32] = [-1, -1]
                if CMiniAppSystem_nonBlockingPipe(&ends) == 0 { state.wake = (ends[0], ends[1]) }
            }
            if state.notify < 0 { state.notify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
            var watch: Int32 = -1
            if state.notify >= 0, state.wake.read >= 0 {
                watch = inotify_add_watch(state.notify, "/proc/self/fd/\(descriptor)", Self.events)
                if watch >= 0 { state.watchUsers[watch, default: 0] += 1 }
            }
            // The watch is in place: a release from now on wakes the thread, one before it shows here.
            if let outcome = Self.tryLock(descriptor) {
                Self.release(watch, in: &state)
                return .answered(outcome)
            }
            state.waiters[id] = Waiter(
                descriptor: descriptor, watch: watch, deadline: deadline,
                nextLook: watch < 0 ? .now + Self.unwatchedPause : nil, finish: finish
            )
            if state.threadRunning {
                var byte: UInt8 = 1
                _ = write(state.wake.write, &byte, 1)
                return .waiting(startThread: false)
            }
            state.threadRunning = true
            return .waiting(startThread: true)
        }
        switch next {
        case .answered(let outcome):
            finish(outcome)
        case .waiting(startThread: false):
            break
        case .waiting(startThread: true):
            if BlockingExecutor.start(BlockingExecutor.Part(number: 0, name: "miniapp.locks", body: { [self] _ in watch() }), detached: true) == nil {
                // No thread to be had: every wait ends now, as a failed lock would.
                for finish in endAll() { finish(.failed(EAGAIN)) }
            }
        }
    }

    private func endAll() -> [@Sendable (Outcome) -> Void] {
        state.withLock { state in
            let waiters = state.waiters.values
            for waiter in waiters { Self.release(waiter.watch, in: &state) }
            state.waiters = [:]
            state.threadRunning = false
            return waiters.map(\.finish)
        }
    }

    private static func release(_ watch: Int32, in state: inout State) {
        guard watch >= 0, let users = state.watchUsers[watch] else { return }
        if users > 1 {
            state.watchUsers[watch] = users - 1
        } else {
            state.watchUsers[watch] = nil
            inotify_rm_watch(state.notify, watch)
        }
    }

    /// The thread's loop: runs while anyone waits.
    private func watch() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 * InotifyEvent.minimumBuffer, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let next = state.withLock { state -> (notify: Int32, wake: Int32, milliseconds: Int32)? in
                guard !state.waiters.isEmpty else {
                    state.threadRunning = false
                    return nil
                }
                let soonest = state.waiters.values.map { min($0.deadline, $0.nextLook ?? $0.deadline) }.min()!
                let left = soonest - .now
                let milliseconds = left <= .zero ? 0 : Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                return (state.notify, state.wake.read, milliseconds)
            }
            guard let next else { return }
            var descriptors = [pollfd(fd: next.notify, events: Int16(POLLIN), revents: 0), pollfd(fd: next.wake, events: Int16(POLLIN), revents: 0)]
            _ = poll(&descriptors, 2, next.milliseconds)
            var woken: Set<Int32> = []
            var closed: Set<Int32> = []
            var overflow = false
            for event in next.notify >= 0 ? InotifyEvent.readAll(from: next.notify, using: buffer) : [] {
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { overflow = true }
                // A watched folder (the permission store's lock) reports its files' events too, with
                // their names: only its own count.
                guard event.name.isEmpty else { continue }
                woken.insert(event.watch)
                if event.mask & UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) != 0 { closed.insert(event.watch) }
            }
            var drained = [UInt8](repeating: 0, count: 64)
            while next.wake >= 0, read(next.wake, &drained, drained.count) > 0 {}
            let ended = state.withLock { state -> [(@Sendable (Outcome) -> Void, Outcome)] in
                let now = ContinuousClock.now
                var ended: [(@Sendable (Outcome) -> Void, Outcome)] = []
                for (id, var waiter) in state.waiters {
                    let looking = waiter.nextLook.map { $0 <= now } ?? false
                    if overflow || woken.contains(waiter.watch) || looking {
                        if let outcome = Self.tryLock(waiter.descriptor) {
                            ended.append((waiter.finish, outcome))
                            state.waiters[id] = nil
                            Self.release(waiter.watch, in: &state)
                            continue
                        }
                        if waiter.watch < 0 {
                            waiter.nextLook = now + Self.unwatchedPause
                        } else if closed.contains(waiter.watch) || overflow {
                            waiter.pause = Self.firstSettle
                            waiter.nextLook = now + waiter.pause
                        } else if looking {
                            waiter.pause *= 2
                            waiter.nextLook = waiter.pause <= Self.lastSettle ? now + waiter.pause : nil
                        }
                    }
                    if waiter.deadline <= now {
                        ended.append((waiter.finish, .timedOut))
                        state.waiters[id] = nil
                        Self.release(waiter.watch, in: &state)
                        continue
                    }
                    state.waiters[id] = waiter
                }
                return ended
            }
            for (finish, outcome) in ended { finish(outcome) }
        }
    }
}
