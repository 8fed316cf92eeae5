import Foundation
import Logging
import NIOHTTP1
import MiniAppCore

/// How every HTTP request of the library is made, over ``HTTPTransport``: the headers each carries,
/// redirects, retries with backoff, `429` with its `Retry-After`, and the time budget. The platform
/// client, the zip downloader and delta downloads all go through it; what an answer means (a record,
/// a zip, a range) and the errors that name it stay theirs.
struct RequestPolicy: Sendable {
    /// The timeouts, the retry limits and the size cap.
    let network: NetworkSettings
    let logger: Logger

    /// How many redirects one request follows.
    static let maxRedirects = 5

    /// The headers every request carries, before its own: the one place the `User-Agent` is set.
    static var commonHeaders: HTTPHeaders {
        ["User-Agent": PackageInfo.userAgent]
    }

    /// When a request started now must be done by, retries and waits included.
    func deadline() -> ContinuousClock.Instant {
        .now + network.retry.totalBudget
    }

    // MARK: Retries

    /// What one attempt came to.
    enum Attempt<Value> {
        /// The request is done.
        case done(Value)
        /// It failed with `failure` and may be tried again: at once after `retryAfter` when the server
        /// asked for that wait (a `Retry-After` past ``RetryPolicy/maxRetryAfter`` fails it now), else
        /// after the policy's backoff.
        case retry(any Error, retryAfter: Duration? = nil)
    }

    /// What a status says about retrying, the same for every request.
    enum Verdict: Equatable {
        /// A `2xx`.
        case success
        /// A `429`, with the wait its `Retry-After` asks for.
        case rateLimited(Duration?)
        /// A `408` or `5xx`: worth another attempt.
        case transient
        /// Anything else: the caller says what it means.
        case other
    }

    /// What `status` (with `headers`) says about retrying.
    static func verdict(_ status: Int, headers: HTTPHeaders) -> Verdict {
        switch status {
        case 200..<300: .success
        case 429: .rateLimited(retryAfter(headers))
        case 408, 500..<600: .transient
        default: .other
        }
    }

    /// Runs `attempt` (numbered from 1, with the request's deadline) until it is done, it throws, the
    /// attempts of ``RetryPolicy/maxAttempts`` are spent, or the next wait would pass the deadline;
    /// then the last failure is thrown. Between attempts it waits the backoff, with jitter, or the
    /// server's `Retry-After`.
    func retrying<Value>(
        _ url: @autoclosure () -> String, deadline: ContinuousClock.Instant,
        _ attempt: (_ number: Int) async throws -> Attempt<Value>
    ) async throws -> Value {
        let retry = network.retry
        var number = 0
        while true {
            number += 1
            try Task.checkCancellation()
            var delay = retry.backoff(beforeRetry: number)
            switch try await attempt(number) {
            case .done(let value):
                return value
            case .retry(let failure, let retryAfter):
                if let retryAfter {
                    guard retryAfter <= retry.maxRetryAfter else { throw failure }
                    delay = retryAfter
                }
                guard number < retry.maxAttempts, ContinuousClock.now + delay < deadline else { throw failure }
                logger.debug("retrying request", metadata: ["url": "\(url())", "delay": "\(delay)"])
                try await Task.sleep(for: delay)
            }
        }
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

    // MARK: Redirects

    /// Why a redirect was not followed.
    enum RedirectFailure: Error {
        /// A `3xx` without a `Location`, or to a URL that is not `http://` or `https://`.
        case unfollowable(url: String, status: Int)
        /// More than ``RequestPolicy/maxRedirects`` in a row.
        case tooMany
    }

    /// Sends `request` over `transport` and follows its redirects, at most ``maxRedirects`` counted in
    /// `redirects` (which the caller keeps across its attempts), to `http://` and `https://` URLs only.
    /// Returns the first answer that is not a redirect, with the URL that gave it.
    ///
    /// Only requests without credentials come here (zips and their ranges): a platform request, which
    /// carries the subscription key, is sent once per attempt with ``HTTPTransport/fetch(_:deadline:)``
    /// and its redirects are not followed, so the key never reaches another origin.
    func send(
        _ request: HTTPRequest, over transport: HTTPTransport, deadline: ContinuousClock.Instant, redirects: inout Int
    ) async throws -> (HTTPResponse, url: String) {
        var request = request
        while true {
            try Task.checkCancellation()
            let response = try await transport.open(request, deadline: deadline)
            guard Self.isRedirect(response.status) else { return (response, request.url) }
            response.close()
            guard let location = response.headers.first(name: "Location"), let next = URL(string: location, relativeTo: URL(string: request.url)),
                  ["http", "https"].contains(next.scheme?.lowercased() ?? "") else {
                throw RedirectFailure.unfollowable(url: request.url, status: response.status)
            }
            guard redirects < Self.maxRedirects else { throw RedirectFailure.tooMany }
            redirects += 1
            logger.debug("redirect", metadata: ["url": "\(request.url)", "location": "\(next.absoluteString)"])
            request.url = next.absoluteString
            request.direct = nil
        }
    }

    static func isRedirect(_ status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status)
    }

    /// The scheme, host and port of `url`: what makes two URLs one origin.
    static func origin(_ url: String) -> String {
        guard let components = URLComponents(string: url) else { return url }
        return "\(components.scheme ?? "")://\(components.host ?? ""):\(components.port.map(String.init) ?? "")"
    }
}
