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
///  "location": {"latitude": 35.6812, "longitude": 139.7671, "accuracy": 20}}
/// ```
/// Every key is optional; what is missing is answered as not supported, except `loggedIn` (logged in
/// when there is a `userName`) and `cookies` (none but the app's own).
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

    /// The profile in the JSON document `data`; unknown keys are refused, so that a misspelt key does not
    /// silently leave a value out.
    public init(json data: Data) throws(HostProfileError) {
        guard let document = JSONReader.value(data, maxDepth: 8) else { throw .malformed("it is not one JSON document") }
        guard case .object(let fields) = document else { throw .malformed("it is not a JSON object") }
        let known: Set<String> = [
            "userName", "profilePhoto", "phoneNumber", "contacts", "accessTokens", "tokenLifetimeSeconds", "points", "loggedIn",
            "locale", "hostVersion", "darkMode", "ads", "products", "cookies", "location",
        ]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .malformed("unknown key \"\(Sanitizer.printable(unknown, limit: 40))\" (known: \(known.sorted().joined(separator: ", ")))")
        }
        do {
            self = try JSONDecoder().decode(HostProfile.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context), let DecodingError.keyNotFound(_, context), let DecodingError.dataCorrupted(context) {
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            throw .malformed("\(path.isEmpty ? "the document" : path): \(context.debugDescription)")
        } catch {
            throw .malformed("\(error)")
        }
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
