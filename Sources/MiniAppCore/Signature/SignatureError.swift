/// A signature, key or signing input that cannot be used.
public enum SignatureError: CategorizedError, Equatable {
    /// The key material is not a P-256 public key.
    case invalidPublicKey(keyId: String?, reason: String)
    /// `ecKey` and `pemKey` of one key answer are different keys.
    case keyFormsDisagree(keyId: String)
    /// The signature is not base64 of a DER ECDSA signature.
    case malformedSignature(reason: String)
    /// The signature does not match the bundle and version.
    case mismatch(versionId: String, keyId: String?)
    /// No signature came with the bundle.
    case missingSignature(versionId: String)
    /// The key is not among the configured trusted keys.
    case untrustedKey(keyId: String?)
    /// The key could not be fetched.
    case keyUnavailable(keyId: String, reason: String)
    /// The private key cannot be read or used.
    case invalidPrivateKey(path: String, reason: String)
    /// The file manifest lists several files, which one signature cannot cover.
    case multiFileManifest(versionId: String)

    public var category: ErrorCategory {
        switch self {
        case .invalidPrivateKey: return .usage
        default: return .badData
        }
    }

    public var description: String {
        switch self {
        case .invalidPublicKey(let keyId, let reason):
            return "public key\(keyId.map { " \($0)" } ?? "") is not a usable P-256 key (\(reason)): the bundle cannot be verified"
        case .keyFormsDisagree(let keyId):
            return "public key \(keyId) has an ecKey and a pemKey that are different keys: the platform answer is invalid"
        case .malformedSignature(let reason):
            return "the signature is malformed (\(reason)): the bundle cannot be verified"
        case .mismatch(let versionId, let keyId):
            return "the signature does not match the bundle of version \(versionId)\(keyId.map { " (key \($0))" } ?? ""): the bundle was altered or signed with another key; do not use it"
        case .missingSignature(let versionId):
            return "version \(versionId) has no signature: refused under the required signature policy (the advisory policy accepts unsigned bundles)"
        case .untrustedKey(let keyId):
            return "the bundle is signed with key \(keyId ?? "(unnamed)"), which is not among the configured trusted keys"
        case .keyUnavailable(let keyId, let reason):
            return "public key \(keyId) cannot be fetched (\(reason)): the bundle cannot be verified"
        case .invalidPrivateKey(let path, let reason):
            return "cannot use private key \(path): \(reason)"
        case .multiFileManifest(let versionId):
            return "version \(versionId) is listed file by file, which its signature cannot cover: refused under the required signature policy (the advisory policy accepts it)"
        }
    }
}
