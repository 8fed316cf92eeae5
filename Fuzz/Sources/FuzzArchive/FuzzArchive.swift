import Foundation
import FuzzSupport
@testable import MiniAppCore

/// The archive reader on arbitrary bytes: it must refuse or extract, never crash, and never write
/// outside its destination. The delta planner's reader of a zip's end (the bytes as the whole zip,
/// then as the end of a bigger one) must refuse or give spans inside the zip, and a plan that covers
/// every byte once.
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
    checkLayout(Array(UnsafeBufferPointer(start: data, count: size)))
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

/// `bytes` as a whole zip and as the end of a zip 1 KiB longer: a layout read from either holds spans in
/// order inside the zip, and the plan from it to itself covers `0..<end` once and copies every entry,
/// unless the entries are too small a part of it to be worth copying (then it fetches everything).
func checkLayout(_ bytes: [UInt8]) {
    for size in [UInt64(bytes.count), UInt64(bytes.count) + 1024] {
        let tail = ZipTail(bytes: bytes, size: size)
        guard let layout = try? ZipDirectory.layout(of: tail, maxEntries: 200) else { continue }
        precondition(layout.size == size && layout.directoryStart <= size, "directory outside the zip")
        var previous: UInt64 = 0
        for span in layout.spans {
            precondition(span.offset >= previous && span.key.length > 0 && span.end <= layout.directoryStart, "span out of order or outside")
            previous = span.end
        }
        let plan = DeltaPlan.make(new: layout, old: layout, end: layout.directoryStart)
        var cursor: UInt64 = 0
        for piece in plan.pieces {
            precondition(piece.offset == cursor && piece.length > 0, "plan has a gap or an empty piece")
            cursor = piece.end
        }
        precondition(cursor == layout.directoryStart, "plan does not reach the directory")
        // Entries that are less than the smallest reuse of the bytes planned are fetched whole, in one piece.
        let entries = layout.spans.reduce(0) { $0 + $1.key.length }
        let reuse = DeltaPlan.smallestReuse
        if entries * reuse.denominator < layout.directoryStart * reuse.numerator {
            precondition(plan.pieces.count <= 1 && plan.reusedBytes == 0, "a plan that reuses too little copies")
            continue
        }
        precondition(plan.reusedBytes == entries, "an unchanged entry is fetched")
        // Every entry is copied whole, from an entry with its key.
        let keys = Dictionary(layout.spans.map { ($0.offset, $0.key) }, uniquingKeysWith: { first, _ in first })
        let copied = plan.copiedEntries(of: layout)
        precondition(copied.count == keys.count && layout.spans.allSatisfy { span in copied[span.offset].flatMap { keys[$0] } == span.key }, "an entry is not copied from its own")
    }
}

@_cdecl("FuzzArchive_main")
func fuzzArchiveMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data, size in
        guard let data else { return 0 }
        return fuzzArchive(data, size)
    }
}
