// `stat` and its kin reach this file through a C module's header too (MemberImportVisibility).
import CDispatch
import Foundation
import MiniAppCore
import MiniAppKit
import MiniAppTestSupport
import NIOConcurrencyHelpers
import Testing

/// Updates as a user of the CLI sees them: delta downloads from `miniapp serve` itself, the switches
/// that turn them off, kept zips in `cache list`, `cache verify --signatures`, `prune --max-bytes`,
/// `install`, and a process killed in the middle of an update.
@Suite struct UpdateCommandTests {
    let work = try! TemporaryDirectory.make().path

    /// A registry with version v-1 of hello (the update bundle) published with a new key.
    func registry() async throws -> (registry: String, key: String) {
        let key = work + "/publisher"
        let keygen = try await CommandRunner.run(["keygen", "--out", key, "--quiet"])
        #expect(keygen.status == 0, "stderr: \(keygen.stderr)")
        let registry = work + "/registry"
        try await publish(version: 1, registry: registry, key: key)
        return (registry, key)
    }

    func publish(version: Int, registry: String, key: String) async throws {
        let folder = try BundleFactory.folder(BundleFactory.updateFiles(version: version))
        let published = try await CommandRunner.run([
            "publish", folder, "--registry", registry, "--app-id", "hello", "--version-id", "v-\(version)",
            "--version-tag", "1.0.\(version)", "--key", key + ".pem", "--quiet",
        ])
        #expect(published.status == 0, "stderr: \(published.stderr)")
    }

    /// The zip body bytes `serve` logged for `bundle.zip` GET requests (one line per request) since line
    /// `from`; a HEAD (what a server does with several ranges, asked once per origin) has no body.
    func zipTraffic(_ log: URL, from: Int) throws -> (lines: [String], bytes: Int) {
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").dropFirst(from).map(String.init).filter { $0.contains("GET /") && $0.contains("/bundle.zip ") }
        let bytes = lines.compactMap { line in line.split(separator: " ").first { $0.hasSuffix("B") }.flatMap { Int($0.dropLast()) } }.reduce(0, +)
        return (lines, bytes)
    }

    func logLines(_ log: URL) -> Int {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    func record(_ result: CommandResult) throws -> [String: Any] {
        #expect(result.status == 0, "stderr: \(result.stderr)")
        return try #require(try result.json() as? [String: Any])
    }

    func transfer(_ record: [String: Any]) -> (method: String?, fetched: Int?, reused: Int?) {
        let transfer = record["transfer"] as? [String: Any]
        return (transfer?["method"] as? String, transfer?["fetchedBytes"] as? Int, transfer?["reusedBytes"] as? Int)
    }

    func inode(_ path: String) -> ino_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_ino : 0
    }

    @Test func anUpdateFromServeFetchesOnlyWhatChangedAndEverySwitchTurnsThatOff() async throws {
        let (registry, key) = try await registry()
        let (server, url, log) = try await startServe(registry)
        defer { server.terminate() }
        let config = work + "/no-delta.json"
        try writeTestFile(config, #"{"delta": false}"#)
        func environment(_ cache: String) -> [String: String] {
            ["MINIAPP_PLATFORM": url.absoluteString, "MINIAPP_PROJECT_ID": "any-project", "MINIAPP_CACHE_DIR": work + "/" + cache]
        }
        for cache in ["delta", "flag", "env", "config"] {
            let first = try record(try await CommandRunner.run(["download", "hello", "--json"], environment: environment(cache)))
            #expect(first["versionId"] as? String == "v-1")
            #expect(transfer(first).method == "full")
        }
        try await publish(version: 2, registry: registry, key: key)
        let size = Int(try #require(try FileManager.default.attributesOfItem(atPath: registry + "/apps/hello/versions/v-2/bundle.zip")[.size] as? Int))

        // The update: the zip's end, then the changed entries in one multipart request.
        var mark = logLines(log)
        let update = try record(try await CommandRunner.run(["download", "hello", "--json"], environment: environment("delta")))
        #expect(update["versionId"] as? String == "v-2")
        #expect(update["signature"] as? String == "verified")
        let (method, fetched, reused) = transfer(update)
        #expect(method == "delta")
        let traffic = try zipTraffic(log, from: mark)
        #expect(traffic.lines.count == 2 && traffic.lines.allSatisfy { $0.contains(" 206 ") }, "\(traffic.lines)")
        #expect(fetched == traffic.bytes, "the record counts what the server sent: \(traffic.lines)")
        #expect(traffic.bytes < size / 5, "fetched \(traffic.bytes) of \(size)")
        #expect((fetched ?? 0) + (reused ?? 0) >= size)

        // The kept zip is v-2's alone; unchanged files are one inode in both versions.
        let list = try #require(try await CommandRunner.run(["cache", "list", "--json"], environment: environment("delta")).json() as? [[String: Any]])
        let byVersion = Dictionary(uniqueKeysWithValues: list.map { ($0["versionId"] as? String ?? "", $0) })
        #expect(byVersion["v-2"]?["zipBytes"] as? Int == size)
        #expect(byVersion["v-1"]?["zipBytes"] as? Int == 0)
        #expect((byVersion["v-2"]?["sizeBytes"] as? Int ?? 0) > 120 * 16384)
        let paths = try ["v-1", "v-2"].map { try #require(byVersion[$0]?["path"] as? String) }
        #expect(inode(paths[0] + "/assets/part-0.js") == inode(paths[1] + "/assets/part-0.js"))
        #expect(inode(paths[0] + "/assets/part-5.js") != inode(paths[1] + "/assets/part-5.js"), "a changed file is its own")

        // --no-delta, MINIAPP_DELTA=0 and the config key each download the whole zip.
        for (cache, arguments, extra) in [
            ("flag", ["--no-delta"], [:]), ("env", [], ["MINIAPP_DELTA": "0"]), ("config", [], ["MINIAPP_CONFIG": config]),
        ] as [(String, [String], [String: String])] {
            mark = logLines(log)
            let full = try record(try await CommandRunner.run(["download", "hello", "--json"] + arguments, environment: environment(cache).merging(extra) { $1 }))
            #expect(full["versionId"] as? String == "v-2")
            #expect(transfer(full).method == "full", "\(cache)")
            #expect(transfer(full).fetched == size, "\(cache)")
            let whole = try zipTraffic(log, from: mark)
            #expect(whole.lines.count == 1 && whole.lines[0].contains(" 200 "), "\(cache): \(whole.lines)")
        }

        // Every kept zip verifies; one whose bytes changed fails, by name, and the files stay intact.
        let verified = try await CommandRunner.run(["cache", "verify", "--signatures", "--json"], environment: environment("delta"))
        #expect(verified.status == 0, "stderr: \(verified.stderr)")
        let entries = try #require(try verified.json() as? [[String: Any]])
        #expect(entries.first { $0["versionId"] as? String == "v-2" }?["keptZip"].flatMap { $0 as? [String: Any] }?["verified"] as? Bool == true)
        #expect(entries.first { $0["versionId"] as? String == "v-1" }.map { $0["keptZip"] is NSNull } == true)
        let kept = try #require(try FileManager.default.contentsOfDirectory(atPath: paths[1] + "/..").first { $0.hasSuffix(".zip") }).description
        let keptPath = paths[1] + "/../" + kept
        chmod(keptPath, 0o644)
        let handle = try #require(FileHandle(forUpdatingAtPath: keptPath))
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data("tampered".utf8))
        try handle.close()
        let rejected = try await CommandRunner.run(["cache", "verify", "--signatures"], environment: environment("delta"))
        expectFailure(rejected, status: 65, mentioning: "hello v-2")
        let plain = try await CommandRunner.run(["cache", "verify"], environment: environment("delta"))
        #expect(plain.status == 0, "without --signatures only the files are checked: \(plain.stderr)")
    }

    @Test func pruneMaxBytesCountsKeptZips() async throws {
        let app = try UpdatePlatform(host: RangeHost(mode: .multipart))
        app.published.withLockedValue { $0 = true }
        try await withTestServer({ [app] in app.handle($0) }) { server in
            let cache = work + "/cache"
            for version in ["ver-1", "ver-2"] {
                _ = try record(try await runCached(server, cache: cache, ["download", "app-hello", "--version", version, "--json"]))
            }
            let list = try #require(try await runCached(server, cache: cache, ["cache", "list", "--json"]).json() as? [[String: Any]])
            let files = list.compactMap { $0["sizeBytes"] as? Int }.reduce(0, +)
            let zips = list.compactMap { $0["zipBytes"] as? Int }.reduce(0, +)
            #expect(zips == app.zips["/zips/ver-2.zip"]!.count)
            let kept = try await runCached(server, cache: cache, ["cache", "prune", "--max-bytes", "\(files + zips)", "--json"])
            #expect((try kept.json() as? [Any])?.count == 0, "files and zip fit: \(kept.stderr)")
            let pruned = try await runCached(server, cache: cache, ["cache", "prune", "--max-bytes", "\(files + zips - 1)", "--json"])
            let removed = try #require(try pruned.json() as? [[String: Any]])
            #expect(removed.map { $0["versionId"] as? String } == ["ver-1"], "the files alone fit, the zip is counted too")
        }
    }

    @Test func aPipelineRebuildFromServeFetchesLittleMoreThanAPerfectDelta() async throws {
        // The same files zipped by Python's zipfile, streamed, at each build (new entry times), published
        // as zipped.
        let key = work + "/publisher"
        _ = try await CommandRunner.run(["keygen", "--out", key, "--quiet"])
        let registry = work + "/registry"
        let files = BundleFactory.updateFiles(version: 1)
        let zips = [try await PythonZip.make(files, .init(year: 2020, streamed: true)), try await PythonZip.make(files, .init(year: 2021, streamed: true))]
        func publish(_ version: Int) async throws {
            let path = work + "/v\(version).zip"
            try writeTestFile(path, zips[version - 1])
            let published = try await CommandRunner.run([
                "publish", path, "--registry", registry, "--app-id", "hello", "--version-id", "v-\(version)",
                "--version-tag", "1.0.\(version)", "--key", key + ".pem", "--quiet",
            ])
            #expect(published.status == 0, "stderr: \(published.stderr)")
        }
        try await publish(1)
        let (server, url, log) = try await startServe(registry)
        defer { server.terminate() }
        let environment = ["MINIAPP_PLATFORM": url.absoluteString, "MINIAPP_PROJECT_ID": "any-project", "MINIAPP_CACHE_DIR": work + "/cache"]
        #expect(transfer(try record(try await CommandRunner.run(["download", "hello", "--json"], environment: environment))).method == "full")
        try await publish(2)
        #expect(FileManager.default.contents(atPath: registry + "/apps/hello/versions/v-2/bundle.zip").map { [UInt8]($0) } == zips[1], "published as zipped")
        let perfect = try perfectDeltaBytes(old: zips[0], new: zips[1])

        let mark = logLines(log)
        let update = try record(try await CommandRunner.run(["download", "hello", "--json"], environment: environment))
        #expect(update["versionId"] as? String == "v-2")
        #expect(update["signature"] as? String == "verified")
        let (method, fetched, reused) = transfer(update)
        #expect(method == "delta")
        let traffic = try zipTraffic(log, from: mark)
        #expect(fetched == traffic.bytes, "the record counts what the server sent: \(traffic.lines)")
        #expect(traffic.bytes <= perfect + perfect / 10 + 32 << 10, "sent \(traffic.bytes), a perfect delta \(perfect), the zip \(zips[1].count)")
        #expect((fetched ?? 0) + (reused ?? 0) >= zips[1].count)
        #expect(traffic.lines.count == 1, "the end alone: the local headers and data descriptors are rebuilt from the central directory: \(traffic.lines)")
    }

    @Test func installKeepsItsZipAndSharesFiles() async throws {
        let key = work + "/k"
        _ = try await CommandRunner.run(["keygen", "--out", key, "--quiet"])
        let cache = work + "/cache"
        var paths: [String] = []
        for version in [1, 2] {
            let zip = work + "/v\(version).zip"
            try writeTestFile(zip, Data(try BundleFactory.zip(BundleFactory.updateFiles(version: version))))
            let signed = try await CommandRunner.run(["sign", zip, "--version-id", "v-\(version)", "--key", key + ".pem", "--json"])
            let signature = try #require((try signed.json() as? [String: String])?["signature"])
            let installed = try record(try await CommandRunner.run([
                "install", zip, "--app-id", "hello", "--version-id", "v-\(version)", "--signature", signature,
                "--public-key", key + ".pub.pem", "--cache-dir", cache, "--json",
            ]))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: zip)[.size] as? Int)
            #expect(installed["zipBytes"] as? Int == size)
            #expect(transfer(installed).method == "full")
            paths.append(try #require(installed["path"] as? String))
        }
        let list = try #require(try await CommandRunner.run(["cache", "list", "--json", "--cache-dir", cache]).json() as? [[String: Any]])
        #expect(list.first { $0["versionId"] as? String == "v-1" }?["zipBytes"] as? Int == 0, "only the newest version keeps its zip")
        #expect(inode(paths[0] + "/assets/part-0.js") == inode(paths[1] + "/assets/part-0.js"))
        #expect(try FileManager.default.attributesOfItem(atPath: paths[1] + "/assets/part-0.js")[.posixPermissions] as? Int == 0o444)
        let verify = try await CommandRunner.run(["cache", "verify", "--signatures", "--cache-dir", cache])
        #expect(verify.status == 0, "stderr: \(verify.stderr)")

        // The key given with the bundle is what a repair checks the kept zip with, offline.
        let damaged = paths[1] + "/assets/part-5.js"
        chmod(damaged, 0o644)
        try writeTestFile(damaged, "changed")
        let repaired = try record(try await CommandRunner.run(["download", "hello", "--version", "v-2", "--offline", "--cache-dir", cache, "--json"]))
        #expect(repaired["repairedAt"] is String)
        #expect(repaired["source"] as? String == "cache", "this command got it from the cache")
        let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: paths[1] + "/../record.json"))) as? [String: Any]
        #expect(stored?["source"] as? String == "bundle", "the version keeps its source")
        #expect(stored?["repairedAt"] is String)
        #expect(FileManager.default.contents(atPath: damaged) == Data(BundleFactory.updateFiles(version: 2)["assets/part-5.js"]!.utf8))
    }

    @Test func loadWithThePlatformUnreachableRepairsTheNewestVersionOrSaysWhyItCannot() async throws {
        let key = work + "/k"
        _ = try await CommandRunner.run(["keygen", "--out", key, "--quiet"])
        let closed = LoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        let environment = [
            "MINIAPP_PLATFORM": "http://127.0.0.1:\(closed.port)/", "MINIAPP_PROJECT_ID": "proj-1",
            "MINIAPP_CACHE_DIR": work + "/cache", "MINIAPP_CONFIG": try fastConfigFile(), "HOME": work,
        ]
        var paths: [String] = []
        for version in [1, 2] {
            let zip = work + "/v\(version).zip"
            try writeTestFile(zip, try BundleFactory.zip(BundleFactory.updateFiles(version: version)))
            let signed = try await CommandRunner.run(["sign", zip, "--version-id", "v-\(version)", "--key", key + ".pem", "--json"])
            let signature = try #require((try signed.json() as? [String: String])?["signature"])
            let installed = try record(try await CommandRunner.run([
                "install", zip, "--app-id", "hello", "--version-id", "v-\(version)", "--signature", signature, "--public-key", key + ".pub.pem", "--json",
            ], environment: environment))
            paths.append(try #require(installed["path"] as? String))
        }
        let grant = try await CommandRunner.run(["permissions", "grant", "hello", "USER_NAME"], environment: environment)
        #expect(grant.status == 0, "stderr: \(grant.stderr)")
        let changed = paths[1] + "/assets/part-5.js"
        let damages: [(String, () throws -> Void)] = [
            ("a file changed", {
                chmod(changed, 0o644)
                try writeTestFile(changed, Array("changed".utf8))
            }),
            ("a file missing", { try FileManager.default.removeItem(atPath: paths[1] + "/index.html") }),
        ]
        for (damage, apply) in damages {
            try apply()
            let load = try await CommandRunner.run(["load", "hello", "--json"], environment: environment)
            let loaded = try record(load)
            #expect(loaded["versionId"] as? String == "v-2", "\(damage)")
            #expect(loaded["repairedAt"] is String, "\(damage)")
            #expect(load.stderr.contains("connection refused"), "\(damage): \(load.stderr)")
            #expect(load.stderr.contains("repaired it from its kept zip"), "\(damage): \(load.stderr)")
            #expect(FileManager.default.contents(atPath: changed) == Data(BundleFactory.updateFiles(version: 2)["assets/part-5.js"]!.utf8))
            #expect(FileManager.default.fileExists(atPath: paths[1] + "/index.html"), "\(damage)")
        }
        let verify = try await CommandRunner.run(["cache", "verify", "--signatures"], environment: environment)
        #expect(verify.status == 0, "stderr: \(verify.stderr)")

        // A kept zip that fails its check cannot repair: the older intact version, and stderr says why.
        try FileManager.default.removeItem(atPath: paths[1] + "/index.html")
        let keptZip = try #require(try FileManager.default.contentsOfDirectory(atPath: paths[1] + "/..").first { $0.hasSuffix(".zip") })
        let keptPath = paths[1] + "/../" + keptZip
        chmod(keptPath, 0o644)
        var bytes = try #require(FileManager.default.contents(atPath: keptPath).map { [UInt8]($0) })
        bytes[100] ^= 0x01
        try writeTestFile(keptPath, bytes)
        let fallback = try await CommandRunner.run(["load", "hello", "--json"], environment: environment)
        let older = try record(fallback)
        #expect(older["versionId"] as? String == "v-1")
        #expect(fallback.stderr.contains("connection refused"), "\(fallback.stderr)")
        #expect(fallback.stderr.contains("cached version v-2 is damaged and its kept zip cannot repair it"), "\(fallback.stderr)")
        #expect(fallback.stderr.contains("using cached version v-1"), "\(fallback.stderr)")
        #expect(!FileManager.default.fileExists(atPath: paths[1] + "/index.html"), "nothing was installed over v-2")
    }

    @Test func aProcessKilledDuringADeltaUpdateLeavesThePreviousVersionIntact() async throws {
        let app = try UpdatePlatform(host: RangeHost(mode: .multipart))
        let stall = NIOLockedValueBox(true)
        let stalled = NIOLockedValueBox(false)
        try await withTestServer({ [app] request in
            var response = app.handle(request)
            // The ranges after the zip's end: half of them sent, then nothing. (Not the HEAD that asks
            // what several ranges get: a HEAD has no body to stall, and the client must go on to the ranges.)
            if request.method == "GET", let range = request.header("Range"), !range.hasPrefix("bytes=-"), stall.withLockedValue({ $0 }) {
                response.action = .partialThenStall(response.body.count / 2)
                stalled.withLockedValue { $0 = true }
            }
            return response
        }) { server in
            let cache = work + "/cache"
            let first = try record(try await runCached(server, cache: cache, ["download", "app-hello", "--json"]))
            #expect(first["versionId"] as? String == "ver-1")
            let before = CacheTree(cache)
            app.published.withLockedValue { $0 = true }
            // It waits on the stalled ranges until it is killed, however late this test gets to run
            // again (the whole suite shares two cores): no read timeout ends it first.
            try writeTestFile(work + "/patient.json", Array(#"{"timeouts": {"readSeconds": 3600}}"#.utf8))
            let process = try CommandRunner.start(["download", "app-hello"], environment: [
                "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": cache, "HOME": cache,
                "MINIAPP_CONFIG": work + "/patient.json",
            ])
            let deadline = ContinuousClock.now + .seconds(20)
            while !stalled.withLockedValue({ $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(stalled.withLockedValue { $0 }, "the update was fetching ranges when killed")
            try await Task.sleep(for: .milliseconds(300))
            process.kill(SIGKILL)
            await process.exited()
            #expect(process.terminationReason == .uncaughtSignal)

            var after = CacheTree(cache)
            after.entries = after.entries?.filter { !$0.key.hasPrefix("tmp/") && !$0.key.hasPrefix("locks/") }
            var expected = before
            expected.entries = expected.entries?.filter { !$0.key.hasPrefix("tmp/") && !$0.key.hasPrefix("locks/") }
            #expect(after == expected, "the cache outside its scratch folder is as it was")
            let verify = try await runCached(server, cache: cache, ["cache", "verify", "--signatures", "--json"])
            #expect(verify.status == 0, "stderr: \(verify.stderr)")
            #expect((try verify.json() as? [[String: Any]])?.map { $0["versionId"] as? String } == ["ver-1"])

            stall.withLockedValue { $0 = false }
            let next = try record(try await runCached(server, cache: cache, ["download", "app-hello", "--json"]))
            #expect(next["versionId"] as? String == "ver-2")
            #expect(transfer(next).method == "delta")
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }
}
