import AsyncHTTPClient
import CMiniAppArchive
import Foundation
import Logging
import MiniAppPermissions
import MiniAppRegistry
import MiniAppTestSupport
import NIOConcurrencyHelpers
import NIOPosix
import Synchronization
import Testing

@testable import MiniAppCore
@testable import MiniAppKit

/// A platform with one app whose versions are real zips signed at test time.
struct SignedPlatform {
    let key: SigningKey
    var fixture: PlatformFixture

    init(versions: [(id: String, tag: String, files: [String: String])] = [("ver-1", "1.0.0", BundleFactory.helloFiles)], signWith signer: SigningKey? = nil) throws {
        key = try SigningKey.generate()
        let signer = signer ?? key
        var fixtureVersions: [FixtureVersion] = []
        var blobs: [String: [UInt8]] = [:]
        for version in versions {
            let signed = try BundleFactory.sign(try BundleFactory.zip(version.files), versionId: version.id, key: signer)
            let path = "cdn/min-app-hello/ver-\(version.id)/app.zip"
            blobs["/" + path] = signed.zip
            fixtureVersions.append(FixtureVersion(versionId: version.id, versionTag: version.tag, files: [path], publicKeyId: "key-1", signature: signed.signature, metadataJSON: "{}"))
        }
        fixture = PlatformFixture(
            apps: [FixtureApp(id: "app-hello", displayName: "Hello", versions: fixtureVersions.reversed())],
            keys: ["key-1": (ecKey: key.publicKey.ecKey, pemKey: key.publicKey.pem)]
        )
        fixture.blobs = blobs
    }

    var zipPath: String { fixture.blobs.keys.sorted().first! }
}

func makeConfiguration(_ server: TestHTTPServer, cache: String, policy: SignaturePolicy = .required, offline: Bool = false) -> MiniAppConfiguration {
    MiniAppConfiguration(
        platform: .remote(server.baseURL), projectId: "proj-1", cacheDirectory: cache,
        signaturePolicy: policy, offline: offline, network: fastNetwork, lockTimeout: .seconds(20)
    )
}

/// Runs `body` with the installer of a runtime for `configuration` (its platform reached as
/// `connections` says, and its zips the same way), as a host gets it.
func withInstaller<Result: Sendable>(
    _ configuration: MiniAppConfiguration, logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
    connections: PlatformConnections = .pooled, _ body: (BundleInstaller) async throws -> Result
) async throws -> Result {
    let runtime = MiniAppRuntime(configuration: configuration, connections: connections, executor: BlockingExecutor(), logger: logger)
    do {
        let result = try await body(try runtime.installer())
        await runtime.shutdown()
        return result
    } catch {
        await runtime.shutdown()
        throw error
    }
}

/// Runs `body` with an installer for `configuration` whose platform client talks to 127.0.0.1:`port`
/// instead of the configured platform (whose part of the cache it keeps using).
func withInstaller<Result: Sendable>(
    _ configuration: MiniAppConfiguration, platformAt port: Int, _ body: (BundleInstaller) async throws -> Result
) async throws -> Result {
    var elsewhere = configuration
    elsewhere.platform = .remote(URL(string: "http://127.0.0.1:\(port)/")!)
    let platform = try PlatformClient(configuration: elsewhere, executor: testExecutor)
    do {
        let result = try await withInstaller(configuration, platform: platform, body)
        try await platform.shutdown()
        return result
    } catch {
        try await platform.shutdown()
        throw error
    }
}

/// Runs `body` with an installer for `configuration` that talks to `platform` (the caller's to close).
func withInstaller<Result: Sendable>(
    _ configuration: MiniAppConfiguration, platform: PlatformClient?, logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (BundleInstaller) async throws -> Result
) async throws -> Result {
    let installer = try BundleInstaller(configuration: configuration, platform: platform, executor: testExecutor, logger: logger)
    defer { _ = installer }
    do {
        let result = try await body(installer)
        await installer.shutdown()
        return result
    } catch {
        await installer.shutdown()
        throw error
    }
}

@Suite struct BundleInstallerTests {
    let cache: String

    init() async throws {
        cache = try TemporaryDirectory.make().path
        // The hello bundle requires USER_NAME: allowed here so that load's launch gate opens.
        try await PermissionStore.open(cacheDirectory: cache, executor: testExecutor).set(appId: "app-hello", ["USER_NAME": .allowed])
    }

    @Test func downloadsVerifiesUnpacksAndCaches() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") }
            let record = outcome.record
            #expect(record.source == .network)
            #expect(record.signature == .verified)
            #expect(record.versionId == "ver-1")
            #expect(record.versionTag == "1.0.0")
            #expect(record.keyId == "key-1")
            #expect(record.sha256 == SHA256Digest.hash(platform.fixture.blobs[platform.zipPath]!).hexString)
            #expect(record.sizeBytes == Int64(BundleFactory.helloFiles.values.reduce(0) { $0 + $1.utf8.count }))
            #expect(try String(contentsOfFile: record.path + "/index.html", encoding: .utf8) == BundleFactory.helloFiles["index.html"])
            #expect(outcome.notes.isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
            let zipRequests = server.requests.filter { $0.path == platform.zipPath }
            #expect(zipRequests.count == 1)
            #expect(zipRequests[0].header("apiKey") == nil)
        }
    }

    @Test func aReinstallThatFailsAtItsRecordPutsTheOldVersionBack() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let first = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }
            let before = CacheTree(cache)
            let recordPath = (first.record.path as NSString).deletingLastPathComponent + "/record.json"
            let recordBefore = try Data(contentsOf: URL(fileURLWithPath: recordPath))
            Durability.injectedFailures.withLock { $0[recordPath] = ENOSPC }
            defer { Durability.injectedFailures.withLock { $0[recordPath] = nil } }
            await #expect(throws: CacheError.io(path: recordPath, reason: String(cString: strerror(ENOSPC)), diskFull: true)) {
                try await withInstaller(configuration) { try await $0.download(appId: "app-hello", force: true) }
            }
            #expect(server.requests.filter { $0.path == platform.zipPath }.count == 2, "the reinstall got as far as downloading")
            #expect(CacheTree(cache) == before, "the old version is back as it was, and nothing is left over")
            #expect(try Data(contentsOf: URL(fileURLWithPath: recordPath)) == recordBefore)
            let view = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            #expect(view.check(try #require(view.record(appId: "app-hello", versionId: "ver-1")), thorough: true).intact)
        }
    }

    @Test func reusesIntactCachedVersionWithoutASecondDownload() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let first = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }
            let second = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-1") }
            #expect(second.record.source == .cache)
            #expect(second.record.path == first.record.path)
            #expect(second.record.lastUsedAt >= first.record.lastUsedAt)
            #expect(server.requests.filter { $0.path == platform.zipPath }.count == 1)
            let forced = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", force: true) }
            #expect(forced.record.source == .network)
            #expect(server.requests.filter { $0.path == platform.zipPath }.count == 2)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    /// The synchronous reuse the command line answers a hit with gives what `download` gives, and
    /// nothing whenever `download` would do more than reuse the copy.
    @Test func reuseNowIsDownloadsHitAndNothingElse() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            // Each installer is shut down before the next: an install leaves deletions running until then.
            let installed = try await withInstaller(configuration) { installer in
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1") == nil, "not cached yet")
                return try await installer.download(appId: "app-hello", versionId: "ver-1")
            }
            try await withInstaller(configuration) { installer in
                // Without an installer, as the command line asks: the same copy.
                let asked = try #require(BundleInstaller.reuseIntactCopyNow(
                    configuration: configuration, executor: BlockingExecutor(), logger: Logger(label: "test"), appId: "app-hello", versionId: "ver-1"
                ))
                #expect(asked.record.path == installed.record.path && asked.record.source == .cache && asked.notes == installed.notes)
                var pinned = configuration
                pinned.trustedKeys = ["not a key"]
                #expect(BundleInstaller.reuseIntactCopyNow(
                    configuration: pinned, executor: BlockingExecutor(), logger: Logger(label: "test"), appId: "app-hello", versionId: "ver-1"
                ) == nil, "trusted keys are left to an installer to read, and to refuse")
                let now = try #require(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1"))
                let later = try await installer.download(appId: "app-hello", versionId: "ver-1")
                #expect(now.record.source == .cache && later.record.source == .cache)
                #expect(now.record.path == installed.record.path && now.record.sha256 == later.record.sha256 && now.notes == later.notes)
                #expect(now.record.lastUsedAt >= installed.record.lastUsedAt)
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "../ver-1") == nil)

                try writeTestFile(installed.record.path + "/index.html", Array("tampered".utf8))
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1") == nil, "a damaged copy is download's to repair")
                #expect(try await installer.download(appId: "app-hello", versionId: "ver-1").record.repairedAt != nil)
            }
            try await withInstaller(configuration) { installer in
                let leftover = cache + "/tmp/\(configuration.cacheNamespace.key)@app-hello@ver-9"
                try FileManager.default.createDirectory(atPath: leftover, withIntermediateDirectories: true)
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1") == nil, "leftovers are download's to sweep")
                try FileManager.default.removeItem(atPath: leftover)
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1") != nil)
            }
            configuration.retention = RetentionPolicy(previousVersions: 1, automatic: true)
            try await withInstaller(configuration) { installer in
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1") == nil, "automatic retention prunes after a use")
            }
            configuration.retention.automatic = false
            configuration.offline = true
            try await withInstaller(configuration) { installer in
                #expect(installer.reuseIntactCopyNow(appId: "app-hello", versionId: "ver-1") == nil, "offline, any namespace's copy will do")
            }
        }
    }

    @Test func concurrentRequestsInOneProcessShareOneDownload() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ request in
            var response = platform.fixture.handle(request)
            if request.path == platform.zipPath { response.delay = .milliseconds(200) }
            return response
        }) { server in
            // The five that wait take their turns after the first install: under a loaded test run (every
            // suite at once, a disk slow to sync) that can take longer than the usual 20 s.
            var configuration = makeConfiguration(server, cache: cache)
            configuration.lockTimeout = .seconds(180)
            let records = try await withInstaller(configuration) { installer in
                try await withThrowingTaskGroup(of: InstallRecord.self) { group in
                    for _ in 0..<6 { group.addTask { try await installer.download(appId: "app-hello", versionId: "ver-1").record } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(Set(records.map(\.path)).count == 1)
            #expect(server.requests.filter { $0.path == platform.zipPath }.count == 1)
        }
    }

    @Test func tamperedBytesAreRefusedAndTheCacheIsUnchanged() async throws {
        var platform = try SignedPlatform()
        platform.fixture.blobs[platform.zipPath] = try BundleFactory.zip(BundleFactory.helloFiles.merging(["js/app.js": "steal()"]) { $1 })
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let before = CacheSnapshot(cache)
            let error = await #expect(throws: SignatureError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") } }
            #expect(error?.category == .badData)
            #expect(CacheSnapshot(cache) == before)
        }
    }

    @Test func bundleSignedWithAnotherKeyIsRefused() async throws {
        let platform = try SignedPlatform(signWith: try SigningKey.generate())
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            await #expect(throws: SignatureError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") } }
            #expect(CacheSnapshot(cache).files.isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    @Test func missingSignatureIsRefusedWhenRequiredAndRecordedWhenAdvisory() async throws {
        var platform = try SignedPlatform()
        platform.fixture.apps[0].versions[0].signature = nil
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let error = await #expect(throws: SignatureError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") } }
            #expect(error == .missingSignature(versionId: "ver-1"))
            #expect(CacheSnapshot(cache).files.isEmpty)

            let advisory = makeConfiguration(server, cache: cache, policy: .advisory)
            let outcome = try await withInstaller(advisory) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .unverified)
            #expect(!outcome.notes.isEmpty)
            let later = try await withInstaller(advisory) { try await $0.load(appId: "app-hello") }
            #expect(later.notes.contains { $0.contains("unverified") }, "every later use warns")
        }
    }

    @Test func badSignatureUnderAdvisoryIsInstalledAsFailed() async throws {
        let platform = try SignedPlatform(signWith: try SigningKey.generate())
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache, policy: .advisory)) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .failed)
            #expect(outcome.record.signatureDetail?.contains("does not match") == true)
        }
    }

    @Test func keysAreCachedAndKeptWhenAVerificationFails() async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", BundleFactory.helloFiles), ("ver-2", "2.0.0", BundleFactory.helloFiles)])
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-1") }
            _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-2") }
            #expect(server.requests.filter { $0.path == "/keys/key-1" }.count == 1, "the second install reuses the cached key")
        }
        // The platform rotated key-1: the stored key no longer verifies, so the key is fetched again; the
        // stored one stays until an install with the fresh one commits.
        let rotated = try SignedPlatform(versions: [("ver-3", "3.0.0", BundleFactory.helloFiles)])
        let store = KeyStore(directory: cache + "/keys/test", lifetime: .seconds(3600))
        let stale = try SigningKey.generate().publicKey
        store.store(PublicKeyRecord(id: "key-1", ecKey: stale.ecKey))
        try await withTestServer({ [rotated] in rotated.fixture.handle($0) }) { server in
            let version = rotated.fixture.apps[0].versions[0]
            let digest = SHA256Digest.hash(rotated.fixture.blobs[rotated.zipPath]!)
            let outcome = try await withClient(server) { client in
                await SignatureVerifier(trusted: try TrustedKeys([]), keyStore: store, platform: client)
                    .check(signature: version.signature, keyId: "key-1", versionId: "ver-3", sha256: digest)
            }
            #expect(outcome.status == .verified)
            #expect(server.requests.map(\.path) == ["/keys/key-1"])
            #expect(store.record(id: "key-1")?.ecKey == stale.ecKey, "a failed check leaves the stored key")
            #expect(outcome.fetchedKey?.ecKey == rotated.key.publicKey.ecKey, "the fresh key is handed back, to keep once the install commits")
        }
    }

    @Test func aKeyThatCannotBeFetchedFailsTheSignatureCheck() async throws {
        var platform = try SignedPlatform()
        platform.fixture.keys = [:]
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let error = await #expect(throws: SignatureError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") } }
            guard case .keyUnavailable(let keyId, _)? = error else {
                Issue.record("expected keyUnavailable, got \(String(describing: error))")
                return
            }
            #expect(keyId == "key-1")
            #expect(CacheSnapshot(cache).files.isEmpty)
        }
    }

    /// The key is parsed while the bundle downloads: what parsing finds still decides, and nothing is kept.
    @Test(arguments: ["not base64 of a key", "its PEM form is another key"])
    func aPlatformKeyThatDoesNotParseOrWhoseFormsDisagreeFailsTheSignatureCheck(served: String) async throws {
        var platform = try SignedPlatform()
        let disagreeing = served == "its PEM form is another key"
        platform.fixture.keys["key-1"] = disagreeing
            ? (ecKey: platform.key.publicKey.ecKey, pemKey: try SigningKey.generate().publicKey.pem) : (ecKey: "bm90IGEga2V5", pemKey: nil)
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let error = await #expect(throws: SignatureError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") } }
            switch error {
            case .keyFormsDisagree(let keyId)? where disagreeing: #expect(keyId == "key-1")
            case .invalidPublicKey(let keyId, _)? where !disagreeing: #expect(keyId == "key-1")
            default: Issue.record("unexpected \(String(describing: error))")
            }
            #expect(!FileManager.default.fileExists(atPath: cache + "/bundles"), "nothing is installed")
            let keptKeys = (FileManager.default.enumerator(atPath: cache + "/keys")?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".json") }
            #expect(keptKeys.isEmpty, "no key is kept")
        }
    }

    @Test func pinnedKeysRefuseOthers() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            configuration.trustedKeys = [try SigningKey.generate().publicKey.keyId]
            let error = await #expect(throws: SignatureError.self) { try await withInstaller(configuration) { try await $0.download(appId: "app-hello") } }
            #expect(error == .untrustedKey(keyId: "key-1"))
            configuration.trustedKeys = [platform.key.publicKey.pem]
            let outcome = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .verified)
        }
    }

    /// How a zip's first answer breaks off halfway.
    enum Cut: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The connection closes.
        case closed
        /// Nothing more comes: the read timeout ends it.
        case stalled

        var testDescription: String { rawValue }
    }

    @Test(arguments: Transport.allCases, Cut.allCases)
    func aDownloadCutMidwayResumesWithARangeRequest(transport: Transport, cut: Cut) async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", BundleFactory.helloFiles.merging(["big.bin": String(repeating: "0123456789abcdef", count: 40_000)]) { $1 })])
        let zipRequests = Counter()
        try await withTestServer({ request in
            var response = platform.fixture.handle(request)
            if request.path == platform.zipPath, zipRequests.next() == 1 {
                let half = response.body.count / 2
                response.action = cut == .closed ? .truncate(half) : .partialThenStall(half)
            }
            return response
        }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            configuration.network.readTimeout = .milliseconds(300)
            let outcome = try await withInstaller(configuration, connections: transport.connections) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .verified)
            #expect(outcome.record.sha256 == SHA256Digest.hash(platform.fixture.blobs[platform.zipPath]!).hexString)
            let requests = server.requests.filter { $0.path == platform.zipPath }
            #expect(requests.count == 2)
            let range = try #require(requests.last?.header("Range"), "the half that came is kept")
            #expect(range.hasPrefix("bytes=") && range != "bytes=0-")
            #expect(requests.last?.header("If-Range") != nil)
        }
    }

    @Test(arguments: Transport.allCases)
    func aServerThatIgnoresRangeMakesTheDownloadStartOver(transport: Transport) async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", BundleFactory.helloFiles.merging(["big.bin": String(repeating: "0123456789abcdef", count: 40_000)]) { $1 })])
        let zipRequests = Counter()
        try await withTestServer({ [platform] request in
            var response = platform.fixture.handle(request)
            guard request.path == platform.zipPath else { return response }
            if zipRequests.next() == 1 {
                response.action = .truncate(response.body.count / 2)
                return response
            }
            // No Range support: the whole file again, with 200.
            return StubResponse(status: 200, headers: [("Content-Type", "application/zip")], body: platform.fixture.blobs[platform.zipPath]!)
        }) { server in
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache), connections: transport.connections) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .verified, "the digest started over with the bytes")
            #expect(outcome.record.sha256 == SHA256Digest.hash(platform.fixture.blobs[platform.zipPath]!).hexString)
            #expect(server.requests.filter { $0.path == platform.zipPath }.count == 2)
        }
    }

    @Test(arguments: Transport.allCases)
    func aBundleLargerThanTheLimitIsRefused(transport: Transport) async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            configuration.maxDownloadBytes = 100
            let error = await #expect(throws: DownloadError.self) { try await withInstaller(configuration, connections: transport.connections) { try await $0.download(appId: "app-hello") } }
            #expect(error?.category == .badData)
            #expect(CacheSnapshot(cache).files.isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    @Test func automaticRetentionPrunesAfterADownload() async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1", BundleFactory.helloFiles), ("ver-2", "2", BundleFactory.helloFiles), ("ver-3", "3", BundleFactory.helloFiles)])
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            configuration.retention = RetentionPolicy(previousVersions: 1, automatic: true)
            for version in ["ver-1", "ver-2"] {
                _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: version) }
            }
            let outcome = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-3") }
            #expect(outcome.notes.contains { $0.contains("pruned 1") })
            let view = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            #expect(Set(view.records().map(\.versionId)) == ["ver-2", "ver-3"])
            configuration.retention.automatic = false
            _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-1") }
            #expect(view.records().count == 3, "downloads never evict on their own")
        }
    }

    @Test(arguments: Transport.allCases)
    func missingZipIsUnavailableAndLeavesNothing(transport: Transport) async throws {
        var platform = try SignedPlatform()
        platform.fixture.blobs = [:]
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let error = await #expect(throws: DownloadError.self) { try await withInstaller(makeConfiguration(server, cache: cache), connections: transport.connections) { try await $0.download(appId: "app-hello") } }
            #expect(error?.category == .unavailable)
            #expect(CacheSnapshot(cache).files.isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    @Test func aZipOnAConnectionOfItsOwnFollowsARedirectAndReadsAChunkedBody() async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", BundleFactory.helloFiles.merging(["big.bin": String(repeating: "0123456789abcdef", count: 40_000)]) { $1 })])
        let zip = try #require(platform.fixture.blobs[platform.zipPath])
        // Chunks of growing odd sizes, sent in pieces that split sizes, data and line ends anywhere.
        var wire = Array(DirectHTTPTests.head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked").utf8)
        var (offset, size) = (0, 1)
        while offset < zip.count {
            let count = min(size, zip.count - offset)
            wire += Array("\(String(count, radix: 16));x=y\r\n".utf8) + zip[offset..<offset + count] + Array("\r\n".utf8)
            (offset, size) = (offset + count, size * 7 + 13)
        }
        wire += Array("0\r\nX-Trailer: 1\r\n\r\n".utf8)
        let pieces = stride(from: 0, to: wire.count, by: 65_521).map { Array(wire[$0..<min($0 + 65_521, wire.count)]) }
        let raw = RawHTTPServer { _ in .init(pieces: pieces) }
        defer { raw.stop() }
        try await withTestServer({ [platform] request in
            guard request.path == platform.zipPath else { return platform.fixture.handle(request) }
            return StubResponse(status: 302, headers: [("Location", "http://127.0.0.1:\(raw.port)/elsewhere/bundle.zip?token=1")])
        }) { server in
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache), connections: Transport.perRequest.connections) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .verified)
            #expect(outcome.record.sha256 == SHA256Digest.hash(zip).hexString)
            let request = try #require(raw.requests.first)
            #expect(request.hasPrefix("GET /elsewhere/bundle.zip?token=1 HTTP/1.1\r\n"))
            #expect(request.contains("Connection: close"), "fetched on a connection of its own, not through AsyncHTTPClient")
        }
    }

    @Test func hostileZipIsRefusedAndLeavesNothing() async throws {
        var platform = try SignedPlatform()
        let hostile = try BundleFactory.sign(RawZip([.file("index.html"), .file("../../escape.js")]).bytes, versionId: "ver-1", key: platform.key)
        platform.fixture.blobs[platform.zipPath] = hostile.zip
        platform.fixture.apps[0].versions[0].signature = hostile.signature
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let error = await #expect(throws: ArchiveError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") } }
            #expect(error?.category == .badData)
            #expect(CacheSnapshot(cache).files.isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: cache + "/escape.js"))
        }
    }

    @Test func damageIsFoundAndLoadReinstalls() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let record = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }.record
            try writeTestFile(record.path + "/js/app.js", "tampered")
            try FileManager.default.removeItem(atPath: record.path + "/css/app.css")
            try writeTestFile(record.path + "/added.js", "new")
            let cacheView = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            #expect(cacheView.check(record, thorough: true).problems == ["added: added.js", "changed: js/app.js", "missing: css/app.css"])
            #expect(cacheView.check(record).problems == ["added: added.js", "changed: js/app.js", "missing: css/app.css"])
            try FileManager.default.createDirectory(atPath: record.path + "/js/new", withIntermediateDirectories: false)
            try writeTestFile(record.path + "/js/new/x.js", "x")
            #expect(cacheView.check(record).problems.contains("added: js/new"), "a folder added deep down is found by the quick check")
            #expect(cacheView.check(record, thorough: true).problems.contains("added: js/new/x.js"))

            // Without its kept zip the version cannot be repaired offline.
            let keptZip = try #require(cacheView.keptZipPath(record))
            try FileManager.default.removeItem(atPath: keptZip)
            var offline = configuration
            offline.offline = true
            let error = await #expect(throws: CacheError.self) { try await withInstaller(offline) { try await $0.load(appId: "app-hello", versionId: "ver-1") } }
            #expect(error?.category == .badData)

            let repaired = try await withInstaller(configuration) { try await $0.load(appId: "app-hello") }
            #expect(repaired.record.source == .network)
            #expect(cacheView.check(repaired.record, thorough: true).intact)
        }
    }

    /// Rewrites the stored record of `appId`/`versionId` in `cache` through `change`.
    private func editStoredRecord(_ cacheView: BundleCache, appId: String, versionId: String, _ change: (inout [String: Any]) -> Void) throws {
        let path = cacheView.versionDirectory(appId: appId, versionId: versionId) + "/record.json"
        var stored = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        change(&stored)
        try writeTestFile(path, JSONSerialization.data(withJSONObject: stored))
    }

    @Test func aFirstInstallWaitsForNoDiskAndALaterBootChecksEveryByteOnce() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let installed = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }.record
            let boot = try #require(Durability.currentBoot)
            let cacheView = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            let version = cacheView.versionDirectory(appId: "app-hello", versionId: "ver-1")
            #expect(cacheView.record(appId: "app-hello", versionId: "ver-1")?.unsyncedBoot == boot)
            #expect(!String(decoding: try JSONEncoder().encode(installed), as: UTF8.self).contains("unsyncedBoot"), "it stays in record.json")

            // A power cut can leave a file's size and change time right over bytes that never reached the
            // disk: here, a list whose digest for js/app.js is not the file's, made the record's own.
            let original = try Data(contentsOf: URL(fileURLWithPath: version + "/files.list"))
            var list = try #require(BundleFileList(decoding: original))
            let index = try #require(list.files.firstIndex { $0.path == "js/app.js" })
            list.files[index].sha256 = String(repeating: "0", count: 64)
            try writeTestFile(version + "/files.list", list.encoded())
            try editStoredRecord(cacheView, appId: "app-hello", versionId: "ver-1") { $0["fileList"] = SHA256Digest.hash(list.encoded()).hexString }
            let sameBoot = try #require(cacheView.record(appId: "app-hello", versionId: "ver-1"))
            #expect(cacheView.check(sameBoot).intact, "the quick check cannot see it, which is why a later boot does not trust it")
            let earlierBoot = "00000000-0000-4000-8000-000000000000"
            try editStoredRecord(cacheView, appId: "app-hello", versionId: "ver-1") { $0["unsyncedBoot"] = earlierBoot }
            let afterReboot = try #require(cacheView.record(appId: "app-hello", versionId: "ver-1"))
            #expect(afterReboot.needsBootCheck)
            #expect(cacheView.check(afterReboot).problems == ["changed: js/app.js"])
            #expect(cacheView.record(appId: "app-hello", versionId: "ver-1")?.unsyncedBoot == earlierBoot, "a damaged version is not marked")

            // Found whole, it is marked so and checked quickly from then on; a record that changed meanwhile is not marked.
            try writeTestFile(version + "/files.list", original)
            try editStoredRecord(cacheView, appId: "app-hello", versionId: "ver-1") { $0["fileList"] = SHA256Digest.hash(original).hexString }
            var stale = try #require(cacheView.record(appId: "app-hello", versionId: "ver-1"))
            stale.installedAt = stale.installedAt.addingTimeInterval(-1)
            #expect(cacheView.check(stale).intact)
            #expect(cacheView.record(appId: "app-hello", versionId: "ver-1")?.unsyncedBoot == earlierBoot)
            let whole = try #require(cacheView.record(appId: "app-hello", versionId: "ver-1"))
            #expect(cacheView.check(whole).intact)
            let marked = try #require(cacheView.record(appId: "app-hello", versionId: "ver-1"))
            #expect(marked.unsyncedBoot == nil && !marked.needsBootCheck)
            #expect(marked.fileListDigest == whole.fileListDigest && marked.installedAt == whole.installedAt && marked.sha256 == whole.sha256)
            // `cache verify` marks it too, under the lock it holds.
            try editStoredRecord(cacheView, appId: "app-hello", versionId: "ver-1") { $0["unsyncedBoot"] = earlierBoot }
            #expect(try await cacheView.verify(appId: "app-hello").map(\.report.intact) == [true])
            #expect(cacheView.record(appId: "app-hello", versionId: "ver-1")?.unsyncedBoot == nil)

            // A version replaced (--force) is replaced only by one on disk: its record names no boot.
            let reinstalled = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", force: true) }.record
            #expect(reinstalled.source == .network)
            #expect(cacheView.record(appId: "app-hello", versionId: "ver-1")?.unsyncedBoot == nil)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    @Test func aVersionALaterBootHasNotFoundWholeSharesNoFile() async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", BundleFactory.helloFiles), ("ver-2", "2.0.0", BundleFactory.helloFiles)])
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let cacheView = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            let first = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-1") }.record
            try editStoredRecord(cacheView, appId: "app-hello", versionId: "ver-1") { $0["unsyncedBoot"] = "00000000-0000-4000-8000-000000000000" }
            func inode(_ path: String) -> ino_t {
                var info = stat()
                return lstat(path, &info) == 0 ? info.st_ino : 0
            }
            let second = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-2") }.record
            #expect(inode(second.path + "/index.html") != inode(first.path + "/index.html"), "its files may be stale under their recorded change times")
            #expect(cacheView.check(second, thorough: true).intact)

            // Once found whole, it shares again.
            #expect(try await cacheView.remove(appId: "app-hello", versionId: "ver-2").count == 1)
            #expect(cacheView.check(try #require(cacheView.record(appId: "app-hello", versionId: "ver-1"))).intact)
            let again = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-2") }.record
            #expect(inode(again.path + "/index.html") == inode(first.path + "/index.html"))
        }
    }

    @Test func quickCheckOfABigBundleFindsEachKindOfDamage() async throws {
        // Enough entries for the quick check to take its status calls on two threads.
        var files = BundleFactory.helloFiles
        for index in 0..<400 { files["lib/d\(index % 40)/m\(index).js"] = "module \(index)" }
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", files)])
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let record = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }.record
            let cacheView = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            #expect(cacheView.check(record).intact)
            try writeTestFile(record.path + "/lib/d1/m1.js", "module 9")   // same size, new bytes
            try writeTestFile(record.path + "/lib/d2/m2.js", "longer than before")
            try FileManager.default.removeItem(atPath: record.path + "/lib/d3/m3.js")
            try writeTestFile(record.path + "/lib/d39/extra.js", "x")
            try FileManager.default.removeItem(atPath: record.path + "/lib/d4")
            let expected = ["added: lib/d39/extra.js", "changed: lib/d1/m1.js", "changed: lib/d2/m2.js", "missing: lib/d3/m3.js"]
                + (0..<10).map { "missing: lib/d4/m\(4 + 40 * $0).js" }
            #expect(cacheView.check(record).problems == expected.sorted())
            #expect(cacheView.check(record, thorough: true).problems == expected.sorted())
            // A list changed since install is refused whatever the status calls (run alongside its
            // digest's check) found.
            let listPath = String(record.path.dropLast("/bundle".count)) + "/files.list"
            let list = try String(contentsOfFile: listPath, encoding: .utf8)
            try writeTestFile(listPath, list.replacingOccurrences(of: "lib/d3/m3.js", with: "lib/d3/m3.jz"))
            #expect(cacheView.check(record).problems == ["the install-time file list was changed or cut short"])
            #expect(cacheView.check(record, thorough: true).problems == ["the install-time file list was changed or cut short"])
        }
    }

    @Test func loadFallsBackToTheNewestIntactCachedVersionWhenThePlatformIsDown() async throws {
        let platform = try SignedPlatform()
        let down = NIOLockedValueBox(false)
        try await withTestServer({ request in
            down.withLockedValue { $0 } ? .error(503, "maintenance") : platform.fixture.handle(request)
        }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }
            down.withLockedValue { $0 = true }
            let outcome = try await withInstaller(configuration) { try await $0.load(appId: "app-hello") }
            #expect(outcome.record.versionId == "ver-1")
            #expect(outcome.record.source == .cache)
            #expect(outcome.notes.first?.contains("unavailable") == true)
            #expect(CacheSnapshot(cache).files.count > 0, "a 5xx never deletes anything")
        }
    }

    /// What damages the newest cached version before a load with the platform unreachable.
    enum Damage: String, CaseIterable, Sendable {
        case fileChanged, fileMissing, keptZipFailsItsCheck
    }

    @Test(arguments: Damage.allCases)
    func anUnreachablePlatformRepairsTheNewestVersionFromItsKeptZipAsOfflineDoes(damage: Damage) async throws {
        var v2 = BundleFactory.helloFiles
        v2["js/two.js"] = "console.log('two')"
        let platform = try SignedPlatform(versions: [("ver-1", "1.0.0", BundleFactory.helloFiles), ("ver-2", "2.0.0", v2)])
        let closed = LoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        let cache = self.cache
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: "ver-1") }
            let newest = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }.record
            #expect(newest.versionId == "ver-2")
            let view = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            switch damage {
            case .fileChanged:
                chmod(newest.path + "/js/app.js", 0o644)
                try writeTestFile(newest.path + "/js/app.js", Array("tampered".utf8))
            case .fileMissing:
                try FileManager.default.removeItem(atPath: newest.path + "/css/app.css")
            case .keptZipFailsItsCheck:
                try FileManager.default.removeItem(atPath: newest.path + "/js/two.js")
                let zip = try #require(view.keptZipPath(newest))
                chmod(zip, 0o644)
                var bytes = try #require(FileManager.default.contents(atPath: zip).map { [UInt8]($0) })
                bytes[40] ^= 0x01
                try writeTestFile(zip, bytes)
            }
            #expect(!view.check(newest).intact)
            let requests = server.requests.count

            // The platform's address refuses connections; the cache is the configured platform's.
            let outcome = try await withInstaller(configuration, platformAt: closed.port) { try await $0.load(appId: "app-hello") }
            #expect(server.requests.count == requests, "nothing reached the platform")
            #expect(outcome.notes.first?.contains("the platform is unavailable") == true, "\(outcome.notes)")
            #expect(outcome.notes.first?.contains("connection refused") == true, "\(outcome.notes)")
            let stored = try #require(view.record(appId: "app-hello", versionId: "ver-2"))
            switch damage {
            case .fileChanged, .fileMissing:
                #expect(outcome.record.versionId == "ver-2")
                #expect(outcome.notes.contains { $0.contains("repaired it from its kept zip") }, "\(outcome.notes)")
                #expect(stored.repairedAt != nil)
                #expect(view.check(stored, thorough: true).intact)
                let older = try #require(view.record(appId: "app-hello", versionId: "ver-1"))
                #expect(view.check(older, thorough: true).intact, "a file shared with ver-1 is repaired there too")
            case .keptZipFailsItsCheck:
                #expect(outcome.record.versionId == "ver-1")
                #expect(outcome.notes.first?.contains("cached version ver-2 is damaged and its kept zip cannot repair it") == true, "\(outcome.notes)")
                #expect(outcome.notes.first?.hasSuffix("using cached version ver-1") == true, "\(outcome.notes)")
                #expect(stored.repairedAt == nil)
                #expect(!view.check(stored).intact, "nothing was installed over it")
            }

            // A given version is repaired from its kept zip by a download too, with no platform.
            if damage != .keptZipFailsItsCheck {
                try FileManager.default.removeItem(atPath: stored.path + "/index.html")
                let again = try await withInstaller(configuration, platformAt: closed.port) { try await $0.download(appId: "app-hello", versionId: "ver-2") }
                #expect(again.notes.first?.contains("repaired it from its kept zip") == true, "\(again.notes)")
                #expect(view.check(again.record, thorough: true).intact)
            }
        }
    }

    @Test func offlineAnswersFromTheCacheOnly() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            configuration.offline = true
            await #expect(throws: CacheError.notCached(appId: "app-hello", versionId: nil)) { try await withInstaller(configuration) { try await $0.download(appId: "app-hello") } }
            #expect(server.requests.isEmpty)
            configuration.offline = false
            _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello") }
            let count = server.requests.count
            configuration.offline = true
            let outcome = try await withInstaller(configuration) { try await $0.load(appId: "app-hello") }
            #expect(outcome.record.versionId == "ver-1")
            #expect(server.requests.count == count)
        }
    }

    @Test func pruneKeepsTheMostRecentlyUsedAndRemoveDeletes() async throws {
        let platform = try SignedPlatform(versions: [("ver-1", "1", BundleFactory.helloFiles), ("ver-2", "2", BundleFactory.helloFiles), ("ver-3", "3", BundleFactory.helloFiles)])
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            for version in ["ver-1", "ver-2", "ver-3"] {
                _ = try await withInstaller(configuration) { try await $0.download(appId: "app-hello", versionId: version) }
            }
            _ = try await withInstaller(configuration) { try await $0.load(appId: "app-hello", versionId: "ver-1") }
            let cacheView = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
            let pruned = try await cacheView.prune(keep: 2, maxBytes: nil)
            #expect(pruned.map(\.versionId) == ["ver-2"])
            #expect(Set(cacheView.records().map(\.versionId)) == ["ver-1", "ver-3"])
            let bySize = try await cacheView.prune(keep: nil, maxBytes: 1)
            #expect(bySize.map(\.versionId) == ["ver-3", "ver-1"])
            #expect(cacheView.records().isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
            await #expect(throws: CacheError.self) { try await cacheView.remove(appId: "app-hello") }
        }
    }

    @Test func localBundleInstallChecksTheSignature() async throws {
        let key = try SigningKey.generate()
        let signed = try BundleFactory.sign(try BundleFactory.zip(BundleFactory.helloFiles), versionId: "v-local", key: key)
        let zip = try TemporaryDirectory.make().appendingPathComponent("b.zip").path
        try writeTestFile(zip, Data(signed.zip))
        let configuration = MiniAppConfiguration(cacheDirectory: cache)
        let installer = try BundleInstaller(configuration: configuration, platform: nil, executor: testExecutor)
        let outcome = try await installer.install(bundleAt: zip, appId: "app-local", versionId: "v-local", versionTag: "9", signature: signed.signature, publicKey: key.publicKey)
        #expect(outcome.record.source == .bundle)
        #expect(outcome.record.signature == .verified)
        await #expect(throws: SignatureError.self) {
            try await installer.install(bundleAt: zip, appId: "app-local", versionId: "v-other", signature: signed.signature, publicKey: key.publicKey)
        }
        await #expect(throws: SignatureError.missingSignature(versionId: "v-x")) {
            try await installer.install(bundleAt: zip, appId: "app-local", versionId: "v-x")
        }
        await #expect(throws: BundleFileError.self) {
            try await installer.install(bundleAt: zip + ".missing", appId: "app-local", versionId: "v-y")
        }
        await installer.shutdown()
        #expect(CacheSnapshot(cache).leftovers.isEmpty)
    }

    @Test(arguments: Transport.allCases)
    func cancellingTheCallerCancelsItsInstallAndLeavesTheCacheAsItWas(transport: Transport) async throws {
        var platform = try SignedPlatform()
        let zipPath = platform.zipPath
        let zipRequested = NIOLockedValueBox(false)
        let zip = platform.fixture.blobs[zipPath]!
        platform.fixture.blobs[zipPath] = nil
        try await withTestServer({ [platform] request in
            guard request.path == zipPath else { return platform.fixture.handle(request) }
            zipRequested.withLockedValue { $0 = true }
            return StubResponse(headers: [("Content-Length", "\(zip.count)")], body: zip, action: .partialThenStall(zip.count / 2))
        }) { server in
            let before = CacheSnapshot(cache)
            try await withInstaller(makeConfiguration(server, cache: cache), connections: transport.connections) { installer in
                let install = Task { try await installer.download(appId: "app-hello") }
                while !zipRequested.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
                try await Task.sleep(for: .milliseconds(50))
                install.cancel()
                // Without cancellation reaching the download, the stalled zip would end in a read
                // timeout, an unavailable error, not a cancellation.
                await #expect(throws: CancellationError.self) { try await install.value }
            }
            #expect(CacheSnapshot(cache) == before)
        }
    }

    @Test func aCancelledInstallOfALocalBundleLeavesTheCacheAsItWas() async throws {
        let key = try SigningKey.generate()
        let signed = try BundleFactory.sign(try BundleFactory.zip(BundleFactory.helloFiles), versionId: "v-1", key: key)
        let zip = cache + "/../local-\(UUID().uuidString).zip"
        try writeTestFile(zip, Data(signed.zip))
        let configuration = MiniAppConfiguration(platform: nil, projectId: nil, cacheDirectory: cache)
        let before = CacheSnapshot(cache)
        let installer = try BundleInstaller(configuration: configuration, platform: nil, executor: testExecutor)
        let install = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await installer.install(bundleAt: zip, appId: "app-local", versionId: "v-1", signature: signed.signature, publicKey: key.publicKey)
        }
        await #expect(throws: CancellationError.self) { try await install.value }
        await installer.shutdown()
        #expect(CacheSnapshot(cache) == before)
    }

    @Test func aHostsOwnHTTPClientIsUsedAndLeftOpen() async throws {
        let platform = try SignedPlatform()
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let configuration = makeConfiguration(server, cache: cache)
            let platformClient = try PlatformClient(configuration: configuration, httpClient: client, executor: testExecutor)
            let installer = try BundleInstaller(configuration: configuration, platform: platformClient, httpClient: client, executor: testExecutor)
            let first = try await installer.download(appId: "app-hello")
            await installer.shutdown()
            try await platformClient.shutdown()
            // Still the host's: it was not shut down with the installer and the platform client.
            let again = try BundleInstaller(configuration: configuration, platform: PlatformClient(configuration: configuration, httpClient: client, executor: testExecutor), httpClient: client, executor: testExecutor)
            let second = try await again.download(appId: "app-hello", force: true)
            await again.shutdown()
            #expect(first.record.signature == .verified && second.record.versionId == first.record.versionId)
            #expect(second.record.source == .network)
        }
        try await client.shutdown()
    }

    @Test func anInstallerMadeFromTheConfigurationAloneOpensAndClosesItsPlatform() async throws {
        let platform = try SignedPlatform()
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let installer = try BundleInstaller(configuration: makeConfiguration(server, cache: cache), executor: testExecutor)
            #expect(installer.platform is PlatformClient)
            let outcome = try await installer.download(appId: "app-hello")
            #expect(outcome.record.signature == .verified)
            await installer.shutdown()
        }
        let offline = try BundleInstaller(configuration: MiniAppConfiguration(platform: nil, projectId: nil, cacheDirectory: cache), executor: testExecutor)
        #expect(offline.platform == nil)
        await offline.shutdown()
    }

    @Test func zipRedirectsAreFollowedByTheDownloaderItself() async throws {
        var platform = try SignedPlatform()
        let zipPath = platform.zipPath
        let zip = platform.fixture.blobs[zipPath]!
        platform.fixture.blobs[zipPath] = nil
        platform.fixture.blobs["/moved/app.zip"] = zip
        try await withTestServer({ [platform] request in
            guard request.path == zipPath else { return platform.fixture.handle(request) }
            return StubResponse(status: 302, headers: [("Location", "/moved/app.zip"), ("Content-Length", "0")])
        }) { server in
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .verified)
        }
    }

    @Test func killedInstallLeftoversAreSweptByTheNextRun() async throws {
        let platform = try SignedPlatform()
        let configuration = MiniAppConfiguration(platform: .remote(URL(string: "http://127.0.0.1:9/")!), projectId: "proj-1", cacheDirectory: cache)
        let view = BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor)
        try view.prepare()
        // What a process killed at various points leaves: a scratch folder, a version folder without record, a half-emptied trash entry.
        try FileManager.default.createDirectory(atPath: view.scratchDirectory(appId: "app-hello", versionId: "ver-1") + "/stage/bundle", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: view.versionDirectory(appId: "app-hello", versionId: "ver-1") + "/bundle", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: view.trashDirectory + "/x.1234.deleting/deep", withIntermediateDirectories: true)
        #expect(view.records().isEmpty, "a version without a record does not exist")
        try await withTestServer({ [platform] in platform.fixture.handle($0) }) { server in
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") }
            #expect(outcome.record.signature == .verified)
        }
        view.sweep()
        view.emptyTrash(orphans: true)
        #expect(CacheSnapshot(cache).leftovers.isEmpty)
    }
}

@Suite struct MultiFileManifestTests {
    /// An old-style platform listing every file of the bundle under `ver-<id>/`.
    func fixture() -> PlatformFixture {
        var fixture = PlatformFixture(apps: [FixtureApp(id: "app-old", versions: [
            FixtureVersion(versionId: "v1", files: ["cdn/ver-v1/index.html", "cdn/ver-v1/js/app.js"], signature: "MEUCIQ=="),
        ])])
        fixture.blobs = ["/cdn/ver-v1/index.html": Array("<html>".utf8), "/cdn/ver-v1/js/app.js": Array("go()".utf8)]
        return fixture
    }

    @Test func severalFilesInstallOnlyUnderTheAdvisoryPolicy() async throws {
        let cache = try TemporaryDirectory.make().path
        let fixture = fixture()
        try await withTestServer({ fixture.handle($0) }) { server in
            let error = await #expect(throws: SignatureError.self) { try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-old") } }
            #expect(error == .multiFileManifest(versionId: "v1"))
            #expect(CacheSnapshot(cache).files.isEmpty)
            let outcome = try await withInstaller(makeConfiguration(server, cache: cache, policy: .advisory)) { try await $0.download(appId: "app-old") }
            #expect(outcome.record.signature == .unverified)
            #expect(try String(contentsOfFile: outcome.record.path + "/js/app.js", encoding: .utf8) == "go()")
            let view = BundleCache(root: cache, namespace: makeConfiguration(server, cache: cache).cacheNamespace, executor: testExecutor)
            #expect(view.check(outcome.record, thorough: true).intact)
        }
    }

    @Test func filesThatArriveOneByOneObeyTheExtractionLimitsAndRules() async throws {
        let cache = try TemporaryDirectory.make().path
        var fixture = fixture()
        try await withTestServer({ [fixture] in fixture.handle($0) }) { server in
            func attempt(_ limits: ExtractionLimits) async -> ArchiveError? {
                var configuration = makeConfiguration(server, cache: cache, policy: .advisory)
                configuration.extraction = limits
                let error = await #expect(throws: ArchiveError.self) { try await withInstaller(configuration) { try await $0.download(appId: "app-old") } }
                #expect(CacheSnapshot(cache).files.isEmpty && CacheSnapshot(cache).leftovers.isEmpty)
                return error
            }
            // index.html, js/ and js/app.js: three entries; six bytes, then four.
            #expect(await attempt(ExtractionLimits(maxEntries: 2)) == .tooManyEntries(limit: 2))
            #expect(await attempt(ExtractionLimits(maxUnpackedBytes: 8)) == .tooLarge(limitBytes: 8))
        }
        fixture.apps[0].versions[0].files.append("cdn/ver-v1/js/app.js")
        try await withTestServer({ [fixture] in fixture.handle($0) }) { server in
            let error = await #expect(throws: ArchiveError.self) { try await withInstaller(makeConfiguration(server, cache: cache, policy: .advisory)) { try await $0.download(appId: "app-old") } }
            #expect(error == .duplicateEntry(entry: "js/app.js"))
        }
        fixture.apps[0].versions[0].files = ["cdn/ver-v1/index.html", "cdn/ver-v1/js", "cdn/ver-v1/js/app.js"]
        fixture.blobs["/cdn/ver-v1/js"] = Array("x".utf8)
        try await withTestServer({ [fixture] in fixture.handle($0) }) { server in
            let error = await #expect(throws: ArchiveError.self) { try await withInstaller(makeConfiguration(server, cache: cache, policy: .advisory)) { try await $0.download(appId: "app-old") } }
            #expect(error == .duplicateEntry(entry: "js/app.js"))
            #expect(CacheSnapshot(cache).files.isEmpty)
        }
    }
}

@Suite struct ManyDownloadsTests {
    @Test func severalAppsDownloadWithBoundedParallelismAndIndependentFailures() async throws {
        let root = try TemporaryDirectory.make().path
        let key = try SigningKey.generate()
        let publisher = RegistryPublisher(registry: Registry(root: root + "/registry"), executor: testExecutor)
        let folder = try BundleFactory.folder(BundleFactory.helloFiles)
        for index in 0..<5 {
            _ = try await publisher.publish(PublishRequest(source: folder, appId: "app-\(index)", versionTag: "1.0", key: key))
        }
        let configuration = MiniAppConfiguration(platform: .registry(path: root + "/registry"), cacheDirectory: root + "/cache")
        let platform = try Platforms.open(configuration, executor: testExecutor)
        let installer = try BundleInstaller(configuration: configuration, platform: platform, executor: testExecutor)
        let ids = ["app-0", "app-1", "missing-app", "app-2", "app-3", "app-4"]
        let results = await installer.download(appIds: ids, maxConcurrent: 3)
        await installer.shutdown()
        #expect(results.map(\.appId) == ids)
        for (appId, result) in results {
            switch result {
            case .success(let outcome):
                #expect(appId != "missing-app")
                #expect(outcome.record.id == appId)
                #expect(outcome.record.signature == .verified)
            case .failure(let error):
                #expect(appId == "missing-app")
                #expect((error as? any CategorizedError)?.category == .notFound)
            }
        }
        #expect(installer.cache.records().count == 5)
    }
}

@Suite struct FileLockTests {
    @Test func aLockFileExistsOnlyWhileItsLockIsHeld() async throws {
        let path = try TemporaryDirectory.make().path + "/locks/v.lock"
        let busy: @Sendable () -> CacheError = { .busy(appId: "a", versionId: "v", waitedSeconds: 5) }
        var first: FileLock? = try await FileLock.acquire(path, timeout: .seconds(5), executor: testExecutor, onTimeout: busy)
        #expect(access(path, F_OK) == 0)
        let waiter = Task { () async throws -> Bool in
            let second = try await FileLock.acquire(path, timeout: .seconds(5), executor: testExecutor, onTimeout: busy)
            // The waiter opened the file the first holder deleted; it must hold the lock on the file the
            // path names now, so that a third comer waits for it.
            let named = access(path, F_OK) == 0
            let exclusive = FileLock.tryAcquire(path) == nil
            withExtendedLifetime(second) {}
            return named && exclusive
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(first != nil)
        first = nil
        #expect(try await waiter.value)
        #expect(access(path, F_OK) != 0, "no lock file outlives its use")
    }
}
