import Foundation

/// An HTTP/1.1 answer around a body whose framing breaks RFC 9112: a client must refuse it (an
/// error, never a crash, never the body as if it were valid). Written by hand for ``RawHTTPServer``.
public enum HostileFraming: String, CaseIterable, Sendable {
    /// A chunk size of `-1`, which `Int(_:radix:)` reads as a negative size.
    case negativeChunkSize
    /// The right chunk size with a `+` before it.
    case signedChunkSize
    /// The right chunk size with `0x` before it.
    case prefixedChunkSize
    /// A chunk size that is not hexadecimal.
    case nonHexChunkSize
    /// A chunk size of 40 hexadecimal digits: past any integer.
    case fortyDigitChunkSize
    /// A negative `Content-Length`.
    case negativeLength
    /// The right `Content-Length` with a `+` before it.
    case signedLength
    /// A `Content-Length` past any integer.
    case hugeLength
    /// Two `Content-Length` fields that disagree.
    case conflictingLengths
    /// `Transfer-Encoding: gzip, chunked` over a body that is not gzip: decoded as plain, it would pass.
    case gzipThenChunked
    /// `Transfer-Encoding: chunked` together with a `Content-Length`.
    case chunkedWithLength
    /// Chunk data not followed by its CRLF.
    case missingChunkEnd
    /// A body shorter than its `Content-Length`, then the connection closed.
    case shortBody
    /// A header field of 200 KB.
    case hugeHeader
    /// 20,000 header fields.
    case manyHeaders
    /// A status line that is not one.
    case garbageStatusLine
    /// Header fields with no status line before them.
    case noStatusLine
    /// The connection closed with nothing sent.
    case emptyAnswer

    /// The whole answer: a 200 with `body` framed this way.
    public func wire(_ body: [UInt8]) -> [UInt8] {
        let count = body.count
        let hex = String(count, radix: 16)
        func head(_ fields: [String]) -> [UInt8] { Array((["HTTP/1.1 200 OK"] + fields).joined(separator: "\r\n").utf8) + Array("\r\n\r\n".utf8) }
        func head(_ fields: String...) -> [UInt8] { head(fields) }
        func chunked(_ size: String) -> [UInt8] {
            head("Transfer-Encoding: chunked") + Array("\(size)\r\n".utf8) + body + Array("\r\n0\r\n\r\n".utf8)
        }
        switch self {
        case .negativeChunkSize: return chunked("-1")
        case .signedChunkSize: return chunked("+" + hex)
        case .prefixedChunkSize: return chunked("0x" + hex)
        case .nonHexChunkSize: return chunked("zz")
        case .fortyDigitChunkSize: return chunked(String(repeating: "f", count: 40))
        case .negativeLength: return head("Content-Length: -\(count)") + body
        case .signedLength: return head("Content-Length: +\(count)") + body
        case .hugeLength: return head("Content-Length: 99999999999999999999999") + body
        case .conflictingLengths: return head("Content-Length: \(count)", "Content-Length: \(count - 1)") + body
        case .gzipThenChunked:
            return head("Transfer-Encoding: gzip, chunked") + Array("\(hex)\r\n".utf8) + body + Array("\r\n0\r\n\r\n".utf8)
        case .chunkedWithLength: return head("Transfer-Encoding: chunked", "Content-Length: \(count)") + Array("\(hex)\r\n".utf8) + body + Array("\r\n0\r\n\r\n".utf8)
        case .missingChunkEnd: return head("Transfer-Encoding: chunked") + Array("\(hex)\r\n".utf8) + body + Array("XX0\r\n\r\n".utf8)
        case .shortBody: return head("Content-Length: \(count + 100)") + body
        case .hugeHeader: return head("Content-Length: \(count)", "X-Padding: " + String(repeating: "a", count: 200_000)) + body
        case .manyHeaders: return head(["Content-Length: \(count)"] + (0..<20_000).map { "X-\($0): y" }) + body
        case .garbageStatusLine: return Array("HTTP/1.1 OK 200 fine\r\nContent-Length: \(count)\r\n\r\n".utf8) + body
        case .noStatusLine: return Array("Content-Length: \(count)\r\n\r\n".utf8) + body
        case .emptyAnswer: return []
        }
    }
}

/// An HTTP/1.1 answer around a body in a framing that is unusual but valid: a client must read the
/// body exactly.
public enum ValidFraming: String, CaseIterable, Sendable {
    /// Chunks with extensions (`;name=value`, `;name="quoted"`, a bare name).
    case chunkExtensions
    /// A chunked body with trailer fields after its last chunk.
    case trailers
    /// A status line without a reason phrase (`HTTP/1.1 200`).
    case noReasonPhrase
    /// Chunk sizes with leading zeros.
    case leadingZeros
    /// `Transfer-Encoding: Chunked`, any case.
    case chunkedInCapitals

    /// The whole answer: a 200 with `body` framed this way.
    public func wire(_ body: [UInt8]) -> [UInt8] {
        let half = body.count / 2
        let first = body[..<half], second = body[half...]
        func size(_ part: ArraySlice<UInt8>) -> String { String(part.count, radix: 16) }
        let crlf = Array("\r\n".utf8)
        switch self {
        case .chunkExtensions:
            return Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size(first));name=value;q=\"a;b\"\r\n".utf8) + first + crlf
                + Array("\(size(second));bare\r\n".utf8) + second + crlf + Array("0;last=1\r\n\r\n".utf8)
        case .trailers:
            return Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n\(size(first))\r\n".utf8) + first + crlf
                + Array("\(size(second))\r\n".utf8) + second + crlf + Array("0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n".utf8)
        case .noReasonPhrase:
            return Array("HTTP/1.1 200\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        case .leadingZeros:
            return Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000\(size(first))\r\n".utf8) + first + crlf
                + Array("00\(size(second).uppercased())\r\n".utf8) + second + crlf + Array("000\r\n\r\n".utf8)
        case .chunkedInCapitals:
            return Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n\(size(body[...]))\r\n".utf8) + body + crlf + Array("0\r\n\r\n".utf8)
        }
    }
}
