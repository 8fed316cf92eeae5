import CMiniAppArchive
import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

@Suite struct ArchiveExtractorTests {
    /// Extracts `bytes` on one thread and again on three, and requires both to agree: the same files
    /// and digests, or the same error.
    func extract(_ bytes: [UInt8], limits: ExtractionLimits = ExtractionLimits()) throws -> (ExtractionResult, String) {
        let directory = try TemporaryDirectory.make()
        let zip = directory.appendingPathComponent("a.zip").path
        try writeTestFile(zip, Data(bytes))
        func run(threads: Int) -> (Result<ExtractionResult, ArchiveError>, String) {
            let destination = directory.appendingPathComponent("out-\(threads)").path
            var extractor = ArchiveExtractor(limits: limits, maxThreads: threads)
            extractor.parallelMinimumBytes = 0
            return (Result { () throws(ArchiveError) in try extractor.extract(zip, into: destination) }, destination)
        }
        let (single, destination) = run(threads: 1)
        let (parallel, parallelDestination) = run(threads: 3)
        switch (single, parallel) {
        case (.success(let one), .success(let three)):
            #expect(one.files.map(\.path) == three.files.map(\.path))
            #expect(one.files.map(\.sha256) == three.files.map(\.sha256))
            #expect(one.unpackedBytes == three.unpackedBytes)
            #expect(one.bundleDirectory.dropFirst(destination.count) == three.bundleDirectory.dropFirst(parallelDestination.count))
        case (.failure(let one), .failure(let three)):
            #expect(one == three)
        default:
            Issue.record("one thread gave \(single), three gave \(parallel)")
        }
        return (try single.get(), destination)
    }

    @Test func extractsFilesWithFixedModesAndDigests() throws {
        let (result, destination) = try extract(try BundleFactory.zip(BundleFactory.helloFiles))
        #expect(result.bundleDirectory == destination)
        #expect(result.files.map(\.path) == ["_locale/default/manifest.json", "css/app.css", "index.html", "js/app.js", "manifest.json"])
        let index = try #require(result.files.first { $0.path == "index.html" })
        #expect(index.sha256 == SHA256Digest.hash(Array(BundleFactory.helloFiles["index.html"]!.utf8)).hexString)
        let fileMode = try FileManager.default.attributesOfItem(atPath: destination + "/js/app.js")[.posixPermissions] as? Int
        let folderMode = try FileManager.default.attributesOfItem(atPath: destination + "/js")[.posixPermissions] as? Int
        #expect(fileMode == 0o644)
        #expect(folderMode == 0o755)
    }

    @Test(arguments: [false, true])
    func listsEveryFolderItMadeAsTheTreeHasThem(topFolder: Bool) throws {
        let top = topFolder ? "app/" : ""
        let zip = RawZip([
            .file(top + "index.html", "<html>"), .file(top + "js/lib/a.js", "1"), .directory(top + "empty"),
            .directory(top + "css"), .file(top + "css/x/y/z.css", "p {}"),
        ]).bytes
        let (result, _) = try extract(zip)
        let walked = BundleInspector(root: result.bundleDirectory).directories()
        #expect(result.directories == walked.map(\.path))
        #expect(result.directories == [".", "css", "css/x", "css/x/y", "empty", "js", "js/lib"])
        #expect(BundleInspector(root: result.bundleDirectory).directories(at: result.directories) == walked)
        #expect(BundleInspector(root: result.bundleDirectory).directories(at: ["js/lib/a.js"]) == nil)
    }

    @Test func namesBeyondASCIIAreExtractedWhateverTheProcessLocale() throws {
        // Flagged UTF-8 names, as zip tools write them; the test process runs in the C locale, under
        // which libarchive could not convert them.
        let zip = RawZip([
            .file("index.html", "<html>"), .file("画像/ねこ.png", "1"), .file("e\u{301}/a.js", "2"), .file("\u{e9}/b.js", "3"),
        ]).bytes
        let (result, destination) = try extract(zip)
        #expect(FileManager.default.fileExists(atPath: destination + "/画像/ねこ.png"))
        // libarchive gives names in composed form (NFC), so the two spellings of é are one folder.
        #expect(result.files.map(\.path) == ["index.html", "画像/ねこ.png", "\u{e9}/a.js", "\u{e9}/b.js"].sorted())
        #expect(result.directories == BundleInspector(root: result.bundleDirectory).directories().map(\.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination).sorted() == ["index.html", "画像", "\u{e9}"].sorted())
    }

    @Test func writtenNamesBeyondASCIIAreFlaggedUTF8AndReadBack() throws {
        let directory = try TemporaryDirectory.make().path
        try FileManager.default.createDirectory(atPath: directory + "/in/画像", withIntermediateDirectories: true)
        try writeTestFile(directory + "/in/index.html", Data("<html>".utf8))
        try writeTestFile(directory + "/in/画像/ねこ.png", Data("1".utf8))
        try ArchiveWriter.zip(directory: directory + "/in", to: directory + "/out.zip")
        let zip = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/out.zip")))
        // The central directory: general purpose flags at offset 8, name length at 28, name at 46.
        func le(_ offset: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(zip[offset + $1]) << (8 * $1) } }
        let end = try #require((0...(zip.count - 22)).reversed().first { le($0, 4) == 0x0605_4b50 })
        var offset = le(end + 16, 4)
        var flags: [String: Int] = [:]
        for _ in 0..<le(end + 10, 2) {
            #expect(le(offset, 4) == 0x0201_4b50)
            let nameLength = le(offset + 28, 2)
            flags[String(decoding: zip[(offset + 46)..<(offset + 46 + nameLength)], as: UTF8.self)] = le(offset + 8, 2)
            offset += 46 + nameLength + le(offset + 30, 2) + le(offset + 32, 2)
        }
        #expect(flags.keys.sorted() == ["index.html", "画像/", "画像/ねこ.png"])
        #expect(flags["画像/ねこ.png"].map { $0 & 0x800 } == 0x800, "the UTF-8 name flag (bit 11)")
        let (result, _) = try extract(zip)
        #expect(result.files.map(\.path) == ["index.html", "画像/ねこ.png"])
    }

    @Test func stripsOneCommonTopFolder() throws {
        let zip = RawZip([.directory("app"), .file("app/index.html", "<html>"), .file("app/js/a.js", "1")]).bytes
        let (result, destination) = try extract(zip)
        #expect(result.bundleDirectory == destination + "/app")
        #expect(result.files.map(\.path) == ["index.html", "js/a.js"])
    }

    @Test func setuidBitsAreDropped() throws {
        let zip = RawZip([RawZip.Entry(name: "index.html", data: [1], mode: 0o104777)]).bytes
        let (_, destination) = try extract(zip)
        #expect(try FileManager.default.attributesOfItem(atPath: destination + "/index.html")[.posixPermissions] as? Int == 0o644)
    }

    static let hostile: [(String, [RawZip.Entry])] = [
        ("dot-dot", [.file("index.html"), .file("../evil.js")]),
        ("nested dot-dot", [.file("index.html"), .file("js/../../evil.js")]),
        ("absolute", [.file("index.html"), .file("/etc/evil")]),
        ("backslash", [.file("index.html"), .file("..\\evil.js")]),
        ("backslash inside", [.file("index.html"), .file("js\\..\\..\\evil.js")]),
        ("drive letter", [.file("index.html"), .file("C:/evil.js")]),
        ("control characters", [.file("index.html"), .file("evil\u{1b}[31m.js")]),
        ("symlink", [.file("index.html"), .symlink("link", to: "/etc/passwd")]),
        ("symlink dir", [.file("index.html"), .symlink("js", to: ".."), .file("js/x.js")]),
        ("character device", [.file("index.html"), RawZip.Entry(name: "dev", mode: 0o020644)]),
        ("block device", [.file("index.html"), RawZip.Entry(name: "blk", mode: 0o060644)]),
        ("socket", [.file("index.html"), RawZip.Entry(name: "sock", mode: 0o140644)]),
        ("duplicate", [.file("index.html"), .file("a.js", "1"), .file("a.js", "2")]),
        ("duplicate dot", [.file("index.html"), .file("a.js", "1"), .file("./a.js", "2")]),
        ("file then folder", [.file("index.html"), .file("a", "1"), .file("a/b.js", "2")]),
        ("canonically equal files", [.file("index.html"), .file("e\u{301}.js", "1"), .file("\u{e9}.js", "2")]),
        ("dot-dot behind a combining mark", [.file("index.html"), .file("a/\u{301}/../../../evil.js")]),
        ("encrypted", [.file("index.html"), RawZip.Entry(name: "secret.js", data: Array("xxxxxxxxxxxxxxxx".utf8), encrypted: true)]),
        ("bad crc", [.file("index.html"), RawZip.Entry(name: "a.js", data: Array("payload".utf8), crcOverride: 0xDEADBEEF)]),
        // Declared sizes close to 2^63 each, whose sum overflows: refused, never a crash.
        ("declared sizes that overflow a sum", [
            .file("index.html"), .declaring("a.js", uncompressed: 0x7FFF_FFFF_FFFF_FFF0), .declaring("b.js", uncompressed: 0x7FFF_FFFF_FFFF_FFF0),
        ]),
        ("no index", [.file("main.html")]),
        ("index too deep", [.file("a/b/index.html")]),
        ("two tops", [.file("a/index.html"), .file("b/x.js")]),
    ]

    @Test(arguments: hostile.map(\.0))
    func hostileArchivesAreRefused(name: String) throws {
        let entries = try #require(Self.hostile.first { $0.0 == name }?.1)
        let error = #expect(throws: ArchiveError.self) { try extract(RawZip(entries).bytes) }
        #expect(error?.category == .badData)
    }

    @Test(arguments: [
        [UInt8](), Array("not a zip at all".utf8), Array(RawZip([.file("index.html", "hello world")]).bytes.prefix(40)),
    ])
    func brokenArchivesAreRefused(bytes: [UInt8]) throws {
        #expect(throws: ArchiveError.self) { try extract(bytes) }
    }

    @Test func truncatedArchiveIsRefused() throws {
        let bytes = try BundleFactory.zip(BundleFactory.helloFiles)
        #expect(throws: ArchiveError.self) { try extract(Array(bytes.dropLast(30))) }
    }

    @Test func lyingSizeIsRefused() throws {
        let zip = RawZip([.file("index.html"), RawZip.Entry(name: "a.js", data: Array("12345678".utf8), declaredSize: 4)])
        #expect(throws: ArchiveError.self) { try extract(zip.bytes) }
    }

    @Test func tooManyEntriesAreRefused() throws {
        let zip = RawZip([.file("index.html")] + (0..<20).map { .file("f\($0).js") })
        #expect(throws: ArchiveError.tooManyEntries(limit: 10)) { try extract(zip.bytes, limits: ExtractionLimits(maxEntries: 10)) }
    }

    @Test func tooManyBytesAreRefusedCountingRealBytes() throws {
        let zip = RawZip([.file("index.html", String(repeating: "a", count: 5000))])
        #expect(throws: ArchiveError.tooLarge(limitBytes: 1000)) { try extract(zip.bytes, limits: ExtractionLimits(maxUnpackedBytes: 1000)) }
    }

    @Test func filesKnownToHoldAnEntrysBytesAreLinkedNotInflatedAndCountAgainstTheLimits() throws {
        let directory = try TemporaryDirectory.make().path
        let zip = directory + "/a.zip"
        try writeTestFile(zip, Data(try BundleFactory.zip(BundleFactory.helloFiles)))
        var extractor = ArchiveExtractor()
        extractor.fileMode = 0o444
        let first = try extractor.extract(zip, into: directory + "/one")
        let offsets = Dictionary(uniqueKeysWithValues: try ZipDirectory.read(zip, maxEntries: 100).entries.map { ($0.name, $0.localHeaderOffset) })
        func reusable(_ path: String, size: Int64? = nil) throws -> (UInt64, ReusableFile) {
            let file = try #require(first.files.first { $0.path == path })
            return (try #require(offsets[path]), ReusableFile(source: directory + "/one/" + path, size: size ?? file.size, sha256: file.sha256))
        }
        // index.html is linked; css/app.css is offered with the wrong size, so it is inflated.
        extractor.reusable = Dictionary(uniqueKeysWithValues: [try reusable("index.html"), try reusable("css/app.css", size: 1)])
        let second = try extractor.extract(zip, into: directory + "/two")
        #expect(second.linkedPaths == ["index.html"])
        #expect(second.files.map(\.sha256) == first.files.map(\.sha256))
        #expect(second.unpackedBytes == first.unpackedBytes)
        var one = stat(), two = stat()
        #expect(lstat(directory + "/one/index.html", &one) == 0 && lstat(directory + "/two/index.html", &two) == 0 && one.st_ino == two.st_ino)
        #expect(second.files.first { $0.path == "index.html" }?.changedAt == FileTimestamp(two.st_ctim))
        #expect(lstat(directory + "/one/css/app.css", &one) == 0 && lstat(directory + "/two/css/app.css", &two) == 0 && one.st_ino != two.st_ino)
        // A file whose mode is not the one extraction gives is not linked.
        chmod(directory + "/one/index.html", 0o644)
        #expect(try extractor.extract(zip, into: directory + "/three").linkedPaths.isEmpty)
        chmod(directory + "/one/index.html", 0o444)
        // Linked bytes count against the byte limit.
        extractor.limits.maxUnpackedBytes = Int64(BundleFactory.helloFiles["index.html"]!.utf8.count) - 1
        #expect(throws: ArchiveError.tooLarge(limitBytes: extractor.limits.maxUnpackedBytes)) { try extractor.extract(zip, into: directory + "/four") }
    }

    @Test func compressionBombIsRefused() throws {
        let bomb = try BundleFactory.zeroBomb(size: 64 << 20)
        let error = #expect(throws: ArchiveError.self) { try extract(bomb) }
        #expect(error == .compressionRatio(limit: 100))
    }

    @Test func manyFilesOnManyThreadsMatchTheirSources() throws {
        var generator = SystemRandomNumberGenerator()
        var files: [String: String] = ["index.html": "<html>"]
        for index in 0..<300 {
            let size = Int.random(in: 0..<40_000, using: &generator)
            let chunk = String((0..<64).map { _ in "0123456789abcdef".randomElement(using: &generator)! })
            files["d\(index % 7)/e\(index % 5)/f\(index).txt"] = String(repeating: chunk, count: size / 64) + chunk.prefix(size % 64)
        }
        let (result, destination) = try extract(try BundleFactory.zip(files))
        #expect(result.files.count == files.count)
        for file in result.files {
            let source = Array(try #require(files[file.path]).utf8)
            #expect(file.size == Int64(source.count))
            #expect(file.sha256 == SHA256Digest.hash(source).hexString)
            #expect(try Data(contentsOf: URL(fileURLWithPath: destination + "/" + file.path)) == Data(source))
        }
    }

    @Test func theEarliestDamagedFileIsReported() throws {
        var entries: [RawZip.Entry] = [.file("index.html")]
        for index in 0..<200 {
            let data = Array(String(repeating: "file \(index) ", count: 500).utf8)
            let damaged = index == 120 || index == 180
            entries.append(RawZip.Entry(name: "f\(index).js", data: data, crcOverride: damaged ? 0xDEADBEEF : nil))
        }
        let error = #expect(throws: ArchiveError.self) { try extract(RawZip(entries).bytes) }
        #expect(error?.description.contains("f120.js") == true)
    }

    @Test func deterministicZipsAreIdentical() throws {
        let first = try BundleFactory.zip(BundleFactory.helloFiles)
        let second = try BundleFactory.zip(BundleFactory.helloFiles)
        #expect(first == second)
    }

    // MARK: Zips that everyday tools make

    @Test func findersMacOSMetadataIsDroppedAndNotCounted() throws {
        // macOS Finder's Compress of a folder App: AppleDouble files under __MACOSX/, .DS_Store inside.
        let zip = RawZip([
            .directory("App/"), .file("App/index.html", "<html>"), .directory("App/js/"), .file("App/js/a.js", "1"), .file("App/.DS_Store", "ds"),
            .directory("__MACOSX/"), .directory("__MACOSX/App/"), .file("__MACOSX/App/._index.html", "apple"), .file("__MACOSX/App/js/._a.js", "apple"),
        ]).bytes
        let (result, _) = try extract(zip, limits: ExtractionLimits(maxEntries: 4))
        #expect(result.bundleDirectory.hasSuffix("/App"))
        #expect(result.files.map(\.path) == ["index.html", "js/a.js"])
        #expect(result.directories == [".", "js"])
        #expect(!FileManager.default.fileExists(atPath: result.bundleDirectory + "/../__MACOSX"))

        // A flat one (Compress of the files themselves).
        let flat = RawZip([.file("index.html", "<html>"), .file("._index.html", "apple"), .directory("__MACOSX/"), .file("__MACOSX/._index.html", "apple"), .file(".DS_Store", "ds")]).bytes
        let (flatResult, destination) = try extract(flat)
        #expect(flatResult.files.map(\.path) == ["index.html"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination) == ["index.html"])
        // Metadata alone is not a bundle; and hostile metadata is still hostile.
        #expect(throws: ArchiveError.self) { try extract(RawZip([.file("__MACOSX/._index.html", "apple")]).bytes) }
        #expect(throws: ArchiveError.unsafePath(entry: "__MACOSX/../../x", reason: "climbs out with ..")) {
            try extract(RawZip([.file("index.html"), .file("__MACOSX/../../x")]).bytes)
        }
    }

    @Test func unflaggedNamesAreCP437UnlessTheyAreValidUTF8() throws {
        // Windows Explorer: OEM code page, no UTF-8 flag. "données/é.txt" in CP437.
        var explorer = RawZip.Entry(name: "", data: Array("é".utf8))
        explorer.rawName = Array("donn".utf8) + [0x82] + Array("es/".utf8) + [0x82] + Array(".txt".utf8)
        explorer.utf8Flag = false
        // Info-ZIP on Linux: UTF-8 bytes, no flag.
        var infoZip = RawZip.Entry(name: "ünïcode/ß.css", data: Array("p {}".utf8))
        infoZip.utf8Flag = false
        let (result, destination) = try extract(RawZip([.file("index.html"), explorer, infoZip]).bytes)
        #expect(result.files.map(\.path) == ["index.html", "données/é.txt", "ünïcode/ß.css"].sorted())
        #expect(FileManager.default.contents(atPath: destination + "/données/é.txt") == Data("é".utf8))

        // A name flagged UTF-8 that is not UTF-8 is broken, not CP437.
        var lying = RawZip.Entry(name: "", data: [])
        lying.rawName = [0x61, 0x82, 0x2E, 0x6A, 0x73]
        let error = #expect(throws: ArchiveError.self) { try extract(RawZip([.file("index.html"), lying]).bytes) }
        #expect(error?.description.contains("not valid UTF-8") == true)
    }

    @Test func windowsBackslashNamesUseBackslashAsTheSeparatorAndStillCannotClimbOut() throws {
        let (result, _) = try extract(RawZip([.file("index.html"), .file("js\\lib\\a.js", "1")]).bytes)
        #expect(result.files.map(\.path) == ["index.html", "js/lib/a.js"])
        #expect(throws: ArchiveError.unsafePath(entry: "../evil.txt", reason: "climbs out with ..")) {
            try extract(RawZip([.file("index.html"), .file("..\\evil.txt")]).bytes)
        }
        // Both separators in one name: a file name with a backslash in it, which the bundle cannot hold.
        #expect(throws: ArchiveError.unsafePath(entry: "js/a\\b.js", reason: "contains a backslash")) {
            try extract(RawZip([.file("index.html"), .file("js/a\\b.js")]).bytes)
        }
    }

    @Test func anEmptyFileCompressedWithLZMAExtractsAndAnUnreadableMethodIsNamed() async throws {
        let directory = try TemporaryDirectory.make().path
        let zip = directory + "/lzma.zip"
        let script = "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_LZMA) as z:\n    z.writestr('index.html', '<html>')\n    z.writestr('empty.txt', '')\n    z.writestr('js/empty.js', '')"
        #expect(await runTool("/usr/bin/python3", ["-c", script, zip]) == 0)
        let (result, destination) = try extract([UInt8](try Data(contentsOf: URL(fileURLWithPath: zip))))
        #expect(result.files.map(\.path) == ["empty.txt", "index.html", "js/empty.js"])
        #expect(result.files.first { $0.path == "empty.txt" }?.size == 0)
        #expect(FileManager.default.contents(atPath: destination + "/index.html") == Data("<html>".utf8))

        var deflate64 = RawZip.Entry.file("app.js", "data")
        deflate64.method = 9
        let error = #expect(throws: ArchiveError.self) { try extract(RawZip([.file("index.html"), deflate64]).bytes) }
        #expect(error == .unsupportedCompression(entry: "app.js", method: "Deflate64 (method 9)"))
        #expect(error?.description.contains("damaged") == false)
    }

    @Test func overlappingEntriesAreRefused() throws {
        // Many central-directory entries pointing at one local header (the overlapping-file zip bomb).
        var bomb = RawZip([.file("index.html", "<html>"), .file("kernel.js", String(repeating: "a", count: 1000))])
        bomb.aliases = (0..<5).map { (name: "copy\($0).js", entry: 1) }
        let error = #expect(throws: ArchiveError.self) { try extract(bomb.bytes) }
        guard case .overlappingEntries? = error else {
            Issue.record("expected overlapping entries, got \(String(describing: error))")
            return
        }
    }

    @Test func aLocalHeaderThatNamesAnotherFileIsRefused() throws {
        var entry = RawZip.Entry.file("app.js", "1")
        entry.localName = Array("evil.js".utf8)
        let error = #expect(throws: ArchiveError.self) { try extract(RawZip([.file("index.html"), entry]).bytes) }
        #expect(error == .inconsistentEntry(entry: "app.js", reason: "has a local header that names it 'evil.js'"))
    }

    @Test func endRecordsWithOffsetsPastTheEndAreRefusedNotTrapped() throws {
        let zip = RawZip([.file("index.html", "<html>")]).bytes
        let end = zip.count - 22
        func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
        func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8((value >> (8 * UInt64($0))) & 0xFF) } }
        for offset: UInt64 in [.max, .max - 40, UInt64(zip.count) * 2] {
            // A zip64 locator before the end record, pointing far away.
            let hostile = Array(zip[..<end]) + le32(0x0706_4B50) + le32(0) + le64(offset) + le32(1) + Array(zip[end...])
            #expect(throws: ArchiveError.self) { try extract(hostile) }
        }
        var huge = ExtractionLimits()
        huge.maxEntries = .max
        #expect(try extract(zip, limits: huge).0.files.map(\.path) == ["index.html"])
    }
}

/// The extraction plan takes each entry's type from the central directory, and libarchive reads only
/// the files' data (each header it reads costs a `mktime()`): for every archive of the zip corpus and
/// for zips made here, the types are the ones libarchive's reader of the whole archive gives, entry
/// for entry, as far as it reads them.
@Suite struct EntryTypeTests {
    static let corpus = repositoryRoot.appendingPathComponent("Tests/ZipCorpus").path
    static let archives: [String] = ((FileManager.default.enumerator(atPath: corpus)?.allObjects as? [String]) ?? [])
        .filter { $0.hasSuffix(".zip") || $0.hasSuffix(".zipx") || $0.hasSuffix(".jar") || !$0.contains(".") }
        .filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: corpus + "/" + path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        .sorted()

    /// The entries libarchive's seekable reader gives, `(name, type)`, until the first it cannot read.
    static func libarchiveTypes(_ path: String) -> [(name: [UInt8], type: UInt32)] {
        let handle = archive_read_new()
        defer { archive_read_free(handle) }
        archive_read_support_format_zip_seekable(handle)
        guard archive_read_open_filename(handle, path, 4096) == CMiniAppArchive_OK() else { return [] }
        var found: [(name: [UInt8], type: UInt32)] = []
        var entry: OpaquePointer?
        while archive_read_next_header(handle, &entry) == CMiniAppArchive_OK(), let entry, let name = archive_entry_pathname(entry) {
            found.append((ZipDirectory.comparable(name), archive_entry_filetype(entry) & CMiniAppArchive_AE_IFMT()))
        }
        return found
    }

    /// How many entries of the zip at `path` were compared, and every difference.
    static func compare(_ path: String, label: String) -> (compared: Int, differences: [String]) {
        guard let directory = try? ZipDirectory.read(path, maxEntries: 100_000) else { return (0, []) }
        let theirs = libarchiveTypes(path)
        var compared = 0
        var differences: [String] = []
        for (ours, their) in zip(directory.entries, theirs) {
            guard ours.archiveName == their.name else {
                differences.append("\(label): libarchive's entries are not the central directory's at \(ours.name)")
                break
            }
            if ours.fileType != their.type {
                differences.append("\(label): \(ours.name) is \(String(ours.fileType, radix: 8)) here, \(String(their.type, radix: 8)) for libarchive")
            }
            compared += 1
        }
        return (compared, differences)
    }

    @Test func everyCorpusArchiveGetsLibarchivesTypes() async {
        let archives = Self.archives
        #expect(archives.count > 100)
        // Reading a hundred archives is blocking work: off the pool every test shares.
        let results = await offPool { archives.map { Self.compare(Self.corpus + "/" + $0, label: $0) } }
        #expect(results.flatMap(\.differences) == [])
        #expect(results.map(\.compared).reduce(0, +) > 500, "the corpus's entries were compared")
    }

    @Test func unixAndDOSAttributesAndTrailingSlashesGetLibarchivesTypes() async throws {
        // Python's zipfile writes the attributes it is given: a Unix mode (made by 3), DOS attributes
        // (made by 0), and names with and without a trailing slash, against those attributes.
        let directory = try TemporaryDirectory.make().path
        let zip = directory + "/types.zip"
        let script = """
            import sys, zipfile
            def add(z, name, system, attributes, data=b"x"):
                info = zipfile.ZipInfo(name)
                info.create_system = system
                info.external_attr = attributes
                z.writestr(info, data)
            with zipfile.ZipFile(sys.argv[1], "w") as z:
                add(z, "index.html", 3, (0o100644 << 16))
                add(z, "unix-dir/", 3, (0o040755 << 16), b"")
                add(z, "unix-dir-no-slash", 3, (0o040755 << 16), b"")
                add(z, "link", 3, (0o120777 << 16), b"index.html")
                add(z, "link-with-slash/", 3, (0o120777 << 16), b"")
                add(z, "fifo", 3, (0o010644 << 16), b"")
                add(z, "char-device", 3, (0o020644 << 16), b"")
                add(z, "block-device", 3, (0o060644 << 16), b"")
                add(z, "socket", 3, (0o140644 << 16), b"")
                add(z, "dir-and-link", 3, (0o160777 << 16), b"")
                add(z, "no-type", 3, (0o644 << 16))
                add(z, "dos-file", 0, 0x20)
                add(z, "dos-dir", 0, 0x10, b"")
                add(z, "dos-dir-slash/", 0, 0x10, b"")
                add(z, "dos-readonly", 0, 0x01)
                add(z, "ntfs", 11, 0x10)
                add(z, "mac", 7, 0)
                add(z, "file-with-slash/", 3, (0o100644 << 16), b"")
            """
        #expect(await runTool("/usr/bin/python3", ["-c", script, zip]) == 0)
        let (compared, differences) = Self.compare(zip, label: "types.zip")
        #expect(differences == [])
        #expect(compared == 18)
    }
}
