import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppBridge
@testable import MiniAppCore
@testable import MiniAppPermissions

/// Answers as Rakuten's SDK reads them: contact names base64 when it asks so, device permission
/// statuses, the utilities a browser answers itself, the message picker's missing gate, and a message
/// limit a shared image fits in.
@Suite struct BridgeFidelityTests {
    let cache = try! TemporaryDirectory.make().path

    let manifest = BundleManifest(optPermissions: KnownPermission.allCases.map { PermissionDeclaration(name: $0.rawValue) })

    /// A host with two contacts, one with a name outside ASCII.
    struct Host: BridgeHostServices {
        func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] {
            [BridgeContact(id: "c1", name: "Ken", email: "ken@example.com"), BridgeContact(id: "c2", name: "田中 愛子"), BridgeContact(id: "c3")]
        }
    }

    func call(_ action: String, _ param: JSONValue = .null, allowing allowed: [KnownPermission] = KnownPermission.allCases) async throws -> BridgeOutcome {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        try await store.set(appId: "app", Dictionary(uniqueKeysWithValues: allowed.map { ($0.rawValue, PermissionStatus.allowed) }))
        let dispatcher = BridgeDispatcher(appId: "app", manifest: manifest, store: store, services: Host(), identity: BridgeIdentity(secret: Array(repeating: 9, count: 32)))
        return await dispatcher.reply(to: BridgeMessage(id: "f", action: action, param: param), capability: try await dispatcher.grant()).outcome
    }

    @Test func contactNamesAreBase64WhenTheSDKAsksThemEncoded() async throws {
        let encoded = try await call("getContacts", .object(["isContactsEncodingRequired": .bool(true)]))
        let names = [Data("Ken".utf8).base64EncodedString(), Data("田中 愛子".utf8).base64EncodedString()]
        #expect(encoded == .success(#"[{"email":"ken@example.com","id":"c1","name":"\#(names[0])"},{"id":"c2","name":"\#(names[1])"},{"id":"c3"}]"#))
        let plain = try await call("getContacts", .object([:]))
        #expect(plain == .success(#"[{"email":"ken@example.com","id":"c1","name":"Ken"},{"id":"c2","name":"田中 愛子"},{"id":"c3"}]"#))
    }

    @Test(arguments: ["camera", "gallery", "microphone"])
    func devicePermissionsAreGrantedDeniedOrUnknown(name: String) async throws {
        #expect(try await call("getPermissionStatus", .object(["permissionName": .string(name)])) == .success("unknown"))
    }

    @Test func aCustomPermissionsStatusIsTheStoredOne() async throws {
        #expect(try await call("getPermissionStatus", .object(["permissionName": .string("USER_NAME")]), allowing: [.userName]) == .success("ALLOWED"))
        #expect(try await call("getPermissionStatus", .object(["permissionName": .string("POINTS")]), allowing: []) == .success("DENIED"))
    }

    @Test(arguments: ["isSimInstalled", "launchAppSettings", "isEsimSupported"])
    func whatABrowserHasNotIsABooleanAnswer(action: String) async throws {
        #expect(try await call(action) == .success("false"))
    }

    @Test(arguments: ["sendMessageToContact", "sendMessageToMultipleContacts"])
    func theMessagePickerIsNotGatedBySendMessage(action: String) async throws {
        let outcome = try await call(action, .object(["messageToContact": .object(["text": .string("hi")])]), allowing: [])
        guard case .failure(let failure) = outcome else { Issue.record("\(outcome)"); return }
        // This host has no picker: not supported, never the denial of an ungated action.
        #expect(failure.type == "NotSupportedError", "\(failure)")
        let byId = try await call("sendMessageToContactId", .object(["contactId": .string("c1"), "messageToContact": .object(["text": .string("hi")])]), allowing: [])
        #expect(byId == .failure(.denied(.sendMessage, declared: true)))
    }

    @Test func aSharedImageFitsTheMessageLimitAndMoreDoesNot() throws {
        // The sample's share page: 2,097,153 bytes of message, its image as a JSON array of numbers.
        let image = (0..<600_000).map { _ in String(Int.random(in: 100...255)) }.joined(separator: ",")
        let share = #"{"id":"1","action":"shareInfo","param":{"shareInfo":{"content":"look","imageData":["# + image + "]}}}"
        #expect(share.utf8.count > 2_097_152)
        #expect(try BridgeMessage(decoding: Array(share.utf8)).action == "shareInfo")
        let tooLarge = #"{"id":"1","action":"shareInfo","param":""# + String(repeating: "x", count: BridgeLimits().maxMessageBytes) + #""}"#
        #expect(throws: BridgeMessageError.self) { try BridgeMessage(decoding: Array(tooLarge.utf8)) }
    }
}
