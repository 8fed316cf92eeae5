import ArgumentParser
import MiniAppKit

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Make sure a version is cached and intact, and print the folder holding its index.html.",
        discussion: """
            What a host does before showing a mini-app. When the platform is unreachable, the newest intact
            cached version is used and stderr says so.
            Examples:
              miniapp load 1a2b3c
              miniapp load 1a2b3c --offline --json
            """
    )

    @Argument(help: "The mini-app's id.")
    var appId: String

    @Option(name: .customLong("version"), help: "A version id (default: the latest).")
    var versionId: String?

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        let configuration = try options.configuration()
        let outcome = try await options.withInstaller(configuration, needsPlatform: true) { installer in
            try await installer.load(appId: appId, versionId: versionId, progress: options.progressBar(for: appId))
        }
        try options.render(outcome, verb: "downloaded")
    }
}
