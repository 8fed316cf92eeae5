import Foundation
import MiniAppKit

/// A one-line download progress bar on stderr, redrawn at most ten times a second.
final class ProgressBar: Sendable {
    private let label: String
    private let state = NSLock()
    nonisolated(unsafe) private var lastDraw = ContinuousClock.now - .seconds(1)

    init(label: String) {
        self.label = label
    }

    func update(_ progress: DownloadProgress) {
        let now = ContinuousClock.now
        let finished = progress.totalBytes == progress.receivedBytes
        let draw = state.withLock {
            guard finished || now - lastDraw >= .milliseconds(100) else { return false }
            lastDraw = now
            return true
        }
        guard draw else { return }
        let received = Self.megabytes(progress.receivedBytes)
        var line = "\r\(label): \(received)"
        if let total = progress.totalBytes, total > 0 {
            let fraction = min(Double(progress.receivedBytes) / Double(total), 1)
            let width = 30
            let filled = Int(fraction * Double(width))
            line = "\r\(label) [\(String(repeating: "#", count: filled))\(String(repeating: ".", count: width - filled))] \(received) / \(Self.megabytes(total)) \(Int(fraction * 100))%"
        }
        Console.standardError(line, newline: finished)
    }

    private static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }
}
