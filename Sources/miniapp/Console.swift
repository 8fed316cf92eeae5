import Foundation
import Logging
import MiniAppKit
import Synchronization

/// Where the CLI writes: results to stdout, messages to stderr.
enum Console {
    /// Writes `text` and a newline to stdout.
    static func output(_ text: String) {
        output(Data((text + "\n").utf8))
    }

    /// Writes `data` to stdout. When the reader has gone (`miniapp list | head`), the process ends by
    /// SIGPIPE, as a stock tool's would; any other failure (a full disk under `> file`) is one `error:`
    /// line and exit code 74.
    static func output(_ data: Data) {
        let failure = write(data, to: STDOUT_FILENO)
        guard failure != 0 else { return }
        if failure == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        error("cannot write the output: \(String(cString: strerror(failure))); check where stdout goes")
        HeldLog.flush()
        exit(ExitStatus.code(for: .localIO))
    }

    /// Writes `text` and a newline (unless `newline` is false) to stderr; a failure there has nowhere
    /// to be reported and is ignored.
    static func standardError(_ text: String, newline: Bool = true) {
        _ = write(Data((newline ? text + "\n" : text).utf8), to: STDERR_FILENO)
    }

    /// Writes all of `data` to `descriptor` (Foundation's `FileHandle.write` traps on a closed pipe);
    /// returns 0 or the `errno` of the failure. A non-blocking descriptor that is full is waited for.
    private static func write(_ data: Data, to descriptor: Int32) -> Int32 {
        data.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let result = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
                if result < 0 {
                    switch errno {
                    case EINTR:
                        continue
                    case EAGAIN, EWOULDBLOCK:
                        var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&ready, 1, -1)
                        continue
                    default:
                        return errno
                    }
                }
                done += result
            }
            return 0
        }
    }

    /// Writes the one `error:` line of a failure.
    static func error(_ message: String) {
        standardError("error: " + message)
    }

    /// Writes a `warning:` line unless quiet.
    static func warning(_ message: String, quiet: Bool) {
        if !quiet { standardError("warning: " + message) }
    }

    /// Writes one JSON document to stdout.
    static func json<Value: Encodable>(_ value: Value) throws {
        var data = try RecordCoding.encoder(pretty: true).encode(value)
        data.append(UInt8(ascii: "\n"))
        output(data)
    }

    /// Lays `rows` out as columns separated by two spaces, the first row being the header.
    static func table(_ rows: [[String]]) -> String {
        guard let columnCount = rows.map(\.count).max() else { return "" }
        var widths = [Int](repeating: 0, count: columnCount)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// A log handler that writes `level: message (metadata)` lines to stderr.
struct ConsoleLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let details = merged.isEmpty ? "" : " (" + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + ")"
        HeldLog.hold("\(event.level.rawValue): \(event.message)\(details)")
    }
}

/// Log lines held until the command ends, so that a failure's `error:` line is the first on stderr;
/// they follow it, or come out when the command succeeds.
enum HeldLog {
    private static let lines = Mutex<[String]>([])

    static func hold(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    /// Writes the held lines to stderr and forgets them.
    static func flush() {
        let held = lines.withLock { lines in
            defer { lines = [] }
            return lines
        }
        for line in held { Console.standardError(line) }
    }
}
