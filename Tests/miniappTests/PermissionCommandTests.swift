import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppTestSupport
import Testing

@Suite struct PermissionCommandTests {
    let work = try! TemporaryDirectory.make().path

    var environment: [String: String] {
        ["MINIAPP_PLATFORM": work + "/registry", "MINIAPP_CACHE_DIR": work + "/cache"]
    }

    /// Publishes `hello` version `tag` with these required permissions into the work registry.
    func publish(_ tag: String, required: [String], optional: [String] = [], metadata: [String: String] = [:]) async throws {
        if !FileManager.default.fileExists(atPath: work + "/key.pem") {
            _ = try await CommandRunner.run(["keygen", "--out", work + "/key"])
        }
        let declarations = { (names: [String]) in names.map { #"{"name": "\#($0)", "reason": "because"}"# }.joined(separator: ",") }
        let meta = metadata.map { #""\#($0.key)": "\#($0.value)""# }.joined(separator: ",")
        let manifest = #"{"reqPermissions": [\#(declarations(required))], "optPermissions": [\#(declarations(optional))], "customMetaData": {\#(meta)}}"#
        let folder = try BundleFactory.folder(["index.html": "<html>\(tag)</html>", "manifest.json": manifest])
        let result = try await CommandRunner.run(["publish", folder, "--registry", work + "/registry", "--app-id", "hello", "--version-id", "v-" + tag, "--version-tag", tag, "--key", work + "/key.pem"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
    }

    func run(_ arguments: [String]) async throws -> CommandResult {
        try await CommandRunner.run(arguments, environment: environment)
    }

    /// Root ignores file modes, so the store is made unreadable for another user (nobody) instead.
    @Test(.enabled(if: CommandRunner.canRunAsAnotherUser))
    func anUnreadableStoreGives74AndStaysAsItWas() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"])
        #expect(try await run(["download", "hello"]).status == 0)
        #expect(try await run(["permissions", "grant", "hello", "USER_NAME"]).status == 0)
        let store = work + "/cache/permissions.sqlite"
        #expect(chmod(store, 0o600) == 0)
        let before = CacheTree(work + "/cache")
        let storeBefore = try Data(contentsOf: URL(fileURLWithPath: store))
        for arguments in [["permissions", "show", "hello"], ["permissions", "list"], ["permissions", "grant", "hello", "USER_NAME"], ["load", "hello", "--offline"]] {
            let result = try await CommandRunner.run(arguments, environment: environment, user: 65534)
            expectFailure(result, status: 74, mentioning: "permission store")
            #expect(CacheTree(work + "/cache") == before, "\(arguments) changed the cache")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == storeBefore)
        #expect(try await run(["load", "hello", "--offline"]).status == 0, "the store's owner still launches the app")
    }

    @Test func theLaunchGateOpensAndClosesAsVersionsChange() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"], optional: ["rakuten.miniapp.device.LOCATION"])
        let refused = try await run(["load", "hello"])
        expectFailure(refused, status: 77, mentioning: "rakuten.miniapp.user.USER_NAME")
        #expect((try await run(["cache", "list", "--json"]).json() as? [Any])?.count == 1, "the download itself is kept")

        let shown = try #require(try await run(["permissions", "show", "hello", "--json"]).json() as? [[String: Any]])
        #expect(shown.map { $0["name"] as? String } == ["rakuten.miniapp.user.USER_NAME", "rakuten.miniapp.device.LOCATION"])
        #expect(shown.map { $0["status"] as? String } == ["DENIED", "DENIED"])
        #expect(shown.map { $0["required"] as? Bool } == [true, false])
        #expect(shown.allSatisfy { $0["decidedAt"] is NSNull })
        #expect(shown.allSatisfy { $0["known"] as? Bool == true })

        let granted = try await run(["permissions", "grant", "hello", "USER_NAME", "--json"])
        #expect(granted.status == 0, "stderr: \(granted.stderr)")
        #expect(((try granted.json() as? [[String: Any]])?.first)?["status"] as? String == "ALLOWED")
        let loaded = try await run(["load", "hello"])
        #expect(loaded.status == 0, "stderr: \(loaded.stderr)")
        #expect(loaded.stdout.hasSuffix("/bundle\n"))

        try await publish("2", required: ["rakuten.miniapp.user.USER_NAME", "rakuten.miniapp.user.CONTACT_LIST"])
        let diff = try #require(try await run(["manifest", "hello", "--diff", "--json"]).json() as? [String: Any])
        #expect(diff["requiredAdded"] as? [String] == ["rakuten.miniapp.user.CONTACT_LIST"])
        #expect(diff["optionalRemoved"] as? [String] == ["rakuten.miniapp.device.LOCATION"])
        expectFailure(try await run(["load", "hello"]), status: 77, mentioning: "CONTACT_LIST")
        _ = try await run(["permissions", "grant", "hello", "rakuten.miniapp.user.CONTACT_LIST"])
        #expect(try await run(["load", "hello"]).status == 0)
        _ = try await run(["permissions", "deny", "hello", "USER_NAME"])
        expectFailure(try await run(["load", "hello", "--offline"]), status: 77)
        _ = try await run(["permissions", "reset", "hello"])
        let reset = try #require(try await run(["permissions", "show", "hello", "--json"]).json() as? [[String: Any]])
        #expect(reset.allSatisfy { $0["status"] as? String == "DENIED" })
    }

    @Test func eightProcessesGrantingAtOnceLoseNothing() async throws {
        let names = KnownPermission.allCases.map(\.shortName)
        #expect(names.count == 8)
        let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for name in names { group.addTask { try await CommandRunner.run(["permissions", "grant", "hello", name, "--cache-dir", work + "/cache"]) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let list = try await CommandRunner.run(["permissions", "list", "--json", "--cache-dir", work + "/cache"])
        let entries = try #require(try list.json() as? [[String: Any]])
        #expect((entries.first?["permissions"] as? [Any])?.count == 8)
    }

    @Test func exportAndImportRoundTripInBothShapes() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"], optional: ["rakuten.miniapp.device.LOCATION"])
        _ = try await run(["permissions", "grant", "hello", "USER_NAME"])
        _ = try await run(["permissions", "deny", "hello", "LOCATION"])
        for format in ["full", "pairs"] {
            let exported = try await run(["permissions", "export", "hello", "--format", format])
            #expect(exported.status == 0)
            let file = work + "/export-\(format).json"
            try exported.stdout.write(toFile: file, atomically: true, encoding: .utf8)
            _ = try await run(["permissions", "reset", "hello"])
            let imported = try await run(["permissions", "import", "hello", file, "--json"])
            #expect(imported.status == 0, "stderr: \(imported.stderr)")
            let states = try #require(try imported.json() as? [[String: Any]])
            #expect(states.map { $0["status"] as? String } == ["ALLOWED", "DENIED"])
        }
        try "not json".write(toFile: work + "/bad.json", atomically: true, encoding: .utf8)
        expectFailure(try await run(["permissions", "import", "hello", work + "/bad.json"]), status: 65)
    }

    @Test func aDamagedStoreIsAClearErrorAndStaysAsItWas() async throws {
        try FileManager.default.createDirectory(atPath: work + "/cache", withIntermediateDirectories: true)
        let garbage = Data("this is not a database".utf8) + Data(repeating: 0, count: 4096)
        try garbage.write(to: URL(fileURLWithPath: work + "/cache/permissions.sqlite"))
        let cacheOnly = ["MINIAPP_CACHE_DIR": work + "/cache"]
        expectFailure(try await CommandRunner.run(["permissions", "grant", "hello", "USER_NAME"], environment: cacheOnly), status: 65, mentioning: "permission store")
        expectFailure(try await CommandRunner.run(["permissions", "list"], environment: cacheOnly), status: 65)
        #expect(try Data(contentsOf: URL(fileURLWithPath: work + "/cache/permissions.sqlite")) == garbage)
    }

    @Test func badNamesAreUsageErrors() async throws {
        expectFailure(try await run(["permissions", "grant", "hello", "has space"]), status: 64)
        expectFailure(try await run(["permissions", "grant", "hello"]), status: 64)
        expectFailure(try await run(["permissions", "show", "../etc"]), status: 64)
    }
}
