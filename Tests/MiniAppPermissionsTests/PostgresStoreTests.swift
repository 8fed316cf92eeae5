import Foundation
import MiniAppCore
import MiniAppPermissions
import MiniAppTestSupport
import Testing

/// What only the PostgreSQL store has: its URL, its failures (fail closed, with the right category and
/// never the password), migrations when several instances start at once.
@Suite struct PostgresStoreTests {
    @Test func urlsParseAsLibpqReadsThem() throws {
        let tcp = try PostgresLocation(url: "postgresql://app%40fleet:p%3Ass%40w%2Fd@db.example:6432/perm%20s?sslmode=verify-full&search_path=miniapp")
        #expect(tcp.user == "app@fleet" && tcp.password == "p:ss@w/d" && tcp.host == "db.example" && tcp.port == 6432)
        #expect(tcp.database == "perm s" && tcp.sslMode == .verifyFull && tcp.searchPath == "miniapp" && tcp.socketDirectory == nil)
        #expect(!tcp.description.contains("p:ss") && !tcp.description.contains("p%3Ass"))
        let socket = try PostgresLocation(url: "postgres://me@/db?host=/run/pg", environment: ["PGPASSWORD": "from-env"])
        #expect(socket.socketPath == "/run/pg/.s.PGSQL.5432" && socket.host == nil && socket.password == "from-env" && socket.sslMode == .prefer)
        let six = try PostgresLocation(url: "postgres://u:pw@[::1]/d", environment: ["PGPASSWORD": "ignored"])
        #expect(six.host == "::1" && six.port == 5432 && six.password == "pw")
        #expect(try PostgresLocation(url: "postgres://u@h/").database == "u", "the database defaults to the user's name")
        for bad in ["postgres://u@h:99999/d", "postgres://u@h/d?sslmode=sometimes", "postgres://u@h/d?bogus=1", "postgres://u@h/d%ZZ", "postgres://u@[::1/d"] {
            #expect(throws: PermissionStoreError.self, "\(bad)") { try PostgresLocation(url: bad) }
        }
        #expect(try PermissionStoreLocation.parse("rel/p.sqlite", currentDirectory: "/w") == .sqlite(path: "/w/rel/p.sqlite"))
        #expect(throws: PermissionStoreError.self) { try PermissionStoreLocation.parse("mysql://x/y") }
    }

    @Test func aStoppedServerFailsClosedQuicklyAsUnreachable() async throws {
        // Held (bound, not listening) until the test ends: no server started meanwhile can take it.
        let closed = LoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let error = await #expect(throws: PermissionStoreError.self) {
            try await PermissionStore.open(try PermissionStoreLocation.parse("postgres://u:topsecret@127.0.0.1:\(port)/d?sslmode=disable"), executor: testExecutor, timeouts: PermissionStoreTests.patient)
        }
        #expect(error?.category == .unavailable)
        #expect(error.map { "\($0)" }?.contains("connection refused") == true, "refused at once, not waited for: \(String(describing: error))")
        #expect(error.map { "\($0)" }?.contains("topsecret") == false)
        #expect(error.map { "\($0)" }?.contains("permission store postgres://u@127.0.0.1:\(port)/d") == true, "\(String(describing: error))")
    }

    @Test func aServerThatNeverAnswersFailsWithinTheConnectTimeout() async throws {
        let silent = LoopbackPort(listening: true)
        let error = await #expect(throws: PermissionStoreError.self) {
            try await PermissionStore.open(
                try PermissionStoreLocation.parse("postgres://u@127.0.0.1:\(silent.port)/d?sslmode=disable"), executor: testExecutor,
                timeouts: PermissionStoreTimeouts(connect: .milliseconds(700), statement: .milliseconds(700))
            )
        }
        #expect(error?.category == .unavailable)
        #expect(error.map { "\($0)" }?.contains("no connection within 0.7 s") == true, "the connect timeout ended it: \(String(describing: error))")
        withExtendedLifetime(silent) {}
    }

    @Test func wrongCredentialsAreRefusedWithoutShowingThePassword() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        let good = try await PermissionStore.open(try PermissionStoreLocation.parse(cluster.tcpURL(database, password: cluster.password)), executor: testExecutor, timeouts: PermissionStoreTests.patient)
        try await good.set(appId: "app", ["USER_NAME": .allowed])
        await good.close()
        for url in [cluster.tcpURL(database, password: "wrong-horse"), cluster.tcpURL(database, password: nil)] {
            let error = await #expect(throws: PermissionStoreError.self) { try await PermissionStore.open(try PermissionStoreLocation.parse(url), executor: testExecutor, timeouts: PermissionStoreTests.patient) }
            #expect(error?.category == .notAllowed, "\(String(describing: error))")
            #expect(error.map { "\($0)" }?.contains("wrong-horse") == false)
        }
        // PGPASSWORD stands in for a password the URL does not give.
        let fromEnvironment = try PermissionStoreLocation.parse(cluster.tcpURL(database, password: nil), environment: ["PGPASSWORD": cluster.password])
        let store = try await PermissionStore.open(fromEnvironment, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await store.isAllowed(appId: "app", permission: "USER_NAME"))
        await store.close()
    }

    @Test func instancesStartingAtOnceMigrateOnce() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        let location = try PermissionStoreLocation.parse(cluster.socketURL(database))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
                    try await store.set(appId: "app-\(index)", ["USER_NAME": .allowed])
                    await store.close()
                }
            }
            try await group.waitForAll()
        }
        #expect(try await cluster.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM miniapp_schema", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "1,2,3,4,5,6,7,8")
        let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await store.appsWithDecisions().count == 8)
        await store.close()
    }

    /// The tables schema version 1 created (versions 2 and 3 added functions only).
    static let versionOneTables = """
            CREATE TABLE miniapp_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
            CREATE TABLE miniapp_permission (app_id text NOT NULL, name text NOT NULL, status text NOT NULL, decided_at double precision NOT NULL, PRIMARY KEY (app_id, name));
            CREATE TABLE miniapp_permission_history (id bigserial PRIMARY KEY, app_id text NOT NULL, name text NOT NULL, from_status text, to_status text, changed_at double precision NOT NULL);
            CREATE INDEX miniapp_permission_history_app ON miniapp_permission_history (app_id, id);
        """

    @Test func aStoreOfTheFirstSchemaVersionIsMigratedAndKeepsItsDecisions() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        // What version 1 created, with one decision and its history.
        try await cluster.psql(Self.versionOneTables + """
            INSERT INTO miniapp_schema (version) VALUES (1);
            INSERT INTO miniapp_permission VALUES ('app', 'rakuten.miniapp.user.USER_NAME', 'ALLOWED', 1795341404.237);
            INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at) VALUES ('app', 'rakuten.miniapp.user.USER_NAME', NULL, 'ALLOWED', 1795341404.237);
            """, database: database)
        let store = try await PermissionStore.open(try PermissionStoreLocation.parse(cluster.socketURL(database)), executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await store.isAllowed(appId: "app", permission: "USER_NAME"))
        try await store.set(appId: "app", ["USER_NAME": .denied])
        #expect(try await store.history(appId: "app").map(\.to) == [.allowed, .denied])
        await store.close()
        #expect(try await cluster.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM miniapp_schema", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "1,2,3,4,5,6,7,8")
    }

    @Test func aStoreOfTheSecondSchemaVersionIsMigratedAndItsHistoryTimesFollowItsOrder() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        // Version 2's tables (its functions are replaced by version 3's), with a history written by
        // racing writers before version 3: the second row took effect after the first, but its time,
        // taken when its transaction started, says earlier.
        try await cluster.psql(Self.versionOneTables + """
            INSERT INTO miniapp_schema (version) VALUES (1), (2);
            INSERT INTO miniapp_permission VALUES ('app', 'rakuten.miniapp.user.USER_NAME', 'ALLOWED', 4102444700.3), ('other', 'rakuten.miniapp.user.LOCATION', 'DENIED', 4102444000);
            INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at) VALUES
                ('app', 'rakuten.miniapp.user.USER_NAME', NULL, 'DENIED', 4102444700.5),
                ('other', 'rakuten.miniapp.user.LOCATION', NULL, 'DENIED', 4102444000),
                ('app', 'rakuten.miniapp.user.USER_NAME', 'DENIED', 'ALLOWED', 4102444700.3);
            """, database: database)
        let store = try await PermissionStore.open(try PermissionStoreLocation.parse(cluster.socketURL(database)), executor: testExecutor, timeouts: PermissionStoreTests.patient)
        #expect(try await store.history(appId: "app").map(\.changedAt.timeIntervalSince1970) == [4102444700.5, 4102444700.5])
        #expect(try await store.history(appId: "other").map(\.changedAt.timeIntervalSince1970) == [4102444000])
        #expect(try await store.isAllowed(appId: "app", permission: "USER_NAME"), "decisions are kept")
        // The last row is in 2100: a change now, or one dated earlier, is never timed before it.
        try await store.set(appId: "app", ["USER_NAME": .denied])
        try await store.set(appId: "app", ["USER_NAME": .allowed], at: Date(timeIntervalSince1970: 1_795_341_404.237))
        try await store.reset(appId: "app")
        let history = try await store.history(appId: "app")
        #expect(history.map(\.to) == [.denied, .allowed, .denied, .allowed, nil])
        #expect(history.map(\.changedAt.timeIntervalSince1970) == Array(repeating: 4102444700.5, count: 5))
        await store.close()
        #expect(try await cluster.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM miniapp_schema", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "1,2,3,4,5,6,7,8")
    }

    @Test func aSearchPathPutsTheTablesInThatSchemaAndALimitedUserIsRefused() async throws {
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        try await cluster.psql("CREATE SCHEMA fleet; CREATE ROLE reader LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC", database: database)
        let store = try await PermissionStore.open(try PermissionStoreLocation.parse(cluster.socketURL(database) + "&search_path=fleet"), executor: testExecutor, timeouts: PermissionStoreTests.patient)
        try await store.set(appId: "app", ["USER_NAME": .allowed])
        await store.close()
        #expect(try await cluster.psql("SELECT count(*) FROM fleet.miniapp_permission", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        // A user that may not create the tables: refused, naming what it needs.
        let error = await #expect(throws: PermissionStoreError.self) {
            try await PermissionStore.open(try PermissionStoreLocation.parse(cluster.socketURL(database, user: "reader")), executor: testExecutor, timeouts: PermissionStoreTests.patient)
        }
        #expect(error?.category == .notAllowed)
        #expect(error.map { "\($0)" }?.contains("create tables") == true, "\(String(describing: error))")
    }
}
