import Foundation
import GRDB
import MiniAppCore

/// The apps' secure-storage items, in table `storageItem` (migration v2): the key as text, the value
/// as the bytes of its UTF-8, so that a NUL character is kept.
extension SQLitePermissionBackend {
    /// An item's size: the UTF-8 bytes of its key and of its value.
    private static let itemBytes = "length(CAST(key AS BLOB)) + length(value)"

    func storageItem(appId: String, key: String) async throws(PermissionStoreError) -> String? {
        try await read { db in
            try Data.fetchOne(db, sql: "SELECT value FROM storageItem WHERE appId = ? AND key = ?", arguments: [appId, key])
                .map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// One IMMEDIATE transaction (GRDB's kind for writes): it holds the database's write lock from its
    /// start, so no other connection or process writes between the check and the write.
    func setStorageItems(appId: String, _ items: [(key: String, value: String)], limit: Int) async throws(PermissionStoreError) -> StorageChange {
        try await write { db in
            let used = try Int.fetchOne(db, sql: "SELECT coalesce(sum(\(Self.itemBytes)), 0) FROM storageItem WHERE appId = ?", arguments: [appId]) ?? 0
            var needed = used
            for item in items {
                let replaced = try Int.fetchOne(db, sql: "SELECT \(Self.itemBytes) FROM storageItem WHERE appId = ? AND key = ?", arguments: [appId, item.key]) ?? 0
                needed += item.key.utf8.count + item.value.utf8.count - replaced
            }
            guard needed <= limit else { return StorageChange(used: used, needed: needed, stored: false) }
            for item in items {
                // An empty value binds as NULL (no bytes to point at): stored as the empty blob.
                try db.execute(
                    sql: "INSERT INTO storageItem (appId, key, value) VALUES (?, ?, ifnull(?, x'')) ON CONFLICT(appId, key) DO UPDATE SET value = excluded.value",
                    arguments: [appId, item.key, Data(item.value.utf8)]
                )
            }
            return StorageChange(used: used, needed: needed, stored: true)
        }
    }

    func removeStorageItems(appId: String, keys: [String]) async throws(PermissionStoreError) {
        try await write { db in
            for key in keys {
                try db.execute(sql: "DELETE FROM storageItem WHERE appId = ? AND key = ?", arguments: [appId, key])
            }
        }
    }

    func clearStorage(appId: String) async throws(PermissionStoreError) {
        try await write { db in
            try db.execute(sql: "DELETE FROM storageItem WHERE appId = ?", arguments: [appId])
        }
    }

    func storageUsed(appId: String) async throws(PermissionStoreError) -> Int {
        try await read { db in
            try Int.fetchOne(db, sql: "SELECT coalesce(sum(\(Self.itemBytes)), 0) FROM storageItem WHERE appId = ?", arguments: [appId]) ?? 0
        }
    }
}
