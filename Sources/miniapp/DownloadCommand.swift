import ArgumentParser
import MiniAppCore
import MiniAppKit

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Fetch, verify, unzip and cache a version (the latest by default).",
        discussion: """
            A valid cached copy is reused without downloading it again; --force downloads it anyway.
            A latest version older than one the platform answered before (a rollback) is refused (65);
            asked for with --version, or with --allow-downgrade, it is installed and its record says so.
            Examples:
              miniapp download 1a2b3c
              miniapp download 1a2b3c --version 4d5e6f --json
              miniapp download 1a2b3c 7g8h9i 0j1k2l --jobs 2
              miniapp download --preview-code 7f3a9c
            """
    )

    @OptionGroup var target: AppTargetArguments

    @Argument(help: "More mini-app ids: their latest versions are downloaded too, --jobs at a time.")
    var moreAppIds: [String] = []

    @Option(help: "How many apps to download at once when several are named.")
    var jobs = 4

    @Flag(help: "Download and install again even when an intact copy is cached.")
    var force = false

    @Flag(help: "Install the platform's latest version even when it is older than one it answered before.")
    var allowDowngrade = false

    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if !moreAppIds.isEmpty, target.versionId != nil || target.previewCode != nil { throw ValidationError("--version and --preview-code go with one app id only") }
        if jobs < 1 { throw ValidationError("--jobs must be 1 or more") }
        for appId in moreAppIds where !Identifier.isValid(appId) {
            throw ValidationError(IdentifierError.invalid(kind: .app, value: appId).description)
        }
    }

    func run() async throws {
        // With more ids, validate() has refused --version and --preview-code: the first is an id too.
        if !moreAppIds.isEmpty, let appId = target.appId {
            try await downloadMany([appId] + moreAppIds, try options.configuration(reading: .installing))
        } else {
            try await Self.download(target.values, force: force, allowDowngrade: allowDowngrade, options: options.settings)
        }
    }

    /// One app's download, from plain values: what `run()` does for one id, and what ``QuickCommandLine``
    /// runs (with the executor `main` started early).
    static func download(_ target: AppTarget, force: Bool, allowDowngrade: Bool = false, options: CommandSettings, executor: BlockingExecutor? = nil) async throws {
        let configuration = try target.configuration(try options.configuration(reading: .installing))
        let outcome = try await options.withInstaller(for: target, configuration, executor: executor) { installer, appId, versionId in
            try await installer.download(appId: appId, versionId: versionId, force: force, allowDowngrade: allowDowngrade, progress: options.progressBar(for: appId))
        }
        try options.render(outcome, verb: "downloaded")
    }

    /// A download of a given version whose intact copy is cached, answered on the calling thread with no
    /// thread pool and no installer (``BundleInstaller/reuseIntactCopyNow(configuration:executor:logger:appId:versionId:)``,
    /// which never starts `executor`); `nil` when ``download(_:force:options:executor:)`` must run, which
    /// also reports a setting that fails.
    static func cachedOutcomeNow(_ target: AppTarget, options: CommandSettings, executor: BlockingExecutor) -> InstallOutcome? {
        guard let appId = target.appId, let versionId = target.versionId, target.previewCode == nil,
              let configuration = try? options.configuration(reading: .installing)
        else { return nil }
        return BundleInstaller.reuseIntactCopyNow(
            configuration: configuration, executor: executor, logger: options.logger, appId: appId, versionId: versionId
        )
    }

    /// Several apps: every record (`--json`: an array) or folder, then one error naming each failure.
    private func downloadMany(_ appIds: [String], _ configuration: MiniAppConfiguration) async throws {
        let results = try await options.withInstaller(configuration, needsPlatform: true) { installer in
            await installer.download(appIds: appIds, maxConcurrent: jobs, force: force, allowDowngrade: allowDowngrade)
        }
        var records: [InstallRecord] = []
        var failures: [(String, any Error)] = []
        for (appId, result) in results {
            switch result {
            case .success(let outcome):
                for note in outcome.notes { Console.warning(note, quiet: options.quiet) }
                records.append(outcome.record)
            case .failure(let error):
                failures.append((appId, error))
            }
        }
        if options.json {
            try Console.json(records)
        } else {
            for record in records { Console.output(record.path) }
        }
        guard let (firstApp, firstError) = failures.first else { return }
        let names = failures.map(\.0).joined(separator: ", ")
        Console.error("\(failures.count) of \(appIds.count) downloads failed (\(names)); \(firstApp): \((firstError as? any CategorizedError).map(CLIMessages.describe) ?? "\(firstError)")")
        let category = (firstError as? any CategorizedError)?.category ?? .unavailable
        throw ExitCode(ExitStatus.code(for: category))
    }
}
