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
