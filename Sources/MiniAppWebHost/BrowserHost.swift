public import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
public import MiniAppBridge
public import MiniAppCore
public import MiniAppKit
public import MiniAppPermissions
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UnixSignals

/// A host for mini-apps in a browser: a host page on `localhost:<port>` shows each app in a frame of its
/// own origin (`<app>.localhost:<port>`), answers the app's bridge from its origin, and asks the user
/// for permissions on the host page, where the app cannot reach.
///
/// Decisions travel only from a host page holding its session's secret; an app's origin gets 403 on
/// every host endpoint. Files are served only from the installed version, while its launch gate is open.
/// Open apps with ``open(_:)`` (before or while it runs), then ``run(onListening:)``.
public final class BrowserHost: Sendable {
    /// The installer whose cache holds the apps: the runtime's.
    public let installer: BundleInstaller
    /// The permission store the bridge and the launch gate read and write: the runtime's.
    public let store: PermissionStore
    /// Where the host's blocking work runs (files, folders, peers): the runtime's executor.
    let executor: BlockingExecutor
    /// The host's user (user-data answers) and its settings, as the host page last set them
    /// (``setProfile(_:)``): every later call reads it.
    public var profile: HostProfile { profileState.withLockedValue { $0 } }
    /// The environment every app's bridge reads: the one given, under the profile's locale, host version
    /// and dark mode.
    public var environment: BridgeEnvironment { environmentState.withLockedValue { $0 } }
    private let profileState: NIOLockedValueBox<HostProfile>
    private let environmentState: NIOLockedValueBox<BridgeEnvironment>
    public let identity: BridgeIdentity
    /// The address to listen on (loopback by default) and the port (0 picks a free one).
    public let host: String
    public let port: Int
    /// How big a bridge message may be.
    public let limits: BridgeLimits
    /// Actions the host adds to every app's bridge.
    public let customActions: [String: BridgeAction]
    /// How the host's apps call it: the script in their pages, the actions answered, the host page's chrome.
    public let dialect: BridgeDialect
    /// Where apps are launched, over the profile's `launch` and the dialect's.
    public let launch: Launch
    let logger: Logger
    /// Where the host's observers hear of everything (``callbacks(buffered:)``).
    let hub = CallbackHub()
    let board: HostBoard
    let uploads = UploadStore()
    /// The host's own services over the defaults, when it replaces some of them.
    let layer: (@Sendable (_ appId: String, _ defaults: any BridgeHostServices) -> any BridgeHostServices)?
    /// What observing the host started: the tasks that carry the store's and the installer's changes.
    private let observing = Mutex<[Task<Void, Never>]?>(nil)
    /// Each open app's launch gate as last told.
    private let gates = Mutex<[String: LaunchDecision]>([:])
    /// The apps served, by origin label.
    private let apps = Mutex<[String: RunningApp]>([:])
    /// What the host page's panel keeps of each app, by app id: it outlives the app's bridges (a
    /// development folder's changed manifest makes a new one).
    private let panels = Mutex<[String: AppPanel]>([:])
    /// The port once bound (for port 0), else the one asked for.
    let boundPort: NIOLockedValueBox<Int>

    /// Where the host page loads its apps: a path and query items, over the host profile's `launch` and
    /// the dialect's (a query item of the same name is replaced).
    public struct Launch: Sendable, Equatable {
        /// The path, such as `/dashboards/1234`; the profile's or the dialect's when `nil`.
        public var path: String?
        /// Query items added last.
        public var query: [URLQueryItem]

        /// A launch at `path` with `query`.
        public init(path: String? = nil, query: [URLQueryItem] = []) {
            self.path = path
            self.query = query
        }
    }

    /// A host for the apps cached by `runtime`'s installer, with its permission store, speaking
    /// `dialect` (the profile's, else Rakuten's, when `nil`). Opens the installer and the store when
    /// the runtime has not yet (see ``MiniAppRuntime/installer()`` and ``MiniAppRuntime/permissionStore()``).
    public init(
        runtime: MiniAppRuntime, profile: HostProfile = HostProfile(), environment: BridgeEnvironment? = nil,
        identity: BridgeIdentity, host: String = "127.0.0.1", port: Int = 0, limits: BridgeLimits = BridgeLimits(),
        dialect: BridgeDialect? = nil, launch: Launch = Launch(), customActions: [String: BridgeAction] = [:],
        services: (@Sendable (_ appId: String, _ defaults: any BridgeHostServices) -> any BridgeHostServices)? = nil,
        logger: Logger = Logger(label: "miniapp.host", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws {
        let installer = try runtime.installer()
        let store = try await runtime.permissionStore()
        self.executor = runtime.executor
        self.dialect = dialect ?? profile.dialect.flatMap { BridgeDialect.builtIn[$0] } ?? .rakuten
        self.launch = launch
        self.layer = services
        self.board = HostBoard(hub: hub)
        self.installer = installer
        self.store = store
        self.profileState = NIOLockedValueBox(profile)
        self.environmentState = NIOLockedValueBox(environment ?? profile.environment())
        self.identity = identity
        self.host = host
        self.port = port
        self.limits = limits
        self.customActions = customActions
        self.logger = logger
        self.boundPort = NIOLockedValueBox(port)
        board.gateDecider.withLock { decider in
            decider = { [weak self] appId, missing, allowed in await self?.decideGate(appId: appId, missing: missing, allowed: allowed) ?? false }
        }
    }

    /// The origin label of an app: its id when that is a lowercase DNS label without `--`, else `id--`
    /// and a digest of the id (so that two apps never share an origin).
    public static func label(of appId: String) -> String {
        let bytes = Array(appId.utf8)
        let isLabel = (1...63).contains(bytes.count) && !appId.contains("--") && bytes.first != UInt8(ascii: "-") && bytes.last != UInt8(ascii: "-")
            && bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
        return isLabel ? appId : "id--" + SHA256Digest.hash(bytes).prefix(16).hexString
    }

    /// Serves the installed version `record` (what ``BundleInstaller/load(appId:versionId:progress:)``
    /// installed), in place of any version of the same app served before; answers its bridge.
    @discardableResult
    public func open(_ record: InstallRecord) async throws -> BridgeDispatcher {
        let manifest = try await installer.manifest(of: record)
        return serve(appId: record.id, root: record.path, versionId: record.versionId, manifest: manifest, development: nil)
    }

    /// Serves the app `appId` from `root` under `manifest`, in place of whatever was served as that app,
    /// whose capabilities end: the one path by which an installed version and a development folder are
    /// served.
    @discardableResult
    func serve(appId: String, root: String, versionId: String, manifest: BundleManifest, development: DevelopmentSession?) -> BridgeDispatcher {
        let panel = panels.withLock { panels in
            if let kept = panels[appId] { return kept }
            let made = AppPanel()
            panels[appId] = made
            return made
        }
        let label = Self.label(of: appId), bound = boundPort
        let place = BrowserHostServices.Place(
            root: root, appOrigin: { "http://\(label).localhost:\(bound.withLockedValue { $0 })" }, hostOrigin: { "http://localhost:\(bound.withLockedValue { $0 })" }
        )
        let defaults = BrowserHostServices(
            profile: profileState, board: board, store: store, logger: logger, place: place, signals: panel.signals, uploads: uploads
        )
        let services = layer.map { $0(appId, defaults) } ?? defaults
        let dispatcher = BridgeDispatcher(
            appId: appId, manifest: manifest, store: store, services: services, environment: environment, identity: identity,
            dialect: dialect, customActions: customActions, faults: panel.faults, logger: logger
        )
        let events = EventLog()
        let board = self.board, hub = self.hub
        let sent = dispatcher.events()
        let forwarder = Task {
            for await event in sent { events.append(event) }
        }
        dispatcher.relay(BridgeDispatcher.Relay(
            call: { call in
                panel.calls.append(call)
                hub.send(.call(appId: appId, call))
                // A development folder's developer hears of each action the manifest forgot.
                guard let development, let warning = call.undeclaredPermissionWarning, development.warn(warning) else { return }
                development.continuation.yield(.undeclaredPermission(warning))
                board.notifyDevelopment(appId: appId, kind: "warning")
            },
            capability: { event in hub.send(.capability(appId: appId, event)) }
        ))
        let app = RunningApp(
            appId: appId, label: Self.label(of: appId), root: root, versionId: versionId, manifest: manifest, dispatcher: dispatcher,
            events: events, panel: panel, forwarder: forwarder, development: development
        )
        let replaced = apps.withLock { $0.updateValue(app, forKey: app.label) }
        replaced?.forwarder.cancel()
        replaced?.dispatcher.revokeAll()
        if let replaced { hub.send(.appClosed(appId: replaced.appId, .replaced)) }
        hub.send(.appOpened(appId: appId, versionId: versionId))
        if hub.isObserved {
            gates.withLock { _ = $0.removeValue(forKey: appId) }
            Task { await self.gateMayHaveChanged(appId: appId, source: nil) }
        }
        return dispatcher
    }

    // MARK: Observing

    /// Everything the host does and hears from now on, as its page sees it and more: the prompts and
    /// sheets that need the user (each answerable here as on the page: ``HostPrompt``), the apps' calls
    /// and signals, apps opened and closed, capabilities granted and ended, launch gates, permission
    /// decisions (whoever made them, another process sharing the store included), the profile, and
    /// the installer's installs.
    ///
    /// Any number of observers, each with a stream of its own that ends when its task does (or when the
    /// host goes). Sending never waits for an observer: each stream keeps the newest `buffered`
    /// callbacks its reader has not read and drops older ones, so a slow observer slows neither the
    /// apps nor the other observers (a prompt it missed still waits, and the page still shows it). The
    /// first observer starts the watch of the store (and the launch gates of the apps open then are told).
    public func callbacks(buffered: Int = 256) async -> AsyncStream<HostCallback> {
        let stream = hub.subscribe(buffered: buffered)
        let starting = observing.withLock { tasks -> Bool in
            guard tasks == nil else { return false }
            tasks = []
            return true
        }
        if starting { await startObserving() }
        return stream
    }

    /// Starts carrying the installer's installs and the store's decisions to the observers.
    private func startObserving() async {
        let hub = self.hub
        let installs = installer.installs()
        var tasks = [Task { for await event in installs { hub.send(.install(event)) } }]
        do {
            let changes = try await store.decisionChanges()
            tasks.append(Task { [weak self] in
                for await change in changes {
                    hub.send(.permissionChanged(change))
                    await self?.gateMayHaveChanged(appId: change.appId, source: change.source)
                }
            })
        } catch {
            logger.warning("the permission store cannot be watched: observers hear no decision made elsewhere", metadata: ["error": "\(error)"])
        }
        observing.withLock { $0 = tasks }
        for app in openApps { await gateMayHaveChanged(appId: app.appId, source: nil) }
    }

    /// Reads the launch gate of `appId` when it is open, and tells a change: a closed gate waits as a
    /// prompt for the host's observers, which an open one settles (by whoever decided, `source`).
    func gateMayHaveChanged(appId: String, source: PermissionDecisionSource?) async {
        guard let app = openApps.first(where: { $0.appId == appId }),
              let decision = try? await store.launchDecision(appId: appId, manifest: app.manifest) else { return }
        let changed = gates.withLock { gates -> Bool in
            guard gates[appId] != decision else { return false }
            gates[appId] = decision
            return true
        }
        guard changed else { return }
        // A decision made in another process ends the app's capabilities now, not at the next recheck.
        if !decision.allowed, source != nil { await app.dispatcher.gateMayHaveChanged() }
        hub.send(.launchGate(appId: appId, decision))
        if decision.allowed {
            let settler: HostPrompt.Settler = switch source {
            case .hostPage?: .page
            case .host?: .host
            default: .elsewhere
            }
            board.settleGate(appId: appId, by: settler, answered: true)
        } else {
            board.raiseGate(appId: appId, missing: decision.missing)
        }
    }

    /// What a launch gate prompt answered from code does: the missing permissions allowed or denied in
    /// the store (the host's decision), and the app's pages told.
    func decideGate(appId: String, missing: [String], allowed: Bool) async -> Bool {
        guard let app = openApps.first(where: { $0.appId == appId }) else { return false }
        do {
            try await store.set(appId: appId, Dictionary(uniqueKeysWithValues: missing.map { ($0, allowed ? .allowed : .denied) }), source: .host)
        } catch {
            logger.warning("a launch gate's decision was not kept", metadata: ["app-id": "\(appId)", "error": "\(error)"])
            return false
        }
        await app.dispatcher.gateMayHaveChanged()
        board.notifyStateChanged(appId: appId)
        return true
    }

    deinit {
        observing.withLock { $0 }?.forEach { $0.cancel() }
        hub.finish()
    }

    /// Makes `profile` the host's user and settings for every later call of every app: its locale, host
    /// version and dark mode replace the environment's, and its `loggedIn` replaces a login or logout
    /// made on the host page.
    public func setProfile(_ profile: HostProfile) {
        let defaults = BridgeEnvironment()
        let environment = environmentState.withLockedValue { environment in
            environment.hostLocale = defaults.hostLocale
            environment.hostVersion = defaults.hostVersion
            environment.darkMode = defaults.darkMode
            environment = profile.environment(environment)
            return environment
        }
        profileState.withLockedValue { $0 = profile }
        board.loggedIn.withLock { $0 = nil }
        openApps.forEach { $0.dispatcher.setEnvironment(environment) }
        hub.send(.profileChanged(profile))
    }

    /// Sends `event` to every page of the app `appId` that runs in this host; `false` when it is not open.
    @discardableResult
    public func send(_ event: BridgeEvent, to appId: String) -> Bool {
        guard let app = app(label: Self.label(of: appId)), app.appId == appId else { return false }
        app.dispatcher.send(event)
        return true
    }

    /// The path and the encoded query the host page loads an app at: `launch`'s, over the profile's,
    /// over the dialect's (whose session token item comes from the profile's `sessionToken`).
    var launchLocation: (path: String, query: String) {
        let profile = self.profile
        let path = launch.path ?? profile.launch?.path ?? dialect.launch.path
        var items: [(String, String)] = []
        func add(_ name: String, _ value: String) {
            items.removeAll { $0.0 == name }
            items.append((name, value))
        }
        for item in dialect.launch.query {
            switch item.value {
            case .text(let value): add(item.name, value)
            case .sessionToken: if let token = profile.sessionToken { add(item.name, token) }
            }
        }
        for (name, value) in (profile.launch?.query ?? [:]).sorted(by: { $0.key < $1.key }) { add(name, value) }
        for item in launch.query { add(item.name, item.value ?? "") }
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return (path, items.map { encoded($0.0) + "=" + encoded($0.1) }.joined(separator: "&"))
    }

    /// The bridge of the app `appId` the host serves now, if it serves it.
    public func dispatcher(appId: String) -> BridgeDispatcher? {
        openApps.first { $0.appId == appId }?.dispatcher
    }

    /// The app served on origin label `label`.
    func app(label: String) -> RunningApp? { apps.withLock { $0[label] } }

    /// Every app served.
    var openApps: [RunningApp] { apps.withLock { Array($0.values) } }

    /// The URL of the host page showing `appId`, once the host listens.
    public func pageURL(appId: String) -> URL {
        URL(string: "http://localhost:\(boundPort.withLockedValue { $0 })/apps/\(appId)")!
    }

    /// The identity whose secret is kept in `directory` (`bridge.secret`, 0600), made on first use: each
    /// app's identifiers stay the same from one run of the host to the next. The files are read and
    /// written on `executor`.
    public static func identity(keptIn directory: String, executor: BlockingExecutor) async throws -> BridgeIdentity {
        try await executor.run {
            let path = directory + "/bridge.secret"
            if case .contents(let bytes) = FileReading.read(path, followingLinks: false), bytes.count == 32 {
                return BridgeIdentity(secret: bytes)
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Durability.writeAtomically(Data(BridgeIdentity.randomSecret()), to: path, durable: true, mode: 0o600)
            // Two hosts starting at once each write one: both go on with the one that stayed.
            guard case .contents(let bytes) = FileReading.read(path, followingLinks: false), bytes.count == 32 else {
                throw CacheError.io(path: path, reason: "the bridge's secret cannot be read back", diskFull: false)
            }
            return BridgeIdentity(secret: bytes)
        }
    }

    /// Opens `records`, then serves them as ``run(onListening:)`` does.
    public func run(_ records: [InstallRecord], onListening: @escaping @Sendable (URL) async -> Void = { _ in }) async throws {
        for record in records { try await open(record) }
        try await run(onListening: onListening)
    }

    /// Serves the open apps until SIGINT or SIGTERM (or cancellation), calling `onListening` with the
    /// host page's URL once bound.
    public func run(onListening: @escaping @Sendable (URL) async -> Void = { _ in }) async throws {
        let responder = BrowserHostResponder(host: self, files: FileIO())
        let bound = boundPort
        defer {
            apps.withLock { $0.values.forEach { $0.forwarder.cancel() } }
            // Pages left open in a browser hold capabilities of a host that is gone.
            openApps.forEach { $0.dispatcher.revokeAll() }
            for app in openApps { hub.send(.appClosed(appId: app.appId, .hostStopped)) }
        }
        let application = Application(
            responder: responder,
            server: .http1(configuration: HTTP1Channel.Configuration(idleTimeout: .seconds(60))),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "\(PackageInfo.name)/\(PackageInfo.version)"),
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
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EACCES {
            throw BrowserHostError.cannotListen(host: host, port: port, reason: String(cString: strerror(error.errnoCode)))
        }
    }
}

/// A browser host that cannot run.
public enum BrowserHostError: CategorizedError, Equatable {
    /// The address cannot be listened on (in use, or not allowed).
    case cannotListen(host: String, port: Int, reason: String)

    public var category: ErrorCategory { .usage }

    public var description: String {
        switch self {
        case .cannotListen(let host, let port, let reason):
            return "the browser host cannot listen on \(host):\(port) (\(reason)): choose another port, or 0 for a free one"
        }
    }
}

/// One app the host serves: where its files are, its manifest and its bridge.
struct RunningApp: Sendable {
    let appId: String
    let label: String
    /// The folder its files are served from: an installed version's, or a development folder.
    let root: String
    /// The installed version's id, or ``BrowserHost/developmentVersionId`` for a development folder.
    let versionId: String
    let manifest: BundleManifest
    let dispatcher: BridgeDispatcher
    let events: EventLog
    /// The calls and faults the host page's panel shows.
    let panel: AppPanel
    /// Carries the dispatcher's events into ``events``, its calls into ``panel`` (and, for a development
    /// folder, into warnings).
    let forwarder: Task<Void, Never>
    /// The development folder's session, when the app is served from one.
    let development: DevelopmentSession?
}
