import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import Testing

/// Answers framed against RFC 9112 end `miniapp list` and `miniapp download` with 65 or 69 and one
/// error line, nothing installed; the CLI reads plain `http://` platforms on connections of its own
/// (the other transport is tested in MiniAppKitTests' HostileFramingTests). Run as a subprocess, so a
/// crash is a failed test.
@Suite struct HostileFramingCommandTests {
    let work = try! TemporaryDirectory.make().path

    static let list = Array(#"[{"id": "app-hello", "displayName": "Hello", "version": {"versionId": "ver-1", "versionTag": "1.0.0"}}]"#.utf8)

    /// Runs `miniapp list` against a server that answers `wire` to every request.
    func list(_ wire: [UInt8]) async throws -> CommandResult {
        let server = RawHTTPServer { _ in .init(pieces: [wire]) }
        defer { server.stop() }
        return try await CommandRunner.run(["list"], environment: [
            "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1",
            "MINIAPP_CONFIG": try fastConfigFile(), "MINIAPP_CACHE_DIR": work + "/cache",
        ], timeoutSeconds: 120)
    }

    /// Runs `miniapp download app-hello` against a platform that redirects the zip to a server that
    /// frames it with `frame`.
    func download(_ frame: @escaping @Sendable ([UInt8]) -> [UInt8]) async throws -> CommandResult {
        let app = try ServedApp()
        let zip = try #require(app.fixture.blobs[app.zipPath])
        let raw = RawHTTPServer { _ in .init(pieces: [frame(zip)]) }
        defer { raw.stop() }
        return try await withTestServer({ [app] request in
            guard request.path == app.zipPath else { return app.fixture.handle(request) }
            return StubResponse(status: 302, headers: [("Location", "http://127.0.0.1:\(raw.port)/bundle.zip")])
        }) { server in
            try await runCached(server, cache: work + "/cache", ["download", "app-hello"])
        }
    }

    /// One error line, 65 or 69.
    static func expectRefused(_ result: CommandResult, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect([65, 69].contains(result.status), "status \(result.status), stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderrLines.count == 1 && result.stderrLines.first?.hasPrefix("error: ") == true, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test(arguments: HostileFraming.allCases)
    func aHostileListAnswerEndsListWithOneError(framing: HostileFraming) async throws {
        let result = try await list(framing.wire(Self.list))
        Self.expectRefused(result)
        #expect(result.stdout.isEmpty)
    }

    @Test(arguments: HostileFraming.allCases)
    func aHostileZipAnswerEndsDownloadWithOneErrorAndInstallsNothing(framing: HostileFraming) async throws {
        let result = try await download { framing.wire($0) }
        Self.expectRefused(result)
        #expect(CacheSnapshot(work + "/cache").files.isEmpty)
        #expect(CacheSnapshot(work + "/cache").leftovers.isEmpty)
    }

    @Test(arguments: ValidFraming.allCases)
    func validFramingsAreReadByListAndDownload(framing: ValidFraming) async throws {
        let listed = try await list(framing.wire(Self.list))
        #expect(listed.status == 0, "stderr: \(listed.stderr)")
        #expect(listed.stdout.contains("app-hello"))
        let downloaded = try await download { framing.wire($0) }
        #expect(downloaded.status == 0, "stderr: \(downloaded.stderr)")
        #expect(CacheSnapshot(work + "/cache").files.keys.contains { $0.hasSuffix("/index.html") })
    }
}
