import Foundation

/// An exclusive `flock` on a lock file, released when the value is dropped or the process dies.
final class FileLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Takes the lock at `path`, creating the file if needed, or throws `onTimeout()` once `timeout` passes.
    static func acquire(_ path: String, timeout: Duration, onTimeout: @Sendable () -> CacheError) async throws -> FileLock {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CacheError.system(path) }
        let lock = FileLock(descriptor: descriptor)
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(5)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw CacheError.system(path) }
            guard ContinuousClock.now < deadline else { throw onTimeout() }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(100))
        }
        return lock
    }

    /// Takes the lock at `path` only if it is free now.
    static func tryAcquire(_ path: String) -> FileLock? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            return nil
        }
        return FileLock(descriptor: descriptor)
    }
}
