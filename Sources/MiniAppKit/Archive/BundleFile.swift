/// One file of an installed bundle, as recorded at install time.
public struct BundleFile: Sendable, Equatable, Codable {
    /// The path relative to the bundle folder, with `/` separators.
    public var path: String
    /// The size in bytes.
    public var size: Int64
    /// The lowercase hex SHA-256 of the contents.
    public var sha256: String
    /// The file's change time (seconds and nanoseconds since the epoch) right after it was written;
    /// any later change to its contents changes it, so an equal value lets a quick check skip hashing.
    public var changedAt: FileTimestamp

    /// A record with the given values.
    public init(path: String, size: Int64, sha256: String, changedAt: FileTimestamp) {
        self.path = path
        self.size = size
        self.sha256 = sha256
        self.changedAt = changedAt
    }
}

/// A file system timestamp with nanoseconds.
public struct FileTimestamp: Sendable, Equatable, Codable {
    public var seconds: Int64
    public var nanoseconds: Int64

    /// A timestamp with the given parts.
    public init(seconds: Int64, nanoseconds: Int64) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}
