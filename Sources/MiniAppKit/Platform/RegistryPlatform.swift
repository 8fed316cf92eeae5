import Foundation
import MiniAppCore

/// The platform API answered straight from a registry directory, with the same contract as over HTTP.
public struct RegistryPlatform: PlatformAPI {
    public let registry: Registry
    /// Whether preview versions are visible.
    public let preview: Bool

    /// A platform over the registry at `root`.
    public init(root: String, preview: Bool = false) throws(RegistryError) {
        registry = Registry(root: root)
        self.preview = preview
        guard registry.exists else { throw .notARegistry(path: root, reason: "it has no \(Registry.marker)") }
    }

    public func listApps() async throws -> [AppRecord] {
        registry.listing(preview: preview)
    }

    public func latestVersion(ofApp appId: String) async throws -> AppRecord {
        try Identifier.validate(appId, as: .app)
        guard let app = registry.app(appId), let latest = registry.versions(of: appId, preview: preview).first else {
            throw PlatformError.notFound(resource: "app \(appId)", message: "no published version")
        }
        return registry.record(app, latest)
    }

    public func app(_ appId: String, version versionId: String) async throws -> AppRecord {
        let (app, version) = try visible(appId, versionId)
        return registry.record(app, version)
    }

    public func fileManifest(appId: String, versionId: String) async throws -> FileManifest {
        let (_, version) = try visible(appId, versionId)
        return FileManifest(
            urls: [URL(fileURLWithPath: registry.bundlePath(appId: appId, versionId: versionId))],
            publicKeyId: version.publicKeyId, signature: version.signature
        )
    }

    public func metadata(appId: String, versionId: String, language: String) async throws -> BundleManifest {
        _ = try visible(appId, versionId)
        return try registry.metadata(appId: appId, versionId: versionId, language: language)
    }

    public func publicKey(id: String) async throws -> PublicKeyRecord {
        try Identifier.validate(id, as: .key)
        guard let key = registry.key(id) else { throw PlatformError.notFound(resource: "public key \(id)", message: nil) }
        return key
    }

    public func previewCode(token: String) async throws -> PreviewCode {
        try Identifier.validate(token, as: .previewToken)
        guard let code = registry.previewCode(token), let app = registry.app(code.appId),
              let version = registry.version(appId: code.appId, versionId: code.versionId) else {
            throw PlatformError.notFound(resource: "preview code \(token)", message: nil)
        }
        return PreviewCode(miniapp: registry.record(app, version), host: nil)
    }

    public func close() async {}

    private func visible(_ appId: String, _ versionId: String) throws -> (RegistryApp, RegistryVersion) {
        try Identifier.validate(appId, as: .app)
        try Identifier.validate(versionId, as: .version)
        guard let app = registry.app(appId), let version = registry.version(appId: appId, versionId: versionId), preview || !version.preview else {
            throw PlatformError.notFound(resource: "version \(versionId) of app \(appId)", message: nil)
        }
        return (app, version)
    }
}
