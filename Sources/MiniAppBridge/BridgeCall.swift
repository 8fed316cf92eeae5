public import Foundation
public import MiniAppCore
import Synchronization

/// One message a running app sent and the answer it got, as a host's tools show it (a list of calls,
/// a warning about a permission the manifest does not declare).
public struct BridgeCall: Sendable, Equatable {
    /// The message's action, as the app sent it.
    public var action: String
    /// The message's parameters.
    public var param: JSONValue
    /// The custom permission that gates the action (for `requestPermission`, the one its parameters
    /// name), or `nil` when none does.
    public var permission: KnownPermission?
    /// Whether the manifest declares ``permission`` (in `reqPermissions` or `optPermissions`); `true`
    /// when the action needs none.
    public var permissionDeclared: Bool
    /// The answer sent back.
    public var outcome: BridgeOutcome
    /// When the message arrived.
    public var startedAt: Date
    /// How long the answer took.
    public var duration: Duration

    /// A call of `action` with `param`, gated by `permission`, answered with `outcome`.
    public init(
        action: String, param: JSONValue, permission: KnownPermission?, permissionDeclared: Bool, outcome: BridgeOutcome,
        startedAt: Date, duration: Duration
    ) {
        self.action = action
        self.param = param
        self.permission = permission
        self.permissionDeclared = permissionDeclared
        self.outcome = outcome
        self.startedAt = startedAt
        self.duration = duration
    }

    /// What a developer is told when the app calls an action whose permission its manifest does not
    /// declare, such as `getContacts needs rakuten.miniapp.user.CONTACT_LIST in reqPermissions or
    /// optPermissions`; `nil` when the manifest declares it (or none is needed).
    public var undeclaredPermissionWarning: String? {
        guard let permission, !permissionDeclared else { return nil }
        return "\(Sanitizer.printable(action, limit: 80)) needs \(permission.rawValue) in reqPermissions or optPermissions"
    }
}

/// The streams of one kind of value a dispatcher hands its subscribers: each gets what is sent after it
/// subscribed, until it drops its stream.
final class Broadcast<Element: Sendable>: Sendable {
    private let subscribers = Mutex<[Int: AsyncStream<Element>.Continuation]>([:])
    private let nextSubscriber = Atomic<Int>(0)
    private let buffered: Int

    init(buffered: Int) {
        self.buffered = buffered
    }

    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(buffered))
        let key = nextSubscriber.wrappingAdd(1, ordering: .relaxed).oldValue
        subscribers.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    /// Whether anyone listens: a sender skips building what nobody reads.
    var isObserved: Bool { subscribers.withLock { !$0.isEmpty } }

    func send(_ element: Element) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(element) }
    }
}
