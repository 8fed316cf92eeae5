import Foundation
internal import CDispatch
internal import CMiniAppSystem

/// Work split over threads started for it.
package enum WorkerThreads {
    /// Runs `body(0)` on the calling thread and `body(1)` to `body(count - 1)` on threads of their own,
    /// named `name.1`, `name.2` and so on, and returns when every part has returned.
    ///
    /// `DispatchQueue.concurrentPerform` was not used: when its pool has no idle thread, it often runs
    /// every part on the caller, one after another (seen for the cache's quick check: 1.9 ms instead
    /// of 1.0 on two cores).
    package static func run(_ count: Int, name: String, _ body: @escaping @Sendable (Int) -> Void) {
        run(count, name: name, onCaller: {}, body)
    }

    /// ``run(_:name:_:)``, with `onCaller` run on the calling thread once the other threads are started
    /// (while they start) and before its own part; returns what `onCaller` returns.
    package static func run<Result>(_ count: Int, name: String, onCaller: () -> Result, _ body: @escaping @Sendable (Int) -> Void) -> Result {
        var threads: [pthread_t] = []
        for number in 1..<max(count, 1) {
            if let thread = start(Part(number: number, name: "\(name).\(number)", body: body), detached: false) {
                threads.append(thread)
            } else {
                // No thread to be had: the part runs here instead.
                body(number)
            }
        }
        let result = onCaller()
        body(0)
        for thread in threads { pthread_join(thread, nil) }
        return result
    }

    /// Runs `body` on a detached thread of its own, named `name` (at the lowest scheduling priority
    /// when `lowestPriority`); `false` when no thread could be had.
    @discardableResult
    package static func detach(name: String, lowestPriority: Bool = false, _ body: @escaping @Sendable () -> Void) -> Bool {
        start(Part(number: 0, name: name, body: { _ in
            if lowestPriority { CMiniAppSystem_lowerThisThreadsPriority() }
            body()
        }), detached: true) != nil
    }

    private static func start(_ part: Part, detached: Bool) -> pthread_t? {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        let context = Unmanaged.passRetained(part).toOpaque()
        var thread = pthread_t()
        guard pthread_create(&thread, &attributes, { context in
            let part = Unmanaged<Part>.fromOpaque(context!).takeRetainedValue()
            CMiniAppSystem_nameThisThread(part.name)
            part.body(part.number)
            return nil
        }, context) == 0 else {
            Unmanaged<Part>.fromOpaque(context).release()
            return nil
        }
        return thread
    }

    private final class Part {
        let number: Int
        let name: String
        let body: @Sendable (Int) -> Void

        init(number: Int, name: String, body: @escaping @Sendable (Int) -> Void) {
            self.number = number
            self.name = name
            self.body = body
        }
    }
}
