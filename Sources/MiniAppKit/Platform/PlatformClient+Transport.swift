import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import MiniAppCore
import NIOPosix

/// A complete platform answer: status, headers and the whole body.
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: Data
}

extension PlatformClient {
    /// The headers every platform API request carries.
    var requestHeaders: HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: PackageInfo.userAgent)
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "ras-app-id", value: projectId)
        headers.add(name: "ras-sdk-name", value: PackageInfo.name)
        headers.add(name: "ras-sdk-version", value: PackageInfo.version)
        if let subscriptionKey {
            headers.add(name: "apiKey", value: subscriptionKey.hasPrefix("ras-") ? subscriptionKey : "ras-" + subscriptionKey)
        }
        return headers
    }

    /// GETs `path` under the base URL and returns the 2xx answer, retrying connection errors, 5xx and
    /// 429 within the retry policy, and mapping every other failure to a ``PlatformError``.
    func get(path: String, query: [(String, String)] = [], resource: String) async throws -> HTTPAnswer {
        let target = path + Self.queryString(query)
        let url = baseURL.absoluteString + target
        let policy = network.retry
        let clock = ContinuousClock()
        let deadline = clock.now + policy.totalBudget
        var attempt = 0
        while true {
            attempt += 1
            try Task.checkCancellation()
            var failure: PlatformError
            var delay = policy.backoff(beforeRetry: attempt)
            logger.debug("platform request", metadata: ["url": "\(url)", "attempt": "\(attempt)"])
            do {
                let answer = try await send(url: url, target: target, until: deadline)
                switch answer.status {
                case 200..<300:
                    return answer
                case 429:
                    let retryAfter = Self.retryAfter(answer.headers)
                    failure = .rateLimited(resource: resource, retryAfterSeconds: retryAfter.map { Int(($0.nanoseconds + 999_999_999) / 1_000_000_000) })
                    if let retryAfter {
                        guard retryAfter <= policy.maxRetryAfter else { throw failure }
                        delay = retryAfter
                    }
                case 408, 500..<600:
                    failure = .serverError(resource: resource, status: answer.status, attempts: attempt)
                default:
                    throw mapStatus(answer, resource: resource)
                }
            } catch let error as PlatformError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as ConnectionFailure {
                throw PlatformError.unreachable(resource: resource, reason: error.description, attempts: attempt)
            } catch is NIOTooManyBytesError {
                throw PlatformError.invalidResponse(resource: resource, reason: "it is larger than \(network.maxResponseBytes) bytes")
            } catch DirectHTTPError.tooLarge {
                throw PlatformError.invalidResponse(resource: resource, reason: "it is larger than \(network.maxResponseBytes) bytes")
            } catch let error as DirectHTTPError {
                if case .invalidHeader = error { throw PlatformError.unreachable(resource: resource, reason: error.description, attempts: attempt) }
                failure = .unreachable(resource: resource, reason: error.description, attempts: attempt)
            } catch {
                if let clientError = error as? HTTPClientError, clientError == .cancelled { throw CancellationError() }
                failure = .unreachable(resource: resource, reason: Self.describe(error), attempts: attempt)
            }
            guard attempt < policy.maxAttempts, clock.now + delay < deadline else {
                throw failure.withAttempts(attempt)
            }
            logger.debug("retrying platform request", metadata: ["url": "\(url)", "delay": "\(delay)"])
            try await Task.sleep(for: delay)
        }
    }

    /// Sends one GET of `target` (path and query under the base URL), on a connection of its own when
    /// the client was made with ``PlatformConnections/perRequest`` for a plain `http://`
    /// platform, else through AsyncHTTPClient.
    private func send(url: String, target: String, until deadline: ContinuousClock.Instant) async throws -> HTTPAnswer {
        if let direct {
            let canceller = SocketCanceller()
            let (headers, network) = (requestHeaders, network)
            return try await withTaskCancellationHandler {
                try await executor.run {
                    try DirectHTTP.get(direct, target: direct.basePath + target, headers: headers, network: network, deadline: deadline, canceller: canceller)
                }
            } onCancel: {
                canceller.cancel()
            }
        }
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers = requestHeaders
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw HTTPClientError.deadlineExceeded }
        let response = try await httpConnections.execute(request, deadline: .now() + remaining.timeAmount)
        let body = try await response.body.collect(upTo: network.maxResponseBytes)
        return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
    }

    private func mapStatus(_ answer: HTTPAnswer, resource: String) -> PlatformError {
        let message = Self.errorMessage(in: answer.body).map { Sanitizer.redacting(subscriptionKey, in: $0) }
        switch answer.status {
        case 400: return .badRequest(resource: resource, message: message)
        case 401, 403: return .unauthorized(resource: resource, status: answer.status, message: message)
        case 404, 410: return .notFound(resource: resource, message: message)
        default: return .unexpectedStatus(resource: resource, status: answer.status)
        }
    }

    /// The human message of an error body (`message`, `error_description` or `error`), if any.
    static func errorMessage(in body: Data) -> String? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: body) else { return nil }
        for key in ["message", "error_description", "error"] {
            if case .string(let text)? = object[key], !text.isEmpty { return text }
        }
        return nil
    }

    /// The wait a `Retry-After` header asks for, in seconds or as an HTTP date.
    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        guard let value = headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSinceNow * 1000)))
    }

    private static func queryString(_ items: [(String, String)]) -> String {
        // Appended in a loop: `joined(separator:)` here looked up a conformance of `[String]` at run
        // time, a scan of every conformance record that cost the latest's request about 0.2 ms.
        var query = ""
        for (index, (name, value)) in items.enumerated() {
            query += index == 0 ? "?" : "&"
            query += name
            query += "="
            query += queryEncoded(value)
        }
        return query
    }

    /// `value` with every byte of its UTF-8 percent-encoded (`%` and two upper-case hex digits) except
    /// what `CharacterSet.urlQueryAllowed` allows, less `& = + ;`: the same text as Foundation's
    /// `addingPercentEncoding(withAllowedCharacters:)`, which goes through CoreFoundation and cost the
    /// first request of a `download` about 0.3 ms.
    static func queryEncoded(_ value: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if isQueryAllowed(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(upperHexDigits[Int(byte >> 4)])
                out.append(upperHexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let upperHexDigits = Array("0123456789ABCDEF".utf8)

    private static func isQueryAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: ","): true
        case UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "?"), UInt8(ascii: "@"): true
        default: false
        }
    }

    /// A short readable reason for a transport error.
    static func describe(_ error: any Error) -> String {
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .connectTimeout: return "connection timed out"
            case .readTimeout: return "no answer within the read timeout"
            case .deadlineExceeded: return "the time budget ran out"
            case .remoteConnectionClosed: return "the connection was closed before the answer was complete"
            case .tlsHandshakeTimeout: return "TLS handshake timed out"
            default: return "HTTP error: \(clientError)"
            }
        }
        let text = String(describing: error)
        if text.localizedCaseInsensitiveContains("refused") { return "connection refused" }
        if text.localizedCaseInsensitiveContains("dns") || text.localizedCaseInsensitiveContains("resolve") { return "the host name does not resolve" }
        return Sanitizer.printable(text, limit: 120)
    }
}

extension PlatformError {
    /// The same error with the attempt count updated.
    func withAttempts(_ attempts: Int) -> PlatformError {
        switch self {
        case .serverError(let resource, let status, _): return .serverError(resource: resource, status: status, attempts: attempts)
        case .unreachable(let resource, let reason, _): return .unreachable(resource: resource, reason: reason, attempts: attempts)
        default: return self
        }
    }
}
