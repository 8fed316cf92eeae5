import Synchronization

/// Wakes the host page's long polls when something new is recorded, without polling: a poll reads
/// ``generation``, looks, and if it found nothing waits with ``wait(after:for:)`` until the next
/// ``signal()``, its time being up, or its request going away. A change made between the look and
/// the wait moves the generation on, so the wait returns at once and the poll looks again.
final class ChangeSignal: Sendable {
    private struct State {
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits under way, and those of them whose time was up (or whose task was cancelled) before
        /// they were registered.
        var active: Set<Int> = []
        var expired: Set<Int> = []
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// How many changes were signalled so far.
    var generation: Int { state.withLock { $0.generation } }

    /// What the signal holds of waits: those under way, registered, or expired before registering;
    /// nothing once every wait has returned, however it ended.
    var heldWaits: Int { state.withLock { $0.active.count + $0.waiters.count + $0.expired.count } }

    /// Records a change and wakes every waiting poll.
    func signal() {
        let waiting: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.generation += 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        waiting.forEach { $0.resume() }
    }

    /// Returns once a change is signalled after `generation`, `duration` has passed, or the task is
    /// cancelled, whichever comes first.
    func wait(after generation: Int, for duration: Duration) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            state.active.insert(state.nextWaiter)
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            do { try await Task.sleep(for: duration) } catch { return }
            self?.expire(id)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waits = state.withLock { state in
                    guard state.generation == generation, state.expired.remove(id) == nil, !Task.isCancelled else { return false }
                    state.waiters[id] = continuation
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            expire(id)
        }
        state.withLock { state in
            state.active.remove(id)
            state.expired.remove(id)
        }
    }

    private func expire(_ id: Int) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                if state.active.contains(id) { state.expired.insert(id) }
                return nil
            }
            return waiter
        }
        waiter?.resume()
    }
}
