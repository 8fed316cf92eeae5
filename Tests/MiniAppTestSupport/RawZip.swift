import Foundation
import MiniAppCore

/// A zip written byte by byte (stored entries only), so that tests can make any hostile archive:
/// any name, any file type, a wrong CRC, lying sizes, the encryption flag.
public struct RawZip: Sendable {
    public struct Entry: Sendable {
        public var name: String
        public var data: [UInt8]
        /// The Unix mode stored in the external attributes (type and permissions).
        public var mode: UInt32
        public var encrypted: Bool
        /// A CRC to store instead of the right one.
        public var crcOverride: UInt32?
        /// A size to declare instead of the real one (in both headers).
        public var declaredSize: UInt32?
        /// The name's bytes, instead of `name`'s UTF-8.
        public var rawName: [UInt8]?
        /// Whether the UTF-8 flag (bit 11) is set.
        public var utf8Flag = true
        /// The compression method to declare (the data is stored as it is).
        public var method: UInt16 = 0
        /// A name for the local header alone, unlike the central directory's.
        public var localName: [UInt8]?
        /// An uncompressed size to declare in a zip64 field of both headers (their 32-bit field then
        /// holds 0xFFFFFFFF), instead of the real one.
        public var zip64UncompressedSize: UInt64?

        public init(name: String, data: [UInt8] = [], mode: UInt32 = 0o100644, encrypted: Bool = false, crcOverride: UInt32? = nil, declaredSize: UInt32? = nil) {
            self.name = name
            self.data = data
            self.mode = mode
            self.encrypted = encrypted
            self.crcOverride = crcOverride
            self.declaredSize = declaredSize
        }

        public static func file(_ name: String, _ text: String = "x") -> Entry { Entry(name: name, data: Array(text.utf8)) }
        public static func directory(_ name: String) -> Entry { Entry(name: name.hasSuffix("/") ? name : name + "/", mode: 0o040755) }
        /// A one-byte file whose headers declare `size` uncompressed bytes in a zip64 field.
        public static func declaring(_ name: String, uncompressed size: UInt64) -> Entry {
            var entry = Entry.file(name)
            entry.zip64UncompressedSize = size
            return entry
        }
        public static func symlink(_ name: String, to target: String) -> Entry { Entry(name: name, data: Array(target.utf8), mode: 0o120777) }
    }

    public var entries: [Entry]
    /// More central-directory records, each naming the local header of entry `entry` with another name:
    /// the overlapping-file zip bomb.
    public var aliases: [(name: String, entry: Int)] = []

    public init(_ entries: [Entry]) {
        self.entries = entries
    }

    /// The archive's bytes.
    public var bytes: [UInt8] {
        var output: [UInt8] = []
        var central: [UInt8] = []
        var offsets: [UInt32] = []
        func zip64(_ entry: Entry) -> [UInt8] {
            guard let size = entry.zip64UncompressedSize else { return [] }
            return le16(1) + le16(8) + le32(UInt32(size & 0xFFFF_FFFF)) + le32(UInt32(size >> 32))
        }
        func record(_ entry: Entry, name: [UInt8], offset: UInt32) -> [UInt8] {
            let crc = entry.crcOverride ?? CRC32.checksum(entry.data)
            let size = entry.declaredSize ?? UInt32(entry.data.count)
            let uncompressed = entry.zip64UncompressedSize == nil ? size : 0xFFFF_FFFF
            let flags: UInt16 = (entry.encrypted ? 1 : 0) | (entry.utf8Flag ? 1 << 11 : 0)
            let extra = zip64(entry)
            var bytes = le32(0x0201_4b50) + le16(0x0314) + le16(20) + le16(flags) + le16(entry.method) + le16(0) + le16(0x21)
            bytes += le32(crc) + le32(size) + le32(uncompressed) + le16(UInt16(name.count)) + le16(UInt16(extra.count)) + le16(0) + le16(0) + le16(0)
            return bytes + le32(entry.mode << 16) + le32(offset) + name + extra
        }
        for entry in entries {
            let offset = UInt32(output.count)
            offsets.append(offset)
            let name = entry.rawName ?? Array(entry.name.utf8)
            let localName = entry.localName ?? name
            let crc = entry.crcOverride ?? CRC32.checksum(entry.data)
            let size = entry.declaredSize ?? UInt32(entry.data.count)
            let uncompressed = entry.zip64UncompressedSize == nil ? size : 0xFFFF_FFFF
            let flags: UInt16 = (entry.encrypted ? 1 : 0) | (entry.utf8Flag ? 1 << 11 : 0)
            let extra = zip64(entry)
            output += le32(0x0403_4b50) + le16(20) + le16(flags) + le16(entry.method) + le16(0) + le16(0x21)
            output += le32(crc) + le32(size) + le32(uncompressed) + le16(UInt16(localName.count)) + le16(UInt16(extra.count)) + localName + extra + entry.data
            central += record(entry, name: name, offset: offset)
        }
        for alias in aliases {
            central += record(entries[alias.entry], name: Array(alias.name.utf8), offset: offsets[alias.entry])
        }
        let count = UInt16(entries.count + aliases.count)
        let centralOffset = UInt32(output.count)
        output += central
        output += le32(0x0605_4b50) + le16(0) + le16(0) + le16(count) + le16(count)
        output += le32(UInt32(central.count)) + le32(centralOffset) + le16(0)
        return output
    }

    /// Writes the archive to `path`.
    public func write(to path: String) throws {
        try writeTestFile(path, Data(bytes))
    }

    private func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    private func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
}

/// The CRC-32 of zip (the library's own, which reads Info-ZIP Unicode path fields).
public enum CRC32 {
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        ZipCRC.checksum(bytes)
    }
}
