/// Why an archive was refused or could not be extracted.
public enum ArchiveError: CategorizedError, Equatable {
    /// An entry's name is absolute, climbs out with `..`, uses backslashes or control characters.
    case unsafePath(entry: String, reason: String)
    /// An entry is something other than a regular file or a folder.
    case unsupportedEntry(entry: String, kind: String)
    /// Two entries have the same name, or a file and a folder share one.
    case duplicateEntry(entry: String)
    /// An entry is encrypted.
    case encryptedEntry(entry: String)
    /// An entry is compressed with a method this reader does not have.
    case unsupportedCompression(entry: String, method: String)
    /// Two entries share bytes (the overlapping-file zip bomb).
    case overlappingEntries(entry: String, other: String)
    /// An entry's local header disagrees with the central directory, so readers would differ.
    case inconsistentEntry(entry: String, reason: String)
    /// The archive is damaged, truncated or not a zip.
    case corrupt(reason: String)
    /// More entries than the limit.
    case tooManyEntries(limit: Int)
    /// More uncompressed bytes than the limit.
    case tooLarge(limitBytes: Int64)
    /// More uncompressed bytes per compressed byte than the limit.
    case compressionRatio(limit: Double)
    /// No `index.html` at the root, nor in one single top folder.
    case missingIndex
    /// Writing the extracted files failed.
    case io(path: String, reason: String, diskFull: Bool)

    public var category: ErrorCategory {
        if case .io = self { return .localIO }
        return .badData
    }

    public var description: String {
        switch self {
        case .unsafePath(let entry, let reason):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' \(reason); the bundle is hostile or broken, do not use it"
        case .unsupportedEntry(let entry, let kind):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' is a \(kind); only regular files and folders belong in a bundle"
        case .duplicateEntry(let entry):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' appears more than once"
        case .encryptedEntry(let entry):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' is encrypted"
        case .unsupportedCompression(let entry, let method):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' is compressed with \(method), which cannot be read; zip the bundle again with Deflate"
        case .overlappingEntries(let entry, let other):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' shares its bytes with '\(Sanitizer.printable(other, limit: 120))', like a zip bomb; the bundle is hostile or broken, do not use it"
        case .inconsistentEntry(let entry, let reason):
            return "archive refused: entry '\(Sanitizer.printable(entry, limit: 120))' \(Sanitizer.printable(reason, limit: 160)), so tools would read it differently; the bundle is hostile or broken, do not use it"
        case .corrupt(let reason):
            return "archive refused: it is damaged or not a zip (\(Sanitizer.printable(reason, limit: 160)))"
        case .tooManyEntries(let limit):
            return "archive refused: it has more than \(limit) entries (raise the extraction limit maxEntries if the bundle is genuine)"
        case .tooLarge(let limit):
            return "archive refused: it unpacks to more than \(limit) bytes (raise the extraction limit maxUnpackedBytes if the bundle is genuine)"
        case .compressionRatio(let limit):
            return "archive refused: it unpacks to more than \(Int(limit)) times its size, like a zip bomb (raise limits.maxCompressionRatio if the bundle is genuine)"
        case .missingIndex:
            return "archive refused: no index.html at its root (nor in a single top folder)"
        case .io(let path, let reason, let diskFull):
            return "cannot write \(path): \(reason)\(diskFull ? "; free some disk space and retry" : "; check the cache directory's permissions")"
        }
    }
}

/// Limits that keep a hostile archive from exhausting the disk or the inode table.
public struct ExtractionLimits: Sendable, Equatable {
    /// The most entries (files and folders) an archive may have.
    public var maxEntries: Int
    /// The most bytes an archive may unpack to, counted as written.
    public var maxUnpackedBytes: Int64
    /// The most unpacked bytes per byte of archive, once past ``ratioFloorBytes``.
    public var maxCompressionRatio: Double
    /// Unpacked sizes up to this never trip the ratio limit.
    public var ratioFloorBytes: Int64

    /// Limits with the given values; the defaults fit any real mini-app.
    public init(maxEntries: Int = 20_000, maxUnpackedBytes: Int64 = 1 << 30, maxCompressionRatio: Double = 100, ratioFloorBytes: Int64 = 16 << 20) {
        self.maxEntries = maxEntries
        self.maxUnpackedBytes = maxUnpackedBytes
        self.maxCompressionRatio = maxCompressionRatio
        self.ratioFloorBytes = ratioFloorBytes
    }
}
