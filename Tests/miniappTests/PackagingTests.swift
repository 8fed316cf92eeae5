import Foundation
import MiniAppTestSupport
import Testing

/// The Debian package (`scripts/build-deb`), built from the build these tests run and installed on
/// this machine: the tool, its man pages and completions, the service's user and folder, and the
/// `miniapp-serve` unit, whose command is started as the unit would start it.
///
/// It installs into the system, so it needs root (as the suite's other system tests) and refuses to
/// replace a `miniapp` package installed before it; it purges what it installed however it ends.
@Suite(.enabled(if: getuid() == 0, "installs a package: needs root"))
struct PackagingTests {
    let work = try! TemporaryDirectory.make().path

    /// `swift-argument-parser`'s manual generator, built beside the tool (`scripts/test` builds it).
    static var manualGenerator: String? {
        let folders = [CommandRunner.executable.deletingLastPathComponent().path, repositoryRoot.path + "/.build/debug"]
        return folders.map { $0 + "/generate-manual" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func thePackageInstallsTheToolItsPagesAndAServiceThatStarts() async throws {
        let installed = try await ChildProcess.output("/usr/bin/dpkg-query", ["-W", "-f", "${Status}", "miniapp"])
        try #require(!installed.output.contains("install ok installed"), "a miniapp package is installed on this machine already; this test would replace it")
        let generator = try #require(Self.manualGenerator, "no generate-manual: run `swift build --product generate-manual` (scripts/test does)")

        let built = try await ChildProcess.output(
            "/usr/bin/env",
            ["MINIAPP_GENERATE_MANUAL=\(generator)", repositoryRoot.path + "/scripts/build-deb",
             "--from", CommandRunner.executable.deletingLastPathComponent().path, "--output", work, "--compression", "none"],
            mergeErrors: true
        )
        try #require(built.status == 0, "scripts/build-deb: \(built.output)")
        let package = try #require(built.output.split(separator: "\n").last.map(String.init))
        #expect(package.hasSuffix(".deb") && FileManager.default.fileExists(atPath: package))

        let fields = try await ChildProcess.output("/usr/bin/dpkg-deb", ["-f", package, "Package", "Version", "Depends"])
        let version = try await CommandRunner.run(["--version"])
        #expect(fields.output.contains("Package: miniapp") && fields.output.contains("Version: \(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"))
        #expect(fields.output.contains("libarchive13") && fields.output.contains("libssl3"), "dependencies from the libraries linked: \(fields.output)")

        let install = try await ChildProcess.output("/usr/bin/dpkg", ["-i", package], mergeErrors: true)
        defer { runToolBlocking("/usr/bin/dpkg", ["--purge", "miniapp"]) }
        try #require(install.status == 0, "dpkg -i: \(install.output)")

        // The tool, its pages and its completions.
        let tool = try await ChildProcess.output("/usr/bin/miniapp", ["--version"])
        #expect(tool.status == 0 && tool.output == version.stdout)
        for page in ["miniapp", "miniapp.download", "miniapp.serve", "miniapp.tuf.init", "miniapp.permissions.grant"] {
            #expect(FileManager.default.fileExists(atPath: "/usr/share/man/man1/\(page).1.gz"), "man page \(page)")
        }
        let manual = try await ChildProcess.output("/usr/bin/env", ["MANWIDTH=200", "man", "-l", "/usr/share/man/man1/miniapp.serve.1.gz"])
        #expect(manual.status == 0 && manual.output.contains("--subscription-key-file") && manual.output.contains("--tuf-timestamp-key"))
        let bash = try await ChildProcess.output("/bin/bash", ["-c", "source /usr/share/bash-completion/completions/miniapp && complete -p miniapp"])
        #expect(bash.status == 0 && bash.output.contains("miniapp"), "bash completion: \(bash.output)")
        for file in ["/usr/share/zsh/site-functions/_miniapp", "/usr/share/fish/vendor_completions.d/miniapp.fish"] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            #expect(text.contains("download") && text.contains("tuf"), "\(file) completes the commands")
        }

        // The service's user, its folder and its unit.
        let user = try await ChildProcess.output("/usr/bin/getent", ["passwd", "miniapp"])
        #expect(user.status == 0 && user.output.hasSuffix(":/var/lib/miniapp:/usr/sbin/nologin\n"), "user: \(user.output)")
        let registry = "/var/lib/miniapp/registry"
        let attributes = try FileManager.default.attributesOfItem(atPath: registry)
        #expect(attributes[.ownerAccountName] as? String == "miniapp" && attributes[.posixPermissions] as? Int == 0o750)
        let unitPath = "/usr/lib/systemd/system/miniapp-serve.service"
        let unit = try String(contentsOfFile: unitPath, encoding: .utf8)
        for directive in ["User=miniapp", "ProtectSystem=strict", "ReadWritePaths=/var/lib/miniapp/registry", "NoNewPrivileges=yes", "ProtectHome=yes", "CapabilityBoundingSet=\n"] {
            #expect(unit.contains(directive), "the unit has \(directive)")
        }
        let verify = try await ChildProcess.output("/usr/bin/systemd-analyze", ["verify", unitPath], mergeErrors: true)
        #expect(verify.status == 0 && verify.output.isEmpty, "systemd-analyze verify: \(verify.output)")
        let security = try await ChildProcess.output("/usr/bin/systemd-analyze", ["security", "--offline=true", unitPath])
        let exposure = security.output.split(separator: "\n").last { $0.contains("Overall exposure level") }
            .flatMap { line in line.split(separator: " ").compactMap { Double($0) }.last }
        #expect(exposure.map { $0 <= 2.0 } == true, "systemd's exposure level at most 2.0 ('OK'): \(security.output.suffix(300))")

        // The unit's command, as the unit runs it: its user, its environment, the demo registry published.
        let copied = await runTool("/bin/cp", ["-R", "--no-preserve=ownership", repositoryRoot.path + "/Manifests/demo/registry/.", registry])
        #expect(copied == 0)
        #expect(await runTool("/bin/chown", ["-R", "miniapp:miniapp", registry]) == 0)
        let port = try freePort()
        try writeTestFile("/etc/default/miniapp-serve", "MINIAPP_SERVE_HOST=127.0.0.1\nMINIAPP_SERVE_PORT=\(port)\nMINIAPP_SERVE_OPTIONS=--quiet --project-id demo\n")
        let command = try #require(Self.command(unit), "no ExecStart in the unit")
        #expect(command.first == "/usr/bin/miniapp" && command.contains("--project-id") && command.contains("--quiet"))
        let out = work + "/serve.out"
        let server = try ChildProcess(
            "/usr/bin/setpriv", ["--reuid=miniapp", "--regid=miniapp", "--clear-groups", "--no-new-privs"] + command,
            environment: ["PATH": "/usr/bin:/bin"], directory: "/", stdout: .file(out)
        )
        defer { server.stop() }
        let deadline = ContinuousClock.now + .seconds(60)
        var listening = ""
        while listening.isEmpty, ContinuousClock.now < deadline {
            listening = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").first.map(String.init) ?? ""
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(listening == "listening on http://127.0.0.1:\(port)/")
        let listed = try await CommandRunner.run(["list", "--platform", "http://127.0.0.1:\(port)/", "--project-id", "demo", "--json"])
        #expect(listed.status == 0, "stderr: \(listed.stderr)")
        #expect((try listed.json() as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted() == ["hello", "notes", "weather"])
        server.terminate()
        #expect(await server.exited() == 0, "SIGTERM, the unit's KillSignal, stops it gracefully")

        let purge = try await ChildProcess.output("/usr/bin/dpkg", ["--purge", "miniapp"], mergeErrors: true)
        #expect(purge.status == 0, "dpkg --purge: \(purge.output)")
        for path in ["/usr/bin/miniapp", "/var/lib/miniapp", unitPath, "/usr/share/man/man1/miniapp.1.gz"] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path) is gone after a purge")
        }
    }

    /// The unit's `ExecStart` as systemd makes it: `${NAME}` is one word, `$NAME` the words of its
    /// value, from the unit's `Environment=` defaults and then its `EnvironmentFile=`.
    static func command(_ unit: String) -> [String]? {
        var environment: [String: String] = [:]
        var start: String?
        for line in unit.split(separator: "\n") {
            if line.hasPrefix("Environment=") {
                for assignment in line.dropFirst("Environment=".count).split(separator: " ") {
                    let parts = assignment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    environment[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
                }
            } else if line.hasPrefix("EnvironmentFile=") {
                let path = line.dropFirst("EnvironmentFile=".count).drop { $0 == "-" }
                let text = (try? String(contentsOfFile: String(path), encoding: .utf8)) ?? ""
                for entry in text.split(separator: "\n") where !entry.hasPrefix("#") && entry.contains("=") {
                    let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    environment[String(parts[0])] = String(parts[1])
                }
            } else if line.hasPrefix("ExecStart=") {
                start = String(line.dropFirst("ExecStart=".count))
            }
        }
        guard let start else { return nil }
        return start.split(separator: " ").flatMap { word -> [String] in
            if word.hasPrefix("${"), word.hasSuffix("}") { return [environment[String(word.dropFirst(2).dropLast())] ?? ""] }
            if word.hasPrefix("$") { return (environment[String(word.dropFirst())] ?? "").split(separator: " ").map(String.init) }
            return [String(word)]
        }
    }
}

/// `scripts/install`: the tool, its man pages and its completions under a prefix, as a user installs it.
@Suite struct InstallScriptTests {
    @Test func itInstallsUnderThePrefixItIsGiven() async throws {
        let generator = try #require(PackagingTests.manualGenerator, "no generate-manual: run `swift build --product generate-manual` (scripts/test does)")
        let prefix = try TemporaryDirectory.make().path + "/opt/miniapp"
        let from = CommandRunner.executable.deletingLastPathComponent().path
        let script = repositoryRoot.path + "/scripts/install"
        let installed = try await ChildProcess.output(
            "/usr/bin/env", ["MINIAPP_GENERATE_MANUAL=\(generator)", script, "--prefix", prefix, "--from", from], mergeErrors: true
        )
        #expect(installed.status == 0, "scripts/install: \(installed.output)")
        #expect(installed.output.hasSuffix(prefix + "/bin/miniapp\n"), "it prints where the tool went")
        let tool = try await ChildProcess.output(prefix + "/bin/miniapp", ["--version"])
        #expect(tool.status == 0 && !tool.output.isEmpty)
        for file in ["share/man/man1/miniapp.1", "share/man/man1/miniapp.cache.verify.1", "share/bash-completion/completions/miniapp",
                     "share/zsh/site-functions/_miniapp", "share/fish/vendor_completions.d/miniapp.fish"] {
            #expect(FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file) is installed")
        }
        let page = try String(contentsOfFile: prefix + "/share/man/man1/miniapp.cache.verify.1", encoding: .utf8)
        #expect(page.contains("Fl -signatures"), "the page lists the command's options")

        for arguments in [["--prefix", "relative/path", "--from", from], ["--frobnicate"]] {
            let refused = try await ChildProcess.output(script, arguments, mergeErrors: true)
            #expect(refused.status == 64 && refused.output.hasPrefix("error: "), "\(arguments): \(refused.output)")
        }
    }
}
