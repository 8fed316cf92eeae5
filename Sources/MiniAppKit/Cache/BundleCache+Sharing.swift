import Foundation
package import MiniAppCore

/// Change times vouched for after a version's `files.list` was written.
///
/// A hard link made or removed changes the linked file's change time, for every version that holds it.
/// When the cache itself does that (sharing a file with a new version, deleting an old version), or when
/// a quick check has hashed a file whose change time moved and found it intact, the new change time is
/// written to the version's `attested.list` (the format of `files.list`): the next quick check takes a
/// file or folder whose change time equals the attested one, with the same size and digest, as
/// unchanged, and stays quick.
struct Attestations: Sendable {
    var files: [String: BundleFile] = [:]
    var directories: [String: FileTimestamp] = [:]

    var isEmpty: Bool { files.isEmpty && directories.isEmpty }

    /// Whether `file`, whose change time now is `changedAt`, is attested unchanged.
    func vouches(for file: BundleFile, changedAt: FileTimestamp) -> Bool {
        guard let attested = files[file.path] else { return false }
        return attested.changedAt == changedAt && attested.size == file.size && attested.sha256 == file.sha256
    }

    /// These attestations with `newer` ones over them.
    func merged(with newer: Attestations) -> Attestations {
        Attestations(
            files: files.merging(newer.files) { _, new in new },
            directories: directories.merging(newer.directories) { _, new in new }
        )
    }
}

extension BundleCache {
    static let attestationsFile = "attested.list"

    /// The attestations kept for the version in `directory`.
    func attestations(in directory: String) -> Attestations {
        guard let bytes = FileReading.contents(directory + "/" + Self.attestationsFile, followingLinks: false),
              let list = BundleFileList(decoding: bytes) else { return Attestations() }
        return Attestations(
            files: Dictionary(list.files.map { ($0.path, $0) }, uniquingKeysWith: { _, last in last }),
            directories: Dictionary(list.directories.map { ($0.path, $0.changedAt) }, uniquingKeysWith: { _, last in last })
        )
    }

    /// Adds `newer` to the attestations of the version in `directory`; a failure (a read-only cache) only
    /// costs a hash next time. The version folder must be a real folder.
    func attest(_ newer: Attestations, in directory: String) {
        guard !newer.isEmpty, Self.isRealDirectory(directory) else { return }
        let all = attestations(in: directory).merged(with: newer)
        let list = BundleFileList(
            files: all.files.values.sorted { $0.path < $1.path },
            directories: all.directories.map { BundleDirectory(path: $0.key, changedAt: $0.value) }.sorted { $0.path < $1.path }
        )
        try? Durability.writeAtomically(list.encoded(), to: directory + "/" + Self.attestationsFile, durable: false)
    }

    // MARK: Kept zips

    /// Where the version of `record` keeps its zip: `<sha256>.zip` in the version folder.
    package func keptZipPath(_ record: InstallRecord) -> String? {
        guard record.sha256.utf8.count == 64, record.sha256.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return versionDirectory(appId: record.id, versionId: record.versionId) + "/" + record.sha256 + ".zip"
    }

    /// The size of the kept zip of `record`'s version, 0 when it keeps none.
    func keptZipBytes(_ record: InstallRecord) -> Int64 {
        var info = stat()
        guard let path = keptZipPath(record), lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return 0 }
        return Int64(info.st_size)
    }

    /// Checks the kept zip of `record`'s version again, on ``threadPool``: its SHA-256 must be the one
    /// installed and, when the version was verified, its recorded signature must verify with the key
    /// kept at install (no network) and one of `trustedKeys` when any are given. Returns `nil` when it
    /// passes, or what failed; throws ``CacheError/notCached(appId:versionId:)`` when no zip is kept.
    package func verifyKeptZip(_ record: InstallRecord, trustedKeys: [String] = []) async throws -> String? {
        guard record.zipBytes > 0, let path = keptZipPath(record) else { throw CacheError.notCached(appId: record.id, versionId: record.versionId) }
        let digest: [UInt8]
        do {
            // The cache's own file: a link planted in its place is not followed.
            digest = try await executor.run { try FileHashing.bundle(at: path, followingLinks: false).digest }
        } catch {
            return "it cannot be read"
        }
        guard digest.hexString == record.sha256 else { return "its SHA-256 is not the one installed" }
        guard record.signature == .verified else { return nil }
        let verifier = SignatureVerifier(
            trusted: try TrustedKeys(trustedKeys), keyStore: KeyStore(directory: root + "/keys/" + namespace.key, lifetime: .seconds(0)), platform: nil
        )
        let outcome = await verifier.check(
            signature: record.signatureValue, keyId: record.keyId, explicitKey: record.signerPublicKey, versionId: record.versionId, sha256: digest
        )
        return outcome.status == .verified ? nil : "its signature does not verify: \(outcome.error?.description ?? "unknown")"
    }

    /// Where the version of `record` keeps its zip, when it keeps one: what repairs it.
    func keptZip(of record: InstallRecord) -> String? {
        record.zipBytes > 0 ? keptZipPath(record) : nil
    }

    /// The kept zip of `appId`: the one of its most recently installed version that keeps one.
    func keptZip(appId: String) -> (record: InstallRecord, path: String)? {
        for record in records(appId: appId) where record.zipBytes > 0 {
            if let path = keptZipPath(record) { return (record, path) }
        }
        return nil
    }

    /// The files of the version of `record` that hold exactly what entries of a new zip hold: `copied`
    /// maps the local-header offset of each entry of the new zip copied whole from `zip`, the version's
    /// kept zip, to where those bytes start in it; the file the version's extraction made from those
    /// bytes holds what the new entry holds, while its change time is the one recorded (unchanged since
    /// it was hashed). The kept zip must be proven the one installed (its SHA-256) before this is used.
    func reusableFiles(of record: InstallRecord, keptZip zip: String, copied: [UInt64: UInt64], maxEntries: Int) -> [UInt64: ReusableFile] {
        let directory = versionDirectory(appId: record.id, versionId: record.versionId)
        // A version a later boot has not found whole yet may hold stale bytes under recorded change times.
        guard !copied.isEmpty, !record.needsBootCheck,
              let bytes = FileReading.contents(directory + "/files.list", followingLinks: false),
              record.fileListDigest == nil || SHA256Digest.hash(bytes).hexString == record.fileListDigest,
              let list = BundleFileList(decoding: bytes),
              let entries = try? ZipDirectory.listing(zip, maxEntries: maxEntries) else { return [:] }
        let files = Dictionary(list.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        // The kept zip's files, named as extraction named them, then matched one for one with the
        // version's files under the one top folder the extraction stripped, or none.
        var named: [(offset: UInt64, path: String, size: UInt64)] = []
        for entry in entries where !entry.name.hasSuffix("/") {
            guard let path = try? ArchivePath.path(of: entry.name) else { return [:] }
            if !ArchiveExtractor.isFinderMetadata(path, isDirectory: false) { named.append((entry.localHeaderOffset, path, entry.uncompressedSize)) }
        }
        let tops = named.compactMap { entry -> String? in
            let parts = entry.path.split(separator: "/")
            return parts.count == 2 && parts[1] == "index.html" ? parts[0] + "/" : nil
        }
        guard named.count == files.count, let top = ([""] + tops).first(where: { top in
            named.allSatisfy { $0.path.hasPrefix(top) && files[String($0.path.dropFirst(top.count))]?.size == Int64($0.size) }
        }) else { return [:] }
        let paths = Dictionary(named.map { ($0.offset, String($0.path.dropFirst(top.count))) }, uniquingKeysWith: { first, _ in first })
        let attested = attestations(in: directory)
        var reusable: [UInt64: ReusableFile] = [:]
        var info = stat()
        for (new, old) in copied {
            guard let path = paths[old], let file = files[path], file.size > 0 else { continue }
            let source = directory + "/bundle/" + path
            guard lstat(source, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == file.size else { continue }
            let now = FileTimestamp(info.st_ctim)
            guard file.changedAt == now || attested.vouches(for: file, changedAt: now) else { continue }
            reusable[new] = ReusableFile(source: source, size: file.size, sha256: file.sha256)
        }
        return reusable
    }

    // MARK: Shared files

    /// A file of a cached version that a new version may share.
    private struct Candidate {
        var directory: String
        var file: BundleFile
        var attested: BundleFile?
        var path: String { directory + "/bundle/" + file.path }
    }

    /// Every intact-listed file of the cached versions of `appId` other than `versionId`, by digest.
    private func candidates(appId: String, excluding versionId: String) -> [String: [Candidate]] {
        var bySha: [String: [Candidate]] = [:]
        for record in records(appId: appId) where record.versionId != versionId && !record.needsBootCheck {
            let directory = versionDirectory(appId: record.id, versionId: record.versionId)
            guard let bytes = FileReading.contents(directory + "/files.list", followingLinks: false),
                  record.fileListDigest == nil || SHA256Digest.hash(bytes).hexString == record.fileListDigest,
                  let list = BundleFileList(decoding: bytes) else { continue }
            let attested = attestations(in: directory)
            for file in list.files {
                bySha[file.sha256, default: []].append(Candidate(directory: directory, file: file, attested: attested.files[file.path]))
            }
        }
        return bySha
    }

    /// Hard-links each file of the staged bundle (`stage/bundle`) that has an identical copy in another
    /// cached version of `appId` to that copy, instead of keeping a second one; returns `files` with the
    /// change times the links gave them. A copy is only linked while its change time is the one its
    /// version recorded (it is unchanged since it was hashed). Where a link cannot be made (a link limit,
    /// another file system) the written file stays. The files at `linkedPaths` are links to another
    /// version's files already. The versions whose files were linked get their new change times attested.
    func shareFiles(stage: String, files: [BundleFile], linkedPaths: Set<String> = [], appId: String, versionId: String) -> [BundleFile] {
        let bySha = candidates(appId: appId, excluding: versionId)
        guard !bySha.isEmpty else { return files }
        var result = files
        var linked: [Int: ino_t] = [:]
        let temporary = stage + "/link.tmp"
        var info = stat()
        for (index, file) in files.enumerated() where file.size > 0 {
            if linkedPaths.contains(file.path) {
                if lstat(stage + "/bundle/" + file.path, &info) == 0 { linked[index] = info.st_ino }
                continue
            }
            guard let candidates = bySha[file.sha256] else { continue }
            for candidate in candidates where candidate.file.size == file.size {
                guard lstat(candidate.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == file.size else { continue }
                let now = FileTimestamp(info.st_ctim)
                guard candidate.file.changedAt == now || (candidate.attested.map { $0.changedAt == now && $0.sha256 == file.sha256 } ?? false) else { continue }
                if info.st_mode & 0o7777 != 0o444 { chmod(candidate.path, 0o444) }
                guard Self.replace(stage + "/bundle/" + file.path, withLinkTo: candidate.path, through: temporary) else { continue }
                linked[index] = info.st_ino
                break
            }
        }
        guard !linked.isEmpty else { return files }
        // The change times once every link is made: the new version's, and the ones to attest for the
        // versions that hold the same files.
        var changed: [ino_t: FileTimestamp] = [:]
        for (index, inode) in linked {
            guard lstat(stage + "/bundle/" + files[index].path, &info) == 0 else { continue }
            result[index].changedAt = FileTimestamp(info.st_ctim)
            changed[inode] = FileTimestamp(info.st_ctim)
        }
        var byVersion: [String: Attestations] = [:]
        for index in linked.keys {
            for candidate in bySha[files[index].sha256] ?? [] {
                guard lstat(candidate.path, &info) == 0, let time = changed[info.st_ino] else { continue }
                var file = candidate.file
                file.changedAt = time
                byVersion[candidate.directory, default: Attestations()].files[file.path] = file
            }
        }
        for (directory, attestations) in byVersion { attest(attestations, in: directory) }
        return result
    }

    /// Replaces the file at `path` by a hard link to `source`, made at `temporary` and renamed over it, so
    /// that `path` is never missing; false (and `path` untouched) when the link or the rename fails.
    /// `temporary` is only there when an earlier run left it, which one unlink settles.
    static func replace(_ path: String, withLinkTo source: String, through temporary: String) -> Bool {
        guard link(source, temporary) == 0 || (errno == EEXIST && unlink(temporary) == 0 && link(source, temporary) == 0) else { return false }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// After the version of `record` was repaired, gives every other cached version of its app that
    /// held one of the `damaged` files (by inode) the repaired copy instead, and attests the change.
    func relinkRepaired(_ record: InstallRecord, damaged: Set<ino_t>) {
        guard !damaged.isEmpty else { return }
        let directory = versionDirectory(appId: record.id, versionId: record.versionId)
        guard let bytes = FileReading.contents(directory + "/files.list", followingLinks: false),
              let list = BundleFileList(decoding: bytes) else { return }
        let repaired = Dictionary(list.files.map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
        var info = stat()
        for other in records(appId: record.id) where other.versionId != record.versionId {
            let otherDirectory = versionDirectory(appId: other.id, versionId: other.versionId)
            guard let otherBytes = FileReading.contents(otherDirectory + "/files.list", followingLinks: false),
                  let otherList = BundleFileList(decoding: otherBytes) else { continue }
            var attestations = Attestations()
            for file in otherList.files {
                let path = otherDirectory + "/bundle/" + file.path
                guard lstat(path, &info) == 0, damaged.contains(info.st_ino), let good = repaired[file.sha256] else { continue }
                guard Self.replace(path, withLinkTo: directory + "/bundle/" + good.path, through: otherDirectory + "/link.tmp") else { continue }
                if lstat(path, &info) == 0 {
                    var attested = file
                    attested.changedAt = FileTimestamp(info.st_ctim)
                    attestations.files[file.path] = attested
                    let folder = (file.path as NSString).deletingLastPathComponent
                    if lstat((path as NSString).deletingLastPathComponent, &info) == 0 {
                        attestations.directories[folder.isEmpty ? "." : folder] = FileTimestamp(info.st_ctim)
                    }
                }
            }
            attest(attestations, in: otherDirectory)
        }
    }
}

extension InstallRecord {
    /// The public key given with the bundle that its signature was verified with, if it came with one.
    var signerPublicKey: PublicKey? { signerKey.flatMap { try? PublicKey(pem: $0) } }
}
