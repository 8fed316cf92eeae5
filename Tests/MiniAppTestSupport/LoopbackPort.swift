import Foundation

/// A 127.0.0.1 port held for as long as this value lives. Not listening (the default), connections to
/// it are refused and no test server started meanwhile can take it; listening, the kernel accepts
/// connections that nothing ever reads or answers: a server that hangs.
public final class LoopbackPort: Sendable {
    public let port: Int
    private let descriptor: Int32

    public init(listening: Bool = false) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                _ = bind(descriptor, raw, length)
                if listening { _ = listen(descriptor, 16) }
                _ = getsockname(descriptor, raw, &length)
            }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}
