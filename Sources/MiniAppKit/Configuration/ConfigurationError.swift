public import MiniAppCore
/// A configuration value that is missing or cannot be used.
public enum ConfigurationError: CategorizedError, Equatable {
    /// No platform was configured for a command that needs one.
    case missingPlatform
    /// A remote platform was configured without a project id.
    case missingProjectId
    /// A value from `source` cannot be used for `setting`.
    case invalidValue(setting: String, source: String, value: String, expected: String)
    /// The config file exists but cannot be read or parsed.
    case unreadableFile(path: String, reason: String)

    public var category: ErrorCategory { .usage }

    public var description: String {
        switch self {
        case .missingPlatform:
            return "no platform configured: set the configuration's platform"
        case .missingProjectId:
            return "no project id configured: set the configuration's project id (a remote platform needs one)"
        case .invalidValue(let setting, let source, let value, let expected):
            return "invalid \(setting) '\(Sanitizer.printable(value, limit: 120))' from \(source): \(expected)"
        case .unreadableFile(let path, let reason):
            return "cannot use the configuration file \(path): \(reason); fix it or load the configuration from another file"
        }
    }
}
