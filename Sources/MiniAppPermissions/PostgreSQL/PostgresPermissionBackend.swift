import Foundation
import Logging
import MiniAppCore
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// The permission store in PostgreSQL, shared by a fleet of hosts.
///
/// Tables `miniapp_schema`, `miniapp_permission`, `miniapp_permission_history`, `miniapp_storage`,
/// `miniapp_storage_usage` and `miniapp_host_record` and functions `miniapp_apply`, `miniapp_reset`,
/// `miniapp_reset_names`, `miniapp_storage_set`,
/// `miniapp_storage_remove` and `miniapp_storage_clear` (in the URL's `search_path`, else the server's
/// default schema), created or migrated only when behind, under an advisory lock so that instances
/// starting at once migrate once. Every change of decisions, and every write of secure-storage items, is
/// one statement (one transaction, one round trip) calling a function that first takes a per-app
/// advisory lock, so that the history written is the current state's history whatever other machines do
/// at once, writers at once never pass an app's storage limit together, and each app's bytes kept are
/// those of its items. Connections are kept (a few idle) and every wait is bounded: the
/// connect timeout for connecting and logging in, the statement timeout for each operation, on the
/// client's clock (a server that stopped answering) and on the server's (`statement_timeout`,
/// `lock_timeout`).
final class PostgresPermissionBackend: PermissionBackend {
    private let settings: PostgresLocation
    private let timeouts: PermissionStoreTimeouts
    private let logger: Logger
    private let configuration: PostgresConnection.Configuration
    private let idle = Mutex<[PostgresConnection]>([])
    private let isClosed = Mutex(false)
    private let lastConnectionID = Mutex(0)

    /// The schema versions this code writes.
    static let schemaVersions: Set<Int> = [1, 2, 3, 4, 5, 6, 7, 8]
    /// The most connections kept open between operations.
    static let maxIdle = 4
    /// Advisory lock keys: the migration's, and the class of the per-app locks.
    static let migrationLock: Int64 = 0x6D69_6E69_6170_7001
    static let appLockClass: Int32 = 0x6D69_6E69

    var name: String { settings.description }

    private init(settings: PostgresLocation, timeouts: PermissionStoreTimeouts, logger: Logger) throws(PermissionStoreError) {
        self.settings = settings
        self.timeouts = timeouts
        self.logger = logger
        var configuration: PostgresConnection.Configuration
        if let socket = settings.socketPath {
            configuration = .init(unixSocketPath: socket, username: settings.user, password: settings.password, database: settings.database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            do {
                switch settings.sslMode {
                case .disable:
                    tls = .disable
                case .prefer, .require:
                    // As libpq: encrypted, the certificate not checked (sslmode=verify-full checks it).
                    var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
                    tlsConfiguration.certificateVerification = .none
                    let context = try NIOSSLContext(configuration: tlsConfiguration)
                    tls = settings.sslMode == .prefer ? .prefer(context) : .require(context)
                case .verifyFull:
                    tls = .require(try NIOSSLContext(configuration: TLSConfiguration.makeClientConfiguration()))
                }
            } catch {
                throw .invalidLocation(reason: "TLS cannot be set up for sslmode=\(settings.sslMode.rawValue): \(Sanitizer.printable(String(describing: error), limit: 200))")
            }
            configuration = .init(host: settings.host ?? "localhost", port: settings.port, username: settings.user, password: settings.password, database: settings.database, tls: tls)
        }
        let connect = settings.connectTimeoutSeconds.map { Duration.seconds($0) } ?? timeouts.connect
        configuration.options.connectTimeout = .milliseconds(max(1, Self.milliseconds(connect)))
        let statement = "\(max(1, Self.milliseconds(timeouts.statement)))"
        var parameters = [("statement_timeout", statement), ("lock_timeout", statement), ("application_name", settings.applicationName ?? "miniapp")]
        if let searchPath = settings.searchPath { parameters.append(("search_path", searchPath)) }
        configuration.options.additionalStartupParameters = parameters
        self.configuration = configuration
    }

    /// Connects, creates or migrates the tables when they are behind, and keeps the connection.
    /// The TLS setup reads the system's trust store: it runs on `executor`, not the caller's thread.
    static func open(
        _ settings: PostgresLocation, timeouts: PermissionStoreTimeouts, executor: BlockingExecutor, logger: Logger
    ) async throws(PermissionStoreError) -> PostgresPermissionBackend {
        let made: Result<PostgresPermissionBackend, PermissionStoreError>
        do {
            made = try await executor.run {
                Result { () throws(PermissionStoreError) in try PostgresPermissionBackend(settings: settings, timeouts: timeouts, logger: logger) }
            }
        } catch {
            throw .unreachable(store: settings.description, reason: "no thread was free to set up its connections")
        }
        let backend = try made.get()
        try await backend.migrate()
        return backend
    }

    /// A store dropped without ``close()`` still closes its connections.
    deinit {
        for connection in idle.withLock({ $0 }) { connection.closeInBackground() }
    }

    func close() async {
        isClosed.withLock { $0 = true }
        for connection in idle.withLock({ connections in defer { connections = [] }; return connections }) {
            try? await connection.close()
        }
    }

    // MARK: Schema

    /// The versions `miniapp_schema` lists.
    private static func appliedVersions(_ connection: PostgresConnection, logger: Logger) async throws -> Set<Int> {
        Set(try await connection.query("SELECT version FROM miniapp_schema", logger: logger).collect().map { try $0.decode(Int.self) })
    }

    /// Applies each step whose version `miniapp_schema` does not list, whichever others it lists: a
    /// step never depends on one numbered between it and the steps before it.
    private func migrate() async throws(PermissionStoreError) {
        let applied = try await run { connection, logger in
            let rows = try await connection.query("SELECT to_regclass('miniapp_schema') IS NOT NULL", logger: logger).collect()
            guard try rows.first?.decode(Bool.self) == true else { return Set<Int>() }
            return try await Self.appliedVersions(connection, logger: logger)
        }
        guard !Self.schemaVersions.isSubset(of: applied) else { return }
        try await run { connection, logger in
            try await connection.withTransaction(logger: logger) { connection in
                // Instances that start at once wait here for the first, then find nothing to do.
                _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger).collect()
                _ = try await connection.query("CREATE TABLE IF NOT EXISTS miniapp_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())", logger: logger).collect()
                let applied = try await Self.appliedVersions(connection, logger: logger)
                if !applied.contains(1) {
                    for statement: PostgresQuery in [
                        """
                        CREATE TABLE miniapp_permission (app_id text NOT NULL, name text NOT NULL, status text NOT NULL,
                            decided_at double precision NOT NULL, PRIMARY KEY (app_id, name))
                        """,
                        """
                        CREATE TABLE miniapp_permission_history (id bigserial PRIMARY KEY, app_id text NOT NULL, name text NOT NULL,
                            from_status text, to_status text, changed_at double precision NOT NULL)
                        """,
                        "CREATE INDEX miniapp_permission_history_app ON miniapp_permission_history (app_id, id)",
                        "INSERT INTO miniapp_schema (version) VALUES (1)",
                    ] {
                        _ = try await connection.query(statement, logger: logger).collect()
                    }
                    logger.info("created the permission store's tables", metadata: ["store": "\(self.name)"])
                }
                if !applied.contains(2) {
                    // A change in one round trip: the app's lock, then each status read after it (a
                    // function's statements each see what committed before them), written with its history.
                    for statement: PostgresQuery in [
                        """
                        CREATE OR REPLACE FUNCTION miniapp_apply(app text, names text[], statuses text[], times double precision[])
                        RETURNS void LANGUAGE plpgsql AS $$
                        DECLARE
                            previous text;
                        BEGIN
                            PERFORM pg_advisory_xact_lock(\(unescaped: String(Self.appLockClass)), hashtext(app));
                            FOR i IN 1 .. coalesce(array_length(names, 1), 0) LOOP
                                previous := (SELECT status FROM miniapp_permission WHERE app_id = app AND name = names[i]);
                                INSERT INTO miniapp_permission (app_id, name, status, decided_at) VALUES (app, names[i], statuses[i], times[i])
                                    ON CONFLICT (app_id, name) DO UPDATE SET status = excluded.status, decided_at = excluded.decided_at;
                                IF previous IS DISTINCT FROM statuses[i] THEN
                                    INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at)
                                        VALUES (app, names[i], previous, statuses[i], times[i]);
                                END IF;
                            END LOOP;
                        END $$
                        """,
                        """
                        CREATE OR REPLACE FUNCTION miniapp_reset(app text, at_time double precision)
                        RETURNS void LANGUAGE plpgsql AS $$
                        BEGIN
                            PERFORM pg_advisory_xact_lock(\(unescaped: String(Self.appLockClass)), hashtext(app));
                            INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at)
                                SELECT app_id, name, status, NULL, at_time FROM miniapp_permission WHERE app_id = app ORDER BY name;
                            DELETE FROM miniapp_permission WHERE app_id = app;
                        END $$
                        """,
                        "INSERT INTO miniapp_schema (version) VALUES (2)",
                    ] {
                        _ = try await connection.query(statement, logger: logger).collect()
                    }
                }
                if !applied.contains(3) {
                    // Times taken after the app's lock: a transaction's start (the client's clock, or now())
                    // is not the order its changes take effect in. A decision without a time (times[i] is
                    // NULL, or past the array's end) is timed by clock_timestamp() once the lock is held, and
                    // no history row is ever before the app's last one. Rows already written are brought in
                    // line: each takes the latest time of the rows before it.
                    for statement: PostgresQuery in [
                        """
                        CREATE OR REPLACE FUNCTION miniapp_apply(app text, names text[], statuses text[], times double precision[])
                        RETURNS void LANGUAGE plpgsql AS $$
                        DECLARE
                            previous text;
                            last double precision;
                            now_time double precision;
                            decided double precision;
                        BEGIN
                            PERFORM pg_advisory_xact_lock(\(unescaped: String(Self.appLockClass)), hashtext(app));
                            last := coalesce((SELECT changed_at FROM miniapp_permission_history WHERE app_id = app ORDER BY id DESC LIMIT 1), 0);
                            now_time := greatest(floor(extract(epoch FROM clock_timestamp()) * 1000) / 1000, last);
                            FOR i IN 1 .. coalesce(array_length(names, 1), 0) LOOP
                                decided := coalesce(times[i], now_time);
                                previous := (SELECT status FROM miniapp_permission WHERE app_id = app AND name = names[i]);
                                INSERT INTO miniapp_permission (app_id, name, status, decided_at) VALUES (app, names[i], statuses[i], decided)
                                    ON CONFLICT (app_id, name) DO UPDATE SET status = excluded.status, decided_at = excluded.decided_at;
                                IF previous IS DISTINCT FROM statuses[i] THEN
                                    INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at)
                                        VALUES (app, names[i], previous, statuses[i], greatest(decided, last));
                                END IF;
                            END LOOP;
                        END $$
                        """,
                        """
                        CREATE OR REPLACE FUNCTION miniapp_reset(app text, at_time double precision)
                        RETURNS void LANGUAGE plpgsql AS $$
                        DECLARE
                            last double precision;
                        BEGIN
                            PERFORM pg_advisory_xact_lock(\(unescaped: String(Self.appLockClass)), hashtext(app));
                            last := coalesce((SELECT changed_at FROM miniapp_permission_history WHERE app_id = app ORDER BY id DESC LIMIT 1), 0);
                            INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at)
                                SELECT app_id, name, status, NULL,
                                    greatest(coalesce(at_time, floor(extract(epoch FROM clock_timestamp()) * 1000) / 1000), last)
                                FROM miniapp_permission WHERE app_id = app ORDER BY name;
                            DELETE FROM miniapp_permission WHERE app_id = app;
                        END $$
                        """,
                        """
                        UPDATE miniapp_permission_history AS h SET changed_at = ordered.running
                        FROM (SELECT id, max(changed_at) OVER (PARTITION BY app_id ORDER BY id) AS running FROM miniapp_permission_history) AS ordered
                        WHERE h.id = ordered.id AND h.changed_at < ordered.running
                        """,
                        "INSERT INTO miniapp_schema (version) VALUES (3)",
                    ] {
                        _ = try await connection.query(statement, logger: logger).collect()
                    }
                }
                // The steps that add to the schema: each set of statements, then its version, in one go.
                for (version, statements) in [
                    (4, Self.secureStorageSchema), (5, Self.storageUsageSchema), (6, Self.hostRecordSchema), (7, Self.resetNamesSchema),
                    (8, Self.changeFeedSchema),
                ] where !applied.contains(version) {
                    for statement in statements {
                        _ = try await connection.query(statement, logger: logger).collect()
                    }
                    _ = try await connection.query("INSERT INTO miniapp_schema (version) VALUES (\(unescaped: String(version)))", logger: logger).collect()
                }
            }
        }
    }

    // MARK: Reading

    func decisions(appId: String) async throws(PermissionStoreError) -> [StoredPermission] {
        try await run { connection, logger in
            try await connection.query("SELECT name, status, decided_at FROM miniapp_permission WHERE app_id = \(appId) ORDER BY name", logger: logger)
                .collect().compactMap(Self.decision(from:))
        }
    }

    func allDecisions() async throws(PermissionStoreError) -> [String: [StoredPermission]] {
        try await run { connection, logger in
            var result: [String: [StoredPermission]] = [:]
            for row in try await connection.query("SELECT app_id, name, status, decided_at FROM miniapp_permission ORDER BY app_id, name", logger: logger).collect() {
                let (appId, name, status, decidedAt) = try row.decode((String, String, String, Double).self)
                if let status = PermissionStatus(rawValue: status) {
                    result[appId, default: []].append(StoredPermission(name: name, status: status, decidedAt: Date(timeIntervalSince1970: decidedAt)))
                }
            }
            return result
        }
    }

    func history(appId: String) async throws(PermissionStoreError) -> [PermissionChange] {
        try await run { connection, logger in
            try await connection.query(
                "SELECT name, from_status, to_status, changed_at FROM miniapp_permission_history WHERE app_id = \(appId) ORDER BY id", logger: logger
            ).collect().map { row in
                let (name, from, to, changedAt) = try row.decode((String, String?, String?, Double).self)
                return PermissionChange(
                    name: name, from: from.flatMap(PermissionStatus.init(rawValue:)), to: to.flatMap(PermissionStatus.init(rawValue:)),
                    changedAt: Date(timeIntervalSince1970: changedAt)
                )
            }
        }
    }

    private static func decision(from row: PostgresRow) throws -> StoredPermission? {
        let (name, status, decidedAt) = try row.decode((String, String, Double).self)
        return PermissionStatus(rawValue: status).map { StoredPermission(name: name, status: $0, decidedAt: Date(timeIntervalSince1970: decidedAt)) }
    }

    // MARK: Writing

    /// One statement (a transaction of its own): ``migrate()``'s `miniapp_apply` takes the app's
    /// advisory lock, then writes each status with its history row. Decisions taking effect now go
    /// without times: the function times them on the server once the lock is held. The author goes as
    /// settings of the statement's own transaction, which the history's trigger writes into each row.
    func apply(appId: String, _ decisions: [StoredPermission], takingEffectNow: Bool, author: ChangeAuthor) async throws(PermissionStoreError) {
        let names = decisions.map(\.name)
        let statuses = decisions.map(\.status.rawValue)
        let times = takingEffectNow ? [] : decisions.map(\.decidedAt.timeIntervalSince1970)
        let (source, writer) = (author.source.rawValue, author.writer)
        try await run { connection, logger in
            _ = try await connection.query(
                "SELECT miniapp_apply(\(appId), \(names), \(statuses), \(times)) FROM (SELECT set_config('miniapp.source', \(source), true), set_config('miniapp.writer', \(writer), true)) AS author",
                logger: logger
            ).collect()
        }
    }

    func reset(appId: String, names: [String]?, at date: Date?, author: ChangeAuthor) async throws(PermissionStoreError) {
        let time = date?.timeIntervalSince1970
        let (source, writer) = (author.source.rawValue, author.writer)
        try await run { connection, logger in
            _ = try await connection.query(
                "SELECT miniapp_reset_names(\(appId), \(names), \(time)) FROM (SELECT set_config('miniapp.source', \(source), true), set_config('miniapp.writer', \(writer), true)) AS author",
                logger: logger
            ).collect()
        }
    }

    /// `miniapp_reset` of some names only (a host page's *Reset* of one permission), schema 7; `NULL`
    /// names reset all. `miniapp_reset` stays for the binaries of earlier versions.
    static var resetNamesSchema: [PostgresQuery] {
        [
            """
            CREATE OR REPLACE FUNCTION miniapp_reset_names(app text, reset_names text[], at_time double precision)
            RETURNS void LANGUAGE plpgsql AS $$
            DECLARE
                last double precision;
            BEGIN
                PERFORM pg_advisory_xact_lock(\(unescaped: String(Self.appLockClass)), hashtext(app));
                last := coalesce((SELECT changed_at FROM miniapp_permission_history WHERE app_id = app ORDER BY id DESC LIMIT 1), 0);
                INSERT INTO miniapp_permission_history (app_id, name, from_status, to_status, changed_at)
                    SELECT app_id, name, status, NULL,
                        greatest(coalesce(at_time, floor(extract(epoch FROM clock_timestamp()) * 1000) / 1000), last)
                    FROM miniapp_permission WHERE app_id = app AND (reset_names IS NULL OR name = ANY(reset_names)) ORDER BY name;
                DELETE FROM miniapp_permission WHERE app_id = app AND (reset_names IS NULL OR name = ANY(reset_names));
            END $$
            """,
        ]
    }

    // MARK: Observing

    /// The history's authors and its signal (schema 8): each row names the source and the writing store
    /// that the writing transaction set (`miniapp.source`, `miniapp.writer`; none from earlier versions),
    /// and every insert notifies `miniapp_permission_history`, which observers `LISTEN` to.
    static let changeFeedSchema: [PostgresQuery] = [
        "ALTER TABLE miniapp_permission_history ADD COLUMN IF NOT EXISTS source text, ADD COLUMN IF NOT EXISTS writer text",
        """
        CREATE OR REPLACE FUNCTION miniapp_history_author() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.source := coalesce(NEW.source, nullif(current_setting('miniapp.source', true), ''));
            NEW.writer := coalesce(NEW.writer, nullif(current_setting('miniapp.writer', true), ''));
            RETURN NEW;
        END $$
        """,
        "CREATE TRIGGER miniapp_history_author BEFORE INSERT ON miniapp_permission_history FOR EACH ROW EXECUTE FUNCTION miniapp_history_author()",
        """
        CREATE OR REPLACE FUNCTION miniapp_history_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('\(unescaped: changeChannel)', '');
            RETURN NULL;
        END $$
        """,
        "CREATE TRIGGER miniapp_history_notify AFTER INSERT ON miniapp_permission_history FOR EACH STATEMENT EXECUTE FUNCTION miniapp_history_notify()",
    ]

    /// The channel every write of the history notifies.
    static let changeChannel = "miniapp_permission_history"

    func changes(after id: Int64, limit: Int) async throws(PermissionStoreError) -> [StoredChange] {
        try await run { connection, logger in
            try await connection.query(
                """
                SELECT id, app_id, name, from_status, to_status, changed_at, source, writer FROM miniapp_permission_history
                WHERE id > \(id) ORDER BY id LIMIT \(limit)
                """, logger: logger
            ).collect().map { row in
                let (id, appId, name, from, to, changedAt, source, writer) = try row.decode((Int64, String, String, String?, String?, Double, String?, String?).self)
                return StoredChange(
                    id: id, appId: appId,
                    change: PermissionChange(
                        name: name, from: from.flatMap(PermissionStatus.init(rawValue:)), to: to.flatMap(PermissionStatus.init(rawValue:)),
                        changedAt: Date(timeIntervalSince1970: changedAt)
                    ),
                    source: source, writer: writer
                )
            }
        }
    }

    func lastChangeID() async throws(PermissionStoreError) -> Int64 {
        try await run { connection, logger in
            try await connection.query("SELECT coalesce(max(id), 0)::bigint FROM miniapp_permission_history", logger: logger).collect().first?.decode(Int64.self) ?? 0
        }
    }

    /// A connection of its own `LISTEN`s to the history's channel; lost, it is made again (1 s, doubling
    /// to 30 s apart), and `changed` is called once it listens again, for what was written meanwhile.
    func watchChanges(_ changed: @escaping @Sendable () -> Void) async -> (any ChangeWatch)? {
        let configuration = self.configuration, logger = self.logger, channel = Self.changeChannel
        let connect = settings.connectTimeoutSeconds.map { Duration.seconds($0) } ?? timeouts.connect
        let id = lastConnectionID.withLock { last in
            last += 1
            return last
        }
        let task = Task {
            var pause = Duration.seconds(1), first = true
            while !Task.isCancelled {
                do {
                    let connection = try await Self.within(connect, { try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger) }, onTimeout: {})
                    defer { connection.closeInBackground() }
                    try await connection.listen(on: channel) { notifications in
                        if !first { changed() }
                        first = false
                        pause = .seconds(1)
                        for try await _ in notifications { changed() }
                    }
                } catch {
                    logger.debug("the permission store's change watch was lost", metadata: ["error": "\(Sanitizer.printable(String(describing: error), limit: 200))"])
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(30))
            }
        }
        return ListenWatch(task: task)
    }

    // MARK: Connections

    /// Runs `body` on a kept or new connection within the statement timeout, mapping failures to
    /// ``PermissionStoreError``; a serialization failure or deadlock is retried while time is left.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws(PermissionStoreError) -> T {
        let deadline = ContinuousClock.now + timeouts.statement
        var attempt = 0
        while true {
            attempt += 1
            let connection = try await acquire()
            do {
                let value = try await Self.within(timeouts.statement, { [logger] in try await body(connection, logger) }, onTimeout: { connection.closeInBackground() })
                release(connection)
                return value
            } catch {
                // A connection closed for a timeout may not be closed yet: it is never used again.
                if !(error is TimedOut), !connection.isClosed { release(connection) }
                let mapped = map(error)
                if Self.isRetryable(error), ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(min(50, 2 << min(attempt, 5))))
                    continue
                }
                throw mapped
            }
        }
    }

    /// A kept connection that is still open, else a new one (connected and logged in within the connect timeout).
    private func acquire() async throws(PermissionStoreError) -> PostgresConnection {
        guard !isClosed.withLock({ $0 }) else { throw .unreachable(store: name, reason: "the store was closed") }
        while let kept = idle.withLock({ $0.popLast() }) {
            if !kept.isClosed { return kept }
        }
        let id = lastConnectionID.withLock { last in
            last += 1
            return last
        }
        let limit = settings.connectTimeoutSeconds.map { Duration.seconds($0) } ?? timeouts.connect
        do {
            let configuration = self.configuration
            let logger = self.logger
            return try await Self.within(limit, { try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger) }, onTimeout: {})
        } catch {
            if error is TimedOut || Self.isConnectTimeout(error) { throw .unreachable(store: name, reason: "no connection within \(Self.seconds(limit))") }
            throw map(error)
        }
    }

    private func release(_ connection: PostgresConnection) {
        let surplus = idle.withLock { connections -> Bool in
            guard !isClosed.withLock({ $0 }), connections.count < Self.maxIdle else { return true }
            connections.append(connection)
            return false
        }
        if surplus { connection.closeInBackground() }
    }

    private struct TimedOut: Error {}

    /// `body`'s result, or ``TimedOut`` after `limit`, when `onTimeout` runs first (closing the
    /// connection, so that a query waiting on it fails at once).
    private static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T, onTimeout: @escaping @Sendable () -> Void) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            if let value = try await group.next() ?? nil { return value }
            onTimeout()
            throw TimedOut()
        }
    }

    // MARK: Errors

    private static func isConnectTimeout(_ error: any Error) -> Bool {
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        if let error = error as? PSQLError, let underlying = error.underlying { return isConnectTimeout(underlying) }
        return false
    }

    private static func isRetryable(_ error: any Error) -> Bool {
        let state = sqlState(error)
        return state == "40001" || state == "40P01"
    }

    private static func serverError(_ error: any Error) -> PSQLError? {
        if let error = error as? PSQLError { return error }
        if let error = error as? PostgresTransactionError {
            for inner in [error.closureError, error.beginError, error.commitError] {
                if let inner, let found = serverError(inner) { return found }
            }
        }
        return nil
    }

    private static func sqlState(_ error: any Error) -> String? {
        serverError(error)?.serverInfo?[.sqlState]
    }

    /// `error` as the store's error, its text cleaned of control characters and of the password.
    private func map(_ error: any Error) -> PermissionStoreError {
        if let error = error as? PermissionStoreError { return error }
        if error is TimedOut { return .unreachable(store: name, reason: "no answer within \(Self.seconds(timeouts.statement))") }
        var refused = false
        var reason: String
        if let error = Self.serverError(error) {
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? "an error"
                switch state {
                case _ where state.hasPrefix("28"):
                    refused = true
                    reason = message
                case "42501":
                    refused = true
                    reason = "\(message) (the store's user needs the right to create tables in the database, or in the schema of search_path)"
                case "57014":
                    reason = "no answer within \(Self.seconds(timeouts.statement)) (\(message))"
                case "55P03":
                    reason = "a lock was not granted within \(Self.seconds(timeouts.statement))"
                default:
                    reason = "the server answered: \(message) (SQLSTATE \(state))"
                }
            case .authMechanismRequiresPassword:
                refused = true
                reason = "the server asks for a password and none was given"
            case .unsupportedAuthMechanism, .saslError:
                refused = true
                reason = "the login failed (\(error.code))"
            case .sslUnsupported:
                reason = "the server does not offer TLS, which sslmode=\(settings.sslMode.rawValue) needs"
            case .connectionError:
                reason = error.underlying.map(Self.connectionProblem) ?? "the connection failed"
            case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
                reason = "the connection was closed"
            default:
                reason = "\(error.code)"
            }
        } else {
            reason = Self.connectionProblem(error)
        }
        if let password = settings.password, !password.isEmpty { reason = reason.replacingOccurrences(of: password, with: "***") }
        reason = Sanitizer.printable(reason, limit: 300)
        return refused ? .refused(store: name, reason: reason) : .unreachable(store: name, reason: reason)
    }

    /// What a failure to connect comes down to: the system's words for the socket error when there is one.
    private static func connectionProblem(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return connectionProblem(first.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "the host name cannot be resolved" }
        }
        if let error = error as? ChannelError, case .connectTimeout = error { return "no connection within the connect timeout" }
        if let error = error as? NIOSSLError { return "TLS failed: \(error)" }
        if let error = error as? BoringSSLError { return "TLS failed: \(error)" }
        return String(describing: error)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    private static func seconds(_ duration: Duration) -> String {
        let milliseconds = milliseconds(duration)
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : String(format: "%.1f s", Double(milliseconds) / 1000)
    }
}

extension PostgresConnection {
    /// Starts closing the connection without waiting: a query waiting on it fails at once. The
    /// connection stays alive until it is closed (PostgresNIO requires that of its connections).
    fileprivate func closeInBackground() {
        let closing: EventLoopFuture<Void> = close()
        closing.whenComplete { _ in withExtendedLifetime(self) {} }
    }
}

/// A PostgreSQL store's watch: its listening task.
private struct ListenWatch: ChangeWatch {
    let task: Task<Void, Never>

    func stop() { task.cancel() }
}
