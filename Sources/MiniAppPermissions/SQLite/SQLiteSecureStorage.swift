import Foundation
import GRDB
import MiniAppCore

/// The apps' secure-storage items, in table `storageItem` (migration v2): the key as text, the value
/// as the bytes of its UTF-8, so that a NUL character is kept. Each app's bytes are in `storageUsage`
/// (migration v3), changed in the same transaction as its items: every operation reads and writes
/// rows by primary key, never all of an app's rows, so that it holds the write lock as long whatever
/// the app holds (clearing deletes the app's rows, once).
extension SQLitePermissionBackend {
    /// An item's size: the UTF-8 bytes of its key and of its value.
    static let itemBytes = "length(CAST(key AS BLOB)) + length(value)"

    func storageItem(appId: String, key: String) async throws(PermissionStoreError) -> String? {
        try await read { db in
            try Data.fetchOne(db, sql: "SELECT value FROM storageItem WHERE appId = ? AND key = ?", arguments: [appId, key])
                .map { String(decoding: $0, as: UTF8.self) }
        }
    }

    func storageItems(appId: String) async throws(PermissionStoreError) -> [String: String] {
        try await read { db in
            var items: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM storageItem WHERE appId = ?", arguments: [appId]) {
                items[row["key"]] = String(decoding: row["value"] as Data, as: UTF8.self)
            }
            return items
        }
    }

    /// One IMMEDIATE transaction (GRDB's kind for writes): it holds the database's write lock from its
    /// start, so no other connection or process writes between the check and the write.
    func setStorageItems(appId: String, _ items: [(key: String, value: String)], limit: Int) async throws(PermissionStoreError) -> StorageChange {
        try await write { db in
            let used = try Self.used(appId: appId, db)
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
            try Self.setUsed(needed, appId: appId, db)
            return StorageChange(used: used, needed: needed, stored: true)
        }
    }

    func removeStorageItems(appId: String, keys: [String]) async throws(PermissionStoreError) {
        try await write { db in
            var freed = 0
            for key in keys {
                freed += try Int.fetchOne(db, sql: "DELETE FROM storageItem WHERE appId = ? AND key = ? RETURNING \(Self.itemBytes)", arguments: [appId, key]) ?? 0
            }
            if freed > 0 { try Self.setUsed(try Self.used(appId: appId, db) - freed, appId: appId, db) }
        }
    }

    func clearStorage(appId: String) async throws(PermissionStoreError) {
        try await write { db in
            try db.execute(sql: "DELETE FROM storageItem WHERE appId = ?", arguments: [appId])
            try db.execute(sql: "DELETE FROM storageUsage WHERE appId = ?", arguments: [appId])
        }
    }

    func storageUsed(appId: String) async throws(PermissionStoreError) -> Int {
        try await read { db in try Self.used(appId: appId, db) }
    }

    /// The app's bytes, from `storageUsage`.
    private static func used(appId: String, _ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT used FROM storageUsage WHERE appId = ?", arguments: [appId]) ?? 0
    }

    /// Keeps `used` as the app's bytes; an app without items has no row.
    private static func setUsed(_ used: Int, appId: String, _ db: Database) throws {
        if used == 0 {
            try db.execute(sql: "DELETE FROM storageUsage WHERE appId = ?", arguments: [appId])
        } else {
            try db.execute(
                sql: "INSERT INTO storageUsage (appId, used) VALUES (?, ?) ON CONFLICT(appId) DO UPDATE SET used = excluded.used",
                arguments: [appId, used]
            )
        }
    }
}
