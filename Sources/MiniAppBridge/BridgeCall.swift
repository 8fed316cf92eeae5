public import Foundation
public import MiniAppCore

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
