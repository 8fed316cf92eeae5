import Foundation
import MiniAppCore
import MiniAppTestSupport
import Testing

/// A registry published with TUF (`miniapp tuf ...`, `publish --tuf-key`) installs through the TUF
/// workflow from a registry folder, through `serve`, and with its metadata from nginx serving the same
/// folder; python-tuf's client reads it; each attack is one line and 65 with nothing installed.
/// One test at a time: each runs dozens of commands, servers and python-tuf.
@Suite(.serialized) struct UpdateChannelTests {
    let work = try! TemporaryDirectory.make().path
    var registry: String { work + "/registry" }
    var cache: String { work + "/cache" }
    var root: String { registry + "/tuf/metadata/1.root.json" }
    var tufKeys: [String] { ["--tuf-key", work + "/targets.pem", "--tuf-key", work + "/snapshot.pem", "--tuf-key", work + "/timestamp.pem"] }

    func run(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> CommandResult {
        try await CommandRunner.run(arguments)
    }

    /// Keys for the four roles and the publisher, the repository, and `demo` 1.0.0 as `v100`.
    func makeRegistry() async throws {
        for role in ["root", "targets", "snapshot", "timestamp"] {
            let made = try await run(["tuf", "keygen", "--out", work + "/" + role, "--type", role == "targets" ? "ecdsa" : "ed25519", "-q"])
            #expect(made.status == 0, "\(made.stderr)")
        }
        #expect(try await run(["keygen", "--out", work + "/publisher"]).status == 0)
        let created = try await run([
            "tuf", "init", "--registry", registry, "--root-key", work + "/root.pem", "--targets-key", work + "/targets.pem",
            "--snapshot-key", work + "/snapshot.pem", "--timestamp-key", work + "/timestamp.pem", "--json",
        ])
        #expect(created.status == 0, "\(created.stderr)")
        try await publish("1.0.0", "v100")
    }

    func publish(_ tag: String, _ versionId: String, keys: [String]? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var files = BundleFactory.helloFiles
        files["version.txt"] = tag
        let published = try await run([
            "publish", try BundleFactory.folder(files), "--registry", registry, "--app-id", "demo", "--version-tag", tag, "--version-id", versionId,
            "--key", work + "/publisher.pem",
        ] + (keys ?? tufKeys))
        #expect(published.status == 0, "stderr: \(published.stderr)", sourceLocation: sourceLocation)
    }

    /// Everything in the cache but the TUF metadata and the locks, with each file's bytes.
    func bundles() -> [String: Data] {
        var files: [String: Data] = [:]
        for path in (FileManager.default.enumerator(atPath: cache)?.allObjects as? [String] ?? []) where !path.hasPrefix("locks") && !path.hasPrefix("tuf") {
            files[path] = FileManager.default.contents(atPath: cache + "/" + path) ?? Data()
        }
        return files
    }

    /// Runs `miniapp` under faketime, `offset` from now (`-3d`).
    func runAt(_ offset: String, _ arguments: [String]) async throws -> Int32 {
        let child = try ChildProcess("/usr/bin/faketime", ["-f", offset, CommandRunner.executable.path] + arguments, stdout: .null, stderr: .null)
        return await child.exited()
    }

    @Test func aRegistryWithTUFInstallsFromItsFolderThroughServeAndWithNginxServingItsMetadata() async throws {
        try await makeRegistry()
        let fromFolder = try await run(["download", "demo", "--platform", registry, "--cache-dir", cache, "--tuf-root", root, "--json"])
        #expect(fromFolder.status == 0, "\(fromFolder.stderr)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: cache + "/tuf").first.map { cache + "/tuf/" + $0 } ?? ""
        #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: kept)) ?? []).isSuperset(of: ["root.json", "timestamp.json", "snapshot.json", "targets.json"]))
        // The cache tells of kept metadata that cannot be read, as of a record.
        #expect(try await run(["cache", "verify", "--cache-dir", cache]).status == 0)
        try writeTestFile(kept + "/snapshot.json", Data("{\"signed\": ".utf8))
        let verified = try await run(["cache", "verify", "--cache-dir", cache, "--json"])
        #expect(verified.status == 65)
        let entries = try #require(try verified.json() as? [[String: Any]])
        #expect(entries.contains { $0["id"] as? String == "(TUF metadata)" && ($0["problems"] as? [String])?.first?.contains(kept + "/snapshot.json") == true }, "\(verified.stdout)")
        // The next update fetches it again.
        #expect(try await run(["download", "demo", "--platform", registry, "--cache-dir", cache, "--tuf-root", root]).status == 0)
        #expect(try await run(["cache", "verify", "--cache-dir", cache]).status == 0)

        let (server, url, log) = try await startServe(registry, ["--project-id", "p"])
        defer { server.terminate() }
        let throughServe = ["--platform", url.absoluteString, "--project-id", "p", "--cache-dir", work + "/cache2", "--tuf-root", root]
        let served = try await run(["download", "demo", "--json"] + throughServe)
        #expect(served.status == 0, "\(served.stderr)")
        #expect((try served.json() as? [String: Any])?["versionId"] as? String == "v100")
        /// The TUF files the server was asked for since `mark` lines of its log.
        func tufRequests(after mark: Int) -> [String] {
            let lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst(mark)
            return lines.compactMap { line in line.split(separator: " ").dropFirst().first.flatMap { $0.hasPrefix("/tuf/") ? String($0) : nil } }
        }
        func logLength() -> Int { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").count }
        // A warm update with nothing new fetches the next root's name and the timestamp, nothing more.
        var mark = logLength()
        #expect(try await run(["download", "demo"] + throughServe).status == 0)
        #expect(tufRequests(after: mark) == ["/tuf/metadata/2.root.json", "/tuf/metadata/timestamp.json"])
        // A new version: the timestamp, then the snapshot and the targets it names, and the new zip.
        try await publish("1.0.1", "v101")
        mark = logLength()
        #expect(try await run(["download", "demo"] + throughServe).status == 0)
        #expect(tufRequests(after: mark) == ["/tuf/metadata/2.root.json", "/tuf/metadata/timestamp.json", "/tuf/metadata/3.snapshot.json", "/tuf/metadata/3.targets.json"])

        // nginx serves the same folder as plain files: the metadata comes from it.
        let nginx = try await Nginx.start(root: registry)
        defer { nginx.stop() }
        let viaNginx = try await run([
            "download", "demo", "--platform", url.absoluteString, "--project-id", "p", "--cache-dir", work + "/cache3", "--tuf-root", root,
            "--tuf-metadata", nginx.baseURL + "tuf/metadata/", "--json",
        ])
        #expect(viaNginx.status == 0, "\(viaNginx.stderr)")
        #expect(nginx.requests().contains { $0.contains("GET /tuf/metadata/timestamp.json") })

        // python-tuf's client reads our metadata and downloads our zip, from serve and from nginx.
        for base in [url.absoluteString, nginx.baseURL] {
            let folder = try TemporaryDirectory.make().path
            let lines = try await PythonTUF.ngclient(
                base: base + "tuf", client: folder + "/metadata", downloads: folder + "/downloads", targets: ["demo/v100/bundle.zip"], trusting: root
            )
            #expect(lines.first?.hasPrefix("demo/v100/bundle.zip ") == true && lines.first?.contains(#""versionTag": "1.0.0""#) == true, "\(lines)")
        }
    }

    @Test func eachAttackOnTheChannelIsOneLineAnd65WithNothingInstalled() async throws {
        try await makeRegistry()
        let common = ["--platform", registry, "--cache-dir", cache, "--tuf-root", root]
        // A version the platform offers that TUF does not list (published while the repository was away).
        try FileManager.default.moveItem(atPath: registry + "/tuf", toPath: work + "/tuf-away")
        try await publish("1.0.1", "v101", keys: [])
        try FileManager.default.moveItem(atPath: work + "/tuf-away", toPath: registry + "/tuf")
        expectFailure(try await run(["download", "demo"] + common), status: 65, mentioning: "TUF target demo/v101/bundle.zip: no trusted targets role lists it")
        #expect(bundles().isEmpty)

        // A zip swapped with one its publisher signed again: the platform's signature verifies, TUF's hash does not.
        let version = registry + "/apps/demo/versions/v100"
        let other = try BundleFactory.zip(BundleFactory.helloFiles.merging(["version.txt": "evil"]) { _, new in new })
        try writeTestFile(version + "/bundle.zip", Data(other))
        let signed = try await run(["sign", version + "/bundle.zip", "--version-id", "v100", "--key", work + "/publisher.pem"])
        var entry = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: version + "/version.json"))) as? [String: Any])
        entry["signature"] = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        entry["sha256"] = SHA256Digest.hash(other).hexString
        entry["sizeBytes"] = other.count
        try writeTestFile(version + "/version.json", JSONSerialization.data(withJSONObject: entry))
        let swapped = try await run(["download", "demo", "--version", "v100", "--json"] + common)
        expectFailure(swapped, status: 65, mentioning: "TUF target demo/v100/bundle.zip: the zip")
        #expect(bundles().isEmpty)

        // A frozen timestamp: signed three days ago for a day.
        #expect(try await runAt("-3d", ["tuf", "timestamp", "--registry", registry, "--key", work + "/timestamp.pem"]) == 0)
        expectFailure(try await run(["download", "demo", "--version", "v100"] + common), status: 65, mentioning: "TUF timestamp metadata: it expired (freeze attack?)")
        #expect(bundles().isEmpty)

        // serve with the timestamp key signs it again at once; a key the root lists for another role is refused.
        let refused = try await run(["serve", registry, "--port", "0", "--tuf-timestamp-key", work + "/targets.pem"])
        expectFailure(refused, status: 64, mentioning: "must be one the root lists for the timestamp alone")
        let (server, _, log) = try await startServe(registry, ["--tuf-timestamp-key", work + "/timestamp.pem"])
        defer { server.terminate() }
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("signed the TUF timestamp again") {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("signed the TUF timestamp again: version"))
        // The swapped zip is still refused; a root rotation is followed, and a delegated publisher signs the next version.
        expectFailure(try await run(["download", "demo", "--version", "v100"] + common), status: 65, mentioning: "TUF target demo/v100/bundle.zip")
        #expect(try await run(["tuf", "keygen", "--out", work + "/root2", "-q"]).status == 0)
        let rotated = try await run([
            "tuf", "add-key", "--registry", registry, "--role", "root", "--public-key", work + "/root2.pub.pem", "--key", work + "/root.pem", "--key", work + "/root2.pem",
        ])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(try await run(["tuf", "keygen", "--out", work + "/demo-tuf", "--type", "rsa", "-q"]).status == 0)
        let delegated = try await run(["tuf", "delegate", "--registry", registry, "--app-id", "demo", "--public-key", work + "/demo-tuf.pub.pem"] + tufKeys.map { $0 == "--tuf-key" ? "--key" : $0 })
        #expect(delegated.status == 0, "\(delegated.stderr)")
        try await publish("1.0.2", "v102", keys: ["--tuf-key", work + "/demo-tuf.pem", "--tuf-key", work + "/snapshot.pem", "--tuf-key", work + "/timestamp.pem"])
        let latest = try await run(["download", "demo", "--json"] + common)
        #expect(latest.status == 0 && (try? latest.json() as? [String: Any])?["versionId"] as? String == "v102", "\(latest.stderr)")
    }
    @Test func aCachedCopyOfAnotherZipIsFetchedAgainWhenTUFListsTheVersion() async throws {
        try await makeRegistry()
        let common = ["--platform", registry, "--cache-dir", cache]
        let published = try Data(contentsOf: URL(fileURLWithPath: registry + "/apps/demo/versions/v100/bundle.zip"))
        // The same version installed from a zip of its own, which its publisher signed too.
        let other = work + "/other.zip"
        try writeTestFile(other, try BundleFactory.zip(BundleFactory.helloFiles.merging(["version.txt": "not the published one"]) { _, new in new }))
        let signed = try await run(["sign", other, "--version-id", "v100", "--key", work + "/publisher.pem"])
        let installed = try await run([
            "install", other, "--app-id", "demo", "--version-id", "v100", "--version-tag", "1.0.0",
            "--signature", signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "--public-key", work + "/publisher.pub.pem", "--json",
        ] + common)
        #expect(installed.status == 0, "\(installed.stderr)")
        #expect((try installed.json() as? [String: Any])?["sha256"] as? String != SHA256Digest.hash([UInt8](published)).hexString)

        // Without TUF the cached copy is the version; with it, only the zip TUF lists is.
        let reused = try await run(["download", "demo", "--version", "v100", "--json"] + common)
        #expect((try reused.json() as? [String: Any])?["source"] as? String == "cache", "\(reused.stderr)")
        let trusted = try await run(["download", "demo", "--version", "v100", "--json", "--tuf-root", root] + common)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        let record = try #require(try trusted.json() as? [String: Any])
        #expect(record["source"] as? String != "cache")
        #expect(record["sha256"] as? String == SHA256Digest.hash([UInt8](published)).hexString)
    }

    @Test func keptMetadataStartsAgainFromANewConfiguredRoot() async throws {
        try await makeRegistry()
        let common = ["download", "demo", "--version", "v100", "--platform", registry, "--cache-dir", cache, "--tuf-root", root]
        #expect(try await run(common).status == 0)
        let kept = try #require(try FileManager.default.contentsOfDirectory(atPath: cache + "/tuf").first.map { cache + "/tuf/" + $0 })
        let firstRoot = try Data(contentsOf: URL(fileURLWithPath: kept + "/root.json"))

        // Another repository, every key new, at the same place: the kept chain cannot reach its root.
        try FileManager.default.createDirectory(atPath: work + "/before", withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: work) where name.hasSuffix(".pem") || name == "registry" {
            try FileManager.default.moveItem(atPath: work + "/" + name, toPath: work + "/before/" + name)
        }
        try await makeRegistry()
        let newRoot = try Data(contentsOf: URL(fileURLWithPath: root))
        #expect(newRoot != firstRoot)
        // Given the old root still, the new repository is refused; given the new one, it is trusted from it.
        let refused = try await run(["download", "demo", "--version", "v100", "--platform", registry, "--cache-dir", cache, "--tuf-root", work + "/before/registry/tuf/metadata/1.root.json"])
        expectFailure(refused, status: 65, mentioning: "TUF")
        let restarted = try await run(common)
        #expect(restarted.status == 0, "\(restarted.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: kept + "/root.json")) == newRoot)
    }
}
