public import Foundation
internal import CDispatch
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
public import MiniAppCore
import ServiceLifecycle
import UnixSignals

/// The limits that keep a server on a public address answering: slow and stalled clients are cut off,
/// and a stop is bounded.
public struct ServerLimits: Sendable, Equatable {
    /// How long a connection may go without a complete request head: a client has this long to send
    /// its first request's header (a slowloris never gets further), and a keep-alive connection this
    /// long between requests.
    public var idleTimeout: Duration
    /// The most connections open at once; more wait in the listen backlog.
    public var maxConnections: Int
    /// How long a graceful stop (SIGINT, SIGTERM) lets requests in flight finish before closing what
    /// is left.
    public var shutdownGrace: Duration
    /// How long a connection may take no bytes of an answer being sent (a client that stops reading a
    /// download) before it is closed.
    public var sendTimeout: Duration

    public init(idleTimeout: Duration = .seconds(10), maxConnections: Int = 1000, shutdownGrace: Duration = .seconds(5), sendTimeout: Duration = .seconds(30)) {
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.shutdownGrace = shutdownGrace
        self.sendTimeout = sendTimeout
    }
}

/// Closes a connection whose answer has not moved for a while: the socket stayed full (not writable)
/// for the whole send timeout, because the client stopped reading.
/// It only watches writability: every read passes through untouched (never unwrapped).
final class SendTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any

    private let timeout: TimeAmount
    private var scheduled: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            scheduled?.cancel()
            scheduled = nil
        } else if scheduled == nil {
            let channel = context.channel
            scheduled = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        scheduled?.cancel()
        scheduled = nil
    }
}

/// Serves a registry directory over the platform API of platform-api.md, with Hummingbird.
///
/// The registry is read on every request, so a version published while the server runs appears at
/// once. Zips are streamed from disk with `Content-Length`, `ETag` and `Range` support and never
/// need the subscription key; every JSON endpoint does when one is set.
public struct RegistryServer: Sendable {
    public var registry: Registry
    public var host: String
    public var port: Int
    /// The only project id answered for; any when `nil`.
    public var projectId: String?
    /// The key every JSON request must carry as `apiKey: ras-<key>`; none when `nil`.
    public var subscriptionKey: String?
    /// Called with one line per request (method, path, status, bytes, time), for a request log; the
    /// subscription key never appears in it.
    public var requestLog: (@Sendable (String) -> Void)?
    /// The base URL clients reach the server at (behind a proxy or CDN), for the zip URLs of file
    /// manifests. Without one, they are built from the request's `Host` header when it is a valid
    /// `host[:port]`, else from the address the server listens on.
    public var publicURL: URL?
    /// Timeouts, the connection limit and the graceful stop's bound.
    public var limits: ServerLimits
    /// Where the registry's files are read and its lists made; it stays the caller's to shut down.
    public var executor: BlockingExecutor
    /// When the registry keeps a TUF repository: the online key(s) the root lists for the timestamp
    /// alone, with which the server signs the timestamp again once half its lifetime has passed.
    package var tufTimestampSigners: [TUFSigner] = []

    /// A server for `registry` on `host:port` (port 0 picks a free one), reading its files on `executor`.
    public init(
        registry: Registry, executor: BlockingExecutor, host: String = "127.0.0.1", port: Int = 0, projectId: String? = nil,
        subscriptionKey: String? = nil, publicURL: URL? = nil, limits: ServerLimits = ServerLimits(), requestLog: (@Sendable (String) -> Void)? = nil
    ) {
        self.limits = limits
        self.executor = executor
        self.registry = registry
        self.host = host
        self.port = port
        self.projectId = projectId
        self.subscriptionKey = subscriptionKey.flatMap { $0.isEmpty ? nil : $0 }
        self.publicURL = publicURL
        self.requestLog = requestLog
    }

    /// Serves until SIGINT or SIGTERM (or cancellation), calling `onListening` with the base URL once
    /// bound. A signal stops accepting connections, lets requests in flight finish for
    /// ``ServerLimits/shutdownGrace``, then closes what is left and returns.
    public func run(onListening: @escaping @Sendable (URL) async -> Void = { _ in }) async throws {
        guard registry.exists else { throw RegistryError.notARegistry(path: registry.root, reason: "it has no \(Registry.marker)") }
        let resigner = try startTimestampSigning()
        defer { resigner?.cancel() }
        let bound = NIOLockedValueBox(port)
        let responder = RegistryResponder(server: self, files: FileIO(threadPool: executor.threadPool), listings: ListingCache(executor: executor), boundPort: bound)
        let host = self.host
        func amount(_ duration: Duration) -> TimeAmount {
            .nanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
        }
        let send = amount(limits.sendTimeout)
        let application = Application(
            responder: responder,
            server: .http1(configuration: HTTP1Channel.Configuration(additionalChannelHandlers: [SendTimeoutHandler(timeout: send)], idleTimeout: amount(limits.idleTimeout))),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: "\(PackageInfo.name)/\(PackageInfo.version)",
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections)
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                bound.withLockedValue { $0 = port }
                let shown = host.contains(":") ? "[\(host)]" : host
                await onListening(URL(string: "http://\(shown):\(port)/")!)
            },
            logger: Logger(label: "miniapp.serve", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let logger = Logger(label: "miniapp.serve", factory: { _ in SwiftLogNoOpLogHandler() })
        var configuration = ServiceGroupConfiguration(services: [.init(service: application)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // A client stalling a download would hold a graceful stop forever: after the grace, what is
        // left is cancelled (its connections closed), and a second later the group returns regardless.
        configuration.maximumGracefulShutdownDuration = limits.shutdownGrace
        configuration.maximumCancellationDuration = Duration.seconds(1)
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch is CancellationError {
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EACCES {
            throw RegistryError.cannotListen(host: host, port: port, reason: String(cString: strerror(error.errnoCode)))
        }
    }
}

/// Answers every request of the platform API from the registry.
struct RegistryResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let server: RegistryServer
    let files: FileIO
    let listings: ListingCache
    /// The port the server listens on (known once bound, for `--port 0`).
    let boundPort: NIOLockedValueBox<Int>

    var registry: Registry { server.registry }

    func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await route(request, context: context)
        } catch {
            response = Self.error(.internalServerError, "the registry could not answer")
        }
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        if let log = server.requestLog {
            let elapsed = ContinuousClock.now - start
            let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
            let bytes = request.method == .head ? "0" : (response.headers[.contentLength] ?? "-")
            log("\(request.method) \(request.uri.path) \(response.status.code) \(bytes)B \(String(format: "%.1f", milliseconds))ms")
        }
        return response
    }

    /// Registry reads (files and JSON decoding, blocking calls) run on NIO's thread pool, never on the
    /// task that answers (but for the generation file, see ``listing(preview:)``), and the list of
    /// every app is made on a thread of its own (``ListingCache``):
    /// reading the registry on Swift's cooperative pool let two list requests stall every other
    /// request of a 10,000-app registry for about a second, each time the cached list expired.
    private func route(_ request: Request, context: BasicRequestContext) async throws -> Response {
        guard request.method == .get || request.method == .head else {
            return Self.error(.methodNotAllowed, "only GET and HEAD are served")
        }
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        if segments.count == 4, segments[0] == "files", segments[1].hasPrefix("min-"), segments[2].hasPrefix("ver-"), segments[3] == "bundle.zip" {
            return try await zip(appId: String(segments[1].dropFirst(4)), versionId: String(segments[2].dropFirst(4)), request: request, context: context)
        }
        // The TUF repository's files, as any static server serves them: public, like the zips.
        if segments.count >= 3, segments[0] == "tuf", segments[1] == "metadata" || segments[1] == "targets" {
            return try await tufFile(segments, request: request, context: context)
        }
        if let key = server.subscriptionKey {
            let given = request.headers[HTTPField.Name("apiKey")!] ?? ""
            if Self.bare(given) != Self.bare(key) {
                return Self.json(.unauthorized, ["error": "invalid_client", "error_description": "missing or invalid apiKey"])
            }
        }
        if let preview = Self.listKind(segments, projectId: server.projectId) {
            guard let appId = request.uri.queryParameters["miniAppId"].map(String.init) else { return try await listing(preview: preview) }
            return try await server.executor.run { self.latest(of: appId, preview: preview) }
        }
        return try await server.executor.run { self.answer(segments, request: request) }
    }

    /// Whether `segments` ask for the list of every app (`host/<project>/miniapps`, or `.../preview`
    /// for the preview list) of this server's project; `nil` for any other path.
    static func listKind(_ segments: [String], projectId: String?) -> Bool? {
        guard segments.count == 3 || segments.count == 4, segments[0] == "host", segments[2] == "miniapps",
              projectId.map({ $0 == segments[1] }) ?? true else { return nil }
        if segments.count == 3 { return false }
        return segments[3] == "preview" ? true : nil
    }

    /// The list of every app, from ``ListingCache``.
    private func listing(preview: Bool) async throws -> Response {
        let registry = self.registry
        // The one registry read made here: a file of one line, read on every list request. Sending it to
        // the thread pool cost 15% of `serve`'s list requests per second.
        let stamp = registry.generation
        let server = self.server
        let listing = await listings.listing(preview: preview, stamp: stamp) {
            // The id of an app is its folder's name: a record naming another is left out, and said.
            for planted in registry.plantedApps() {
                server.requestLog?("skipped apps/\(planted.folder)/app.json: it names app '\(Sanitizer.printable(planted.names, limit: 80))', not its folder's name")
            }
            return Self.encode(registry.listing(preview: preview))
        }
        return Self.json(.ok, body: listing.body, etag: listing.etag)
    }

    /// The answer to a JSON request other than the app lists (``listKind(_:projectId:)``): blocking
    /// reads, for a thread pool's thread.
    private func answer(_ segments: [String], request: Request) -> Response {
        if segments.count == 2, segments[0] == "keys" {
            guard let key = registry.key(segments[1]) else { return Self.error(.notFound, "no key \(segments[1])") }
            return Self.json(.ok, key)
        }
        guard segments.count >= 3, segments[0] == "host" else { return Self.error(.notFound, "no such endpoint") }
        if let projectId = server.projectId, segments[1] != projectId {
            return Self.error(.notFound, "unknown host project \(segments[1])")
        }
        let rest = Array(segments.dropFirst(2))
        switch rest.count {
        case 2 where rest[0] == "preview-codes":
            return previewCode(rest[1])
        case 5 where rest[0] == "miniapp" && rest[2] == "version":
            return versionEndpoint(appId: rest[1], versionId: rest[3], preview: false, endpoint: rest[4], request: request)
        case 6 where rest[0] == "miniapp" && rest[2] == "version" && rest[4] == "preview":
            return versionEndpoint(appId: rest[1], versionId: rest[3], preview: true, endpoint: rest[5], request: request)
        default:
            return Self.error(.notFound, "no such endpoint")
        }
    }

    /// The app list asked with `?miniAppId=`: the record of that app's latest version, or none.
    private func latest(of appId: String, preview: Bool) -> Response {
        guard let app = registry.app(appId), let latest = registry.versions(of: appId, preview: preview).first else {
            return Self.json(.ok, [AppRecord]())
        }
        return Self.json(.ok, [registry.record(app, latest)])
    }

    private func versionEndpoint(appId: String, versionId: String, preview: Bool, endpoint: String, request: Request) -> Response {
        guard let version = registry.version(appId: appId, versionId: versionId), preview || !version.preview else {
            return Self.error(.notFound, "unknown app or version")
        }
        switch endpoint {
        case "manifest":
            let url = baseURL(for: request) + "files/min-\(appId)/ver-\(versionId)/bundle.zip"
            var response = Self.json(.ok, ManifestDocument(manifest: [url], publicKeyId: version.publicKeyId))
            response.headers[HTTPField.Name("Signature")!] = version.signature
            return response
        case "metadata":
            let language = request.uri.queryParameters["lang"].map(String.init) ?? "default"
            guard ManifestLocalizer.isValidLanguage(language) else { return Self.error(.badRequest, "invalid lang") }
            guard let manifest = try? registry.metadata(appId: appId, versionId: versionId, language: language) else {
                return Self.error(.internalServerError, "the version's manifest.json is unreadable")
            }
            return Self.json(.ok, ["bundleManifest": manifest])
        default:
            return Self.error(.notFound, "no such endpoint")
        }
    }

    /// The base of absolute URLs: the configured public URL, else the request's `Host` when it is a
    /// valid `host[:port]`, else the address the server listens on.
    private func baseURL(for request: Request) -> String {
        if let publicURL = server.publicURL {
            let text = publicURL.absoluteString
            return text.hasSuffix("/") ? text : text + "/"
        }
        if let authority = request.head.authority, Self.isValidAuthority(authority) { return "http://\(authority)/" }
        let host = server.host.contains(":") ? "[\(server.host)]" : server.host
        return "http://\(host):\(boundPort.withLockedValue { $0 })/"
    }

    /// Whether `authority` is a host name, an IPv4 address or a bracketed IPv6 address, with an
    /// optional port: nothing else (no user info, path, query or spaces) may go into a URL.
    static func isValidAuthority(_ authority: String) -> Bool {
        var host = Substring(authority)
        var port: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let inside = host[host.index(after: host.startIndex)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
            let after = host[host.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return false }
                port = after.dropFirst()
            }
            host = inside
        } else {
            if let colon = host.lastIndex(of: ":") {
                port = host[host.index(after: colon)...]
                host = host[..<colon]
            }
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            guard !host.isEmpty, host.utf8.count <= 253, labels.allSatisfy({ label in
                !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" }
            }) else { return false }
        }
        if let port {
            guard !port.isEmpty, port.count <= 5, port.allSatisfy(\.isASCII), let number = Int(port), (1...65535).contains(number) else { return false }
        }
        return true
    }

    private func previewCode(_ token: String) -> Response {
        guard let code = registry.previewCode(token), let app = registry.app(code.appId),
              let version = registry.version(appId: code.appId, versionId: code.versionId) else {
            return Self.error(.notFound, "unknown preview code")
        }
        let host: PreviewHost? = server.projectId.map { PreviewHost(id: $0, subscriptionKey: server.subscriptionKey) }
        return Self.json(.ok, PreviewDocument(miniapp: registry.record(app, version), host: host))
    }

    /// A file of the registry's TUF repository (`tuf/metadata/...`, `tuf/targets/...`), as it is on disk:
    /// only the registry's own regular files, never through a link. Every file but `timestamp.json` is
    /// named by its version or hash and never changes.
    private func tufFile(_ segments: [String], request: Request, context: BasicRequestContext) async throws -> Response {
        guard segments.allSatisfy({ $0 != "." && $0 != ".." && !$0.utf8.contains(0) }) else { return Self.error(.notFound, "no such file") }
        let path = registry.root + "/" + segments.joined(separator: "/")
        let registry = self.registry
        let size = try await server.executor.run { () -> Int? in
            guard registry.regularFile(path) else { return nil }
            let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var info = stat()
            return fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : nil
        }
        guard let size else { return Self.error(.notFound, "no such file") }
        let immutable = segments[1] == "targets" || segments.last != "timestamp.json"
        let headers: HTTPFields = [
            .contentType: segments[1] == "metadata" ? "application/json" : "application/octet-stream", .contentLength: "\(size)",
            .cacheControl: immutable ? "public, max-age=31536000, immutable" : "no-cache",
        ]
        if request.method == .head || size == 0 { return Response(status: .ok, headers: headers) }
        let body = try await files.loadFile(path: path, range: 0...(size - 1), context: context)
        return Response(status: .ok, headers: headers, body: body)
    }

    private func zip(appId: String, versionId: String, request: Request, context: BasicRequestContext) async throws -> Response {
        let registry = self.registry
        let found = try await server.executor.run { () -> (path: String, size: Int, sha256: String)? in
            guard let version = registry.version(appId: appId, versionId: versionId) else { return nil }
            let path = registry.bundlePath(appId: appId, versionId: versionId)
            // Only the registry's own regular files, never through a link: checked on the path, then on
            // the opened descriptor (a folder or a pipe in its place is not a zip either).
            guard registry.regularFile(path) else { return nil }
            let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            var info = stat()
            let opened = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
            close(descriptor)
            return opened ? (path, Int(info.st_size), version.sha256) : nil
        }
        guard let (path, size, sha256) = found else { return Self.error(.notFound, "no such bundle") }
        let etag = "\"\(sha256)\""
        // A version's zip never changes: its URL names the version, and its ETag is its SHA-256.
        var headers: HTTPFields = [
            .contentType: "application/zip", .acceptRanges: "bytes", .eTag: etag,
            .cacheControl: "public, max-age=31536000, immutable",
        ]
        var range: Range<Int> = 0..<size
        var status = HTTPResponse.Status.ok
        if let requested = request.headers[.range], request.headers[.ifRange].map({ $0 == etag }) ?? true {
            switch Self.parseRange(requested, size: size) {
            case .ignored:
                break
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(size)"
                headers[.contentLength] = "0"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .range(let requestedRange):
                range = requestedRange
                status = .partialContent
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
            case .ranges(let ranges):
                return multipart(ranges, path: path, size: size, headers: headers, request: request, context: context)
            }
        }
        headers[.contentLength] = "\(range.count)"
        if request.method == .head || range.isEmpty { return Response(status: status, headers: headers) }
        let body = try await files.loadFile(path: path, range: range.lowerBound...(range.upperBound - 1), context: context)
        return Response(status: status, headers: headers, body: body)
    }

    /// A `206` of several `ranges` of the zip at `path` (of `size` bytes) as one
    /// `multipart/byteranges` body (RFC 9110, 14.6 and appendix A), laid out as nginx does: each part
    /// is `CRLF --boundary CRLF Content-Type CRLF Content-Range CRLF CRLF bytes`, and the body ends
    /// with `CRLF --boundary-- CRLF`. The parts are streamed from the file one after the other, never
    /// held whole; `headers` are the zip's (ETag, caching), and a HEAD gets them only.
    private func multipart(
        _ ranges: [Range<Int>], path: String, size: Int, headers: HTTPFields, request: Request, context: BasicRequestContext
    ) -> Response {
        let boundary = Self.boundary()
        let type = headers[.contentType] ?? "application/zip"
        let heads = ranges.map { range in
            ByteBuffer(string: "\r\n--\(boundary)\r\nContent-Type: \(type)\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)\r\n\r\n")
        }
        let tail = ByteBuffer(string: "\r\n--\(boundary)--\r\n")
        let length = heads.reduce(tail.readableBytes) { $0 + $1.readableBytes } + ranges.reduce(0) { $0 + $1.count }
        var headers = headers
        headers[.contentType] = "multipart/byteranges; boundary=\(boundary)"
        headers[.contentLength] = "\(length)"
        if request.method == .head { return Response(status: .partialContent, headers: headers) }
        let body = ResponseBody(contentLength: length) { writer in
            // The zip is opened once for all the parts (a delta update asks for a thousand small ones),
            // and read on the thread pool a batch of up to 1 MiB at a time.
            let descriptor = try await server.executor.run { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
            guard descriptor >= 0 else { throw RegistryError.io(path: path, reason: String(cString: strerror(errno)), diskFull: false) }
            defer { close(descriptor) }
            for batch in Self.batches(of: ranges, upTo: 1 << 20) {
                let buffers = try await server.executor.run { try batch.map { try Self.read(descriptor, $0.span, path: path) } }
                for (piece, buffer) in Swift.zip(batch, buffers) {
                    if piece.startsPart { try await writer.write(heads[piece.part]) }
                    try await writer.write(buffer)
                }
            }
            try await writer.write(tail)
            try await writer.finish(nil)
        }
        return Response(status: .partialContent, headers: headers, body: body)
    }

    /// A stretch of one part of a multipart answer.
    struct Piece: Equatable {
        let part: Int
        let span: Range<Int>
        let startsPart: Bool
    }

    /// The parts' bytes cut into pieces of at most `limit` bytes, grouped so that a group holds at most
    /// `limit` bytes (or one piece).
    static func batches(of ranges: [Range<Int>], upTo limit: Int) -> [[Piece]] {
        var batches: [[Piece]] = []
        var current: [Piece] = []
        var bytes = 0
        for (part, range) in ranges.enumerated() {
            var start = range.lowerBound
            repeat {
                let end = min(range.upperBound, start + limit)
                if bytes + (end - start) > limit, !current.isEmpty {
                    batches.append(current)
                    current = []
                    bytes = 0
                }
                current.append(Piece(part: part, span: start..<end, startsPart: start == range.lowerBound))
                bytes += end - start
                start = end
            } while start < range.upperBound
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    /// The bytes of `span` of the open file (blocking: run it on the thread pool).
    static func read(_ descriptor: Int32, _ span: Range<Int>, path: String) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: span.count)
        var done = 0
        while done < span.count {
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: span.count - done) { target in
                pread(descriptor, target.baseAddress, span.count - done, off_t(span.lowerBound + done))
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw RegistryError.io(path: path, reason: count == 0 ? "the file ended early" : String(cString: strerror(errno)), diskFull: false) }
            done += count
        }
        return buffer
    }

    /// A new multipart boundary: 32 random hex digits, which no zip is likely to contain.
    static func boundary() -> String {
        (0..<2).map { _ in
            let digits = String(UInt64.random(in: .min ... .max), radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }

    /// What a `Range` header asks of a file of `size` bytes (RFC 9110, 14.2).
    enum RangeRequest: Equatable {
        /// Not a byte range request this server answers (another unit, bad syntax, more than
        /// ``maxRanges`` ranges): the whole file is sent, as the RFC allows.
        case ignored
        /// No byte range that is within the file (each starts past the end, or is empty).
        case unsatisfiable
        /// One byte range within the file.
        case range(Range<Int>)
        /// Two or more byte ranges within the file, each sent as a part of a `multipart/byteranges`
        /// answer: in the order asked, or sorted and merged when some overlap.
        case ranges([Range<Int>])
    }

    /// The most ranges one `Range` header may list; with more, it is ignored and the whole file sent
    /// (as nginx's `max_ranges`), so that no request makes the server cut a zip into countless parts.
    static let maxRanges = 200

    /// `bytes=` and a comma-separated list of `a-b`, `a-` or `-n` within a file of `size` bytes.
    /// Ranges past the end are dropped, and ends past it are clamped; one bad range, or more than
    /// ``maxRanges``, and the header is ignored.
    static func parseRange(_ value: String, size: Int) -> RangeRequest {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .ignored }
        // Empty list elements (`0-1,,5-9`) are allowed and skipped (RFC 9110, 5.6.1).
        let specs = trimmed.dropFirst(6).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !specs.isEmpty, specs.count <= maxRanges else { return .ignored }
        var ranges: [Range<Int>] = []
        for spec in specs {
            switch parseSpec(spec, size: size) {
            case .range(let range): ranges.append(range)
            case .unsatisfiable: continue
            case .ignored, .ranges: return .ignored
            }
        }
        let parts = coalesced(ranges)
        switch parts.count {
        case 0: return .unsatisfiable
        case 1: return .range(parts[0])
        default: return .ranges(parts)
        }
    }

    /// One `a-b`, `a-` or `-n` within a file of `size` bytes: `.range`, `.unsatisfiable` when it
    /// starts past the end (or asks for the last 0 bytes), `.ignored` when it is not a byte range.
    static func parseSpec(_ spec: String, size: Int) -> RangeRequest {
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .ignored }
        if parts[0].isEmpty {
            guard let suffix = number(parts[1]) else { return .ignored }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(max(size - suffix, 0)..<size)
        }
        guard let start = number(parts[0]) else { return .ignored }
        var end = size - 1
        if !parts[1].isEmpty {
            guard let last = number(parts[1]), last >= start else { return .ignored }
            end = min(last, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .range(start..<(end + 1))
    }

    /// The value of a run of ASCII digits (no sign, no spaces), `Int.max` when it is larger; `nil`
    /// for anything else.
    static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            value = overflow || carry ? Int.max : sum
        }
        return value
    }

    /// `ranges` in the order asked when no two overlap (RFC 9110, 14.6: parts SHOULD come in that
    /// order); else their sorted union (14.2 lets a server coalesce), so that no byte is sent twice
    /// and the parts never add up to more than the file.
    static func coalesced(_ ranges: [Range<Int>]) -> [Range<Int>] {
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        guard sorted.indices.dropFirst().contains(where: { sorted[$0].lowerBound < sorted[$0 - 1].upperBound }) else { return ranges }
        var union: [Range<Int>] = []
        for range in sorted {
            if let last = union.last, range.lowerBound <= last.upperBound {
                union[union.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                union.append(range)
            }
        }
        return union
    }

    static func bare(_ key: String) -> String {
        key.hasPrefix("ras-") ? String(key.dropFirst(4)) : key
    }

    static func json<T: Encodable>(_ status: HTTPResponse.Status, _ value: T) -> Response {
        json(status, body: encode(value))
    }

    /// A JSON answer: never cached without asking again (the registry changes as versions are
    /// published), with an ETag of its bytes (``etag(of:)``, unless given).
    static func json(_ status: HTTPResponse.Status, body: ByteBuffer, etag: String? = nil) -> Response {
        Response(status: status, headers: [
            .contentType: "application/json", .contentLength: "\(body.readableBytes)", .cacheControl: "no-cache", .eTag: etag ?? Self.etag(of: body),
        ], body: .init(byteBuffer: body))
    }

    /// The ETag of a JSON answer: the first half of its SHA-256, quoted.
    static func etag(of body: ByteBuffer) -> String {
        "\"\(SHA256Digest.hash(body.readableBytesView).hexString.prefix(32))\""
    }

    static func encode<T: Encodable>(_ value: T) -> ByteBuffer {
        ByteBuffer(bytes: (try? RecordCoding.encoder().encode(value)) ?? Data("{}".utf8))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(status, ErrorDocument(code: status.code, message: message))
    }
}

/// The encoded app lists with their ETags, reused while the registry's generation has not moved, and
/// for a second or more (so that a hand edit, which does not move it, shows soon too).
///
/// A list is made on a thread of its own from the executor, once however many requests want it, and never on the task
/// that asks: making the list of a 10,000-app registry reads 20,000 files and takes about a second.
/// Once its lifetime is over, a list of the same generation is still served while the next is made
/// (in the background); a moved generation (a version published) is always waited for.
final class ListingCache: Sendable {
    /// An encoded list and its ETag, computed once: hashing a 10,000-app list (2 MB) for every
    /// request took `serve` several milliseconds a request.
    struct Listing {
        var body: ByteBuffer
        var etag: String
    }

    private struct Entry {
        var stamp: Int
        var expires: ContinuousClock.Instant
        var listing: Listing
    }

    /// A list being made, and who waits for it.
    private struct Making {
        var preview: Bool
        var stamp: Int
        var waiters: [CheckedContinuation<Listing, Never>]
    }

    private struct State {
        var entries: [Bool: Entry] = [:]
        var making: [Making] = []
    }

    private let state = NIOLockedValueBox(State())
    /// How long a list is served at least before it is made again (longer for a list slow to make).
    let lifetime: Duration

    /// Where lists are made.
    private let executor: BlockingExecutor

    init(executor: BlockingExecutor, lifetime: Duration = .seconds(1)) {
        self.executor = executor
        self.lifetime = lifetime
    }

    /// The list for `preview` at generation `stamp`: the cached one, or the one `make` makes.
    func listing(preview: Bool, stamp: Int, make: @escaping @Sendable () -> ByteBuffer) async -> Listing {
        await withCheckedContinuation { (waiter: CheckedContinuation<Listing, Never>) in
            let now = ContinuousClock.now
            let (ready, start) = state.withLockedValue { state -> (Listing?, Bool) in
                let entry = state.entries[preview].flatMap { $0.stamp == stamp ? $0 : nil }
                if let entry, entry.expires > now { return (entry.listing, false) }
                let index = state.making.firstIndex { $0.preview == preview && $0.stamp == stamp }
                if let entry {
                    // Served as it is while the next one is made.
                    guard index == nil else { return (entry.listing, false) }
                    state.making.append(Making(preview: preview, stamp: stamp, waiters: []))
                    return (entry.listing, true)
                }
                if let index {
                    state.making[index].waiters.append(waiter)
                    return (nil, false)
                }
                state.making.append(Making(preview: preview, stamp: stamp, waiters: [waiter]))
                return (nil, true)
            }
            if start { self.start(preview: preview, stamp: stamp, inBackground: ready != nil, make: make) }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Makes the list on a thread of its own; one made `inBackground` (nobody waits for it) runs at
    /// the lowest priority, so that it never takes a core from the requests being answered.
    private func start(preview: Bool, stamp: Int, inBackground: Bool, make: @escaping @Sendable () -> ByteBuffer) {
        let work: @Sendable () -> Void = {
            let began = ContinuousClock.now
            let body = make()
            let listing = Listing(body: body, etag: RegistryResponder.etag(of: body))
            self.finish(preview: preview, stamp: stamp, listing, took: ContinuousClock.now - began)
        }
        if !executor.startThread(name: "miniapp.listing", lowestPriority: inBackground, work) { work() }
    }

    /// How long a list that took `took` to make is served before it is made again.
    static func lifetime(minimum: Duration, took: Duration) -> Duration {
        max(minimum, took * 10)
    }

    private func finish(preview: Bool, stamp: Int, _ listing: Listing, took: Duration) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Listing, Never>] in
            // The lifetime counts from when the body is ready, and lasts at least ten times as long as
            // the list took to make: a 10,000-app list (about a second of reading) is made again every
            // ten seconds at most, not every second. An older generation's list, made late, never
            // replaces a newer one.
            if (state.entries[preview]?.stamp ?? .min) <= stamp {
                state.entries[preview] = Entry(stamp: stamp, expires: .now + Self.lifetime(minimum: lifetime, took: took), listing: listing)
            }
            guard let index = state.making.firstIndex(where: { $0.preview == preview && $0.stamp == stamp }) else { return [] }
            return state.making.remove(at: index).waiters
        }
        for waiter in waiters { waiter.resume(returning: listing) }
    }
}

private struct ErrorDocument: Encodable {
    var code: Int
    var message: String
}

private struct ManifestDocument: Encodable {
    var manifest: [String]
    var publicKeyId: String
}

private struct PreviewHost: Encodable {
    var id: String
    var subscriptionKey: String?
}

private struct PreviewDocument: Encodable {
    var miniapp: AppRecord
    var host: PreviewHost?

    private enum CodingKeys: String, CodingKey { case miniapp, host }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(miniapp, forKey: .miniapp)
        try container.encode(host, forKey: .host)
    }
}

extension RegistryServer {
    /// Starts signing the TUF timestamp again whenever less than half its lifetime is left (checked
    /// every minute), when the server was given a timestamp key; `nil` otherwise. The key must be one
    /// the root lists for the timestamp and for no other role: the server holds nothing else.
    func startTimestampSigning() throws -> Task<Void, Never>? {
        guard !tufTimestampSigners.isEmpty else { return nil }
        let repository = TUFRepository(folder: registry.root + "/tuf")
        guard repository.exists else { throw TUFRepositoryError("\(registry.root) keeps no TUF repository: it has no timestamp to sign") }
        let root = try repository.newest("root").signed
        guard case .object(let roles)? = root["roles"] else { throw TUFRepositoryError("the TUF root has no roles", category: .badData) }
        for signer in tufTimestampSigners {
            let listed = roles.filter { if case .object(let role) = $0.value, case .array(let ids)? = role["keyids"] { ids.contains(.string(signer.keyId)) } else { false } }
            guard Array(listed.keys) == ["timestamp"] else {
                throw TUFRepositoryError("the timestamp key \(signer.keyId) must be one the root lists for the timestamp alone")
            }
        }
        let (signers, executor, lifetime, log, lockPath) = (tufTimestampSigners, executor, repository.lifetimes.timestamp, requestLog, registry.root + "/.lock")
        return Task {
            while !Task.isCancelled {
                do {
                    let expires = try await executor.run { try repository.timestampExpiry() }
                    if expires.timeIntervalSinceNow < lifetime / 2 {
                        let lock = try await FileLock.acquire(lockPath, timeout: .seconds(60), executor: executor) {
                            CacheError.busy(appId: "registry", versionId: "tuf", waitedSeconds: 60)
                        }
                        let version = try await executor.run {
                            try withExtendedLifetime(lock) {
                                try repository.resignTimestamp(with: signers)
                                return try repository.newest("timestamp").version
                            }
                        }
                        log?("signed the TUF timestamp again: version \(version)")
                    }
                } catch {
                    log?("cannot sign the TUF timestamp again: \(error)")
                }
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }
}
