import Foundation

/// The reference implementation of The Update Framework (python-tuf from PyPI, in the environment
/// `scripts/python-tuf` makes, which the test command runs first): what our TUF code is checked against.
public enum PythonTUF {
    /// The environment's python.
    public static var python: String {
        ProcessInfo.processInfo.environment["MINIAPP_PYTHON_TUF"].map { $0 + "/bin/python" }
            ?? repositoryRoot.appendingPathComponent(".build/python-tuf/bin/python").path
    }

    public enum Failure: Error, CustomStringConvertible {
        case missing(String)
        case failed(status: Int32, stderr: String)

        public var description: String {
            switch self {
            case .missing(let python): "\(python) is missing: run scripts/python-tuf (the test command does)"
            case .failed(let status, let stderr): "python-tuf exited \(status): \(stderr)"
            }
        }
    }

    /// Runs `script` with `arguments` in that environment and returns its stdout; throws when it fails.
    public static func run(_ script: String, _ arguments: [String] = []) async throws -> String {
        guard FileManager.default.isExecutableFile(atPath: python) else { throw Failure.missing(python) }
        let folder = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("script.py").path, out = folder.appendingPathComponent("out").path, err = folder.appendingPathComponent("err").path
        try writeTestFile(source, Data(script.utf8))
        let child = try ChildProcess(python, [source] + arguments, stdout: .file(out), stderr: .file(err))
        let status = await child.exited()
        let stdout = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data(), as: UTF8.self)
        guard status == 0 else {
            throw Failure.failed(status: status, stderr: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: err))) ?? Data(), as: UTF8.self))
        }
        return stdout
    }
}
