import Foundation
// `stat` reaches this module through libarchive's header too: a whole-module build (release) asks its
// members to be imported from there.
internal import CMiniAppArchive

/// Small whole files read with plain system calls, for the paths every command takes at start (the
/// config file, an install record, a file list), where Foundation's `Data(contentsOf:)` costs more than
/// the read itself.
package enum FileReading {
    /// What reading a file gave.
    package enum Outcome {
        case contents([UInt8])
        /// The file (or a folder on its path) does not exist.
        case missing
        /// A folder, a device, a named pipe or a socket: never read (one may never end, or wait).
        case notARegularFile
        /// Anything else: the `errno` of the call that failed.
        case unreadable(Int32)

        /// The bytes read, or why there are none.
        package func bytes() throws(Failure) -> [UInt8] {
            switch self {
            case .contents(let bytes): return bytes
            case .missing: throw Failure(description: "it does not exist")
            case .notARegularFile: throw Failure(description: "it is not a regular file")
            case .unreadable(EFBIG): throw Failure(description: "it is too big")
            case .unreadable(let code): throw Failure(description: "it cannot be read: " + String(cString: strerror(code)))
            }
        }
    }

    /// The most ``read(_:followingLinks:limit:)`` reads unless told otherwise: every file it is used for
    /// (a config file, a record, a manifest, a file list) is far smaller, and a sparse file that says it
    /// holds terabytes must end in an error, not in an allocation that kills the process.
    package static let defaultLimit = 64 << 20

    /// The whole file at `path`, following symbolic links. Anything but a regular file is
    /// ``Outcome/notARegularFile``, and opening never waits: a named pipe is refused, not read.
    /// With `followingLinks` false, a symbolic link at `path` is unreadable (`ELOOP`). A file of more
    /// than `limit` bytes is `.unreadable(EFBIG)`, known from its size before anything is allocated.
    package static func read(_ path: String, followingLinks: Bool = true, limit: Int = defaultLimit) -> Outcome {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else { return errno == ENOENT || errno == ENOTDIR ? .missing : .unreadable(errno) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .unreadable(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .notARegularFile }
        guard Int(info.st_size) <= limit else { return .unreadable(EFBIG) }
        // The size is a hint: the loop reads to the end whatever the file does meanwhile.
        return readToEnd(descriptor, sizeHint: max(Int(info.st_size), 0), limit: limit)
    }

    /// Everything left to read on `descriptor`, whatever it is (standard input: a pipe, a terminal, a
    /// file); `.unreadable(EFBIG)` once it has given more than `limit` bytes, and the `errno` of a read
    /// that fails (`EISDIR` for a folder). A non-blocking descriptor that is empty is waited for.
    package static func readToEnd(_ descriptor: Int32, sizeHint: Int = 0, limit: Int = .max) -> Outcome {
        // A hint is trusted only so far: the buffer grows as bytes actually arrive.
        var bytes = [UInt8](repeating: 0, count: min(sizeHint, limit, defaultLimit) + 1)
        var filled = 0
        while true {
            if filled == bytes.count { bytes.append(contentsOf: [UInt8](repeating: 0, count: min(bytes.count, 1 << 24))) }
            let count = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                return .unreadable(errno)
            }
            filled += count
            if filled > limit { return .unreadable(EFBIG) }
        }
        bytes.removeLast(bytes.count - filled)
        return .contents(bytes)
    }

    /// Why a read gave no bytes, as a message says it after the file's name: "it does not exist", "it
    /// is not a regular file", "it is too big", "it cannot be read: <errno's words>".
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The whole file at `path`, or `nil` when it is missing, cannot be read or is over `limit` bytes.
    package static func contents(_ path: String, followingLinks: Bool = true, limit: Int = defaultLimit) -> [UInt8]? {
        if case .contents(let bytes) = read(path, followingLinks: followingLinks, limit: limit) { return bytes }
        return nil
    }

    /// The names in a folder, or none when it cannot be read.
    package static func children(of directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }
}
