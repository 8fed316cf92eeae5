import Foundation
public import Logging
public import MiniAppCore
public import MiniAppPermissions
import Synchronization

/// An action a host adds to its bridge: answers the app's parameters with the text the app receives.
public typealias BridgeAction = @Sendable (_ appId: String, _ param: JSONValue) async throws(BridgeFailure) -> String

/// The bridge of one running mini-app: answers each message the app sends, according to the installed
/// version's manifest and the permission store, and carries the host's events to the app.
///
/// Every message gets exactly one answer, whatever its action. A message is answered only under a live
/// ``BridgeCapability`` of the app's, which the host grants each load of the app through the open launch
/// gate (``grant()``) and takes back (``revoke(_:)``, ``revokeAll()``); the bridge ends every capability
/// itself when it finds the gate closed. User data is handed out only when the manifest declares the
/// custom permission and the store says `ALLOWED`; the user decides through
/// ``BridgeHostServices/askUser(_:)``, and decisions are written to the store with their history.
public final class BridgeDispatcher: Sendable {
    /// The running app.
    public let appId: String
    /// The running version's manifest.
    public let manifest: BundleManifest
    /// How the app calls: the actions answered, and their gates.
    public let dialect: BridgeDialect
    let store: PermissionStore
    let services: any BridgeHostServices
    /// The host's environment: the host may change it (a developer edits the host's profile), and every
    /// later call reads it.
    private let environmentState: Mutex<BridgeEnvironment>
    /// The faults the host forces on the app's actions.
    public let faults: BridgeFaults
    private let identity: BridgeIdentity
    private let customActions: [String: BridgeAction]
    private let logger: Logger
    private let eventStreams = Broadcast<BridgeEvent>(buffered: 64)
    private let callStreams = Broadcast<BridgeCall>(buffered: 256)
    private let capabilityStreams = Broadcast<BridgeCapabilityEvent>(buffered: 64)
    private let relayed = Mutex<Relay?>(nil)
    private let grants = BridgeGrants()
    /// When the launch gate was last found open; `nil` when it must be read again before the next call.
    private let gateOpenSince = Mutex<ContinuousClock.Instant?>(nil)
    /// How long the gate found open is trusted before the store is read again: how late a decision made
    /// outside this bridge (another process's `miniapp permissions deny`) ends the app's capabilities.
    /// Decisions made through the bridge or the host (``gateMayHaveChanged()``) are seen at once.
    public static let gateRecheck = Duration.seconds(1)

    /// The bridge of app `appId` running the version whose manifest is `manifest`.
    ///
    /// - Parameters:
    ///   - dialect: how the app calls its host: the actions answered and their gates (Rakuten's by default).
    ///   - customActions: actions the host adds, by name; a name the bridge already answers is ignored.
    ///   - faults: answers the host forces on actions (``BridgeFault``), checked before every call.
    ///   - logger: where the bridge logs refusals (app id and action, never the data).
    public init(
        appId: String, manifest: BundleManifest, store: PermissionStore, services: any BridgeHostServices,
        environment: BridgeEnvironment = BridgeEnvironment(), identity: BridgeIdentity, dialect: BridgeDialect = .rakuten,
        customActions: [String: BridgeAction] = [:], faults: BridgeFaults = BridgeFaults(),
        logger: Logger = Logger(label: "miniapp.bridge", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.appId = appId
        self.manifest = manifest
        self.dialect = dialect
        self.store = store
        self.services = services
        self.environmentState = Mutex(environment)
        self.faults = faults
        self.identity = identity
        let own = dialect.answersTheActionTable ? Self.builtInActions : Set(dialect.actions.map(\.name))
        self.customActions = customActions.filter { own.contains($0.key) == false }
        self.logger = logger
    }

    /// The host's environment as every later call reads it.
    public var environment: BridgeEnvironment { environmentState.withLock { $0 } }

    /// Makes every later call read `environment` (its locale, dark mode, storage limit...).
    public func setEnvironment(_ environment: BridgeEnvironment) {
        environmentState.withLock { $0 = environment }
    }

    // MARK: Capabilities

    /// A new capability for one load of the app, granted only while the launch gate is open (every
    /// permission the manifest requires is allowed); otherwise throws the SDK's authorization failure.
    public func grant() async throws(BridgeFailure) -> BridgeCapability {
        guard try await isGateOpen(readingNow: true) else {
            throw BridgeFailure(type: "AuthorizationFailureError", message: "the launch gate is closed: a permission the mini-app requires is not allowed")
        }
        let (capability, ended) = grants.grant()
        let relay = relayed.withLock { $0 }
        if capabilityStreams.isObserved || relay != nil {
            let live = grants.liveCount
            if ended > 0 { tell(.ended(count: ended, live: live - 1), relay) }
            tell(.granted(live: live), relay)
        }
        return capability
    }

    /// Ends `capability`: its calls in flight are cancelled (a prompt one raised leaves the host's page)
    /// and every later message holding it is refused.
    public func revoke(_ capability: BridgeCapability) {
        if grants.revoke(capability) { toldEnded(1) }
    }

    /// Ends every capability of the app: it closed, its gate closed, or its host stops.
    public func revokeAll() {
        toldEnded(grants.revokeAll())
    }

    private func toldEnded(_ count: Int) {
        let relay = relayed.withLock { $0 }
        guard count > 0, capabilityStreams.isObserved || relay != nil else { return }
        tell(.ended(count: count, live: grants.liveCount), relay)
    }

    private func tell(_ event: BridgeCapabilityEvent, _ relay: Relay?) {
        relay?.capability(event)
        capabilityStreams.send(event)
    }

    /// What the host that owns the dispatcher is told as each call ends and each capability is granted
    /// or ended, in the task that did it. The browser host passes these on to its own observers: through
    /// a stream of the dispatcher's, a relay starved of the pool's threads by a busy process could fall
    /// more than a stream's buffer behind and drop what its observers wait for.
    package struct Relay: Sendable {
        let call: @Sendable (BridgeCall) -> Void
        let capability: @Sendable (BridgeCapabilityEvent) -> Void

        package init(call: @escaping @Sendable (BridgeCall) -> Void, capability: @escaping @Sendable (BridgeCapabilityEvent) -> Void) {
            self.call = call
            self.capability = capability
        }
    }

    /// Makes `relay` hear every later call and capability change; the functions must return at once.
    package func relay(_ relay: Relay) {
        relayed.withLock { $0 = relay }
    }

    /// The app's capabilities granted and ended from now on, until the stream is dropped (the newest 64
    /// kept for a reader that falls behind).
    public func capabilityEvents() -> AsyncStream<BridgeCapabilityEvent> {
        capabilityStreams.subscribe()
    }

    /// Whether `capability` is one of the app's live capabilities.
    public func isLive(_ capability: BridgeCapability) -> Bool {
        grants.isLive(capability)
    }

    /// Reads the launch gate again (a host calls it after it stored a decision) and ends every capability
    /// when the gate is closed; returns whether it is open.
    @discardableResult
    public func gateMayHaveChanged() async -> Bool {
        gateOpenSince.withLock { $0 = nil }
        return (try? await isGateOpen(readingNow: true)) ?? false
    }

    /// Whether the gate is open, read from the store when asked to or when the last reading is older than
    /// ``gateRecheck``; a closed gate ends every capability.
    private func isGateOpen(readingNow: Bool) async throws(BridgeFailure) -> Bool {
        // A manifest that requires nothing has a gate that never closes.
        if manifest.reqPermissions.isEmpty { return true }
        let now = ContinuousClock.now
        if !readingNow, let since = gateOpenSince.withLock({ $0 }), now - since < Self.gateRecheck { return true }
        let decision: LaunchDecision
        do {
            decision = try await store.launchDecision(appId: appId, manifest: manifest)
        } catch {
            throw BridgeFailure(type: "PermissionStoreError", message: "the host cannot read the permission store: \(error)")
        }
        gateOpenSince.withLock { $0 = decision.allowed ? now : nil }
        if !decision.allowed { revokeAll() }
        return decision.allowed
    }

    // MARK: Messages

    /// The answer to `message`, sent by the holder of `capability`. Without a live capability of this
    /// app's, or once the launch gate is found closed, the answer is the SDK's `AuthorizationFailureError`
    /// and nothing is read, asked or changed. A capability that ends while its call runs cancels the call
    /// (a prompt leaves the host's page) and the call's answer is that refusal.
    public func reply(to message: BridgeMessage, capability: BridgeCapability?) async -> BridgeReply {
        let startedAt = Date(), clock = ContinuousClock.now
        let outcome: BridgeOutcome
        do {
            outcome = .success(try await answer(message, capability: capability))
        } catch {
            logger.debug("bridge call refused", metadata: ["app-id": "\(appId)", "action": "\(message.action)", "error-type": "\(error.type)"])
            outcome = .failure(error)
        }
        let relay = relayed.withLock { $0 }
        if callStreams.isObserved || relay != nil {
            let permission = gatingPermission(message.action, message.param)
            let call = BridgeCall(
                action: message.action, param: message.param, permission: permission,
                permissionDeclared: permission.map { declared.contains($0.rawValue) } ?? true, outcome: outcome,
                startedAt: startedAt, duration: ContinuousClock.now - clock
            )
            relay?.call(call)
            callStreams.send(call)
        }
        return BridgeReply(id: message.id, outcome: outcome)
    }

    /// The answer to the raw message `bytes`, decoded within `limits`, sent by the holder of
    /// `capability`; a message that cannot be read throws, and its sender answers the error by the id it kept.
    public func reply<Bytes: Collection<UInt8>>(
        toMessage bytes: Bytes, capability: BridgeCapability?, limits: BridgeLimits = BridgeLimits()
    ) async throws(BridgeMessageError) -> BridgeReply {
        await reply(to: try BridgeMessage(decoding: bytes, limits: limits), capability: capability)
    }

    /// Runs the call as a task of its own, which ending the capability cancels.
    private func answer(_ message: BridgeMessage, capability: BridgeCapability?) async throws(BridgeFailure) -> String? {
        guard let capability, grants.isLive(capability) else { throw .noCapability }
        guard try await isGateOpen(readingNow: false) else { throw .noCapability }
        let call = Task { () async -> Result<String?, BridgeFailure> in
            do throws(BridgeFailure) {
                try await faults.apply(to: message.action)
                return .success(try await answer(message.action, message.param))
            } catch {
                return .failure(error)
            }
        }
        guard let number = grants.begin(capability, cancel: { call.cancel() }) else {
            call.cancel()
            throw .noCapability
        }
        let result = await withTaskCancellationHandler { await call.value } onCancel: { call.cancel() }
        grants.end(capability, call: number)
        // An answer computed for a capability that ended meanwhile goes to no one.
        guard grants.isLive(capability) else { throw .noCapability }
        // A closed app's pages, and whatever it opened, speak for it no more.
        if message.action == "closeMiniApp", case .success = result { revokeAll() }
        return try result.get()
    }

    /// Every action the bridge answers itself, before custom ones: the answered actions of the table
    /// (``declarations``). A host's action of another name is added; one of these names is ignored.
    public static let builtInActions: Set<String> = Set(declarationList.filter { $0.answer == .answered }.map(\.name))

    /// The answer to `action`: a declared action the bridge answers (behind its permission), else a host's
    /// own action of that name, else the SDK's not-supported error for an action the SDK sends that this
    /// bridge cannot carry out, else an unknown action.
    private func answer(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String? {
        guard dialect.answersTheActionTable else { return try await answerInDialect(action, param) }
        guard let declaration = Self.declarations[action], declaration.answer == .answered else {
            if let custom = customActions[action] { return try await custom(appId, param) }
            if Self.declarations[action] != nil { throw .notSupported(action) }
            throw BridgeFailure(type: "UnknownActionError", message: "this host has no action '\(action)'")
        }
        if let permission = gatingPermission(action, param) { try await requireAllowed(permission) }
        return try await answerDeclared(action, param)
    }

    /// The answer to `action` of a dialect other than Rakuten's: the dialect's action behind its gate,
    /// else a host's own action of that name, else an unknown action.
    private func answerInDialect(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String? {
        guard let declared = dialect.action(named: action) else {
            if let custom = customActions[action] { return try await custom(appId, param) }
            throw BridgeFailure(type: "UnknownActionError", message: "this \(dialect.title) host has no action '\(Sanitizer.printable(action, limit: 64))'")
        }
        switch declared.gate {
        case .open: break
        case .permission(let permission): try await requireAllowed(permission)
        case .device(let name):
            guard try await services.devicePermission(appId: appId, name: name) else {
                if let refusal = declared.refusal { return refusal }
                throw BridgeFailure(type: "PERMISSION_DENIED", message: "the user has not allowed the device permission '\(Sanitizer.printable(name, limit: 64))'")
            }
        }
        switch declared.answer {
        case .table:
            return try await answerDeclared(action, param)
        case .host(let answer):
            return try await answer(BridgeDialect.Context(appId: appId, param: param, services: services, events: { [weak self] event in self?.send(event) }))
        }
    }

    /// The custom permission a call of `action` with `param` needs, as the dialect's gate says.
    func gatingPermission(_ action: String, _ param: JSONValue) -> KnownPermission? {
        guard !dialect.answersTheActionTable else { return Self.declarations[action]?.gate.permission(for: param) }
        if case .permission(let permission)? = dialect.action(named: action)?.gate { return permission }
        return nil
    }

    /// The names of the script methods whose actions `permission` gates (what an app's code calls), in
    /// the table's order.
    package static func methodNames(gatedBy permission: KnownPermission) -> [String] {
        var names: [String] = []
        for declaration in declarationList where declaration.gate.permissions.contains(permission) {
            for method in declaration.methods {
                for path in method.paths {
                    let name = String(path.split(separator: ".").last ?? Substring(path))
                    if !names.contains(name) { names.append(name) }
                }
            }
        }
        return names
    }

    /// The answer to an action of the table that the bridge answers, its permission already allowed.
    private func answerDeclared(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String? {
        switch action {
        case "getUniqueId": return identity.uniqueId(appId: appId)
        case "getMessagingUniqueId": return identity.messagingUniqueId(appId: appId)
        case "getMauid": return identity.mauid(appId: appId)
        case "getHostEnvironmentInfo":
            let environment = self.environment
            return JSONWriter.text(.object([
                "hostVersion": .string(environment.hostVersion), "sdkVersion": .string(environment.sdkVersion),
                "hostLocale": .string(environment.hostLocale), "platformVersion": .string(environment.platformVersion),
            ]))
        case "isDarkMode": return environment.darkMode ? "true" : "false"
        case "getHostAppThemeColors":
            let environment = self.environment
            return JSONWriter.text(.object(["primaryColor": .string(environment.primaryColor), "secondaryColor": .string(environment.secondaryColor)]))
        case "getFeatureList":
            return JSONWriter.text(.array((Self.builtInActions.union(customActions.keys)).sorted().map { .string($0) }))
        case "setScreenOrientation":
            guard case .string(let orientation)? = param["action"], Self.orientations.contains(orientation) else {
                throw .invalidParameters(action, "{\"action\": one of \(Self.orientations.sorted().joined(separator: ", "))}")
            }
            return "SUCCESS"
        case "closeMiniApp":
            try await services.closeMiniApp(appId: appId, withConfirmationAlert: param["withConfirmationAlert"] == .bool(true))
            return "SUCCESS"
        case "miniAppFinishedLoading", "setCloseAlert":
            return "SUCCESS"
        case "requestCustomPermissions": return try await requestCustomPermissions(param)
        case "getPermissionStatus":
            // The SDK asks of the device's permissions (`camera`, `gallery`, `microphone`); a custom
            // permission's name is answered from the store, as before the SDK said which it meant.
            guard case .string(let name)? = param["permissionName"], !name.isEmpty, name.utf8.count <= 256 else {
                throw .invalidParameters(action, "{\"permissionName\": \"camera\", \"gallery\", \"microphone\" or a custom permission}")
            }
            if Self.devicePermissions.contains(name.lowercased()) {
                return await services.devicePermissionStatus(appId: appId, name: name.lowercased()).rawValue
            }
            guard PermissionName.isValid(name) else { throw .invalidParameters(action, "{\"permissionName\": a permission name}") }
            return try await status(of: PermissionName.full(name)).rawValue
        case "requestPermission":
            guard case .string(let name)? = param["permission"], !name.isEmpty, name.utf8.count <= 64 else {
                throw .invalidParameters(action, "{\"permission\": a device permission such as \"location\"}")
            }
            guard try await services.devicePermission(appId: appId, name: name) else {
                throw BridgeFailure(type: "DENIED", message: "the user has not allowed the device permission '\(Sanitizer.printable(name, limit: 64))'")
            }
            return "ALLOWED"
        case "getUserName":
            return try await services.userName(appId: appId)
        case "getProfilePhoto":
            return try await services.profilePhoto(appId: appId)
        case "getContacts":
            // The SDK base64-decodes every name when it asked for them encoded (it always does).
            let encoded = param["isContactsEncodingRequired"] == .bool(true)
            return JSONWriter.text(.array(try await services.contacts(appId: appId).map { contact in
                var contact = contact
                if encoded { contact.name = contact.name.map { Data($0.utf8).base64EncodedString() } }
                return contact.json
            }))
        case "getAccessToken", "getExchangeToken":
            return try await accessToken(action, param)
        case "getPoints":
            return JSONWriter.text(try await services.points(appId: appId).json)
        case "sendMessageToContact", "sendMessageToContactId", "sendMessageToMultipleContacts":
            return try await sendMessage(action, param)
        case "downloadFile":
            guard case .string(let filename)? = param["filename"], case .string(let url)? = param["url"], !filename.isEmpty, !url.isEmpty else {
                throw .invalidParameters(action, "{\"filename\": string, \"url\": string, \"headers\": {string: string}}")
            }
            var headers: [String: String] = [:]
            if case .object(let fields)? = param["headers"] {
                for (name, value) in fields {
                    guard case .string(let text) = value else { throw .invalidParameters(action, "headers whose values are strings") }
                    headers[name] = text
                }
            }
            return try await services.downloadFile(appId: appId, filename: filename, url: url, headers: headers)
        case "setSecureStorageItems", "getSecureStorageItem", "removeSecureStorageItems", "clearSecureStorage", "getSecureStorageSize":
            return try await secureStorage(action, param)
        case "getPhoneNumber": return try await services.phoneNumber(appId: appId)
        case "isLoggedIn": return try await services.isLoggedIn(appId: appId) ? "true" : "false"
        // A browser has no SIM, no eSIM and no other app to open, and does not open its settings.
        case "canOpenAppDeeplink", "isAppDeeplinkSupported", "isEsimSupported", "isSimInstalled", "launchAppSettings": return "false"
        case "sendJsonToHostapp", "sendInfoToHostapp", "sendAnalytics", "configureAnalytics", "logEvent":
            return try await services.receive(appId: appId, action: action, info: param)
        default:
            if let answer = try await answerHostUI(action, param) { return answer }
            // Declared as answered, yet no case answers it: the table's test names every such action.
            throw BridgeFailure(type: "UnknownActionError", message: "this host declares '\(action)' but has no answer for it")
        }
    }

    /// The device permissions the SDK's `getPermissionStatus` asks about.
    static let devicePermissions: Set<String> = ["camera", "gallery", "microphone", "location", "phonestate"]

    private static let orientations: Set<String> = [
        "rakuten.miniapp.screen.LOCK_PORTRAIT", "rakuten.miniapp.screen.LOCK_LANDSCAPE", "rakuten.miniapp.screen.LOCK_RELEASE",
    ]

    // MARK: Permissions

    /// The full names the manifest declares.
    private var declared: Set<String> {
        Set((manifest.reqPermissions + manifest.optPermissions).map { PermissionName.full($0.name) })
    }

    /// The stored status of `name` for this app: `DENIED` while undecided.
    private func status(of name: String) async throws(BridgeFailure) -> PermissionStatus {
        do {
            return try await store.stored(appId: appId).first { $0.name == name }?.status ?? .denied
        } catch {
            throw BridgeFailure(type: "PermissionStoreError", message: "the host cannot read the permission store: \(error)")
        }
    }

    /// Throws the denied form unless the manifest declares `permission` and the store says `ALLOWED`.
    private func requireAllowed(_ permission: KnownPermission) async throws(BridgeFailure) {
        guard declared.contains(permission.rawValue) else { throw .denied(permission, declared: false) }
        guard try await status(of: permission.rawValue) == .allowed else { throw .denied(permission, declared: true) }
    }

    private func requestCustomPermissions(_ param: JSONValue) async throws(BridgeFailure) -> String {
        let expected = "{\"permissions\": [{\"name\": string, \"description\": string}], at most 64}"
        guard case .array(let requested)? = param["permissions"], requested.count <= 64 else {
            throw .invalidParameters("requestCustomPermissions", expected)
        }
        var names: [String] = []
        for item in requested {
            guard case .string(let name)? = item["name"], !name.isEmpty, name.utf8.count <= 256 else {
                throw .invalidParameters("requestCustomPermissions", expected)
            }
            names.append(name)
        }
        let stored: [String: PermissionStatus]
        do {
            stored = Dictionary(try await store.stored(appId: appId).map { ($0.name, $0.status) }, uniquingKeysWith: { first, _ in first })
        } catch {
            throw BridgeFailure(type: "PermissionStoreError", message: "the host cannot read the permission store: \(error)")
        }
        let declarations = manifest.reqPermissions.map { ($0, true) } + manifest.optPermissions.map { ($0, false) }
        var statuses: [String: PermissionStatus] = [:]
        var prompt: [PermissionPrompt.Item] = []
        for name in names where statuses[name] == nil {
            let full = KnownPermission(rawValue: name) != nil ? name : nil
            if let full, let decision = stored[full], declared.contains(full) {
                statuses[name] = decision
            } else if let full, declared.contains(full) {
                if !prompt.contains(where: { $0.name == full }) {
                    let declaration = declarations.first { PermissionName.full($0.0.name) == full }
                    prompt.append(PermissionPrompt.Item(name: full, reason: declaration?.0.reason, required: declaration?.1 ?? false))
                }
            } else {
                // Undeclared, or a name no SDK knows: refused without asking, as the native SDKs answer.
                statuses[name] = full == nil ? .notAvailable : .denied
            }
        }
        if !prompt.isEmpty {
            let decisions = try await services.askUser(PermissionPrompt(appId: appId, items: prompt))
            // The capability that asked ended while the prompt waited: nothing the page sent is kept.
            guard !Task.isCancelled else { throw .noCapability }
            let decided = prompt.compactMap { item -> (String, PermissionStatus)? in
                guard let status = decisions[item.name], status == .allowed || status == .denied else { return nil }
                return (item.name, status)
            }
            if !decided.isEmpty {
                do {
                    try await store.set(appId: appId, Dictionary(decided, uniquingKeysWith: { first, _ in first }), source: .bridge)
                } catch {
                    throw BridgeFailure(type: "PermissionStoreError", message: "the host cannot record the decisions: \(error)")
                }
                // The store changed: the next call reads the gate again rather than trust the last reading.
                gateOpenSince.withLock { $0 = nil }
            }
            for item in prompt { statuses[item.name] = decisions[item.name].flatMap { $0 == .allowed ? .allowed : .denied } ?? .denied }
        }
        var seen: Set<String> = []
        let answer: [JSONValue] = names.compactMap { name in
            guard seen.insert(name).inserted else { return nil }
            return .object(["name": .string(name), "status": .string((statuses[name] ?? .denied).rawValue)])
        }
        return JSONWriter.text(.object(["permissions": .array(answer)]))
    }

    // MARK: Tokens and messages

    private func accessToken(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String {
        guard case .string(let audience)? = param["audience"], case .array(let items)? = param["scopes"] else {
            throw .invalidParameters(action, "{\"audience\": string, \"scopes\": [string]}")
        }
        var scopes: [String] = []
        for item in items {
            guard case .string(let scope) = item else { throw .invalidParameters(action, "{\"audience\": string, \"scopes\": [string]}") }
            scopes.append(scope)
        }
        let listed = manifest.accessTokenPermissions.filter { $0.audience == audience }
        guard !listed.isEmpty else {
            throw BridgeFailure(type: "AudienceNotSupportedError", message: "the manifest lists no access token for the audience '\(Sanitizer.printable(audience, limit: 80))'")
        }
        let allowedScopes = Set(listed.flatMap(\.scopes))
        if let missing = scopes.first(where: { !allowedScopes.contains($0) }) {
            throw BridgeFailure(type: "ScopesNotSupportedError", message: "the manifest lists no scope '\(Sanitizer.printable(missing, limit: 80))' for the audience '\(Sanitizer.printable(audience, limit: 80))'")
        }
        let token = try await services.accessToken(appId: appId, audience: audience, scopes: scopes)
        return JSONWriter.text(.object([
            "token": .string(token.token),
            "validUntil": .number((token.validUntil.timeIntervalSince1970 * 1000).rounded()),
            "scopes": .object(["audience": .string(audience), "scopes": .array(scopes.map { .string($0) })]),
        ]))
    }

    private func sendMessage(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String {
        guard case .object? = param["messageToContact"], let message = param["messageToContact"] else {
            throw .invalidParameters(action, "{\"messageToContact\": {...}}")
        }
        let recipients: MessageRecipients
        switch action {
        case "sendMessageToContactId":
            guard case .string(let id)? = param["contactId"], !id.isEmpty else { throw .invalidParameters(action, "{\"contactId\": string, \"messageToContact\": {...}}") }
            recipients = .contact(id: id)
        case "sendMessageToMultipleContacts": recipients = .several
        default: recipients = .chosenByUser
        }
        let answer = try await services.sendMessage(appId: appId, message: message, to: recipients)
        switch answer {
        case .null: return "null"
        case .string(let id): return id
        default: return JSONWriter.text(answer)
        }
    }

    // MARK: Secure storage

    private func secureStorage(_ action: String, _ param: JSONValue) async throws(BridgeFailure) -> String? {
        let limit = environment.secureStorageLimit
        do {
            switch action {
            case "setSecureStorageItems":
                guard case .object(let fields)? = param["secureStorageItems"] else {
                    throw BridgeFailure.invalidParameters(action, "{\"secureStorageItems\": {string: string}}")
                }
                var items: [String: String] = [:]
                for (key, value) in fields {
                    guard case .string(let text) = value else { throw BridgeFailure.invalidParameters(action, "{\"secureStorageItems\": {string: string}}") }
                    items[key] = text
                }
                try await store.setStorageItems(appId: appId, items, limit: limit)
                return "SUCCESS"
            case "getSecureStorageItem":
                guard case .string(let key)? = param["secureStorageKey"] else { throw BridgeFailure.invalidParameters(action, "{\"secureStorageKey\": string}") }
                return try await store.storageItem(appId: appId, key: key)
            case "removeSecureStorageItems":
                guard case .array(let list)? = param["secureStorageKeyList"] else { throw BridgeFailure.invalidParameters(action, "{\"secureStorageKeyList\": [string]}") }
                var keys: [String] = []
                for item in list {
                    guard case .string(let key) = item else { throw BridgeFailure.invalidParameters(action, "{\"secureStorageKeyList\": [string]}") }
                    keys.append(key)
                }
                try await store.removeStorageItems(appId: appId, keys: keys)
                return "SUCCESS"
            case "clearSecureStorage":
                try await store.clearStorage(appId: appId)
                return "SUCCESS"
            default:
                let size = try await store.storageSize(appId: appId, limit: limit)
                return JSONWriter.text(.object(["used": .number(Double(size.used)), "max": .number(Double(size.max))]))
            }
        } catch let failure as BridgeFailure {
            throw failure
        } catch let error as SecureStorageError {
            switch error {
            case .full: throw BridgeFailure(type: "SecureStorageFullError", message: error.description)
            case .invalidItem: throw BridgeFailure(type: "SecureStorageIOError", message: error.description)
            case .busy: throw BridgeFailure(type: "SecureStorageBusyError", message: error.description)
            }
        } catch let error as PermissionStoreError {
            let type = switch error.category {
            case .busy: "SecureStorageBusyError"
            case .unavailable: "SecureStorageUnavailableError"
            default: "SecureStorageIOError"
            }
            throw BridgeFailure(type: type, message: "the host's storage failed: \(error.description)")
        } catch {
            throw BridgeFailure(type: "SecureStorageIOError", message: "the host's storage failed: \(error)")
        }
    }

    // MARK: Events

    /// The host's events for this app, from now on, until the stream is dropped.
    public func events() -> AsyncStream<BridgeEvent> {
        eventStreams.subscribe()
    }

    /// Sends `event` to every running copy of the app (each ``events()`` stream).
    public func send(_ event: BridgeEvent) {
        eventStreams.send(event)
    }

    // MARK: Calls

    /// Every message answered from now on, with its answer, until the stream is dropped (the newest 256
    /// kept for a reader that falls behind); nothing is recorded while no one listens.
    public func calls() -> AsyncStream<BridgeCall> {
        callStreams.subscribe()
    }
}

extension JSONValue {
    /// The field `key` of an object, or `nil`.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields[key]
    }
}
