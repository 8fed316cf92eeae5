import Foundation
public import MiniAppCore

/// The platform API answered straight from a registry directory, with the same contract as over HTTP.
/// The registry's files are read on the executor given to it, never on the caller's thread.
public struct RegistryPlatform: PlatformAPI {
    package let registry: Registry
    /// Whether preview versions are visible.
    public let preview: Bool
    private let executor: BlockingExecutor

    /// A platform over the registry at `root`, read on `executor`.
    public init(root: String, preview: Bool = false, executor: BlockingExecutor) throws(RegistryError) {
        registry = Registry(root: root)
        self.preview = preview
        self.executor = executor
        guard registry.exists else { throw .notARegistry(path: root, reason: "it has no \(Registry.marker)") }
    }

    public func listApps() async throws -> [AppRecord] {
        try await executor.run { [registry, preview] in registry.listing(preview: preview) }
    }

    public func latestVersion(ofApp appId: String) async throws -> AppRecord {
        try Identifier.validate(appId, as: .app)
        return try await executor.run { [registry, preview] in
            guard let app = registry.app(appId), let latest = registry.versions(of: appId, preview: preview).first else {
                throw PlatformError.notFound(resource: "app \(appId)", message: "no published version")
            }
            return registry.record(app, latest)
        }
    }

    public func app(_ appId: String, version versionId: String) async throws -> AppRecord {
        try await executor.run { [self] in
            let (app, version) = try visible(appId, versionId)
            return registry.record(app, version)
        }
    }

    public func fileManifest(appId: String, versionId: String) async throws -> FileManifest {
        try await executor.run { [self] in
            let (_, version) = try visible(appId, versionId)
            return FileManifest(
                urls: [URL(fileURLWithPath: registry.bundlePath(appId: appId, versionId: versionId))],
                publicKeyId: version.publicKeyId, signature: version.signature
            )
        }
    }

    public func metadata(appId: String, versionId: String, language: String) async throws -> BundleManifest {
        try await executor.run { [self] in
            _ = try visible(appId, versionId)
            return try registry.metadata(appId: appId, versionId: versionId, language: language)
        }
    }

    public func publicKey(id: String) async throws -> PublicKeyRecord {
        try Identifier.validate(id, as: .key)
        return try await executor.run { [registry] in
            guard let key = registry.key(id) else { throw PlatformError.notFound(resource: "public key \(id)", message: nil) }
            return key
        }
    }

    public func previewCode(token: String) async throws -> PreviewCode {
        try Identifier.validate(token, as: .previewToken)
        return try await executor.run { [registry] in
            guard let code = registry.previewCode(token), let app = registry.app(code.appId),
                  let version = registry.version(appId: code.appId, versionId: code.versionId) else {
                throw PlatformError.notFound(resource: "preview code \(token)", message: nil)
            }
            return PreviewCode(miniapp: registry.record(app, version), host: nil)
        }
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
