/// A registry operation that failed.
public enum RegistryError: CategorizedError, Equatable {
    /// The folder given as a registry is not one (no `registry.json`): a bad option value.
    case notARegistry(path: String, reason: String)
    /// A bundle offered to `publish` is not acceptable.
    case invalidBundle(reason: String)
    /// The version id is already published for this app.
    case versionExists(appId: String, versionId: String)
    /// Writing the registry failed.
    case io(path: String, reason: String, diskFull: Bool)

    public var category: ErrorCategory {
        switch self {
        case .notARegistry: return .usage
        case .invalidBundle, .versionExists: return .badData
        case .io: return .localIO
        }
    }

    public var description: String {
        switch self {
        case .notARegistry(let path, let reason):
            return "\(path) is not a usable registry (\(reason)): create one with 'miniapp publish --registry \(path) ...'"
        case .invalidBundle(let reason):
            return "bundle refused: \(reason); the registry is unchanged"
        case .versionExists(let appId, let versionId):
            return "version \(versionId) of app \(appId) is already published: pick another --version-id"
        case .io(let path, let reason, let diskFull):
            return "cannot write \(path): \(reason)\(diskFull ? "; free some disk space and retry" : "; check the registry folder's permissions")"
        }
    }
}
