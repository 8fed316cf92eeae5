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

    func run(_ arguments: [String], _ store: [String: String] = [:]) async throws -> CommandResult {
        try await CommandRunner.run(arguments, environment: environment.merging(store) { $1 })
    }

    /// An import whose document cannot be had: one line and 66 (65 when stdin never ends), nothing
    /// imported; a document on stdin is read as from a file.
    @Test func anImportFromAFolderADeviceOrAnEndlessStdinIsOneErrorAndImportsNothing() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"])
        #expect(try await run(["download", "hello"]).status == 0)
        let before = try await run(["permissions", "export", "--format", "store"]).stdout
        let refused: [(arguments: [String], stdin: String, status: Int32, says: String)] = [
            (["permissions", "import", "-"], "/", 66, "cannot read stdin: Is a directory"),
            (["permissions", "import", "-"], "/dev/zero", 65, "stdin holds over 256 MiB"),
            (["permissions", "import", "hello", "/"], "/dev/null", 66, "cannot read /: it is not a regular file"),
            (["permissions", "import", "hello", "/dev/zero"], "/dev/null", 66, "cannot read /dev/zero: it is not a regular file"),
            (["permissions", "import", "hello", work + "/none.json"], "/dev/null", 66, "none.json: it does not exist"),
        ]
        for refusal in refused {
            let result = try await CommandRunner.run(refusal.arguments, environment: environment, stdin: refusal.stdin)
            expectFailure(result, status: refusal.status, mentioning: refusal.says)
            #expect(result.stderr.split(separator: "\n").count == 1, "\(refusal.arguments): \(result.stderr)")
        }
        #expect(try await run(["permissions", "export", "--format", "store"]).stdout == before)
        let document = work + "/granted.json"
        try writeTestFile(document, #"[{"permissionName": "rakuten.miniapp.user.USER_NAME", "isPermissionGranted": "ALLOWED"}]"#)
        let imported = try await CommandRunner.run(["permissions", "import", "hello", "-"], environment: environment, stdin: document)
        #expect(imported.status == 0, "\(imported.stderr)")
        let shown = try await run(["permissions", "show", "hello", "--json"]).json() as? [[String: Any]]
        #expect(shown?.first { $0["name"] as? String == "rakuten.miniapp.user.USER_NAME" }?["status"] as? String == "ALLOWED")
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

    /// A store named by --permission-store that cannot be used points at that option, not only at the
    /// cache folder where a store lives by default.
    @Test func anUnusableNamedStorePointsAtItsOption() async throws {
        let result = try await run(["permissions", "list", "--permission-store", work])
        expectFailure(result, status: 74, mentioning: "check --permission-store")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    /// The manifest is read before the store is changed: a grant, a denial or an import whose app the
    /// platform does not know fails and decides nothing.
    @Test func aDecisionWhoseManifestCannotBeReadChangesNothing() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"])
        #expect(try await run(["permissions", "grant", "hello", "USER_NAME"]).status == 0)
        let before = try await run(["permissions", "export", "--format", "store"])
        #expect(before.status == 0)
        let pairs = work + "/pairs.json"
        try writeTestFile(pairs, Data(#"{"miniAppId": "ghost", "pairValues": [{"first": "rakuten.miniapp.user.USER_NAME", "second": "ALLOWED"}]}"#.utf8))
        for arguments in [["permissions", "grant", "ghost", "USER_NAME"], ["permissions", "deny", "ghost", "USER_NAME"], ["permissions", "import", "ghost", pairs]] {
            expectFailure(try await run(arguments), status: 66, mentioning: "ghost")
        }
        #expect(try await run(["permissions", "export", "--format", "store"]).stdout == before.stdout, "a failed command decided something")
    }

    @Test(arguments: StoreBackend.allCases)
    func theLaunchGateOpensAndClosesAsVersionsChange(backend: StoreBackend) async throws {
        let store = try await backend.environment()
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"], optional: ["rakuten.miniapp.device.LOCATION"])
        let refused = try await run(["load", "hello"], store)
        expectFailure(refused, status: 77, mentioning: "rakuten.miniapp.user.USER_NAME")
        #expect((try await run(["cache", "list", "--json"], store).json() as? [Any])?.count == 1, "the download itself is kept")

        let shown = try #require(try await run(["permissions", "show", "hello", "--json"], store).json() as? [[String: Any]])
        #expect(shown.map { $0["name"] as? String } == ["rakuten.miniapp.user.USER_NAME", "rakuten.miniapp.device.LOCATION"])
        #expect(shown.map { $0["status"] as? String } == ["DENIED", "DENIED"])
        #expect(shown.map { $0["required"] as? Bool } == [true, false])
        #expect(shown.allSatisfy { $0["decidedAt"] is NSNull })
        #expect(shown.allSatisfy { $0["known"] as? Bool == true })

        let granted = try await run(["permissions", "grant", "hello", "USER_NAME", "--json"], store)
        #expect(granted.status == 0, "stderr: \(granted.stderr)")
        #expect(((try granted.json() as? [[String: Any]])?.first)?["status"] as? String == "ALLOWED")
        let loaded = try await run(["load", "hello"], store)
        #expect(loaded.status == 0, "stderr: \(loaded.stderr)")
        #expect(loaded.stdout.hasSuffix("/bundle\n"))

        try await publish("2", required: ["rakuten.miniapp.user.USER_NAME", "rakuten.miniapp.user.CONTACT_LIST"])
        let diff = try #require(try await run(["manifest", "hello", "--diff", "--json"], store).json() as? [String: Any])
        #expect(diff["requiredAdded"] as? [String] == ["rakuten.miniapp.user.CONTACT_LIST"])
        #expect(diff["optionalRemoved"] as? [String] == ["rakuten.miniapp.device.LOCATION"])
        expectFailure(try await run(["load", "hello"], store), status: 77, mentioning: "CONTACT_LIST")
        _ = try await run(["permissions", "grant", "hello", "rakuten.miniapp.user.CONTACT_LIST"], store)
        #expect(try await run(["load", "hello"], store).status == 0)
        _ = try await run(["permissions", "deny", "hello", "USER_NAME"], store)
        expectFailure(try await run(["load", "hello", "--offline"], store), status: 77)
        _ = try await run(["permissions", "reset", "hello"], store)
        let reset = try #require(try await run(["permissions", "show", "hello", "--json"], store).json() as? [[String: Any]])
        #expect(reset.allSatisfy { $0["status"] as? String == "DENIED" })
    }

    @Test(arguments: StoreBackend.allCases)
    func eightProcessesGrantingAtOnceLoseNothing(backend: StoreBackend) async throws {
        let store = try await backend.environment()
        let names = KnownPermission.allCases.map(\.shortName)
        #expect(names.count == 8)
        let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for name in names { group.addTask { try await CommandRunner.run(["permissions", "grant", "hello", name, "--cache-dir", work + "/cache"], environment: store) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let list = try await CommandRunner.run(["permissions", "list", "--json", "--cache-dir", work + "/cache"], environment: store)
        let entries = try #require(try list.json() as? [[String: Any]])
        #expect((entries.first?["permissions"] as? [Any])?.count == 8)
        // Then all eight change one permission at once, four granting and four denying: the history is
        // in the order the changes took effect (each from the state the one before left), its times never
        // going back.
        let changes = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for writer in 0..<8 {
                let verb = writer % 2 == 0 ? "grant" : "deny"
                group.addTask { try await CommandRunner.run(["permissions", verb, "hello", "USER_NAME", "--cache-dir", work + "/cache"], environment: store) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(changes.allSatisfy { $0.status == 0 }, "\(changes.map(\.stderr))")
        let history = try await CommandRunner.run(["permissions", "history", "hello", "--json", "--cache-dir", work + "/cache"], environment: store)
        let rows = try #require(try history.json() as? [[String: Any]])
        let times = rows.compactMap { $0["changedAt"] as? String }
        #expect(times.count == rows.count && rows.count > 8)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "\(times)")
        let shared = rows.filter { $0["name"] as? String == KnownPermission.userName.rawValue }
        #expect(zip(shared, shared.dropFirst()).allSatisfy { $0["to"] as? String == $1["from"] as? String }, "\(shared)")
    }

    @Test(arguments: StoreBackend.allCases)
    func exportAndImportRoundTripInBothShapes(backend: StoreBackend) async throws {
        let store = try await backend.environment()
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"], optional: ["rakuten.miniapp.device.LOCATION"])
        _ = try await run(["permissions", "grant", "hello", "USER_NAME"], store)
        _ = try await run(["permissions", "deny", "hello", "LOCATION"], store)
        for format in ["full", "pairs"] {
            let exported = try await run(["permissions", "export", "hello", "--format", format], store)
            #expect(exported.status == 0)
            let file = work + "/export-\(format).json"
            try writeTestFile(file, exported.stdout)
            _ = try await run(["permissions", "reset", "hello"], store)
            let imported = try await run(["permissions", "import", "hello", file, "--json"], store)
            #expect(imported.status == 0, "stderr: \(imported.stderr)")
            let states = try #require(try imported.json() as? [[String: Any]])
            #expect(states.map { $0["status"] as? String } == ["ALLOWED", "DENIED"])
        }
        try writeTestFile(work + "/bad.json", "not json")
        expectFailure(try await run(["permissions", "import", "hello", work + "/bad.json"], store), status: 65)
    }

    @Test func aDamagedStoreIsAClearErrorAndStaysAsItWas() async throws {
        try FileManager.default.createDirectory(atPath: work + "/cache", withIntermediateDirectories: true)
        let garbage = Data("this is not a database".utf8) + Data(repeating: 0, count: 4096)
        try writeTestFile(work + "/cache/permissions.sqlite", garbage)
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

    @Test func aStoreExportPipedIntoAnImportMovesEveryDecisionWithItsTimeIntoPostgres() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"])
        #expect(try await run(["permissions", "grant", "hello", "USER_NAME", "LOCATION"]).status == 0)
        #expect(try await run(["permissions", "deny", "weather", "CONTACT_LIST", "--offline"]).status == 0)
        let store = try await StoreBackend.postgres.environment()
        // The README's one line: an export of the machine's SQLite store piped into PostgreSQL.
        let binary = CommandRunner.executable.path
        let line = "'\(binary)' permissions export --format store --cache-dir '\(work)/cache' | '\(binary)' permissions import - --permission-store '\(store["MINIAPP_PERMISSION_STORE"]!)'"
        #expect(await runTool("/bin/bash", ["-o", "pipefail", "-c", line]) == 0)
        let source = try await run(["permissions", "export", "--format", "store"])
        let target = try await run(["permissions", "export", "--format", "store"], store)
        #expect(source.status == 0 && target.status == 0)
        #expect(target.stdout == source.stdout, "the same decisions with the same times")
        let document = try #require(try target.json() as? [String: Any])
        #expect((document["apps"] as? [[String: Any]])?.map { $0["id"] as? String } == ["hello", "weather"])
        #expect(try await run(["permissions", "list", "--json"], store).json() as? [[String: Any]] != nil)
        // Imported into the same store again, nothing changes: no new history.
        let history = try await run(["permissions", "history", "hello", "--json"], store).stdout
        let file = work + "/store.json"
        try writeTestFile(file, source.stdout)
        #expect(try await run(["permissions", "import", file], store).status == 0)
        #expect(try await run(["permissions", "history", "hello", "--json"], store).stdout == history)
        expectFailure(try await run(["permissions", "import", work + "/none.json"], store), status: 66)
    }

    @Test func aStoppedOrRefusingDatabaseFailsClosedWithoutShowingThePassword() async throws {
        try await publish("1", required: ["rakuten.miniapp.user.USER_NAME"])
        #expect(try await run(["download", "hello"]).status == 0)
        #expect(try await run(["permissions", "grant", "hello", "USER_NAME"]).status == 0, "allowed in the SQLite store, which must not be consulted")
        let closed = LoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        let stopped = ["MINIAPP_PERMISSION_STORE": "postgres://fleet:hunter2@127.0.0.1:\(closed.port)/perms?sslmode=disable"]
        for arguments in [["load", "hello", "--offline"], ["load", "hello"], ["permissions", "grant", "hello", "USER_NAME"], ["permissions", "list"], ["permissions", "show", "hello"]] {
            let result = try await run(arguments, stopped)
            expectFailure(result, status: 69, mentioning: "permission store postgres://fleet@127.0.0.1:\(closed.port)/perms")
            #expect(result.stderr.contains("connection refused"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("hunter2") && !result.stdout.contains("hunter2"))
            #expect(result.stderrLines.count == 1, "\(result.stderr)")
        }
        let cluster = try await PostgresCluster.shared()
        let database = try await cluster.createDatabase()
        let config = work + "/config.json"
        try writeTestFile(config, #"{"permissionStore": "\#(cluster.tcpURL(database, password: "wrong-pw"))"}"#)
        for (arguments, extra) in [
            (["load", "hello", "--offline"], ["MINIAPP_CONFIG": config]),
            (["permissions", "grant", "hello", "USER_NAME", "--permission-store", cluster.tcpURL(database, password: "wrong-pw")], [:]),
            (["permissions", "list"], ["MINIAPP_PERMISSION_STORE": cluster.tcpURL(database, password: nil), "PGPASSWORD": "wrong-pw"]),
        ] {
            let result = try await run(arguments, extra)
            expectFailure(result, status: 77, mentioning: "permission store")
            #expect(!result.stderr.contains("wrong-pw") && !result.stdout.contains("wrong-pw"), "\(result.stderr)")
        }
        // With the right password the store works, and its own decisions (none yet) gate the launch.
        let working = ["MINIAPP_PERMISSION_STORE": cluster.tcpURL(database, password: cluster.password)]
        expectFailure(try await run(["load", "hello", "--offline"], working), status: 77, mentioning: "USER_NAME")
        #expect(try await run(["permissions", "grant", "hello", "USER_NAME"], working).status == 0)
        #expect(try await run(["load", "hello", "--offline"], working).status == 0)
        // A malformed URL is a usage error that does not echo it.
        let malformed = try await run(["permissions", "list", "--permission-store", "postgres://u:hunter2@h:99999/d"])
        expectFailure(malformed, status: 64)
        #expect(!malformed.stderr.contains("hunter2"))
    }
}
