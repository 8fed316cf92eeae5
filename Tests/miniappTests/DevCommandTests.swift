import Foundation
import MiniAppTestSupport
import Testing

/// `miniapp dev`: the check of `--check` on the command line, and a folder served as it is by a running
/// `miniapp dev` under every file rule of `run`, over HTTP.
@Suite struct DevCommandTests {
    let work = try! TemporaryDirectory.make().path

    /// A development folder `name` in the work folder holding index.html and `manifest`.
    func folder(_ name: String = "shop", manifest: String?) throws -> String {
        let folder = work + "/" + name
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try writeTestFile(folder + "/index.html", Array("<!doctype html><html><head><title>dev</title></head><body>dev app</body></html>".utf8))
        if let manifest { try writeTestFile(folder + "/manifest.json", Array(manifest.utf8)) }
        return folder
    }

    static let devCheck = repositoryRoot.appendingPathComponent("Manifests/dev-check")

    @Test func checkPrintsOneLinePerProblemAndExits65() async throws {
        let folder = try folder(manifest: #"{"reqPermissions": [{"name": "rakuten.miniapp.user.USER_NAM"}, {"name": "rakuten.miniapp.user.POINTS"}]}"#)
        let result = try await CommandRunner.run(["dev", "--check", folder], timeoutSeconds: 60)
        #expect(result.status == 65, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        // The misspelt name, and the required permission that no script calls.
        #expect(lines.count == 2, "\(result.stdout)")
        #expect(lines.contains { $0.hasSuffix("manifest.json: reqPermissions[0]: 'rakuten.miniapp.user.USER_NAM' is not a permission the SDKs know: did you mean rakuten.miniapp.user.USER_NAME?") }, "\(result.stdout)")
        #expect(lines.contains { $0.contains("no script of the folder calls getPoints") }, "\(result.stdout)")
        let json = try await CommandRunner.run(["dev", "--check", folder, "--json"], timeoutSeconds: 60)
        #expect(json.status == 65)
        let problems = try #require(try json.json() as? [[String: String]])
        #expect(problems.map { $0["kind"] } == ["unknownPermission", "unusedRequirement"], "\(problems)")
    }

    @Test func checkOfACleanFolderExitsZero() async throws {
        let good = try String(contentsOf: Self.devCheck.appendingPathComponent("good/full.json"), encoding: .utf8)
        let folder = try folder(manifest: good)
        try writeTestFile(folder + "/app.js", Array("MiniApp.user.getUserName().then(function (name) { greet(name); });".utf8))
        let result = try await CommandRunner.run(["dev", "--check", folder], timeoutSeconds: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func aFolderThatCannotBeServedIsRefusedWithTheDocumentedCode() async throws {
        let missing = try await CommandRunner.run(["dev", work + "/nothing-here"], timeoutSeconds: 60)
        #expect(missing.status == 66 && missing.stderr.hasPrefix("error: ") && missing.stderr.contains("is not a folder"), "\(missing.stderr)")
        try FileManager.default.createDirectory(atPath: work + "/empty", withIntermediateDirectories: true)
        let empty = try await CommandRunner.run(["dev", work + "/empty"], timeoutSeconds: 60)
        #expect(empty.status == 65 && empty.stderr.contains("holds no index.html"), "\(empty.stderr)")
        let broken = try folder("broken", manifest: #"{"reqPermissions": "USER_NAME"}"#)
        let refused = try await CommandRunner.run(["dev", broken], timeoutSeconds: 60)
        #expect(refused.status == 65 && refused.stderr.hasPrefix("error: ") && refused.stderr.contains("manifest.json"), "\(refused.stderr)")
        let badId = try await CommandRunner.run(["dev", broken, "--app-id", "../x"], timeoutSeconds: 60)
        #expect(badId.status == 64, "\(badId.stderr)")
    }

    /// What a GET of `path` (sent as it is) on `host` answers: the status and the body.
    func get(_ path: String, host: String, port: Int) async throws -> (status: Int, body: String) {
        let answer = try await rawHTTP(port: port, "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n")
        let status = answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let body = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, body)
    }

    @Test func theFolderIsServedAsItIsUnderEveryFileRuleOfRun() async throws {
        let folder = try folder(manifest: #"{"optPermissions": [{"name": "rakuten.miniapp.user.USER_NAME"}]}"#)
        try FileManager.default.createDirectory(atPath: folder + "/pages", withIntermediateDirectories: true)
        try writeTestFile(folder + "/pages/about.html", Array("<html><head></head><body>about</body></html>".utf8))
        try writeTestFile(folder + "/.env", Array("SECRET=1".utf8))
        try writeTestFile(work + "/outside.txt", Array("outside".utf8))
        try FileManager.default.createSymbolicLink(atPath: folder + "/passwd", withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: folder + "/pages/up.txt", withDestinationPath: "../../outside.txt")
        try FileManager.default.createSymbolicLink(atPath: folder + "/linked", withDestinationPath: work)
        let before = try FileManager.default.subpathsOfDirectory(atPath: folder).sorted()
        let state = work + "/state"
        let port = try freePort()
        let process = try CommandRunner.start(["dev", folder, "--port", "\(port)"], environment: ["XDG_STATE_HOME": state])
        defer { process.terminate(); process.waitUntilExit() }
        var first: (status: Int, body: String) = (0, "")
        for _ in 0..<200 {
            if let answer = try? await get("/", host: "shop.localhost", port: port) { first = answer; break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(first.status == 200 && first.body.contains("dev app") && first.body.contains("/__miniapp/bridge.js"), "\(first)")
        #expect(try await get("/pages/about.html", host: "shop.localhost", port: port).status == 200)
        for path in [
            "/.env", "/passwd", "/pages/up.txt", "/linked/outside.txt", "/../outside.txt", "/pages/../../outside.txt",
            "/%2e%2e/outside.txt", "/pages%2f..%2f..%2foutside.txt", "/pages/..%2f..%2foutside.txt", "/%2fetc%2fpasswd", "/pages/%2e%2e/%2e%2e/outside.txt",
        ] {
            let answer = try await get(path, host: "shop.localhost", port: port)
            #expect(answer.status == 404 && !answer.body.contains("root:") && !answer.body.contains("outside"), "\(path): \(answer)")
        }
        // The host's endpoints answer the host page only.
        #expect(try await get("/api/apps/shop", host: "shop.localhost", port: port).status == 403)
        #expect(try await get("/api/apps/shop", host: "localhost", port: port).status == 403)
        // The folder's state lives outside it.
        #expect(try FileManager.default.subpathsOfDirectory(atPath: folder).sorted() == before)
        let kept = try FileManager.default.contentsOfDirectory(atPath: state + "/miniapp/dev")
        #expect(kept.count == 1)
        #expect(FileManager.default.fileExists(atPath: state + "/miniapp/dev/\(kept[0])/permissions.sqlite"))
        #expect(FileManager.default.fileExists(atPath: state + "/miniapp/dev/\(kept[0])/bridge.secret"))
    }

    @Test func aSharedStoreIsUsedWhenNamed() async throws {
        let folder = try folder(manifest: "{}")
        let store = work + "/shared.sqlite"
        let port = try freePort()
        let process = try CommandRunner.start(["dev", folder, "--port", "\(port)", "--permission-store", store, "--app-id", "my-shop"], environment: ["XDG_STATE_HOME": work + "/state"])
        defer { process.terminate(); process.waitUntilExit() }
        var status = 0
        for _ in 0..<200 {
            if let answer = try? await get("/", host: "my-shop.localhost", port: port) { status = answer.status; break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(status == 200)
        #expect(FileManager.default.fileExists(atPath: store))
        let own = (try? FileManager.default.subpathsOfDirectory(atPath: work + "/state")) ?? []
        #expect(!own.contains { $0.hasSuffix("permissions.sqlite") }, "\(own)")
    }
}
