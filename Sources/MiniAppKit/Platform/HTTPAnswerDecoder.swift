import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The answer to one request, read by NIO's HTTP/1 decoder (llhttp), the parser AsyncHTTPClient's
/// answers go through too: what a connection of its own reads is handed to it as it arrives, and it
/// hands back the answer's parts. Its status line, headers, chunk sizes, lengths and trailers are
/// checked by that one parser; ``DirectHTTP/framing(status:headers:)`` adds this client's policy on
/// top (no transfer coding but `chunked`).
///
/// Used by one thread at a time (the decoder runs in an `EmbeddedChannel`, driven by hand).
final class HTTPAnswerDecoder {
    private let channel = EmbeddedChannel()
    private var parts = CircularBuffer<HTTPClientResponsePart>()
    /// Whether the peer closed its side: no more bytes come.
    private(set) var isClosed = false

    /// Limits of an answer's head: the status line and header fields together, and their number.
    static let limits: NIOHTTPDecoderLimitConfiguration = {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = DirectHTTP.maxHeadBytes
        limits.maxHeaderFieldSize = DirectHTTP.maxHeadBytes
        limits.maxHeaderFieldCount = 1000
        return limits
    }()

    /// A decoder for the answer to `request`, and the request's bytes to send: the decoder notes the
    /// request as it is encoded (an answer to `HEAD` has no body).
    static func start(_ request: HTTPRequestHead) throws(DirectHTTPError) -> (HTTPAnswerDecoder, ByteBuffer) {
        let decoder = HTTPAnswerDecoder()
        var bytes = ByteBuffer()
        do {
            let pipeline = decoder.channel.pipeline.syncOperations
            try pipeline.addHandler(HTTPRequestEncoder())
            try pipeline.addHandler(ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop, limitConfiguration: limits)))
            try decoder.channel.writeOutbound(HTTPClientRequestPart.head(request))
            try decoder.channel.writeOutbound(HTTPClientRequestPart.end(nil))
            while let part = try decoder.channel.readOutbound(as: IOData.self) {
                guard case .byteBuffer(var buffer) = part else { continue }
                bytes.writeBuffer(&buffer)
            }
        } catch {
            throw .malformed("the request cannot be encoded: \(error)")
        }
        return (decoder, bytes)
    }

    /// Hands the decoder bytes the peer sent.
    func feed(_ bytes: ByteBuffer) throws(DirectHTTPError) {
        do {
            try channel.writeInbound(bytes)
        } catch {
            throw Self.failure(error)
        }
        drain()
    }

    /// Tells the decoder the peer closed its side: an answer framed by the end of the stream ends; one
    /// cut short throws ``DirectHTTPError/closedEarly``.
    func close() throws(DirectHTTPError) {
        guard !isClosed else { return }
        isClosed = true
        channel.pipeline.fireChannelInactive()
        do {
            try channel.throwIfErrorCaught()
        } catch {
            // What llhttp says of an answer that stops before its end (HPE_INVALID_EOF_STATE).
            throw .closedEarly
        }
        drain()
    }

    /// The next part decoded, if one is waiting.
    func nextPart() -> HTTPClientResponsePart? {
        parts.popFirst()
    }

    private func drain() {
        while let part = try? channel.readInbound(as: HTTPClientResponsePart.self) { parts.append(part) }
    }

    /// The decoder's error in words for an error message.
    private static func failure(_ error: any Error) -> DirectHTTPError {
        if let error = error as? HTTPParserError {
            return .malformed(String(describing: error))
        }
        return .malformed("\(error)")
    }
}
