import MiniAppCore
/// The part of the cache that belongs to one platform and project, so that several environments can
/// share one cache directory safely.
public struct CacheNamespace: Sendable, Equatable, Codable {
    /// The folder name: `local`, or 16 hex digits derived from the platform and project.
    public let key: String
    /// The platform, as configured (a URL or a registry directory), or `local`.
    public let platform: String
    /// The project id, when there is one.
    public let projectId: String?

    /// The namespace of a configured platform and project; `nil` platform means bundles installed locally.
    public init(platform: PlatformLocation?, projectId: String?) {
        guard let platform else {
            self.key = "local"
            self.platform = "local"
            self.projectId = projectId
            return
        }
        self.platform = platform.description
        self.projectId = projectId
        self.key = String(SHA256Digest.hash(Array("\(platform.description)\n\(projectId ?? "")".utf8)).hexString.prefix(16))
    }
}
