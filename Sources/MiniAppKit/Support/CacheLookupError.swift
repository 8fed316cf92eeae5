/// A version that was asked for from the cache alone and is not there.
public enum CacheLookupError: CategorizedError, Equatable {
    /// Offline, and the app (or the given version of it) is not cached.
    case notCached(appId: String, versionId: String?)

    public var category: ErrorCategory { .notFound }

    public var description: String {
        switch self {
        case .notCached(let appId, let versionId):
            let what = versionId.map { "version \($0) of app \(appId)" } ?? "app \(appId)"
            return "\(what) is not in the cache and --offline forbids the network: run without --offline to fetch it"
        }
    }
}
