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

/// A folder of an installed bundle and its change time at install, which moves whenever an entry is
/// added to, removed from or renamed in it.
public struct BundleDirectory: Sendable, Equatable {
    /// The path relative to the bundle folder; `.` for the bundle folder itself.
    public var path: String
    public var changedAt: FileTimestamp

    /// A record with the given values.
    public init(path: String, changedAt: FileTimestamp) {
        self.path = path
        self.changedAt = changedAt
    }
}

/// The install-time list of a version's files and folders, in a compact line format that loads in well
/// under a millisecond for a thousand files: a header line, then `f size ctime-s ctime-ns sha256 path`
/// per file and `d ctime-s ctime-ns path` per folder (paths never hold a newline: names with control
/// characters are refused at extraction).
public struct BundleFileList: Sendable, Equatable {
    public var files: [BundleFile]
    public var directories: [BundleDirectory]

    static let header = "miniapp-files 1"

    /// A list with the given entries.
    public init(files: [BundleFile], directories: [BundleDirectory]) {
        self.files = files
        self.directories = directories
    }

    /// The list as file contents.
    public func encoded() -> Data {
        var text = Self.header + "\n"
        text.reserveCapacity(files.count * 120 + directories.count * 40)
        for directory in directories {
            text += "d \(directory.changedAt.seconds) \(directory.changedAt.nanoseconds) \(directory.path)\n"
        }
        for file in files {
            text += "f \(file.size) \(file.changedAt.seconds) \(file.changedAt.nanoseconds) \(file.sha256) \(file.path)\n"
        }
        return Data(text.utf8)
    }

    /// The list in `data`, or `nil` when it is not a well-formed list.
    public init?(decoding data: Data) {
        let bytes = [UInt8](data)
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
        guard let first = lines.popFirst(), String(decoding: first, as: UTF8.self) == Self.header else { return nil }
        files = []
        directories = []
        files.reserveCapacity(lines.count)
        for line in lines {
            switch line.first {
            case UInt8(ascii: "d"):
                var fields = line.split(separator: UInt8(ascii: " "), maxSplits: 3, omittingEmptySubsequences: false).dropFirst()
                guard fields.count == 3, let seconds = Self.number(fields.removeFirst()), let nanoseconds = Self.number(fields.removeFirst()) else { return nil }
                let path = String(decoding: fields.removeFirst(), as: UTF8.self)
                guard !path.isEmpty else { return nil }
                directories.append(BundleDirectory(path: path, changedAt: FileTimestamp(seconds: seconds, nanoseconds: nanoseconds)))
            case UInt8(ascii: "f"):
                var fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: false).dropFirst()
                guard fields.count == 5,
                      let size = Self.number(fields.removeFirst()), let seconds = Self.number(fields.removeFirst()),
                      let nanoseconds = Self.number(fields.removeFirst()) else { return nil }
                let sha256 = String(decoding: fields.removeFirst(), as: UTF8.self)
                let path = String(decoding: fields.removeFirst(), as: UTF8.self)
                guard sha256.utf8.count == 64, !path.isEmpty else { return nil }
                files.append(BundleFile(path: path, size: size, sha256: sha256, changedAt: FileTimestamp(seconds: seconds, nanoseconds: nanoseconds)))
            default:
                return nil
            }
        }
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
