/// A role a targets role delegates to: its keys, its threshold, which target paths it may sign for,
/// and whether a match ends the search.
package struct TUFDelegatedRole: Sendable {
    package let name: String
    package let keys: TUFRoleKeys
    package let terminating: Bool
    /// Shell-style patterns, one per path segment (`*` never crosses a `/`), or hex prefixes of the
    /// SHA-256 of the target path; exactly one of the two.
    package let paths: [String]?
    package let pathHashPrefixes: [String]?

    /// Whether this role may sign for `target` (specification 5.6.7.2).
    package func covers(_ target: String) -> Bool {
        if let paths { return paths.contains { Self.matches(target, pattern: $0) } }
        if let pathHashPrefixes {
            let digest = SHA256Digest.hash(Array(target.utf8)).hexString
            return pathHashPrefixes.contains { digest.hasPrefix($0.lowercased()) }
        }
        return false
    }

    /// `target` against `pattern` segment by segment, as python-tuf matches them: the same number of
    /// `/`-separated segments, each matched with `*`, `?` and `[...]` as fnmatch does.
    static func matches(_ target: String, pattern: String) -> Bool {
        let targetParts = target.split(separator: "/", omittingEmptySubsequences: false)
        let patternParts = pattern.split(separator: "/", omittingEmptySubsequences: false)
        guard targetParts.count == patternParts.count else { return false }
        return zip(targetParts, patternParts).allSatisfy { fnmatch(Array($0.1.unicodeScalars), Array($0.0.unicodeScalars)) }
    }

    /// fnmatch of one segment: `*` any run, `?` one character, `[...]` a class (`!` negates, ranges).
    private static func fnmatch(_ pattern: [Unicode.Scalar], _ text: [Unicode.Scalar]) -> Bool {
        var p = 0, t = 0
        var star: (p: Int, t: Int)?
        while t < text.count {
            if p < pattern.count {
                switch pattern[p] {
                case "*":
                    star = (p, t)
                    p += 1
                    continue
                case "?":
                    p += 1
                    t += 1
                    continue
                case "[":
                    if let (matched, next) = matchClass(pattern, from: p, text[t]) {
                        if matched {
                            p = next
                            t += 1
                            continue
                        }
                    } else if text[t] == "[" {
                        p += 1
                        t += 1
                        continue
                    }
                default:
                    if pattern[p] == text[t] {
                        p += 1
                        t += 1
                        continue
                    }
                }
            }
            guard let last = star else { return false }
            star = (last.p, last.t + 1)
            p = last.p + 1
            t = last.t + 1
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// The class at `pattern[start]` (`[`) against `character`: whether it matched and where the pattern
    /// goes on; `nil` when the class is not closed (then `[` is itself).
    private static func matchClass(_ pattern: [Unicode.Scalar], from start: Int, _ character: Unicode.Scalar) -> (Bool, Int)? {
        var index = start + 1
        var negated = false
        if index < pattern.count, pattern[index] == "!" {
            negated = true
            index += 1
        }
        var matched = false
        var first = true
        while index < pattern.count, pattern[index] != "]" || first {
            first = false
            let low = pattern[index]
            if index + 2 < pattern.count, pattern[index + 1] == "-", pattern[index + 2] != "]" {
                if low.value <= character.value, character.value <= pattern[index + 2].value { matched = true }
                index += 3
            } else {
                if low == character { matched = true }
                index += 1
            }
        }
        guard index < pattern.count else { return nil }
        return (matched != negated, index + 1)
    }
}

/// A targets role's delegations, read strictly.
package struct TUFDelegations: Sendable {
    package let keys: [String: TUFKey]
    package let roles: [TUFDelegatedRole]

    /// The delegations of the targets metadata `signed` (none when it has none).
    init(_ signed: TUFSigned, role: String) throws(TUFError) {
        try self.init(fields: signed.fields, role: role)
    }

    /// The delegations of the targets `signed` object `fields`.
    init(fields: [String: JSONValue], role: String) throws(TUFError) {
        guard let value = fields["delegations"] else {
            keys = [:]
            roles = []
            return
        }
        guard case .object(let parts) = value, case .object(let keyDocuments)? = parts["keys"], case .array(let roleDocuments)? = parts["roles"] else {
            throw TUFError(role, "its delegations need keys and roles")
        }
        var keys: [String: TUFKey] = [:]
        for (keyId, document) in keyDocuments { keys[keyId] = try? TUFKey(document) }
        var roles: [TUFDelegatedRole] = []
        var names: Set<String> = []
        for document in roleDocuments {
            guard case .object(let fields) = document, case .string(let name)? = fields["name"], !name.isEmpty,
                  case .array(let ids)? = fields["keyids"], let threshold = TUFSigned.integer(fields["threshold"]), threshold >= 1,
                  case .bool(let terminating)? = fields["terminating"] else {
                throw TUFError(role, "a delegated role needs a name, keyids, a positive threshold and terminating")
            }
            guard names.insert(name).inserted else { throw TUFError(role, "it delegates to \(name) twice") }
            // A top-level role's name would mean another role's file and trust (python-tuf refuses them too).
            guard !["root", "timestamp", "snapshot", "targets"].contains(name) else { throw TUFError(role, "it delegates to the top-level name \(name)") }
            let keyIds = ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
            guard keyIds.count == ids.count, Set(keyIds).count == keyIds.count else { throw TUFError(role, "delegated role \(name) lists a key id twice") }
            func strings(_ key: String) throws(TUFError) -> [String]? {
                guard let value = fields[key] else { return nil }
                guard case .array(let items) = value else { throw TUFError(role, "delegated role \(name)'s \(key) is not a list") }
                let read = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
                guard read.count == items.count else { throw TUFError(role, "delegated role \(name)'s \(key) is not a list of strings") }
                return read
            }
            let paths = try strings("paths"), prefixes = try strings("path_hash_prefixes")
            guard (paths == nil) != (prefixes == nil) else { throw TUFError(role, "delegated role \(name) needs paths or path_hash_prefixes, not both") }
            roles.append(TUFDelegatedRole(
                name: name, keys: TUFRoleKeys(keyIds: keyIds, threshold: threshold), terminating: terminating, paths: paths, pathHashPrefixes: prefixes
            ))
        }
        self.keys = keys
        self.roles = roles
    }
}

extension TUFTrustedSet {
    /// The delegations of a trusted targets role (`targets` or one loaded through ``updateDelegatedTargets(_:role:delegator:)``).
    package func delegations(of role: String) throws(TUFError) -> TUFDelegations? {
        guard let signed = role == "targets" ? targets : delegated[role]?.signed else { return nil }
        return try TUFDelegations(signed, role: role)
    }

    /// Takes `bytes` as the delegated role `role` that the trusted targets role `delegator` delegates
    /// to: named by the snapshot (length, hashes, version), signed by the threshold of the delegator's
    /// keys for it, not expired. A role already trusted under the same name is checked again against
    /// this delegator: trusted through one delegator, it is not thereby trusted through another.
    package mutating func updateDelegatedTargets(_ bytes: [UInt8], role: String, delegator: String) throws(TUFError) {
        guard let snapshot else { throw TUFError(role, "no snapshot names it") }
        try checkFinalSnapshot()
        guard let delegations = try delegations(of: delegator) else { throw TUFError(role, "its delegator \(delegator) is not trusted") }
        guard let delegation = delegations.roles.first(where: { $0.name == role }) else { throw TUFError(role, "\(delegator) does not delegate to it") }
        guard let named = try snapshot.meta(role: "snapshot")[role + ".json"] else { throw TUFError(role, "the snapshot does not name it") }
        try Self.check(bytes, against: named, role: role)
        let envelope = try TUFEnvelope.read(bytes, role: role)
        try Self.require(signedBy: delegation.keys, keys: delegations.keys, envelope: envelope, role: role, by: "\(delegator)'s keys for it")
        let next = try TUFSigned(envelope, role: role, type: "targets")
        guard next.version == named.version else {
            throw TUFError(role, "version \(next.version) is not the \(named.version) the snapshot names (mix and match?)")
        }
        guard next.expires > now else { throw TUFError(role, "it expired (freeze attack?)") }
        delegated[role] = DelegatedRole(signed: next, envelope: envelope)
    }

    /// Checks the delegated role `role`, already trusted, against `delegator`'s keys for it: a lookup that
    /// reaches it through another delegator than the one that first let it in must not trust it for free.
    package func recheck(role: String, delegator: String) throws(TUFError) {
        guard let trusted = delegated[role] else { throw TUFError(role, "it is not trusted") }
        guard let delegations = try delegations(of: delegator),
              let delegation = delegations.roles.first(where: { $0.name == role }) else { throw TUFError(role, "\(delegator) does not delegate to it") }
        try Self.require(signedBy: delegation.keys, keys: delegations.keys, envelope: trusted.envelope, role: role, by: "\(delegator)'s keys for it")
    }

    /// The trusted delegated role `role`, if loaded.
    package func delegatedTargets(_ role: String) -> TUFSigned? { delegated[role]?.signed }
}
