import Foundation
import Glibc
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import NIOConcurrencyHelpers
import Testing

/// Smaller defects of hostile input and odd environments (named pipes, links, planted files, other
/// users, huge sizes), each through the real CLI.
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

    /// A sparse file says it holds terabytes: each file a command reads whole is refused from its size
    /// with one line, before anything is allocated for it.
    @Test func aSparseFileOfTerabytesIsOneErrorNotACrash() async throws {
        let huge = work + "/huge.json"
        try writeTestFile(huge, [UInt8]())
        #expect(truncate(huge, 8 << 40) == 0)
        let environment = ["MINIAPP_CACHE_DIR": work + "/cache", "MINIAPP_PERMISSION_STORE": work + "/permissions.db"]
        let configured = try await CommandRunner.run(["cache", "list"], environment: environment.merging(["MINIAPP_CONFIG": huge]) { $1 })
        expectFailure(configured, status: 64, mentioning: "is over 64 MiB")
        #expect(configured.stderr.split(separator: "\n").count == 1, "\(configured.stderr)")
        let imported = try await CommandRunner.run(["permissions", "import", "hello", huge], environment: environment)
        expectFailure(imported, status: 65, mentioning: "over 256 MiB")
        #expect(imported.stderr.split(separator: "\n").count == 1, "\(imported.stderr)")
    }

    /// A key file or a manifest.json that is a folder, a device or too big is refused with one line and
    /// changes nothing: a manifest.json folder is not read as "no manifest".
    @Test func aKeyOrAManifestThatIsNotARegularFileIsOneError() async throws {
        #expect(try await CommandRunner.run(["keygen", "--out", work + "/k"]).status == 0)
        let huge = work + "/huge.pem"
        try writeTestFile(huge, [UInt8]())
        #expect(truncate(huge, 8 << 40) == 0)
        var files = BundleFactory.helloFiles
        files["manifest.json"] = nil
        files["manifest.json/inside"] = "{}"
        let folder = try BundleFactory.folder(files)
        let zip = work + "/app.zip"
        try writeTestFile(zip, Data(try BundleFactory.zip(files)))
        let cache = ["MINIAPP_CACHE_DIR": work + "/cache"]
        let install = ["install", zip, "--app-id", "hello", "--version-id", "v-1", "--signature", "AAAA"]
        let refused: [(arguments: [String], status: Int32, says: String)] = [
            (["sign", zip, "--version-id", "v-1", "--key", "/dev/zero"], 64, "/dev/zero: it is not a regular file"),
            (["sign", zip, "--version-id", "v-1", "--key", huge], 64, "huge.pem: it is too big"),
            (install + ["--public-key", work], 64, "it is not a regular file"),
            (install + ["--public-key", huge], 64, "it is too big"),
            (install + ["--public-key", work + "/k.pub.pem", "--signature-policy", "advisory"], 65, "manifest.json (it is not a regular file)"),
            (["publish", folder, "--registry", work + "/registry", "--app-id", "hello", "--version-tag", "1.0.0", "--key", work + "/k.pem"], 65, "manifest.json (it is not a regular file)"),
        ]
        for refusal in refused {
            let result = try await CommandRunner.run(refusal.arguments, environment: cache)
            expectFailure(result, status: refusal.status, mentioning: refusal.says)
            #expect(result.stderr.split(separator: "\n").first { $0.hasPrefix("error:") } != nil && !result.stderr.contains("Fatal"), "\(refusal.arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: work + "/cache/bundles/local/hello"), "nothing installed")
        #expect(!FileManager.default.fileExists(atPath: work + "/registry/apps/hello"), "nothing published")
    }

    @Test func aSubscriptionKeyOfTheWrongTypeIsNotPrinted() async throws {
        let config = work + "/config.json"
        try writeTestFile(config, #"{"subscriptionKey": 918273645546372819, "platform": "http://127.0.0.1:9/", "projectId": "p"}"#)
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
        try writeTestFile(zip, Data(try BundleFactory.zip(BundleFactory.helloFiles)))
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
            try writeTestFile(zip, Data(signed.zip))
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
            try writeTestFile(victim + "/canary", Data("do not delete".utf8))
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
            try writeTestFile(config, #"{"lockTimeoutSeconds": 1}"#)
            let environment = ["MINIAPP_CONFIG": config]
            #expect(try await runCached(server, cache: cache, ["download", "app-hello"], environment: environment).status == 0)
            #expect(try await runCached(server, cache: cache, ["permissions", "grant", "app-hello", "rakuten.miniapp.user.USER_NAME"], environment: environment).status == 0)

            // Another process holds a write transaction.
            let writer = try ChildProcess(
                "/usr/bin/python3",
                ["-c", "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(120)", cache + "/permissions.sqlite"],
                stdout: .pipe
            )
            defer { writer.stop() }
            #expect(await offPool { writer.readLine() } == "locked")

            for arguments in [["permissions", "show", "app-hello", "--json"], ["load", "app-hello"], ["permissions", "list"]] {
                let result = try await runCached(server, cache: cache, arguments, environment: environment)
                #expect(result.status == 0, "\(arguments) waited for the writer: \(result.stderr)")
            }
            let write = try await runCached(server, cache: cache, ["permissions", "deny", "app-hello", "rakuten.miniapp.user.USER_NAME"], environment: environment)
            expectFailure(write, status: 73, mentioning: "permissions.sqlite")
            writer.kill()
            await writer.exited()

            // The cache folder's flock only guards creating and migrating the store: a current store
            // opens without it.
            let folder = open(cache, O_RDONLY | O_DIRECTORY)
            defer { close(folder) }
            #expect(flock(folder, LOCK_EX) == 0)
            for arguments in [["permissions", "show", "app-hello"], ["permissions", "deny", "app-hello", "rakuten.miniapp.user.USER_NAME"], ["load", "app-hello"]] {
                let result = try await runCached(server, cache: cache, arguments, environment: environment)
                #expect(result.status == (arguments.first == "load" ? 77 : 0), "\(arguments): \(result.stderr)")
            }
            // Files the read-only and the later writing connections made are the owner's alone too.
            for suffix in ["", "-wal", "-shm"] {
                var info = stat()
                if stat(cache + "/permissions.sqlite" + suffix, &info) == 0 { #expect(info.st_mode & 0o777 == 0o600, "permissions.sqlite\(suffix)") }
            }
        }
    }

    @Test func verifyWaitsForAVersionAnotherProcessIsChangingInsteadOfCallingItDamaged() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            let first = try await runCached(server, cache: cache, ["download", "app-hello", "--json"])
            let path = try #require((try first.json() as? [String: Any])?["path"] as? String)
            let namespace = CacheNamespace(platform: .remote(server.baseURL), projectId: "proj-1").key
            // Another process reinstalling the version: it holds the lock, and the files are moving.
            let lockPath = cache + "/locks/\(namespace)@app-hello@ver-1.lock"
            let descriptor = open(lockPath, O_RDWR | O_CREAT, 0o644)
            #expect(flock(descriptor, LOCK_EX) == 0)
            #expect(rename(path + "/index.html", work + "/index.html") == 0)
            let verify = Task { try await runCached(server, cache: cache, ["cache", "verify", "--json"]) }
            try await Task.sleep(for: .seconds(1))
            #expect(rename(work + "/index.html", path + "/index.html") == 0)
            unlink(lockPath)
            close(descriptor)
            let result = try await verify.value
            #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
            #expect((try result.json() as? [[String: Any]])?.map { $0["intact"] as? Bool } == [true])
        }
    }

    @Test(.enabled(if: CommandRunner.canRunAsAnotherUser))
    func verifyChecksACacheItCannotWriteAsItIs() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            let first = try await runCached(server, cache: cache, ["download", "app-hello", "--json"])
            let path = try #require((try first.json() as? [String: Any])?["path"] as? String)
            // Another user can read the cache but make no lock file in it.
            let environment = ["MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": cache]
            let intact = try await CommandRunner.run(["cache", "verify", "--json"], environment: environment, user: 65534)
            #expect(intact.status == 0, "\(intact.stderr)")
            #expect((try intact.json() as? [[String: Any]])?.map { $0["intact"] as? Bool } == [true])
            try writeTestFile(path + "/index.html", "<html>changed</html>")
            expectFailure(try await CommandRunner.run(["cache", "verify"], environment: environment, user: 65534), status: 65, mentioning: "damaged")
        }
    }

    @Test(arguments: [true, false])
    func aFileListThatDoesNotCoverEveryFileIsDamage(recordHasDigest: Bool) async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            let first = try await runCached(server, cache: cache, ["download", "app-hello", "--json"])
            let path = try #require((try first.json() as? [String: Any])?["path"] as? String)
            let version = (path as NSString).deletingLastPathComponent
            if !recordHasDigest {
                // A record from before the digest was kept.
                var record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: version + "/record.json"))) as? [String: Any])
                #expect(record.removeValue(forKey: "fileList") != nil)
                try writeTestFile(version + "/record.json", JSONSerialization.data(withJSONObject: record))
            }
            #expect(!first.stdout.contains("fileList"), "the digest stays in record.json")
            let list = try String(contentsOfFile: version + "/files.list", encoding: .utf8)
            try writeTestFile(version + "/files.list", (String(list.split(separator: "\n")[0]) + "\n"))
            try writeTestFile(path + "/index.html", "<html>changed</html>")
            // Without its kept zip, the version cannot be repaired offline.
            for zip in try FileManager.default.contentsOfDirectory(atPath: version) where zip.hasSuffix(".zip") {
                try FileManager.default.removeItem(atPath: version + "/" + zip)
            }

            let load = try await runCached(server, cache: cache, ["load", "app-hello", "--offline"])
            expectFailure(load, status: 65, mentioning: "damaged")
            let verify = try await runCached(server, cache: cache, ["cache", "verify"])
            expectFailure(verify, status: 65, mentioning: "damaged")
        }
    }

    @Test func pruneSurvivesRecordsWithHugeSizes() async throws {
        let app = try ServedApp(versions: ["ver-1", "ver-2"])
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            for version in ["ver-1", "ver-2"] {
                let result = try await runCached(server, cache: cache, ["download", "app-hello", "--version", version, "--json"])
                let path = try #require((try result.json() as? [String: Any])?["path"] as? String)
                let recordPath = (path as NSString).deletingLastPathComponent + "/record.json"
                var record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: recordPath))) as? [String: Any])
                record["sizeBytes"] = Int64(5_000_000_000_000_000_000)  // two of them overflow Int64
                try writeTestFile(recordPath, JSONSerialization.data(withJSONObject: record))
            }
            let pruned = try await runCached(server, cache: cache, ["cache", "prune", "--max-bytes", "1000", "--json"])
            #expect(pruned.status == 0, "\(pruned.stderr)")
            #expect((try pruned.json() as? [[String: Any]])?.count == 2, "\(pruned.stdout)")
        }
    }

    @Test func untrustedTextNeverDrivesTheTerminalAndJSONKeepsItExactly() async throws {
        let title = "Evil\u{1B}]0;pwned\u{07}App"
        let tag = "1.0\u{1B}[31m-red"
        let reason = "to greet you\u{9B}2J\u{1B}[2J"
        var files = BundleFactory.helloFiles
        files["manifest.json"] = #"{"reqPermissions": [{"name": "rakuten.miniapp.user.USER_NAME", "reason": "to greet you\u009b2J\u001b[2J"}], "customMetaData": {"theme": "\u001b]0;x\u0007dark\u007f"}}"#
        var app = try ServedApp(files: files)
        app.fixture.apps[0].displayName = title
        app.fixture.apps[0].versions[0].versionTag = tag
        app.fixture.apps[0].versions[0].metadataJSON = files["manifest.json"]!
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            var results: [(String, CommandResult)] = []
            for arguments in [
                ["list"], ["info", "app-hello"], ["manifest", "app-hello"], ["download", "app-hello"], ["cache", "list"],
                ["permissions", "show", "app-hello"], ["load", "app-hello"], ["list", "--verbose"],
            ] {
                results.append((arguments.joined(separator: " "), try await runCached(server, cache: cache, arguments)))
            }
            #expect(results.first { $0.0 == "load app-hello" }?.1.status == 77)
            for (command, result) in results {
                for (stream, text) in [("stdout", result.stdout), ("stderr", result.stderr)] {
                    let raw = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n" && $0 != "\t") || (0x7F...0x9F).contains($0.value) }
                    #expect(raw.isEmpty, "\(command) printed control characters on \(stream): \(raw.map { String($0.value, radix: 16) })")
                }
            }
            #expect(results[0].1.stdout.contains("Evil\\u{1b}]0;pwned\\u{7}App"), "shown, neutralised: \(results[0].1.stdout)")

            // --json keeps the exact values, escaped as JSON.
            let list = try await runCached(server, cache: cache, ["list", "--json"])
            #expect(!list.stdout.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
            let apps = try #require(try list.json() as? [[String: Any]])
            #expect(apps.first?["displayName"] as? String == title)
            #expect((apps.first?["version"] as? [String: Any])?["versionTag"] as? String == tag)
            let manifest = try #require(try await runCached(server, cache: cache, ["manifest", "app-hello", "--json"]).json() as? [String: Any])
            #expect((manifest["customMetaData"] as? [String: String])?["theme"] == "\u{1B}]0;x\u{07}dark\u{7F}")
            #expect(((manifest["reqPermissions"] as? [[String: Any]])?.first?["reason"] as? String) == reason)

            // A permission name with control characters is refused where names are accepted.
            for name in ["com.example.\u{1B}[2J", "com.example.\u{9B}x"] {
                expectFailure(try await runCached(server, cache: cache, ["permissions", "grant", "app-hello", name]), status: 64)
            }
        }
    }

    @Test func previewCodesResolveToTheVersionTheyNameForInfoDownloadAndLoad() async throws {
        #expect(try await CommandRunner.run(["keygen", "--out", work + "/k"]).status == 0)
        let registry = work + "/registry"
        let folder = try BundleFactory.folder(BundleFactory.helloFiles)
        let published = try await CommandRunner.run(["publish", folder, "--registry", registry, "--app-id", "hello", "--version-tag", "1.0.0", "--key", work + "/k.pem", "--json"])
        #expect(published.status == 0, "\(published.stderr)")
        let draft = try await CommandRunner.run(["publish", folder, "--registry", registry, "--app-id", "hello", "--version-tag", "2.0.0-beta", "--key", work + "/k.pem", "--preview", "--json"])
        let document = try #require(try draft.json() as? [String: Any])
        let code = try #require(document["previewCode"] as? String)
        let draftVersion = try #require(document["versionId"] as? String)
        let environment = ["MINIAPP_PLATFORM": registry, "MINIAPP_CACHE_DIR": work + "/cache"]

        let info = try await CommandRunner.run(["info", "--preview-code", code, "--json"], environment: environment)
        #expect(info.status == 0, "\(info.stderr)")
        let record = try #require(try info.json() as? [String: Any])
        #expect(record["id"] as? String == "hello")
        #expect((record["version"] as? [String: Any])?["versionId"] as? String == draftVersion)

        let download = try await CommandRunner.run(["download", "--preview-code", code, "--json"], environment: environment)
        #expect(download.status == 0, "\(download.stderr)")
        let installed = try #require(try download.json() as? [String: Any])
        #expect(installed["versionId"] as? String == draftVersion && installed["signature"] as? String == "verified")
        #expect(try await CommandRunner.run(["permissions", "grant", "hello", "rakuten.miniapp.user.USER_NAME"], environment: environment).status == 0)
        let load = try await CommandRunner.run(["load", "hello", "--preview-code", code, "--json"], environment: environment)
        #expect(load.status == 0, "\(load.stderr)")
        #expect((try load.json() as? [String: Any])?["versionId"] as? String == draftVersion)
        // Without the code, the published version is the latest.
        #expect((try await CommandRunner.run(["info", "hello", "--json"], environment: environment).json() as? [String: Any]).flatMap { ($0["version"] as? [String: Any])?["versionTag"] as? String } == "1.0.0")

        expectFailure(try await CommandRunner.run(["info", "--preview-code", "unknowncode1"], environment: environment), status: 66)
        expectFailure(try await CommandRunner.run(["download", "--preview-code", code, "--version", draftVersion], environment: environment), status: 64)
        expectFailure(try await CommandRunner.run(["load", "--preview-code", code, "--offline"], environment: environment), status: 64)
        expectFailure(try await CommandRunner.run(["load", "other", "--preview-code", code], environment: environment), status: 64, mentioning: "names app hello")
        expectFailure(try await CommandRunner.run(["info"], environment: environment), status: 64)
    }
}
