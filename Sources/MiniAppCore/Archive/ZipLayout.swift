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
        package var end: UInt64 { offset + key.length }

        package init(key: Key, offset: UInt64, dataOffset: UInt64? = nil) {
            self.key = key
            self.offset = offset
            self.dataOffset = dataOffset
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

    package init(spans: [Span], directoryStart: UInt64, size: UInt64) {
        self.spans = spans
        self.directoryStart = directoryStart
        self.size = size
    }

    /// The entries in the order of their offsets.
    package var spans: [Span]
    /// Where the central directory starts: everything from here on is the zip's end.
    package var directoryStart: UInt64
    /// The zip's size in bytes.
    package var size: UInt64

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
    /// local header; left unknown for an entry whose header does not fit its span).
    package static func read(_ path: String, maxEntries: Int) throws(ArchiveError) -> ZipLayout {
        let file = try ZipFileReader(path)
        var layout = try ZipDirectory.layout(of: file, maxEntries: maxEntries)
        for index in layout.spans.indices {
            let span = layout.spans[index]
            guard span.key.compressedSize > 0, span.end <= layout.directoryStart, span.key.length >= 30,
                  let header = try? file.bytes(at: span.offset, count: 30) else { continue }
            guard let length = localHeaderLength(header), length <= span.key.length, span.key.length - length >= span.key.compressedSize else { continue }
            layout.spans[index].dataOffset = span.offset + length
        }
        return layout
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
        package var end: UInt64 { offset + length }

        package init(offset: UInt64, length: UInt64, source: UInt64?, header: UInt64? = nil) {
            self.offset = offset
            self.length = length
            self.source = source
            self.header = header
        }
    }

    /// Contiguous pieces covering `0..<end`.
    package var pieces: [Piece]

    package init(pieces: [Piece]) {
        self.pieces = pieces
    }

    /// The bytes to copy from the kept zip.
    package var reusedBytes: UInt64 { pieces.reduce(0) { $0 + ($1.source == nil ? 0 : $1.length) } }

    /// The byte ranges to fetch, in order.
    package var fetchRanges: [Range<UInt64>] { pieces.filter { $0.source == nil }.map { $0.offset..<$0.end } }

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
    /// key matches one whose data the kept zip holds (``ZipLayout/dataSources``) has its local header and
    /// data descriptor fetched and its compressed data copied; the rest (data before the first entry,
    /// changed entries, the central directory up to `end`) is fetched. Fetches separated by a copy of at
    /// most `mergeGap` bytes become one fetch: a request, or a part of a multipart answer, costs more
    /// than a few bytes.
    package static func make(new: ZipLayout, old: ZipLayout, end: UInt64, mergeGap: UInt64 = 256) -> DeltaPlan {
        let kept = old.firstOffsets
        let data = old.dataSources
        var pieces: [Piece] = []
        func add(_ offset: UInt64, _ length: UInt64, _ source: UInt64?, header: UInt64? = nil) {
            guard length > 0 else { return }
            if let last = pieces.last, last.source == nil, source == nil {
                pieces[pieces.count - 1].length += length
            } else if let last = pieces.last, let lastSource = last.source, let source, last.header == nil, header == nil, lastSource + last.length == source {
                pieces[pieces.count - 1].length += length
            } else {
                pieces.append(Piece(offset: offset, length: length, source: source, header: header))
            }
        }
        var cursor: UInt64 = 0
        for span in new.spans where span.offset < end {
            if span.offset > cursor { add(cursor, span.offset - cursor, nil) }
            let length = min(span.end, end) - span.offset
            if let source = kept[span.key], span.end <= end {
                add(span.offset, length, source)
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
            if piece.source == nil, merged.count >= 2, merged[merged.count - 1].source != nil,
               merged[merged.count - 1].length <= mergeGap, merged[merged.count - 2].source == nil {
                let gap = merged.removeLast()
                merged[merged.count - 1].length += gap.length + piece.length
            } else {
                merged.append(piece)
            }
        }
        return DeltaPlan(pieces: merged)
    }
}
