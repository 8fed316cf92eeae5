import Foundation
import MiniAppTestSupport
import Testing

/// A config file with fast retries, so failure paths end quickly.
func fastConfigFile() throws -> String {
    let file = try TemporaryDirectory.make().appendingPathComponent("config.json").path
    let text = #"{"retry": {"maxAttempts": 3, "initialDelayMs": 10, "maxDelayMs": 20, "budgetSeconds": 10, "maxRetryAfterSeconds": 2}, "timeouts": {"readSeconds": 2}}"#
    try writeTestFile(file, Array(text.utf8))
    return file
}

let commandFixture = PlatformFixture(
    projectId: "proj-1",
    subscriptionKey: "sub-key-42",
    apps: [
        FixtureApp(id: "app-hello", displayName: "Hello World", icon: "https://cdn.example/icon.png", versions: [
            FixtureVersion(versionId: "ver-2", versionTag: "2.0.0", files: ["https://cdn.example/a.zip"], metadataJSON: #"""
                {"reqPermissions": [{"name": "rakuten.miniapp.user.USER_NAME", "reason": "to greet you"}],
                 "optPermissions": [{"name": "com.example.UNKNOWN"}],
                 "accessTokenPermissions": [{"audience": "rae", "scopes": ["idinfo_read_openid"]}],
                 "customMetaData": {"theme": "dark"}}
                """#),
            FixtureVersion(versionId: "ver-1", versionTag: "1.0.0", files: ["https://cdn.example/b.zip"], metadataJSON: "{}"),
        ]),
        FixtureApp(id: "app-w", versions: [FixtureVersion(versionId: "w-1")]),
    ]
)

/// Runs `miniapp` against `server` with the fixture's project and key.
func runAgainst(_ server: TestHTTPServer, _ arguments: [String], environment: [String: String] = [:]) async throws -> CommandResult {
    var env = [
        "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1",
        "MINIAPP_SUBSCRIPTION_KEY": "sub-key-42", "MINIAPP_CONFIG": try fastConfigFile(),
    ]
    env.merge(environment) { _, new in new }
    return try await CommandRunner.run(arguments, environment: env)
}

/// Checks the failure contract: the exit code, and stderr starting with one `error:` line.
func expectFailure(_ result: CommandResult, status: Int32, mentioning text: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(result.status == status, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stderrLines.first?.hasPrefix("error: ") == true, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stderrLines.filter { $0.hasPrefix("error:") }.count == 1, sourceLocation: sourceLocation)
    if let text {
        #expect(result.stderrLines.first?.contains(text) == true, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    }
}

@Suite struct PlatformCommandTests {
    @Test func listJSONIsTheArrayOfRecordsWithCached() async throws {
        try await withTestServer({ commandFixture.handle($0) }) { server in
            let result = try await runAgainst(server, ["list", "--json"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let apps = try #require(try result.json() as? [[String: Any]])
            #expect(apps.count == 2)
            #expect(apps[0]["id"] as? String == "app-hello")
            #expect(apps[0]["displayName"] as? String == "Hello World")
            #expect(apps[0]["icon"] as? String == "https://cdn.example/icon.png")
            let version = try #require(apps[0]["version"] as? [String: Any])
            #expect(version["versionId"] as? String == "ver-2")
            #expect(version["versionTag"] as? String == "2.0.0")
            #expect(apps.allSatisfy { $0["cached"] as? Bool == false })
            #expect(result.stderr.isEmpty)
        }
    }

    @Test func listTextIsAnAlignedTable() async throws {
        try await withTestServer({ commandFixture.handle($0) }) { server in
            let result = try await runAgainst(server, ["list"])
            #expect(result.status == 0)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("ID         NAME         VERSION  VERSION ID  CACHED"))
            #expect(lines[1].hasPrefix("app-hello  Hello World  2.0.0    ver-2       no"))
            let column = try #require(lines[0].range(of: "VERSION ID")).lowerBound.utf16Offset(in: lines[0])
            #expect(lines[2].dropFirst(column).hasPrefix("w-1"))
        }
    }

    @Test func infoJSONHasTheRecordAndItsCacheState() async throws {
        try await withTestServer({ commandFixture.handle($0) }) { server in
            let latest = try await runAgainst(server, ["info", "app-hello", "--json"])
            #expect(latest.status == 0, "stderr: \(latest.stderr)")
            let document = try #require(try latest.json() as? [String: Any])
            #expect(document["id"] as? String == "app-hello")
            #expect((document["version"] as? [String: Any])?["versionId"] as? String == "ver-2")
            #expect((document["cache"] as? [String: Any])?["present"] as? Bool == false)

            let older = try await runAgainst(server, ["info", "app-hello", "--version", "ver-1", "--json"])
            let olderDocument = try #require(try older.json() as? [String: Any])
            #expect((olderDocument["version"] as? [String: Any])?["versionId"] as? String == "ver-1")

            let text = try await runAgainst(server, ["info", "app-hello"])
            #expect(text.stdout.contains("version id:"))
            #expect(text.stdout.contains("ver-2"))
        }
    }

    @Test func manifestJSONHasTheFourParts() async throws {
        try await withTestServer({ commandFixture.handle($0) }) { server in
            let result = try await runAgainst(server, ["manifest", "app-hello", "--json", "--lang", "ja"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let document = try #require(try result.json() as? [String: Any])
            #expect(Set(document.keys) == ["reqPermissions", "optPermissions", "accessTokenPermissions", "customMetaData"])
            let required = try #require(document["reqPermissions"] as? [[String: Any]])
            #expect(required.first?["name"] as? String == "rakuten.miniapp.user.USER_NAME")
            #expect(required.first?["reason"] as? String == "to greet you")
            #expect((document["optPermissions"] as? [[String: Any]])?.first?["name"] as? String == "com.example.UNKNOWN")
            #expect((document["customMetaData"] as? [String: String]) == ["theme": "dark"])
            #expect(server.requests.last?.query["lang"] == "ja")

            let empty = try await runAgainst(server, ["manifest", "app-hello", "--version", "ver-1", "--json"])
            let emptyDocument = try #require(try empty.json() as? [String: Any])
            #expect((emptyDocument["reqPermissions"] as? [Any])?.isEmpty == true)

            let text = try await runAgainst(server, ["manifest", "app-hello"])
            #expect(text.stdout.contains("com.example.UNKNOWN (unknown)"))
        }
    }

    @Test(arguments: [
        (StubResponse.error(400, "bad"), 64),
        (.json(#"{"error": "denied", "error_description": "no"}"#, status: 401), 77),
        (.json(#"{"code": "Forbidden", "message": "no"}"#, status: 403), 77),
        (.error(404, "unknown"), 66),
        (.json("oops", status: 404), 66),
        (.error(429, "slow", headers: [("Retry-After", "600")]), 69),
        (.error(429, "slow"), 69),
        (.error(500, "down"), 69),
        (.error(503, "down"), 69),
        (StubResponse(action: .drop), 69),
        (.json("<html>not json</html>"), 65),
        (.json(#"{"id": "app-hello"}"#), 65),
    ])
    func everyPlatformErrorHasItsExitCode(response: StubResponse, status: Int) async throws {
        try await withTestServer({ _ in response }) { server in
            for arguments in [["list"], ["info", "app-hello", "--json"], ["manifest", "app-hello", "--version", "v1"]] {
                let result = try await runAgainst(server, arguments)
                expectFailure(result, status: Int32(status))
                #expect(result.stdout.isEmpty)
            }
        }
    }

    @Test func unknownAppIsNotFound() async throws {
        try await withTestServer({ commandFixture.handle($0) }) { server in
            expectFailure(try await runAgainst(server, ["info", "app-nope"]), status: 66, mentioning: "app-nope")
            expectFailure(try await runAgainst(server, ["manifest", "app-hello", "--version", "ver-9"]), status: 66)
        }
    }

    @Test func wrongKeyIsNotAllowedAndTheKeyIsNeverShown() async throws {
        try await withTestServer({ request in
            .error(401, "key \(request.header("apiKey") ?? "") rejected")
        }) { server in
            let result = try await runAgainst(server, ["list"], environment: ["MINIAPP_SUBSCRIPTION_KEY": "very-secret-9"])
            expectFailure(result, status: 77, mentioning: "credentials")
            #expect(!(result.stdout + result.stderr).contains("very-secret-9"))
            let verbose = try await runAgainst(server, ["list", "-v"], environment: ["MINIAPP_SUBSCRIPTION_KEY": "very-secret-9"])
            #expect(verbose.status == 77)
            #expect(verbose.stderrLines.contains { $0.hasPrefix("debug: platform request") })
            #expect(!(verbose.stdout + verbose.stderr).contains("very-secret-9"))
            let flagged = try await runAgainst(server, ["list", "--subscription-key", "other-secret-8", "--verbose"])
            #expect(!(flagged.stdout + flagged.stderr).contains("other-secret-8"))
        }
    }

    @Test func missingPlatformIsAUsageError() async throws {
        let result = try await CommandRunner.run(["list"])
        expectFailure(result, status: 64)
        #expect(result.stderrLines.first == "error: no platform configured: pass --platform or set MINIAPP_PLATFORM")
    }

    @Test(arguments: [
        ["list", "--no-such-flag"], ["info"], ["info", "../etc/passwd", "--platform", "http://127.0.0.1:9/", "--project-id", "p"],
        ["list", "--platform", "ftp://x/", "--project-id", "p"], ["list", "--platform", "http://127.0.0.1:9/"],
        ["download", "app-x", "--signature-policy", "sometimes", "--platform", "http://127.0.0.1:9/", "--project-id", "p"],
        ["frobnicate"],
    ])
    func badCommandLinesAreUsageErrors(arguments: [String]) async throws {
        expectFailure(try await CommandRunner.run(arguments), status: 64)
    }

    @Test func configNamedByVariableMustExist() async throws {
        let result = try await CommandRunner.run(["list"], environment: ["MINIAPP_CONFIG": "/nonexistent/config.json", "MINIAPP_PLATFORM": "http://127.0.0.1:9/"])
        expectFailure(result, status: 64, mentioning: "/nonexistent/config.json")
    }

    @Test func configFileSuppliesThePlatform() async throws {
        try await withTestServer({ commandFixture.handle($0) }) { server in
            let home = try TemporaryDirectory.make()
            let configDirectory = home.appendingPathComponent(".config/miniapp")
            try FileManager.default.createDirectory(at: configDirectory, withIntermediateDirectories: true)
            let base = server.baseURL.absoluteString.dropLast()
            try writeTestFile(configDirectory.appendingPathComponent("config.json").path, #"{"platform": "\#(base)", "projectId": "proj-1", "subscriptionKey": "sub-key-42"}"#)
            let result = try await CommandRunner.run(["list", "--json"], environment: ["HOME": home.path])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(server.requests.first?.uri == "/host/proj-1/miniapps/")
        }
    }

    @Test func versionAndHelpSucceed() async throws {
        let version = try await CommandRunner.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
        let help = try await CommandRunner.run(["list", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--platform"))
    }
}
