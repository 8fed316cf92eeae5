import Foundation
import MiniAppCore
import MiniAppPermissions
import MiniAppTestSupport
import Testing

/// Each app's secure storage in the permission store: the same behaviour in SQLite and PostgreSQL.
@Suite struct SecureStorageTests {
    /// Its temporary cache holds the SQLite stores; its `location` makes a new store of either backend.
    let stores = PermissionStoreTests()

    func makeStore(_ backend: StoreBackend) async throws -> PermissionStore {
        try await stores.makeStore(backend)
    }

    /// The bytes items use: UTF-8 of keys and values.
    static func bytes(_ items: [String: String]) -> Int {
        items.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    @Test(arguments: StoreBackend.allCases)
    func itemsAreSetReadReplacedRemovedAndCleared(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        #expect(try await store.storageSize(appId: "app", limit: 500) == SecureStorageSize(used: 0, max: 500))
        try await store.setStorageItems(appId: "app", ["a": "1", "bb": "two", "c": "3"], limit: 500)
        #expect(try await store.storageItem(appId: "app", key: "a") == "1")
        #expect(try await store.storageItem(appId: "app", key: "bb") == "two")
        #expect(try await store.storageItem(appId: "app", key: "missing") == nil)
        #expect(try await store.storageSize(appId: "app", limit: 500) == SecureStorageSize(used: 9, max: 500))
        try await store.setStorageItems(appId: "app", ["a": "eleven"], limit: 500)
        #expect(try await store.storageItem(appId: "app", key: "a") == "eleven")
        #expect(try await store.storageSize(appId: "app", limit: 500).used == 14)
        try await store.removeStorageItems(appId: "app", keys: ["a", "missing", "a"])
        #expect(try await store.storageItem(appId: "app", key: "a") == nil)
        #expect(try await store.storageItem(appId: "app", key: "bb") == "two")
        #expect(try await store.storageSize(appId: "app", limit: 500).used == 7)
        #expect(try await store.storageItems(appId: "app") == ["bb": "two", "c": "3"])
        try await store.clearStorage(appId: "app")
        #expect(try await store.storageItems(appId: "app") == [:])
        #expect(try await store.storageItem(appId: "app", key: "bb") == nil)
        #expect(try await store.storageItem(appId: "app", key: "c") == nil)
        #expect(try await store.storageSize(appId: "app", limit: 500).used == 0)
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func appsAreIsolatedFromEachOther(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.setStorageItems(appId: "one", ["token": "first", "shared": "1"], limit: 17)
        try await store.setStorageItems(appId: "two", ["token": "second"], limit: 100)
        #expect(try await store.storageItem(appId: "one", key: "token") == "first")
        #expect(try await store.storageItem(appId: "two", key: "token") == "second")
        #expect(try await store.storageItem(appId: "two", key: "shared") == nil)
        #expect(try await store.storageItems(appId: "one") == ["token": "first", "shared": "1"])
        #expect(try await store.storageItems(appId: "two") == ["token": "second"])
        // "one" is at its limit; "two"'s items do not count against it, nor the reverse.
        #expect(try await store.storageSize(appId: "one", limit: 17).used == 17)
        #expect(try await store.storageSize(appId: "two", limit: 100).used == 11)
        try await store.setStorageItems(appId: "two", ["more": "items"], limit: 100)
        try await store.removeStorageItems(appId: "two", keys: ["shared"])
        try await store.clearStorage(appId: "two")
        #expect(try await store.storageItem(appId: "one", key: "shared") == "1")
        #expect(try await store.storageItem(appId: "one", key: "token") == "first")
        #expect(try await store.storageItem(appId: "two", key: "token") == nil)
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func exactlyTheLimitFitsAndOneByteOverIsRefusedLeavingTheItemsAsTheyWere(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.setStorageItems(appId: "app", ["k": "123456789"], limit: 10)
        #expect(try await store.storageSize(appId: "app", limit: 10).used == 10)
        // Replacing the value with one a byte longer: 11 bytes.
        let replaced = await #expect(throws: SecureStorageError.self) { try await store.setStorageItems(appId: "app", ["k": "1234567890"], limit: 10) }
        #expect(replaced == .full(appId: "app", used: 10, needed: 11, limit: 10))
        // A new key with an empty value still counts its key.
        let added = await #expect(throws: SecureStorageError.self) { try await store.setStorageItems(appId: "app", ["kk": ""], limit: 10) }
        #expect(added == .full(appId: "app", used: 10, needed: 12, limit: 10))
        #expect(try await store.storageItem(appId: "app", key: "k") == "123456789")
        #expect(try await store.storageItem(appId: "app", key: "kk") == nil)
        // Several items are all stored or none: "a" alone would fit once "k" is smaller, not with "b".
        let batch = await #expect(throws: SecureStorageError.self) {
            try await store.setStorageItems(appId: "app", ["k": "1", "a": "1234", "b": "12345"], limit: 10)
        }
        #expect(batch == .full(appId: "app", used: 10, needed: 13, limit: 10))
        #expect(try await store.storageItem(appId: "app", key: "k") == "123456789")
        #expect(try await store.storageItem(appId: "app", key: "a") == nil)
        #expect(try await store.storageSize(appId: "app", limit: 10).used == 10)
        // A smaller value fits, and frees room.
        try await store.setStorageItems(appId: "app", ["k": "1", "a": "123456"], limit: 10)
        #expect(try await store.storageSize(appId: "app", limit: 10).used == 9)
        let message = try #require(replaced).description
        #expect(message.contains("app app") && message.contains("limit of 10 bytes") && message.contains("remove some of its items"), "\(message)")
        #expect(replaced?.errorDescription == message)
        #expect(replaced?.category == .localIO)
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func writersAtOnceNeverPassTheLimitTogether(backend: StoreBackend) async throws {
        let location = try await stores.location(backend)
        // 8 writers, each with its own store (its own connections), each adding 5 items of 10 bytes one
        // at a time: 400 bytes asked for, 100 allowed, so exactly 10 writes fit.
        let stored = try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<8 {
                group.addTask {
                    let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
                    var stored: [String] = []
                    for item in 0..<5 {
                        let key = "w\(writer)-\(item)"
                        do {
                            try await store.setStorageItems(appId: "app", [key: "value!"], limit: 100)
                            stored.append(key)
                        } catch let error as SecureStorageError {
                            guard case .full(_, let used, let needed, 100) = error, needed == used + 10, used > 90 else { throw error }
                        }
                    }
                    await store.close()
                    return stored
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(stored.count == 10)
        #expect(try await store.storageSize(appId: "app", limit: 100).used == 100)
        for key in stored { #expect(try await store.storageItem(appId: "app", key: key) == "value!") }
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func valuesOfAnyTextRoundTripAndCountTheirUTF8Bytes(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        let items = [
            "greeting": "こんにちは、世界 🌸",
            "ключ": "значение",
            "empty": "",
            "nul": "before\u{0}after",
            "combining": "e\u{301}",
            "controls": "line\r\nnext\ttab\u{1B}[0m",
            "json": #"{"a": [1, "two", null]}"#,
            String(repeating: "k", count: PermissionStore.maxStorageKeyBytes): "the longest key",
        ]
        try await store.setStorageItems(appId: "app", items, limit: 10_000)
        for (key, value) in items {
            #expect(try await store.storageItem(appId: "app", key: key) == value, "\(key)")
        }
        #expect(try await store.storageSize(appId: "app", limit: 10_000).used == Self.bytes(items))
        #expect(try await store.storageItems(appId: "app") == items)
        // The empty value is a value, not a missing item.
        #expect(try await store.storageItem(appId: "app", key: "empty") == "")
        await store.close()
    }

    static let invalidKeys: [(key: String, reason: String)] = [
        ("", "a key is empty"),
        (String(repeating: "k", count: PermissionStore.maxStorageKeyBytes + 1), "1025 bytes long"),
        (String(repeating: "\u{E9}", count: 513), "1026 bytes long"),
        ("a\u{0}b", "NUL character"),
    ]

    @Test(arguments: StoreBackend.allCases, invalidKeys.indices)
    func invalidKeysAreRefusedAndChangeNothing(backend: StoreBackend, index: Int) async throws {
        let (key, reason) = Self.invalidKeys[index]
        let store = try await makeStore(backend)
        try await store.setStorageItems(appId: "app", ["a": "kept"], limit: 5000)
        let operations: [@Sendable () async throws -> Void] = [
            { try await store.setStorageItems(appId: "app", ["ok": "value", key: "value"], limit: 5000) },
            { _ = try await store.storageItem(appId: "app", key: key) },
            { try await store.removeStorageItems(appId: "app", keys: ["a", key]) },
        ]
        for operation in operations {
            let error = await #expect(throws: SecureStorageError.self) { try await operation() }
            guard case .invalidItem("app", let found)? = error else {
                Issue.record("\(String(describing: error))")
                continue
            }
            #expect(found.contains(reason), "\(found)")
            #expect(error?.category == .usage)
        }
        #expect(try await store.storageItem(appId: "app", key: "a") == "kept")
        #expect(try await store.storageItem(appId: "app", key: "ok") == nil)
        #expect(try await store.storageSize(appId: "app", limit: 5000).used == 5)
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func invalidAppIdsAreRefused(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        await #expect(throws: IdentifierError.self) { try await store.setStorageItems(appId: "../app", ["k": "v"], limit: 100) }
        await #expect(throws: IdentifierError.self) { try await store.storageItem(appId: "", key: "k") }
        await #expect(throws: IdentifierError.self) { try await store.clearStorage(appId: "a/b") }
        await #expect(throws: IdentifierError.self) { try await store.storageSize(appId: ".hidden", limit: 100) }
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func itemsSurviveClosingAndReopening(backend: StoreBackend) async throws {
        let location = try await stores.location(backend)
        let first = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        try await first.setStorageItems(appId: "app", ["session": "abc", "theme": "dark"], limit: 100)
        await first.close()
        // Reopened current: SQLite reads read-only and opens its writer at the first write.
        let second = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await second.storageItem(appId: "app", key: "session") == "abc")
        try await second.setStorageItems(appId: "app", ["session": "def"], limit: 100)
        try await second.removeStorageItems(appId: "app", keys: ["theme"])
        await second.close()
        let third = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await third.storageItem(appId: "app", key: "session") == "def")
        #expect(try await third.storageItem(appId: "app", key: "theme") == nil)
        #expect(try await third.storageSize(appId: "app", limit: 100).used == 10)
        await third.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func storageIsNeverPartOfDecisionsHistoryOrSnapshots(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.setStorageItems(appId: "app", ["rakuten.miniapp.user.USER_NAME": "ALLOWED"], limit: 100)
        try await store.set(appId: "other", ["LOCATION": .allowed])
        #expect(try await store.stored(appId: "app").isEmpty)
        #expect(try await store.history(appId: "app").isEmpty)
        #expect(try await store.snapshot().apps.map(\.id) == ["other"])
        #expect(try await store.snapshot(appId: "app").apps.isEmpty)
        #expect(!(try await store.isAllowed(appId: "app", permission: "USER_NAME")))
        // Resetting the app's decisions is not clearing its storage.
        try await store.reset(appId: "app")
        #expect(try await store.storageItem(appId: "app", key: "rakuten.miniapp.user.USER_NAME") == "ALLOWED")
        await store.close()
    }

    /// The tables the SQLite store's first migration (v1) made, as GRDB made them, and GRDB's own.
    static let sqliteVersion1Tables = """
        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
        CREATE TABLE "permission" ("appId" TEXT NOT NULL, "name" TEXT NOT NULL, "status" TEXT NOT NULL, "decidedAt" DOUBLE NOT NULL, PRIMARY KEY ("appId", "name"));
        CREATE TABLE "permissionHistory" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "appId" TEXT NOT NULL, "name" TEXT NOT NULL, "fromStatus" TEXT, "toStatus" TEXT, "changedAt" DOUBLE NOT NULL);
        CREATE INDEX "permissionHistory_on_appId" ON "permissionHistory"("appId");
        """

    @Test func aSQLiteStoreOfTheFirstVersionIsMigratedAndKeepsItsDecisions() async throws {
        let path = stores.cache + "/permissions.sqlite"
        // What the store's first migration (v1) made, in WAL mode, with one decision and its history.
        let script = """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute('PRAGMA journal_mode=WAL')
            c.executescript('''
            \(Self.sqliteVersion1Tables)
            INSERT INTO grdb_migrations VALUES ('v1');
            INSERT INTO permission VALUES ('app', 'rakuten.miniapp.user.USER_NAME', 'ALLOWED', 1795341404.237);
            INSERT INTO permissionHistory (appId, name, fromStatus, toStatus, changedAt) VALUES ('app', 'rakuten.miniapp.user.USER_NAME', NULL, 'ALLOWED', 1795341404.237);
            ''')
            c.close()
            """
        #expect(await runTool("/usr/bin/python3", ["-c", script, path]) == 0)
        let store = try await PermissionStore.open(cacheDirectory: stores.cache, executor: testExecutor)
        #expect(try await store.isAllowed(appId: "app", permission: "USER_NAME"))
        #expect(try await store.history(appId: "app").map(\.to) == [.allowed])
        try await store.setStorageItems(appId: "app", ["k": "v"], limit: 10)
        // Opened again, current now: read-only until its first write.
        let reopened = try await PermissionStore.open(cacheDirectory: stores.cache, executor: testExecutor)
        #expect(try await reopened.storageItem(appId: "app", key: "k") == "v")
        try await reopened.set(appId: "app", ["USER_NAME": .denied])
        #expect(try await reopened.history(appId: "app").map(\.to) == [.allowed, .denied])
    }

    /// A PostgreSQL database from before secure storage (schema versions 4 and 5), with one decision: at
    /// version 3, or at version 2 (before the history-order functions of version 3 too).
    @Test(arguments: [false, true])
    func aPostgresStoreOfSchemaVersion2IsMigratedWhetherOrNotVersion3IsThere(withVersion3: Bool) async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        let location = try PermissionStoreLocation.parse(cluster.socketURL(database))
        let first = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        try await first.set(appId: "app", ["USER_NAME": .allowed])
        await first.close()
        // Back to version 3 (or 2): what versions 4 and 5 add, removed.
        try await cluster.psql(
            """
            DROP FUNCTION miniapp_storage_set; DROP FUNCTION miniapp_storage_remove; DROP FUNCTION miniapp_storage_clear;
            DROP TABLE miniapp_storage_usage; DROP TABLE miniapp_storage; DELETE FROM miniapp_schema WHERE version IN (4, 5)
            """,
            database: database
        )
        if !withVersion3 {
            try await cluster.psql("DELETE FROM miniapp_schema WHERE version = 3", database: database)
        }
        let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await store.isAllowed(appId: "app", permission: "USER_NAME"))
        try await store.setStorageItems(appId: "app", ["k": "v"], limit: 2)
        await #expect(throws: SecureStorageError.full(appId: "app", used: 2, needed: 4, limit: 2)) {
            try await store.setStorageItems(appId: "app", ["k2": ""], limit: 2)
        }
        try await store.set(appId: "app", ["USER_NAME": .denied])
        #expect(try await store.history(appId: "app").map(\.to) == [.allowed, .denied])
        await store.close()
        let versions = try await cluster.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM miniapp_schema", database: database)
        #expect(versions.trimmingCharacters(in: .whitespacesAndNewlines) == "1,2,3,4,5,6,7,8")
        let reopened = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await reopened.storageItem(appId: "app", key: "k") == "v")
        await reopened.close()
    }
}
