import MiniAppCore
import MiniAppKit

/// How the CLI words the library's errors. The library says what to change in its own terms (a
/// setting, a value, a call); a user of the CLI is told the flag, variable, config key or command.
enum CLIMessages {
    /// The line the CLI prints for `error`.
    static func describe(_ error: any CategorizedError) -> String {
        switch error {
        case let error as PlatformError: describe(error)
        case let error as CacheError: describe(error)
        case let error as ConfigurationError: describe(error)
        case let error as SignatureError: describe(error)
        case let error as PermissionStoreError: describe(error)
        case let error as DownloadError: describe(error)
        case let error as ArchiveError: describe(error)
        case let error as RegistryError: describe(error)
        default: error.description
        }
    }

    private static func describe(_ error: PlatformError) -> String {
        switch error {
        case .notFound(let resource, let message):
            return "\(resource) not found\(message.flatMap { $0.isEmpty ? nil : " (\($0))" } ?? ""): check the id, or run 'miniapp list' to see what is published"
        case .unauthorized(let resource, let status, let message):
            return "the platform refused the credentials for \(resource) (HTTP \(status)\(message.flatMap { $0.isEmpty ? nil : ": \($0)" } ?? "")): check \(SettingDeclaration.subscriptionKey.flag) or \(SettingDeclaration.subscriptionKey.variable) and the project id"
        case .unreachable(let resource, let reason, let attempts):
            return "cannot reach the platform for \(resource) (\(reason), \(attempts) attempt\(attempts == 1 ? "" : "s")): check \(SettingDeclaration.platform.flag) and the network, or use \(SettingDeclaration.offline.flag)"
        case .unexpectedStatus(let resource, let status):
            return "the platform answered HTTP \(status) for \(resource), which the API does not define: check --platform"
        default:
            return error.description
        }
    }

    private static func describe(_ error: CacheError) -> String {
        switch error {
        case .notCached(let appId, let versionId):
            let what = versionId.map { "version \($0) of app \(appId)" } ?? "app \(appId)"
            return "\(what) is not in the cache and --offline forbids the network: run without --offline to fetch it"
        case .busy(let appId, let versionId, let waited):
            return "version \(versionId) of app \(appId) is locked by another miniapp process (waited \(waited) s): retry when it has finished"
        case .damaged(let appId, let versionId, let problems):
            let shown = problems.prefix(3).joined(separator: ", ") + (problems.count > 3 ? ", ..." : "")
            return "cached version \(versionId) of app \(appId) is damaged (\(shown)) and cannot be repaired offline: run without --offline to reinstall it"
        case .keptZipRejected(let appId, let versionId, let reason):
            return "cached version \(versionId) of app \(appId) is damaged and its kept zip cannot repair it (\(reason)): run without --offline to reinstall it"
        case .io(let path, let reason, let diskFull):
            return writeFailure(path, reason, diskFull)
        case .notAFolder, .unreadable:
            return error.description
        }
    }

    private static func describe(_ error: ConfigurationError) -> String {
        switch error {
        case .missingPlatform:
            return "no platform configured: pass \(SettingDeclaration.platform.flag) or set \(SettingDeclaration.platform.variable)"
        case .missingProjectId:
            return "no project id configured: pass \(SettingDeclaration.projectId.flag) or set \(SettingDeclaration.projectId.variable)"
        case .unreadableFile(let path, let reason):
            return "cannot use config file \(path): \(reason); fix it or point MINIAPP_CONFIG elsewhere"
        case .invalidValue(let setting, let source, let value, let expected) where setting == "trustedKeys":
            // The installer checks the keys it was given; the CLI read them from the config file.
            return ConfigurationError.invalidValue(setting: setting, source: source == TrustedKeys.source ? "the config file" : source, value: value, expected: expected).description
        case .invalidValue:
            return error.description
        }
    }

    private static func describe(_ error: SignatureError) -> String {
        switch error {
        case .missingSignature(let versionId):
            return "version \(versionId) has no signature: refused under --signature-policy required (use advisory to accept unsigned bundles)"
        case .multiFileManifest(let versionId):
            return "version \(versionId) is listed file by file, which its signature cannot cover: refused under --signature-policy required (use advisory to accept it)"
        default:
            return error.description
        }
    }

    private static func describe(_ error: PermissionStoreError) -> String {
        switch error {
        case .unavailable(let path, let reason):
            return "cannot use the permission store \(path): \(reason); check \(SettingDeclaration.permissionStore.flag) (by default the store lives in \(SettingDeclaration.cacheDir.flag)) and its permissions"
        case .launchRefused(let appId, let missing):
            return "app \(appId) may not launch: required permission\(missing.count == 1 ? "" : "s") not allowed: \(missing.joined(separator: ", ")); grant with 'miniapp permissions grant \(appId) <name>...'"
        default:
            return error.description
        }
    }

    private static func describe(_ error: DownloadError) -> String {
        switch error {
        case .tooLarge(let url, let limit):
            return "the bundle at \(url) is larger than \(limit) bytes (raise limits.maxDownloadBytes in the config file if it is genuine)"
        case .io(let path, let reason, let diskFull):
            return writeFailure(path, reason, diskFull)
        case .rollback(let rollback):
            return "\(rollback); refused: pass --version \(rollback.offered.versionId) or --allow-downgrade to install it"
        default:
            return error.description
        }
    }

    private static func describe(_ error: ArchiveError) -> String {
        switch error {
        case .tooManyEntries(let limit):
            return "archive refused: it has more than \(limit) entries (raise limits.maxEntries in the config file if the bundle is genuine)"
        case .tooLarge(let limit):
            return "archive refused: it unpacks to more than \(limit) bytes (raise limits.maxUnpackedBytes in the config file if the bundle is genuine)"
        default:
            return error.description
        }
    }

    private static func describe(_ error: RegistryError) -> String {
        switch error {
        case .notARegistry(let path, let reason):
            return "\(path) is not a usable registry (\(reason)): create one with 'miniapp publish --registry \(path) ...'"
        case .versionExists(let appId, let versionId):
            return "version \(versionId) of app \(appId) is already published: pick another --version-id"
        case .invalidVersionTag(let tag):
            return "invalid version tag '\(Sanitizer.printable(tag, limit: 120))' from --version-tag: use 1 to 64 printable characters without spaces, such as 1.2.0"
        default:
            return error.description
        }
    }

    private static func writeFailure(_ path: String, _ reason: String, _ diskFull: Bool) -> String {
        "cannot write \(path): \(reason)\(diskFull ? "; free some disk space and retry" : "; check --cache-dir and its permissions")"
    }
}
