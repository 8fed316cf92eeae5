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
    /// `http://` request goes on a connection of its own, made and read with blocking calls on
    /// `threadPool` (never on Swift's cooperative pool), with the same headers, timeouts, size limit
    /// and retries. It spares the several milliseconds that AsyncHTTPClient's first request spends
    /// setting itself up. A ``BundleInstaller`` with such a platform fetches plain `http://` zips on
    /// connections of their own too, each read on a thread of its download's own. `https://`, and a
    /// client given its own `HTTPClient`, are still served by AsyncHTTPClient.
    case perRequest(threadPool: NIOThreadPool)
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
        // `host` decoded IDNA through ICU, which cost a platform request about 0.45 ms (issue 25).
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
    /// The longest chunk-size line accepted, extensions included.
    static let maxChunkLineBytes = 4096

    /// GETs `target` (path and query, percent-encoded) from `endpoint` and returns the whole answer.
    /// A connection that cannot be made at all throws ``ConnectionFailure``; everything else that
    /// goes wrong throws ``DirectHTTPError`` (or `CancellationError` once `canceller` is cancelled).
    static func get(
        _ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders, network: NetworkSettings,
        deadline: ContinuousClock.Instant, canceller: SocketCanceller
    ) throws -> HTTPAnswer {
        let connection = try sendRequest(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
        defer { canceller.close(connection.descriptor) }
        return try readAnswer(from: connection, maxBytes: network.maxResponseBytes)
    }

    /// A new connection to `endpoint` with the GET of `target` written on it; closed when that fails.
    private static func sendRequest(
        _ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders, network: NetworkSettings,
        deadline: ContinuousClock.Instant, canceller: SocketCanceller
    ) throws -> Connection {
        let request = try requestBytes(endpoint, target: target, headers: headers)
        let descriptor = try connect(endpoint, timeout: network.connectTimeout, deadline: deadline, canceller: canceller)
        let connection = Connection(descriptor: descriptor, readTimeout: network.readTimeout, deadline: deadline, canceller: canceller)
        do {
            try connection.write(request)
        } catch {
            canceller.close(descriptor)
            throw error
        }
        return connection
    }

    /// Sends a GET of `target` and reads the head of its answer (interim 1xx answers skipped), leaving
    /// the body on the connection for ``DirectResponse/streamBody(chunkBytes:_:)``. Throws as
    /// ``get(_:target:headers:network:deadline:canceller:)`` does.
    static func open(
        _ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders, network: NetworkSettings,
        deadline: ContinuousClock.Instant, canceller: SocketCanceller
    ) throws -> DirectResponse {
        let connection = try sendRequest(endpoint, target: target, headers: headers, network: network, deadline: deadline, canceller: canceller)
        do {
            var source = ByteSource(connection: connection)
            while true {
                let (status, headers) = try parseHead(try source.readHead())
                if (100..<200).contains(status) {
                    guard status != 101 else { throw DirectHTTPError.malformed("an upgrade nobody asked for") }
                    continue
                }
                return DirectResponse(status: status, headers: headers, source: source, framing: try framing(status: status, headers: headers), canceller: canceller)
            }
        } catch {
            canceller.close(connection.descriptor)
            throw error
        }
    }

    static func requestBytes(_ endpoint: DirectEndpoint, target: String, headers: HTTPHeaders) throws -> [UInt8] {
        var text = "GET \(target) HTTP/1.1\r\nHost: \(endpoint.hostHeader)\r\n"
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte), value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                throw DirectHTTPError.invalidHeader(name.utf8.allSatisfy(isTokenByte) ? name : "name")
            }
            text += "\(name): \(value)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
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

    /// Reads the answer to the request written on `connection`: interim 1xx answers are skipped; the
    /// body is framed by `Transfer-Encoding: chunked`, `Content-Length` or the end of the stream.
    static func readAnswer(from connection: Connection, maxBytes: Int) throws -> HTTPAnswer {
        var reader = ByteSource(connection: connection)
        while true {
            let head = try reader.readHead()
            let (status, headers) = try parseHead(head)
            if (100..<200).contains(status) {
                guard status != 101 else { throw DirectHTTPError.malformed("an upgrade nobody asked for") }
                continue
            }
            let body: Data
            switch try framing(status: status, headers: headers) {
            case .length(let length):
                guard length <= Int64(maxBytes) else { throw DirectHTTPError.tooLarge }
                body = try reader.read(exactly: Int(length))
            case .chunked:
                body = try reader.readChunked(maxBytes: maxBytes)
            case .toEnd:
                body = try reader.readToEnd(maxBytes: maxBytes)
            }
            return HTTPAnswer(status: status, headers: headers, body: body)
        }
    }

    /// How the body of a final answer is delimited (RFC 9112 §6.3). Anything a peer on the path
    /// could read otherwise is refused rather than guessed at: a transfer coding other than `chunked`
    /// alone (this client asks for none and decodes no other), `Transfer-Encoding` together with
    /// `Content-Length` (the mark of request smuggling and response splitting), and a
    /// `Content-Length` that is not one decimal number.
    static func framing(status: Int, headers: HTTPHeaders) throws -> DirectResponse.Framing {
        if status == 204 || status == 304 { return .length(0) }
        let codings = headers["Transfer-Encoding"]
        if !codings.isEmpty {
            let listed = codings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingCharacters(in: [" ", "\t"]) }
            guard listed.count == 1, listed[0].lowercased() == "chunked" else {
                throw DirectHTTPError.malformed("Transfer-Encoding other than chunked alone")
            }
            guard headers["Content-Length"].isEmpty else { throw DirectHTTPError.malformed("both Transfer-Encoding and Content-Length") }
            return .chunked(left: 0, started: false)
        }
        if let length = try contentLength(headers) { return .length(Int64(length)) }
        return .toEnd
    }

    /// The value of a hexadecimal digit, `nil` for any other byte.
    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }

    /// The size a chunk's line (without its end) gives, extensions dropped: `1*HEXDIG`, then nothing
    /// or `BWS ";"` and the extensions (RFC 9112 §7.1). No sign, `0x` or inner space, which
    /// `Int(_:radix:)` would take (`-1` made a negative size); leading zeros are fine, a size past
    /// `Int.max` is refused.
    static func chunkSize(_ line: ArraySlice<UInt8>) throws -> Int {
        var size = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = hexValue(line[index]) {
            let (shifted, overflowed) = size.multipliedReportingOverflow(by: 16)
            guard !overflowed else { throw DirectHTTPError.malformed("a chunk size too big") }
            size = shifted + digit
            index += 1
        }
        guard index > line.startIndex else { throw DirectHTTPError.malformed("chunk size") }
        let rest = line[index...]
        guard rest.isEmpty || rest.first(where: { $0 != 0x20 && $0 != 0x09 }) == UInt8(ascii: ";") else {
            throw DirectHTTPError.malformed("chunk size")
        }
        guard rest.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { throw DirectHTTPError.malformed("chunk extension") }
        return size
    }

    /// The status and headers of a head (without its blank line).
    static func parseHead(_ head: [UInt8]) throws -> (Int, HTTPHeaders) {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        guard !lines.isEmpty else { throw DirectHTTPError.malformed("no status line") }
        let statusLine = Array(lines.removeFirst())
        // HTTP/1.x NNN[ reason]
        guard statusLine.count >= 12, statusLine.starts(with: Array("HTTP/1.".utf8)),
              (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(statusLine[7]), statusLine[8] == UInt8(ascii: " "),
              statusLine[9..<12].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              statusLine.count == 12 || statusLine[12] == UInt8(ascii: " ")
        else { throw DirectHTTPError.malformed("status line") }
        let status = statusLine[9..<12].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard status >= 100 else { throw DirectHTTPError.malformed("status line") }
        var headers = HTTPHeaders()
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[line.startIndex..<colon].allSatisfy(isTokenByte)
            else { throw DirectHTTPError.malformed("header line") }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            let value = line[(colon + 1)...].drop(while: { $0 == 0x20 || $0 == 0x09 })
            var end = value.endIndex
            while end > value.startIndex, value[end - 1] == 0x20 || value[end - 1] == 0x09 { end -= 1 }
            headers.add(name: name, value: String(decoding: value[value.startIndex..<end], as: UTF8.self))
        }
        return (status, headers)
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

    /// The bytes of a connection, read as needed, with what was read past a head kept for the body.
    struct ByteSource {
        let connection: Connection
        /// Bytes read and not yet used, from `start`.
        private var pending: [UInt8] = []
        private var start = 0

        init(connection: Connection) {
            self.connection = connection
        }

        private var available: Int { pending.count - start }

        /// Reads more into `pending`; false at the end of the stream.
        private mutating func fill() throws -> Bool {
            let old = pending.count
            pending.append(contentsOf: repeatElement(0, count: 64 << 10))
            let connection = self.connection
            let count = try pending.withUnsafeMutableBytes { try connection.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[old...])) }
            pending.removeLast(pending.count - old - count)
            return count > 0
        }

        /// Drops the bytes used, when all were.
        private mutating func compact() {
            if start > 0, start == pending.count {
                pending.removeAll(keepingCapacity: true)
                start = 0
            }
        }

        /// A head's bytes without the blank line that ends it.
        mutating func readHead() throws -> [UInt8] {
            compact()
            var searched = start
            while true {
                if let end = headEnd(from: searched) {
                    guard end.head - start <= DirectHTTP.maxHeadBytes else { throw DirectHTTPError.malformed("the head is larger than \(DirectHTTP.maxHeadBytes) bytes") }
                    let head = Array(pending[start..<end.head])
                    start = end.body
                    return head
                }
                guard available <= DirectHTTP.maxHeadBytes else { throw DirectHTTPError.malformed("the head is larger than \(DirectHTTP.maxHeadBytes) bytes") }
                searched = max(start, pending.count - 3)
                guard try fill() else { throw DirectHTTPError.closedEarly }
            }
        }

        /// Where the head that starts at `start` ends (`\r\n\r\n` or `\n\n`), searching from `from`.
        private func headEnd(from: Int) -> (head: Int, body: Int)? {
            var index = from
            while index < pending.count {
                if pending[index] == UInt8(ascii: "\n") {
                    if index + 1 < pending.count, pending[index + 1] == UInt8(ascii: "\n") { return (index, index + 2) }
                    if index + 2 < pending.count, pending[index + 1] == UInt8(ascii: "\r"), pending[index + 2] == UInt8(ascii: "\n") { return (index, index + 3) }
                }
                index += 1
            }
            return nil
        }

        /// Exactly `count` bytes; the stream ending first is an error.
        mutating func read(exactly count: Int) throws -> Data {
            var body = Data(count: count)
            let taken = min(count, available)
            body.withUnsafeMutableBytes { target in
                pending.withUnsafeBytes { source in
                    target.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: taken)
                }
            }
            start += taken
            var filled = taken
            let connection = self.connection
            while filled < count {
                let read = try body.withUnsafeMutableBytes { try connection.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
                guard read > 0 else { throw DirectHTTPError.closedEarly }
                filled += read
            }
            return body
        }

        /// Everything up to the end of the stream.
        mutating func readToEnd(maxBytes: Int) throws -> Data {
            while try fill() {
                guard available <= maxBytes else { throw DirectHTTPError.tooLarge }
            }
            guard available <= maxBytes else { throw DirectHTTPError.tooLarge }
            defer { start = pending.count }
            return Data(pending[start...])
        }

        /// Up to `buffer.count` bytes into `buffer`, what was read past the head first; 0 at the end of
        /// the stream.
        mutating func readSome(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard !buffer.isEmpty else { return 0 }
            if available > 0 {
                let count = min(available, buffer.count)
                pending.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + start, byteCount: count) }
                start += count
                compact()
                return count
            }
            return try connection.read(into: buffer)
        }

        /// A line ending in `\n` (without it and a `\r` before it), of at most `limit` bytes before
        /// its end, however the bytes arrived.
        mutating func readLine(limit: Int) throws -> ArraySlice<UInt8> {
            compact()
            var searched = start
            while true {
                if let newline = pending[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                    var line = pending[start..<newline]
                    if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                    guard line.count <= limit else { throw DirectHTTPError.malformed("a line of the chunked body is too long") }
                    start = newline + 1
                    return line
                }
                guard available <= limit else { throw DirectHTTPError.malformed("a line of the chunked body is too long") }
                searched = pending.count
                guard try fill() else { throw DirectHTTPError.closedEarly }
            }
        }

        /// Reads the trailer fields after a chunked body's last chunk, up to the blank line, and drops
        /// them: all together no longer than a head, each a field line.
        mutating func skipTrailers() throws {
            var total = 0
            while true {
                let line = try readLine(limit: DirectHTTP.maxHeadBytes - total)
                if line.isEmpty { return }
                total += line.count + 2
                guard total <= DirectHTTP.maxHeadBytes else { throw DirectHTTPError.malformed("the trailers are larger than \(DirectHTTP.maxHeadBytes) bytes") }
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                      line[line.startIndex..<colon].allSatisfy(DirectHTTP.isTokenByte)
                else { throw DirectHTTPError.malformed("trailer line") }
            }
        }

        /// A chunked body, decoded; its trailers are read and dropped.
        mutating func readChunked(maxBytes: Int) throws -> Data {
            var body = Data()
            while true {
                let size = try DirectHTTP.chunkSize(try readLine(limit: DirectHTTP.maxChunkLineBytes))
                if size == 0 {
                    try skipTrailers()
                    return body
                }
                guard size <= maxBytes - body.count else { throw DirectHTTPError.tooLarge }
                body.append(try read(exactly: size))
                guard try readLine(limit: 2).isEmpty else { throw DirectHTTPError.malformed("chunk end") }
            }
        }
    }
}

/// An answer read by ``DirectHTTP/open(_:target:headers:network:deadline:canceller:)``: its status and
/// headers, with its body still on the connection. Used by one thread at a time; ``close()`` ends it.
final class DirectResponse: @unchecked Sendable {
    enum Framing {
        /// `Content-Length`: the bytes left.
        case length(Int64)
        /// `Transfer-Encoding: chunked`: the bytes left in the current chunk, and whether one began.
        case chunked(left: Int, started: Bool)
        /// Up to the end of the stream.
        case toEnd
    }

    let status: Int
    let headers: HTTPHeaders
    private var source: DirectHTTP.ByteSource
    private var framing: Framing
    private let canceller: SocketCanceller

    init(status: Int, headers: HTTPHeaders, source: DirectHTTP.ByteSource, framing: Framing, canceller: SocketCanceller) {
        self.status = status
        self.headers = headers
        self.source = source
        self.framing = framing
        self.canceller = canceller
    }

    /// Closes the connection.
    func close() {
        canceller.close(source.connection.descriptor)
    }

    /// Reads the body to its end with blocking calls, handing it to `deliver` in buffers of
    /// `chunkBytes` (the last one shorter): a body cut short throws ``DirectHTTPError/closedEarly``
    /// once what came is delivered (a download resumes from there).
    func streamBody(chunkBytes: Int, _ deliver: (ByteBuffer) throws -> Void) throws {
        let allocator = ByteBufferAllocator()
        var ended = false
        while !ended {
            var buffer = allocator.buffer(capacity: chunkBytes)
            var failure: (any Error)?
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: chunkBytes) { raw in
                var filled = 0
                while filled < chunkBytes {
                    let count: Int
                    do {
                        count = try nextBytes(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled..<chunkBytes]))
                    } catch {
                        failure = error
                        break
                    }
                    if count == 0 {
                        ended = true
                        break
                    }
                    filled += count
                }
                return filled
            }
            if buffer.readableBytes > 0 { try deliver(buffer) }
            if let failure { throw failure }
        }
    }

    /// The next bytes of the body into `buffer`; 0 once it has ended.
    private func nextBytes(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        switch framing {
        case .length(let left):
            guard left > 0 else { return 0 }
            let count = try source.readSome(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(Int64(buffer.count), left))]))
            guard count > 0 else { throw DirectHTTPError.closedEarly }
            framing = .length(left - Int64(count))
            return count
        case .toEnd:
            return try source.readSome(into: buffer)
        case .chunked(var left, let started):
            if left == 0 {
                if started { guard try source.readLine(limit: 2).isEmpty else { throw DirectHTTPError.malformed("chunk end") } }
                let size = try DirectHTTP.chunkSize(try source.readLine(limit: DirectHTTP.maxChunkLineBytes))
                if size == 0 {
                    try source.skipTrailers()
                    framing = .length(0)
                    return 0
                }
                left = size
            }
            let count = try source.readSome(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(buffer.count, left)]))
            guard count > 0 else { throw DirectHTTPError.closedEarly }
            framing = .chunked(left: left - count, started: true)
            return count
        }
    }
}
