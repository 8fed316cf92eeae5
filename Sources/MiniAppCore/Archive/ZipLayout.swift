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

    /// One entry's bytes: from its local header up to the next entry's (or the central directory).
    package struct Span: Sendable, Equatable {
        package var key: Key
        package var offset: UInt64
        package var end: UInt64 { offset + key.length }

        package init(key: Key, offset: UInt64) {
            self.key = key
            self.offset = offset
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

    /// The layout of the zip file at `path`.
    package static func read(_ path: String, maxEntries: Int) throws(ArchiveError) -> ZipLayout {
        let file = try ZipFileReader(path)
        return try ZipDirectory.layout(of: file, maxEntries: maxEntries)
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
        package var end: UInt64 { offset + length }

        package init(offset: UInt64, length: UInt64, source: UInt64?) {
            self.offset = offset
            self.length = length
            self.source = source
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
            guard index < pieces.count, let source = pieces[index].source,
                  pieces[index].offset <= span.offset, span.end <= pieces[index].end else { continue }
            copied[span.offset] = source + (span.offset - pieces[index].offset)
        }
        return copied
    }

    /// Plans bytes `0..<end` of the zip laid out as `new` from the kept zip laid out as `old`: an entry
    /// whose key matches an entry of the kept zip is copied, the rest (data before the first entry,
    /// changed entries, the central directory up to `end`) is fetched. Fetches separated by a copy of at
    /// most `mergeGap` bytes become one fetch: a request costs more than a few bytes.
    package static func make(new: ZipLayout, old: ZipLayout, end: UInt64, mergeGap: UInt64 = 256) -> DeltaPlan {
        let kept = old.firstOffsets
        var pieces: [Piece] = []
        func add(_ offset: UInt64, _ length: UInt64, _ source: UInt64?) {
            guard length > 0 else { return }
            if let last = pieces.last, last.source == nil, source == nil {
                pieces[pieces.count - 1].length += length
            } else if let last = pieces.last, let lastSource = last.source, let source, lastSource + last.length == source {
                pieces[pieces.count - 1].length += length
            } else {
                pieces.append(Piece(offset: offset, length: length, source: source))
            }
        }
        var cursor: UInt64 = 0
        for span in new.spans where span.offset < end {
            if span.offset > cursor { add(cursor, span.offset - cursor, nil) }
            let length = min(span.end, end) - span.offset
            if let source = kept[span.key], span.end <= end {
                add(span.offset, length, source)
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
