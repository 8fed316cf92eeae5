import Foundation
import FuzzSupport
import MiniAppCore

/// The archive reader on arbitrary bytes: it must refuse or extract, never crash, and never write
/// outside its destination.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArchive(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let root = "/dev/shm/miniapp-fuzz-\(getpid())"
    let zip = root + ".zip"
    let destination = root + "/out"
    mkdir(root, 0o755)
    defer {
        try? FileManager.default.removeItem(atPath: root)
        unlink(zip)
    }
    guard FileManager.default.createFile(atPath: zip, contents: Data(bytes: data, count: size)) else { return 0 }
    let limits = ExtractionLimits(maxEntries: 200, maxUnpackedBytes: 4 << 20, maxCompressionRatio: 100, ratioFloorBytes: 1 << 20)
    if let result = try? ArchiveExtractor(limits: limits).extract(zip, into: destination) {
        precondition(result.bundleDirectory.hasPrefix(destination), "extracted outside the destination")
        for file in result.files {
            precondition(!file.path.hasPrefix("/") && !file.path.split(separator: "/").contains(".."), "unsafe path \(file.path)")
        }
    }
    return 0
}

@_cdecl("FuzzArchive_main")
func fuzzArchiveMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data, size in
        guard let data else { return 0 }
        return fuzzArchive(data, size)
    }
}
