package import Foundation
internal import CMiniAppOpenSSL

/// Why metadata is not trusted: the role and the check that failed, in one line. Every one is a
/// security failure; nothing it concerns is used.
package struct TUFError: CategorizedError, Equatable {
    package let role: String
    package let check: String

    package init(_ role: String, _ check: String) {
        self.role = role
        self.check = check
    }

    /// A security failure: the update channel's metadata or a target is not to be trusted.
    package var category: ErrorCategory { .badData }

    /// `TUF <role> metadata: <check>`, or `TUF target <path>: <check>` for a target file.
    package var description: String { role.hasPrefix("target ") ? "TUF \(role): \(check)" : "TUF \(role) metadata: \(check)" }
}

/// A role's keys and how many of them must sign.
package struct TUFRoleKeys: Sendable, Equatable {
    package let keyIds: [String]
    package let threshold: Int
}

/// What one metadata file says of another (`meta` of a timestamp or a snapshot): its version, and
/// optionally its length and hashes.
package struct TUFMetaFile: Sendable, Equatable {
    package let version: Int
    package let length: Int?
    package let hashes: [String: String]
}

/// The fields every role's `signed` object has, read strictly.
package struct TUFSigned: Sendable {
    package let type: String
    package let version: Int
    package let expires: Date
    package let fields: [String: JSONValue]

    init(_ envelope: TUFEnvelope, role: String, type: String) throws(TUFError) {
        guard case .object(let fields) = envelope.signed else { throw TUFError(role, "the signed part is not an object") }
        guard case .string(let found)? = fields["_type"], found == type else { throw TUFError(role, "its _type is not \(type)") }
        guard case .string(let spec)? = fields["spec_version"], spec.split(separator: ".").first == "1" else {
            throw TUFError(role, "its spec_version is not 1.x")
        }
        guard let version = Self.integer(fields["version"]), version >= 1 else { throw TUFError(role, "its version is not a positive integer") }
        guard case .string(let text)? = fields["expires"], let expires = Self.date(text) else { throw TUFError(role, "its expires is not a UTC date") }
        self.type = type
        self.version = version
        self.expires = expires
        self.fields = fields
    }

    static func integer(_ value: JSONValue?) -> Int? {
        guard case .number(let number)? = value, number.rounded(.towardZero) == number, abs(number) < 9e15 else { return nil }
        return Int(number)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, as the specification writes dates.
    static func date(_ text: String) -> Date? {
        text.utf8.count == 20 ? RecordCoding.parse(text) : nil
    }

    /// `meta` (of a timestamp or a snapshot): each file's version, length and hashes.
    func meta(role: String) throws(TUFError) -> [String: TUFMetaFile] {
        guard case .object(let entries)? = fields["meta"] else { throw TUFError(role, "it has no meta object") }
        var meta: [String: TUFMetaFile] = [:]
        for (name, entry) in entries {
            guard case .object(let parts) = entry, let version = Self.integer(parts["version"]), version >= 1 else {
                throw TUFError(role, "its meta entry \(name) has no positive version")
            }
            var length: Int?
            if let value = parts["length"] {
                guard let read = Self.integer(value), read >= 0 else { throw TUFError(role, "its meta entry \(name) has a bad length") }
                length = read
            }
            var hashes: [String: String] = [:]
            if let value = parts["hashes"] {
                guard case .object(let listed) = value, !listed.isEmpty else { throw TUFError(role, "its meta entry \(name) has bad hashes") }
                for (algorithm, digest) in listed {
                    guard case .string(let hex) = digest else { throw TUFError(role, "its meta entry \(name) has bad hashes") }
                    hashes[algorithm] = hex.lowercased()
                }
            }
            meta[name] = TUFMetaFile(version: version, length: length, hashes: hashes)
        }
        return meta
    }
}

/// The metadata a client trusts, and the checks of The Update Framework's client workflow
/// (specification 1.0.x, section 5) that let new metadata in: the root chain (each new root signed by
/// the old root's keys and its own, one version up), the timestamp, the snapshot, and the top-level
/// targets, each signed by its threshold of keys, never rolled back, consistent with what named it, and
/// not expired. It makes no request: a caller fetches, this decides. As python-tuf's
/// `TrustedMetadataSet`, from which the order of checks is taken; its messages are this project's.
package struct TUFTrustedSet: Sendable {
    package private(set) var root: TUFSigned
    package private(set) var timestamp: TUFSigned?
    package private(set) var snapshot: TUFSigned?
    package private(set) var targets: TUFSigned?
    /// The trusted root's keys, by id.
    package private(set) var rootKeys: [String: TUFKey]
    private var rootRoles: [String: TUFRoleKeys]
    /// The delegated targets roles trusted so far, by name, with what they were read from (a later
    /// lookup through another delegator checks them again).
    var delegated: [String: DelegatedRole] = [:]

    struct DelegatedRole: Sendable {
        let signed: TUFSigned
        let envelope: TUFEnvelope
    }
    /// The time checks compare with: the start of the refresh, as the specification asks.
    package let now: Date

    /// Trusts `bytes` as the root, checked against its own keys only (it is the trust anchor).
    package init(root bytes: [UInt8], now: Date = Date()) throws(TUFError) {
        let (root, keys, roles) = try Self.readRoot(bytes)
        try Self.require(signedBy: roles["root"], keys: keys, envelope: TUFEnvelope.read(bytes, role: "root"), role: "root")
        self.root = root
        self.rootKeys = keys
        self.rootRoles = roles
        self.now = now
    }

    /// Whether the root in force has expired: checked once the chain of roots is followed.
    package var rootExpired: Bool { root.expires <= now }

    /// Takes `bytes` as the next root: signed by a threshold of the trusted root's root keys and of
    /// its own, one version above. Expiry is not checked here (a chain passes through expired roots).
    package mutating func updateRoot(_ bytes: [UInt8]) throws(TUFError) {
        guard timestamp == nil else { throw TUFError("root", "cannot update the root after the timestamp") }
        let envelope = try TUFEnvelope.read(bytes, role: "root")
        try Self.require(signedBy: rootRoles["root"], keys: rootKeys, envelope: envelope, role: "root", by: "the trusted root's keys")
        let (next, keys, roles) = try Self.readRoot(bytes)
        guard next.version == root.version + 1 else {
            throw TUFError("root", "version \(next.version) does not follow the trusted version \(root.version)")
        }
        try Self.require(signedBy: roles["root"], keys: keys, envelope: envelope, role: "root", by: "its own keys")
        root = next
        rootKeys = keys
        rootRoles = roles
    }

    /// Takes `bytes` as the timestamp. `false` when it is the same version as the trusted one (kept).
    @discardableResult
    package mutating func updateTimestamp(_ bytes: [UInt8]) throws(TUFError) -> Bool {
        guard !rootExpired else { throw TUFError("root", "it expired (freeze attack?)") }
        guard snapshot == nil else { throw TUFError("timestamp", "cannot update the timestamp after the snapshot") }
        let envelope = try TUFEnvelope.read(bytes, role: "timestamp")
        try Self.require(signedBy: rootRoles["timestamp"], keys: rootKeys, envelope: envelope, role: "timestamp")
        let next = try TUFSigned(envelope, role: "timestamp", type: "timestamp")
        let meta = try next.meta(role: "timestamp")
        guard meta.count == 1, let snapshotMeta = meta["snapshot.json"] else { throw TUFError("timestamp", "its meta must name snapshot.json alone") }
        if let timestamp {
            guard next.version >= timestamp.version else {
                throw TUFError("timestamp", "version \(next.version) is lower than the trusted \(timestamp.version) (rollback)")
            }
            if next.version == timestamp.version { return false }
            let trusted = try timestamp.meta(role: "timestamp")["snapshot.json"]?.version ?? 0
            guard snapshotMeta.version >= trusted else {
                throw TUFError("timestamp", "it names snapshot version \(snapshotMeta.version), lower than the trusted \(trusted) (rollback)")
            }
        }
        timestamp = next
        guard next.expires > now else { throw TUFError("timestamp", "it expired (freeze attack?)") }
        return true
    }

    /// Takes `bytes` as the snapshot the unexpired timestamp names: its length and hashes (unless
    /// `trusted`, for the copy a client kept itself), the root's snapshot keys, and no file it lists
    /// rolled back from the snapshot trusted before. It is then trusted even when ``checkFinalSnapshot()``
    /// (its version against the timestamp's, its expiry) fails, as python-tuf does: a kept snapshot that
    /// is out of date still guards the next one against rollback.
    package mutating func updateSnapshot(_ bytes: [UInt8], trusted: Bool = false) throws(TUFError) {
        guard let timestamp else { throw TUFError("snapshot", "no timestamp names it") }
        guard targets == nil else { throw TUFError("snapshot", "cannot update the snapshot after the targets") }
        guard timestamp.expires > now else { throw TUFError("timestamp", "it expired (freeze attack?)") }
        let named = try timestampSnapshotMeta
        if !trusted { try Self.check(bytes, against: named, role: "snapshot") }
        let envelope = try TUFEnvelope.read(bytes, role: "snapshot")
        try Self.require(signedBy: rootRoles["snapshot"], keys: rootKeys, envelope: envelope, role: "snapshot")
        let next = try TUFSigned(envelope, role: "snapshot", type: "snapshot")
        if let before = snapshot {
            let listed = try next.meta(role: "snapshot")
            for (name, old) in try before.meta(role: "snapshot") {
                guard let new = listed[name] else { throw TUFError("snapshot", "it no longer lists \(name) (rollback)") }
                guard new.version >= old.version else {
                    throw TUFError("snapshot", "it lists \(name) version \(new.version), lower than the trusted \(old.version) (rollback)")
                }
            }
        }
        snapshot = next
        try checkFinalSnapshot()
    }

    /// The trusted snapshot is the version the timestamp names, and not expired.
    package func checkFinalSnapshot() throws(TUFError) {
        guard let snapshot else { throw TUFError("snapshot", "it is not trusted") }
        guard snapshot.expires > now else { throw TUFError("snapshot", "it expired (freeze attack?)") }
        let named = try timestampSnapshotMeta
        guard snapshot.version == named.version else {
            throw TUFError("snapshot", "version \(snapshot.version) is not the \(named.version) the timestamp names (mix and match?)")
        }
    }

    /// What the trusted timestamp says of `snapshot.json`.
    package var timestampSnapshotMeta: TUFMetaFile {
        get throws(TUFError) {
            guard let timestamp else { throw TUFError("timestamp", "it is not trusted") }
            guard let named = try timestamp.meta(role: "timestamp")["snapshot.json"] else { throw TUFError("timestamp", "its meta must name snapshot.json alone") }
            return named
        }
    }

    /// What the trusted snapshot says of the metadata file `name` (`targets.json`, `<role>.json`).
    package func snapshotMeta(_ name: String) throws(TUFError) -> TUFMetaFile? {
        guard let snapshot else { return nil }
        return try snapshot.meta(role: "snapshot")[name]
    }

    /// The keys and threshold the trusted root gives the top-level `role`.
    package func roleKeys(_ role: String) -> TUFRoleKeys? { rootRoles[role] }

    /// Takes `bytes` as the top-level targets the snapshot names: length and hashes when listed, the
    /// root's targets keys, the version, and expiry.
    package mutating func updateTargets(_ bytes: [UInt8]) throws(TUFError) {
        guard let snapshot else { throw TUFError("targets", "no snapshot names it") }
        try checkFinalSnapshot()
        guard let named = try snapshot.meta(role: "snapshot")["targets.json"] else { throw TUFError("targets", "the snapshot does not name it") }
        let next = try readNamed(bytes, as: "targets", named: named, by: "snapshot")
        targets = next
        guard next.expires > now else { throw TUFError("targets", "it expired (freeze attack?)") }
    }

    // MARK: Checks

    /// `bytes` as the top-level `role` that `namer`'s `named` entry describes: its length and hashes, a
    /// threshold of the root's keys for it, and the version named.
    private func readNamed(_ bytes: [UInt8], as role: String, named: TUFMetaFile, by namer: String) throws(TUFError) -> TUFSigned {
        try Self.check(bytes, against: named, role: role)
        let envelope = try TUFEnvelope.read(bytes, role: role)
        try Self.require(signedBy: rootRoles[role], keys: rootKeys, envelope: envelope, role: role)
        let next = try TUFSigned(envelope, role: role, type: role)
        guard next.version == named.version else {
            throw TUFError(role, "version \(next.version) is not the \(named.version) the \(namer) names (mix and match?)")
        }
        return next
    }

    private static func readRoot(_ bytes: [UInt8]) throws(TUFError) -> (TUFSigned, [String: TUFKey], [String: TUFRoleKeys]) {
        let root = try TUFSigned(TUFEnvelope.read(bytes, role: "root"), role: "root", type: "root")
        guard case .object(let keyDocuments)? = root.fields["keys"], case .object(let roleDocuments)? = root.fields["roles"] else {
            throw TUFError("root", "it has no keys or roles")
        }
        // A key this client cannot use stays out: its signatures count for nothing.
        var keys: [String: TUFKey] = [:]
        for (keyId, document) in keyDocuments { keys[keyId] = try? TUFKey(document) }
        var roles: [String: TUFRoleKeys] = [:]
        for name in ["root", "targets", "snapshot", "timestamp"] {
            guard case .object(let role)? = roleDocuments[name], case .array(let ids)? = role["keyids"],
                  let threshold = TUFSigned.integer(role["threshold"]), threshold >= 1 else {
                throw TUFError("root", "its \(name) role has no keyids or no positive threshold")
            }
            let keyIds = ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
            guard keyIds.count == ids.count, Set(keyIds).count == keyIds.count else { throw TUFError("root", "its \(name) role lists a key id twice") }
            roles[name] = TUFRoleKeys(keyIds: keyIds, threshold: threshold)
        }
        return (root, keys, roles)
    }

    static func require(signedBy role: TUFRoleKeys?, keys: [String: TUFKey], envelope: TUFEnvelope, role name: String, by whom: String? = nil) throws(TUFError) {
        guard let role else { throw TUFError(name, "no keys are trusted for it") }
        let signers = envelope.signers(among: role.keyIds, keys: keys)
        guard signers.count >= role.threshold else {
            throw TUFError(name, "\(signers.count) of the \(role.threshold) signatures needed\(whom.map { " from \($0)" } ?? "") verify")
        }
    }

    /// `bytes` against the length and hashes `named` lists (an arbitrary or endless file is refused).
    static func check(_ bytes: [UInt8], against named: TUFMetaFile, role: String) throws(TUFError) {
        if let length = named.length, bytes.count != length {
            throw TUFError(role, "it is \(bytes.count) bytes, not the \(length) listed")
        }
        for (algorithm, expected) in named.hashes {
            guard let digest = digest(algorithm, bytes) else { throw TUFError(role, "hash algorithm \(algorithm) is not supported") }
            guard digest == expected else { throw TUFError(role, "its \(algorithm) is not the one listed") }
        }
    }

    /// The hex digest of `bytes` by `algorithm` (`sha256`, `sha512`); `nil` for another.
    package static func digest(_ algorithm: String, _ bytes: [UInt8]) -> String? {
        let md: OpaquePointer?
        switch algorithm {
        case "sha256": md = EVP_sha256()
        case "sha512": md = EVP_sha512()
        default: return nil
        }
        var output = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &output, &length, md, nil) == 1 else {
            _ = OpenSSLError.drain()
            return nil
        }
        return Array(output.prefix(Int(length))).hexString
    }
}

extension TUFEnvelope {
    /// The envelope in `bytes`, a malformed one told as `role`'s failure.
    static func read(_ bytes: [UInt8], role: String) throws(TUFError) -> TUFEnvelope {
        do {
            return try TUFEnvelope(bytes)
        } catch {
            throw TUFError(role, error.description)
        }
    }
}
