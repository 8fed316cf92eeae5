public import Foundation
import NIOConcurrencyHelpers

/// A TCP server on 127.0.0.1 that answers each request with bytes a test writes by hand: for the
/// framing an HTTP library would never produce (chunks split anywhere, interim answers, broken heads).
/// Connections are served one after another on a thread of its own.
public final class RawHTTPServer: Sendable {
    /// What to send for one request: pieces written one by one (with a pause between them, so that
    /// the client reads them separately), then the connection is closed, or left open when `stall`.
    public struct Answer: Sendable {
        public var pieces: [[UInt8]]
        public var stall: Bool

        public init(pieces: [[UInt8]], stall: Bool = false) {
            self.pieces = pieces
            self.stall = stall
        }

        /// The whole text as one piece.
        public init(_ text: String, stall: Bool = false) {
            self.init(pieces: [Array(text.utf8)], stall: stall)
        }
    }

    public let port: Int
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    private let listener: Int32
    private let received = NIOLockedValueBox<[String]>([])
    private let stalled = NIOLockedValueBox<[Int32]>([])
    private let done = NIOLockedValueBox<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// The heads of the requests received, as text.
    public var requests: [String] { received.withLockedValue { $0 } }

    /// Starts serving; `answer` is given each request's head.
    public init(_ answer: @escaping @Sendable (String) -> Answer) {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listener = self.listener
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                _ = bind(listener, raw, length)
                _ = listen(listener, 16)
                _ = getsockname(listener, raw, &length)
            }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [received, stalled, done, finished] in
            defer { finished.signal() }
            while true {
                let connection = accept(listener, nil, nil)
                if done.withLockedValue({ $0 }) {
                    if connection >= 0 { close(connection) }
                    return
                }
                guard connection >= 0 else { continue }
                var head: [UInt8] = []
                var byte: UInt8 = 0
                while !head.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)), recv(connection, &byte, 1, 0) == 1 {
                    head.append(byte)
                }
                let text = String(decoding: head, as: UTF8.self)
                received.withLockedValue { $0.append(text) }
                let reply = answer(text)
                for (index, piece) in reply.pieces.enumerated() {
                    if index > 0 { usleep(2_000) }
                    _ = piece.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                if reply.stall {
                    stalled.withLockedValue { $0.append(connection) }
                } else {
                    close(connection)
                }
            }
        }
        thread.start()
    }

    /// Stops the thread and closes every connection.
    public func stop() {
        done.withLockedValue { $0 = true }
        // Wake the accept.
        let waker = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = connect(waker, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        finished.wait()
        close(waker)
        close(listener)
        for connection in stalled.withLockedValue({ $0 }) { close(connection) }
    }
}
