public import AsyncHTTPClient
public import Logging
public import MiniAppCore
public import MiniAppPermissions
import Synchronization

/// What one process uses to run mini-apps, made once and shut down once: the executor its blocking
/// work runs on, the platform and how it is reached, the permission store, the cache and the installer.
///
/// A host service makes one when it starts, hands its parts to whatever needs them, and calls
/// ``shutdown()`` when it stops; nothing else makes a thread pool, a platform client, a store or an
/// installer. The platform, the installer and the store are opened at their first use, so a process
/// that needs only the cache pays nothing for the others (and a setting only they read cannot stop it).
public final class MiniAppRuntime: Sendable {
    /// The configuration in force.
    public let configuration: MiniAppConfiguration
    /// Where the blocking work of every module runs (the cache, the store, a registry's files).
    public let executor: BlockingExecutor
    /// The cache view of the configured platform and project.
    public let cache: BundleCache
    private let connections: PlatformConnections
    private let httpClient: HTTPClient?
    private let permissions: PermissionAccess
    let logger: Logger
    private let opened = Mutex(Opened())

    /// What is opened at first use, and closed by ``shutdown()``.
    private struct Opened {
        /// The one way to the network of the platform and the installer's downloads.
        var transport: HTTPTransport?
        var platform: OpenedPlatform?
        var installer: BundleInstaller?
    }

    /// A runtime for `configuration`.
    ///
    /// - Parameters:
    ///   - connections: how a remote platform is reached: ``PlatformConnections/pooled`` for a host
    ///     service, ``PlatformConnections/perRequest`` for a short-lived process.
    ///   - httpClient: the host's own client for the platform and the zips, which stays the host's to
    ///     shut down; by default the runtime makes its own when first needed.
    ///   - permissionStore: a store the host opened itself, which stays the host's to close; by default
    ///     the configured one (``MiniAppConfiguration/permissionStoreLocation``), opened at first use.
    ///   - executor: the executor to use and shut down; by default a new one (it starts nothing until used).
    ///   - logger: where the library logs; silent by default.
    public init(
        configuration: MiniAppConfiguration, connections: PlatformConnections = .pooled, httpClient: HTTPClient? = nil,
        permissionStore: PermissionStore? = nil, executor: BlockingExecutor = BlockingExecutor(),
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.configuration = configuration
        self.connections = connections
        self.httpClient = httpClient
        self.executor = executor
        self.logger = logger
        self.permissions = PermissionAccess(store: permissionStore, configuration: configuration, executor: executor)
        self.cache = BundleCache(
            root: configuration.cacheDirectory, namespace: configuration.cacheNamespace, lockTimeout: configuration.lockTimeout,
            executor: executor, logger: logger
        )
    }

    /// The configured platform, opened at the first call; throws ``ConfigurationError`` when none is
    /// configured or its settings are incomplete.
    public func platform() throws -> any PlatformAPI {
        try opened.withLock { opened throws -> OpenedPlatform in
            try platform(&opened)
        }.api
    }

    /// The configured platform's app list as texts (``AppListText``), for printing it without making a
    /// record of each app.
    package func appListText() async throws -> AppListText {
        try await opened.withLock { opened throws -> OpenedPlatform in try platform(&opened) }.appListText()
    }

    /// The installer, made at the first call, with the platform unless the configuration is offline or
    /// names none.
    public func installer() throws -> BundleInstaller {
        try opened.withLock { opened throws -> BundleInstaller in
            if let installer = opened.installer { return installer }
            let platform = configuration.offline || configuration.platform == nil ? nil : try platform(&opened).api
            let installer = try BundleInstaller(
                configuration: configuration, platform: platform, ownsPlatform: false, transport: transport(&opened), ownsTransport: false,
                executor: executor, permissions: permissions, logger: logger, cache: cache
            )
            opened.installer = installer
            return installer
        }
    }

    /// The permission store, opened (and created when it is a new SQLite file) at the first call, or
    /// the one given at ``init(configuration:connections:httpClient:permissionStore:executor:logger:)``;
    /// the installer's launch gate reads the same one.
    public func permissionStore() async throws -> PermissionStore {
        try await permissions.openedStore(lockTimeout: configuration.lockTimeout, logger: logger)
    }

    /// Closes what the runtime opened (the installer, the platform, their connections and event loops,
    /// the store it opened),
    /// waits for the installer's deletions, and shuts the executor down. Call it once, when done.
    public func shutdown() async {
        let (transport, platform, installer) = opened.withLock { opened in
            defer { opened = Opened() }
            return (opened.transport, opened.platform, opened.installer)
        }
        await installer?.shutdown()
        await platform?.api.close()
        try? await transport?.shutdown()
        await permissions.close()
        await executor.shutdown()
    }

    private func platform(_ opened: inout Opened) throws -> OpenedPlatform {
        if let platform = opened.platform { return platform }
        let platform = try Platforms.open(configuration, executor: executor, logger: logger) { (transport(&opened), false) }
        opened.platform = platform
        return platform
    }

    /// The one transport, made at the first call.
    func sharedTransport() -> HTTPTransport {
        opened.withLock { opened in transport(&opened) }
    }

    private func transport(_ opened: inout Opened) -> HTTPTransport {
        if let transport = opened.transport { return transport }
        let transport = HTTPTransport(network: configuration.network, httpClient: httpClient, executor: executor, connections: connections)
        opened.transport = transport
        return transport
    }
}
