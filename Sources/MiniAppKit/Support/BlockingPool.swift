package import NIOPosix

/// Where the library's blocking work runs (extraction, hashing, deletion, syncs, walks of the cache):
/// a thread pool made for it, never Swift's cooperative pool, whose few threads belong to the host.
package struct BlockingPool: Sendable {
    /// The pool the work runs on.
    package let threadPool: NIOThreadPool

    /// Work on `threadPool`.
    package init(_ threadPool: NIOThreadPool) {
        self.threadPool = threadPool
    }

    /// Runs `body` on the pool and waits for it. A task cancelled before `body` starts gets a
    /// `CancellationError` and `body` never runs; once started, `body` runs to its end.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threadPool.runIfActive(body)
    }

    /// Runs `body` on the pool and waits for it even when the calling task is cancelled: for the
    /// clean-up that puts the cache back as it was, which must happen whatever stopped the work.
    package func runToCompletion<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            threadPool.submit { state in
                guard case .active = state else { return continuation.resume(throwing: CancellationError()) }
                continuation.resume(with: Result(catching: body))
            }
        }
    }
}
