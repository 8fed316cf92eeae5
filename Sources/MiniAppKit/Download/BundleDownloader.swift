import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import MiniAppCore

/// What a finished download wrote.
struct DownloadedFile: Sendable {
    /// The SHA-256 of the bytes, computed as they arrived.
    var sha256: [UInt8]
    /// The number of bytes.
    var size: Int64
}

/// Streams bundle zips to disk while hashing them, checking status and length, resuming with HTTP
/// Range requests after a dropped connection.
final class BundleDownloader: Sendable {
    let connections: LazyHTTPClient
    /// Set when the platform was opened for a short-lived process (``PlatformConnections/perRequest``):
    /// plain `http://` zips are then fetched on connections of their own, with blocking calls on a
    /// thread of each download's own from ``executor`` (a download must not hold a pool thread for its length).
    let direct: Bool
    let network: NetworkSettings
    let maxBytes: Int64
    let executor: BlockingExecutor
    let logger: Logger
    /// Which servers answer several ranges in one request, as learnt by delta downloads.
    let rangeSupport: RangeSupport

    /// How many redirects one download follows.
    static let maxRedirects = 5

    /// A downloader using `httpClient` when given (the host's, left open), else a client of its own.
    /// Redirects are followed here, up to ``maxRedirects``, whatever the client's own setting.
    /// `rangeFolder` keeps what is learnt about servers' ranges for later processes.
    /// `direct`: see ``direct`` (ignored when `httpClient` is given).
    init(
        network: NetworkSettings, maxBytes: Int64, httpClient: HTTPClient?, executor: BlockingExecutor, logger: Logger, rangeFolder: String? = nil,
        direct: Bool = false
    ) {
        self.executor = executor
        self.direct = httpClient == nil && direct
        self.rangeSupport = RangeSupport(directory: rangeFolder, executor: executor)
        self.network = network
        self.maxBytes = maxBytes
        self.logger = logger
        self.connections = LazyHTTPClient(shared: httpClient, connectTimeout: network.connectTimeout.timeAmount) {
            HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(connect: network.connectTimeout.timeAmount, read: network.readTimeout.timeAmount)
            )
        }
    }

    func shutdown() async {
        try? await connections.shutdown()
    }

    /// Downloads `url` into a new file at `path`, with no authentication headers, refusing more than
    /// `limit` bytes (at most the downloader's own limit).
    func download(_ url: URL, to path: String, limit: Int64? = nil, progress: (@Sendable (DownloadProgress) -> Void)? = nil) async throws -> DownloadedFile {
        let sink = try DownloadSink(path: path, executor: executor)
        let maxBytes = min(limit ?? self.maxBytes, self.maxBytes)
        do {
            if url.isFileURL {
                try await copy(url, into: sink, maxBytes: maxBytes, progress: progress)
            } else {
                try await transfer(url, into: sink, maxBytes: maxBytes, progress: progress)
            }
        } catch {
            await sink.close()
            throw error
        }
        return try await sink.finish()
    }

    /// Fetches `url` into `sink`, retrying and resuming as the policy allows; returns once the sink
    /// has every byte.
    private func transfer(_ url: URL, into sink: DownloadSink, maxBytes: Int64, progress: (@Sendable (DownloadProgress) -> Void)?) async throws {
        let policy = network.retry
        let clock = ContinuousClock()
        let deadline = clock.now + policy.totalBudget
        var text = url.absoluteString
        var attempt = 0
        var redirects = 0
        var validator: String?
        while true {
            attempt += 1
            try Task.checkCancellation()
            var delay = policy.backoff(beforeRetry: attempt)
            var failure: DownloadError
            do {
                var request = HTTPClientRequest(url: text)
                request.headers.add(name: "User-Agent", value: PackageInfo.userAgent)
                let resuming = sink.received > 0 && validator != nil
                if resuming, let validator {
                    request.headers.add(name: "Range", value: "bytes=\(sink.received)-")
                    request.headers.add(name: "If-Range", value: validator)
                }
                let remaining = deadline - clock.now
                guard remaining > .zero else { throw HTTPClientError.deadlineExceeded }
                logger.debug("bundle request", metadata: ["url": "\(text)", "attempt": "\(attempt)", "offset": "\(sink.received)"])
                let response = try await send(request, deadline: deadline)
                defer { response.close() }
                let status = response.status
                let total: Int64?
                switch status {
                case 301, 302, 303, 307, 308:
                    guard let location = response.headers.first(name: "Location"), let next = URL(string: location, relativeTo: URL(string: text)),
                          ["http", "https"].contains(next.scheme?.lowercased() ?? "") else {
                        throw DownloadError.httpStatus(url: text, status: status, attempts: attempt)
                    }
                    redirects += 1
                    guard redirects <= Self.maxRedirects else { throw DownloadError.tooManyRedirects(url: url.absoluteString, limit: Self.maxRedirects) }
                    logger.debug("bundle redirect", metadata: ["url": "\(text)", "location": "\(next.absoluteString)"])
                    text = next.absoluteString
                    attempt -= 1
                    continue
                case 206 where resuming:
                    guard let range = Self.contentRange(response.headers), range.start == sink.received else {
                        sink.restart()
                        validator = nil
                        failure = .unreachable(url: text, reason: "the server resumed at the wrong offset", attempts: attempt)
                        break
                    }
                    total = range.total
                    guard let early = try await receive(response, into: sink, total: total, url: text, attempt: attempt, maxBytes: maxBytes, progress: progress) else {
                        return
                    }
                    failure = early
                case 200..<300:
                    if sink.received > 0 { sink.restart() }
                    total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
                    if let total, total > maxBytes { throw DownloadError.tooLarge(url: text, limitBytes: maxBytes) }
                    validator = Self.validator(response.headers)
                    guard let early = try await receive(response, into: sink, total: total, url: text, attempt: attempt, maxBytes: maxBytes, progress: progress) else {
                        return
                    }
                    failure = early
                case 404, 410:
                    throw DownloadError.notFound(url: text)
                case 429:
                    failure = .httpStatus(url: text, status: status, attempts: attempt)
                    if let retryAfter = PlatformClient.retryAfter(response.headers) {
                        guard retryAfter <= policy.maxRetryAfter else { throw failure }
                        delay = retryAfter
                    }
                case 408, 416, 500..<600:
                    if status == 416 {
                        sink.restart()
                        validator = nil
                    }
                    failure = .httpStatus(url: text, status: status, attempts: attempt)
                default:
                    throw DownloadError.httpStatus(url: text, status: status, attempts: attempt)
                }
            } catch let error as DownloadError {
                throw error
            } catch let error as ConnectionFailure {
                throw DownloadError.unreachable(url: text, reason: error.description, attempts: attempt)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if let clientError = error as? HTTPClientError, clientError == .cancelled { throw CancellationError() }
                failure = .unreachable(url: text, reason: PlatformClient.describe(error), attempts: attempt)
            }
            guard attempt < policy.maxAttempts, clock.now + delay < deadline else {
                switch failure {
                case .httpStatus(let url, let status, _): throw DownloadError.httpStatus(url: url, status: status, attempts: attempt)
                case .unreachable(let url, let reason, _): throw DownloadError.unreachable(url: url, reason: reason, attempts: attempt)
                default: throw failure
                }
            }
            logger.debug("retrying bundle download", metadata: ["url": "\(text)", "delay": "\(delay)"])
            try await Task.sleep(for: delay)
        }
    }

    /// An answer whose body is still to be read: from AsyncHTTPClient, or from a connection of its own.
    enum Response {
        case pooled(HTTPClientResponse)
        case direct(DirectResponse, SocketCanceller)

        var status: Int {
            switch self {
            case .pooled(let response): Int(response.status.code)
            case .direct(let response, _): response.status
            }
        }

        var headers: HTTPHeaders {
            switch self {
            case .pooled(let response): response.headers
            case .direct(let response, _): response.headers
            }
        }

        /// Closes a connection of its own (AsyncHTTPClient ends its own when its body is dropped).
        func close() {
            if case .direct(let response, _) = self { response.close() }
        }
    }

    /// Sends `request` and reads the head of its answer: on a connection of its own (see ``direct``)
    /// for a plain `http://` URL when the downloader has one; else through AsyncHTTPClient.
    private func send(_ request: HTTPClientRequest, deadline: ContinuousClock.Instant) async throws -> Response {
        if direct, let url = URL(string: request.url), let (endpoint, target) = DirectEndpoint.resource(url) {
            let canceller = SocketCanceller()
            let (headers, network) = (request.headers, network)
            let response = try await withTaskCancellationHandler {
                try await executor.runOnOwnThread(name: "miniapp.fetch") {
                    try DirectHTTP.open(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
                }
            } onCancel: {
                canceller.cancel()
            }
            return .direct(response, canceller)
        }
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw HTTPClientError.deadlineExceeded }
        return .pooled(try await connections.execute(request, deadline: .now() + remaining.timeAmount))
    }

    /// Streams a response body into the sink; returns `nil` when it is complete, or the failure to
    /// retry with when it ended early.
    func receive(
        _ response: Response, into sink: DownloadSink, total: Int64?, url: String, attempt: Int, maxBytes: Int64,
        progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> DownloadError? {
        /// Counts a chunk handed to the sink against the length and the limit.
        @Sendable func check() throws(DownloadError) {
            if let total, sink.received > total {
                throw DownloadError.lengthMismatch(url: url, expected: total, received: sink.received)
            }
            if sink.received > maxBytes { throw DownloadError.tooLarge(url: url, limitBytes: maxBytes) }
            progress?(DownloadProgress(receivedBytes: sink.received, totalBytes: total))
        }
        do {
            switch response {
            case .pooled(let response):
                for try await chunk in response.body {
                    try await sink.append(chunk)
                    try check()
                }
            case .direct(let response, let canceller):
                // Read on a thread of its own, in big buffers handed straight to the sink's writer: no
                // hop to a task per chunk.
                try await withTaskCancellationHandler {
                    try await executor.runOnOwnThread(name: "miniapp.fetch") {
                        try response.streamBody(chunkBytes: Self.directChunkBytes) { chunk in
                            try sink.appendNow(chunk)
                            try check()
                        }
                    }
                } onCancel: {
                    canceller.cancel()
                }
            }
        } catch let error as DownloadError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if let total, sink.received < total, case DirectHTTPError.closedEarly = error {
                return .unreachable(url: url, reason: "the connection closed after \(sink.received) of \(total) bytes", attempts: attempt)
            }
            return .unreachable(url: url, reason: PlatformClient.describe(error), attempts: attempt)
        }
        if let total, sink.received < total {
            return .unreachable(url: url, reason: "the connection closed after \(sink.received) of \(total) bytes", attempts: attempt)
        }
        return nil
    }

    /// The buffers a body read on a connection of its own is handed to the sink in.
    static let directChunkBytes = 512 << 10

    /// Copies a registry's local zip into the sink, hashing it on the way, as a download would.
    private func copy(_ url: URL, into sink: DownloadSink, maxBytes: Int64, progress: (@Sendable (DownloadProgress) -> Void)?) async throws {
        let source = open(url.path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else {
            if errno == ENOENT { throw DownloadError.notFound(url: url.absoluteString) }
            throw Self.ioError(url.path)
        }
        defer { close(source) }
        var info = stat()
        let total = fstat(source, &info) == 0 ? Int64(info.st_size) : nil
        if let total, total > maxBytes { throw DownloadError.tooLarge(url: url.absoluteString, limitBytes: maxBytes) }
        let allocator = ByteBufferAllocator()
        while true {
            // A fresh buffer each time: the sink's writer may still hold the last one. Read on the pool.
            let buffer = try await executor.run {
                var buffer = allocator.buffer(capacity: 1 << 20)
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 20) { raw in
                    max(read(source, raw.baseAddress, raw.count), 0)
                }
                return buffer
            }
            if buffer.readableBytes == 0 { break }
            try await sink.append(buffer)
            if sink.received > maxBytes { throw DownloadError.tooLarge(url: url.absoluteString, limitBytes: maxBytes) }
            progress?(DownloadProgress(receivedBytes: sink.received, totalBytes: total))
        }
    }

    /// A strong ETag, else Last-Modified: what `If-Range` may carry.
    static func validator(_ headers: HTTPHeaders) -> String? {
        if let etag = headers.first(name: "ETag"), !etag.hasPrefix("W/"), !etag.isEmpty { return etag }
        return headers.first(name: "Last-Modified")
    }

    /// The parts of `Content-Range: bytes start-end/total`.
    static func contentRange(_ headers: HTTPHeaders) -> (start: Int64, total: Int64?)? {
        guard let value = headers.first(name: "Content-Range"), value.hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst(6).split(separator: "/")
        guard parts.count == 2, let start = parts[0].split(separator: "-").first.flatMap({ Int64($0) }) else { return nil }
        return (start, Int64(parts[1]))
    }

    static func ioError(_ path: String, errorNumber: Int32 = errno) -> DownloadError {
        .io(path: path, reason: String(cString: strerror(errorNumber)), diskFull: errorNumber == ENOSPC || errorNumber == EDQUOT)
    }
}
