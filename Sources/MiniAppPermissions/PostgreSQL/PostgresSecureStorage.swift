import Foundation
import MiniAppCore
import NIOCore
import PostgresNIO

/// The apps' secure-storage items, in table `miniapp_storage` (schema version 4): the key as text, the
/// value as the bytes of its UTF-8 (`bytea`, which keeps a NUL character that `text` cannot hold).
extension PostgresPermissionBackend {
    /// An item's size in the rows named `row`: the UTF-8 bytes of its key (whatever the database's
    /// encoding) and of its value.
    private static func itemBytes(_ row: String) -> String {
        "octet_length(convert_to(\(row).key, 'UTF8')) + octet_length(\(row).value)"
    }

    /// Schema version 4: the table, and `miniapp_storage_set`, which takes the app's advisory lock (the
    /// lock of its permission changes) and then, each statement seeing what committed before it,
    /// counts the app's bytes before and with the items, and writes them only when that is within the
    /// limit. Depends on nothing of version 3.
    static var secureStorageSchema: [PostgresQuery] {
        [
            """
            CREATE TABLE miniapp_storage (app_id text NOT NULL, key text NOT NULL, value bytea NOT NULL, PRIMARY KEY (app_id, key))
            """,
            """
            CREATE OR REPLACE FUNCTION miniapp_storage_set(app text, item_keys text[], item_values bytea[], size_limit bigint, OUT used bigint, OUT needed bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_advisory_xact_lock(\(unescaped: String(appLockClass)), hashtext(app));
                used := (SELECT coalesce(sum(\(unescaped: itemBytes("s"))), 0) FROM miniapp_storage s WHERE s.app_id = app);
                needed := used
                    + (SELECT coalesce(sum(\(unescaped: itemBytes("n"))), 0) FROM unnest(item_keys, item_values) AS n (key, value))
                    - (SELECT coalesce(sum(\(unescaped: itemBytes("s"))), 0) FROM miniapp_storage s WHERE s.app_id = app AND s.key = ANY (item_keys));
                IF needed <= size_limit THEN
                    INSERT INTO miniapp_storage (app_id, key, value) SELECT app, n.key, n.value FROM unnest(item_keys, item_values) AS n (key, value)
                        ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value;
                END IF;
            END $$
            """,
        ]
    }

    func storageItem(appId: String, key: String) async throws(PermissionStoreError) -> String? {
        try await run { connection, logger in
            try await connection.query("SELECT value FROM miniapp_storage WHERE app_id = \(appId) AND key = \(key)", logger: logger)
                .collect().first.map { String(buffer: try $0.decode(ByteBuffer.self)) }
        }
    }

    /// One statement: ``secureStorageSchema``'s `miniapp_storage_set`.
    func setStorageItems(appId: String, _ items: [(key: String, value: String)], limit: Int) async throws(PermissionStoreError) -> StorageChange {
        let keys = items.map(\.key)
        let values = items.map { ByteBuffer(string: $0.value) }
        return try await run { connection, logger in
            let row = try await connection.query("SELECT used, needed FROM miniapp_storage_set(\(appId), \(keys), \(values), \(limit))", logger: logger).collect().first
            guard let (used, needed) = try row?.decode((Int, Int).self) else { throw PermissionStoreError.unreachable(store: self.name, reason: "the server answered no row") }
            return StorageChange(used: used, needed: needed, stored: needed <= limit)
        }
    }

    func removeStorageItems(appId: String, keys: [String]) async throws(PermissionStoreError) {
        try await run { connection, logger in
            _ = try await connection.query("DELETE FROM miniapp_storage WHERE app_id = \(appId) AND key = ANY (\(keys))", logger: logger).collect()
        }
    }

    func clearStorage(appId: String) async throws(PermissionStoreError) {
        try await run { connection, logger in
            _ = try await connection.query("DELETE FROM miniapp_storage WHERE app_id = \(appId)", logger: logger).collect()
        }
    }

    func storageUsed(appId: String) async throws(PermissionStoreError) -> Int {
        try await run { connection, logger in
            try await connection.query("SELECT coalesce(sum(\(unescaped: Self.itemBytes("s"))), 0) FROM miniapp_storage s WHERE s.app_id = \(appId)", logger: logger)
                .collect().first?.decode(Int.self) ?? 0
        }
    }
}
