// `stat` and its kin reach this file through a C module's header too (MemberImportVisibility).
import CDispatch
import Foundation
import MiniAppCore
import MiniAppTestSupport
import NIOConcurrencyHelpers
import Testing

/// Every archive of the public zip corpus (Tests/ZipCorpus, a copy of ../shared/zip-corpus with its
/// provenance), validly signed and installed with the real CLI: it installs exactly what Python's
/// zipfile or bsdtar reads from it (an index.html added where it holds no bundle), or is refused with
/// exit 65 and one line; it never crashes, hangs, writes outside the cache or changes the cache.
@Suite struct ZipCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("ZipCorpus").path
    /// The peer corpus beside the project, when this checkout has one.
    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/zip-corpus").path
    static let archives: [String] = ((FileManager.default.enumerator(atPath: corpus)?.allObjects as? [String]) ?? [])
        .filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: corpus + "/" + path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && !["PROVENANCE.md", "reference.py", "expected.json"].contains(path)
        }
        .sorted()
    /// What each archive does: "installs" or "refused" (a refusal is checked for its form; an install
    /// for its every byte).
    static let expected: [String: String] = {
        guard let data = FileManager.default.contents(atPath: corpus + "/expected.json"),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: String] else { return [:] }
        return object
    }()
    static let key = try! SigningKey.generate()

    @Test func theCorpusIsWholeAndMatchesTheSharedCopy() throws {
        #expect(Self.archives.count == 129)
        #expect(Set(Self.archives) == Set(Self.expected.keys))
        guard FileManager.default.fileExists(atPath: Self.shared) else { return }
        for archive in Self.archives {
            #expect(FileManager.default.contentsEqual(atPath: Self.corpus + "/" + archive, andPath: Self.shared + "/" + archive), "\(archive) differs from ../shared/zip-corpus")
        }
    }

    /// Runs the reference script; its JSON answer. Awaited, not waited for: a blocked thread of the
    /// cooperative pool would stall every other test running beside this one.
    static func reference(_ arguments: [String]) async throws -> Any {
        let output = try TemporaryDirectory.make().appendingPathComponent("reference.json")
        defer { try? FileManager.default.removeItem(at: output.deletingLastPathComponent()) }
        try await ChildProcess("/usr/bin/python3", [corpus + "/reference.py"] + arguments, stdout: .file(output.path)).exited()
        return try JSONSerialization.jsonObject(with: try Data(contentsOf: output))
    }

    /// Every regular file under `root` (path to SHA-256), and whether anything else is there.
    static func tree(_ root: String) -> (files: [String: String], others: [String]) {
        var files: [String: String] = [:]
        var others: [String] = []
        for path in (FileManager.default.enumerator(atPath: root)?.allObjects as? [String]) ?? [] {
            var info = stat()
            guard lstat(root + "/" + path, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG: files[path] = SHA256Digest.hash([UInt8](FileManager.default.contents(atPath: root + "/" + path) ?? Data())).hexString
            case S_IFDIR: break
            default: others.append(path)
            }
        }
        return (files, others)
    }

    /// Made once for all cases: a cache holding one installed version (each case works on a copy), and
    /// every archive prepared and read by the reference script, in one run of it.
    struct Shared: @unchecked Sendable {
        var cache: String
        var key: String
        var archives: [String: [String: Any]]
    }

    static func shared() async throws -> Shared {
        if let made = made.withLockedValue({ $0 }) { return made }
        let work = try TemporaryDirectory.make().path
        let seed = work + "/seed.zip"
        let signed = try BundleFactory.sign(try BundleFactory.zip(BundleFactory.helloFiles), versionId: "v-0", key: key)
        try writeTestFile(seed, Data(signed.zip))
        try writeTestFile(work + "/key.pem", key.publicKey.pem)
        let result = try await CommandRunner.run(
            ["install", seed, "--app-id", "corpus", "--version-id", "v-0", "--signature", signed.signature, "--public-key", work + "/key.pem"],
            environment: ["MINIAPP_CACHE_DIR": work + "/cache"]
        )
        #expect(result.status == 0, "\(result.stderr)")
        try FileManager.default.createDirectory(atPath: work + "/prepared", withIntermediateDirectories: true)
        let references = try await reference(["batch", corpus, work + "/prepared"] + archives) as? [String: [String: Any]] ?? [:]
        let shared = Shared(cache: work + "/cache", key: work + "/key.pem", archives: references)
        made.withLockedValue { $0 = shared }
        return shared
    }
    static let made = NIOLockedValueBox<Shared?>(nil)

    // One archive at a time: 129 at once would load a 2-core machine so much that other suites' timed
    // retries run out.
    @Test(.serialized, arguments: archives)
    func archiveInstallsAsReferenceReadersReadItOrIsRefused(archive: String) async throws {
        let shared = try await Self.shared()
        let reference = try #require(shared.archives[archive], "the reference script did not read \(archive)")
        let zip = try #require(reference["zip"] as? String)
        let work = try TemporaryDirectory.make().path
        defer { try? FileManager.default.removeItem(atPath: work) }
        let signed = try BundleFactory.sign([UInt8](try Data(contentsOf: URL(fileURLWithPath: zip))), versionId: "v-1", key: Self.key)

        // A cache that already holds a version, which a refusal must leave exactly as it was.
        let cache = work + "/cache"
        try FileManager.default.copyItem(atPath: shared.cache, toPath: cache)
        let cacheBefore = CacheTree(cache)
        try FileManager.default.createDirectory(atPath: work + "/outside", withIntermediateDirectories: true)
        try writeTestFile(work + "/outside/sentinel", Data("sentinel".utf8))

        let result = try await CommandRunner.run(
            ["install", zip, "--app-id", "corpus", "--version-id", "v-1", "--signature", signed.signature, "--public-key", shared.key, "--json"],
            environment: ["MINIAPP_CACHE_DIR": cache], timeoutSeconds: 120
        )
        let after = Set(try FileManager.default.contentsOfDirectory(atPath: work))
        let outside = try FileManager.default.contentsOfDirectory(atPath: work + "/outside")
        #expect(after == ["cache", "outside"] && outside == ["sentinel"], "\(archive) wrote outside the cache")

        switch result.status {
        case 0:
            #expect(Self.expected[archive] == "installs", "\(archive) installed; expected \(Self.expected[archive] ?? "?")")
            let path = try #require((try result.json() as? [String: Any])?["path"] as? String)
            #expect(path.hasPrefix(cache + "/"))
            let installed = Self.tree(path)
            #expect(installed.others.isEmpty, "\(archive) installed something other than files and folders: \(installed.others)")
            let views = reference["views"] as? [String: Any] ?? [:]
            let readings = ["zipfile", "bsdtar"].compactMap { views[$0] as? [String: Any] }.filter { $0["ok"] as? Bool == true }.compactMap { $0["files"] as? [String: String] }
            #expect(!readings.isEmpty, "\(archive) installed though neither zipfile nor bsdtar reads it")
            #expect(readings.contains(installed.files), "\(archive): installed \(installed.files.keys.sorted()), the readers read \(readings.map { $0.keys.sorted() })")
        case 65:
            #expect(Self.expected[archive] == "refused", "\(archive) was refused: \(result.stderr)")
            expectFailure(result, status: 65)
            #expect(result.stderrLines.count == 1, "\(archive): \(result.stderr)")
            #expect(CacheTree(cache) == cacheBefore, "\(archive): the refusal changed the cache")
        default:
            Issue.record("\(archive): exit \(result.status) (9: killed after hanging): \(result.stderr)")
        }
    }
}
