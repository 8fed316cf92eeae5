import Foundation
public import MiniAppCore
internal import CDispatch
internal import CMiniAppSystem

/// Watches a folder and everything below it with inotify, folders made later included, and hands out
/// what changed in batches: a burst of writes (a build tool writing a few hundred files) is one batch.
///
/// A batch is sent once the folder has been quiet for ``quiet``, or ``longest`` after its first change
/// when writes never stop. Names starting with a dot (editors' swap files, `.git`) are not watched and
/// change nothing: the host never serves them. When the folder itself is removed and made again (a build
/// tool that empties its output folder), it is watched again from its parent.
///
/// The descriptors belong to this value and are closed when it goes; the reading runs on a thread of
/// its own (``start(on:)``), which ends at ``stop()``.
final class FolderWatcher: Sendable {
    /// The folder watched (absolute, links resolved).
    let root: String
    /// How long the folder stays quiet before a batch is sent.
    let quiet: Duration
    /// The longest a batch waits after its first change.
    let longest: Duration
    private let inotify: Int32
    /// The pipe whose write end ``stop()`` writes to, to wake the reading thread.
    private let wake: (read: Int32, write: Int32)

    /// A batch: the paths below the root that changed (`""` for the root itself).
    typealias Batch = Set<String>

    static let mask: UInt32 = UInt32(IN_MODIFY) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_ATTRIB) | UInt32(IN_CREATE) | UInt32(IN_DELETE)
        | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW) | UInt32(IN_EXCL_UNLINK)

    /// A watcher of `root`; throws when inotify cannot be had (the system's limit of instances).
    init(root: String, quiet: Duration = .milliseconds(100), longest: Duration = .seconds(1)) throws(FolderWatcherError) {
        self.root = root
        self.quiet = quiet
        self.longest = longest
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw .unavailable(folder: root, reason: String(cString: strerror(errno))) }
        var ends: [Int32] = [-1, -1]
        guard CMiniAppSystem_nonBlockingPipe(&ends) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .unavailable(folder: root, reason: reason)
        }
        inotify = descriptor
        wake = (ends[0], ends[1])
    }

    deinit {
        close(inotify)
        close(wake.read)
        close(wake.write)
    }

    /// Starts watching on a thread of `executor`'s: the batches, until ``stop()``. Throws when no thread
    /// can be had or the root cannot be watched.
    func start(on executor: BlockingExecutor) throws(FolderWatcherError) -> AsyncStream<Batch> {
        var watches = Watches(root: root)
        guard watches.add("", inotify: inotify) else { throw .unavailable(folder: root, reason: String(cString: strerror(errno))) }
        watches.watchParent(inotify: inotify)
        let (stream, continuation) = AsyncStream<Batch>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let initial = watches
        let started = executor.startThread(name: "miniapp-watch") { [self] in
            readEvents(initial, into: continuation)
            continuation.finish()
        }
        guard started else { throw .unavailable(folder: root, reason: "no thread to watch it on") }
        return stream
    }

    /// Ends the watching thread (its stream finishes).
    func stop() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    /// The reading loop: blocking, on its own thread.
    private func readEvents(_ initial: Watches, into continuation: AsyncStream<Batch>.Continuation) {
        var watches = initial
        var pending = Batch()
        var firstChange: ContinuousClock.Instant?
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            var timeout: Int32 = -1
            if let firstChange {
                let left = min(quiet, longest - (ContinuousClock.now - firstChange))
                timeout = Int32(max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            }
            var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, timeout)
            if ready < 0, errno == EINTR { continue }
            if ready < 0 || descriptors[1].revents != 0 { return }
            if descriptors[0].revents != 0 {
                watches.take(InotifyEvent.readAll(from: inotify, using: buffer), inotify: inotify, into: &pending)
                if !pending.isEmpty, firstChange == nil { firstChange = .now }
            }
            // Quiet for `quiet` (poll timed out), or changing for `longest`: the batch goes.
            if let first = firstChange, ready == 0 || ContinuousClock.now - first >= longest {
                continuation.yield(pending)
                pending = []
                firstChange = nil
            }
        }
    }
}

/// The folders a ``FolderWatcher`` watches, by watch descriptor.
private struct Watches {
    let root: String
    /// Each watched folder's path below the root (`""`: the root).
    var folders: [Int32: String] = [:]
    /// The watch of the root's parent (for the root made again), if any.
    var parent: Int32?
    let rootName: String

    init(root: String) {
        self.root = root
        rootName = (root as NSString).lastPathComponent
    }

    /// Watches the folder `relative` and, below it, every folder whose name has no leading dot;
    /// `false` when the folder itself cannot be watched.
    mutating func add(_ relative: String, inotify: Int32) -> Bool {
        let path = relative.isEmpty ? root : root + "/" + relative
        let descriptor = inotify_add_watch(inotify, path, FolderWatcher.mask)
        guard descriptor >= 0 else { return false }
        folders[descriptor] = relative
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where !name.hasPrefix(".") {
            var info = stat()
            let child = relative.isEmpty ? name : relative + "/" + name
            if lstat(root + "/" + child, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { _ = add(child, inotify: inotify) }
        }
        return true
    }

    mutating func watchParent(inotify: Int32) {
        guard root != "/" else { return }
        let descriptor = inotify_add_watch(inotify, (root as NSString).deletingLastPathComponent, UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_ONLYDIR))
        if descriptor >= 0 { parent = descriptor }
    }

    /// Takes `events`, watching the folders made, and adds the paths they name to `pending`.
    mutating func take(_ events: [InotifyEvent], inotify: Int32, into pending: inout FolderWatcher.Batch) {
        for event in events {
            let name = event.name
            if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                // Events were lost: everything may have changed.
                pending.insert("")
                continue
            }
            if event.watch == parent {
                // The root made again (a build tool that empties its output): watch it anew.
                if name == rootName, event.mask & UInt32(IN_ISDIR) != 0 {
                    // Watches of a root moved away follow it: they end, and its events go nowhere.
                    for descriptor in folders.keys { inotify_rm_watch(inotify, descriptor) }
                    folders = [:]
                    if add("", inotify: inotify) { pending.insert("") }
                }
                continue
            }
            guard let folder = folders[event.watch] else { continue }
            if event.mask & UInt32(IN_IGNORED) != 0 {
                folders[event.watch] = nil
                continue
            }
            if event.mask & (UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)) != 0 {
                pending.insert(folder)
                continue
            }
            guard !name.isEmpty, !name.hasPrefix(".") else { continue }
            let path = folder.isEmpty ? name : folder + "/" + name
            pending.insert(path)
            if event.mask & UInt32(IN_ISDIR) != 0, event.mask & (UInt32(IN_CREATE) | UInt32(IN_MOVED_TO)) != 0 {
                // A folder made or moved in: watched too, with whatever was written in it before the watch.
                _ = add(path, inotify: inotify)
            }
        }
    }
}

/// A folder that cannot be watched for changes.
public enum FolderWatcherError: CategorizedError, Equatable {
    /// inotify, or a thread to read it on, cannot be had.
    case unavailable(folder: String, reason: String)

    public var category: ErrorCategory { .localIO }

    public var description: String {
        switch self {
        case .unavailable(let folder, let reason):
            return "\(Sanitizer.printable(folder, limit: 200)) cannot be watched for changes (\(reason)): raise fs.inotify.max_user_instances or max_user_watches, or stop other watchers"
        }
    }
}
