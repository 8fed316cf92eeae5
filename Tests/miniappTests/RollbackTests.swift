import Foundation
import MiniAppCore
import MiniAppKit
import MiniAppTestSupport
import Testing

/// No silent rollback: a platform that answers an older version as the latest, on a registry folder
/// and through `serve`, is refused by `download`, not launched by `load`, shown by `info` and `list`, and
/// the older version is installed only when asked for, with its record saying so.
@Suite struct RollbackTests {
    enum Access: String, CaseIterable, CustomTestStringConvertible {
        case folder, serve
        var testDescription: String { rawValue }
    }

    let work = try! TemporaryDirectory.make().path

    /// Publishes `demo` at `tag` as version `versionId` (a file of its own tells the versions apart).
    func publish(_ tag: String, _ versionId: String, registry: String, key: String) async throws {
        var files = BundleFactory.helloFiles
        files["version.txt"] = tag
        let folder = try BundleFactory.folder(files)
        let published = try await CommandRunner.run([
            "publish", folder, "--registry", registry, "--app-id", "demo", "--version-tag", tag, "--version-id", versionId, "--key", key + ".pem",
        ])
        #expect(published.status == 0, "stderr: \(published.stderr)")
    }

    /// What a stale mirror or a compromised platform does: the newest version is gone from what it answers.
    func rollBack(_ versionId: String, registry: String) throws {
        try FileManager.default.moveItem(atPath: registry + "/apps/demo/versions/" + versionId, toPath: work + "/withheld-" + versionId)
        let generation = Registry(root: registry).generation
        try writeTestFile(registry + "/.generation", Data("\(generation + 1)\n".utf8))
    }

    /// Everything under the cache folder, with each file's bytes: what a refused command must leave as it was.
    func snapshot(_ cache: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for path in (FileManager.default.enumerator(atPath: cache)?.allObjects as? [String] ?? []) where !path.hasPrefix("locks") {
            files[path] = FileManager.default.contents(atPath: cache + "/" + path) ?? Data()
        }
        return files
    }

    @Test(arguments: Access.allCases)
    func aRollbackIsRefusedNotLaunchedShownAndInstalledOnlyWhenAskedFor(access: Access) async throws {
        let key = work + "/publisher", registry = work + "/registry", cache = work + "/cache"
        #expect(try await CommandRunner.run(["keygen", "--out", key]).status == 0)
        try await publish("1.0.0", "v100", registry: registry, key: key)
        var platform = registry
        var server: ChildProcess?
        if access == .serve {
            let (process, url, _) = try await startServe(registry, ["--project-id", "p"])
            server = process
            platform = url.absoluteString
        }
        defer { server?.terminate() }
        let common = ["--platform", platform, "--project-id", "p", "--cache-dir", cache]
        func run(_ arguments: [String]) async throws -> CommandResult { try await CommandRunner.run(arguments + common) }

        #expect(try await run(["download", "demo"]).status == 0)
        #expect(try await run(["permissions", "grant", "demo", "USER_NAME"]).status == 0)
        try await publish("1.0.1", "v101", registry: registry, key: key)
        let updated = try await run(["download", "demo", "--json"])
        #expect((try updated.json() as? [String: Any])?["versionId"] as? String == "v101", "\(updated.stderr)")

        try rollBack("v101", registry: registry)
        let before = snapshot(cache)
        let refused = try await run(["download", "demo"])
        expectFailure(refused, status: 65)
        let line = refused.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(line.contains("1.0.0") && line.contains("1.0.1") && line.contains("rollback"), "\(line)")
        #expect(snapshot(cache) == before, "a refused rollback leaves the cache as it was")

        let loaded = try await run(["load", "demo", "--json"])
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect((try loaded.json() as? [String: Any])?["versionId"] as? String == "v101", "load keeps launching the newer version")
        #expect(loaded.stderr.contains("rollback") && loaded.stderr.contains("1.0.1"), "\(loaded.stderr)")

        let info = try await run(["info", "demo", "--json"])
        let shown = try #require(try info.json() as? [String: Any])
        #expect((shown["rollbackFrom"] as? [String: Any])?["versionId"] as? String == "v101", "\(info.stdout)")
        #expect(try await run(["info", "demo"]).stdout.contains("rollback"))
        let listed = try #require(try await run(["list", "--json"]).json() as? [[String: Any]])
        #expect((listed.first?["rollbackFrom"] as? [String: Any])?["versionTag"] as? String == "1.0.1")

        // Asked for by id, the older version is installed, and its record says from what.
        #expect(try await run(["cache", "remove", "demo", "--version", "v100"]).status == 0)
        let asked = try await run(["download", "demo", "--version", "v100", "--json"])
        #expect(asked.status == 0, "\(asked.stderr)")
        let record = try #require(try asked.json() as? [String: Any])
        #expect(record["downgradedFrom"] as? String == "v101" && record["downgradedFromTag"] as? String == "1.0.1", "\(asked.stdout)")
        let listedRecords = try #require(try await run(["cache", "list", "--json"]).json() as? [[String: Any]])
        #expect(listedRecords.first { $0["versionId"] as? String == "v100" }?["downgradedFrom"] as? String == "v101", "the cache keeps it")
        // The latest is still refused; allowed once, it is the latest from then on.
        expectFailure(try await run(["download", "demo"]), status: 65)
        let allowed = try await run(["download", "demo", "--allow-downgrade", "--json"])
        let allowedRecord = try allowed.json() as? [String: Any]
        #expect(allowed.status == 0 && allowedRecord?["versionId"] as? String == "v100", "\(allowed.stderr)")
        #expect(try await run(["download", "demo"]).status == 0)
    }

    /// A client that never saw the older version as the latest refuses it too (the tags say it is older).
    @Test func aRollbackToAVersionNeverSeenAsTheLatestIsRefusedByItsTag() async throws {
        let key = work + "/publisher", registry = work + "/registry", cache = work + "/cache"
        #expect(try await CommandRunner.run(["keygen", "--out", key]).status == 0)
        try await publish("1.0.0", "v100", registry: registry, key: key)
        try await publish("1.0.1", "v101", registry: registry, key: key)
        let common = ["--platform", registry, "--cache-dir", cache]
        #expect(try await CommandRunner.run(["download", "demo"] + common).status == 0)
        #expect(try await CommandRunner.run(["permissions", "grant", "demo", "USER_NAME"] + common).status == 0)
        try rollBack("v101", registry: registry)
        let refused = try await CommandRunner.run(["download", "demo"] + common)
        expectFailure(refused, status: 65)
        #expect(refused.stderr.contains("1.0.0") && refused.stderr.contains("1.0.1"))
        let loaded = try await CommandRunner.run(["load", "demo", "--json"] + common)
        #expect((try loaded.json() as? [String: Any])?["versionId"] as? String == "v101", "\(loaded.stderr)")
    }

    /// A pre-release tried in preview mode is remembered apart: the published latest is no rollback of it.
    @Test func aVersionTriedInPreviewDoesNotMakeThePublishedLatestARollback() async throws {
        let key = work + "/publisher", registry = work + "/registry", cache = work + "/cache"
        #expect(try await CommandRunner.run(["keygen", "--out", key]).status == 0)
        try await publish("1.0.0", "v100", registry: registry, key: key)
        var files = BundleFactory.helloFiles
        files["version.txt"] = "beta"
        let preview = try await CommandRunner.run([
            "publish", try BundleFactory.folder(files), "--registry", registry, "--app-id", "demo", "--version-tag", "2.0.0-beta.1",
            "--version-id", "v200b", "--key", key + ".pem", "--preview",
        ])
        #expect(preview.status == 0, "\(preview.stderr)")
        let common = ["--platform", registry, "--cache-dir", cache]
        let tried = try await CommandRunner.run(["download", "demo", "--preview", "--json"] + common)
        #expect((try tried.json() as? [String: Any])?["versionId"] as? String == "v200b", "\(tried.stderr)")
        let published = try await CommandRunner.run(["download", "demo", "--json"] + common)
        #expect(published.status == 0, "\(published.stderr)")
        #expect((try published.json() as? [String: Any])?["versionId"] as? String == "v100")
    }

    /// The library says the same, typed: `download` throws the rollback, `load` reports it beside the
    /// version it launched instead.
    @Test func theLibraryReportsARollbackTyped() async throws {
        let key = work + "/publisher", registry = work + "/registry", cache = work + "/cache"
        #expect(try await CommandRunner.run(["keygen", "--out", key]).status == 0)
        try await publish("2.0.0", "v200", registry: registry, key: key)
        try await publish("2.1.0", "v210", registry: registry, key: key)
        #expect(try await CommandRunner.run(["permissions", "grant", "demo", "USER_NAME", "--cache-dir", cache]).status == 0)
        var configuration = MiniAppConfiguration(cacheDirectory: cache)
        configuration.platform = .registry(path: registry)
        let runtime = MiniAppRuntime(configuration: configuration)
        let installer = try runtime.installer()
        #expect(try await installer.download(appId: "demo").record.versionId == "v210")
        try rollBack("v210", registry: registry)
        let expected = Rollback(appId: "demo", offered: AppVersion(versionId: "v200", versionTag: "2.0.0"), newer: AppVersion(versionId: "v210", versionTag: "2.1.0"))
        await #expect(throws: DownloadError.rollback(expected)) { try await installer.download(appId: "demo") }
        let loaded = try await installer.load(appId: "demo")
        #expect(loaded.rollback == expected && loaded.record.versionId == "v210")
        let allowed = try await installer.download(appId: "demo", allowDowngrade: true)
        #expect(allowed.record.versionId == "v200" && allowed.record.downgradedFrom == expected.newer)
        await runtime.shutdown()
    }

    /// `cache verify` names an install record and a memory that cannot be read, and a download refuses
    /// to go on without the memory rather than forget it.
    @Test func anUnreadableRecordOrMemoryIsReportedNotIgnored() async throws {
        let key = work + "/publisher", registry = work + "/registry", cache = work + "/cache"
        #expect(try await CommandRunner.run(["keygen", "--out", key]).status == 0)
        try await publish("1.0.0", "v100", registry: registry, key: key)
        let common = ["--platform", registry, "--cache-dir", cache]
        let downloaded = try await CommandRunner.run(["download", "demo", "--json"] + common)
        let folder = try #require((try downloaded.json() as? [String: Any])?["path"] as? String)
        #expect(try await CommandRunner.run(["cache", "verify"] + common).status == 0)

        let record = (folder as NSString).deletingLastPathComponent + "/record.json"
        try writeTestFile(record, Data("{\"id\": \"demo\", broken".utf8))
        let memory = try #require(FileManager.default.enumerator(atPath: cache + "/history")?.allObjects.compactMap { $0 as? String }.first { $0.hasSuffix("/demo.json") })
        try writeTestFile(cache + "/history/" + memory, Data("[]".utf8))

        let verified = try await CommandRunner.run(["cache", "verify", "--json"] + common)
        #expect(verified.status == 65)
        let entries = try #require(try verified.json() as? [[String: Any]])
        let recordEntry = entries.first { $0["versionId"] as? String == "v100" }
        #expect(recordEntry?["intact"] as? Bool == false && ((recordEntry?["problems"] as? [String])?.first ?? "").contains("install record"), "\(entries)")
        let memoryEntry = entries.first { $0["versionId"] is NSNull }
        #expect(memoryEntry?["id"] as? String == "demo" && ((memoryEntry?["problems"] as? [String])?.first ?? "").contains("latest versions"), "\(entries)")

        let refused = try await CommandRunner.run(["download", "demo"] + common)
        expectFailure(refused, status: 65)
        #expect(refused.stderr.contains("demo.json"), "\(refused.stderr)")
    }
}
