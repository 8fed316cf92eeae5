import Foundation
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppBridge
@testable import MiniAppCore
@testable import MiniAppPermissions

/// The actions a host answers with its own user interface or records: the bridge checks what the app
/// sends, asks the host's services, and keeps preferences and receipts in the store, on both stores.
@Suite struct BridgeHostUITests {
    let cache = try! TemporaryDirectory.make().path
    let manifest = BundleManifest(optPermissions: KnownPermission.allCases.map { PermissionDeclaration(name: $0.rawValue) })

    /// A host whose user says yes (or no) to everything it is shown, and remembers what it was shown.
    final class Host: BridgeHostServices {
        let agrees: Bool
        let shown = Mutex<[String]>([])
        let shared = Mutex<BridgeShare?>(nil)
        let profile = HostProfile.sample

        init(agrees: Bool) { self.agrees = agrees }

        func share(appId: String, _ item: BridgeShare) async throws(BridgeFailure) {
            shown.withLock { $0.append("share \(item.content) \(item.url ?? "-") \(item.image?.count ?? 0)") }
            shared.withLock { $0 = item }
        }
        func loadAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) { try await profile.loadAd(appId: appId, ad) }
        func showAd(appId: String, _ ad: BridgeAd) async throws(BridgeFailure) -> BridgeReward? { try await profile.showAd(appId: appId, ad) }
        func products(appId: String) async throws(BridgeFailure) -> [BridgeProduct] { try await profile.products(appId: appId) }
        func confirmPurchase(appId: String, _ product: BridgeProduct) async throws(BridgeFailure) {
            shown.withLock { $0.append("purchase \(product.id)") }
            guard agrees else { throw BridgeFailure(type: "UserCancelledPurchaseError", message: "no") }
        }
        func cookies(appId: String) async throws(BridgeFailure) -> [BridgeCookie] { [BridgeCookie(name: "a", value: "1"), BridgeCookie(name: "b", value: "2")] }
        func openBrowser(appId: String, _ kind: BridgeBrowser, url: String) async throws(BridgeFailure) -> Bool {
            shown.withLock { $0.append("\(kind.rawValue) \(url)") }
            return agrees
        }
        func loadHTML(appId: String, html: String, callbackURL: String) async throws(BridgeFailure) -> String? { agrees ? callbackURL : nil }
        func imageFromGallery(appId: String) async throws(BridgeFailure) -> BridgeImage {
            guard agrees else { throw BridgeFailure(type: "MiniAppError", message: "none") }
            return BridgeImage(mimeType: "image/png", filename: "a.png", data: [0, 1, 255])
        }
    }

    func dispatcher(_ store: PermissionStore, agrees: Bool = true, host: Host? = nil) async throws -> (BridgeDispatcher, BridgeCapability) {
        let dispatcher = BridgeDispatcher(
            appId: "app", manifest: manifest, store: store, services: host ?? Host(agrees: agrees), identity: BridgeIdentity(secret: Array(repeating: 3, count: 32))
        )
        return (dispatcher, try await dispatcher.grant())
    }

    func call(_ pair: (BridgeDispatcher, BridgeCapability), _ action: String, _ param: JSONValue = .null) async -> BridgeOutcome {
        await pair.0.reply(to: BridgeMessage(id: "h", action: action, param: param), capability: pair.1).outcome
    }

    @Test(arguments: StoreBackend.allCases)
    func preferencesAreKeptPerAppInTheStore(backend: StoreBackend) async throws {
        let store = try await backend.openStore(cacheDirectory: cache)
        let first = try await dispatcher(store)
        #expect(await call(first, "setMiniAppPreference", .object(["preferenceKey": .string("theme"), "preferenceValue": .string("dark ☾")])) == .success("SUCCESS"))
        #expect(await call(first, "setMiniAppPreference", .object(["preferenceKey": .string("size"), "preferenceValue": .string("")])) == .success("SUCCESS"))
        // Another dispatcher on the same store (the next run of the app) reads them back.
        let second = try await dispatcher(store)
        #expect(await call(second, "getMiniAppPreference", .object(["preferenceKey": .string("theme")])) == .success("dark ☾"))
        #expect(await call(second, "getMiniAppPreference", .object(["preferenceKey": .string("size")])) == .success(""))
        #expect(await call(second, "removeMiniAppPreference", .object(["preferenceKey": .string("theme")])) == .success("SUCCESS"))
        #expect(failureType(await call(second, "getMiniAppPreference", .object(["preferenceKey": .string("theme")]))) == "MiniAppError")
        #expect(await call(second, "clearMiniAppPreferences") == .success("SUCCESS"))
        #expect(failureType(await call(second, "getMiniAppPreference", .object(["preferenceKey": .string("size")]))) == "MiniAppError")
        // Secure storage is another place: clearing preferences leaves it alone, and the reverse.
        #expect(failureType(await call(second, "setMiniAppPreference", .object(["preferenceKey": .string("")]))) == "InvalidParametersError")
        #expect(failureType(await call(second, "setMiniAppPreference", .object(["preferenceKey": .string(""), "preferenceValue": .string("x")]))) == "MiniAppError")
    }

    @Test(arguments: StoreBackend.allCases)
    func aPurchaseKeepsItsReceiptUntilConsumed(backend: StoreBackend) async throws {
        let store = try await backend.openStore(cacheDirectory: cache)
        let pair = try await dispatcher(store)
        guard case .success(let listed?) = await call(pair, "getAllProducts") else { Issue.record("no products"); return }
        #expect(listed.contains(#""productPrice":{"currencyCode":"JPY","price":"120"}"#), "\(listed)")
        #expect(failureType(await call(pair, "purchaseProductWith", .object(["productId": .string("nothing")]))) == "ProductNotFoundError")
        guard case .success(let bought?) = await call(pair, "purchaseProductWith", .object(["productId": .string("gem-10")])),
              case .object(let fields)? = JSONReader.value(Array(bought.utf8)), case .string(let transaction)? = fields["transactionId"] else {
            Issue.record("no purchase"); return
        }
        #expect(fields["productInfo"]?["id"] == .string("gem-10"))
        #expect(fields["consumed"] == nil)
        guard case .number(let date)? = fields["transactionDate"] else { Issue.record("no date"); return }
        #expect(abs(date / 1000 - Date().timeIntervalSince1970) < 60)
        // Owned and not consumed: it cannot be bought again.
        #expect(failureType(await call(pair, "purchaseProductWith", .object(["productId": .string("gem-10")]))) == "ProductPurchasedAlreadyError")
        let receipt = try #require(try await store.hostRecord(appId: "app", .purchase, key: transaction))
        #expect(receipt.contains(#""consumed":false"#))
        // The wrong product, then the right one, then again.
        #expect(failureType(await call(pair, "consumeProductWith", .object(["productId": .string("other"), "productTransactionId": .string(transaction)]))) == "ConsumeFailedError")
        #expect(await call(pair, "consumeProductWith", .object(["productId": .string("gem-10"), "productTransactionId": .string(transaction)])) == .success(#"{"description":"A handful","title":"10 gems"}"#))
        #expect(failureType(await call(pair, "consumeProductWith", .object(["productId": .string("gem-10"), "productTransactionId": .string(transaction)]))) == "ConsumeFailedError")
        #expect(try await store.hostRecord(appId: "app", .purchase, key: transaction)?.contains(#""consumed":true"#) == true)
        // Consumed: it may be bought again.
        guard case .success = await call(pair, "purchaseProductWith", .object(["productId": .string("gem-10")])) else { Issue.record("no second purchase"); return }
        #expect(try await store.hostRecords(appId: "app", .purchase).count == 2)
    }

    @Test func aCancelledPurchaseKeepsNothing() async throws {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        let pair = try await dispatcher(store, agrees: false)
        #expect(failureType(await call(pair, "purchaseProductWith", .object(["productId": .string("gem-10")]))) == "UserCancelledPurchaseError")
        #expect(try await store.hostRecords(appId: "app", .purchase).isEmpty)
    }

    @Test func adsFillAsTheProfileSaysAndRewardedOnesGiveItsReward() async throws {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        let pair = try await dispatcher(store)
        #expect(await call(pair, "loadAd", .object(["adType": .number(1), "adUnitId": .string("unit")])) == .success("SUCCESS"))
        #expect(await call(pair, "showAd", .object(["adType": .number(1), "adUnitId": .string("unit")])) == .success(#"{"amount":10,"type":"coin"}"#))
        #expect(await call(pair, "showAd", .object(["adType": .number(0), "adUnitId": .string("unit")])) == .success("CLOSED"))
        #expect(failureType(await call(pair, "loadAd", .object(["adType": .number(2), "adUnitId": .string("unit")]))) == "InvalidParametersError")
        var unfilled = HostProfile.sample
        unfilled.ads = HostProfile.Ads(fill: false)
        let dispatcher = BridgeDispatcher(appId: "app", manifest: manifest, store: store, services: unfilled, identity: BridgeIdentity(secret: Array(repeating: 3, count: 32)))
        let outcome = await dispatcher.reply(to: BridgeMessage(id: "a", action: "loadAd", param: .object(["adType": .number(0), "adUnitId": .string("u")])), capability: try await dispatcher.grant()).outcome
        #expect(failureType(outcome) == "MiniAppError")
        // Without ads in the profile: the SDK's not-supported error.
        let bare = BridgeDispatcher(appId: "app", manifest: manifest, store: store, services: HostProfile(), identity: BridgeIdentity(secret: Array(repeating: 3, count: 32)))
        let none = await bare.reply(to: BridgeMessage(id: "b", action: "loadAd", param: .object(["adType": .number(0), "adUnitId": .string("u")])), capability: try await bare.grant()).outcome
        #expect(failureType(none) == "NotSupportedError")
    }

    @Test func aShareCarriesItsTextLinkAndImageBytes() async throws {
        let host = Host(agrees: true)
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        let pair = try await dispatcher(store, host: host)
        // What the sample sends: the image as an array of numbers, over 2 MiB of JSON.
        let image = (0..<700_000).map { JSONValue.number(Double($0 % 256)) }
        let message = BridgeMessage(id: "s", action: "shareInfo", param: .object(["shareInfo": .object(["content": .string("hello"), "url": .string("https://example.com/"), "imageData": .array(image)])]))
        #expect(JSONWriter.text(message.param).utf8.count > 2 << 20)
        #expect(await pair.0.reply(to: message, capability: pair.1).outcome == .success("SUCCESS"))
        #expect(host.shown.withLock { $0 } == ["share hello https://example.com/ 700000"])
        #expect(host.shared.withLock { $0 } == BridgeShare(content: "hello", url: "https://example.com/", image: (0..<700_000).map { UInt8($0 % 256) }))
        #expect(failureType(await call(pair, "shareInfo", .object(["shareInfo": .object(["content": .string("")])]))) == "MiniAppError")
        #expect(await call(pair, "shareInfo", .object(["shareInfo": .object(["content": .string(""), "imageData": .array([.number(1)])])])) == .success("SUCCESS"))
        #expect(failureType(await call(pair, "shareInfo", .object(["shareInfo": .object(["content": .string("x"), "imageData": .array([.number(256)])])]))) == "InvalidParametersError")
    }

    @Test func cookiesBrowsersAndTheGalleryAnswerInTheSDKsShapes() async throws {
        let host = Host(agrees: true)
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        let pair = try await dispatcher(store, host: host)
        #expect(await call(pair, "getAllCookies") == .success(#"[{"name":"a","value":"1"},{"name":"b","value":"2"}]"#))
        #expect(await call(pair, "getCookies", .object(["cookieList": .array([.string("b"), .string("z")])])) == .success(#"[{"name":"b","value":"2"}]"#))
        #expect(await call(pair, "launchExternalBrowser", .object(["url": .string("https://example.com/a")])) == .success("true"))
        #expect(await call(pair, "launchInternalBrowser", .object(["url": .string("http://example.com/b")])) == .success("true"))
        #expect(failureType(await call(pair, "launchExternalBrowser", .object(["url": .string("javascript:alert(1)")]))) == "InvalidUrlError")
        #expect(failureType(await call(pair, "launchInteractiveBrowser", .object(["url": .string("file:///etc/passwd")]))) == "InvalidUrlError")
        #expect(host.shown.withLock { $0 } == ["external https://example.com/a", "internal http://example.com/b"])
        #expect(await call(pair, "loadUsingHTMLString", .object(["htmlString": .string("<p>x</p>"), "callbackUrl": .string("https://example.com/done")])) == .success("https://example.com/done"))
        #expect(await call(pair, "getImageFromGallery") == .success(#"{"data":[0,1,255],"filename":"a.png","mimeType":"image/png"}"#))
        #expect(await call(pair, "allowBackForwardNavigationGestures", .object(["shouldAllowNavigationGestures": .bool(true)])) == .success("true"))
        #expect(await call(pair, "isAppInstalledInDevice", .object(["packageName": .string("jp.co.rakuten")])) == .success("false"))
        let refusing = try await dispatcher(store, agrees: false)
        #expect(await call(refusing, "loadUsingHTMLString", .object(["htmlString": .string("<p>x</p>"), "callbackUrl": .string("https://example.com/done")])) == .success("CANCELLED"))
        #expect(failureType(await call(refusing, "getImageFromGallery")) == "MiniAppError")
    }

    @Test func thePositionIsTheHostsBehindLocation() async throws {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        var profile = HostProfile.sample
        profile.location = BridgePosition(latitude: 35.6812, longitude: 139.7671, accuracy: 20)
        let dispatcher = BridgeDispatcher(appId: "app", manifest: manifest, store: store, services: profile, identity: BridgeIdentity(secret: Array(repeating: 3, count: 32)))
        let capability = try await dispatcher.grant()
        let refused = await dispatcher.reply(to: BridgeMessage(id: "p", action: "getCurrentPosition"), capability: capability).outcome
        #expect(failureType(refused) == "userDenied")
        try await store.set(appId: "app", [KnownPermission.location.rawValue: .allowed])
        guard case .success(let text?) = await dispatcher.reply(to: BridgeMessage(id: "p", action: "getCurrentPosition"), capability: capability).outcome,
              case .object(let fields)? = JSONReader.value(Array(text.utf8)) else { Issue.record("no position"); return }
        #expect(fields["coords"]?["latitude"] == .number(35.6812) && fields["coords"]?["longitude"] == .number(139.7671) && fields["coords"]?["accuracy"] == .number(20))
        #expect(fields["coords"]?["altitude"] == .null)
        guard case .number(let timestamp)? = fields["timestamp"] else { Issue.record("no timestamp"); return }
        #expect(abs(timestamp / 1000 - Date().timeIntervalSince1970) < 60)
    }

    @Test(arguments: ["launchAppUsingDeeplink", "launchAppUsingPackageName", "startICChipKyc", "setupAndInstallEsim"])
    func whatABrowserCannotDoIsNotSupported(action: String) async throws {
        let pair = try await dispatcher(try await StoreBackend.sqlite.openStore(cacheDirectory: cache))
        #expect(failureType(await call(pair, action, .object([:]))) == "NotSupportedError")
    }
}
