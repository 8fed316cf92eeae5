import MiniAppTestSupport
import NIOCore
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

struct DownloadSinkTests {
    @Test func writesAndHashesInOrderAcrossARestart() async throws {
        let path = try TemporaryDirectory.make().path + "/bundle.zip"
        let sink = try DownloadSink(path: path)
        let allocator = ByteBufferAllocator()
        // Chunk n holds bytes (i + 31 n) mod 256: slices of one pattern, copied whole (a debug build
        // makes byte-by-byte loops slow, and they would run on the pool every test shares).
        let pattern = (0..<(65_536 + 256)).map { UInt8(truncatingIfNeeded: $0) }
        func bytes(_ index: Int) -> ArraySlice<UInt8> {
            let start = (index &* 31) & 0xFF
            return pattern[start..<(start + 65_536)]
        }
        func chunk(_ index: Int) -> ByteBuffer {
            allocator.buffer(bytes: bytes(index))
        }
        // More than the writer may hold back, so that appending waits for it at least once.
        for index in 0..<40 { try await sink.append(chunk(index)) }
        sink.restart()
        #expect(sink.received == 0)
        var expected: [UInt8] = []
        for index in 100..<(100 + 3 * DownloadSink.maxPendingBytes / 65_536) {
            expected.append(contentsOf: bytes(index))
            try await sink.append(chunk(index))
        }
        let file = try await sink.finish()
        #expect(file.size == Int64(expected.count))
        #expect(file.sha256 == SHA256Digest.hash(expected))
        #expect(FileReading.contents(path) == expected)
    }

    @Test func aFailedWriteIsReportedAsADiskError() async throws {
        let sink = try DownloadSink(path: "/dev/full")
        let chunk = ByteBufferAllocator().buffer(repeating: 7, count: 1 << 20)
        var failure: DownloadError?
        do {
            for _ in 0..<64 { try await sink.append(chunk) }
            _ = try await sink.finish()
        } catch {
            failure = error
            await sink.close()
        }
        guard case .io(path: "/dev/full", reason: _, diskFull: true)? = failure else {
            Issue.record("expected a disk-full error, got \(String(describing: failure))")
            return
        }
    }
}
