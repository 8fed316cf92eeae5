public import Foundation
public import Logging
public import MiniAppCore

/// What a permission store keeps, whichever database holds it: each app's decisions (status and the
/// time it was set) and the history of every change.
package protocol PermissionBackend: Sendable {
    /// The store as errors name it (a path, or a URL without its password).
    var name: String { get }
    /// The app's decisions, by name.
    func decisions(appId: String) async throws(PermissionStoreError) -> [StoredPermission]
    /// Every app's decisions, by app id, each sorted by name.
    func allDecisions() async throws(PermissionStoreError) -> [String: [StoredPermission]]
    /// The app's changes in the order they took effect, their times never decreasing.
    func history(appId: String) async throws(PermissionStoreError) -> [PermissionChange]
    /// Stores `decisions` (full names, sorted) in one transaction holding the app's lock, with a
    /// history row for each change. With `takingEffectNow`, every decision's time is the time the lock
    /// was taken, in whole milliseconds (never before the app's last history row); otherwise its own.
    /// A history row's time is its decision's, or the app's last row's when that is later: the history's
    /// order, which is the order the changes took effect, and its times always agree.
    /// Each history row names `author`.
    func apply(appId: String, _ decisions: [StoredPermission], takingEffectNow: Bool, author: ChangeAuthor) async throws(PermissionStoreError)
    /// Forgets the app's decisions (of `names` alone, full names, when given) in one transaction holding
    /// the app's lock, with a history row for each (naming `author`), at `date` or (when `nil`) the time
    /// the lock was taken; never before the app's last row.
    func reset(appId: String, names: [String]?, at date: Date?, author: ChangeAuthor) async throws(PermissionStoreError)
    /// Every app's history rows after row `id`, oldest first, at most `limit`.
    func changes(after id: Int64, limit: Int) async throws(PermissionStoreError) -> [StoredChange]
    /// The last history row's id, 0 when there is none.
    func lastChangeID() async throws(PermissionStoreError) -> Int64
    /// Calls `changed` whenever the history may have grown, whoever wrote it (another process, another
    /// machine), until the watch is stopped; `nil` when the database offers no way to watch.
    func watchChanges(_ changed: @escaping @Sendable () -> Void) async -> (any ChangeWatch)?
    /// The value the app stored under `key`, or nil.
    func storageItem(appId: String, key: String) async throws(PermissionStoreError) -> String?
    /// Every item the app stored, by key.
    func storageItems(appId: String) async throws(PermissionStoreError) -> [String: String]
    /// In one transaction: the bytes the app's items use, and what they would use with `items`
    /// (distinct keys) stored; the items are stored only when that is at most `limit`.
    func setStorageItems(appId: String, _ items: [(key: String, value: String)], limit: Int) async throws(PermissionStoreError) -> StorageChange
    /// Removes the app's items under `keys` (missing ones are fine) in one transaction.
    func removeStorageItems(appId: String, keys: [String]) async throws(PermissionStoreError)
    /// Removes every item of the app.
    func clearStorage(appId: String) async throws(PermissionStoreError)
    /// The bytes the app's items use (UTF-8 bytes of keys and values).
    func storageUsed(appId: String) async throws(PermissionStoreError) -> Int
    /// The app's record of `kind` under `key`, or nil.
    func hostRecord(appId: String, kind: String, key: String) async throws(PermissionStoreError) -> String?
    /// Every record of `kind` the app keeps, by key.
    func hostRecords(appId: String, kind: String) async throws(PermissionStoreError) -> [String: String]
    /// Writes (or, for nil, removes) one record; `false`, writing nothing, when a new key would make more
    /// than `limit` records of the kind.
    func setHostRecord(appId: String, kind: String, key: String, value: String?, limit: Int) async throws(PermissionStoreError) -> Bool
    /// Removes every record of `kind` the app keeps.
    func clearHostRecords(appId: String, kind: String) async throws(PermissionStoreError)
    /// Closes the connections.
    func close() async
}

/// Who wrote a history row: the decision's source, and the store (the process's ``PermissionStore``)
/// that wrote it.
package struct ChangeAuthor: Sendable {
    package let source: PermissionDecisionSource
    package let writer: String
}

/// One history row as a store keeps it, with its id and author.
package struct StoredChange: Sendable {
    package let id: Int64
    package let appId: String
    package let change: PermissionChange
    /// The source's raw value, `nil` for a row written by a version that did not say.
    package let source: String?
    package let writer: String?
}

/// A watch of a store's history, until stopped.
package protocol ChangeWatch: Sendable {
    func stop()
}

/// Where a permission decision came from.
public enum PermissionDecisionSource: String, Sendable, Equatable, Codable, CaseIterable {
    /// The user answered the app's own request (`requestCustomPermissions`, a prompt of the host's).
    case bridge
    /// The user on the host's page: the launch gate, the permissions list, the developer's panel.
    case hostPage
    /// The host's own code, through the library (the default of ``PermissionStore``'s writes).
    case host
    /// `miniapp permissions grant`, `deny` or `reset` on the command line.
    case commandLine
    /// An import of a ``PermissionSnapshot`` (`miniapp permissions import`, ``PermissionStore/restore(_:source:)``).
    case imported
    /// Written by a version that did not say.
    case unknown
}

/// A permission decision that changed in the store: one history row, told to the store's observers
/// (``PermissionStore/decisionChanges()``), whoever wrote it.
public struct PermissionDecisionEvent: Sendable, Equatable {
    /// The app.
    public var appId: String
    /// The change: the permission, its status before and after, when.
    public var change: PermissionChange
    /// Where the decision came from.
    public var source: PermissionDecisionSource
    /// Whether this process's store wrote it (`false`: another process or machine sharing the store).
    public var writtenHere: Bool

    /// A change of `appId`'s decision.
    public init(appId: String, change: PermissionChange, source: PermissionDecisionSource, writtenHere: Bool) {
        self.appId = appId
        self.change = change
        self.source = source
        self.writtenHere = writtenHere
    }
}

/// How long a PostgreSQL permission store waits: for a connection (including TLS and login), and for
/// each statement's answer. A database that is stopped fails within about `connect`; one that stopped
/// answering, within `connect + statement`.
public struct PermissionStoreTimeouts: Sendable, Equatable {
    /// How long opening a connection may take.
    public var connect: Duration
    /// How long one statement may take.
    public var statement: Duration

    /// Timeouts of `connect` and `statement` (5 s each by default).
    public init(connect: Duration = .seconds(5), statement: Duration = .seconds(5)) {
        self.connect = connect
        self.statement = statement
    }
}

/// The per-app custom-permission decisions, with their history: in a SQLite file (the embedded
/// default) or in PostgreSQL (shared by a fleet of hosts), with the same behaviour.
///
/// Open it once and keep it: every method is safe to call from many tasks at once, and none blocks the
/// caller's thread. Every change runs in one transaction and leaves a history row. Waits are bounded:
/// by the lock timeout for SQLite, by ``PermissionStoreTimeouts`` for PostgreSQL; a store that cannot
/// be reached fails closed (``PermissionStoreError/unreachable(store:reason:)``), and nothing is cached
/// that could let a revoked permission through. Call ``close()`` when done with a PostgreSQL store.
public final class PermissionStore: Sendable {
    /// Where the store is.
    public let location: PermissionStoreLocation
    let backend: any PermissionBackend
    /// Each app's rate and turns for its secure storage.
    let storageGate: SecureStorageGate
    /// This store's name in the history rows it writes: how a change it reads back is known as its own.
    let writer: String
    /// The changes of the history, for observers.
    let feed: ChangeFeed

    /// The store as messages name it: the SQLite file's path, or the PostgreSQL URL without its password.
    public var path: String { backend.name }

    /// How fast, and how many calls at once, each app may use its secure storage through this store.
    public var storageRate: SecureStorageRate { storageGate.rate }

    private init(location: PermissionStoreLocation, backend: any PermissionBackend, storageRate: SecureStorageRate) {
        self.location = location
        self.backend = backend
        self.storageGate = SecureStorageGate(rate: storageRate)
        var generator = SystemRandomNumberGenerator()
        self.writer = (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString
        self.feed = ChangeFeed(backend: backend, writer: writer)
    }

    /// Opens the SQLite store in `cacheDirectory` (`permissions.sqlite`), creating and migrating it when
    /// needed, on `executor`; the open may wait up to `lockTimeout` for other processes. Each app may
    /// use its secure storage at `storageRate`.
    public static func open(
        cacheDirectory: String, executor: BlockingExecutor, lockTimeout: Duration = .seconds(10), storageRate: SecureStorageRate = SecureStorageRate()
    ) async throws(PermissionStoreError) -> PermissionStore {
        try await open(.cache(cacheDirectory), executor: executor, lockTimeout: lockTimeout, storageRate: storageRate)
    }

    /// Opens the store at `location`, creating or migrating its tables when they are behind (safe when
    /// several processes or machines start at once).
    ///
    /// - Parameters:
    ///   - executor: where the open's blocking work runs (the SQLite file, PostgreSQL's TLS set-up).
    ///   - lockTimeout: how long SQLite waits for another process's lock.
    ///   - timeouts: how long PostgreSQL may take to connect and to answer each statement.
    ///   - storageRate: how fast, and how many calls at once, each app may use its secure storage
    ///     through this store (past it, ``SecureStorageError/busy(appId:reason:)``).
    ///   - logger: where a PostgreSQL store logs its connections (never with a password).
    public static func open(
        _ location: PermissionStoreLocation, executor: BlockingExecutor, lockTimeout: Duration = .seconds(10),
        timeouts: PermissionStoreTimeouts = PermissionStoreTimeouts(),
        storageRate: SecureStorageRate = SecureStorageRate(),
        logger: Logger = Logger(label: "miniapp.permissions", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws(PermissionStoreError) -> PermissionStore {
        switch location {
        case .sqlite(let path):
            return PermissionStore(location: location, backend: try await SQLitePermissionBackend.open(path: path, lockTimeout: lockTimeout, executor: executor), storageRate: storageRate)
        case .postgres(let settings):
            return PermissionStore(location: location, backend: try await PostgresPermissionBackend.open(settings, timeouts: timeouts, executor: executor, logger: logger), storageRate: storageRate)
        }
    }

    /// Closes the store's connections (PostgreSQL) and ends its observers' streams; later calls fail.
    public func close() async {
        feed.stop()
        await backend.close()
    }

    // MARK: Observing

    /// Every decision that changes in the store from now on, whoever writes it: this process (with the
    /// source it gave), or another process or machine sharing the store (seen through inotify for SQLite,
    /// `LISTEN` for PostgreSQL). Each history row is told once, in the order of the history; the stream
    /// keeps the newest `buffered` changes its reader has not read (older ones are dropped) and ends
    /// when its task does, or at ``close()``.
    public func decisionChanges(buffered: Int = 256) async throws -> AsyncStream<PermissionDecisionEvent> {
        try await feed.subscribe(buffered: buffered)
    }

    // MARK: Reading

    /// The stored decisions of one app, by name.
    public func stored(appId: String) async throws -> [StoredPermission] {
        try await backend.decisions(appId: appId)
    }

    /// Every app with stored decisions, with its decisions sorted by name.
    public func appsWithDecisions() async throws -> [String: [StoredPermission]] {
        try await backend.allDecisions()
    }

    /// An app's permissions as a host shows them: every declared one with its status (`DENIED` when
    /// undecided), then stored decisions the manifest no longer declares.
    public func permissions(appId: String, manifest: BundleManifest) async throws -> [PermissionState] {
        Self.states(manifest: manifest, stored: try await stored(appId: appId))
    }

    /// What the manifest declares merged with `decisions`: every declared permission under its full
    /// name with its status (`DENIED` when undecided), then decisions it no longer declares.
    static func states(manifest: BundleManifest, stored decisions: [StoredPermission]) -> [PermissionState] {
        let stored = Dictionary(decisions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var seen: Set<String> = []
        var states: [PermissionState] = []
        for (declarations, required) in [(manifest.reqPermissions, true), (manifest.optPermissions, false)] {
            for declaration in declarations {
                // A manifest may use a short name (USER_NAME); decisions are stored under full names.
                let name = PermissionName.full(declaration.name)
                guard seen.insert(name).inserted else { continue }
                let decision = stored[name]
                states.append(PermissionState(
                    name: name, status: decision?.status ?? .denied, required: required, reason: declaration.reason,
                    known: KnownPermission(rawValue: name) != nil, declared: true, decidedAt: decision?.decidedAt
                ))
            }
        }
        for (name, decision) in stored.sorted(by: { $0.key < $1.key }) where !seen.contains(name) {
            states.append(PermissionState(
                name: name, status: decision.status, required: false, reason: nil,
                known: KnownPermission(rawValue: name) != nil, declared: false, decidedAt: decision.decidedAt
            ))
        }
        return states
    }

    /// Whether every permission `manifest` requires is `ALLOWED` for the app.
    public func launchDecision(appId: String, manifest: BundleManifest) async throws -> LaunchDecision {
        Self.launchDecision(try await permissions(appId: appId, manifest: manifest))
    }

    /// The launch decision when there is no store yet: nothing is allowed.
    package static func launchDecisionWithoutStore(manifest: BundleManifest) -> LaunchDecision {
        launchDecision(states(manifest: manifest, stored: []))
    }

    private static func launchDecision(_ states: [PermissionState]) -> LaunchDecision {
        LaunchDecision(missing: states.filter { $0.required && $0.status != .allowed }.map(\.name))
    }

    /// Whether the app's permission (full or short name) is `ALLOWED`: what a host's message bridge asks
    /// before answering a mini-app's request.
    public func isAllowed(appId: String, permission: String) async throws -> Bool {
        let name = PermissionName.full(permission)
        return try await stored(appId: appId).first { $0.name == name }?.status == .allowed
    }

    /// The app's history of changes in the order they took effect (oldest first), with times that
    /// never decrease, whatever other processes or machines wrote at once.
    public func history(appId: String) async throws -> [PermissionChange] {
        try await backend.history(appId: appId)
    }

    // MARK: Writing

    /// Sets statuses (full or short names) in one transaction, recording each change in the history.
    /// Without `date`, the decisions are timed when they take effect: after the app's lock is taken, so
    /// that of writers racing on one app, the later one always has the later (or the same) time.
    /// `source` says where the decisions came from (``PermissionDecisionSource/host`` by default).
    public func set(appId: String, _ statuses: [String: PermissionStatus], at date: Date? = nil, source: PermissionDecisionSource = .host) async throws {
        let time = Self.storedTime(date ?? Date())
        try await record(appId: appId, statuses.map { StoredPermission(name: $0.key, status: $0.value, decidedAt: time) }, takingEffectNow: date == nil, source: source)
    }

    /// Stores decisions (full or short names) each with its own time, in one transaction: what an
    /// import of a ``PermissionSnapshot`` does.
    public func record(appId: String, _ decisions: [StoredPermission], source: PermissionDecisionSource = .imported) async throws {
        try await record(appId: appId, decisions, takingEffectNow: false, source: source)
    }

    private func record(appId: String, _ decisions: [StoredPermission], takingEffectNow: Bool, source: PermissionDecisionSource) async throws {
        try Identifier.validate(appId, as: .app)
        var normalized: [String: StoredPermission] = [:]
        for decision in decisions {
            guard PermissionName.isValid(decision.name) else { throw PermissionStoreError.invalidName(decision.name) }
            let name = PermissionName.full(decision.name)
            normalized[name] = StoredPermission(name: name, status: decision.status, decidedAt: Self.storedTime(decision.decidedAt))
        }
        try await backend.apply(appId: appId, normalized.values.sorted { $0.name < $1.name }, takingEffectNow: takingEffectNow, author: author(source))
        feed.poke()
    }

    private func author(_ source: PermissionDecisionSource) -> ChangeAuthor { ChangeAuthor(source: source, writer: writer) }

    /// Forgets every stored status of the app, or those of `names` (full or short names) alone: each
    /// is undecided again (the history keeps the resets), timed at `date` or, by default, when it takes
    /// effect.
    public func reset(appId: String, names: [String]? = nil, at date: Date? = nil, source: PermissionDecisionSource = .host) async throws {
        try Identifier.validate(appId, as: .app)
        let full = try names.map { names in
            try names.map { name in
                guard PermissionName.isValid(name) else { throw PermissionStoreError.invalidName(name) }
                return PermissionName.full(name)
            }
        }
        if full?.isEmpty == true { return }
        try await backend.reset(appId: appId, names: full.map { Array(Set($0)).sorted() }, at: date.map(Self.storedTime), author: author(source))
        feed.poke()
    }

    // MARK: Moving between stores

    /// Every decision of every app (or of `appId` alone), with its time: what ``restore(_:source:)`` writes
    /// into another store.
    public func snapshot(appId: String? = nil) async throws -> PermissionSnapshot {
        var apps: [String: [StoredPermission]]
        if let appId { apps = [appId: try await stored(appId: appId)] } else { apps = try await appsWithDecisions() }
        return PermissionSnapshot(apps: apps.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }.map { PermissionSnapshot.App(id: $0.key, permissions: $0.value) })
    }

    /// Stores every decision of `snapshot` with its time, one transaction per app.
    public func restore(_ snapshot: PermissionSnapshot, source: PermissionDecisionSource = .imported) async throws {
        for app in snapshot.apps { try Identifier.validate(app.id, as: .app) }
        for app in snapshot.apps where !app.permissions.isEmpty {
            try await record(appId: app.id, app.permissions, source: source)
        }
    }

    /// `date` as stored: whole milliseconds, the precision of exports, so that an export and an import
    /// carry times exactly.
    static func storedTime(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(RecordCoding.milliseconds(date)) / 1000)
    }
}

/// Every decision of a permission store with the time it was set: the `store` export format, which
/// carries a store's decisions into another store (SQLite to PostgreSQL, say). Undecided permissions are
/// not decisions and are not in it; neither is the history.
public struct PermissionSnapshot: Sendable, Equatable, Codable {
    /// One app's decisions.
    public struct App: Sendable, Equatable, Codable {
        /// The app id.
        public var id: String
        /// The app's stored decisions.
        public var permissions: [StoredPermission]

        /// An app's entry with the given decisions.
        public init(id: String, permissions: [StoredPermission]) {
            self.id = id
            self.permissions = permissions
        }
    }

    /// The format's name, `miniapp.permissions`.
    public var format: String
    /// The format's version, 1.
    public var version: Int
    /// The apps with decisions, each with all of them.
    public var apps: [App]

    /// The value of `format` that names this document.
    public static let formatName = "miniapp.permissions"

    /// A snapshot of the given apps' decisions.
    public init(apps: [App]) {
        format = Self.formatName
        version = 1
        self.apps = apps
    }
}
