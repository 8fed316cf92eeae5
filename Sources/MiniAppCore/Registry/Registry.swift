import Foundation
// `stat` reaches this module through libarchive's header too: a whole-module build (release) asks its
// members to be imported from there.
internal import CMiniAppArchive

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
        guard let bytes = FileReading.contents(root + "/.generation") else { return 0 }
        return Int(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
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

    /// An app's entry. The app's id is its folder's name: an `app.json` naming another id is not an
    /// app (``plantedApps()`` lists them).
    public func app(_ appId: String) -> RegistryApp? {
        guard Identifier.isValid(appId), let app = read(RegistryApp.self, at: appDirectory(appId) + "/app.json"), app.id == appId else { return nil }
        return app
    }

    /// The app folders whose `app.json` names another id (a planted or hand-edited record), with the
    /// id it names.
    public func plantedApps() -> [(folder: String, names: String)] {
        appIds().compactMap { folder in
            guard let app = read(RegistryApp.self, at: appDirectory(folder) + "/app.json"), app.id != folder else { return nil }
            return (folder, app.id)
        }
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
        guard let entry = read(RegistryVersion.self, at: versionDirectory(appId, versionId) + "/version.json"), entry.versionId == versionId else { return nil }
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
        guard regularFile(directory + "/manifest.json") else { throw RegistryError.invalidBundle(reason: "its manifest.json is not a regular file of the registry") }
        let manifest = try BundleManifest.read(bundleDirectory: directory)
        return ManifestLocalizer(bundleDirectory: directory, language: language).localize(manifest)
    }

    /// The public key `id`.
    public func key(_ id: String) -> PublicKeyRecord? {
        guard Identifier.isValid(id) else { return nil }
        return read(PublicKeyRecord.self, at: root + "/keys/" + id + ".json")
    }

    /// What a preview token points at.
    public func previewCode(_ token: String) -> RegistryPreviewCode? {
        guard Identifier.isValid(token) else { return nil }
        return read(RegistryPreviewCode.self, at: root + "/preview-codes/" + token + ".json")
    }

    /// Whether `path`, under the registry root, is a regular file reached through real folders: no
    /// component below the root is a symbolic link. What a server hands out is only ever the
    /// registry's own files.
    public func regularFile(_ path: String) -> Bool {
        guard path.hasPrefix(root + "/") else { return false }
        var info = stat()
        var current = root
        for component in path.dropFirst(root.count + 1).split(separator: "/") {
            current += "/" + component
            guard lstat(current, &info) == 0, (info.st_mode & S_IFMT) != S_IFLNK else { return false }
        }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    /// A registry JSON file, read only when it is one of the registry's own regular files.
    package func read<T: Decodable>(_ type: T.Type, at path: String) -> T? {
        guard regularFile(path), let bytes = FileReading.contents(path, followingLinks: false) else { return nil }
        return try? RecordCoding.decoder().decode(type, from: Data(bytes))
    }
}
