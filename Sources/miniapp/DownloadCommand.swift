import ArgumentParser
import MiniAppKit

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Fetch, verify, unzip and cache a version (the latest by default).",
        discussion: """
            A valid cached copy is reused without downloading it again; --force downloads it anyway.
            Examples:
              miniapp download 1a2b3c
              miniapp download 1a2b3c --version 4d5e6f --json
            """
    )

    @OptionGroup var target: AppVersionArguments

    @Flag(help: "Download and install again even when an intact copy is cached.")
    var force = false

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let (appId, versionId) = (target.appId, target.versionId)
        let configuration = try options.configuration()
        let outcome = try await options.withInstaller(configuration, needsPlatform: true) { installer in
            try await installer.download(appId: appId, versionId: versionId, force: force, progress: options.progressBar(for: appId))
        }
        try options.render(outcome, verb: "downloaded")
    }
}
