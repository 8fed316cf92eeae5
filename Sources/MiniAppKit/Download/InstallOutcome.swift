public import MiniAppCore
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
