import Foundation

/// Walks an installed bundle folder and compares it with its install-time file list.
struct BundleInspector {
    /// The bundle folder.
    let root: String

    /// The problems found: changed, missing and added files.
    func compare(with files: [BundleFile], thorough: Bool) -> IntegrityReport {
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
            } else if thorough || Int64(info.st_ctim.tv_sec) != file.changedAt.seconds || Int64(info.st_ctim.tv_nsec) != file.changedAt.nanoseconds {
                toHash.append((file, root + "/" + relative))
            }
        }
        problems += expected.keys.sorted().map { "missing: \($0)" }
        problems += Self.hashMismatches(toHash)
        return IntegrityReport(problems: problems.sorted())
    }

    /// `changed:` lines for the files whose contents no longer hash to their recorded digest,
    /// hashed on every core.
    static func hashMismatches(_ files: [(BundleFile, String)]) -> [String] {
        guard !files.isEmpty else { return [] }
        let queue = WorkQueue(count: files.count)
        let workers = min(max(ProcessInfo.processInfo.activeProcessorCount, 1), files.count)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
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

/// Hashing whole files.
enum FileHashing {
    /// The SHA-256 of the file at `path`, read through `buffer`, or `nil` when it cannot be read.
    static func sha256(ofFileAt path: String, buffer: UnsafeMutableRawBufferPointer) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
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
