public import Foundation

/// What a run of the built `miniapp` printed and how it exited.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    /// stdout parsed as JSON.
    public func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(stdout.utf8))
    }

    /// The non-empty lines of stderr.
    public var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
}

/// Runs the `miniapp` executable that `swift build` put next to the test bundle, or the one
/// `MINIAPP_TEST_EXECUTABLE` names: the command-line tests against the shipped build are
/// `MINIAPP_TEST_EXECUTABLE=$(scripts/build-release)/miniapp swift test --filter miniappTests` (every
/// product built: some tests run `miniapp-host` and `miniapp-quickstart` from the same folder).
public enum CommandRunner {
    /// The built executable.
    public static var executable: URL {
        if let named = ProcessInfo.processInfo.environment["MINIAPP_TEST_EXECUTABLE"], !named.isEmpty { return URL(fileURLWithPath: named) }
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: selfPath).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("miniapp")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
            directory.deleteLastPathComponent()
        }
        fatalError("the miniapp executable was not built next to \(selfPath)")
    }

    /// Whether tests can run `miniapp` as another user (nobody, 65534), for which file modes hold: the
    /// tests run as root, setpriv exists, and that user can reach and run the built executable.
    public static let canRunAsAnotherUser: Bool = getuid() == 0
        && runToolBlocking("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", executable.path, "--version"]) == 0

    /// Runs `miniapp` with `arguments` and an environment holding only `environment` plus PATH,
    /// with HOME in a fresh temporary folder unless given; as user and group `user` when given
    /// (see ``canRunAsAnotherUser``); with the file at `stdin` on its stdin.
    /// A run still going after `timeoutSeconds` is killed (status 9): a hang fails the test instead of
    /// stalling the suite.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], user: UInt32? = nil, timeoutSeconds: Double? = nil, stdin: String = "/dev/null"
    ) async throws -> CommandResult {
        let folder = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("stdout").path
        let err = folder.appendingPathComponent("stderr").path
        let child = if let user {
            try ChildProcess(
                "/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", executable.path] + arguments,
                environment: try processEnvironment(environment), stdin: stdin, stdout: .file(out), stderr: .file(err)
            )
        } else {
            try ChildProcess(executable.path, arguments, environment: try processEnvironment(environment), stdin: stdin, stdout: .file(out), stderr: .file(err))
        }
        if let timeoutSeconds {
            DispatchQueue.global().asyncAfter(deadline: .now() + timeoutSeconds) { child.kill() }
        }
        let status = await child.exited()
        return CommandResult(
            status: status,
            stdout: String(decoding: try Data(contentsOf: URL(fileURLWithPath: out)), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: err)), as: UTF8.self)
        )
    }

    /// Starts `miniapp` in the background, with the environment of ``run(_:environment:user:timeoutSeconds:)``
    /// and its output discarded: for tests that kill it or let it race others.
    public static func start(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess(executable.path, arguments, environment: try processEnvironment(environment))
    }

    /// `environment` plus PATH, and HOME in a fresh temporary folder unless given.
    private static func processEnvironment(_ environment: [String: String]) throws -> [String: String] {
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        if environment["HOME"] == nil {
            env["HOME"] = try TemporaryDirectory.make().path
        }
        env.merge(environment) { _, new in new }
        return env
    }
}

/// Runs a stock tool with its output discarded and returns its exit status, or -1 when it cannot start.
@discardableResult
public func runTool(_ path: String, _ arguments: [String], in directory: URL? = nil) async -> Int32 {
    await offPool { runToolBlocking(path, arguments, in: directory) }
}

/// ``runTool(_:_:in:)`` on the caller's thread, for the rare caller that cannot await (a static, a `defer`).
@discardableResult
public func runToolBlocking(_ path: String, _ arguments: [String], in directory: URL? = nil) -> Int32 {
    (try? ChildProcess(path, arguments, directory: directory?.path))?.waitUntilExit() ?? -1
}

/// Runs `work` on a thread of its own and returns what it returned. Blocking work (waiting for a
/// process, reading a pipe, reading or searching big files, sleeping) must not hold one of the threads
/// of Swift's cooperative pool: there are as many as cores (two here), every test's awaits resume on
/// them, and tests of timeouts and retry budgets fail when those resumptions wait.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// ``offPool(_:)`` for work that cannot throw.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// Fresh temporary folders for tests.
public enum TemporaryDirectory {
    /// A new empty folder under the system's temporary directory.
    public static func make() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("miniapp-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The repository's root, found from this file.
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Writes `bytes` to the file at `path`, created or truncated, without syncing it to the disk:
/// Foundation's writes fsync every file, which on a busy disk keeps Swift's cooperative threads (and
/// so every other test) waiting.
public func writeTestFile(_ path: String, _ data: Data) throws {
    try writeTestFile(path, [UInt8](data))
}

/// ``writeTestFile(_:_:)`` of `text` in UTF-8.
public func writeTestFile(_ path: String, _ text: String) throws {
    try writeTestFile(path, Array(text.utf8))
}

/// ``writeTestFile(_:_:)`` of `bytes`.
public func writeTestFile(_ path: String, _ bytes: [UInt8]) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(descriptor) }
    try bytes.withUnsafeBytes { buffer in
        var written = 0
        while written < buffer.count {
            let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            written += count
        }
    }
}
