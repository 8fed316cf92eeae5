import Foundation
import Logging
import MiniAppBridge
import MiniAppCore
import MiniAppPermissions
import NIOConcurrencyHelpers
import Synchronization

/// The browser host's services: the profile's data, and the host's user interface on the host page
/// (prompts, share sheet, ads, purchases, login, pickers, links), never inside the app's frame.
///
/// What the user answers on the host page is checked here against what was shown: a contact id the
/// picker did not list, or an image over ``maxImageBytes``, is refused as if the user had cancelled.
final class BrowserHostServices: BridgeHostServices {
    /// The host's profile as the host page last set it: each call reads it once.
    private let profiles: NIOLockedValueBox<HostProfile>
    var profile: HostProfile { profiles.withLockedValue { $0 } }
    let board: HostBoard
    let store: PermissionStore
    let logger: Logger
    /// The ads each app loaded and has not shown yet.
    private let loadedAds = Mutex<Set<BridgeAd>>([])

    /// The device permissions the host page decides: camera and microphone reach the app's frame
    /// through its `allow` attribute; location through the bridge.
    static let devices = ["camera", "microphone", "location"]

    /// The biggest image the gallery picker hands an app.
    static let maxImageBytes = 2 << 20

    /// The cookies the app's bridge request carried: the app's own, set on its origin.
    @TaskLocal static var requestCookies: [BridgeCookie] = []

    /// Where the app is served: its folder, and its origin and the host page's once the host listens.
    struct Place: Sendable {
        let root: String
        let appOrigin: @Sendable () -> String
        let hostOrigin: @Sendable () -> String
    }

    let place: Place
    let signals: HostSignals
    let uploads: UploadStore

    init(
        profile: NIOLockedValueBox<HostProfile>, board: HostBoard, store: PermissionStore, logger: Logger, place: Place, signals: HostSignals,
        uploads: UploadStore
    ) {
        self.profiles = profile
        self.board = board
        self.store = store
        self.logger = logger
        self.place = place
        self.signals = signals
        self.uploads = uploads
    }

    func userName(appId: String) async throws(BridgeFailure) -> String { try await profile.userName(appId: appId) }
    func profilePhoto(appId: String) async throws(BridgeFailure) -> String { try await profile.profilePhoto(appId: appId) }
    func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] { try await profile.contacts(appId: appId) }
    func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken {
        try await profile.accessToken(appId: appId, audience: audience, scopes: scopes)
    }
    func points(appId: String) async throws(BridgeFailure) -> BridgePoints { try await profile.points(appId: appId) }
    func phoneNumber(appId: String) async throws(BridgeFailure) -> String { try await profile.phoneNumber(appId: appId) }
    func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] { try await board.ask(prompt) }
    func closeMiniApp(appId: String, withConfirmationAlert: Bool) async throws(BridgeFailure) { board.close(appId: appId) }

    func receive(appId: String, action: String, info: JSONValue) async throws(BridgeFailure) -> String {
        switch action {
        case "sendAnalytics", "configureAnalytics", "logEvent":
            logger.debug("mini-app report", metadata: ["app-id": "\(appId)", "action": "\(action)"])
            return action == "logEvent" ? "true" : "SUCCESS"
        case "sendJsonToHostapp", "sendInfoToHostapp", "shouldClearNotifications", "shouldUpdateBadgeNumber", "shouldUpdateNotificationInfo":
            board.inform(appId: appId, kind: action, payload: info)
            return "SUCCESS"
        default:
            throw .notSupported(action)
        }
    }

    // MARK: Login

    func isLoggedIn(appId: String) async throws(BridgeFailure) -> Bool {
        if let state = board.loggedIn.withLock({ $0 }) { return state }
        return try await profile.isLoggedIn(appId: appId)
    }

    func logIn(appId: String) async throws(BridgeFailure) -> Bool {
        let answer = try await board.show(HostSheet(appId: appId, kind: "login", payload: .object(["userName": profile.userName.map { .string($0) } ?? .null])))
        if answer?["loggedIn"] == .bool(true) { board.loggedIn.withLock { $0 = true } }
        return try await isLoggedIn(appId: appId)
    }

    func logOut(appId: String) async throws(BridgeFailure) -> Bool {
        board.loggedIn.withLock { $0 = false }
        board.inform(appId: appId, kind: "forceLogout", payload: .null)
        return true
    }

    // MARK: Sharing, ads, purchases

    func share(appId: String, _ item: BridgeShare) async throws(BridgeFailure) {
        var payload: [String: JSONValue] = ["content": .string(item.content)]
        if let url = item.url { payload["url"] = .string(url) }
        if let image = item.image {
            payload["imageBytes"] = .number(Double(image.count))
            if let type = Self.imageType(image) { payload["image"] = .string("data:\(type);base64," + Data(image).base64EncodedString()) }
        }
        // The share sheet answers once the user closed it, shared or not, as the native hosts do.
        _ = try await board.show(HostSheet(appId: appId, kind: "share", payload: .object(payload)))
    }

    func loadAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) {
        try await profile.loadAd(appId: appId, ad)
        loadedAds.withLock { _ = $0.insert(ad) }
    }

    func showAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) -> BridgeReward? {
        guard loadedAds.withLock({ $0.remove(ad) }) != nil else {
            throw BridgeFailure(type: "MiniAppError", message: "the ad unit '\(Sanitizer.printable(ad.unitId, limit: 80))' has no ad loaded: load it first")
        }
        let reward = try await profile.showAd(appId: appId, ad)
        var payload: [String: JSONValue] = ["adType": .string(ad.kind == .rewarded ? "rewarded" : "interstitial"), "adUnitId": .string(ad.unitId)]
        if let reward { payload["reward"] = BridgeDispatcher.rewardJSON(reward) }
        let answer = try await board.show(HostSheet(appId: appId, kind: "ad", payload: .object(payload)))
        // A rewarded ad closed before its end gives nothing.
        if ad.kind == .rewarded, answer?["watched"] != .bool(true) {
            throw BridgeFailure(type: "MiniAppError", message: "the user closed the ad before its end: no reward")
        }
        return reward
    }

    func products(appId: String) async throws(BridgeFailure) -> [BridgeProduct] { try await profile.products(appId: appId) }

    func confirmPurchase(appId: String, _ product: BridgeProduct) async throws(BridgeFailure) {
        let answer = try await board.show(HostSheet(appId: appId, kind: "purchase", payload: .object(["product": BridgeDispatcher.productJSON(product)])))
        guard answer?["confirmed"] == .bool(true) else {
            throw BridgeFailure(type: "UserCancelledPurchaseError", message: "the user cancelled the purchase of '\(Sanitizer.printable(product.id, limit: 80))'")
        }
    }

    func cookies(appId: String) async throws(BridgeFailure) -> [BridgeCookie] {
        let own = Self.requestCookies
        let names = Set(own.map(\.name))
        return own + (try await profile.cookies(appId: appId)).filter { !names.contains($0.name) }
    }

    // MARK: Browsers and the gallery

    func openBrowser(appId: String, _ kind: BridgeBrowser, url: String) async throws(BridgeFailure) -> Bool {
        // Opened by the user from the host page, in a tab of its own: closing the host's card sends the
        // app `miniappwebviewclosed`, as closing a native host's web view does.
        board.inform(appId: appId, kind: "browser", payload: .object(["url": .string(url), "browser": .string(kind.rawValue)]))
        return true
    }

    func loadHTML(appId: String, html: String, callbackURL: String) async throws(BridgeFailure) -> String? {
        let answer = try await board.show(HostSheet(appId: appId, kind: "html", payload: .object(["html": .string(html), "callbackUrl": .string(callbackURL)])))
        return answer?["continued"] == .bool(true) ? callbackURL : nil
    }

    func imageFromGallery(appId: String) async throws(BridgeFailure) -> BridgeImage {
        let answer = try await board.show(HostSheet(appId: appId, kind: "gallery", payload: .object(["maxBytes": .number(Double(Self.maxImageBytes))])))
        guard case .string(let encoded)? = answer?["data"], let data = Data(base64Encoded: encoded), !data.isEmpty, data.count <= Self.maxImageBytes else {
            throw BridgeFailure(type: "MiniAppError", message: "the user picked no image")
        }
        var image = BridgeImage(data: Array(data))
        if case .string(let type)? = answer?["mimeType"], type.hasPrefix("image/"), type.utf8.count <= 64 { image.mimeType = type }
        if case .string(let name)? = answer?["filename"], !name.isEmpty, name.utf8.count <= 255 { image.filename = name }
        return image
    }

    // MARK: Messages and downloads

    func sendMessage(appId: String, message: JSONValue, to recipients: MessageRecipients) async throws(BridgeFailure) -> JSONValue {
        let contacts = profile.contacts ?? []
        var payload: [String: JSONValue] = [
            "message": message,
            "contacts": .array(contacts.map { .object(["id": .string($0.id), "name": $0.name.map { .string($0) } ?? .null]) }),
        ]
        switch recipients {
        case .chosenByUser: payload["mode"] = .string("one")
        case .several: payload["mode"] = .string("several")
        case .contact(let id): payload["mode"] = .string("contact"); payload["contactId"] = .string(id)
        }
        let answer = try await board.show(HostSheet(appId: appId, kind: "message", payload: .object(payload)))
        var chosen: [String] = []
        if case .array(let ids)? = answer?["sent"] {
            for case .string(let id) in ids { chosen.append(id) }
        }
        // Only what the sheet offered can be chosen.
        let offered: Set<String>
        if case .contact(let id) = recipients { offered = [id] } else { offered = Set(contacts.map(\.id)) }
        chosen = chosen.filter { offered.contains($0) }
        guard !chosen.isEmpty else { return .null }
        switch recipients {
        case .several: return .array(chosen.map { .string($0) })
        default: return .string(chosen[0])
        }
    }

    func downloadFile(appId: String, filename: String, url: String, headers: [String: String]) async throws(BridgeFailure) -> String {
        guard BridgeDispatcher.isWebURL(url) || url.hasPrefix("data:") else {
            throw BridgeFailure(type: "InvalidUrlError", message: "the host downloads http, https and data URLs")
        }
        let answer = try await board.show(HostSheet(appId: appId, kind: "download", payload: .object(["filename": .string(filename), "url": .string(url)])))
        guard answer?["saved"] == .bool(true) else {
            throw BridgeFailure(type: "DownloadFailedError", message: "the user did not save '\(Sanitizer.printable(filename, limit: 80))'")
        }
        return filename
    }

    // MARK: Device permissions

    func devicePermission(appId: String, name: String) async throws(BridgeFailure) -> Bool {
        let name = name.lowercased()
        switch await devicePermissionStatus(appId: appId, name: name) {
        case .granted: return true
        case .denied: return false
        case .unknown: break
        }
        let answer = try await board.show(HostSheet(appId: appId, kind: "device", payload: .object(["permission": .string(name)])))
        guard case .bool(let allowed)? = answer?["allowed"] else { return false }
        do {
            try await store.setHostRecord(appId: appId, .device, key: name, value: allowed ? DevicePermissionStatus.granted.rawValue : DevicePermissionStatus.denied.rawValue)
        } catch {
            logger.warning("device permission not kept", metadata: ["app-id": "\(appId)", "error": "\(error)"])
        }
        // The host pages read the decision: a camera or microphone allowed becomes the frame's `allow`.
        board.notifyStateChanged(appId: appId)
        return allowed
    }

    func devicePermissionStatus(appId: String, name: String) async -> DevicePermissionStatus {
        guard let text = try? await store.hostRecord(appId: appId, .device, key: name.lowercased()) else { return .unknown }
        return DevicePermissionStatus(rawValue: text) ?? .unknown
    }

    func currentPosition(appId: String) async throws(BridgeFailure) -> BridgePosition {
        guard await devicePermissionStatus(appId: appId, name: "location") == .granted else {
            throw BridgeFailure(type: "PERMISSION_DENIED", message: "User denied Geolocation")
        }
        if let location = profile.location { return location }
        // The host page asks its browser (the browser may ask its user) and answers at once.
        let answer = try await board.show(HostSheet(appId: appId, kind: "location", payload: .null))
        guard case .number(let latitude)? = answer?["latitude"], case .number(let longitude)? = answer?["longitude"] else {
            var message = "the browser gave no position"
            if case .string(let text)? = answer?["error"] { message = "the browser gave no position: " + Sanitizer.printable(text, limit: 200) }
            // The browser's own refusal (its code 1): location is turned off for the host itself.
            throw BridgeFailure(type: answer?["code"] == .number(1) ? "LOCATION_DISABLED" : "POSITION_UNAVAILABLE", message: message)
        }
        var position = BridgePosition(latitude: latitude, longitude: longitude)
        if case .number(let accuracy)? = answer?["accuracy"] { position.accuracy = accuracy }
        if case .number(let altitude)? = answer?["altitude"] { position.altitude = altitude }
        return position
    }

    // MARK: What other hosts' apps ask

    func isOnline(appId: String) async -> Bool {
        if let online = profile.online { return online }
        return board.online.withLock { $0 } ?? true
    }

    func biometrics(appId: String) async -> BridgeBiometrics { await profile.biometrics(appId: appId) }

    /// Opens a web page, or a file of the app's own, in the host page's viewer; a file outside the app's
    /// folder, a link on the way, or one that does not exist is refused.
    func openFile(appId: String, _ file: BridgeFileReference) async throws(BridgeFailure) {
        let url: String
        switch file {
        case .web(let address):
            url = address
        case .app(let path):
            url = try appFileURL(path)
        case .file(let path):
            let root = place.root.hasSuffix("/") ? place.root : place.root + "/"
            guard path.hasPrefix(root) else {
                throw BridgeFailure(type: "InvalidPathError", message: "open_file opens files inside the app only")
            }
            url = try appFileURL(String(path.dropFirst(root.count)))
        }
        board.inform(appId: appId, kind: "file", payload: .object(["url": .string(url)]))
    }

    /// The URL on the app's origin of the app's file `path`, which must be a regular file reached without links.
    private func appFileURL(_ path: String) throws(BridgeFailure) -> String {
        guard let relative = BrowserHostResponder.relativePath("/" + path), case .file = BrowserHostResponder.lookUp(relative, under: place.root, readingWhole: false) else {
            throw BridgeFailure(type: "FileNotFoundError", message: "the app has no file '\(Sanitizer.printable(path, limit: 200))'")
        }
        let encoded = relative.split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))) ?? String($0) }
        return place.appOrigin() + "/" + encoded.joined(separator: "/")
    }

    func signal(appId: String, _ signal: BridgeSignal) async throws(BridgeFailure) {
        board.hub.send(.signal(appId: appId, signal))
        var payload: [String: JSONValue]
        switch signal {
        case .authentication(let isAuthenticated):
            signals.update { $0.authenticated = isAuthenticated }
            payload = ["signal": .string("authentication"), "isAuthenticated": .bool(isAuthenticated)]
        case .notificationsReady(let ready):
            let released = signals.setReady(ready)
            payload = ["signal": .string("notificationsReady"), "ready": .bool(ready)]
            board.inform(appId: appId, kind: "signal", payload: .object(payload))
            for notification in released { board.inform(appId: appId, kind: "notification", payload: notification) }
            return
        case .backOverride(let enabled):
            signals.update { $0.backOverride = enabled }
            payload = ["signal": .string("backOverride"), "enabled": .bool(enabled)]
        case .switchTab(let id, let reset, let route, let params):
            guard profile.tabs?.contains(where: { $0.id == id }) == true else {
                throw BridgeFailure(type: "InvalidParametersError", message: "this host has no tab '\(Sanitizer.printable(id, limit: 64))'")
            }
            payload = ["signal": .string("switchTab"), "id": .string(id), "reset": .bool(reset), "route": route.map { .string($0) } ?? .null, "params": params ?? .null]
        case .tabAppearance(let tabs):
            payload = ["signal": .string("tabAppearance"), "tabs": .object(tabs)]
        case .reset:
            signals.update { $0.backOverride = false; $0.maximized = false; $0.pageLoaded = false }
            payload = ["signal": .string("reset")]
        case .clearAll:
            // The app's state as the host keeps it goes too: its secure storage and its preferences.
            do {
                try await store.clearStorage(appId: appId)
                try await store.clearHostRecords(appId: appId, .preference)
            } catch {
                throw BridgeFailure(type: "MiniAppError", message: "the host could not clear the app's storage: \(error)")
            }
            signals.update { $0.backOverride = false; $0.maximized = false; $0.pageLoaded = false }
            payload = ["signal": .string("clearAll"), "token": .string(board.clearToken(appId: appId))]
        case .haptic(let style):
            payload = ["signal": .string("haptic"), "style": .string(style)]
        case .pageLoaded:
            signals.update { $0.pageLoaded = true }
            payload = ["signal": .string("pageLoaded")]
        case .maximized(let maximized):
            signals.update { $0.maximized = maximized }
            payload = ["signal": .string("maximized"), "maximized": .bool(maximized)]
        case .userData(let data):
            signals.update { $0.userData = .some(data) }
            payload = ["signal": .string("userData"), "userData": data.map { .string($0) } ?? .null]
        }
        board.inform(appId: appId, kind: "signal", payload: .object(payload))
    }

    func media(appId: String, _ command: BridgeMediaCommand) async throws(BridgeFailure) {
        board.inform(appId: appId, kind: "media", payload: .object([
            "player": .string(command.player.rawValue), "action": .string(command.action),
            "values": .object(command.values.mapValues { .string($0) }),
        ]))
    }

    /// The host page's picker (cropped there to `ratio`); the image is then kept by the host and
    /// served at a link of its own.
    func uploadImage(appId: String, ratio: Double?, uploading: @escaping @Sendable () -> Void) async throws(BridgeFailure) -> String {
        var payload: [String: JSONValue] = ["maxBytes": .number(Double(Self.maxImageBytes))]
        if let ratio { payload["ratio"] = .number(ratio) }
        let answer = try await board.show(HostSheet(appId: appId, kind: "imageUpload", payload: .object(payload)))
        guard let answer, case .string(let encoded)? = answer["data"] else {
            throw BridgeFailure(type: "UserCancelledError", message: "the user picked no image")
        }
        uploading()
        guard let data = Data(base64Encoded: encoded), !data.isEmpty, data.count <= Self.maxImageBytes, let type = Self.imageType(Array(data)) else {
            throw BridgeFailure(type: "UploadFailedError", message: "the file is not an image of at most \(Self.maxImageBytes) bytes")
        }
        return place.hostOrigin() + "/uploads/" + uploads.keep(Array(data), type: type)
    }

    /// The image type the bytes start with, for the share sheet's preview.
    static func imageType(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if bytes.count > 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }
}
