import Foundation
import MiniAppCore

extension BridgeDialect {
    /// Rakuten's Mini App SDK: `window.MiniAppBridge`, its methods made from the SDK's action table
    /// (``BridgeDispatcher/declarations``), answered through the SDK's callbacks; host events are DOM
    /// `CustomEvent`s on `window`.
    public static let rakuten = BridgeDialect(
        name: "rakuten", title: "Rakuten Mini App",
        transports: [.miniAppBridge],
        actions: BridgeDispatcher.declarationList.map { declaration in
            Action(
                name: declaration.name, gate: declaration.permission.map(Gate.permission) ?? .open, reply: .transport, refusal: nil,
                summary: declaration.answer == .answered ? "answered by the bridge" : "not supported in a browser", answer: .table
            )
        },
        events: [
            Event("miniappwebviewclosed", delivery: .windowEvent, example: "", summary: "the external web view the app opened was closed"),
            Event("miniapppause", delivery: .windowEvent, example: "", summary: "the host goes to the background"),
            Event("miniappresume", delivery: .windowEvent, example: "", summary: "the host comes back"),
            Event("miniappsecurestorageready", delivery: .windowEvent, example: "", summary: "the secure storage is ready"),
            Event("miniappreceivejsoninfo", delivery: .windowEvent, example: "eyJtZXNzYWdlIjoiaGVsbG8ifQ==", summary: "JSON from the host (base64)"),
            Event(
                "miniappdidreceivequeryparams", delivery: .windowEvent, example: #"[{"name":"navigateTo","value":"/"}]"#,
                summary: "the query the host was opened with"
            ),
        ]
    )

    /// Liquid State's "app" domain: the app navigates to `liquidstate://app/<event>?request=<JSON>`, and
    /// the host answers through the app's `window.communicate(...)`.
    public static let liquidState = BridgeDialect(
        name: "liquidstate", title: "Liquid State",
        transports: [.urlScheme(scheme: "liquidstate", domain: "app", query: "request", function: "communicate")],
        actions: LiquidState.actions,
        events: [
            Event(
                "lifecycle", delivery: .function("communicate", argument: .json), example: #"{"purpose":"lifecycle","id":"back"}"#,
                summary: "the user pressed Back while the app overrides it"
            ),
            Event(
                "switch_tab", delivery: .function("communicate", argument: .json), example: #"{"purpose":"switch_tab","params":{}}"#,
                summary: "the tab the host switched to"
            ),
        ]
    )

    /// Forem's native bridge: WebKit message handlers `podcast`, `video`, `imageUpload`, `haptic` and
    /// `body`; player events through the page's `window.ForemMobile.injectJSMessage(json)`, upload
    /// results into the page's hidden input; `ForemWebView` in the user agent.
    public static let forem = BridgeDialect(
        name: "forem", title: "Forem",
        transports: [.messageHandlers(["podcast", "video", "imageUpload", "haptic", "body"])],
        launch: Launch(userAgentToken: "ForemWebView/1.0"),
        actions: Forem.actions,
        events: [
            Event(
                "podcast", delivery: Forem.player, example: #"{"action":"tick","duration":"120.0000","currentTime":"1.5000","namespace":"podcast"}"#,
                summary: "the audio player's state: init, then tick with its position"
            ),
            Event(
                "video", delivery: Forem.player, example: #"{"action":"play","namespace":"video"}"#,
                summary: "the video player's state: play, pause, tick"
            ),
            Event(
                "imageUpload", delivery: .inputValue, example: #"{"id":"native-image-upload-message","value":"{\"action\":\"uploading\"}"}"#,
                summary: "an upload's progress, into the page's hidden input"
            ),
        ]
    )

    /// Corva's web frontend in a native web view: launched at a dashboard or asset page with
    /// `?native=true&jwt=<token>`, a single-page app; `swiftHandler` notifications; the host moves the
    /// app with `window.navigateAppTo(path)`.
    public static let corva = BridgeDialect(
        name: "corva", title: "Corva",
        transports: [.messageHandlers(["swiftHandler"])],
        launch: Launch(query: [QueryItem("native", .text("true")), QueryItem("jwt", .sessionToken)], singlePageFallback: true),
        actions: [
            Action(
                "swiftHandler", summary: "pageLoaded, appMaximized or appRestored: the host hides its chrome while the app is maximized"
            ) { context throws(BridgeFailure) in
                let names = ["pageLoaded", "appMaximized", "appRestored"]
                var name: String?
                switch context.param {
                case .string(let text): name = text
                case .object(let fields):
                    for key in ["event", "name", "type", "message", "action"] {
                        if case .string(let text)? = fields[key] { name = text; break }
                    }
                default: break
                }
                guard let name, names.contains(name) else {
                    throw .invalidParameters("swiftHandler", "\"pageLoaded\", \"appMaximized\" or \"appRestored\", or an object naming one")
                }
                let signal: BridgeSignal = name == "pageLoaded" ? .pageLoaded : .maximized(name == "appMaximized")
                try await context.services.signal(appId: context.appId, signal)
                return nil
            },
        ],
        events: [
            Event("navigateAppTo", delivery: .function("navigateAppTo", argument: .text), example: "/dashboards/1234", summary: "the host's navigation moves the app"),
        ]
    )
}

/// The answers of Liquid State's app domain.
enum LiquidState {
    static let actions: [BridgeDialect.Action] = [
        .init("reset", summary: "reload the whole app: every tab, its configuration and navigation") { context throws(BridgeFailure) in
            try await context.services.signal(appId: context.appId, .reset)
            return nil
        },
        .init("online_status", reply: .transport, summary: "{\"status\": bool}: whether the host is online") { context in
            JSONWriter.text(ordered: [("status", .bool(await context.services.isOnline(appId: context.appId)))])
        },
        .init("open_file", summary: "open an http(s) URL, a ./relative file of the app or a file:/// inside it in the host's viewer") { context throws(BridgeFailure) in
            guard case .string(let path)? = context.param["path"] else { throw .invalidParameters("open_file", "{\"path\": string}") }
            try await context.services.openFile(appId: context.appId, try file(path))
            return nil
        },
        .init("set_authentication_status", summary: "the app logged the user in or out") { context throws(BridgeFailure) in
            try await context.services.signal(appId: context.appId, .authentication(isAuthenticated: try flag(context, "set_authentication_status", "is_authenticated")))
            return nil
        },
        .init("set_notification_presentation_status", summary: "until true, the host holds the app's notifications back") { context throws(BridgeFailure) in
            try await context.services.signal(appId: context.appId, .notificationsReady(try flag(context, "set_notification_presentation_status", "is_ready")))
            return nil
        },
        .init("set_back_override", summary: "while enabled, Back sends {\"purpose\": \"lifecycle\", \"id\": \"back\"}") { context throws(BridgeFailure) in
            try await context.services.signal(appId: context.appId, .backOverride(enabled: try flag(context, "set_back_override", "is_enabled")))
            return nil
        },
        .init(
            "user_location", gate: .device("location"), reply: .transport,
            refusal: none("nopermission", "You have not allowed this app to use your location. Allow it in the host's device settings."),
            summary: "the device's position, under the user's location decision"
        ) { context in
            do throws(BridgeFailure) {
                let position = try await context.services.currentPosition(appId: context.appId)
                var location: [(String, OrderedJSON)] = [("latitude", .string(number(position.latitude))), ("longitude", .string(number(position.longitude)))]
                if let accuracy = position.accuracy { location.append(("accuracy", .string(number(accuracy)))) }
                // Android's terms: fine is a satellite fix, coarse a network one; without an accuracy
                // the host cannot tell, as a web client cannot.
                let type = position.accuracy.map { $0 <= 100 ? "fine" : "coarse" } ?? "unknown"
                return JSONWriter.text(ordered: [("type", .string(type)), ("location", .object(location))])
            } catch {
                switch error.type {
                case "PERMISSION_DENIED": return none("nopermission", error.message)
                case "NotSupportedError": return none("nolocation", "this host has no way to locate the device")
                case "LOCATION_DISABLED": return none("disabled", error.message)
                default: return none("unknown", error.message)
                }
            }
        },
        .init("feature_status", reply: .transport, summary: "biometrics, as the host profile says") { context throws(BridgeFailure) in
            guard case .string(let feature)? = context.param["feature"] else { throw .invalidParameters("feature_status", "{\"feature\": \"biometrics\"}") }
            guard feature == "biometrics" else { return JSONWriter.text(ordered: [("status", .string("unknown"))]) }
            let biometrics = await context.services.biometrics(appId: context.appId)
            let status = switch biometrics.status {
            case .notEnrolled: "not_configured"
            default: biometrics.status.rawValue
            }
            var detail: [(String, OrderedJSON)] = [("feature", .string("biometrics")), ("status", .string(biometrics.status.rawValue))]
            if biometrics.status == .available { detail.append(("type", .array((biometrics.type ?? []).map { .string($0) }))) }
            // The document's table calls the details `details`, its examples `detail`: both are given.
            return JSONWriter.text(ordered: [("status", .string(status)), ("details", .object(detail)), ("detail", .object(detail))])
        },
        .init("clearall", summary: "back to the first launch: the app's storage and state cleared, authentication kept") { context throws(BridgeFailure) in
            try await context.services.signal(appId: context.appId, .clearAll)
            return nil
        },
        .init("switch_tab", summary: "switch to a tab of the host's (reset first unless reset is false), which gets params") { context throws(BridgeFailure) in
            let expected = "{\"id\": string, \"reset\": bool, \"route\": string, \"params\": object}"
            guard case .string(let id)? = context.param["id"], !id.isEmpty, id.utf8.count <= 64 else { throw .invalidParameters("switch_tab", expected) }
            var reset = true
            if let value = context.param["reset"] {
                guard case .bool(let flag) = value else { throw .invalidParameters("switch_tab", expected) }
                reset = flag
            }
            var route: String?
            if case .string(let text)? = context.param["route"] {
                guard HostProfile.isPath(text) else { throw .invalidParameters("switch_tab", "a route that starts with / and stays below it") }
                route = text
            }
            var params = context.param["params"]
            // The document types params "String: a JSON object": text of an object is read as one.
            if case .string(let text)? = params, let object = JSONReader.value(Array(text.utf8), maxDepth: 16) { params = object }
            if params == .null { params = nil }
            try await context.services.signal(appId: context.appId, .switchTab(id: id, reset: reset, route: route, params: params))
            return nil
        },
        .init("set_tab_appearance", summary: "new titles, icons or visibility for tabs, by tab id") { context throws(BridgeFailure) in
            let expected = "{<tab id>: {\"title\", \"icon_name\" or \"icon_font_name\" and \"icon_code_point\", \"hidden\"}}"
            guard case .object(let tabs) = context.param, !tabs.isEmpty else { throw .invalidParameters("set_tab_appearance", expected) }
            for (_, appearance) in tabs {
                guard case .object(let fields) = appearance, fields.keys.allSatisfy(appearanceKeys.contains) else {
                    throw .invalidParameters("set_tab_appearance", expected)
                }
            }
            try await context.services.signal(appId: context.appId, .tabAppearance(tabs))
            return nil
        },
    ]

    static let appearanceKeys: Set<String> = ["title", "icon_name", "icon_font_name", "icon_code_point", "hidden"]

    /// `{"type": "none", "error": {"reason", "message"}}`: no location, and why.
    static func none(_ reason: String, _ message: String) -> String {
        JSONWriter.text(ordered: [("type", .string("none")), ("error", .object([("reason", .string(reason)), ("message", .string(message))]))])
    }

    /// A coordinate as the document's numeric strings give it.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func flag(_ context: BridgeDialect.Context, _ action: String, _ key: String) throws(BridgeFailure) -> Bool {
        guard case .bool(let value)? = context.param[key] else { throw .invalidParameters(action, "{\"\(key)\": bool}") }
        return value
    }

    /// The file `path` names: an http(s) URL, `./` below the app's entry file, or `file:///` inside the
    /// app; `..` anywhere, and anything else, is refused.
    static func file(_ path: String) throws(BridgeFailure) -> BridgeFileReference {
        let refusal = BridgeFailure(type: "InvalidPathError", message: "open_file opens an http(s) URL, a ./relative path inside the app, or a file:/// inside the app")
        guard path.utf8.count <= 2048, !path.unicodeScalars.contains(where: { $0.value < 0x20 }) else { throw refusal }
        let lowered = path.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            guard BridgeDispatcher.isWebURL(path) else { throw refusal }
            return .web(path)
        }
        let relative: String
        if path.hasPrefix("./") {
            relative = String(path.dropFirst(2))
        } else if lowered.hasPrefix("file:///") {
            relative = String(path.dropFirst("file://".count))
        } else {
            throw refusal
        }
        let decoded = relative.removingPercentEncoding ?? relative
        let segments = decoded.split(separator: "/", omittingEmptySubsequences: true)
        guard !segments.isEmpty, !segments.contains(".."), !decoded.contains("\\"), !decoded.contains("\0") else {
            throw BridgeFailure(type: "InvalidPathError", message: "open_file does not leave the app: '..' is refused")
        }
        return lowered.hasPrefix("file:") ? .file("/" + segments.joined(separator: "/")) : .app(path: segments.joined(separator: "/"))
    }
}

/// The answers of Forem's message handlers.
enum Forem {
    /// Player events: through the page's `ForemMobile.injectJSMessage`, as the native host sends them.
    static let player = BridgeDialect.Delivery.function("ForemMobile.injectJSMessage", argument: .text, otherwise: "ForemMobile")

    static let podcastActions: Set<String> = ["play", "load", "seek", "rate", "muted", "volume", "pause", "terminate", "metadata"]

    static let actions: [BridgeDialect.Action] = [
        .init("podcast", summary: "the host's audio player: play, load, seek, rate, muted, volume, pause, terminate, metadata") { context throws(BridgeFailure) in
            try await context.services.media(appId: context.appId, try command(context, .podcast, allowed: podcastActions))
            return nil
        },
        .init("video", summary: "the host's video player: play {url, seconds}") { context throws(BridgeFailure) in
            try await context.services.media(appId: context.appId, try command(context, .video, allowed: ["play"]))
            return nil
        },
        .init(
            "imageUpload",
            summary: "the host's image picker (cropped to ratio), then uploading, then success {link} or error, into the input named by id"
        ) { context throws(BridgeFailure) in
            guard case .string(let id)? = context.param["id"], !id.isEmpty, id.utf8.count <= 256 else {
                throw .invalidParameters("imageUpload", "{\"id\": the hidden input's id, \"ratio\": width over height}")
            }
            var ratio: Double?
            switch context.param["ratio"] {
            case .number(let value)?: ratio = value
            case .string(let text)?: ratio = Double(text)
            default: break
            }
            if let value = ratio, !(value.isFinite && value > 0.01 && value < 100) { ratio = nil }
            // Every message goes the one way the native host sends them (into the input, in order); the
            // answer repeats the last for the host's own record of the call.
            let events = context.events
            let input = { @Sendable (value: String) in
                events(BridgeEvent(name: "imageUpload", message: JSONWriter.text(.object(["id": .string(id), "value": .string(value)]))))
            }
            let result: String
            do throws(BridgeFailure) {
                let link = try await context.services.uploadImage(appId: context.appId, ratio: ratio) { input(#"{"action":"uploading"}"#) }
                result = JSONWriter.text(ordered: [("action", .string("success")), ("link", .string(link))])
            } catch where error.type == "UploadFailedError" {
                result = JSONWriter.text(ordered: [("action", .string("error")), ("error", .string(error.message))])
            }
            input(result)
            return result
        },
        .init("haptic", summary: "a haptic feedback: heavy, light or medium") { context throws(BridgeFailure) in
            guard case .string(let style) = context.param, !style.isEmpty, style.utf8.count <= 32 else {
                throw .invalidParameters("haptic", "\"heavy\", \"light\" or \"medium\"")
            }
            try await context.services.signal(appId: context.appId, .haptic(style))
            return nil
        },
        .init("body", reads: .userData, summary: "the host reads the user's data again (the page's ForemMobile.getUserData())") { context throws(BridgeFailure) in
            var data: String?
            if case .string(let text)? = context.param["userData"], !text.isEmpty { data = text }
            try await context.services.signal(appId: context.appId, .userData(data))
            return nil
        },
    ]

    /// A player command: `{"action": name, ...}` with text values (numbers and flags are taken as text).
    static func command(_ context: BridgeDialect.Context, _ player: BridgeMediaCommand.Player, allowed: Set<String>) throws(BridgeFailure) -> BridgeMediaCommand {
        let expected = "{\"action\": one of \(allowed.sorted().joined(separator: ", ")), ...}"
        guard case .object(let fields) = context.param, case .string(let action)? = fields["action"], allowed.contains(action) else {
            throw .invalidParameters(player.rawValue, expected)
        }
        var values: [String: String] = [:]
        for (key, value) in fields where key != "action" {
            switch value {
            case .string(let text): values[key] = text
            case .number(let number): values[key] = LiquidState.number(number)
            case .bool(let flag): values[key] = flag ? "true" : "false"
            default: continue
            }
        }
        if action == "play" || action == "load" {
            guard let url = values["url"], BridgeDispatcher.isWebURL(url) else {
                throw .invalidParameters(player.rawValue, "{\"action\": \"\(action)\", \"url\": an http or https URL}")
            }
        }
        return BridgeMediaCommand(player: player, action: action, values: values)
    }
}
