import Foundation
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// How a ``PlatformClient`` reaches its platform.
public enum PlatformConnections: Sendable {
    /// Through AsyncHTTPClient, whose connections are kept and reused: for a long-running host.
    case pooled
    /// For a process that makes a few requests and exits, such as a command-line tool: each plain
    /// `http://` request goes on a connection of its own, made and read with blocking calls on the
    /// client's ``BlockingExecutor`` (never on Swift's cooperative pool), with the same headers, timeouts, size limit
    /// and retries. It spares the several milliseconds that AsyncHTTPClient's first request spends
    /// setting itself up. A ``BundleInstaller`` with such a platform fetches plain `http://` zips on
    /// connections of their own too, each read on a thread of its download's own. `https://`, and a
    /// client given its own `HTTPClient`, are still served by AsyncHTTPClient.
    case perRequest
}

/// Where a platform request sent on a connection of its own goes: the host and port to connect to,
/// the `Host` header, and the path of the base URL that every request target starts with.
struct DirectEndpoint: Sendable {
    let host: String
    let port: Int
    let hostHeader: String
    /// `host:port`, an IPv6 host in brackets: how errors name the endpoint.
    let authority: String
    let basePath: String

    /// The endpoint of a plain `http://` base URL without user, query or fragment; `nil` otherwise.
    init?(baseURL: URL) {
        // Read from the URL's own parse, as the URL spells it: URLComponents parsed it again, and its
        // `host` decoded IDNA through ICU, which cost a platform request about 0.45 ms (every warm
        // `latest` makes one).
        guard baseURL.scheme?.lowercased() == "http",
              baseURL.user(percentEncoded: true) == nil, baseURL.password(percentEncoded: true) == nil,
              baseURL.query(percentEncoded: true) == nil, baseURL.fragment(percentEncoded: true) == nil,
              var host = baseURL.host(percentEncoded: true), !host.isEmpty
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        // A name that would need percent-decoding, or any byte past ASCII, is left to AsyncHTTPClient;
        // an `xn--` name is already what DNS is asked.
        guard host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "/") }) else { return nil }
        let path = baseURL.path(percentEncoded: true)
        self.host = host
        self.port = baseURL.port ?? 80
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        self.hostHeader = baseURL.port.map { "\(name):\($0)" } ?? name
        self.authority = "\(name):\(port)"
        self.basePath = path.hasPrefix("/") ? path : "/" + path
    }
}

extension DirectEndpoint {
    /// The endpoint of a plain `http://` resource URL without user (its query kept), and the request
    /// target (path and query, as the URL spells them); `nil` for anything else.
    static func resource(_ url: URL) -> (endpoint: DirectEndpoint, target: String)? {
        // The base URL is spelled out rather than made by URLComponents, which would check the host
        // through ICU (see init(baseURL:)).
        guard url.scheme?.lowercased() == "http", url.user(percentEncoded: true) == nil, url.password(percentEncoded: true) == nil,
              let host = url.host(percentEncoded: true), !host.isEmpty
        else { return nil }
        let name = host.utf8.contains(UInt8(ascii: ":")) && !host.hasPrefix("[") ? "[\(host)]" : host
        guard let base = URL(string: "http://\(name)\(url.port.map { ":\($0)" } ?? "")/"), let endpoint = DirectEndpoint(baseURL: base) else { return nil }
        let path = url.path(percentEncoded: true)
        let target = (path.isEmpty ? "/" : path) + (url.query(percentEncoded: true).map { "?" + $0 } ?? "")
        // What goes on the request line: no space, control character or byte past ASCII.
        guard target.hasPrefix("/"), target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return (endpoint, target)
    }
}

/// Why a request on a connection of its own failed, in words for an error message.
enum DirectHTTPError: Error, CustomStringConvertible {
    case connectTimeout
    case readTimeout
    case deadlineExceeded
    case closedEarly
    case connectFailed(String)
    case malformed(String)
    case tooLarge
    case invalidHeader(String)

    var description: String {
        switch self {
        case .connectTimeout: "connection timed out"
        case .readTimeout: "no answer within the read timeout"
        case .deadlineExceeded: "the time budget ran out"
        case .closedEarly: "the connection was closed before the answer was complete"
        case .connectFailed(let reason): "could not connect: \(reason)"
        case .malformed(let what): "the answer is not valid HTTP/1.1 (\(what))"
        case .tooLarge: "the answer is too large"
        case .invalidHeader(let name): "the request header \(name) holds a line break or control character"
        }
    }
}

/// Lets another thread stop a blocking request: `cancel()` shuts the socket down, which wakes the
/// thread waiting on it, and the request then ends with a `CancellationError`.
final class SocketCanceller: Sendable {
    private let state = Mutex<(descriptor: Int32, cancelled: Bool)>((-1, false))

    /// Makes `descriptor` the socket that `cancel()` shuts down; throws if cancelled already.
    func attach(_ descriptor: Int32) throws {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.descriptor = descriptor }
            return state.cancelled
        }
        if cancelled { throw CancellationError() }
    }

    /// Closes the attached socket (under the lock, so that `cancel()` never reaches a reused number).
    func close(_ descriptor: Int32) {
        state.withLock { state in
            if state.descriptor == descriptor { state.descriptor = -1 }
            _ = Glibc.close(descriptor)
        }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if state.descriptor >= 0 { _ = shutdown(state.descriptor, Int32(SHUT_RDWR)) }
        }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }
}

/// An HTTP/1.1 GET on a connection of its own, with blocking calls: for a thread pool's thread only.
enum DirectHTTP {
    /// The longest head of an answer accepted (status line and headers).
    static let maxHeadBytes = 64 << 10
    /// How the body of an answer is delimited.
    enum Framing {
        /// `Content-Length`: so many bytes.
        case length(Int64)
        /// `Transfer-Encoding: chunked`.
        case chunked
        /// Up to the end of the stream.
        case toEnd
    }

    /// GETs `target` (path and query, percent-encoded) from `endpoint` and returns the whole answer.
    /// A connection that cannot be made at all throws ``ConnectionFailure``; everything else that
    /// goes wrong throws ``DirectHTTPError`` (or `CancellationError` once `canceller` is cancelled).
    static func get(
        _ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders, network: NetworkSettings,
        deadline: ContinuousClock.Instant, canceller: SocketCanceller
    ) throws -> HTTPAnswer {
        let (connection, request, decoder) = try sendRequest(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
        defer { canceller.close(connection.descriptor) }
        return try readAnswer(from: connection, request: request, decoder: decoder, maxBytes: network.maxResponseBytes)
    }

    /// A new connection to `endpoint` with the GET of `target` written on it; closed when that fails.
    private static func sendRequest(
        _ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders, network: NetworkSettings,
        deadline: ContinuousClock.Instant, canceller: SocketCanceller
    ) throws -> (Connection, HTTPRequestHead, HTTPAnswerDecoder) {
        let head = try requestHead(endpoint, target: target, headers: headers)
        let (decoder, request) = try HTTPAnswerDecoder.start(head)
        let descriptor = try connect(endpoint, timeout: network.connectTimeout, deadline: deadline, canceller: canceller)
        let connection = Connection(descriptor: descriptor, readTimeout: network.readTimeout, deadline: deadline, canceller: canceller)
        do {
            try connection.write(Array(request.readableBytesView))
        } catch {
            canceller.close(descriptor)
            throw error
        }
        return (connection, head, decoder)
    }

    /// Sends a GET of `target` and reads the head of its answer (interim 1xx answers skipped), leaving
    /// the body on the connection for ``DirectResponse/streamBody(chunkBytes:_:)``. Throws as
    /// ``get(_:target:headers:network:deadline:canceller:)`` does.
    static func open(
        _ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders, network: NetworkSettings,
        deadline: ContinuousClock.Instant, canceller: SocketCanceller
    ) throws -> DirectResponse {
        let (connection, request, decoder) = try sendRequest(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
        do {
            let reader = AnswerReader(connection: connection, request: request, decoder: decoder)
            let (status, headers, _) = try reader.head()
            return DirectResponse(status: status, headers: headers, reader: reader, canceller: canceller)
        } catch {
            canceller.close(connection.descriptor)
            throw error
        }
    }

    /// The GET of `target`: `Host`, `headers` (names and values checked: no line break or control
    /// character reaches the wire), and `Connection: close`.
    static func requestHead(_ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders) throws -> HTTPRequestHead {
        var fields = HTTPHeaders()
        fields.add(name: "Host", value: endpoint.hostHeader)
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte), value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                throw DirectHTTPError.invalidHeader(name.utf8.allSatisfy(isTokenByte) ? name : "name")
            }
            fields.add(name: name, value: value)
        }
        fields.add(name: "Connection", value: "close")
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: fields)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    // MARK: Connecting

    /// Whether `host` is an IPv4 or IPv6 address as `inet_pton` reads one.
    static func isAddressLiteral(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
    }

    /// A connected non-blocking socket to the first of the endpoint's addresses that accepts.
    private static func connect(_ endpoint: DirectEndpoint, timeout: Duration, deadline: ContinuousClock.Instant, canceller: SocketCanceller) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // An address literal is taken as it is: AI_ADDRCONFIG, there for names, made glibc list the
        // machine's addresses over netlink first even for 127.0.0.1.
        hints.ai_flags = AI_NUMERICSERV | (isAddressLiteral(endpoint.host) ? AI_NUMERICHOST : AI_ADDRCONFIG)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &list)
        guard status == 0, let first = list else {
            throw ConnectionFailure(description: "the host name \(endpoint.host) does not resolve")
        }
        defer { freeaddrinfo(first) }
        let key = endpoint.authority
        let end = min(ContinuousClock.now + timeout, deadline)
        var codes: [Int32] = []
        var timedOut = false
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let address = next {
            next = address.pointee.ai_next
            let descriptor = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard descriptor >= 0 else { codes.append(errno); continue }
            do {
                try canceller.attach(descriptor)
            } catch {
                _ = close(descriptor)
                throw error
            }
            var code: Int32 = 0
            if Glibc.connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
                code = errno
                if code == EINPROGRESS || code == EINTR {
                    code = try waitForConnection(descriptor, until: end, canceller: canceller)
                }
            }
            if code == 0 {
                var on: Int32 = 1
                _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                return descriptor
            }
            canceller.close(descriptor)
            if code == ETIMEDOUT { timedOut = true } else { codes.append(code) }
            if ContinuousClock.now >= end { break }
        }
        if timedOut || codes.isEmpty { throw ContinuousClock.now >= deadline ? DirectHTTPError.deadlineExceeded : DirectHTTPError.connectTimeout }
        if codes.allSatisfy({ [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains($0) }) {
            throw ConnectionFailure(description: codes.contains(ECONNREFUSED) ? "connection refused by \(key)" : "no route to \(key)")
        }
        throw DirectHTTPError.connectFailed(String(cString: strerror(codes[0])))
    }

    /// Waits for a non-blocking connect to end; its error number (`ETIMEDOUT` when `end` passed).
    private static func waitForConnection(_ descriptor: Int32, until end: ContinuousClock.Instant, canceller: SocketCanceller) throws -> Int32 {
        while true {
            let left = end - ContinuousClock.now
            guard left > .zero else { return ETIMEDOUT }
            var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&entry, 1, milliseconds(left))
            let code = errno
            if canceller.isCancelled { throw CancellationError() }
            if ready < 0 {
                if code == EINTR { continue }
                return code
            }
            if ready == 0 { continue }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 else { return errno }
            return failure
        }
    }

    /// `duration` in whole milliseconds for `poll`, at least 1 and at most a day.
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let total = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(1, min(total, 86_400_000)))
    }

    // MARK: Reading the answer

    /// A connected socket, read and written within the read timeout and the deadline.
    struct Connection {
        let descriptor: Int32
        let readTimeout: Duration
        let deadline: ContinuousClock.Instant
        let canceller: SocketCanceller

        /// Waits until the socket is ready for `events`, for at most the read timeout.
        private func wait(for events: Int32) throws {
            while true {
                let now = ContinuousClock.now
                guard now < deadline else { throw DirectHTTPError.deadlineExceeded }
                let limit = min(readTimeout, deadline - now)
                var entry = pollfd(fd: descriptor, events: Int16(events), revents: 0)
                let ready = poll(&entry, 1, DirectHTTP.milliseconds(limit))
                let code = errno
                if canceller.isCancelled { throw CancellationError() }
                if ready > 0 { return }
                if ready < 0, code == EINTR { continue }
                if ready < 0 { throw DirectHTTPError.closedEarly }
                throw ContinuousClock.now >= deadline ? DirectHTTPError.deadlineExceeded : DirectHTTPError.readTimeout
            }
        }

        func write(_ bytes: [UInt8]) throws {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                let code = errno
                if sent > 0 { offset += sent; continue }
                if canceller.isCancelled { throw CancellationError() }
                if sent < 0, code == EAGAIN || code == EINTR { try wait(for: Int32(POLLOUT)); continue }
                throw DirectHTTPError.closedEarly
            }
        }

        /// Reads into `buffer`; the count read, 0 at the end of the stream.
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            while true {
                let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
                let code = errno
                if canceller.isCancelled { throw CancellationError() }
                if count >= 0 { return count }
                if code == EAGAIN || code == EINTR { try wait(for: Int32(POLLIN)); continue }
                throw DirectHTTPError.closedEarly
            }
        }
    }

    /// Reads the answer to the request written on `connection`, whole.
    static func readAnswer(from connection: Connection, request: HTTPRequestHead, decoder: HTTPAnswerDecoder, maxBytes: Int) throws -> HTTPAnswer {
        let reader = AnswerReader(connection: connection, request: request, decoder: decoder)
        let (status, headers, framing) = try reader.head()
        if case .length(let length) = framing, length > Int64(maxBytes) { throw DirectHTTPError.tooLarge }
        var body = Data()
        while let part = try reader.nextBody(bufferBytes: 64 << 10, filling: false) {
            guard part.readableBytes <= maxBytes - body.count else { throw DirectHTTPError.tooLarge }
            body.append(contentsOf: part.readableBytesView)
        }
        return HTTPAnswer(status: status, headers: headers, body: body)
    }

    /// How the body of a final answer is delimited (RFC 9112 §6.3). Anything a peer on the path
    /// could read otherwise is refused rather than guessed at: a transfer coding other than `chunked`
    /// alone (this client asks for none and decodes no other), `Transfer-Encoding` together with
    /// `Content-Length` (the mark of request smuggling and response splitting), and a
    /// `Content-Length` that is not one decimal number.
    static func framing(status: Int, headers: HTTPHeaders) throws -> Framing {
        if status == 204 || status == 304 { return .length(0) }
        let codings = headers["Transfer-Encoding"]
        if !codings.isEmpty {
            let listed = codings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingCharacters(in: [" ", "\t"]) }
            guard listed.count == 1, listed[0].lowercased() == "chunked" else {
                throw DirectHTTPError.malformed("Transfer-Encoding other than chunked alone")
            }
            guard headers["Content-Length"].isEmpty else { throw DirectHTTPError.malformed("both Transfer-Encoding and Content-Length") }
            return .chunked
        }
        if let length = try contentLength(headers) { return .length(Int64(length)) }
        return .toEnd
    }

    /// The `Content-Length`, when given: `1*DIGIT` (no sign), at most `Int.max`; a list or repeated
    /// field must name one length (RFC 9112 §6.3), else the answer is refused.
    static func contentLength(_ headers: HTTPHeaders) throws -> Int? {
        let fields = headers["Content-Length"]
        guard !fields.isEmpty else { return nil }
        var length: Int?
        for field in fields {
            for item in field.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = item.trimmingCharacters(in: [" ", "\t"])
                guard !digits.isEmpty else { throw DirectHTTPError.malformed("Content-Length") }
                var value = 0
                for byte in digits.utf8 {
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw DirectHTTPError.malformed("Content-Length") }
                    let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
                    let (sum, carried) = shifted.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                    guard !overflowed, !carried else { throw DirectHTTPError.malformed("a Content-Length too big") }
                    value = sum
                }
                guard length == nil || length == value else { throw DirectHTTPError.malformed("conflicting Content-Length values") }
                length = value
            }
        }
        return length
    }

    /// The answer on a connection, read as NIO's HTTP/1 decoder needs it.
    ///
    /// The decoder runs in an `EmbeddedChannel`, which one thread may use: a download reads the head on
    /// one thread and the body on another. So the head's bytes (interim answers' included) are kept, and
    /// a thread other than the one whose decoder read them makes a decoder of its own and hands it the
    /// same heads before the body.
    final class AnswerReader {
        let connection: Connection
        private let request: HTTPRequestHead
        private var decoder: HTTPAnswerDecoder
        private var decoderThread = pthread_self()
        /// The heads the connection sent, as sent.
        private var heads = ByteBuffer()
        /// What was read past the final head, not yet given to the decoder.
        private var leftover = ByteBuffer()
        private var ended = false

        init(connection: Connection, request: HTTPRequestHead, decoder: HTTPAnswerDecoder) {
            self.connection = connection
            self.request = request
            self.decoder = decoder
        }

        /// The status, headers and framing of the final answer (interim 1xx answers are dropped by the
        /// decoder), checked against this client's framing policy.
        func head() throws -> (Int, HTTPHeaders, Framing) {
            var pending = ByteBuffer()
            while true {
                if let end = Self.headEnd(in: pending.readableBytesView) {
                    let head = pending.readSlice(length: end)!
                    heads.writeImmutableBuffer(head)
                    try decoder.feed(head)
                    guard case .head(let final)? = decoder.nextPart() else { continue }
                    leftover = pending
                    let status = Int(final.status.code)
                    guard status != 101 else { throw DirectHTTPError.malformed("an upgrade nobody asked for") }
                    return (status, final.headers, try DirectHTTP.framing(status: status, headers: final.headers))
                }
                guard pending.readableBytes <= DirectHTTP.maxHeadBytes else {
                    throw DirectHTTPError.malformed("the head is larger than \(DirectHTTP.maxHeadBytes) bytes")
                }
                if try read(into: &pending, bufferBytes: 16 << 10, filling: false) == 0 {
                    // What came is no head: the decoder says what is wrong with it, else it ended early.
                    try decoder.feed(pending)
                    try decoder.close()
                    throw DirectHTTPError.closedEarly
                }
            }
        }

        /// Where the first head in `bytes` ends (past its blank line: `\r\n\r\n`, or `\n\n` as a lenient
        /// peer may end it), if it has.
        static func headEnd(in bytes: ByteBufferView) -> Int? {
            var index = bytes.startIndex
            while let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) {
                let next = bytes.index(after: newline)
                if next < bytes.endIndex, bytes[next] == UInt8(ascii: "\n") { return next + 1 - bytes.startIndex }
                if next + 1 < bytes.endIndex, bytes[next] == UInt8(ascii: "\r"), bytes[next + 1] == UInt8(ascii: "\n") { return next + 2 - bytes.startIndex }
                index = next
            }
            return nil
        }

        /// The next bytes of the body, `nil` once it has ended; reads the connection in buffers of
        /// `bufferBytes`, each filled whole before it is decoded when `filling` (fewer, larger
        /// deliveries for a download). An answer cut short throws ``DirectHTTPError/closedEarly``
        /// once what came before the cut was handed out.
        func nextBody(bufferBytes: Int, filling: Bool) throws -> ByteBuffer? {
            if pthread_equal(decoderThread, pthread_self()) == 0 {
                let (decoder, _) = try HTTPAnswerDecoder.start(request)
                try decoder.feed(heads)
                _ = decoder.nextPart()
                self.decoder = decoder
                decoderThread = pthread_self()
            }
            if leftover.readableBytes > 0 {
                try decoder.feed(leftover)
                leftover.clear()
            }
            while !ended {
                if let part = decoder.nextPart() {
                    switch part {
                    case .body(let bytes): return bytes
                    case .end: ended = true
                    case .head: throw DirectHTTPError.malformed("a second answer")
                    }
                    continue
                }
                // The stream ended before the answer did.
                if decoder.isClosed { throw DirectHTTPError.closedEarly }
                var buffer = ByteBuffer()
                let count = try read(into: &buffer, bufferBytes: bufferBytes, filling: filling)
                if buffer.readableBytes > 0 { try decoder.feed(buffer) }
                if count == 0 || (filling && count < bufferBytes) { try decoder.close() }
            }
            return nil
        }

        /// Reads up to `bufferBytes` into `buffer` (all of them when `filling`, unless the stream ends
        /// first); the count read, 0 at the end of the stream.
        private func read(into buffer: inout ByteBuffer, bufferBytes: Int, filling: Bool) throws -> Int {
            let connection = self.connection
            return try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bufferBytes) { raw in
                var filled = 0
                repeat {
                    let count = try connection.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled..<bufferBytes]))
                    if count == 0 { break }
                    filled += count
                } while filling && filled < bufferBytes
                return filled
            }
        }
    }
}

/// An answer read by ``DirectHTTP/open(_:target:headers:network:deadline:canceller:)``: its status and
/// headers, with its body still on the connection. Used by one thread at a time; ``close()`` ends it.
final class DirectResponse: @unchecked Sendable {
    let status: Int
    let headers: HTTPHeaders
    private let reader: DirectHTTP.AnswerReader
    private let canceller: SocketCanceller

    init(status: Int, headers: HTTPHeaders, reader: DirectHTTP.AnswerReader, canceller: SocketCanceller) {
        self.status = status
        self.headers = headers
        self.reader = reader
        self.canceller = canceller
    }

    /// Closes the connection.
    func close() {
        canceller.close(reader.connection.descriptor)
    }

    /// The next bytes of the body, read with blocking calls in buffers of up to `bufferBytes`; `nil`
    /// once it has ended.
    func nextChunk(bufferBytes: Int) throws -> ByteBuffer? {
        try reader.nextBody(bufferBytes: bufferBytes, filling: false)
    }

    /// Reads the body to its end with blocking calls, handing it to `deliver` in buffers of up to
    /// `chunkBytes`: a body cut short throws ``DirectHTTPError/closedEarly`` once what came is
    /// delivered (a download resumes from there).
    func streamBody(chunkBytes: Int, _ deliver: (ByteBuffer) throws -> Void) throws {
        while let bytes = try reader.nextBody(bufferBytes: chunkBytes, filling: true) {
            if bytes.readableBytes > 0 { try deliver(bytes) }
        }
    }
}
