import Foundation
internal import CMiniAppArchive

/// A zip's central directory, read with plain reads before libarchive inflates anything.
///
/// libarchive's reader returns entries sorted by local header, named by the local header, and drops
/// central-directory entries that share a local header. This reads what `unzip -l` and every other
/// reader list, and refuses what would make the two disagree: entries whose bytes overlap (the
/// overlapping-file zip bomb) and local headers that name another file. It also decodes names the way
/// the zip specification says (UTF-8 when flagged, else CP437) and names compression methods.
package struct ZipDirectory: Sendable {
    package struct Entry: Sendable {
        /// The name's bytes as the central directory stores them.
        package var rawName: [UInt8]
        /// The name to install: UTF-8 when flagged or valid, an Info-ZIP Unicode path when one matches,
        /// else CP437, composed (NFC); a name using `\` and no `/` (as Windows tools write them) has
        /// `\` as separator.
        package var name: String
        /// The name libarchive reports for this entry (the Unicode path or the raw bytes), with `\` as `/`.
        package var archiveName: [UInt8]
        package var flags: UInt16
        package var method: UInt16
        package var compressedSize: UInt64
        package var uncompressedSize: UInt64
        /// Where the local header starts, corrected for data before the zip.
        package var localHeaderOffset: UInt64
        /// Where the entry's data ends.
        package var dataEnd: UInt64
        /// The CRC-32 of the uncompressed data.
        package var crc32: UInt32 = 0
        /// The DOS time (low half) and date (high half) of the entry.
        package var modified: UInt32 = 0
        /// The flags of its local header (``read(_:maxEntries:)`` only).
        package var localFlags: UInt16 = 0
        /// The system that made the entry (the high byte of "version made by": 0 MS-DOS, 3 Unix).
        package var system: UInt8 = 0
        /// The external file attributes: Unix mode bits in the high half when ``system`` is Unix, DOS
        /// attributes in the low byte.
        package var externalAttributes: UInt32 = 0
        /// Whether the name ends with a separator (libarchive's name, as ``archiveName`` before it drops it).
        package var namedAsFolder = false
        /// The central directory's "version needed to extract", and its extra field: with the rest, what
        /// the local header most producers write holds (``ZipLayout/Span/predictedLocalBytes(style:)``).
        package var versionNeeded: UInt16 = 0
        package var centralExtra: [UInt8] = []
        /// Whether the central directory gives the entry zip64 values (its local header then has its own).
        package var zip64 = false

        package var isEncrypted: Bool { flags & 1 != 0 || localFlags & 1 != 0 || method == 99 }

        /// The entry's type (the `S_IFMT` bits) as libarchive 3.6 reads it: the mode's type when a Unix
        /// tool made it, the directory bit when an MS-DOS or Windows tool did; a name that ends with `/`
        /// is a folder whatever those say; no type, or a named pipe's, is a regular file.
        package var fileType: UInt32 {
            if namedAsFolder { return 0o040000 }
            let type: UInt32
            switch system {
            case 3: type = (externalAttributes >> 16) & 0o170000
            case 0: type = externalAttributes & 0x10 != 0 ? 0o040000 : 0o100000
            default: type = 0
            }
            return type == 0 || type == 0o010000 ? 0o100000 : type
        }
    }

    /// The entries in the order of their local headers: the order libarchive returns them.
    package var entries: [Entry]
    /// Where the central directory starts: each entry's bytes (local header, data, data descriptor)
    /// end where the next one's start, or here.
    package var directoryStart: UInt64 = 0

    /// The compression methods libarchive reads.
    package static let supportedMethods: Set<UInt16> = [0, 8, 12, 14, 93, 95, 98]

    /// What method `method` is called, for messages.
    package static func methodName(_ method: UInt16) -> String {
        let names: [UInt16: String] = [
            1: "Shrink", 2: "Reduce", 3: "Reduce", 4: "Reduce", 5: "Reduce", 6: "Implode", 9: "Deflate64",
            10: "PKWARE DCL Implode", 16: "IBM z/OS CMPSC", 18: "IBM TERSE", 19: "IBM LZ77", 20: "Zstandard (old id)",
            94: "MP3", 96: "JPEG", 97: "WavPack",
        ]
        return "\(names[method] ?? "unknown") (method \(method))"
    }

    /// Reads the central directory of the zip at `path`, refusing more than `maxEntries` entries.
    package static func read(_ path: String, maxEntries: Int) throws(ArchiveError) -> ZipDirectory {
        let file = try ZipFileReader(path)
        let (found, end) = try centralEntries(in: file, maxEntries: maxEntries)
        var entries = found
        var previousEnd: UInt64 = 0
        var previousName = ""
        for index in entries.indices {
            let entry = entries[index]
            guard entry.localHeaderOffset >= previousEnd else {
                throw .overlappingEntries(entry: entry.name, other: previousName)
            }
            // The header and the name it should hold, in one read (up to the zip's end: what is missing
            // beyond the header is read, and found missing, below).
            let expected = UInt64(entry.rawName.count)
            let available = file.size > entry.localHeaderOffset ? file.size - entry.localHeaderOffset : 0
            let header = try file.bytes(at: entry.localHeaderOffset, count: max(30, min(30 + expected, available)))
            var fields = ByteReader(header, at: 0)
            guard fields.uint32() == 0x0403_4B50 else {
                throw .corrupt(reason: "entry \(entry.name) has no local header where the central directory says")
            }
            fields.skip(2)
            entries[index].localFlags = fields.uint16()
            fields.skip(18)
            let nameLength = UInt64(fields.uint16())
            let extraLength = UInt64(fields.uint16())
            let localName = nameLength == expected && header.count == 30 + Int(expected)
                ? Array(header[30...]) : try file.bytes(at: entry.localHeaderOffset + 30, count: nameLength)
            guard localName == entry.rawName else {
                throw .inconsistentEntry(entry: entry.name, reason: "has a local header that names it '\(String(decoding: localName, as: UTF8.self))'")
            }
            let (dataEnd, overflow) = (entry.localHeaderOffset + 30 + nameLength + extraLength).addingReportingOverflow(entry.compressedSize)
            guard !overflow, dataEnd <= end.directoryStart else {
                throw .corrupt(reason: "entry \(entry.name) runs past the central directory")
            }
            entries[index].dataEnd = dataEnd
            previousEnd = dataEnd
            previousName = entry.name
        }
        return ZipDirectory(entries: entries, directoryStart: end.directoryStart)
    }

    /// The entries of the zip at `path` as its central directory lists them, in the order of their local
    /// headers, without reading those (``Entry/dataEnd`` is 0): for a zip already checked by ``read(_:maxEntries:)``.
    package static func listing(_ path: String, maxEntries: Int) throws(ArchiveError) -> [Entry] {
        let file = try ZipFileReader(path)
        return try centralEntries(in: file, maxEntries: maxEntries).0
    }

    /// The central directory's entries in the order of their local headers, and where it is.
    private static func centralEntries<Source: ZipBytes & ~Copyable>(in file: borrowing Source, maxEntries: Int) throws(ArchiveError) -> ([Entry], EndRecord) {
        let end = try EndRecord.find(in: file)
        var entries: [Entry] = []
        var cursor = end.directoryStart
        let directoryEnd = end.directoryStart + end.directorySize
        let directory = try file.bytes(at: end.directoryStart, count: end.directorySize)
        while cursor < directoryEnd {
            guard entries.count < maxEntries else { throw .tooManyEntries(limit: maxEntries) }
            var reader = ByteReader(directory, at: Int(cursor - end.directoryStart))
            entries.append(try Self.centralEntry(&reader, correction: end.correction))
            cursor = end.directoryStart + UInt64(reader.position)
        }
        guard !entries.isEmpty else { throw .corrupt(reason: "the archive is empty") }
        entries.sort { $0.localHeaderOffset < $1.localHeaderOffset }
        return (entries, end)
    }

    /// The layout of the zip whose bytes `source` gives: its entries' spans and where its central
    /// directory starts, from the end records and the central directory alone (no local header is read).
    package static func layout<Source: ZipBytes & ~Copyable>(of source: borrowing Source, maxEntries: Int) throws(ArchiveError) -> ZipLayout {
        let (entries, end) = try centralEntries(in: source, maxEntries: maxEntries)
        var spans: [ZipLayout.Span] = []
        spans.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let next = index + 1 < entries.count ? entries[index + 1].localHeaderOffset : end.directoryStart
            guard next > entry.localHeaderOffset else {
                throw .overlappingEntries(entry: entries[min(index + 1, entries.count - 1)].name, other: entry.name)
            }
            spans.append(ZipLayout.Span(
                key: ZipLayout.Key(
                    rawName: entry.rawName, crc32: entry.crc32, method: entry.method, flags: entry.flags,
                    compressedSize: entry.compressedSize, uncompressedSize: entry.uncompressedSize,
                    modified: entry.modified, length: next - entry.localHeaderOffset
                ),
                offset: entry.localHeaderOffset,
                local: entry.zip64 ? nil : ZipLayout.Span.CentralFields(versionNeeded: entry.versionNeeded, extra: entry.centralExtra)
            ))
        }
        return ZipLayout(spans: spans, directoryStart: end.directoryStart, size: source.size)
    }

    /// One central-directory record at `reader`'s position.
    private static func centralEntry(_ reader: inout ByteReader, correction: UInt64) throws(ArchiveError) -> Entry {
        guard reader.remaining >= 46, reader.uint32() == 0x0201_4B50 else {
            throw .corrupt(reason: "the central directory is damaged")
        }
        reader.skip(1)  // version made by: the specification's version
        let system = reader.uint8()
        let versionNeeded = reader.uint16()
        let flags = reader.uint16()
        let method = reader.uint16()
        let modified = reader.uint32()  // time, date
        let crc32 = reader.uint32()
        var compressedSize = UInt64(reader.uint32())
        var uncompressedSize = UInt64(reader.uint32())
        let nameLength = Int(reader.uint16())
        let extraLength = Int(reader.uint16())
        let commentLength = Int(reader.uint16())
        let disk = reader.uint16()
        reader.skip(2)  // internal attributes
        let externalAttributes = reader.uint32()
        var offset = UInt64(reader.uint32())
        guard reader.remaining >= nameLength + extraLength + commentLength else {
            throw .corrupt(reason: "the central directory is damaged")
        }
        let rawName = reader.bytes(nameLength)
        let extra = reader.bytes(extraLength)
        reader.skip(commentLength)

        var unicodePath: String?
        var zip64 = compressedSize == 0xFFFF_FFFF || uncompressedSize == 0xFFFF_FFFF || offset == 0xFFFF_FFFF
        var fields = ByteReader(extra, at: 0)
        while fields.remaining >= 4 {
            let tag = fields.uint16()
            let size = Int(fields.uint16())
            guard fields.remaining >= size else { break }
            var field = ByteReader(fields.bytes(size), at: 0)
            switch tag {
            case 0x0001:  // zip64: the 64-bit values of the fields that hold 0xFFFFFFFF, in this order
                zip64 = true
                if uncompressedSize == 0xFFFF_FFFF, field.remaining >= 8 { uncompressedSize = field.uint64() }
                if compressedSize == 0xFFFF_FFFF, field.remaining >= 8 { compressedSize = field.uint64() }
                if offset == 0xFFFF_FFFF, field.remaining >= 8 { offset = field.uint64() }
            case 0x7075:  // Info-ZIP Unicode path: used when it is version 1 and its CRC matches the name
                if field.remaining >= 5, field.uint8() == 1, field.uint32() == ZipCRC.checksum(rawName) {
                    unicodePath = String(validating: field.bytes(field.remaining), as: UTF8.self)
                }
            default:
                break
            }
        }
        guard disk == 0 || disk == 0xFFFF else { throw .corrupt(reason: "the archive spans several disks") }

        let decoded: String
        if flags & 0x0800 != 0 {
            guard let text = String(validating: rawName, as: UTF8.self) else {
                throw .unsafePath(entry: CP437.decode(rawName), reason: "is marked UTF-8 but is not valid UTF-8")
            }
            decoded = text
        } else if let unicodePath {
            decoded = unicodePath
        } else {
            decoded = String(validating: rawName, as: UTF8.self) ?? CP437.decode(rawName)
        }
        let (start, overflow) = offset.addingReportingOverflow(correction)
        guard !overflow else { throw .corrupt(reason: "the central directory is damaged") }
        let reported = unicodePath.map { Array($0.utf8) } ?? rawName
        return Entry(
            rawName: rawName, name: Self.windowsSeparators(Self.composed(decoded)),
            archiveName: Self.comparable(reported),
            flags: flags, method: method, compressedSize: compressedSize, uncompressedSize: uncompressedSize,
            localHeaderOffset: start, dataEnd: 0, crc32: crc32, modified: modified,
            system: system, externalAttributes: externalAttributes,
            namedAsFolder: reported.last == UInt8(ascii: "/") || reported.last == UInt8(ascii: "\\"),
            versionNeeded: versionNeeded, centralExtra: extra, zip64: zip64
        )
    }

    /// `text` composed (NFC): ASCII text is already, and skips Foundation's conversion, the dearest part
    /// of reading a name.
    static func composed(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
    }

    /// `name` with `\` read as the separator when it has no `/`, as libarchive and Windows tools do.
    private static func windowsSeparators(_ name: String) -> String {
        guard name.utf8.contains(UInt8(ascii: "\\")), !name.utf8.contains(UInt8(ascii: "/")) else { return name }
        return String(decoding: name.utf8.map { $0 == UInt8(ascii: "\\") ? UInt8(ascii: "/") : $0 }, as: UTF8.self)
    }

    /// How libarchive's name for an entry and the central directory's compare: composed (NFC) when it
    /// is UTF-8, as libarchive composes what it converts, with every `\` as `/`, and without the `/`
    /// libarchive adds to a folder's name.
    package static func comparable(_ bytes: [UInt8]) -> [UInt8] {
        let composed = bytes.allSatisfy({ $0 < 0x80 }) ? bytes
            : String(validating: bytes, as: UTF8.self).map { Array(Self.composed($0).utf8) } ?? bytes
        var result = composed.map { $0 == UInt8(ascii: "\\") ? UInt8(ascii: "/") : $0 }
        while result.last == UInt8(ascii: "/") { result.removeLast() }
        return result
    }

    /// ``comparable(_:)`` of a C string from libarchive.
    package static func comparable(_ name: UnsafePointer<CChar>) -> [UInt8] {
        comparable(Array(UnsafeRawBufferPointer(start: name, count: strlen(name))))
    }
}

/// Where the central directory is, from the end-of-central-directory records.
private struct EndRecord {
    var directoryStart: UInt64
    var directorySize: UInt64
    /// What to add to recorded offsets: the bytes before the zip (a self-extractor's stub).
    var correction: UInt64

    static func find<Source: ZipBytes & ~Copyable>(in file: borrowing Source) throws(ArchiveError) -> EndRecord {
        // The record is in the last 22 bytes of a zip without a comment, and in the last 64 KiB of any:
        // the last 4 KiB are searched first (so that the end of a zip fetched over the network need not
        // reach 64 KiB back), then all of it. Positions are tried from the end in both, and the first
        // search stops 20 bytes short of its start (a zip64 locator before the record must be in view):
        // the record found is the one a search of the whole 64 KiB finds.
        let shortLength = min(file.size, 22 + 4_096)
        let tailLength = min(file.size, 22 + 65_535)
        for (length, lowest) in shortLength < tailLength ? [(shortLength, 20), (tailLength, 0)] : [(tailLength, 0)] {
            let tail = try file.bytes(at: file.size - length, count: length)
            var position = tail.count - 22
            while position >= lowest {
                if tail[position] == 0x50, tail[position + 1] == 0x4B, tail[position + 2] == 0x05, tail[position + 3] == 0x06,
                   let record = try candidate(at: file.size - length + UInt64(position), tail: tail, position: position, file: file) {
                    return record
                }
                position -= 1
            }
        }
        throw .corrupt(reason: "no end of central directory record")
    }

    /// The record at `recordOffset`, or `nil` when its values do not fit the file (a signature inside a
    /// comment or inside data).
    private static func candidate<Source: ZipBytes & ~Copyable>(at recordOffset: UInt64, tail: [UInt8], position: Int, file: borrowing Source) throws(ArchiveError) -> EndRecord? {
        var reader = ByteReader(tail, at: position + 4)
        let disk = reader.uint16()
        let directoryDisk = reader.uint16()
        reader.skip(4)  // entries on this disk, entries in all
        var size = UInt64(reader.uint32())
        var offset = UInt64(reader.uint32())
        var end = recordOffset
        // A zip64 locator just before it points at the zip64 record, which holds the 64-bit values.
        if recordOffset >= 20, position >= 20 {
            var locator = ByteReader(tail, at: position - 20)
            if locator.uint32() == 0x0706_4B50 {
                locator.skip(4)
                let recorded = locator.uint64()
                let locatorOffset = recordOffset - 20
                for where64 in [recorded, locatorOffset &- 56] where locatorOffset >= 56 && where64 <= locatorOffset - 56 {
                    var record = ByteReader(try file.bytes(at: where64, count: 56), at: 0)
                    guard record.uint32() == 0x0606_4B50 else { continue }
                    record.skip(36)
                    size = record.uint64()
                    offset = record.uint64()
                    end = where64
                    break
                }
            } else if disk != 0 || directoryDisk != 0 {
                throw .corrupt(reason: "the archive spans several disks")
            }
        }
        guard size <= end else { return nil }
        // The central directory ends where the end records start. Data before the zip shifts every
        // offset by the same amount.
        let start = end - size
        guard offset <= start else { return nil }
        if size > 0 {
            let signature = try file.bytes(at: start, count: 4)
            guard signature == [0x50, 0x4B, 0x01, 0x02] else { return nil }
        }
        return EndRecord(directoryStart: start, directorySize: size, correction: start - offset)
    }
}

/// Where a zip's bytes come from: a file, or the end of one held in memory.
package protocol ZipBytes: ~Copyable {
    /// The zip's size in bytes.
    var size: UInt64 { get }
    /// `count` bytes at `offset`, all of them or an error.
    func bytes(at offset: UInt64, count: UInt64) throws(ArchiveError) -> [UInt8]
}

/// Positioned reads of a whole file.
package struct ZipFileReader: ZipBytes, ~Copyable {
    let descriptor: Int32
    let path: String
    package let size: UInt64

    package init(_ path: String) throws(ArchiveError) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw ArchiveExtractor.ioError(path) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw .corrupt(reason: "it is not a regular file")
        }
        self.path = path
        size = UInt64(info.st_size)
    }

    deinit {
        close(descriptor)
    }

    /// `count` bytes at `offset`, all of them or an error.
    package func bytes(at offset: UInt64, count: UInt64) throws(ArchiveError) -> [UInt8] {
        let (last, overflow) = offset.addingReportingOverflow(count)
        guard !overflow, last <= size else { throw .corrupt(reason: "it is truncated") }
        var buffer = [UInt8](repeating: 0, count: Int(count))
        var filled = 0
        while filled < buffer.count {
            let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + filled, $0.count - filled, off_t(offset) + off_t(filled)) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else {
                if read == 0 { throw .corrupt(reason: "it is truncated") }
                throw ArchiveExtractor.ioError(path)
            }
            filled += read
        }
        return buffer
    }
}

/// Little-endian fields from bytes; reading past the end gives zeros (callers check `remaining`).
struct ByteReader {
    let bytes: [UInt8]
    var position: Int

    init(_ bytes: [UInt8], at position: Int) {
        self.bytes = bytes
        self.position = position
    }

    var remaining: Int { max(bytes.count - position, 0) }

    mutating func skip(_ count: Int) { position += count }

    mutating func uint8() -> UInt8 {
        defer { position += 1 }
        return position < bytes.count ? bytes[position] : 0
    }

    mutating func uint16() -> UInt16 { UInt16(uint8()) | UInt16(uint8()) << 8 }
    mutating func uint32() -> UInt32 { UInt32(uint16()) | UInt32(uint16()) << 16 }
    mutating func uint64() -> UInt64 { UInt64(uint32()) | UInt64(uint32()) << 32 }

    mutating func bytes(_ count: Int) -> [UInt8] {
        let start = min(position, bytes.count)
        let end = min(position + max(count, 0), bytes.count)
        position += max(count, 0)
        return Array(bytes[start..<end])
    }
}

/// The zip format's CRC-32, for Info-ZIP Unicode path fields.
package enum ZipCRC {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// IBM code page 437, which the zip specification names for names without the UTF-8 flag.
package enum CP437 {
    /// Bytes 0x80-0xFF; below that, CP437 is ASCII.
    private static let high: [Unicode.Scalar] = Array(
        "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u{00A0}".unicodeScalars
    )

    package static func decode(_ bytes: [UInt8]) -> String {
        var result = String.UnicodeScalarView()
        for byte in bytes { result.append(byte < 0x80 ? Unicode.Scalar(byte) : high[Int(byte - 0x80)]) }
        return String(result)
    }
}
