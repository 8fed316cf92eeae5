import Foundation
import MiniAppPermissions
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppBridge
@testable import MiniAppCore

/// A bridge answers only under a live capability that its host granted through the open launch gate,
/// and takes back when the app closes, its gate closes, or the host ends it.
@Suite struct BridgeCapabilityTests {
    let cache = try! TemporaryDirectory.make().path

    /// Requires USER_NAME to start; asks for CONTACT_LIST at run time.
    let manifest = BundleManifest(
        reqPermissions: [PermissionDeclaration(name: KnownPermission.userName.rawValue, reason: "greet")],
        optPermissions: [PermissionDeclaration(name: KnownPermission.contactList.rawValue, reason: "friends")]
    )

    /// A host whose user never answers: its prompts wait until their call is cancelled.
    final class SilentUser: BridgeHostServices {
        let asked = Mutex(0)
        let cancelled = Mutex(0)
        func userName(appId: String) async throws(BridgeFailure) -> String { "Aiko" }
        func askUser(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] {
            asked.withLock { $0 += 1 }
            // Answers "allow everything" if it ever ends other than by cancellation.
            try? await Task.sleep(for: .seconds(600))
            if Task.isCancelled { cancelled.withLock { $0 += 1 } }
            return Dictionary(uniqueKeysWithValues: prompt.items.map { ($0.name, .allowed) })
        }
        func closeMiniApp(appId: String, withConfirmationAlert: Bool) async throws(BridgeFailure) {}
    }

    func open(_ backend: StoreBackend, services: any BridgeHostServices = SilentUser()) async throws -> (BridgeDispatcher, PermissionStore) {
        let store = try await backend.openStore(cacheDirectory: cache)
        let dispatcher = BridgeDispatcher(appId: "app", manifest: manifest, store: store, services: services, identity: BridgeIdentity(secret: Array(repeating: 3, count: 32)))
        return (dispatcher, store)
    }

    func outcome(_ dispatcher: BridgeDispatcher, _ capability: BridgeCapability?, _ action: String, _ param: JSONValue = .null) async -> BridgeOutcome {
        await dispatcher.reply(to: BridgeMessage(id: "1", action: action, param: param), capability: capability).outcome
    }

    func isRefused(_ outcome: BridgeOutcome) -> Bool {
        if case .failure(let failure) = outcome { return failure.type == "AuthorizationFailureError" }
        return false
    }

    static let write: JSONValue = .object(["secureStorageItems": .object(["k": .string("v")])])

    @Test(arguments: StoreBackend.allCases)
    func withoutALiveCapabilityNothingIsAnsweredOrChanged(backend: StoreBackend) async throws {
        let (dispatcher, store) = try await open(backend)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        let forged = try #require(BridgeCapability(token: String(repeating: "ab", count: 32)))
        for capability in [nil, forged] {
            #expect(isRefused(await outcome(dispatcher, capability, "getUserName")))
            #expect(isRefused(await outcome(dispatcher, capability, "setSecureStorageItems", Self.write)))
            #expect(isRefused(await outcome(dispatcher, capability, "getUniqueId")))
        }
        #expect(try await store.storageItem(appId: "app", key: "k") == nil)
        let granted = try await dispatcher.grant()
        #expect(await outcome(dispatcher, granted, "getUserName") == .success("Aiko"))
        // Revoked: refused again, and what it would write is not written.
        dispatcher.revoke(granted)
        #expect(isRefused(await outcome(dispatcher, granted, "setSecureStorageItems", Self.write)))
        #expect(try await store.storageItem(appId: "app", key: "k") == nil)
        #expect(BridgeCapability(token: "short") == nil && BridgeCapability(token: String(repeating: "G", count: 64)) == nil)
        #expect(!"\(granted)".contains(granted.token))
    }

    @Test(arguments: StoreBackend.allCases)
    func aCapabilityIsGrantedOnlyThroughTheOpenGateAndEndsWhenItCloses(backend: StoreBackend) async throws {
        let (dispatcher, store) = try await open(backend)
        await #expect(throws: BridgeFailure.self) { try await dispatcher.grant() }
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        let first = try await dispatcher.grant(), second = try await dispatcher.grant()
        #expect(first != second)
        #expect(await outcome(dispatcher, first, "setSecureStorageItems", Self.write) == .success("SUCCESS"))
        // The host stored a denial of the required permission and says so: every capability ends.
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .denied])
        #expect(await dispatcher.gateMayHaveChanged() == false)
        #expect(!dispatcher.isLive(first) && !dispatcher.isLive(second))
        #expect(isRefused(await outcome(dispatcher, second, "removeSecureStorageItems", .object(["secureStorageKeyList": .array([.string("k")])]))))
        #expect(try await store.storageItem(appId: "app", key: "k") == "v")
        await #expect(throws: BridgeFailure.self) { try await dispatcher.grant() }
    }

    @Test func aDenialMadeElsewhereEndsTheCapabilitiesWithinTheRecheck() async throws {
        let (dispatcher, store) = try await open(.sqlite)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        let capability = try await dispatcher.grant()
        // Another process (the command line) revokes through its own store handle.
        let other = try await PermissionStore.open(.cache(cache), executor: testExecutor)
        try await other.set(appId: "app", [KnownPermission.userName.rawValue: .denied])
        try await Task.sleep(for: BridgeDispatcher.gateRecheck + .milliseconds(200))
        #expect(isRefused(await outcome(dispatcher, capability, "getUserName")))
        #expect(!dispatcher.isLive(capability))
    }

    @Test(arguments: StoreBackend.allCases)
    func closingTheAppEndsEveryCapabilityAfterItsAnswer(backend: StoreBackend) async throws {
        let (dispatcher, store) = try await open(backend)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        let frame = try await dispatcher.grant(), popup = try await dispatcher.grant()
        #expect(await outcome(dispatcher, frame, "closeMiniApp", .object(["withConfirmationAlert": .bool(false)])) == .success("SUCCESS"))
        for capability in [frame, popup] {
            #expect(isRefused(await outcome(dispatcher, capability, "getUserName")))
            #expect(isRefused(await outcome(dispatcher, capability, "setSecureStorageItems", Self.write)))
        }
        #expect(try await store.storageItem(appId: "app", key: "k") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func aPromptOfAnEndedCapabilityIsWithdrawnAndDecidesNothing(backend: StoreBackend) async throws {
        let user = SilentUser()
        let (dispatcher, store) = try await open(backend, services: user)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        let capability = try await dispatcher.grant()
        let request: JSONValue = .object(["permissions": .array([.object(["name": .string(KnownPermission.contactList.rawValue), "description": .string("x")])])])
        let call = Task { await outcome(dispatcher, capability, "requestCustomPermissions", request) }
        while user.asked.withLock({ $0 }) == 0 { await Task.yield() }
        dispatcher.revoke(capability)
        #expect(isRefused(await call.value))
        #expect(user.cancelled.withLock { $0 } == 1)
        #expect(try await store.stored(appId: "app").contains { $0.name == KnownPermission.contactList.rawValue } == false)
    }

    @Test func theOldestOfTooManyCapabilitiesEnds() async throws {
        let (dispatcher, store) = try await open(.sqlite)
        try await store.set(appId: "app", [KnownPermission.userName.rawValue: .allowed])
        let first = try await dispatcher.grant()
        var last = first
        for _ in 0..<BridgeGrants.maxLive { last = try await dispatcher.grant() }
        #expect(!dispatcher.isLive(first) && dispatcher.isLive(last))
    }
}
