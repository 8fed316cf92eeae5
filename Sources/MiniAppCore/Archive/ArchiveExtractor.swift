import Foundation
import Synchronization
internal import CMiniAppArchive

/// What an extraction produced.
public struct ExtractionResult: Sendable {
    /// The folder holding `index.html`: the destination, or its single top folder.
    public var bundleDirectory: String
    /// Every regular file, relative to ``bundleDirectory``, sorted by path.
    public var files: [BundleFile]
    /// Every folder, relative to ``bundleDirectory`` (`.` for itself), sorted by path.
    public var directories: [String]
    /// The bytes written.
    public var unpackedBytes: Int64
    /// The files (paths as in ``files``) hard-linked from ``ArchiveExtractor/reusable`` instead of written.
    package var linkedPaths: Set<String> = []
}

/// A file whose content is known to be exactly a zip entry's: the extraction may hard-link it instead of
/// inflating the entry.
package struct ReusableFile: Sendable {
    /// The file to link.
    package var source: String
    /// Its size and SHA-256 (hex), as recorded when it was written.
    package var size: Int64
    package var sha256: String

    package init(source: String, size: Int64, sha256: String) {
        self.source = source
        self.size = size
        self.sha256 = sha256
    }
}

/// Unpacks a zip with libarchive, refusing anything that is not plainly a bundle of files and folders.
///
/// Two passes. The first reads every entry header (the zip's central directory makes that cheap) and
/// refuses the archive for any unsafe name, kind, duplicate or entry count before a byte is written;
/// it creates the folders. The second inflates, writes and hashes the files on several threads, taking
/// the next file in archive order as it finishes one, each file with a streaming reader that sees only
/// that entry's bytes (no reader walks the headers of the others, and each header read costs libc a
/// time-zone check when `TZ` is unset); the byte and ratio limits count real bytes across all of them.
public struct ArchiveExtractor: Sendable {
    /// The limits applied.
    public var limits: ExtractionLimits
    /// The most threads the second pass uses; 1 extracts on the calling thread only.
    public var maxThreads: Int
    /// Archives declaring fewer bytes than this are extracted on the calling thread only: a thread
    /// costs more than it saves on a small bundle.
    package var parallelMinimumBytes: Int64 = 2 << 20
    /// The mode files get: 0644 by default; the cache makes its files read-only (0444), as versions
    /// share them.
    public var fileMode: UInt32 = 0o644
    /// Files to hard-link instead of inflating, by the offset of their entry's local header: where a
    /// link fails, or the file is not of the entry's size and ``fileMode``, the entry is inflated. Linked
    /// files count against the byte limit like written ones.
    package var reusable: [UInt64: ReusableFile] = [:]

    /// An extractor with the given limits, using up to `maxThreads` threads (by default one per core,
    /// at most four).
    public init(limits: ExtractionLimits = ExtractionLimits(), maxThreads: Int = min(ProcessEnvironment.processorCount, 4)) {
        self.limits = limits
        self.maxThreads = max(maxThreads, 1)
    }

    /// Extracts the zip at `archivePath` into `destination`, a new folder that must not exist yet.
    ///
    /// Files get ``fileMode`` (0644 by default) and folders 0755. On failure, `destination` may hold part of the archive:
    /// the caller owns it and removes it.
    public func extract(_ archivePath: String, into destination: String) throws(ArchiveError) -> ExtractionResult {
        var info = stat()
        let archiveSize = stat(archivePath, &info) == 0 ? Int64(info.st_size) : 0
        guard mkdir(destination, 0o755) == 0 else { throw Self.ioError(destination) }
        // The umask, read once per extraction: a chmod per file and folder only when it takes bits.
        let exact = ProcessEnvironment.exactModes([fileMode, 0o755])
        if !exact.contains(0o755) { chmod(destination, 0o755) }

        let plan = try UTF8Locale.run { () throws(ArchiveError) in try ExtractionPlan.scan(archivePath, limits: limits) }
        // Folders are made by the threads that write files into them, as they go, in parallel (one
        // thread making about 300 of them first took 5 ms of a cold download); the rest (empty ones,
        // modes) after. Files linked from an earlier version need theirs first.
        if !reusable.isEmpty { try plan.makeDirectories(in: destination, needsMode: !exact.contains(0o755)) }
        var linked: [BundleFile] = []
        var linkedBytes: Int64 = 0
        var remaining = plan.files
        if !reusable.isEmpty {
            remaining = []
            for file in plan.files {
                guard let reuse = reusable[file.offset], reuse.size == file.declaredSize,
                      let record = Self.link(reuse, at: destination + "/" + file.path, path: file.path, mode: fileMode) else {
                    remaining.append(file)
                    continue
                }
                linkedBytes += record.size
                guard linkedBytes <= limits.maxUnpackedBytes else { throw .tooLarge(limitBytes: limits.maxUnpackedBytes) }
                linked.append(record)
            }
        }
        let descriptor = open(archivePath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.ioError(archivePath) }
        defer { close(descriptor) }
        let job = ExtractionJob(archivePath: archivePath, descriptor: descriptor, destination: destination, files: remaining, limits: limits, archiveSize: archiveSize, fileMode: fileMode, needsMode: !exact.contains(fileMode), unpacked: linkedBytes)
        // Declared sizes are the archive's word, up to 2^63 each: summed without overflowing.
        let declared = remaining.reduce(Int64(0)) { total, file in
            let (sum, overflow) = total.addingReportingOverflow(file.declaredSize ?? 0)
            return overflow ? .max : sum
        }
        job.run(threads: declared < parallelMinimumBytes ? 1 : min(maxThreads, remaining.count))
        if let failure = job.firstFailure { throw failure }
        if reusable.isEmpty { try plan.makeDirectories(in: destination, needsMode: !exact.contains(0o755), existing: true) }
        return try plan.result(
            destination: destination, files: job.records.compactMap { $0 } + linked, linked: Set(linked.map(\.path)),
            unpackedBytes: job.unpacked.load(ordering: .relaxed)
        )
    }

    /// Hard-links `reuse` at `target`: the record of the file it gives there, or `nil` (and nothing at
    /// `target`) when the link fails or the file is not a regular file of the expected size and `mode`.
    private static func link(_ reuse: ReusableFile, at target: String, path: String, mode: UInt32) -> BundleFile? {
        guard Glibc.link(reuse.source, target) == 0 else { return nil }
        var info = stat()
        guard lstat(target, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == reuse.size, info.st_mode & 0o7777 == mode else {
            unlink(target)
            return nil
        }
        return BundleFile(path: path, size: reuse.size, sha256: reuse.sha256, changedAt: FileTimestamp(info.st_ctim))
    }

    /// Whether the cleaned path `path` is macOS metadata that extraction leaves out (Finder's
    /// `__MACOSX/...`, `._*` and `.DS_Store` files).
    package static func isFinderMetadata(_ path: String, isDirectory: Bool) -> Bool {
        // On the bytes, as the file system splits a path (and in no string made per component).
        let bytes = path.utf8
        let folder = "__MACOSX".utf8
        if bytes.starts(with: folder), bytes.count == folder.count || bytes.dropFirst(folder.count).first == UInt8(ascii: "/") { return true }
        guard !isDirectory else { return false }
        let name = bytes.lastIndex(of: UInt8(ascii: "/")).map { bytes[bytes.index(after: $0)...] } ?? bytes[...]
        return name.starts(with: "._".utf8) || name.elementsEqual(".DS_Store".utf8)
    }

    package static func message(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "libarchive error \(archive_errno(archive))"
    }

    package static func ioError(_ path: String, errorNumber: Int32 = errno) -> ArchiveError {
        .io(path: path, reason: String(cString: strerror(errorNumber)), diskFull: errorNumber == ENOSPC || errorNumber == EDQUOT)
    }
}

/// A libarchive reader, read entry by entry.
private protocol LibarchiveReader: AnyObject {
    var handle: OpaquePointer { get }
}

extension LibarchiveReader {
    /// The next entry header, or `nil` at the end.
    func next() throws(ArchiveError) -> OpaquePointer? {
        var entry: OpaquePointer?
        let status = archive_read_next_header(handle, &entry)
        if status == CMiniAppArchive_EOF() { return nil }
        guard status == CMiniAppArchive_OK(), let entry else { throw .corrupt(reason: message) }
        return entry
    }

    var message: String { ArchiveExtractor.message(handle) }
}

/// One libarchive zip reader over a file, freed with the value.
private final class ArchiveReader: LibarchiveReader {
    package let handle: OpaquePointer
    /// The position of ``current`` among the entries (-1 before the first) and its header, for
    /// ``entry(at:)``.
    private var position = -1
    private var current: OpaquePointer?

    package init(_ path: String, blockSize: Int) throws(ArchiveError) {
        guard let handle = archive_read_new() else { throw .corrupt(reason: "libarchive cannot allocate a reader") }
        self.handle = handle
        archive_read_support_format_zip_seekable(handle)
        guard archive_read_open_filename(handle, path, blockSize) == CMiniAppArchive_OK() else {
            throw .corrupt(reason: message)
        }
    }

    deinit {
        archive_read_free(handle)
    }

    /// The header of the entry at `ordinal`, reading forward to it (never back), or `nil` when the
    /// archive ends first.
    func entry(at ordinal: Int) throws(ArchiveError) -> OpaquePointer? {
        while position < ordinal, current != nil || position < 0 {
            current = try next()
            position += 1
        }
        return position == ordinal ? current : nil
    }
}

/// A streaming libarchive zip reader over one entry's bytes of an open archive (its local header, data
/// and data descriptor): it reads no central directory and no other entry, and cannot read past them.
private final class EntryReader: LibarchiveReader {
    package let handle: OpaquePointer
    private let window: UnsafeMutablePointer<CMiniAppArchive_Window>

    /// A reader of bytes `start..<end` of the archive open at `descriptor`, reading through `buffer`
    /// (which must outlive it).
    package init(descriptor: Int32, from start: UInt64, to end: UInt64, buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) {
        window = .allocate(capacity: 1)
        window.initialize(to: CMiniAppArchive_Window(
            fd: descriptor, position: Int64(start), end: Int64(end), capacity: buffer.count, buffer: buffer.baseAddress
        ))
        guard let handle = archive_read_new() else {
            window.deallocate()
            throw .corrupt(reason: "libarchive cannot allocate a reader")
        }
        self.handle = handle
        archive_read_support_format_zip_streamable(handle)
        guard CMiniAppArchive_openWindow(handle, window) == CMiniAppArchive_OK() else { throw .corrupt(reason: message) }
    }

    deinit {
        archive_read_free(handle)
        window.deallocate()
    }
}

/// What the first pass learned: every name checked, the folders, and the files to write in archive order.
private struct ExtractionPlan {
    package struct File {
        /// The entry's position among all entries, folders included.
        var ordinal: Int
        /// The entry's name, for messages.
        var name: String
        /// The name libarchive reports for it, for the second pass to check.
        var archiveName: [UInt8]
        /// The cleaned path relative to the destination.
        var path: String
        /// Where its local header starts.
        var offset: UInt64
        /// Where its bytes (local header, data, data descriptor) end: the next entry's local header, or
        /// the central directory.
        var end: UInt64
        /// The size its central-directory record declares (nil beyond 2^63 - 1).
        var declaredSize: Int64?
        /// Whether a streaming reader of its bytes alone finds where its data ends: its local header
        /// gives the sizes, or it is deflated (a deflate stream ends by itself before its data
        /// descriptor). Other entries with a data descriptor are read by a reader of the whole archive,
        /// which takes the sizes from the central directory.
        var streams: Bool
    }

    package var files: [File] = []
    package var directories: [String] = []
    package var seen: [String: Bool] = [:]  // path -> isDirectory
    /// The folder of the last entry added, all of whose ancestors are in `seen` as folders.
    package var lastFolder: Substring = ""
    package var entryCount = 0

    /// The plan comes from the central directory alone (``ZipDirectory``, which also checks each local
    /// header against it): its names are the ones installed and its attributes give each entry's type
    /// as libarchive reads them. libarchive reads only the files' data, each through a reader of that
    /// entry's bytes, which checks the local header's name again: every header libarchive reads costs
    /// a `mktime()`, which with `TZ` unset checks `/etc/localtime` each time.
    package static func scan(_ archivePath: String, limits: ExtractionLimits) throws(ArchiveError) -> ExtractionPlan {
        // Dropped entries (Finder's) do not count against maxEntries; this bounds them all the same.
        let cap = limits.maxEntries > (Int.max - 1024) / 4 ? Int.max : max(limits.maxEntries, 0) * 4 + 1024
        let directory = try ZipDirectory.read(archivePath, maxEntries: cap)
        var plan = ExtractionPlan()
        for (ordinal, entry) in directory.entries.enumerated() {
            let end = ordinal + 1 < directory.entries.count ? directory.entries[ordinal + 1].localHeaderOffset : directory.directoryStart
            try plan.add(entry, end: end, ordinal: ordinal, limits: limits)
        }
        guard plan.entryCount > 0 else { throw .corrupt(reason: "the archive holds nothing but macOS metadata") }
        return plan
    }

    package mutating func add(_ zip: ZipDirectory.Entry, end: UInt64, ordinal: Int, limits: ExtractionLimits) throws(ArchiveError) {
        let name = zip.name
        let path = try ArchivePath.path(of: name)

        let type = zip.fileType
        let isDirectory: Bool
        switch type {
        case CMiniAppArchive_AE_IFREG(): isDirectory = false
        case CMiniAppArchive_AE_IFDIR(): isDirectory = true
        default: throw .unsupportedEntry(entry: name, kind: ExtractionKinds.name(type))
        }
        if zip.isEncrypted { throw .encryptedEntry(entry: name) }
        if name.utf8.last == UInt8(ascii: "/") && !isDirectory { throw .unsafePath(entry: name, reason: "is a file whose name ends with /") }
        if !isDirectory, !ZipDirectory.supportedMethods.contains(zip.method) {
            throw .unsupportedCompression(entry: name, method: ZipDirectory.methodName(zip.method))
        }
        // Finder's Compress adds them; they are not installed and not counted.
        if ArchiveExtractor.isFinderMetadata(path, isDirectory: isDirectory) { return }
        entryCount += 1
        guard entryCount <= limits.maxEntries else { throw .tooManyEntries(limit: limits.maxEntries) }

        if path.isEmpty {
            guard isDirectory else { throw .unsafePath(entry: name, reason: "has an empty name") }
            return
        }
        if seen[path] != nil { throw .duplicateEntry(entry: name) }
        try addParents(of: path, entry: name)
        seen[path] = isDirectory
        if isDirectory {
            directories.append(path)
        } else {
            files.append(File(
                ordinal: ordinal, name: name, archiveName: zip.archiveName, path: path, offset: zip.localHeaderOffset, end: end,
                declaredSize: Int64(exactly: zip.uncompressedSize), streams: zip.localFlags & 0x08 == 0 || zip.method == 8
            ))
        }
    }

    /// Registers the folders above `path` (implied when the archive does not list them), refusing a
    /// folder that is already a file, or that was spelled with other bytes (Swift strings compare
    /// canonically equivalent spellings as equal; the file system does not). Entries come grouped by
    /// folder, so the last entry's folder, whose ancestors are all known folders already, is skipped.
    private mutating func addParents(of path: String, entry name: String) throws(ArchiveError) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return }
        let folder = path[..<slash]
        guard !folder.utf8.elementsEqual(lastFolder.utf8) else { return }
        var end = folder.utf8.startIndex
        while end != folder.utf8.endIndex {
            end = folder.utf8[folder.utf8.index(after: end)...].firstIndex(of: UInt8(ascii: "/")) ?? folder.utf8.endIndex
            let parent = String(folder[..<end])
            if let known = seen.index(forKey: parent) {
                guard seen[known].value, seen[known].key.utf8.elementsEqual(parent.utf8) else { throw .duplicateEntry(entry: name) }
                continue
            }
            seen[parent] = true
            directories.append(parent)
        }
        lastFolder = folder
    }

    /// Creates every folder, parents first (each is listed after its parents), and sets its mode to
    /// 0755 when `needsMode` (the umask took bits from it).
    /// With `existing`, folders the files' writers made already are fine (no entry is a file where the
    /// plan has a folder, and nothing else writes into the destination).
    package func makeDirectories(in destination: String, needsMode: Bool, existing: Bool = false) throws(ArchiveError) {
        for directory in directories {
            let target = destination + "/" + directory
            guard mkdir(target, 0o755) == 0 || existing && errno == EEXIST else { throw ArchiveExtractor.ioError(target) }
            if needsMode { chmod(target, 0o755) }
        }
    }

    /// The bundle folder (the destination, or its one top folder holding index.html) and `written`,
    /// the files as the second pass recorded them.
    package func result(destination: String, files written: [BundleFile], linked: Set<String>, unpackedBytes: Int64) throws(ArchiveError) -> ExtractionResult {
        let sorted = written.sorted { $0.path < $1.path }
        if seen["index.html"] == false {
            return ExtractionResult(
                bundleDirectory: destination, files: sorted, directories: (["."] + directories).sorted(), unpackedBytes: unpackedBytes, linkedPaths: linked
            )
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
        let inside = directories.filter { $0.hasPrefix(top + "/") }.map { String($0.dropFirst(top.count + 1)) }
        return ExtractionResult(
            bundleDirectory: destination + "/" + top, files: stripped, directories: (["."] + inside).sorted(), unpackedBytes: unpackedBytes,
            linkedPaths: Set(linked.map { String($0.dropFirst(top.count + 1)) })
        )
    }
}

/// The second pass, shared by its threads: which file is next, the bytes written so far, the records
/// and the failures.
private final class ExtractionJob: @unchecked Sendable {
    /// The archive, open for reading: its threads read it with `pread`.
    package let descriptor: Int32
    package let archivePath: String
    package let destination: String
    package let files: [ExtractionPlan.File]
    package let limits: ExtractionLimits
    package let archiveSize: Int64
    /// The mode files get.
    package let fileMode: UInt32
    /// Whether each file needs a chmod to ``fileMode`` (the umask takes bits from it).
    package let needsMode: Bool
    package let next = Atomic<Int>(0)
    package let unpacked = Atomic<Int64>(0)
    package let stopped = Atomic<Bool>(false)
    /// Slot `i` is written only by the thread that took file `i`, and read after every thread ended.
    package let records: UnsafeMutableBufferPointer<BundleFile?>
    private let failures = Mutex<[(index: Int, error: ArchiveError)]>([])

    /// A job writing `files`, counting from `unpacked` bytes already in place.
    package init(archivePath: String, descriptor: Int32, destination: String, files: [ExtractionPlan.File], limits: ExtractionLimits, archiveSize: Int64, fileMode: UInt32, needsMode: Bool, unpacked: Int64) {
        self.needsMode = needsMode
        self.fileMode = fileMode
        self.archivePath = archivePath
        self.descriptor = descriptor
        self.destination = destination
        self.files = files
        self.limits = limits
        self.archiveSize = archiveSize
        self.unpacked.store(unpacked, ordering: .relaxed)
        records = .allocate(capacity: files.count)
        records.initialize(repeating: nil)
    }

    deinit {
        records.deinitialize()
        records.deallocate()
    }

    /// The failure of the earliest file, when any failed.
    package var firstFailure: ArchiveError? {
        failures.withLock { $0.min { $0.index < $1.index }?.error }
    }

    /// Extracts every file on `threads` threads, the calling one included, and returns when all ended.
    package func run(threads: Int) {
        BlockingExecutor.forkJoin(threads, name: "miniapp.unzip") { _ in UTF8Locale.run { self.work() } }
    }

    private func fail(_ index: Int, _ error: ArchiveError) {
        failures.withLock { $0.append((index, error)) }
        stopped.store(true, ordering: .relaxed)
    }

    /// One thread's loop: take the next file, read its entry through a reader of its bytes alone (or this
    /// thread's reader of the whole archive, moved forward to it), write it.
    private func work() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 128 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var whole: ArchiveReader?
        while !stopped.load(ordering: .relaxed) {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < files.count else { return }
            let file = files[index]
            do throws(ArchiveError) {
                let reader: any LibarchiveReader
                let entry: OpaquePointer?
                if file.streams {
                    // libarchive peeks 24 bytes for a data descriptor (the zip64 size) even when it is 16
                    // long: the window reaches that far into what follows, which it only peeks at.
                    let window = try EntryReader(descriptor: descriptor, from: file.offset, to: min(file.end + 24, UInt64(max(archiveSize, 0))), buffer: buffer)
                    (reader, entry) = (window, try window.next())
                } else {
                    let sequential: ArchiveReader
                    if let whole {
                        sequential = whole
                    } else {
                        sequential = try ArchiveReader(archivePath, blockSize: 128 * 1024)
                        whole = sequential
                    }
                    (reader, entry) = (sequential, try sequential.entry(at: file.ordinal))
                }
                guard let entry else { throw .corrupt(reason: "the archive ended before entry \(file.name)") }
                guard let raw = archive_entry_pathname(entry), ZipDirectory.comparable(raw) == file.archiveName else {
                    throw .corrupt(reason: "the archive changed while it was read")
                }
                records[index] = try write(file, entry: entry, from: reader)
            } catch {
                fail(index, error)
                return
            }
        }
    }

    /// Makes the folders above `path` (relative to the destination) that are missing: the plan checked
    /// that each is a folder, and one another thread made meanwhile is fine.
    private func makeParents(of path: String) throws(ArchiveError) {
        let bytes = path.utf8
        var next = bytes.startIndex
        while let slash = bytes[next...].firstIndex(of: UInt8(ascii: "/")) {
            let target = destination + "/" + String(path[..<slash])
            guard mkdir(target, 0o755) == 0 || errno == EEXIST else { throw ArchiveExtractor.ioError(target) }
            next = bytes.index(after: slash)
        }
    }

    /// Writes one file's data, hashing it and counting its bytes against the limits.
    private func write(_ file: ExtractionPlan.File, entry: OpaquePointer, from reader: any LibarchiveReader) throws(ArchiveError) -> BundleFile {
        let target = destination + "/" + file.path
        var descriptor = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fileMode)
        if descriptor < 0 && errno == ENOENT {
            try makeParents(of: file.path)
            descriptor = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fileMode)
        }
        guard descriptor >= 0 else {
            if errno == EEXIST { throw .duplicateEntry(entry: file.name) }
            throw ArchiveExtractor.ioError(target)
        }
        defer { close(descriptor) }
        if needsMode { fchmod(descriptor, fileMode) }
        let digest = SHA256Digest()
        var size: Int64 = 0
        // An entry that declares no bytes has none to read: libarchive's LZMA reader fails on an empty
        // stream (bsdtar does not ask it either).
        let empty = file.declaredSize == 0
        while !empty {
            var block: UnsafeRawPointer?
            var length = 0
            var offset: la_int64_t = 0
            let status = archive_read_data_block(reader.handle, &block, &length, &offset)
            if status == CMiniAppArchive_EOF() { break }
            guard status == CMiniAppArchive_OK() else { throw .corrupt(reason: "\(file.name): \(reader.message)") }
            guard offset == size else { throw .corrupt(reason: "\(file.name): its data has a gap") }
            guard length > 0, let block else { continue }
            size += Int64(length)
            let total = unpacked.wrappingAdd(Int64(length), ordering: .relaxed).newValue
            guard total <= limits.maxUnpackedBytes else { throw .tooLarge(limitBytes: limits.maxUnpackedBytes) }
            if total > limits.ratioFloorBytes, Double(total) > limits.maxCompressionRatio * Double(max(archiveSize, 1)) {
                throw .compressionRatio(limit: limits.maxCompressionRatio)
            }
            let bytes = UnsafeRawBufferPointer(start: block, count: length)
            digest.update(bytes)
            var written = 0
            while written < length {
                let result = Glibc.write(descriptor, block + written, length - written)
                guard result > 0 else {
                    if result < 0 && errno == EINTR { continue }
                    throw ArchiveExtractor.ioError(target)
                }
                written += result
            }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ArchiveExtractor.ioError(target) }
        return BundleFile(
            path: file.path, size: size, sha256: digest.finalize().hexString,
            changedAt: FileTimestamp(info.st_ctim)
        )
    }
}

/// The rules a path inside a bundle must follow.
package enum ArchivePath {
    /// The name's components with `.` and empty ones dropped, after refusing every unsafe spelling.
    package static func components(of name: String) throws(ArchiveError) -> [String] {
        try cleanedBytes(of: name).split(separator: UInt8(ascii: "/")).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The name with `.` and empty components dropped (`a//./b` is `a/b`), after refusing every unsafe
    /// spelling.
    package static func path(of name: String) throws(ArchiveError) -> String {
        String(decoding: try cleanedBytes(of: name), as: UTF8.self)
    }

    /// The checks and the cleaning, on the UTF-8 bytes as the kernel reads a path: a component ends at
    /// every `/` byte.
    private static func cleanedBytes(of name: String) throws(ArchiveError) -> [UInt8] {
        let bytes = Array(name.utf8)
        if bytes.first == UInt8(ascii: "/") { throw .unsafePath(entry: name, reason: "is an absolute path") }
        if bytes.contains(UInt8(ascii: "\\")) { throw .unsafePath(entry: name, reason: "contains a backslash") }
        // Bytes of multi-byte characters are all 0x80 or above: this finds exactly the C0 controls and DEL.
        if bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .unsafePath(entry: name, reason: "contains control characters")
        }
        if bytes.contains(UInt8(ascii: ":")), let first = name.unicodeScalars.first,
           name.unicodeScalars.dropFirst().first == ":", first.properties.isAlphabetic {
            throw .unsafePath(entry: name, reason: "starts with a drive letter")
        }
        if bytes.count > 1024 { throw .unsafePath(entry: name, reason: "is longer than 1024 bytes") }
        var cleaned: [UInt8] = []
        cleaned.reserveCapacity(bytes.count)
        // Component by component (empty ones skipped), without an array of them.
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "/") { end += 1 }
            defer { start = end + 1 }
            let component = bytes[start..<end]
            if component.isEmpty || component.count == 1 && component.first == UInt8(ascii: ".") { continue }
            if component.count == 2 && component.allSatisfy({ $0 == UInt8(ascii: ".") }) {
                throw .unsafePath(entry: name, reason: "climbs out with ..")
            }
            if component.count > 255 { throw .unsafePath(entry: name, reason: "has a component longer than 255 bytes") }
            if !cleaned.isEmpty { cleaned.append(UInt8(ascii: "/")) }
            cleaned.append(contentsOf: component)
        }
        return cleaned
    }
}

/// Names of file types, for messages.
enum ExtractionKinds {
    /// What a file of mode `mode` is called.
    package static func name(_ mode: UInt32) -> String {
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
