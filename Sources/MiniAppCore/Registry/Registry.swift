import Foundation

/// A registry directory: the on-disk form of a platform, read by `--platform <dir>` and `serve`.
///
/// Layout: `registry.json`; `keys/<key-id>.json` (`{"id", "ecKey", "pemKey"}`);
/// `apps/<app-id>/app.json`; `apps/<app-id>/versions/<version-id>/{version.json, bundle.zip,
/// manifest.json, _locale/<lang>/manifest.json}`; `preview-codes/<token>.json`. A version folder
/// appears with one rename, complete, so a reader never sees half of one.
public struct Registry: Sendable {
    /// The registry folder.
    public let root: String

    /// The registry at `root`.
    public init(root: String) {
        self.root = root
    }

    package static let marker = "registry.json"

    /// Whether `root` holds a registry.
    public var exists: Bool { FileManager.default.fileExists(atPath: root + "/" + Self.marker) }

    /// A counter in `.generation` that every publish increments (under the registry lock): readers may
    /// cache what they derived from the registry until it changes.
    public var generation: Int {
        guard let data = FileManager.default.contents(atPath: root + "/.generation") else { return 0 }
        return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Moves the generation on, after a change; the caller holds the registry lock.
    package func advanceGeneration() throws(CacheError) {
        try Durability.writeAtomically(Data("\(generation + 1)\n".utf8), to: root + "/.generation", durable: false)
    }

    package func appDirectory(_ appId: String) -> String { root + "/apps/" + appId }
    package func versionDirectory(_ appId: String, _ versionId: String) -> String { appDirectory(appId) + "/versions/" + versionId }

    /// The path of a version's zip.
    public func bundlePath(appId: String, versionId: String) -> String { versionDirectory(appId, versionId) + "/bundle.zip" }

    /// Every app id in the registry, sorted.
    public func appIds() -> [String] {
        FileReading.children(of: root + "/apps").filter { Identifier.isValid($0) && FileManager.default.fileExists(atPath: appDirectory($0) + "/app.json") }.sorted()
    }

    /// An app's entry.
    public func app(_ appId: String) -> RegistryApp? {
        guard Identifier.isValid(appId) else { return nil }
        return Self.read(RegistryApp.self, at: appDirectory(appId) + "/app.json")
    }

    /// An app's versions that `preview` mode sees, newest first.
    public func versions(of appId: String, preview: Bool) -> [RegistryVersion] {
        guard Identifier.isValid(appId) else { return [] }
        return FileReading.children(of: appDirectory(appId) + "/versions")
            .filter(Identifier.isValid)
            .compactMap { version(appId: appId, versionId: $0) }
            .filter { preview || !$0.preview }
            .sorted { ($0.publishedAt, $0.versionId) > ($1.publishedAt, $1.versionId) }
    }

    /// One version's entry, whatever its visibility.
    public func version(appId: String, versionId: String) -> RegistryVersion? {
        guard Identifier.isValid(appId), Identifier.isValid(versionId) else { return nil }
        guard let entry = Self.read(RegistryVersion.self, at: versionDirectory(appId, versionId) + "/version.json"), entry.versionId == versionId else { return nil }
        return entry
    }

    /// The platform record of an app at one version.
    public func record(_ app: RegistryApp, _ version: RegistryVersion) -> AppRecord {
        AppRecord(
            id: app.id, displayName: app.displayName, icon: app.icon.flatMap(URL.init(string:)),
            version: AppVersion(versionId: version.versionId, versionTag: version.versionTag),
            promotionalImageUrl: app.promotionalImageUrl.flatMap(URL.init(string:)), promotionalText: app.promotionalText
        )
    }

    /// The app records of the latest version of every app that `preview` mode sees.
    public func listing(preview: Bool) -> [AppRecord] {
        appIds().compactMap { id in
            guard let app = app(id), let latest = versions(of: id, preview: preview).first else { return nil }
            return record(app, latest)
        }
    }

    /// The bundle's manifest.json of a version, localised for `language`.
    public func metadata(appId: String, versionId: String, language: String) throws -> BundleManifest {
        let directory = versionDirectory(appId, versionId)
        let manifest = try BundleManifest.read(bundleDirectory: directory)
        return ManifestLocalizer(bundleDirectory: directory, language: language).localize(manifest)
    }

    /// The public key `id`.
    public func key(_ id: String) -> PublicKeyRecord? {
        guard Identifier.isValid(id) else { return nil }
        return Self.read(PublicKeyRecord.self, at: root + "/keys/" + id + ".json")
    }

    /// What a preview token points at.
    public func previewCode(_ token: String) -> RegistryPreviewCode? {
        guard Identifier.isValid(token) else { return nil }
        return Self.read(RegistryPreviewCode.self, at: root + "/preview-codes/" + token + ".json")
    }

    package static func read<T: Decodable>(_ type: T.Type, at path: String) -> T? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? RecordCoding.decoder().decode(type, from: data)
    }
}
