import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppKit
internal import CDispatch

extension BrowserHost {
    /// The version id the host page shows for an app served from a development folder.
    public static let developmentVersionId = "dev"

    /// Serves the development folder `path` (a build tool's output: `index.html` and `manifest.json`)
    /// as it is, as app `appId`: the same origins, bridge, launch gate, prompts and storage as an
    /// installed version, every file read from the folder at each request under the same rules (no
    /// links, no dot files, nothing outside it). Then ``watch(_:)`` reloads it on every change.
    ///
    /// Throws ``DevelopmentFolderError`` when `path` is not a folder with an index.html, and
    /// ``ManifestError`` when its manifest.json cannot be used.
    public func develop(folder path: String, appId: String) async throws -> DevelopmentSession {
        try Identifier.validate(appId, as: .app)
        let language = installer.configuration.language
        let (folder, reading) = try await executor.run { () throws -> (String, DevelopmentReading) in
            guard let folder = Self.realFolder(path) else { throw DevelopmentFolderError.notAFolder(path: path) }
            var info = stat()
            guard lstat(folder + "/index.html", &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                throw DevelopmentFolderError.noStartPage(folder: folder)
            }
            return (folder, DevelopmentReading(folder: folder, language: language))
        }
        let manifest = try reading.manifest.get()
        let session = DevelopmentSession(folder: folder, appId: appId, manifestBytes: reading.bytes, problems: reading.problems)
        session.continuation.yield(.checked(reading.problems))
        serve(appId: appId, root: folder, versionId: Self.developmentVersionId, manifest: manifest, development: session)
        return session
    }

    /// Watches the session's folder (inotify, every folder below it) until the task is cancelled; on
    /// each burst of changes reads manifest.json and checks the folder again, serves a changed manifest
    /// (a manifest that cannot be used leaves the last good one in force), and tells the host page to
    /// reload the app's frame. Reports go to ``DevelopmentSession/reports``, which finishes at the end.
    public func watch(_ session: DevelopmentSession) async throws {
        defer { session.continuation.finish() }
        let watcher = try FolderWatcher(root: session.folder)
        let batches = try watcher.start(on: executor)
        await withTaskCancellationHandler {
            for await batch in batches {
                do {
                    try await reload(session, changed: batch.count)
                } catch {
                    // The pool is shutting down: the host stops.
                    return
                }
            }
        } onCancel: {
            watcher.stop()
        }
    }

    /// What follows a burst of `changed` changes in the session's folder.
    func reload(_ session: DevelopmentSession, changed: Int) async throws {
        let folder = session.folder, language = installer.configuration.language
        let reading = try await executor.run { DevelopmentReading(folder: folder, language: language) }
        var manifestChanged = false
        var manifestError: String?
        if !session.isInForce(reading.bytes) {
            switch reading.manifest {
            case .success(let manifest):
                session.record(manifest: reading.bytes)
                // A new bridge under the new manifest: the old one's capabilities end, and the frame's
                // next document is granted by the new one.
                serve(appId: session.appId, root: folder, versionId: Self.developmentVersionId, manifest: manifest, development: session)
                manifestChanged = true
            case .failure(let error):
                manifestError = error.description
                session.continuation.yield(.manifestKept(reason: error.description))
            }
        }
        if session.record(problems: reading.problems, manifestError: manifestError) {
            session.continuation.yield(.checked(reading.problems))
        }
        session.continuation.yield(.reloaded(paths: changed, manifestChanged: manifestChanged))
        board.notifyDevelopment(appId: session.appId, kind: "reload")
    }

    /// The app id a development folder is served as by default: its name made an id that is also its
    /// origin's label (lowercase letters, digits and single dashes; `app` when nothing is left).
    public static func developmentAppId(folder: String) -> String {
        var id = ""
        for byte in (folder as NSString).lastPathComponent.lowercased().utf8 {
            let keep = (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            if keep { id.append(Character(UnicodeScalar(byte))) } else if !id.isEmpty, !id.hasSuffix("-") { id.append("-") }
        }
        while id.hasSuffix("-") { id.removeLast() }
        return id.isEmpty ? "app" : String(id.prefix(63)).trimmingCharacters(in: CharacterSet(charactersIn: "-"))
    }

    /// Where a development folder's own state lives (its permission store, the bridge's secret): never
    /// in the folder, which a build tool may empty and which is served, but in
    /// `$XDG_STATE_HOME/miniapp/dev/<first 16 hex digits of the SHA-256 of the folder's path>`
    /// (`~/.local/state` when XDG_STATE_HOME is unset or not absolute).
    public static func stateDirectory(folder: String, environment: [String: String]) -> String {
        var base = environment["XDG_STATE_HOME"] ?? ""
        if !base.hasPrefix("/") { base = (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state" }
        return base + "/miniapp/dev/" + SHA256Digest.hash(Array(folder.utf8)).prefix(8).hexString
    }

    /// `path` with its links resolved, when it is a folder (blocking: a few system calls).
    public static func realFolder(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let folder = String(cString: resolved)
        var info = stat()
        guard stat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return folder
    }
}

/// What a development folder holds now: its manifest.json (bytes and manifest, localised as an
/// installed version's) and the static check's problems. Blocking: read on the executor.
struct DevelopmentReading: Sendable {
    /// manifest.json's bytes; `nil` when there is none (an empty manifest, as in a bundle).
    let bytes: [UInt8]?
    let manifest: Result<BundleManifest, ManifestError>
    let problems: [ManifestProblem]

    init(folder: String, language: String) {
        let source = "the development folder's manifest.json"
        let read = FileReading.read(folder + "/manifest.json", followingLinks: false)
        bytes = try? read.bytes()
        manifest = Result { () throws(ManifestError) in try BundleManifest.decode(read, source: source) }
            .map { ManifestLocalizer(bundleDirectory: folder, language: language).localize($0) }
        problems = ManifestCheck.problems(ofFolder: folder)
    }
}
