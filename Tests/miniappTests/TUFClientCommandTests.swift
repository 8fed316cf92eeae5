import Foundation
import MiniAppTestSupport
import Testing

/// `miniapp-tuf-client`, the TUF conformance suite's client command line, against a repository
/// written with python-tuf and served over HTTP: the interop of our client with the reference, and
/// its one-line failures with exit 1.
/// One test at a time: each runs python-tuf and the client several times.
@Suite(.serialized) struct TUFClientCommandTests {
    static var client: String {
        CommandRunner.executable.deletingLastPathComponent().appendingPathComponent("miniapp-tuf-client").path
    }

    /// A server of the files under `repository` (`/metadata/...`, `/targets/...`), with `override`
    /// answering some paths itself.
    static func serve(_ repository: String, override: @escaping @Sendable (String) -> StubResponse? = { _ in nil }) async throws -> TestHTTPServer {
        try await TestHTTPServer.start { request in
            let path = String(request.uri.prefix { $0 != "?" })
            if let answer = override(path) { return answer }
            let decoded = path.removingPercentEncoding ?? path
            guard !decoded.split(separator: "/").contains(".."), let data = try? Data(contentsOf: URL(fileURLWithPath: repository + decoded)) else {
                return StubResponse(status: 404, body: Array("not found".utf8))
            }
            return StubResponse(body: Array(data))
        }
    }

    static func run(_ arguments: [String]) async throws -> (status: Int32, stderr: String) {
        let folder = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: folder) }
        let err = folder.appendingPathComponent("stderr").path
        let child = try ChildProcess(client, arguments, stdout: .null, stderr: .file(err))
        let status = await child.exited()
        return (status, (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// A repository with `apps/a.zip` in a delegated role, and a client folder initialised with its root.
    static func repository() async throws -> (repository: String, metadata: String, targets: String) {
        let repository = try TemporaryDirectory.make().path
        _ = try await PythonTUF.run(PythonTUF.repositoryPrelude + """
            repo = Repo(sys.argv[1])
            repo.delegate("targets", "apps", ["apps/*"])
            repo.add_target("apps", "apps/a.zip", b"the app's zip")
            repo.publish(["apps", "targets"])
            """, [repository])
        let client = try TemporaryDirectory.make().path
        let initialized = try await run(["--metadata-dir", client + "/metadata", "init", repository + "/metadata/1.root.json"])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        return (repository, client + "/metadata", client + "/targets")
    }

    @Test func aRepositoryOfTheReferenceIsRefreshedAndItsTargetDownloadedOnce() async throws {
        let (repository, metadata, targets) = try await Self.repository()
        let server = try await Self.serve(repository)
        let urls = ["--metadata-url", server.baseURL.absoluteString + "metadata/", "--target-base-url", server.baseURL.absoluteString + "targets"]
        let refreshed = try await Self.run(["--metadata-dir", metadata] + urls + ["refresh"])
        #expect(refreshed.status == 0, "\(refreshed.stderr)")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: metadata)) == ["root.json", "timestamp.json", "snapshot.json", "targets.json"])
        for _ in 0..<2 {
            let downloaded = try await Self.run(["--metadata-dir", metadata, "--target-dir", targets, "--target-name", "apps/a.zip"] + urls + ["download"])
            #expect(downloaded.status == 0, "\(downloaded.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: targets + "/apps%2Fa.zip")) == Data("the app's zip".utf8))
        #expect(FileManager.default.fileExists(atPath: metadata + "/apps.json"))
        // The second download found the file it kept: the target was fetched once.
        #expect(server.requests.filter { $0.uri.hasPrefix("/targets/") }.count == 1)
        #expect(server.requests.map(\.uri).contains("/metadata/2.root.json"))
        await server.shutdown()
    }

    @Test func anEndlessTimestampAndAnArbitraryTargetFailWithOneLine() async throws {
        let (repository, metadata, targets) = try await Self.repository()
        let endless = try await Self.serve(repository) { path in
            path == "/metadata/timestamp.json" ? StubResponse(body: [UInt8](repeating: 0x20, count: 1 << 20)) : nil
        }
        let refreshed = try await Self.run(["--metadata-dir", metadata, "--metadata-url", endless.baseURL.absoluteString + "metadata", "refresh"])
        #expect(refreshed.status == 1)
        #expect(refreshed.stderr == "miniapp-tuf-client: refresh: TUF timestamp metadata: it is longer than the 16384 bytes allowed (endless data?)\n")
        await endless.shutdown()

        let swapped = try await Self.serve(repository) { path in
            path.hasPrefix("/targets/") ? StubResponse(body: Array("the app's zap".utf8)) : nil
        }
        let downloaded = try await Self.run([
            "--metadata-dir", metadata, "--metadata-url", swapped.baseURL.absoluteString + "metadata", "--target-name", "apps/a.zip",
            "--target-base-url", swapped.baseURL.absoluteString + "targets", "--target-dir", targets, "download",
        ])
        #expect(downloaded.status == 1)
        #expect(downloaded.stderr == "miniapp-tuf-client: download: TUF target apps/a.zip: its sha256 is not the one listed\n")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: targets)) ?? [] == [])
        await swapped.shutdown()
    }

    @Test func aStepWithoutWhatItNeedsFailsWithOneLine() async throws {
        let folder = try TemporaryDirectory.make().path
        let refreshed = try await Self.run(["--metadata-dir", folder, "refresh"])
        #expect(refreshed.status == 1 && refreshed.stderr == "miniapp-tuf-client: refresh: refresh needs --metadata-url\n")
        let uninitialized = try await Self.run(["--metadata-dir", folder, "--metadata-url", "http://127.0.0.1:9/", "refresh"])
        #expect(uninitialized.status == 1)
        #expect(uninitialized.stderr.hasPrefix("miniapp-tuf-client: refresh: TUF root metadata: no trusted root is kept in"))
        let unknown = try await Self.run(["--metadata-dir", folder, "fetch"])
        #expect(unknown.status == 1 && unknown.stderr == "miniapp-tuf-client: fetch: the step is init, refresh or download, not fetch\n")
    }
}
