import Foundation
// `stat` reaches this module through libarchive's header too: a whole-module build (release) asks its
// members to be imported from there.
internal import CMiniAppArchive

/// Hashing whole files.
package enum FileHashing {
    /// The SHA-256 of the file at `path`, read through `buffer`, or `nil` when it cannot be read or
    /// `stop` says to give up (asked before each block). A symbolic link at `path` is not followed: this
    /// reads files of the cache.
    package static func sha256(ofFileAt path: String, buffer: UnsafeMutableRawBufferPointer, stop: () -> Bool = { false }) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return sha256(of: descriptor, buffer: buffer, stop: stop)
    }

    /// ``sha256(ofFileAt:buffer:stop:)`` through a buffer of 1 MiB of its own.
    package static func sha256(ofFileAt path: String, stop: () -> Bool = { false }) -> [UInt8]? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        return sha256(ofFileAt: path, buffer: buffer, stop: stop)
    }

    private static func sha256(of descriptor: Int32, buffer: UnsafeMutableRawBufferPointer, stop: () -> Bool = { false }) -> [UInt8]? {
        let digest = SHA256Digest()
        while true {
            if stop() { return nil }
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return digest.finalize()
    }

    /// The SHA-256 and size of a local bundle, read once. When `path` is one a user named, a symbolic
    /// link there is followed; a file of the cache's own is read only when it is no link
    /// (`followingLinks` false). Anything but a regular file is refused without waiting on it.
    package static func bundle(at path: String, followingLinks: Bool = true) throws -> (digest: [UInt8], size: Int64) {
        let (descriptor, info) = try openBundle(path, followingLinks: followingLinks)
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        guard let digest = sha256(of: descriptor, buffer: buffer) else {
            throw BundleFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        return (digest, Int64(info.st_size))
    }

    /// Opens a bundle, following a link there when `followingLinks`, refusing anything but a regular
    /// file without waiting on it.
    private static func openBundle(_ path: String, followingLinks: Bool = true) throws -> (Int32, stat) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            throw BundleFileError.unreadable(path: path, reason: errno == ENOENT ? "it does not exist" : String(cString: strerror(errno)))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw BundleFileError.unreadable(path: path, reason: "it is not a regular file")
        }
        return (descriptor, info)
    }

    /// ``bundle(at:)``, also writing what it reads to a new read-only file at `destination`: the copy the
    /// cache keeps, whose digest is the one returned (the user's file may change later).
    package static func copyBundle(at path: String, to destination: String, followingLinks: Bool = true) throws -> (digest: [UInt8], size: Int64) {
        let (descriptor, _) = try openBundle(path, followingLinks: followingLinks)
        defer { close(descriptor) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o444)
        guard output >= 0 else { throw CacheError.system(destination) }
        defer { close(output) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        let digest = SHA256Digest()
        var size: Int64 = 0
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw BundleFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            var written = 0
            while written < count {
                let result = write(output, buffer.baseAddress! + written, count - written)
                guard result > 0 else {
                    if result < 0 && errno == EINTR { continue }
                    throw CacheError.system(destination)
                }
                written += result
            }
            size += Int64(count)
        }
        return (digest.finalize(), size)
    }
}

/// A local bundle file that cannot be read.
public enum BundleFileError: CategorizedError, Equatable {
    /// The file is missing or unreadable.
    case unreadable(path: String, reason: String)

    public var category: ErrorCategory { .notFound }

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read bundle \(path): \(reason)"
        }
    }
}
