import Foundation

/// Where each entry of a zip lies, as its central directory says: what a delta update compares between
/// the kept zip of an app and the zip of its new version.
package struct ZipLayout: Sendable, Equatable {
    /// What makes two entries' bytes interchangeable: a deterministic producer writes an unchanged file
    /// as the same local header and data, so equal keys mean equal spans (the signature over the
    /// assembled zip checks it).
    package struct Key: Hashable, Sendable {
        package var rawName: [UInt8]
        package var crc32: UInt32
        package var method: UInt16
        package var flags: UInt16
        package var compressedSize: UInt64
        package var uncompressedSize: UInt64
        package var modified: UInt32
        /// The span's length: local header, data and data descriptor, up to the next entry.
        package var length: UInt64
    }

    /// What makes two entries' compressed data interchangeable, whatever their names, times and extra
    /// fields: the same method, CRC-32 and sizes (the signature over the assembled zip checks the bytes).
    package struct DataKey: Hashable, Sendable {
        package var method: UInt16
        package var crc32: UInt32
        package var compressedSize: UInt64
        package var uncompressedSize: UInt64
    }

    /// One entry's bytes: from its local header up to the next entry's (or the central directory).
    package struct Span: Sendable, Equatable {
        package var key: Key
        package var offset: UInt64
        /// Where its compressed data starts, once its local header was read (``ZipLayout/read(_:maxEntries:)``).
        package var dataOffset: UInt64?
        /// What the central directory says beside the key that a local header repeats; `nil` for an
        /// entry with zip64 values (its local header holds its own, in another form).
        package var local: CentralFields?
        package var end: UInt64 { offset + key.length }

        /// The central directory's fields that a local header repeats, beside those of ``Key``.
        package struct CentralFields: Sendable, Equatable {
            package var versionNeeded: UInt16
            package var extra: [UInt8]

            package init(versionNeeded: UInt16, extra: [UInt8]) {
                self.versionNeeded = versionNeeded
                self.extra = extra
            }
        }

        package init(key: Key, offset: UInt64, dataOffset: UInt64? = nil, local: CentralFields? = nil) {
            self.key = key
            self.offset = offset
            self.dataOffset = dataOffset
            self.local = local
        }

        /// The local header and data descriptor this entry has when its producer wrote in them what the
        /// central directory says (as Python's `zipfile`, Go, Explorer and libarchive do): the
        /// same version needed, flags, method, time, name and extra field; CRC-32 and sizes (when a data
        /// descriptor follows the data, flag bit 3, those `style` says, else zeros; the descriptor holds
        /// them, with its signature or not, with 32- or 64-bit sizes, as the span's length says). `nil`
        /// when the span's length says the local header is not that one (an extra field of another
        /// length, as Info-ZIP and macOS write), or the entry has zip64 values. A wrong guess of the same
        /// length is possible: only the signature over the assembled zip proves it right.
        package func predictedLocalBytes(style: LocalHeaderStyle) -> (header: [UInt8], descriptor: [UInt8])? {
            guard let local, key.rawName.count <= 0xFFFF, local.extra.count <= 0xFFFF,
                  key.compressedSize <= 0xFFFF_FFFE, key.uncompressedSize <= 0xFFFF_FFFE else { return nil }
            let headerLength = 30 + UInt64(key.rawName.count) + UInt64(local.extra.count)
            guard key.length >= headerLength, key.length - headerLength >= key.compressedSize else { return nil }
            let descriptorLength = key.length - headerLength - key.compressedSize
            let streamed = key.flags & 0x8 != 0
            guard streamed ? [12, 16, 20, 24].contains(descriptorLength) : descriptorLength == 0 else { return nil }
            var header: [UInt8] = []
            header.reserveCapacity(Int(headerLength))
            func append16(_ value: UInt16, to bytes: inout [UInt8]) { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
            func append32(_ value: UInt32, to bytes: inout [UInt8]) {
                append16(UInt16(value & 0xFFFF), to: &bytes)
                append16(UInt16(value >> 16), to: &bytes)
            }
            append32(0x0403_4B50, to: &header)
            append16(local.versionNeeded, to: &header)
            append16(key.flags, to: &header)
            append16(key.method, to: &header)
            append32(key.modified, to: &header)
            append32(!streamed || style.crc32 ? key.crc32 : 0, to: &header)
            append32(!streamed || style.compressedSize ? UInt32(key.compressedSize) : 0, to: &header)
            append32(!streamed || style.uncompressedSize ? UInt32(key.uncompressedSize) : 0, to: &header)
            append16(UInt16(key.rawName.count), to: &header)
            append16(UInt16(local.extra.count), to: &header)
            header += key.rawName
            header += local.extra
            var descriptor: [UInt8] = []
            if streamed {
                if descriptorLength == 16 || descriptorLength == 24 { append32(0x0807_4B50, to: &descriptor) }
                append32(key.crc32, to: &descriptor)
                if descriptorLength >= 20 {
                    for value in [key.compressedSize, key.uncompressedSize] {
                        append32(UInt32(value & 0xFFFF_FFFF), to: &descriptor)
                        append32(UInt32(value >> 32), to: &descriptor)
                    }
                } else {
                    append32(UInt32(key.compressedSize), to: &descriptor)
                    append32(UInt32(key.uncompressedSize), to: &descriptor)
                }
            }
            return (header, descriptor)
        }

        package var dataKey: DataKey {
            DataKey(method: key.method, crc32: key.crc32, compressedSize: key.compressedSize, uncompressedSize: key.uncompressedSize)
        }

        /// How the span splits around its compressed data when only the central directory is known (the
        /// local header's extra field may be longer or shorter than the directory's): at most `header`
        /// bytes of local header, then `body` bytes that are compressed data whatever the header's length,
        /// then `tail` bytes that hold the data descriptor (when flag bit 3 says there is one, 12 to 24
        /// bytes) and possibly the data's last bytes. `nil` when the span cannot hold what the directory
        /// says, or holds no data.
        package var dataWindow: (header: UInt64, body: UInt64, tail: UInt64)? {
            let compressed = key.compressedSize
            let smallestHeader = 30 + UInt64(key.rawName.count)
            guard compressed > 0, key.length > compressed, key.length - compressed >= smallestHeader else { return nil }
            let around = key.length - compressed
            guard key.flags & 0x8 != 0 else { return (around, compressed, 0) }
            // A descriptor is 12 bytes at least (no signature, 32-bit sizes) and 24 at most (signature,
            // 64-bit sizes): the header is no longer than `around - 12`, the descriptor no longer than
            // what the shortest header leaves.
            guard around >= smallestHeader + 12 else { return nil }
            let header = around - 12
            let tail = min(24, around - smallestHeader)
            guard key.length > header + tail else { return nil }
            return (header, key.length - header - tail, tail)
        }
    }

    /// What a producer writes in the local header of an entry that a data descriptor follows (flag bit
    /// 3), where the specification allows zeros: which of the CRC-32 and the sizes it writes there.
    package struct LocalHeaderStyle: Sendable, Equatable {
        package var crc32 = false
        package var compressedSize = false
        package var uncompressedSize = false

        package init(crc32: Bool = false, compressedSize: Bool = false, uncompressedSize: Bool = false) {
            self.crc32 = crc32
            self.compressedSize = compressedSize
            self.uncompressedSize = uncompressedSize
        }

        /// Every value written.
        static let full = LocalHeaderStyle(crc32: true, compressedSize: true, uncompressedSize: true)
    }

    package init(spans: [Span], directoryStart: UInt64, size: UInt64, localHeaderStyle: LocalHeaderStyle? = nil) {
        self.spans = spans
        self.directoryStart = directoryStart
        self.size = size
        self.localHeaderStyle = localHeaderStyle
    }

    /// The entries in the order of their offsets.
    package var spans: [Span]
    /// Where the central directory starts: everything from here on is the zip's end.
    package var directoryStart: UInt64
    /// The zip's size in bytes.
    package var size: UInt64
    /// How the producer writes local headers, as the headers read by ``learnLocalHeaders(in:from:)``
    /// show (all of a zip read with ``read(_:maxEntries:)``): when every local header (and data
    /// descriptor) whose span allows a guess from the central directory is that guess, in that style, and
    /// at least one is, the zip's other headers likely are too (a new zip's are then rebuilt by
    /// ``DeltaPlan/make(new:old:end:mergeGap:style:)``). `nil` when some is not (a producer that
    /// writes other times or fields there, or a longer extra field before a shorter data descriptor), or
    /// when no span allows a guess (Info-ZIP's extra fields differ in length).
    package var localHeaderStyle: LocalHeaderStyle?

    /// Where the first entry with each key starts, among the entries before the central directory.
    package var firstOffsets: [Key: UInt64] {
        var offsets: [Key: UInt64] = [:]
        for span in spans where span.end <= directoryStart { offsets[span.key] = offsets[span.key] ?? span.offset }
        return offsets
    }

    /// The length of the local header whose first 30 bytes are `header` (name and extra field included),
    /// or `nil` when they are not a local header.
    package static func localHeaderLength(_ header: [UInt8]) -> UInt64? {
        guard header.count >= 30, header[0] == 0x50, header[1] == 0x4B, header[2] == 0x03, header[3] == 0x04 else { return nil }
        return 30 + (UInt64(header[26]) | UInt64(header[27]) << 8) + (UInt64(header[28]) | UInt64(header[29]) << 8)
    }

    /// Where the compressed data of the first entry with each data key starts, and where that entry's
    /// local header does, among the entries whose local header was read.
    package var dataSources: [DataKey: (data: UInt64, header: UInt64)] {
        var sources: [DataKey: (data: UInt64, header: UInt64)] = [:]
        for span in spans where span.end <= directoryStart {
            guard let data = span.dataOffset, sources[span.dataKey] == nil else { continue }
            sources[span.dataKey] = (data, span.offset)
        }
        return sources
    }

    /// The layout of the zip file at `path`, with where each entry's compressed data starts (from its
    /// local header; left unknown for an entry whose header does not fit its span) and the style of its
    /// local headers (``localHeaderStyle``).
    package static func read(_ path: String, maxEntries: Int) throws(ArchiveError) -> ZipLayout {
        let file = try ZipFileReader(path)
        var layout = try ZipDirectory.layout(of: file, maxEntries: maxEntries)
        layout.learnLocalHeaders(in: file)
        return layout
    }

    /// Reads the local headers that `file` holds of the entries starting at `start` or later (all of a
    /// whole zip; those within the fetched end of a new zip): where each one's compressed data starts
    /// (``Span/dataOffset``), and how the producer writes local headers (``localHeaderStyle``), learnt
    /// from those entries alone.
    package mutating func learnLocalHeaders<Source: ZipBytes & ~Copyable>(in file: borrowing Source, from start: UInt64 = 0) {
        // What the local headers of entries with a data descriptor say in each field, once learnt.
        var says: [Bool?] = [nil, nil, nil]
        var agrees = true
        // Headers that said what was predicted: none (no span allowed a guess) teaches nothing.
        var confirmed = 0
        localHeaderStyle = nil
        for index in spans.indices where spans[index].offset >= start {
            let span = spans[index]
            guard span.end <= directoryStart, span.key.length >= 30 else { continue }
            // The whole local header when its length is the predicted one (one read either way).
            let predicted = agrees ? span.predictedLocalBytes(style: .full) : nil
            guard let header = try? file.bytes(at: span.offset, count: UInt64(predicted?.header.count ?? 30)) else { continue }
            if span.key.compressedSize > 0, let length = Self.localHeaderLength(header), length <= span.key.length,
               span.key.length - length >= span.key.compressedSize {
                spans[index].dataOffset = span.offset + length
            }
            guard let predicted else { continue }
            let expected = predicted.header
            // The span's length allowed the guess: a header of another length (a longer extra field and a
            // shorter data descriptor add up the same) or other bytes mean this producer's cannot be guessed.
            guard Self.localHeaderLength(header) == UInt64(expected.count) else {
                agrees = false
                continue
            }
            guard span.key.flags & 0x8 != 0 else {
                if header == expected { confirmed += 1 } else { agrees = false }
                continue
            }
            let descriptorStart = span.end - UInt64(predicted.descriptor.count)
            guard header[0..<14] == expected[0..<14], header[26...] == expected[26...],
                  let descriptor = try? file.bytes(at: descriptorStart, count: UInt64(predicted.descriptor.count)),
                  descriptor == predicted.descriptor else {
                agrees = false
                continue
            }
            for (field, at) in [14, 18, 22].enumerated() {
                var (writtenField, realField) = (ByteReader(header, at: at), ByteReader(expected, at: at))
                let (written, real) = (writtenField.uint32(), realField.uint32())
                guard real != 0 else { continue }
                guard written == real || written == 0 else {
                    agrees = false
                    break
                }
                if let known = says[field], known != (written == real) { agrees = false }
                says[field] = written == real
            }
            confirmed += 1
        }
        if agrees, confirmed > 0 {
            localHeaderStyle = LocalHeaderStyle(crc32: says[0] ?? false, compressedSize: says[1] ?? false, uncompressedSize: says[2] ?? false)
        }
    }

    /// Whether `self` was compressed as `other` was: no file both hold alike (the same name, CRC-32
    /// and size) is compressed otherwise in one (another method or compressed size). A compressor at
    /// one setting gives a file the same bytes every time; once another gives some file another
    /// length, an equal length is no proof of equal bytes either (Info-ZIP's deflate and zlib give
    /// some files as many bytes, other ones).
    package func compressesAlike(_ other: ZipLayout) -> Bool {
        var theirs: [[UInt8]: Key] = [:]
        for span in other.spans { theirs[span.key.rawName] = span.key }
        for span in spans {
            guard let key = theirs[span.key.rawName], key.crc32 == span.key.crc32, key.uncompressedSize == span.key.uncompressedSize,
                  span.key.uncompressedSize > 0 else { continue }
            if key.method != span.key.method || key.compressedSize != span.key.compressedSize { return false }
        }
        return true
    }
}

/// The end of a zip held in memory: bytes `start..<size` of a zip of `size` bytes. A read before
/// `start` fails and notes how far back the bytes are needed (``missingFrom``).
package final class ZipTail: ZipBytes {
    package let bytes: [UInt8]
    package let start: UInt64
    package let size: UInt64
    /// The lowest offset a failed read asked for.
    package private(set) var missingFrom: UInt64?

    package init(bytes: [UInt8], size: UInt64) {
        self.bytes = bytes
        self.size = size
        self.start = size - UInt64(bytes.count)
    }

    package func bytes(at offset: UInt64, count: UInt64) throws(ArchiveError) -> [UInt8] {
        let (last, overflow) = offset.addingReportingOverflow(count)
        guard !overflow, last <= size else { throw .corrupt(reason: "it is truncated") }
        guard offset >= start else {
            missingFrom = min(missingFrom ?? offset, offset)
            throw .corrupt(reason: "the central directory starts before the bytes fetched")
        }
        let from = Int(offset - start)
        return Array(bytes[from..<(from + Int(count))])
    }
}

/// How to assemble a new zip from a kept one: piece by piece, in order, either copied from the kept
/// zip or fetched.
package struct DeltaPlan: Sendable, Equatable {
    /// Bytes `offset..<offset+length` of the new zip, copied from `source` in the kept zip, or fetched
    /// when `source` is `nil`.
    package struct Piece: Sendable, Equatable {
        package var offset: UInt64
        package var length: UInt64
        package var source: UInt64?
        /// For compressed data copied from an entry of the kept zip that differs in its headers: where the
        /// new entry's local header starts. `source` is then where the data starts in the kept zip, and the
        /// piece's bytes are found relative to where the new local header ends (read as it arrives).
        package var header: UInt64?
        /// The piece's bytes when they are neither copied nor fetched but predicted: local headers and data
        /// descriptors rebuilt from the central directory (``ZipLayout/Span/predictedLocalBytes(style:)``).
        package var bytes: [UInt8]?
        package var end: UInt64 { offset + length }
        /// Whether the piece is fetched.
        package var isFetched: Bool { source == nil && bytes == nil }

        package init(offset: UInt64, length: UInt64, source: UInt64?, header: UInt64? = nil, bytes: [UInt8]? = nil) {
            self.offset = offset
            self.length = length
            self.source = source
            self.header = header
            self.bytes = bytes
        }
    }

    /// Contiguous pieces covering `0..<end`.
    package var pieces: [Piece]

    package init(pieces: [Piece]) {
        self.pieces = pieces
    }

    /// The bytes that do not travel: copied from the kept zip, or predicted.
    package var reusedBytes: UInt64 { pieces.reduce(0) { $0 + ($1.isFetched ? 0 : $1.length) } }

    /// Whether some bytes are predicted: the signature then also checks the guesses.
    package var predicts: Bool { pieces.contains { $0.bytes != nil } }

    /// The byte ranges to fetch, in order.
    package var fetchRanges: [Range<UInt64>] { pieces.filter(\.isFetched).map { $0.offset..<$0.end } }

    /// The entries of `new` whose bytes this plan copies whole from the kept zip, by the offset of their
    /// local header in the new zip: where the same bytes start in the kept zip. Once the assembled zip
    /// is proven right, such an entry holds exactly what that entry of the kept zip held.
    package func copiedEntries(of new: ZipLayout) -> [UInt64: UInt64] {
        var copied: [UInt64: UInt64] = [:]
        var index = 0
        for span in new.spans {
            while index < pieces.count, pieces[index].end <= span.offset { index += 1 }
            guard index < pieces.count, let source = pieces[index].source, pieces[index].header == nil,
                  pieces[index].offset <= span.offset, span.end <= pieces[index].end else { continue }
            copied[span.offset] = source + (span.offset - pieces[index].offset)
        }
        return copied
    }

    /// Plans bytes `0..<end` of the zip laid out as `new` from the kept zip laid out as `old`: an entry
    /// whose key matches an entry of the kept zip is copied whole (the cheapest way); an entry whose data
    /// key matches one whose data the kept zip holds (``ZipLayout/dataSources``) has its compressed data
    /// copied, and its local header and data descriptor predicted from the central directory in `style`
    /// when given (how the new zip's own local headers were seen to be written) and the span's length
    /// allows it (``ZipLayout/Span/predictedLocalBytes(style:)``), else fetched; the rest (data before
    /// the first entry, changed entries, the central directory up to `end`) is fetched. When the two
    /// zips were not compressed alike (``ZipLayout/compressesAlike(_:)``), only stored data is copied:
    /// a copy that turns out wrong costs the whole zip once more. When what is copied is less than
    /// ``smallestReuse`` of the zip, nothing is: it is fetched in one range, with no copy to go wrong.
    /// Fetches separated by a copy of at most `mergeGap` bytes become one fetch: a request, or a part of
    /// a multipart answer, costs more than a few bytes.
    package static func make(new: ZipLayout, old: ZipLayout, end: UInt64, mergeGap: UInt64 = 256, style: ZipLayout.LocalHeaderStyle? = nil) -> DeltaPlan {
        var kept = old.firstOffsets
        var data = old.dataSources
        if !new.compressesAlike(old) {
            kept = kept.filter { $0.key.method == 0 || $0.key.compressedSize == 0 }
            data = data.filter { $0.key.method == 0 || $0.key.compressedSize == 0 }
        }
        var pieces: [Piece] = []
        func add(_ offset: UInt64, _ length: UInt64, _ source: UInt64?, header: UInt64? = nil, bytes: [UInt8]? = nil) {
            guard length > 0 else { return }
            if let last = pieces.last, last.isFetched, source == nil, bytes == nil {
                pieces[pieces.count - 1].length += length
            } else if let last = pieces.last, last.bytes != nil, let bytes {
                // In place: a run of empty entries (folders) is one piece, not a copy per entry.
                pieces[pieces.count - 1].bytes?.append(contentsOf: bytes)
                pieces[pieces.count - 1].length += length
            } else if let last = pieces.last, let lastSource = last.source, let source, last.header == nil, header == nil, lastSource + last.length == source {
                pieces[pieces.count - 1].length += length
            } else {
                pieces.append(Piece(offset: offset, length: length, source: source, header: header, bytes: bytes))
            }
        }
        var cursor: UInt64 = 0
        for span in new.spans where span.offset < end {
            if span.offset > cursor { add(cursor, span.offset - cursor, nil) }
            let length = min(span.end, end) - span.offset
            if let source = kept[span.key], span.end <= end {
                add(span.offset, length, source)
            } else if let style, let guess = span.predictedLocalBytes(style: style), span.offset + UInt64(guess.header.count) <= end,
                      span.key.compressedSize == 0 || data[span.dataKey] != nil {
                // Up to `end`: an entry the zip's end cuts comes partly with it.
                let body = span.offset + UInt64(guess.header.count)
                let bodyEnd = min(body + span.key.compressedSize, end)
                let spanEnd = span.offset + length
                add(span.offset, UInt64(guess.header.count), nil, bytes: guess.header)
                if let source = data[span.dataKey], bodyEnd > body {
                    add(body, bodyEnd - body, source.data, header: span.offset)
                }
                add(bodyEnd, spanEnd - bodyEnd, nil, bytes: Array(guess.descriptor.prefix(Int(spanEnd - bodyEnd))))
            } else if let source = data[span.dataKey], let window = span.dataWindow, span.offset + window.header < end {
                // The data up to `end` (an entry the zip's end cuts comes partly with it).
                let body = span.offset + window.header
                let bodyEnd = min(body + window.body, end)
                add(span.offset, window.header, nil)
                add(body, bodyEnd - body, source.data, header: span.offset)
                add(bodyEnd, span.offset + length - bodyEnd, nil)
            } else {
                add(span.offset, length, nil)
            }
            cursor = span.offset + length
        }
        if cursor < end { add(cursor, end - cursor, nil) }
        // Small copies between two fetches are fetched with them.
        var merged: [Piece] = []
        for piece in pieces {
            if piece.isFetched, merged.count >= 2, merged[merged.count - 1].source != nil,
               merged[merged.count - 1].length <= mergeGap, merged[merged.count - 2].isFetched {
                let gap = merged.removeLast()
                merged[merged.count - 1].length += gap.length + piece.length
            } else {
                merged.append(piece)
            }
        }
        let plan = DeltaPlan(pieces: merged)
        guard plan.reusedBytes * smallestReuse.denominator >= end * smallestReuse.numerator else {
            return DeltaPlan(pieces: [Piece(offset: 0, length: end, source: nil)])
        }
        return plan
    }

    /// The least a plan copies or predicts, as a fraction of the bytes it plans: a sixteenth. Less saves
    /// less than the requests and multipart framing of the ranges around it cost in time, and each copy
    /// is one more way for the assembled zip to fail its signature.
    package static let smallestReuse = (numerator: UInt64(1), denominator: UInt64(16))
}
