import Foundation

/// Hashing whole files.
package enum FileHashing {
    /// The SHA-256 of the file at `path`, read through `buffer`, or `nil` when it cannot be read. A
    /// symbolic link at `path` is not followed: this reads files of the cache.
    package static func sha256(ofFileAt path: String, buffer: UnsafeMutableRawBufferPointer) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return sha256(of: descriptor, buffer: buffer)
    }

    private static func sha256(of descriptor: Int32, buffer: UnsafeMutableRawBufferPointer) -> [UInt8]? {
        let digest = SHA256Digest()
        while true {
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

    /// The SHA-256 and size of a local bundle, read once. `path` is one a user named, so a symbolic link
    /// there is followed; anything but a regular file at its end is refused without waiting on it.
    package static func bundle(at path: String) throws -> (digest: [UInt8], size: Int64) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw BundleFileError.unreadable(path: path, reason: errno == ENOENT ? "it does not exist" : String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw BundleFileError.unreadable(path: path, reason: "it is not a regular file")
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        guard let digest = sha256(of: descriptor, buffer: buffer) else {
            throw BundleFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        return (digest, Int64(info.st_size))
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
