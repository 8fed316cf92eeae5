import MiniAppCore
import MiniAppKit

/// The exit codes of spec/cli.md.
enum ExitStatus {
    static let usage: Int32 = 64
    static let interrupted: Int32 = 130
    static let internalError: Int32 = 70

    /// The exit code for a failure of this category.
    static func code(for category: ErrorCategory) -> Int32 {
        switch category {
        case .usage: return 64
        case .badData: return 65
        case .notFound: return 66
        case .unavailable: return 69
        case .busy: return 73
        case .localIO: return 74
        case .notAllowed: return 77
        }
    }
}
