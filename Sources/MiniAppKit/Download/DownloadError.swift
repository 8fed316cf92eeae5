public import MiniAppCore
/// A bundle download that failed.
public enum DownloadError: CategorizedError, Equatable {
    /// The zip URL answered 404 or 410: the platform is broken for this version.
    case notFound(url: String)
    /// The zip URL answered a status that is not a success, after retries where they apply.
    case httpStatus(url: String, status: Int, attempts: Int)
    /// No complete answer: connection errors, drops or timeouts until the retries ran out.
    case unreachable(url: String, reason: String, attempts: Int)
    /// The server sent more bytes than it announced.
    case lengthMismatch(url: String, expected: Int64, received: Int64)
    /// The zip URL redirected more times than one download follows.
    case tooManyRedirects(url: String, limit: Int)
    /// The bundle is larger than the configured limit.
    case tooLarge(url: String, limitBytes: Int64)
    /// Writing the download failed.
    case io(path: String, reason: String, diskFull: Bool)
    /// The platform's latest version is older than one it answered before or one installed from it.
    case rollback(Rollback)

    public var category: ErrorCategory {
        switch self {
        case .notFound, .httpStatus, .unreachable, .tooManyRedirects: return .unavailable
        case .lengthMismatch, .tooLarge, .rollback: return .badData
        case .io: return .localIO
        }
    }

    public var description: String {
        switch self {
        case .notFound(let url):
            return "the bundle at \(url) is missing (HTTP 404): the platform is broken for this version, try again later"
        case .httpStatus(let url, let status, let attempts):
            return "downloading \(url) failed with HTTP \(status) after \(attempts) attempt\(attempts == 1 ? "" : "s"): try again later"
        case .unreachable(let url, let reason, let attempts):
            return "downloading \(url) failed (\(reason), \(attempts) attempt\(attempts == 1 ? "" : "s")): check the network and try again"
        case .tooManyRedirects(let url, let limit):
            return "downloading \(url) was redirected more than \(limit) times: the platform's zip URL is misconfigured"
        case .lengthMismatch(let url, let expected, let received):
            return "the bundle at \(url) is longer than announced (\(received) bytes for a Content-Length of \(expected)): the server is misbehaving"
        case .tooLarge(let url, let limit):
            return "the bundle at \(url) is larger than \(limit) bytes (raise the configuration's maximum download size if it is genuine)"
        case .io(let path, let reason, let diskFull):
            return "cannot write \(path): \(reason)\(diskFull ? "; free some disk space and retry" : "; check the cache directory and its permissions")"
        case .rollback(let rollback):
            return "\(rollback); refused (ask for the older version by its id, or allow a downgrade, to install it)"
        }
    }
}

/// How far a download has come.
public struct DownloadProgress: Sendable, Equatable {
    /// Bytes received so far.
    public var receivedBytes: Int64
    /// The announced size, when the server announced one.
    public var totalBytes: Int64?
}
