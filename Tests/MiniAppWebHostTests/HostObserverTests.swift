import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import MiniAppPermissions
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppWebHost

/// A host service observes and answers the browser host as NextAuth's applications observe their SDK:
/// observers added and removed while calls run, prompts answered from code (and from the page), updated
/// while shown, every change of state told once, a decision of another process's included, on both stores.
@Suite(.timeLimit(.minutes(10))) struct HostObserverTests {
    static let userName = KnownPermission.userName.rawValue

    /// A browser host over a development folder of app `shop`, its store of `backend`, and the runtime
    /// that owns its installer. `requires` makes USER_NAME required (a closed launch gate).
    struct Setup {
        let host: BrowserHost
        let store: PermissionStore
        let runtime: MiniAppRuntime
        let folder: String
        let cache: String
        /// What the CLI needs to reach the same store.
        let storeArguments: [String]

        func dispatcher() throws -> BridgeDispatcher {
            try #require(host.openApps.first { $0.appId == "shop" }?.dispatcher)
        }

        func shutdown() async {
            await runtime.shutdown()
            await store.close()
        }
    }

    static func setUp(
        _ backend: StoreBackend = .sqlite, requires: Bool = false,
        services: (@Sendable (String, any BridgeHostServices) -> any BridgeHostServices)? = nil, observe: Bool = false
    ) async throws -> (Setup, AsyncStream<HostCallback>?) {
        let work = try TemporaryDirectory.make().path
        let folder = work + "/shop", cache = work + "/cache"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try writeTestFile(folder + "/index.html", Array("<!doctype html><title>shop</title>".utf8))
        let declaration = #"[{"name": "\#(userName)", "reason": "To greet you."}]"#
        try writeTestFile(folder + "/manifest.json", Array((requires ? #"{"reqPermissions": \#(declaration)}"# : #"{"optPermissions": \#(declaration)}"#).utf8))
        let environment = try await backend.environment()
        let location: PermissionStoreLocation = try environment["MINIAPP_PERMISSION_STORE"].map { try PermissionStoreLocation.parse($0) } ?? .cache(cache)
        let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTimeouts(connect: .seconds(60), statement: .seconds(60)))
        var configuration = MiniAppConfiguration(cacheDirectory: cache)
        configuration.offline = true
        let runtime = MiniAppRuntime(configuration: configuration, permissionStore: store)
        var profile = HostProfile()
        profile.userName = "Aiko"
        let host = try await BrowserHost(
            runtime: runtime, profile: profile, identity: BridgeIdentity(secret: Array(repeating: 3, count: 32)),
            services: services
        )
        // An observer that starts before the app opens hears it open.
        let stream = observe ? await host.callbacks() : nil
        _ = try await host.develop(folder: folder, appId: "shop")
        let storeArguments = environment["MINIAPP_PERMISSION_STORE"].map { ["--permission-store", $0] } ?? []
        return (Setup(host: host, store: store, runtime: runtime, folder: folder, cache: cache, storeArguments: storeArguments), stream)
    }

    /// Reads callbacks until one `matches` (the suite's time limit ends a wait for one that never comes).
    static func next<T>(_ iterator: inout AsyncStream<HostCallback>.Iterator, _ matches: (HostCallback.Kind) -> T?) async -> T? {
        while let callback = await iterator.next() {
            if let found = matches(callback.kind) { return found }
        }
        return nil
    }

    // MARK: Observers

    @Test func observersAreAddedAndRemovedWhileCallsRun() async throws {
        let (setup, _) = try await Self.setUp()
        defer { Task { await setup.shutdown() } }
        let dispatcher = try setup.dispatcher()
        let capability = try await dispatcher.grant()
        let staying = await setup.host.callbacks()
        let leaving = Task {
            var count = 0
            for await callback in await setup.host.callbacks() {
                if case .call = callback.kind { count += 1 }
                if count == 10 { break }
            }
            return count
        }
        let calls = Task {
            var answered = 0
            for number in 0..<200 {
                let reply = await dispatcher.reply(to: BridgeMessage(id: "\(number)", action: "getUniqueId"), capability: capability)
                if case .success = reply.outcome { answered += 1 }
            }
            return answered
        }
        #expect(await leaving.value == 10, "an observer that leaves after ten calls heard ten")
        #expect(await calls.value == 200, "every call is answered while observers come and go")
        var iterator = staying.makeAsyncIterator()
        var seen = 0
        while seen < 200, let callback = await iterator.next() {
            if case .call(let appId, let call) = callback.kind, appId == "shop", call.action == "getUniqueId" { seen += 1 }
        }
        #expect(seen == 200, "an observer that stays hears every call")
        #expect(setup.host.hub.isObserved)
    }

    @Test func aSlowObserverSlowsNoOne() async throws {
        let (setup, _) = try await Self.setUp()
        defer { Task { await setup.shutdown() } }
        let dispatcher = try setup.dispatcher()
        let capability = try await dispatcher.grant()
        // One observer never reads, with room for four; another reads everything.
        let slow = await setup.host.callbacks(buffered: 4)
        let reader = await setup.host.callbacks(buffered: 1024)
        for number in 0..<300 {
            _ = await dispatcher.reply(to: BridgeMessage(id: "\(number)", action: "getUniqueId"), capability: capability)
        }
        var iterator = reader.makeAsyncIterator()
        var calls = 0, last = 0
        while calls < 300, let callback = await iterator.next() {
            if case .call = callback.kind { calls += 1 }
            last = callback.sequence
        }
        #expect(calls == 300, "the reading observer heard every call although another never read")
        // The slow one kept only its newest four of each batch handed to it: reading it now gives at most
        // the four it held, then the newest four, ending with the last callback.
        var slowIterator = slow.makeAsyncIterator()
        var read: [Int] = []
        while let callback = await slowIterator.next() {
            read.append(callback.sequence)
            if callback.sequence >= last { break }
        }
        let newest = Array(read.suffix(4))
        #expect(read.count <= 8 && read == read.sorted(), "the slow observer keeps its newest callbacks: \(read)")
        #expect(newest == Array((last - 3)...last), "the slow observer ends with the newest four: \(read)")
    }

    // MARK: Prompts

    /// The app's request of USER_NAME, which waits for the user.
    static func askForTheUsersName(_ dispatcher: BridgeDispatcher, _ capability: BridgeCapability) -> Task<BridgeReply, Never> {
        Task {
            await dispatcher.reply(to: BridgeMessage(id: "1", action: "requestCustomPermissions", param: .object([
                "permissions": .array([.object(["name": .string(userName), "description": .string("to greet")])]),
            ])), capability: capability)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func aPromptAnsweredByTheHostServiceIsSettledForThePage(backend: StoreBackend) async throws {
        let (setup, stream) = try await Self.setUp(backend, observe: true)
        defer { Task { await setup.shutdown() } }
        var callbacks = try #require(stream).makeAsyncIterator()
        let dispatcher = try setup.dispatcher()
        let capability = try await dispatcher.grant()
        let asked = Self.askForTheUsersName(dispatcher, capability)
        let prompt = try #require(await Self.next(&callbacks) { kind -> HostPrompt? in if case .prompt(let prompt) = kind { prompt } else { nil } })
        guard case .permissions(let items) = prompt.kind else { Issue.record("\(prompt.kind)"); return }
        #expect(items.map(\.name) == [Self.userName] && items.first?.reason == "To greet you." && items.first?.required == false)
        #expect(await prompt.answer(.sheet(.null)) == false, "an answer of another kind is refused")
        #expect(await prompt.answer(.decisions([Self.userName: .allowed])))
        #expect(await prompt.answer(.decisions([Self.userName: .denied])) == false, "the first answer wins")
        let reply = await asked.value
        guard case .success(let text?) = reply.outcome else { Issue.record("\(reply)"); return }
        #expect(text.contains("ALLOWED"))
        #expect(await prompt.settlement() == HostPrompt.Settlement(by: .host, answered: true))
        // The page sees it settled: the notice its poll reads.
        let (_, notices) = await setup.host.board.notices(after: 1, wait: .zero)
        #expect(notices.contains { if case .settled(prompt.id) = $0.kind { true } else { false } })
        let settled = await Self.next(&callbacks) { kind -> HostPrompt.Settlement? in
            if case .promptSettled(let settledPrompt, let settlement) = kind, settledPrompt === prompt { settlement } else { nil }
        }
        #expect(settled == HostPrompt.Settlement(by: .host, answered: true))
        let changed = await Self.next(&callbacks) { kind -> PermissionDecisionEvent? in if case .permissionChanged(let event) = kind { event } else { nil } }
        #expect(changed?.source == .bridge && changed?.writtenHere == true && changed?.change.to == .allowed, "\(String(describing: changed))")
    }

    @Test func aPromptAnsweredOnThePageIsSettledForTheHostService() async throws {
        let (setup, stream) = try await Self.setUp(observe: true)
        defer { Task { await setup.shutdown() } }
        var callbacks = try #require(stream).makeAsyncIterator()
        let dispatcher = try setup.dispatcher()
        let capability = try await dispatcher.grant()
        let asked = Self.askForTheUsersName(dispatcher, capability)
        let prompt = try #require(await Self.next(&callbacks) { kind -> HostPrompt? in if case .prompt(let prompt) = kind { prompt } else { nil } })
        // What the host page's POST /api/prompts/<id> does.
        #expect(setup.host.board.settle(prompt.id, with: [Self.userName: .denied]))
        #expect(await prompt.settlement() == HostPrompt.Settlement(by: .page, answered: true))
        #expect(await prompt.answer(.decisions([Self.userName: .allowed])) == false, "the page answered first")
        #expect(prompt.cancel() == false)
        _ = await asked.value
        #expect(try await setup.store.stored(appId: "shop").first?.status == .denied)
    }

    @Test func aSheetIsUpdatedWhileShownAndAnsweredFromCode() async throws {
        let (setup, stream) = try await Self.setUp(observe: true)
        defer { Task { await setup.shutdown() } }
        var callbacks = try #require(stream).makeAsyncIterator()
        let dispatcher = try setup.dispatcher()
        let capability = try await dispatcher.grant()
        let shared = Task {
            await dispatcher.reply(to: BridgeMessage(id: "1", action: "shareInfo", param: .object(["shareInfo": .object(["content": .string("hello")])])), capability: capability)
        }
        let sheet = try #require(await Self.next(&callbacks) { kind -> HostPrompt? in if case .prompt(let prompt) = kind { prompt } else { nil } })
        #expect(sheet.kind == .sheet("share", payload: .object(["content": .string("hello")])))
        sheet.update(HostPrompt.Update(message: "Sending to Ken", progress: 0.5))
        let update = await Self.next(&callbacks) { kind -> HostPrompt.Update? in if case .promptUpdated(let updated, let update) = kind, updated === sheet { update } else { nil } }
        #expect(update == HostPrompt.Update(message: "Sending to Ken", progress: 0.5))
        // A page that opens now is shown the sheet, then its update.
        let (_, waiting) = await setup.host.board.notices(after: 0, wait: .zero)
        let kinds = waiting.map { notice -> String in
            switch notice.kind {
            case .sheet(let id, _): "sheet \(id)"
            case .updated(let id, let update): "updated \(id) \(update.message ?? "")"
            default: "other"
            }
        }
        #expect(kinds == ["sheet \(sheet.id)", "updated \(sheet.id) Sending to Ken"])
        #expect(await sheet.answer(.sheet(.object(["shared": .bool(true)]))))
        #expect(await shared.value.outcome == .success("SUCCESS"))
    }

    @Test func theLaunchGateIsAnsweredFromCode() async throws {
        let (setup, stream) = try await Self.setUp(requires: true, observe: true)
        defer { Task { await setup.shutdown() } }
        var callbacks = try #require(stream).makeAsyncIterator()
        let closed = await Self.next(&callbacks) { kind -> LaunchDecision? in if case .launchGate("shop", let decision) = kind { decision } else { nil } }
        #expect(closed == LaunchDecision(missing: [Self.userName]))
        let gate = try #require(await Self.next(&callbacks) { kind -> HostPrompt? in
            if case .prompt(let prompt) = kind, case .launchGate = prompt.kind { prompt } else { nil }
        })
        #expect(gate.kind == .launchGate(missing: [Self.userName]))
        #expect(await gate.answer(.launch(allowed: true)))
        let open = await Self.next(&callbacks) { kind -> LaunchDecision? in if case .launchGate("shop", let decision) = kind { decision } else { nil } }
        #expect(open == LaunchDecision(missing: []))
        #expect(await gate.settlement() == HostPrompt.Settlement(by: .host, answered: true))
        #expect(try await setup.store.stored(appId: "shop").first?.status == .allowed)
        #expect(try await setup.dispatcher().grant().token.count == 64, "the app may start")
    }

    // MARK: Changes of state

    /// Each change of state is told once: decisions written by another process (the CLI) and by this
    /// one, the launch gate they open and close, the profile, an install and its failure.
    @Test(arguments: StoreBackend.allCases)
    func everyChangeIsToldOnceAnotherProcesssDecisionIncluded(backend: StoreBackend) async throws {
        let (setup, stream) = try await Self.setUp(backend, requires: true, observe: true)
        defer { Task { await setup.shutdown() } }
        let heard = Heard()
        let callbacks = try #require(stream)
        let collector = Task { for await callback in callbacks { heard.withLock { $0.append(callback.kind) } } }
        defer { collector.cancel() }
        func decisions() -> [PermissionDecisionEvent] {
            heard.withLock { $0.compactMap { if case .permissionChanged(let event) = $0 { event } else { nil } } }
        }
        func gates() -> [LaunchDecision] {
            heard.withLock { $0.compactMap { if case .launchGate("shop", let decision) = $0 { decision } else { nil } } }
        }
        func waitUntil(_ condition: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        }
        try await waitUntil { gates().count == 1 }
        #expect(gates() == [LaunchDecision(missing: [Self.userName])], "the closed gate is told when the app opens")

        // Another process allows USER_NAME: an import of a store export, through the CLI.
        let export = try TemporaryDirectory.make().path + "/export.json"
        try writeTestFile(export, Array(#"{"format": "miniapp.permissions", "version": 1, "apps": [{"id": "shop", "permissions": [{"name": "\#(Self.userName)", "status": "ALLOWED", "decidedAt": "2026-11-29T00:00:00Z"}]}]}"#.utf8))
        let imported = try await CommandRunner.run(["permissions", "import", export, "--cache-dir", setup.cache] + setup.storeArguments, timeoutSeconds: 120)
        #expect(imported.status == 0, "\(imported.stderr)")
        try await waitUntil { decisions().count == 1 && gates().count == 2 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(decisions() == [PermissionDecisionEvent(
            appId: "shop", change: PermissionChange(name: Self.userName, from: nil, to: .allowed, changedAt: Date(timeIntervalSince1970: 1_795_910_400)),
            source: .imported, writtenHere: false
        )])
        #expect(gates() == [LaunchDecision(missing: [Self.userName]), LaunchDecision(missing: [])], "the gate opened, told once")

        // This process denies it; the CLI resets it.
        try await setup.store.set(appId: "shop", [Self.userName: .denied])
        try await waitUntil { decisions().count == 2 && gates().count == 3 }
        let reset = try await CommandRunner.run(["permissions", "reset", "shop", "--cache-dir", setup.cache] + setup.storeArguments, timeoutSeconds: 120)
        #expect(reset.status == 0, "\(reset.stderr)")
        try await waitUntil { decisions().count == 3 }
        try await Task.sleep(for: .milliseconds(300))
        let all = decisions()
        #expect(all.map(\.source) == [.imported, .host, .commandLine], "\(all)")
        #expect(all.map(\.writtenHere) == [false, true, false])
        #expect(all.map(\.change.to) == [.allowed, .denied, nil])
        #expect(gates().count == 3, "denying and then resetting closes the gate once: \(gates())")

        // The profile, once; an install, once; an install that fails, once.
        var profile = setup.host.profile
        profile.userName = "Ken"
        setup.host.setProfile(profile)
        let key = try SigningKey.generate()
        let signed = try BundleFactory.sign(try BundleFactory.zip(BundleFactory.helloFiles), versionId: "v1", key: key)
        let zip = try TemporaryDirectory.make().path + "/hello.zip"
        try writeTestFile(zip, signed.zip)
        let installer = try setup.runtime.installer()
        _ = try await installer.install(bundleAt: zip, appId: "hello", versionId: "v1", signature: signed.signature, publicKey: key.publicKey)
        _ = try? await installer.install(bundleAt: zip, appId: "hello", versionId: "v2", signature: signed.signature, publicKey: key.publicKey)
        try await waitUntil { heard.withLock { $0.filter { if case .install = $0 { true } else { false } }.count } >= 2 }
        try await Task.sleep(for: .milliseconds(300))
        let installs = heard.withLock { $0.compactMap { if case .install(let event) = $0 { event } else { nil } } }
        guard installs.count == 2, case .installed(let record) = installs[0], case .failed("hello", "v2", let reason) = installs[1] else {
            Issue.record("\(installs)")
            return
        }
        #expect(record.id == "hello" && record.versionId == "v1" && record.source == .bundle)
        #expect(reason.contains("signature"), "\(reason)")
        let profiles = heard.withLock { $0.compactMap { if case .profileChanged(let changed) = $0 { changed.userName } else { nil } } }
        #expect(profiles == ["Ken"])
        let opened = heard.withLock { $0.compactMap { if case .appOpened(let appId, let versionId) = $0 { appId + " " + versionId } else { nil } } }
        #expect(opened == ["shop dev"])
    }

    /// A host's own service that waits is cancelled when the app closes, and its answer goes to no one.
    @Test func aHostsAnswerIsCancelledWhenTheAppCloses() async throws {
        let started = Flag(), cancelled = Flag()
        struct Waiting: BridgeHostServicesLayer {
            let base: any BridgeHostServices
            let started: Flag
            let cancelled: Flag
            func userName(appId: String) async throws(BridgeFailure) -> String {
                started.set()
                do { try await Task.sleep(for: .seconds(600)) } catch { cancelled.set() }
                return "too late"
            }
        }
        let (setup, stream) = try await Self.setUp(services: { _, base in Waiting(base: base, started: started, cancelled: cancelled) }, observe: true)
        defer { Task { await setup.shutdown() } }
        var callbacks = try #require(stream).makeAsyncIterator()
        try await setup.store.set(appId: "shop", [Self.userName: .allowed])
        let dispatcher = try setup.dispatcher()
        let capability = try await dispatcher.grant()
        let asked = Task { await dispatcher.reply(to: BridgeMessage(id: "1", action: "getUserName"), capability: capability) }
        while !started.isSet { try await Task.sleep(for: .milliseconds(5)) }
        dispatcher.revokeAll()
        let reply = await asked.value
        guard case .failure(let failure) = reply.outcome else { Issue.record("\(reply)"); return }
        #expect(failure.type == "AuthorizationFailureError")
        #expect(cancelled.isSet, "the host's service was cancelled")
        let ended = await Self.next(&callbacks) { kind -> BridgeCapabilityEvent? in
            if case .capability("shop", let event) = kind, case .ended = event { event } else { nil }
        }
        #expect(ended == .ended(count: 1, live: 0))
    }

    /// The callbacks a collecting task heard.
    final class Heard: Sendable {
        private let kinds = Mutex<[HostCallback.Kind]>([])
        func withLock<T>(_ body: (inout [HostCallback.Kind]) -> T) -> T { kinds.withLock { body(&$0) } }
    }

    /// A flag tasks share.
    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }
}
