import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import NIOConcurrencyHelpers
import Testing

/// A platform serving one app with real zips signed at test time.
struct ServedApp: Sendable {
    let key: SigningKey
    var fixture: PlatformFixture
    let zipPath: String

    init(files: [String: String] = BundleFactory.helloFiles, versions: [String] = ["ver-1"]) throws {
        key = try SigningKey.generate()
        var blobs: [String: [UInt8]] = [:]
        var fixtureVersions: [FixtureVersion] = []
        var firstPath = ""
        for version in versions {
            let signed = try BundleFactory.sign(try BundleFactory.zip(files), versionId: version, key: key)
            let path = "cdn/min-app-hello/ver-\(version)/app.zip"
            if firstPath.isEmpty { firstPath = "/" + path }
            blobs["/" + path] = signed.zip
            fixtureVersions.insert(FixtureVersion(versionId: version, versionTag: "1.0.\(fixtureVersions.count)", files: [path], publicKeyId: "key-1", signature: signed.signature), at: 0)
        }
        fixture = PlatformFixture(apps: [FixtureApp(id: "app-hello", displayName: "Hello", versions: fixtureVersions)],
                                  keys: ["key-1": (ecKey: key.publicKey.ecKey, pemKey: key.publicKey.pem)])
        fixture.blobs = blobs
        zipPath = firstPath
    }
}

func runCached(_ server: TestHTTPServer, cache: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> CommandResult {
    var env = [
        "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1",
        "MINIAPP_CONFIG": try fastConfigFile(), "MINIAPP_CACHE_DIR": cache,
    ]
    env.merge(environment) { _, new in new }
    return try await CommandRunner.run(arguments, environment: env)
}

@Suite struct CacheCommandTests {
    let cache = try! TemporaryDirectory.make().path

    @Test func downloadPrintsTheInstallRecordAndReusesTheCache() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let first = try await runCached(server, cache: cache, ["download", "app-hello", "--json"])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            let record = try #require(try first.json() as? [String: Any])
            for key in ["id", "versionId", "versionTag", "path", "source", "signature", "sha256", "sizeBytes", "installedAt", "lastUsedAt"] {
                #expect(record.keys.contains(key), "missing \(key)")
            }
            #expect(record["source"] as? String == "network")
            #expect(record["signature"] as? String == "verified")
            let path = try #require(record["path"] as? String)
            #expect(FileManager.default.fileExists(atPath: path + "/index.html"))
            #expect(!first.stderr.contains("\r"), "no progress bar when stderr is not a terminal")

            let second = try await runCached(server, cache: cache, ["download", "app-hello"])
            #expect(second.status == 0)
            #expect(second.stdout.split(separator: "\n").last.map(String.init) == path)
            #expect(server.requests.filter { $0.path == app.zipPath }.count == 1)

            let info = try await runCached(server, cache: cache, ["info", "app-hello", "--json"])
            let cacheState = try #require((try info.json() as? [String: Any])?["cache"] as? [String: Any])
            #expect(cacheState["present"] as? Bool == true)
            #expect(cacheState["path"] as? String == path)
            #expect(cacheState["intact"] as? Bool == true)
            #expect(cacheState["signature"] as? String == "verified")

            let list = try await runCached(server, cache: cache, ["list", "--json"])
            #expect((try list.json() as? [[String: Any]])?.first?["cached"] as? Bool == true)
            let offlineList = try await runCached(server, cache: cache, ["list", "--offline", "--json"])
            #expect((try offlineList.json() as? [[String: Any]])?.map { $0["id"] as? String } == ["app-hello"])
            let offlineManifest = try await runCached(server, cache: cache, ["manifest", "app-hello", "--offline", "--json"])
            let required = (try offlineManifest.json() as? [String: Any])?["reqPermissions"] as? [[String: Any]]
            #expect(required?.first?["reason"] as? String == "to greet you", "placeholders are filled from _locale")
        }
    }

    /// A hit of a given version is answered before any thread starts (QuickCommandLine's
    /// `runFromCacheNow`); everything a hit does besides reusing the copy takes the usual path: a damaged
    /// copy is repaired, leftovers of killed processes are swept, `--force` downloads again.
    @Test func aGivenVersionsHitIsAnsweredFromTheCacheAndEverythingElseTakesTheUsualPath() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let first = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1", "--json"])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            let installed = try #require(try first.json() as? [String: Any])
            let path = try #require(installed["path"] as? String)
            let requests = server.requests.count

            let hit = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1", "--json"])
            #expect(hit.status == 0, "stderr: \(hit.stderr)")
            let reused = try #require(try hit.json() as? [String: Any])
            #expect(reused["source"] as? String == "cache")
            #expect(reused["path"] as? String == path)
            #expect((reused["lastUsedAt"] as? String ?? "") > (installed["lastUsedAt"] as? String ?? "~"), "the last use is noted")
            let text = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1"])
            #expect(text.stdout == path + "\n")
            #expect(text.stderr.contains("cached app-hello ver-1 (1.0.0), signature verified"), "stderr: \(text.stderr)")
            #expect(server.requests.count == requests, "a hit of a given version asks the platform nothing")

            // A damaged copy: repaired from its kept zip, with no request either.
            try writeTestFile(path + "/index.html", Array("tampered".utf8))
            let repaired = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1", "--json"])
            #expect(repaired.status == 0, "stderr: \(repaired.stderr)")
            #expect((try repaired.json() as? [String: Any])?["repairedAt"] != nil)
            #expect(try String(contentsOfFile: path + "/index.html", encoding: .utf8) != "tampered")
            #expect(server.requests.count == requests)

            // What a killed process left in the cache's working folders: swept by the hit's usual path.
            let namespaceKey = URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent
            let leftover = cache + "/tmp/\(namespaceKey)@app-hello@ver-2"
            try FileManager.default.createDirectory(atPath: leftover, withIntermediateDirectories: true)
            let swept = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1"])
            #expect(swept.status == 0, "stderr: \(swept.stderr)")
            #expect(!FileManager.default.fileExists(atPath: leftover))

            let forced = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1", "--force"])
            #expect(forced.status == 0, "stderr: \(forced.stderr)")
            #expect(server.requests.filter { $0.path == app.zipPath }.count == 2, "--force downloads again")
        }
    }

    @Test func aTerminalGetsAProgressBarOnStderr() async throws {
        let app = try ServedApp(files: BundleFactory.helloFiles.merging(["big.bin": String(repeating: "z0123456789", count: 100_000)]) { $1 })
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            // `script` runs the command on a pseudo-terminal, as a person's shell would.
            let command = "MINIAPP_PLATFORM=\(server.baseURL.absoluteString) MINIAPP_PROJECT_ID=proj-1 MINIAPP_CACHE_DIR=\(cache) HOME=\(cache) \(CommandRunner.executable.path) download app-hello"
            let (status, output) = try await ChildProcess.output("/usr/bin/script", ["-qec", command, "/dev/null"])
            #expect(status == 0, "output: \(output)")
            #expect(output.contains("app-hello ["), "a bar is drawn")
            #expect(output.contains("100%"))
            let quiet = try await runCached(server, cache: cache, ["download", "app-hello", "--force"])
            #expect(!quiet.stderr.contains("%"), "no bar when stderr is not a terminal")
        }
    }

    @Test func hostileAndTamperedBundlesExit65AndLeaveTheCacheAlone() async throws {
        var app = try ServedApp()
        let hostile = try BundleFactory.sign(RawZip([.file("index.html"), .symlink("evil", to: "/etc/passwd")]).bytes, versionId: "ver-1", key: app.key)
        app.fixture.blobs[app.zipPath] = hostile.zip
        app.fixture.apps[0].versions[0].signature = hostile.signature
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let result = try await runCached(server, cache: cache, ["download", "app-hello"])
            expectFailure(result, status: 65, mentioning: "symbolic link")
            #expect(CacheSnapshot(cache).files.isEmpty)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
        var tampered = try ServedApp()
        tampered.fixture.blobs[tampered.zipPath]![100] ^= 0xFF
        try await withTestServer({ [tampered] in tampered.fixture.handle($0) }) { server in
            expectFailure(try await runCached(server, cache: cache, ["download", "app-hello"]), status: 65, mentioning: "signature")
            #expect(CacheSnapshot(cache).files.isEmpty)
        }
    }

    @Test func unavailableZipAndOfflineMissesHaveTheirExitCodes() async throws {
        var app = try ServedApp()
        app.fixture.blobs = [:]
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            expectFailure(try await runCached(server, cache: cache, ["download", "app-hello"]), status: 69)
            expectFailure(try await runCached(server, cache: cache, ["load", "app-hello", "--offline"]), status: 66)
            expectFailure(try await runCached(server, cache: cache, ["download", "app-nope"]), status: 66)
            expectFailure(try await runCached(server, cache: cache, ["cache", "remove", "app-hello"]), status: 66)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    @Test func eightProcessesAskingAtOnceAllSucceedWithOneResult() async throws {
        let app = try ServedApp(files: BundleFactory.helloFiles.merging(["big.bin": String(repeating: "x0123456789", count: 200_000)]) { $1 })
        try await withTestServer({ [app] request in
            var response = app.fixture.handle(request)
            if request.path == app.zipPath { response.delay = .milliseconds(300) }
            return response
        }) { server in
            let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
                for _ in 0..<8 { group.addTask { try await runCached(server, cache: cache, ["download", "app-hello", "--json"]) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
            let paths = Set(results.compactMap { (try? $0.json() as? [String: Any])?["path"] as? String })
            #expect(paths.count == 1)
            #expect(server.requests.filter { $0.path == app.zipPath }.count == 1)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
            let verify = try await runCached(server, cache: cache, ["cache", "verify", "--json"])
            #expect(verify.status == 0)
        }
    }

    @Test func processKilledMidDownloadLeavesNothingInTheWay() async throws {
        let app = try ServedApp(files: BundleFactory.helloFiles.merging(["big.bin": String(repeating: "y0123456789", count: 300_000)]) { $1 })
        let stall = NIOLockedValueBox(true)
        try await withTestServer({ [app] request in
            var response = app.fixture.handle(request)
            if request.path == app.zipPath, stall.withLockedValue({ $0 }) {
                response.action = .partialThenStall(response.body.count / 3)
            }
            return response
        }) { server in
            // The stalled download must still be waiting when it is killed, however late this test gets
            // to look on a loaded machine: one attempt, with an hour to read (under the default 30 s and
            // a retry, a full suite once saw it give up with 69 before the kill).
            let config = try TemporaryDirectory.make().path + "/patient.json"
            try writeTestFile(config, #"{"timeouts": {"readSeconds": 3600}, "retry": {"maxAttempts": 1, "budgetSeconds": 3600}}"#)
            let process = try CommandRunner.start(["download", "app-hello"], environment: [
                "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": cache, "HOME": cache,
                "MINIAPP_CONFIG": config,
            ])
            let deadline = ContinuousClock.now + .seconds(60)
            while !server.requests.contains(where: { $0.path == app.zipPath }), process.isRunning, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(300))
            let scratch = (try? FileManager.default.contentsOfDirectory(atPath: cache + "/tmp")) ?? []
            #expect(!scratch.isEmpty, "the download was under way when killed")
            process.kill(SIGKILL)
            await process.exited()
            #expect(process.terminationReason == .uncaughtSignal, "it ended by itself first, with status \(process.terminationStatus); requests: \(server.requests.map(\.path))")
            #expect(CacheSnapshot(cache).files.isEmpty, "nothing half-installed is visible")

            stall.withLockedValue { $0 = false }
            let next = try await runCached(server, cache: cache, ["download", "app-hello", "--json"])
            #expect(next.status == 0, "stderr: \(next.stderr)")
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
            let list = try await runCached(server, cache: cache, ["cache", "list", "--json"])
            #expect((try list.json() as? [Any])?.count == 1)
        }
    }

    @Test func anOlderVersionIsDownloadedWithOneFileManifestRequest() async throws {
        let app = try ServedApp(versions: ["ver-1", "ver-2"])
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let result = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1", "--json"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect((try result.json() as? [String: Any])?["versionId"] as? String == "ver-1")
            #expect(server.requests.filter { $0.path.hasSuffix("/manifest") }.count == 1, "\(server.requests.map(\.path))")
        }
    }

    @Test func verifyNamesEachDamagedVersion() async throws {
        let app = try ServedApp(versions: ["ver-1", "ver-2"])
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            var paths: [String] = []
            for version in ["ver-1", "ver-2"] {
                let result = try await runCached(server, cache: cache, ["download", "app-hello", "--version", version, "--json"])
                paths.append(try #require((try result.json() as? [String: Any])?["path"] as? String))
            }
            // The two versions' index.html are the same file (one inode, 0444): damage to it is damage
            // to both, and verify names both.
            var first = stat(), second = stat()
            #expect(lstat(paths[0] + "/index.html", &first) == 0 && lstat(paths[1] + "/index.html", &second) == 0)
            #expect(first.st_ino == second.st_ino && first.st_nlink == 2)
            #expect(first.st_mode & 0o777 == 0o444)
            try writeTestFile(paths[0] + "/index.html", "changed")
            let verify = try await runCached(server, cache: cache, ["cache", "verify", "--json"])
            #expect(verify.status == 65)
            #expect(verify.stderrLines.first?.hasPrefix("error: ") == true)
            #expect(verify.stderr.contains("app-hello ver-1") && verify.stderr.contains("app-hello ver-2"))
            let entries = try #require(try verify.json() as? [[String: Any]])
            for version in ["ver-1", "ver-2"] {
                let damaged = try #require(entries.first { $0["versionId"] as? String == version })
                #expect(damaged["intact"] as? Bool == false)
                #expect(damaged["problems"] as? [String] == ["changed: index.html"])
            }

            let pruned = try await runCached(server, cache: cache, ["cache", "prune", "--keep", "1", "--json"])
            #expect(pruned.status == 0)
            #expect((try pruned.json() as? [[String: Any]])?.count == 1)
            let removed = try await runCached(server, cache: cache, ["cache", "remove", "app-hello"])
            #expect(removed.status == 0)
            #expect(CacheSnapshot(cache).files.isEmpty)
        }
    }

    @Test func installTakesABundleSignedByStockOpenSSL() async throws {
        let directory = try TemporaryDirectory.make()
        let zip = directory.appendingPathComponent("app.zip")
        try writeTestFile(zip.path, Data(try BundleFactory.zip(BundleFactory.helloFiles)))
        let shell = """
            set -e; cd '\(directory.path)'
            openssl ecparam -name prime256v1 -genkey -noout -out key.pem 2>/dev/null
            openssl ec -in key.pem -pubout -out pub.pem 2>/dev/null
            printf '%s%s' v-7 "$(sha256sum app.zip | cut -c1-64)" > msg
            openssl dgst -sha256 -sign key.pem msg | base64 -w0 > sig
            """
        #expect(await runTool("/bin/sh", ["-c", shell]) == 0)
        let signature = try String(contentsOf: directory.appendingPathComponent("sig"), encoding: .utf8)
        let environment = ["MINIAPP_CACHE_DIR": cache]
        let pub = directory.appendingPathComponent("pub.pem").path
        let installed = try await CommandRunner.run(["install", zip.path, "--app-id", "app-x", "--version-id", "v-7", "--signature", signature, "--public-key", pub, "--json"], environment: environment)
        #expect(installed.status == 0, "stderr: \(installed.stderr)")
        let record = try #require(try installed.json() as? [String: Any])
        #expect(record["source"] as? String == "bundle")
        #expect(record["signature"] as? String == "verified")

        expectFailure(try await CommandRunner.run(["install", zip.path, "--app-id", "app-x", "--version-id", "v-8", "--signature", signature, "--public-key", pub], environment: environment), status: 65)
        expectFailure(try await CommandRunner.run(["install", zip.path, "--app-id", "app-x", "--version-id", "v-8", "--signature", signature], environment: environment), status: 64)
        expectFailure(try await CommandRunner.run(["install", zip.path, "--app-id", "app-x", "--version-id", "v-9"], environment: environment), status: 65)
        let advisory = try await CommandRunner.run(["install", zip.path, "--app-id", "app-x", "--version-id", "v-9", "--signature-policy", "advisory"], environment: environment)
        #expect(advisory.status == 0)
        #expect(advisory.stderrLines.first?.hasPrefix("warning:") == true)
        _ = try await CommandRunner.run(["permissions", "grant", "app-x", "USER_NAME"], environment: environment)
        let loaded = try await CommandRunner.run(["load", "app-x", "--version", "v-9", "--offline"], environment: environment)
        #expect(loaded.status == 0)
        #expect(loaded.stderr.contains("unverified"), "every later use warns")
    }

    @Test func modesAreFixedWhateverTheUmask() async throws {
        let zip = try TemporaryDirectory.make().appendingPathComponent("app.zip")
        try writeTestFile(zip.path, Data(try BundleFactory.zip(BundleFactory.helloFiles)))
        // umask 077 would make 0600 files and 0700 folders of whatever is created without a chmod.
        let shell = "umask 077; MINIAPP_CACHE_DIR='\(cache)' exec '\(CommandRunner.executable.path)' install '\(zip.path)' --app-id app-m --version-id v-1 --signature-policy advisory --quiet"
        #expect(await runTool("/bin/sh", ["-c", shell]) == 0)
        let listed = try await CommandRunner.run(["cache", "list", "--json"], environment: ["MINIAPP_CACHE_DIR": cache])
        let records = try #require(try listed.json() as? [[String: Any]])
        let bundle = try #require(records.first?["path"] as? String)
        let walker = try #require(FileManager.default.enumerator(atPath: bundle))
        var seen = 0
        while let relative = walker.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: bundle + "/" + relative)
            let expected = attributes[.type] as? FileAttributeType == .typeDirectory ? 0o755 : 0o444
            #expect(attributes[.posixPermissions] as? Int == expected, "\(relative)")
            seen += 1
        }
        #expect(seen >= 6)
    }
}
