import Foundation
import MiniAppCore

// The installer's way into the cache: a few calls, each named for a step of an install, instead of the
// cache's helpers one by one. Reuse finds an intact version and notes its use; a stage holds a version's
// lock and scratch folder until its commit puts the version in place; the kept zip serves delta updates
// and repairs (BundleCache+Sharing.swift); retention and leftovers are housekeeping; the memory of each
// app's latest versions answers the rollback check (LatestHistory.swift). The helpers only these calls
// use are private, so that what is locked, synced and deleted when is decided in the cache alone.

extension BundleCache {
    // MARK: Reuse

    /// A cached copy of a version, as an install finds it.
    enum CachedCopy: Sendable {
        /// Not cached.
        case missing
        /// Cached and damaged: its record, what the check found, and whether this namespace holds it (only
        /// then may its kept zip repair it).
        case damaged(InstallRecord, IntegrityReport, here: Bool)
        /// Cached, intact and reused: its use is noted now. `leftovers` tells whether killed processes left
        /// anything for ``sweepLeftovers(on:)``; it is looked for only when asked.
        case intact(InstallRecord, leftovers: Bool)
    }

    /// Version `versionId` of `appId` in this namespace, checked, and reused when intact. With
    /// `findingLeftovers`, also whether `tmp/` or `trash/` hold anything. Blocks: the warm cache hit is
    /// this call on the caller's thread, so it reads nothing more than that answer needs.
    func reuse(appId: String, versionId: String, findingLeftovers: Bool = false) -> CachedCopy {
        guard let cached = record(appId: appId, versionId: versionId) else { return .missing }
        let report = check(cached)
        guard report.intact else { return .damaged(cached, report, here: true) }
        return .intact(touch(cached), leftovers: findingLeftovers && hasLeftovers())
    }

    /// A copy of `appId` (version `versionId`, or the newest when `nil`) from any namespace, as the cache
    /// alone answers: the intact copy ``lookup(appId:versionId:intactOnly:)`` would give, reused, else the
    /// damaged one it would give, with what its check found. Each copy is checked once. Blocks.
    func reuseAnywhere(appId: String, versionId: String?) -> CachedCopy {
        let ordered = copies(appId: appId, versionId: versionId)
        var firstReport: IntegrityReport?
        for copy in ordered {
            let report = copy.cache.check(copy.record)
            if report.intact { return .intact(copy.cache.touch(copy.record), leftovers: false) }
            if firstReport == nil { firstReport = report }
        }
        guard let first = ordered.first, let firstReport else { return .missing }
        return .damaged(first.record, firstReport, here: first.cache.namespace.key == namespace.key)
    }

    /// The version of `appId` reused in place of `rollback`'s offer: an intact one with a verified
    /// signature, the newer version the rollback names when cached, else the highest semantic version,
    /// else the most recently installed; `nil` when there is none. Blocks.
    func reuse(appId: String, insteadOf rollback: Rollback) -> InstallRecord? {
        let candidates = records(appId: appId).filter {
            $0.versionId != rollback.offered.versionId && $0.signature == .verified && check($0).intact
        }
        let tagged = candidates.compactMap { record in record.versionTag.flatMap(SemanticVersion.init).map { ($0, record) } }
        guard let chosen = candidates.first(where: { $0.versionId == rollback.newer.versionId })
            ?? tagged.max(by: { $0.0 < $1.0 })?.1 ?? candidates.first else { return nil }
        return touch(chosen)
    }

    /// The newest cached version of `appId`, damaged or not: this namespace's most recently installed,
    /// else the copy ``lookup(appId:versionId:intactOnly:)`` finds in another namespace. Blocks.
    func newest(appId: String) -> InstallRecord? {
        records(appId: appId).first ?? lookup(appId: appId)?.record
    }

    // MARK: Stage and commit

    /// An install of one version in progress, holding the version's lock (see
    /// ``withStage(appId:versionId:background:_:)``): where it works, and the calls that put its result
    /// into the cache.
    struct Stage: Sendable {
        /// The cache view the version goes into.
        let cache: BundleCache
        let appId: String
        let versionId: String
        /// The install's scratch folder, which the version's lock keeps from other processes' sweeps: the
        /// download waits there, and so does a version being replaced.
        let scratch: String
        /// Where the deletions the install leaves run.
        let background: BackgroundWork

        /// `scratch/stage`, which becomes the version's folder: `bundle/`, `files.list`, the kept zip.
        var path: String { scratch + "/stage" }

        /// Links the staged files identical to another cached version's to that version's copy (see
        /// ``BundleCache/shareFiles(stage:files:linkedPaths:appId:versionId:)``). Blocks.
        func shareFiles(_ files: [BundleFile], linkedPaths: Set<String>) -> [BundleFile] {
            cache.shareFiles(stage: path, files: files, linkedPaths: linkedPaths, appId: appId, versionId: versionId)
        }

        /// Moves the stage into the version's place with `record` written last (see
        /// ``BundleCache/commit(stage:record:)`` for what is synced when). A version installed from the
        /// platform (`fromPlatform`) is then noted in the memory of its app's latest versions for `preview`
        /// mode, and only this version keeps its zip: the older versions' kept zips are deleted in the
        /// background. Returns the record as committed, with the size of its kept zip. Blocks.
        func commit(_ record: InstallRecord, fromPlatform: Bool, preview: Bool) throws(CacheError) -> InstallRecord {
            var committed = try cache.commit(stage: path, record: record)
            if fromPlatform {
                cache.noteInstalled(AppVersion(versionId: record.versionId, versionTag: record.versionTag), appId: appId, preview: preview, at: record.installedAt)
            }
            committed.zipBytes = cache.keptZipBytes(committed)
            if committed.zipBytes > 0 { cache.dropKeptZips(appId: appId, except: versionId, on: background) }
            return committed
        }

        /// After `repaired`, this version, was committed from its kept zip: gives the other versions that
        /// held one of the `damaged` files the repaired copy (see ``BundleCache/relinkRepaired(_:damaged:)``).
        /// Blocks.
        func relinkRepaired(_ repaired: InstallRecord, damaged: Set<ino_t>) {
            cache.relinkRepaired(repaired, damaged: damaged)
        }
    }

    /// Runs `body` holding the version's lock, with a fresh scratch folder and an empty stage folder in
    /// it. After a success, the scratch folder (with a replaced version in it) is moved to the trash and
    /// deleted on `background`. After a failure or a cancellation, the scratch folder and the folders
    /// this made are deleted before the error is thrown, so that the cache is exactly as it was.
    func withStage<T>(appId: String, versionId: String, background: BackgroundWork, _ body: (Stage) async throws -> T) async throws -> T {
        let created = try await executor.run { () throws -> [String] in
            let created = try prepare()
            sweep()
            return created
        }
        do {
            let lock = try await self.lock(appId: appId, versionId: versionId)
            defer { withExtendedLifetime(lock) {} }
            let scratch = try await executor.run { try freshScratch(appId: appId, versionId: versionId) }
            do {
                let stage = Stage(cache: self, appId: appId, versionId: versionId, scratch: scratch, background: background)
                try await executor.run { guard mkdir(stage.path, 0o755) == 0 else { throw CacheError.system(stage.path) } }
                let outcome = try await body(stage)
                try? await executor.runToCompletion { discard(scratch) }
                background.run(name: "miniapp.trash") { emptyTrash(orphans: true) }
                return outcome
            } catch {
                try? await executor.runToCompletion {
                    discard(scratch)
                    emptyTrash()
                }
                throw error
            }
        } catch {
            try? await executor.runToCompletion { removeIfEmpty(created) }
            throw error
        }
    }

    // MARK: Housekeeping

    /// Moves what killed processes left into the trash and empties it (``sweep()``, then
    /// ``emptyTrash(orphans:)`` with orphans), on `background`: off the path of the call that found it.
    func sweepLeftovers(on background: BackgroundWork) {
        background.run(name: "miniapp.sweep") {
            sweep()
            emptyTrash(orphans: true)
        }
    }

    // MARK: Behind the calls above

    /// Makes a fresh, empty scratch folder for an install of this version (the caller holds the lock),
    /// first discarding whatever a killed earlier attempt left there.
    private func freshScratch(appId: String, versionId: String) throws(CacheError) -> String {
        try Self.requireRealDirectory(temporaryRoot)
        let scratch = scratchDirectory(appId: appId, versionId: versionId)
        var info = stat()
        if lstat(scratch, &info) == 0 { discard(scratch) }
        if mkdir(scratch, 0o755) != 0 {
            // Another process's failed install may have just removed the empty tmp folder it had made.
            guard errno == ENOENT, mkdir(temporaryRoot, 0o755) == 0 || errno == EEXIST, mkdir(scratch, 0o755) == 0 else {
                throw .system(scratch)
            }
        }
        return scratch
    }

    /// Moves a finished staging folder (holding `bundle/` and `files.list`) into the version's place and
    /// writes its record last. The caller holds the version's lock and runs it on ``threadPool`` (it
    /// blocks); the stage sits in the install's scratch folder.
    ///
    /// A version that replaces another (a `--force` reinstall, a repair, what a killed install left) is
    /// made durable first, with one file-system sync, so that a power cut never trades a whole version for
    /// a torn one. A first install waits for no disk: its record names the boot it was written in
    /// (``InstallRecord/unsyncedBoot``), and a later boot checks every byte of it before any use (see
    /// ``check(_:thorough:)``). A power cut loses it at worst, never passes it off as whole.
    private func commit(stage: String, record: InstallRecord) throws(CacheError) -> InstallRecord {
        var record = record
        if let list = FileReading.contents(stage + "/files.list", followingLinks: false) { record.fileListDigest = SHA256Digest.hash(list).hexString }
        let directory = versionDirectory(appId: record.id, versionId: record.versionId)
        var info = stat()
        let replacing = lstat(directory, &info) == 0
        record.unsyncedBoot = replacing ? nil : Durability.currentBoot
        if record.unsyncedBoot == nil { try Durability.syncFileSystem(containing: stage) }
        let parent = (directory as NSString).deletingLastPathComponent
        let created = try makeVersionParents(parent)
        // A version installed again (--force) is moved aside, and back if the new one cannot be committed.
        // Aside means into this install's scratch folder (beside the stage), which the version lock
        // protects from other processes' sweeps and which is discarded with the scratch folder.
        var displaced: String?
        if replacing {
            let aside = (stage as NSString).deletingLastPathComponent + "/displaced"
            guard rename(directory, aside) == 0 else { throw .system(directory) }
            displaced = aside
        }
        func undo(_ error: CacheError) -> CacheError {
            if access(directory, F_OK) == 0 { rename(directory, trashDirectory + "/" + UUID().uuidString) }
            if let displaced { rename(displaced, directory) }
            if created.contains(namespaceDirectory) { unlink(namespaceDirectory + "/platform.json") }
            removeIfEmpty(created)
            return error
        }
        guard rename(stage, directory) == 0 else { throw undo(.system(directory)) }
        var committed = record
        committed.path = directory + "/bundle"
        do {
            try Durability.writeAtomically(
                try RecordCoding.storageEncoder().encode(committed), to: directory + "/record.json", durable: committed.unsyncedBoot == nil
            )
        } catch let error as CacheError {
            throw undo(error)
        } catch {
            throw undo(.foundation(directory + "/record.json", error))
        }
        return committed
    }

    /// Creates `bundles/<namespace>/<app-id>` as needed, with the namespace's `platform.json` (what
    /// lets other views find it), and returns the folders it created, parents first.
    private func makeVersionParents(_ appDirectory: String) throws(CacheError) -> [String] {
        var created: [String] = []
        for directory in [root + "/bundles", namespaceDirectory, appDirectory] {
            if mkdir(directory, 0o755) == 0 {
                created.append(directory)
            } else if errno != EEXIST {
                removeIfEmpty(created)
                throw .system(directory)
            } else {
                do {
                    try Self.requireRealDirectory(directory)
                } catch {
                    removeIfEmpty(created)
                    throw error
                }
            }
        }
        let description = namespaceDirectory + "/platform.json"
        if access(description, F_OK) != 0, let data = try? RecordCoding.encoder(pretty: true).encode(namespace) {
            // Whole or absent (written aside, then renamed), with no fsync: Foundation's atomic write
            // syncs, which put a wait for the disk into every first install into a namespace.
            try? Durability.writeAtomically(data, to: description, durable: false)
        }
        return created
    }

    /// Records a use of the version now, as the modification time of its `last-used` file (one system
    /// call, no rewrite of the record); a failure only loses the timestamp.
    @discardableResult
    private func touch(_ record: InstallRecord, at date: Date = Date()) -> InstallRecord {
        var updated = record
        updated.lastUsedAt = date
        let path = versionDirectory(appId: record.id, versionId: record.versionId) + "/last-used"
        let seconds = date.timeIntervalSince1970.rounded(.down)
        var times = [
            timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9)),
            timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9)),
        ]
        if utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) != 0 {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor >= 0 {
                futimens(descriptor, &times)
                close(descriptor)
            }
        }
        return updated
    }

    /// Whether `tmp/` or `trash/` hold anything: what a killed process may have left for ``sweep()``.
    private func hasLeftovers() -> Bool {
        [temporaryRoot, trashDirectory].contains { directory in
            guard let stream = opendir(directory) else { return false }
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { return true }
            }
            return false
        }
    }

    /// Deletes the kept zips of the versions of `appId` other than `versionId`: only the most recently
    /// installed version keeps its zip.
    private func dropKeptZips(appId: String, except versionId: String, on background: BackgroundWork?) {
        for record in records(appId: appId) where record.versionId != versionId && record.zipBytes > 0 {
            guard let path = keptZipPath(record) else { continue }
            if let background { discard(path, on: background) } else { unlink(path) }
        }
    }
}
