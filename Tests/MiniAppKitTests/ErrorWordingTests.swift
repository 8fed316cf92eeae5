import Foundation
import MiniAppCore
import MiniAppPermissions
import Testing

@testable import MiniAppKit

/// Library errors speak of settings, values and calls; only the CLI names flags, variables, config
/// keys and commands.
@Suite struct ErrorWordingTests {
    static let errors: [any CategorizedError] = [
        PlatformError.notFound(resource: "app a", message: nil),
        PlatformError.unauthorized(resource: "app a", status: 401, message: "no"),
        PlatformError.unreachable(resource: "app a", reason: "refused", attempts: 1),
        PlatformError.unexpectedStatus(resource: "app a", status: 418),
        CacheError.notCached(appId: "a", versionId: "v"),
        CacheError.busy(appId: "a", versionId: "v", waitedSeconds: 3),
        CacheError.damaged(appId: "a", versionId: "v", problems: ["index.html changed"]),
        CacheError.io(path: "/c", reason: "Permission denied", diskFull: false),
        ConfigurationError.missingPlatform,
        ConfigurationError.missingProjectId,
        ConfigurationError.unreadableFile(path: "/c.json", reason: "not JSON"),
        ConfigurationError.invalidValue(setting: "trustedKeys", source: TrustedKeys.source, value: "x y", expected: "use key ids"),
        SignatureError.missingSignature(versionId: "v"),
        SignatureError.multiFileManifest(versionId: "v"),
        PermissionStoreError.unavailable(path: "/p.sqlite", reason: "Permission denied"),
        PermissionStoreError.busy(path: "/p.sqlite", waitedSeconds: 10),
        PermissionStoreError.launchRefused(appId: "a", missing: ["rakuten.miniapp.user.USER_NAME"]),
        DownloadError.tooLarge(url: "http://x/a.zip", limitBytes: 10),
        DownloadError.io(path: "/c", reason: "Permission denied", diskFull: false),
        ArchiveError.tooManyEntries(limit: 10),
        ArchiveError.tooLarge(limitBytes: 10),
        ArchiveError.unsupportedCompression(entry: "a.js", method: "Deflate64 (method 9)"),
        ArchiveError.overlappingEntries(entry: "a.js", other: "b.js"),
        ArchiveError.inconsistentEntry(entry: "a.js", reason: "has a local header that names it 'b.js'"),
        CacheError.notAFolder(path: "/c/trash", isLink: true),
        RegistryError.notARegistry(path: "/r", reason: "no registry.json"),
        RegistryError.versionExists(appId: "a", versionId: "v"),
        RegistryError.invalidVersionTag("a b"),
        SecureStorageError.full(appId: "a", used: 10, needed: 20, limit: 15),
        SecureStorageError.invalidItem(appId: "a", reason: "the key is empty"),
        SecureStorageError.busy(appId: "a", reason: "it made more than 100 writes a second (bursts of 200), the most the host allows an app"),
    ]

    @Test(arguments: 0..<errors.count)
    func libraryErrorsUseNoCLITerms(index: Int) {
        let text = Self.errors[index].description
        for term in ["--", "MINIAPP_", "miniapp ", "config file"] {
            #expect(!text.contains(term), "\(text)")
        }
    }
}
