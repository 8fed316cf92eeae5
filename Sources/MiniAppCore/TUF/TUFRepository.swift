package import Foundation

/// Why a repository operation was not done; nothing was written.
package struct TUFRepositoryError: CategorizedError, Equatable {
    package let description: String
    /// What was wrong: the keys or values given (usage, the default), the repository's own files (bad
    /// data), or the disk (local I/O).
    package let category: ErrorCategory

    package init(_ description: String, category: ErrorCategory = .usage) {
        self.description = description
        self.category = category
    }
}

/// A TUF repository in a folder, as a registry keeps one: `metadata/` holds what clients fetch
/// (`N.root.json`, `N.targets.json`, `N.<role>.json`, `N.snapshot.json`, `timestamp.json`: consistent
/// snapshots, each version a file of its own, so any static server can serve them), `targets/` the
/// target files named `<folder>/<sha256>.<name>`.
///
/// Every operation reads the newest metadata, changes it, signs it with the keys it is given and
/// writes new versions: the roles changed first, then the snapshot, then the timestamp, which is
/// replaced in one rename, so a client never sees half an update. What it writes is checked first as
/// a client checks it (a root the previous root's keys would not accept, or metadata short of its
/// threshold, is refused before anything is written). The caller holds the registry's lock.
package struct TUFRepository: Sendable {
    /// The folder holding `metadata/` and `targets/`.
    package let folder: String
    /// How long each role's metadata is valid once signed.
    package var lifetimes = Lifetimes()
    /// The time each operation signs at.
    package var now: @Sendable () -> Date = { Date() }

    /// How long metadata stays valid once signed: python-tuf's examples' periods.
    package struct Lifetimes: Sendable {
        package var root: TimeInterval = 365 * 86_400
        package var targets: TimeInterval = 90 * 86_400
        package var snapshot: TimeInterval = 7 * 86_400
        package var timestamp: TimeInterval = 86_400

        package init() {}

        func of(_ role: String) -> TimeInterval {
            switch role {
            case "root": root
            case "snapshot": snapshot
            case "timestamp": timestamp
            default: targets
            }
        }
    }

    package static let topLevelRoles = ["root", "targets", "snapshot", "timestamp"]
    package static let specVersion = "1.0.31"

    package var metadataFolder: String { folder + "/metadata" }
    package var targetsFolder: String { folder + "/targets" }

    package init(folder: String) {
        self.folder = folder
    }

    /// Whether `folder` holds a repository (its first root).
    package var exists: Bool { FileManager.default.fileExists(atPath: metadataFolder + "/1.root.json") }

    // MARK: Operations

    /// Makes the repository: a root listing `keys` for each top-level role with `thresholds` (1 where
    /// not given), and empty targets, a snapshot and a timestamp, each signed by those of `signers` it lists.
    package func create(keys: [String: [JSONValue]], thresholds: [String: Int] = [:], signers: [TUFSigner]) throws {
        guard !exists else { throw TUFRepositoryError("\(folder) already holds a TUF repository") }
        var root: [String: JSONValue] = ["_type": .string("root"), "consistent_snapshot": .bool(true), "keys": .object([:]), "roles": .object([:])]
        for role in Self.topLevelRoles {
            let listed = keys[role] ?? []
            guard !listed.isEmpty else { throw TUFRepositoryError("the \(role) role needs at least one key") }
            for key in listed { try Self.addKey(key, to: role, in: &root) }
            try Self.setThreshold(thresholds[role] ?? 1, of: role, in: &root)
        }
        let rootBytes = try signed(root, role: "root", version: 1, by: Self.pick(signers, "root", in: root))
        _ = try TUFTrustedSet(root: rootBytes, now: now())
        var changes = Changes(root: rootBytes)
        changes.roles["targets"] = try signed(["_type": .string("targets"), "targets": .object([:])], role: "targets", version: 1, by: Self.pick(signers, "targets", in: root))
        try finish(changes, signers: signers)
    }

    /// Adds `key` to the top-level `role` in a new root, signed by the `signers` the current or the new
    /// root lists for the root (a threshold of each is needed); the roles the change concerns are signed
    /// again by those of `signers` listed for them.
    package func addKey(_ key: JSONValue, to role: String, signers: [TUFSigner]) throws {
        try changeRoot(signers: signers) { root throws(TUFRepositoryError) in try Self.addKey(key, to: role, in: &root) }
    }

    /// Takes the key `keyId` from the top-level `role` in a new root (a key no role lists any more
    /// leaves the root's keys).
    package func revokeKey(_ keyId: String, from role: String, signers: [TUFSigner]) throws {
        try changeRoot(signers: signers) { root throws(TUFRepositoryError) in
            guard case .object(var roles)? = root["roles"], case .object(var entry)? = roles[role], case .array(let ids)? = entry["keyids"] else {
                throw TUFRepositoryError("the root has no \(role) role")
            }
            guard ids.contains(.string(keyId)) else { throw TUFRepositoryError("the \(role) role has no key \(keyId)") }
            let kept = ids.filter { $0 != .string(keyId) }
            guard !kept.isEmpty else { throw TUFRepositoryError("the \(role) role's last key cannot be revoked: add its successor first") }
            entry["keyids"] = .array(kept)
            roles[role] = .object(entry)
            root["roles"] = .object(roles)
            let stillListed = roles.values.contains { if case .object(let other) = $0, case .array(let ids)? = other["keyids"] { ids.contains(.string(keyId)) } else { false } }
            if !stillListed, case .object(var keys)? = root["keys"] {
                keys[keyId] = nil
                root["keys"] = .object(keys)
            }
        }
    }

    /// Sets how many of the top-level `role`'s keys must sign it, in a new root.
    package func setThreshold(_ threshold: Int, of role: String, signers: [TUFSigner]) throws {
        try changeRoot(signers: signers) { root throws(TUFRepositoryError) in try Self.setThreshold(threshold, of: role, in: &root) }
    }

    /// Signs the same root again as a new version with a new expiry.
    package func renewRoot(signers: [TUFSigner]) throws {
        try changeRoot(signers: signers) { _ throws(TUFRepositoryError) in }
    }

    /// Lets the top-level targets delegate the target paths matching `paths` to the role `name`,
    /// signed by `threshold` of `keys`; its targets are then added by ``addTarget(_:file:custom:role:signers:)``
    /// with those keys. An existing delegation of that name is replaced.
    package func delegate(_ name: String, paths: [String], keys: [JSONValue], threshold: Int = 1, terminating: Bool = true,
                          signers: [TUFSigner]) throws {
        guard !Self.topLevelRoles.contains(name), !name.isEmpty else { throw TUFRepositoryError("\(name) cannot name a delegated role") }
        guard threshold >= 1, threshold <= keys.count else { throw TUFRepositoryError("a threshold of \(threshold) needs as many keys, not \(keys.count)") }
        guard !paths.isEmpty else { throw TUFRepositoryError("a delegation needs at least one path pattern") }
        var targets = try newest("targets").signed
        var delegations: [String: JSONValue] = if case .object(let found)? = targets["delegations"] { found } else { ["keys": .object([:]), "roles": .array([])] }
        guard case .object(var delegatedKeys)? = delegations["keys"], case .array(var roles)? = delegations["roles"] else {
            throw TUFRepositoryError("the targets' delegations are malformed")
        }
        var keyIds: [JSONValue] = []
        for key in keys {
            let id = try Self.keyId(key)
            delegatedKeys[id] = key
            if !keyIds.contains(.string(id)) { keyIds.append(.string(id)) }
        }
        roles.removeAll { if case .object(let role) = $0, role["name"] == .string(name) { true } else { false } }
        roles.append(.object([
            "name": .string(name), "keyids": .array(keyIds), "threshold": .number(Double(threshold)), "terminating": .bool(terminating),
            "paths": .array(paths.map { .string($0) }),
        ]))
        // Keys no delegation lists any more leave.
        let listed = Set(roles.flatMap { role -> [String] in
            guard case .object(let fields) = role, case .array(let ids)? = fields["keyids"] else { return [] }
            return ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
        })
        delegatedKeys = delegatedKeys.filter { listed.contains($0.key) }
        delegations["keys"] = .object(delegatedKeys)
        delegations["roles"] = .array(roles)
        targets["delegations"] = .object(delegations)
        var changes = Changes()
        changes.roles["targets"] = try signed(targets, role: "targets", version: newest("targets").version + 1, by: Self.pick(signers, "targets", in: newest("root").signed))
        try finish(changes, signers: signers)
    }

    /// Adds (or replaces) the target `path` in `role` (`targets` or a delegated role): the file at `file`
    /// is linked (else copied) into `targets/` under its hash, and `custom` recorded with its length and
    /// hashes; `role`, the snapshot and the timestamp are signed by those of `signers` listed for them.
    package func addTarget(_ path: String, file: String, custom: JSONValue? = nil, role: String = "targets", signers: [TUFSigner]) throws {
        try Self.checkTargetPath(path)
        guard let bytes = FileReading.contents(file, limit: .max) else { throw TUFRepositoryError("\(file) cannot be read") }
        let digest = SHA256Digest.hash(bytes).hexString
        let slash = path.lastIndex(of: "/")
        let folderPart = slash.map { String(path[..<$0]) }
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let destinationFolder = targetsFolder + (folderPart.map { "/" + $0 } ?? "")
        let destination = destinationFolder + "/" + digest + "." + name
        var document: [String: JSONValue]
        var version = 1
        if let current = try? newest(role) {
            document = current.signed
            version = current.version + 1
        } else {
            guard role != "targets" else { throw TUFRepositoryError("the repository has no targets metadata") }
            document = ["_type": .string("targets"), "targets": .object([:])]
        }
        guard case .object(var targets)? = document["targets"] else { throw TUFRepositoryError("\(role) has no targets object") }
        var entry: [String: JSONValue] = ["length": .number(Double(bytes.count)), "hashes": .object(["sha256": .string(digest)])]
        if let custom { entry["custom"] = custom }
        targets[path] = .object(entry)
        document["targets"] = .object(targets)
        var changes = Changes()
        let roleSigners = role == "targets" ? try Self.pick(signers, "targets", in: newest("root").signed) : try delegatedSigners(signers, role)
        changes.roles[role] = try signed(document, role: role, version: version, by: roleSigners)
        if role != "targets" { try checkDelegated(role, changes.roles[role]!, targets: try newest("targets").signed) }
        // The file is in place before any metadata names it; if the metadata is not written, it goes
        // again, with the folders made for it.
        var placed = false
        var madeFolder: String?
        var existing = destinationFolder
        while !FileManager.default.fileExists(atPath: existing), existing.count > folder.count {
            madeFolder = existing
            existing = (existing as NSString).deletingLastPathComponent
        }
        do {
            try FileManager.default.createDirectory(atPath: destinationFolder, withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: destination) {
                if link(file, destination) != 0 { try Durability.writeAtomically(Data(bytes), to: destination, durable: true) }
                placed = true
            }
        } catch {
            throw TUFRepositoryError("\(destination) cannot be written: \(error)", category: .localIO)
        }
        do {
            try finish(changes, signers: signers)
        } catch {
            if placed { unlink(destination) }
            if let madeFolder { try? FileManager.default.removeItem(atPath: madeFolder) }
            throw error
        }
    }

    /// A new timestamp naming the same snapshot, valid for ``Lifetimes/timestamp`` from now, signed by
    /// those of `signers` the root lists for it (an online key the root lists for the timestamp alone).
    package func resignTimestamp(with signers: [TUFSigner]) throws {
        let current = try newest("timestamp")
        let bytes = try signed(current.signed, role: "timestamp", version: current.version + 1, by: Self.pick(signers, "timestamp", in: newest("root").signed))
        try check(bytes, as: "timestamp")
        try write(bytes, to: "timestamp.json", replacing: true)
    }

    /// When the current timestamp expires.
    package func timestampExpiry() throws -> Date {
        let current = try newest("timestamp")
        guard case .string(let text)? = current.signed["expires"], let date = TUFSigned.date(text) else { throw TUFRepositoryError("the timestamp has no expiry") }
        return date
    }

    // MARK: Reading

    /// The target path of a registry version's zip: `<app-id>/<version-id>/bundle.zip`.
    package static func targetPath(appId: String, versionId: String) -> String {
        appId + "/" + versionId + "/bundle.zip"
    }

    /// The names of the roles the top-level targets delegate to.
    package func delegatedRoleNames() throws -> [String] {
        guard case .object(let delegations)? = try newest("targets").signed["delegations"], case .array(let roles)? = delegations["roles"] else { return [] }
        return roles.compactMap { if case .object(let fields) = $0, case .string(let name)? = fields["name"] { name } else { nil } }
    }

    /// What a status report says: each top-level role's newest version and expiry.
    package func status() throws -> [(role: String, version: Int, expires: String)] {
        try Self.topLevelRoles.map { role in
            let newest = try newest(role)
            guard case .string(let expires)? = newest.signed["expires"] else { throw TUFRepositoryError("\(role) has no expiry", category: .badData) }
            return (role, newest.version, expires)
        }
    }

    /// The newest version of `role`'s metadata: its `signed` object and version.
    package func newest(_ role: String) throws -> (signed: [String: JSONValue], version: Int, bytes: [UInt8]) {
        let name: String
        if role == "timestamp" {
            name = "timestamp.json"
        } else {
            let suffix = "." + TUFUpdater.quote(role) + ".json"
            let versions = FileReading.children(of: metadataFolder).compactMap { file -> Int? in
                guard file.hasSuffix(suffix) else { return nil }
                return Int(file.dropLast(suffix.count)).flatMap { $0 >= 1 ? $0 : nil }
            }
            guard let version = versions.max() else { throw TUFRepositoryError("the repository has no \(role) metadata") }
            name = "\(version)\(suffix)"
        }
        guard let bytes = FileReading.contents(metadataFolder + "/" + name) else { throw TUFRepositoryError("\(metadataFolder)/\(name) cannot be read", category: .localIO) }
        guard let envelope = try? TUFEnvelope(bytes), case .object(let signed) = envelope.signed, let version = TUFSigned.integer(signed["version"]) else {
            throw TUFRepositoryError("\(metadataFolder)/\(name) is not TUF metadata", category: .badData)
        }
        return (signed, version, bytes)
    }

    // MARK: Writing

    /// What an operation writes, before the snapshot and the timestamp: a new root, and targets roles.
    private struct Changes {
        var root: [UInt8]?
        var roles: [String: [UInt8]] = [:]
        /// Whether a new snapshot and timestamp follow (not for a root that changes no other role's keys).
        var online = true
    }

    /// Edits the newest root into a new version, checks that the current root's keys accept it, and
    /// writes it with every role whose keys it changed signed again.
    private func changeRoot(signers: [TUFSigner], _ edit: (inout [String: JSONValue]) throws(TUFRepositoryError) -> Void) throws {
        let current = try newest("root")
        var root = current.signed
        try edit(&root)
        let rootSigners = Self.pick(signers, "root", in: current.signed) + Self.pick(signers, "root", in: root)
        let bytes = try signed(root, role: "root", version: current.version + 1, by: rootSigners)
        var trusted = try TUFTrustedSet(root: current.bytes, now: now())
        do {
            try trusted.updateRoot(bytes)
        } catch {
            throw TUFRepositoryError("the new root would not be trusted by clients: \(error)")
        }
        var changes = Changes(root: bytes)
        let before = try TUFTrustedSet(root: current.bytes, now: now())
        if before.roleKeys("targets") != trusted.roleKeys("targets") {
            let targets = try newest("targets")
            changes.roles["targets"] = try signed(targets.signed, role: "targets", version: targets.version + 1, by: Self.pick(signers, "targets", in: root))
        }
        changes.online = !changes.roles.isEmpty || ["snapshot", "timestamp"].contains { before.roleKeys($0) != trusted.roleKeys($0) }
        try finish(changes, signers: signers)
    }

    /// Writes `changes`, then a snapshot listing every targets role's newest version and a timestamp
    /// naming it, each checked against the root in force first.
    private func finish(_ changes: Changes, signers: [TUFSigner]) throws {
        let rootBytes = try changes.root ?? newest("root").bytes
        guard let rootEnvelope = try? TUFEnvelope(rootBytes), case .object(let rootDocument) = rootEnvelope.signed else {
            throw TUFRepositoryError("the root cannot be read")
        }
        if !changes.online, let root = changes.root {
            let version = (try? TUFSigned(TUFEnvelope(root), role: "root", type: "root").version) ?? 1
            try write(root, to: "\(version).root.json", replacing: false)
            return
        }
        for (role, bytes) in changes.roles where Self.topLevelRoles.contains(role) { try check(bytes, as: role, root: rootBytes) }
        let previousSnapshot = try? newest("snapshot")
        var meta: [String: JSONValue] = [:]
        if case .object(let listed)? = previousSnapshot?.signed["meta"] { meta = listed }
        for (role, bytes) in changes.roles {
            guard let version = (try? TUFEnvelope(bytes)).flatMap({ if case .object(let signed) = $0.signed { TUFSigned.integer(signed["version"]) } else { nil } }) else { continue }
            meta[role + ".json"] = .object(["version": .number(Double(version))])
        }
        let snapshotVersion = (previousSnapshot?.version ?? 0) + 1
        let snapshot = try signed(["_type": .string("snapshot"), "meta": .object(meta)], role: "snapshot", version: snapshotVersion, by: Self.pick(signers, "snapshot", in: rootDocument))
        let timestampVersion = ((try? newest("timestamp"))?.version ?? 0) + 1
        let timestamp = try signed([
            "_type": .string("timestamp"),
            "meta": .object(["snapshot.json": .object([
                "version": .number(Double(snapshotVersion)), "length": .number(Double(snapshot.count)),
                "hashes": .object(["sha256": .string(SHA256Digest.hash(snapshot).hexString)]),
            ])]),
        ], role: "timestamp", version: timestampVersion, by: Self.pick(signers, "timestamp", in: rootDocument))
        try check(snapshot, as: "snapshot", root: rootBytes)
        try check(timestamp, as: "timestamp", root: rootBytes)
        do {
            try FileManager.default.createDirectory(atPath: metadataFolder, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: targetsFolder, withIntermediateDirectories: true)
        } catch {
            throw TUFRepositoryError("\(folder) cannot be written: \(error)", category: .localIO)
        }
        if let root = changes.root {
            let version = (try? TUFSigned(TUFEnvelope(root), role: "root", type: "root").version) ?? 1
            try write(root, to: "\(version).root.json", replacing: false)
        }
        for (role, bytes) in changes.roles.sorted(by: { $0.key < $1.key }) {
            let version = (try? TUFSigned(TUFEnvelope(bytes), role: role, type: "targets").version) ?? 1
            try write(bytes, to: "\(version).\(TUFUpdater.quote(role)).json", replacing: false)
        }
        try write(snapshot, to: "\(snapshotVersion).snapshot.json", replacing: false)
        try write(timestamp, to: "timestamp.json", replacing: true)
    }

    /// `signed` with its `_type`, spec version, `version` and expiry set, signed by `signers`, as the
    /// bytes of a metadata file: canonical JSON (python-tuf reads it; control characters escaped).
    private func signed(_ signed: [String: JSONValue], role: String, version: Int, by signers: [TUFSigner], root: [UInt8]? = nil) throws -> [UInt8] {
        guard !signers.isEmpty else { throw TUFRepositoryError("none of the keys given may sign \(role): give a threshold of its keys") }
        var signed = signed
        signed["spec_version"] = .string(Self.specVersion)
        signed["version"] = .number(Double(version))
        signed["expires"] = .string(Self.format(now().addingTimeInterval(lifetimes.of(role))))
        guard let canonical = CanonicalJSON.encode(.object(signed)) else { throw TUFRepositoryError("\(role) holds a number that is not an integer") }
        var signatures: [JSONValue] = []
        var seen: Set<String> = []
        for signer in signers where seen.insert(signer.keyId).inserted {
            let signature: [UInt8]
            do {
                signature = try signer.sign(canonical)
            } catch {
                throw TUFRepositoryError("\(role) cannot be signed: \(error)")
            }
            signatures.append(.object(["keyid": .string(signer.keyId), "sig": .string(signature.hexString)]))
        }
        guard let file = CanonicalJSON.encode(.object(["signed": .object(signed), "signatures": .array(signatures)]), escapingControlCharacters: true) else {
            throw TUFRepositoryError("\(role) cannot be written as JSON")
        }
        return file
    }

    /// Those of `signers` that `root` (a `signed` object) lists for the top-level `role`.
    private static func pick(_ signers: [TUFSigner], _ role: String, in root: [String: JSONValue]) -> [TUFSigner] {
        guard case .object(let roles)? = root["roles"], case .object(let entry)? = roles[role], case .array(let ids)? = entry["keyids"] else { return [] }
        return signers.filter { ids.contains(.string($0.keyId)) }
    }

    /// Those of `signers` that the top-level targets' delegation to `role` lists.
    private func delegatedSigners(_ signers: [TUFSigner], _ role: String) throws -> [TUFSigner] {
        let targets = try newest("targets").signed
        guard case .object(let delegations)? = targets["delegations"], case .array(let roles)? = delegations["roles"],
              let entry = roles.first(where: { if case .object(let fields) = $0 { fields["name"] == .string(role) } else { false } }),
              case .object(let fields) = entry, case .array(let ids)? = fields["keyids"] else {
            throw TUFRepositoryError("targets delegates nothing to \(role)")
        }
        return signers.filter { ids.contains(.string($0.keyId)) }
    }

    /// Checks `bytes` as a client would for the top-level `role`: a threshold of the root's keys for it.
    private func check(_ bytes: [UInt8], as role: String, root: [UInt8]? = nil) throws {
        let rootBytes = try root ?? newest("root").bytes
        let trusted = try TUFTrustedSet(root: rootBytes, now: now())
        guard let keys = trusted.roleKeys(role) else { throw TUFRepositoryError("the root has no \(role) role") }
        do {
            let envelope = try TUFEnvelope.read(bytes, role: role)
            try TUFTrustedSet.require(signedBy: keys, keys: trusted.rootKeys, envelope: envelope, role: role)
        } catch {
            throw TUFRepositoryError("\(error): give a threshold of the \(role) role's keys")
        }
    }

    /// Checks the delegated `role` against the top-level targets' delegation to it.
    private func checkDelegated(_ role: String, _ bytes: [UInt8], targets: [String: JSONValue]) throws {
        do {
            let delegations = try TUFDelegations(fields: targets, role: "targets")
            guard let delegation = delegations.roles.first(where: { $0.name == role }) else { throw TUFRepositoryError("targets delegates nothing to \(role)") }
            try TUFTrustedSet.require(signedBy: delegation.keys, keys: delegations.keys, envelope: TUFEnvelope.read(bytes, role: role), role: role)
        } catch let error as TUFRepositoryError {
            throw error
        } catch {
            throw TUFRepositoryError("\(error): give a threshold of the \(role) role's keys")
        }
    }

    private func write(_ bytes: [UInt8], to name: String, replacing: Bool) throws {
        let path = metadataFolder + "/" + name
        guard replacing || !FileManager.default.fileExists(atPath: path) else { throw TUFRepositoryError("\(path) exists already") }
        do {
            try Durability.writeAtomically(Data(bytes), to: path, durable: true)
        } catch {
            throw TUFRepositoryError("\(path) cannot be written: \(error)", category: .localIO)
        }
    }

    // MARK: Root edits

    private static func addKey(_ key: JSONValue, to role: String, in root: inout [String: JSONValue]) throws(TUFRepositoryError) {
        guard topLevelRoles.contains(role) else { throw TUFRepositoryError("\(role) is not a top-level role") }
        let id = try keyId(key)
        guard case .object(var keys)? = root["keys"], case .object(var roles)? = root["roles"] else { throw TUFRepositoryError("the root is malformed") }
        keys[id] = key
        var entry: [String: JSONValue] = if case .object(let found)? = roles[role] { found } else { ["keyids": .array([]), "threshold": .number(1)] }
        guard case .array(var ids)? = entry["keyids"] else { throw TUFRepositoryError("the root's \(role) role is malformed") }
        guard !ids.contains(.string(id)) else { throw TUFRepositoryError("the \(role) role has the key \(id) already") }
        ids.append(.string(id))
        entry["keyids"] = .array(ids)
        roles[role] = .object(entry)
        root["keys"] = .object(keys)
        root["roles"] = .object(roles)
    }

    private static func setThreshold(_ threshold: Int, of role: String, in root: inout [String: JSONValue]) throws(TUFRepositoryError) {
        guard case .object(var roles)? = root["roles"], case .object(var entry)? = roles[role], case .array(let ids)? = entry["keyids"] else {
            throw TUFRepositoryError("the root has no \(role) role")
        }
        guard threshold >= 1, threshold <= ids.count else { throw TUFRepositoryError("the \(role) role has \(ids.count) keys: its threshold must be 1 to \(ids.count)") }
        entry["threshold"] = .number(Double(threshold))
        roles[role] = .object(entry)
        root["roles"] = .object(roles)
    }

    /// The id of the public key `key`, once it is a key clients can use.
    package static func keyId(_ key: JSONValue) throws(TUFRepositoryError) -> String {
        let parsed: TUFKey
        do {
            parsed = try TUFKey(key)
        } catch {
            throw TUFRepositoryError("the key cannot be used: \(error)")
        }
        guard let id = parsed.computedId else { throw TUFRepositoryError("the key has no canonical form") }
        return id
    }

    /// A target path as clients look it up: relative, `/`-separated, with no empty, `.` or `..` part.
    static func checkTargetPath(_ path: String) throws(TUFRepositoryError) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !path.isEmpty, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw TUFRepositoryError("\(path) is not a target path (relative, no empty, . or .. part)")
        }
    }

    /// `date` as the specification writes dates: `YYYY-MM-DDTHH:MM:SSZ`.
    static func format(_ date: Date) -> String {
        String(RecordCoding.format(Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))).prefix(19)) + "Z"
    }
}
