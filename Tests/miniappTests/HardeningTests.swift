import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import NIOConcurrencyHelpers
import Testing

/// Issue 13's smaller defects, each through the real CLI.
@Suite struct HardeningTests {
    let work = try! TemporaryDirectory.make().path

    @Test func helpShowsEachOptionOnceAndTheToolsVersionIsTheRootsAlone() async throws {
        let help = try await CommandRunner.run(["download", "--help"])
        #expect(help.status == 0)
        let versionLines = help.stdout.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--version") }
        #expect(versionLines.count == 1, "\(help.stdout)")
        #expect(versionLines.first?.contains("version id") == true)

        let version = try await CommandRunner.run(["--version"])
        #expect(version.status == 0 && version.stdout == PackageInfo.version + "\n")
        #expect(try await CommandRunner.run(["--help"]).stdout.contains("miniapp --version"))
        // Given without its value, the version id option is an error, not the tool's version flag.
        expectFailure(try await CommandRunner.run(["download", "app-hello", "--version"]), status: 64, mentioning: "--version")
    }

    @Test func aConfigFileThatIsANamedPipeIsRefusedWithoutWaiting() async throws {
        let fifo = work + "/config.json"
        #expect(mkfifo(fifo, 0o644) == 0)
        // Were the pipe opened for reading, this writer would let the command go on, and it would succeed.
        let writer = Thread {
            Thread.sleep(forTimeInterval: 5)
            let descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
            if descriptor >= 0 {
                _ = "{}".withCString { write(descriptor, $0, 2) }
                close(descriptor)
            }
        }
        writer.start()
        let result = try await CommandRunner.run(["cache", "list"], environment: ["MINIAPP_CONFIG": fifo, "MINIAPP_CACHE_DIR": work + "/cache"])
        expectFailure(result, status: 64, mentioning: "not a regular file")
    }

    @Test func aSubscriptionKeyOfTheWrongTypeIsNotPrinted() async throws {
        let config = work + "/config.json"
        try #"{"subscriptionKey": 918273645546372819, "platform": "http://127.0.0.1:9/", "projectId": "p"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try await CommandRunner.run(["list"], environment: ["MINIAPP_CONFIG": config])
        expectFailure(result, status: 64, mentioning: "subscriptionKey")
        #expect(!result.stderr.contains("918273645546372819") && !result.stdout.contains("918273645546372819"))
        #expect(!result.stderr.contains("9.18"), "nor in another spelling: \(result.stderr)")
    }

    @Test func aZipNamedThroughASymbolicLinkIsFollowed() async throws {
        let keygen = try await CommandRunner.run(["keygen", "--out", work + "/k"])
        #expect(keygen.status == 0)
        let zip = work + "/real/app.zip"
        try FileManager.default.createDirectory(atPath: work + "/real", withIntermediateDirectories: true)
        try Data(try BundleFactory.zip(BundleFactory.helloFiles)).write(to: URL(fileURLWithPath: zip))
        let link = work + "/link.zip"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: zip)

        let signed = try await CommandRunner.run(["sign", link, "--version-id", "v-1", "--key", work + "/k.pem", "--json"])
        #expect(signed.status == 0, "stderr: \(signed.stderr)")
        let signature = try #require((try signed.json() as? [String: String])?["signature"])
        let cache = work + "/cache"
        let installed = try await CommandRunner.run(
            ["install", link, "--app-id", "hello", "--version-id", "v-1", "--signature", signature, "--public-key", work + "/k.pub.pem", "--json"],
            environment: ["MINIAPP_CACHE_DIR": cache]
        )
        #expect(installed.status == 0, "stderr: \(installed.stderr)")
        #expect((try installed.json() as? [String: Any])?["signature"] as? String == "verified")

        let published = try await CommandRunner.run(["publish", link, "--registry", work + "/registry", "--app-id", "hello", "--version-tag", "1.0.0", "--key", work + "/k.pem", "--json"])
        #expect(published.status == 0, "stderr: \(published.stderr)")
        let versionId = try #require((try published.json() as? [String: Any])?["versionId"] as? String)
        var info = stat()
        #expect(lstat(work + "/registry/apps/hello/versions/\(versionId)/bundle.zip", &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "the registry holds the zip, not a link")

        // A named pipe where the zip should be is refused at once.
        #expect(mkfifo(work + "/pipe.zip", 0o644) == 0)
        let piped = try await CommandRunner.run(
            ["install", work + "/pipe.zip", "--app-id", "hello", "--version-id", "v-1", "--signature", signature, "--public-key", work + "/k.pub.pem"],
            environment: ["MINIAPP_CACHE_DIR": cache]
        )
        expectFailure(piped, status: 66, mentioning: "not a regular file")
    }

    /// Every file under `folder` with its bytes, base64: what "byte for byte as before" compares.
    static func contents(of folder: String) -> [String: String] {
        var result: [String: String] = [:]
        for path in (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String]) ?? [] {
            if let data = FileManager.default.contents(atPath: folder + "/" + path) { result[path] = data.base64EncodedString() }
        }
        return result
    }

    @Test func aFailedVerificationLeavesTheStoredKeyAndAnOfflineInstallStillVerifies() async throws {
        let app = try ServedApp(versions: ["ver-1", "ver-2"])
        let served = NIOLockedValueBox("genuine")
        let handler: TestHTTPServer.Handler = { [app] request in
            guard let blob = app.fixture.blobs[request.path] else { return app.fixture.handle(request) }
            switch served.withLockedValue({ $0 }) {
            case "tampered":
                var altered = blob
                altered[altered.count / 2] ^= 0x01
                return PlatformFixture.serve(altered, request)
            case "html":
                return StubResponse(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html><body>Sign in to continue</body></html>".utf8))
            default:
                return PlatformFixture.serve(blob, request)
            }
        }
        try await withTestServer(handler) { server in
            let cache = work + "/cache"
            let first = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1"])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            let keys = Self.contents(of: cache + "/keys")
            #expect(keys.count == 1, "the platform key is kept: \(keys.keys)")

            for mode in ["tampered", "html"] {
                served.withLockedValue { $0 = mode }
                for arguments in [["download", "app-hello", "--version", "ver-2"], ["download", "app-hello", "--version", "ver-1", "--force"]] {
                    let before = CacheTree(cache)
                    expectFailure(try await runCached(server, cache: cache, arguments), status: 65)
                    #expect(Self.contents(of: cache + "/keys") == keys, "\(mode) \(arguments): keys/ changed")
                    #expect(CacheTree(cache) == before)
                }
            }

            // Offline, the kept key verifies a bundle it signed.
            let zip = work + "/ver-3.zip"
            let signed = try BundleFactory.sign(try BundleFactory.zip(BundleFactory.helloFiles), versionId: "ver-3", key: app.key)
            try Data(signed.zip).write(to: URL(fileURLWithPath: zip))
            let offline = try await runCached(server, cache: cache, ["install", zip, "--app-id", "app-hello", "--version-id", "ver-3", "--signature", signed.signature, "--key-id", "key-1", "--offline", "--json"])
            #expect(offline.status == 0, "stderr: \(offline.stderr)")
            #expect((try offline.json() as? [String: Any])?["signature"] as? String == "verified")
            // A key id that was never kept cannot be checked offline: a usage error, as with no key at all.
            expectFailure(try await runCached(server, cache: cache, ["install", zip, "--app-id", "app-hello", "--version-id", "ver-4", "--signature", signed.signature, "--key-id", "key-9", "--offline"]), status: 64, mentioning: "--key-id")
        }
    }

    @Test func aKeyRotatedUnderTheSameIdReplacesTheStoredOneOnlyWhenItVerifies() async throws {
        let old = try ServedApp(versions: ["ver-1"])
        let new = try ServedApp(versions: ["ver-2"])
        let current = NIOLockedValueBox(old)
        try await withTestServer({ request in current.withLockedValue { $0 }.fixture.handle(request) }) { server in
            let cache = work + "/cache"
            #expect(try await runCached(server, cache: cache, ["download", "app-hello"]).status == 0)
            let keys = Self.contents(of: cache + "/keys")
            current.withLockedValue { $0 = new }
            let rotated = try await runCached(server, cache: cache, ["download", "app-hello"])
            #expect(rotated.status == 0, "stderr: \(rotated.stderr)")
            let after = Self.contents(of: cache + "/keys")
            #expect(after.keys.sorted() == keys.keys.sorted() && after != keys, "the new key replaced the old one at commit")
            #expect(after.values.first.flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self).contains(new.key.publicKey.ecKey) } == true)
        }
    }

    /// The cache's own folders, and the store, replaced one at a time by a link to a folder outside.
    static let plantedPlaces = ["trash", "tmp", "locks", "keys", "keys/NS", "bundles", "bundles/NS", "bundles/NS/app-hello", "bundles/NS/app-hello/ver-1", "permissions.sqlite"]

    @Test(arguments: plantedPlaces)
    func noCacheOperationFollowsALinkPlantedInTheCache(place: String) async throws {
        var app = try ServedApp(versions: ["ver-1", "ver-2"])
        let first = try #require(app.fixture.apps.first?.versions.last)
        app.fixture.apps.append(FixtureApp(id: "app-two", displayName: "Two", versions: [first]))
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            let namespace = CacheNamespace(platform: .remote(server.baseURL), projectId: "proj-1").key
            #expect(try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1"]).status == 0)
            #expect(try await runCached(server, cache: cache, ["permissions", "grant", "app-hello", "rakuten.miniapp.user.USER_NAME"]).status == 0)

            // The victim: a folder outside the cache, holding what the place held (or a canary).
            let target = cache + "/" + place.replacingOccurrences(of: "NS", with: namespace)
            let victim = work + "/victim"
            try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
            try Data("do not delete".utf8).write(to: URL(fileURLWithPath: victim + "/canary"))
            let link: String
            if place == "permissions.sqlite" {
                try FileManager.default.moveItem(atPath: target, toPath: victim + "/permissions.sqlite")
                link = victim + "/permissions.sqlite"
            } else {
                if FileManager.default.fileExists(atPath: target) { try FileManager.default.moveItem(atPath: target, toPath: victim + "/moved") }
                link = victim
            }
            try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: link)
            let before = Self.contents(of: victim)

            let commands: [[String]] = [
                ["cache", "prune", "--max-bytes", "1"], ["cache", "remove", "app-hello"], ["download", "app-hello", "--version", "ver-1", "--force"],
                ["download", "app-two"], ["download", "app-hello", "--version", "ver-2"], ["load", "app-hello", "--version", "ver-1"],
                ["permissions", "grant", "app-hello", "rakuten.miniapp.user.USER_NAME"], ["permissions", "show", "app-hello"], ["cache", "list"], ["cache", "verify"],
            ]
            for arguments in commands {
                let result = try await runCached(server, cache: cache, arguments)
                if result.status != 0 {
                    #expect([66, 74, 65].contains(result.status), "\(place) \(arguments): \(result.stderr)")
                    #expect(result.stderrLines.first?.hasPrefix("error: ") == true && result.stderrLines.filter { $0.hasPrefix("error:") }.count == 1, "\(place) \(arguments): \(result.stderr)")
                }
                #expect(Self.contents(of: victim) == before, "\(place) \(arguments) changed the folder the link points to")
                var info = stat()
                #expect(lstat(target, &info) != 0 || (info.st_mode & S_IFMT) == S_IFLNK || (info.st_mode & S_IFMT) == S_IFDIR)
            }
        }
    }

    @Test func readersOfThePermissionStoreDoNotWaitForWritersAndWritersWaitBoundedThenBusy() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            let config = work + "/config.json"
            try #"{"lockTimeoutSeconds": 1}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let environment = ["MINIAPP_CONFIG": config]
            #expect(try await runCached(server, cache: cache, ["download", "app-hello"], environment: environment).status == 0)
            #expect(try await runCached(server, cache: cache, ["permissions", "grant", "app-hello", "rakuten.miniapp.user.USER_NAME"], environment: environment).status == 0)

            // Another process holds a write transaction.
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            writer.arguments = ["-c", "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(120)", cache + "/permissions.sqlite"]
            let pipe = Pipe()
            writer.standardOutput = pipe
            try writer.run()
            // SIGKILL: the test runner's threads may block SIGTERM, and a child inherits that.
            defer { kill(writer.processIdentifier, SIGKILL); writer.waitUntilExit() }
            #expect(String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("locked"))

            for arguments in [["permissions", "show", "app-hello", "--json"], ["load", "app-hello"], ["permissions", "list"]] {
                let result = try await runCached(server, cache: cache, arguments, environment: environment)
                #expect(result.status == 0, "\(arguments) waited for the writer: \(result.stderr)")
            }
            let write = try await runCached(server, cache: cache, ["permissions", "deny", "app-hello", "rakuten.miniapp.user.USER_NAME"], environment: environment)
            expectFailure(write, status: 73, mentioning: "permissions.sqlite")
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()

            // The cache folder's flock only guards creating and migrating the store: a current store
            // opens without it.
            let folder = open(cache, O_RDONLY | O_DIRECTORY)
            defer { close(folder) }
            #expect(flock(folder, LOCK_EX) == 0)
            for arguments in [["permissions", "show", "app-hello"], ["permissions", "deny", "app-hello", "rakuten.miniapp.user.USER_NAME"], ["load", "app-hello"]] {
                let result = try await runCached(server, cache: cache, arguments, environment: environment)
                #expect(result.status == (arguments.first == "load" ? 77 : 0), "\(arguments): \(result.stderr)")
            }
        }
    }
}
