public import MiniAppCore
/// The pinned signing keys of a configuration: ids, and whole keys.
public struct TrustedKeys: Sendable {
    /// Key ids that are trusted, as the platform names them or as derived from the key.
    public let ids: Set<String>
    /// Whole keys that are trusted.
    public let keys: [PublicKey]

    /// Where the entries come from, as errors name it.
    package static let source = "the configuration's trusted keys"

    /// Whether pinning is on.
    public var isEmpty: Bool { ids.isEmpty && keys.isEmpty }

    /// Parses each entry as a PEM public key, a base64 `ecKey`, or else a key id.
    public init(_ entries: [String]) throws(ConfigurationError) {
        var ids: Set<String> = []
        var keys: [PublicKey] = []
        for entry in entries {
            if entry.contains("-----BEGIN") {
                guard let key = try? PublicKey(pem: entry) else {
                    throw .invalidValue(setting: "trustedKeys", source: Self.source, value: String(entry.prefix(40)), expected: "use a PEM P-256 public key")
                }
                keys.append(key)
            } else if entry.utf8.count >= 80, let key = try? PublicKey(ecKey: entry) {
                keys.append(key)
            } else if Identifier.isValid(entry) {
                ids.insert(entry)
            } else {
                throw .invalidValue(setting: "trustedKeys", source: Self.source, value: entry, expected: "use key ids, base64 ecKey values or PEM public keys")
            }
        }
        self.ids = ids
        self.keys = keys
    }

    /// Whether `key`, which the platform calls `keyId`, is trusted.
    public func trusts(_ key: PublicKey, keyId: String?) -> Bool {
        if isEmpty { return true }
        if let keyId, ids.contains(keyId) { return true }
        return ids.contains(key.keyId) || keys.contains(key)
    }
}
