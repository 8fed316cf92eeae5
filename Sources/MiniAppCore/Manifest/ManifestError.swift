/// A manifest.json that cannot be used.
public enum ManifestError: CategorizedError, Equatable {
    /// The file is not a valid manifest.
    case malformed(source: String, reason: String)

    public var category: ErrorCategory { .badData }

    public var description: String {
        switch self {
        case .malformed(let source, let reason):
            return "\(source) is not a valid manifest.json (\(reason)): fix the bundle's manifest.json"
        }
    }
}
