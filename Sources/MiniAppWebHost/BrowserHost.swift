import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import MiniAppBridge
import MiniAppKit
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// A host for mini-apps in a browser: a host page on `localhost:<port>` shows each app in a frame of its
/// own origin (`<app>.localhost:<port>`), answers the app's bridge from its origin, and asks the user
/// for permissions on the host page, where the app cannot reach.
///
/// Decisions travel only from a host page holding its session's secret; an app's origin gets 403 on
/// every host endpoint. Files are served only from the installed version, while its launch gate is open.
public struct BrowserHost: Sendable {
    /// The installer whose cache holds the apps.
    public let installer: BundleInstaller
    /// The permission store the bridge and the launch gate read and write.
    public let store: PermissionStore
    /// The host's user (user-data answers) and its settings.
    public let profile: HostProfile
    public let environment: BridgeEnvironment
    public let identity: BridgeIdentity
    /// The address to listen on (loopback by default) and the port (0 picks a free one).
    public let host: String
    public let port: Int
    /// How big a bridge message may be.
    public let limits: BridgeLimits
    /// Actions the host adds to every app's bridge.
    public let customActions: [String: BridgeAction]
    let logger: Logger

    /// A host for the apps cached by `installer`.
    public init(
        installer: BundleInstaller, store: PermissionStore, profile: HostProfile = HostProfile(), environment: BridgeEnvironment? = nil,
        identity: BridgeIdentity, host: String = "127.0.0.1", port: Int = 0, limits: BridgeLimits = BridgeLimits(),
        customActions: [String: BridgeAction] = [:],
        logger: Logger = Logger(label: "miniapp.host", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.installer = installer
        self.store = store
        self.profile = profile
        self.environment = environment ?? profile.environment()
        self.identity = identity
        self.host = host
        self.port = port
        self.limits = limits
        self.customActions = customActions
        self.logger = logger
    }

    /// The origin label of an app: its id when that is a lowercase DNS label without `--`, else `id--`
    /// and a digest of the id (so that two apps never share an origin).
    public static func label(of appId: String) -> String {
        let bytes = Array(appId.utf8)
        let isLabel = (1...63).contains(bytes.count) && !appId.contains("--") && bytes.first != UInt8(ascii: "-") && bytes.last != UInt8(ascii: "-")
            && bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
        return isLabel ? appId : "id--" + SHA256Digest.hash(bytes).prefix(16).hexString
    }

    /// Serves the installed versions `records` (one per app: what ``BundleInstaller/load(appId:versionId:progress:)``
    /// installed) until SIGINT or SIGTERM (or cancellation), calling `onListening` with the host page's
    /// URL once bound.
    public func run(_ records: [InstallRecord], onListening: @escaping @Sendable (URL) async -> Void = { _ in }) async throws {
        var apps: [String: RunningApp] = [:]
        for record in records {
            let appId = record.id
            let manifest = try await installer.manifest(of: record)
            let events = EventLog()
            let board = self.board
            let services = BrowserHostServices(profile: profile, board: board, logger: logger)
            let dispatcher = BridgeDispatcher(
                appId: appId, manifest: manifest, store: store, services: services, environment: environment, identity: identity,
                customActions: customActions, logger: logger
            )
            apps[Self.label(of: appId)] = RunningApp(appId: appId, label: Self.label(of: appId), record: record, manifest: manifest, dispatcher: dispatcher, events: events)
        }
        let bound = NIOLockedValueBox(port)
        let responder = BrowserHostResponder(host: self, apps: apps, board: board, files: FileIO(), boundPort: bound)
        let forwarders = apps.values.map { app in
            Task {
                for await event in app.dispatcher.events() { app.events.append(event) }
            }
        }
        defer { forwarders.forEach { $0.cancel() } }
        let address = host
        let application = Application(
            responder: responder,
            server: .http1(configuration: HTTP1Channel.Configuration(idleTimeout: .seconds(60))),
            configuration: ApplicationConfiguration(address: .hostname(address, port: port), serverName: "\(PackageInfo.name)/\(PackageInfo.version)"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                bound.withLockedValue { $0 = port }
                await onListening(URL(string: "http://localhost:\(port)/")!)
            },
            logger: Logger(label: "miniapp.host", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        var configuration = ServiceGroupConfiguration(services: [.init(service: application)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = Duration.seconds(2)
        configuration.maximumCancellationDuration = Duration.seconds(1)
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch is CancellationError {
        }
    }

    private let board = HostBoard()
}

/// One app the host serves: its installed version, manifest and bridge.
struct RunningApp: Sendable {
    let appId: String
    let label: String
    let record: InstallRecord
    let manifest: BundleManifest
    let dispatcher: BridgeDispatcher
    let events: EventLog
}

/// The browser host's services: the profile's data, the host page's prompts.
struct BrowserHostServices: BridgeHostServices {
    let profile: HostProfile
    let board: HostBoard
    let logger: Logger

    func userName(appId: String) async throws(BridgeFailure) -> String { try await profile.userName(appId: appId) }
    func profilePhoto(appId: String) async throws(BridgeFailure) -> String { try await profile.profilePhoto(appId: appId) }
    func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] { try await profile.contacts(appId: appId) }
    func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken {
        try await profile.accessToken(appId: appId, audience: audience, scopes: scopes)
    }
    func points(appId: String) async throws(BridgeFailure) -> BridgePoints { try await profile.points(appId: appId) }
    func phoneNumber(appId: String) async throws(BridgeFailure) -> String { try await profile.phoneNumber(appId: appId) }
    func isLoggedIn(appId: String) async throws(BridgeFailure) -> Bool { try await profile.isLoggedIn(appId: appId) }
    func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] { try await board.ask(prompt) }
    func closeMiniApp(appId: String, withConfirmationAlert: Bool) async throws(BridgeFailure) { board.close(appId: appId) }

    func receive(appId: String, action: String, info: JSONValue) async throws(BridgeFailure) -> String {
        switch action {
        case "sendAnalytics", "configureAnalytics", "logEvent":
            logger.debug("mini-app report", metadata: ["app-id": "\(appId)", "action": "\(action)"])
            return action == "logEvent" ? "true" : "SUCCESS"
        default:
            throw .notSupported(action)
        }
    }
}
