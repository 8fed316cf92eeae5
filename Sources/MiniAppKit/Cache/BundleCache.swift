import Foundation
import Logging

/// The on-disk cache of installed versions for one ``CacheNamespace``.
///
/// Layout under the cache root:
/// `bundles/<namespace>/<app-id>/<version-id>/{record.json, files.list, last-used, bundle/}`, `locks/`, `tmp/`,
/// `trash/`. A version exists only once its `record.json` does; it is written last.
public struct BundleCache: Sendable {
    /// The cache root.
    public let root: String
    /// The platform and project this cache view belongs to.
    public let namespace: CacheNamespace
    /// How long to wait for another process holding a version's lock.
    public var lockTimeout: Duration
    let logger: Logger

    /// A view of the cache at `root` for one namespace.
    public init(root: String, namespace: CacheNamespace, lockTimeout: Duration = .seconds(300), logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.root = root
        self.namespace = namespace
        self.lockTimeout = lockTimeout
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

    /// Creates the cache's folders if they are missing.
    public func prepare() throws(CacheError) {
        for directory in [namespaceDirectory, temporaryRoot, trashDirectory, locksDirectory] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw .foundation(directory, error)
            }
        }
        let description = namespaceDirectory + "/platform.json"
        if !FileManager.default.fileExists(atPath: description), let data = try? RecordCoding.encoder(pretty: true).encode(namespace) {
            try? data.write(to: URL(fileURLWithPath: description), options: .atomic)
        }
    }

    /// The record of one cached version, or `nil` when it is not cached.
    public func record(appId: String, versionId: String) -> InstallRecord? {
        guard Identifier.isValid(appId), Identifier.isValid(versionId) else { return nil }
        let path = versionDirectory(appId: appId, versionId: versionId) + "/record.json"
        guard let data = FileManager.default.contents(atPath: path),
              var record = try? RecordCoding.decoder().decode(InstallRecord.self, from: data),
              record.id == appId, record.versionId == versionId else { return nil }
        record.path = versionDirectory(appId: appId, versionId: versionId) + "/bundle"
        record.source = .cache
        var info = stat()
        if stat(versionDirectory(appId: appId, versionId: versionId) + "/last-used", &info) == 0 {
            let used = Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
            if used > record.lastUsedAt { record.lastUsedAt = used }
        }
        return record
    }

    /// Every cached version of `appId` (or of every app), most recently installed first.
    public func records(appId: String? = nil) -> [InstallRecord] {
        let apps = appId.map { [$0] } ?? Self.children(of: namespaceDirectory).filter { Identifier.isValid($0) }
        var records: [InstallRecord] = []
        for app in apps where Identifier.isValid(app) {
            for version in Self.children(of: namespaceDirectory + "/" + app) {
                if let record = record(appId: app, versionId: version) { records.append(record) }
            }
        }
        return records.sorted { ($0.installedAt, $0.id, $0.versionId) > ($1.installedAt, $1.id, $1.versionId) }
    }

    /// The newest intact cached version of `appId`, by install time.
    public func newestIntactRecord(appId: String) -> InstallRecord? {
        records(appId: appId).first { check($0).intact }
    }

    /// Compares a cached version with its install-time file list. The quick check hashes only files
    /// whose size or change time moved; the thorough one hashes every file.
    public func check(_ record: InstallRecord, thorough: Bool = false) -> IntegrityReport {
        let directory = versionDirectory(appId: record.id, versionId: record.versionId)
        guard let data = FileManager.default.contents(atPath: directory + "/files.list"),
              let list = BundleFileList(decoding: data) else {
            return IntegrityReport(problems: ["the install-time file list is missing or unreadable"])
        }
        let inspector = BundleInspector(root: directory + "/bundle")
        return thorough ? inspector.thoroughCheck(list.files) : inspector.quickCheck(list)
    }

    /// The manifest.json of a cached version, localised for `language`: the metadata in force for it.
    public func manifest(of record: InstallRecord, language: String) throws -> BundleManifest {
        let bundle = versionDirectory(appId: record.id, versionId: record.versionId) + "/bundle"
        return ManifestLocalizer(bundleDirectory: bundle, language: language).localize(try BundleManifest.read(bundleDirectory: bundle))
    }

    // MARK: Writing

    /// Takes the version's lock, waiting up to ``lockTimeout`` for another process.
    func lock(appId: String, versionId: String) async throws -> FileLock {
        let seconds = Int(lockTimeout.components.seconds)
        return try await FileLock.acquire(lockPath(appId: appId, versionId: versionId), timeout: lockTimeout) {
            CacheError.busy(appId: appId, versionId: versionId, waitedSeconds: seconds)
        }
    }

    /// Makes a fresh, empty scratch folder for an install of this version (the caller holds the lock),
    /// first discarding whatever a killed earlier attempt left there.
    func freshScratch(appId: String, versionId: String) throws(CacheError) -> String {
        let scratch = scratchDirectory(appId: appId, versionId: versionId)
        if FileManager.default.fileExists(atPath: scratch) { discard(scratch) }
        guard mkdir(scratch, 0o755) == 0 else { throw .system(scratch) }
        return scratch
    }

    /// Moves a finished staging folder (holding `bundle/` and `files.list`) into the version's place and
    /// writes its record last, after one file-system sync. The caller holds the version's lock.
    func commit(stage: String, record: InstallRecord) throws(CacheError) -> InstallRecord {
        let directory = versionDirectory(appId: record.id, versionId: record.versionId)
        try Durability.syncFileSystem(containing: stage)
        if FileManager.default.fileExists(atPath: directory) { discard(directory) }
        let parent = (directory as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw .foundation(parent, error)
        }
        guard rename(stage, directory) == 0 else { throw .system(directory) }
        var committed = record
        committed.path = directory + "/bundle"
        do {
            try Durability.writeAtomically(try RecordCoding.encoder(pretty: true).encode(committed), to: directory + "/record.json", durable: true)
        } catch let error as CacheError {
            discard(directory)
            throw error
        } catch {
            discard(directory)
            throw .foundation(directory + "/record.json", error)
        }
        return committed
    }

    /// Records a use of the version now, as the modification time of its `last-used` file (one system
    /// call, no rewrite of the record); a failure only loses the timestamp.
    @discardableResult
    func touch(_ record: InstallRecord, at date: Date = Date()) -> InstallRecord {
        var updated = record
        updated.lastUsedAt = date
        let path = versionDirectory(appId: record.id, versionId: record.versionId) + "/last-used"
        let seconds = date.timeIntervalSince1970.rounded(.down)
        var times = [
            timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9)),
            timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9)),
        ]
        if utimensat(AT_FDCWD, path, &times, 0) != 0 {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            if descriptor >= 0 {
                futimens(descriptor, &times)
                close(descriptor)
            }
        }
        return updated
    }

    /// Deletes cached versions of `appId` (one, or all when `versionId` is `nil`); returns what went.
    public func remove(appId: String, versionId: String? = nil) async throws -> [InstallRecord] {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        let targets = records(appId: appId).filter { versionId == nil || $0.versionId == versionId }
        guard !targets.isEmpty else { throw CacheError.notCached(appId: appId, versionId: versionId) }
        var removed: [InstallRecord] = []
        for target in targets {
            let lock = try await self.lock(appId: target.id, versionId: target.versionId)
            discard(versionDirectory(appId: target.id, versionId: target.versionId))
            withExtendedLifetime(lock) {}
            removed.append(target)
        }
        emptyTrash()
        return removed
    }

    /// Drops old versions: beyond the `keep` most recently used of each app, then the least recently
    /// used until the cache holds at most `maxBytes`; never the `protected` version. Returns what went.
    public func prune(keep: Int?, maxBytes: Int64?, protecting protected: InstallRecord? = nil) async throws -> [InstallRecord] {
        func isProtected(_ record: InstallRecord) -> Bool {
            record.id == protected?.id && record.versionId == protected?.versionId
        }
        let all = records()
        var doomed: [InstallRecord] = []
        if let keep {
            for versions in Dictionary(grouping: all, by: \.id).values {
                doomed += versions.sorted { $0.lastUsedAt > $1.lastUsedAt }.dropFirst(max(keep, 0)).filter { !isProtected($0) }
            }
        }
        if let maxBytes {
            let remaining = all.filter { kept in !doomed.contains { $0.id == kept.id && $0.versionId == kept.versionId } }
            var total = remaining.reduce(Int64(0)) { $0 + $1.sizeBytes }
            for candidate in remaining.sorted(by: { $0.lastUsedAt < $1.lastUsedAt }) where total > maxBytes && !isProtected(candidate) {
                doomed.append(candidate)
                total -= candidate.sizeBytes
            }
        }
        var removed: [InstallRecord] = []
        for target in doomed.sorted(by: { $0.lastUsedAt < $1.lastUsedAt }) {
            let lock = try await self.lock(appId: target.id, versionId: target.versionId)
            if record(appId: target.id, versionId: target.versionId) != nil {
                discard(versionDirectory(appId: target.id, versionId: target.versionId))
                removed.append(target)
            }
            withExtendedLifetime(lock) {}
        }
        emptyTrash()
        return removed
    }

    // MARK: Housekeeping

    /// Moves `path` into the trash with one rename, so that it stops existing at once; the trash is
    /// emptied later. Falls back to deleting in place when the rename fails.
    func discard(_ path: String) {
        let target = trashDirectory + "/" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: trashDirectory, withIntermediateDirectories: true)
        if rename(path, target) != 0 {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Deletes what is in the trash; each entry is claimed with a rename so two processes never
    /// delete the same tree.
    public func emptyTrash() {
        for entry in Self.children(of: trashDirectory) where !entry.hasSuffix(".deleting") {
            let claimed = trashDirectory + "/" + entry + "." + UUID().uuidString.prefix(8) + ".deleting"
            guard rename(trashDirectory + "/" + entry, claimed) == 0 else { continue }
            try? FileManager.default.removeItem(atPath: claimed)
        }
    }

    /// Cleans what killed processes left: scratch folders whose version lock is free, and version
    /// folders without a record.
    public func sweep() {
        for entry in Self.children(of: temporaryRoot) {
            let parts = entry.split(separator: "@").map(String.init)
            guard parts.count == 3, parts[0] == namespace.key,
                  let lock = FileLock.tryAcquire(lockPath(appId: parts[1], versionId: parts[2])) else { continue }
            discard(temporaryRoot + "/" + entry)
            withExtendedLifetime(lock) {}
        }
        for app in Self.children(of: namespaceDirectory) where Identifier.isValid(app) {
            for version in Self.children(of: namespaceDirectory + "/" + app) where Identifier.isValid(version) {
                let directory = versionDirectory(appId: app, versionId: version)
                guard !FileManager.default.fileExists(atPath: directory + "/record.json"),
                      let lock = FileLock.tryAcquire(lockPath(appId: app, versionId: version)) else { continue }
                if !FileManager.default.fileExists(atPath: directory + "/record.json") { discard(directory) }
                withExtendedLifetime(lock) {}
            }
        }
        for entry in Self.children(of: trashDirectory) where entry.hasSuffix(".deleting") {
            try? FileManager.default.removeItem(atPath: trashDirectory + "/" + entry)
        }
        emptyTrash()
    }

    /// Every namespace that has a folder under the cache root.
    public static func namespaces(root: String) -> [CacheNamespace] {
        children(of: root + "/bundles").sorted().compactMap { key in
            guard let data = FileManager.default.contents(atPath: root + "/bundles/" + key + "/platform.json"),
                  let namespace = try? JSONDecoder().decode(CacheNamespace.self, from: data), namespace.key == key else { return nil }
            return namespace
        }
    }

    /// The names in a folder, or none when it cannot be read.
    static func children(of directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }
}
