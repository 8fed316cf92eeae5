import Foundation
public import MiniAppBridge
public import MiniAppCore
import Synchronization

/// What a development folder's host reports to its developer (``DevelopmentSession/reports``).
public enum DevelopmentReport: Sendable, Equatable {
    /// The folder changed (`paths` paths in one burst) and the host page reloads the app's frame;
    /// `manifestChanged` when a new manifest.json is in force.
    case reloaded(paths: Int, manifestChanged: Bool)
    /// The static check of the folder (``ManifestCheck/problems(ofFolder:)``): at the start, then each
    /// time its result changes. Empty: nothing to report.
    case checked([ManifestProblem])
    /// manifest.json changed but cannot be used: the last good manifest stays in force.
    case manifestKept(reason: String)
    /// The app called an action whose permission its manifest does not declare (each action once).
    case undeclaredPermission(String)
}

/// A development folder a ``BrowserHost`` serves as it is (no publish, no signature, no cache copy):
/// what was found in it, and the reports of ``BrowserHost/watch(_:)``.
public final class DevelopmentSession: Sendable {
    /// The folder served (absolute, links resolved).
    public let folder: String
    /// The app id it is served as.
    public let appId: String
    /// What happens to the folder while it is watched, for the developer; finishes when the watch ends.
    public let reports: AsyncStream<DevelopmentReport>
    let continuation: AsyncStream<DevelopmentReport>.Continuation
    private let state: Mutex<State>

    struct State {
        /// The bytes of the manifest in force.
        var manifestBytes: [UInt8]?
        var problems: [ManifestProblem] = []
        /// Why the manifest on disk is not the one in force, if it is not.
        var manifestError: String?
        /// The warnings given so far, oldest first.
        var warnings: [String] = []
    }

    /// The most warnings kept for the host page.
    static let maxWarnings = 32

    init(folder: String, appId: String, manifestBytes: [UInt8]?, problems: [ManifestProblem]) {
        self.folder = folder
        self.appId = appId
        (reports, continuation) = AsyncStream<DevelopmentReport>.makeStream(bufferingPolicy: .bufferingNewest(256))
        state = Mutex(State(manifestBytes: manifestBytes, problems: problems))
    }

    /// The command that publishes the folder as it is served, with placeholders for what only the
    /// publisher knows (the registry, the version's tag, the signing key).
    public var publishCommand: String {
        "miniapp publish \(Self.shellQuoted(folder)) --registry <registry-dir> --app-id \(Self.shellQuoted(appId)) --version-tag <version> --key <key.pem>"
    }

    /// The problems, the manifest's error and the warnings now, for the host page.
    var snapshot: State { state.withLock { $0 } }

    /// Records the check's result; `true` when it differs from the last one.
    func record(problems: [ManifestProblem], manifestError: String?) -> Bool {
        state.withLock { state in
            defer { state.problems = problems; state.manifestError = manifestError }
            return state.problems != problems
        }
    }

    /// Records a manifest put in force.
    func record(manifest bytes: [UInt8]?) {
        state.withLock { $0.manifestBytes = bytes }
    }

    /// Whether `bytes` are the manifest in force.
    func isInForce(_ bytes: [UInt8]?) -> Bool {
        state.withLock { $0.manifestBytes == bytes }
    }

    /// Records a warning; `false` when it was given before.
    func warn(_ text: String) -> Bool {
        state.withLock { state in
            guard !state.warnings.contains(text) else { return false }
            state.warnings.append(text)
            if state.warnings.count > Self.maxWarnings { state.warnings.removeFirst(state.warnings.count - Self.maxWarnings) }
            return true
        }
    }

    /// `text` as one word of a POSIX shell: as it is when it holds only safe characters, else in single quotes.
    static func shellQuoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { shellSafe.contains($0) }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static let shellSafe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,".unicodeScalars)
}

/// A development folder that cannot be served.
public enum DevelopmentFolderError: CategorizedError, Equatable {
    /// The path is not a folder.
    case notAFolder(path: String)
    /// The folder has no index.html at its top.
    case noStartPage(folder: String)

    public var category: ErrorCategory {
        switch self {
        case .notAFolder: .notFound
        case .noStartPage: .badData
        }
    }

    public var description: String {
        switch self {
        case .notAFolder(let path):
            return "\(Sanitizer.printable(path, limit: 200)) is not a folder: name the folder your build tool writes (it holds index.html and manifest.json)"
        case .noStartPage(let folder):
            return "\(Sanitizer.printable(folder, limit: 200)) holds no index.html: name the folder your build tool writes, or build first"
        }
    }
}
