/// What changed between two manifests of an app: the one in force for a cached version and another.
public struct ManifestDiff: Sendable, Equatable, Encodable {
    /// A permission whose reason changed.
    public struct ReasonChange: Sendable, Equatable, Encodable {
        /// The permission's full name.
        public var name: String
        /// The reason before; `nil` when there was none.
        public var from: String?
        /// The reason after; `nil` when there is none.
        public var to: String?
    }

    /// A token audience whose scopes changed (`from` empty: added; `to` empty: removed).
    public struct TokenChange: Sendable, Equatable, Encodable {
        /// The token's audience.
        public var audience: String
        /// The scopes before.
        public var from: [String]
        /// The scopes after.
        public var to: [String]
    }

    /// A customMetaData key whose value changed (`nil`: absent on that side).
    public struct MetadataChange: Sendable, Equatable, Encodable {
        /// The customMetaData key.
        public var key: String
        /// The value before.
        public var from: String?
        /// The value after.
        public var to: String?
    }

    /// Required permissions the other manifest adds.
    public var requiredAdded: [String]
    /// Required permissions the other manifest drops.
    public var requiredRemoved: [String]
    /// Optional permissions the other manifest adds.
    public var optionalAdded: [String]
    /// Optional permissions the other manifest drops.
    public var optionalRemoved: [String]
    /// Permissions whose reason changed.
    public var reasonsChanged: [ReasonChange]
    /// Access-token audiences whose scopes changed.
    public var tokensChanged: [TokenChange]
    /// customMetaData keys whose value changed.
    public var customMetaDataChanged: [MetadataChange]

    /// Whether nothing changed.
    public var isEmpty: Bool {
        requiredAdded.isEmpty && requiredRemoved.isEmpty && optionalAdded.isEmpty && optionalRemoved.isEmpty
            && reasonsChanged.isEmpty && tokensChanged.isEmpty && customMetaDataChanged.isEmpty
    }

    /// The changes from `old` to `new`.
    public init(from old: BundleManifest, to new: BundleManifest) {
        func names(_ declarations: [PermissionDeclaration]) -> Set<String> { Set(declarations.map(\.name)) }
        requiredAdded = names(new.reqPermissions).subtracting(names(old.reqPermissions)).sorted()
        requiredRemoved = names(old.reqPermissions).subtracting(names(new.reqPermissions)).sorted()
        optionalAdded = names(new.optPermissions).subtracting(names(old.optPermissions)).sorted()
        optionalRemoved = names(old.optPermissions).subtracting(names(new.optPermissions)).sorted()

        var oldReasons: [String: String?] = [:]
        for declaration in old.reqPermissions + old.optPermissions where oldReasons[declaration.name] == nil { oldReasons[declaration.name] = declaration.reason }
        var newReasons: [String: String?] = [:]
        for declaration in new.reqPermissions + new.optPermissions where newReasons[declaration.name] == nil { newReasons[declaration.name] = declaration.reason }
        reasonsChanged = Set(oldReasons.keys).intersection(newReasons.keys).sorted().compactMap { name in
            let from = oldReasons[name] ?? nil
            let to = newReasons[name] ?? nil
            return from == to ? nil : ReasonChange(name: name, from: from, to: to)
        }

        func scopes(_ tokens: [AccessTokenPermission]) -> [String: [String]] {
            Dictionary(tokens.map { ($0.audience, $0.scopes.sorted()) }, uniquingKeysWith: { first, second in (first + second).sorted() })
        }
        let oldTokens = scopes(old.accessTokenPermissions)
        let newTokens = scopes(new.accessTokenPermissions)
        tokensChanged = Set(oldTokens.keys).union(newTokens.keys).sorted().compactMap { audience in
            let from = oldTokens[audience] ?? []
            let to = newTokens[audience] ?? []
            return from == to ? nil : TokenChange(audience: audience, from: from, to: to)
        }

        customMetaDataChanged = Set(old.customMetaData.keys).union(new.customMetaData.keys).sorted().compactMap { key in
            old.customMetaData[key] == new.customMetaData[key] ? nil : MetadataChange(key: key, from: old.customMetaData[key], to: new.customMetaData[key])
        }
    }
}
