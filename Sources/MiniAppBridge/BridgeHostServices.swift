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
    /// Whether the host is online (Liquid State's `online_status`).
    func isOnline(appId: String) async -> Bool
    /// The device's biometrics (Liquid State's `feature_status`).
    func biometrics(appId: String) async -> BridgeBiometrics
    /// Opens `file` in the host's viewer (Liquid State's `open_file`): a web page, or a file of the app's
    /// own, which the host confines to the installed app.
    func openFile(appId: String, _ file: BridgeFileReference) async throws(BridgeFailure)
    /// Something the app tells its host, which the host shows or acts on (its authentication, a tab to
    /// switch to, a haptic, the app maximized...).
    func signal(appId: String, _ signal: BridgeSignal) async throws(BridgeFailure)
    /// A command for the host's own media player (Forem's podcast and video players).
    func media(appId: String, _ command: BridgeMediaCommand) async throws(BridgeFailure)
    /// Lets the user pick an image (cropped to `ratio`, width over height, when given), calls `uploading`
    /// once picked, uploads it and answers its link (Forem's `imageUpload`); throws when the user picked none.
    func uploadImage(appId: String, ratio: Double?, uploading: @escaping @Sendable () -> Void) async throws(BridgeFailure) -> String
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
    public func isOnline(appId: String) async -> Bool { true }
    public func biometrics(appId: String) async -> BridgeBiometrics { BridgeBiometrics(status: .notPresent) }
    public func openFile(appId: String, _ file: BridgeFileReference) async throws(BridgeFailure) { throw .notSupported("open_file") }
    public func signal(appId: String, _ signal: BridgeSignal) async throws(BridgeFailure) { throw .notSupported(signal.action) }
    public func media(appId: String, _ command: BridgeMediaCommand) async throws(BridgeFailure) { throw .notSupported(command.player.rawValue) }
    public func uploadImage(appId: String, ratio: Double?, uploading: @escaping @Sendable () -> Void) async throws(BridgeFailure) -> String {
        throw .notSupported("imageUpload")
    }
}

/// What the device offers of biometric authentication, as a host profile's `biometrics` says it:
/// `{"status": "available", "type": ["face"]}`.
public struct BridgeBiometrics: Sendable, Equatable, Codable {
    /// Whether biometrics can be used.
    public enum Status: String, Sendable, Codable, CaseIterable {
        /// The device has none.
        case notPresent = "not_present"
        /// There is no passcode, or the user turned them off.
        case disabled
        /// Present and allowed, with nothing enrolled.
        case notEnrolled = "not_enrolled"
        /// Ready to use.
        case available
    }

    /// Whether they can be used.
    public var status: Status
    /// The kinds available (`touch`, `face`, `iris`) when ``status`` is `available`.
    public var type: [String]?

    /// Biometrics in `status`, of the kinds `type`.
    public init(status: Status, type: [String]? = nil) {
        self.status = status
        self.type = type
    }
}

/// A file an app asks its host to open.
public enum BridgeFileReference: Sendable, Equatable {
    /// An `http` or `https` URL.
    case web(String)
    /// A file of the app's own, by its path below the app's folder (no `..`, no leading `/`).
    case app(path: String)
    /// A file by its absolute path (no `..`): the host opens it only when it is inside the app's folder.
    case file(String)
}

/// What an app tells its host, for the host to show or act on.
public enum BridgeSignal: Sendable, Equatable {
    /// The app logged the user in or out (`set_authentication_status`).
    case authentication(isAuthenticated: Bool)
    /// Whether the app is ready for the host to present notifications (`set_notification_presentation_status`).
    case notificationsReady(Bool)
    /// While enabled, the host's Back control is the app's to handle (`set_back_override`).
    case backOverride(enabled: Bool)
    /// Switch to the tab `id` (`switch_tab`): reset to its launch first when `reset`, then at `route`
    /// when given; the tab switched to gets `params`.
    case switchTab(id: String, reset: Bool, route: String?, params: JSONValue?)
    /// New titles, icons or visibility for tabs, by tab id (`set_tab_appearance`).
    case tabAppearance([String: JSONValue])
    /// Reload the whole app: every tab, its configuration and navigation (`reset`).
    case reset
    /// Back to the app's first launch, its storage and state cleared, authentication kept (`clearall`).
    case clearAll
    /// A haptic feedback of this style (`heavy`, `light`, `medium`).
    case haptic(String)
    /// The app's page finished loading its content (Corva's `pageLoaded`).
    case pageLoaded
    /// The app fills the screen (`true`, Corva's `appMaximized`) or is back to its size (`appRestored`):
    /// the host hides its own chrome meanwhile.
    case maximized(Bool)
    /// The user's data as the app's page holds it now (Forem's `body`), `nil` when signed out.
    case userData(String?)

    /// The action that sends it.
    public var action: String {
        switch self {
        case .authentication: "set_authentication_status"
        case .notificationsReady: "set_notification_presentation_status"
        case .backOverride: "set_back_override"
        case .switchTab: "switch_tab"
        case .tabAppearance: "set_tab_appearance"
        case .reset: "reset"
        case .clearAll: "clearall"
        case .haptic: "haptic"
        case .pageLoaded, .maximized: "swiftHandler"
        case .userData: "body"
        }
    }
}

/// A command for the host's media player.
public struct BridgeMediaCommand: Sendable, Equatable {
    /// Which of the host's players.
    public enum Player: String, Sendable {
        /// The audio player (Forem's `podcast` handler).
        case podcast
        /// The video player (Forem's `video` handler).
        case video
    }

    /// The player the command is for.
    public var player: Player
    /// What to do: `play`, `load`, `seek`, `rate`, `muted`, `volume`, `pause`, `terminate`, `metadata`.
    public var action: String
    /// The command's values, as text (`url`, `seconds`, `rate`, `muted`, `volume`, `episodeName`...).
    public var values: [String: String]

    /// A command `action` for `player` with `values`.
    public init(player: Player, action: String, values: [String: String] = [:]) {
        self.player = player
        self.action = action
        self.values = values
    }
}

/// Host services that answer some of ``BridgeHostServices``' requirements themselves and hand every
/// other to ``base``: how a host replaces a few of the services a host gives by default (the browser
/// host's profile and page), keeping the rest.
///
/// ```
/// struct Services: BridgeHostServicesLayer {
///     let base: any BridgeHostServices
///     func userName(appId: String) async throws(BridgeFailure) -> String { "Aiko" }
/// }
/// ```
public protocol BridgeHostServicesLayer: BridgeHostServices {
    /// The services that answer what this layer does not.
    var base: any BridgeHostServices { get }
}

extension BridgeHostServicesLayer {
    public func userName(appId: String) async throws(BridgeFailure) -> String { try await base.userName(appId: appId) }
    public func profilePhoto(appId: String) async throws(BridgeFailure) -> String { try await base.profilePhoto(appId: appId) }
    public func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] { try await base.contacts(appId: appId) }
    public func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken { try await base.accessToken(appId: appId, audience: audience, scopes: scopes) }
    public func points(appId: String) async throws(BridgeFailure) -> BridgePoints { try await base.points(appId: appId) }
    public func sendMessage(appId: String, message: JSONValue, to recipients: MessageRecipients) async throws(BridgeFailure) -> JSONValue { try await base.sendMessage(appId: appId, message: message, to: recipients) }
    public func downloadFile(appId: String, filename: String, url: String, headers: [String: String]) async throws(BridgeFailure) -> String { try await base.downloadFile(appId: appId, filename: filename, url: url, headers: headers) }
    public func devicePermission(appId: String, name: String) async throws(BridgeFailure) -> Bool { try await base.devicePermission(appId: appId, name: name) }
    public func devicePermissionStatus(appId: String, name: String) async -> DevicePermissionStatus { await base.devicePermissionStatus(appId: appId, name: name) }
    public func phoneNumber(appId: String) async throws(BridgeFailure) -> String { try await base.phoneNumber(appId: appId) }
    public func isLoggedIn(appId: String) async throws(BridgeFailure) -> Bool { try await base.isLoggedIn(appId: appId) }
    public func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] { try await base.askUser(prompt) }
    public func closeMiniApp(appId: String, withConfirmationAlert: Bool) async throws(BridgeFailure) { try await base.closeMiniApp(appId: appId, withConfirmationAlert: withConfirmationAlert) }
    public func receive(appId: String, action: String, info: JSONValue) async throws(BridgeFailure) -> String { try await base.receive(appId: appId, action: action, info: info) }
    public func share(appId: String, _ item: BridgeShare) async throws(BridgeFailure) { try await base.share(appId: appId, item) }
    public func loadAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) { try await base.loadAd(appId: appId, ad) }
    public func showAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) -> BridgeReward? { try await base.showAd(appId: appId, ad) }
    public func products(appId: String) async throws(BridgeFailure) -> [BridgeProduct] { try await base.products(appId: appId) }
    public func confirmPurchase(appId: String, _ product: BridgeProduct) async throws(BridgeFailure) { try await base.confirmPurchase(appId: appId, product) }
    public func logIn(appId: String) async throws(BridgeFailure) -> Bool { try await base.logIn(appId: appId) }
    public func logOut(appId: String) async throws(BridgeFailure) -> Bool { try await base.logOut(appId: appId) }
    public func cookies(appId: String) async throws(BridgeFailure) -> [BridgeCookie] { try await base.cookies(appId: appId) }
    public func openBrowser(appId: String, _ kind: BridgeBrowser, url: String) async throws(BridgeFailure) -> Bool { try await base.openBrowser(appId: appId, kind, url: url) }
    public func loadHTML(appId: String, html: String, callbackURL: String) async throws(BridgeFailure) -> String? { try await base.loadHTML(appId: appId, html: html, callbackURL: callbackURL) }
    public func imageFromGallery(appId: String) async throws(BridgeFailure) -> BridgeImage { try await base.imageFromGallery(appId: appId) }
    public func currentPosition(appId: String) async throws(BridgeFailure) -> BridgePosition { try await base.currentPosition(appId: appId) }
    public func isOnline(appId: String) async -> Bool { await base.isOnline(appId: appId) }
    public func biometrics(appId: String) async -> BridgeBiometrics { await base.biometrics(appId: appId) }
    public func openFile(appId: String, _ file: BridgeFileReference) async throws(BridgeFailure) { try await base.openFile(appId: appId, file) }
    public func signal(appId: String, _ signal: BridgeSignal) async throws(BridgeFailure) { try await base.signal(appId: appId, signal) }
    public func media(appId: String, _ command: BridgeMediaCommand) async throws(BridgeFailure) { try await base.media(appId: appId, command) }
    public func uploadImage(appId: String, ratio: Double?, uploading: @escaping @Sendable () -> Void) async throws(BridgeFailure) -> String { try await base.uploadImage(appId: appId, ratio: ratio, uploading: uploading) }
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
