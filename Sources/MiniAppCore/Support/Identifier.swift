/// Validation of the identifiers that end up in URL paths and, later, in cache paths.
public enum Identifier {
    /// The longest identifier accepted.
    public static let maximumLength = 128

    /// Whether `value` is safe to use as an app, version, project or key id: 1 to 128 characters of
    /// `A-Z a-z 0-9 . _ -`, not starting with a dot.
    public static func isValid(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= maximumLength, value.first != "." else { return false }
        return value.utf8.allSatisfy(isAllowed)
    }

    /// ``isValid(_:)`` of the text whose UTF-8 is `utf8`.
    package static func isValid(utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = utf8.first, first != UInt8(ascii: "."), utf8.count <= maximumLength else { return false }
        return utf8.allSatisfy(isAllowed)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// Throws ``IdentifierError`` unless `value` is a valid identifier of the given kind.
    public static func validate(_ value: String, as kind: IdentifierKind) throws(IdentifierError) {
        guard isValid(value) else { throw IdentifierError.invalid(kind: kind, value: value) }
    }
}

/// What an identifier names, for error messages.
public enum IdentifierKind: String, Sendable {
    /// An app id.
    case app = "app id"
    /// A version id.
    case version = "version id"
    /// A project id.
    case project = "project id"
    /// A signing key id.
    case key = "key id"
    /// A preview code's token.
    case previewToken = "preview token"
}

/// An identifier that cannot be used safely.
public enum IdentifierError: CategorizedError, Equatable {
    /// The value has characters outside `A-Z a-z 0-9 . _ -`, starts with a dot, or is empty or too long.
    case invalid(kind: IdentifierKind, value: String)

    public var category: ErrorCategory { .usage }

    public var description: String {
        switch self {
        case .invalid(let kind, let value):
            return "invalid \(kind.rawValue) '\(Sanitizer.printable(value, limit: 80))': use 1 to \(Identifier.maximumLength) characters of A-Z a-z 0-9 . _ - not starting with a dot"
        }
    }
}
