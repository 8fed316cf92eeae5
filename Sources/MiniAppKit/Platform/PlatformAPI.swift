package import AsyncHTTPClient
package import Logging
public import MiniAppCore

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
    /// Releases what the platform holds (connections); call it once, when done.
    func close() async
}

/// Opens the platform a configuration names.
package enum Platforms {
    /// A ``PlatformClient`` for a URL, a ``RegistryPlatform`` for a registry directory.
    /// A host may give its own `httpClient` for a remote platform (see ``PlatformClient``); a registry
    /// directory is read on `executor`; a short-lived process may ask for `connections: .perRequest`
    /// (see ``PlatformConnections``). ``MiniAppRuntime`` opens the one a process uses.
    package static func open(
        _ configuration: MiniAppConfiguration, httpClient: HTTPClient? = nil, executor: BlockingExecutor,
        connections: PlatformConnections = .pooled, logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws -> any PlatformAPI {
        try open(configuration, executor: executor, logger: logger) {
            (HTTPTransport(network: configuration.network, httpClient: httpClient, executor: executor, connections: connections), true)
        }.api
    }

    /// The platform `configuration` names, as the type it is; a remote one goes over the transport
    /// `transport` gives, which it shuts down when that says it owns it.
    static func open(
        _ configuration: MiniAppConfiguration, executor: BlockingExecutor, logger: Logger, transport: () -> (HTTPTransport, owned: Bool)
    ) throws -> OpenedPlatform {
        switch configuration.platform {
        case nil:
            throw ConfigurationError.missingPlatform
        case .registry(let path)?:
            return .registry(try RegistryPlatform(root: path, preview: configuration.preview, executor: executor))
        case .remote?:
            let (transport, owned) = transport()
            return .remote(try PlatformClient(configuration: configuration, transport: transport, ownsTransport: owned, logger: logger))
        }
    }

    /// Runs `body` with the configured platform and closes it afterwards.
    package static func with<Result: Sendable>(
        _ configuration: MiniAppConfiguration, executor: BlockingExecutor, connections: PlatformConnections = .pooled,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (any PlatformAPI) async throws -> Result
    ) async throws -> Result {
        let platform = try open(configuration, executor: executor, connections: connections, logger: logger)
        do {
            let result = try await body(platform)
            await platform.close()
            return result
        } catch {
            await platform.close()
            throw error
        }
    }
}

extension PlatformAPI {
    /// The given version of an app, or its latest when `versionId` is `nil`.
    public func app(_ appId: String, version versionId: String?) async throws -> AppRecord {
        if let versionId { return try await app(appId, version: versionId) }
        return try await latestVersion(ofApp: appId)
    }
}

/// A platform the library opened, as the type it is: what only one kind can do is reached without a
/// cast past ``PlatformAPI``.
enum OpenedPlatform: Sendable {
    case remote(PlatformClient)
    case registry(RegistryPlatform)

    var api: any PlatformAPI {
        switch self {
        case .remote(let client): client
        case .registry(let registry): registry
        }
    }

    /// The app list as texts (``AppListText``): a remote platform's from its own bytes, a registry's
    /// from its records.
    func appListText() async throws -> AppListText {
        switch self {
        case .remote(let client): try await client.appListText()
        case .registry(let registry): AppListText(records: try await registry.listApps())
        }
    }
}
