import Dispatch
import MiniAppCore
import NIOPosix
import Synchronization

/// Work handed to threads of their own from the executor, which ``wait()`` waits for: freeing what an
/// install no longer needs (a 25 MB zip takes 3.5 ms to delete) while the install goes on to commit.
final class BackgroundWork: Sendable {
    private let executor: BlockingExecutor
    private let group = DispatchGroup()
    /// Work handed over and not finished yet.
    private let pending = Atomic<Int>(0)

    /// Work on threads of `executor`.
    init(executor: BlockingExecutor) {
        self.executor = executor
    }

    /// Runs `body` on a thread named `name`, or on the executor's pool when it runs as many threads of
    /// their own as it may (or the system has none to give).
    func run(name: String, _ body: @escaping @Sendable () -> Void) {
        let group = self.group
        pending.add(1, ordering: .relaxed)
        group.enter()
        let work: @Sendable () -> Void = { [self] in
            body()
            pending.subtract(1, ordering: .releasing)
            group.leave()
        }
        guard executor.startThread(name: name, work) else {
            // Run whatever the pool's state: ``wait()`` waits for it, and once the pool is stopped NIO
            // hands it over at once.
            executor.threadPool.submit { _ in work() }
            return
        }
    }

    /// Waits until everything handed over so far has finished. With nothing left, it returns at once:
    /// a wait for nothing made a cache hit wait 0.3 ms for a continuation's first use and a queue's thread.
    func wait() async {
        guard pending.load(ordering: .acquiring) > 0 else { return }
        await waitForPending()
    }

    /// The wait itself, kept out of its callers: inlined, it made every caller's async frame set up
    /// the continuation's type on entry, whose first use scans every conformance record (about a
    /// quarter of a millisecond of a cache hit that waits for nothing).
    @inline(never)
    private func waitForPending() async {
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
    }
}
