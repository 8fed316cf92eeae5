/// A platform request that failed, one case per row of the platform API's error table.
public enum PlatformError: CategorizedError, Equatable {
    /// 404, or an empty answer where something was expected.
    case notFound(resource: String, message: String?)
    /// 401 or 403: the subscription key is missing or wrong.
    case unauthorized(resource: String, status: Int, message: String?)
    /// 400: the platform rejected the request itself.
    case badRequest(resource: String, message: String?)
    /// 429 with a `Retry-After` longer than the configured cap, or 429 until the retries ran out.
    case rateLimited(resource: String, retryAfterSeconds: Int?)
    /// 5xx until the retries ran out.
    case serverError(resource: String, status: Int, attempts: Int)
    /// No answer: the connection failed, dropped or timed out until the retries ran out.
    case unreachable(resource: String, reason: String, attempts: Int)
    /// A 2xx answer that is not the expected JSON, or an answer that breaks the contract.
    case invalidResponse(resource: String, reason: String)
    /// A status the API does not use for this request.
    case unexpectedStatus(resource: String, status: Int)

    public var category: ErrorCategory {
        switch self {
        case .notFound: return .notFound
        case .unauthorized: return .notAllowed
        case .badRequest: return .usage
        case .rateLimited, .serverError, .unreachable: return .unavailable
        case .invalidResponse, .unexpectedStatus: return .badData
        }
    }

    public var description: String {
        switch self {
        case .notFound(let resource, let message):
            return "\(resource) not found\(Self.detail(message)): check the id against the platform's app list"
        case .unauthorized(let resource, let status, let message):
            return "the platform refused the credentials for \(resource) (HTTP \(status)\(Self.detail(message, separator: ": "))): check the configured subscription key and project id"
        case .badRequest(let resource, let message):
            return "the platform rejected the request for \(resource) (HTTP 400\(Self.detail(message, separator: ": "))): check the ids and options"
        case .rateLimited(let resource, let retryAfter):
            let wait = retryAfter.map { " and asks to wait \($0) s" } ?? ""
            return "the platform is rate limiting requests for \(resource) (HTTP 429\(wait)): try again later"
        case .serverError(let resource, let status, let attempts):
            return "the platform failed on \(resource) with HTTP \(status) after \(attempts) attempt\(attempts == 1 ? "" : "s"): try again later"
        case .unreachable(let resource, let reason, let attempts):
            return "cannot reach the platform for \(resource) (\(reason), \(attempts) attempt\(attempts == 1 ? "" : "s")): check the platform URL and the network, or work offline from the cache"
        case .invalidResponse(let resource, let reason):
            return "the platform sent an invalid answer for \(resource): \(reason); the platform is misbehaving, report it to its operator"
        case .unexpectedStatus(let resource, let status):
            return "the platform answered HTTP \(status) for \(resource), which the API does not define: check that the platform URL points at a platform API"
        }
    }

    private static func detail(_ message: String?, separator: String = " ") -> String {
        guard let message, !message.isEmpty else { return "" }
        return separator == " " ? " (\(message))" : separator + message
    }
}
