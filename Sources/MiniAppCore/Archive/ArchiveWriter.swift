import Foundation
internal import CMiniAppArchive

/// Writes zips with libarchive, deterministically: sorted entries, fixed times and owners, fixed modes,
/// so that the same folder always gives the same bytes.
public enum ArchiveWriter {
    /// The time stamped on every entry: 2020-01-01T00:00:00Z.
    package static let fixedTime = 1_577_836_800

    /// Zips the regular files and folders under `directory` into a new file at `destination`.
    /// Anything else (a symbolic link, a device) is refused.
    public static func zip(directory: String, to destination: String) throws(ArchiveError) {
        try UTF8Locale.run { () throws(ArchiveError) in try write(directory: directory, to: destination) }
    }

    private static func write(directory: String, to destination: String) throws(ArchiveError) {
        let entries = try collect(directory)
        guard let archive = archive_write_new() else { throw .corrupt(reason: "libarchive cannot allocate a writer") }
        defer { archive_write_free(archive) }
        guard archive_write_set_format_zip(archive) == CMiniAppArchive_OK(),
              archive_write_zip_set_compression_deflate(archive) == CMiniAppArchive_OK(),
              archive_write_open_filename(archive, destination) == CMiniAppArchive_OK() else {
            throw .io(path: destination, reason: ArchiveExtractor.message(archive), diskFull: archive_errno(archive) == ENOSPC)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        for (relative, isDirectory, size) in entries {
            guard let entry = archive_entry_new() else { throw .corrupt(reason: "libarchive cannot allocate an entry") }
            defer { archive_entry_free(entry) }
            archive_entry_set_pathname_utf8(entry, isDirectory ? relative + "/" : relative)
            archive_entry_set_filetype(entry, isDirectory ? CMiniAppArchive_AE_IFDIR() : CMiniAppArchive_AE_IFREG())
            archive_entry_set_perm(entry, isDirectory ? 0o755 : 0o644)
            archive_entry_set_size(entry, isDirectory ? 0 : size)
            archive_entry_set_mtime(entry, fixedTime, 0)
            archive_entry_set_uid(entry, 0)
            archive_entry_set_gid(entry, 0)
            guard archive_write_header(archive, entry) == CMiniAppArchive_OK() else {
                throw .io(path: destination, reason: ArchiveExtractor.message(archive), diskFull: archive_errno(archive) == ENOSPC)
            }
            if !isDirectory { try copy(directory + "/" + relative, into: archive, buffer: buffer, destination: destination) }
        }
        guard archive_write_close(archive) == CMiniAppArchive_OK() else {
            throw .io(path: destination, reason: ArchiveExtractor.message(archive), diskFull: archive_errno(archive) == ENOSPC)
        }
    }

    /// The folder's entries, sorted by path: (relative path, is a folder, size).
    private static func collect(_ root: String) throws(ArchiveError) -> [(String, Bool, Int64)] {
        var result: [(String, Bool, Int64)] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
                throw .io(path: directory, reason: "it cannot be read", diskFull: false)
            }
            for name in names {
                let path = relative.isEmpty ? name : relative + "/" + name
                _ = try ArchivePath.components(of: path)
                var info = stat()
                guard lstat(root + "/" + path, &info) == 0 else { throw ArchiveExtractor.ioError(root + "/" + path) }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    result.append((path, true, 0))
                    pending.append(path)
                case S_IFREG:
                    result.append((path, false, Int64(info.st_size)))
                default:
                    throw .unsupportedEntry(entry: path, kind: ExtractionKinds.name(UInt32(info.st_mode)))
                }
            }
        }
        return result.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
    }

    private static func copy(_ path: String, into archive: OpaquePointer, buffer: UnsafeMutableRawBufferPointer, destination: String) throws(ArchiveError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw ArchiveExtractor.ioError(path) }
        defer { close(descriptor) }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count == 0 { return }
            if count < 0 {
                if errno == EINTR { continue }
                throw ArchiveExtractor.ioError(path)
            }
            guard archive_write_data(archive, buffer.baseAddress, count) == count else {
                throw .io(path: destination, reason: ArchiveExtractor.message(archive), diskFull: archive_errno(archive) == ENOSPC)
            }
        }
    }
}
