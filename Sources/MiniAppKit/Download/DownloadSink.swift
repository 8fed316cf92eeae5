import Foundation
import NIOCore
import MiniAppCore

/// The file a download writes, and the digest of what it holds.
///
/// Chunks are hashed and written on a thread of the sink's own, so that receiving the next chunk
/// overlaps with hashing and writing the last one: done on the receiving task, that work (about 17 ms
/// for a 25 MB zip) added to the download's time. Every sink must end with ``finish()`` or ``close()``.
final class DownloadSink: @unchecked Sendable {
    /// Bytes handed over and not yet written above which ``append(_:)`` waits for the writer.
    static let maxPendingBytes = 4 << 20

    let path: String
    /// The bytes handed over since the last restart: the offset the next chunk goes to. Only the
    /// receiving side touches it: the task, or the thread it waits for that reads a connection of its own.
    private(set) var received: Int64 = 0

    private enum Operation {
        case write(ByteBuffer)
        case restart
    }

    // Shared with the writer thread, under `condition`.
    private let condition = NSCondition()
    private var operations: [Operation] = []
    private var pendingBytes = 0
    private var ending = false
    private var ended = false
    private var failure: Int32 = 0
    private var spaceWaiter: CheckedContinuation<Void, Never>?
    private var endWaiter: CheckedContinuation<Void, Never>?

    // The writer's own; read by the receiving task only once the writer has ended.
    private let descriptor: Int32
    private var digest = SHA256Digest()
    private var written: Int64 = 0

    /// A sink writing a new file at `path`, on a thread of its own from `executor`: when the executor
    /// runs as many as it may, it waits for one of them to end.
    init(path: String, executor: BlockingExecutor) async throws(DownloadError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BundleDownloader.ioError(path) }
        guard await executor.startThreadWhenFree(name: "miniapp.sink", { self.write() }) else {
            Glibc.close(descriptor)
            throw BundleDownloader.ioError(path, errorNumber: EAGAIN)
        }
    }

    /// Hands `chunk` to the writer, waiting while too much is still unwritten; throws when an earlier
    /// write failed.
    func append(_ chunk: ByteBuffer) async throws(DownloadError) {
        received += Int64(chunk.readableBytes)
        let (full, error) = condition.withLock {
            operations.append(.write(chunk))
            pendingBytes += chunk.readableBytes
            condition.signal()
            return (pendingBytes > Self.maxPendingBytes, failure)
        }
        if error != 0 { throw BundleDownloader.ioError(path, errorNumber: error) }
        guard full else { return }
        await withCheckedContinuation { continuation in
            let resumeNow = condition.withLock {
                guard pendingBytes > Self.maxPendingBytes / 2, failure == 0 else { return true }
                spaceWaiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        let later = condition.withLock { failure }
        if later != 0 { throw BundleDownloader.ioError(path, errorNumber: later) }
    }

    /// ``append(_:)`` for a thread that may block: it waits on the writer while too much is unwritten.
    /// Only for the thread a download on a connection of its own runs on (``BundleDownloader``), never
    /// on Swift's pool.
    func appendNow(_ chunk: ByteBuffer) throws(DownloadError) {
        received += Int64(chunk.readableBytes)
        let error = condition.withLock {
            operations.append(.write(chunk))
            pendingBytes += chunk.readableBytes
            condition.signal()
            while pendingBytes > Self.maxPendingBytes && failure == 0 && !ended { condition.wait() }
            return failure
        }
        if error != 0 { throw BundleDownloader.ioError(path, errorNumber: error) }
    }

    /// Drops what was received, to start over from the first byte.
    func restart() {
        received = 0
        condition.withLock {
            operations.append(.restart)
            condition.signal()
        }
    }

    /// Waits for the writer to write everything and end, and closes the file; returns the digest and
    /// size of what it holds, or throws the first write failure.
    func finish() async throws(DownloadError) -> DownloadedFile {
        await close()
        if failure != 0 { throw BundleDownloader.ioError(path, errorNumber: failure) }
        return DownloadedFile(sha256: digest.finalize(), size: written)
    }

    /// Waits for the writer to end, and closes the file.
    func close() async {
        await withCheckedContinuation { continuation in
            let resumeNow = condition.withLock {
                ending = true
                condition.signal()
                guard !ended else { return true }
                endWaiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        Glibc.close(descriptor)
    }

    /// The writer thread: hashes and writes operations in order until the sink ends.
    private func write() {
        var batch: [Operation] = []
        while true {
            let stop: Bool = condition.withLock {
                while operations.isEmpty && !ending { condition.wait() }
                swap(&batch, &operations)
                return batch.isEmpty
            }
            if stop { break }
            var done = 0
            var error: Int32 = condition.withLock { failure }
            for operation in batch {
                switch operation {
                case .write(let chunk):
                    done += chunk.readableBytes
                    if error == 0 { error = perform(chunk) }
                case .restart:
                    if error == 0 { error = restartFile() }
                }
            }
            batch.removeAll(keepingCapacity: true)
            let waiter: CheckedContinuation<Void, Never>? = condition.withLock {
                pendingBytes -= done
                if failure == 0 { failure = error }
                // An ``appendNow(_:)`` waiting for room.
                condition.broadcast()
                guard let waiter = spaceWaiter, pendingBytes <= Self.maxPendingBytes / 2 || failure != 0 else { return nil }
                spaceWaiter = nil
                return waiter
            }
            waiter?.resume()
        }
        let waiters: [CheckedContinuation<Void, Never>] = condition.withLock {
            ended = true
            condition.broadcast()
            defer { (spaceWaiter, endWaiter) = (nil, nil) }
            return [spaceWaiter, endWaiter].compactMap { $0 }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Hashes and writes one chunk at the end of what was written; the `errno` of a failed write, else 0.
    private func perform(_ chunk: ByteBuffer) -> Int32 {
        chunk.withUnsafeReadableBytes { bytes in
            digest.update(bytes)
            var done = 0
            while done < bytes.count {
                let result = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(written) + off_t(done))
                if result < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += result
            }
            written += Int64(done)
            return 0
        }
    }

    private func restartFile() -> Int32 {
        guard ftruncate(descriptor, 0) == 0 else { return errno }
        digest = SHA256Digest()
        written = 0
        return 0
    }
}
