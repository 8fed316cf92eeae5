import Foundation

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

/// The install-time file list of a version, in a compact line format that loads in well under a
/// millisecond for a thousand files: a header line, then `size ctime-seconds ctime-nanoseconds sha256 path`
/// per file (paths never hold a newline: names with control characters are refused at extraction).
public enum BundleFileList {
    static let header = "miniapp-files 1"

    /// The list as file contents.
    public static func encode(_ files: [BundleFile]) -> Data {
        var text = header + "\n"
        text.reserveCapacity(files.count * 120)
        for file in files {
            text += "\(file.size) \(file.changedAt.seconds) \(file.changedAt.nanoseconds) \(file.sha256) \(file.path)\n"
        }
        return Data(text.utf8)
    }

    /// The list in `data`, or `nil` when it is not a well-formed list.
    public static func decode(_ data: Data) -> [BundleFile]? {
        let bytes = [UInt8](data)
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
        guard let first = lines.popFirst(), String(decoding: first, as: UTF8.self) == header else { return nil }
        var files: [BundleFile] = []
        files.reserveCapacity(lines.count)
        for line in lines {
            var fields = line.split(separator: UInt8(ascii: " "), maxSplits: 4, omittingEmptySubsequences: false)[...]
            guard fields.count == 5,
                  let size = number(fields.removeFirst()), let seconds = number(fields.removeFirst()),
                  let nanoseconds = number(fields.removeFirst()) else { return nil }
            let sha256 = String(decoding: fields.removeFirst(), as: UTF8.self)
            let path = String(decoding: fields.removeFirst(), as: UTF8.self)
            guard sha256.utf8.count == 64, !path.isEmpty else { return nil }
            files.append(BundleFile(path: path, size: size, sha256: sha256, changedAt: FileTimestamp(seconds: seconds, nanoseconds: nanoseconds)))
        }
        return files
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        return value
    }
}
