import AsyncHTTPClient
import Foundation
import MiniAppTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// The reference host service (Examples/HostService) end to end over HTTP, against the demo registry.
@Suite struct HostServiceTests {
    /// A started `miniapp-host` and the base URL it listens on.
    final class RunningHost: @unchecked Sendable {
        let process = Process()
        let url: String

        init(cache: String) async throws {
            let binary = CommandRunner.executable.deletingLastPathComponent().appendingPathComponent("miniapp-host")
            process.executableURL = binary
            process.environment = [
                "HOST_PLATFORM": repositoryRoot.appendingPathComponent("Manifests/demo/registry").path,
                "HOST_CACHE_DIR": cache, "PATH": "/usr/bin:/bin",
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // The first line names the URL; reading waits for the host to start, off the pool.
            let line = await offPool {
                var line = ""
                while !line.hasSuffix("\n") {
                    let byte = output.fileHandleForReading.readData(ofLength: 1)
                    guard !byte.isEmpty else { break }
                    line += String(decoding: byte, as: UTF8.self)
                }
                return line
            }
            guard let found = line.split(separator: " ").last.map({ String($0.dropLast()) }), found.hasPrefix("http://") else {
                process.terminate()
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the host did not start: \(line)"])
            }
            url = found
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    let cache = try! TemporaryDirectory.make().path

    func call(_ client: HTTPClient, _ method: HTTPMethod = .GET, _ url: String) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    @Test func listsInstallsGatesServesAndAnswersTheBridge() async throws {
        let host = try await RunningHost(cache: cache)
        defer { host.stop() }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            #expect(try await call(client, .GET, host.url + "health") == (200, "ok"))
            let apps = try await call(client, .GET, host.url + "apps")
            #expect(apps.status == 200 && apps.body.contains(#""id":"hello""#))

            // hello requires USER_NAME: refused, and its files are not served, until the user grants it.
            let refused = try await call(client, .POST, host.url + "apps/hello/load")
            #expect(refused.status == 403 && refused.body.contains("rakuten.miniapp.user.USER_NAME"), "\(refused)")
            #expect(try await call(client, .GET, host.url + "apps/hello/files/index.html").status == 403)
            #expect(try await call(client, .GET, host.url + "apps/hello/permissions/USER_NAME").body.contains(#""allowed":false"#))

            #expect(try await call(client, .POST, host.url + "apps/hello/permissions/USER_NAME/grant").status == 200)
            #expect(try await call(client, .GET, host.url + "apps/hello/permissions/USER_NAME").body.contains(#""allowed":true"#))
            let loaded = try await call(client, .POST, host.url + "apps/hello/load")
            #expect(loaded.status == 200 && loaded.body.contains(#""versionId":"hello-1-0-0""#), "\(loaded)")
            let page = try await call(client, .GET, host.url + "apps/hello/files/index.html")
            let cached = try String(contentsOfFile: try #require(firstFile(named: "index.html", under: cache)), encoding: .utf8)
            #expect(page.status == 200 && page.body == cached)
            #expect(try await call(client, .GET, host.url + "apps/hello/files/%2E%2E/record.json").status == 404)
            #expect(try await call(client, .GET, host.url + "apps/hello/files/nope.js").status == 404)

            // A denial closes the gate again.
            #expect(try await call(client, .POST, host.url + "apps/hello/permissions/USER_NAME/deny").status == 200)
            let closed = try await call(client, .GET, host.url + "apps/hello/files/index.html")
            #expect(closed.status == 403 && closed.body.contains("rakuten.miniapp.user.USER_NAME"))
            #expect(try await call(client, .POST, host.url + "apps/nope/load").status == 404)
            let again = try await call(client, .POST, host.url + "apps/hello/download?force=1")
            #expect(again.status == 200 && again.body.contains(#""source":"network""#), "\(again)")
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// The first file called `name` in the cache's bundles.
    func firstFile(named name: String, under root: String) -> String? {
        let walker = FileManager.default.enumerator(atPath: root)
        while let path = walker?.nextObject() as? String {
            if path.hasSuffix("/bundle/" + name) { return root + "/" + path }
        }
        return nil
    }
}
