import Foundation
// `stat` reaches this module through libarchive's header too: a whole-module build (release) asks its
// members to be imported from there.
internal import CMiniAppArchive

/// An exclusive `flock` on a lock file, released when the value is dropped or the process dies.
///
/// The holder deletes the file before it lets go, so that no lock file outlives its use; a waiter that
/// then wins the lock on the deleted file notices (the path no longer names its file) and starts over.
package final class FileLock: Sendable {
    private let descriptor: Int32
    private let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        unlink(path)
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Takes the lock at `path`, creating the file (and its folder) if needed, or throws `onTimeout()`
    /// once `timeout` passes. While another process holds it, the wait is suspended on `executor`'s lock
    /// watcher: no thread is held and nothing polls.
    package static func acquire(
        _ path: String, timeout: Duration, executor: BlockingExecutor, onTimeout: @Sendable () -> CacheError
    ) async throws -> FileLock {
        let deadline = ContinuousClock.now + timeout
        while true {
            let descriptor = try openLockFile(path)
            switch await executor.locks.lockExclusively(descriptor, until: deadline) {
            case .acquired:
                if stillNamed(path, descriptor) { return FileLock(descriptor: descriptor, path: path) }
                // Its holder deleted the file as it let go: the lock that counts is on the new one.
                close(descriptor)
            case .timedOut:
                close(descriptor)
                throw onTimeout()
            case .cancelled:
                close(descriptor)
                throw CancellationError()
            case .failed(let number):
                close(descriptor)
                throw CacheError.system(path, errorNumber: number)
            }
        }
    }

    /// Takes the lock at `path` only if it is free now.
    package static func tryAcquire(_ path: String) -> FileLock? {
        guard let descriptor = try? openLockFile(path) else { return nil }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0, stillNamed(path, descriptor) else {
            close(descriptor)
            return nil
        }
        return FileLock(descriptor: descriptor, path: path)
    }

    private static func openLockFile(_ path: String) throws(CacheError) -> Int32 {
        var descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor < 0 && errno == ENOENT {
            // Another process removed the empty locks folder it had made; make it again.
            mkdir((path as NSString).deletingLastPathComponent, 0o755)
            descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard descriptor >= 0 else { throw .system(path) }
        return descriptor
    }

    /// Whether `path` still names the file open at `descriptor` (its holder deletes it when done).
    private static func stillNamed(_ path: String, _ descriptor: Int32) -> Bool {
        var held = stat()
        var named = stat()
        return fstat(descriptor, &held) == 0 && stat(path, &named) == 0 && held.st_ino == named.st_ino && held.st_dev == named.st_dev
    }
}
