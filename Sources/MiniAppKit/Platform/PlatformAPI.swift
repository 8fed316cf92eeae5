/// The platform API of platform-api.md, whatever serves it: a remote platform or a local registry.
public protocol PlatformAPI: Sendable {
    /// Every mini-app the project publishes (or, in preview mode, has in preview).
    func listApps() async throws -> [AppRecord]
    /// The latest version of one app; throws ``PlatformError/notFound(resource:message:)`` when none is published.
    func latestVersion(ofApp appId: String) async throws -> AppRecord
    /// One given version of an app; `versionTag` is `nil` when the platform does not report it.
    func app(_ appId: String, version versionId: String) async throws -> AppRecord
    /// The file manifest of a version, with its signature and key id.
    func fileManifest(appId: String, versionId: String) async throws -> FileManifest
    /// The bundle's manifest.json as the platform localised it for `language`.
    func metadata(appId: String, versionId: String, language: String) async throws -> BundleManifest
    /// The public key with this id.
    func publicKey(id: String) async throws -> PublicKeyRecord
    /// What a preview code resolves to.
    func previewCode(token: String) async throws -> PreviewCode
}

extension PlatformAPI {
    /// The given version of an app, or its latest when `versionId` is `nil`.
    public func app(_ appId: String, version versionId: String?) async throws -> AppRecord {
        if let versionId { return try await app(appId, version: versionId) }
        return try await latestVersion(ofApp: appId)
    }
}
