import Foundation
import Hummingbird
import HTTPTypes
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import MiniAppPermissions
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization
internal import CDispatch

/// Answers the host page's origin and every app's origin, told apart by the `Host` header.
struct BrowserHostResponder: HTTPResponder {
    typealias Context = HostRequestContext
    let host: BrowserHost
    let files: FileIO

    var board: HostBoard { host.board }

    static let sessionHeader = HTTPField.Name("X-Miniapp-Session")!
    /// The header in which the app's document sends the capability its host page handed it.
    static let capabilityHeader = HTTPField.Name("X-Miniapp-Capability")!

    func respond(to request: Request, context: HostRequestContext) async throws -> Response {
        var response: Response
        do {
            response = try await route(request, context: context)
        } catch {
            response = Self.json(.internalServerError, ["error": .string("the host could not answer")])
        }
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return response
    }

    private func route(_ request: Request, context: HostRequestContext) async throws -> Response {
        let port = host.boundPort.withLockedValue { $0 }
        guard let authority = request.head.authority, let name = Self.hostName(authority, port: port) else {
            return Self.text(.misdirectedRequest, "this host answers localhost:\(port) and its apps' origins only")
        }
        if name == "localhost" || name == "127.0.0.1" {
            return try await hostRoute(request, origin: "http://\(authority)", port: port, context: context)
        }
        if name.hasSuffix(".localhost"), let app = host.app(label: String(name.dropLast(".localhost".count))) {
            return try await appRoute(request, app: app, origin: "http://\(authority)", port: port, context: context)
        }
        return Self.text(.misdirectedRequest, "no mini-app runs on \(Sanitizer.printable(name, limit: 80))")
    }

    /// The name of `authority` (`name:port`) when its port is the host's, lowercased.
    static func hostName(_ authority: String, port: Int) -> String? {
        guard let colon = authority.lastIndex(of: ":"), authority[authority.index(after: colon)...] == "\(port)" else { return nil }
        let name = authority[..<colon].lowercased()
        return name.isEmpty ? nil : name
    }

    // MARK: The host page's origin

    private func hostRoute(_ request: Request, origin: String, port: Int, context: HostRequestContext) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/api/") {
            // Only a host page of this origin holding a live session's secret may ask or decide.
            if let sent = request.headers[.origin], sent != origin {
                return Self.json(.forbidden, ["error": .string("host endpoints answer the host page only")])
            }
            guard board.isSession(request.headers[Self.sessionHeader]) else {
                return Self.json(.forbidden, ["error": .string("host endpoints need the host page's session")])
            }
            return try await api(request, path: String(path.dropFirst("/api/".count)))
        }
        guard request.method == .get || request.method == .head else { return Self.text(.methodNotAllowed, "only GET is served here") }
        if path.hasPrefix("/uploads/") {
            // An image the host's upload took: its link is the app's, unguessable, served to any page.
            guard let image = host.uploads.image(String(path.dropFirst("/uploads/".count))) else { return Self.text(.notFound, "no such upload") }
            var response = Response(status: .ok, headers: [.contentType: image.type], body: ResponseBody(byteBuffer: ByteBuffer(bytes: image.bytes)))
            response.headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
            response.headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "cross-origin"
            return response
        }
        if path == "/" || path.hasPrefix("/apps/"), !Self.isTopLevelVisit(request) {
            // A page, and with it a session, only for the user's own visit: an app's fetch, frame or
            // cross-site window must not mint sessions (nor push the user's out of the list).
            return Self.text(.forbidden, "open the host page in the browser's address bar")
        }
        if path == "/" || path.hasPrefix("/apps/") {
            // The page hands out the session that every host endpoint needs: another local user's
            // program must not get one. Checked here, not at every request: reading the kernel's socket
            // tables costs more the more sockets the machine has.
            let remote = context.remoteAddress, local = context.localAddress
            guard try await host.executor.run({ LoopbackPeer.isOwnUser(remote: remote, local: local) }) else {
                return Self.text(.forbidden, "the host page answers the user who runs it only")
            }
        }
        switch path {
        case "/host.js":
            return Self.body(HostPage.script, type: "text/javascript; charset=utf-8")
        case "/host.css":
            return Self.body(PageResources.text(.hostStyle), type: "text/css; charset=utf-8")
        case "/panel.js":
            return Self.body(HostPanel.script, type: "text/javascript; charset=utf-8")
        case "/panel.css":
            return Self.body(HostPanel.style, type: "text/css; charset=utf-8")
        case "/":
            // The one app the host runs (apps served only for a tab of the host's tab bar aside).
            let tabApps = Set((host.profile.tabs ?? []).compactMap(\.app))
            let apps = host.openApps.filter { !tabApps.contains($0.appId) }
            guard apps.count == 1, let app = apps.first else { return page(for: nil, port: port) }
            return page(for: app, port: port)
        default:
            if path.hasPrefix("/apps/"), let app = host.openApps.first(where: { $0.appId == String(path.dropFirst("/apps/".count)) }) {
                return page(for: app, port: port)
            }
            return Self.text(.notFound, "no such page")
        }
    }

    /// Whether the request is a top-level visit of the user's (typed, bookmarked, or a link of the host
    /// page itself), as the browser's fetch metadata says; clients that send none (command-line tools)
    /// are let through.
    static func isTopLevelVisit(_ request: Request) -> Bool {
        let destination = request.headers[HTTPField.Name("Sec-Fetch-Dest")!]
        let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!]
        return (destination == nil || destination == "document") && (site == nil || site == "none" || site == "same-origin")
    }

    private func page(for app: RunningApp?, port: Int) -> Response {
        let secret = board.openSession()
        let frames = "http://*.localhost:\(port)"
        let apps = host.openApps
        let appOrigin = app.map { "http://\($0.label).localhost:\(port)" }
        let html = HostPage.html(
            appId: app?.appId, appOrigin: appOrigin, apps: apps.map(\.appId).sorted(), dialect: host.dialect.name, session: secret,
            data: pageData(appOrigin: appOrigin, apps: apps, port: port)
        )
        var response = Self.body(html, type: "text/html; charset=utf-8")
        // The file viewer shows web pages (without their scripts), the players play media from anywhere,
        // the now-playing card shows the podcast's image.
        response.headers[.contentSecurityPolicy] = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: http: https:; media-src http: https: data: blob:; connect-src 'self'; frame-src \(frames) http: https:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// What the host page's scripts read: the dialect and its events, where apps launch, the tabs and
    /// navigation of the host profile, the apps' origins.
    private func pageData(appOrigin: String?, apps: [RunningApp], port: Int) -> JSONValue {
        let profile = host.profile, dialect = host.dialect, launch = host.launchLocation
        var fields: [String: JSONValue] = [
            "appOrigin": appOrigin.map { .string($0) } ?? .null,
            "origins": .object(Dictionary(uniqueKeysWithValues: apps.map { ($0.appId, .string("http://\($0.label).localhost:\(port)")) })),
            "dialect": .object(["name": .string(dialect.name), "title": .string(dialect.title), "anyEvent": .bool(dialect.transports.contains(.miniAppBridge))]),
            "events": .array(dialect.events.map { .object(["name": .string($0.name), "example": .string($0.example), "summary": .string($0.summary)]) }),
            "launch": .object(["path": .string(launch.path), "query": .string(launch.query)]),
            "labels": HostPage.labels,
            "sample": .bool(profile.sample == true),
        ]
        let encoder = JSONEncoder()
        func json<Value: Encodable>(_ value: Value?) -> JSONValue {
            guard let value, let data = try? encoder.encode(value), let parsed = JSONReader.value(Array(data), maxDepth: 16) else { return .null }
            return parsed
        }
        fields["tabs"] = json(profile.tabs)
        fields["navigation"] = json(profile.navigation)
        fields["biometrics"] = json(profile.biometrics)
        return .object(fields)
    }

    private func api(_ request: Request, path: String) async throws -> Response {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch (request.method, parts.count) {
        case (.get, 1) where parts[0] == "notices":
            let after = Int(request.uri.queryParameters["after"].map(String.init) ?? "0") ?? 0
            let (next, notices) = await board.notices(after: max(0, after), wait: .seconds(20))
            return Self.json(.ok, ["next": .number(Double(next)), "notices": .array(notices.map(\.json))])
        case (.post, 2) where parts[0] == "prompts":
            guard let id = Int(parts[1]), let decisions = try await Self.decisions(request) else {
                return Self.json(.badRequest, ["error": .string("send {\"decisions\": {name: \"ALLOWED\" or \"DENIED\"}} to a prompt id")])
            }
            guard board.settle(id, with: decisions) else { return Self.json(.notFound, ["error": .string("no such prompt is waiting")]) }
            return Self.json(.ok, ["settled": .bool(true)])
        case (.post, 2) where parts[0] == "sheets":
            // The user's answer to a sheet: `{"answer": ...}`, or `{"dismissed": true}`. A gallery image
            // comes as base64, hence the room.
            var request = request
            let body = try await request.collectBody(upTo: 4 << 20)
            guard let id = Int(parts[1]), case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 16),
                  fields["answer"] != nil || fields["dismissed"] == .bool(true) else {
                return Self.json(.badRequest, ["error": .string("send {\"answer\": ...} or {\"dismissed\": true} to a sheet id")])
            }
            guard board.answer(id, with: fields["answer"]) else { return Self.json(.notFound, ["error": .string("no such sheet is waiting")]) }
            return Self.json(.ok, ["answered": .bool(true)])
        case (.post, 3) where parts[0] == "apps" && parts[2] == "events":
            // The host sends the app an event: its pages receive it as the dialect's apps expect.
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            var request = request
            let body = try await request.collectBody(upTo: 64 * 1024)
            guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 4), case .string(let name)? = fields["name"],
                  !name.isEmpty, name.utf8.count <= 128 else {
                return Self.json(.badRequest, ["error": .string("send {\"name\": string, \"message\": string}")])
            }
            var message = ""
            if case .string(let text)? = fields["message"] { message = text }
            let dialect = host.dialect
            if !dialect.transports.contains(.miniAppBridge) {
                guard let event = dialect.event(named: name) else {
                    let known = dialect.events.map(\.name).joined(separator: ", ")
                    return Self.json(.badRequest, ["error": .string("a \(dialect.title) host sends \(known); not \(Sanitizer.printable(name, limit: 64))")])
                }
                let json: Bool = switch event.delivery {
                case .function(_, .json, _), .inputValue: true
                default: false
                }
                if json, JSONReader.value(Array(message.utf8), maxDepth: 16) == nil {
                    return Self.json(.badRequest, ["error": .string("\(name) carries a JSON message, such as \(event.example)")])
                }
            }
            app.dispatcher.send(BridgeEvent(name: name, message: message))
            return Self.json(.ok, ["sent": .bool(true)])
        case (.post, 3) where parts[0] == "apps" && parts[2] == "notifications":
            // A notification for the app's user, as the host's push service would bring it: shown at once
            // once the app is ready for notifications, held back until then.
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            var request = request
            let body = try await request.collectBody(upTo: 16 * 1024)
            guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 2), case .string(let title)? = fields["title"],
                  !title.isEmpty, title.utf8.count <= 256 else {
                return Self.json(.badRequest, ["error": .string("send {\"title\": string, \"body\": string}")])
            }
            var text = ""
            if case .string(let value)? = fields["body"] { text = String(value.prefix(2048)) }
            let shown = app.panel.signals.post(title: title, body: text)
            if let shown { board.inform(appId: app.appId, kind: "notification", payload: shown) }
            return Self.json(.ok, ["shown": .bool(shown != nil), "held": .number(Double(app.panel.signals.snapshot.held.count))])
        case (.post, 1) where parts[0] == "online":
            // The host page's browser online or not: what `online_status` answers without a profile's say.
            var request = request
            let body = try await request.collectBody(upTo: 1024)
            guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 2), case .bool(let online)? = fields["online"] else {
                return Self.json(.badRequest, ["error": .string("send {\"online\": bool}")])
            }
            board.online.withLock { $0 = online }
            return Self.json(.ok, ["online": .bool(online)])
        case (.get, 2) where parts[0] == "apps":
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            return try await state(of: app)
        case (.post, 3) where parts[0] == "apps" && parts[2] == "permissions":
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            guard let decisions = try await Self.decisions(request) else {
                return Self.json(.badRequest, ["error": .string("send {\"decisions\": {name: \"ALLOWED\" or \"DENIED\"}}")])
            }
            let declared = Set((app.manifest.reqPermissions + app.manifest.optPermissions).map { PermissionName.full($0.name) })
            let chosen = decisions.filter { declared.contains(PermissionName.full($0.key)) }
            guard chosen.count == decisions.count else { return Self.json(.badRequest, ["error": .string("the manifest does not declare every permission named")]) }
            if !chosen.isEmpty {
                try await host.store.set(appId: app.appId, chosen, source: .hostPage)
                // A required permission revoked or denied closes the gate: the app's pages lose the bridge.
                await app.dispatcher.gateMayHaveChanged()
            }
            return try await state(of: app)
        case (.post, 3) where parts[0] == "apps" && parts[2] == "grants":
            // The host page grants the document that greeted it from the app's frame, giving back the
            // capability of the document that was there before.
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            var request = request
            let body = try await request.collectBody(upTo: 4096)
            if case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 2), case .string(let token)? = fields["replaces"],
               let replaced = BridgeCapability(token: token) {
                app.dispatcher.revoke(replaced)
            }
            do {
                let capability = try await app.dispatcher.grant()
                return Self.json(.ok, ["capability": .string(capability.token)])
            } catch {
                return Self.json(.forbidden, ["error": .string(error.message)])
            }
        case (.post, 3) where parts[0] == "apps" && parts[2] == "devices":
            // The user decides the app's device permissions on the host page: `{"decisions": {"camera":
            // "granted" | "denied" | "unknown"}}` (unknown forgets the decision).
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            var request = request
            let body = try await request.collectBody(upTo: 4096)
            guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 4), case .object(let items)? = fields["decisions"],
                  items.allSatisfy({ BrowserHostServices.devices.contains($0.key) }) else {
                return Self.json(.badRequest, ["error": .string("send {\"decisions\": {\"camera\" | \"microphone\" | \"location\": \"granted\" | \"denied\" | \"unknown\"}}")])
            }
            for (name, value) in items {
                guard case .string(let text) = value, let status = DevicePermissionStatus(rawValue: text) else {
                    return Self.json(.badRequest, ["error": .string("a device permission is granted, denied or unknown")])
                }
                try await host.store.setHostRecord(appId: app.appId, .device, key: name, value: status == .unknown ? nil : status.rawValue)
            }
            return try await state(of: app)
        case (.post, 3) where parts[0] == "apps" && parts[2] == "close":
            // The user closes the app on the host page: every page of it loses the bridge.
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            app.dispatcher.revokeAll()
            host.hub.send(.appClosed(appId: app.appId, .byUser))
            return Self.json(.ok, ["closed": .bool(true)])
        case (.delete, 4) where parts[0] == "apps" && parts[2] == "grants":
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            if let capability = BridgeCapability(token: parts[3]) { app.dispatcher.revoke(capability) }
            return Self.json(.ok, ["revoked": .bool(true)])
        default:
            if let answer = try await panelAPI(request, parts: parts) { return answer }
            return Self.json(.notFound, ["error": .string("no such host endpoint")])
        }
    }

    /// `{"decisions": {name: "ALLOWED" | "DENIED"}}` from the request body.
    private static func decisions(_ request: Request) async throws -> [String: PermissionStatus]? {
        var request = request
        let body = try await request.collectBody(upTo: 64 * 1024)
        guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 4), case .object(let items)? = fields["decisions"] else { return nil }
        var decisions: [String: PermissionStatus] = [:]
        for (name, value) in items {
            guard PermissionName.isValid(name), case .string(let text) = value, let status = PermissionStatus(rawValue: text), status != .notAvailable else { return nil }
            decisions[name] = status
        }
        return decisions
    }

    /// What the host page shows of an app: its permissions with their statuses, and whether it may start.
    func state(of app: RunningApp) async throws -> Response {
        let permissions = try await host.store.permissions(appId: app.appId, manifest: app.manifest)
        let missing = permissions.filter { $0.required && $0.status != .allowed }.map(\.name)
        let items: [JSONValue] = permissions.filter(\.declared).map { state in
            .object([
                "name": .string(state.name), "status": .string(state.status.rawValue), "required": .bool(state.required),
                "reason": state.reason.map { .string($0) } ?? .null, "decided": .bool(state.decidedAt != nil),
            ])
        }
        let devices = try await host.store.hostRecords(appId: app.appId, .device)
        let root = app.root
        let appearance = try await host.executor.run { Self.appearance(under: root) }
        var fields: [String: JSONValue] = [
            "displayName": appearance.name.map { .string($0) } ?? .null, "icon": appearance.icon.map { .string($0) } ?? .null,
            "id": .string(app.appId), "versionId": .string(app.versionId), "permissions": .array(items),
            "devices": .object(Dictionary(uniqueKeysWithValues: BrowserHostServices.devices.map { name in
                (name, .string(devices[name].flatMap(DevicePermissionStatus.init(rawValue:))?.rawValue ?? DevicePermissionStatus.unknown.rawValue))
            })),
            "launch": .object(["allowed": .bool(missing.isEmpty), "missing": .array(missing.map { .string($0) })]),
            "signals": app.panel.signals.json,
        ]
        if let development = app.development {
            let now = development.snapshot
            fields["development"] = .object([
                "folder": .string(development.folder), "publish": .string(development.publishCommand),
                "problems": .array(now.problems.map { .string($0.message) }), "manifestError": now.manifestError.map { .string($0) } ?? .null,
                "warnings": .array(now.warnings.map { .string($0) }),
            ])
        }
        return Self.json(.ok, fields)
    }

    // MARK: An app's origin

    private func appRoute(_ request: Request, app: RunningApp, origin: String, port: Int, context: HostRequestContext) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/api/") {
            return Self.json(.forbidden, ["error": .string("host endpoints are not reachable from a mini-app's origin")])
        }
        // Every fetch of a service worker's script says so (`Service-Worker: script`): refusing it makes
        // every registration fail, so that no worker can ever answer for the installed files.
        if request.headers[Self.serviceWorkerHeader] != nil {
            return Self.text(.forbidden, "a mini-app cannot register a service worker: its files come from the installed version only")
        }
        switch path {
        case "/__miniapp/bridge":
            guard request.method == .post else { return Self.text(.methodNotAllowed, "send bridge messages with POST") }
            return try await bridge(request, app: app, origin: origin)
        case "/__miniapp/bridge.js":
            var response = Self.body(BridgeScript.source(dialect: host.dialect, platform: host.environment.platform, port: port), type: "text/javascript; charset=utf-8")
            response.headers[.cacheControl] = "no-store"
            return response
        case "/__miniapp/clear":
            // The app's `clearall`: with the one-time token the host page was handed, the browser drops
            // what the app's origin keeps (its storage and cookies).
            guard let token = request.uri.queryParameters["token"].map(String.init), board.takeClearToken(token, appId: app.appId) else {
                return Self.text(.forbidden, "clearing an app's data takes the host's one-time token")
            }
            var response = Self.text(.ok, "cleared")
            response.headers[HTTPField.Name("Clear-Site-Data")!] = "\"cookies\", \"storage\""
            response.headers[.cacheControl] = "no-store"
            return response
        case "/__miniapp/events":
            if let refusal = Self.refusalWithoutCapability(request, app: app) { return refusal }
            let after = Int(request.uri.queryParameters["after"].map(String.init) ?? "0") ?? 0
            let (next, events) = await app.events.events(after: max(0, after), wait: .seconds(20))
            return Self.json(.ok, ["next": .number(Double(next)), "events": .array(events.map { .object(["name": .string($0.name), "message": .string($0.message)]) })])
        default:
            guard !path.hasPrefix("/__miniapp/") else { return Self.text(.notFound, "no such bridge endpoint") }
            guard request.method == .get || request.method == .head else { return Self.text(.methodNotAllowed, "only GET is served") }
            return try await file(path, request: request, app: app, port: port, context: context)
        }
    }

    private func bridge(_ request: Request, app: RunningApp, origin: String) async throws -> Response {
        // Only the app's own pages may speak for it: another app's frame sends another Origin.
        guard request.headers[.origin] == origin else {
            return Self.json(.forbidden, ["error": .string(BridgeFailure(type: "ForbiddenError", message: "bridge messages come from the app's own origin only").text)])
        }
        // What a local program that forges `Origin` and `Host`, or a page the host did not grant, sends.
        if let refusal = Self.refusalWithoutCapability(request, app: app) { return refusal }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            return Self.json(.unsupportedMediaType, ["error": .string(BridgeFailure(type: "MalformedMessageError", message: "send bridge messages as application/json").text)])
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: host.limits.maxMessageBytes)
        } catch {
            let failure = BridgeMessageError.tooLarge(bytes: host.limits.maxMessageBytes + 1, limit: host.limits.maxMessageBytes).failure
            return Self.json(.contentTooLarge, ["error": .string(failure.text)])
        }
        do {
            let reply = try await BrowserHostServices.$requestCookies.withValue(Self.cookies(request)) {
                try await app.dispatcher.reply(toMessage: body.readableBytesView, capability: Self.capability(request), limits: host.limits)
            }
            return Self.body(reply.json, type: "application/json", cache: false)
        } catch let error as BridgeMessageError {
            return Self.json(.badRequest, ["error": .string(error.failure.text)])
        }
    }

    private func file(_ path: String, request: Request, app: RunningApp, port: Int, context: HostRequestContext) async throws -> Response {
        let decision = try await host.store.launchDecision(appId: app.appId, manifest: app.manifest)
        guard decision.allowed else {
            return Self.text(.forbidden, "the launch gate is closed: \(decision.missing.joined(separator: ", ")) not allowed")
        }
        guard let relative = Self.relativePath(path) else { return Self.text(.notFound, "no such file") }
        let type = Self.contentType(of: relative)
        let root = app.root
        let isPage = type.hasPrefix("text/html")
        // A single-page app routes its own paths: a path without a file, asked as a page (or without an
        // extension), gets the app's index.html.
        let routed = host.dialect.launch.singlePageFallback && (Self.isNavigation(request) || !(relative.split(separator: "/").last ?? "").contains("."))
        var response: Response
        switch try await host.executor.run({ () -> FileLookup in
            let found = Self.lookUp(relative, under: root, readingWhole: isPage)
            if case .missing = found, routed { return Self.lookUp("index.html", under: root, readingWhole: true) }
            return found
        }) {
        case .missing:
            return Self.text(.notFound, "no such file")
        case .page(let bytes):
            response = Self.body(Self.injectingBridge(into: Data(bytes)), type: "text/html; charset=utf-8", cache: false)
        case .file:
            response = Response(status: .ok, headers: [.contentType: type], body: try await files.loadFile(path: root + "/" + relative, context: context))
        }
        response.headers[.cacheControl] = "no-store"
        var policy = "frame-ancestors http://localhost:\(port) http://127.0.0.1:\(port)"
        // A URL scheme's frames (`<iframe src="liquidstate://...">` in markup) are refused by the page's
        // policy before the browser tries to launch them; the injected script reads their requests.
        if host.dialect.transports.contains(where: { if case .urlScheme = $0 { true } else { false } }) {
            policy += "; frame-src * data: blob:"
        }
        response.headers[.contentSecurityPolicy] = policy
        return response
    }

    static let serviceWorkerHeader = HTTPField.Name("Service-Worker")!

    /// Whether the request loads a page into a frame or a window (fetch metadata).
    static func isNavigation(_ request: Request) -> Bool {
        let destination = request.headers[HTTPField.Name("Sec-Fetch-Dest")!]
        return destination == "document" || destination == "iframe"
    }

    /// The capability a request of the app's document holds, if any.
    /// The cookies a request carries (`Cookie: a=1; b=2`), in order, the first of a name kept.
    static func cookies(_ request: Request) -> [BridgeCookie] {
        var cookies: [BridgeCookie] = []
        var seen: Set<String> = []
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                guard !name.isEmpty, seen.insert(name).inserted else { continue }
                cookies.append(BridgeCookie(name: name, value: parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""))
            }
        }
        return cookies
    }

    static func capability(_ request: Request) -> BridgeCapability? {
        request.headers[capabilityHeader].flatMap(BridgeCapability.init(token:))
    }

    /// The 403 a request of `app`'s origin gets when it holds no live capability of the app's; `nil` when it does.
    static func refusalWithoutCapability(_ request: Request, app: RunningApp) -> Response? {
        if let capability = capability(request), app.dispatcher.isLive(capability) { return nil }
        return json(.forbidden, ["error": .string(BridgeFailure.noCapability.text)])
    }

    /// What a path below a version folder names.
    enum FileLookup {
        case missing
        /// A regular file, to stream.
        case file
        /// A page, read whole.
        case page([UInt8])
    }

    /// Looks `relative` up below `root` without following links (folders all the way, a regular file at
    /// the end), reading it whole when `readingWhole` (pages of at most 16 MiB); blocking: run it on a pool.
    /// The app's name and icon as its web manifest (`manifest.json`: `short_name` or `name`, the first of
    /// `icons`) gives them: the icon as a data URL of an image type, at most 256 KiB, read by the same
    /// rules as any file of the app. The host page shows them; the app's id stands in for a missing name.
    static func appearance(under root: String) -> (name: String?, icon: String?) {
        guard case .page(let bytes) = lookUp("manifest.json", under: root, readingWhole: true),
              case .object(let fields)? = JSONReader.value(bytes, maxDepth: 16) else { return (nil, nil) }
        var name: String?
        for key in ["name", "short_name"] {
            if case .string(let text)? = fields[key], !text.trimmingCharacters(in: .whitespaces).isEmpty, !text.hasPrefix("__") {
                name = Sanitizer.printable(text, limit: 80)
                break
            }
        }
        var icon: String?
        if case .array(let icons)? = fields["icons"], case .object(let first)? = icons.first, case .string(let source)? = first["src"],
           let relative = relativePath("/" + source.trimmingCharacters(in: CharacterSet(charactersIn: "./"))), !relative.isEmpty,
           case .page(let image) = lookUp(relative, under: root, readingWhole: true), image.count <= 256 << 10 {
            let type = contentType(of: relative)
            if type.hasPrefix("image/") { icon = "data:\(type.split(separator: ";")[0]);base64," + Data(image).base64EncodedString() }
        }
        return (name, icon)
    }

    static func lookUp(_ relative: String, under root: String, readingWhole: Bool) -> FileLookup {
        var current = root
        let components = relative.split(separator: "/")
        var info = stat()
        for (index, component) in components.enumerated() {
            current += "/" + component
            guard lstat(current, &info) == 0 else { return .missing }
            let wanted: mode_t = index == components.count - 1 ? S_IFREG : S_IFDIR
            guard (info.st_mode & S_IFMT) == wanted else { return .missing }
        }
        guard readingWhole else { return .file }
        guard info.st_size <= 16 << 20, case .contents(let bytes) = FileReading.read(current, followingLinks: false) else { return .missing }
        return .page(bytes)
    }

    /// The path below the version folder that `path` names (`/` is index.html), or `nil` when it climbs
    /// out, names a dot file, or cannot be decoded.
    static func relativePath(_ path: String) -> String? {
        guard let decoded = path.removingPercentEncoding else { return nil }
        let components = decoded.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        if components.isEmpty { return "index.html" }
        guard components.allSatisfy({ !$0.hasPrefix(".") && !$0.contains("\0") && !$0.contains("\\") }) else { return nil }
        return components.joined(separator: "/")
    }

    /// The page with the bridge's script first in its head, so that `window.MiniAppBridge` exists before
    /// any script of the app runs.
    static func injectingBridge(into data: Data) -> String {
        let page = String(decoding: data, as: UTF8.self)
        let tag = "<script src=\"/__miniapp/bridge.js\"></script>"
        let lowered = page.lowercased()
        for opening in ["<head", "<html"] {
            if let start = lowered.range(of: opening), let end = lowered[start.upperBound...].firstIndex(of: ">") {
                let offset = lowered.distance(from: lowered.startIndex, to: end)
                let index = page.index(page.startIndex, offsetBy: offset + 1)
                return String(page[..<index]) + tag + String(page[index...])
            }
        }
        if lowered.hasPrefix("<!doctype"), let end = page.firstIndex(of: ">") {
            return String(page[...end]) + tag + String(page[page.index(after: end)...])
        }
        return tag + page
    }

    static func contentType(of path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "html", "htm": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "json", "map": "application/json"
        case "txt": "text/plain; charset=utf-8"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "svg": "image/svg+xml"
        case "ico": "image/x-icon"
        case "woff": "font/woff"
        case "woff2": "font/woff2"
        case "ttf": "font/ttf"
        case "wasm": "application/wasm"
        case "pdf": "application/pdf"
        case "mp3": "audio/mpeg"
        case "wav": "audio/wav"
        case "ogg", "oga": "audio/ogg"
        case "m4a", "aac": "audio/mp4"
        case "mp4", "m4v": "video/mp4"
        case "webm": "video/webm"
        case "ogv": "video/ogg"
        default: "application/octet-stream"
        }
    }

    // MARK: Responses

    static func body(_ text: String, type: String, cache: Bool = true) -> Response {
        var headers: HTTPFields = [.contentType: type]
        if !cache { headers[.cacheControl] = "no-store" }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: message + "\n")))
    }

    static func json(_ status: HTTPResponse.Status, _ fields: [String: JSONValue]) -> Response {
        Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: ResponseBody(byteBuffer: ByteBuffer(string: JSONWriter.text(.object(fields)))))
    }
}
