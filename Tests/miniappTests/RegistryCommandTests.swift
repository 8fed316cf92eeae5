import AsyncHTTPClient
import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// Starts `miniapp serve` on a free port and returns the process and its base URL.
func startServe(_ registry: String, _ extra: [String] = [], environment: [String: String]? = nil) async throws -> (ChildProcess, URL, URL) {
    let directory = try TemporaryDirectory.make()
    let out = directory.appendingPathComponent("out")
    let err = directory.appendingPathComponent("err")
    let process = try ChildProcess(
        CommandRunner.executable.path, ["serve", registry, "--port", "0"] + extra,
        environment: environment.map { ProcessInfo.processInfo.environment.merging($0) { _, new in new } },
        stdout: .file(out.path), stderr: .file(err.path)
    )
    // A bound for a start that never comes, generous: the suite runs hundreds of tests at once on 2 cores.
    let deadline = ContinuousClock.now + .seconds(90)
    while ContinuousClock.now < deadline {
        let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        if let line = text.split(separator: "\n").first, line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst(13))) {
            return (process, url, err)
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    process.stop()
    throw CocoaError(.fileReadUnknown)
}

/// Fetches `url` with `headers` and returns the status, headers and body, on a connection of its own:
/// the shared client's pool could otherwise hand a test a kept connection to an earlier test's server,
/// stopped since, on the same port (a loaded full run failed two range tests with "I/O on closed
/// channel" and "remote connection closed").
func fetch(_ url: URL, headers: [String: String] = [:]) async throws -> (Int, [String: String], Data) {
    var request = HTTPClientRequest(url: url.absoluteString)
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if !headers.keys.contains(where: { $0.lowercased() == "connection" }) { request.headers.add(name: "Connection", value: "close") }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
    let body = try await response.body.collect(upTo: 1 << 26)
    var fields: [String: String] = [:]
    for header in response.headers { fields[header.name.lowercased()] = header.value }
    return (Int(response.status.code), fields, Data(body.readableBytesView))
}

@Suite struct RegistryCommandTests {
    let work = try! TemporaryDirectory.make().path

    /// Makes a key and a registry with one published hello version.
    func publishedRegistry(preview: Bool = false) async throws -> (registry: String, key: String, versionId: String) {
        let key = work + "/publisher"
        let keygen = try await CommandRunner.run(["keygen", "--out", key, "--json"])
        #expect(keygen.status == 0, "stderr: \(keygen.stderr)")
        let registry = work + "/registry"
        let folder = try BundleFactory.folder(BundleFactory.helloFiles)
        var arguments = ["publish", folder, "--registry", registry, "--app-id", "hello", "--version-tag", "1.0.0", "--key", key + ".pem", "--display-name", "Hello", "--json"]
        if preview { arguments.append("--preview") }
        let published = try await CommandRunner.run(arguments)
        #expect(published.status == 0, "stderr: \(published.stderr)")
        let versionId = try #require((try published.json() as? [String: Any])?["versionId"] as? String)
        return (registry, key, versionId)
    }

    @Test func keygenWritesAPrivateKeyOnlyTheOwnerCanRead() async throws {
        let result = try await CommandRunner.run(["keygen", "--out", work + "/k", "--json"])
        #expect(result.status == 0)
        let document = try #require(try result.json() as? [String: Any])
        let privatePath = try #require(document["privateKeyPath"] as? String)
        #expect(try FileManager.default.attributesOfItem(atPath: privatePath)[.posixPermissions] as? Int == 0o600)
        let pem = try String(contentsOfFile: document["publicKeyPath"] as! String, encoding: .utf8)
        #expect(try PublicKey(pem: pem).keyId == document["keyId"] as? String)
        #expect(!result.stdout.contains("PRIVATE KEY") && !result.stderr.contains("PRIVATE KEY"))
        expectFailure(try await CommandRunner.run(["keygen", "--out", work + "/k"]), status: 64)
    }

    @Test func signMatchesStockOpenSSLVerification() async throws {
        _ = try await CommandRunner.run(["keygen", "--out", work + "/k"])
        let zip = work + "/app.zip"
        try writeTestFile(zip, Data(try BundleFactory.zip(BundleFactory.helloFiles)))
        let signed = try await CommandRunner.run(["sign", zip, "--version-id", "v-42", "--key", work + "/k.pem", "--json"])
        #expect(signed.status == 0, "stderr: \(signed.stderr)")
        let signature = try #require((try signed.json() as? [String: String])?["signature"])
        try writeTestFile(work + "/sig.der", Data(base64Encoded: signature)!)
        let digest = SHA256Digest.hash([UInt8](try Data(contentsOf: URL(fileURLWithPath: zip)))).hexString
        try writeTestFile(work + "/msg", Data(("v-42" + digest).utf8))
        #expect(await runTool("/usr/bin/openssl", ["dgst", "-sha256", "-verify", work + "/k.pub.pem", "-signature", work + "/sig.der", work + "/msg"]) == 0)
    }

    @Test func publishedVersionsInstallFromTheDirectoryAndOverServe() async throws {
        let (registry, _, versionId) = try await publishedRegistry()
        let direct = try await CommandRunner.run(["download", "hello", "--platform", registry, "--cache-dir", work + "/cache-a", "--json"])
        #expect(direct.status == 0, "stderr: \(direct.stderr)")
        #expect((try direct.json() as? [String: Any])?["signature"] as? String == "verified")

        let (server, url, _) = try await startServe(registry, ["--subscription-key", "s3cret"])
        defer { server.terminate() }
        let environment = ["MINIAPP_PLATFORM": url.absoluteString, "MINIAPP_PROJECT_ID": "any-project", "MINIAPP_CACHE_DIR": work + "/cache-b", "MINIAPP_SUBSCRIPTION_KEY": "s3cret"]
        let listed = try await CommandRunner.run(["list", "--json"], environment: environment)
        #expect(listed.status == 0, "stderr: \(listed.stderr)")
        #expect((try listed.json() as? [[String: Any]])?.first?["displayName"] as? String == "Hello")
        let downloaded = try await CommandRunner.run(["download", "hello", "--json"], environment: environment)
        #expect(downloaded.status == 0, "stderr: \(downloaded.stderr)")
        let record = try #require(try downloaded.json() as? [String: Any])
        #expect(record["versionId"] as? String == versionId)
        #expect(record["signature"] as? String == "verified")
        let manifest = try await CommandRunner.run(["manifest", "hello", "--json"], environment: environment)
        let required = (try manifest.json() as? [String: Any])?["reqPermissions"] as? [[String: Any]]
        #expect(required?.first?["reason"] as? String == "to greet you")

        var wrongKey = environment
        wrongKey["MINIAPP_SUBSCRIPTION_KEY"] = "wrong"
        expectFailure(try await CommandRunner.run(["list"], environment: wrongKey), status: 77)
        server.interrupt()
        await server.exited()
        #expect(server.terminationStatus == 0, "SIGINT stops serve gracefully")
    }

    @Test func serveTakesItsSubscriptionKeyFromAFile() async throws {
        let (registry, _, _) = try await publishedRegistry()
        try writeTestFile(work + "/key", "fr0m-a-file\nsecond-line\n")
        let (server, url, log) = try await startServe(registry, ["--subscription-key-file", work + "/key"])
        defer { server.terminate() }
        var environment = ["MINIAPP_PLATFORM": url.absoluteString, "MINIAPP_PROJECT_ID": "p", "MINIAPP_CACHE_DIR": work + "/cache", "MINIAPP_SUBSCRIPTION_KEY": "fr0m-a-file"]
        let listed = try await CommandRunner.run(["list", "--json"], environment: environment)
        #expect(listed.status == 0, "stderr: \(listed.stderr)")
        environment["MINIAPP_SUBSCRIPTION_KEY"] = "second-line"
        expectFailure(try await CommandRunner.run(["list"], environment: environment), status: 77)
        server.interrupt()
        await server.exited()
        #expect(!(try String(contentsOf: log, encoding: .utf8)).contains("fr0m-a-file"), "the key never reaches the log")

        // A key given twice, a file that cannot be read and an empty first line: one line each, 64.
        try writeTestFile(work + "/empty", "\nkey on the second line\n")
        for (extra, says) in [
            (["--subscription-key", "k", "--subscription-key-file", work + "/key"], "not both"),
            (["--subscription-key-file", work + "/missing"], work + "/missing"),
            (["--subscription-key-file", work + "/empty"], "first line is empty"),
        ] {
            let result = try await CommandRunner.run(["serve", registry, "--port", "0"] + extra, timeoutSeconds: 60)
            expectFailure(result, status: 64, mentioning: says)
        }
    }

    @Test func servedAPIMatchesTheSpecShapes() async throws {
        let (registry, key, versionId) = try await publishedRegistry()
        let (server, url, log) = try await startServe(registry, ["--project-id", "proj-9"])
        defer { server.terminate() }
        for path in ["host/proj-9/miniapps/", "host/proj-9/miniapps"] {
            let (status, headers, body) = try await fetch(url.appendingPathComponent(path))
            #expect(status == 200)
            #expect(headers["content-type"] == "application/json")
            let records = try #require(try JSONSerialization.jsonObject(with: body) as? [[String: Any]])
            #expect(records.count == 1)
            #expect(records[0]["id"] as? String == "hello")
            #expect((records[0]["version"] as? [String: Any])?["versionId"] as? String == versionId)
            #expect((records[0]["version"] as? [String: Any])?["versionTag"] as? String == "1.0.0")
        }
        let (latestStatus, _, latestBody) = try await fetch(URL(string: url.absoluteString + "host/proj-9/miniapps/?miniAppId=hello")!)
        #expect(latestStatus == 200)
        #expect((try JSONSerialization.jsonObject(with: latestBody) as? [Any])?.count == 1)
        let (_, _, noneBody) = try await fetch(URL(string: url.absoluteString + "host/proj-9/miniapps/?miniAppId=nope")!)
        #expect((try JSONSerialization.jsonObject(with: noneBody) as? [Any])?.isEmpty == true)

        let (manifestStatus, manifestHeaders, manifestBody) = try await fetch(url.appendingPathComponent("host/proj-9/miniapp/hello/version/\(versionId)/manifest"))
        #expect(manifestStatus == 200)
        let manifest = try #require(try JSONSerialization.jsonObject(with: manifestBody) as? [String: Any])
        let zipURL = try #require((manifest["manifest"] as? [String])?.first.flatMap(URL.init(string:)))
        #expect(zipURL.path.contains("/min-hello/ver-\(versionId)/"))
        let keyId = try #require(manifest["publicKeyId"] as? String)
        let signature = try #require(manifestHeaders["signature"])

        let (zipStatus, zipHeaders, zipBody) = try await fetch(zipURL)
        #expect(zipStatus == 200)
        #expect(zipHeaders["content-length"] == "\(zipBody.count)")
        #expect(zipHeaders["etag"] != nil)
        let (rangeStatus, rangeHeaders, rangeBody) = try await fetch(zipURL, headers: ["Range": "bytes=10-"])
        #expect(rangeStatus == 206)
        #expect(rangeBody == zipBody.dropFirst(10))
        #expect(rangeHeaders["content-range"] == "bytes 10-\(zipBody.count - 1)/\(zipBody.count)")
        let (staleStatus, _, _) = try await fetch(zipURL, headers: ["Range": "bytes=10-", "If-Range": "\"other\""])
        #expect(staleStatus == 200)

        let (keyStatus, _, keyBody) = try await fetch(url.appendingPathComponent("keys/\(keyId)"))
        #expect(keyStatus == 200)
        let keyRecord = try JSONDecoder().decode(PublicKeyRecord.self, from: keyBody)
        #expect(keyRecord.id == keyId)
        let publicKey = try BundleSignature.publicKey(from: keyRecord)
        #expect(publicKey.pem == (try String(contentsOfFile: key + ".pub.pem", encoding: .utf8)))
        try BundleSignature.verify(signature, versionId: versionId, sha256: SHA256Digest.hash([UInt8](zipBody)), key: publicKey, keyId: keyId)

        let (metaStatus, _, metaBody) = try await fetch(URL(string: url.absoluteString + "host/proj-9/miniapp/hello/version/\(versionId)/metadata?lang=en")!)
        #expect(metaStatus == 200)
        let bundleManifest = try #require((try JSONSerialization.jsonObject(with: metaBody) as? [String: Any])?["bundleManifest"] as? [String: Any])
        #expect((bundleManifest["reqPermissions"] as? [[String: Any]])?.first?["reason"] as? String == "to greet you")
        #expect((bundleManifest["customMetaData"] as? [String: String]) == ["theme": "dark"])

        let (wrongProject, _, errorBody) = try await fetch(url.appendingPathComponent("host/other/miniapps/"))
        #expect(wrongProject == 404)
        let errorDocument = try #require(try JSONSerialization.jsonObject(with: errorBody) as? [String: Any])
        #expect(errorDocument["code"] as? Int == 404)
        #expect(errorDocument["message"] is String)
        let (unknown, _, _) = try await fetch(url.appendingPathComponent("host/proj-9/miniapp/hello/version/nope/manifest"))
        #expect(unknown == 404)
        server.terminate()
        await server.exited()
        #expect(try String(contentsOf: log, encoding: .utf8).contains("GET /keys/\(keyId) 200"))
    }

    @Test func previewVersionsOnlyShowInPreviewModeAndHaveACode() async throws {
        let (registry, _, versionId) = try await publishedRegistry(preview: true)
        let plain = try await CommandRunner.run(["list", "--platform", registry, "--json"])
        #expect((try plain.json() as? [Any])?.isEmpty == true)
        let preview = try await CommandRunner.run(["list", "--platform", registry, "--preview", "--json"])
        #expect((try preview.json() as? [[String: Any]])?.first?["id"] as? String == "hello")
        let codes = try FileManager.default.contentsOfDirectory(atPath: registry + "/preview-codes")
        let token = try #require(codes.first?.replacingOccurrences(of: ".json", with: ""))
        let (server, url, _) = try await startServe(registry)
        defer { server.terminate() }
        let (status, _, body) = try await fetch(url.appendingPathComponent("host/p/preview-codes/\(token)"))
        #expect(status == 200)
        let document = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(((document["miniapp"] as? [String: Any])?["version"] as? [String: Any])?["versionId"] as? String == versionId)
        let (previewManifest, _, _) = try await fetch(url.appendingPathComponent("host/p/miniapp/hello/version/\(versionId)/preview/manifest"))
        #expect(previewManifest == 200)
        let (hiddenManifest, _, _) = try await fetch(url.appendingPathComponent("host/p/miniapp/hello/version/\(versionId)/manifest"))
        #expect(hiddenManifest == 404)
    }

    @Test(arguments: [
        ["manifest.json": "{}"],
        ["index.html": "<html>", "manifest.json": "{not json"],
        ["index.html": "<html>", "manifest.json": #"{"reqPermissions": "USER_NAME"}"#],
        ["index.html": "<html>"],
        ["index.html": "<html>", "manifest.json": "{}", "_locale/en/manifest.json": "[1]"],
    ])
    func badBundlesAreRefusedWithTheRegistryUnchanged(files: [String: String]) async throws {
        let (registry, key, _) = try await publishedRegistry()
        let before = try FileManager.default.subpathsOfDirectory(atPath: registry).filter { !$0.hasPrefix(".") }.sorted()
        let folder = try BundleFactory.folder(files)
        let result = try await CommandRunner.run(["publish", folder, "--registry", registry, "--app-id", "hello", "--version-tag", "2.0.0", "--key", key + ".pem"])
        expectFailure(result, status: 65)
        #expect(try FileManager.default.subpathsOfDirectory(atPath: registry).filter { !$0.hasPrefix(".") }.sorted() == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: registry + "/.staging").isEmpty)
    }

    @Test func hostileZipsAreRefusedByPublish() async throws {
        let (registry, key, _) = try await publishedRegistry()
        let zip = work + "/hostile.zip"
        try RawZip([.file("index.html"), .file("manifest.json", "{}"), .file("../../evil.js")]).write(to: zip)
        expectFailure(try await CommandRunner.run(["publish", zip, "--registry", registry, "--app-id", "hello", "--version-tag", "2", "--key", key + ".pem"]), status: 65)
        let linked = try BundleFactory.folder(["index.html": "x", "manifest.json": "{}"])
        try FileManager.default.createSymbolicLink(atPath: linked + "/passwd", withDestinationPath: "/etc/passwd")
        expectFailure(try await CommandRunner.run(["publish", linked, "--registry", registry, "--app-id", "hello", "--version-tag", "2", "--key", key + ".pem"]), status: 65)
        expectFailure(try await CommandRunner.run(["publish", linked, "--registry", registry, "--app-id", "../x", "--version-tag", "2", "--key", key + ".pem"]), status: 64)
    }

    @Test func concurrentPublishesWhileServingAllAppear() async throws {
        let (registry, key, _) = try await publishedRegistry()
        let (server, url, _) = try await startServe(registry)
        defer { server.terminate() }
        let folder = try BundleFactory.folder(BundleFactory.helloFiles)
        let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for index in 0..<4 {
                group.addTask {
                    try await CommandRunner.run(["publish", folder, "--registry", registry, "--app-id", "app-\(index)", "--version-tag", "1.\(index)", "--key", key + ".pem"])
                }
                group.addTask {
                    try await CommandRunner.run(["list", "--platform", url.absoluteString, "--project-id", "p", "--json"])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let listed = try await CommandRunner.run(["list", "--platform", url.absoluteString, "--project-id", "p", "--json"])
        #expect((try listed.json() as? [Any])?.count == 5, "new publishes appear without a restart")
    }

    @Test func severalAppsDownloadInOneCommand() async throws {
        let (registry, key, _) = try await publishedRegistry()
        let folder = try BundleFactory.folder(BundleFactory.helloFiles)
        _ = try await CommandRunner.run(["publish", folder, "--registry", registry, "--app-id", "other", "--version-tag", "1", "--key", key + ".pem"])
        let environment = ["MINIAPP_PLATFORM": registry, "MINIAPP_CACHE_DIR": work + "/many"]
        let both = try await CommandRunner.run(["download", "hello", "other", "--jobs", "2", "--json"], environment: environment)
        #expect(both.status == 0, "stderr: \(both.stderr)")
        #expect((try both.json() as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["hello", "other"])
        let partial = try await CommandRunner.run(["download", "hello", "nope", "other", "--json"], environment: environment)
        expectFailure(partial, status: 66, mentioning: "nope")
        #expect((try partial.json() as? [Any])?.count == 2, "the others are still reported")
        expectFailure(try await CommandRunner.run(["download", "hello", "other", "--version", "v1"], environment: environment), status: 64)
    }

    @Test func demoRegistryDownloadsAndVerifies() async throws {
        let registry = repositoryRoot.appendingPathComponent("Manifests/demo/registry").path
        let listed = try await CommandRunner.run(["list", "--platform", registry, "--json"])
        #expect((try listed.json() as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted() == ["hello", "notes", "weather"])
        for app in ["hello", "notes", "weather"] {
            let result = try await CommandRunner.run(["download", app, "--platform", registry, "--cache-dir", work + "/demo-cache", "--json"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect((try result.json() as? [String: Any])?["signature"] as? String == "verified")
        }
        let japanese = try await CommandRunner.run(["manifest", "hello", "--platform", registry, "--lang", "ja-JP", "--json"])
        let document = try #require(try japanese.json() as? [String: Any])
        #expect((document["reqPermissions"] as? [[String: Any]])?.first?["reason"] as? String == "お名前でご挨拶するため。")
        #expect((document["optPermissions"] as? [[String: Any]])?.first?["reason"] as? String == "To show your photo next to the greeting.", "falls back to default key by key")
    }
}
