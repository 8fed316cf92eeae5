import Foundation
import GRDB
import MiniAppCore
import Synchronization

/// The permission store in SQLite (by default `permissions.sqlite` in the cache directory).
///
/// WAL mode and a busy timeout let several processes read and write at once; every change runs in one
/// transaction and leaves a history row (the apps' secure-storage items, in table `storageItem` with
/// each app's bytes in `storageUsage`, have none). The file is created with mode 0600. A damaged file
/// is reported, never reset. Reads and writes are async and run on SQLite's own queues, never on the
/// caller's thread; every wait for another process is bounded by the lock timeout given at open.
final class SQLitePermissionBackend: PermissionBackend {
    /// The database file.
    let path: String
    /// The connections that read; read-only when the store was current at open.
    private let database: DatabasePool
    /// The connections that write: opened at the first write when ``database`` is read-only, because
    /// opening for writing may have to write (GRDB makes sure the WAL file is not empty), and so wait
    /// for another process's write transaction.
    private let writable: Mutex<DatabasePool?>
    private let busySeconds: Double
    /// Where opening the writing connections runs.
    private let executor: BlockingExecutor

    var name: String { path }

    /// Opens the store at `path`, creating and migrating it when needed, on `executor`: the open may
    /// wait up to `lockTimeout` for other processes.
    static func open(path: String, lockTimeout: Duration, executor: BlockingExecutor) async throws(PermissionStoreError) -> SQLitePermissionBackend {
        let seconds = Double(lockTimeout.components.seconds) + Double(lockTimeout.components.attoseconds) / 1e18
        let found = try await Self.blocking(on: executor, path: path) { () throws(PermissionStoreError) in
            try Self.openCurrent(path: path, busySeconds: seconds)
        }
        let folder: Int32
        switch found {
        case .current(let pool):
            return SQLitePermissionBackend(path: path, database: pool, writable: nil, busySeconds: seconds, executor: executor)
        case .needsMigrating(let lockable):
            folder = lockable
        }
        // Switching a new file to WAL and creating or migrating its tables race between processes doing
        // it at once; an exclusive flock on the cache folder (no extra file) serialises that step. It is
        // waited for suspended, at most `lockTimeout`. The moment it is held, a thread of the executor's
        // looks again (the process it waited for may have migrated the store: then it is opened for
        // reading as above), else migrates, and lets go of the lock (before closing the folder, so that
        // a waiter woken by the close finds it free).
        let held = FolderLock(folder)
        let migrate: @Sendable () -> Result<(pool: DatabasePool, writable: Bool), PermissionStoreError> = {
            defer { held.letGo() }
            do {
                if let current = try Self.currentPool(path: path, busySeconds: seconds) { return .success((current, false)) }
                let pool = try DatabasePool(path: path, configuration: Self.configuration(busySeconds: seconds, readOnly: false))
                try Self.migrator.migrate(pool)
                for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
                return .success((pool, true))
            } catch {
                return .failure(Self.storeError(error, path: path))
            }
        }
        // The time allowed is the lock's alone, counted from here: not the executor's queue before.
        let deadline = ContinuousClock.now + lockTimeout
        let locked = folder >= 0 ? await executor.whileLocked(folder, until: deadline, migrate) : (.failed(EBADF), nil)
        let opened: (pool: DatabasePool, writable: Bool)
        switch locked {
        case (.acquired, let done?):
            opened = try done.get()
        case (.timedOut, _):
            held.letGo()
            throw .busy(path: path, waitedSeconds: Int(seconds))
        case (.cancelled, _):
            held.letGo()
            throw .unavailable(path: path, reason: "its opening was cancelled")
        default:
            // A folder that cannot be opened or locked at all: the store is migrated without the lock,
            // as SQLite's own locking still keeps the file whole.
            do {
                opened = try await Self.blocking(on: executor, path: path) { () throws(PermissionStoreError) in try migrate().get() }
            } catch {
                held.letGo()
                throw error
            }
        }
        return SQLitePermissionBackend(path: path, database: opened.pool, writable: opened.writable ? opened.pool : nil, busySeconds: seconds, executor: executor)
    }

    /// Runs blocking `body` on `executor` and waits for it.
    private static func blocking<T: Sendable>(
        on executor: BlockingExecutor, path: String, _ body: @escaping @Sendable () throws(PermissionStoreError) -> T
    ) async throws(PermissionStoreError) -> T {
        let outcome: Result<T, PermissionStoreError>
        do {
            outcome = try await executor.run { Result { () throws(PermissionStoreError) in try body() } }
        } catch {
            throw .unavailable(path: path, reason: "no thread was free to open it")
        }
        return try outcome.get()
    }

    private init(path: String, database: DatabasePool, writable: DatabasePool?, busySeconds: Double, executor: BlockingExecutor) {
        self.path = path
        self.database = database
        self.writable = Mutex(writable)
        self.busySeconds = busySeconds
        self.executor = executor
    }

    /// The cache folder's descriptor while its lock is wanted or held: let go (unlocked, then closed)
    /// once, by whichever path ends the migration.
    private final class FolderLock: Sendable {
        private let descriptor: Mutex<Int32>

        init(_ descriptor: Int32) {
            self.descriptor = Mutex(descriptor)
        }

        func letGo() {
            descriptor.withLock { descriptor in
                guard descriptor >= 0 else { return }
                flock(descriptor, LOCK_UN)
                Glibc.close(descriptor)
                descriptor = -1
            }
        }
    }

    /// What the first look at the store found: a store whose schema is current, opened for reading, or
    /// the cache folder's descriptor (-1 when it cannot be opened) to lock while the store is migrated.
    private enum Found: Sendable {
        case current(DatabasePool)
        case needsMigrating(folder: Int32)
    }

    /// Checks the store's files and opens it for reading if its schema is current; blocking, so only
    /// ever on the executor, from ``open(path:lockTimeout:executor:)``.
    private static func openCurrent(path: String, busySeconds seconds: Double) throws(PermissionStoreError) -> Found {
        let cacheDirectory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        } catch {
            throw .unavailable(path: path, reason: "its folder cannot be created")
        }
        // The store and its WAL files are only ever the cache's own files: a link planted in their place
        // is refused, never written through.
        for suffix in ["", "-wal", "-shm"] {
            var info = stat()
            if lstat(path + suffix, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
                throw .unavailable(path: path + suffix, reason: (info.st_mode & S_IFMT) == S_IFLNK ? "it is a symbolic link, which the store never follows; remove it" : "it is not a regular file; remove it")
            }
        }
        if let current = try currentPool(path: path, busySeconds: seconds) { return .current(current) }
        return .needsMigrating(folder: Glibc.open(cacheDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
    }

    /// The store opened for reading only when its schema is current, else `nil` (creating an empty file
    /// when there is none).
    ///
    /// A current store is opened with no lock of any kind and no write, so that opening never waits for
    /// another process's write (WAL lets readers go on beside a writer). Writing connections open at
    /// the first write.
    private static func currentPool(path: String, busySeconds seconds: Double) throws(PermissionStoreError) -> DatabasePool? {
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .unavailable(path: path, reason: String(cString: strerror(errno))) }
        var info = stat()
        let existed = fstat(descriptor, &info) == 0 && info.st_size > 0
        Glibc.close(descriptor)
        guard existed else { return nil }
        do {
            let pool = try DatabasePool(path: path, configuration: Self.configuration(busySeconds: seconds, readOnly: true))
            guard try pool.read({ try Self.migrator.hasCompletedMigrations($0) }) else { return nil }
            for suffix in ["-wal", "-shm"] { chmod(path + suffix, 0o600) }
            return pool
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private static func configuration(busySeconds: Double, readOnly: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busySeconds)
        configuration.label = "miniapp.permissions"
        configuration.readonly = readOnly
        return configuration
    }

    /// The writing connections, opened on the executor the first time.
    private func writer() async throws(PermissionStoreError) -> DatabasePool {
        if let pool = writable.withLock({ $0 }) { return pool }
        let (path, seconds) = (self.path, busySeconds)
        let opened = try await Self.blocking(on: executor, path: path) { () throws(PermissionStoreError) in
            do {
                let pool = try DatabasePool(path: path, configuration: Self.configuration(busySeconds: seconds, readOnly: false))
                for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
                return pool
            } catch {
                throw Self.storeError(error, path: path)
            }
        }
        return writable.withLock { pool in
            if let pool { return pool }
            pool = opened
            return opened
        }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "permission") { table in
                table.column("appId", .text).notNull()
                table.column("name", .text).notNull()
                table.column("status", .text).notNull()
                table.column("decidedAt", .double).notNull()
                table.primaryKey(["appId", "name"])
            }
            try db.create(table: "permissionHistory") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("appId", .text).notNull().indexed()
                table.column("name", .text).notNull()
                table.column("fromStatus", .text)
                table.column("toStatus", .text)
                table.column("changedAt", .double).notNull()
            }
        }
        // Each app's secure-storage items: values as bytes (a string's UTF-8), which keep NUL characters.
        migrator.registerMigration("v2") { db in
            try db.create(table: "storageItem", options: [.withoutRowID]) { table in
                table.column("appId", .text).notNull()
                table.column("key", .text).notNull()
                table.column("value", .blob).notNull()
                table.primaryKey(["appId", "key"])
            }
        }
        // Each app's secure-storage bytes, read by primary key so that a write costs the same whatever
        // the app holds; filled from the items already stored.
        migrator.registerMigration("v3") { db in
            try db.create(table: "storageUsage", options: [.withoutRowID]) { table in
                table.column("appId", .text).notNull().primaryKey()
                table.column("used", .integer).notNull()
            }
            try db.execute(sql: "INSERT INTO storageUsage (appId, used) SELECT appId, sum(\(itemBytes)) FROM storageItem GROUP BY appId")
        }
        // What a host keeps for each app besides permissions and secure storage: preferences, purchases.
        migrator.registerMigration("v4") { db in
            try db.create(table: "hostRecord", options: [.withoutRowID]) { table in
                table.column("appId", .text).notNull()
                table.column("kind", .text).notNull()
                table.column("key", .text).notNull()
                table.column("value", .text).notNull()
                table.primaryKey(["appId", "kind", "key"])
            }
        }
        // Who wrote each history row (the decision's source, and the writing store), for the store's
        // observers; rows of earlier versions name no one.
        migrator.registerMigration("v5") { db in
            try db.alter(table: "permissionHistory") { table in
                table.add(column: "source", .text)
                table.add(column: "writer", .text)
            }
        }
        return migrator
    }

    static func storeError(_ error: any Error, path: String) -> PermissionStoreError {
        if let error = error as? PermissionStoreError { return error }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_FORMAT:
                return .corrupt(path: path, reason: error.message ?? "\(error.resultCode)")
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return .busy(path: path, waitedSeconds: nil)
            default:
                return .unavailable(path: path, reason: error.message ?? "\(error.resultCode)")
            }
        }
        return .unavailable(path: path, reason: "\(error)")
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(PermissionStoreError) -> T {
        do {
            return try await database.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(PermissionStoreError) -> T {
        do {
            return try await writer().write(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    // MARK: Reading

    func decisions(appId: String) async throws(PermissionStoreError) -> [StoredPermission] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT name, status, decidedAt FROM permission WHERE appId = ? ORDER BY name", arguments: [appId])
                .compactMap(Self.stored(from:))
        }
    }

    func allDecisions() async throws(PermissionStoreError) -> [String: [StoredPermission]] {
        try await read { db in
            var result: [String: [StoredPermission]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT appId, name, status, decidedAt FROM permission ORDER BY appId, name") {
                if let permission = Self.stored(from: row) { result[row["appId"], default: []].append(permission) }
            }
            return result
        }
    }

    func history(appId: String) async throws(PermissionStoreError) -> [PermissionChange] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT name, fromStatus, toStatus, changedAt FROM permissionHistory WHERE appId = ? ORDER BY id", arguments: [appId]).map { row in
                PermissionChange(
                    name: row["name"], from: (row["fromStatus"] as String?).flatMap(PermissionStatus.init(rawValue:)),
                    to: (row["toStatus"] as String?).flatMap(PermissionStatus.init(rawValue:)),
                    changedAt: Date(timeIntervalSince1970: row["changedAt"])
                )
            }
        }
    }

    // MARK: Writing

    /// Writes run in IMMEDIATE transactions: the database's write lock (every app's lock) is held from
    /// the start, so the time read here orders the change among all others.
    func apply(appId: String, _ decisions: [StoredPermission], takingEffectNow: Bool, author: ChangeAuthor) async throws(PermissionStoreError) {
        try await write { db in
            let last = try Self.lastChange(appId: appId, db)
            let now = max(PermissionStore.storedTime(Date()).timeIntervalSince1970, last)
            for decision in decisions {
                let previous = try String.fetchOne(db, sql: "SELECT status FROM permission WHERE appId = ? AND name = ?", arguments: [appId, decision.name])
                let time = takingEffectNow ? now : decision.decidedAt.timeIntervalSince1970
                try db.execute(
                    sql: "INSERT INTO permission (appId, name, status, decidedAt) VALUES (?, ?, ?, ?) ON CONFLICT(appId, name) DO UPDATE SET status = excluded.status, decidedAt = excluded.decidedAt",
                    arguments: [appId, decision.name, decision.status.rawValue, time]
                )
                if previous != decision.status.rawValue {
                    try db.execute(
                        sql: "INSERT INTO permissionHistory (appId, name, fromStatus, toStatus, changedAt, source, writer) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        arguments: [appId, decision.name, previous, decision.status.rawValue, max(time, last), author.source.rawValue, author.writer]
                    )
                }
            }
        }
    }

    func reset(appId: String, names: [String]?, at date: Date?, author: ChangeAuthor) async throws(PermissionStoreError) {
        try await write { db in
            let last = try Self.lastChange(appId: appId, db)
            let time = max((date ?? PermissionStore.storedTime(Date())).timeIntervalSince1970, last)
            let kept = names.map(Set.init)
            for row in try Row.fetchAll(db, sql: "SELECT name, status FROM permission WHERE appId = ? ORDER BY name", arguments: [appId]) {
                let name: String = row["name"]
                guard kept?.contains(name) ?? true else { continue }
                try db.execute(
                    sql: "INSERT INTO permissionHistory (appId, name, fromStatus, toStatus, changedAt, source, writer) VALUES (?, ?, ?, NULL, ?, ?, ?)",
                    arguments: [appId, name, row["status"] as String, time, author.source.rawValue, author.writer]
                )
                try db.execute(sql: "DELETE FROM permission WHERE appId = ? AND name = ?", arguments: [appId, name])
            }
        }
    }

    func close() async {}

    // MARK: Observing

    func changes(after id: Int64, limit: Int) async throws(PermissionStoreError) -> [StoredChange] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, appId, name, fromStatus, toStatus, changedAt, source, writer FROM permissionHistory WHERE id > ? ORDER BY id LIMIT ?",
                arguments: [id, limit]
            ).map { row in
                StoredChange(
                    id: row["id"], appId: row["appId"],
                    change: PermissionChange(
                        name: row["name"], from: (row["fromStatus"] as String?).flatMap(PermissionStatus.init(rawValue:)),
                        to: (row["toStatus"] as String?).flatMap(PermissionStatus.init(rawValue:)), changedAt: Date(timeIntervalSince1970: row["changedAt"])
                    ),
                    source: row["source"], writer: row["writer"]
                )
            }
        }
    }

    func lastChangeID() async throws(PermissionStoreError) -> Int64 {
        try await read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM permissionHistory") ?? 0 }
    }

    /// Another process's write reaches the database file or its WAL: inotify on their folder says so.
    func watchChanges(_ changed: @escaping @Sendable () -> Void) async -> (any ChangeWatch)? {
        let folder = (path as NSString).deletingLastPathComponent, file = (path as NSString).lastPathComponent
        let names: Set<String> = [file, file + "-wal"]
        return DirectoryWatcher(folder: folder, executor: executor, accepts: { names.contains($0) }, changed: changed).map(FolderChangeWatch.init)
    }

    /// The time of the app's last history row (rows are in the order they took effect), or 0.
    private static func lastChange(appId: String, _ db: Database) throws -> Double {
        try Double.fetchOne(db, sql: "SELECT changedAt FROM permissionHistory WHERE appId = ? ORDER BY id DESC LIMIT 1", arguments: [appId]) ?? 0
    }

    private static func stored(from row: Row) -> StoredPermission? {
        guard let status = PermissionStatus(rawValue: row["status"]) else { return nil }
        return StoredPermission(name: row["name"], status: status, decidedAt: Date(timeIntervalSince1970: row["decidedAt"]))
    }
}

/// A SQLite store's watch: its folder's.
private struct FolderChangeWatch: ChangeWatch {
    let watcher: DirectoryWatcher

    func stop() { watcher.stop() }
}
