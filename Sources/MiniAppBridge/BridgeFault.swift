import MiniAppCore
import Synchronization

/// An answer a host forces on one action of an app, in place of (or before) the real one, so that the
/// app's developer can try the app's error paths.
public enum BridgeFault: Sendable, Equatable {
    /// The SDK's `NotSupportedError`, as from a host without the action.
    case notSupported
    /// The SDK's denial (`userDenied`), as for a permission the user has not allowed.
    case denied
    /// No answer for `seconds`, then the real one; with `nil`, no answer at all until the fault is
    /// removed (then the real one) or the page's capability ends. The SDK waits for an answer without
    /// end, so this is the host's silence an app's own timer must notice.
    case timeout(seconds: Int?)

    /// The longest delay a timeout may ask for (an hour); longer is what `nil` says.
    public static let maxTimeoutSeconds = 3600

    /// The failure this fault answers for `action`, or `nil` for a timeout (which answers late instead).
    func failure(for action: String) -> BridgeFailure? {
        switch self {
        case .notSupported:
            return BridgeFailure(type: "NotSupportedError", message: "this host does not support '\(action)' (an error the host was told to answer)")
        case .denied:
            if let permission = BridgeDispatcher.declarations[action]?.permission {
                return BridgeFailure(type: "userDenied", message: "the user has not allowed \(permission.rawValue) for this mini-app (an error the host was told to answer)")
            }
            return BridgeFailure(type: "userDenied", message: "the user denied '\(action)' (an error the host was told to answer)")
        case .timeout:
            return nil
        }
    }
}

/// The faults a host forces on an app's actions, by action, and the calls a silent timeout holds.
///
/// One value outlives the app's bridges: a development folder's changed manifest makes a new
/// ``BridgeDispatcher`` that keeps the faults its developer set.
public final class BridgeFaults: Sendable {
    private struct State {
        var faults: [String: BridgeFault] = [:]
        var held: [Int: (action: String, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextHeld = 0
    }

    private let state = Mutex(State())
    /// Whether any fault is set: the bridge's every call reads it, the lock only when it is set.
    private let isSet = Atomic<Bool>(false)

    /// No faults.
    public init() {}

    /// The faults set, by action.
    public var all: [String: BridgeFault] { state.withLock { $0.faults } }

    /// Makes every later call of `action` answer `fault`; `nil` removes the fault, and a call a silent
    /// timeout holds goes on to its real answer.
    public func set(_ fault: BridgeFault?, for action: String) {
        let released: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.faults[action] = fault
            isSet.store(!state.faults.isEmpty, ordering: .relaxed)
            if case .timeout(nil)? = fault { return [] }
            let keys = state.held.filter { $0.value.action == action }.map(\.key)
            return keys.compactMap { state.held.removeValue(forKey: $0)?.continuation }
        }
        released.forEach { $0.resume() }
    }

    /// How many calls a silent timeout holds now.
    var heldCalls: Int { state.withLock { $0.held.count } }

    /// The fault set for `action`, if any.
    func fault(for action: String) -> BridgeFault? {
        guard isSet.load(ordering: .relaxed) else { return nil }
        return state.withLock { $0.faults[action] }
    }

    /// Answers a call of `action` as its fault says: throws the fault's failure, waits out a timeout
    /// (or, silent, until the fault is removed or the call is cancelled), or returns at once.
    func apply(to action: String) async throws(BridgeFailure) {
        guard let fault = fault(for: action) else { return }
        switch fault {
        case .timeout(let seconds?):
            try? await Task.sleep(for: .seconds(seconds))
        case .timeout(nil):
            await hold(action)
        default:
            if let failure = fault.failure(for: action) { throw failure }
        }
    }

    private func hold(_ action: String) async {
        let id = state.withLock { state in
            state.nextHeld += 1
            return state.nextHeld
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let kept = state.withLock { state in
                    // Removed meanwhile, or the call already ended: no wait.
                    guard case .timeout(nil)? = state.faults[action], !Task.isCancelled else { return false }
                    state.held[id] = (action, continuation)
                    return true
                }
                if !kept { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.held.removeValue(forKey: id) }?.continuation.resume()
        }
    }
}
