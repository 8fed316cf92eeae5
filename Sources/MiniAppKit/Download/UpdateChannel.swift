import Foundation
import Logging
import MiniAppCore

/// The platform's TUF repository as the installer checks each version against it, when a trusted root
/// is configured (``MiniAppConfiguration/tufRoot``): before a version is reused or installed, the
/// metadata is brought up to date through the client workflow, the version's zip must be a target
/// (`<app-id>/<version-id>/bundle.zip`) whose custom fields name the same app, version and tag, and a
/// downloaded zip must have its length and hashes before a byte of it is unzipped.
///
/// The trusted metadata is kept per namespace in the cache, `tuf/<namespace>/`, written atomically.
/// One refresh runs at a time; the installer runs it while it asks the platform for the version.
actor UpdateChannel {
    let folder: String
    let rootFile: String
    let remote: any TUFRemote
    let executor: BlockingExecutor
    let logger: Logger

    /// The channel `configuration` asks for, reached through `transport`; `nil` when no trusted root
    /// is configured, offline, or with no platform.
    static func make(_ configuration: MiniAppConfiguration, transport: HTTPTransport, executor: BlockingExecutor, logger: Logger) -> UpdateChannel? {
        guard let rootFile = configuration.tufRoot, !configuration.offline, let platform = configuration.platform else { return nil }
        let remote: any TUFRemote
        let metadata: String = switch (configuration.tufMetadata, platform) {
        case (let given?, _): given
        case (nil, .remote(let url)): url.absoluteString + "tuf/metadata/"
        case (nil, .registry(let path)): path + "/tuf/metadata"
        }
        let lowered = metadata.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            remote = TUFHTTPRemote(metadataURL: metadata, targetsURL: metadata, transport: transport, logger: logger)
        } else {
            remote = TUFFolderRemote(metadataFolder: metadata, targetsFolder: metadata, executor: executor)
        }
        let folder = configuration.cacheDirectory + "/tuf/" + configuration.cacheNamespace.key
        return UpdateChannel(folder: folder, rootFile: rootFile, remote: remote, executor: executor, logger: logger)
    }

    init(folder: String, rootFile: String, remote: any TUFRemote, executor: BlockingExecutor, logger: Logger) {
        self.folder = folder
        self.rootFile = rootFile
        self.remote = remote
        self.executor = executor
        self.logger = logger
    }

    /// Brings the kept metadata up to date (the client workflow's refresh) and returns the updater to
    /// look versions up in. It needs no version: the installer runs it while it asks the platform for one.
    func refreshed() async throws -> TUFUpdater {
        // OpenSSL's set-up overlaps with reading the kept root.
        CryptoRuntime.warmUp(on: executor)
        try await anchor()
        var updater = try await TUFUpdater(folder: folder, remote: remote, executor: executor)
        try await updater.refresh()
        return updater
    }

    /// The target of `appId`'s version `versionId` in `updater` (refreshed), checked against the
    /// platform's account of it; a ``TUFError`` when anything is not as TUF says.
    static func target(in updater: inout TUFUpdater, appId: String, versionId: String, versionTag: String?) async throws -> TUFTarget {
        let path = TUFRepository.targetPath(appId: appId, versionId: versionId)
        guard let target = try await updater.target(path) else {
            throw TUFError("target \(path)", "no trusted targets role lists it: the platform offers a version TUF does not know")
        }
        guard case .object(let custom)? = target.custom, custom["appId"] == .string(appId), custom["versionId"] == .string(versionId) else {
            throw TUFError("target \(path)", "its custom fields do not name app \(appId) version \(versionId)")
        }
        if let versionTag, let listed = custom["versionTag"], listed != .string(versionTag) {
            throw TUFError("target \(path)", "it is tagged \(listed.compactText), not \(versionTag) as the platform says")
        }
        guard target.hashes["sha256"] != nil else { throw TUFError("target \(path)", "it lists no sha256") }
        return target
    }

    /// Starts the kept metadata from the configured root when it holds none, or when the configured root
    /// changed since (another repository, or a new anchor given on purpose): the kept files are dropped.
    private func anchor() async throws {
        let (folder, rootFile) = (folder, rootFile)
        let root: [UInt8] = try await executor.run {
            switch FileReading.read(rootFile, limit: TUFLimits().rootBytes) {
            case .contents(let bytes): return bytes
            case .unreadable(EFBIG): throw TUFError("root", "the configured trusted root \(rootFile) is longer than \(TUFLimits().rootBytes) bytes")
            default: throw ConfigurationError.invalidValue(setting: "TUF root", source: SettingDeclaration.tufRoot.flag, value: rootFile, expected: "give a readable file holding a trusted root.json")
            }
        }
        let digest = SHA256Digest.hash(root).hexString
        let anchorPath = folder + "/anchor.sha256"
        let anchored = try await executor.run { FileReading.contents(anchorPath).map { String(decoding: $0, as: UTF8.self) } }
        guard anchored != digest || !FileManager.default.fileExists(atPath: folder + "/root.json") else { return }
        if anchored != nil { logger.info("the configured TUF root changed; starting the kept metadata again from it", metadata: ["folder": "\(folder)"]) }
        try await executor.run {
            if FileManager.default.fileExists(atPath: folder) {
                for name in FileReading.children(of: folder) where name.hasSuffix(".json") { unlink(folder + "/" + name) }
            }
        }
        try await TUFUpdater.initialize(folder: folder, root: root, executor: executor)
        try await executor.run { try Durability.writeAtomically(Data(digest.utf8), to: anchorPath, durable: true) }
    }

    /// Throws unless the zip downloaded for `target` has its length and SHA-256.
    static func check(_ target: TUFTarget, size: Int64, sha256: [UInt8]) throws(TUFError) {
        guard Int64(target.length) == size else { throw TUFError("target \(target.path)", "the zip is \(size) bytes, not the \(target.length) listed") }
        guard target.hashes["sha256"] == sha256.hexString else { throw TUFError("target \(target.path)", "the zip's sha256 is not the one listed") }
    }
}
