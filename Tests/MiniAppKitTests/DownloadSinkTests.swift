import Foundation
import MiniAppTestSupport
import NIOCore
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

struct DownloadSinkTests {
    /// Hands `chunks` to `sink` as a download does: awaiting each append, or (a connection of its own)
    /// from a thread that blocks while the writer is behind.
    func hand(_ chunks: [ByteBuffer], to sink: DownloadSink, blocking: Bool) async throws {
        guard blocking else {
            for chunk in chunks { try await sink.append(chunk) }
            return
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread.detachNewThread { continuation.resume(with: Result { for chunk in chunks { try sink.appendNow(chunk) } }) }
        }
    }

    @Test(arguments: [false, true])
    func writesAndHashesInOrderAcrossARestart(blocking: Bool) async throws {
        let path = try TemporaryDirectory.make().path + "/bundle.zip"
        let sink = try DownloadSink(path: path, executor: testExecutor)
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
        try await hand((0..<40).map(chunk), to: sink, blocking: blocking)
        sink.restart()
        #expect(sink.received == 0)
        var expected: [UInt8] = []
        let indexes = 100..<(100 + 3 * DownloadSink.maxPendingBytes / 65_536)
        for index in indexes { expected.append(contentsOf: bytes(index)) }
        try await hand(indexes.map(chunk), to: sink, blocking: blocking)
        let file = try await sink.finish()
        #expect(file.size == Int64(expected.count))
        #expect(file.sha256 == SHA256Digest.hash(expected))
        #expect(FileReading.contents(path) == expected)
    }

    @Test(arguments: [false, true])
    func aFailedWriteIsReportedAsADiskError(blocking: Bool) async throws {
        let sink = try DownloadSink(path: "/dev/full", executor: testExecutor)
        let chunk = ByteBufferAllocator().buffer(repeating: 7, count: 1 << 20)
        var failure: DownloadError?
        do {
            try await hand(Array(repeating: chunk, count: 64), to: sink, blocking: blocking)
            _ = try await sink.finish()
        } catch {
            failure = error as? DownloadError
            await sink.close()
        }
        guard case .io(path: "/dev/full", reason: _, diskFull: true)? = failure else {
            Issue.record("expected a disk-full error, got \(String(describing: failure))")
            return
        }
    }
}
