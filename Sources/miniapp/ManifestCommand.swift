import ArgumentParser
import MiniAppCore
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

    @OptionGroup var target: AppVersionArguments

    @Flag(help: "Compare the manifest in force for the newest cached version with the latest version's.")
    var diff = false

    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if diff && target.versionId != nil { throw ValidationError("--diff compares the cached version with the latest: drop --version") }
    }

    func run() async throws {
        let (appId, versionId) = (target.appId, target.versionId)
        let configuration = try options.configuration(reading: .platformAccess)
        if diff && configuration.offline {
            throw ValidationError("--diff compares with the latest version on the platform: drop --offline")
        }
        if diff {
            try await showDiff(configuration)
            return
        }
        let manifest: BundleManifest
        if configuration.offline {
            guard let cached = try await options.withRuntime(configuration, { $0.cache.lookup(appId: appId, versionId: versionId)?.record }) else {
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
        let (appId, versionId) = (target.appId, target.versionId)
        return try await options.withPlatform(configuration) { platform in
            let version: String
            if let versionId {
                version = versionId
            } else {
                version = try await platform.latestVersion(ofApp: appId).version.versionId
            }
            return try await platform.metadata(appId: appId, versionId: version, language: configuration.language)
        }
    }

    private func showDiff(_ configuration: MiniAppConfiguration) async throws {
        let appId = target.appId
        let result = try await options.withInstaller(configuration, needsPlatform: true) { try await $0.manifestDiff(appId: appId) }
        if options.json {
            try Console.json(DiffDocument(cachedVersionId: result.cached.versionId, latestVersionId: result.latest.versionId, diff: result.diff))
            return
        }
        var lines = ["cached \(result.cached.versionId) -> latest \(result.latest.versionId)"]
        let diff = result.diff
        if diff.isEmpty { lines.append("no changes") }
        lines += diff.requiredAdded.map { "+ required \($0)" } + diff.requiredRemoved.map { "- required \($0)" }
        lines += diff.optionalAdded.map { "+ optional \($0)" } + diff.optionalRemoved.map { "- optional \($0)" }
        lines += diff.reasonsChanged.map { "~ reason of \($0.name): \($0.from ?? "none") -> \($0.to ?? "none")" }
        lines += diff.tokensChanged.map { "~ token \($0.audience): [\($0.from.joined(separator: ", "))] -> [\($0.to.joined(separator: ", "))]" }
        lines += diff.customMetaDataChanged.map { "~ customMetaData \($0.key): \($0.from ?? "absent") -> \($0.to ?? "absent")" }
        Console.output(lines.joined(separator: "\n"))
    }

    /// `manifest --diff --json`: the two versions and what changed.
    struct DiffDocument: Encodable {
        var cachedVersionId: String
        var latestVersionId: String
        var diff: ManifestDiff

        private enum CodingKeys: String, CodingKey { case cachedVersionId, latestVersionId }

        func encode(to encoder: any Encoder) throws {
            try diff.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(cachedVersionId, forKey: .cachedVersionId)
            try container.encode(latestVersionId, forKey: .latestVersionId)
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
