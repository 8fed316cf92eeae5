import Foundation
import GRDB
import MiniAppCore

/// The apps' host records (preferences, purchases) in table `hostRecord` (migration v4).
extension SQLitePermissionBackend {
    func hostRecord(appId: String, kind: String, key: String) async throws(PermissionStoreError) -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT value FROM hostRecord WHERE appId = ? AND kind = ? AND key = ?", arguments: [appId, kind, key])
        }
    }

    func hostRecords(appId: String, kind: String) async throws(PermissionStoreError) -> [String: String] {
        try await read { db in
            var records: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM hostRecord WHERE appId = ? AND kind = ?", arguments: [appId, kind]) {
                records[row["key"]] = row["value"]
            }
            return records
        }
    }

    /// One IMMEDIATE transaction: the count and the write see the same rows.
    func setHostRecord(appId: String, kind: String, key: String, value: String?, limit: Int) async throws(PermissionStoreError) -> Bool {
        try await write { db in
            guard let value else {
                try db.execute(sql: "DELETE FROM hostRecord WHERE appId = ? AND kind = ? AND key = ?", arguments: [appId, kind, key])
                return true
            }
            let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM hostRecord WHERE appId = ? AND kind = ? AND key = ?", arguments: [appId, kind, key]) ?? false
            if !exists, try Int.fetchOne(db, sql: "SELECT count(*) FROM hostRecord WHERE appId = ? AND kind = ?", arguments: [appId, kind]) ?? 0 >= limit {
                return false
            }
            try db.execute(
                sql: "INSERT INTO hostRecord (appId, kind, key, value) VALUES (?, ?, ?, ?) ON CONFLICT(appId, kind, key) DO UPDATE SET value = excluded.value",
                arguments: [appId, kind, key, value]
            )
            return true
        }
    }

    func clearHostRecords(appId: String, kind: String) async throws(PermissionStoreError) {
        try await write { db in
            try db.execute(sql: "DELETE FROM hostRecord WHERE appId = ? AND kind = ?", arguments: [appId, kind])
        }
    }
}
