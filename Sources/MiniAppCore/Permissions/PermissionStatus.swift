public import Foundation

/// A user's decision on one custom permission of one app.
public enum PermissionStatus: String, Sendable, Codable, CaseIterable {
    /// The user allowed it.
    case allowed = "ALLOWED"
    /// The user denied it.
    case denied = "DENIED"
    /// The host does not offer it.
    case notAvailable = "PERMISSION_NOT_AVAILABLE"
}

/// The full name of a permission given by its full or short (`USER_NAME`) name.
public enum PermissionName {
    /// `name` as a full name: a known short name is expanded, anything else is kept as it is.
    public static func full(_ name: String) -> String {
        KnownPermission(name: name)?.rawValue ?? name
    }

    /// Whether `name` can be stored: 1 to 200 printable characters without spaces (no C0 or C1 control
    /// character, no DEL).
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 200 && name.unicodeScalars.allSatisfy { $0.value > 0x20 && !(0x7F...0x9F).contains($0.value) }
    }
}

/// One stored decision.
public struct StoredPermission: Sendable, Equatable, Codable {
    /// The permission's full name.
    public var name: String
    /// The decision.
    public var status: PermissionStatus
    /// When it was taken.
    public var decidedAt: Date

    /// A decision on `name`, taken at `decidedAt`.
    public init(name: String, status: PermissionStatus, decidedAt: Date) {
        self.name = name
        self.status = status
        self.decidedAt = decidedAt
    }
}

/// A permission as a host shows it: what the manifest declares merged with what is stored.
public struct PermissionState: Sendable, Equatable, Encodable {
    /// The full name.
    public var name: String
    /// The stored status; `DENIED` when never decided (fail closed).
    public var status: PermissionStatus
    /// Whether the manifest requires it to launch.
    public var required: Bool
    /// The manifest's reason, when it gives one.
    public var reason: String?
    /// Whether the platform defines this name.
    public var known: Bool
    /// Whether the manifest declares it (a stored decision may outlive a declaration).
    public var declared: Bool
    /// When it was decided; `nil` when never.
    public var decidedAt: Date?

    /// A permission's state as a host shows it.
    public init(name: String, status: PermissionStatus, required: Bool, reason: String?, known: Bool, declared: Bool, decidedAt: Date?) {
        self.name = name
        self.status = status
        self.required = required
        self.reason = reason
        self.known = known
        self.declared = declared
        self.decidedAt = decidedAt
    }

    private enum CodingKeys: String, CodingKey { case name, status, required, reason, known, declared, decidedAt }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(status, forKey: .status)
        try container.encode(required, forKey: .required)
        try container.encode(reason, forKey: .reason)
        try container.encode(known, forKey: .known)
        try container.encode(declared, forKey: .declared)
        try container.encode(decidedAt, forKey: .decidedAt)
    }
}

/// One change in an app's permission history.
public struct PermissionChange: Sendable, Equatable, Encodable {
    /// The permission's full name.
    public var name: String
    /// The status before; `nil` when it was undecided.
    public var from: PermissionStatus?
    /// The status after; `nil` when it was reset.
    public var to: PermissionStatus?
    /// When it changed.
    public var changedAt: Date

    /// A change of `name` from `from` to `to` at `changedAt`.
    public init(name: String, from: PermissionStatus?, to: PermissionStatus?, changedAt: Date) {
        self.name = name
        self.from = from
        self.to = to
        self.changedAt = changedAt
    }
}

/// Whether an app may launch, and what stands in the way.
public struct LaunchDecision: Sendable, Equatable {
    /// The required permissions that are not `ALLOWED`.
    public var missing: [String]
    /// Whether every required permission is `ALLOWED`.
    public var allowed: Bool { missing.isEmpty }

    /// A decision that names the required permissions not `ALLOWED` (none: the app may launch).
    public init(missing: [String]) {
        self.missing = missing
    }
}

/// A permission store that cannot be used.
public enum PermissionStoreError: CategorizedError, Equatable {
    /// The database file is damaged or not a database; it is left as it is.
    case corrupt(path: String, reason: String)
    /// The database cannot be opened, read or written.
    case unavailable(path: String, reason: String)
    /// Another process kept the database locked for longer than the lock timeout (`nil` seconds: SQLite's own wait).
    case busy(path: String, waitedSeconds: Int?)
    /// A permission name that cannot be stored.
    case invalidName(String)
    /// An import document in neither interchange shape.
    case invalidImport(reason: String)
    /// The app's required permissions are not all allowed.
    case launchRefused(appId: String, missing: [String])
    /// The database server cannot be reached, or did not answer in time (`store` is shown without its password).
    case unreachable(store: String, reason: String)
    /// The database server refused the credentials, or the rights the store needs.
    case refused(store: String, reason: String)
    /// A permission store location that cannot be used as given.
    case invalidLocation(reason: String)

    public var category: ErrorCategory {
        switch self {
        case .corrupt, .invalidImport: return .badData
        case .unavailable: return .localIO
        case .busy: return .busy
        case .invalidName: return .usage
        case .launchRefused, .refused: return .notAllowed
        case .unreachable: return .unavailable
        case .invalidLocation: return .usage
        }
    }

    public var description: String {
        switch self {
        case .corrupt(let path, let reason):
            return "the permission store \(path) is damaged (\(reason)); it was left untouched: restore it from a backup or move it aside to start over"
        case .unavailable(let path, let reason):
            return "cannot use the permission store \(path): \(reason); check the cache directory and its permissions"
        case .busy(let path, let waited):
            return "the permission store \(path) is locked by another process\(waited.map { " (waited \($0) s)" } ?? ""); retry when it is done, or allow a longer lock timeout"
        case .invalidName(let name):
            return "invalid permission name '\(Sanitizer.printable(name, limit: 80))': use a full name such as rakuten.miniapp.user.USER_NAME or a short one such as USER_NAME"
        case .invalidImport(let reason):
            return "the import is in neither interchange shape (\(reason)): use [{\"permissionName\", \"isPermissionGranted\"}] or {\"miniAppId\", \"pairValues\": [{\"first\", \"second\"}]}"
        case .launchRefused(let appId, let missing):
            return "app \(appId) may not launch: required permission\(missing.count == 1 ? "" : "s") not allowed: \(missing.joined(separator: ", ")); grant them in the permission store to let it launch"
        case .unreachable(let store, let reason):
            return "cannot reach the permission store \(store): \(reason); the launch gate and permission changes wait for it: check that the database is up and reachable, or the permission store setting"
        case .refused(let store, let reason):
            return "the permission store \(store) refused access: \(reason); check the user and password (in the URL or PGPASSWORD) and the user's rights"
        case .invalidLocation(let reason):
            return "invalid permission store location: \(reason)"
        }
    }
}
