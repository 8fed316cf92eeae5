package import AsyncHTTPClient
import Foundation
package import Logging
package import MiniAppPermissions
import NIOConcurrencyHelpers
public import MiniAppCore

/// Downloads, verifies, unpacks and caches versions, fail-closed: any failure leaves the cache as it was.
///
/// This is what a host service uses to get a mini-app ready to show. Create one per configuration and
/// keep it (``MiniAppRuntime`` makes the one a process uses); call ``shutdown()`` when done. Every method
/// is async and does its blocking work (extraction, hashing, syncs, reading the cache) on its
/// ``BlockingExecutor``, never on Swift's cooperative pool; cancelling
/// the calling task stops an install, which then leaves the cache as it was.
public final class BundleInstaller: Sendable {
    /// The configuration in force.
    public let configuration: MiniAppConfiguration
    /// The cache view of the configured platform and project.
    public let cache: BundleCache
    /// The platform it installs from; `nil` when offline.
    public let platform: (any PlatformAPI)?
    /// Whether the installer opened ``platform`` itself, and so closes it in ``shutdown()``.
    let ownsPlatform: Bool
    let downloader: BundleDownloader
    let verifier: SignatureVerifier
    /// Where the blocking work runs.
    package let executor: BlockingExecutor
    let permissions: PermissionAccess
    /// Deletions still running, which ``shutdown()`` waits for.
    let background: BackgroundWork
    let logger: Logger
    /// The platform's TUF repository, when a trusted root is configured: every version is checked against it.
    let updateChannel: UpdateChannel?
    /// What the installer's observers hear of its installs.
    private let installEvents = Broadcast<InstallEvent>(buffered: 256)

    /// An installer for `configuration`, using `platform` for the network (none when offline).
    ///
    /// - Parameters:
    ///   - httpClient: the client that downloads zips; by default the installer makes its own, which
    ///     ``shutdown()`` closes. A client given here is the host's to shut down.
    ///   - executor: where blocking work runs; it stays the caller's to shut down.
    ///   - permissionStore: the store whose decisions gate ``load(appId:versionId:progress:)``; by default
    ///     the configured one (``MiniAppConfiguration/permissionStoreLocation``), opened once when first
    ///     needed and closed by ``shutdown()``.
    ///   - logger: where the installer logs, with the caller's metadata; silent by default.
    package convenience init(
        configuration: MiniAppConfiguration, platform: (any PlatformAPI)?, httpClient: HTTPClient? = nil,
        executor: BlockingExecutor, permissionStore: PermissionStore? = nil,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(ConfigurationError) {
        try self.init(
            configuration: configuration, platform: platform, ownsPlatform: false,
            transport: HTTPTransport(network: configuration.network, httpClient: httpClient, executor: executor, connections: .pooled),
            ownsTransport: true,
            executor: executor, permissions: PermissionAccess(store: permissionStore, configuration: configuration, executor: executor), logger: logger
        )
    }

    /// An installer that opens the configured platform itself (none when offline), using `httpClient`
    /// for it too when given: then ``shutdown()`` is the one call that closes what the library made.
    package convenience init(
        configuration: MiniAppConfiguration, httpClient: HTTPClient? = nil,
        executor: BlockingExecutor, permissionStore: PermissionStore? = nil,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        let transport = HTTPTransport(network: configuration.network, httpClient: httpClient, executor: executor, connections: .pooled)
        let platform = configuration.offline || configuration.platform == nil
            ? nil : try Platforms.open(configuration, executor: executor, logger: logger, transport: { (transport, false) }).api
        try self.init(
            configuration: configuration, platform: platform, ownsPlatform: true, transport: transport, ownsTransport: true,
            executor: executor, permissions: PermissionAccess(store: permissionStore, configuration: configuration, executor: executor), logger: logger
        )
    }

    /// An installer whose platform, transport and permission store belong to the caller (``MiniAppRuntime``)
    /// unless it says it owns them, over `cache` (the runtime's view of the cache), or a view of its own.
    init(
        configuration: MiniAppConfiguration, platform: (any PlatformAPI)?, ownsPlatform: Bool, transport: HTTPTransport, ownsTransport: Bool,
        executor: BlockingExecutor, permissions: PermissionAccess, logger: Logger, cache: BundleCache? = nil
    ) throws(ConfigurationError) {
        self.configuration = configuration
        self.ownsPlatform = ownsPlatform
        self.platform = configuration.offline ? nil : platform
        self.logger = logger
        self.executor = executor
        self.background = BackgroundWork(executor: executor)
        let namespace = configuration.cacheNamespace
        self.cache = cache ?? BundleCache(root: configuration.cacheDirectory, namespace: namespace, lockTimeout: configuration.lockTimeout, executor: executor, logger: logger)
        self.downloader = BundleDownloader(
            maxBytes: configuration.maxDownloadBytes, transport: transport, ownsTransport: ownsTransport, logger: logger,
            rangeFolder: configuration.cacheDirectory + "/ranges"
        )
        self.verifier = SignatureVerifier(
            trusted: try TrustedKeys(configuration.trustedKeys),
            keyStore: KeyStore(directory: configuration.cacheDirectory + "/keys/" + namespace.key, lifetime: configuration.keyCacheLifetime),
            platform: self.platform
        )
        self.permissions = permissions
        self.updateChannel = self.platform == nil ? nil : UpdateChannel.make(configuration, transport: transport, executor: executor, logger: logger)
    }

    /// Closes what the installer made itself (its download connections, the platform when it opened it,
    /// and the permission store when it opened it), and waits for the deletions of replaced versions and
    /// downloaded zips, which run on threads of their own.
    public func shutdown() async {
        await downloader.shutdown()
        if ownsPlatform { await platform?.close() }
        await permissions.close()
        await background.wait()
    }

    // MARK: download

    /// Makes sure a version (the latest when `versionId` is `nil`) is cached and intact: reuses an
    /// intact cached copy unless `force`, else downloads, verifies, unpacks and caches it.
    ///
    /// A latest version that is a ``Rollback`` (older than a latest the platform answered before, or
    /// than a version installed from it) throws ``DownloadError/rollback(_:)`` unless `allowDowngrade`;
    /// an older version installed all the same (allowed, or asked for by `versionId`) says so in its
    /// record (``InstallRecord/downgradedFrom``).
    public func download(
        appId: String, versionId: String? = nil, force: Bool = false, allowDowngrade: Bool = false,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> InstallOutcome {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        // With TUF, its refresh (which needs no version) runs while the platform is asked for one; without,
        // nothing more is started.
        let refreshing = updateChannel.map { channel in Task { try await channel.refreshed() } }
        defer { refreshing?.cancel() }
        let target = try await resolve(appId: appId, versionId: versionId)
        var downgrade = Downgrade.check, remembered = true
        if versionId == nil, platform != nil {
            (downgrade, remembered) = try await checkLatest(appId: appId, target, allowDowngrade: allowDowngrade)
        }
        var force = force
        var trusted: TUFTarget?
        if var updater = try await refreshing?.value {
            let listed = try await UpdateChannel.target(in: &updater, appId: appId, versionId: target.versionId, versionTag: target.versionTag)
            trusted = listed
            // A cached copy of another zip than the one TUF lists is not reused: the version is fetched again.
            let cache = self.cache
            if !force, let cached = try await executor.run({ cache.record(appId: appId, versionId: target.versionId)?.sha256 }), cached != listed.hashes["sha256"] {
                force = true
            }
        }
        let outcome = try await ensure(
            appId: appId, versionId: target.versionId, versionTag: target.versionTag, force: force, downgrade: downgrade, trusted: trusted, progress: progress
        )
        // Remembered once the version is in place: a command that fails leaves the cache as it was.
        if !remembered { await remember(target, appId: appId, allowed: downgrade) }
        return await pruneIfAutomatic(after: outcome)
    }

    /// Whether an install from the platform goes back to an older version, and from which.
    enum Downgrade: Sendable {
        /// The latest, accepted: no going back.
        case none
        /// A rollback the caller allowed, from this newer version.
        case from(AppVersion)
        /// A version asked for by its id: the install checks it against the memory once its tag is known.
        case check
    }

    /// Checks `offered`, the platform's latest version of `appId`, against what the cache remembers: a
    /// rollback throws unless `allowDowngrade`. Also whether the memory already holds `offered` as the latest.
    private func checkLatest(appId: String, _ offered: AppVersion, allowDowngrade: Bool) async throws -> (Downgrade, remembered: Bool) {
        let cache = self.cache, preview = configuration.preview
        return try await executor.run { () throws -> (Downgrade, remembered: Bool) in
            let (rollback, remembered) = try cache.latestCheck(appId: appId, offered: offered, preview: preview)
            guard let rollback else { return (.none, remembered) }
            guard allowDowngrade else { throw DownloadError.rollback(rollback) }
            return (.from(rollback.newer), false)
        }
    }

    /// Remembers `offered` as the latest of `appId` (allowed back to, for a downgrade), read afresh: the
    /// install may have noted itself meanwhile. A memory that cannot be written is logged; the version is
    /// in place all the same.
    private func remember(_ offered: AppVersion, appId: String, allowed downgrade: Downgrade) async {
        let cache = self.cache, preview = configuration.preview, logger = self.logger
        try? await executor.runToCompletion {
            do {
                let allowed = if case .from = downgrade { true } else { false }
                try cache.remember(latest: offered, appId: appId, preview: preview, allowed: allowed)
            } catch {
                logger.warning("the memory of the app's latest versions was not written", metadata: ["app-id": "\(appId)", "error": "\(error)"])
            }
        }
    }

    /// Downloads the latest version of each app, at most `maxConcurrent` at a time; one app's failure
    /// does not stop the others. Results come back in the order of `appIds`.
    package func download(
        appIds: [String], maxConcurrent: Int, force: Bool = false, allowDowngrade: Bool = false
    ) async -> [(appId: String, result: Result<InstallOutcome, any Error>)] {
        // A fixed number of workers, each taking the next app until none is left: no task is added to
        // the group while it is being drained.
        let taken = NIOLockedValueBox(0)
        let finished = await withTaskGroup(of: [(Int, Result<InstallOutcome, any Error>)].self) { group in
            for _ in 0..<min(max(maxConcurrent, 1), appIds.count) {
                group.addTask {
                    var done: [(Int, Result<InstallOutcome, any Error>)] = []
                    while true {
                        let index = taken.withLockedValue { next in
                            defer { next += 1 }
                            return next
                        }
                        guard index < appIds.count else { return done }
                        do {
                            done.append((index, .success(try await self.download(appId: appIds[index], force: force, allowDowngrade: allowDowngrade))))
                        } catch {
                            done.append((index, .failure(error)))
                        }
                    }
                }
            }
            var all: [(Int, Result<InstallOutcome, any Error>)] = []
            for await done in group { all += done }
            return all
        }
        return finished.sorted { $0.0 < $1.0 }.map { (appIds[$0.0], $0.1) }
    }

    /// Applies the retention policy after a use of `outcome`'s version, when it is automatic.
    private func pruneIfAutomatic(after outcome: InstallOutcome) async -> InstallOutcome {
        let retention = configuration.retention
        guard retention.automatic else { return outcome }
        var result = outcome
        if let removed = try? await cache.prune(keep: retention.previousVersions + 1, maxBytes: retention.maxBytes, protecting: outcome.record, emptying: background), !removed.isEmpty {
            result.notes.append("pruned \(removed.count) old cached version\(removed.count == 1 ? "" : "s")")
        }
        return result
    }

    /// What a host does before showing a mini-app: the version cached and intact (when the platform is
    /// unavailable, the newest cached version as offline: repaired from its kept zip when damaged, else
    /// the newest intact one, with a note saying which), and every permission its manifest
    /// requires `ALLOWED` in the permission store; otherwise ``PermissionStoreError/launchRefused(appId:missing:)``,
    /// with the version kept in the cache.
    ///
    /// A latest version that is a ``Rollback`` is not launched (unless `allowDowngrade`): the newest
    /// intact, verified version the cache has is, with the rollback in ``InstallOutcome/rollback`` and a
    /// note; with none, ``DownloadError/rollback(_:)`` is thrown.
    public func load(
        appId: String, versionId: String? = nil, allowDowngrade: Bool = false, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> InstallOutcome {
        let outcome = try await ensureForLoad(appId: appId, versionId: versionId, allowDowngrade: allowDowngrade, progress: progress)
        let decision = try await launchDecision(for: outcome.record)
        guard decision.allowed else { throw PermissionStoreError.launchRefused(appId: appId, missing: decision.missing) }
        return outcome
    }

    /// Whether the cached version `record` may launch: every permission its manifest requires is
    /// `ALLOWED` in the permission store.
    public func launchDecision(for record: InstallRecord) async throws -> LaunchDecision {
        let manifest = try await self.manifest(of: record)
        return try await permissions.launchDecision(appId: record.id, manifest: manifest)
    }

    /// The manifest.json in force for a cached version, localised for the configured language.
    public func manifest(of record: InstallRecord) async throws -> BundleManifest {
        let cache = self.cache
        let language = configuration.language
        return try await executor.run { try cache.manifest(of: record, language: language) }
    }

    /// The cached versions of `appId`, most recently installed first, from the cache alone: what a
    /// host serves files from once ``load(appId:versionId:progress:)`` has succeeded.
    public func cachedVersions(appId: String) async throws -> [InstallRecord] {
        try Identifier.validate(appId, as: .app)
        let cache = self.cache
        return try await executor.run { cache.records(appId: appId) }
    }

    /// The changes from the manifest in force for the newest cached version of `appId` to the latest
    /// version's metadata on the platform.
    public func manifestDiff(appId: String) async throws -> (cached: InstallRecord, latest: AppVersion, diff: ManifestDiff) {
        try Identifier.validate(appId, as: .app)
        let cache = self.cache
        guard let cached = try await executor.run({ cache.records(appId: appId).first }) else { throw CacheError.notCached(appId: appId, versionId: nil) }
        guard let platform else { throw CacheError.notCached(appId: appId, versionId: nil) }
        let latest = try await platform.latestVersion(ofApp: appId).version
        let current = try await platform.metadata(appId: appId, versionId: latest.versionId, language: configuration.language)
        return (cached, latest, ManifestDiff(from: try await manifest(of: cached), to: current))
    }

    private func ensureForLoad(appId: String, versionId: String?, allowDowngrade: Bool, progress: (@Sendable (DownloadProgress) -> Void)?) async throws -> InstallOutcome {
        do {
            return try await download(appId: appId, versionId: versionId, allowDowngrade: allowDowngrade, progress: progress)
        } catch DownloadError.rollback(let rollback) {
            guard var outcome = try await newestVerified(appId: appId, instead: rollback) else { throw DownloadError.rollback(rollback) }
            outcome.rollback = rollback
            outcome.notes.insert("\(rollback), refused; launching cached version \(Rollback.describe(AppVersion(versionId: outcome.record.versionId, versionTag: outcome.record.versionTag))) instead", at: 0)
            return outcome
        } catch let error as any CategorizedError where error.category == .unavailable && versionId == nil {
            // A given version that is cached and intact never reaches the network; only "the latest" falls
            // back. The platform cannot say which that is: the cache answers as it does offline (the newest
            // version, repaired from its kept zip when damaged, else an older intact one).
            let unavailable = "the platform is unavailable (\(error.description))"
            do {
                var outcome = try await newestFromCache(appId: appId)
                outcome.notes.insert("\(unavailable); using cached version \(outcome.record.versionId)", at: 0)
                return outcome
            } catch let damaged as CacheError where damaged.category == .badData {
                guard let outcome = try await olderIntactVersion(appId: appId, instead: damaged, prefix: unavailable + "; ") else { throw error }
                return outcome
            } catch let missing as CacheError {
                guard case .notCached = missing else { throw missing }
                throw error
            }
        } catch let error as CacheError where platform == nil && versionId == nil && error.category == .badData {
            guard let outcome = try await olderIntactVersion(appId: appId, instead: error, prefix: "") else { throw error }
            return outcome
        }
    }

    /// The newest intact version of `appId` with a verified signature that the cache holds in place of
    /// `rollback`'s offer: the newer version it names when cached, else the highest semantic version,
    /// else the most recently installed; `nil` when there is none.
    private func newestVerified(appId: String, instead rollback: Rollback) async throws -> InstallOutcome? {
        let cache = self.cache
        return try await executor.run { cache.reuse(appId: appId, insteadOf: rollback).map(Self.outcome(reusing:)) }
    }

    /// The newest cached version of `appId`, damaged or not, as an offline download gets it: reused when
    /// intact, repaired from its kept zip when damaged.
    private func newestFromCache(appId: String) async throws -> InstallOutcome {
        let newest = try await newestCachedVersion(appId: appId)
        return try await ensureFromCache(appId: appId, versionId: newest.versionId, force: false)
    }

    /// A damaged newest version that cannot be repaired (`damaged`) gives way to the newest intact
    /// version, with a note saying so; `nil` when none is intact.
    private func olderIntactVersion(appId: String, instead damaged: CacheError, prefix: String) async throws -> InstallOutcome? {
        let cache = self.cache
        guard case .intact(let fallback, _) = try await executor.run({ cache.reuseAnywhere(appId: appId, versionId: nil) }) else { return nil }
        var outcome = Self.outcome(reusing: fallback)
        let reason: String
        switch damaged {
        case .keptZipRejected(_, let versionId, let why):
            reason = "cached version \(versionId) is damaged and its kept zip cannot repair it (\(why))"
        case .damaged(_, let versionId, let problems):
            let shown = problems.prefix(3).joined(separator: ", ") + (problems.count > 3 ? ", ..." : "")
            reason = "cached version \(versionId) is damaged (\(shown)) and cannot be repaired from the cache"
        default:
            reason = damaged.description
        }
        outcome.notes.insert("\(prefix)\(reason); using cached version \(fallback.versionId)", at: 0)
        return outcome
    }

    /// The newest cached version of `appId`, damaged or not (a damaged one that keeps its zip is repaired).
    private func newestCachedVersion(appId: String) async throws -> AppVersion {
        let cache = self.cache
        guard let newest = try await executor.run({ cache.newest(appId: appId) }) else {
            throw CacheError.notCached(appId: appId, versionId: nil)
        }
        return AppVersion(versionId: newest.versionId, versionTag: newest.versionTag)
    }

    private func resolve(appId: String, versionId: String?) async throws -> AppVersion {
        if let versionId { return AppVersion(versionId: versionId, versionTag: nil) }
        guard let platform else { return try await newestCachedVersion(appId: appId) }
        return try await platform.latestVersion(ofApp: appId).version
    }

    /// The version reused when cached and intact, else installed from the platform. Two installs of one
    /// version, in this process or in others, meet at the version's lock: the second finds the first's
    /// result under it and reuses it.
    private func ensure(
        appId: String, versionId: String, versionTag: String?, force: Bool, downgrade: Downgrade = .check, trusted: TUFTarget? = nil,
        progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> InstallOutcome {
        let cache = self.cache
        let logger = self.logger
        guard platform != nil else { return try await ensureFromCache(appId: appId, versionId: versionId, force: force) }
        if !force, case .intact(let reused, let leftovers) = try await executor.run({
            let copy = cache.reuse(appId: appId, versionId: versionId, findingLeftovers: true)
            if case .damaged = copy { logger.warning("cached version is damaged; repairing it", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)"]) }
            return copy
        }) {
            // What killed processes left is cleaned by installs; a reuse cleans it too, off the caller's path.
            if leftovers { cache.sweepLeftovers(on: background) }
            return Self.outcome(reusing: reused)
        }
        if !force {
            // A damaged version that keeps its zip is repaired from it, with no network; a kept zip that
            // fails its checks is dropped from consideration and the version is downloaded again.
            do {
                if let repaired = try await repair(appId: appId, versionId: versionId) { return repaired }
            } catch let error as CacheError {
                guard case .keptZipRejected = error else { throw error }
                logger.warning("kept zip cannot repair the version; downloading it again", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)", "reason": "\(error.description)"])
            }
        }
        return try await installFromPlatform(
            appId: appId, versionId: versionId, versionTag: versionTag, force: force, downgrade: downgrade, trusted: trusted, progress: progress
        )
    }

    /// What ``download(appId:versionId:force:progress:)`` of the given version returns when an intact copy
    /// is cached and reusing it is all that call would do, found and checked on the calling thread, which
    /// it blocks for a few milliseconds, with no thread pool: for a command line whose thread has nothing
    /// else to do. `nil` (nothing done but noting the last use of an intact copy) whenever that call would
    /// do more (offline, a copy missing or damaged, leftovers of killed processes to sweep, automatic
    /// retention): the caller then makes it.
    package func reuseIntactCopyNow(appId: String, versionId: String) -> InstallOutcome? {
        guard platform != nil, updateChannel == nil else { return nil }
        return Self.reuseIntactCopy(in: cache, configuration: configuration, appId: appId, versionId: versionId)
    }

    /// ``reuseIntactCopyNow(appId:versionId:)`` of an installer for `configuration` (opening its remote
    /// platform), without making one: its platform client, downloader and verifier cost a cache hit about
    /// 0.1 ms (uprobes, 41 runs). `nil` also whenever making that installer could fail (trusted keys are
    /// left to the one made then to read), and for a registry platform. `executor` is never used here.
    package static func reuseIntactCopyNow(
        configuration: MiniAppConfiguration, executor: BlockingExecutor, logger: Logger, appId: String, versionId: String
    ) -> InstallOutcome? {
        guard !configuration.offline, case .remote? = configuration.platform, configuration.projectId != nil, configuration.trustedKeys.isEmpty,
              configuration.tufRoot == nil else {
            return nil
        }
        let cache = BundleCache(
            root: configuration.cacheDirectory, namespace: configuration.cacheNamespace, lockTimeout: configuration.lockTimeout,
            executor: executor, logger: logger
        )
        return reuseIntactCopy(in: cache, configuration: configuration, appId: appId, versionId: versionId)
    }

    private static func reuseIntactCopy(in cache: BundleCache, configuration: MiniAppConfiguration, appId: String, versionId: String) -> InstallOutcome? {
        guard !configuration.retention.automatic, Identifier.isValid(appId), Identifier.isValid(versionId),
              case .intact(let record, leftovers: false) = cache.reuse(appId: appId, versionId: versionId, findingLeftovers: true)
        else { return nil }
        return outcome(reusing: record)
    }

    /// The version from the cache alone, as offline: an intact copy from any platform's part of the cache,
    /// else the damaged one repaired from its kept zip; ``CacheError`` when neither can be had.
    private func ensureFromCache(appId: String, versionId: String, force: Bool) async throws -> InstallOutcome {
        let cache = self.cache
        // Offline, an intact copy from any platform's part of the cache will do.
        guard !force else { throw CacheError.notCached(appId: appId, versionId: versionId) }
        switch try await executor.run({ cache.reuseAnywhere(appId: appId, versionId: versionId) }) {
        case .missing:
            throw CacheError.notCached(appId: appId, versionId: versionId)
        case .intact(let cached, _):
            return Self.outcome(reusing: cached)
        case .damaged(let damaged, let report, let here):
            guard here && damaged.zipBytes > 0 else { throw CacheError.damaged(appId: appId, versionId: versionId, problems: report.problems) }
        }
        // A damaged version that keeps its zip is repaired from it, with no network.
        guard let repaired = try await repair(appId: appId, versionId: versionId) else {
            throw CacheError.damaged(appId: appId, versionId: versionId, problems: ["its kept zip is gone"])
        }
        return repaired
    }

    /// An intact copy found where the offline path looks first.
    private struct Reused: Error {
        var outcome: InstallOutcome
    }

    /// Repairs a damaged cached version from the zip it keeps, with no network: the zip's digest and,
    /// when the version was verified, its signature (with the key kept at install) are checked again
    /// first, and ``CacheError/keptZipRejected(appId:versionId:reason:)`` thrown when one fails. Other
    /// versions that shared a damaged file get the repaired copy too. Returns `nil` when the version is
    /// not cached or keeps no zip; reuses it when it is intact after all (another process repaired it).
    private func repair(appId: String, versionId: String) async throws -> InstallOutcome? {
        let cache = self.cache
        let offlineVerifier = SignatureVerifier(trusted: verifier.trusted, keyStore: verifier.keyStore, platform: nil)
        // Nothing to lock (nor folders to make) for a version that is not cached or keeps no zip.
        guard try await executor.run({ (cache.record(appId: appId, versionId: versionId)?.zipBytes ?? 0) > 0 }) else { return nil }
        CryptoRuntime.warmUp(on: executor)
        do {
            return try await repairLocked(appId: appId, versionId: versionId, cache: cache, verifier: offlineVerifier)
        } catch let reused as Reused {
            return reused.outcome
        }
    }

    private func repairLocked(appId: String, versionId: String, cache: BundleCache, verifier offlineVerifier: SignatureVerifier) async throws -> InstallOutcome? {
        try await cache.withStage(appId: appId, versionId: versionId, background: background) { stage -> InstallOutcome? in
            let found = try await executor.run { () -> (InstallRecord, [String], Set<ino_t>, String)?? in
                let record: InstallRecord, report: IntegrityReport
                switch cache.reuse(appId: appId, versionId: versionId) {
                case .missing: return .some(nil)
                case .intact(let reused, _): throw Reused(outcome: Self.outcome(reusing: reused))
                case .damaged(let damaged, let found, _): (record, report) = (damaged, found)
                }
                guard let zip = cache.keptZip(of: record) else { return .some(nil) }
                var damaged = Set<ino_t>()
                var info = stat()
                for problem in report.problems where problem.hasPrefix("changed: ") {
                    if lstat(record.path + "/" + problem.dropFirst(9), &info) == 0 { damaged.insert(info.st_ino) }
                }
                return (record, report.problems, damaged, zip)
            }
            guard let (record, problems, damaged, kept) = found ?? nil else { return nil }
            let zip = stage.scratch + "/bundle.zip"
            let digest = try await executor.run { () throws -> [UInt8] in
                // The cache's own file: a link planted in its place is not followed (link() links the
                // link itself, which the hash then refuses).
                guard link(kept, zip) == 0 || (try? FileHashing.copyBundle(at: kept, to: zip, followingLinks: false)) != nil,
                      let digest = try? FileHashing.bundle(at: zip, followingLinks: false).digest else {
                    throw CacheError.keptZipRejected(appId: appId, versionId: versionId, reason: "it cannot be read")
                }
                return digest
            }
            guard digest.hexString == record.sha256 else {
                throw CacheError.keptZipRejected(appId: appId, versionId: versionId, reason: "its SHA-256 is not the one installed")
            }
            var outcome = SignatureOutcome(status: record.signature, keyId: record.keyId)
            if record.signature == .verified {
                outcome = await offlineVerifier.check(
                    signature: record.signatureValue, keyId: record.keyId, explicitKey: record.signerPublicKey, versionId: versionId, sha256: digest
                )
                guard outcome.status == .verified else {
                    throw CacheError.keptZipRejected(appId: appId, versionId: versionId, reason: "its signature does not verify: \(outcome.error?.description ?? "unknown")")
                }
            }
            let files = try await unpack(zip, into: stage, appId: appId, versionId: versionId, keepAs: record.sha256)
            var repaired = try await finish(
                stage: stage, files: files, appId: appId, versionId: versionId, versionTag: record.versionTag, source: .cache,
                outcome: outcome, sha256: digest, transfer: record.transfer, signature: record.signatureValue, repairing: record
            )
            let committed = repaired.record
            try? await executor.runToCompletion { stage.relinkRepaired(committed, damaged: damaged) }
            let shown = problems.prefix(3).joined(separator: ", ") + (problems.count > 3 ? ", ..." : "")
            repaired.notes.insert("version \(versionId) of app \(appId) was damaged (\(shown)); repaired it from its kept zip", at: 0)
            logger.info("repaired from the kept zip", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)"])
            return repaired
        }
    }

    /// What a download answers with a cached version it reuses (its use noted by the cache).
    private static func outcome(reusing record: InstallRecord) -> InstallOutcome {
        var used = record
        used.source = .cache
        return InstallOutcome(record: used, notes: Self.signatureNotes(used))
    }

    static func signatureNotes(_ record: InstallRecord) -> [String] {
        guard record.signature != .verified else { return [] }
        let detail = record.signatureDetail.map { ": \($0)" } ?? ""
        return ["version \(record.versionId) of app \(record.id) was installed with a \(record.signature.rawValue) signature under the advisory policy\(detail)"]
    }

    // MARK: The pipeline

    // MARK: Observing

    /// Every install from now on, whichever call made it (a download, a load that installs, a bundle):
    /// its progress, then its record or its failure. A reuse of an intact copy installs nothing and is
    /// not told. The stream keeps the newest `buffered` events its reader has not read (older ones are
    /// dropped: a reader that falls behind slows no install) and ends when its task does.
    public func installs(buffered: Int = 256) -> AsyncStream<InstallEvent> {
        installEvents.subscribe(buffered: buffered)
    }

    /// Runs the install `body`, telling the observers (when there are any) its progress and its end.
    private func announcing(
        appId: String, versionId: String, progress: (@Sendable (DownloadProgress) -> Void)?,
        _ body: (_ progress: (@Sendable (DownloadProgress) -> Void)?) async throws -> InstallOutcome
    ) async throws -> InstallOutcome {
        guard installEvents.isObserved else { return try await body(progress) }
        let events = installEvents
        let told: @Sendable (DownloadProgress) -> Void = { step in
            progress?(step)
            events.send(.progress(appId: appId, versionId: versionId, step))
        }
        do {
            let outcome = try await body(told)
            if outcome.record.source != .cache { events.send(.installed(outcome.record)) }
            return outcome
        } catch {
            events.send(.failed(appId: appId, versionId: versionId, reason: Sanitizer.printable(String(describing: error), limit: 500)))
            throw error
        }
    }

    private func installFromPlatform(
        appId: String, versionId: String, versionTag: String?, force: Bool, downgrade: Downgrade, trusted: TUFTarget?,
        progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> InstallOutcome {
        try await announcing(appId: appId, versionId: versionId, progress: progress) { progress in
            try await installFromPlatformTold(
                appId: appId, versionId: versionId, versionTag: versionTag, force: force, downgrade: downgrade, trusted: trusted, progress: progress
            )
        }
    }

    /// Installs the version from the platform; with `trusted` (its TUF target), the zip must have the
    /// target's length and SHA-256 before it is unpacked.
    private func installFromPlatformTold(
        appId: String, versionId: String, versionTag: String?, force: Bool, downgrade: Downgrade, trusted: TUFTarget?,
        progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> InstallOutcome {
        guard let platform else { throw CacheError.notCached(appId: appId, versionId: versionId) }
        // Hashes and the signature come once the zip does: OpenSSL's set-up overlaps with the requests.
        CryptoRuntime.warmUp(on: executor)
        let cache = self.cache
        return try await cache.withStage(appId: appId, versionId: versionId, background: background) { stage in
            if !force, case .intact(let reused, _) = try await executor.run({ cache.reuse(appId: appId, versionId: versionId) }) {
                return Self.outcome(reusing: reused)
            }
            var tag = versionTag
            var manifest = try await platform.fileManifest(appId: appId, versionId: versionId)
            // The listing names only the latest version, the one with a tag; the file manifest already
            // proved that this version exists.
            if tag == nil, let latest = try? await platform.latestVersion(ofApp: appId), latest.version.versionId == versionId {
                tag = latest.version.versionTag
            }
            guard manifest.urls.count == 1 else {
                if let trusted { throw TUFError("target \(trusted.path)", "the platform lists several files for the version, where TUF lists one zip") }
                guard configuration.signaturePolicy == .advisory else { throw SignatureError.multiFileManifest(versionId: versionId) }
                let (downloaded, files) = try await downloadFiles(manifest.urls, versionId: versionId, into: stage.path, progress: progress)
                let transfer = Transfer(method: .full, fetchedBytes: downloaded.size, reusedBytes: 0)
                return try await finish(
                    stage: stage, files: files, appId: appId, versionId: versionId, versionTag: tag, source: .network,
                    outcome: .unverified(.multiFileManifest(versionId: versionId)), sha256: downloaded.sha256, transfer: transfer, signature: nil,
                    downgrade: downgrade
                )
            }
            let zip = stage.scratch + "/bundle.zip"
            var fetched: Int64 = 0
            // What a delta update (or the whole zip a range request got instead) gave, when it did.
            var assembled: (file: DownloadedFile, outcome: SignatureOutcome, transfer: Transfer)?
            // A delta needs a signature to prove the assembled bytes right, and an earlier zip of the app.
            let base = configuration.delta && manifest.signature != nil && !manifest.urls[0].isFileURL
                ? try await executor.run({ cache.keptZip(appId: appId) }) : nil
            // The kept zip's version's files that hold what entries copied from it hold, once proven.
            var reuse: (record: InstallRecord, zip: String, copied: [UInt64: UInt64])?
            if let base {
                // Those files stand in for the copied entries only while the kept zip is still the one they
                // were extracted from: it is hashed while the ranges come (and no further once the update
                // turns out not to need it).
                let stopHashing = NIOLockedValueBox(false)
                async let keptIntact = withTaskCancellationHandler {
                    (try? await executor.run { FileHashing.sha256(ofFileAt: base.path, stop: { stopHashing.withLockedValue { $0 } })?.hexString == base.record.sha256 }) ?? false
                } onCancel: {
                    stopHashing.withLockedValue { $0 = true }
                }
                var copiedEntries: [UInt64: UInt64] = [:]
                var restarted = false
                var predict = true
                attempts: while true {
                    let keyId = manifest.publicKeyId
                    async let key = verifier.prefetch(keyId: keyId)
                    let delta = try await downloader.deltaDownload(manifest.urls[0], to: zip, base: base.path, maxEntries: configuration.extraction.maxEntries, predict: predict, progress: progress)
                    let prefetched = await key
                    switch delta {
                    case .assembled(let file, let fetchedBytes, let reusedBytes, let copied, let predicted):
                        fetched += fetchedBytes
                        let outcome = await verifier.check(signature: manifest.signature, keyId: manifest.publicKeyId, prefetched: prefetched, versionId: versionId, sha256: file.sha256)
                        if outcome.status == .verified {
                            assembled = (file, outcome, Transfer(method: reusedBytes > 0 ? .delta : .full, fetchedBytes: fetched, reusedBytes: reusedBytes))
                            copiedEntries = copied
                        } else if predicted {
                            // Local headers rebuilt from the central directory may be what is wrong (a
                            // producer that writes other extra fields of the same length there): once
                            // more, fetching them.
                            logger.info("assembled zip with predicted local headers does not verify; fetching them", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)"])
                            predict = false
                            continue attempts
                        } else {
                            // Wrong bytes somewhere (a range, or the kept zip): the whole zip decides.
                            logger.info("assembled zip does not verify; downloading it whole", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)"])
                        }
                    case .full(let file, let fetchedBytes):
                        fetched += fetchedBytes
                        let outcome = await verifier.check(signature: manifest.signature, keyId: manifest.publicKeyId, prefetched: prefetched, versionId: versionId, sha256: file.sha256)
                        try enforce(outcome)
                        assembled = (file, outcome, Transfer(method: .full, fetchedBytes: fetched, reusedBytes: 0))
                    case .changed(let fetchedBytes):
                        fetched += fetchedBytes
                        logger.info("zip changed during the update; starting over", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)"])
                        if !restarted {
                            restarted = true
                            manifest = try await platform.fileManifest(appId: appId, versionId: versionId)
                            guard manifest.urls.count == 1 else { throw SignatureError.multiFileManifest(versionId: versionId) }
                            if manifest.signature != nil { continue attempts }
                        }
                    case .unusable(let reason, let fetchedBytes):
                        fetched += fetchedBytes
                        logger.info("delta update not possible; downloading the whole zip", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)", "reason": "\(reason)"])
                    }
                    break attempts
                }
                if copiedEntries.isEmpty {
                    stopHashing.withLockedValue { $0 = true }
                } else if await keptIntact {
                    reuse = (base.record, base.path, copiedEntries)
                }
            }
            let result: (file: DownloadedFile, outcome: SignatureOutcome, transfer: Transfer)
            if let assembled {
                result = assembled
            } else {
                let keyId = manifest.signature == nil ? nil : manifest.publicKeyId
                async let key = verifier.prefetch(keyId: keyId)
                // With TUF, no byte past the target's length is fetched (an endless zip ends there).
                let file = try await downloader.download(manifest.urls[0], to: zip, limit: trusted.map { Int64($0.length) }, progress: progress)
                fetched += file.size
                let outcome = await verifier.check(
                    signature: manifest.signature, keyId: manifest.publicKeyId, prefetched: await key,
                    versionId: versionId, sha256: file.sha256
                )
                try enforce(outcome)
                result = (file, outcome, Transfer(method: .full, fetchedBytes: fetched, reusedBytes: 0))
            }
            if let trusted { try UpdateChannel.check(trusted, size: result.file.size, sha256: result.file.sha256) }
            let files = try await unpack(zip, into: stage, appId: appId, versionId: versionId, keepAs: result.file.sha256.hexString, reuse: reuse)
            let installed = try await finish(
                stage: stage, files: files, appId: appId, versionId: versionId, versionTag: tag, source: .network,
                outcome: result.outcome, sha256: result.file.sha256, transfer: result.transfer, signature: manifest.signature,
                downgrade: downgrade
            )
            await downloader.rangeSupport.save()
            return installed
        }
    }

    /// Whether ``install(bundleAt:appId:versionId:versionTag:signature:publicKey:keyId:)`` can check a
    /// signature by the platform key `keyId`: online, or offline when an earlier install kept that key.
    package func canCheckSignature(keyId: String) -> Bool {
        verifier.canCheck(keyId: keyId)
    }

    /// Installs a local zip, with the same checks and the same cache as a download.
    public func install(
        bundleAt path: String, appId: String, versionId: String, versionTag: String? = nil,
        signature: String? = nil, publicKey: PublicKey? = nil, keyId: String? = nil
    ) async throws -> InstallOutcome {
        try Identifier.validate(appId, as: .app)
        try Identifier.validate(versionId, as: .version)
        if let keyId { try Identifier.validate(keyId, as: .key) }
        CryptoRuntime.warmUp(on: executor)
        // The bundle is read once, into the copy the cache keeps: its digest is what is verified.
        return try await announcing(appId: appId, versionId: versionId, progress: nil) { _ in try await cache.withStage(appId: appId, versionId: versionId, background: background) { stage in
            let zip = stage.scratch + "/bundle.zip"
            let (sha256, size) = try await executor.run { try FileHashing.copyBundle(at: path, to: zip) }
            let outcome = await verifier.check(signature: signature, keyId: keyId, explicitKey: publicKey, versionId: versionId, sha256: sha256)
            try enforce(outcome)
            let files = try await unpack(zip, into: stage, appId: appId, versionId: versionId, keepAs: sha256.hexString)
            return try await finish(
                stage: stage, files: files, appId: appId, versionId: versionId, versionTag: versionTag, source: .bundle, outcome: outcome,
                sha256: sha256, transfer: Transfer(method: .full, fetchedBytes: size, reusedBytes: 0), signature: signature, signer: publicKey
            )
        } }
    }

    /// Commits a verified stage with its record (the size being the sum of `files`), and reports it.
    /// A cancellation that comes before the commit stops it; once committing, the install completes.
    private func finish(
        stage: BundleCache.Stage, files: [BundleFile], appId: String, versionId: String, versionTag: String?,
        source: InstallSource, outcome: SignatureOutcome, sha256: [UInt8], transfer: Transfer?, signature: String?,
        signer: PublicKey? = nil, repairing repaired: InstallRecord? = nil, downgrade: Downgrade = .none
    ) async throws -> InstallOutcome {
        try Task.checkCancellation()
        let now = Date()
        var record = InstallRecord(
            id: appId, versionId: versionId, versionTag: versionTag, path: "", source: source, signature: outcome.status,
            signatureDetail: outcome.error?.description, keyId: outcome.keyId, sha256: sha256.hexString,
            sizeBytes: files.reduce(0) { $0 + $1.size }, installedAt: now, lastUsedAt: now,
            platform: cache.namespace.platform, projectId: cache.namespace.projectId
        )
        record.transfer = transfer
        record.preview = source == .network && configuration.preview
        record.signatureValue = outcome.status == .verified ? signature : nil
        record.signerKey = outcome.status == .verified ? signer?.pem : nil
        if let repaired {
            // A repair restores the version as it was installed, and says when.
            record = repaired
            record.source = repaired.installedSource ?? repaired.source
            record.repairedAt = now
            record.lastUsedAt = now
        }
        let cache = self.cache, preview = configuration.preview
        let keyStore = verifier.keyStore
        let staged = record
        var committed = try await executor.runToCompletion { () throws -> InstallRecord in
            var staged = staged
            switch downgrade {
            case .none: break
            case .from(let newer): staged.downgradedFrom = newer
            case .check:
                // A version asked for by id: older than the latest remembered, or than one installed?
                staged.downgradedFrom = (try? cache.latestCheck(appId: appId, offered: AppVersion(versionId: versionId, versionTag: versionTag), preview: preview))?.rollback?.newer
            }
            // Noted in the memory of the latest versions when from the platform, for the rollback check.
            let committed = try stage.commit(staged, fromPlatform: source == .network && repaired == nil, preview: preview)
            if let key = outcome.fetchedKey { keyStore?.store(key) }
            return committed
        }
        committed.source = repaired == nil ? source : .cache
        logger.info("installed", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)", "signature": "\(outcome.status.rawValue)"])
        return InstallOutcome(record: committed, notes: Self.signatureNotes(committed))
    }

    /// Applies the signature policy: under `required`, anything but a verified signature stops here.
    private func enforce(_ outcome: SignatureOutcome) throws(SignatureError) {
        guard outcome.status != .verified else { return }
        if configuration.signaturePolicy == .required, let error = outcome.error { throw error }
        // The outcome's notes tell the user; this is for -v.
        logger.debug("signature not verified; installing under the advisory policy", metadata: ["detail": "\(outcome.error?.description ?? "")"])
    }

    /// Extracts `zip` into `stage/bundle` (files read-only), stripping one top folder, checks its
    /// manifest.json, links files identical to another cached version's to it, and writes
    /// `stage/files.list`, on the pool. With `keepAs`, the zip then moves to `stage/<keepAs>.zip`, the
    /// copy the cache keeps. With `reuse`, the entries of `zip` copied whole from the kept zip of the
    /// version of `reuse.record` (proven intact) are hard links to that version's files, not inflated.
    private func unpack(
        _ zip: String, into staged: BundleCache.Stage, appId: String, versionId: String, keepAs: String?,
        reuse: (record: InstallRecord, zip: String, copied: [UInt64: UInt64])? = nil
    ) async throws -> [BundleFile] {
        let limits = configuration.extraction
        let cache = self.cache
        let logger = self.logger
        return try await executor.run {
            let stage = staged.path
            let raw = stage + "/raw"
            var extractor = ArchiveExtractor(limits: limits)
            extractor.fileMode = 0o444
            if let reuse {
                extractor.reusable = cache.reusableFiles(of: reuse.record, keptZip: reuse.zip, copied: reuse.copied, maxEntries: .max)
            }
            let result = try extractor.extract(zip, into: raw)
            if reuse != nil {
                logger.debug("unchanged files linked", metadata: ["app-id": "\(appId)", "linked": "\(result.linkedPaths.count)", "files": "\(result.files.count)"])
            }
            guard rename(result.bundleDirectory, stage + "/bundle") == 0 else { throw CacheError.system(stage + "/bundle") }
            if result.bundleDirectory != raw { rmdir(raw) }
            _ = try BundleManifest.read(bundleDirectory: stage + "/bundle")
            let files = staged.shareFiles(result.files, linkedPaths: result.linkedPaths)
            try Self.writeFileList(files, directories: result.directories, stage: stage)
            if let keepAs {
                let kept = stage + "/" + keepAs + ".zip"
                guard rename(zip, kept) == 0 || link(zip, kept) == 0 else { throw CacheError.system(kept) }
                chmod(kept, 0o444)
            }
            return files
        }
    }

    /// Writes `stage/files.list`: the files, and the folders' change times as they are now that the
    /// tree is in its final shape.
    private static func writeFileList(_ files: [BundleFile], directories known: [String]? = nil, stage: String) throws {
        let inspector = BundleInspector(root: stage + "/bundle")
        // The extraction knows every folder it made: one status call each instead of reading them all.
        let directories = known.flatMap(inspector.directories(at:)) ?? inspector.directories()
        let list = BundleFileList(files: files, directories: directories)
        try Durability.writeAtomically(list.encoded(), to: stage + "/files.list", durable: false)
    }

    /// The old platforms' one-URL-per-file manifests: each file lands at its path after `ver-<id>/`.
    private func downloadFiles(_ urls: [URL], versionId: String, into stage: String, progress: (@Sendable (DownloadProgress) -> Void)?) async throws -> (DownloadedFile, [BundleFile]) {
        // Files that arrive one by one obey the extraction limits and rules of a zip's entries.
        let limits = configuration.extraction
        let bundle = stage + "/bundle"
        guard mkdir(bundle, 0o755) == 0 else { throw CacheError.system(bundle) }
        var files: [BundleFile] = []
        var seen: [String: Bool] = [:]  // path -> isDirectory
        let combined = SHA256Digest()
        var total: Int64 = 0
        for url in urls {
            let marker = "/ver-\(versionId)/"
            let text = url.path
            guard let range = text.range(of: marker) else {
                throw PlatformError.invalidResponse(resource: "the file manifest of version \(versionId)", reason: "file URL \(url.absoluteString) has no ver-\(versionId)/ segment")
            }
            let relative = String(text[range.upperBound...])
            let components = try ArchivePath.components(of: relative)
            guard !components.isEmpty else { throw ArchiveError.unsafePath(entry: relative, reason: "names no file") }
            var directory = bundle
            var path = ""
            for component in components.dropLast() {
                path += (path.isEmpty ? "" : "/") + component
                directory += "/" + component
                switch seen[path] {
                case true?: continue
                case false?: throw ArchiveError.duplicateEntry(entry: relative)
                case nil:
                    seen[path] = true
                    guard seen.count <= limits.maxEntries else { throw ArchiveError.tooManyEntries(limit: limits.maxEntries) }
                    if mkdir(directory, 0o755) != 0 { throw CacheError.system(directory) }
                }
            }
            let filePath = components.joined(separator: "/")
            guard seen[filePath] == nil else { throw ArchiveError.duplicateEntry(entry: relative) }
            seen[filePath] = false
            guard seen.count <= limits.maxEntries else { throw ArchiveError.tooManyEntries(limit: limits.maxEntries) }
            let target = directory + "/" + components.last!
            let file: DownloadedFile
            do {
                file = try await downloader.download(url, to: target, limit: limits.maxUnpackedBytes - total, progress: progress)
            } catch DownloadError.tooLarge(_, let limit) where limit < configuration.maxDownloadBytes {
                throw ArchiveError.tooLarge(limitBytes: limits.maxUnpackedBytes)
            }
            chmod(target, 0o444)
            var info = stat()
            stat(target, &info)
            files.append(BundleFile(path: filePath, size: file.size, sha256: file.sha256.hexString,
                                    changedAt: FileTimestamp(info.st_ctim)))
            combined.update(file.sha256)
            total += file.size
        }
        guard files.contains(where: { $0.path == "index.html" }) else { throw ArchiveError.missingIndex }
        let sorted = files.sorted { $0.path < $1.path }
        try await executor.run {
            _ = try BundleManifest.read(bundleDirectory: bundle)
            try Self.writeFileList(sorted, stage: stage)
        }
        return (DownloadedFile(sha256: combined.finalize(), size: total), sorted)
    }
}
