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

    @Argument(help: "The mini-app's id.")
    var appId: String

    @Option(name: .customLong("version"), help: "A version id (default: the latest).")
    var versionId: String?

    @Flag(help: "Download and install again even when an intact copy is cached.")
    var force = false

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        let configuration = try options.configuration()
        let outcome = try await options.withInstaller(configuration, needsPlatform: true) { installer in
            try await installer.download(appId: appId, versionId: versionId, force: force, progress: options.progressBar(for: appId))
        }
        try options.render(outcome, verb: "downloaded")
    }
}
