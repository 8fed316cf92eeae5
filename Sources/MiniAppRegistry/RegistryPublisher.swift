import Foundation
public import MiniAppCore

/// What to publish: a bundle folder or zip, and how to name and sign it.
public struct PublishRequest: Sendable {
    /// A bundle folder (zipped deterministically) or a zip.
    public var source: String
    public var appId: String
    public var versionTag: String
    /// The version id; a new random one when `nil`.
    public var versionId: String?
    /// The name to list the app under; kept from earlier versions when `nil`.
    public var displayName: String?
    /// Whether only preview mode sees the version; a preview code is made for it.
    public var preview: Bool
    /// The signing key.
    public var key: SigningKey
    /// When the registry keeps a TUF repository: keys that sign its roles, each role signed by those it
    /// lists (the targets role, or the role the targets delegate the app to, then the snapshot and the
    /// timestamp).
    package var tufSigners: [TUFSigner] = []

    /// A request with the given values.
    public init(source: String, appId: String, versionTag: String, versionId: String? = nil, displayName: String? = nil, preview: Bool = false, key: SigningKey) {
        self.source = source
        self.appId = appId
        self.versionTag = versionTag
        self.versionId = versionId
        self.displayName = displayName
        self.preview = preview
        self.key = key
    }
}

/// What `publish` added.
public struct PublishResult: Sendable, Encodable, Equatable {
    public var id: String
    public var versionId: String
    public var versionTag: String
    /// The key that signed it.
    public var keyId: String
    /// The preview code of a preview version.
    public var previewCode: String?
}

/// Adds signed versions to a registry directory, atomically: a reader sees the whole version or none.
public struct RegistryPublisher: Sendable {
    public let registry: Registry
    /// The checks a bundle must pass: the same as an install.
    public var limits: ExtractionLimits
    /// Where the publisher's disk work (zipping, checking, hashing, writing) runs, and where it waits
    /// for another publisher's lock.
    public let executor: BlockingExecutor

    /// A publisher into `registry`, doing its disk work on `executor`.
    public init(registry: Registry, executor: BlockingExecutor, limits: ExtractionLimits = ExtractionLimits()) {
        self.registry = registry
        self.executor = executor
        self.limits = limits
    }

    /// Checks, zips, signs and adds a version.
    public func publish(_ request: PublishRequest) async throws -> PublishResult {
        try Identifier.validate(request.appId, as: .app)
        let versionId = request.versionId ?? UUID().uuidString.lowercased()
        try Identifier.validate(versionId, as: .version)
        guard !request.versionTag.isEmpty, request.versionTag.count <= 64,
              request.versionTag.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            throw RegistryError.invalidVersionTag(request.versionTag)
        }
        if TUFRepository(folder: registry.root + "/tuf").exists, request.tufSigners.isEmpty {
            throw TUFRepositoryError("the registry keeps a TUF repository: publishing needs the keys that sign its targets, snapshot and timestamp")
        }
        let staging = registry.root + "/.staging/" + UUID().uuidString
        do {
            let result = try await publish(request, versionId: versionId, staging: staging)
            try? await executor.runToCompletion { try FileManager.default.removeItem(atPath: staging) }
            return result
        } catch {
            try? await executor.runToCompletion { try FileManager.default.removeItem(atPath: staging) }
            throw error
        }
    }

    /// Stages the version in `staging` and, holding the registry's lock, adds it.
    private func publish(_ request: PublishRequest, versionId: String, staging: String) async throws -> PublishResult {
        let entry = try await executor.run { try stage(request, versionId: versionId, in: staging) }
        let lock = try await FileLock.acquire(registry.root + "/.lock", timeout: .seconds(60), executor: executor) {
            CacheError.busy(appId: request.appId, versionId: versionId, waitedSeconds: 60)
        }
        return try await executor.run {
            try withExtendedLifetime(lock) { try add(entry, of: request, from: staging + "/version") }
        }
    }

    /// Zips (or copies), checks, hashes and signs the bundle into `staging/version`; returns its entry.
    private func stage(_ request: PublishRequest, versionId: String, in staging: String) throws -> RegistryVersion {
        try prepareRegistry()
        try make(staging)
        let version = staging + "/version"
        try make(version)
        let zip = version + "/bundle.zip"
        try collectZip(from: request.source, to: zip)
        try checkBundle(zip, copyingMetadataInto: version, scratch: staging + "/check")

        let hashed = try FileHashing.bundle(at: zip)
        let signature = try BundleSignature.sign(versionId: versionId, sha256: hashed.digest, with: request.key)
        let entry = RegistryVersion(
            versionId: versionId, versionTag: request.versionTag, preview: request.preview, publishedAt: Date(),
            publicKeyId: request.key.publicKey.keyId, signature: signature, sha256: hashed.digest.hexString, sizeBytes: hashed.size
        )
        try write(entry, to: version + "/version.json")
        try sync(staging)
        return entry
    }

    /// Moves the staged `version` folder into the registry with its key, app and preview code (the
    /// caller holds the registry's lock).
    private func add(_ entry: RegistryVersion, of request: PublishRequest, from version: String) throws -> PublishResult {
        let versionId = entry.versionId
        let keyId = entry.publicKeyId
        let target = registry.versionDirectory(request.appId, versionId)
        if FileManager.default.fileExists(atPath: target) { throw RegistryError.versionExists(appId: request.appId, versionId: versionId) }
        try addToTUF(entry, of: request, zip: version + "/bundle.zip")
        let keyPath = registry.root + "/keys/" + keyId + ".json"
        if !FileManager.default.fileExists(atPath: keyPath) {
            let publicKey = request.key.publicKey
            try write(PublicKeyRecord(id: keyId, ecKey: publicKey.ecKey, pemKey: publicKey.pem), to: keyPath)
        }
        var app = registry.app(request.appId) ?? RegistryApp(id: request.appId, displayName: request.appId)
        if let name = request.displayName { app.displayName = name }
        try make(registry.appDirectory(request.appId) + "/versions")
        try write(app, to: registry.appDirectory(request.appId) + "/app.json")
        guard rename(version, target) == 0 else {
            if errno == EEXIST || errno == ENOTEMPTY { throw RegistryError.versionExists(appId: request.appId, versionId: versionId) }
            throw Self.ioError(target)
        }
        Durability.syncDirectory(registry.appDirectory(request.appId) + "/versions")
        var previewCode: String?
        if request.preview {
            let token = SHA256Digest.hash(Array(UUID().uuidString.utf8)).hexString.prefix(20)
            try write(RegistryPreviewCode(appId: request.appId, versionId: versionId), to: registry.root + "/preview-codes/" + token + ".json")
            previewCode = String(token)
        }
        do {
            try registry.advanceGeneration()
        } catch {
            throw Self.ioError(registry.root + "/.generation")
        }
        return PublishResult(id: request.appId, versionId: versionId, versionTag: request.versionTag, keyId: keyId, previewCode: previewCode)
    }

    /// Lists the version's zip as a target of the registry's TUF repository, when it keeps one: the
    /// path `<app-id>/<version-id>/bundle.zip`, in the role the targets delegate the app to when they
    /// do, with the app id, version id and tag (and whether it is a preview) as its custom fields.
    private func addToTUF(_ entry: RegistryVersion, of request: PublishRequest, zip: String) throws {
        let tuf = TUFRepository(folder: registry.root + "/tuf")
        guard tuf.exists else { return }
        var custom: [String: JSONValue] = [
            "appId": .string(request.appId), "versionId": .string(entry.versionId), "versionTag": .string(entry.versionTag),
        ]
        if entry.preview { custom["preview"] = .bool(true) }
        let role = try tuf.delegatedRoleNames().contains(request.appId) ? request.appId : "targets"
        try tuf.addTarget(TUFRepository.targetPath(appId: request.appId, versionId: entry.versionId), file: zip, custom: .object(custom), role: role, signers: request.tufSigners)
    }

    private func prepareRegistry() throws {
        for folder in ["", "/apps", "/keys", "/preview-codes", "/.staging"] { try make(registry.root + folder) }
        let marker = registry.root + "/" + Registry.marker
        if !FileManager.default.fileExists(atPath: marker) {
            try write(["format": 1], to: marker)
        }
    }

    /// Puts the bundle's zip at `zip`: a folder is zipped deterministically, a zip is copied.
    private func collectZip(from source: String, to zip: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) else {
            throw BundleFileError.unreadable(path: source, reason: "it does not exist")
        }
        if isDirectory.boolValue {
            do {
                try ArchiveWriter.zip(directory: source, to: zip)
            } catch {
                throw Self.refusal(error)
            }
        } else {
            do {
                // A link the user named is followed: the copy holds the zip's bytes, not the link.
                try FileManager.default.copyItem(atPath: URL(fileURLWithPath: source).resolvingSymlinksInPath().path, toPath: zip)
            } catch {
                throw BundleFileError.unreadable(path: source, reason: "it cannot be read")
            }
        }
    }

    /// Runs the installer's checks on the zip, and keeps its manifest.json and locale tables.
    private func checkBundle(_ zip: String, copyingMetadataInto version: String, scratch: String) throws {
        let result: ExtractionResult
        do {
            result = try ArchiveExtractor(limits: limits).extract(zip, into: scratch)
        } catch {
            throw Self.refusal(error)
        }
        let bundle = result.bundleDirectory
        guard FileManager.default.fileExists(atPath: bundle + "/manifest.json") else {
            throw RegistryError.invalidBundle(reason: "it has no manifest.json at its root")
        }
        do {
            _ = try BundleManifest.read(bundleDirectory: bundle)
        } catch {
            throw RegistryError.invalidBundle(reason: error.description)
        }
        try copy(bundle + "/manifest.json", to: version + "/manifest.json")
        for language in FileReading.children(of: bundle + "/_locale") where ManifestLocalizer.isValidLanguage(language) {
            let table = bundle + "/_locale/" + language + "/manifest.json"
            let read = FileReading.read(table)
            if case .missing = read { continue }
            guard case .contents(let bytes) = read, (try? JSONDecoder().decode([String: String].self, from: Data(bytes))) != nil else {
                throw RegistryError.invalidBundle(reason: "_locale/\(language)/manifest.json is not a JSON object of strings")
            }
            try make(version + "/_locale/" + language)
            try copy(table, to: version + "/_locale/" + language + "/manifest.json")
        }
    }

    private func make(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Self.ioError(path)
        }
    }

    private func copy(_ source: String, to destination: String) throws {
        do {
            try FileManager.default.copyItem(atPath: source, toPath: destination)
        } catch {
            throw Self.ioError(destination)
        }
    }

    private func write<T: Encodable>(_ value: T, to path: String) throws {
        do {
            try Durability.writeAtomically(try RecordCoding.encoder(pretty: true).encode(value), to: path, durable: false)
        } catch let error as CacheError {
            if case .io(let path, let reason, let diskFull) = error { throw RegistryError.io(path: path, reason: reason, diskFull: diskFull) }
            throw error
        }
    }

    private func sync(_ path: String) throws {
        do {
            try Durability.syncFileSystem(containing: path)
        } catch {
            throw Self.ioError(path)
        }
    }

    /// An archive problem as publish reports it: bad data refuses the bundle, anything else stays as it is.
    static func refusal(_ error: ArchiveError) -> any Error {
        error.category == .badData ? RegistryError.invalidBundle(reason: error.description) : error
    }

    static func ioError(_ path: String, errorNumber: Int32 = errno) -> RegistryError {
        .io(path: path, reason: String(cString: strerror(errorNumber)), diskFull: errorNumber == ENOSPC || errorNumber == EDQUOT)
    }
}
