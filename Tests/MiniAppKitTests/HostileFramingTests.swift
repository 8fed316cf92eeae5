import Foundation
import MiniAppTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

/// Answers framed against RFC 9112 (signed, `0x`, non-hex and 40-digit chunk sizes; signed, negative,
/// huge and conflicting lengths; unknown transfer codings; a missing chunk end, a short body) are
/// errors on the list request and on the zip request, over both transports; valid but unusual
/// framings are read exactly.
@Suite struct HostileFramingTests {
    let cache = try! TemporaryDirectory.make().path

    /// The list a raw server frames.
    static let list = Array(DirectHTTPTests.list.utf8)

    /// Lists the apps of a server that answers `wire` to every request.
    func listApps(_ wire: [UInt8], transport: Transport) async -> Result<[AppRecord], any Error> {
        let server = RawHTTPServer { _ in .init(pieces: [wire]) }
        defer { server.stop() }
        var network = fastNetwork
        network.retry.maxAttempts = 2
        let client = PlatformClient(baseURL: server.baseURL, projectId: "p", network: network, executor: testExecutor, connections: transport.connections)
        let result: Result<[AppRecord], any Error>
        do {
            result = .success(try await client.listApps())
        } catch {
            result = .failure(error)
        }
        try? await client.shutdown()
        return result
    }

    /// Downloads app-hello, whose zip the platform redirects to a raw server that frames it with `frame`.
    func download(transport: Transport, _ frame: @escaping @Sendable ([UInt8]) -> [UInt8]) async throws -> (Result<InstallOutcome, any Error>, zip: [UInt8]) {
        let platform = try SignedPlatform()
        let zip = try #require(platform.fixture.blobs[platform.zipPath])
        let raw = RawHTTPServer { _ in .init(pieces: [frame(zip)]) }
        defer { raw.stop() }
        return try await withTestServer({ [platform] request in
            guard request.path == platform.zipPath else { return platform.fixture.handle(request) }
            return StubResponse(status: 302, headers: [("Location", "http://127.0.0.1:\(raw.port)/bundle.zip")])
        }) { server in
            var configuration = makeConfiguration(server, cache: cache)
            configuration.network.retry.maxAttempts = 2
            do {
                return (.success(try await withInstaller(configuration, connections: transport.connections) { try await $0.download(appId: "app-hello") }), zip)
            } catch {
                return (.failure(error), zip)
            }
        }
    }

    @Test(arguments: HostileFraming.allCases, Transport.allCases)
    func aHostileListAnswerIsAnError(framing: HostileFraming, transport: Transport) async throws {
        let result = await listApps(framing.wire(Self.list), transport: transport)
        guard case .failure(let error as PlatformError) = result else {
            Issue.record("expected a platform error, got \(result)")
            return
        }
        #expect([.unavailable, .badData].contains(error.category), "\(error)")
    }

    @Test(arguments: HostileFraming.allCases, Transport.allCases)
    func aHostileZipAnswerIsAnErrorAndInstallsNothing(framing: HostileFraming, transport: Transport) async throws {
        let (result, _) = try await download(transport: transport) { framing.wire($0) }
        guard case .failure(let error as any CategorizedError) = result else {
            Issue.record("expected a categorized error, got \(result)")
            return
        }
        #expect([.unavailable, .badData].contains(error.category), "\(error)")
        #expect(CacheSnapshot(cache).files.isEmpty)
        #expect(CacheSnapshot(cache).leftovers.isEmpty)
    }

    @Test(arguments: ValidFraming.allCases, Transport.allCases)
    func aValidListAnswerIsReadExactly(framing: ValidFraming, transport: Transport) async throws {
        let result = await listApps(framing.wire(Self.list), transport: transport)
        #expect(try result.get().map(\.id) == ["app-1"])
    }

    @Test(arguments: ValidFraming.allCases, Transport.allCases)
    func aValidZipAnswerIsReadExactly(framing: ValidFraming, transport: Transport) async throws {
        let (result, zip) = try await download(transport: transport) { framing.wire($0) }
        let outcome = try result.get()
        #expect(outcome.record.signature == .verified)
        #expect(outcome.record.sha256 == SHA256Digest.hash(zip).hexString)
    }

    /// The body the decoder reads from a chunked answer whose one chunk has the size line `line` and
    /// `size` bytes of data, or the error it throws.
    func chunkedBody(line: String, size: Int) throws -> [UInt8] {
        let (decoder, _) = try HTTPAnswerDecoder.start(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"))
        let chunk = "\(line)\r\n" + String(repeating: "x", count: size) + "\r\n"
        let wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + (size == 0 ? "\(line)\r\n\r\n" : chunk + "0\r\n\r\n")
        try decoder.feed(ByteBuffer(string: wire))
        try decoder.close()
        var body: [UInt8] = []
        var ended = false
        while let part = decoder.nextPart() {
            switch part {
            case .head: continue
            case .body(let bytes): body += bytes.readableBytesView
            case .end: ended = true
            }
        }
        guard ended else { throw DirectHTTPError.closedEarly }
        return body
    }

    @Test(arguments: [
        ("1a", 0x1A), ("1A;name=value", 0x1A), ("1a;q=\"a;b\"", 0x1A), ("0000000000000001", 1),
        (String(repeating: "0", count: 4000) + "7", 7), ("0", 0),
    ])
    func chunkSizesOfTheGrammarAreRead(line: String, size: Int) throws {
        #expect(try chunkedBody(line: line, size: size).count == size)
    }

    @Test(arguments: [
        "-1", "+1a", "0x1a", "zz", "", "1 a", "1a x", "-0", String(repeating: "f", count: 40), "8000000000000000",
        String(repeating: "0", count: 10_000) + "1" + String(repeating: "0", count: 16),
    ])
    func chunkSizesOutsideTheGrammarAreRefused(line: String) {
        #expect(throws: DirectHTTPError.self) { try chunkedBody(line: line, size: 1) }
    }

    @Test(arguments: Transport.allCases)
    func aChunkSizeAfterTenThousandLeadingZerosIsReadExactlyOrRefused(transport: Transport) async throws {
        // Valid, but longer than a chunk line may be here: refused as such, or read exactly; never a crash.
        let wire = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(String(repeating: "0", count: 10_000))\(String(Self.list.count, radix: 16))\r\n".utf8)
            + Self.list + Array("\r\n0\r\n\r\n".utf8)
        switch await listApps(wire, transport: transport) {
        case .success(let apps):
            #expect(apps.map(\.id) == ["app-1"])
        case .failure(let error):
            guard case PlatformError.unreachable(_, let reason, _) = error else {
                Issue.record("expected unreachable, got \(error)")
                return
            }
            #expect(reason.contains("not valid HTTP/1.1"), "\(reason)")
        }
    }

    @Test(arguments: [
        (["7"], 7), (["007"], 7), (["7, 7"], 7), (["7", "7"], 7), (["9223372036854775807"], Int.max), ([String(repeating: "0", count: 100) + "5"], 5),
    ])
    func lengthsOfTheGrammarAreRead(values: [String], length: Int) throws {
        var headers = HTTPHeaders()
        for value in values { headers.add(name: "Content-Length", value: value) }
        #expect(try DirectHTTP.contentLength(headers) == length)
    }

    @Test(arguments: [
        ["-1"], ["+5"], ["5 5"], ["0x5"], [""], ["5,"], ["5", "6"], ["5, 6"], ["9223372036854775808"], ["99999999999999999999999"], ["5.0"],
    ])
    func lengthsOutsideTheGrammarAreRefused(values: [String]) {
        var headers = HTTPHeaders()
        for value in values { headers.add(name: "Content-Length", value: value) }
        #expect(throws: DirectHTTPError.self) { try DirectHTTP.contentLength(headers) }
    }

    @Test(arguments: [
        (["chunked"], true), (["Chunked"], true), (["gzip, chunked"], false), (["gzip", "chunked"], false), (["chunked, gzip"], false),
        (["identity"], false), (["chunked", "chunked"], false), ([""], false),
    ])
    func onlyChunkedAloneIsATransferCoding(codings: [String], accepted: Bool) throws {
        var headers = HTTPHeaders()
        for coding in codings { headers.add(name: "Transfer-Encoding", value: coding) }
        if accepted {
            guard case .chunked = try DirectHTTP.framing(status: 200, headers: headers) else {
                Issue.record("expected chunked")
                return
            }
            headers.add(name: "Content-Length", value: "5")
        }
        #expect(throws: DirectHTTPError.self) { try DirectHTTP.framing(status: 200, headers: headers) }
    }
}
