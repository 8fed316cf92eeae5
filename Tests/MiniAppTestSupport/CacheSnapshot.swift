import Foundation

/// What a cache directory holds that matters: every file under `bundles/` with its contents' size,
/// and the leftovers in `tmp/` and `trash/` (which must be none between commands).
public struct CacheSnapshot: Equatable, CustomStringConvertible {
    public var files: [String: Int]
    public var leftovers: [String]

    public init(_ root: String) {
        var files: [String: Int] = [:]
        let bundles = root + "/bundles"
        if let enumerator = FileManager.default.enumerator(atPath: bundles) {
            while let path = enumerator.nextObject() as? String {
                let full = bundles + "/" + path
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue, !path.hasSuffix("platform.json") {
                    files[path] = (try? FileManager.default.attributesOfItem(atPath: full)[.size] as? Int) ?? -1
                }
            }
        }
        self.files = files
        leftovers = ["tmp", "trash"].flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + folder)) ?? []).map { folder + "/" + $0 }
        }
    }

    public var description: String { "files: \(files.keys.sorted()), leftovers: \(leftovers)" }
}

/// Every folder and file under a cache root, with file sizes and modification times: what "the cache
/// is exactly as it was" compares. A root that does not exist gives `nil`.
public struct CacheTree: Equatable, CustomStringConvertible {
    public var entries: [String: String]?

    public init(_ root: String) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            entries = nil
            return
        }
        var entries: [String: String] = [:]
        if let enumerator = FileManager.default.enumerator(atPath: root) {
            while let path = enumerator.nextObject() as? String {
                var info = stat()
                guard lstat(root + "/" + path, &info) == 0 else { continue }
                entries[path] = (info.st_mode & S_IFMT) == S_IFDIR ? "folder" : "file \(info.st_size) bytes, modified \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
            }
        }
        self.entries = entries
    }

    public var description: String {
        guard let entries else { return "(no cache folder)" }
        return entries.keys.sorted().map { "\($0): \(entries[$0]!)" }.joined(separator: "\n")
    }
}
