import Foundation
import MiniAppPermissions
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

@Suite struct PermissionStoreTests {
    let cache = try! TemporaryDirectory.make().path

    let manifest = BundleManifest(
        reqPermissions: [PermissionDeclaration(name: KnownPermission.userName.rawValue, reason: "greet"), PermissionDeclaration(name: "com.example.CUSTOM")],
        optPermissions: [PermissionDeclaration(name: KnownPermission.location.rawValue, reason: "weather")]
    )

    /// A new, empty store of `backend`: the SQLite file in this test's cache, or a new database of the
    /// test process's PostgreSQL cluster.
    func makeStore(_ backend: StoreBackend) async throws -> PermissionStore {
        try await PermissionStore.open(try await location(backend), executor: testExecutor, timeouts: Self.patient)
    }

    /// Timeouts for a test process that runs hundreds of tests at once on two cores, where an answer
    /// can wait seconds for a thread (the defaults are for a host).
    static let patient = PermissionStoreTimeouts(connect: .seconds(60), statement: .seconds(60))

    func location(_ backend: StoreBackend) async throws -> PermissionStoreLocation {
        switch backend {
        case .sqlite:
            return .cache(cache)
        case .postgres:
            let cluster = try await PostgresCluster.shared()
            return try PermissionStoreLocation.parse(cluster.socketURL(try await cluster.createDatabase()))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func undecidedDeclaredPermissionsAreDeniedAndTheGateStaysClosed(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        let states = try await store.permissions(appId: "app", manifest: manifest)
        #expect(states.map(\.name) == [KnownPermission.userName.rawValue, "com.example.CUSTOM", KnownPermission.location.rawValue])
        #expect(states.allSatisfy { $0.status == .denied && $0.decidedAt == nil })
        #expect(states.map(\.known) == [true, false, true])
        #expect(states.map(\.required) == [true, true, false])
        #expect(try await store.launchDecision(appId: "app", manifest: manifest).missing == [KnownPermission.userName.rawValue, "com.example.CUSTOM"])
    }

    @Test(arguments: StoreBackend.allCases)
    func grantsOpenTheGateAndSurviveReopening(backend: StoreBackend) async throws {
        let location = try await location(backend)
        do {
            let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: Self.patient)
            try await store.set(appId: "app", ["USER_NAME": .allowed, "com.example.CUSTOM": .allowed, "LOCATION": .denied])
            await store.close()
        }
        let reopened = try await PermissionStore.open(location, executor: testExecutor, timeouts: Self.patient)
        defer { Task { await reopened.close() } }
        #expect(try await reopened.launchDecision(appId: "app", manifest: manifest).allowed)
        #expect(try await reopened.isAllowed(appId: "app", permission: "USER_NAME"))
        #expect(try await reopened.isAllowed(appId: "app", permission: KnownPermission.userName.rawValue))
        #expect(!(try await reopened.isAllowed(appId: "app", permission: "LOCATION")))
        #expect(!(try await reopened.isAllowed(appId: "other", permission: "USER_NAME")))
        if backend == .sqlite {
            let mode = try FileManager.default.attributesOfItem(atPath: reopened.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func aNewRequiredPermissionClosesTheGateAgain(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.set(appId: "app", ["USER_NAME": .allowed, "com.example.CUSTOM": .allowed])
        #expect(try await store.launchDecision(appId: "app", manifest: manifest).allowed)
        var newer = manifest
        newer.reqPermissions.append(PermissionDeclaration(name: KnownPermission.contactList.rawValue))
        #expect(try await store.launchDecision(appId: "app", manifest: newer).missing == [KnownPermission.contactList.rawValue])
    }

    @Test(arguments: StoreBackend.allCases)
    func historyRecordsEveryChangeAndReset(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.set(appId: "app", ["USER_NAME": .allowed])
        try await store.set(appId: "app", ["USER_NAME": .allowed])
        try await store.set(appId: "app", ["USER_NAME": .denied])
        try await store.reset(appId: "app")
        let history = try await store.history(appId: "app")
        #expect(history.map(\.from) == [nil, .allowed, .denied])
        #expect(history.map(\.to) == [.allowed, .denied, nil])
        #expect(try await store.stored(appId: "app").isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func onePermissionIsResetAloneWithItsHistory(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.set(appId: "app", ["USER_NAME": .allowed, "CONTACT_LIST": .denied])
        try await store.set(appId: "other", ["USER_NAME": .allowed])
        try await store.reset(appId: "app", names: ["USER_NAME", "POINTS"])
        #expect(try await store.stored(appId: "app").map(\.name) == [KnownPermission.contactList.rawValue])
        #expect(try await store.stored(appId: "other").map(\.name) == [KnownPermission.userName.rawValue])
        let last = try #require(try await store.history(appId: "app").last)
        #expect(last.name == KnownPermission.userName.rawValue && last.from == .allowed && last.to == nil)
        try await store.reset(appId: "app", names: [])
        #expect(try await store.stored(appId: "app").count == 1)
        await #expect(throws: PermissionStoreError.self) { try await store.reset(appId: "app", names: ["not a name"]) }
    }

    @Test(arguments: StoreBackend.allCases)
    func undeclaredStoredDecisionsAreKept(backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.set(appId: "app", ["POINTS": .notAvailable])
        let extra = try #require(try await store.permissions(appId: "app", manifest: manifest).last)
        #expect(extra.name == KnownPermission.points.rawValue)
        #expect(extra.declared == false)
        #expect(extra.status == .notAvailable)
    }

    @Test(arguments: PermissionInterchange.allCases, StoreBackend.allCases)
    func interchangeShapesRoundTrip(shape: PermissionInterchange, backend: StoreBackend) async throws {
        let store = try await makeStore(backend)
        try await store.set(appId: "app", ["USER_NAME": .allowed, "LOCATION": .notAvailable, "com.example.CUSTOM": .denied])
        let exported = try shape.export(appId: "app", try await store.permissions(appId: "app", manifest: manifest))
        let parsed = try PermissionInterchange.parse(exported)
        #expect(parsed.statuses == [KnownPermission.userName.rawValue: .allowed, KnownPermission.location.rawValue: .notAvailable, "com.example.CUSTOM": .denied])
        #expect(parsed.appId == (shape == .pairs ? "app" : nil))
    }

    @Test func bothSDKShapesImport() throws {
        let full = #"[{"permissionName": "rakuten.miniapp.user.USER_NAME", "isPermissionGranted": "ALLOWED", "permissionDescription": "x"}]"#
        #expect(try PermissionInterchange.parse(Data(full.utf8)).statuses == [KnownPermission.userName.rawValue: .allowed])
        let pairs = #"{"miniAppId": "a", "pairValues": [{"first": "LOCATION", "second": "DENIED"}, {"first": "CONTACT_LIST", "second": "PERMISSION_NOT_AVAILABLE"}]}"#
        let parsed = try PermissionInterchange.parse(Data(pairs.utf8))
        #expect(parsed.appId == "a")
        #expect(parsed.statuses == [KnownPermission.location.rawValue: .denied, KnownPermission.contactList.rawValue: .notAvailable])
    }

    @Test(arguments: ["", "{}", "[1]", #"[{"permissionName": "X"}]"#, #"[{"permissionName": "X", "isPermissionGranted": "MAYBE"}]"#, #"{"pairValues": [{"second": "ALLOWED"}]}"#])
    func badImportsAreRefused(text: String) {
        #expect(throws: PermissionStoreError.self) { try PermissionInterchange.parse(Data(text.utf8)) }
    }

    @Test func aNewStoreWaitsForAnotherProcessCreatingItAndIsBusyPastTheLockTimeout() async throws {
        // Another process holds the cache folder's lock, as one creating the store does: util-linux's
        // `flock`, which lets go only by exiting.
        let holder = try ChildProcess("/usr/bin/flock", ["--exclusive", "--no-fork", cache, "sleep", "900"])
        defer { holder.stop() }
        await offPool {
            let probe = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { close(probe) }
            while flock(probe, LOCK_EX | LOCK_NB) == 0 {
                flock(probe, LOCK_UN)
                usleep(2_000)
            }
        }
        let error = await #expect(throws: PermissionStoreError.self) {
            try await PermissionStore.open(cacheDirectory: cache, executor: testExecutor, lockTimeout: .milliseconds(300))
        }
        #expect(error?.category == .busy)
        let opening = Task { try await PermissionStore.open(cacheDirectory: cache, executor: testExecutor, lockTimeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(100))
        holder.kill()
        let store = try await opening.value
        try await store.set(appId: "app", ["USER_NAME": .allowed])
        #expect(try await store.isAllowed(appId: "app", permission: "USER_NAME"))
    }

    @Test func damagedDatabaseIsReportedAndLeftAlone() async throws {
        let path = cache + "/permissions.sqlite"
        let garbage = Data(repeating: 0x42, count: 8192)
        try writeTestFile(path, garbage)
        let error = await #expect(throws: PermissionStoreError.self) { try await PermissionStore.open(cacheDirectory: cache, executor: testExecutor) }
        #expect(error?.category == .badData)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage, "never silently reset")
    }

    @Test(arguments: StoreBackend.allCases)
    func concurrentWritersFromManyConnectionsLoseNothing(backend: StoreBackend) async throws {
        let location = try await location(backend)
        let names = KnownPermission.allCases.map(\.shortName)
        // Every writer its own store (its own connections), toggling its permission 10 times while the
        // others do theirs, all on one app.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask {
                    let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: Self.patient)
                    for round in 0..<10 { try await store.set(appId: "app", [name: round % 2 == 0 ? .allowed : .denied]) }
                    try await store.set(appId: "app", [name: .allowed])
                    await store.close()
                }
            }
            try await group.waitForAll()
        }
        let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: Self.patient)
        let stored = try await store.stored(appId: "app")
        #expect(stored.count == names.count && stored.allSatisfy { $0.status == .allowed })
        // The history is the current state's: 11 changes per permission, each from the one before.
        let history = try await store.history(appId: "app")
        #expect(history.count == names.count * 11)
        for name in Set(history.map(\.name)) {
            let changes = history.filter { $0.name == name }
            #expect(changes.first?.from == nil)
            #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.to == $1.from }, "\(name)")
            #expect(changes.last?.to == .allowed)
        }
        await store.close()
    }

    @Test(arguments: StoreBackend.allCases)
    func historyUnderEightConcurrentWritersIsInTheOrderItTookEffectWithTimesThatAgree(backend: StoreBackend) async throws {
        let location = try await location(backend)
        let shared = "com.example.SHARED"
        // Eight clients, each its own store (its own connections), all changing one permission of one
        // app at once, and a reset among them: only the order they took effect in makes a chain.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: Self.patient)
                    for round in 0..<12 {
                        if writer == 0, round == 6 {
                            try await store.reset(appId: "app")
                        } else {
                            try await store.set(appId: "app", [shared: (writer + round) % 2 == 0 ? .allowed : .denied])
                        }
                    }
                    await store.close()
                }
            }
            try await group.waitForAll()
        }
        let store = try await PermissionStore.open(location, executor: testExecutor, timeouts: Self.patient)
        let history = try await store.history(appId: "app")
        #expect(history.count > 8)
        #expect(history.first?.from == nil)
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.to == $1.from }, "each change is from the state the one before left")
        let times = history.map(\.changedAt)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "times never go back: \(times.map(RecordCoding.format))")
        #expect(try await store.stored(appId: "app").first?.status == history.last?.to, "the history leads to the decision in force")
        await store.close()
    }

    @Test(arguments: [(StoreBackend.sqlite, StoreBackend.postgres), (.postgres, .sqlite)])
    func aSnapshotCarriesEveryDecisionWithItsTimeIntoTheOtherBackend(from: StoreBackend, to: StoreBackend) async throws {
        let source = try await makeStore(from)
        try await source.set(appId: "app", ["USER_NAME": .allowed, "LOCATION": .denied], at: Date(timeIntervalSince1970: 1_795_341_404.237))
        try await source.set(appId: "other", ["POINTS": .notAvailable], at: Date(timeIntervalSince1970: 1_700_000_000.001))
        let snapshot = try await source.snapshot()
        #expect(snapshot.apps.map(\.id) == ["app", "other"])
        let text = try RecordCoding.encoder().encode(snapshot)
        let read = try RecordCoding.decoder().decode(PermissionSnapshot.self, from: text)
        let target = try await makeStore(to)
        try await target.restore(read)
        #expect(try RecordCoding.encoder().encode(try await target.snapshot()) == text, "the same decisions with the same times")
        let decided = try await target.stored(appId: "app").first { $0.name == KnownPermission.userName.rawValue }?.decidedAt
        #expect(decided.map(RecordCoding.format) == "2026-11-22T09:56:44.237Z")
        await source.close()
        await target.close()
    }

    @Test func manifestDiffNamesEveryKindOfChange() {
        let old = BundleManifest(
            reqPermissions: [PermissionDeclaration(name: "a", reason: "r1"), PermissionDeclaration(name: "b")],
            optPermissions: [PermissionDeclaration(name: "c")],
            accessTokenPermissions: [AccessTokenPermission(audience: "rae", scopes: ["x"])],
            customMetaData: ["k": "1", "gone": "g"]
        )
        let new = BundleManifest(
            reqPermissions: [PermissionDeclaration(name: "a", reason: "r2"), PermissionDeclaration(name: "d")],
            optPermissions: [PermissionDeclaration(name: "b")],
            accessTokenPermissions: [AccessTokenPermission(audience: "rae", scopes: ["x", "y"]), AccessTokenPermission(audience: "new", scopes: ["z"])],
            customMetaData: ["k": "2", "added": "n"]
        )
        let diff = ManifestDiff(from: old, to: new)
        #expect(diff.requiredAdded == ["d"])
        #expect(diff.requiredRemoved == ["b"])
        #expect(diff.optionalAdded == ["b"])
        #expect(diff.optionalRemoved == ["c"])
        #expect(diff.reasonsChanged == [ManifestDiff.ReasonChange(name: "a", from: "r1", to: "r2")])
        #expect(diff.tokensChanged.map(\.audience) == ["new", "rae"])
        #expect(diff.customMetaDataChanged.map(\.key) == ["added", "gone", "k"])
        #expect(ManifestDiff(from: old, to: old).isEmpty)
    }
}

@Suite struct RecordCodingTests {
    @Test(arguments: [0.0, 1_795_341_404.237, 951_782_400.5, 4_102_444_799.999])
    func datesRoundTripToTheMillisecond(seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let parsed = try #require(RecordCoding.parse(RecordCoding.format(date)))
        #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.001)
    }

    @Test func formatIsISO8601UTCWithMilliseconds() {
        #expect(RecordCoding.format(Date(timeIntervalSince1970: 1_795_341_404.237)) == "2026-11-22T09:56:44.237Z")
        #expect(RecordCoding.parse("2026-11-22T09:56:44Z") == Date(timeIntervalSince1970: 1_795_341_404))
    }

    @Test(arguments: ["", "2026-11-22", "2026-13-22T09:56:44Z", "2026-11-22T09:56:44+01:00", "2026-11-22T09:56:44.Z", "x026-11-22T09:56:44Z"])
    func malformedDatesAreRefused(text: String) {
        #expect(RecordCoding.parse(text) == nil)
    }
}
