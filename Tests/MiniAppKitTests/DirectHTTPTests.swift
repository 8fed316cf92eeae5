import Foundation
import MiniAppTestSupport
import NIOPosix
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

/// A platform request on a connection of its own (``PlatformConnections/perRequest``),
/// against a server whose bytes are written by hand.
@Suite struct DirectHTTPTests {
    static let list = #"[{"id": "app-1", "version": {"versionId": "v-1"}}]"#

    /// Lists the apps of a raw server through a per-request client; the server is stopped afterwards.
    func listApps(
        _ answer: @escaping @Sendable (String) -> RawHTTPServer.Answer, path: String = "",
        network: NetworkSettings = fastNetwork, key: String? = nil
    ) async throws -> (Result<[AppRecord], any Error>, [String]) {
        let server = RawHTTPServer(answer)
        let client = PlatformClient(
            baseURL: URL(string: "http://127.0.0.1:\(server.port)/\(path)")!, projectId: "p", subscriptionKey: key,
            network: network, executor: directTestExecutor, connections: .perRequest)
        let result: Result<[AppRecord], any Error>
        do {
            result = .success(try await client.listApps())
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        server.stop()
        return (result, server.requests)
    }

    static func head(_ lines: String...) -> String {
        lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    @Test func sendsOneCompleteRequestUnderTheBasePath() async throws {
        let (result, requests) = try await listApps({ _ in .init(Self.head("HTTP/1.1 200 OK", "Content-Length: \(Self.list.utf8.count)") + Self.list) }, path: "api/v1/", key: "k")
        #expect(try result.get().map(\.id) == ["app-1"])
        let request = try #require(requests.first)
        let lines = request.components(separatedBy: "\r\n")
        #expect(lines.first == "GET /api/v1/host/p/miniapps/ HTTP/1.1")
        #expect(lines.contains { $0.hasPrefix("Host: 127.0.0.1:") })
        #expect(lines.contains("apiKey: ras-k"))
        #expect(lines.contains("ras-app-id: p"))
        #expect(lines.contains("Connection: close"))
    }

    @Test func chunkedBodiesSplitAnywhereAreJoined() async throws {
        let body = Array(Self.list.utf8)
        var wire = Array(Self.head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked").utf8)
        let first = body[..<10], second = body[10...]
        wire += Array(String(first.count, radix: 16).utf8) + Array(";name=value\r\n".utf8) + first + Array("\r\n".utf8)
        wire += Array(String(second.count, radix: 16, uppercase: true).utf8) + Array("\r\n".utf8) + second + Array("\r\n".utf8)
        wire += Array("0\r\nX-Trailer: yes\r\n\r\n".utf8)
        // One byte at a time: every state of the decoder meets the end of a read.
        let pieces = wire.map { [$0] }
        let (result, _) = try await listApps({ _ in .init(pieces: pieces, stall: true) })
        #expect(try result.get().map(\.id) == ["app-1"])
    }

    @Test func interimAnswersAreSkipped() async throws {
        let (result, _) = try await listApps({ _ in
            .init(Self.head("HTTP/1.1 100 Continue") + Self.head("HTTP/1.1 103 Early Hints", "Link: </a>") + Self.head("HTTP/1.1 200 OK", "Content-Length: \(Self.list.utf8.count)") + Self.list)
        })
        #expect(try result.get().map(\.id) == ["app-1"])
    }

    @Test func aBodyWithoutLengthEndsWithTheConnection() async throws {
        let (result, _) = try await listApps({ _ in .init(pieces: [Array(Self.head("HTTP/1.0 200 OK").utf8), Array(Self.list.utf8)]) })
        #expect(try result.get().map(\.id) == ["app-1"])
    }

    /// RFC 9112 lets a client take a list of one length repeated, or refuse it; llhttp (and so both
    /// transports) refuses it.
    @Test func aLengthListIsRefused() async throws {
        let (result, _) = try await listApps({ _ in .init(Self.head("HTTP/1.1 200 OK", "Content-Length: \(Self.list.utf8.count), \(Self.list.utf8.count)") + Self.list, stall: true) })
        #expect(throws: PlatformError.self) { try result.get() }
    }

    @Test(arguments: [
        Self.head("HTTP/1.1 200 OK", "Content-Length: 5", "Content-Length: 6") + "[]",
        Self.head("HTTP/2 200") + "[]",
        Self.head("ICY 200 OK") + "[]",
        Self.head("HTTP/1.1 2000 OK") + "[]",
        Self.head("HTTP/1.1 200 OK", " folded: line") + "[]",
        Self.head("HTTP/1.1 200 OK", "no colon") + "[]",
        Self.head("HTTP/1.1 200 OK", "Content-Length: -1") + "[]",
        Self.head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + "zz\r\n[]\r\n0\r\n\r\n",
        Self.head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + "2\r\n[]XX0\r\n\r\n",
        Self.head("HTTP/1.1 101 Switching Protocols", "Upgrade: x") + "[]",
        Self.head("HTTP/1.1 200 OK", "X-Big: " + String(repeating: "a", count: 70_000)) + "[]",
        Self.head("HTTP/1.1 200 OK", "Content-Length: 100") + "[]",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
        "",
    ])
    func brokenAnswersAreRetriedThenReportedAsUnreachable(wire: String) async throws {
        var network = fastNetwork
        network.retry.maxAttempts = 2
        let (result, requests) = try await listApps({ _ in .init(wire) }, network: network)
        #expect(throws: PlatformError.self) { try result.get() }
        guard case .failure(PlatformError.unreachable(_, _, let attempts)) = result else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
        #expect(attempts == 2)
        #expect(requests.count == 2)
    }

    @Test(arguments: [true, false])
    func anAnswerOverTheLimitIsRefusedWhateverItsFraming(chunked: Bool) async throws {
        var network = fastNetwork
        network.maxResponseBytes = 1000
        let big = "[" + Array(repeating: #"{"id": "a", "version": {"versionId": "v"}}"#, count: 100).joined(separator: ",") + "]"
        let wire = chunked
            ? Self.head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + String(big.utf8.count, radix: 16) + "\r\n" + big + "\r\n0\r\n\r\n"
            : Self.head("HTTP/1.1 200 OK") + big
        let (result, requests) = try await listApps({ _ in .init(wire) }, network: network)
        guard case .failure(let error as PlatformError) = result else {
            Issue.record("expected a platform error, got \(result)")
            return
        }
        #expect(error.category == .badData)
        #expect(requests.count == 1)
    }

    @Test func aKeyThatWouldSplitTheRequestIsNeverSent() async throws {
        let (result, requests) = try await listApps({ _ in .init(Self.head("HTTP/1.1 200 OK", "Content-Length: 2") + "[]") }, key: "k\r\nX-Injected: 1")
        guard case .failure(PlatformError.unreachable(_, let reason, let attempts)) = result else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
        #expect(reason.contains("line break"))
        #expect(!reason.contains("X-Injected"))
        #expect(attempts == 1)
        #expect(requests.isEmpty)
    }

    @Test func aNameThatDoesNotResolveFailsAtOnce() async throws {
        let client = PlatformClient(baseURL: URL(string: "http://no-such-host.invalid/")!, projectId: "p", network: fastNetwork, executor: directTestExecutor, connections: .perRequest)
        let error = await #expect(throws: PlatformError.self) { try await client.listApps() }
        try await client.shutdown()
        guard case .unreachable(_, let reason, let attempts)? = error else {
            Issue.record("expected unreachable, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("does not resolve"))
        #expect(attempts == 1)
    }

    @Test func localhostReachesAServerOnTheIPv4LoopbackOnly() async throws {
        let server = RawHTTPServer { _ in .init(Self.head("HTTP/1.1 200 OK", "Content-Length: \(Self.list.utf8.count)") + Self.list) }
        let client = PlatformClient(baseURL: URL(string: "http://localhost:\(server.port)")!, projectId: "p", network: fastNetwork, executor: directTestExecutor, connections: .perRequest)
        let apps = try await client.listApps()
        try await client.shutdown()
        server.stop()
        #expect(apps.map(\.id) == ["app-1"])
        #expect(server.requests.first?.contains("Host: localhost:\(server.port)\r\n") == true)
    }

    @Test(.timeLimit(.minutes(2)))
    func cancellingTheTaskEndsARequestThatWouldWaitForMinutes() async throws {
        let server = RawHTTPServer { _ in .init(Self.head("HTTP/1.1 200 OK", "Content-Length: 1000") + "[", stall: true) }
        var network = fastNetwork
        network.readTimeout = .seconds(600)
        network.connectTimeout = .seconds(600)
        let client = PlatformClient(baseURL: server.baseURL, projectId: "p", network: network, executor: directTestExecutor, connections: .perRequest)
        let task = Task { try await client.listApps() }
        while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        let result = await task.result
        try await client.shutdown()
        server.stop()
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func aZipURLGoesOnAConnectionOfItsOwnOnlyWhenPlainHTTP() throws {
        let plain = try #require(DirectEndpoint.resource(URL(string: "http://cdn.example:8080/a%20b/app.zip?sig=x%2By&e=1#part")!))
        #expect(plain.endpoint.host == "cdn.example" && plain.endpoint.port == 8080 && plain.endpoint.hostHeader == "cdn.example:8080")
        #expect(plain.target == "/a%20b/app.zip?sig=x%2By&e=1")
        let literal = try #require(DirectEndpoint.resource(URL(string: "http://[::1]:9/z")!))
        #expect(literal.endpoint.host == "::1" && literal.endpoint.hostHeader == "[::1]:9" && literal.target == "/z")
        #expect(DirectEndpoint.resource(URL(string: "http://h.example")!)?.target == "/")
        for url in ["https://cdn.example/app.zip", "http://user:pw@cdn.example/app.zip", "ftp://cdn.example/app.zip"] {
            #expect(DirectEndpoint.resource(URL(string: url)!) == nil, "\(url) is left to AsyncHTTPClient")
        }
    }

    @Test func anHTTPSPlatformIsLeftToAsyncHTTPClient() {
        let secure = PlatformClient(baseURL: URL(string: "https://platform.example/")!, projectId: "p", executor: directTestExecutor, connections: .perRequest)
        let plain = PlatformClient(baseURL: URL(string: "http://platform.example:8080/base")!, projectId: "p", executor: directTestExecutor, connections: .perRequest)
        let pooled = PlatformClient(baseURL: URL(string: "http://platform.example/")!, projectId: "p", executor: testExecutor)
        #expect(secure.direct == nil)
        #expect(pooled.direct == nil)
        #expect(plain.direct?.hostHeader == "platform.example:8080")
        #expect(plain.direct?.basePath == "/base/")
        #expect(DirectEndpoint(baseURL: URL(string: "http://[::1]:9/")!)?.hostHeader == "[::1]:9")
        #expect(DirectEndpoint(baseURL: URL(string: "http://[::1]:9/")!)?.host == "::1")
        #expect(DirectEndpoint(baseURL: URL(string: "http://user:pass@platform.example/")!) == nil)
        // The host as the URL spells it: an IDNA name as its `xn--` form, anything to decode left to AsyncHTTPClient.
        #expect(DirectEndpoint(baseURL: URL(string: "http://xn--bcher-kva.example:81/")!)?.hostHeader == "xn--bcher-kva.example:81")
        #expect(DirectEndpoint(baseURL: URL(string: "http://Platform.Example/")!)?.host == "Platform.Example")
        #expect(DirectEndpoint(baseURL: URL(string: "http://plat%66orm.example/")!) == nil)
        #expect(DirectEndpoint(baseURL: URL(string: "http://[fe80::1%25eth0]:9/")!) == nil)
        // Address literals skip the interface listing that names need (AI_ADDRCONFIG).
        #expect(DirectHTTP.isAddressLiteral("127.0.0.1") && DirectHTTP.isAddressLiteral("::1") && DirectHTTP.isAddressLiteral("fe80::1"))
        #expect(!DirectHTTP.isAddressLiteral("localhost") && !DirectHTTP.isAddressLiteral("127.1") && !DirectHTTP.isAddressLiteral("[::1]"))
        if let unicode = URL(string: "http://bücher.example/") {
            #expect(DirectEndpoint(baseURL: unicode).map { $0.host.utf8.allSatisfy { $0 < 0x80 } } ?? true)
        }
    }
}
