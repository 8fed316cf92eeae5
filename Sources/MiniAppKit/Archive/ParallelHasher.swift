import Foundation

/// Hashes the files an extraction writes on a second thread, so that SHA-256 runs beside inflating and
/// writing instead of after them. Chunks travel in a small pool of buffers: the extracting thread takes
/// a free one, reads and writes through it, then submits it; the hashing thread hashes it and frees it.
final class ParallelHasher: @unchecked Sendable {
    static let bufferSize = 256 * 1024

    private let condition = NSCondition()
    private let buffers: [UnsafeMutableRawBufferPointer]
    private var free: [UnsafeMutableRawBufferPointer]
    private var pending: [(file: Int, buffer: UnsafeMutableRawBufferPointer?, count: Int)] = []
    private var digests: [Int: String] = [:]
    private var closed = false
    private var stopped = false

    /// Starts the hashing thread with `bufferCount` buffers in the pool.
    init(bufferCount: Int = 8) {
        buffers = (0..<bufferCount).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 16) }
        free = buffers
        let thread = Thread { [self] in work() }
        thread.name = "miniapp.hash"
        thread.start()
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }

    /// A free buffer to read the next chunk into, waiting for the hashing thread to free one.
    func takeBuffer() -> UnsafeMutableRawBufferPointer {
        condition.lock()
        defer { condition.unlock() }
        while free.isEmpty { condition.wait() }
        return free.removeLast()
    }

    /// Returns a buffer that holds nothing to hash.
    func giveBack(_ buffer: UnsafeMutableRawBufferPointer) {
        condition.lock()
        free.append(buffer)
        condition.broadcast()
        condition.unlock()
    }

    /// Hands the first `count` bytes of `buffer`, the next chunk of file number `file`, to the hashing thread.
    func submit(file: Int, buffer: UnsafeMutableRawBufferPointer, count: Int) {
        enqueue((file, buffer, count))
    }

    /// Marks the end of file number `file`.
    func endFile(_ file: Int) {
        enqueue((file, nil, 0))
    }

    /// Waits until everything submitted is hashed, stops the thread, and returns the lowercase hex
    /// digests by file number. Call it exactly once.
    func finish() -> [Int: String] {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        condition.broadcast()
        while !stopped { condition.wait() }
        return digests
    }

    private func enqueue(_ item: (file: Int, buffer: UnsafeMutableRawBufferPointer?, count: Int)) {
        condition.lock()
        pending.append(item)
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        var current: [Int: SHA256Digest] = [:]
        while true {
            condition.lock()
            while pending.isEmpty && !closed { condition.wait() }
            if pending.isEmpty {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let item = pending.removeFirst()
            condition.unlock()
            let digest = current[item.file] ?? SHA256Digest()
            if let buffer = item.buffer {
                current[item.file] = digest
                digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<item.count]))
                giveBack(buffer)
            } else {
                current[item.file] = nil
                let hex = digest.finalize().hexString
                condition.lock()
                digests[item.file] = hex
                condition.unlock()
            }
        }
    }
}
