import Foundation
import MiniAppPermissions
import MiniAppTestSupport
import Testing

@testable import MiniAppBridge
@testable import MiniAppCore

/// The bridge's one table of actions against its dispatch: every declared action is answered (or refused
/// as not supported) as the table says, behind the permission it names, and nothing else is.
@Suite struct BridgeActionTableTests {
    let cache = try! TemporaryDirectory.make().path

    /// Declares every custom permission, optionally.
    let manifest = BundleManifest(
        optPermissions: KnownPermission.allCases.map { PermissionDeclaration(name: $0.rawValue) },
        accessTokenPermissions: [AccessTokenPermission(audience: "rae", scopes: ["openid"])]
    )

    func open(allowing allowed: Bool) async throws -> BridgeDispatcher {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        try await store.set(appId: "app", Dictionary(uniqueKeysWithValues: KnownPermission.allCases.map { ($0.rawValue, allowed ? PermissionStatus.allowed : .denied) }))
        return BridgeDispatcher(appId: "app", manifest: manifest, store: store, services: HostProfile.sample, identity: BridgeIdentity(secret: Array(repeating: 5, count: 32)))
    }

    func failure(_ dispatcher: BridgeDispatcher, _ action: String, _ param: JSONValue = .object([:])) async throws -> BridgeFailure? {
        let reply = await dispatcher.reply(to: BridgeMessage(id: "t", action: action, param: param), capability: try await dispatcher.grant())
        if case .failure(let failure) = reply.outcome { return failure }
        return nil
    }

    @Test func theTableNamesEachActionOnceWithAtLeastOneMethod() {
        #expect(BridgeDispatcher.declarations.count == BridgeDispatcher.declarationList.count)
        for declaration in BridgeDispatcher.declarationList {
            #expect(!declaration.methods.isEmpty, "\(declaration.name) has no script method")
            #expect(BridgeMessage.isActionName(declaration.name), "\(declaration.name)")
        }
        let paths = BridgeDispatcher.declarationList.flatMap { $0.methods.flatMap(\.paths) }
        #expect(Set(paths).count == paths.count, "a script path is declared twice")
    }

    @Test func everyAnsweredActionHasItsAnswerAndEveryOtherIsNotSupported() async throws {
        let dispatcher = try await open(allowing: true)
        for declaration in BridgeDispatcher.declarationList where declaration.name != "closeMiniApp" {
            let refused = try await failure(dispatcher, declaration.name)
            switch declaration.answer {
            case .answered:
                #expect(refused?.type != "UnknownActionError", "\(declaration.name): \(String(describing: refused))")
                #expect(refused?.type != "userDenied", "\(declaration.name) is refused although every permission is allowed")
            case .notSupported:
                #expect(refused?.type == "NotSupportedError", "\(declaration.name): \(String(describing: refused))")
            }
        }
        #expect(try await failure(dispatcher, "noSuchAction")?.type == "UnknownActionError")
        #expect(BridgeDispatcher.builtInActions == Set(BridgeDispatcher.declarationList.filter { $0.answer == .answered }.map(\.name)))
    }

    @Test func everyGatedActionIsRefusedWhileItsPermissionIsDenied() async throws {
        let dispatcher = try await open(allowing: false)
        for declaration in BridgeDispatcher.declarationList {
            switch declaration.gate {
            case .open:
                continue
            case .permission(let permission):
                let refused = try await failure(dispatcher, declaration.name)
                #expect(refused == .denied(permission, declared: true), "\(declaration.name): \(String(describing: refused))")
            case .named(let parameter, let permissions):
                for (value, permission) in permissions {
                    let refused = try await failure(dispatcher, declaration.name, .object([parameter: .string(value)]))
                    #expect(refused == .denied(permission, declared: true), "\(declaration.name) of \(value): \(String(describing: refused))")
                }
            }
        }
    }

    @Test func aHostsActionAnswersANotSupportedNameButNeverAnAnsweredOne() async throws {
        let store = try await StoreBackend.sqlite.openStore(cacheDirectory: cache)
        let dispatcher = BridgeDispatcher(
            appId: "app", manifest: manifest, store: store, services: HostProfile.sample, identity: BridgeIdentity(secret: Array(repeating: 5, count: 32)),
            customActions: ["launchAppUsingDeeplink": { _, _ in "shared" }, "getUniqueId": { _, _ in "not the bridge's" }]
        )
        let capability = try await dispatcher.grant()
        #expect(await dispatcher.reply(to: BridgeMessage(id: "1", action: "launchAppUsingDeeplink"), capability: capability).outcome == .success("shared"))
        #expect(await dispatcher.reply(to: BridgeMessage(id: "2", action: "getUniqueId"), capability: capability).outcome != .success("not the bridge's"))
    }
}
