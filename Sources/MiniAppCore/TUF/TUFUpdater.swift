package import Foundation

/// Where a TUF client reads a repository from: its metadata files and its targets, each by the name
/// the client workflow asks for. A file the repository does not have (`403`, `404`, no such file) is
/// `nil`; a file longer than `limit` throws ``TUFTooLong`` as soon as more than `limit` bytes arrived,
/// so an endless answer ends there. Any other failure (the network, a `500`) throws what the remote
/// throws: it is not a verdict on the metadata.
package protocol TUFRemote: Sendable {
    /// The metadata file `name` (`timestamp.json`, `3.root.json`, `7.snapshot.json`, ...).
    func metadata(_ name: String, limit: Int) async throws -> [UInt8]?
    /// The target file at `path`, relative to the targets' base (already prefixed with its hash when
    /// the repository uses consistent snapshots).
    func target(_ path: String, limit: Int) async throws -> [UInt8]?
}

/// A file longer than the client allowed: the answer is dropped at the first byte past `limit`.
package struct TUFTooLong: Error {
    package let limit: Int

    package init(limit: Int) {
        self.limit = limit
    }
}

/// The most a client reads of each metadata file whose length nothing trusted states, and how far it
/// follows a chain of roots or delegations: python-tuf's `UpdaterConfig` defaults.
package struct TUFLimits: Sendable {
    package var maxRootRotations = 256
    package var maxDelegations = 32
    package var rootBytes = 512_000
    package var timestampBytes = 16_384
    package var snapshotBytes = 2_000_000
    package var targetsBytes = 5_000_000

    package init() {}
}

/// A target as a trusted targets role lists it: its path, length, hashes and custom fields.
package struct TUFTarget: Sendable, Equatable {
    package let path: String
    package let length: Int
    package let hashes: [String: String]
    package let custom: JSONValue?

    init(path: String, document: JSONValue, role: String) throws(TUFError) {
        guard case .object(let fields) = document, let length = TUFSigned.integer(fields["length"]), length >= 0,
              case .object(let listed)? = fields["hashes"], !listed.isEmpty else {
            throw TUFError(role, "target \(path) needs a length and hashes")
        }
        var hashes: [String: String] = [:]
        for (algorithm, digest) in listed {
            guard case .string(let hex) = digest else { throw TUFError(role, "target \(path) has bad hashes") }
            hashes[algorithm] = hex.lowercased()
        }
        self.path = path
        self.length = length
        self.hashes = hashes
        self.custom = fields["custom"]
    }

    /// Where the target is fetched from, relative to the targets' base: with consistent snapshots, its
    /// file name prefixed with one of its hashes (SHA-256 when listed), as the specification's 5.7.3 says.
    package func remotePath(consistent: Bool) -> String {
        guard consistent, let hash = hashes["sha256"] ?? hashes.sorted(by: { $0.key < $1.key }).first?.value else { return path }
        guard let slash = path.lastIndex(of: "/") else { return hash + "." + path }
        return path[...slash] + hash + "." + path[path.index(after: slash)...]
    }

    /// Throws unless `bytes` have the listed length and every listed hash (an arbitrary file is refused).
    package func check(_ bytes: [UInt8]) throws(TUFError) {
        try TUFTrustedSet.check(bytes, against: TUFMetaFile(version: 1, length: length, hashes: hashes), role: "target \(path)")
    }

    /// Whether `bytes` are this target (a file downloaded before need not be fetched again).
    package func matches(_ bytes: [UInt8]) -> Bool { (try? check(bytes)) != nil }
}

/// The client workflow of The Update Framework (specification 1.0.x, section 5) over a folder of
/// trusted metadata and a ``TUFRemote``: it follows the root chain, takes the timestamp, the snapshot
/// and the targets through ``TUFTrustedSet``'s checks, keeps what it trusts in the folder (written
/// atomically, under the names python-tuf uses: `root.json`, `timestamp.json`, `<role>.json` with the
/// role name percent-encoded), finds a target through the delegations, and checks a downloaded target's
/// length and hashes. A ``TUFError`` is a security failure; other errors are the remote's or the disk's.
package struct TUFUpdater: Sendable {
    /// The folder of trusted metadata.
    package let folder: String
    package let remote: any TUFRemote
    package let limits: TUFLimits
    private let executor: BlockingExecutor
    /// What is trusted so far.
    package private(set) var trusted: TUFTrustedSet
    private var refreshed = false

    /// An updater trusting the `root.json` kept in `folder`, checked against its own keys; the clock
    /// is read once, now, for every expiry check of this updater (the specification's 5.1).
    package init(folder: String, remote: any TUFRemote, executor: BlockingExecutor, limits: TUFLimits = TUFLimits(), now: Date = Date()) async throws {
        let path = folder + "/root.json"
        let root = try await executor.run { () throws -> [UInt8] in
            switch FileReading.read(path, limit: limits.rootBytes) {
            case .contents(let bytes): return bytes
            case .missing: throw TUFError("root", "no trusted root is kept in \(folder) (initialize it first)")
            case .unreadable(EFBIG): throw TUFError("root", "the kept root is longer than \(limits.rootBytes) bytes")
            default: throw TUFError("root", "the kept root in \(folder) cannot be read")
            }
        }
        self.folder = folder
        self.remote = remote
        self.limits = limits
        self.executor = executor
        self.trusted = try TUFTrustedSet(root: root, now: now)
    }

    /// Makes `folder` (and its parents) and keeps `root` in it as the trusted root, once it is a root
    /// signed by a threshold of its own keys. Nothing is fetched.
    package static func initialize(folder: String, root: [UInt8], executor: BlockingExecutor) async throws {
        _ = try TUFTrustedSet(root: root, now: Date())
        try await executor.run {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Durability.writeAtomically(Data(root), to: folder + "/root.json", durable: true)
        }
    }

    /// Brings the top-level metadata up to date (5.3 to 5.6): every newer root in turn, then the
    /// timestamp, the snapshot and the top-level targets. Done once per updater; a later call does
    /// nothing, as the specification's one refresh per update cycle.
    package mutating func refresh() async throws {
        guard !refreshed else { return }
        try await updateRoots()
        try await updateTimestamp()
        try await updateSnapshot()
        _ = try await loadTargets("targets", delegator: "root")
        refreshed = true
    }

    /// The target at `path` as the first trusted targets role that lists it says (5.7: a preorder
    /// depth-first search of the delegations, stopping at a terminating role, at most
    /// ``TUFLimits/maxDelegations`` roles visited), or `nil` when none lists it. Refreshes first.
    package mutating func target(_ path: String) async throws -> TUFTarget? {
        try await refresh()
        var toVisit: [(role: String, delegator: String)] = [("targets", "root")]
        var visited: Set<String> = []
        var budget = limits.maxDelegations
        while budget > 0, let (role, delegator) = toVisit.popLast().map({ ($0.role, $0.delegator) }) {
            guard visited.insert(role + "\u{0}" + delegator).inserted else { continue }
            let signed = try await loadTargets(role, delegator: delegator)
            if case .object(let listed)? = signed.fields["targets"], let document = listed[path] {
                return try TUFTarget(path: path, document: document, role: role)
            }
            guard signed.fields["targets"] != nil else { throw TUFError(role, "it has no targets object") }
            budget -= 1
            let delegations = try trusted.delegations(of: role)
            var children: [(String, String)] = []
            for child in delegations?.roles ?? [] where child.covers(path) {
                children.append((child.name, role))
                if child.terminating {
                    toVisit.removeAll()
                    break
                }
            }
            toVisit.append(contentsOf: children.reversed())
        }
        return nil
    }

    /// The bytes of `target`, fetched (at most its length) and checked against its length and hashes.
    package func download(_ target: TUFTarget) async throws -> [UInt8] {
        let consistent = Self.consistentSnapshot(trusted.root)
        let bytes: [UInt8]?
        do {
            bytes = try await remote.target(target.remotePath(consistent: consistent), limit: target.length)
        } catch is TUFTooLong {
            throw TUFError("target \(target.path)", "it is longer than the \(target.length) bytes listed (endless data?)")
        }
        guard let bytes else { throw TUFError("target \(target.path)", "the repository does not have it") }
        try target.check(bytes)
        return bytes
    }

    // MARK: The workflow's steps

    /// 5.3: each next root (`N.root.json`) until the repository has none, kept as it is trusted; then
    /// the final root's expiry, and the kept timestamp and snapshot dropped when their keys changed.
    private mutating func updateRoots() async throws {
        let keysBefore = (trusted.roleKeys("timestamp"), trusted.roleKeys("snapshot"))
        var version = trusted.root.version + 1
        let end = version + limits.maxRootRotations
        while version < end {
            guard let bytes = try await fetchMetadata("\(version).root.json", role: "root", limit: limits.rootBytes) else { break }
            try trusted.updateRoot(bytes)
            try await keep("root", bytes)
            version += 1
        }
        if trusted.rootExpired { throw TUFError("root", "it expired (freeze attack?)") }
        if keysBefore != (trusted.roleKeys("timestamp"), trusted.roleKeys("snapshot")) {
            let folder = folder
            try await executor.run {
                for name in ["timestamp.json", "snapshot.json"] where unlink(folder + "/" + name) != 0 && errno != ENOENT {
                    throw CacheError.system(folder + "/" + name)
                }
            }
        }
    }

    /// 5.4: the kept timestamp (when it still verifies) guards the new one against rollback.
    private mutating func updateTimestamp() async throws {
        if let kept = try await kept("timestamp", limit: limits.timestampBytes) { _ = try? trusted.updateTimestamp(kept) }
        guard let bytes = try await fetchMetadata("timestamp.json", role: "timestamp", limit: limits.timestampBytes) else {
            throw TUFError("timestamp", "the repository has none")
        }
        if try trusted.updateTimestamp(bytes) { try await keep("timestamp", bytes) }
    }

    /// 5.5: the kept snapshot when it is the one the timestamp names, else the repository's.
    private mutating func updateSnapshot() async throws {
        if let kept = try await kept("snapshot", limit: limits.snapshotBytes), (try? trusted.updateSnapshot(kept, trusted: true)) != nil { return }
        let named = try trusted.timestampSnapshotMeta
        let name = Self.consistentSnapshot(trusted.root) ? "\(named.version).snapshot.json" : "snapshot.json"
        guard let bytes = try await fetchMetadata(name, role: "snapshot", limit: named.length ?? limits.snapshotBytes) else {
            throw TUFError("snapshot", "the repository does not have the version the timestamp names")
        }
        try trusted.updateSnapshot(bytes)
        try await keep("snapshot", bytes)
    }

    /// 5.6 and 5.7.4: the targets role `role` as `delegator` delegates it. One already trusted is checked
    /// again against this delegator's keys for it; else the kept copy when it is the version the snapshot
    /// names, else the repository's.
    private mutating func loadTargets(_ role: String, delegator: String) async throws -> TUFSigned {
        if role == "targets", delegator == "root", let targets = trusted.targets { return targets }
        if delegator != "root", let signed = trusted.delegatedTargets(role) {
            try trusted.recheck(role: role, delegator: delegator)
            return signed
        }
        if let kept = try await kept(role, limit: limits.targetsBytes), (try? update(role, kept, delegator: delegator)) != nil {
            return try signedTargets(role)
        }
        guard let named = try trusted.snapshotMeta(role + ".json") else { throw TUFError(role, "the snapshot does not name it") }
        let file = Self.quote(role) + ".json"
        let name = Self.consistentSnapshot(trusted.root) ? "\(named.version).\(file)" : file
        guard let bytes = try await fetchMetadata(name, role: role, limit: named.length ?? limits.targetsBytes) else {
            throw TUFError(role, "the repository does not have the version the snapshot names")
        }
        try update(role, bytes, delegator: delegator)
        try await keep(role, bytes)
        return try signedTargets(role)
    }

    private mutating func update(_ role: String, _ bytes: [UInt8], delegator: String) throws(TUFError) {
        if delegator == "root" {
            guard role == "targets" else { throw TUFError(role, "only targets is delegated by the root") }
            try trusted.updateTargets(bytes)
        } else {
            try trusted.updateDelegatedTargets(bytes, role: role, delegator: delegator)
        }
    }

    private func signedTargets(_ role: String) throws(TUFError) -> TUFSigned {
        guard let signed = role == "targets" ? trusted.targets : trusted.delegatedTargets(role) else { throw TUFError(role, "it is not trusted") }
        return signed
    }

    // MARK: Files

    /// The metadata file `name` from the remote, a too long one told as `role`'s failure.
    private func fetchMetadata(_ name: String, role: String, limit: Int) async throws -> [UInt8]? {
        do {
            return try await remote.metadata(name, limit: limit)
        } catch is TUFTooLong {
            throw TUFError(role, "it is longer than the \(limit) bytes allowed (endless data?)")
        }
    }

    /// The kept copy of `role`'s metadata, or `nil` when there is none or it cannot be read (it is
    /// then fetched again: a kept copy is only a shortcut and a guard against rollback).
    private func kept(_ role: String, limit: Int) async throws -> [UInt8]? {
        let path = folder + "/" + Self.quote(role) + ".json"
        return try await executor.run { FileReading.contents(path, limit: limit) }
    }

    /// Keeps `bytes` as `role`'s trusted metadata, replacing the file at once.
    private func keep(_ role: String, _ bytes: [UInt8]) async throws {
        let path = folder + "/" + Self.quote(role) + ".json"
        try await executor.run { try Durability.writeAtomically(Data(bytes), to: path, durable: true) }
    }

    /// Whether `root` asks for consistent snapshots (files named with their version or hash).
    static func consistentSnapshot(_ root: TUFSigned) -> Bool {
        if case .bool(true)? = root.fields["consistent_snapshot"] { return true }
        return false
    }

    /// `name` percent-encoded with no character left as it is but letters, digits and `_.-~`, as
    /// python-tuf encodes role names (and target paths for local files): `a/b` becomes `a%2Fb`, so
    /// no role name can reach outside the folder.
    package static func quote(_ name: String) -> String {
        var quoted = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "~"):
                quoted.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                quoted += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return quoted
    }
}
