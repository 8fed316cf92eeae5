public import MiniAppCore

/// How one kind of native host talks with the web apps it embeds, declared once: how the app calls the
/// host, how answers and events reach the app, how the app is launched, and for each action its gate
/// and the host service that answers it.
///
/// A ``BridgeDispatcher`` answers exactly its dialect's actions (a host's own actions aside), behind
/// each one's gate; the browser host makes the script it injects into the app's pages, its launch URL,
/// the host page's controls and the panel's events from the same declaration. Four are built in:
/// ``rakuten`` (Rakuten's `window.MiniAppBridge`), ``liquidState`` (`liquidstate://app/...`
/// navigations answered through `window.communicate`), ``forem`` (Forem's WebKit message handlers) and
/// ``corva`` (Corva's `swiftHandler` and `window.navigateAppTo`). A host adds its own by declaring one
/// from the same parts.
public struct BridgeDialect: Sendable {
    /// The dialect's name, as `--dialect` and the host profile's `dialect` name it: lowercase letters
    /// and digits.
    public let name: String
    /// What the host page calls it, such as `Liquid State`.
    public let title: String
    /// How the app calls the host: what the injected script defines in the app's pages, and nothing
    /// else (apps detect their host by what exists).
    public let transports: [Transport]
    /// How the host launches the app.
    public let launch: Launch
    /// What the app asks the host, each answered behind its gate.
    public let actions: [Action]
    /// What the host sends the app, each reaching it as ``Event/delivery`` says.
    public let events: [Event]

    /// A dialect with the given parts.
    public init(name: String, title: String, transports: [Transport], launch: Launch = Launch(), actions: [Action], events: [Event]) {
        self.name = name
        self.title = title
        self.transports = transports
        self.launch = launch
        self.actions = actions
        self.events = events
        actionsByName = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    private let actionsByName: [String: Action]

    /// The action named `name`, if the dialect has one.
    public func action(named name: String) -> Action? { actionsByName[name] }

    /// The event named `name`, if the dialect has one.
    public func event(named name: String) -> Event? { events.first { $0.name == name } }

    // MARK: Parts

    /// A way the app calls its host.
    public enum Transport: Sendable, Equatable {
        /// Rakuten's `window.MiniAppBridge`: one method per script method of the SDK's action table,
        /// answered through its success and error callbacks.
        case miniAppBridge
        /// WebKit's `window.webkit.messageHandlers.<name>.postMessage(body)`, one handler per name: a
        /// post is the action of the handler's name with `body` as its parameters.
        case messageHandlers([String])
        /// Navigations to `<scheme>://<domain>/<action>?<query>=<URL-encoded JSON>` in any form
        /// (`location`, a link, `window.open`, an iframe's `src`), caught before they leave the page.
        /// The JSON is the request's data with an optional `request_id`, or an envelope `{"request_id",
        /// "event_type", "request_data"}`; an answer goes back through the app's global `function` as
        /// `{"purpose": "response", "request_id", "event_type", "response_data"}`.
        case urlScheme(scheme: String, domain: String, query: String, function: String)
    }

    /// How something the host sends reaches the app.
    public enum Delivery: Sendable, Equatable {
        /// A DOM `CustomEvent` of the event's name on `window`, its `detail.message` the message (what
        /// Rakuten's SDK listens to).
        case windowEvent
        /// The app's own global function at `path` (such as `communicate` or
        /// `ForemMobile.injectJSMessage`), called with the message as `argument` says; when the app has
        /// no such function and `otherwise` names an event, a `CustomEvent` of that name on `document`
        /// with the message as its `detail`.
        case function(String, argument: Argument, otherwise: String? = nil)
        /// The message's `value` (text) written into the input whose id is the message's `id`, followed
        /// by an `input` event on it.
        case inputValue
    }

    /// How a message is handed to an app's function.
    public enum Argument: Sendable, Equatable {
        /// The message parsed as JSON.
        case json
        /// The message as text.
        case text
    }

    /// What the app receives of an action's answer.
    public enum Reply: Sendable, Equatable {
        /// Nothing: the app's call is one-way. A refusal is written to the page's console.
        case none
        /// The answer goes back the way the call came: a promise of Rakuten's bridge, or a URL
        /// scheme's response through its function.
        case transport
        /// The answer reaches the app as a message would: for ``Delivery/inputValue``, into the input
        /// named by the call's `id` parameter.
        case delivery(Delivery)
    }

    /// What must hold before an action's host service is asked.
    public enum Gate: Sendable, Equatable {
        /// Nothing: any app may call it.
        case open
        /// The custom permission: the manifest declares it and the user allowed it.
        case permission(KnownPermission)
        /// The user's decision on a device permission of the host (`location`, `camera`, `microphone`),
        /// asked on the host's own interface while undecided.
        case device(String)
    }

    /// How the host launches the app.
    public struct Launch: Sendable, Equatable {
        /// The path loaded first, such as `/` or `/dashboards/1234`.
        public var path: String
        /// The query the host adds to the launch URL, by name.
        public var query: [QueryItem]
        /// Whether a path the app routes itself (no such file, and no file extension, or a page
        /// navigation) is answered with the app's `index.html`, as a single-page app's server does.
        public var singlePageFallback: Bool
        /// What the host adds to the page's `navigator.userAgent`, such as `ForemWebView/1.0`.
        public var userAgentToken: String?

        /// A launch at `path` with `query`.
        public init(path: String = "/", query: [QueryItem] = [], singlePageFallback: Bool = false, userAgentToken: String? = nil) {
            self.path = path
            self.query = query
            self.singlePageFallback = singlePageFallback
            self.userAgentToken = userAgentToken
        }
    }

    /// One item of the launch query.
    public struct QueryItem: Sendable, Equatable {
        /// Where an item's value comes from.
        public enum Value: Sendable, Equatable {
            /// This text.
            case text(String)
            /// The host's session token (the host profile's `sessionToken`); the item is left out without one.
            case sessionToken
        }

        /// The item's name.
        public var name: String
        /// Its value.
        public var value: Value

        /// An item `name` whose value is `value`.
        public init(_ name: String, _ value: Value) {
            self.name = name
            self.value = value
        }
    }

    /// One thing the app asks the host.
    public struct Action: Sendable {
        /// The action's name on the wire: a message handler's name, a URL scheme's event, or one of
        /// Rakuten's actions.
        public let name: String
        /// What must hold before ``answer`` runs.
        public let gate: Gate
        /// What the app receives of the answer.
        public let reply: Reply
        /// The answer a refused ``Gate/device(_:)`` gives instead of a failure, when the dialect
        /// answers a refusal as data (Liquid State's `user_location`).
        public let refusal: String?
        /// What the app's page adds to each call before it leaves (a native host reads it from the page).
        public let reads: PageRead?
        /// What the action does, for the docs and the host page's panel.
        public let summary: String
        let answer: Answer

        enum Answer: Sendable {
            /// Rakuten's action table, answered by the dispatcher itself.
            case table
            /// The dialect's own answer.
            case host(@Sendable (Context) async throws(BridgeFailure) -> String?)
        }

        /// An action answered by `answer`, the text it returns being what the app receives (`nil`: no
        /// value).
        public init(
            _ name: String, gate: Gate = .open, reply: Reply = .none, refusal: String? = nil, reads: PageRead? = nil, summary: String,
            answer: @escaping @Sendable (Context) async throws(BridgeFailure) -> String?
        ) {
            self.init(name: name, gate: gate, reply: reply, refusal: refusal, reads: reads, summary: summary, answer: .host(answer))
        }

        init(name: String, gate: Gate, reply: Reply, refusal: String?, reads: PageRead? = nil, summary: String, answer: Answer) {
            self.name = name
            self.gate = gate
            self.reply = reply
            self.refusal = refusal
            self.reads = reads
            self.summary = summary
            self.answer = answer
        }
    }

    /// Something of the app's page a call carries besides what the app sent: the call's parameters are
    /// then `{"message": <what the app sent>, "<read>": <what was read>}`.
    public enum PageRead: String, Sendable, Equatable {
        /// The user's data as the page holds it: the page's `ForemMobile.getUserData()`, else its
        /// `document.body.dataset.user` (text, or `null`).
        case userData
    }

    /// One thing the host sends the app.
    public struct Event: Sendable, Equatable {
        /// The event's name, as ``BridgeEvent/name`` carries it.
        public let name: String
        /// How it reaches the app.
        public let delivery: Delivery
        /// A message of the event, as the host page's panel offers it to send.
        public let example: String
        /// When the host sends it.
        public let summary: String

        /// An event `name` reaching the app as `delivery` says.
        public init(_ name: String, delivery: Delivery, example: String, summary: String) {
            self.name = name
            self.delivery = delivery
            self.example = example
            self.summary = summary
        }
    }

    /// One call of an action, as its answer sees it.
    public struct Context: Sendable {
        /// The app that called.
        public let appId: String
        /// The call's parameters.
        public let param: JSONValue
        /// The host's services.
        public let services: any BridgeHostServices
        let events: @Sendable (BridgeEvent) -> Void

        /// Sends `event` to every running page of the app while the call runs (an upload's progress).
        public func send(_ event: BridgeEvent) { events(event) }
    }
}

extension BridgeDialect {
    /// The built-in dialects, by name: `rakuten`, `liquidstate`, `forem` and `corva`.
    public static let builtIn: [String: BridgeDialect] = Dictionary(uniqueKeysWithValues: [rakuten, liquidState, forem, corva].map { ($0.name, $0) })

    /// The built-in dialect named `name`; throws a failure that lists the names otherwise.
    public static func named(_ name: String) throws(BridgeDialectError) -> BridgeDialect {
        guard let dialect = builtIn[name] else { throw .unknown(name: name) }
        return dialect
    }

    /// Whether the dialect's actions are Rakuten's action table.
    var answersTheActionTable: Bool { transports.contains(.miniAppBridge) }
}

/// A dialect that cannot be used.
public enum BridgeDialectError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No built-in dialect has this name.
    case unknown(name: String)

    public var description: String {
        switch self {
        case .unknown(let name):
            "no host dialect is named \"\(Sanitizer.printable(name, limit: 40))\" (known: \(BridgeDialect.builtIn.keys.sorted().joined(separator: ", ")))"
        }
    }
}
