import Foundation
package import Logging
public import MiniAppCore
internal import CMiniAppArchive

/// The on-disk cache of installed versions for one ``CacheNamespace``.
///
/// Layout under the cache root:
/// `bundles/<namespace>/<app-id>/<version-id>/{record.json, files.list, last-used, bundle/}`, `locks/`, `tmp/`,
/// `trash/`. A version exists only once its `record.json` does; it is written last.
///
/// The synchronous methods read and check the disk on the calling thread: from async code, prefer
/// ``BundleInstaller``'s methods, which run that work on the executor given to it. The async methods
/// here (``remove(appId:versionId:)``, ``prune(keep:maxBytes:protecting:)``) do their disk work on
/// the cache's executor.
public struct BundleCache: Sendable {
    /// The cache root.
    public let root: String
    /// The platform and project this cache view belongs to.
    public let namespace: CacheNamespace
    /// How long to wait for another process holding a version's lock.
    package var lockTimeout: Duration
    /// Where the async methods' disk work runs.
    package let executor: BlockingExecutor
    let logger: Logger

    /// A view of the cache at `root` for one namespace, doing its async methods' disk work on `executor`.
    package init(
        root: String, namespace: CacheNamespace, lockTimeout: Duration = .seconds(300), executor: BlockingExecutor,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.root = root
        self.namespace = namespace
        self.lockTimeout = lockTimeout
        self.executor = executor
        self.logger = logger
    }

    // MARK: Paths

    var namespaceDirectory: String { root + "/bundles/" + namespace.key }
    var temporaryRoot: String { root + "/tmp" }
    var trashDirectory: String { root + "/trash" }
    var locksDirectory: String { root + "/locks" }

    func versionDirectory(appId: String, versionId: String) -> String {
        namespaceDirectory + "/" + appId + "/" + versionId
    }

    func scratchDirectory(appId: String, versionId: String) -> String {
        temporaryRoot + "/" + namespace.key + "@" + appId + "@" + versionId
    }

    func lockPath(appId: String, versionId: String) -> String {
        locksDirectory + "/" + namespace.key + "@" + appId + "@" + versionId + ".lock"
    }

    // MARK: Reading

    /// Creates the folders an install works in (the root, `tmp/`, `trash/`, `locks/`) if they are
    /// missing, and returns those it created, parents first, for ``removeIfEmpty(_:)`` to take back
    /// when the install fails.
    @discardableResult
    package func prepare() throws(CacheError) -> [String] {
        var created: [String] = []
        var missing: [String] = []
        var ancestor = root
        while !ancestor.isEmpty, ancestor != "/", access(ancestor, F_OK) != 0 {
            missing.insert(ancestor, at: 0)
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        for directory in missing + [temporaryRoot, trashDirectory, locksDirectory] {
            if mkdir(directory, 0o755) == 0 {
                created.append(directory)
            } else if errno != EEXIST {
                throw .system(directory)
            }
        }
        do {
            try checkLayout()
        } catch {
            removeIfEmpty(created)
            throw error
        }
        return created
    }

    /// Refuses a cache whose own folders (`tmp/`, `trash/`, `locks/`, `keys/`, `bundles/` and this
    /// namespace's folder) exist as anything but real folders: a symbolic link planted there would send
    /// deletions and writes outside the cache. The cache never follows a link it did not make.
    public func checkLayout() throws(CacheError) {
        for directory in [temporaryRoot, trashDirectory, locksDirectory, root + "/keys", root + "/bundles", namespaceDirectory] {
            try Self.requireRealDirectory(directory)
        }
    }

    /// Throws when `path` exists and is not a real folder (a link to one, a file, ...).
    static func requireRealDirectory(_ path: String) throws(CacheError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw .notAFolder(path: path, isLink: (info.st_mode & S_IFMT) == S_IFLNK) }
    }

    /// Whether `path` is a real folder: not missing, not a link, not anything else.
    static func isRealDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Removes the folders in `directories` that are empty, deepest first: what a failed install made.
    package func removeIfEmpty(_ directories: [String]) {
        for directory in directories.reversed() { rmdir(directory) }
    }

    /// The record of one cached version, or `nil` when it is not cached.
    public func record(appId: String, versionId: String) -> InstallRecord? {
        guard Identifier.isValid(appId), Identifier.isValid(versionId) else { return nil }
        // A version is only found through real folders: a planted link does not make one.
        let app = namespaceDirectory + "/" + appId
        guard Self.isRealDirectory(root + "/bundles"), Self.isRealDirectory(namespaceDirectory), Self.isRealDirectory(app), Self.isRealDirectory(app + "/" + versionId) else { return nil }
        let path = versionDirectory(appId: appId, versionId: versionId) + "/record.json"
        guard let bytes = FileReading.contents(path, followingLinks: false), var record = InstallRecord(json: bytes),
              record.id == appId, record.versionId == versionId else { return nil }
        record.path = versionDirectory(appId: appId, versionId: versionId) + "/bundle"
        record.installedSource = record.source
        record.source = .cache
        record.zipBytes = keptZipBytes(record)
        var info = stat()
        if stat(versionDirectory(appId: appId, versionId: versionId) + "/last-used", &info) == 0 {
            let used = Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
            if used > record.lastUsedAt { record.lastUsedAt = used }
        }
        return record
    }

    /// The names in this namespace's folder: every app with a cached version is among them. Read once
    /// by a caller asking ``record(appId:versionId:)`` about thousands of apps (`list`), which then asks
    /// only about these.
    package func appFolderNames() -> Set<String> {
        guard Self.isRealDirectory(root + "/bundles"), Self.isRealDirectory(namespaceDirectory) else { return [] }
        return Set(FileReading.children(of: namespaceDirectory))
    }

    /// Every cached version of `appId` (or of every app), most recently installed first.
    public func records(appId: String? = nil) -> [InstallRecord] {
        guard Self.isRealDirectory(root + "/bundles") else { return [] }
        let apps = appId.map { [$0] } ?? FileReading.children(of: namespaceDirectory).filter { Identifier.isValid($0) }
        var records: [InstallRecord] = []
        for app in apps where Identifier.isValid(app) {
            for version in FileReading.children(of: namespaceDirectory + "/" + app) {
                if let record = record(appId: app, versionId: version) { records.append(record) }
            }
        }
        return records.sorted { ($0.installedAt, $0.id, $0.versionId) > ($1.installedAt, $1.id, $1.versionId) }
    }

    /// The newest intact cached version of `appId`, by install time.
    package func newestIntactRecord(appId: String) -> InstallRecord? {
        records(appId: appId).first { check($0).intact }
    }

    /// This view, then a view of every other namespace under the same root: where to look when
    /// answering from the cache alone, whichever platform a version came from (it was verified when it
    /// was installed).
    package func withOtherNamespaces() -> [BundleCache] {
        [self] + Self.namespaces(root: root).filter { $0.key != namespace.key }.map {
            BundleCache(root: root, namespace: $0, lockTimeout: lockTimeout, executor: executor, logger: logger)
        }
    }

    /// A cached version of `appId` from any namespace, with the view that holds it: version `versionId`,
    /// or the newest when `nil`; an intact copy before a damaged one, this namespace before the others,
    /// then the most recently installed. With `intactOnly`, a damaged copy is never returned.
    package func lookup(appId: String, versionId: String? = nil, intactOnly: Bool = false) -> (cache: BundleCache, record: InstallRecord)? {
        let ordered = copies(appId: appId, versionId: versionId)
        if let intact = ordered.first(where: { $0.cache.check($0.record).intact }) { return intact }
        return intactOnly ? nil : ordered.first
    }

    /// The cached copies of `appId` (version `versionId`, or every version) in every namespace, in the
    /// order ``lookup(appId:versionId:intactOnly:)`` prefers them, unchecked.
    func copies(appId: String, versionId: String?) -> [(cache: BundleCache, record: InstallRecord)] {
        guard Identifier.isValid(appId), versionId.map(Identifier.isValid) ?? true else { return [] }
        var own: [(cache: BundleCache, record: InstallRecord)] = []
        var others: [(cache: BundleCache, record: InstallRecord)] = []
        for view in withOtherNamespaces() {
            let found: [InstallRecord]
            if let versionId {
                found = view.record(appId: appId, versionId: versionId).map { [$0] } ?? []
            } else {
                found = view.records(appId: appId)
            }
            if view.namespace.key == namespace.key {
                own += found.map { (view, $0) }
            } else {
                others += found.map { (view, $0) }
            }
        }
        return own + others.sorted { $0.record.installedAt > $1.record.installedAt }
    }

    /// Compares a cached version with its install-time file list. The quick check hashes only files
    /// whose size or change time moved; the thorough one hashes every file. A version installed without
    /// waiting for the disk during an earlier boot gets the thorough one until it is found whole.
    public func check(_ record: InstallRecord, thorough: Bool = false) -> IntegrityReport {
        check(record, thorough: thorough, holdingLock: false)
    }

    /// ``check(_:thorough:)``, by a caller that holds the version's lock when `holdingLock`.
    func check(_ record: InstallRecord, thorough: Bool, holdingLock: Bool) -> IntegrityReport {
        let directory = versionDirectory(appId: record.id, versionId: record.versionId)
        guard let bytes = FileReading.contents(directory + "/files.list", followingLinks: false),
              let list = FileListIndex(consume bytes)
        else {
            return IntegrityReport(problems: ["the install-time file list is missing or unreadable"])
        }
        // The list must be the one written at install, whole: a list that leaves files out would let
        // them change unseen. Its digest is checked first, or, for a quick check, on this thread while
        // another starts the status calls.
        let listIsWhole = { record.fileListDigest.map { SHA256Digest.hash(list.bytes).hexString == $0 } ?? true }
        let listChanged = IntegrityReport(problems: ["the install-time file list was changed or cut short"])
        if record.fileListDigest == nil {
            let listed = list.files.reduce(Int64(0)) { $0.addingReportingOverflow($1.size).partialValue }
            guard listed == record.sizeBytes, list.files.contains(where: { list.bytes[$0.path].elementsEqual("index.html".utf8) }) else {
                return IntegrityReport(problems: ["the install-time file list does not cover every file"])
            }
        }
        let inspector = BundleInspector(root: directory + "/bundle")
        if record.needsBootCheck || thorough {
            guard listIsWhole() else { return listChanged }
            let report = inspector.thoroughCheck(BundleFileList(list).files)
            // Installed without a sync in an earlier boot: sizes and change times may be right over
            // bytes that never reached the disk. Once found whole (read from the disk), it is marked so.
            if record.needsBootCheck && report.intact { markFoundWhole(record, holdingLock: holdingLock) }
            return report
        }
        guard let (report, attested) = inspector.quickCheck(list, attested: attestations(in: directory), listIsWhole: listIsWhole) else {
            return listChanged
        }
        // Files and folders whose change time moved but that hashed and read as installed (a link made
        // or removed by the cache does that) are attested, so that the next check is quick again.
        if !attested.isEmpty { attest(attested, in: directory) }
        return report
    }

    /// Clears the unsynced boot of `checked`'s record, whose files a later boot just found whole, so that
    /// its next checks are quick again: under the version's lock (the caller's, or taken when it is free:
    /// a holder may be replacing the version), and only while `record.json` is still the one checked. A
    /// failure costs one more thorough check.
    private func markFoundWhole(_ checked: InstallRecord, holdingLock: Bool) {
        let lock = holdingLock ? nil : FileLock.tryAcquire(lockPath(appId: checked.id, versionId: checked.versionId))
        guard holdingLock || lock != nil else { return }
        defer { withExtendedLifetime(lock) {} }
        let path = versionDirectory(appId: checked.id, versionId: checked.versionId) + "/record.json"
        guard let bytes = FileReading.contents(path, followingLinks: false), var stored = InstallRecord(json: bytes),
              stored.unsyncedBoot == checked.unsyncedBoot, stored.fileListDigest == checked.fileListDigest,
              stored.installedAt == checked.installedAt else { return }
        stored.unsyncedBoot = nil
        guard let data = try? RecordCoding.storageEncoder().encode(stored) else { return }
        try? Durability.writeAtomically(data, to: path, durable: true)
    }

    /// One version's thorough check.
    public struct VersionCheck: Sendable {
        /// The cached version checked.
        public var record: InstallRecord
        /// What the check found: intact, or which files are missing, changed or unexpected.
        public var report: IntegrityReport
    }

    /// Checks every cached version (of `appId`, or of every app) thoroughly, on the cache's thread pool.
    /// Each is checked holding its version lock, waiting up to the configured lock timeout, so that
    /// another process's reinstall or removal is never taken for damage; a version removed meanwhile is
    /// left out. A cache this process cannot write (no lock file can be made) is checked as it is.
    public func verify(appId: String? = nil) async throws -> [VersionCheck] {
        let candidates = try await executor.run { records(appId: appId) }
        var checks: [VersionCheck] = []
        for candidate in candidates {
            var lock: FileLock?
            do {
                lock = try await self.lock(appId: candidate.id, versionId: candidate.versionId)
            } catch CacheError.io {
                lock = nil
            }
            let locked = lock != nil
            let checked = try await executor.run { () -> VersionCheck? in
                guard let current = record(appId: candidate.id, versionId: candidate.versionId) else { return nil }
                return VersionCheck(record: current, report: check(current, thorough: true, holdingLock: locked))
            }
            withExtendedLifetime(lock) {}
            if let checked { checks.append(checked) }
        }
        return checks
    }

    /// The manifest.json of a cached version, localised for `language`: the metadata in force for it.
    public func manifest(of record: InstallRecord, language: String) throws -> BundleManifest {
        let bundle = record.path.isEmpty ? versionDirectory(appId: record.id, versionId: record.versionId) + "/bundle" : record.path
        return ManifestLocalizer(bundleDirectory: bundle, language: language).localize(try BundleManifest.read(bundleDirectory: bundle))
    }

    // MARK: Writing

    /// Takes the version's lock, waiting up to ``lockTimeout`` for another process.
    func lock(appId: String, versionId: String) async throws -> FileLock {
        try Self.requireRealDirectory(locksDirectory)
        let seconds = Int(lockTimeout.components.seconds)
        return try await FileLock.acquire(lockPath(appId: appId, versionId: versionId), timeout: lockTimeout, executor: executor) {
            CacheError.busy(appId: appId, versionId: versionId, waitedSeconds: seconds)
        }
    }

    /// Deletes cached versions of `appId` (one, or all when `versionId` is `nil`); returns what went.
    public func remove(appId: String, versionId: String? = nil) async throws -> [InstallRecord] {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        try checkLayout()
        let targets = try await executor.run { records(appId: appId).filter { versionId == nil || $0.versionId == versionId } }
        guard !targets.isEmpty else { throw CacheError.notCached(appId: appId, versionId: versionId) }
        try await syncBeforeRemoving()
        var removed: [InstallRecord] = []
        for target in targets {
            let lock = try await self.lock(appId: target.id, versionId: target.versionId)
            try await executor.runToCompletion { discard(versionDirectory(appId: target.id, versionId: target.versionId)) }
            withExtendedLifetime(lock) {}
            removed.append(target)
        }
        try await executor.runToCompletion { emptyTrash() }
        return removed
    }

    /// Drops old versions: beyond the `keep` most recently used of each app, then the least recently
    /// used until the cache holds at most `maxBytes`; never the `protected` version. Returns what went.
    public func prune(keep: Int?, maxBytes: Int64?, protecting protected: InstallRecord? = nil) async throws -> [InstallRecord] {
        try await prune(keep: keep, maxBytes: maxBytes, protecting: protected, emptying: nil)
    }

    /// ``prune(keep:maxBytes:protecting:)``, deleting what went on `background` instead of before it
    /// returns, when given.
    func prune(keep: Int?, maxBytes: Int64?, protecting protected: InstallRecord?, emptying background: BackgroundWork?) async throws -> [InstallRecord] {
        func isProtected(_ record: InstallRecord) -> Bool {
            record.id == protected?.id && record.versionId == protected?.versionId
        }
        try checkLayout()
        let all = try await executor.run { records() }
        var doomed: [InstallRecord] = []
        if let keep {
            for versions in Dictionary(grouping: all, by: \.id).values {
                doomed += versions.sorted { $0.lastUsedAt > $1.lastUsedAt }.dropFirst(max(keep, 0)).filter { !isProtected($0) }
            }
        }
        if let maxBytes {
            let remaining = all.filter { kept in !doomed.contains { $0.id == kept.id && $0.versionId == kept.versionId } }
            // Records are untrusted input: sizes are summed saturating, never trapping.
            func total(_ records: [InstallRecord]) -> Int64 {
                records.reduce(Int64(0)) { sum, record in
                    let (next, overflow) = sum.addingReportingOverflow(max(record.sizeBytes, 0))
                    let (withZip, zipOverflow) = next.addingReportingOverflow(max(record.zipBytes, 0))
                    return overflow || zipOverflow ? .max : withZip
                }
            }
            var kept = remaining
            for candidate in remaining.sorted(by: { $0.lastUsedAt < $1.lastUsedAt }) where total(kept) > maxBytes && !isProtected(candidate) {
                doomed.append(candidate)
                kept.removeAll { $0.id == candidate.id && $0.versionId == candidate.versionId }
            }
        }
        if !doomed.isEmpty { try await syncBeforeRemoving() }
        var removed: [InstallRecord] = []
        for target in doomed.sorted(by: { $0.lastUsedAt < $1.lastUsedAt }) {
            let lock = try await self.lock(appId: target.id, versionId: target.versionId)
            let gone = try await executor.runToCompletion { () -> Bool in
                guard record(appId: target.id, versionId: target.versionId) != nil else { return false }
                discard(versionDirectory(appId: target.id, versionId: target.versionId))
                return true
            }
            if gone { removed.append(target) }
            withExtendedLifetime(lock) {}
        }
        if let background {
            if !removed.isEmpty { background.run(name: "miniapp.trash") { emptyTrash() } }
        } else {
            try await executor.runToCompletion { emptyTrash() }
        }
        return removed
    }

    // MARK: Housekeeping

    /// Makes the versions installed in this boot without a sync durable before a version is removed, so
    /// that a power cut never leaves an app with its old versions gone and its new one torn.
    private func syncBeforeRemoving() async throws {
        let boot = Durability.currentBoot
        try await executor.runToCompletion {
            guard boot != nil, records().contains(where: { $0.unsyncedBoot == boot }) else { return }
            try Durability.syncFileSystem(containing: root)
        }
    }

    /// Moves `path` into the trash with one rename, so that it stops existing at once; the trash is
    /// emptied later. Falls back to deleting in place when the rename fails, or when the trash is not a
    /// real folder (a link planted there is never moved into, nor emptied).
    func discard(_ path: String) {
        let target = trashDirectory + "/" + UUID().uuidString
        if mkdir(trashDirectory, 0o755) != 0 && errno != EEXIST || !Self.isRealDirectory(trashDirectory) || rename(path, target) != 0 {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Moves the file at `path` into the trash, claimed as being deleted, and deletes it on `background`.
    /// A process that ends first leaves it for the next install's sweep.
    func discard(_ path: String, on background: BackgroundWork) {
        let claimed = trashDirectory + "/" + UUID().uuidString + ".deleting"
        guard Self.isRealDirectory(trashDirectory), rename(path, claimed) == 0 else {
            unlink(path)
            return
        }
        background.run(name: "miniapp.delete") { unlink(claimed) }
    }

    /// Deletes what is in the trash; each entry is claimed with a rename so two processes never
    /// delete the same tree. With `orphans`, also entries claimed by deleters that may have died
    /// (a live one and this one then both delete, which is safe).
    package func emptyTrash(orphans: Bool = false) {
        guard Self.isRealDirectory(trashDirectory) else { return }
        if orphans {
            for entry in FileReading.children(of: trashDirectory) where entry.hasSuffix(".deleting") {
                try? FileManager.default.removeItem(atPath: trashDirectory + "/" + entry)
            }
        }
        for entry in FileReading.children(of: trashDirectory) where !entry.hasSuffix(".deleting") {
            let claimed = trashDirectory + "/" + entry + "." + UUID().uuidString.prefix(8) + ".deleting"
            guard rename(trashDirectory + "/" + entry, claimed) == 0 else { continue }
            try? FileManager.default.removeItem(atPath: claimed)
        }
    }

    /// Moves into the trash what killed processes left: scratch folders whose version lock is free,
    /// and version folders without a record. Renames only: ``emptyTrash(orphans:)`` deletes.
    package func sweep() {
        for entry in Self.isRealDirectory(temporaryRoot) ? FileReading.children(of: temporaryRoot) : [] {
            let parts = entry.split(separator: "@").map(String.init)
            guard parts.count == 3, parts[0] == namespace.key,
                  let lock = FileLock.tryAcquire(lockPath(appId: parts[1], versionId: parts[2])) else { continue }
            discard(temporaryRoot + "/" + entry)
            withExtendedLifetime(lock) {}
        }
        guard Self.isRealDirectory(root + "/bundles"), Self.isRealDirectory(namespaceDirectory) else { return }
        for app in FileReading.children(of: namespaceDirectory) where Identifier.isValid(app) && Self.isRealDirectory(namespaceDirectory + "/" + app) {
            for version in FileReading.children(of: namespaceDirectory + "/" + app) where Identifier.isValid(version) {
                let directory = versionDirectory(appId: app, versionId: version)
                // A version folder that is not a real folder (a planted link) is moved aside too: the
                // rename moves the link, never what it points to.
                guard !Self.isRealDirectory(directory) || !FileManager.default.fileExists(atPath: directory + "/record.json"),
                      let lock = FileLock.tryAcquire(lockPath(appId: app, versionId: version)) else { continue }
                if !Self.isRealDirectory(directory) || !FileManager.default.fileExists(atPath: directory + "/record.json") { discard(directory) }
                withExtendedLifetime(lock) {}
            }
        }
    }

    /// Every namespace that has a folder under the cache root.
    package static func namespaces(root: String) -> [CacheNamespace] {
        FileReading.children(of: root + "/bundles").sorted().compactMap { key in
            guard let data = FileManager.default.contents(atPath: root + "/bundles/" + key + "/platform.json"),
                  let namespace = try? JSONDecoder().decode(CacheNamespace.self, from: data), namespace.key == key else { return nil }
            return namespace
        }
    }
}
