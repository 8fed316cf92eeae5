import Foundation
import MiniAppTestSupport
import NIOConcurrencyHelpers
import NIOPosix
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

/// Fast retries so that failure tests end quickly; a budget that a loaded machine does not run out of
/// (these tests count attempts, not seconds).
/// Quick retries, and patient timeouts: the whole suite runs at once on two cores, where an answer can
/// wait seconds for a thread (tests of timeouts and budgets set their own).
let fastNetwork = NetworkSettings(
    connectTimeout: .seconds(30), readTimeout: .seconds(30),
    retry: RetryPolicy(maxAttempts: 4, initialDelay: .milliseconds(10), maxDelay: .milliseconds(40), totalBudget: .seconds(180), maxRetryAfter: .seconds(2))
)

let sampleMetadata = #"""
{"reqPermissions": [{"name": "rakuten.miniapp.user.USER_NAME", "reason": "to greet you"}],
 "optPermissions": [{"name": "rakuten.miniapp.device.LOCATION"}, {"name": "com.example.CUSTOM", "reason": "why not"}],
 "accessTokenPermissions": [{"audience": "rae", "scopes": ["idinfo_read_openid"]}],
 "customMetaData": {"theme": "dark"}}
"""#

let sampleFixture = PlatformFixture(
    projectId: "proj-1",
    apps: [
        FixtureApp(id: "app-hello", displayName: "Hello", icon: "https://cdn.example/icon.png", versions: [
            FixtureVersion(versionId: "ver-3", versionTag: "3.0.0-beta", files: ["https://cdn.example/min-app-hello/ver-3/app.zip"], preview: true),
            FixtureVersion(versionId: "ver-2", versionTag: "2.0.0", files: ["https://cdn.example/min-app-hello/ver-2/app.zip"], publicKeyId: "key-1", signature: "MEUCIQ==", metadataJSON: sampleMetadata),
            FixtureVersion(versionId: "ver-1", versionTag: "1.0.0", files: ["https://cdn.example/min-app-hello/ver-1/app.zip"]),
        ]),
        FixtureApp(id: "app-weather", displayName: "Weather", icon: "not a url", versions: [
            FixtureVersion(versionId: "w-1", versionTag: "0.1.0"),
        ]),
        FixtureApp(id: "app-draft", versions: [FixtureVersion(versionId: "d-1", preview: true)]),
    ],
    keys: ["key-1": (ecKey: "BASE64", pemKey: "PEM")],
    previewCodes: ["tok-1": "app-hello"]
)

/// The executor of the tests' requests on connections of their own: not the shared one, which the
/// whole suite's installs and stores use at the same time (a request holds a thread while it waits).
let directTestExecutor = BlockingExecutor(poolThreads: 4)

/// The two ways a client reaches its platform; tests of the transport run over both.
enum Transport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case pooled, perRequest

    var connections: PlatformConnections {
        switch self {
        case .pooled: .pooled
        case .perRequest: .perRequest
        }
    }

    var testDescription: String { rawValue }
}

func withClient<Result: Sendable>(
    _ server: TestHTTPServer, transport: Transport = .pooled, projectId: String = "proj-1", key: String? = nil, preview: Bool = false,
    network: NetworkSettings = fastNetwork, _ body: (PlatformClient) async throws -> Result
) async throws -> Result {
    let client = PlatformClient(baseURL: server.baseURL, projectId: projectId, subscriptionKey: key, preview: preview, network: network, executor: testExecutor, connections: transport.connections)
    do {
        let result = try await body(client)
        try await client.shutdown()
        return result
    } catch {
        try await client.shutdown()
        throw error
    }
}

/// Counts calls, for scripted failures ("the first n requests fail").
final class Counter: Sendable {
    private let box = NIOLockedValueBox(0)
    func next() -> Int { box.withLockedValue { $0 += 1; return $0 } }
}

@Suite struct PlatformClientTests {
    @Test(arguments: Transport.allCases)
    func listsPublishedAppsWithLenientOptionalFields(transport: Transport) async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            let apps = try await withClient(server, transport: transport) { try await $0.listApps() }
            #expect(apps.map(\.id) == ["app-hello", "app-weather"])
            #expect(apps[0].version == AppVersion(versionId: "ver-2", versionTag: "2.0.0"))
            #expect(apps[0].icon == URL(string: "https://cdn.example/icon.png"))
            #expect(apps[1].icon == nil, "an icon that is not a URL is dropped, not fatal")
            #expect(server.requests.map(\.uri) == ["/host/proj-1/miniapps/"])
        }
    }

    @Test(arguments: Transport.allCases)
    func previewModeUsesThePreviewPaths(transport: Transport) async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            try await withClient(server, transport: transport, preview: true) { client in
                let apps = try await client.listApps()
                #expect(apps.map(\.version.versionId) == ["ver-3", "w-1", "d-1"])
                let latest = try await client.latestVersion(ofApp: "app-hello")
                #expect(latest.version.versionId == "ver-3")
                _ = try await client.fileManifest(appId: "app-hello", versionId: "ver-3")
                _ = try await client.metadata(appId: "app-hello", versionId: "ver-3", language: "en")
            }
            #expect(server.requests.map(\.uri) == [
                "/host/proj-1/miniapps/preview",
                "/host/proj-1/miniapps/preview?miniAppId=app-hello",
                "/host/proj-1/miniapp/app-hello/version/ver-3/preview/manifest",
                "/host/proj-1/miniapp/app-hello/version/ver-3/preview/metadata?lang=en",
            ])
        }
    }

    @Test(arguments: [("plain-key", "ras-plain-key"), ("ras-prefixed", "ras-prefixed")], Transport.allCases)
    func sendsTheDocumentedHeaders(pair: (key: String, expected: String), transport: Transport) async throws {
        let (key, expected) = pair
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            _ = try await withClient(server, transport: transport, key: key) { try await $0.listApps() }
            let request = try #require(server.requests.first)
            #expect(request.header("apiKey") == expected)
            #expect(request.header("User-Agent") == "miniapp/\(PackageInfo.version)")
            #expect(request.header("ras-app-id") == "proj-1")
            #expect(request.header("ras-sdk-name") == "miniapp")
            #expect(request.header("ras-sdk-version") == PackageInfo.version)
        }
    }

    @Test(arguments: Transport.allCases)
    func omitsTheKeyHeaderWhenTheKeyIsEmpty(transport: Transport) async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            _ = try await withClient(server, transport: transport, key: "") { try await $0.listApps() }
            #expect(server.requests.first?.header("apiKey") == nil)
        }
    }

    @Test(arguments: Transport.allCases)
    func latestVersionAndGivenVersions(transport: Transport) async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            try await withClient(server, transport: transport) { client in
                #expect(try await client.latestVersion(ofApp: "app-hello").version.versionTag == "2.0.0")
                let older = try await client.app("app-hello", version: "ver-1")
                #expect(older.version == AppVersion(versionId: "ver-1", versionTag: nil))
                #expect(older.displayName == "Hello")
                await #expect(throws: PlatformError.self) { try await client.app("app-hello", version: "ver-9") }
                let error = await #expect(throws: PlatformError.self) { try await client.latestVersion(ofApp: "app-unknown") }
                #expect(error?.category == .notFound)
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func fileManifestCarriesSignatureAndKeyId(transport: Transport) async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            let manifest = try await withClient(server, transport: transport) { try await $0.fileManifest(appId: "app-hello", versionId: "ver-2") }
            #expect(manifest.urls == [URL(string: "https://cdn.example/min-app-hello/ver-2/app.zip")!])
            #expect(manifest.publicKeyId == "key-1")
            #expect(manifest.signature == "MEUCIQ==")
        }
    }

    @Test func metadataDecodesEveryPart() async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            let manifest = try await withClient(server) { try await $0.metadata(appId: "app-hello", versionId: "ver-2", language: "ja-JP") }
            #expect(manifest.reqPermissions == [PermissionDeclaration(name: "rakuten.miniapp.user.USER_NAME", reason: "to greet you")])
            #expect(manifest.optPermissions.map(\.known) == [.location, nil])
            #expect(manifest.accessTokenPermissions == [AccessTokenPermission(audience: "rae", scopes: ["idinfo_read_openid"])])
            #expect(manifest.customMetaData == ["theme": "dark"])
            #expect(server.requests.last?.query["lang"] == "ja-JP")
        }
    }

    /// The query's hand-written percent-encoder writes what Foundation's writes, on every scalar up to
    /// U+07FF, a few beyond, and mixed texts.
    @Test func queryEncodingMatchesFoundation() {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+;")
        var texts = (0..<0x800).compactMap { Unicode.Scalar($0).map { String(Character($0)) } }
        texts += ["\u{FFFD}", "\u{FEFF}", "\u{1F600}", "\u{10FFFF}", "e\u{301}", "ja-JP", "a b&c=d+e;f#g%h/i?j:k@l", "漢字 🇯🇵 \u{7F}\u{85}", ""]
        for text in texts {
            #expect(PlatformClient.queryEncoded(text) == text.addingPercentEncoding(withAllowedCharacters: allowed), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test func publicKeyAndPreviewCode() async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            try await withClient(server) { client in
                #expect(try await client.publicKey(id: "key-1") == PublicKeyRecord(id: "key-1", ecKey: "BASE64", pemKey: "PEM"))
                let code = try await client.previewCode(token: "tok-1")
                #expect(code.miniapp.id == "app-hello")
                #expect(code.host?.id == "proj-1")
            }
            #expect(server.requests.first?.uri == "/keys/key-1")
        }
    }

    @Test func previewCodeAcceptsBothKeySpellings() async throws {
        let body = #"{"miniapp": {"id": "a", "version": {"versionId": "v"}}, "host": {"id": "h", "subscriptionkey": "k"}}"#
        try await withTestServer({ _ in .json(body) }) { server in
            let code = try await withClient(server) { try await $0.previewCode(token: "t") }
            #expect(code.host == PreviewCode.Host(id: "h", subscriptionKey: "k"))
        }
    }

    @Test func keyAnswerNamingAnotherKeyIsInvalid() async throws {
        try await withTestServer({ _ in .json(#"{"id": "other", "ecKey": "x"}"#) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server) { try await $0.publicKey(id: "key-1") } }
            #expect(error?.category == .badData)
        }
    }

    @Test(arguments: [
        (400, ErrorCategory.usage), (401, .notAllowed), (403, .notAllowed), (404, .notFound), (418, .badData),
    ], Transport.allCases)
    func errorStatusesMapToTheirCategoryWithoutRetry(expected: (status: Int, category: ErrorCategory), transport: Transport) async throws {
        let (status, category) = expected
        try await withTestServer({ _ in .error(status, "nope") }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport) { try await $0.listApps() } }
            #expect(error?.category == category)
            #expect(server.requests.count == 1)
        }
    }

    @Test(arguments: Transport.allCases)
    func unauthorizedMessageComesFromEitherBodyShape(transport: Transport) async throws {
        let body = #"{"error": "invalid_client", "error_description": "bad key"}"#
        try await withTestServer({ _ in .json(body, status: 401) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport) { try await $0.listApps() } }
            #expect(error == .unauthorized(resource: "the app list", status: 401, message: "bad key"))
        }
    }

    @Test(arguments: Transport.allCases)
    func serverErrorBurstIsRetriedUntilSuccess(transport: Transport) async throws {
        let counter = Counter()
        try await withTestServer({ request in
            counter.next() <= 2 ? .error(503, "busy") : sampleFixture.handle(request)
        }) { server in
            let apps = try await withClient(server, transport: transport) { try await $0.listApps() }
            #expect(apps.count == 2)
            #expect(server.requests.count == 3)
        }
    }

    @Test(arguments: Transport.allCases)
    func persistentServerErrorFailsAsUnavailableAfterTheAttempts(transport: Transport) async throws {
        try await withTestServer({ _ in .error(500, "down") }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport) { try await $0.listApps() } }
            #expect(error == .serverError(resource: "the app list", status: 500, attempts: 4))
            #expect(error?.category == .unavailable)
            #expect(server.requests.count == 4)
        }
    }

    @Test(arguments: Transport.allCases)
    func rateLimitHonoursRetryAfter(transport: Transport) async throws {
        let counter = Counter()
        try await withTestServer({ request in
            counter.next() == 1 ? .error(429, "slow down", headers: [("Retry-After", "1")]) : sampleFixture.handle(request)
        }) { server in
            let start = ContinuousClock.now
            _ = try await withClient(server, transport: transport) { try await $0.listApps() }
            #expect(ContinuousClock.now - start >= .milliseconds(900), "the client waited as Retry-After asked")
            #expect(server.requests.count == 2)
        }
    }

    @Test(arguments: Transport.allCases)
    func rateLimitBeyondTheCapFailsAtOnce(transport: Transport) async throws {
        try await withTestServer({ _ in .error(429, "later", headers: [("Retry-After", "3600")]) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport) { try await $0.listApps() } }
            #expect(error == .rateLimited(resource: "the app list", retryAfterSeconds: 3600))
            #expect(server.requests.count == 1)
        }
    }

    @Test(arguments: Transport.allCases)
    func droppedConnectionIsRetried(transport: Transport) async throws {
        let counter = Counter()
        try await withTestServer({ request in
            counter.next() == 1 ? StubResponse(action: .drop) : sampleFixture.handle(request)
        }) { server in
            let apps = try await withClient(server, transport: transport) { try await $0.listApps() }
            #expect(apps.count == 2)
        }
    }

    @Test(arguments: Transport.allCases)
    func truncatedAnswerIsRetried(transport: Transport) async throws {
        let counter = Counter()
        try await withTestServer({ request in
            if counter.next() == 1 {
                var response = sampleFixture.handle(request)
                response.action = .truncate(5)
                return response
            }
            return sampleFixture.handle(request)
        }) { server in
            let apps = try await withClient(server, transport: transport) { try await $0.listApps() }
            #expect(apps.count == 2)
        }
    }

    @Test(arguments: Transport.allCases)
    func stalledServerTimesOutAsUnreachable(transport: Transport) async throws {
        var network = fastNetwork
        network.readTimeout = .milliseconds(200)
        network.retry.maxAttempts = 2
        try await withTestServer({ _ in StubResponse(action: .stall) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport, network: network) { try await $0.listApps() } }
            guard case .unreachable(_, _, let attempts)? = error else {
                Issue.record("expected unreachable, got \(String(describing: error))")
                return
            }
            #expect(attempts == 2)
        }
    }

    @Test(arguments: Transport.allCases)
    func slowButCompleteAnswerSucceeds(transport: Transport) async throws {
        try await withTestServer({ request in
            var response = sampleFixture.handle(request)
            response.delay = .milliseconds(300)
            return response
        }) { server in
            let apps = try await withClient(server, transport: transport) { try await $0.listApps() }
            #expect(apps.count == 2)
        }
    }

    @Test(arguments: Transport.allCases)
    func closedPortFailsAsUnreachable(transport: Transport) async throws {
        // A port held and not listening: refused, and no other test's server can take it meanwhile (a
        // stopped server's port once went to another test's server answering 500, which was retried).
        let closed = LoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        // Another test's server may have answered on this port earlier in the process: the pooled
        // transport would then skip its probe and wait out the connect timeout (a loaded full run saw
        // a timeout, retried, instead of the refusal).
        LazyHTTPClient.forget("127.0.0.1:\(closed.port)")
        let client = PlatformClient(baseURL: URL(string: "http://127.0.0.1:\(closed.port)/")!, projectId: "p", network: fastNetwork, executor: testExecutor, connections: transport.connections)
        let error = await #expect(throws: PlatformError.self) { try await client.listApps() }
        try await client.shutdown()
        #expect(error?.category == .unavailable)
        // Refused is certain: no retry.
        guard case .unreachable(_, let reason, let attempts)? = error else { return }
        #expect(attempts == 1)
        #expect(reason.contains("refused"))
    }

    @Test(arguments: Transport.allCases)
    func totalBudgetBoundsTheRetries(transport: Transport) async throws {
        var network = fastNetwork
        network.retry = RetryPolicy(maxAttempts: 100, initialDelay: .milliseconds(100), maxDelay: .milliseconds(100), totalBudget: .milliseconds(700))
        try await withTestServer({ _ in .error(502) }) { server in
            await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport, network: network) { try await $0.listApps() } }
            // 100 attempts were allowed; a budget of 0.7 s at 0.1 s apart leaves room for about 8.
            #expect(server.requests.count < 20)
        }
    }

    @Test(arguments: [
        "not json", "{\"an\": \"object\"}", "[{\"id\": 5, \"version\": {\"versionId\": \"v\"}}]",
        "[{\"id\": \"a\"}]", "[{\"id\": \"../etc\", \"version\": {\"versionId\": \"v\"}}]",
        "[{\"id\": \"a\", \"version\": {\"versionId\": \"v/../../x\"}}]", "", "\u{FF}\u{FE}[]", "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]",
        String(repeating: "[", count: 100_000), String(repeating: #"{"a":"#, count: 50_000),
    ])
    func malformedListAnswersAreInvalidResponses(body: String) async throws {
        try await withTestServer({ _ in .json(body) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server) { try await $0.listApps() } }
            #expect(error?.category == .badData)
        }
    }

    @Test func oneMalformedRecordDoesNotFailTheList() async throws {
        let body = #"[{"id": "good", "version": {"versionId": "v1"}}, {"id": "bad"}, {"id": "fine", "displayName": 7, "version": {"versionId": "v2", "versionTag": 3}}]"#
        try await withTestServer({ _ in .json(body) }) { server in
            let apps = try await withClient(server) { try await $0.listApps() }
            #expect(apps.map(\.id) == ["good", "fine"])
            #expect(apps[1].displayName == nil)
            #expect(apps[1].version.versionTag == nil)
        }
    }

    @Test(arguments: [
        #"{"manifest": []}"#, #"{"manifest": "x"}"#, #"{"manifest": ["relative/path.zip"]}"#, #"{"publicKeyId": "k"}"#, "[]",
    ])
    func malformedFileManifestsAreInvalidResponses(body: String) async throws {
        try await withTestServer({ _ in .json(body) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server) { try await $0.fileManifest(appId: "a", versionId: "v") } }
            #expect(error?.category == .badData)
        }
    }

    @Test(arguments: [
        #"{}"#, #"{"bundleManifest": []}"#, #"{"bundleManifest": {"reqPermissions": [{"reason": "x"}]}}"#,
        #"{"bundleManifest": {"reqPermissions": "USER_NAME"}}"#, #"{"bundleManifest": {"customMetaData": {"k": 1}}}"#,
        #"{"bundleManifest": {"accessTokenPermissions": [{"audience": "rae"}]}}"#,
    ])
    func malformedMetadataIsAnInvalidResponse(body: String) async throws {
        try await withTestServer({ _ in .json(body) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server) { try await $0.metadata(appId: "a", versionId: "v", language: "en") } }
            #expect(error?.category == .badData)
        }
    }

    @Test(arguments: Transport.allCases)
    func oversizedAnswerIsRefused(transport: Transport) async throws {
        var network = fastNetwork
        network.maxResponseBytes = 1024
        let huge = "[" + Array(repeating: #"{"id": "a", "version": {"versionId": "v"}}"#, count: 200).joined(separator: ",") + "]"
        try await withTestServer({ _ in .json(huge) }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport, network: network) { try await $0.listApps() } }
            #expect(error?.category == .badData)
        }
    }

    @Test(arguments: Transport.allCases)
    func errorTextNeverRepeatsTheSubscriptionKey(transport: Transport) async throws {
        try await withTestServer({ request in .error(403, "key \(request.header("apiKey") ?? "") is revoked") }) { server in
            let error = await #expect(throws: PlatformError.self) { try await withClient(server, transport: transport, key: "top-secret-123") { try await $0.listApps() } }
            let text = try #require(error?.description)
            #expect(!text.contains("top-secret-123"))
            #expect(text.contains("***"))
        }
    }

    @Test(arguments: ["../x", "a/b", "", ".hidden", String(repeating: "a", count: 200)])
    func unsafeIdsNeverReachTheNetwork(appId: String) async throws {
        try await withTestServer({ sampleFixture.handle($0) }) { server in
            await #expect(throws: IdentifierError.self) { try await withClient(server) { try await $0.latestVersion(ofApp: appId) } }
            #expect(server.requests.isEmpty)
        }
    }
}

/// Foundation's lenient decoding of a list, as ``PlatformClient`` did before the one-pass reader.
private struct FoundationElement: Decodable {
    let value: AppRecord?
    init(from decoder: any Decoder) throws { value = try? AppRecord(from: decoder) }
}

@Suite struct AppListReadingTests {
    /// Documents the one-pass reader takes, and documents it leaves to Foundation's decoder (`nil`):
    /// either way the records are Foundation's.
    @Test(arguments: [
        (#"[{"id": "a", "version": {"versionId": "v"}}, {"id": "../b", "version": {"versionId": "v"}}, 3, null, "x"]"#, true),
        (#"[{"id": "a", "id": "b", "displayName": 5, "displayName": "dup", "version": {"versionId": "v", "versionTag": ["x"]}}]"#, true),
        (#"[{"id": "a", "version": {"versionId": "v"}, "icon": "HTTPS://X.EXAMPLE/a b", "promotionalImageUrl": "ftp://x/y"}]"#, true),
        (#"[{"id": "a", "version": {"versionId": "v"}, "promotionalText": "\ud83d\ude00 \u0000 \/"}]"#, true),
        (#"[{"id": "a", "version": {"versionId": "v"}},]"#, false),
        (#"[{"id": "a", "version": {"versionId": "v"}, "n": 1e999}]"#, false),
        (#"[{"id": "a", "version": {"versionId": "v"}, "s": "\ud800"}]"#, false),
        ("[" + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "]", false),
        (#"{"id": "a"}"#, false),
        (#"[{"\u0069d": "a", "v\u0065rsion": {"versionId": "v"}}, {"id\n": "b", "version": {"versionId": "v"}}]"#, true),
        (#"[{"id": "a", "version": "v1", "version": {"versionId": "v"}}, {"id": "b", "version": {"versionId": 1, "versionId": "v"}}]"#, true),
        (#"[{"id": "a", "version": {"versionId": "v", "versionTag": "1", "versionTag": 2, "x": {}}, "icon": null, "icon": "https://x.example/"}]"#, true),
        (#"[{}, [], {"id": "a"}, {"version": {"versionId": "v"}}, {"id": "a", "version": {}}]"#, true),
        ("[{\"x\": " + String(repeating: "[", count: 254) + String(repeating: "]", count: 254) + #", "id": "a", "version": {"versionId": "v"}}]"#, true),
        ("[{\"x\": " + String(repeating: "[", count: 255) + String(repeating: "]", count: 255) + #", "id": "a", "version": {"versionId": "v"}}]"#, false),
        (#"[{"id": "a", "version": {"versionId": "v"}, "k\u0000": 1, "x": "\u00"}]"#, false),
        (#"[{"id": "a" "version": {"versionId": "v"}}]"#, false),
        ("[{\"id\": \"a\", \"version\": {\"versionId\": \"v\"}, \"tab\tkey\": 1}]", false),
    ])
    func theOnePassReaderGivesFoundationsRecordsOrLeavesTheDocumentToIt(document: String, taken: Bool) throws {
        let fast = AppRecord.listElements(Array(document.utf8))
        #expect((fast != nil) == taken)
        // Exactly the documents that the general reader takes as an array.
        guard case .array? = JSONReader.value(Array(document.utf8), maxDepth: 256) else {
            #expect(fast == nil)
            return
        }
        guard let fast else { return }
        let foundation = try JSONDecoder().decode([FoundationElement].self, from: Data(document.utf8)).map(\.value)
        #expect(fast == foundation)
    }

    /// The one-pass reader takes exactly the documents the general reader takes.
    @Test func invalidUTF8AnywhereIsLeftToFoundation() {
        for key in [[0xFF], [0xC3], [0xED, 0xA0, 0x80]] as [[UInt8]] {
            let document = Array(#"[{"id": "a", "version": {"versionId": "v"}, ""#.utf8) + key + Array(#"": 1}]"#.utf8)
            #expect(AppRecord.listElements(document) == nil)
            #expect(JSONReader.value(document, maxDepth: 256) == nil)
        }
    }
}
