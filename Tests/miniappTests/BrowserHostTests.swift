import Foundation
import MiniAppTestSupport
import Testing

/// `miniapp run` in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`)
/// driven by Selenium through Tests/Browser/drive.py, which checks the launch gate, every kind of bridge
/// answer, prompts the app cannot forge, secure storage and its isolation, bad messages, and Rakuten's
/// real sample mini-app (from ../shared/real-miniapps, not part of this repository: skipped, and said so,
/// when it is absent).
@Suite(.serialized) struct BrowserHostTests {
    static let sample = repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/real-miniapps/rakuten-js-sample-2026-02-20.zip").path

    @Test(arguments: StoreBackend.allCases)
    func miniAppsRunInABrowserThroughTheBridge(backend: StoreBackend) async throws {
        let work = try TemporaryDirectory.make().path + "/browser"
        var arguments = [repositoryRoot.appendingPathComponent("Tests/Browser/drive.py").path, CommandRunner.executable.path, work]
        // The real sample once (with the embedded store); the PostgreSQL run checks the probe app.
        if backend == .sqlite, FileManager.default.fileExists(atPath: Self.sample) { arguments.append(Self.sample) }
        if let store = try await backend.environment()["MINIAPP_PERMISSION_STORE"] { arguments += ["--store", store] }
        let (status, output) = try await ChildProcess.output("/usr/bin/python3", arguments, mergeErrors: true)
        #expect(status == 0, "\(output)")
        #expect(output.contains("all browser checks passed"), "\(output)")
        if backend == .sqlite {
            #expect(output.contains("ok: the real sample runs through the bridge") || !FileManager.default.fileExists(atPath: Self.sample), "\(output)")
        }
        // The secret the apps' identifiers derive from: 32 bytes, readable by its owner only.
        let secret = try FileManager.default.attributesOfItem(atPath: work + "/cache/bridge.secret")
        #expect((secret[.posixPermissions] as? Int) == 0o600 && (secret[.size] as? Int) == 32)
    }

    /// `miniapp dev` in Chromium through Tests/Browser/dev.py: reloads after one write and once after a
    /// burst of 200, the gate following a changed manifest, a broken manifest keeping the last good one,
    /// an undeclared call flagged on the page and on stderr, and the publish command shown.
    @Test func aDevelopmentFolderReloadsAndIsCheckedInABrowser() async throws {
        let (status, output) = try await Self.drive("dev.py")
        #expect(status == 0, "\(output)")
        #expect(output.contains("all dev checks passed"), "\(output)")
    }

    /// The host page's panel of `miniapp dev` in Chromium through Tests/Browser/panel.py: the bridge's
    /// calls listed with their answers (tokens masked) and filtered, a denial, a profile edit, storage
    /// edits and injected errors each seen by the app's next call, a host event reaching the app, and
    /// the app's origin refused by every panel endpoint and kept out of the panel. The host page's
    /// screenshots at two window sizes stay in the test's work folder, named in a line of output.
    @Test func theHostPagesPanelShowsAndSimulatesTheHostInABrowser() async throws {
        let (status, output) = try await Self.drive("panel.py")
        #expect(status == 0, "\(output)")
        #expect(output.contains("all panel checks passed"), "\(output)")
        for line in output.split(separator: "\n") where line.hasPrefix("screenshots of the host page: ") { print(line) }
    }

    /// Web apps written for Liquid State, Forem and Corva (Tests/Browser/dialects) under `miniapp run`
    /// and `miniapp dev` in Chromium through Tests/Browser/dialects.py: every event and message of
    /// ../shared/spec/host-dialects.md answered or acted on, byte for byte where it gives shapes; each
    /// form of a custom-scheme navigation leaving the frame as it was; the podcast player playing; the
    /// hostile app's attacks through each dialect refused; no console error at load; the host's web
    /// code linted.
    @Test func webAppsOfOtherHostsRunUnchangedInABrowser() async throws {
        let (status, output) = try await Self.drive("dialects.py")
        #expect(status == 0, "\(output)")
        #expect(output.contains("all dialect checks passed"), "\(output)")
    }

    /// Runs the driver `script` of Tests/Browser against this build's `miniapp`, in a new work folder
    /// that stays after the test; its exit status and its output, errors included.
    static func drive(_ script: String) async throws -> (status: Int32, output: String) {
        let work = try TemporaryDirectory.make().path
        return try await ChildProcess.output(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Browser/" + script).path, CommandRunner.executable.path, work], mergeErrors: true
        )
    }

    static let demo = repositoryRoot.appendingPathComponent("Manifests/demo/registry").path

    static let badRuns: [(arguments: [String], profile: String?, status: Int32, says: String)] = [
        (["hello", "--host-profile", "/nonexistent/profile.json"], nil, 64, "--host-profile"),
        (["hello"], #"{"userName": "Aiko", "usrName": "typo"}"#, 64, "unknown key"),
        (["hello"], #"{"points": {"standard": "many"}}"#, 64, "points"),
        (["hello"], "not json", 64, "host profile"),
        (["hello", "--port", "70000"], nil, 64, "--port"),
        (["hello", "--secure-storage-limit", "0"], nil, 64, "--secure-storage-limit"),
        (["hello", "--dialect", "acme"], nil, 64, "--dialect"),
        (["hello", "--path", "dashboards/1"], nil, 64, "--path"),
        (["hello", "--path", "/a/../../b"], nil, 64, "--path"),
        (["hello", "--query", "=1"], nil, 64, "--query"),
        (["hello"], #"{"dialect": "acme"}"#, 64, "dialect"),
        (["hello"], #"{"tabs": [{"id": "a"}, {"id": "a"}]}"#, 64, "tabs"),
        (["hello"], #"{"launch": {"path": "//evil.example/"}}"#, 64, "launch.path"),
        (["nope"], nil, 66, "nope"),
        (["hello", "--offline"], nil, 66, "hello"),
    ]

    @Test(arguments: ["run", "serve"])
    func aPortInUseIsAUsageErrorNamingIt(command: String) async throws {
        let work = try TemporaryDirectory.make().path
        let taken = LoopbackPort(listening: true)
        let arguments = command == "run"
            ? ["run", "hello", "--port", "\(taken.port)", "--platform", Self.demo, "--cache-dir", work + "/cache"]
            : ["serve", Self.demo, "--port", "\(taken.port)"]
        let result = try await CommandRunner.run(arguments, timeoutSeconds: 60)
        withExtendedLifetime(taken) {}
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains("\(taken.port)") && result.stderr.contains("in use"), "\(result.stderr)")
    }

    /// `--open` where no browser can be opened: the host runs on, and says once how to reach it.
    @Test func openWithoutXdgOpenWarnsAndKeepsRunning() async throws {
        let work = try TemporaryDirectory.make().path
        let errors = work + "/stderr"
        let process = try ChildProcess(
            CommandRunner.executable.path, ["run", "hello", "--port", "0", "--open", "--platform", Self.demo, "--cache-dir", work + "/cache"],
            environment: ["PATH": work, "HOME": work], stdout: .file(work + "/stdout"), stderr: .file(errors)
        )
        defer { process.stop() }
        let deadline = ContinuousClock.now + .seconds(90)
        var said = ""
        while !said.contains("warning: "), process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        }
        let url = try #require(try String(contentsOfFile: work + "/stdout", encoding: .utf8).split(separator: "\n").first)
        #expect(said.contains("warning: cannot open a browser (xdg-open is not on PATH): open \(url) yourself"), "\(said)")
        #expect(process.isRunning, "the host outlives the browser it could not open")
    }

    @Test(arguments: badRuns)
    func runRefusesBadInputWithOneLineAndTheDocumentedCode(arguments: [String], profile: String?, status: Int32, says: String) async throws {
        let work = try TemporaryDirectory.make().path
        var extra: [String] = []
        if let profile {
            try writeTestFile(work + "/profile.json", Array(profile.utf8))
            extra = ["--host-profile", work + "/profile.json"]
        }
        let result = try await CommandRunner.run(["run"] + arguments + extra + ["--platform", Self.demo, "--cache-dir", work + "/cache"], timeoutSeconds: 60)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains(says), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        for kept in ["bridge.secret", "permissions.sqlite"] {
            #expect(!FileManager.default.fileExists(atPath: work + "/cache/" + kept), "a refused run leaves no \(kept)")
        }
    }
}
