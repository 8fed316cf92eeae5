public import Foundation
public import MiniAppCore

/// How much an app's secure storage holds and may hold, in bytes (UTF-8 bytes of keys plus values).
public struct SecureStorageSize: Sendable, Equatable {
    /// The bytes the app's items use.
    public var used: Int
    /// The most the app may use: the limit the host gave.
    public var max: Int

    /// A size of `used` bytes out of `max`.
    public init(used: Int, max: Int) {
        self.used = used
        self.max = max
    }
}

/// What a backend's write of storage items found: the app's bytes before, and with the items
/// (`needed`); they were stored only when `needed` was within the limit.
package struct StorageChange: Sendable, Equatable {
    package var used: Int
    package var needed: Int
    package var stored: Bool

    package init(used: Int, needed: Int, stored: Bool) {
        self.used = used
        self.needed = needed
        self.stored = stored
    }
}

/// Why a secure-storage operation failed. Failures of the store itself (unreachable, locked,
/// damaged) are ``PermissionStoreError`` values, as for decisions.
public enum SecureStorageError: CategorizedError, Sendable, Equatable, LocalizedError {
    /// The app's items would use `needed` bytes, over its `limit`; they use `used`. Nothing was stored.
    case full(appId: String, used: Int, needed: Int, limit: Int)
    /// A key that cannot be stored (empty, too long, or with a NUL character). Nothing was changed.
    case invalidItem(appId: String, reason: String)
    /// The app uses its storage faster than the store's ``SecureStorageRate`` allows, or has too many
    /// calls waiting for their turn: the call was refused at once, before reaching the database, and
    /// changed nothing. The SDK's `SecureStorageBusyError`; the app may try again later.
    case busy(appId: String, reason: String)

    public var category: ErrorCategory {
        switch self {
        case .full: return .localIO
        case .invalidItem: return .usage
        case .busy: return .busy
        }
    }

    public var description: String {
        switch self {
        case .full(let appId, let used, let needed, let limit):
            return "the secure storage of app \(appId) is full: its items use \(used) bytes and would use \(needed) with the new ones, over its limit of \(limit) bytes; nothing was stored: remove some of its items or clear its storage, or give it a larger limit"
        case .invalidItem(let appId, let reason):
            return "app \(appId) cannot use this secure-storage item: \(reason); nothing was changed: use keys of 1 to \(PermissionStore.maxStorageKeyBytes) UTF-8 bytes without NUL characters"
        case .busy(let appId, let reason):
            return "the secure storage of app \(appId) is busy: \(reason); nothing was changed: try again later"
        }
    }

    public var errorDescription: String? { description }
}

extension PermissionStore {
    /// The longest key, in UTF-8 bytes.
    public static let maxStorageKeyBytes = 1024

    /// The value stored under `key` for the app, or nil. A read of the app's ``storageRate``.
    public func storageItem(appId: String, key: String) async throws -> String? {
        try Self.validateStorage(appId: appId, keys: CollectionOfOne(key))
        return try await storageGate.run(appId: appId, .read) { try await backend.storageItem(appId: appId, key: key) }
    }

    /// Every item the app stored, by key: what a host shows the app's developer. A read of the app's
    /// ``storageRate``.
    public func storageItems(appId: String) async throws -> [String: String] {
        try Identifier.validate(appId, as: .app)
        return try await storageGate.run(appId: appId, .read) { try await backend.storageItems(appId: appId) }
    }

    /// Stores every item in one transaction, replacing values already under those keys. Throws
    /// ``SecureStorageError/full(appId:used:needed:limit:)`` and stores nothing when the app's items
    /// would then use more than `limit` bytes (UTF-8 bytes of keys plus values); the check and the
    /// write are one transaction under the app's lock, so writers at once never pass the limit together.
    ///
    /// Keys are 1 to ``maxStorageKeyBytes`` UTF-8 bytes without NUL characters; values are any string
    /// (empty, NUL characters included). The app's bytes are kept beside its items, so that the check
    /// costs the same whatever the app holds.
    ///
    /// A write of the app's ``storageRate``: past it, throws ``SecureStorageError/busy(appId:reason:)``
    /// and stores nothing.
    public func setStorageItems(appId: String, _ items: [String: String], limit: Int) async throws {
        try Self.validateStorage(appId: appId, keys: items.keys)
        guard !items.isEmpty else { return }
        let sorted = items.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
        let change = try await storageGate.run(appId: appId, .write) { try await backend.setStorageItems(appId: appId, sorted, limit: limit) }
        guard change.stored else { throw SecureStorageError.full(appId: appId, used: change.used, needed: change.needed, limit: limit) }
    }

    /// Removes the keys (missing keys are fine) in one transaction. A write of the app's ``storageRate``.
    public func removeStorageItems(appId: String, keys: [String]) async throws {
        try Self.validateStorage(appId: appId, keys: keys)
        guard !keys.isEmpty else { return }
        let distinct = Array(Set(keys)).sorted()
        try await storageGate.run(appId: appId, .write) { try await backend.removeStorageItems(appId: appId, keys: distinct) }
    }

    /// Removes every item of the app. A write of the app's ``storageRate``.
    public func clearStorage(appId: String) async throws {
        try Identifier.validate(appId, as: .app)
        try await storageGate.run(appId: appId, .write) { try await backend.clearStorage(appId: appId) }
    }

    /// Bytes used by the app's items, and `limit`: read in constant time. A read of the app's ``storageRate``.
    public func storageSize(appId: String, limit: Int) async throws -> SecureStorageSize {
        try Identifier.validate(appId, as: .app)
        return SecureStorageSize(used: try await storageGate.run(appId: appId, .read) { try await backend.storageUsed(appId: appId) }, max: limit)
    }

    /// Throws unless `appId` is an app id and every key can be stored: not empty, at most
    /// ``maxStorageKeyBytes`` UTF-8 bytes, no NUL (which SQLite's text and PostgreSQL's cannot hold).
    private static func validateStorage(appId: String, keys: some Collection<String>) throws {
        try Identifier.validate(appId, as: .app)
        for key in keys {
            if key.isEmpty {
                throw SecureStorageError.invalidItem(appId: appId, reason: "a key is empty")
            } else if key.utf8.count > maxStorageKeyBytes {
                throw SecureStorageError.invalidItem(appId: appId, reason: "the key '\(Sanitizer.printable(key, limit: 40))' is \(key.utf8.count) bytes long, over \(maxStorageKeyBytes)")
            } else if key.utf8.contains(0) {
                throw SecureStorageError.invalidItem(appId: appId, reason: "the key '\(Sanitizer.printable(key, limit: 40))' contains a NUL character")
            }
        }
    }
}
