import Dispatch
import MiniAppCore

/// Work handed to threads of its own, which ``wait()`` waits for: freeing what an install no longer
/// needs (a 25 MB zip takes 3.5 ms to delete) while the install goes on to commit.
final class BackgroundWork: Sendable {
    private let group = DispatchGroup()

    /// Runs `body` on a thread named `name`, or here when no thread can be had.
    func run(name: String, _ body: @escaping @Sendable () -> Void) {
        let group = self.group
        group.enter()
        guard WorkerThreads.detach(name: name, {
            body()
            group.leave()
        }) else {
            body()
            group.leave()
            return
        }
    }

    /// Waits until everything handed over so far has finished.
    func wait() async {
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
    }
}
