import ArgumentParser
import MiniAppCore
import MiniAppKit

/// The `<app-id> [--version <version-id>]` that many commands take, checked before anything runs.
struct AppVersionArguments: ParsableArguments {
    @Argument(help: "The mini-app's id.")
    var appId: String

    @Option(name: .customLong("version"), help: "A version id (default: the latest).")
    var versionId: String?

    func validate() throws {
        for (value, kind) in [(appId, IdentifierKind.app), (versionId, .version)] {
            if let value, !Identifier.isValid(value) {
                throw ValidationError(IdentifierError.invalid(kind: kind, value: value).description)
            }
        }
    }
}

/// `[<app-id>] [--version <version-id>] [--preview-code <token>]`: a version named by id, or by a
/// preview code (the token of a QR code or deep link), which the platform resolves.
struct AppTargetArguments: ParsableArguments {
    @Argument(help: "The mini-app's id (optional with --preview-code).")
    var appId: String?

    @Option(name: .customLong("version"), help: "A version id (default: the latest).")
    var versionId: String?

    @Option(name: .customLong("preview-code"), help: "A preview code (the token of a QR code or deep link): the version it names, in preview mode.")
    var previewCode: String?

    func validate() throws {
        try values.validate()
    }

    /// The parsed values.
    var values: AppTarget {
        AppTarget(appId: appId, versionId: versionId, previewCode: previewCode)
    }

    func resolve(_ configuration: MiniAppConfiguration, options: some CommandOptions) async throws -> (appId: String, versionId: String?, configuration: MiniAppConfiguration) {
        try await values.resolve(configuration, options: options)
    }
}

/// ``AppTargetArguments`` as plain values (what ``QuickCommandLine`` reads without ArgumentParser).
struct AppTarget: Equatable, Sendable {
    let appId: String?
    let versionId: String?
    let previewCode: String?

    func validate() throws {
        for (value, kind) in [(appId, IdentifierKind.app), (versionId, .version), (previewCode, .previewToken)] {
            if let value, !Identifier.isValid(value) {
                throw ValidationError(IdentifierError.invalid(kind: kind, value: value).description)
            }
        }
        if appId == nil && previewCode == nil { throw ValidationError("missing <app-id> (or --preview-code <token>)") }
        if previewCode != nil && versionId != nil { throw ValidationError("--version and --preview-code cannot be used together: the code names the version") }
    }

    /// The app and version to work on, and the configuration to work with: a preview code is resolved
    /// by the platform, and its version is then worked on in preview mode (an unpublished version is
    /// only reachable there), with the same checks as any other.
    func resolve(_ configuration: MiniAppConfiguration, options: some CommandOptions) async throws -> (appId: String, versionId: String?, configuration: MiniAppConfiguration) {
        guard let previewCode else { return (appId!, versionId, configuration) }
        guard !configuration.offline else { throw ValidationError("--preview-code needs the platform to resolve it: drop --offline") }
        var preview = configuration
        preview.preview = true
        let code = try await options.withPlatform(preview) { try await $0.previewCode(token: previewCode) }
        let resolved = code.miniapp
        if let appId, appId != resolved.id {
            throw ValidationError("preview code \(previewCode) names app \(resolved.id), not \(appId)")
        }
        return (resolved.id, resolved.version.versionId, preview)
    }
}
