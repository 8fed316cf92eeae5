import AsyncHTTPClient
package import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
package import MiniAppCore

/// A client for a remote platform API over HTTP, with retries, timeouts and lenient decoding.
///
/// Create one per configuration (``Platforms/open(_:httpClient:executor:connections:logger:)`` picks it
/// for a remote platform) and call ``shutdown()`` when done.
package final class PlatformClient: PlatformAPI {
    /// The base URL, ending with `/`.
    public let baseURL: URL
    /// The host project id.
    public let projectId: String
    /// Whether requests go to the preview paths.
    public let preview: Bool
    let subscriptionKey: String?
    let network: NetworkSettings
    let logger: Logger
    /// How requests reach the platform.
    let transport: HTTPTransport
    /// Whether ``shutdown()`` closes ``transport`` (one the client made), or it is the runtime's.
    let ownsTransport: Bool
    let policy: RequestPolicy
    /// Where the blocking work runs: the app list's reading, and plain `http://` requests on connections
    /// of their own (``PlatformConnections/perRequest``).
    let executor: BlockingExecutor
    /// Where plain `http://` requests go on connections of their own (``PlatformConnections/perRequest``).
    let direct: DirectEndpoint?

    /// A client for the platform at `baseURL` whose requests go over `transport`, which it shuts down
    /// when `ownsTransport`.
    init(
        baseURL: URL, projectId: String, subscriptionKey: String?, preview: Bool, network: NetworkSettings, transport: HTTPTransport, ownsTransport: Bool,
        logger: Logger
    ) {
        self.baseURL = baseURL.absoluteString.hasSuffix("/") ? baseURL : baseURL.appendingPathComponent("")
        self.projectId = projectId
        self.subscriptionKey = subscriptionKey.flatMap { $0.isEmpty ? nil : $0 }
        self.preview = preview
        self.network = network
        self.logger = logger
        self.transport = transport
        self.ownsTransport = ownsTransport
        self.executor = transport.executor
        self.policy = RequestPolicy(network: network, logger: logger)
        self.direct = transport.perRequest ? DirectEndpoint(baseURL: self.baseURL) : nil
    }

    /// A client for the remote platform that `configuration` names, over `transport` (see
    /// ``init(baseURL:projectId:subscriptionKey:preview:network:transport:ownsTransport:logger:)``).
    convenience init(configuration: MiniAppConfiguration, transport: HTTPTransport, ownsTransport: Bool, logger: Logger) throws(ConfigurationError) {
        switch configuration.platform {
        case nil:
            throw .missingPlatform
        case .registry?:
            throw .invalidValue(setting: "platform", source: "the configuration", value: configuration.platform?.description ?? "", expected: "PlatformClient needs an http:// or https:// URL; use Platforms.open for a registry directory")
        case .remote(let url)?:
            guard let projectId = configuration.projectId else { throw .missingProjectId }
            self.init(baseURL: url, projectId: projectId, subscriptionKey: configuration.subscriptionKey,
                      preview: configuration.preview, network: configuration.network, transport: transport, ownsTransport: ownsTransport,
                      logger: logger)
        }
    }

    /// Closes the client's connections; call it once, when done.
    public func shutdown() async throws {
        if ownsTransport { try await transport.shutdown() }
    }

    public func close() async {
        try? await shutdown()
    }

    // MARK: Endpoints

    public func listApps() async throws -> [AppRecord] {
        let answer = try await get(path: "host/\(projectId)/miniapps/\(preview ? "preview" : "")", resource: "the app list")
        return try decodeRecords(answer, resource: "the app list", requireOne: false)
    }

    /// The app list as ``listApps()`` reads it, its records as texts (``AppListText``): for printing
    /// the list without making a record of each app.
    package func appListText() async throws -> AppListText {
        let answer = try await get(path: "host/\(projectId)/miniapps/\(preview ? "preview" : "")", resource: "the app list")
        guard let list = AppListText.read(answer.body) else {
            return AppListText(records: try decodeRecords(answer, resource: "the app list", requireOne: false))
        }
        try checkDropped(kept: list.entries.count, of: list.elementCount, firstIsMalformed: false, resource: "the app list", requireOne: false)
        return list
    }

    public func latestVersion(ofApp appId: String) async throws -> AppRecord {
        try Identifier.validate(appId, as: .app)
        let resource = "app \(appId)"
        let records = try await versions(ofApp: appId, resource: resource)
        guard let latest = records.first else {
            throw PlatformError.notFound(resource: resource, message: "no published version")
        }
        return latest
    }

    public func app(_ appId: String, version versionId: String) async throws -> AppRecord {
        try Identifier.validate(appId, as: .app)
        try Identifier.validate(versionId, as: .version)
        let resource = "version \(versionId) of app \(appId)"
        let records: [AppRecord]
        do {
            records = try await versions(ofApp: appId, resource: resource)
        } catch PlatformError.notFound {
            records = []
        }
        if let match = records.first(where: { $0.version.versionId == versionId }) { return match }
        // The list names only the latest version; an older one exists when its file manifest does.
        _ = try await fileManifest(appId: appId, versionId: versionId)
        var record = records.first ?? AppRecord(id: appId, version: AppVersion(versionId: versionId))
        record.version = AppVersion(versionId: versionId, versionTag: nil)
        return record
    }

    public func fileManifest(appId: String, versionId: String) async throws -> FileManifest {
        try Identifier.validate(appId, as: .app)
        try Identifier.validate(versionId, as: .version)
        let resource = "the file manifest of version \(versionId) of app \(appId)"
        let answer = try await get(path: versionPath(appId: appId, versionId: versionId, endpoint: "manifest"), resource: resource)
        var manifest = try decode(FileManifest.self, from: answer, resource: resource)
        if let signature = answer.headers.first(name: "Signature")?.trimmingCharacters(in: .whitespaces), !signature.isEmpty {
            manifest.signature = signature
        }
        return manifest
    }

    public func metadata(appId: String, versionId: String, language: String) async throws -> BundleManifest {
        try Identifier.validate(appId, as: .app)
        try Identifier.validate(versionId, as: .version)
        guard ManifestLocalizer.isValidLanguage(language) else {
            throw ConfigurationError.invalidValue(setting: "language", source: "the caller", value: language, expected: "use a language code such as en, ja-JP or default")
        }
        let resource = "the metadata of version \(versionId) of app \(appId)"
        let answer = try await get(
            path: versionPath(appId: appId, versionId: versionId, endpoint: "metadata"),
            query: [("lang", language)], resource: resource
        )
        return try decode(MetadataEnvelope.self, from: answer, resource: resource).manifest
    }

    public func publicKey(id: String) async throws -> PublicKeyRecord {
        try Identifier.validate(id, as: .key)
        let resource = "public key \(id)"
        let answer = try await get(path: "keys/\(id)", resource: resource)
        let record = try decode(PublicKeyRecord.self, from: answer, resource: resource)
        guard record.id == id else {
            throw PlatformError.invalidResponse(resource: resource, reason: "it names key '\(Sanitizer.printable(record.id, limit: 80))' instead")
        }
        return record
    }

    public func previewCode(token: String) async throws -> PreviewCode {
        try Identifier.validate(token, as: .previewToken)
        let resource = "preview code \(token)"
        let answer = try await get(path: "host/\(projectId)/preview-codes/\(token)", resource: resource)
        return try decode(PreviewCode.self, from: answer, resource: resource)
    }

    // MARK: Helpers

    private func versions(ofApp appId: String, resource: String) async throws -> [AppRecord] {
        let answer = try await get(
            path: "host/\(projectId)/miniapps/\(preview ? "preview" : "")",
            query: [("miniAppId", appId)], resource: resource
        )
        let records = try decodeRecords(answer, resource: resource, requireOne: true)
        if let stranger = records.first(where: { $0.id != appId }) {
            throw PlatformError.invalidResponse(resource: resource, reason: "it lists app '\(stranger.id)' instead")
        }
        return records
    }

    private func versionPath(appId: String, versionId: String, endpoint: String) -> String {
        "host/\(projectId)/miniapp/\(appId)/version/\(versionId)/\(preview ? "preview/" : "")\(endpoint)"
    }

    /// Decodes an array of app records, dropping malformed elements unless every element is malformed.
    /// Read in one pass by ``AppRecord/listElements(_:)``; a document that reader does not take goes
    /// through Foundation's decoder, whose records or error are the same.
    private func decodeRecords(_ answer: HTTPAnswer, resource: String, requireOne: Bool) throws -> [AppRecord] {
        var elements = try AppRecord.listElements(answer.body) ?? decode([LenientElement<AppRecord>].self, from: answer, resource: resource).map(\.value)
        let (count, firstIsMalformed) = (elements.count, elements.first.map { $0 == nil } ?? false)
        // The records are moved out, not copied: `compactMap` retained and released every string of
        // every record (about 5% of a 10,000-app `list`).
        var records: [AppRecord] = []
        records.reserveCapacity(count)
        while let element = elements.popLast() {
            if let record = element { records.append(record) }
        }
        records.reverse()
        try checkDropped(kept: records.count, of: count, firstIsMalformed: firstIsMalformed, resource: resource, requireOne: requireOne)
        return records
    }

    /// Fails when no record was kept of a list that had some (or the first when `requireOne`), else
    /// logs how many were dropped.
    private func checkDropped(kept: Int, of count: Int, firstIsMalformed: Bool, resource: String, requireOne: Bool) throws {
        guard kept < count else { return }
        if kept == 0 || (requireOne && firstIsMalformed) {
            throw PlatformError.invalidResponse(resource: resource, reason: "an app record lacks a valid id or version")
        }
        logger.warning("dropped malformed app records", metadata: ["count": "\(count - kept)"])
    }

    private func decode<T: Decodable>(_ type: T.Type, from answer: HTTPAnswer, resource: String) throws(PlatformError) -> T {
        do {
            return try JSONDecoder().decode(type, from: answer.body)
        } catch let error as DecodingError {
            throw .invalidResponse(resource: resource, reason: Self.explain(error))
        } catch {
            throw .invalidResponse(resource: resource, reason: "it is not the expected JSON")
        }
    }

    private static func explain(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let components = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return components.isEmpty ? "the document" : String(components.drop(while: { $0 == "." }))
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "it is not JSON"
        case .dataCorrupted(let context):
            return "\(path(context)) is malformed (\(context.debugDescription))"
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return "'\(key.stringValue)' is missing\(parent)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)) has the wrong type"
        @unknown default:
            return "it is not the expected JSON"
        }
    }
}

/// The `{"bundleManifest": {...}}` envelope of the metadata endpoint (also spelled `metadata`).
private struct MetadataEnvelope: Decodable {
    let manifest: BundleManifest

    private enum CodingKeys: String, CodingKey { case bundleManifest, metadata }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        manifest = try container.decodeIfPresent(BundleManifest.self, forKey: .bundleManifest)
            ?? container.decode(BundleManifest.self, forKey: .metadata)
    }
}

/// One element of a list that may be malformed without failing the whole list.
private struct LenientElement<Value: Decodable>: Decodable {
    let value: Value?

    init(from decoder: any Decoder) throws {
        value = try? Value(from: decoder)
    }
}
