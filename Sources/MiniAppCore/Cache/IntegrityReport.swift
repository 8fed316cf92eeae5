/// What a check of a cached version against its install-time file list found.
public struct IntegrityReport: Sendable, Equatable {
    /// One line per problem: `changed: <path>`, `missing: <path>`, `added: <path>`, or a broader one.
    public var problems: [String]

    /// Whether the version is exactly as installed.
    public var intact: Bool { problems.isEmpty }

    /// A report with the given problems.
    public init(problems: [String] = []) {
        self.problems = problems
    }
}
