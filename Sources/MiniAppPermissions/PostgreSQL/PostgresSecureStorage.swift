import Foundation
import MiniAppCore
import NIOCore
import PostgresNIO

/// The apps' secure-storage items, in table `miniapp_storage` (schema version 4): the key as text, the
/// value as the bytes of its UTF-8 (`bytea`, which keeps a NUL character that `text` cannot hold).
/// Each app's bytes are in `miniapp_storage_usage` (schema version 5), changed in the same transaction
/// as its items, under the app's advisory lock: every write reads and writes rows by primary key, never
/// all of an app's rows, so that it costs the same whatever the app holds.
extension PostgresPermissionBackend {
    /// An item's size in the rows named `row`: the UTF-8 bytes of its key (whatever the database's
    /// encoding) and of its value.
    static func itemBytes(_ row: String) -> String {
        "octet_length(convert_to(\(row).key, 'UTF8')) + octet_length(\(row).value)"
    }

    /// Schema version 4: the table, and `miniapp_storage_set`, which takes the app's advisory lock (the
    /// lock of its permission changes) and then, each statement seeing what committed before it,
    /// counts the app's bytes before and with the items, and writes them only when that is within the
    /// limit. Depends on nothing of version 3; version 5 replaces the function.
    static var secureStorageSchema: [PostgresQuery] {
        [
            """
            CREATE TABLE miniapp_storage (app_id text NOT NULL, key text NOT NULL, value bytea NOT NULL, PRIMARY KEY (app_id, key))
            """,
            storageSetFunction(used: "(SELECT coalesce(sum(\(itemBytes("s"))), 0) FROM miniapp_storage s WHERE s.app_id = app)", alsoWriting: ""),
        ]
    }

    /// `miniapp_storage_set` as versions 4 and 5 write it: under the app's lock, `used` is the app's
    /// bytes before the items (read by `used`), `needed` with them (the replaced items read by key);
    /// the items, and then `alsoWriting`, are written only when `needed` is within the limit.
    private static func storageSetFunction(used: String, alsoWriting: String) -> PostgresQuery {
        """
        CREATE OR REPLACE FUNCTION miniapp_storage_set(app text, item_keys text[], item_values bytea[], size_limit bigint, OUT used bigint, OUT needed bigint)
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(\(unescaped: String(appLockClass)), hashtext(app));
            used := \(unescaped: used);
            needed := used
                + (SELECT coalesce(sum(\(unescaped: itemBytes("n"))), 0) FROM unnest(item_keys, item_values) AS n (key, value))
                - (SELECT coalesce(sum(\(unescaped: itemBytes("s"))), 0) FROM miniapp_storage s WHERE s.app_id = app AND s.key = ANY (item_keys));
            IF needed <= size_limit THEN
                INSERT INTO miniapp_storage (app_id, key, value) SELECT app, n.key, n.value FROM unnest(item_keys, item_values) AS n (key, value)
                    ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value;\(unescaped: alsoWriting)
            END IF;
        END $$
        """
    }

    /// Schema version 5: `miniapp_storage_usage`, each app's bytes (no row for an app without items),
    /// filled from the items already stored while their writers wait; `miniapp_storage_set` again,
    /// reading the app's bytes there and the replaced items by key, and `miniapp_storage_remove` and
    /// `miniapp_storage_clear`, which take the app's lock as it does, so that the bytes kept are always
    /// those of the items. Depends on version 4.
    static var storageUsageSchema: [PostgresQuery] {
        [
            "CREATE TABLE miniapp_storage_usage (app_id text PRIMARY KEY, bytes bigint NOT NULL)",
            // Writers of the items (of instances not yet migrated) wait until the bytes are counted.
            "LOCK TABLE miniapp_storage IN SHARE ROW EXCLUSIVE MODE",
            """
            INSERT INTO miniapp_storage_usage (app_id, bytes)
                SELECT s.app_id, sum(\(unescaped: itemBytes("s"))) FROM miniapp_storage s GROUP BY s.app_id
            """,
            storageSetFunction(
                used: "coalesce((SELECT u.bytes FROM miniapp_storage_usage u WHERE u.app_id = app), 0)",
                alsoWriting: """

                        INSERT INTO miniapp_storage_usage AS u (app_id, bytes) VALUES (app, needed)
                            ON CONFLICT (app_id) DO UPDATE SET bytes = excluded.bytes;
                    """
            ),
            """
            CREATE OR REPLACE FUNCTION miniapp_storage_remove(app text, item_keys text[])
            RETURNS void LANGUAGE plpgsql AS $$
            DECLARE
                freed bigint;
            BEGIN
                PERFORM pg_advisory_xact_lock(\(unescaped: String(appLockClass)), hashtext(app));
                WITH gone AS (
                    DELETE FROM miniapp_storage s WHERE s.app_id = app AND s.key = ANY (item_keys) RETURNING \(unescaped: itemBytes("s")) AS size
                )
                SELECT coalesce(sum(gone.size), 0) INTO freed FROM gone;
                IF freed > 0 THEN
                    UPDATE miniapp_storage_usage u SET bytes = u.bytes - freed WHERE u.app_id = app;
                    DELETE FROM miniapp_storage_usage u WHERE u.app_id = app AND u.bytes = 0;
                END IF;
            END $$
            """,
            """
            CREATE OR REPLACE FUNCTION miniapp_storage_clear(app text)
            RETURNS void LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_advisory_xact_lock(\(unescaped: String(appLockClass)), hashtext(app));
                DELETE FROM miniapp_storage s WHERE s.app_id = app;
                DELETE FROM miniapp_storage_usage u WHERE u.app_id = app;
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

    func storageItems(appId: String) async throws(PermissionStoreError) -> [String: String] {
        try await run { connection, logger in
            var items: [String: String] = [:]
            for try await (key, value) in try await connection.query("SELECT key, value FROM miniapp_storage WHERE app_id = \(appId)", logger: logger)
                .decode((String, ByteBuffer).self) {
                items[key] = String(buffer: value)
            }
            return items
        }
    }

    /// One statement: ``storageUsageSchema``'s `miniapp_storage_set`.
    func setStorageItems(appId: String, _ items: [(key: String, value: String)], limit: Int) async throws(PermissionStoreError) -> StorageChange {
        let keys = items.map(\.key)
        let values = items.map { ByteBuffer(string: $0.value) }
        return try await run { connection, logger in
            let row = try await connection.query("SELECT used, needed FROM miniapp_storage_set(\(appId), \(keys), \(values), \(limit))", logger: logger).collect().first
            guard let (used, needed) = try row?.decode((Int, Int).self) else { throw PermissionStoreError.unreachable(store: self.name, reason: "the server answered no row") }
            return StorageChange(used: used, needed: needed, stored: needed <= limit)
        }
    }

    /// One statement: ``storageUsageSchema``'s `miniapp_storage_remove`.
    func removeStorageItems(appId: String, keys: [String]) async throws(PermissionStoreError) {
        try await run { connection, logger in
            _ = try await connection.query("SELECT miniapp_storage_remove(\(appId), \(keys))", logger: logger).collect()
        }
    }

    /// One statement: ``storageUsageSchema``'s `miniapp_storage_clear`.
    func clearStorage(appId: String) async throws(PermissionStoreError) {
        try await run { connection, logger in
            _ = try await connection.query("SELECT miniapp_storage_clear(\(appId))", logger: logger).collect()
        }
    }

    func storageUsed(appId: String) async throws(PermissionStoreError) -> Int {
        try await run { connection, logger in
            try await connection.query("SELECT bytes FROM miniapp_storage_usage WHERE app_id = \(appId)", logger: logger)
                .collect().first?.decode(Int.self) ?? 0
        }
    }
}
