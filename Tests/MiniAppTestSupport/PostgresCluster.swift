import Foundation
public import Testing

/// The permission store's two backends: the same behaviour tests run against both.
public enum StoreBackend: String, CaseIterable, Sendable {
    case sqlite, postgres

    /// The environment that points `miniapp` at a new, empty store of this backend: none for SQLite
    /// (the cache's own), `MINIAPP_PERMISSION_STORE` with a new database for PostgreSQL.
    public func environment() async throws -> [String: String] {
        guard self == .postgres else { return [:] }
        let cluster = try await PostgresCluster.shared()
        return ["MINIAPP_PERMISSION_STORE": cluster.socketURL(try await cluster.createDatabase())]
    }
}

/// Tests that run against both backends name the backend in their results.
extension StoreBackend: CustomTestStringConvertible {
    public var testDescription: String { rawValue }
}

/// A throwaway PostgreSQL cluster from Debian's `postgresql` package, started once per test process
/// (initdb in a temporary folder; a Unix socket there and a loopback TCP port with a password) and
/// stopped when the process exits. Each test takes a database of its own.
public final class PostgresCluster: Sendable {
    /// The folder holding the data, the socket and the log.
    public let directory: String
    /// The loopback TCP port.
    public let port: Int
    /// The cluster's superuser, trusted over the socket, with ``password`` over TCP.
    public let user = "miniapp"
    public let password = "s3cret-pw%:@/"
    private let bin: String

    private static let started = Task { try await offPool { try PostgresCluster() } }

    /// The cluster of this test process, started at the first call.
    public static func shared() async throws -> PostgresCluster {
        try await started.value
    }

    /// Runs blocking `body` (tools started and waited for) on a thread of Dispatch's, not on Swift's
    /// cooperative pool, which the code under test needs (two threads on this machine).
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The PostgreSQL binaries of the newest installed version.
    static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        guard let version = versions.last, FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") else {
            throw ClusterError(message: "PostgreSQL is not installed: scripts/bootstrap postgresql (Debian's package) installs it")
        }
        return "\(root)/\(version)/bin"
    }

    struct ClusterError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    private init() throws {
        bin = try Self.binaries()
        var template = Array("/tmp/miniapp-pg.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ClusterError(message: "cannot make a temporary folder") }
        directory = String(cString: made)
        port = LoopbackPort().port
        let asRoot = getuid() == 0
        // PostgreSQL refuses to run as root: the cluster belongs to the postgres user then.
        if asRoot { _ = try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        chmod(directory, 0o755)
        let passwordFile = directory + "/pw"
        try writeTestFile(passwordFile, password)
        if asRoot { _ = try Self.run("/bin/chown", ["postgres:postgres", passwordFile]) }
        try runAsOwner(bin + "/initdb", ["-D", directory + "/data", "-U", user, "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + passwordFile, "-E", "UTF8", "--no-sync", "--no-instructions"])
        let options = "-k \(directory) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        // The server inherits pg_ctl's output: it goes to a file, not to a pipe that would never close.
        try runAsOwner(bin + "/pg_ctl", ["-D", directory + "/data", "-o", options, "-l", directory + "/log", "-w", "-t", "60", "start"], capture: false)
        try Self.stopWhenGone(bin: bin, directory: directory, asRoot: asRoot)
    }

    /// A new, empty database, owned by ``user``.
    public func createDatabase() async throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await psql("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    /// Runs `sql` with psql over the socket.
    @discardableResult
    public func psql(_ sql: String, database: String) async throws -> String {
        let arguments = ["-h", directory, "-p", "\(port)", "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1", "-Atqc", sql]
        let tool = bin + "/psql"
        return try await Self.offPool { try Self.run(tool, arguments) }
    }

    /// The URL of `database` over the Unix socket (no password needed).
    public func socketURL(_ database: String, user: String? = nil) -> String {
        "postgres://\(user ?? self.user)@/\(database)?host=\(directory)&port=\(port)"
    }

    /// The URL of `database` over TCP on 127.0.0.1, with `password` (percent-encoded) or none.
    public func tcpURL(_ database: String, password: String?, user: String? = nil) -> String {
        let encoded = password.map { ":" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""
        return "postgres://\(user ?? self.user)\(encoded)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    private func runAsOwner(_ tool: String, _ arguments: [String], capture: Bool = true) throws {
        if getuid() == 0 {
            _ = try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", tool] + arguments, capture: capture)
        } else {
            _ = try Self.run(tool, arguments, capture: capture)
        }
    }

    /// Runs `tool` and returns its output; without `capture`, its output is thrown away. Its output goes
    /// to a file, not a pipe: pg_ctl leaves a server running that would hold a pipe open.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], capture: Bool = true, wait: Bool = true) throws -> String {
        let output = NSTemporaryDirectory() + "/miniapp-pg-\(UUID().uuidString).out"
        defer { if capture { unlink(output) } }
        let child: ChildProcess
        do {
            child = try ChildProcess(tool, arguments, stdout: capture ? .file(output) : .null, stderr: capture ? .standardOutput : .null)
        } catch {
            throw ClusterError(message: "\(error)")
        }
        guard wait else { return "" }
        let status = child.waitUntilExit()
        let text = capture ? ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "") : ""
        guard child.terminationReason == .exit, status == 0 else {
            throw ClusterError(message: "\((tool as NSString).lastPathComponent) failed (status \(status)): \(text)")
        }
        return text
    }

    /// Starts a watchdog that stops the cluster (immediately: it is thrown away) and deletes its folder
    /// once this process is gone, however it ends.
    private static func stopWhenGone(bin: String, directory: String, asRoot: Bool) throws {
        let owner = asRoot ? "/usr/sbin/runuser -u postgres -- " : ""
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 0.5; done
            \(owner)\(bin)/pg_ctl -D '\(directory)/data' -m immediate -w stop >/dev/null 2>&1
            rm -rf '\(directory)'
            """
        try run("/bin/sh", ["-c", script], capture: false, wait: false)
    }
}
