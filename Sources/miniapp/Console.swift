import Foundation
import Logging
import MiniAppKit
import Synchronization

/// Where the CLI writes: results to stdout, messages to stderr.
enum Console {
    /// Writes `text` and a newline to stdout.
    static func output(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes `text` and a newline to stderr.
    static func standardError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
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
        FileHandle.standardOutput.write(data)
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
