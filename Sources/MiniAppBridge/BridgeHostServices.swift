public import Foundation
public import MiniAppCore

/// What the host provides to the mini-apps it runs: its user's data and its own user interface.
///
/// Every requirement has a default that answers ``BridgeFailure/notSupported(_:)``, so a host
/// implements only what it has. The dispatcher checks the manifest and the permission store before it
/// calls any of the user's data: an implementation never sees a call the user did not allow.
public protocol BridgeHostServices: Sendable {
    /// The user's name (USER_NAME).
    func userName(appId: String) async throws(BridgeFailure) -> String
    /// The user's photo as a URL or a data URL (PROFILE_PHOTO).
    func profilePhoto(appId: String) async throws(BridgeFailure) -> String
    /// The user's contacts (CONTACT_LIST).
    func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact]
    /// A token for `audience` with `scopes`, already checked against the manifest (ACCESS_TOKEN).
    func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken
    /// The user's points (POINTS).
    func points(appId: String) async throws(BridgeFailure) -> BridgePoints
    /// Sends `message` (the SDK's `MessageToContact`) to `recipients` (SEND_MESSAGE); answers the
    /// contact id that received it, `nil` when the user cancelled, or several ids.
    func sendMessage(appId: String, message: JSONValue, to recipients: MessageRecipients) async throws(BridgeFailure) -> JSONValue
    /// Downloads `url` as `filename` (FILE_DOWNLOAD); answers the file's name as saved.
    func downloadFile(appId: String, filename: String, url: String, headers: [String: String]) async throws(BridgeFailure) -> String
    /// Asks the device for a permission such as `location` (LOCATION is checked first); `true` when granted.
    func devicePermission(appId: String, name: String) async throws(BridgeFailure) -> Bool
    /// What the device says of a permission such as `camera`, `gallery` or `microphone`, without asking:
    /// `granted`, `denied`, or `unknown` while the user has not decided.
    func devicePermissionStatus(appId: String, name: String) async -> DevicePermissionStatus
    /// The user's phone number.
    func phoneNumber(appId: String) async throws(BridgeFailure) -> String
    /// Whether the user is logged in to the host.
    func isLoggedIn(appId: String) async throws(BridgeFailure) -> Bool
    /// Asks the user to decide on undecided custom permissions, showing each one's manifest reason.
    /// Answers a status for each asked name; a name left out stays undecided.
    func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus]
    /// The app asks to be closed.
    func closeMiniApp(appId: String, withConfirmationAlert: Bool) async throws(BridgeFailure)
    /// The app sends the host something of its own: `sendJsonToHostapp`, `sendInfoToHostapp`,
    /// `sendAnalytics`, `configureAnalytics`, `logEvent` (the action and its parameters); answers the text
    /// the app receives.
    func receive(appId: String, action: String, info: JSONValue) async throws(BridgeFailure) -> String
    /// Shows the user what the app shares (`shareInfo`); returns once the share sheet is done.
    func share(appId: String, _ item: BridgeShare) async throws(BridgeFailure)
    /// Loads an ad for `ad.unitId` (`loadAd`); throws when none fills.
    func loadAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure)
    /// Shows an ad loaded before (`showAd`); answers a rewarded ad's reward once the user closed it.
    func showAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) -> BridgeReward?
    /// The products the app sells (`getAllProducts`).
    func products(appId: String) async throws(BridgeFailure) -> [BridgeProduct]
    /// Asks the user to buy `product` (`purchaseProductWith`); returns when the user paid, throws
    /// `UserCancelledPurchaseError` when not. The bridge keeps the receipt.
    func confirmPurchase(appId: String, _ product: BridgeProduct) async throws(BridgeFailure)
    /// Shows the host's login (`triggerLoginUI`); answers whether the user is logged in afterwards.
    func logIn(appId: String) async throws(BridgeFailure) -> Bool
    /// Logs the user out (`forceLogout`); answers whether that happened.
    func logOut(appId: String) async throws(BridgeFailure) -> Bool
    /// The cookies the host holds for the app (`getAllCookies`, `getCookies`).
    func cookies(appId: String) async throws(BridgeFailure) -> [BridgeCookie]
    /// Opens `url` outside the app's view: in the user's browser or a browser of the host's
    /// (`launchExternalBrowser`, `launchInternalBrowser`, `launchInteractiveBrowser`); answers whether it opened.
    func openBrowser(appId: String, _ kind: BridgeBrowser, url: String) async throws(BridgeFailure) -> Bool
    /// Shows `html` in a browser of the host's until it loads `callbackURL` (`loadUsingHTMLString`):
    /// answers that URL, or nil when the user closed it first.
    func loadHTML(appId: String, html: String, callbackURL: String) async throws(BridgeFailure) -> String?
    /// Lets the user pick an image (`getImageFromGallery`); throws when the user picked none.
    func imageFromGallery(appId: String) async throws(BridgeFailure) -> BridgeImage
    /// The device's position (`getCurrentPosition`, LOCATION checked first); throws `PERMISSION_DENIED`
    /// or `POSITION_UNAVAILABLE` as the Geolocation API names its errors.
    func currentPosition(appId: String) async throws(BridgeFailure) -> BridgePosition
}

extension BridgeHostServices {
    public func userName(appId: String) async throws(BridgeFailure) -> String { throw .notSupported("getUserName") }
    public func profilePhoto(appId: String) async throws(BridgeFailure) -> String { throw .notSupported("getProfilePhoto") }
    public func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] { throw .notSupported("getContacts") }
    public func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken {
        throw .notSupported("getAccessToken")
    }
    public func points(appId: String) async throws(BridgeFailure) -> BridgePoints { throw .notSupported("getPoints") }
    public func sendMessage(appId: String, message: JSONValue, to recipients: MessageRecipients) async throws(BridgeFailure) -> JSONValue {
        throw .notSupported("sendMessageToContact")
    }
    public func downloadFile(appId: String, filename: String, url: String, headers: [String: String]) async throws(BridgeFailure) -> String {
        throw .notSupported("downloadFile")
    }
    public func devicePermission(appId: String, name: String) async throws(BridgeFailure) -> Bool { throw .notSupported("requestPermission") }
    public func devicePermissionStatus(appId: String, name: String) async -> DevicePermissionStatus { .unknown }
    public func phoneNumber(appId: String) async throws(BridgeFailure) -> String { throw .notSupported("getPhoneNumber") }
    public func isLoggedIn(appId: String) async throws(BridgeFailure) -> Bool { throw .notSupported("isLoggedIn") }
    public func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] {
        throw .notSupported("requestCustomPermissions")
    }
    public func closeMiniApp(appId: String, withConfirmationAlert: Bool) async throws(BridgeFailure) { throw .notSupported("closeMiniApp") }
    public func receive(appId: String, action: String, info: JSONValue) async throws(BridgeFailure) -> String { throw .notSupported(action) }
    public func share(appId: String, _ item: BridgeShare) async throws(BridgeFailure) { throw .notSupported("shareInfo") }
    public func loadAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) { throw .notSupported("loadAd") }
    public func showAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) -> BridgeReward? { throw .notSupported("showAd") }
    public func products(appId: String) async throws(BridgeFailure) -> [BridgeProduct] { throw .notSupported("getAllProducts") }
    public func confirmPurchase(appId: String, _ product: BridgeProduct) async throws(BridgeFailure) { throw .notSupported("purchaseProductWith") }
    public func logIn(appId: String) async throws(BridgeFailure) -> Bool { throw .notSupported("triggerLoginUI") }
    public func logOut(appId: String) async throws(BridgeFailure) -> Bool { throw .notSupported("forceLogout") }
    public func cookies(appId: String) async throws(BridgeFailure) -> [BridgeCookie] { throw .notSupported("getAllCookies") }
    public func openBrowser(appId: String, _ kind: BridgeBrowser, url: String) async throws(BridgeFailure) -> Bool { throw .notSupported(kind.action) }
    public func loadHTML(appId: String, html: String, callbackURL: String) async throws(BridgeFailure) -> String? {
        throw .notSupported("loadUsingHTMLString")
    }
    public func imageFromGallery(appId: String) async throws(BridgeFailure) -> BridgeImage { throw .notSupported("getImageFromGallery") }
    public func currentPosition(appId: String) async throws(BridgeFailure) -> BridgePosition { throw .notSupported("getCurrentPosition") }
}

/// A position, as the Geolocation API's `GeolocationCoordinates`.
public struct BridgePosition: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double
    /// Meters.
    public var accuracy: Double?
    /// Meters above the WGS 84 ellipsoid.
    public var altitude: Double?

    /// A position.
    public init(latitude: Double, longitude: Double, accuracy: Double? = nil, altitude: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.altitude = altitude
    }

    /// `{"coords": {...}, "timestamp"}`, as `navigator.geolocation` hands a position (`null` for what
    /// is unknown).
    package func json(at date: Date = Date()) -> JSONValue {
        .object([
            "coords": .object([
                "latitude": .number(latitude), "longitude": .number(longitude), "accuracy": .number(accuracy ?? 0),
                "altitude": altitude.map { .number($0) } ?? .null, "altitudeAccuracy": .null, "heading": .null, "speed": .null,
            ]),
            "timestamp": .number((date.timeIntervalSince1970 * 1000).rounded()),
        ])
    }
}

/// What an app shares (`shareInfo`).
public struct BridgeShare: Sendable, Equatable {
    /// The text; empty only when there is an image.
    public var content: String
    /// A link, if any.
    public var url: String?
    /// An image's bytes, if any (the SDK sends them as an array of numbers).
    public var image: [UInt8]?

    /// What an app shares.
    public init(content: String, url: String? = nil, image: [UInt8]? = nil) {
        self.content = content
        self.url = url
        self.image = image
    }
}

/// An ad an app loads or shows.
public struct BridgeAd: Sendable, Equatable, Hashable {
    /// The SDK's two kinds of ad.
    public enum Kind: Int, Sendable {
        case interstitial = 0
        case rewarded = 1
    }

    public var kind: Kind
    /// The ad unit the app names.
    public var unitId: String

    /// An ad of `kind` for `unitId`.
    public init(kind: Kind, unitId: String) {
        self.kind = kind
        self.unitId = unitId
    }
}

/// What a rewarded ad gives the user, as the SDK's `Reward`.
public struct BridgeReward: Sendable, Equatable, Codable {
    public var type: String?
    public var amount: Int?

    /// A reward of `amount` of `type`.
    public init(type: String? = nil, amount: Int? = nil) {
        self.type = type
        self.amount = amount
    }
}

/// A product an app sells, as the SDK's `ProductInfo`.
public struct BridgeProduct: Sendable, Equatable, Codable {
    /// A price, as the SDK's `ProductPrice`.
    public struct Price: Sendable, Equatable, Codable {
        public var currencyCode: String
        public var price: String

        /// `price` in `currencyCode`.
        public init(currencyCode: String, price: String) {
            self.currencyCode = currencyCode
            self.price = price
        }
    }

    public var id: String
    public var title: String
    public var description: String
    public var productPrice: Price

    /// A product.
    public init(id: String, title: String, description: String, productPrice: Price) {
        self.id = id
        self.title = title
        self.description = description
        self.productPrice = productPrice
    }
}

/// A cookie, as the SDK's `CookieInfo`.
public struct BridgeCookie: Sendable, Equatable, Codable {
    public var name: String
    public var value: String

    /// A cookie.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Where an app asks to open a page.
public enum BridgeBrowser: String, Sendable, Equatable {
    /// The user's own browser (`launchExternalBrowser`).
    case external
    /// A browser inside the host (`launchInternalBrowser`).
    case `internal`
    /// A browser inside the host that may call back into the app (`launchInteractiveBrowser`).
    case interactive

    /// The action that asks for it.
    public var action: String {
        switch self {
        case .external: "launchExternalBrowser"
        case .internal: "launchInternalBrowser"
        case .interactive: "launchInteractiveBrowser"
        }
    }
}

/// An image the user picked, as the SDK's gallery answer.
public struct BridgeImage: Sendable, Equatable {
    public var mimeType: String?
    public var filename: String?
    public var data: [UInt8]

    /// An image.
    public init(mimeType: String? = nil, filename: String? = nil, data: [UInt8]) {
        self.mimeType = mimeType
        self.filename = filename
        self.data = data
    }
}

/// A device permission's status as the SDK's `getPermissionStatus` reads it.
public enum DevicePermissionStatus: String, Sendable, Equatable {
    case granted, denied, unknown
}

/// Who a message goes to.
public enum MessageRecipients: Sendable, Equatable {
    /// A contact the user picks.
    case chosenByUser
    /// The contact with this id.
    case contact(id: String)
    /// Several contacts the user picks.
    case several
}

/// A contact of the user, as the SDK's `Contact`.
public struct BridgeContact: Sendable, Equatable, Codable {
    public var id: String
    public var name: String?
    public var email: String?
    public var allEmailList: [String]?

    /// A contact with the given fields.
    public init(id: String, name: String? = nil, email: String? = nil, allEmailList: [String]? = nil) {
        self.id = id
        self.name = name
        self.email = email
        self.allEmailList = allEmailList
    }

    var json: JSONValue {
        var fields: [String: JSONValue] = ["id": .string(id)]
        if let name { fields["name"] = .string(name) }
        if let email { fields["email"] = .string(email) }
        if let allEmailList { fields["allEmailList"] = .array(allEmailList.map { .string($0) }) }
        return .object(fields)
    }
}

/// An access token the host hands out.
public struct BridgeAccessToken: Sendable, Equatable {
    public var token: String
    public var validUntil: Date

    /// A token valid until `validUntil`.
    public init(token: String, validUntil: Date) {
        self.token = token
        self.validUntil = validUntil
    }
}

/// The user's points, as the SDK's `Points`.
public struct BridgePoints: Sendable, Equatable, Codable {
    public var standard: Int?
    public var term: Int?
    public var cash: Int?

    /// Points of each kind.
    public init(standard: Int? = nil, term: Int? = nil, cash: Int? = nil) {
        self.standard = standard
        self.term = term
        self.cash = cash
    }

    var json: JSONValue {
        var fields: [String: JSONValue] = [:]
        if let standard { fields["standard"] = .number(Double(standard)) }
        if let term { fields["term"] = .number(Double(term)) }
        if let cash { fields["cash"] = .number(Double(cash)) }
        return .object(fields)
    }
}

/// Custom permissions a running app asked for that the user has not decided yet.
public struct PermissionPrompt: Sendable, Equatable {
    /// One permission to decide.
    public struct Item: Sendable, Equatable {
        /// The full permission name.
        public var name: String
        /// The reason the manifest gives (localised), if any: never text the app sent at run time.
        public var reason: String?
        /// Whether the launch gate needs it.
        public var required: Bool
    }

    /// The app asking.
    public var appId: String
    /// The permissions to decide, in the order asked.
    public var items: [Item]
}
