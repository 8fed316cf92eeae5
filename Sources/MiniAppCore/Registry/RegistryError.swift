/// A registry operation that failed.
public enum RegistryError: CategorizedError, Equatable {
    /// The folder given as a registry is not one (no `registry.json`): a bad option value.
    case notARegistry(path: String, reason: String)
    /// A bundle offered to `publish` is not acceptable.
    case invalidBundle(reason: String)
    /// A version tag that is empty, too long, or holds spaces or control characters.
    case invalidVersionTag(String)
    /// The version id is already published for this app.
    case versionExists(appId: String, versionId: String)
    /// Writing the registry failed.
    case io(path: String, reason: String, diskFull: Bool)
    /// The server cannot listen on the address (in use, or not allowed).
    case cannotListen(host: String, port: Int, reason: String)

    public var category: ErrorCategory {
        switch self {
        case .notARegistry, .invalidVersionTag, .cannotListen: return .usage
        case .invalidBundle, .versionExists: return .badData
        case .io: return .localIO
        }
    }

    public var description: String {
        switch self {
        case .notARegistry(let path, let reason):
            return "\(path) is not a usable registry (\(reason)): publish a version into it to create it, or name another registry folder"
        case .invalidBundle(let reason):
            return "bundle refused: \(reason); the registry is unchanged"
        case .invalidVersionTag(let tag):
            return "invalid version tag '\(Sanitizer.printable(tag, limit: 80))': use 1 to 64 printable characters without spaces, such as 1.2.0"
        case .versionExists(let appId, let versionId):
            return "version \(versionId) of app \(appId) is already published: publish under another version id"
        case .io(let path, let reason, let diskFull):
            return "cannot write \(path): \(reason)\(diskFull ? "; free some disk space and retry" : "; check the registry folder's permissions")"
        case .cannotListen(let host, let port, let reason):
            return "the server cannot listen on \(host):\(port) (\(reason)): choose another port, or 0 for a free one"
        }
    }
}
