import Foundation
import MiniAppCore
import Synchronization

/// A running app's grant to use its bridge: what the host hands the one document it put in the app's
/// frame, and takes back when that document goes.
///
/// A capability is an unguessable token (256 random bits). The bridge answers a message only when it
/// comes with a live capability of its app (``BridgeDispatcher/reply(to:capability:)``): a popup, a new
/// tab or a nested page the app opened, or a local program that sends the right `Origin` and `Host`,
/// holds none. The host grants one per load of the app through the open launch gate
/// (``BridgeDispatcher/grant()``) and ends it when the app closes, when its frame is replaced, when the
/// gate closes, and when it stops (``BridgeDispatcher/revoke(_:)``, ``BridgeDispatcher/revokeAll()``).
/// Its description never shows the token, so that logging one does not leak it.
public struct BridgeCapability: Sendable, Hashable, CustomStringConvertible {
    /// The token, 64 lowercase hexadecimal digits: what a host sends the app's document and reads back
    /// from each of its messages.
    public let token: String

    /// The capability whose token is `token`, or `nil` when `token` cannot be one (wrong length or alphabet).
    public init?(token: String) {
        guard token.utf8.count == 64, token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        self.token = token
    }

    /// A new capability with a random token.
    static func random() -> BridgeCapability {
        var generator = SystemRandomNumberGenerator()
        return BridgeCapability(token: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString)!
    }

    public var description: String { "BridgeCapability(…)" }
}

extension BridgeFailure {
    /// The answer to a message that holds no live capability: the SDK's authorization failure, which it
    /// parses into `AuthorizationFailureError`. A host answers it with HTTP 403 where it can.
    public static let noCapability = BridgeFailure(
        type: "AuthorizationFailureError",
        message: "this page holds no live grant of the host's: only the page the host opened in the mini-app's frame may use the bridge, while the mini-app runs"
    )
}

/// The live capabilities of one app's bridge, and the calls each has in flight (cancelled when it ends,
/// so that a prompt it raised leaves the host's page).
final class BridgeGrants: Sendable {
    private struct Live {
        /// When it was granted, to end the oldest first past ``BridgeGrants/maxLive``.
        let serial: Int
        var calls: [Int: @Sendable () -> Void] = [:]
    }

    private struct State {
        var live: [String: Live] = [:]
        var serial = 0
    }

    private let state = Mutex(State())
    /// Capabilities live at once per app: each host page showing the app holds one, and a page that
    /// reloads gives its previous one back; past this many, the oldest ends.
    static let maxLive = 32

    /// How many are live.
    var liveCount: Int { state.withLock { $0.live.count } }

    /// A new live capability, and how many of the oldest ended to make room.
    func grant() -> (BridgeCapability, ended: Int) {
        let capability = BridgeCapability.random()
        let ended: [Live] = state.withLock { state in
            state.serial += 1
            state.live[capability.token] = Live(serial: state.serial)
            var ended: [Live] = []
            while state.live.count > Self.maxLive, let oldest = state.live.min(by: { $0.value.serial < $1.value.serial })?.key {
                if let live = state.live.removeValue(forKey: oldest) { ended.append(live) }
            }
            return ended
        }
        ended.forEach(Self.cancelCalls)
        return (capability, ended.count)
    }

    func isLive(_ capability: BridgeCapability) -> Bool {
        state.withLock { $0.live[capability.token] != nil }
    }

    /// Registers a call of `capability`'s, which `cancel` stops; `nil` when the capability is not live.
    func begin(_ capability: BridgeCapability, cancel: @escaping @Sendable () -> Void) -> Int? {
        state.withLock { state in
            guard state.live[capability.token] != nil else { return nil }
            state.serial += 1
            state.live[capability.token]?.calls[state.serial] = cancel
            return state.serial
        }
    }

    func end(_ capability: BridgeCapability, call: Int) {
        _ = state.withLock { $0.live[capability.token]?.calls.removeValue(forKey: call) }
    }

    /// Ends `capability`; whether it was live.
    @discardableResult
    func revoke(_ capability: BridgeCapability) -> Bool {
        guard let live = state.withLock({ $0.live.removeValue(forKey: capability.token) }) else { return false }
        Self.cancelCalls(live)
        return true
    }

    /// Ends every capability; how many were live.
    @discardableResult
    func revokeAll() -> Int {
        let ended = state.withLock { state in
            defer { state.live = [:] }
            return Array(state.live.values)
        }
        ended.forEach(Self.cancelCalls)
        return ended.count
    }

    private static func cancelCalls(_ live: Live) {
        live.calls.values.forEach { $0() }
    }
}

/// A capability of an app's that was granted or that ended, as ``BridgeDispatcher/capabilityEvents()``
/// tells it (never the token).
public enum BridgeCapabilityEvent: Sendable, Equatable {
    /// One was granted (a page of the app greeted its host through the open launch gate); `live` are live now.
    case granted(live: Int)
    /// `count` ended (the app closed, its gate closed, its page went, its host stopped); `live` are live now.
    case ended(count: Int, live: Int)
}
