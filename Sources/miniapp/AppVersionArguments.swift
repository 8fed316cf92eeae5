import ArgumentParser
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
