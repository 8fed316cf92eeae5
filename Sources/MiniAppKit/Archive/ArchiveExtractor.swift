import Foundation
internal import CMiniAppArchive

/// What an extraction produced.
public struct ExtractionResult: Sendable {
    /// The folder holding `index.html`: the destination, or its single top folder.
    public var bundleDirectory: String
    /// Every regular file, relative to ``bundleDirectory``, sorted by path.
    public var files: [BundleFile]
    /// The bytes written.
    public var unpackedBytes: Int64
}

/// Unpacks a zip with libarchive, refusing anything that is not plainly a bundle of files and folders.
public struct ArchiveExtractor: Sendable {
    /// The limits applied.
    public var limits: ExtractionLimits

    /// An extractor with the given limits.
    public init(limits: ExtractionLimits = ExtractionLimits()) {
        self.limits = limits
    }

    /// Extracts the zip at `archivePath` into `destination`, a new folder that must not exist yet.
    ///
    /// Files get mode 0644 and folders 0755. On failure, `destination` may hold part of the archive:
    /// the caller owns it and removes it.
    public func extract(_ archivePath: String, into destination: String) throws(ArchiveError) -> ExtractionResult {
        let archiveSize = Int64((try? FileManager.default.attributesOfItem(atPath: archivePath)[.size] as? NSNumber)??.int64Value ?? 0)
        guard mkdir(destination, 0o755) == 0 else { throw Self.ioError(destination) }
        chmod(destination, 0o755)

        guard let archive = archive_read_new() else { throw .corrupt(reason: "libarchive cannot allocate a reader") }
        defer { archive_read_free(archive) }
        archive_read_support_format_zip_seekable(archive)
        guard archive_read_open_filename(archive, archivePath, 256 * 1024) == CMiniAppArchive_OK() else {
            throw .corrupt(reason: Self.message(archive))
        }

        let hasher = ParallelHasher()
        var state = ExtractionState(destination: destination, limits: limits, archiveSize: archiveSize, hasher: hasher)
        var entry: OpaquePointer?
        do throws(ArchiveError) {
            while true {
                let status = archive_read_next_header(archive, &entry)
                if status == CMiniAppArchive_EOF() { break }
                guard status == CMiniAppArchive_OK(), let entry else { throw ArchiveError.corrupt(reason: Self.message(archive)) }
                try state.add(entry: entry, archive: archive)
            }
        } catch {
            _ = hasher.finish()
            throw error
        }
        let digests = hasher.finish()
        for index in state.files.indices { state.files[index].sha256 = digests[index] ?? "" }
        guard state.entryCount > 0 else { throw .corrupt(reason: "the archive is empty") }
        return try state.finish()
    }

    static func message(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "libarchive error \(archive_errno(archive))"
    }

    static func ioError(_ path: String, errorNumber: Int32 = errno) -> ArchiveError {
        .io(path: path, reason: String(cString: strerror(errorNumber)), diskFull: errorNumber == ENOSPC || errorNumber == EDQUOT)
    }
}

/// The running state of one extraction: names seen, bytes written, files recorded.
private struct ExtractionState {
    let destination: String
    let limits: ExtractionLimits
    let archiveSize: Int64
    var entryCount = 0
    var unpackedBytes: Int64 = 0
    var seen: [String: Bool] = [:]  // path -> isDirectory
    var files: [BundleFile] = []
    let hasher: ParallelHasher

    init(destination: String, limits: ExtractionLimits, archiveSize: Int64, hasher: ParallelHasher) {
        self.destination = destination
        self.limits = limits
        self.archiveSize = archiveSize
        self.hasher = hasher
    }

    mutating func add(entry: OpaquePointer, archive: OpaquePointer) throws(ArchiveError) {
        entryCount += 1
        guard entryCount <= limits.maxEntries else { throw .tooManyEntries(limit: limits.maxEntries) }
        guard let rawName = archive_entry_pathname_utf8(entry) ?? archive_entry_pathname(entry) else {
            throw .unsafePath(entry: "#\(entryCount)", reason: "has a name that is not valid text")
        }
        let name = String(cString: rawName)
        guard String(validatingCString: rawName) != nil else {
            throw .unsafePath(entry: name, reason: "has a name that is not valid UTF-8")
        }
        let components = try ArchivePath.components(of: name)
        let path = components.joined(separator: "/")

        let type = archive_entry_filetype(entry) & CMiniAppArchive_AE_IFMT()
        if archive_entry_hardlink(entry) != nil { throw .unsupportedEntry(entry: name, kind: "hard link") }
        if archive_entry_symlink(entry) != nil || type == CMiniAppArchive_AE_IFLNK() { throw .unsupportedEntry(entry: name, kind: "symbolic link") }
        let isDirectory: Bool
        switch type {
        case CMiniAppArchive_AE_IFREG(): isDirectory = false
        case CMiniAppArchive_AE_IFDIR(): isDirectory = true
        default: throw .unsupportedEntry(entry: name, kind: ExtractionKinds.name(type))
        }
        if archive_entry_is_encrypted(entry) != 0 { throw .encryptedEntry(entry: name) }
        if name.hasSuffix("/") && !isDirectory { throw .unsafePath(entry: name, reason: "is a file whose name ends with /") }

        if path.isEmpty {
            guard isDirectory else { throw .unsafePath(entry: name, reason: "has an empty name") }
            return
        }
        if seen[path] != nil { throw .duplicateEntry(entry: name) }
        try makeParents(of: components, entry: name)
        seen[path] = isDirectory
        let target = destination + "/" + path
        if isDirectory {
            guard mkdir(target, 0o755) == 0 else {
                if errno == EEXIST { throw .duplicateEntry(entry: name) }
                throw ArchiveExtractor.ioError(target)
            }
            chmod(target, 0o755)
        } else {
            files.append(try write(entry: name, path: path, to: target, archive: archive))
        }
    }

    /// Creates the implicit parent folders of an entry, refusing a parent that is a file.
    mutating func makeParents(of components: [String], entry: String) throws(ArchiveError) {
        var path = ""
        for component in components.dropLast() {
            path = path.isEmpty ? component : path + "/" + component
            switch seen[path] {
            case true?: continue
            case false?: throw .duplicateEntry(entry: entry)
            case nil:
                let target = destination + "/" + path
                guard mkdir(target, 0o755) == 0 else { throw ArchiveExtractor.ioError(target) }
                chmod(target, 0o755)
                seen[path] = true
            }
        }
    }

    /// Writes the entry's data to a new file, counting real bytes against the limits; its digest is
    /// computed by the hasher and filled in when the extraction ends.
    mutating func write(entry: String, path: String, to target: String, archive: OpaquePointer) throws(ArchiveError) -> BundleFile {
        let descriptor = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw .duplicateEntry(entry: entry) }
            throw ArchiveExtractor.ioError(target)
        }
        defer { close(descriptor) }
        fchmod(descriptor, 0o644)
        let fileNumber = files.count
        var size: Int64 = 0
        while true {
            let buffer = hasher.takeBuffer()
            let count = archive_read_data(archive, buffer.baseAddress, buffer.count)
            if count == 0 {
                hasher.giveBack(buffer)
                break
            }
            do {
                try take(count, of: buffer, entry: entry, into: descriptor, target: target, archive: archive)
            } catch {
                hasher.giveBack(buffer)
                throw error
            }
            size += Int64(count)
            hasher.submit(file: fileNumber, buffer: buffer, count: count)
        }
        hasher.endFile(fileNumber)
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ArchiveExtractor.ioError(target) }
        return BundleFile(
            path: path, size: size, sha256: "",
            changedAt: FileTimestamp(seconds: Int64(info.st_ctim.tv_sec), nanoseconds: Int64(info.st_ctim.tv_nsec))
        )
    }

    /// Checks a chunk that `archive_read_data` returned against the limits and writes it to the file.
    private mutating func take(_ count: Int, of buffer: UnsafeMutableRawBufferPointer, entry: String, into descriptor: Int32, target: String, archive: OpaquePointer) throws(ArchiveError) {
        guard count > 0 else { throw .corrupt(reason: "\(entry): \(ArchiveExtractor.message(archive))") }
        unpackedBytes += Int64(count)
        guard unpackedBytes <= limits.maxUnpackedBytes else { throw .tooLarge(limitBytes: limits.maxUnpackedBytes) }
        if unpackedBytes > limits.ratioFloorBytes, Double(unpackedBytes) > limits.maxCompressionRatio * Double(max(archiveSize, 1)) {
            throw .compressionRatio(limit: limits.maxCompressionRatio)
        }
        var offset = 0
        while offset < count {
            let written = Glibc.write(descriptor, buffer.baseAddress! + offset, count - offset)
            guard written > 0 else {
                if written < 0 && errno == EINTR { continue }
                throw ArchiveExtractor.ioError(target)
            }
            offset += written
        }
    }

    /// The bundle folder (the destination, or its one top folder holding index.html) and its files.
    func finish() throws(ArchiveError) -> ExtractionResult {
        let sorted = files.sorted { $0.path < $1.path }
        if seen["index.html"] == false {
            return ExtractionResult(bundleDirectory: destination, files: sorted, unpackedBytes: unpackedBytes)
        }
        let tops = Set(seen.keys.map { String($0.split(separator: "/", maxSplits: 1)[0]) })
        guard tops.count == 1, let top = tops.first, seen[top] == true, seen[top + "/index.html"] == false else {
            throw .missingIndex
        }
        let stripped = sorted.map { file in
            var file = file
            file.path = String(file.path.dropFirst(top.count + 1))
            return file
        }
        return ExtractionResult(bundleDirectory: destination + "/" + top, files: stripped, unpackedBytes: unpackedBytes)
    }
}

/// The rules a path inside a bundle must follow.
enum ArchivePath {
    /// The name's components with `.` and empty ones dropped, after refusing every unsafe spelling.
    static func components(of name: String) throws(ArchiveError) -> [String] {
        if name.hasPrefix("/") { throw .unsafePath(entry: name, reason: "is an absolute path") }
        if name.contains("\\") { throw .unsafePath(entry: name, reason: "contains a backslash") }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw .unsafePath(entry: name, reason: "contains control characters")
        }
        if let first = name.unicodeScalars.first, name.unicodeScalars.dropFirst().first == ":", first.properties.isAlphabetic {
            throw .unsafePath(entry: name, reason: "starts with a drive letter")
        }
        if name.utf8.count > 1024 { throw .unsafePath(entry: name, reason: "is longer than 1024 bytes") }
        var result: [String] = []
        for component in name.split(separator: "/", omittingEmptySubsequences: true) {
            if component == "." { continue }
            if component == ".." { throw .unsafePath(entry: name, reason: "climbs out with ..") }
            if component.utf8.count > 255 { throw .unsafePath(entry: name, reason: "has a component longer than 255 bytes") }
            result.append(String(component))
        }
        return result
    }
}

/// Names of file types, for messages.
enum ExtractionKinds {
    /// What a file of mode `mode` is called.
    static func name(_ mode: UInt32) -> String {
        switch mode & 0o170000 {
        case 0o020000: return "character device"
        case 0o060000: return "block device"
        case 0o010000: return "named pipe"
        case 0o140000: return "socket"
        case 0o120000: return "symbolic link"
        default: return "special file"
        }
    }
}
