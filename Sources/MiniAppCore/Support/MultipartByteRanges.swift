import Foundation

/// Reads a `multipart/byteranges` body (RFC 9110, 14.6) as it arrives: each part's `Content-Range`,
/// then its bytes. Bytes are taken by count, from the part's range, never by looking for the boundary
/// in the data; part headers are bounded, so a hostile server cannot make the reader hold more than
/// ``maxHeaderBytes``.
package struct MultipartByteRanges: Sendable {
    /// What the body said so far.
    package enum Event: Equatable, Sendable {
        /// A part starts: bytes `range` of a file of `total` bytes follow.
        case part(range: Range<UInt64>, total: UInt64)
        /// The next bytes of the current part.
        case data([UInt8])
        /// The closing boundary: no part follows.
        case end
    }

    /// Why a body is not a multipart/byteranges body this reader accepts.
    package struct Malformed: Error, Equatable, Sendable {
        package var reason: String
    }

    /// The most bytes a delimiter line plus a part's headers may take.
    package static let maxHeaderBytes = 8192

    private enum State: Sendable {
        case delimiter
        case headers
        case data(remaining: UInt64)
        case done
    }

    private let delimiter: [UInt8]
    private var state = State.delimiter
    private var pending: [UInt8] = []

    /// A reader for parts separated by `boundary`.
    package init(boundary: String) {
        delimiter = Array("--\(boundary)".utf8)
    }

    /// The `boundary` parameter of a `Content-Type: multipart/byteranges; boundary=...` value, or `nil`
    /// when the value is not that type.
    package static func boundary(contentType value: String) -> String? {
        let parts = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = parts.first, type.lowercased() == "multipart/byteranges" else { return nil }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var boundary = pair[1].trimmingCharacters(in: .whitespaces)
            if boundary.count >= 2, boundary.hasPrefix("\""), boundary.hasSuffix("\"") { boundary = String(boundary.dropFirst().dropLast()) }
            // RFC 2046: 1 to 70 characters.
            guard (1...70).contains(boundary.utf8.count) else { return nil }
            return boundary
        }
        return nil
    }

    /// Whether the closing boundary was read.
    package var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Feeds the next bytes of the body; returns what they complete, in order.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(Malformed) -> [Event] {
        var events: [Event] = []
        var input = Array(bytes)[...]
        while !input.isEmpty {
            switch state {
            case .done:
                // An epilogue after the closing boundary is ignored, as RFC 2046 says.
                return events
            case .data(let remaining):
                let count = Int(min(UInt64(input.count), remaining))
                events.append(.data(Array(input.prefix(count))))
                input = input.dropFirst(count)
                state = remaining == UInt64(count) ? .delimiter : .data(remaining: remaining - UInt64(count))
            case .delimiter, .headers:
                pending += input
                input = []
                try parsePending(&events)
                if case .data = state, !pending.isEmpty {
                    input = pending[...]
                    pending = []
                }
            }
        }
        return events
    }

    /// Consumes delimiter lines and headers from `pending` while they are whole.
    private mutating func parsePending(_ events: inout [Event]) throws(Malformed) {
        while true {
            switch state {
            case .delimiter:
                // Skip the CRLF (or preamble) before the delimiter; the delimiter ends its line with CRLF,
                // or with `--` for the closing one.
                guard let at = Self.find(delimiter, in: pending) else {
                    guard pending.count <= Self.maxHeaderBytes else { throw Malformed(reason: "no part boundary where one was due") }
                    return
                }
                let after = at + delimiter.count
                guard pending.count >= after + 2 else { return }
                if pending[after] == UInt8(ascii: "-"), pending[after + 1] == UInt8(ascii: "-") {
                    state = .done
                    events.append(.end)
                    pending = []
                    return
                }
                guard let lineEnd = Self.find([13, 10], in: pending, from: after) else {
                    guard pending.count <= Self.maxHeaderBytes else { throw Malformed(reason: "a part boundary line is too long") }
                    return
                }
                // Only linear white space may follow the boundary on its line.
                guard pending[after..<lineEnd].allSatisfy({ $0 == 32 || $0 == 9 }) else { throw Malformed(reason: "a part boundary is followed by text") }
                pending.removeFirst(lineEnd + 2)
                state = .headers
            case .headers:
                guard let headerEnd = Self.find([13, 10, 13, 10], in: pending) else {
                    guard pending.count <= Self.maxHeaderBytes else { throw Malformed(reason: "a part's headers are too long") }
                    return
                }
                let text = String(decoding: pending[0..<headerEnd], as: UTF8.self)
                pending.removeFirst(headerEnd + 4)
                var range: (Range<UInt64>, UInt64)?
                for line in text.split(separator: "\r\n") {
                    let pair = line.split(separator: ":", maxSplits: 1)
                    guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-range" else { continue }
                    range = Self.contentRange(pair[1].trimmingCharacters(in: .whitespaces))
                    guard range != nil else { throw Malformed(reason: "a part has an invalid Content-Range") }
                }
                guard let (bytes, total) = range else { throw Malformed(reason: "a part has no Content-Range") }
                events.append(.part(range: bytes, total: total))
                state = bytes.isEmpty ? .delimiter : .data(remaining: UInt64(bytes.count))
                if case .data = state { return }
            case .data, .done:
                return
            }
        }
    }

    /// `bytes a-b/total` as `a..<b+1` and `total`, or `nil`.
    package static func contentRange(_ value: String) -> (Range<UInt64>, UInt64)? {
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let total = UInt64(parts[1]) else { return nil }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = UInt64(bounds[0]), let last = UInt64(bounds[1]), first <= last, last < total else { return nil }
        return (first..<(last + 1), total)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
