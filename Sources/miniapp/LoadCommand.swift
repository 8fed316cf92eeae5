import ArgumentParser
import MiniAppKit

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Make sure a version is cached and intact, and print the folder holding its index.html.",
        discussion: """
            What a host does before showing a mini-app. When the platform is unreachable, the newest cached
            version is used as with --offline (repaired from its kept zip when damaged, else the newest
            intact one) and stderr says so. When the platform answers as its latest a version older than one
            it answered before (a rollback), the newest verified version the cache has is loaded instead and
            stderr says so; --allow-downgrade loads the older one.
            Examples:
              miniapp load 1a2b3c
              miniapp load 1a2b3c --offline --json
              miniapp load --preview-code 7f3a9c
            """
    )

    @OptionGroup var target: AppTargetArguments

    @Flag(help: "Install and load the platform's latest version even when it is older than one it answered before.")
    var allowDowngrade = false

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let configuration = try target.values.configuration(try options.configuration(reading: .all))
        let outcome = try await options.withInstaller(for: target.values, configuration) { installer, appId, versionId in
            try await installer.load(appId: appId, versionId: versionId, allowDowngrade: allowDowngrade, progress: options.progressBar(for: appId))
        }
        try options.render(outcome, verb: "downloaded")
    }
}
