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

    /// The configuration to work with: a preview code's version is worked on in preview mode (an
    /// unpublished version is only reachable there), with the same checks as any other.
    func configuration(_ configuration: MiniAppConfiguration) throws -> MiniAppConfiguration {
        guard previewCode != nil else { return configuration }
        guard !configuration.offline else { throw ValidationError("--preview-code needs the platform to resolve it: drop --offline") }
        var preview = configuration
        preview.preview = true
        return preview
    }

    /// The app and version to work on, asked in the command's runtime (made with ``configuration(_:)``):
    /// a preview code is resolved by the platform.
    func ids(in runtime: MiniAppRuntime) async throws -> (appId: String, versionId: String?) {
        guard let previewCode else { return (appId!, versionId) }
        let resolved = try await runtime.platform().previewCode(token: previewCode).miniapp
        if let appId, appId != resolved.id {
            throw ValidationError("preview code \(previewCode) names app \(resolved.id), not \(appId)")
        }
        return (resolved.id, resolved.version.versionId)
    }
}
