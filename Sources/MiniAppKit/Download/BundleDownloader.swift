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
    /// How requests reach the servers: with ``PlatformConnections/perRequest``, plain `http://` zips
    /// are fetched on connections of their own, read on a thread of each download's own from
    /// ``executor`` (a download must not hold a pool thread for its length).
    let transport: HTTPTransport
    /// Whether ``shutdown()`` closes ``transport``.
    let ownsTransport: Bool
    let policy: RequestPolicy
    let network: NetworkSettings
    let maxBytes: Int64
    let executor: BlockingExecutor
    let logger: Logger
    /// Which servers answer several ranges in one request, as learnt by delta downloads.
    let rangeSupport: RangeSupport

    /// A downloader over `transport` (closed by ``shutdown()`` when `ownsTransport`). Redirects are
    /// followed by ``RequestPolicy``, up to ``RequestPolicy/maxRedirects``. `rangeFolder` keeps what
    /// is learnt about servers' ranges for later processes.
    init(maxBytes: Int64, transport: HTTPTransport, ownsTransport: Bool, logger: Logger, rangeFolder: String? = nil) {
        self.transport = transport
        self.ownsTransport = ownsTransport
        self.executor = transport.executor
        self.rangeSupport = RangeSupport(directory: rangeFolder, executor: transport.executor)
        self.network = transport.network
        self.policy = RequestPolicy(network: transport.network, logger: logger)
        self.maxBytes = maxBytes
        self.logger = logger
    }

    func shutdown() async {
        if ownsTransport { try? await transport.shutdown() }
    }

    /// Downloads `url` into a new file at `path`, with no authentication headers, refusing more than
    /// `limit` bytes (at most the downloader's own limit).
    func download(_ url: URL, to path: String, limit: Int64? = nil, progress: (@Sendable (DownloadProgress) -> Void)? = nil) async throws -> DownloadedFile {
        let sink = try await DownloadSink(path: path, executor: executor)
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
        let deadline = policy.deadline()
        var text = url.absoluteString
        var redirects = 0
        var validator: String?
        try await policy.retrying(text, deadline: deadline) { attempt -> RequestPolicy.Attempt<Void> in
            do {
                var headers = HTTPHeaders()
                let resuming = sink.received > 0 && validator != nil
                if resuming, let validator {
                    headers.add(name: "Range", value: "bytes=\(sink.received)-")
                    headers.add(name: "If-Range", value: validator)
                }
                logger.debug("bundle request", metadata: ["url": "\(text)", "attempt": "\(attempt)", "offset": "\(sink.received)"])
                let response: HTTPResponse
                do {
                    (response, text) = try await policy.send(
                        HTTPRequest(url: text, headers: headers), over: transport, deadline: deadline, redirects: &redirects
                    )
                } catch RequestPolicy.RedirectFailure.unfollowable(let from, let status) {
                    throw DownloadError.httpStatus(url: from, status: status, attempts: attempt)
                } catch RequestPolicy.RedirectFailure.tooMany {
                    throw DownloadError.tooManyRedirects(url: url.absoluteString, limit: RequestPolicy.maxRedirects)
                }
                defer { response.close() }
                let status = response.status
                switch (status, RequestPolicy.verdict(status, headers: response.headers)) {
                case (206, _) where resuming:
                    guard let range = Self.contentRange(response.headers), range.start == sink.received else {
                        sink.restart()
                        validator = nil
                        return .retry(DownloadError.unreachable(url: text, reason: "the server resumed at the wrong offset", attempts: attempt))
                    }
                    let early = try await receive(response, into: sink, total: range.total, url: text, attempt: attempt, maxBytes: maxBytes, progress: progress)
                    return early.map { .retry($0) } ?? .done(())
                case (_, .success):
                    if sink.received > 0 { sink.restart() }
                    let total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
                    if let total, total > maxBytes { throw DownloadError.tooLarge(url: text, limitBytes: maxBytes) }
                    validator = Self.validator(response.headers)
                    let early = try await receive(response, into: sink, total: total, url: text, attempt: attempt, maxBytes: maxBytes, progress: progress)
                    return early.map { .retry($0) } ?? .done(())
                case (404, _), (410, _):
                    throw DownloadError.notFound(url: text)
                case (_, .rateLimited(let retryAfter)):
                    return .retry(DownloadError.httpStatus(url: text, status: status, attempts: attempt), retryAfter: retryAfter)
                case (416, _):
                    sink.restart()
                    validator = nil
                    return .retry(DownloadError.httpStatus(url: text, status: status, attempts: attempt))
                case (_, .transient):
                    return .retry(DownloadError.httpStatus(url: text, status: status, attempts: attempt))
                case (_, .other):
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
                return .retry(DownloadError.unreachable(url: text, reason: PlatformClient.describe(error), attempts: attempt))
            }
        }
    }

    /// Streams a response body into the sink; returns `nil` when it is complete, or the failure to
    /// retry with when it ended early.
    func receive(
        _ response: HTTPResponse, into sink: DownloadSink, total: Int64?, url: String, attempt: Int, maxBytes: Int64,
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
            switch response.body {
            case .pooled(let body):
                for try await chunk in body {
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
