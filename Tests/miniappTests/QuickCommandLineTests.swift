import ArgumentParser
import MiniAppKit
import MiniAppTestSupport
import Testing

@testable import miniapp

/// The quick reading of `download` and `list` command lines gives the command ArgumentParser makes of
/// them, or leaves the line to it.
struct QuickCommandLineTests {
    @Test(arguments: [
        ["download", "bench", "--version", "bench-1", "--platform", "http://127.0.0.1:8080/", "--project-id", "p", "--quiet", "--cache-dir", "/tmp/c"],
        ["download", "bench", "--platform", "http://127.0.0.1:8080/", "--project-id", "p", "--quiet", "--cache-dir", "/tmp/c"],
        ["download", "--version=v2", "app-1", "--json", "-v", "--no-delta", "--offline", "--preview", "--force"],
        ["download", "--preview-code", "tok3n", "app-1", "--lang=ja-JP", "--signature-policy", "advisory", "--subscription-key", "k"],
        ["download", "app-1", "--permission-store", "postgres://u@h/db?sslmode=disable", "--platform=http://h/?a=b"],
        ["list", "--json", "--platform", "http://127.0.0.1:8080/", "--project-id", "p"],
        ["list"],
        ["list", "-q", "--offline", "--cache-dir=/tmp/c"],
    ])
    func commonLinesAreReadQuicklyAsArgumentParserReadsThem(_ arguments: [String]) throws {
        let quick = try #require(QuickCommandLine.command(arguments))
        #expect(quick == parsed(arguments))
    }

    /// Every option and flag lands where ArgumentParser puts it.
    @Test func everySettingIsRead() throws {
        let arguments = [
            "download", "app-1", "--version", "v2", "--force", "--platform", "http://h/", "--project-id", "p", "--subscription-key", "k",
            "--preview", "--cache-dir", "/c", "--signature-policy", "advisory", "--lang", "ja", "--offline", "--no-delta",
            "--permission-store", "/s.sqlite", "--tuf-root", "/r.json", "--tuf-metadata", "http://h/tuf/", "--json", "--verbose",
        ]
        let overrides = ConfigurationOverrides([
            .platform: .text("http://h/"), .projectId: .text("p"), .subscriptionKey: .text("k"), .preview: .toggle(true), .cacheDir: .text("/c"),
            .signaturePolicy: .text("advisory"), .lang: .text("ja"), .offline: .toggle(true), .delta: .toggle(false),
            .permissionStore: .text("/s.sqlite"), .tufRoot: .text("/r.json"), .tufMetadata: .text("http://h/tuf/"),
        ])
        let settings = CommandSettings(overrides: overrides, json: true, verbose: true, quiet: false)
        let expected = QuickCommandLine.Command.download(AppTarget(appId: "app-1", versionId: "v2", previewCode: nil), force: true, settings)
        #expect(QuickCommandLine.command(arguments) == expected)
        #expect(parsed(arguments) == expected)
    }

    @Test(arguments: [
        ["download"], ["download", "a", "b"], ["download", "a", "--jobs", "2"], ["download", "a", "--version"],
        ["download", "a", "--version", "--json"], ["download", "a", "--version", "v", "--version", "w"], ["download", "a", "--json", "--json"],
        ["download", "a", "-vq"], ["download", "a", "-h"], ["download", "a", "--help"], ["download", "help"], ["download", "--", "a"],
        ["download", "a", "--json=true"], ["download", "a", "--plat", "x"], ["download", "a", "--platform", ""], ["download", "a", "--platform="],
        ["download", "a", "--platform", "-x"], ["download", "../a"], ["download", "a", "--version", "v/1"], ["download", "a", "-v", "-q"],
        ["download", "a", "--version", "v", "--preview-code", "t"], ["download", "--preview-code", "t"], ["list", "a"], ["list", "--version", "v"],
        ["list", "--force"], ["list", "--verbose", "--quiet"], ["help", "list"], ["--platform", "x", "list"], ["info", "a"], [],
    ])
    func otherLinesAreLeftToArgumentParser(_ arguments: [String]) {
        #expect(QuickCommandLine.command(arguments) == nil)
    }

    /// Random lines from the tokens that matter: every line read quickly is read the same by ArgumentParser.
    /// (On a thread of its own: ArgumentParser's parse of 2,000 lines takes seconds in a debug build,
    /// which the cooperative pool's two threads cannot give without holding back every other test.)
    @Test func randomLinesAgreeWithArgumentParser() async {
        let (accepted, disagreements) = await offPool { () -> (Int, [String]) in
            let tokens = [
                "bench", "app-1", "a/b", "..", "help", "-x", "", "--platform", "--platform=", "--platform=http://h/?a=b", "--project-id",
                "--subscription-key", "--cache-dir", "--signature-policy", "--lang", "--permission-store", "--preview", "--offline", "--no-delta",
                "--json", "--json=1", "--verbose", "--quiet", "-v", "-q", "-vq", "-h", "--help", "--", "--version", "--version=v2", "--preview-code",
                "--force", "--jobs", "--nope", "--plat", "http://127.0.0.1:1/", "/tmp/x", "p", "v1", "-1", "advisory", "ja", "=", "a=b", "tok3n",
            ]
            var state: UInt64 = 0x2545_F491_4F6C_DD1D
            func next(_ bound: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(bound))
            }
            var accepted = 0
            var disagreements: [String] = []
            for _ in 0..<2_000 {
                var arguments = [next(3) == 0 ? "list" : "download"]
                for _ in 0..<next(8) { arguments.append(tokens[next(tokens.count)]) }
                guard let quick = QuickCommandLine.command(arguments) else { continue }
                accepted += 1
                if quick != parsed(arguments) { disagreements.append("\(arguments)") }
            }
            return (accepted, disagreements)
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        #expect(accepted > 50, "only \(accepted) lines were read quickly")
    }
}

/// What ArgumentParser makes of `arguments`, as the quick reader's values; `nil` when it refuses them,
/// or makes a command the quick reader never gives.
private func parsed(_ arguments: [String]) -> QuickCommandLine.Command? {
    switch try? Miniapp.parseAsRoot(arguments) {
    case let download as DownloadCommand:
        guard download.moreAppIds.isEmpty, download.jobs == 4 else { return nil }
        return .download(download.target.values, force: download.force, download.options.settings)
    case let list as ListCommand:
        return .list(list.options.settings)
    default:
        return nil
    }
}
