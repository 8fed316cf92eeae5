public import Foundation
package import CMiniAppArchive

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
    /// The whole seconds since the epoch.
    public var seconds: Int64
    /// The nanoseconds past `seconds`.
    public var nanoseconds: Int64

    /// A timestamp with the given parts.
    public init(seconds: Int64, nanoseconds: Int64) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// The timestamp `time` from a status call.
    package init(_ time: timespec) {
        self.init(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
    }

    /// Whether `time`, as a status call gives it, is this timestamp.
    package func matches(_ time: timespec) -> Bool {
        Int64(time.tv_sec) == seconds && Int64(time.tv_nsec) == nanoseconds
    }
}

/// A folder of an installed bundle and its change time at install, which moves whenever an entry is
/// added to, removed from or renamed in it.
public struct BundleDirectory: Sendable, Equatable {
    /// The path relative to the bundle folder; `.` for the bundle folder itself.
    public var path: String
    /// The folder's change time right after the install wrote it.
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
    /// The files, in the order they were recorded.
    public var files: [BundleFile]
    /// The folders, in the order they were recorded.
    public var directories: [BundleDirectory]

    package static let header = "miniapp-files 1"

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
    public init?<Bytes: ContiguousBytes>(decoding data: Bytes) {
        guard let index = FileListIndex(data.withUnsafeBytes { Array($0) }) else { return nil }
        self.init(index)
    }

    /// The list `index` located, with every path and digest made a string.
    package init(_ index: FileListIndex) {
        self.init(files: index.files.map(index.file), directories: index.directories.map(index.directory))
    }
}

/// A file list as read, each entry's fields located in the bytes rather than copied out: the quick
/// check walks it with no string made per entry (a thousand strings cost more than the status calls
/// they name).
package struct FileListIndex: Sendable {
    /// Where one entry's fields are in ``bytes``; a folder has an empty digest.
    package struct Entry: Sendable {
        package var path: Range<Int>
        package var size: Int64
        package var changedAt: FileTimestamp
        package var digest: Range<Int>
    }

    /// The list's bytes as read, unchanged: the digest the install record keeps is checked on these
    /// while the status calls run.
    package let bytes: [UInt8]
    package private(set) var directories: [Entry] = []
    package private(set) var files: [Entry] = []

    /// The list in `bytes`, or `nil` when it is not a well-formed list. The bytes are taken, not
    /// copied, when the caller gives up its copy (a list of 1,000 files is about 140 KB).
    package init?(_ bytes: consuming [UInt8]) {
        self.bytes = bytes
        guard let (directories, files) = self.bytes.withUnsafeBufferPointer({ buffer -> (directories: [Entry], files: [Entry])? in
            // A NUL in the list is refused: a path goes to the system as a C string.
            if let base = buffer.baseAddress, firstIndex(of: 0, in: base, 0..<buffer.count) != nil { return nil }
            return Self.parse(buffer)
        }) else { return nil }
        self.directories = directories
        self.files = files
    }

    /// One pass over the bytes: fields are cut at spaces in place.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (directories: [Entry], files: [Entry])? {
        var cursor = LineCursor(bytes: bytes)
        guard let first = cursor.nextLine(), bytes[first].elementsEqual(BundleFileList.header.utf8) else { return nil }
        var directories: [Entry] = []
        var files: [Entry] = []
        directories.reserveCapacity(bytes.count / 300)
        files.reserveCapacity(bytes.count / 110)
        while let line = cursor.nextLine() {
            if line.isEmpty { continue }
            var fields = FieldCursor(bytes: bytes, range: line)
            switch fields.next() {
            case .some(let kind) where kind.count == 1 && bytes[kind.lowerBound] == UInt8(ascii: "d"):
                guard let seconds = fields.number(), let nanoseconds = fields.number() else { return nil }
                let path = fields.rest()
                guard !path.isEmpty else { return nil }
                directories.append(Entry(path: path, size: 0, changedAt: FileTimestamp(seconds: seconds, nanoseconds: nanoseconds), digest: path.lowerBound..<path.lowerBound))
            case .some(let kind) where kind.count == 1 && bytes[kind.lowerBound] == UInt8(ascii: "f"):
                guard let size = fields.number(), let seconds = fields.number(), let nanoseconds = fields.number(),
                      let digest = fields.next(), digest.count == 64 else { return nil }
                let path = fields.rest()
                guard !path.isEmpty else { return nil }
                files.append(Entry(path: path, size: size, changedAt: FileTimestamp(seconds: seconds, nanoseconds: nanoseconds), digest: digest))
            default:
                return nil
            }
        }
        return (directories, files)
    }

    /// The path of `entry`.
    package func path(_ entry: Entry) -> String {
        String(decoding: bytes[entry.path], as: UTF8.self)
    }

    /// The file record of `entry`.
    package func file(_ entry: Entry) -> BundleFile {
        BundleFile(path: path(entry), size: entry.size, sha256: String(decoding: bytes[entry.digest], as: UTF8.self), changedAt: entry.changedAt)
    }

    /// The folder record of `entry`.
    package func directory(_ entry: Entry) -> BundleDirectory {
        BundleDirectory(path: path(entry), changedAt: entry.changedAt)
    }
}

/// The offset from `base` of the first `byte` within `range` (memchr), or `nil`.
func firstIndex(of byte: UInt8, in base: UnsafePointer<UInt8>, _ range: Range<Int>) -> Int? {
    guard !range.isEmpty, let found = memchr(base + range.lowerBound, Int32(byte), range.count) else { return nil }
    return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
}

/// Lines of a byte buffer, without their line end.
private struct LineCursor {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var position = 0

    package mutating func nextLine() -> Range<Int>? {
        guard position < bytes.count, let base = bytes.baseAddress else { return nil }
        let start = position
        position = firstIndex(of: UInt8(ascii: "\n"), in: base, start..<bytes.count) ?? bytes.count
        defer { position += 1 }
        return start..<position
    }
}

/// Space-separated fields of one line; the last field (a path) may hold spaces.
private struct FieldCursor {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var range: Range<Int>

    package init(bytes: UnsafeBufferPointer<UInt8>, range: Range<Int>) {
        self.bytes = bytes
        self.range = range
    }

    /// The next field, or `nil` at the end of the line.
    package mutating func next() -> Range<Int>? {
        guard !range.isEmpty, let base = bytes.baseAddress else { return nil }
        let end = firstIndex(of: UInt8(ascii: " "), in: base, range) ?? range.upperBound
        defer { range = min(end + 1, range.upperBound)..<range.upperBound }
        return range.lowerBound..<end
    }

    /// The next field as a decimal number of at most 18 digits.
    package mutating func number() -> Int64? {
        next().flatMap { ASCIIDigits.value(bytes[$0]) }
    }

    /// Everything left on the line.
    package mutating func rest() -> Range<Int> {
        defer { range = range.upperBound..<range.upperBound }
        return range
    }
}
