import Foundation
import Hummingbird
import Logging
import MiniAppCore
import NIOCore

/// The browser host's request context: Hummingbird's core context and the connection's two ends, so
/// that the host's own origin can tell which local user is asking.
struct HostRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The client's end of the connection.
    let remoteAddress: SocketAddress?
    /// The host's end.
    let localAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
        localAddress = source.channel.localAddress
    }
}

/// Who is at the other end of a loopback TCP connection, as the kernel's socket tables say.
///
/// Anyone on the machine can connect to a loopback port; the host page and its endpoints (the user's
/// decisions, the capabilities of running apps) answer only the user who runs the host. A connection's
/// client socket is listed in `/proc/net/tcp` or `/proc/net/tcp6` with the user that owns it.
enum LoopbackPeer {
    /// Whether the client at `remote`, connected to `local`, may use the host's own origin: a client that
    /// is not on loopback is the embedding host's choice of address (let through); a loopback client must
    /// be a socket of this process's user, and one that cannot be found is refused.
    /// Blocking (it reads the kernel's tables): run it on a thread pool.
    static func isOwnUser(remote: SocketAddress?, local: SocketAddress?) -> Bool {
        guard let remote, let local else { return false }
        guard isLoopback(remote) else { return true }
        guard let peer = entry(remote), let own = entry(local) else { return false }
        return owner(peer: peer, local: own) == getuid()
    }

    /// The uid owning the socket whose local end is `peer` and remote end is `local`, from the tables.
    static func owner(peer: String, local: String) -> uid_t? {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Read to its end: such a file says it is empty, and the kernel hands its lines out a page
            // or so per read.
            guard let bytes = FileReading.contents(table) else { continue }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 7, fields[1] == peer, fields[2] == local, let uid = uid_t(fields[7]) else { continue }
                return uid
            }
        }
        return nil
    }

    /// How the tables write `address`: the address's bytes in 32-bit words of host byte order, each as
    /// eight uppercase hexadecimal digits, then `:` and the port as four.
    static func entry(_ address: SocketAddress) -> String? {
        guard let port = address.port, let bytes = addressBytes(address) else { return nil }
        var text = ""
        for word in stride(from: 0, to: bytes.count, by: 4) {
            let value = bytes[word..<word + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            text += hex(UInt64(value), digits: 8)
        }
        return text + ":" + hex(UInt64(port), digits: 4)
    }

    static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let bytes = addressBytes(address) else { return false }
        if bytes.count == 4 { return bytes[0] == 127 }
        // ::1, or an IPv4-mapped 127.x.x.x.
        return bytes == Array(repeating: 0, count: 15) + [1]
            || (bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127)
    }

    /// The address's bytes in network order: 4 for IPv4, 16 for IPv6; `nil` for anything else.
    private static func addressBytes(_ address: SocketAddress) -> [UInt8]? {
        guard let text = address.ipAddress else { return nil }
        let (family, count): (Int32, Int) = switch address.protocol {
        case .inet: (AF_INET, 4)
        case .inet6: (AF_INET6, 16)
        default: (AF_UNSPEC, 0)
        }
        guard count > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        guard bytes.withUnsafeMutableBytes({ inet_pton(family, text, $0.baseAddress) }) == 1 else { return nil }
        return bytes
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
