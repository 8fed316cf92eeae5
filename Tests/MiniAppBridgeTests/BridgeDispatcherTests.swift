import Foundation
import MiniAppPermissions
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppBridge
@testable import MiniAppCore

/// The bridge without a browser: each action against a real permission store (both backends).
@Suite struct BridgeDispatcherTests {
    let cache = try! TemporaryDirectory.make().path

    let manifest = BundleManifest(
        optPermissions: [
            PermissionDeclaration(name: KnownPermission.userName.rawValue, reason: "greet"),
            PermissionDeclaration(name: KnownPermission.contactList.rawValue, reason: "friends"),
            PermissionDeclaration(name: KnownPermission.accessToken.rawValue),
            PermissionDeclaration(name: KnownPermission.points.rawValue),
        ],
        accessTokenPermissions: [AccessTokenPermission(audience: "rae", scopes: ["openid"])]
    )

    /// A host whose user answers every prompt with `answer`, and which counts the calls it gets.
    final class Host: BridgeHostServices {
        let answer: PermissionStatus
        let prompts = Mutex<[PermissionPrompt]>([])
        let profile = HostProfile.sample
        init(answer: PermissionStatus) { self.answer = answer }
        func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] {
            prompts.withLock { $0.append(prompt) }
            return Dictionary(uniqueKeysWithValues: prompt.items.map { ($0.name, answer) })
        }
        func userName(appId: String) async throws(BridgeFailure) -> String { try await profile.userName(appId: appId) }
        func contacts(appId: String) async throws(BridgeFailure) -> [BridgeContact] { try await profile.contacts(appId: appId) }
        func accessToken(appId: String, audience: String, scopes: [String]) async throws(BridgeFailure) -> BridgeAccessToken {
            try await profile.accessToken(appId: appId, audience: audience, scopes: scopes)
        }
    }

    func dispatcher(_ backend: StoreBackend, appId: String = "app", host: Host = Host(answer: .allowed), limit: Int = 1 << 20) async throws -> (BridgeDispatcher, PermissionStore) {
        let store = try await backend.openStore(cacheDirectory: cache)
        let dispatcher = BridgeDispatcher(
            appId: appId, manifest: manifest, store: store, services: host, environment: BridgeEnvironment(hostLocale: "ja-JP", secureStorageLimit: limit),
            identity: BridgeIdentity(secret: Array(repeating: 7, count: 32))
        )
        return (dispatcher, store)
    }


    @Test(arguments: StoreBackend.allCases)
    func gatedActionsAnswerOnlyWhenDeclaredAndAllowed(backend: StoreBackend) async throws {
        let (dispatcher, store) = try await dispatcher(backend)
        #expect(failureType(await call(dispatcher, "getUserName")) == "userDenied")
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        #expect(await call(dispatcher, "getUserName") == .success("Aiko"))
        // Declared by no manifest: denied even when a decision is stored.
        try await store.set(appId: "app", [KnownPermission.location.rawValue: .allowed])
        #expect(failureType(await call(dispatcher, "requestPermission", .object(["permission": .string("location")]))) == "userDenied")
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .denied])
        #expect(failureType(await call(dispatcher, "getUserName")) == "userDenied")
    }

    @Test(arguments: StoreBackend.allCases)
    func requestCustomPermissionsAsksOnlyUndecidedDeclaredOnesAndRecordsTheAnswers(backend: StoreBackend) async throws {
        let host = Host(answer: .allowed)
        let (dispatcher, store) = try await dispatcher(backend, host: host)
        try await store.set(appId: "app", [KnownPermission.points.rawValue: .denied])
        let names = [KnownPermission.contactList.rawValue, KnownPermission.points.rawValue, KnownPermission.location.rawValue, "com.example.X"]
        let outcome = await call(dispatcher, "requestCustomPermissions", .object(["permissions": .array(names.map { .object(["name": .string($0), "description": .string("app text")]) })]))
        guard case .success(let text?) = outcome, case .object(let answer)? = JSONReader.value(Array(text.utf8)), case .array(let items)? = answer["permissions"] else {
            Issue.record("no answer: \(outcome)")
            return
        }
        let statuses = items.compactMap { item -> (String, String)? in
            guard case .string(let name)? = item["name"], case .string(let status)? = item["status"] else { return nil }
            return (name, status)
        }
        #expect(statuses.map(\.0) == names)
        #expect(statuses.map(\.1) == ["ALLOWED", "DENIED", "DENIED", "PERMISSION_NOT_AVAILABLE"])
        #expect(host.prompts.withLock { $0 } == [PermissionPrompt(appId: "app", items: [PermissionPrompt.Item(name: KnownPermission.contactList.rawValue, reason: "friends", required: false)])])
        let history = try await store.history(appId: "app")
        #expect(history.contains { $0.name == KnownPermission.contactList.rawValue && $0.to == .allowed })
        #expect(await call(dispatcher, "getContacts") == .success("[{\"email\":\"ken@example.com\",\"id\":\"c1\",\"name\":\"Ken\"}]"))
    }

    @Test func forcedFaultsAnswerTheSDKsErrorsUntilRemoved() async throws {
        let (dispatcher, store) = try await dispatcher(.sqlite)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        dispatcher.faults.set(.notSupported, for: "getUserName")
        #expect(failureType(await call(dispatcher, "getUserName")) == "NotSupportedError")
        dispatcher.faults.set(.denied, for: "getUserName")
        guard case .failure(let denied) = await call(dispatcher, "getUserName") else { Issue.record("a forced denial answered"); return }
        #expect(denied.type == "userDenied" && denied.message.contains(KnownPermission.userName.rawValue))
        #expect(failureType(await call(dispatcher, "getUniqueId")) == nil)
        dispatcher.faults.set(nil, for: "getUserName")
        #expect(await call(dispatcher, "getUserName") == .success("Aiko"))
        #expect(dispatcher.faults.all.isEmpty)
    }

    @Test func aSilentTimeoutHoldsTheCallUntilRemovedOrItsCapabilityEnds() async throws {
        let (dispatcher, store) = try await dispatcher(.sqlite)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        dispatcher.faults.set(.timeout(seconds: nil), for: "getUserName")
        let released = Task { await call(dispatcher, "getUserName") }
        while dispatcher.faults.heldCalls == 0 { try await Task.sleep(for: .milliseconds(10)) }
        dispatcher.faults.set(.timeout(seconds: nil), for: "getUniqueId")
        #expect(dispatcher.faults.heldCalls == 1, "setting another action's fault releases nothing")
        dispatcher.faults.set(nil, for: "getUserName")
        #expect(await released.value == .success("Aiko"))

        let ended = Task { await call(dispatcher, "getUniqueId") }
        while dispatcher.faults.heldCalls == 0 { try await Task.sleep(for: .milliseconds(10)) }
        dispatcher.revokeAll()
        #expect(await ended.value == .failure(.noCapability))
        #expect(dispatcher.faults.heldCalls == 0)
    }

    @Test func anEnvironmentSetIsReadByTheNextCall() async throws {
        let (dispatcher, _) = try await dispatcher(.sqlite)
        #expect(await call(dispatcher, "isDarkMode") == .success("false"))
        dispatcher.setEnvironment(BridgeEnvironment(hostLocale: "fr-FR", darkMode: true))
        #expect(await call(dispatcher, "isDarkMode") == .success("true"))
        guard case .success(let info?) = await call(dispatcher, "getHostEnvironmentInfo") else { Issue.record("no environment"); return }
        #expect(info.contains("\"hostLocale\":\"fr-FR\""))
    }

    @Test func accessTokensFollowTheManifestsAudiencesAndScopes() async throws {
        let (dispatcher, store) = try await dispatcher(.sqlite)
        try await store.set(appId: "app", [KnownPermission.accessToken.rawValue: .allowed])
        let token = await call(dispatcher, "getAccessToken", .object(["audience": .string("rae"), "scopes": .array([.string("openid")])]))
        guard case .success(let text?) = token else { Issue.record("\(token)"); return }
        #expect(text.contains("\"token\":\"tok\""))
        #expect(failureType(await call(dispatcher, "getAccessToken", .object(["audience": .string("rae"), "scopes": .array([.string("email")])]))) == "ScopesNotSupportedError")
        #expect(failureType(await call(dispatcher, "getAccessToken", .object(["audience": .string("other"), "scopes": .array([])]))) == "AudienceNotSupportedError")
    }

    @Test(arguments: StoreBackend.allCases)
    func secureStorageIsPerAppAndLimited(backend: StoreBackend) async throws {
        let (first, store) = try await dispatcher(backend, limit: 64)
        let second = BridgeDispatcher(appId: "other", manifest: manifest, store: store, services: Host(answer: .denied), environment: BridgeEnvironment(secureStorageLimit: 64), identity: BridgeIdentity(secret: Array(repeating: 7, count: 32)))
        #expect(await call(first, "setSecureStorageItems", .object(["secureStorageItems": .object(["k": .string("v")])])) == .success("SUCCESS"))
        #expect(await call(first, "getSecureStorageItem", .object(["secureStorageKey": .string("k")])) == .success("v"))
        #expect(await call(second, "getSecureStorageItem", .object(["secureStorageKey": .string("k")])) == .success(nil))
        #expect(failureType(await call(first, "setSecureStorageItems", .object(["secureStorageItems": .object(["big": .string(String(repeating: "x", count: 100))])]))) == "SecureStorageFullError")
        #expect(await call(first, "getSecureStorageSize") == .success("{\"max\":64,\"used\":2}"))
        #expect(await call(first, "removeSecureStorageItems", .object(["secureStorageKeyList": .array([.string("k")])])) == .success("SUCCESS"))
        #expect(await call(first, "getSecureStorageItem", .object(["secureStorageKey": .string("k")])) == .success(nil))
    }

    @Test func identifiersAreStablePerAppAndUnlinkableAcrossApps() {
        let identity = BridgeIdentity(secret: Array(repeating: 1, count: 32))
        #expect(identity.uniqueId(appId: "a") == BridgeIdentity(secret: Array(repeating: 1, count: 32)).uniqueId(appId: "a"))
        #expect(identity.uniqueId(appId: "a") != identity.uniqueId(appId: "b"))
        #expect(identity.uniqueId(appId: "a") != identity.mauid(appId: "a"))
        #expect(identity.uniqueId(appId: "a") != BridgeIdentity(secret: Array(repeating: 2, count: 32)).uniqueId(appId: "a"))
    }

    @Test func everyActionGetsExactlyOneAnswer() async throws {
        let (dispatcher, _) = try await dispatcher(.sqlite)
        for action in BridgeDispatcher.builtInActions.sorted() + ["noSuchAction", "showAd"] {
            for param: JSONValue in [.null, .object([:]), .array([.number(1)]), .string("x")] {
                let reply = await dispatcher.reply(to: BridgeMessage(id: "m-\(action)", action: action, param: param), capability: try await dispatcher.grant())
                #expect(reply.id == "m-\(action)")
            }
        }
        #expect(failureType(await call(dispatcher, "noSuchAction")) == "UnknownActionError")
        #expect(failureType(await call(dispatcher, "getContacts")) == "userDenied")
        #expect(failureType(await call(dispatcher, "getPhoneNumber")) == "NotSupportedError")
    }

    @Test func environmentActionsAnswerFromTheHostsSettings() async throws {
        let (dispatcher, _) = try await dispatcher(.sqlite)
        #expect(await call(dispatcher, "getHostEnvironmentInfo") == .success(#"{"hostLocale":"ja-JP","hostVersion":"\#(PackageInfo.version)","platformVersion":"Linux","sdkVersion":"\#(PackageInfo.version)"}"#))
        #expect(await call(dispatcher, "isDarkMode") == .success("false"))
        #expect(await call(dispatcher, "getHostAppThemeColors") == .success(##"{"primaryColor":"#BF0000","secondaryColor":"#FFFFFF"}"##))
        #expect(await call(dispatcher, "setScreenOrientation", .object(["action": .string("rakuten.miniapp.screen.LOCK_PORTRAIT")])) == .success("SUCCESS"))
        #expect(failureType(await call(dispatcher, "setScreenOrientation", .object(["action": .string("sideways")]))) == "InvalidParametersError")
        #expect(await call(dispatcher, "getPermissionStatus", .object(["permissionName": .string("USER_NAME")])) == .success("DENIED"))
        #expect(await call(dispatcher, "canOpenAppDeeplink", .object(["deeplinkURL": .string("app://x")])) == .success("false"))
    }

    @Test func hostsAddActionsAndSendEvents() async throws {
        let store = try await PermissionStore.open(.cache(cache), executor: testExecutor)
        let dispatcher = BridgeDispatcher(
            appId: "app", manifest: manifest, store: store, services: Host(answer: .denied), identity: BridgeIdentity(secret: Array(repeating: 7, count: 32)),
            customActions: [
                "online_status": { appId, param in "\(appId) online \(param["detail"] == .string("x"))" },
                "getUserName": { _, _ in "a custom action never replaces a gated one" },
            ]
        )
        #expect(await call(dispatcher, "online_status", .object(["detail": .string("x")])) == .success("app online true"))
        #expect(failureType(await call(dispatcher, "getUserName")) == "userDenied")
        guard case .success(let features?) = await call(dispatcher, "getFeatureList") else { Issue.record("no feature list"); return }
        #expect(features.contains("\"online_status\"") && features.contains("\"getSecureStorageItem\""))
        let events = dispatcher.events()
        dispatcher.send(BridgeEvent(name: "online_status", message: "online"))
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == BridgeEvent(name: "online_status", message: "online"))
    }

    /// Bad messages by name (the arguments stay short: a test's arguments are printed with its name).
    static let badMessages: [String: (message: String, kind: String)] = [
        "not JSON": ("not json", "malformed"),
        "an array": ("[1]", "malformed"),
        "a number as id": ("{\"id\": 1, \"action\": \"getUniqueId\"}", "malformed"),
        "an action with a dash": ("{\"id\": \"1\", \"action\": \"get-Unique\"}", "malformed"),
        "an empty id": ("{\"id\": \"\", \"action\": \"getUniqueId\"}", "malformed"),
        "40 levels deep": ("{\"id\": \"1\", \"action\": \"getUniqueId\", \"param\": " + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}", "malformed"),
        "9 MB": ("{\"id\": \"1\", \"action\": \"setSecureStorageItems\", \"param\": \"" + String(repeating: "x", count: 9_000_000) + "\"}", "tooLarge"),
    ]

    @Test(arguments: badMessages.keys.sorted())
    func badMessagesAreRefusedWithAnError(name: String) throws {
        let (message, kind) = try #require(Self.badMessages[name])
        #expect(throws: BridgeMessageError.self) { try BridgeMessage(decoding: Array(message.utf8)) }
        do {
            _ = try BridgeMessage(decoding: Array(message.utf8))
        } catch {
            switch error {
            case .tooLarge: #expect(kind == "tooLarge")
            case .malformed: #expect(kind == "malformed")
            }
        }
    }

    @Test func hostProfilesRefuseUnknownKeysAndWrongTypes() throws {
        #expect(throws: HostProfileError.self) { try HostProfile(json: Data("{\"username\": \"x\"}".utf8)) }
        #expect(throws: HostProfileError.self) { try HostProfile(json: Data("{\"points\": {\"standard\": \"many\"}}".utf8)) }
        #expect(throws: HostProfileError.self) { try HostProfile(json: Data("[]".utf8)) }
        #expect(try HostProfile(json: Data("{\"userName\": \"Aiko\"}".utf8)).userName == "Aiko")
    }
}

extension HostProfile {
    static var sample: HostProfile {
        var profile = HostProfile()
        profile.userName = "Aiko"
        profile.contacts = [BridgeContact(id: "c1", name: "Ken", email: "ken@example.com")]
        profile.accessTokens = ["rae": "tok"]
        profile.ads = HostProfile.Ads(fill: true, reward: BridgeReward(type: "coin", amount: 10))
        profile.products = [BridgeProduct(id: "gem-10", title: "10 gems", description: "A handful", productPrice: .init(currencyCode: "JPY", price: "120"))]
        return profile
    }
}
