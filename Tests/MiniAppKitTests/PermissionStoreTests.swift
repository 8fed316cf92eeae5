import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

@Suite struct PermissionStoreTests {
    let cache = try! TemporaryDirectory.make().path

    let manifest = BundleManifest(
        reqPermissions: [PermissionDeclaration(name: KnownPermission.userName.rawValue, reason: "greet"), PermissionDeclaration(name: "com.example.CUSTOM")],
        optPermissions: [PermissionDeclaration(name: KnownPermission.location.rawValue, reason: "weather")]
    )

    @Test func undecidedDeclaredPermissionsAreDeniedAndTheGateStaysClosed() async throws {
        let store = try await PermissionStore.open(cacheDirectory: cache)
        let states = try await store.permissions(appId: "app", manifest: manifest)
        #expect(states.map(\.name) == [KnownPermission.userName.rawValue, "com.example.CUSTOM", KnownPermission.location.rawValue])
        #expect(states.allSatisfy { $0.status == .denied && $0.decidedAt == nil })
        #expect(states.map(\.known) == [true, false, true])
        #expect(states.map(\.required) == [true, true, false])
        #expect(try await store.launchDecision(appId: "app", manifest: manifest).missing == [KnownPermission.userName.rawValue, "com.example.CUSTOM"])
    }

    @Test func grantsOpenTheGateAndSurviveReopening() async throws {
        do {
            let store = try await PermissionStore.open(cacheDirectory: cache)
            try await store.set(appId: "app", ["USER_NAME": .allowed, "com.example.CUSTOM": .allowed, "LOCATION": .denied])
        }
        let reopened = try await PermissionStore.open(cacheDirectory: cache)
        #expect(try await reopened.launchDecision(appId: "app", manifest: manifest).allowed)
        #expect(try await reopened.isAllowed(appId: "app", permission: "USER_NAME"))
        #expect(try await reopened.isAllowed(appId: "app", permission: KnownPermission.userName.rawValue))
        #expect(!(try await reopened.isAllowed(appId: "app", permission: "LOCATION")))
        #expect(!(try await reopened.isAllowed(appId: "other", permission: "USER_NAME")))
        let mode = try FileManager.default.attributesOfItem(atPath: reopened.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aNewRequiredPermissionClosesTheGateAgain() async throws {
        let store = try await PermissionStore.open(cacheDirectory: cache)
        try await store.set(appId: "app", ["USER_NAME": .allowed, "com.example.CUSTOM": .allowed])
        #expect(try await store.launchDecision(appId: "app", manifest: manifest).allowed)
        var newer = manifest
        newer.reqPermissions.append(PermissionDeclaration(name: KnownPermission.contactList.rawValue))
        #expect(try await store.launchDecision(appId: "app", manifest: newer).missing == [KnownPermission.contactList.rawValue])
    }

    @Test func historyRecordsEveryChangeAndReset() async throws {
        let store = try await PermissionStore.open(cacheDirectory: cache)
        try await store.set(appId: "app", ["USER_NAME": .allowed])
        try await store.set(appId: "app", ["USER_NAME": .allowed])
        try await store.set(appId: "app", ["USER_NAME": .denied])
        try await store.reset(appId: "app")
        let history = try await store.history(appId: "app")
        #expect(history.map(\.from) == [nil, .allowed, .denied])
        #expect(history.map(\.to) == [.allowed, .denied, nil])
        #expect(try await store.stored(appId: "app").isEmpty)
    }

    @Test func undeclaredStoredDecisionsAreKept() async throws {
        let store = try await PermissionStore.open(cacheDirectory: cache)
        try await store.set(appId: "app", ["POINTS": .notAvailable])
        let extra = try #require(try await store.permissions(appId: "app", manifest: manifest).last)
        #expect(extra.name == KnownPermission.points.rawValue)
        #expect(extra.declared == false)
        #expect(extra.status == .notAvailable)
    }

    @Test(arguments: PermissionInterchange.allCases)
    func interchangeShapesRoundTrip(shape: PermissionInterchange) async throws {
        let store = try await PermissionStore.open(cacheDirectory: cache)
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

    @Test func damagedDatabaseIsReportedAndLeftAlone() async throws {
        let path = cache + "/permissions.sqlite"
        let garbage = Data(repeating: 0x42, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = await #expect(throws: PermissionStoreError.self) { try await PermissionStore.open(cacheDirectory: cache) }
        #expect(error?.category == .badData)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage, "never silently reset")
    }

    @Test func concurrentWritersFromManyConnectionsLoseNothing() async throws {
        let names = KnownPermission.allCases.map(\.shortName)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask {
                    let store = try await PermissionStore.open(cacheDirectory: cache)
                    try await store.set(appId: "app", [name: .allowed])
                }
            }
            try await group.waitForAll()
        }
        #expect(try await PermissionStore.open(cacheDirectory: cache).stored(appId: "app").count == names.count)
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
