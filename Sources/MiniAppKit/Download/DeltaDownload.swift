import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import MiniAppCore

/// How a delta download ended.
enum DeltaOutcome: Sendable {
    /// The zip was assembled from the kept zip and the ranges fetched; its digest is still to be checked
    /// against the signature. `copied` maps the local-header offset of each entry whose bytes are the
    /// kept zip's (copied from it, or fetched with the zip's end and found equal) to where they start there.
    /// `predicted` says whether local headers were rebuilt from the central directory rather than fetched:
    /// a signature that fails may then be a wrong guess, and a delta that fetches them can still do.
    case assembled(DownloadedFile, fetchedBytes: Int64, reusedBytes: Int64, copied: [UInt64: UInt64], predicted: Bool)
    /// The server sent the whole zip (it ignored the ranges); that answer was kept as a full download.
    case full(DownloadedFile, fetchedBytes: Int64)
    /// The zip changed on the server between two requests (another ETag or size): the caller starts over
    /// from the file manifest.
    case changed(fetchedBytes: Int64)
    /// Something else made the delta doubtful (no range support, a malformed answer, a kept zip that
    /// cannot be read): the caller downloads the whole zip.
    case unusable(reason: String, fetchedBytes: Int64)
}

/// What the downloader has learnt about servers' multi-range answers, by origin: kept in memory and,
/// with a folder, once an install succeeds, in one small file per origin (`<cache>/ranges/<sha256 of
/// the origin>`, `multi` or `single`), so that the next process does not ask a single-range server
/// for several ranges again.
final class RangeSupport: Sendable {
    private let known = NIOLockedValueBox<[String: Bool]>([:])
    private let unsaved = NIOLockedValueBox<Set<String>>([])
    private let directory: String?
    private let executor: BlockingExecutor?

    init(directory: String? = nil, executor: BlockingExecutor? = nil) {
        self.directory = directory
        self.executor = executor
    }

    /// Whether the origin of `url` answers several ranges in one request; `nil` until learnt.
    func multipart(_ url: String) async -> Bool? {
        let origin = RequestPolicy.origin(url)
        if let known = known.withLockedValue({ $0[origin] }) { return known }
        guard let path = path(origin), let executor else { return nil }
        let stored = try? await executor.run { () -> Bool? in
            switch FileReading.contents(path, followingLinks: false).map({ String(decoding: $0, as: UTF8.self) }) {
            case "multi"?: return true
            case "single"?: return false
            default: return nil
            }
        }
        guard let stored = stored ?? nil else { return nil }
        known.withLockedValue { $0[origin] = stored }
        return stored
    }

    func learn(_ url: String, multipart: Bool) {
        let origin = RequestPolicy.origin(url)
        let changed = known.withLockedValue { known in
            defer { known[origin] = multipart }
            return known[origin] != multipart
        }
        if changed { unsaved.withLockedValue { _ = $0.insert(origin) } }
    }

    /// Writes what was learnt since the last save: called once an install committed, so that a failed
    /// one leaves the cache as it was.
    func save() async {
        let origins = unsaved.withLockedValue { origins in
            defer { origins = [] }
            return origins
        }
        guard let directory, let executor, !origins.isEmpty else { return }
        let answers = known.withLockedValue { known in origins.compactMap { origin in known[origin].map { (origin, $0) } } }
        let paths = answers.compactMap { answer in path(answer.0).map { ($0, answer.1) } }
        // Only into a real folder (a link planted in its place is not followed); each file written
        // whole, then renamed: readers see the old answer or the new one.
        try? await executor.run {
            mkdir(directory, 0o755)
            guard BundleCache.isRealDirectory(directory) else { return }
            for (path, multipart) in paths {
                let temporary = path + ".\(getpid()).tmp"
                let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { continue }
                let text = Array((multipart ? "multi" : "single").utf8)
                let written = write(descriptor, text, text.count)
                close(descriptor)
                if written != text.count || rename(temporary, path) != 0 { unlink(temporary) }
            }
        }
    }

    private func path(_ origin: String) -> String? {
        directory.map { $0 + "/" + SHA256Digest.hash(Array(origin.utf8)).hexString }
    }
}

extension BundleDownloader {
    /// The fewest bytes of the zip's end the first request asks for (it asks for the kept zip's central
    /// directory and an eighth more): the end records and a small central directory (a bigger one than
    /// asked for takes a second request). Every byte of it that is entries' data is fetched, reused or not.
    static let tailBytes: UInt64 = 16 << 10
    /// The most ranges one request asks for (servers refuse more than some number, 200 for Apache's
    /// `MaxRanges` and `miniapp serve`), and the longest `Range` header (nginx takes header lines of 8 KB).
    static let maxRangesPerRequest = 200
    static let maxRangeHeaderLength = 6000

    /// Downloads the zip at `url` into a new file at `path`, copying from the kept zip at `base` every
    /// entry whose bytes it already holds and fetching the rest with ranged requests. The new file is
    /// written in order and hashed as it is written; the caller checks its digest against the signature.
    /// With `predict`, the local headers and data descriptors of entries whose compressed data is copied
    /// are rebuilt from the central directory where their lengths allow and the new zip's own local
    /// headers within its end (fetched anyway) say what the directory does, as most producers write
    /// them, instead of fetched: a rebuild then fetches little more than the zip's end. A new zip
    /// compressed otherwise than the kept one lends only its stored data, and one that reuses little
    /// is fetched in one range (``DeltaPlan/make(new:old:end:mergeGap:style:)``): a change of producer
    /// costs about the zip, never ranges and then the whole zip.
    func deltaDownload(
        _ url: URL, to path: String, base: String, maxEntries: Int, predict: Bool = true, progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> DeltaOutcome {
        let run = DeltaRun(downloader: self, url: url.absoluteString, maxEntries: maxEntries, progress: progress)
        do {
            return try await run.perform(path: path, base: base, predict: predict)
        } catch let stop as DeltaRun.Stop {
            await run.closeSink()
            switch stop {
            case .changed: return .changed(fetchedBytes: run.fetched)
            case .unusable(let reason): return .unusable(reason: reason, fetchedBytes: run.fetched)
            }
        } catch {
            await run.closeSink()
            throw error
        }
    }
}

/// One delta download's state: the requests it made, the kept zip, and the new zip's file.
private final class DeltaRun: @unchecked Sendable {
    enum Stop: Error {
        case changed
        case unusable(String)
    }

    let downloader: BundleDownloader
    var url: String
    let maxEntries: Int
    let progress: (@Sendable (DownloadProgress) -> Void)?
    let deadline: ContinuousClock.Instant
    /// Response body bytes received, over every request.
    var fetched: Int64 = 0
    var validator: String?
    var size: UInt64 = 0
    var sink: DownloadSink?
    /// The kept zip, open for copying.
    var baseDescriptor: Int32 = -1
    var plan = DeltaPlan(pieces: [])
    /// How far the new file is written.
    var cursor: UInt64 = 0
    /// The piece holding `cursor`.
    var pieceIndex = 0
    /// Bytes of the kept zip read at once from where a copy started: the copies that follow (the next
    /// entries' data, between fetched headers) mostly come from them, not from a read each.
    var readAhead: (start: UInt64, bytes: ByteBuffer)?
    static let readAheadBytes = 1 << 20
    var tailStart: UInt64 = 0
    /// The entries whose compressed data the plan copies from an entry of the kept zip with other headers,
    /// by the new zip's local-header offset.
    var dataCopies: [UInt64: DataCopy] = [:]
    /// Their local-header offsets in order, and the next one whose first 30 bytes are still to come.
    var watched: [UInt64] = []
    var watchIndex = 0
    /// The first bytes of those local headers as they were fetched.
    var headers: [UInt64: [UInt8]] = [:]

    /// An entry of the new zip whose compressed data comes from an entry of the kept zip.
    struct DataCopy {
        /// The new entry's span and its data's size.
        var span: ZipLayout.Span
        /// The kept entry's span, and where its data starts.
        var kept: ZipLayout.Span
        var keptData: UInt64
        /// The bytes copied, in the new zip.
        var copied: Range<UInt64>
    }

    init(downloader: BundleDownloader, url: String, maxEntries: Int, progress: (@Sendable (DownloadProgress) -> Void)?) {
        self.downloader = downloader
        self.url = url
        self.maxEntries = maxEntries
        self.progress = progress
        self.deadline = downloader.policy.deadline()
    }

    deinit {
        if baseDescriptor >= 0 { close(baseDescriptor) }
    }

    func closeSink() async {
        await sink?.close()
        sink = nil
    }

    func perform(path: String, base: String, predict: Bool) async throws -> DeltaOutcome {
        let executor = downloader.executor
        let maxEntries = self.maxEntries
        guard let (old, descriptor) = try? await executor.run({ (try ZipLayout.read(base, maxEntries: maxEntries), open(base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) }) else {
            throw Stop.unusable("the kept zip cannot be read")
        }
        baseDescriptor = descriptor
        guard baseDescriptor >= 0 else { throw Stop.unusable("the kept zip cannot be opened") }

        // 1. The end of the new zip: its size, its validator and its central directory, which is
        // likely about as big as the kept zip's (an eighth more, and some, makes one request enough).
        let keptEnd = old.size - old.directoryStart
        let guess = max(BundleDownloader.tailBytes, keptEnd + keptEnd / 8 + 4096)
        var response = try await request(range: "bytes=-\(guess)")
        guard response.status == 206 else {
            if response.status == 200 { return try await keepWhole(response, path: path) }
            throw Stop.unusable("the server answered \(response.status) to a range request")
        }
        // The server answers a range. What it does with several, when not learnt yet, is asked meanwhile
        // with a HEAD: no byte of a body, where a GET would get the whole zip from a server that answers
        // several ranges with it (object stores, many CDNs, nginx with `max_ranges 1`).
        let probeURL = url
        async let probed = probeMultipart(probeURL)
        guard let tailRange = Self.contentRange(response.headers) else { throw Stop.unusable("the server's answer has no Content-Range") }
        size = tailRange.total
        guard size <= UInt64(downloader.maxBytes) else { throw DownloadError.tooLarge(url: url, limitBytes: downloader.maxBytes) }
        validator = response.headers.first(name: "ETag")
        var tail = try await collect(response, expected: tailRange.range)
        guard tailRange.range.upperBound == size else { throw Stop.unusable("the server sent another part of the zip than its end") }
        var new: ZipLayout
        let tailSource = ZipTail(bytes: tail, size: size)
        do {
            new = try ZipDirectory.layout(of: tailSource, maxEntries: maxEntries)
        } catch {
            guard let missing = tailSource.missingFrom else { throw Stop.unusable("the new zip's central directory cannot be read (\(error.description))") }
            // A central directory bigger than the first request: one more for the rest of it.
            let start = tailRange.range.lowerBound
            response = try await request(range: "bytes=\(missing)-\(start - 1)")
            guard response.status == 206, let more = Self.contentRange(response.headers), more.range == missing..<start else {
                throw Stop.unusable("the server did not send the central directory")
            }
            try checkSame(response.headers, total: more.total)
            tail = try await collect(response, expected: more.range) + tail
            do {
                new = try ZipDirectory.layout(of: ZipTail(bytes: tail, size: size), maxEntries: maxEntries)
            } catch {
                throw Stop.unusable("the new zip's central directory cannot be read (\(error.description))")
            }
        }
        tailStart = size - UInt64(tail.count)
        // Local headers are rebuilt only as the new zip's own, those of the entries in its end, show
        // them written: the kept zip's producer need not be the new one's.
        new.learnLocalHeaders(in: ZipTail(bytes: tail, size: size), from: tailStart)
        plan = DeltaPlan.make(new: new, old: old, end: tailStart, style: predict ? new.localHeaderStyle : nil)
        let newSpans = Dictionary(new.spans.map { ($0.offset, $0) }, uniquingKeysWith: { first, _ in first })
        let oldSpans = Dictionary(old.spans.map { ($0.offset, $0) }, uniquingKeysWith: { first, _ in first })
        let sources = old.dataSources
        for piece in plan.pieces {
            guard let header = piece.header, let source = piece.source, let span = newSpans[header],
                  let kept = sources[span.dataKey].flatMap({ oldSpans[$0.header] }) else { continue }
            dataCopies[header] = DataCopy(span: span, kept: kept, keptData: source, copied: piece.offset..<piece.end)
        }
        watched = dataCopies.keys.sorted()
        let ranges = plan.fetchRanges
        downloader.logger.debug("delta plan", metadata: [
            "url": "\(url)", "reused": "\(plan.reusedBytes)", "ranges": "\(ranges.count)",
            "fetch": "\(ranges.reduce(0) { $0 + $1.count })", "size": "\(size)", "predicted": "\(plan.predicts)",
        ])
        sink = try await DownloadSink(path: path, executor: downloader.executor)

        // 2. The ranges that changed, copying what did not in between, in order.
        if ranges.count > 1, await downloader.rangeSupport.multipart(url) == nil, await probed == false {
            downloader.rangeSupport.learn(url, multipart: false)
        }
        var next = 0
        while next < ranges.count {
            let multipart = await downloader.rangeSupport.multipart(url)
            if multipart == false, ranges.count - next > 1 {
                try await fetchSingly(ranges, from: next)
                break
            }
            var specs = ["\(ranges[next].lowerBound)-\(ranges[next].upperBound - 1)"]
            var length = 6 + specs[0].utf8.count
            while multipart != false, specs.count < BundleDownloader.maxRangesPerRequest, next + specs.count < ranges.count {
                let range = ranges[next + specs.count]
                let spec = "\(range.lowerBound)-\(range.upperBound - 1)"
                guard length + 1 + spec.utf8.count <= BundleDownloader.maxRangeHeaderLength else { break }
                length += 1 + spec.utf8.count
                specs.append(spec)
            }
            let batch = Array(ranges[next..<(next + specs.count)])
            let asksSeveral = batch.count > 1
            response = try await request(range: "bytes=" + specs.joined(separator: ","))
            if response.status == 200 {
                // A server that ignores ranges sends the whole zip: that answer is the download.
                if asksSeveral { downloader.rangeSupport.learn(url, multipart: false) }
                return try await keepWhole(response, path: path)
            }
            guard response.status == 206 else { throw Stop.unusable("the server answered \(response.status) to a range request") }
            if let type = response.headers.first(name: "Content-Type"), let boundary = MultipartByteRanges.boundary(contentType: type) {
                if asksSeveral { downloader.rangeSupport.learn(url, multipart: true) }
                try await receiveParts(response, boundary: boundary)
            } else {
                guard let part = Self.contentRange(response.headers) else { throw Stop.unusable("the server's answer has no Content-Range") }
                try checkSame(response.headers, total: part.total)
                // A single part for several ranges: the server answers one range per request.
                if asksSeveral, part.range.upperBound < batch.last!.upperBound { downloader.rangeSupport.learn(url, multipart: false) }
                try await receive(response, part: part.range)
            }
            // Whatever the answer covered is written; the next request starts at the first range not
            // written yet.
            while next < ranges.count, ranges[next].upperBound <= cursor { next += 1 }
            if next < ranges.count, ranges[next].lowerBound < cursor {
                throw Stop.unusable("the server sent part of a range")
            }
        }
        // 3. What is left: copies, then the zip's end, already fetched.
        try await advance(to: tailStart)
        if cursor < size {
            let skip = Int(cursor - tailStart)
            try await append(ByteBuffer(bytes: tail[skip...]))
        }
        guard let sink else { throw Stop.unusable("internal state") }
        self.sink = nil
        let file = try await sink.finish()
        guard file.size == Int64(size) else { throw Stop.unusable("the assembled zip has \(file.size) bytes instead of \(size)") }
        let copied = plan.copiedEntries(of: new)
            .merging(await equalInTail(new: new, old: old, tail: tail)) { first, _ in first }
            .merging(await sameData(assembled: path)) { first, _ in first }
        return .assembled(file, fetchedBytes: fetched, reusedBytes: Int64(plan.reusedBytes), copied: copied, predicted: plan.predicts)
    }

    /// The entries that came with the zip's end (`tail`, from ``tailStart``) whose bytes equal an entry's
    /// of the kept zip with the same key: their local-header offsets, and where they start in the kept zip.
    private func equalInTail(new: ZipLayout, old: ZipLayout, tail: [UInt8]) async -> [UInt64: UInt64] {
        let kept = old.firstOffsets
        let candidates = new.spans.compactMap { span -> (offset: UInt64, source: UInt64, length: Int)? in
            guard span.offset >= tailStart, span.end <= new.directoryStart, let source = kept[span.key] else { return nil }
            return (span.offset, source, Int(span.key.length))
        }
        guard !candidates.isEmpty else { return [:] }
        let descriptor = baseDescriptor
        let start = tailStart
        return (try? await downloader.executor.run { () -> [UInt64: UInt64] in
            var equal: [UInt64: UInt64] = [:]
            var buffer = [UInt8](repeating: 0, count: candidates.map(\.length).max() ?? 0)
            for candidate in candidates {
                let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, candidate.length, off_t(candidate.source)) }
                let from = Int(candidate.offset - start)
                guard read == candidate.length, buffer[0..<read].elementsEqual(tail[from..<(from + read)]) else { continue }
                equal[candidate.offset] = candidate.source
            }
            return equal
        }) ?? [:]
    }

    /// The entries whose compressed data was copied from an entry of the kept zip that extracts to the
    /// same bytes: the same data (what was fetched of it too), the same flags, method, CRC-32 and sizes in
    /// the local header and the central directory, the same data descriptor. Their local-header offsets,
    /// and where the kept entries' start. Names, times and other extra fields may differ.
    private func sameData(assembled path: String) async -> [UInt64: UInt64] {
        let copies = Array(dataCopies.values)
        guard !copies.isEmpty else { return [:] }
        let base = baseDescriptor
        return (try? await downloader.executor.run { () -> [UInt64: UInt64] in
            let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard descriptor >= 0 else { return [:] }
            defer { close(descriptor) }
            func read(_ file: Int32, _ offset: UInt64, _ count: UInt64) -> [UInt8]? {
                guard count <= 1 << 20 else { return nil }
                var bytes = [UInt8](repeating: 0, count: Int(count))
                let done = bytes.withUnsafeMutableBytes { pread(file, $0.baseAddress, Int(count), off_t(offset)) }
                return done == Int(count) ? bytes : nil
            }
            var linkable: [UInt64: UInt64] = [:]
            for copy in copies where copy.span.key.flags == copy.kept.key.flags {
                guard let header = read(descriptor, copy.span.offset, 30), let keptHeader = read(base, copy.kept.offset, 30),
                      header[6..<10] == keptHeader[6..<10], header[14..<26] == keptHeader[14..<26],
                      let length = ZipLayout.localHeaderLength(header),
                      // zip64 sizes live in the extra field, which may differ: such an entry is extracted.
                      header[18..<22] != [0xFF, 0xFF, 0xFF, 0xFF], header[22..<26] != [0xFF, 0xFF, 0xFF, 0xFF] else { continue }
                let data = copy.span.offset + length
                let size = copy.span.key.compressedSize
                guard data <= copy.copied.lowerBound, copy.copied.upperBound <= data + size, data + size <= copy.span.end,
                      copy.keptData + size <= copy.kept.end else { continue }
                // What was fetched of the data (a few bytes at either end), and the data descriptors.
                let before = copy.copied.lowerBound - data
                let after = data + size - copy.copied.upperBound
                func same(_ offset: UInt64, _ keptOffset: UInt64, _ count: UInt64) -> Bool {
                    guard let new = read(descriptor, offset, count), let old = read(base, keptOffset, count) else { return false }
                    return new == old
                }
                let descriptorLength = copy.span.end - data - size
                guard same(data, copy.keptData, before), same(copy.copied.upperBound, copy.keptData + size - after, after),
                      copy.kept.end - copy.keptData - size == descriptorLength, same(data + size, copy.keptData + size, descriptorLength) else { continue }
                linkable[copy.span.offset] = copy.kept.offset
            }
            return linkable
        }) ?? [:]
    }

    /// Keeps the first 30 bytes of the local headers of ``dataCopies`` from fetched `bytes` that belong
    /// at `offset`: they say where each entry's data starts. Bytes come in order of their offsets.
    private func watch(_ bytes: [UInt8], at offset: UInt64) {
        let end = offset + UInt64(bytes.count)
        // Headers complete, or whose bytes went by, are done with.
        while watchIndex < watched.count, headers[watched[watchIndex]]?.count ?? 0 >= 30 || watched[watchIndex] + 30 <= offset {
            watchIndex += 1
        }
        var index = watchIndex
        while index < watched.count, watched[index] < end {
            let header = watched[index]
            let have = UInt64(headers[header]?.count ?? 0)
            let from = header + have
            if have < 30, from >= offset, from < end {
                let to = min(header + 30, end)
                headers[header, default: []] += bytes[Int(from - offset)..<Int(to - offset)]
            }
            index += 1
        }
    }

    /// Where to copy the bytes of `piece` at `cursor` from in the kept zip.
    private func source(of piece: DeltaPlan.Piece, at cursor: UInt64) throws -> UInt64 {
        guard let source = piece.source else { throw Stop.unusable("the server left out a range") }
        guard let header = piece.header else { return source + (cursor - piece.offset) }
        guard let copy = dataCopies[header], let bytes = headers[header], let length = ZipLayout.localHeaderLength(bytes) else {
            throw Stop.unusable("a local header of the new zip did not come as the plan expected")
        }
        let data = header + length
        guard data <= piece.offset, piece.end <= data + copy.span.key.compressedSize else {
            throw Stop.unusable("a local header of the new zip does not fit its entry")
        }
        return source + (cursor - data)
    }

    /// What the server at `start` does with a request for several ranges, asked with a HEAD, which
    /// costs no body: `true` for a multipart answer, `false` for a single part or the whole file, `nil`
    /// when it does not say (another status, a failure) or the answer is known already. Redirects are
    /// followed.
    private func probeMultipart(_ start: String) async -> Bool? {
        guard await downloader.rangeSupport.multipart(start) == nil else { return nil }
        // The first and the last byte: two ranges no server merges into one.
        var request = HTTPRequest(.HEAD, url: start, headers: ["Range": "bytes=0-0,-1"])
        request.mayUseOwnConnection = false
        var redirects = 0
        guard let (response, _) = try? await downloader.policy.send(request, over: downloader.transport, deadline: deadline, redirects: &redirects) else {
            return nil
        }
        do {
            try await response.forEachChunk(executor: downloader.executor) { _ in }
        } catch {
            return nil
        }
        switch response.status {
        case 206:
            return response.headers.first(name: "Content-Type").flatMap(MultipartByteRanges.boundary(contentType:)) != nil
        case 200:
            return false
        default:
            return nil
        }
    }

    /// Sends a GET for `range`, following redirects; returns the response with its body unread.
    private func request(range: String) async throws -> HTTPResponse {
        var redirects = 0
        let response: HTTPResponse
        do {
            (response, url) = try await downloader.policy.send(rangeRequest(range, to: url), over: downloader.transport, deadline: deadline, redirects: &redirects)
        } catch is RequestPolicy.RedirectFailure {
            throw Stop.unusable("the server redirected a range request")
        } catch {
            throw Self.requestFailure(error)
        }
        // After the first answer, every answer must be of the same zip (a multipart answer's totals are
        // checked part by part).
        if response.status == 206, size > 0 { try checkSame(response.headers, total: Self.contentRange(response.headers)?.total ?? size) }
        return response
    }

    /// The most single-range requests in flight at once, and the largest range fetched ahead into memory
    /// (a larger one is streamed on its own, in turn).
    static let singleRangeWindow = 4
    static let aheadBytes: UInt64 = 2 << 20

    /// Fetches `ranges` from `first` on from a server that answers one range per request: up to
    /// ``singleRangeWindow`` requests at once (on as many connections), so that its time to answer
    /// is paid once per window rather than once per range; each answer is held until the ones before
    /// it are written, and written in order.
    private func fetchSingly(_ ranges: [Range<UInt64>], from first: Int) async throws {
        let received = NIOLockedValueBox<Int64>(0)
        defer { fetched += received.withLockedValue { $0 } }
        let target = url
        try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            var index = first
            var spawned = first
            var ready: [Int: [UInt8]] = [:]
            while index < ranges.count {
                while spawned < ranges.count, spawned - index < Self.singleRangeWindow, ranges[spawned].count <= Self.aheadBytes {
                    let (position, range) = (spawned, ranges[spawned])
                    group.addTask { (position, try await self.fetchPart(range, from: target, counting: received)) }
                    spawned += 1
                }
                if spawned == index {
                    // A large range: streamed as it comes, after those before it.
                    let range = ranges[index]
                    let response = try await request(range: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
                    try expectPart(response, range)
                    try await receive(response, part: range)
                    index += 1
                    spawned = index
                    continue
                }
                while ready[index] == nil {
                    guard let (position, bytes) = try await group.next() else { throw Stop.unusable("internal state") }
                    ready[position] = bytes
                }
                try await write(ready.removeValue(forKey: index)!, at: ranges[index].lowerBound)
                index += 1
            }
        }
    }

    /// The bytes of `range` from `target`, whole, for ``fetchSingly(_:from:)``: only a `206` of exactly
    /// that range of the same zip is taken. Body bytes are counted in `received` as they come.
    private func fetchPart(_ range: Range<UInt64>, from target: String, counting received: NIOLockedValueBox<Int64>) async throws -> [UInt8] {
        let response = try await send(range: "bytes=\(range.lowerBound)-\(range.upperBound - 1)", to: target)
        try expectPart(response, range)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(range.count)
        do {
            try await response.forEachChunk(executor: downloader.executor) { chunk in
                received.withLockedValue { $0 += Int64(chunk.readableBytes) }
                guard bytes.count + chunk.readableBytes <= range.count else { throw Stop.unusable("the server sent more bytes than its Content-Range says") }
                bytes += chunk.readableBytesView
            }
        } catch let stop as Stop {
            throw stop
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Stop.unusable("a range answer broke off (\(PlatformClient.describe(error)))")
        }
        guard bytes.count == range.count else { throw Stop.unusable("the server sent fewer bytes than its Content-Range says") }
        return bytes
    }

    /// Stops unless `response` is a `206` of exactly `range` of the same zip.
    private func expectPart(_ response: HTTPResponse, _ range: Range<UInt64>) throws {
        guard response.status == 206, let part = Self.contentRange(response.headers), part.range == range else {
            throw Stop.unusable("the server did not answer a range as asked")
        }
        try checkSame(response.headers, total: part.total)
    }

    /// A GET of `range` (a `Range` header's value) from `target`, with its body unread; a failure to get
    /// an answer makes the delta doubtful (``Stop/unusable(_:)``), a cancellation goes through.
    private func send(range: String, to target: String) async throws -> HTTPResponse {
        do {
            return try await downloader.transport.open(rangeRequest(range, to: target), deadline: deadline)
        } catch {
            throw Self.requestFailure(error)
        }
    }

    /// A GET of `range` from `target`, on the pooled way (see ``HTTPRequest/mayUseOwnConnection``).
    private func rangeRequest(_ range: String, to target: String) -> HTTPRequest {
        var request = HTTPRequest(url: target, headers: ["Range": range])
        request.mayUseOwnConnection = false
        return request
    }

    /// What a range request that got no answer throws: a cancellation goes through, anything else makes
    /// the delta doubtful.
    private static func requestFailure(_ error: any Error) -> any Error {
        if let error = error as? HTTPClientError, error == .cancelled { return CancellationError() }
        if error is CancellationError { return error }
        return Stop.unusable("a range request failed (\(PlatformClient.describe(error)))")
    }

    /// Stops when an answer's ETag or total size is not the first answer's: the zip changed.
    private func checkSame(_ headers: HTTPHeaders, total: UInt64) throws {
        guard total == size, headers.first(name: "ETag") == validator else { throw Stop.changed }
    }

    /// The whole body of an answer that must hold exactly `expected.count` bytes.
    private func collect(_ response: HTTPResponse, expected: Range<UInt64>) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(expected.count)
        try await eachChunk(of: response) { chunk in
            bytes += chunk.readableBytesView
            guard bytes.count <= expected.count else { throw Stop.unusable("the server sent more bytes than its Content-Range says") }
        }
        guard bytes.count == expected.count else { throw Stop.unusable("the server sent fewer bytes than its Content-Range says") }
        return bytes
    }

    /// Streams a `200` answer (the whole zip) into the file as a full download.
    private func keepWhole(_ response: HTTPResponse, path: String) async throws -> DeltaOutcome {
        let sink: DownloadSink
        if let existing = self.sink {
            existing.restart()
            sink = existing
        } else {
            sink = try await DownloadSink(path: path, executor: downloader.executor)
            self.sink = sink
        }
        let total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        if let total, total > downloader.maxBytes { throw DownloadError.tooLarge(url: url, limitBytes: downloader.maxBytes) }
        let before = fetched
        if let failure = try await downloader.receive(response, into: sink, total: total, url: url, attempt: 1, maxBytes: downloader.maxBytes, progress: progress) {
            fetched = before + sink.received
            throw Stop.unusable("the whole zip broke off (\(failure.description))")
        }
        fetched = before + sink.received
        self.sink = nil
        return .full(try await sink.finish(), fetchedBytes: fetched)
    }

    /// Hands each chunk of `response`'s body to `handle`, counting it as fetched. A connection that
    /// breaks off makes the delta doubtful (``Stop/unusable(_:)``); a stop, a cancellation or a local
    /// write failure goes through as it is.
    private func eachChunk(of response: HTTPResponse, _ handle: (ByteBuffer) async throws -> Void) async throws {
        do {
            try await response.forEachChunk(executor: downloader.executor) { chunk in
                fetched += Int64(chunk.readableBytes)
                try await handle(chunk)
            }
        } catch let stop as Stop {
            throw stop
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as DownloadError {
            throw error
        } catch {
            throw Stop.unusable("a range answer broke off (\(PlatformClient.describe(error)))")
        }
    }

    /// Writes the parts of a `multipart/byteranges` answer.
    private func receiveParts(_ response: HTTPResponse, boundary: String) async throws {
        var reader = MultipartByteRanges(boundary: boundary)
        var partEnd: UInt64 = 0
        var position: UInt64 = 0
        try await eachChunk(of: response) { chunk in
            let events: [MultipartByteRanges.Event]
            do throws(MultipartByteRanges.Malformed) {
                events = try reader.feed(chunk.readableBytesView)
            } catch {
                throw Stop.unusable("the server's multipart answer is malformed (\(error.reason))")
            }
            for event in events {
                switch event {
                case .part(let range, let total):
                    guard total == size else { throw Stop.changed }
                    position = range.lowerBound
                    partEnd = range.upperBound
                case .data(let bytes):
                    try await write(bytes, at: position)
                    position += UInt64(bytes.count)
                case .end:
                    break
                }
            }
        }
        guard reader.isComplete, position == partEnd else { throw Stop.unusable("the server's multipart answer ended early") }
    }

    /// Writes a single-part answer holding bytes `part`.
    private func receive(_ response: HTTPResponse, part: Range<UInt64>) async throws {
        var position = part.lowerBound
        try await eachChunk(of: response) { chunk in
            guard position + UInt64(chunk.readableBytes) <= part.upperBound else { throw Stop.unusable("the server sent more bytes than its Content-Range says") }
            try await write(Array(chunk.readableBytesView), at: position)
            position += UInt64(chunk.readableBytes)
        }
        guard position == part.upperBound else { throw Stop.unusable("the server sent fewer bytes than its Content-Range says") }
    }

    /// Writes fetched `bytes` that belong at `offset`: first the copies before them, then the bytes not
    /// written yet. Bytes of the zip's end, which the first request fetched, are left to it.
    private func write(_ bytes: [UInt8], at offset: UInt64) async throws {
        guard offset < tailStart, !bytes.isEmpty else { return }
        // Copies and predicted bytes before them first: those see the headers they hold go by.
        if offset > cursor { try await advance(to: offset) }
        if watchIndex < watched.count { watch(bytes, at: offset) }
        let end = min(offset + UInt64(bytes.count), tailStart)
        guard end > cursor else { return }
        let from = Int(cursor - offset)
        try await append(ByteBuffer(bytes: bytes[from..<Int(end - offset)]))
    }

    /// Copies from the kept zip up to `target`; a piece to fetch on the way means the server left a
    /// range out.
    private func advance(to target: UInt64) async throws {
        let pieces = plan.pieces
        while cursor < target {
            while pieceIndex < pieces.count, pieces[pieceIndex].end <= cursor { pieceIndex += 1 }
            guard pieceIndex < pieces.count else { throw Stop.unusable("the server left out a range") }
            let piece = pieces[pieceIndex]
            if let bytes = piece.bytes {
                // Predicted bytes: written as fetched ones would be.
                let slice = Array(bytes[Int(cursor - piece.offset)..<Int(min(piece.end, target) - piece.offset)])
                if watchIndex < watched.count { watch(slice, at: cursor) }
                try await append(ByteBuffer(bytes: slice))
                continue
            }
            let from = try source(of: piece, at: cursor)
            let end = min(piece.end, target)
            let count = Int(min(end - cursor, UInt64(Self.readAheadBytes)))
            if let ahead = readAhead, from >= ahead.start, from + UInt64(count) <= ahead.start + UInt64(ahead.bytes.readableBytes),
               let slice = ahead.bytes.getSlice(at: ahead.bytes.readerIndex + Int(from - ahead.start), length: count) {
                try await append(slice)
                continue
            }
            let descriptor = baseDescriptor
            let length = Self.readAheadBytes
            let buffer = try await downloader.executor.run { () throws -> ByteBuffer in
                var buffer = ByteBufferAllocator().buffer(capacity: length)
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { raw in
                    var done = 0
                    while done < length {
                        let result = pread(descriptor, raw.baseAddress! + done, length - done, off_t(from) + off_t(done))
                        if result < 0 && errno == EINTR { continue }
                        guard result > 0 else { break }
                        done += result
                    }
                    return done
                }
                if buffer.readableBytes < count { throw Stop.unusable("the kept zip is shorter than it was") }
                return buffer
            }
            readAhead = (from, buffer)
            try await append(buffer.getSlice(at: buffer.readerIndex, length: count)!)
        }
    }

    private func append(_ buffer: ByteBuffer) async throws {
        guard let sink else { throw Stop.unusable("internal state") }
        try await sink.append(buffer)
        cursor += UInt64(buffer.readableBytes)
        progress?(DownloadProgress(receivedBytes: Int64(cursor), totalBytes: Int64(size)))
    }

    /// `Content-Range: bytes a-b/total` as `a..<b+1` and `total`.
    static func contentRange(_ headers: HTTPHeaders) -> (range: Range<UInt64>, total: UInt64)? {
        headers.first(name: "Content-Range").flatMap(MultipartByteRanges.contentRange).map { (range: $0.0, total: $0.1) }
    }
}
