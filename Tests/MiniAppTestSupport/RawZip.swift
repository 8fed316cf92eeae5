import Foundation

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
        public static func symlink(_ name: String, to target: String) -> Entry { Entry(name: name, data: Array(target.utf8), mode: 0o120777) }
    }

    public var entries: [Entry]

    public init(_ entries: [Entry]) {
        self.entries = entries
    }

    /// The archive's bytes.
    public var bytes: [UInt8] {
        var output: [UInt8] = []
        var central: [UInt8] = []
        for entry in entries {
            let offset = UInt32(output.count)
            let name = Array(entry.name.utf8)
            let crc = entry.crcOverride ?? CRC32.checksum(entry.data)
            let size = entry.declaredSize ?? UInt32(entry.data.count)
            let flags: UInt16 = (entry.encrypted ? 1 : 0) | (1 << 11)
            output += le32(0x0403_4b50) + le16(20) + le16(flags) + le16(0) + le16(0) + le16(0x21)
            output += le32(crc) + le32(size) + le32(size) + le16(UInt16(name.count)) + le16(0) + name + entry.data
            central += le32(0x0201_4b50) + le16(0x0314) + le16(20) + le16(flags) + le16(0) + le16(0) + le16(0x21)
            central += le32(crc) + le32(size) + le32(size) + le16(UInt16(name.count)) + le16(0) + le16(0) + le16(0) + le16(0)
            central += le32(entry.mode << 16) + le32(offset) + name
        }
        let centralOffset = UInt32(output.count)
        output += central
        output += le32(0x0605_4b50) + le16(0) + le16(0) + le16(UInt16(entries.count)) + le16(UInt16(entries.count))
        output += le32(UInt32(central.count)) + le32(centralOffset) + le16(0)
        return output
    }

    /// Writes the archive to `path`.
    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    private func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    private func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
}

/// The CRC-32 of zip.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
