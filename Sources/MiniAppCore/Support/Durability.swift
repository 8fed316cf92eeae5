package import Foundation
#if DEBUG
// Only the debug builds' test seam uses it: a release build warned of an unused package import.
package import Synchronization
#endif
internal import CMiniAppSystem

/// Writing files so that a crash leaves either the old or the new contents, never a mix.
package enum Durability {
    #if DEBUG
    /// Test seam, in debug builds only: atomic writes to these paths fail at their rename with the
    /// given `errno`, as a disk that fills up at that moment would make them fail. It lets tests reach
    /// the rollback of a reinstall that fails at its very last step.
    package static let injectedFailures = Mutex<[String: Int32]>([:])
    #endif

    /// Writes `data` to a temporary file (of `mode`) beside `path` and renames it over `path`; when
    /// `durable`, the file and its folder are synced too.
    package static func writeAtomically(_ data: Data, to path: String, durable: Bool, mode: mode_t = 0o644) throws(CacheError) {
        let temporary = path + ".tmp-" + UUID().uuidString.prefix(8)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw .system(temporary) }
        var failure: CacheError?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = .system(temporary)
                    return
                }
                offset += written
            }
        }
        if failure == nil, durable, fsync(descriptor) != 0 { failure = .system(temporary) }
        close(descriptor)
        #if DEBUG
        if failure == nil, let injected = Self.injectedFailures.withLock({ $0[path] }) { failure = .system(path, errorNumber: injected) }
        #endif
        if failure == nil, rename(temporary, path) != 0 { failure = .system(path) }
        if let failure {
            unlink(temporary)
            throw failure
        }
        if durable { syncDirectory((path as NSString).deletingLastPathComponent) }
    }

    /// The running kernel's boot (`/proc/sys/kernel/random/boot_id`), or `nil` when it cannot be read.
    /// Every process reads what was written in this boot, whole, from the page cache until the machine
    /// stops, whatever has reached the disk: only a later boot can find a file that was never synced short
    /// or stale after a power cut.
    package static let currentBoot: String? = {
        // A UUID and a line end, read on a hit's path: in one read, with no Foundation.
        let descriptor = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
        guard count == 37, bytes[36] == UInt8(ascii: "\n"),
              bytes[..<36].allSatisfy({ $0 == UInt8(ascii: "-") || (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return String(decoding: bytes[..<36], as: UTF8.self)
    }()

    /// Flushes every pending write of the file system holding `path`: one sync for a whole tree.
    package static func syncFileSystem(containing path: String) throws(CacheError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system(path) }
        defer { close(descriptor) }
        guard CMiniAppSystem_syncfs(descriptor) == 0 else { throw .system(path) }
    }

    /// Syncs a folder's entries (after a rename into it).
    package static func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}
