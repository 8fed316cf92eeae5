import Foundation
import MiniAppCore
import Synchronization

/// Walks an installed bundle folder and compares it with its install-time file list.
struct BundleInspector {
    /// The bundle folder.
    let root: String

    /// The thorough check: every entry walked, every file hashed.
    func thoroughCheck(_ files: [BundleFile]) -> IntegrityReport {
        var expected = Dictionary(files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        var problems: [String] = []
        var toHash: [(BundleFile, String)] = []
        let rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard rootDescriptor >= 0 else { return IntegrityReport(problems: ["missing: the bundle folder"]) }
        walk(rootDescriptor, relative: "") { relative, info in
            guard let info, let file = expected.removeValue(forKey: relative) else {
                problems.append("added: \(relative)")
                return
            }
            if Int64(info.st_size) != file.size {
                problems.append("changed: \(relative)")
            } else {
                toHash.append((file, root + "/" + relative))
            }
        }
        problems += expected.keys.sorted().map { "missing: \($0)" }
        problems += Self.hashMismatches(toHash)
        return IntegrityReport(problems: problems.sorted())
    }

    /// The quick check: every folder's and file's status against the list, hashing only files whose
    /// change time moved, and reading only folders whose change time moved (an entry was added,
    /// removed or renamed there). A change time that `attested` vouches for counts as unchanged. Big lists
    /// take their status calls on two threads. Also returns the attestations this check earned: files
    /// whose change time moved and that hash as listed, folders whose change time moved and that hold
    /// nothing new.
    ///
    /// `listIsWhole` runs on the calling thread while the status calls start (the list's digest, checked
    /// alongside them); when it returns `false`, nothing else is done and the answer is `nil`.
    func quickCheck(
        _ list: FileListIndex, attested: Attestations = Attestations(), listIsWhole: () -> Bool = { true }
    ) -> (report: IntegrityReport, attested: Attestations)? {
        let rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard rootDescriptor >= 0 else {
            return listIsWhole() ? (IntegrityReport(problems: ["missing: the bundle folder"]), Attestations()) : nil
        }
        defer { close(rootDescriptor) }
        guard let verdicts = Self.verdicts(list, in: rootDescriptor, alongside: listIsWhole) else { return nil }
        var problems: [String] = []
        var moved: [(String, FileTimestamp)] = []
        var toHash: [(BundleFile, String)] = []
        var earned = Attestations()
        var info = stat()
        func changeTime(_ path: String) -> FileTimestamp? {
            fstatat(rootDescriptor, path, &info, AT_SYMLINK_NOFOLLOW) == 0 ? FileTimestamp(info.st_ctim) : nil
        }
        for (index, directory) in list.directories.enumerated() where verdicts[index] != .same {
            let path = list.path(directory)
            guard let now = changeTime(path) else { continue }
            if attested.directories[path] == now { continue }
            moved.append((path, now))
        }
        var touchedTimes: [FileTimestamp] = []
        for (index, file) in list.files.enumerated() {
            switch verdicts[list.directories.count + index] {
            case .same: break
            case .missing: problems.append("missing: \(list.path(file))")
            case .resized: problems.append("changed: \(list.path(file))")
            case .touched:
                let listed = list.file(file)
                guard let now = changeTime(listed.path) else {
                    problems.append("missing: \(listed.path)")
                    continue
                }
                if attested.vouches(for: listed, changedAt: now) { continue }
                toHash.append((listed, root + "/" + listed.path))
                touchedTimes.append(now)
            }
        }
        if !moved.isEmpty {
            var known = Set(list.files.map(list.path))
            known.formUnion(list.directories.map(list.path))
            for (directory, now) in moved {
                let relative = directory == "." ? "" : directory
                let descriptor = openat(rootDescriptor, directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard descriptor >= 0 else { continue }
                var clean = true
                for name in Self.names(in: descriptor) {
                    let path = relative.isEmpty ? name : relative + "/" + name
                    if !known.contains(path) {
                        problems.append("added: \(path)")
                        clean = false
                    }
                }
                if clean { earned.directories[directory] = now }
            }
        }
        let mismatches = Self.hashMismatches(toHash)
        if !toHash.isEmpty {
            let failed = Set(mismatches)
            for ((file, _), now) in zip(toHash, touchedTimes) where !failed.contains("changed: \(file.path)") {
                var attestedFile = file
                attestedFile.changedAt = now
                earned.files[file.path] = attestedFile
            }
        }
        problems += mismatches
        return (IntegrityReport(problems: problems.sorted()), earned)
    }

    /// What an entry's status says about it: for a folder, anything but `same` means it moved.
    enum Verdict {
        case same, missing, resized, touched
    }

    /// Lists from this many entries on take their status calls on two threads (measured on tmpfs: a
    /// thousand entries take about 2 ms on one).
    static let parallelMinimumEntries = 256

    /// Entries a thread takes at a time from a shared count: a thread that starts late, or whose calls
    /// are slower, takes fewer.
    private static let entriesPerTake = 32

    /// Each folder's, then each file's status compared with the list, or `nil` when `alongside` (run on
    /// the calling thread once the other thread is started, before it joins the status calls) returns
    /// `false`.
    private static func verdicts(_ list: FileListIndex, in rootDescriptor: Int32, alongside: () -> Bool) -> [Verdict]? {
        let (directories, files) = (list.directories, list.files)
        let count = directories.count + files.count
        var verdicts = [Verdict](repeating: .same, count: count)
        let parts = count >= parallelMinimumEntries && ProcessEnvironment.processorCount > 1 ? 2 : 1
        let next = SharedCount()
        let whole = list.bytes.withUnsafeBufferPointer { bytes in
            let text = SendablePointer(bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            return verdicts.withUnsafeMutableBufferPointer { output in
                let output = SendableBuffer(output)
                return BlockingExecutor.forkJoin(parts, name: "miniapp.check", onCaller: alongside) { part in
                    // Each thread resolves paths from a descriptor of its own (of the same folder): while
                    // two threads share one, each call updates its reference count, which both cores write.
                    let own = part == 0 ? -1 : openat(rootDescriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                    defer { if own >= 0 { close(own) } }
                    withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { path in
                        let calls = StatusCalls(descriptor: own >= 0 ? own : rootDescriptor, text: text.base, path: path)
                        while let taken = next.take(entriesPerTake, below: count) {
                            for index in taken {
                                let isDirectory = index < directories.count
                                let entry = isDirectory ? directories[index] : files[index - directories.count]
                                output.buffer[index] = verdict(entry, isDirectory: isDirectory, status: calls.status(entry.path))
                            }
                        }
                    }
                }
            }
        }
        return whole ? verdicts : nil
    }

    /// What an entry's status (`nil` when it has none) says about it.
    private static func verdict(_ entry: FileListIndex.Entry, isDirectory: Bool, status: stat?) -> Verdict {
        guard let status, (status.st_mode & S_IFMT) == (isDirectory ? S_IFDIR : S_IFREG) else { return .missing }
        if !isDirectory && Int64(status.st_size) != entry.size { return .resized }
        return entry.changedAt.matches(status.st_ctim) ? .same : .touched
    }

    /// Status calls on paths located in a file list's bytes, each copied into `path` as a C string.
    private struct StatusCalls {
        let descriptor: Int32
        let text: UnsafePointer<UInt8>
        let path: UnsafeMutableBufferPointer<CChar>

        /// The status of the entry at `range` of the text, without following a link; `nil` when it has
        /// none (a path longer than the system takes has none).
        func status(_ range: Range<Int>) -> stat? {
            guard range.count < path.count else { return nil }
            UnsafeMutableRawPointer(path.baseAddress!).copyMemory(from: text + range.lowerBound, byteCount: range.count)
            path[range.count] = 0
            var info = stat()
            return fstatat(descriptor, path.baseAddress!, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
        }
    }

    /// The folders at `paths` (relative, `.` for the bundle folder) with their change time now, or `nil`
    /// when one of them is not a folder.
    func directories(at paths: [String]) -> [BundleDirectory]? {
        let descriptor = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var result: [BundleDirectory] = []
        result.reserveCapacity(paths.count)
        var info = stat()
        for path in paths {
            guard fstatat(descriptor, path, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
            result.append(BundleDirectory(path: path, changedAt: FileTimestamp(info.st_ctim)))
        }
        return result
    }

    /// Every folder of the bundle (`.` for the bundle folder) with its change time now.
    func directories() -> [BundleDirectory] {
        var result: [BundleDirectory] = []
        let descriptor = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        collectDirectories(descriptor, relative: ".", into: &result)
        return result.sorted { $0.path < $1.path }
    }

    /// Adds the open folder `descriptor` (which it closes) and every folder below it.
    private func collectDirectories(_ descriptor: Int32, relative: String, into result: inout [BundleDirectory]) {
        var info = stat()
        guard fstat(descriptor, &info) == 0, let handle = fdopendir(descriptor) else {
            close(descriptor)
            return
        }
        defer { closedir(handle) }
        result.append(BundleDirectory(path: relative, changedAt: FileTimestamp(info.st_ctim)))
        while let entry = readdir(handle) {
            guard entry.pointee.d_type == UInt8(DT_DIR) || entry.pointee.d_type == UInt8(DT_UNKNOWN) else { continue }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 { collectDirectories(child, relative: relative == "." ? name : relative + "/" + name, into: &result) }
        }
    }

    /// The entry names of the open folder `descriptor`, which it closes.
    private static func names(in descriptor: Int32) -> [String] {
        guard let handle = fdopendir(descriptor) else {
            close(descriptor)
            return []
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `changed:` lines for the files whose contents no longer hash to their recorded digest,
    /// hashed on every core.
    static func hashMismatches(_ files: [(BundleFile, String)]) -> [String] {
        guard !files.isEmpty else { return [] }
        let queue = WorkQueue(count: files.count)
        let workers = min(max(ProcessEnvironment.processorCount, 1), files.count)
        BlockingExecutor.forkJoin(workers, name: "miniapp.hash") { _ in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            while let index = queue.take() {
                let (file, path) = files[index]
                if FileHashing.sha256(ofFileAt: path, buffer: buffer)?.hexString != file.sha256 { queue.flag(index) }
            }
        }
        return queue.flagged.sorted().map { "changed: \(files[$0].0.path)" }
    }

    /// Visits every entry under the open folder `descriptor` (which it closes): regular files with their
    /// status, anything else that is not a folder with `nil`. Status calls are relative to the open
    /// folder, so no path is resolved twice.
    private func walk(_ descriptor: Int32, relative: String, _ visit: (String, stat?) -> Void) {
        guard let handle = fdopendir(descriptor) else {
            close(descriptor)
            return
        }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let path = relative.isEmpty ? name : relative + "/" + name
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                visit(path, nil)
                continue
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if child >= 0 { walk(child, relative: path, visit) } else { visit(path, nil) }
            case S_IFREG:
                visit(path, info)
            default:
                visit(path, nil)
            }
        }
    }
}

/// Indexes handed out to worker threads, and the ones they flag.
final class WorkQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let count: Int
    private var next = 0
    private var marks: [Int] = []

    init(count: Int) {
        self.count = count
    }

    /// The next index to work on, or `nil` when all are taken.
    func take() -> Int? {
        lock.withLock {
            guard next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }

    /// Flags an index.
    func flag(_ index: Int) {
        lock.withLock { marks.append(index) }
    }

    /// The flagged indexes.
    var flagged: [Int] { lock.withLock { marks } }
}

/// A buffer that concurrent workers write at distinct indexes.
struct SendableBuffer<Element>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Element>

    init(_ buffer: UnsafeMutableBufferPointer<Element>) {
        self.buffer = buffer
    }
}

/// A count that threads take turns from.
private final class SharedCount: Sendable {
    private let value = Atomic<Int>(0)

    /// The next `count` numbers below `limit` (fewer at the end), or `nil` once all are taken.
    func take(_ count: Int, below limit: Int) -> Range<Int>? {
        let start = value.add(count, ordering: .relaxed).oldValue
        return start < limit ? start..<min(start + count, limit) : nil
    }
}

/// A buffer that outlives the threads reading it.
struct SendablePointer: @unchecked Sendable {
    let base: UnsafePointer<UInt8>

    init(_ base: UnsafePointer<UInt8>) {
        self.base = base
    }
}
