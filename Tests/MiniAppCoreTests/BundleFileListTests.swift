import Foundation
import Testing

@testable import MiniAppCore

struct BundleFileListTests {
    let sample = BundleFileList(
        files: [
            BundleFile(path: "index.html", size: 120, sha256: String(repeating: "a", count: 64), changedAt: FileTimestamp(seconds: 1_795_349_861, nanoseconds: 852_861_666)),
            BundleFile(path: "a dir/with spaces.js", size: 0, sha256: String(repeating: "0", count: 64), changedAt: FileTimestamp(seconds: 0, nanoseconds: 0)),
        ],
        directories: [
            BundleDirectory(path: ".", changedAt: FileTimestamp(seconds: 5, nanoseconds: 999_999_999)),
            BundleDirectory(path: "a dir", changedAt: FileTimestamp(seconds: 6, nanoseconds: 1)),
        ]
    )

    @Test func roundTrips() {
        #expect(BundleFileList(decoding: sample.encoded()) == sample)
        #expect(BundleFileList(decoding: Data("miniapp-files 1\n".utf8)) == BundleFileList(files: [], directories: []))
    }

    @Test(arguments: [
        "", "miniapp-files 2\n", "miniapp-files 1\nx 1 2 a\n",
        "miniapp-files 1\nd 1 2\n", "miniapp-files 1\nd 1 x2 a\n", "miniapp-files 1\nd -1 2 a\n",
        "miniapp-files 1\nf 1 2 3 abc index.html\n",
        "miniapp-files 1\nf 1 2 3 \(String(repeating: "a", count: 64))\n",
        "miniapp-files 1\nf 1 2 \(String(repeating: "a", count: 64)) index.html\n",
        "miniapp-files 1\nf 1234567890123456789 2 3 \(String(repeating: "a", count: 64)) index.html\n",
        "miniapp-files 1\ndd 1 2 a\n",
        "miniapp-files 1\nd 1 2 a\u{0}b\n", "miniapp-files 1\nd 1 2 a\n\u{0}", "\u{0}miniapp-files 1\n",
    ])
    func refusesMalformedLists(_ text: String) {
        #expect(BundleFileList(decoding: Data(text.utf8)) == nil)
    }

    @Test func theIndexLocatesEachEntryInTheBytesItLeavesAsRead() throws {
        let bytes = Array(sample.encoded())
        let index = try #require(FileListIndex(bytes))
        #expect(index.directories.map(index.path) == [".", "a dir"])
        #expect(index.files.map(index.file) == sample.files)
        // The bytes stay as read (the record's digest is checked on them), each path ending its line.
        #expect(index.bytes == bytes)
        for entry in index.directories + index.files {
            #expect(index.bytes[entry.path.upperBound] == UInt8(ascii: "\n"))
        }
        #expect(FileListIndex(Array("miniapp-files 1".utf8))?.files.isEmpty == true)
        // Empty lines are skipped; the last line needs no line end; a path keeps its spaces.
        let loose = try #require(FileListIndex(Array("miniapp-files 1\n\nd 1 2 a b\n\n\nf 3 4 5 \(String(repeating: "c", count: 64)) a b/c  d".utf8)))
        #expect(loose.directories.map(loose.path) == ["a b"])
        #expect(loose.files.map(loose.file) == [BundleFile(path: "a b/c  d", size: 3, sha256: String(repeating: "c", count: 64), changedAt: FileTimestamp(seconds: 4, nanoseconds: 5))])
    }
}
