import ArgumentParser
import Foundation
import Logging
import MiniAppCore
import MiniAppKit
import MiniAppPermissions

/// The configuration options every command takes (spec/cli.md), each made from its
/// ``SettingDeclaration`` (the flag's name and help; the loader reads its variable and key by the same
/// declaration), plus output options.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong(SettingDeclaration.platform.longName), help: ArgumentHelp(SettingDeclaration.platform.help))
    var platform: String?

    @Option(name: .customLong(SettingDeclaration.projectId.longName), help: ArgumentHelp(SettingDeclaration.projectId.help))
    var projectId: String?

    @Option(name: .customLong(SettingDeclaration.subscriptionKey.longName), help: ArgumentHelp(SettingDeclaration.subscriptionKey.help))
    var subscriptionKey: String?

    @Flag(name: .customLong(SettingDeclaration.preview.longName), help: ArgumentHelp(SettingDeclaration.preview.help))
    var preview = false

    @Option(name: .customLong(SettingDeclaration.cacheDir.longName), help: ArgumentHelp(SettingDeclaration.cacheDir.help))
    var cacheDir: String?

    @Option(name: .customLong(SettingDeclaration.signaturePolicy.longName), help: ArgumentHelp(SettingDeclaration.signaturePolicy.help))
    var signaturePolicy: String?

    @Option(name: .customLong(SettingDeclaration.lang.longName), help: ArgumentHelp(SettingDeclaration.lang.help))
    var lang: String?

    @Flag(name: .customLong(SettingDeclaration.offline.longName), help: ArgumentHelp(SettingDeclaration.offline.help))
    var offline = false

    @Flag(name: .customLong(SettingDeclaration.delta.longName), help: ArgumentHelp(SettingDeclaration.delta.help))
    var noDelta = false

    @Option(name: .customLong(SettingDeclaration.permissionStore.longName), help: ArgumentHelp(SettingDeclaration.permissionStore.help))
    var permissionStore: String?

    @Option(name: .customLong(SettingDeclaration.tufRoot.longName), help: ArgumentHelp(SettingDeclaration.tufRoot.help))
    var tufRoot: String?

    @Option(name: .customLong(SettingDeclaration.tufMetadata.longName), help: ArgumentHelp(SettingDeclaration.tufMetadata.help))
    var tufMetadata: String?

    @Flag(help: "Print one JSON document on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Say more on stderr.")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Say less on stderr.")
    var quiet = false

    func validate() throws {
        try settings.validate()
    }
}

/// The settings every command takes, as plain values: what ``GlobalOptions`` parses, and what
/// ``QuickCommandLine`` reads without ArgumentParser.
struct CommandSettings: Equatable, Sendable {
    /// The declared settings given on the command line, for ``ConfigurationLoader``.
    var overrides: ConfigurationOverrides
    var json: Bool
    var verbose: Bool
    var quiet: Bool

    func validate() throws {
        if verbose && quiet { throw ValidationError("--verbose and --quiet cannot be used together") }
    }
}

/// What commands do with their settings, whether ArgumentParser or ``QuickCommandLine`` read them.
protocol CommandOptions {
    var settings: CommandSettings { get }
}

extension CommandSettings: CommandOptions {
    var settings: CommandSettings { self }
}

extension GlobalOptions: CommandOptions {
    /// The parsed flags, each under its declaration: ArgumentParser needs a property per flag, and this
    /// is where each property meets its ``SettingDeclaration`` (a test gives every declared flag and
    /// checks the loader sees it).
    var settings: CommandSettings {
        typealias Setting = SettingDeclaration
        var overrides = ConfigurationOverrides()
        for (setting, text) in [
            (Setting.platform, platform), (.projectId, projectId), (.subscriptionKey, subscriptionKey), (.cacheDir, cacheDir),
            (.signaturePolicy, signaturePolicy), (.lang, lang), (.permissionStore, permissionStore), (.tufRoot, tufRoot), (.tufMetadata, tufMetadata),
        ] {
            overrides[setting] = text.map(SettingValue.text)
        }
        for (setting, given) in [(Setting.preview, preview), (.offline, offline), (.delta, noDelta)] {
            overrides[setting] = setting.flagValue(given: given)
        }
        return CommandSettings(overrides: overrides, json: json, verbose: verbose, quiet: quiet)
    }
}

extension CommandOptions {
    /// The command line's settings, for ``ConfigurationLoader``.
    var overrides: ConfigurationOverrides { settings.overrides }

    /// The resolved configuration: command line, then environment, then config file, then defaults.
    /// Only the settings the command reads are checked: one it never uses cannot stop it.
    func configuration(reading settings: ConfigurationSettings) throws -> MiniAppConfiguration {
        try ConfigurationLoader().load(overrides, reading: settings)
    }

    /// A logger writing to stderr at the level `-v` and `-q` ask for.
    var logger: Logger {
        let level: Logger.Level = settings.verbose ? .debug : (settings.quiet ? .error : .warning)
        return Logger(label: "miniapp") { _ in ConsoleLogHandler(logLevel: level) }
    }

    /// Runs `body` with the process's runtime for `configuration` (remote platform requests on connections
    /// of their own), shut down afterwards. `executor` is the one `main` started early, if any.
    func withRuntime<Result: Sendable>(
        _ configuration: MiniAppConfiguration, executor: BlockingExecutor? = nil, _ body: (MiniAppRuntime) async throws -> Result
    ) async throws -> Result {
        let runtime = MiniAppRuntime(configuration: configuration, connections: .perRequest, executor: executor ?? BlockingExecutor(), logger: logger)
        do {
            let result = try await body(runtime)
            await runtime.shutdown()
            return result
        } catch {
            await runtime.shutdown()
            throw error
        }
    }

    /// Runs `body` with the runtime's installer for `configuration`. `needsPlatform` makes a missing
    /// platform an error when online.
    func withInstaller<Result: Sendable>(
        _ configuration: MiniAppConfiguration, needsPlatform: Bool, executor: BlockingExecutor? = nil, _ body: (BundleInstaller) async throws -> Result
    ) async throws -> Result {
        try await withRuntime(configuration, executor: executor) { runtime in
            if needsPlatform, !configuration.offline, configuration.platform == nil { throw ConfigurationError.missingPlatform }
            return try await body(try runtime.installer())
        }
    }

    /// Runs `body` with the runtime's installer for `configuration` (made with `target.configuration`)
    /// and the app and version `target` names, a preview code resolved in the same runtime.
    func withInstaller<Result: Sendable>(
        for target: AppTarget, _ configuration: MiniAppConfiguration, executor: BlockingExecutor? = nil,
        _ body: (BundleInstaller, _ appId: String, _ versionId: String?) async throws -> Result
    ) async throws -> Result {
        try await withRuntime(configuration, executor: executor) { runtime in
            if !configuration.offline, configuration.platform == nil { throw ConfigurationError.missingPlatform }
            let (appId, versionId) = try await target.ids(in: runtime)
            return try await body(try runtime.installer(), appId, versionId)
        }
    }

    /// Runs `body` with the runtime's permission store for `configuration`.
    func withPermissionStore<Result: Sendable>(_ configuration: MiniAppConfiguration, _ body: (PermissionStore) async throws -> Result) async throws -> Result {
        try await withRuntime(configuration) { try await body(try await $0.permissionStore()) }
    }

    /// Prints an install outcome: notes as warnings on stderr, then the record (`--json`) or the folder.
    func render(_ outcome: InstallOutcome, verb: String) throws {
        let settings = self.settings
        for note in outcome.notes { Console.warning(note, quiet: settings.quiet) }
        let record = outcome.record
        if settings.json {
            Console.output(Data(ConsoleJSON.record(record) + [UInt8(ascii: "\n")]))
            return
        }
        if !settings.quiet {
            let tag = record.versionTag.map { " (\($0))" } ?? ""
            let how = record.source == .cache ? "cached" : verb
            Console.standardError("\(how) \(record.id) \(record.versionId)\(tag), signature \(record.signature.rawValue), \(record.sizeBytes) bytes")
        }
        Console.output(record.path)
    }

    /// A progress callback drawing a bar on stderr, or `nil` when stderr is not a terminal or output is JSON or quiet.
    func progressBar(for appId: String) -> (@Sendable (DownloadProgress) -> Void)? {
        guard !settings.json, !settings.quiet, isatty(STDERR_FILENO) == 1 else { return nil }
        return ProgressBar(label: appId).update
    }

    /// Runs `body` with the runtime's platform for `configuration`.
    func withPlatform<Result: Sendable>(_ configuration: MiniAppConfiguration, _ body: (any PlatformAPI) async throws -> Result) async throws -> Result {
        try await withRuntime(configuration) { try await body(try $0.platform()) }
    }
}
