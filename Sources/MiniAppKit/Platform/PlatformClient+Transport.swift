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
    /// The headers a platform API request carries besides ``RequestPolicy/commonHeaders`` and
    /// ``credentialHeaders``.
    var requestHeaders: HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "ras-app-id", value: projectId)
        headers.add(name: "ras-sdk-name", value: PackageInfo.name)
        headers.add(name: "ras-sdk-version", value: PackageInfo.version)
        return headers
    }

    /// The subscription key's header, when there is a key: sent only to the platform, whose redirects
    /// are never followed (see ``RequestPolicy/send(_:over:deadline:redirects:)``).
    var credentialHeaders: HTTPHeaders {
        guard let subscriptionKey else { return [:] }
        return ["apiKey": subscriptionKey.hasPrefix("ras-") ? subscriptionKey : "ras-" + subscriptionKey]
    }

    /// GETs `path` under the base URL and returns the 2xx answer, retrying connection errors, 5xx and
    /// 429 as ``RequestPolicy`` allows, and mapping every other failure to a ``PlatformError``. A
    /// redirect is not followed: it is an unexpected status.
    func get(path: String, query: [(String, String)] = [], resource: String) async throws -> HTTPAnswer {
        let target = path + Self.queryString(query)
        let url = baseURL.absoluteString + target
        var headers = requestHeaders
        headers.add(contentsOf: credentialHeaders)
        let request = HTTPRequest(url: url, headers: headers, direct: direct.map { ($0, $0.basePath + target) })
        let deadline = policy.deadline()
        return try await policy.retrying(url, deadline: deadline) { attempt in
            logger.debug("platform request", metadata: ["url": "\(url)", "attempt": "\(attempt)"])
            do {
                let answer = try await transport.fetch(request, deadline: deadline)
                switch RequestPolicy.verdict(answer.status, headers: answer.headers) {
                case .success:
                    return .done(answer)
                case .rateLimited(let retryAfter):
                    let seconds = retryAfter.map { Int(($0.nanoseconds + 999_999_999) / 1_000_000_000) }
                    return .retry(PlatformError.rateLimited(resource: resource, retryAfterSeconds: seconds), retryAfter: retryAfter)
                case .transient:
                    return .retry(PlatformError.serverError(resource: resource, status: answer.status, attempts: attempt))
                case .other:
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
                return .retry(PlatformError.unreachable(resource: resource, reason: error.description, attempts: attempt))
            } catch {
                if let clientError = error as? HTTPClientError, clientError == .cancelled { throw CancellationError() }
                return .retry(PlatformError.unreachable(resource: resource, reason: Self.describe(error), attempts: attempt))
            }
        }
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
