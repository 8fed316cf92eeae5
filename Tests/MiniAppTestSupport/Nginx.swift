import Foundation

/// nginx (Debian's `nginx`) serving a folder as plain files on 127.0.0.1, in a process of its own with
/// its configuration, logs and temporary files in a folder of its own: the static server a registry's
/// TUF files are meant to be served by as well as by `serve`.
public final class Nginx: Sendable {
    /// `http://127.0.0.1:<port>/`.
    public let baseURL: String
    private let process: ChildProcess
    private let accessLog: String

    private init(baseURL: String, process: ChildProcess, accessLog: String) {
        self.baseURL = baseURL
        self.process = process
        self.accessLog = accessLog
    }

    public enum Failure: Error, CustomStringConvertible {
        case missing, notStarted(String)

        public var description: String {
            switch self {
            case .missing: "/usr/sbin/nginx is missing: install Debian's nginx (the test command does)"
            case .notStarted(let log): "nginx did not start: \(log)"
            }
        }
    }

    /// Starts nginx serving `root` on a free port, and waits until it answers.
    public static func start(root: String) async throws -> Nginx {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else { throw Failure.missing }
        let folder = try TemporaryDirectory.make().path
        for _ in 0..<5 {
            let port = try freePort()
            let configuration = """
                daemon off;
                master_process off;
                pid \(folder)/nginx.pid;
                error_log \(folder)/error.log;
                events { worker_connections 64; }
                http {
                    access_log \(folder)/access.log;
                    client_body_temp_path \(folder)/body;
                    proxy_temp_path \(folder)/proxy;
                    fastcgi_temp_path \(folder)/fastcgi;
                    uwsgi_temp_path \(folder)/uwsgi;
                    scgi_temp_path \(folder)/scgi;
                    default_type application/octet-stream;
                    server {
                        listen 127.0.0.1:\(port);
                        root \(root);
                    }
                }
                """
            try writeTestFile(folder + "/nginx.conf", Data(configuration.utf8))
            let process = try ChildProcess("/usr/sbin/nginx", ["-p", folder, "-e", folder + "/error.log", "-c", folder + "/nginx.conf"], stdout: .null, stderr: .null)
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                if !process.isRunning { break }
                if canConnect(port) { return Nginx(baseURL: "http://127.0.0.1:\(port)/", process: process, accessLog: folder + "/access.log") }
                try await Task.sleep(for: .milliseconds(20))
            }
            process.stop()
        }
        throw Failure.notStarted((try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? "")
    }

    /// The access log's lines so far.
    public func requests() -> [String] {
        ((try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    public func stop() {
        process.stop()
    }

    private static func canConnect(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
    }
}

/// A free TCP port on 127.0.0.1 (free when asked: another process may take it after).
public func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}
