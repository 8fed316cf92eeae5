import Foundation
import MiniAppCore

/// What a host keeps for an app besides its permissions and secure storage.
package enum HostRecordKind: String, Sendable, CaseIterable {
    /// The app's preferences (`MiniApp.preferences`): a key and its text.
    case preference
    /// A purchase the user made in the app: its transaction id and its receipt (JSON).
    case purchase
    /// What the user decided on a device permission for the app (`camera`, `location`...): `granted`
    /// or `denied`.
    case device
}

/// A record that cannot be kept.
package enum HostRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key or value is empty, too long, or holds a NUL character.
    case invalid(appId: String, reason: String)
    /// The app keeps as many records of this kind as it may.
    case full(appId: String, kind: HostRecordKind, limit: Int)

    package var description: String {
        switch self {
        case .invalid(let appId, let reason): return "the record of \(appId) cannot be kept: \(reason)"
        case .full(let appId, let kind, let limit): return "\(appId) keeps \(limit) \(kind.rawValue)s already, the most it may"
        }
    }
}

extension PermissionStore {
    /// The most records of one kind an app keeps.
    package static let maxHostRecords = 1000
    /// The longest key, in UTF-8 bytes.
    package static let maxHostRecordKeyBytes = 256
    /// The longest value, in UTF-8 bytes.
    package static let maxHostRecordValueBytes = 64 * 1024

    /// The app's record of `kind` under `key`, or nil.
    package func hostRecord(appId: String, _ kind: HostRecordKind, key: String) async throws -> String? {
        try Self.validateRecord(appId: appId, key: key, value: nil)
        return try await backend.hostRecord(appId: appId, kind: kind.rawValue, key: key)
    }

    /// Every record of `kind` the app keeps, by key.
    package func hostRecords(appId: String, _ kind: HostRecordKind) async throws -> [String: String] {
        try Identifier.validate(appId, as: .app)
        return try await backend.hostRecords(appId: appId, kind: kind.rawValue)
    }

    /// Keeps `value` under `key` (replacing what was there), or removes the key for nil. Throws
    /// ``HostRecordError/full(appId:kind:limit:)`` and keeps nothing when a new key would pass
    /// ``maxHostRecords``: the count and the write are one transaction.
    package func setHostRecord(appId: String, _ kind: HostRecordKind, key: String, value: String?) async throws {
        try Self.validateRecord(appId: appId, key: key, value: value)
        guard try await backend.setHostRecord(appId: appId, kind: kind.rawValue, key: key, value: value, limit: Self.maxHostRecords) else {
            throw HostRecordError.full(appId: appId, kind: kind, limit: Self.maxHostRecords)
        }
    }

    /// Removes every record of `kind` the app keeps.
    package func clearHostRecords(appId: String, _ kind: HostRecordKind) async throws {
        try Identifier.validate(appId, as: .app)
        try await backend.clearHostRecords(appId: appId, kind: kind.rawValue)
    }

    private static func validateRecord(appId: String, key: String, value: String?) throws {
        try Identifier.validate(appId, as: .app)
        if key.isEmpty {
            throw HostRecordError.invalid(appId: appId, reason: "the key is empty")
        } else if key.utf8.count > maxHostRecordKeyBytes {
            throw HostRecordError.invalid(appId: appId, reason: "the key is \(key.utf8.count) bytes long, over \(maxHostRecordKeyBytes)")
        } else if key.utf8.contains(0) || value?.utf8.contains(0) == true {
            throw HostRecordError.invalid(appId: appId, reason: "it contains a NUL character")
        } else if let value, value.utf8.count > maxHostRecordValueBytes {
            throw HostRecordError.invalid(appId: appId, reason: "the value is \(value.utf8.count) bytes long, over \(maxHostRecordValueBytes)")
        }
    }
}
