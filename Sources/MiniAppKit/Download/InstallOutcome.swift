import MiniAppCore
/// What an install, download or load produced, with the notes a user should see.
public struct InstallOutcome: Sendable {
    /// The cached version.
    public var record: InstallRecord
    /// Warnings to show on stderr: an advisory signature, a fallback to the cache.
    public var notes: [String]

    /// An outcome with the given record and notes.
    public init(record: InstallRecord, notes: [String] = []) {
        self.record = record
        self.notes = notes
    }
}

/// Coalesces concurrent installs of the same version in one process into one.
actor InstallCoordinator {
    private var running: [String: Task<InstallOutcome, any Error>] = [:]

    /// Runs `operation` for `key`, or joins the run already going for it.
    func run(_ key: String, _ operation: @escaping @Sendable () async throws -> InstallOutcome) async throws -> InstallOutcome {
        if let task = running[key] { return try await task.value }
        let task = Task { try await operation() }
        running[key] = task
        defer { running[key] = nil }
        return try await task.value
    }
}
