public import Foundation
import MiniAppCore

/// A stand-in for the host's user: what a host without accounts (a developer's browser host, a test)
/// answers to the user-data actions. Read from JSON:
///
/// ```json
/// {"userName": "Aiko", "profilePhoto": "data:image/png;base64,...", "phoneNumber": "+81...",
///  "contacts": [{"id": "c1", "name": "Ken", "email": "ken@example.com"}],
///  "accessTokens": {"rae": "token-for-rae"}, "tokenLifetimeSeconds": 3600,
///  "points": {"standard": 100, "term": 20, "cash": 5}, "loggedIn": true,
///  "locale": "ja-JP", "hostVersion": "2.1.0", "darkMode": false,
///  "ads": {"fill": true, "reward": {"type": "coin", "amount": 10}},
///  "products": [{"id": "gem-10", "title": "10 gems", "description": "A handful",
///                "productPrice": {"currencyCode": "JPY", "price": "120"}}],
///  "cookies": [{"name": "session", "value": "abc"}],
///  "location": {"latitude": 35.6812, "longitude": 139.7671, "accuracy": 20},
///  "dialect": "liquidstate", "launch": {"path": "/dashboards/1234", "query": {"theme": "dark"}},
///  "sessionToken": "jwt-of-the-user", "online": true, "biometrics": {"status": "available", "type": ["face"]},
///  "tabs": [{"id": "home", "title": "Home", "icon": "home"}, {"id": "news", "title": "News", "app": "news", "route": "/latest"}],
///  "navigation": {"dashboards": [{"id": "1234", "name": "Rig"}], "assets": [{"id": "9", "name": "Well 9", "categories": ["drilling"]}]}}
/// ```
/// Every key is optional; what is missing is answered as not supported, except `loggedIn` (logged in
/// when there is a `userName`), `cookies` (none but the app's own), `online` (the host page's browser
/// says) and `biometrics` (none). `dialect`, `launch`, `sessionToken`, `tabs` and `navigation` shape the
/// host other hosts' apps expect (MiniAppWebHost's *Hosting any bridge*).
public struct HostProfile: Sendable, Equatable, Codable, BridgeHostServices {
    public var userName: String?
    public var profilePhoto: String?
    public var phoneNumber: String?
    public var contacts: [BridgeContact]?
    /// A token per audience.
    public var accessTokens: [String: String]?
    /// How long a token is valid (3,600 s by default).
    public var tokenLifetimeSeconds: Int?
    public var points: BridgePoints?
    public var loggedIn: Bool?
    /// The host's locale (`getHostEnvironmentInfo`).
    public var locale: String?
    /// The host's version (`getHostEnvironmentInfo`).
    public var hostVersion: String?
    /// Whether the host is in dark mode.
    public var darkMode: Bool?
    /// Whether ads fill, and what a rewarded ad gives.
    public var ads: Ads?
    /// The test catalogue the app may sell from.
    public var products: [BridgeProduct]?
    /// Cookies the host holds for every app, besides each app's own.
    public var cookies: [BridgeCookie]?
    /// The device's position; without it, a browser host asks the browser's geolocation.
    public var location: BridgePosition?
    /// The host's dialect (``BridgeDialect/builtIn``): how its apps call it. Rakuten's by default.
    public var dialect: String?
    /// Where the host launches the app: a path and query items added to the launch URL.
    public var launch: Launch?
    /// The token of the host's signed-in user that a dialect's launch passes (Corva's `jwt`).
    public var sessionToken: String?
    /// Whether the host is online (Liquid State's `online_status`); without it, a browser host answers
    /// its page's `navigator.onLine`.
    public var online: Bool?
    /// The device's biometrics (Liquid State's `feature_status`); a browser has none without it.
    public var biometrics: BridgeBiometrics?
    /// The host's tab bar, in order: each tab runs an app (this one when `app` is left out) at a route.
    public var tabs: [Tab]?
    /// The host's own navigation (Corva's dashboards and asset pages), which moves the app with
    /// `navigateAppTo`.
    public var navigation: Navigation?
    /// Whether this is a sample profile standing in for the developer's own (`miniapp dev` without
    /// `--host-profile`): the host page says so.
    public var sample: Bool?

    /// Where the host launches the app.
    public struct Launch: Sendable, Equatable, Codable {
        /// The path, such as `/dashboards/1234`.
        public var path: String?
        /// Query items added to the launch URL, by name.
        public var query: [String: String]?

        /// A launch at `path` with `query`.
        public init(path: String? = nil, query: [String: String]? = nil) {
            self.path = path
            self.query = query
        }
    }

    /// One tab of the host's tab bar.
    public struct Tab: Sendable, Equatable, Codable {
        /// The tab's id, as `switch_tab` and `set_tab_appearance` name it.
        public var id: String
        /// What the tab shows.
        public var title: String?
        /// The name of its icon.
        public var icon: String?
        /// The app it runs; this app when left out.
        public var app: String?
        /// The path it opens at (the launch path when left out).
        public var route: String?
        /// Whether the tab bar leaves it out.
        public var hidden: Bool?

        /// A tab `id` titled `title`.
        public init(id: String, title: String? = nil, icon: String? = nil, app: String? = nil, route: String? = nil, hidden: Bool? = nil) {
            self.id = id
            self.title = title
            self.icon = icon
            self.app = app
            self.route = route
            self.hidden = hidden
        }
    }

    /// The host's own navigation structure, as Corva's native apps draw it.
    public struct Navigation: Sendable, Equatable, Codable {
        /// A dashboard: loaded at `/dashboards/<id>`.
        public struct Dashboard: Sendable, Equatable, Codable {
            public var id: String
            public var name: String?

            /// A dashboard `id` named `name`.
            public init(id: String, name: String? = nil) {
                self.id = id
                self.name = name
            }
        }

        /// An asset (a well): its pages are loaded at `/assets/<id>/<category>`.
        public struct Asset: Sendable, Equatable, Codable {
            public var id: String
            public var name: String?
            /// The categories of its asset page's tabs.
            public var categories: [String]

            /// An asset `id` named `name` with tabs of `categories`.
            public init(id: String, name: String? = nil, categories: [String]) {
                self.id = id
                self.name = name
                self.categories = categories
            }
        }

        public var dashboards: [Dashboard]?
        public var assets: [Asset]?

        /// Dashboards and assets.
        public init(dashboards: [Dashboard]? = nil, assets: [Asset]? = nil) {
            self.dashboards = dashboards
            self.assets = assets
        }
    }

    /// What the host's ads do.
    public struct Ads: Sendable, Equatable, Codable {
        /// Whether an ad loads (`true` by default); `false` makes every load fail as an unfilled ad does.
        public var fill: Bool?
        /// What a rewarded ad gives once watched.
        public var reward: BridgeReward?

        /// Ads that fill (or not), with a reward.
        public init(fill: Bool? = nil, reward: BridgeReward? = nil) {
            self.fill = fill
            self.reward = reward
        }
    }

    /// An empty profile: every user-data action answers not supported.
    public init() {}

    /// A profile that says it is a sample (``sample``), so that a developer sees every action of
    /// `dialect` answered before writing a profile: a user with a photo, contacts, tokens, points and a
    /// phone, a location, a catalogue and ads; tabs and biometrics for Liquid State, dashboards and asset
    /// pages for Corva.
    public static func sample(for dialect: BridgeDialect) -> HostProfile {
        var profile = HostProfile()
        profile.sample = true
        profile.userName = "Sample User"
        profile.profilePhoto = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        profile.phoneNumber = "+81-3-0000-0000"
        profile.contacts = [
            BridgeContact(id: "sample-1", name: "Ken Sample", email: "ken@example.com"),
            BridgeContact(id: "sample-2", name: "Mei Sample", email: "mei@example.com"),
        ]
        profile.accessTokens = ["rae": "sample-access-token"]
        profile.points = BridgePoints(standard: 1200, term: 300, cash: 50)
        profile.loggedIn = true
        profile.location = BridgePosition(latitude: 35.6812, longitude: 139.7671, accuracy: 20)
        profile.products = [
            BridgeProduct(id: "sample-gems", title: "100 gems", description: "A sample product", productPrice: .init(currencyCode: "JPY", price: "120")),
            BridgeProduct(id: "sample-pass", title: "Season pass", description: "Another sample product", productPrice: .init(currencyCode: "JPY", price: "980")),
        ]
        profile.ads = Ads(fill: true, reward: BridgeReward(type: "coin", amount: 10))
        profile.sessionToken = "sample-session-token"
        switch dialect.name {
        case BridgeDialect.liquidState.name:
            profile.tabs = [Tab(id: "home", title: "Home", icon: "home"), Tab(id: "news", title: "News", icon: "news")]
            profile.biometrics = BridgeBiometrics(status: .available, type: ["face"])
        case BridgeDialect.corva.name:
            profile.navigation = Navigation(
                dashboards: [.init(id: "1", name: "Sample dashboard"), .init(id: "2", name: "Another dashboard")],
                assets: [.init(id: "10", name: "Sample well", categories: ["drilling", "completion"])]
            )
            profile.launch = Launch(path: "/dashboards/1")
        default:
            break
        }
        return profile
    }

    /// The profile in the JSON document `data`; unknown keys are refused, so that a misspelt key does not
    /// silently leave a value out.
    public init(json data: Data) throws(HostProfileError) {
        guard let document = JSONReader.value(data, maxDepth: 8) else { throw .malformed("it is not one JSON document") }
        guard case .object(let fields) = document else { throw .malformed("it is not a JSON object") }
        let known: Set<String> = [
            "userName", "profilePhoto", "phoneNumber", "contacts", "accessTokens", "tokenLifetimeSeconds", "points", "loggedIn",
            "locale", "hostVersion", "darkMode", "ads", "products", "cookies", "location", "dialect", "launch", "sessionToken",
            "online", "biometrics", "tabs", "navigation", "sample",
        ]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .malformed("unknown key \"\(Sanitizer.printable(unknown, limit: 40))\" (known: \(known.sorted().joined(separator: ", ")))")
        }
        do {
            self = try JSONDecoder().decode(HostProfile.self, from: data)
            try check()
        } catch let error as HostProfileError {
            throw error
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context), let DecodingError.keyNotFound(_, context), let DecodingError.dataCorrupted(context) {
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            throw .malformed("\(path.isEmpty ? "the document" : path): \(context.debugDescription)")
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// What a decoded profile must also hold: a known dialect, paths that start with `/`, tabs with
    /// distinct ids.
    private func check() throws(HostProfileError) {
        if let dialect, BridgeDialect.builtIn[dialect] == nil {
            throw .malformed("dialect: " + BridgeDialectError.unknown(name: dialect).description)
        }
        if let path = launch?.path, !Self.isPath(path) { throw .malformed("launch.path must start with / and stay below it") }
        var ids: Set<String> = []
        for tab in tabs ?? [] {
            guard !tab.id.isEmpty, tab.id.utf8.count <= 64, ids.insert(tab.id).inserted else {
                throw .malformed("tabs: every tab has an id of 1 to 64 bytes, each its own")
            }
            if let route = tab.route, !Self.isPath(route) { throw .malformed("tabs.\(tab.id).route must start with / and stay below it") }
            if let app = tab.app, !Identifier.isValid(app) { throw .malformed("tabs.\(tab.id).app is not an app id") }
        }
        if let types = biometrics?.type, !types.allSatisfy(["touch", "face", "iris"].contains) {
            throw .malformed("biometrics.type holds \"touch\", \"face\" or \"iris\"")
        }
    }

    /// Whether `text` is a path of the app's own: it starts with one `/`, and no segment is `..`.
    package static func isPath(_ text: String) -> Bool {
        text.hasPrefix("/") && !text.hasPrefix("//") && text.utf8.count <= 2048
            && !text.split(separator: "/").contains("..") && !text.unicodeScalars.contains { $0.value < 0x20 || $0 == "\\" }
    }

    /// The environment of `base` with this profile's locale, host version and dark mode.
    public func environment(_ base: BridgeEnvironment = BridgeEnvironment()) -> BridgeEnvironment {
        var environment = base
        if let locale { environment.hostLocale = locale }
        if let hostVersion { environment.hostVersion = hostVersion }
        if let darkMode { environment.darkMode = darkMode }
        return environment
    }

    public func userName(appId: String) async throws(BridgeFailure) -> String {
        guard let userName else { throw .notSupported("getUserName") }
        return userName
    }

    public func profilePhoto(appId: String) async throws(BridgeFailure) -> String {
        guard let profilePhoto else { throw .notSupported("getProfilePhoto") }
        return profilePhoto
    }

    public func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] {
        guard let contacts else { throw .notSupported("getContacts") }
        return contacts
    }

    public func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken {
        guard let accessTokens else { throw .notSupported("getAccessToken") }
        guard let token = accessTokens[audience] else {
            throw BridgeFailure(type: "AuthorizationFailureError", message: "the host has no token for the audience '\(Sanitizer.printable(audience, limit: 80))'")
        }
        return BridgeAccessToken(token: token, validUntil: Date().addingTimeInterval(Double(tokenLifetimeSeconds ?? 3600)))
    }

    public func points(appId: String) async throws(BridgeFailure) -> BridgePoints {
        guard let points else { throw .notSupported("getPoints") }
        return points
    }

    public func phoneNumber(appId: String) async throws(BridgeFailure) -> String {
        guard let phoneNumber else { throw .notSupported("getPhoneNumber") }
        return phoneNumber
    }

    public func isLoggedIn(appId: String) async throws(BridgeFailure) -> Bool {
        loggedIn ?? (userName != nil)
    }

    public func loadAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) {
        guard let ads else { throw .notSupported("loadAd") }
        guard ads.fill ?? true else {
            throw BridgeFailure(type: "MiniAppError", message: "no ad filled the unit '\(Sanitizer.printable(ad.unitId, limit: 80))'")
        }
    }

    public func showAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) -> BridgeReward? {
        guard let ads else { throw .notSupported("showAd") }
        return ad.kind == .rewarded ? ads.reward : nil
    }

    public func products(appId: String) async throws(BridgeFailure) -> [BridgeProduct] {
        guard let products else { throw .notSupported("getAllProducts") }
        return products
    }

    public func cookies(appId: String) async throws(BridgeFailure) -> [BridgeCookie] { cookies ?? [] }

    public func currentPosition(appId: String) async throws(BridgeFailure) -> BridgePosition {
        guard let location else { throw .notSupported("getCurrentPosition") }
        return location
    }

    public func isOnline(appId: String) async -> Bool { online ?? true }

    public func biometrics(appId: String) async -> BridgeBiometrics { biometrics ?? BridgeBiometrics(status: .notPresent) }
}

/// A host profile that cannot be used.
public enum HostProfileError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let reason): return "the host profile is not valid: \(reason)"
        }
    }

    public var errorDescription: String? { description }
}
