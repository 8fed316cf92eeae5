import AsyncHTTPClient
import Foundation
import MiniAppTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// The reference host service (Examples/HostService) end to end over HTTP, against the demo registry.
@Suite struct HostServiceTests {
    /// A started `miniapp-host` and the base URL it listens on.
    final class RunningHost: Sendable {
        let process: ChildProcess
        let url: String
        /// The browser host's base URL (`http://localhost:<port>/`).
        let browser: String

        init(cache: String, environment extra: [String: String] = [:], stderr: String? = nil) async throws {
            let binary = CommandRunner.executable.deletingLastPathComponent().appendingPathComponent("miniapp-host")
            let environment = [
                "HOST_PLATFORM": repositoryRoot.appendingPathComponent("Manifests/demo/registry").path,
                "HOST_CACHE_DIR": cache, "PATH": "/usr/bin:/bin",
            ].merging(extra) { _, new in new }
            let process = try ChildProcess(binary.path, [], environment: environment, stdout: .pipe, stderr: stderr.map { .file($0) } ?? .null)
            self.process = process
            // Two lines name the URLs, in either order; reading waits for the host to start, off the pool.
            let lines = await offPool {
                var lines: [String] = []
                while lines.count < 2, let line = process.readLine() { lines.append(line) }
                return lines
            }
            func address(after prefix: String) -> String? {
                lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
            }
            guard let found = address(after: "listening on "), let browser = address(after: "browser host on ") else {
                process.stop()
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the host did not start: \(lines)"])
            }
            url = found
            self.browser = browser
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    let cache = try! TemporaryDirectory.make().path

    func call(_ client: HTTPClient, _ method: HTTPMethod = .GET, _ url: String, headers: [(String, String)] = [], body: String? = nil) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    /// The reference host observes its browser host: it logs every callback and, with
    /// `HOST_ALLOW_LAUNCH=1`, answers a closed launch gate from code, so that the app loads.
    @Test func theHostServiceAnswersTheLaunchGateFromCodeAndLogsEveryCallback() async throws {
        let log = try TemporaryDirectory.make().path + "/stderr"
        let host = try await RunningHost(cache: cache, environment: ["HOST_ALLOW_LAUNCH": "1"], stderr: log)
        defer { host.stop() }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            // The first load finds the gate closed and opens the app in the browser host: the service's
            // observer hears the gate and allows what it requires.
            let first = try await call(client, .POST, host.url + "apps/hello/load")
            #expect(first.status == 403 || first.status == 200, "\(first)")
            let deadline = ContinuousClock.now + .seconds(60)
            var allowed = false
            while !allowed, ContinuousClock.now < deadline {
                allowed = try await call(client, .GET, host.url + "apps/hello/permissions/USER_NAME").body.contains(#""allowed":true"#)
                if !allowed { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(allowed, "the service allowed USER_NAME at the launch gate")
            #expect(try await call(client, .POST, host.url + "apps/hello/load").status == 200)
            // Read at least once, with a wait of its own: a loaded run can spend the first wait above.
            var said = ""
            let logged = ContinuousClock.now + .seconds(60)
            repeat {
                said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                if !said.contains("prompt settled") { try await Task.sleep(for: .milliseconds(50)) }
            } while !said.contains("prompt settled") && ContinuousClock.now < logged
            for line in ["app opened", "launch gate", "prompt", "permission changed", "prompt settled"] {
                #expect(said.contains(line), "the service logs \(line): \(said)")
            }
            #expect(said.contains("source=host") && said.contains("by=host"), "\(said)")
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
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

            // The loaded app runs in the browser host: its bridge answers on the app's own origin only,
            // under a capability its host page grants while the gate is open.
            #expect(refused.body.replacingOccurrences(of: "\\/", with: "/").contains(host.browser + "apps/hello"), "\(refused)")
            let port = try #require(URL(string: host.browser)?.port)
            let origin = "http://hello.localhost:\(port)"
            let bridge = "http://127.0.0.1:\(port)/__miniapp/bridge"
            let message = #"{"id": "m1", "action": "getUniqueId"}"#
            let appHeaders = [("Host", "hello.localhost:\(port)"), ("Origin", origin), ("Content-Type", "application/json")]
            let forged = try await call(client, .POST, bridge, headers: appHeaders, body: message)
            #expect(forged.status == 403 && forged.body.contains("AuthorizationFailureError"), "\(forged)")
            let hostPage = try await call(client, .GET, "http://127.0.0.1:\(port)/apps/hello", headers: [("Host", "localhost:\(port)")])
            let session = try #require(hostPage.body.firstMatch(of: /name="miniapp-session" content="([0-9a-f]{64})"/)?.1)
            let hostHeaders = [("Host", "localhost:\(port)"), ("X-Miniapp-Session", String(session)), ("Content-Type", "application/json")]
            let grants = "http://127.0.0.1:\(port)/api/apps/hello/grants"
            // USER_NAME was denied above: the gate is closed, and no capability is granted.
            #expect(try await call(client, .POST, grants, headers: hostHeaders, body: "{}").status == 403)
            #expect(try await call(client, .POST, host.url + "apps/hello/permissions/USER_NAME/grant").status == 200)
            let granted = try await call(client, .POST, grants, headers: hostHeaders, body: "{}")
            let capability = try #require(granted.body.firstMatch(of: /"capability":"([0-9a-f]{64})"/)?.1, "\(granted)")
            let held = appHeaders + [("X-Miniapp-Capability", String(capability))]
            let answer = try await call(client, .POST, bridge, headers: held, body: message)
            #expect(answer.status == 200 && answer.body.contains(#""id":"m1","success":""#), "\(answer)")
            let foreign = try await call(client, .POST, bridge, headers: [("Host", "hello.localhost:\(port)"), ("Origin", "http://other.localhost:\(port)"), ("Content-Type", "application/json"), ("X-Miniapp-Capability", String(capability))], body: message)
            #expect(foreign.status == 403, "\(foreign)")
            let photo = try await call(client, .POST, bridge, headers: held, body: #"{"id": "m2", "action": "getProfilePhoto"}"#)
            #expect(photo.body.contains("userDenied"), "\(photo)")
            // The host page gives it back: refused from then on.
            #expect(try await call(client, .DELETE, grants + "/" + capability, headers: hostHeaders).status == 200)
            #expect(try await call(client, .POST, bridge, headers: held, body: message).status == 403)
            #expect(try await call(client, .GET, "http://127.0.0.1:\(port)/", headers: [("Host", "evil.example:\(port)")]).status == 421)
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
