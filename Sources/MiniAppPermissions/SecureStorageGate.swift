import Foundation
import Synchronization

/// How fast, and how many calls at once, one app may use its secure storage through one
/// ``PermissionStore``: what keeps an app that floods its storage from delaying every other app's calls
/// and the host's decisions, which share the store's write lock.
///
/// Each app has a token bucket for writes (set, remove, clear) and one for reads (get, size): a call
/// takes a token or is refused at once with ``SecureStorageError/busy(appId:reason:)`` (the SDK's
/// `SecureStorageBusyError`), changing nothing. Past the bucket, at most ``concurrentWrites`` writes
/// and ``concurrentReads`` reads of an app reach the database at once; the app's other calls wait their
/// turn behind its own, never on the store's lock, and past ``maxWaiting`` waiting calls of one kind
/// they are refused too. The buckets and turns are those of one store value (one process); decisions
/// are never limited.
///
/// The defaults (100 writes a second with bursts of 200, 1,000 reads a second with bursts of 1,000,
/// one write and two reads of an app at once, 64 waiting) are well above what a mini-app saving its
/// state needs, and keep another app's call and a decision within a few milliseconds of a flood.
public struct SecureStorageRate: Sendable, Equatable {
    /// Writes an app may make each second, on average.
    public var writesPerSecond: Double
    /// Writes an app may make at once after a quiet time.
    public var writeBurst: Int
    /// Reads an app may make each second, on average.
    public var readsPerSecond: Double
    /// Reads an app may make at once after a quiet time.
    public var readBurst: Int
    /// An app's writes running at once; the others wait their turn.
    public var concurrentWrites: Int
    /// An app's reads running at once; the others wait their turn.
    public var concurrentReads: Int
    /// The most calls of an app (of each kind) that wait their turn; the next one is refused.
    public var maxWaiting: Int

    /// A rate of `writesPerSecond` with bursts of `writeBurst`, and of `readsPerSecond` with bursts of
    /// `readBurst`; `concurrentWrites` and `concurrentReads` of an app at once, `maxWaiting` waiting.
    /// Rates must be above 0, the other values at least 1 (`maxWaiting` at least 0).
    public init(
        writesPerSecond: Double = 100, writeBurst: Int = 200, readsPerSecond: Double = 1000, readBurst: Int = 1000,
        concurrentWrites: Int = 1, concurrentReads: Int = 2, maxWaiting: Int = 64
    ) {
        precondition(writesPerSecond > 0 && readsPerSecond > 0, "secure-storage rates must be above 0 a second")
        precondition(writeBurst >= 1 && readBurst >= 1 && concurrentWrites >= 1 && concurrentReads >= 1 && maxWaiting >= 0, "secure-storage bursts and concurrency must be at least 1, maxWaiting at least 0")
        self.writesPerSecond = writesPerSecond
        self.writeBurst = writeBurst
        self.readsPerSecond = readsPerSecond
        self.readBurst = readBurst
        self.concurrentWrites = concurrentWrites
        self.concurrentReads = concurrentReads
        self.maxWaiting = maxWaiting
    }

    /// No rate (but still one write and two reads of an app at once): for tools that load a store in
    /// bulk, never for a host running apps.
    public static let unlimited = SecureStorageRate(writesPerSecond: .infinity, writeBurst: .max, readsPerSecond: .infinity, readBurst: .max, maxWaiting: .max)
}

/// The per-app buckets and turns of ``SecureStorageRate`` for one store.
final class SecureStorageGate: Sendable {
    enum Kind: Sendable {
        case write, read
    }

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    /// One kind of call of one app: its bucket and its turns.
    private struct Lane {
        var tokens: Double
        var refilled: ContinuousClock.Instant
        var running = 0
        var waiting: [Waiter] = []
    }

    private struct State {
        var lanes: [String: [Lane]] = [:]
        var nextWaiter: UInt64 = 0
    }

    let rate: SecureStorageRate
    private let state = Mutex(State())
    /// Lanes kept before idle ones (full bucket, nothing running or waiting) are dropped.
    private static let keptApps = 1024

    init(rate: SecureStorageRate) {
        self.rate = rate
    }

    private func index(_ kind: Kind) -> Int { kind == .write ? 0 : 1 }
    private func perSecond(_ kind: Kind) -> Double { kind == .write ? rate.writesPerSecond : rate.readsPerSecond }
    private func burst(_ kind: Kind) -> Double { Double(kind == .write ? rate.writeBurst : rate.readBurst) }
    private func concurrent(_ kind: Kind) -> Int { kind == .write ? rate.concurrentWrites : rate.concurrentReads }

    /// Runs `body` once the app's call is admitted and has its turn; throws
    /// ``SecureStorageError/busy(appId:reason:)`` without running it when the app is over its rate or
    /// has too many calls waiting.
    func run<T: Sendable>(appId: String, _ kind: Kind, _ body: () async throws -> T) async throws -> T {
        try await enter(appId: appId, kind)
        defer { leave(appId: appId, kind) }
        return try await body()
    }

    /// Takes a token and the app's turn, waiting for the turn behind the app's own calls; throws
    /// ``SecureStorageError/busy(appId:reason:)`` with no token or too many waiting, and
    /// `CancellationError` when cancelled while waiting.
    private func enter(appId: String, _ kind: Kind) async throws {
        let id = state.withLock { state in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    let now = ContinuousClock.now
                    if state.lanes[appId] == nil {
                        if state.lanes.count >= Self.keptApps { prune(&state, now: now) }
                        state.lanes[appId] = [Lane(tokens: burst(.write), refilled: now), Lane(tokens: burst(.read), refilled: now)]
                    }
                    let slot = index(kind)
                    var lane = state.lanes[appId]![slot]
                    defer { state.lanes[appId]![slot] = lane }
                    lane.tokens = tokens(lane, kind, at: now)
                    lane.refilled = now
                    guard lane.tokens >= 1 else { return .failure(SecureStorageError.busy(appId: appId, reason: overRate(kind))) }
                    if lane.running < concurrent(kind) {
                        lane.tokens -= 1
                        lane.running += 1
                        return .success(())
                    }
                    guard lane.waiting.count < rate.maxWaiting else {
                        return .failure(SecureStorageError.busy(appId: appId, reason: "\(lane.waiting.count) of its \(kind == .write ? "writes" : "reads") are already waiting for their turn, the most the host lets wait"))
                    }
                    // A cancellation handled before the waiter is listed would find nothing to remove.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    lane.tokens -= 1
                    lane.waiting.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let removed = state.withLock { state -> Waiter? in
                guard let position = state.lanes[appId]?[index(kind)].waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.lanes[appId]![index(kind)].waiting.remove(at: position)
            }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// How many of the app's calls of `kind` wait for their turn.
    func waitingCalls(appId: String, _ kind: Kind) -> Int {
        state.withLock { $0.lanes[appId]?[index(kind)].waiting.count ?? 0 }
    }

    /// Hands the turn to the app's next waiting call of the kind, if any.
    private func leave(appId: String, _ kind: Kind) {
        let next = state.withLock { state -> Waiter? in
            let slot = index(kind)
            guard state.lanes[appId] != nil else { return nil }
            if state.lanes[appId]![slot].waiting.isEmpty {
                state.lanes[appId]![slot].running -= 1
                return nil
            }
            return state.lanes[appId]![slot].waiting.removeFirst()
        }
        next?.continuation.resume()
    }

    /// The lane's tokens at `now`: refilled at the kind's rate since it was last refilled, up to the burst.
    private func tokens(_ lane: Lane, _ kind: Kind, at now: ContinuousClock.Instant) -> Double {
        let rate = perSecond(kind)
        guard rate.isFinite else { return burst(kind) }
        return min(burst(kind), lane.tokens + rate * Self.seconds(now - lane.refilled))
    }

    private func overRate(_ kind: Kind) -> String {
        let (count, burst) = kind == .write ? (rate.writesPerSecond, rate.writeBurst) : (rate.readsPerSecond, rate.readBurst)
        return "it made more than \(Self.number(count)) \(kind == .write ? "writes" : "reads") a second (bursts of \(burst)), the most the host allows an app"
    }

    /// Drops the lanes of apps that are idle: nothing running or waiting, and a bucket that is full again.
    private func prune(_ state: inout State, now: ContinuousClock.Instant) {
        state.lanes = state.lanes.filter { _, lanes in
            zip(lanes, [Kind.write, .read]).contains { lane, kind in
                lane.running > 0 || !lane.waiting.isEmpty || tokens(lane, kind, at: now) < burst(kind)
            }
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func number(_ value: Double) -> String {
        value.rounded() == value && value < 1e15 ? String(Int(value)) : String(value)
    }
}
