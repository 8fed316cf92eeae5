import ArgumentParser
import MiniAppKit

struct ManifestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Show a version's metadata: permissions, token scopes and custom metadata.",
        discussion: """
            Examples:
              miniapp manifest 1a2b3c
              miniapp manifest 1a2b3c --version 4d5e6f --lang ja --json
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
        let manifest: BundleManifest
        if configuration.offline {
            let cache = BundleCache(root: configuration.cacheDirectory, namespace: configuration.cacheNamespace)
            guard let cached = versionId.flatMap({ cache.record(appId: appId, versionId: $0) }) ?? (versionId == nil ? cache.records(appId: appId).first : nil) else {
                throw CacheError.notCached(appId: appId, versionId: versionId)
            }
            let raw = try BundleManifest.read(bundleDirectory: cached.path)
            manifest = ManifestLocalizer(bundleDirectory: cached.path, language: configuration.language).localize(raw)
        } else {
            manifest = try await fetch(configuration)
        }
        if options.json {
            try Console.json(manifest)
            return
        }
        Console.output(Self.render(manifest))
    }

    private func fetch(_ configuration: MiniAppConfiguration) async throws -> BundleManifest {
        try await options.withPlatform(configuration) { platform in
            let version: String
            if let versionId {
                version = versionId
            } else {
                version = try await platform.latestVersion(ofApp: appId).version.versionId
            }
            return try await platform.metadata(appId: appId, versionId: version, language: configuration.language)
        }
    }

    static func render(_ manifest: BundleManifest) -> String {
        var lines: [String] = []
        func permissions(_ title: String, _ declarations: [PermissionDeclaration]) {
            lines.append(title + (declarations.isEmpty ? " none" : ""))
            for declaration in declarations {
                let unknown = declaration.known == nil ? " (unknown)" : ""
                let reason = declaration.reason.map { ": \($0)" } ?? ""
                lines.append("  \(declaration.name)\(unknown)\(reason)")
            }
        }
        permissions("required permissions:", manifest.reqPermissions)
        permissions("optional permissions:", manifest.optPermissions)
        lines.append("access tokens:" + (manifest.accessTokenPermissions.isEmpty ? " none" : ""))
        for token in manifest.accessTokenPermissions {
            lines.append("  \(token.audience): \(token.scopes.joined(separator: ", "))")
        }
        lines.append("custom metadata:" + (manifest.customMetaData.isEmpty ? " none" : ""))
        for (key, value) in manifest.customMetaData.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(key) = \(value)")
        }
        return lines.joined(separator: "\n")
    }
}
