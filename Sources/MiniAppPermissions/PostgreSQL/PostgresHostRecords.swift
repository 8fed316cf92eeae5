import Foundation
import MiniAppCore
import PostgresNIO

/// The apps' host records (preferences, purchases) in table `miniapp_host_record` (schema version 6).
extension PostgresPermissionBackend {
    static var hostRecordSchema: [PostgresQuery] {
        [
            """
            CREATE TABLE miniapp_host_record (app_id text NOT NULL, kind text NOT NULL, key text NOT NULL, value text NOT NULL,
                PRIMARY KEY (app_id, kind, key))
            """
        ]
    }

    func hostRecord(appId: String, kind: String, key: String) async throws(PermissionStoreError) -> String? {
        try await run { connection, logger in
            try await connection.query("SELECT value FROM miniapp_host_record WHERE app_id = \(appId) AND kind = \(kind) AND key = \(key)", logger: logger)
                .collect().first?.decode(String.self)
        }
    }

    func hostRecords(appId: String, kind: String) async throws(PermissionStoreError) -> [String: String] {
        try await run { connection, logger in
            var records: [String: String] = [:]
            for row in try await connection.query("SELECT key, value FROM miniapp_host_record WHERE app_id = \(appId) AND kind = \(kind)", logger: logger).collect() {
                let (key, value) = try row.decode((String, String).self)
                records[key] = value
            }
            return records
        }
    }

    /// One statement: a new key is written only while the app keeps fewer than `limit` records of the
    /// kind; a replaced one always is. The count caps a runaway app, not a quota: two writers at once
    /// may each pass it by one.
    func setHostRecord(appId: String, kind: String, key: String, value: String?, limit: Int) async throws(PermissionStoreError) -> Bool {
        try await run { connection, logger in
            guard let value else {
                _ = try await connection.query("DELETE FROM miniapp_host_record WHERE app_id = \(appId) AND kind = \(kind) AND key = \(key)", logger: logger).collect()
                return true
            }
            let rows = try await connection.query(
                """
                INSERT INTO miniapp_host_record (app_id, kind, key, value)
                SELECT \(appId), \(kind), \(key), \(value)
                WHERE EXISTS (SELECT 1 FROM miniapp_host_record WHERE app_id = \(appId) AND kind = \(kind) AND key = \(key))
                   OR (SELECT count(*) FROM miniapp_host_record WHERE app_id = \(appId) AND kind = \(kind)) < \(limit)
                ON CONFLICT (app_id, kind, key) DO UPDATE SET value = excluded.value
                RETURNING 1
                """,
                logger: logger
            ).collect()
            return !rows.isEmpty
        }
    }

    func clearHostRecords(appId: String, kind: String) async throws(PermissionStoreError) {
        try await run { connection, logger in
            _ = try await connection.query("DELETE FROM miniapp_host_record WHERE app_id = \(appId) AND kind = \(kind)", logger: logger).collect()
        }
    }
}
