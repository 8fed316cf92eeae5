import Foundation
import Logging
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
        let sink = try await DownloadSink(path: path, executor: testExecutor)
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
        let sink = try await DownloadSink(path: "/dev/full", executor: testExecutor)
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

struct OwnThreadBoundTests {
    /// More downloads at once than the executor may run threads of its own (each holds one for its
    /// sink's writer, and one to read a connection of its own): those past the bound wait for a thread,
    /// and every download ends with its bytes.
    @Test(arguments: [PlatformConnections.pooled, .perRequest])
    func moreDownloadsAtOnceThanOwnThreadsAllFinish(connections: PlatformConnections) async throws {
        let executor = BlockingExecutor(poolThreads: 2, maxOwnThreads: 2)
        let zip = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let folder = try TemporaryDirectory.make().path
        let transport = HTTPTransport(network: fastNetwork, httpClient: nil, executor: executor, connections: connections)
        let downloader = BundleDownloader(maxBytes: 1 << 20, transport: transport, ownsTransport: true, logger: Logger(label: "test"))
        // Each answer waits a little, so that the downloads overlap and need more sinks than the bound.
        let files = try await withTestServer({ _ in StubResponse(body: zip, delay: .milliseconds(50)) }) { server in
            try await withThrowingTaskGroup(of: DownloadedFile.self) { group in
                for index in 0..<8 {
                    let url = server.baseURL.appendingPathComponent("app-\(index).zip")
                    group.addTask { try await downloader.download(url, to: folder + "/\(index).zip") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        await downloader.shutdown()
        await executor.shutdown()
        #expect(files.count == 8)
        #expect(files.allSatisfy { $0.size == Int64(zip.count) && $0.sha256 == SHA256Digest.hash(zip) })
    }
}
