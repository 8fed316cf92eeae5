import Foundation
import Logging
import MiniAppCore
import MiniAppKit
import Synchronization

/// Where the CLI writes: results to stdout, messages to stderr.
enum Console {
    /// Writes `text` and a newline to stdout, its control characters neutralised (``terminalSafe(_:)``).
    static func output(_ text: String) {
        // Not through `Data(_:)` of the UTF-8 view: its first use looks up a conformance by scanning
        // every conformance record, about a quarter of a millisecond of a warm `download`.
        var line = terminalSafe(text) + "\n"
        line.withUTF8 { output(UnsafeRawBufferPointer($0)) }
    }

    /// `text` with every control character but line ends and tabs (C0, DEL, C1, and the Unicode line
    /// and paragraph separators) shown as `\u{..}`: names, tags, reasons and metadata come from a
    /// platform or a bundle, and an escape sequence in them must not drive the user's terminal.
    static func terminalSafe(_ text: String, keepingCarriageReturn: Bool = false) -> String {
        func escaped(_ scalar: Unicode.Scalar) -> Bool {
            guard scalar != "\n", scalar != "\t", !(keepingCarriageReturn && scalar == "\r") else { return false }
            return scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
        }
        guard text.unicodeScalars.contains(where: escaped) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if escaped(scalar) {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// Writes `data` to stdout. When the reader has gone (`miniapp list | head`), the process ends by
    /// SIGPIPE, as a stock tool's would; any other failure (a full disk under `> file`) is one `error:`
    /// line and exit code 74.
    static func output(_ data: Data) {
        data.withUnsafeBytes { output($0) }
    }

    /// ``output(_:)-(Data)`` of `bytes`.
    static func output(_ bytes: UnsafeRawBufferPointer) {
        let failure = write(bytes, to: STDOUT_FILENO)
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
    /// Control characters are neutralised as on stdout; a line without its newline (the progress bar)
    /// keeps its carriage returns.
    static func standardError(_ text: String, newline: Bool = true) {
        let safe = terminalSafe(text, keepingCarriageReturn: !newline)
        var line = newline ? safe + "\n" : safe
        _ = line.withUTF8 { write(UnsafeRawBufferPointer($0), to: STDERR_FILENO) }
    }

    /// Writes all of `data` to `descriptor` (Foundation's `FileHandle.write` traps on a closed pipe);
    /// returns 0 or the `errno` of the failure. A non-blocking descriptor that is full is waited for.
    private static func write(_ data: Data, to descriptor: Int32) -> Int32 {
        data.withUnsafeBytes { write($0, to: descriptor) }
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32 {
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

    /// Writes the one `error:` line of a failure.
    static func error(_ message: String) {
        standardError("error: " + message)
    }

    /// Writes a `warning:` line unless quiet.
    static func warning(_ message: String, quiet: Bool) {
        if !quiet { standardError("warning: " + message) }
    }

    /// Writes one JSON document to stdout: the exact values, with DEL and C1 controls escaped as JSON
    /// too (the encoder escapes only C0), so that nothing in it drives a terminal.
    static func json<Value: Encodable>(_ value: Value) throws {
        output(try jsonData(value))
    }

    /// What ``json(_:)`` prints.
    static func jsonData<Value: Encodable>(_ value: Value) throws -> Data {
        var data = try RecordCoding.encoder(pretty: true).encode(value)
        if data.contains(0x7F) || data.contains(0xC2) { data = escapingControls(data) }
        data.append(UInt8(ascii: "\n"))
        return data
    }

    /// JSON text with DEL (0x7F) and the UTF-8 of U+0080-U+009F written as `\u` escapes; in JSON they
    /// can only be inside strings, where the escape means the same character.
    static func escapingControls(_ data: Data) -> Data {
        var result = Data()
        result.reserveCapacity(data.count)
        var bytes = data.makeIterator()
        var pending: UInt8?
        while let byte = pending ?? bytes.next() {
            pending = nil
            if byte == 0x7F {
                result.append(contentsOf: Array("\\u007f".utf8))
            } else if byte == 0xC2, let next = bytes.next() {
                if (0x80...0x9F).contains(next) {
                    result.append(contentsOf: Array(String(format: "\\u%04x", Int(next)).utf8))
                } else {
                    result.append(byte)
                    pending = next
                }
            } else {
                result.append(byte)
            }
        }
        return result
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
