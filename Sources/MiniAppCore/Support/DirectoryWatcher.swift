import Glibc
import Synchronization
internal import CMiniAppSystem

/// Calls back when files of one folder change: inotify on the folder, read on a thread of the
/// executor's own, for the files whose names a filter accepts (a SQLite store and its WAL, which other
/// processes write). Ends at ``stop()``, or when it goes.
package final class DirectoryWatcher: Sendable {
    private let inotify: Int32
    private let wake: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)

    /// What makes a call: a file written, closed after writing, made, or moved in.
    private static let mask = UInt32(IN_MODIFY) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_ONLYDIR)

    /// Watches `folder`, calling `changed` (on the watching thread) after each read of events of which
    /// one names a file `accepts` takes; `nil` when inotify, the folder or a thread cannot be had.
    package init?(folder: String, executor: BlockingExecutor, accepts: @escaping @Sendable (String) -> Bool, changed: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard CMiniAppSystem_nonBlockingPipe(&ends) == 0 else {
            close(descriptor)
            return nil
        }
        guard inotify_add_watch(descriptor, folder, Self.mask) >= 0 else {
            close(descriptor)
            close(ends[0])
            close(ends[1])
            return nil
        }
        inotify = descriptor
        wake = (ends[0], ends[1])
        let (inotify, wake) = (descriptor, ends[0])
        // The thread owns what it reads (the inotify descriptor and the pipe's read end) and closes them
        // when it ends; the pipe's write end, which wakes it, is this value's.
        let started = executor.startThread(name: "miniapp-dirwatch", lowestPriority: true) {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: MemoryLayout<inotify_event>.alignment)
            defer {
                buffer.deallocate()
                close(inotify)
                close(wake)
            }
            while true {
                var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&descriptors, 2, -1)
                if ready < 0, errno == EINTR { continue }
                if ready < 0 || descriptors[1].revents != 0 { return }
                let events = InotifyEvent.readAll(from: inotify, using: buffer)
                if events.contains(where: { $0.watch < 0 || accepts($0.name) }) { changed() }
            }
        }
        guard started else {
            close(descriptor)
            close(ends[0])
            close(ends[1])
            return nil
        }
    }

    /// Ends the watching thread.
    package func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    deinit {
        stop()
        close(wake.write)
    }
}
