public import MiniAppCore
/// What an install, download or load produced, with the notes a user should see.
public struct InstallOutcome: Sendable {
    /// The cached version.
    public var record: InstallRecord
    /// Warnings to show on stderr: an advisory signature, a fallback to the cache.
    public var notes: [String]
    /// The platform's latest version that `load` refused as a rollback, launching ``record`` instead.
    public var rollback: Rollback?

    /// An outcome with the given record and notes.
    public init(record: InstallRecord, notes: [String] = []) {
        self.record = record
        self.notes = notes
    }
}

/// What an installer's observers hear of an install (``BundleInstaller/installs(buffered:)``).
public enum InstallEvent: Sendable, Equatable {
    /// Bytes of the version arrived.
    case progress(appId: String, versionId: String, DownloadProgress)
    /// The version is installed: downloaded or read from a bundle, checked, unzipped and cached.
    case installed(InstallRecord)
    /// The install failed, and the cache is as it was; `reason` is the error's text.
    case failed(appId: String, versionId: String, reason: String)
}
