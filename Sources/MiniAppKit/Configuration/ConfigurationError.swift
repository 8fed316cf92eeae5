import MiniAppCore
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
            return "no platform configured: pass --platform or set MINIAPP_PLATFORM"
        case .missingProjectId:
            return "no project id configured: pass --project-id or set MINIAPP_PROJECT_ID"
        case .invalidValue(let setting, let source, let value, let expected):
            return "invalid \(setting) '\(Sanitizer.printable(value, limit: 120))' from \(source): \(expected)"
        case .unreadableFile(let path, let reason):
            return "cannot use config file \(path): \(reason); fix it or point MINIAPP_CONFIG elsewhere"
        }
    }
}
