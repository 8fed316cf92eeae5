import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit

struct InstallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install a local bundle zip into the cache, with the same checks as a download.",
        discussion: """
            The signature is checked with --public-key, or the platform's key --key-id (fetched, or offline
            the copy an earlier download kept), or a configured trusted key.
            Examples:
              miniapp install app.zip --app-id 1a2b3c --version-id 4d5e6f --signature MEUC... --public-key pub.pem
            """
    )

    @Argument(help: "The bundle zip.")
    var bundle: String

    @Option(name: .customLong("app-id"), help: "The mini-app's id.")
    var appId: String

    @Option(name: .customLong("version-id"), help: "The version id the signature covers.")
    var versionId: String

    @Option(name: .customLong("version-tag"), help: "The human version, such as 1.2.0.")
    var versionTag: String?

    @Option(help: "The platform signature (base64 DER).")
    var signature: String?

    @Option(name: .customLong("public-key"), help: "A PEM file with the public key to verify with.")
    var publicKey: String?

    @Option(name: .customLong("key-id"), help: "The id of the platform key to verify with, fetched from the platform.")
    var keyId: String?

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        try Identifier.validate(versionId, as: .version)
        if let keyId { try Identifier.validate(keyId, as: .key) }
        let configuration = try options.configuration(reading: .installing)
        var key: PublicKey?
        if let publicKey {
            let pem: [UInt8]
            do {
                pem = try FileReading.read(publicKey, limit: keyFileLimit).bytes()
            } catch {
                throw ValidationError("cannot read --public-key \(publicKey): \(error)")
            }
            do {
                key = try PublicKey(pem: String(decoding: pem, as: UTF8.self))
            } catch {
                throw ValidationError("--public-key \(publicKey) is not a PEM P-256 public key")
            }
        }
        if signature != nil, key == nil {
            let trusted = try TrustedKeys(configuration.trustedKeys)
            // A --key-id key comes from the platform, or offline from the keys an earlier install kept.
            guard keyId != nil || !trusted.keys.isEmpty else {
                throw ValidationError("--signature needs a key: pass --public-key <pem>, or --key-id <id> with a platform, or configure trustedKeys")
            }
        }
        // The platform is only asked for a --key-id key; otherwise an install needs no network at all
        // (nor a project id).
        var local = configuration
        if key != nil || keyId == nil || signature == nil { local.offline = true }
        let outcome = try await options.withInstaller(local, needsPlatform: false) { installer in
            if signature != nil, key == nil, let keyId, !installer.canCheckSignature(keyId: keyId) {
                throw ValidationError("--key-id \(keyId) needs a platform to fetch it from (none is configured, or --offline): pass --public-key <pem>, or install online once")
            }
            return try await installer.install(
                bundleAt: bundle, appId: appId, versionId: versionId, versionTag: versionTag,
                signature: signature, publicKey: key, keyId: keyId
            )
        }
        try options.render(outcome, verb: "installed")
    }
}
