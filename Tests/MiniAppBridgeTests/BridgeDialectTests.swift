import Foundation
import MiniAppPermissions
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppBridge
@testable import MiniAppCore

/// The dialects of other hosts without a browser: each action of Liquid State's app domain, Forem's
/// handlers and Corva's `swiftHandler` answered as ../shared/spec/host-dialects.md says, byte for byte
/// where it gives shapes, behind its gate.
@Suite struct BridgeDialectTests {
    let cache = try! TemporaryDirectory.make().path

    /// A host that answers from fixed values and records what the app told it.
    final class Host: BridgeHostServices {
        let location = Mutex<Bool?>(nil)
        let position = Mutex<Result<BridgePosition, BridgeFailure>>(.success(BridgePosition(latitude: -27.502520099999998, longitude: 153.0462454, accuracy: 7.21)))
        let biometricsAnswer = Mutex(BridgeBiometrics(status: .available, type: ["face"]))
        let online = Mutex(true)
        let signals = Mutex<[BridgeSignal]>([])
        let files = Mutex<[BridgeFileReference]>([])
        let commands = Mutex<[BridgeMediaCommand]>([])
        let upload = Mutex<Result<String, BridgeFailure>>(.success("http://localhost:1/uploads/abc"))

        func devicePermission(appId: String, name: String) async throws(BridgeFailure) -> Bool {
            guard name == "location", let decided = location.withLock({ $0 }) else { throw .notSupported("requestPermission") }
            return decided
        }
        func currentPosition(appId: String) async throws(BridgeFailure) -> BridgePosition { try position.withLock { $0 }.get() }
        func isOnline(appId: String) async -> Bool { online.withLock { $0 } }
        func biometrics(appId: String) async -> BridgeBiometrics { biometricsAnswer.withLock { $0 } }
        func signal(appId: String, _ signal: BridgeSignal) async throws(BridgeFailure) { signals.withLock { $0.append(signal) } }
        func openFile(appId: String, _ file: BridgeFileReference) async throws(BridgeFailure) { files.withLock { $0.append(file) } }
        func media(appId: String, _ command: BridgeMediaCommand) async throws(BridgeFailure) { commands.withLock { $0.append(command) } }
        func uploadImage(appId: String, ratio: Double?, uploading: @escaping @Sendable () -> Void) async throws(BridgeFailure) -> String {
            uploading()
            return try upload.withLock { $0 }.get()
        }
        func userName(appId: String) async throws(BridgeFailure) -> String { "Aiko" }
    }

    func dispatcher(_ dialect: BridgeDialect, host: Host = Host(), manifest: BundleManifest = BundleManifest(), customActions: [String: BridgeAction] = [:]) async throws -> BridgeDispatcher {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        return BridgeDispatcher(
            appId: "app", manifest: manifest, store: store, services: host, identity: BridgeIdentity(secret: Array(repeating: 7, count: 32)),
            dialect: dialect, customActions: customActions
        )
    }

    func json(_ text: String) -> JSONValue { JSONReader.value(Array(text.utf8), maxDepth: 16)! }

    // MARK: Liquid State

    @Test func onlineStatusAndFeatureStatusAnswerTheDocumentsShapes() async throws {
        let host = Host()
        let bridge = try await dispatcher(.liquidState, host: host)
        #expect(await call(bridge, "online_status") == .success(#"{"status":true}"#))
        host.online.withLock { $0 = false }
        #expect(await call(bridge, "online_status") == .success(#"{"status":false}"#))

        let biometrics = JSONValue.object(["feature": .string("biometrics")])
        #expect(await call(bridge, "feature_status", biometrics) == .success(
            #"{"status":"available","details":{"feature":"biometrics","status":"available","type":["face"]},"detail":{"feature":"biometrics","status":"available","type":["face"]}}"#
        ))
        host.biometricsAnswer.withLock { $0 = BridgeBiometrics(status: .notEnrolled) }
        #expect(await call(bridge, "feature_status", biometrics) == .success(
            #"{"status":"not_configured","details":{"feature":"biometrics","status":"not_enrolled"},"detail":{"feature":"biometrics","status":"not_enrolled"}}"#
        ))
        host.biometricsAnswer.withLock { $0 = BridgeBiometrics(status: .notPresent) }
        #expect(await call(bridge, "feature_status", biometrics) == .success(
            #"{"status":"not_present","details":{"feature":"biometrics","status":"not_present"},"detail":{"feature":"biometrics","status":"not_present"}}"#
        ))
        #expect(await call(bridge, "feature_status", .object(["feature": .string("camera")])) == .success(#"{"status":"unknown"}"#))
        #expect(failureType(await call(bridge, "feature_status")) == "InvalidParametersError")
    }

    @Test func userLocationIsGatedByTheUsersLocationDecision() async throws {
        let host = Host()
        let bridge = try await dispatcher(.liquidState, host: host)
        // No way to ask: the host's failure.
        #expect(failureType(await call(bridge, "user_location")) == "NotSupportedError")
        host.location.withLock { $0 = true }
        #expect(await call(bridge, "user_location") == .success(
            #"{"type":"fine","location":{"latitude":"-27.502520099999998","longitude":"153.0462454","accuracy":"7.21"}}"#
        ))
        host.position.withLock { $0 = .success(BridgePosition(latitude: 35, longitude: 139)) }
        #expect(await call(bridge, "user_location") == .success(#"{"type":"unknown","location":{"latitude":"35","longitude":"139"}}"#))
        host.position.withLock { $0 = .success(BridgePosition(latitude: 35, longitude: 139, accuracy: 500)) }
        #expect(await call(bridge, "user_location") == .success(#"{"type":"coarse","location":{"latitude":"35","longitude":"139","accuracy":"500"}}"#))
        host.position.withLock { $0 = .failure(BridgeFailure(type: "POSITION_UNAVAILABLE", message: "no fix")) }
        #expect(await call(bridge, "user_location") == .success(#"{"type":"none","error":{"reason":"unknown","message":"no fix"}}"#))
        host.position.withLock { $0 = .failure(BridgeFailure(type: "LOCATION_DISABLED", message: "off")) }
        #expect(await call(bridge, "user_location") == .success(#"{"type":"none","error":{"reason":"disabled","message":"off"}}"#))
        host.location.withLock { $0 = false }
        guard case .success(let refused?) = await call(bridge, "user_location") else { Issue.record("a refusal is an answer"); return }
        #expect(refused.hasPrefix(#"{"type":"none","error":{"reason":"nopermission","message":""#))
    }

    @Test func openFileStaysInsideTheApp() async throws {
        let host = Host()
        let bridge = try await dispatcher(.liquidState, host: host)
        for path in ["./files/my_sample_file", "https://example.com/a.pdf", "file:///srv/app/files/x.txt", "./a%20b.txt"] {
            #expect(await call(bridge, "open_file", .object(["path": .string(path)])) == .success(nil), "\(path)")
        }
        #expect(host.files.withLock { $0 } == [.app(path: "files/my_sample_file"), .web("https://example.com/a.pdf"), .file("/srv/app/files/x.txt"), .app(path: "a b.txt")])
        for path in ["./../secret", "./files/../../x", "file:///srv/app/../../etc/passwd", "/etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "./%2e%2e/x", "./"] {
            #expect(failureType(await call(bridge, "open_file", .object(["path": .string(path)]))) == "InvalidPathError", "\(path)")
        }
        #expect(failureType(await call(bridge, "open_file")) == "InvalidParametersError")
    }

    @Test func theAppsSignalsReachTheHostChecked() async throws {
        let host = Host()
        let bridge = try await dispatcher(.liquidState, host: host)
        #expect(await call(bridge, "set_authentication_status", .object(["is_authenticated": .bool(true)])) == .success(nil))
        #expect(await call(bridge, "set_notification_presentation_status", .object(["is_ready": .bool(true)])) == .success(nil))
        #expect(await call(bridge, "set_back_override", .object(["is_enabled": .bool(false)])) == .success(nil))
        #expect(failureType(await call(bridge, "set_back_override", .object(["is_enabled": .string("yes")]))) == "InvalidParametersError")
        #expect(await call(bridge, "switch_tab", .object(["id": .string("t1")])) == .success(nil))
        #expect(await call(bridge, "switch_tab", .object(["id": .string("t1"), "reset": .bool(false), "route": .string("/page1"), "params": .string(#"{"foo":"bar"}"#)])) == .success(nil))
        #expect(failureType(await call(bridge, "switch_tab", .object(["id": .string("t1"), "route": .string("//evil.example")]))) == "InvalidParametersError")
        #expect(failureType(await call(bridge, "switch_tab", .object(["reset": .bool(true)]))) == "InvalidParametersError")
        let appearance: JSONValue = .object(["tab1": .object(["title": .string("Favourites"), "icon_name": .string("star")])])
        #expect(await call(bridge, "set_tab_appearance", appearance) == .success(nil))
        #expect(failureType(await call(bridge, "set_tab_appearance", .object(["tab1": .object(["onclick": .string("x")])]))) == "InvalidParametersError")
        #expect(await call(bridge, "reset") == .success(nil))
        #expect(await call(bridge, "clearall") == .success(nil))
        #expect(host.signals.withLock { $0 } == [
            .authentication(isAuthenticated: true), .notificationsReady(true), .backOverride(enabled: false),
            .switchTab(id: "t1", reset: true, route: nil, params: nil),
            .switchTab(id: "t1", reset: false, route: "/page1", params: .object(["foo": .string("bar")])),
            .tabAppearance(["tab1": .object(["title": .string("Favourites"), "icon_name": .string("star")])]), .reset, .clearAll,
        ])
    }

    @Test func aLiquidStateHostAnswersItsOwnActionsAndTheHostsOnly() async throws {
        let custom: BridgeAction = { appId, _ in "custom for \(appId)" }
        let bridge = try await dispatcher(.liquidState, customActions: ["my_event": custom, "online_status": custom])
        #expect(failureType(await call(bridge, "getUserName")) == "UnknownActionError")
        #expect(await call(bridge, "my_event") == .success("custom for app"))
        // A host's action cannot replace one of the dialect's.
        #expect(await call(bridge, "online_status") == .success(#"{"status":true}"#))
    }

    // MARK: Forem

    @Test func foremsPlayerCommandsAreCheckedAndCarriedAsText() async throws {
        let host = Host()
        let bridge = try await dispatcher(.forem, host: host)
        #expect(await call(bridge, "podcast", .object(["action": .string("play"), "url": .string("https://example.com/e.mp3"), "seconds": .string("12")])) == .success(nil))
        #expect(await call(bridge, "podcast", .object(["action": .string("rate"), "rate": .number(1.5)])) == .success(nil))
        #expect(await call(bridge, "podcast", .object(["action": .string("muted"), "muted": .bool(true)])) == .success(nil))
        #expect(await call(bridge, "video", .object(["action": .string("play"), "url": .string("http://example.com/v.mp4"), "seconds": .number(3)])) == .success(nil))
        #expect(host.commands.withLock { $0 } == [
            BridgeMediaCommand(player: .podcast, action: "play", values: ["url": "https://example.com/e.mp3", "seconds": "12"]),
            BridgeMediaCommand(player: .podcast, action: "rate", values: ["rate": "1.5"]),
            BridgeMediaCommand(player: .podcast, action: "muted", values: ["muted": "true"]),
            BridgeMediaCommand(player: .video, action: "play", values: ["url": "http://example.com/v.mp4", "seconds": "3"]),
        ])
        for bad: JSONValue in [.object(["action": .string("explode")]), .object(["action": .string("play"), "url": .string("javascript:alert(1)")]), .string("play")] {
            #expect(failureType(await call(bridge, "podcast", bad)) == "InvalidParametersError", "\(bad)")
        }
        #expect(failureType(await call(bridge, "video", .object(["action": .string("pause")]))) == "InvalidParametersError")
    }

    @Test func anImageUploadSaysUploadingThenItsLinkOrItsError() async throws {
        let host = Host()
        let bridge = try await dispatcher(.forem, host: host)
        let events = bridge.events()
        let param: JSONValue = .object(["id": .string("native-image-upload-message"), "ratio": .string("2.38")])
        #expect(await call(bridge, "imageUpload", param) == .success(#"{"action":"success","link":"http://localhost:1/uploads/abc"}"#))
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == BridgeEvent(name: "imageUpload", message: #"{"id":"native-image-upload-message","value":"{\"action\":\"uploading\"}"}"#))
        #expect(await iterator.next() == BridgeEvent(
            name: "imageUpload", message: #"{"id":"native-image-upload-message","value":"{\"action\":\"success\",\"link\":\"http://localhost:1/uploads/abc\"}"}"#
        ))
        host.upload.withLock { $0 = .failure(BridgeFailure(type: "UploadFailedError", message: "not an image")) }
        #expect(await call(bridge, "imageUpload", param) == .success(#"{"action":"error","error":"not an image"}"#))
        _ = await iterator.next()
        #expect(await iterator.next() == BridgeEvent(name: "imageUpload", message: #"{"id":"native-image-upload-message","value":"{\"action\":\"error\",\"error\":\"not an image\"}"}"#))
        host.upload.withLock { $0 = .failure(BridgeFailure(type: "UserCancelledError", message: "no image")) }
        #expect(failureType(await call(bridge, "imageUpload", param)) == "UserCancelledError")
        #expect(failureType(await call(bridge, "imageUpload", .object(["ratio": .string("1")]))) == "InvalidParametersError")
    }

    @Test func hapticAndBodyAreSignals() async throws {
        let host = Host()
        let bridge = try await dispatcher(.forem, host: host)
        #expect(await call(bridge, "haptic", .string("heavy")) == .success(nil))
        #expect(failureType(await call(bridge, "haptic", .object([:]))) == "InvalidParametersError")
        #expect(await call(bridge, "body", .object(["message": .object([:]), "userData": .string(#"{"id":1}"#)])) == .success(nil))
        #expect(await call(bridge, "body", .object(["message": .null, "userData": .null])) == .success(nil))
        #expect(host.signals.withLock { $0 } == [.haptic("heavy"), .userData(#"{"id":1}"#), .userData(nil)])
        #expect(BridgeDialect.forem.action(named: "body")?.reads == .userData)
    }

    // MARK: Corva

    @Test func swiftHandlerTakesANameOrAnObjectNamingIt() async throws {
        let host = Host()
        let bridge = try await dispatcher(.corva, host: host)
        #expect(await call(bridge, "swiftHandler", .string("pageLoaded")) == .success(nil))
        #expect(await call(bridge, "swiftHandler", .object(["event": .string("appMaximized")])) == .success(nil))
        #expect(await call(bridge, "swiftHandler", .object(["name": .string("appRestored")])) == .success(nil))
        #expect(failureType(await call(bridge, "swiftHandler", .string("appExploded"))) == "InvalidParametersError")
        #expect(host.signals.withLock { $0 } == [.pageLoaded, .maximized(true), .maximized(false)])
        #expect(BridgeDialect.corva.launch.query == [.init("native", .text("true")), .init("jwt", .sessionToken)])
        #expect(BridgeDialect.corva.launch.singlePageFallback)
    }

    // MARK: A host's own dialect

    @Test func aHostDeclaresItsOwnDialectFromTheSameParts() async throws {
        let acme = BridgeDialect(
            name: "acme", title: "Acme",
            transports: [.messageHandlers(["acme"])],
            actions: [
                .init("acme", gate: .permission(.userName), reply: .delivery(.function("acmeReply", argument: .json)), summary: "the user's name") { context throws(BridgeFailure) in
                    JSONWriter.text(.object(["name": .string(try await context.services.userName(appId: context.appId))]))
                },
            ],
            events: [.init("acmeEvent", delivery: .function("acmeReceive", argument: .json), example: "{}", summary: "the host speaks")]
        )
        let manifest = BundleManifest(optPermissions: [PermissionDeclaration(name: KnownPermission.userName.rawValue)])
        let bridge = try await dispatcher(acme, manifest: manifest)
        #expect(failureType(await call(bridge, "acme")) == "userDenied")
        try await bridge.store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        #expect(await call(bridge, "acme") == .success(#"{"name":"Aiko"}"#))
        #expect(acme.event(named: "acmeEvent")?.delivery == .function("acmeReceive", argument: .json))
    }
}
