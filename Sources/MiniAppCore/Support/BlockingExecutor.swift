public import NIOPosix
import Synchronization
internal import CDispatch
internal import CMiniAppSystem

/// Where every blocking call of the library runs (extraction, hashing, deletion, syncs, walks of the
/// cache, the permission store's files, the registry's files): never on Swift's cooperative pool, whose
/// few threads belong to the host.
///
/// One executor serves a process: make it once (``MiniAppKit``'s runtime makes it), hand it to whatever
/// needs it, and call ``shutdown()`` once at the end. Its threads are bounded:
/// - a pool of ``poolThreads`` threads (NIO's `NIOThreadPool`), started at its first use, for work that
///   is awaited (``run(_:)``) or handed over (``submit(_:)``);
/// - at most ``maxOwnThreads`` threads of their own at once (``startThread(name:lowestPriority:_:)``,
///   ``startThreadWhenFree(name:lowestPriority:_:)``, ``runOnOwnThread(name:_:)``), for work that holds
///   its thread for as long as a download or a stream lasts and so must not hold one of the pool's;
///   past that bound a caller waits for one to end, or its work runs on the pool;
/// - one thread that watches lock files while a lock held by another process is waited for
///   (`LockWatcher`);
/// - fork-join parts (``forkJoin(_:name:_:)``), joined before the call returns, for the CPU-bound
///   loops whose speed needs every core at once (extraction, the cache's quick check, the app list).
public final class BlockingExecutor: Sendable {
    /// How many threads the pool has.
    public let poolThreads: Int
    /// How many threads of their own may run at once.
    public let maxOwnThreads: Int
    private let state = Mutex(State.idle)
    private let ownThreads = Mutex(OwnThreads())
    /// Waits for file locks that other processes hold (one thread of its own while anyone waits).
    package let locks = LockWatcher()

    /// The threads of their own running, and the callers waiting for one of them to end.
    private struct OwnThreads {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The pool is made and started at its first use, so that a process that never needs it (a command
    /// answered from the cache) pays nothing for it.
    private enum State {
        case idle
        case started(NIOThreadPool)
        case shutDown(NIOThreadPool?)
    }

    /// An executor whose pool has `poolThreads` threads (by default one per processor this process may
    /// run on, 2 to 16) and that runs at most `maxOwnThreads` threads of their own at once. Nothing
    /// starts until the first use.
    public init(poolThreads: Int? = nil, maxOwnThreads: Int = 256) {
        self.poolThreads = max(poolThreads ?? min(max(ProcessEnvironment.processorCount, 2), 16), 1)
        self.maxOwnThreads = max(maxOwnThreads, 1)
    }

    /// The pool, started now if it was not: for APIs that take an `NIOThreadPool` (such as NIO's and
    /// Hummingbird's file I/O). After ``shutdown()`` it is a stopped pool, which refuses new work.
    public var threadPool: NIOThreadPool {
        state.withLock { state in
            switch state {
            case .started(let pool):
                return pool
            case .shutDown(let pool?):
                return pool
            case .idle, .shutDown(nil):
                let pool = NIOThreadPool(numberOfThreads: poolThreads)
                if case .idle = state {
                    pool.start()
                    state = .started(pool)
                } else {
                    state = .shutDown(pool)
                }
                return pool
            }
        }
    }

    /// Starts the pool's threads if they are not running yet. Optional (the first use starts them):
    /// for a thread that has nothing else to do while the work that will need them gets ready.
    public func start() {
        _ = threadPool
    }

    /// Runs `body` on the pool and waits for it. A task cancelled before `body` starts gets a
    /// `CancellationError` and `body` never runs; once started, `body` runs to its end.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threadPool.runIfActive(body)
    }

    /// Runs `body` on the pool and waits for it even when the calling task is cancelled: for the
    /// clean-up that puts the cache back as it was, which must happen whatever stopped the work.
    package func runToCompletion<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let pool = threadPool
        return try await withCheckedThrowingContinuation { continuation in
            pool.submit { state in
                guard case .active = state else { return continuation.resume(throwing: CancellationError()) }
                continuation.resume(with: Result(catching: body))
            }
        }
    }

    /// Hands `body` to the pool without waiting for it (whoever needs it done waits in its own way);
    /// `body` does not run once the pool is shut down.
    package func submit(_ body: @escaping @Sendable () -> Void) {
        threadPool.submit { state in
            if case .active = state { body() }
        }
    }

    /// Runs blocking `body` on a thread of its own, or on the pool when ``maxOwnThreads`` are running:
    /// for a call that lasts as long as a download, which must not hold a pool thread for that long.
    package func runOnOwnThread<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let outcome: Result<T, any Error>? = await withCheckedContinuation { continuation in
            let started = startThread(name: name) { continuation.resume(returning: Result(catching: body)) }
            if !started { continuation.resume(returning: nil) }
        }
        if let outcome { return try outcome.get() }
        return try await run(body)
    }

    /// Runs `body` on a thread of its own named `name` (at the lowest scheduling priority when
    /// `lowestPriority`), which ends with `body`; `false` when ``maxOwnThreads`` are running or the
    /// system has no thread to give, and then `body` does not run.
    @discardableResult
    package func startThread(name: String, lowestPriority: Bool = false, _ body: @escaping @Sendable () -> Void) -> Bool {
        let free = ownThreads.withLock { threads in
            guard threads.running < maxOwnThreads else { return false }
            threads.running += 1
            return true
        }
        return free && startOwnThread(name: name, lowestPriority: lowestPriority, body)
    }

    /// Runs `body` on a thread of its own named `name`, as ``startThread(name:lowestPriority:_:)``
    /// does, but when ``maxOwnThreads`` are running it first waits, suspended (no thread of Swift's
    /// pool is held), until one of them ends. `false` only when the system has no thread to give, and
    /// then `body` does not run. A cancelled caller still waits for its thread: what it starts is what
    /// ends its work (a download's writer).
    package func startThreadWhenFree(name: String, lowestPriority: Bool = false, _ body: @escaping @Sendable () -> Void) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let free = ownThreads.withLock { threads in
                guard threads.running < maxOwnThreads else {
                    threads.waiters.append(continuation)
                    return false
                }
                threads.running += 1
                return true
            }
            if free { continuation.resume() }
        }
        return startOwnThread(name: name, lowestPriority: lowestPriority, body)
    }

    /// Starts a thread of its own in a place already counted in ``ownThreads``; gives the place up
    /// when the thread ends or cannot start.
    private func startOwnThread(name: String, lowestPriority: Bool, _ body: @escaping @Sendable () -> Void) -> Bool {
        let started = Self.start(Part(number: 0, name: name, body: { [self] _ in
            if lowestPriority { CMiniAppSystem_lowerThisThreadsPriority() }
            body()
            endOwnThread()
        }), detached: true) != nil
        if !started { endOwnThread() }
        return started
    }

    /// Takes an exclusive `flock` on `descriptor`, waiting suspended (no thread held, nothing polls) for
    /// another holder to let go until `deadline`, and runs blocking `body` the moment it holds it, on a
    /// thread of its own (or the pool's past ``maxOwnThreads``): a critical section that other processes
    /// wait for is never stretched by a queue. `body` lets go of the lock; its value comes back with
    /// the outcome `acquired`.
    package func whileLocked<T: Sendable>(
        _ descriptor: Int32, until deadline: ContinuousClock.Instant, _ body: @escaping @Sendable () -> T
    ) async -> (outcome: LockWatcher.Outcome, value: T?) {
        await locks.lockExclusively(descriptor, until: deadline, thenRun: body) { [self] work in
            if startThread(name: "miniapp.locked", work) { return }
            // Run whatever the pool's state: whoever waits for the value must get it.
            threadPool.submit { _ in work() }
        }
    }

    /// Gives a place of a thread of its own to the first caller waiting for one, else frees it.
    private func endOwnThread() {
        let waiter = ownThreads.withLock { threads -> CheckedContinuation<Void, Never>? in
            guard !threads.waiters.isEmpty else {
                threads.running -= 1
                return nil
            }
            return threads.waiters.removeFirst()
        }
        waiter?.resume()
    }

    /// Stops the pool once its queued work has run; later work is refused. Threads of their own end
    /// with their work, which whoever started it waits for. Call it once, when done; later calls do nothing.
    public func shutdown() async {
        let running = state.withLock { state -> NIOThreadPool? in
            guard case .started(let pool) = state else {
                if case .idle = state { state = .shutDown(nil) }
                return nil
            }
            state = .shutDown(pool)
            return pool
        }
        try? await running?.shutdownGracefully()
    }

    // MARK: Fork-join

    /// Runs `body(0)` on the calling thread and `body(1)` to `body(count - 1)` on threads of their own,
    /// named `name.1`, `name.2` and so on, and returns when every part has returned.
    ///
    /// Part of the executor, beside the pool: a CPU-bound loop split over every core, whose caller (a
    /// cache check answered on the command line's own thread, an extraction already on a pool thread)
    /// blocks until the parts join, so no part outlives the call. `DispatchQueue.concurrentPerform` was
    /// not used: when its pool has no idle thread, it often runs every part on the caller, one after
    /// another (seen for the cache's quick check: 1.9 ms instead of 1.0 on two cores).
    package static func forkJoin(_ count: Int, name: String, _ body: @escaping @Sendable (Int) -> Void) {
        forkJoin(count, name: name, onCaller: {}, body)
    }

    /// ``forkJoin(_:name:_:)``, with `onCaller` run on the calling thread once the other threads are
    /// started (while they start) and before its own part; returns what `onCaller` returns.
    package static func forkJoin<Result>(_ count: Int, name: String, onCaller: () -> Result, _ body: @escaping @Sendable (Int) -> Void) -> Result {
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

    static func start(_ part: Part, detached: Bool) -> pthread_t? {
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

    final class Part {
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
