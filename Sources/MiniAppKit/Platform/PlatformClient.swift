public import AsyncHTTPClient
public import Foundation
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
public import MiniAppCore

/// A client for a remote platform API over HTTP, with retries, timeouts and lenient decoding.
///
/// Create one per configuration (``Platforms/open(_:httpClient:executor:connections:logger:)`` picks it
/// for a remote platform) and call ``shutdown()`` when done.
public final class PlatformClient: PlatformAPI {
    /// The base URL, ending with `/`.
    public let baseURL: URL
    /// The host project id.
    public let projectId: String
    /// Whether requests go to the preview paths.
    public let preview: Bool
    let subscriptionKey: String?
    let network: NetworkSettings
    let logger: Logger
    let httpConnections: LazyHTTPClient
    /// Where blocking work runs: the app list's reading, and plain `http://` requests on connections of
    /// their own (``PlatformConnections/perRequest``).
    let executor: BlockingExecutor
    /// Where plain `http://` requests go on connections of their own (``PlatformConnections/perRequest``).
    let direct: DirectEndpoint?

    /// A client for the platform at `baseURL`.
    ///
    /// By default it makes its own `HTTPClient` on NIO's shared event loops, which ``shutdown()`` closes.
    /// A host may give its own `httpClient` (its event loops, TLS, proxy, tracing), which stays the
    /// host's to shut down; it should not follow redirects (`redirectConfiguration: .disallow`), since
    /// the subscription key travels in a header that a redirect to another origin would carry along.
    /// A short-lived process may ask for `connections: .perRequest` (see ``PlatformConnections``), whose
    /// requests run on `executor`.
    public init(
        baseURL: URL, projectId: String, subscriptionKey: String? = nil, preview: Bool = false,
        network: NetworkSettings = NetworkSettings(), httpClient: HTTPClient? = nil, executor: BlockingExecutor, connections: PlatformConnections = .pooled,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.baseURL = baseURL.absoluteString.hasSuffix("/") ? baseURL : baseURL.appendingPathComponent("")
        self.projectId = projectId
        self.subscriptionKey = subscriptionKey.flatMap { $0.isEmpty ? nil : $0 }
        self.preview = preview
        self.network = network
        self.logger = logger
        self.executor = executor
        if httpClient == nil, case .perRequest = connections, let endpoint = DirectEndpoint(baseURL: self.baseURL) {
            self.direct = endpoint
        } else {
            self.direct = nil
        }
        self.httpConnections = LazyHTTPClient(shared: httpClient, connectTimeout: network.connectTimeout.timeAmount) {
            HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(connect: network.connectTimeout.timeAmount, read: network.readTimeout.timeAmount)
            )
        }
    }

    /// A client for the remote platform that `configuration` names.
    public convenience init(
        configuration: MiniAppConfiguration, httpClient: HTTPClient? = nil, executor: BlockingExecutor, connections: PlatformConnections = .pooled,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(ConfigurationError) {
        switch configuration.platform {
        case nil:
            throw .missingPlatform
        case .registry?:
            throw .invalidValue(setting: "platform", source: "the configuration", value: configuration.platform?.description ?? "", expected: "PlatformClient needs an http:// or https:// URL; use Platforms.open for a registry directory")
        case .remote(let url)?:
            guard let projectId = configuration.projectId else { throw .missingProjectId }
            self.init(baseURL: url, projectId: projectId, subscriptionKey: configuration.subscriptionKey,
                      preview: configuration.preview, network: configuration.network, httpClient: httpClient,
                      executor: executor, connections: connections, logger: logger)
        }
    }

    /// Closes the client's connections; call it once, when done.
    public func shutdown() async throws {
        try await httpConnections.shutdown()
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

/// An `HTTPClient` made on first use and shut down only if it was made. Its configuration is made on
/// first use too (AsyncHTTPClient's takes 0.1 ms to build), so a command answered from the cache pays
/// nothing for the network.
///
/// Its ``execute(_:deadline:)`` fails within ``probeDelay`` when a host refuses connections:
/// AsyncHTTPClient itself keeps retrying a refused connection until the connect timeout
/// (swift-server/async-http-client#743), so the first request to a host, and the next one after a
/// failure, race a plain TCP connect started once the request has run that long.
final class LazyHTTPClient: Sendable {
    private let makeConfiguration: @Sendable () -> HTTPClient.Configuration
    private let connectTimeout: TimeAmount
    /// The host's client, when it gave one: used as it is, and never shut down here.
    private let shared: HTTPClient?
    private let box = NIOLockedValueBox<HTTPClient?>(nil)
    /// Hosts (`host:port`) that answered in this process, so later requests skip the probe.
    private static let reached = NIOLockedValueBox<Set<String>>([])
    /// How long the first request to a host runs before the plain TCP connect races it.
    static let probeDelay = Duration.milliseconds(25)

    /// A client made when first needed with `configuration`, or `shared` when given.
    init(shared: HTTPClient? = nil, connectTimeout: TimeAmount, configuration: @escaping @Sendable () -> HTTPClient.Configuration) {
        self.shared = shared
        self.connectTimeout = connectTimeout
        self.makeConfiguration = configuration
    }

    /// The client, made now if it does not exist yet.
    private var client: HTTPClient {
        if let shared { return shared }
        return box.withLockedValue { made in
            if let made { return made }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: makeConfiguration())
            made = client
            return client
        }
    }

    /// Sends `request`; throws ``ConnectionFailure`` as soon as its host refuses connections, cannot be
    /// resolved or cannot be routed to, and ``DirectHTTPError/malformed(_:)`` for an answer framed
    /// against the rules of ``DirectHTTP/framing(status:headers:)``.
    func execute(_ request: HTTPClientRequest, deadline: NIODeadline) async throws -> HTTPClientResponse {
        let response = try await send(request, deadline: deadline)
        // AsyncHTTPClient's decoder takes codings before `chunked` (`gzip, chunked`) and hands the body
        // over still coded, as if plain: the answer is held to the rules of a connection of our own.
        _ = try DirectHTTP.framing(status: Int(response.status.code), headers: response.headers)
        return response
    }

    /// Sends `request` (see ``execute(_:deadline:)``), the answer's framing unchecked.
    private func send(_ request: HTTPClientRequest, deadline: NIODeadline) async throws -> HTTPClientResponse {
        let client = self.client
        guard let target = URL(string: request.url).flatMap(ProbeTarget.init), !Self.reached.withLockedValue({ $0.contains(target.key) }) else {
            return try await client.execute(request, deadline: deadline, logger: nil)
        }
        let timeout = connectTimeout
        do {
            let response = try await withThrowingTaskGroup(of: HTTPClientResponse?.self) { group in
                group.addTask { try await client.execute(request, deadline: deadline, logger: nil) }
                group.addTask {
                    // Only when the answer is slow to come: a refused connection is still known within
                    // ``probeDelay``, and a quick answer (most of them) costs no second connection (about
                    // 1.2 ms of a one-app `list`, release, 41 interleaved runs).
                    try await Task.sleep(for: Self.probeDelay)
                    try await target.probe(timeout: timeout)
                    return nil
                }
                while let next = try await group.next() {
                    if let response = next {
                        group.cancelAll()
                        return response
                    }
                }
                throw CancellationError()
            }
            Self.reached.withLockedValue { _ = $0.insert(target.key) }
            return response
        } catch {
            Self.reached.withLockedValue { _ = $0.remove(target.key) }
            throw error
        }
    }

    /// Forgets that `key` (`host:port`) answered, so that the next request to it probes again: for
    /// tests whose closed port another test's server held earlier in the same process.
    static func forget(_ key: String) {
        _ = reached.withLockedValue { $0.remove(key) }
    }

    /// Shuts the client down, if it was made here.
    func shutdown() async throws {
        let made = box.withLockedValue { made in
            defer { made = nil }
            return made
        }
        try await made?.shutdown()
    }
}

/// A host that cannot be connected to at all; never worth a retry.
struct ConnectionFailure: Error, CustomStringConvertible {
    var description: String
}

/// The host and port a request connects to, and a TCP connect to them.
private struct ProbeTarget {
    var host: String
    var port: Int
    var key: String { "\(host):\(port)" }

    init?(_ url: URL) {
        guard let host = url.host, !host.isEmpty else { return nil }
        switch url.scheme?.lowercased() {
        case "http"?: port = url.port ?? 80
        case "https"?: port = url.port ?? 443
        default: return nil
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// Connects and closes; throws only when the failure is certain (refused, unresolvable,
    /// unroutable); a slow host is left to the request's own timeouts.
    func probe(timeout: TimeAmount) async throws {
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .connect(host: host, port: port).get()
        } catch let error as NIOConnectionError {
            let codes = error.connectionErrors.compactMap { ($0.error as? IOError)?.errnoCode }
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                throw ConnectionFailure(description: "the host name \(host) does not resolve")
            }
            if !codes.isEmpty, codes.count == error.connectionErrors.count, codes.allSatisfy({ [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains($0) }) {
                throw ConnectionFailure(description: codes.contains(ECONNREFUSED) ? "connection refused by \(key)" : "no route to \(key)")
            }
            return
        } catch {
            return
        }
        try? await channel.close()
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

extension Duration {
    /// The duration as a NIO `TimeAmount`.
    var timeAmount: TimeAmount { .nanoseconds(nanoseconds) }
}
