import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import Synchronization
import Testing

/// The failure and cache rules of spec/cli.md that cut across commands.
@Suite struct ContractTests {
    let work = try! TemporaryDirectory.make().path

    @Test func aPlatformThatRefusesConnectionsFailsOnTheFirstAttempt() async throws {
        // With the default timeouts and retries: a refused connection is not worth waiting for.
        let closed = (LoopbackPort(), LoopbackPort())
        defer { withExtendedLifetime(closed) {} }
        let dead = "http://127.0.0.1:\(closed.0.port)/"
        let environment = ["MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": work + "/cache", "HOME": work]
        let list = try await CommandRunner.run(["list", "--platform", dead], environment: environment)
        expectFailure(list, status: 69, mentioning: "connection refused")
        #expect(list.stderrLines.first?.contains("1 attempt") == true, "stderr: \(list.stderr)")

        var app = try ServedApp()
        app.fixture.apps[0].versions[0].files = ["http://127.0.0.1:\(closed.1.port)/app.zip"]
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let download = try await CommandRunner.run(["download", "app-hello", "--platform", server.baseURL.absoluteString], environment: environment)
            expectFailure(download, status: 69, mentioning: "connection refused")
            #expect(download.stderrLines.first?.contains("1 attempt") == true, "stderr: \(download.stderr)")
        }
        #expect(CacheTree(work + "/cache").entries == nil, "a failed command made no cache folder")
    }

    @Test func answersFromTheCacheFindVersionsFromAnyPlatform() async throws {
        let cache = work + "/cache"
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let result1 = try await runCached(server, cache: cache, ["download", "app-hello"])
            #expect(result1.status == 0, "stderr: \(result1.stderr)")
        }
        // No platform configured at all.
        let bare = ["MINIAPP_CACHE_DIR": cache, "HOME": work]
        let grant = try await CommandRunner.run(["permissions", "grant", "app-hello", "USER_NAME"], environment: bare)
        #expect(grant.status == 0, "stderr: \(grant.stderr)")
        let load = try await CommandRunner.run(["load", "app-hello", "--offline"], environment: bare)
        #expect(load.status == 0, "stderr: \(load.stderr)")
        let folder = load.stdout.split(separator: "\n").last.map(String.init) ?? "/nope"
        #expect(FileManager.default.fileExists(atPath: folder + "/index.html"))
        let list = try await CommandRunner.run(["list", "--offline", "--json"], environment: bare)
        let listed = try list.json() as? [[String: Any]]
        #expect(listed?.compactMap { $0["id"] as? String } == ["app-hello"])
        let info = try await CommandRunner.run(["info", "app-hello", "--offline", "--json"], environment: bare)
        let infoDocument = try info.json() as? [String: Any]
        #expect((infoDocument?["cache"] as? [String: Any])?["present"] as? Bool == true)

        // Another platform URL (a server gone, restarted on another port): cache commands still see the
        // version, and load falls back to it.
        let closed = LoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        let elsewhere = ["MINIAPP_PLATFORM": "http://127.0.0.1:\(closed.port)/", "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": cache, "HOME": work]
        let cached = try await CommandRunner.run(["cache", "list", "--json"], environment: elsewhere)
        let records = try cached.json() as? [[String: Any]]
        #expect(records?.count == 1)
        let fallback = try await CommandRunner.run(["load", "app-hello"], environment: elsewhere)
        #expect(fallback.status == 0, "stderr: \(fallback.stderr)")
        #expect(fallback.stderr.contains("unavailable"))
    }

    @Test func failedCommandsLeaveTheCacheExactlyAsItWas() async throws {
        let cache = work + "/cache"
        let app = try ServedApp(versions: ["ver-1", "ver-2"])
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            // Into a cache folder that does not exist yet: afterwards it still does not. The broken
            // platform has the two versions' signatures swapped.
            var broken = app
            broken.fixture.apps[0].versions[0].signature = app.fixture.apps[0].versions[1].signature
            broken.fixture.apps[0].versions[1].signature = app.fixture.apps[0].versions[0].signature
            try await withTestServer({ [broken] in broken.fixture.handle($0) }) { brokenServer in
                expectFailure(try await runCached(brokenServer, cache: cache, ["download", "app-hello"]), status: 65)
            }
            #expect(CacheTree(cache).entries == nil, "\(CacheTree(cache))")

            // Into a cache that holds a version: afterwards every file and folder is as it was.
            let result2 = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1"])
            #expect(result2.status == 0, "stderr: \(result2.stderr)")
            let before = CacheTree(cache)
            try await withTestServer({ [broken] in broken.fixture.handle($0) }) { brokenServer in
                expectFailure(try await runCached(brokenServer, cache: cache, ["download", "app-hello"]), status: 65)
                expectFailure(try await runCached(brokenServer, cache: cache, ["download", "app-hello", "--version", "ver-1", "--force"]), status: 65)
            }
            let hostile = work + "/hostile.zip"
            try writeTestFile(hostile, Data(RawZip([.file("index.html"), .file("../evil.js")]).bytes))
            expectFailure(try await runCached(server, cache: cache, ["install", hostile, "--app-id", "app-hello", "--version-id", "ver-9"]), status: 65)
            expectFailure(try await runCached(server, cache: cache, ["permissions", "grant", "app-ghost", "USER_NAME"]), status: 66)
            #expect(CacheTree(cache) == before, "before:\n\(before)\nafter:\n\(CacheTree(cache))")
        }
    }

    @Test func aFailureStartsStderrWithItsErrorLine() async throws {
        // Unsigned, installed under the advisory policy (a warning), then refused for a permission (77).
        var app = try ServedApp(files: BundleFactory.helloFiles.merging(["manifest.json": #"{"reqPermissions": [{"name": "USER_NAME"}]}"#]) { $1 })
        app.fixture.apps[0].versions[0].signature = nil
        let cache = work + "/cache"
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let refused = try await runCached(server, cache: cache, ["load", "app-hello", "--signature-policy", "advisory"])
            expectFailure(refused, status: 77, mentioning: "rakuten.miniapp.user.USER_NAME")

            // The manifest's short name is the full permission: granting it lets the app load.
            let show = try await runCached(server, cache: cache, ["permissions", "show", "app-hello", "--json"])
            let shown = try show.json() as? [[String: Any]]
            #expect(shown?.first?["name"] as? String == "rakuten.miniapp.user.USER_NAME")
            let result3 = try await runCached(server, cache: cache, ["permissions", "grant", "app-hello", "USER_NAME"])
            #expect(result3.status == 0, "stderr: \(result3.stderr)")
            let loaded = try await runCached(server, cache: cache, ["load", "app-hello", "--signature-policy", "advisory"])
            #expect(loaded.status == 0, "stderr: \(loaded.stderr)")
        }
    }

    @Test func infoWritesEveryCacheKeyEvenWhenNothingIsCached() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let info = try await runCached(server, cache: work + "/cache", ["info", "app-hello", "--json"])
            let state = try #require((try info.json() as? [String: Any])?["cache"] as? [String: Any])
            #expect(state["present"] as? Bool == false)
            for key in ["path", "signature", "intact"] {
                #expect(state[key] is NSNull, "\(key) is written as null")
            }
        }
    }

    @Test func anEmptySubscriptionKeyVariableSendsNoKey() async throws {
        let config = work + "/config.json"
        try writeTestFile(config, #"{"subscriptionKey": "from-the-file"}"#)
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let environment = ["MINIAPP_CONFIG": config, "MINIAPP_SUBSCRIPTION_KEY": ""]
            let result4 = try await runCached(server, cache: work + "/cache", ["list"], environment: environment)
            #expect(result4.status == 0, "stderr: \(result4.stderr)")
            #expect(server.requests.allSatisfy { request in !request.headers.contains { $0.name.lowercased() == "apikey" } })
        }
    }

    /// Runs `miniapp arguments` with stdout on `descriptor`; returns how it ended and its stderr.
    /// It waits without blocking a thread: the test server answers on the same thread pool.
    private func run(_ arguments: [String], stdout descriptor: Int32, environment: [String: String] = [:]) async throws -> (reason: ChildProcess.TerminationReason, status: Int32, stderr: String) {
        let errors = try TemporaryDirectory.make().appendingPathComponent("stderr")
        let process = try ChildProcess(
            CommandRunner.executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
            stdout: .descriptor(descriptor), stderr: .file(errors.path)
        )
        let status = await process.exited()
        return (process.terminationReason, status, String(decoding: try Data(contentsOf: errors), as: UTF8.self))
    }

    @Test func aReaderThatHasGoneEndsTheCommandBySIGPIPELikeAStockTool() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        defer { close(ends[1]) }
        // Once NIO has started (it ignores SIGPIPE), a write to the pipe fails with EPIPE instead of
        // killing the process; Foundation's FileHandle.write trapped on it.
        try await withTestServer({ commandFixture.handle($0) }) { server in
            let environment = [
                "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_SUBSCRIPTION_KEY": "sub-key-42",
                "MINIAPP_CACHE_DIR": work + "/cache", "HOME": work,
            ]
            for arguments in [["--help"], ["list", "--json"]] {
                let ended = try await run(arguments, stdout: ends[1], environment: environment)
                #expect(ended.reason == .uncaughtSignal, "\(arguments)")
                #expect(ended.status == SIGPIPE, "\(arguments)")
                #expect(ended.stderr.isEmpty, "no message and no crash report: \(ended.stderr)")
            }
        }
    }

    @Test func anUnwritableStdoutGives74AndOneErrorLine() async throws {
        let full = open("/dev/full", O_WRONLY)
        try #require(full >= 0)
        defer { close(full) }
        let ended = try await run(["--version"], stdout: full)
        #expect(ended.reason == .exit)
        #expect(ended.status == 74)
        #expect(ended.stderr.hasPrefix("error: cannot write the output: No space left on device"), "\(ended.stderr)")
        #expect(ended.stderr.split(separator: "\n").count == 1)
    }

    @Test func aNonBlockingStdoutThatFillsUpIsWaitedFor() async throws {
        // A pipe whose write end is non-blocking (as some parents hand out) and whose reader is slow:
        // writes of a big document meet EAGAIN, which must mean "wait", not a failure.
        let many = PlatformFixture(projectId: "proj-1", apps: (0..<3000).map { index in
            FixtureApp(id: "app-\(index)", displayName: "App \(index)", versions: [FixtureVersion(versionId: "v-\(index)", versionTag: "1.0.\(index)")])
        })
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        let reader = ends[0]
        // The reader blocks in read(2), so it gets a thread of its own rather than one of the pool's,
        // which the test server needs.
        let collected = Mutex<[UInt8]>([])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            usleep(300_000)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(reader, &buffer, buffer.count)
                if count <= 0 { break }
                collected.withLock { $0 += buffer[0..<count] }
            }
            close(reader)
            finished.signal()
        }
        try await withTestServer({ many.handle($0) }) { server in
            let environment = ["MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": work + "/cache", "HOME": work]
            let ended = try await run(["list", "--json"], stdout: ends[1], environment: environment)
            close(ends[1])
            #expect(ended.reason == .exit)
            #expect(ended.status == 0, "\(ended.stderr)")
        }
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                finished.wait()
                continuation.resume()
            }
        }
        let output = collected.withLock { $0 }
        #expect(output.count > 200_000, "the document is bigger than a pipe holds")
        let apps = try #require(try JSONSerialization.jsonObject(with: Data(output)) as? [[String: Any]])
        #expect(apps.count == 3000)
    }
}
