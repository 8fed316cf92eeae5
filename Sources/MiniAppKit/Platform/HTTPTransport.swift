import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import MiniAppCore
import NIOConcurrencyHelpers
import NIOPosix

/// One request as ``HTTPTransport`` sends it; ``RequestPolicy`` makes it and decides what follows
/// its answer.
struct HTTPRequest: Sendable {
    var method: HTTPMethod
    /// The absolute URL, as it goes on the wire.
    var url: String
    /// Every header but `Host`: ``RequestPolicy/commonHeaders`` first, then the request's own.
    var headers: HTTPHeaders
    /// Where the request goes on a connection of its own, when its sender knows already (the platform
    /// client resolves its base URL once); otherwise ``HTTPTransport`` reads it from ``url``.
    var direct: (endpoint: DirectEndpoint, target: String)?
    /// Whether a transport that makes a connection per request may use one for this request: delta
    /// downloads' ranged requests, several at once and read piece by piece, stay on the pooled way.
    var mayUseOwnConnection = true

    /// A request for `url` carrying ``RequestPolicy/commonHeaders`` and then `headers`.
    init(_ method: HTTPMethod = .GET, url: String, headers: HTTPHeaders = [:], direct: (endpoint: DirectEndpoint, target: String)? = nil) {
        self.method = method
        self.url = url
        self.headers = RequestPolicy.commonHeaders
        self.headers.add(contentsOf: headers)
        self.direct = direct
    }
}

/// An answer whose body is still to be read, from either of ``HTTPTransport``'s two ways.
struct HTTPResponse: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: Body

    /// Where the body is read from.
    enum Body: Sendable {
        /// AsyncHTTPClient's stream.
        case pooled(HTTPClientResponse.Body)
        /// A connection of its own, read with blocking calls; the canceller wakes a read in progress.
        case direct(DirectResponse, SocketCanceller)
    }

    /// Closes a connection of its own (AsyncHTTPClient ends its own when its body is dropped).
    func close() {
        if case .direct(let response, _) = body { response.close() }
    }

    /// Hands each part of the body to `handle` as it comes: AsyncHTTPClient's chunks, or buffers read
    /// from a connection of its own on `executor`'s pool, one at a time.
    func forEachChunk(executor: BlockingExecutor, _ handle: (ByteBuffer) async throws -> Void) async throws {
        switch body {
        case .pooled(let body):
            for try await chunk in body { try await handle(chunk) }
        case .direct(let response, let canceller):
            while let chunk = try await withTaskCancellationHandler(operation: {
                try await executor.run { try response.nextChunk(bufferBytes: 64 << 10) }
            }, onCancel: { canceller.cancel() }) {
                try await handle(chunk)
            }
        }
    }
}

extension HTTPResponse {
    /// Thrown inside a direct read to stop it once the body is longer than wanted.
    private struct TooLong: Error {}

    /// The whole body, or `nil` when it is longer than `limit` bytes (reading stops at the first byte
    /// past it). A connection of its own is read to its end in one call on a thread of `executor`'s
    /// own (a slow answer must not hold one of its pool's), so the whole answer is decoded on one thread.
    func collect(upTo limit: Int, executor: BlockingExecutor) async throws -> [UInt8]? {
        switch body {
        case .pooled(let body):
            var bytes: [UInt8] = []
            for try await chunk in body {
                guard bytes.count + chunk.readableBytes <= limit else { return nil }
                bytes.append(contentsOf: chunk.readableBytesView)
            }
            return bytes
        case .direct(let response, let canceller):
            return try await withTaskCancellationHandler(operation: {
                try await executor.runOnOwnThread(name: "miniapp.fetch") { () throws -> [UInt8]? in
                    var bytes: [UInt8] = []
                    do {
                        try response.streamBody(chunkBytes: 64 << 10) { chunk in
                            guard bytes.count + chunk.readableBytes <= limit else { throw TooLong() }
                            bytes.append(contentsOf: chunk.readableBytesView)
                        }
                    } catch is TooLong {
                        return nil
                    }
                    return bytes
                }
            }, onCancel: { canceller.cancel() })
        }
    }
}

/// How requests reach the network: the one seam between ``RequestPolicy`` and the wire, with its two
/// ways, chosen once when it is made (``PlatformConnections``).
///
/// - Pooled: AsyncHTTPClient (``LazyHTTPClient``), whose connections are kept and reused; the host's
///   own `HTTPClient` when it gives one.
/// - One connection per request: a plain `http://` GET made and read with blocking calls
///   (``DirectHTTP``) on a thread of the executor's own, for a short-lived process. Never on its pool:
///   a request may wait as long as its read timeout, and short work would queue behind it.
///
/// Both hand every answer to NIO's HTTP/1 decoder and hold its framing to
/// ``DirectHTTP/framing(status:headers:)``.
final class HTTPTransport: Sendable {
    let network: NetworkSettings
    let executor: BlockingExecutor
    /// Whether plain `http://` GETs go on connections of their own.
    let perRequest: Bool
    private let pooled: LazyHTTPClient

    /// A transport with `network`'s timeouts; `httpClient`, when given, is the host's (used as it is,
    /// never shut down here, and then every request goes through it).
    init(network: NetworkSettings, httpClient: HTTPClient?, executor: BlockingExecutor, connections: PlatformConnections) {
        self.network = network
        self.executor = executor
        if httpClient == nil, case .perRequest = connections {
            perRequest = true
        } else {
            perRequest = false
        }
        pooled = LazyHTTPClient(shared: httpClient, connectTimeout: network.connectTimeout.timeAmount) {
            HTTPClient.Configuration(
                // Redirects are ``RequestPolicy``'s: followed for zips, never for platform requests (they carry the key).
                redirectConfiguration: .disallow,
                timeout: .init(connect: network.connectTimeout.timeAmount, read: network.readTimeout.timeAmount)
            )
        }
    }

    /// Where `request` goes on a connection of its own, or `nil` for the pooled way.
    private func direct(_ request: HTTPRequest) -> (endpoint: DirectEndpoint, target: String)? {
        guard perRequest, request.mayUseOwnConnection, request.method == .GET else { return nil }
        if let direct = request.direct { return direct }
        return URL(string: request.url).flatMap(DirectEndpoint.resource)
    }

    /// Sends `request` and reads its whole answer, refusing more than ``NetworkSettings/maxResponseBytes``.
    /// A connection that cannot be made at all throws ``ConnectionFailure``.
    func fetch(_ request: HTTPRequest, deadline: ContinuousClock.Instant) async throws -> HTTPAnswer {
        if let (endpoint, target) = direct(request) {
            let canceller = SocketCanceller()
            let (headers, network) = (request.headers, network)
            return try await withTaskCancellationHandler {
                try await executor.runOnOwnThread(name: "miniapp.fetch") {
                    try DirectHTTP.get(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
                }
            } onCancel: {
                canceller.cancel()
            }
        }
        let response = try await pooled.execute(clientRequest(request), deadline: nioDeadline(deadline))
        let body = try await response.body.collect(upTo: network.maxResponseBytes)
        return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
    }

    /// Sends `request` and reads the head of its answer, leaving the body to be read.
    func open(_ request: HTTPRequest, deadline: ContinuousClock.Instant) async throws -> HTTPResponse {
        if let (endpoint, target) = direct(request) {
            let canceller = SocketCanceller()
            let (headers, network, executor) = (request.headers, network, executor)
            let body: @Sendable () throws -> DirectResponse = {
                try DirectHTTP.open(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
            }
            let response = try await withTaskCancellationHandler {
                try await executor.runOnOwnThread(name: "miniapp.fetch", body)
            } onCancel: {
                canceller.cancel()
            }
            return HTTPResponse(status: response.status, headers: response.headers, body: .direct(response, canceller))
        }
        let response = try await pooled.execute(clientRequest(request), deadline: nioDeadline(deadline))
        return HTTPResponse(status: Int(response.status.code), headers: response.headers, body: .pooled(response.body))
    }

    /// Closes the pooled way's client, if it was made here.
    func shutdown() async throws {
        try await pooled.shutdown()
    }

    private func clientRequest(_ request: HTTPRequest) -> HTTPClientRequest {
        var made = HTTPClientRequest(url: request.url)
        made.method = request.method
        made.headers = request.headers
        return made
    }

    private func nioDeadline(_ deadline: ContinuousClock.Instant) throws -> NIODeadline {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw HTTPClientError.deadlineExceeded }
        return .now() + remaining.timeAmount
    }
}

/// An `HTTPClient` made on first use, on event loops of its own made with it, and shut down with them
/// only if it was made. Its configuration is made on first use too (AsyncHTTPClient's takes 0.1 ms to
/// build), so a command answered from the cache pays nothing for the network, and no event loop runs
/// before a pooled request.
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
    private let box = NIOLockedValueBox<(client: HTTPClient, group: MultiThreadedEventLoopGroup)?>(nil)
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
            if let made { return made.client }
            let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
            let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: makeConfiguration())
            made = (client, group)
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
                    try await target.probe(on: client.eventLoopGroup, timeout: timeout)
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
        guard let made else { return }
        try await made.client.shutdown()
        try await made.group.shutdownGracefully()
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
    func probe(on group: any EventLoopGroup, timeout: TimeAmount) async throws {
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
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

extension Duration {
    /// The duration as a NIO `TimeAmount`.
    var timeAmount: TimeAmount { .nanoseconds(nanoseconds) }
}
