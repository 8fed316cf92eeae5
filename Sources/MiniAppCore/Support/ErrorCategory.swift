/// The kind of failure an error stands for, which the CLI maps to its documented exit code.
public enum ErrorCategory: String, Sendable, Hashable, CaseIterable {
    /// A bad option, argument or configuration value.
    case usage
    /// A malformed, hostile or unverifiable bundle, archive, manifest or platform answer.
    case badData
    /// An unknown app or version, nothing published, or nothing cached while offline.
    case notFound
    /// The platform is unreachable, failing, or rate limiting.
    case unavailable
    /// Another process holds a lock and did not release it in time.
    case busy
    /// A local input/output failure such as a full disk or an unwritable cache.
    case localIO
    /// The platform refused the credentials, or a required permission is not granted.
    case notAllowed
}

/// An error that knows which ``ErrorCategory`` it belongs to.
public protocol CategorizedError: Error, CustomStringConvertible {
    /// The kind of failure, used to pick the exit code.
    var category: ErrorCategory { get }
}
