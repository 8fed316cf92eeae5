import Foundation
import MiniAppCore
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import MiniAppRegistry

/// How `serve` cuts the parts of a multipart answer into reads of the zip.
@Suite struct ServeMultipartTests {
    @Test func smallPartsShareAReadAndBigOnesAreCut() {
        let batches = RegistryResponder.batches(of: [0..<10, 20..<30, 40..<75], upTo: 25)
        #expect(batches.map { $0.map(\.span) } == [[0..<10, 20..<30], [40..<65], [65..<75]])
        #expect(batches.flatMap { $0 }.map(\.startsPart) == [true, true, true, false])
        #expect(batches.flatMap { $0 }.map(\.part) == [0, 1, 2, 2])
    }

    @Test func everyByteOfEveryPartIsReadOnceInOrder() {
        let ranges = [0..<1, 5..<(5 + 3_000_000), 4_000_000..<4_000_100]
        let pieces = RegistryResponder.batches(of: ranges, upTo: 1 << 20).flatMap { $0 }
        #expect(pieces.allSatisfy { $0.span.count <= 1 << 20 })
        for (part, range) in ranges.enumerated() {
            let spans = pieces.filter { $0.part == part }.map(\.span)
            #expect(spans.first?.lowerBound == range.lowerBound && spans.last?.upperBound == range.upperBound)
            #expect(zip(spans, spans.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        }
    }
}

/// `serve`'s cache of encoded app lists.
@Suite(.timeLimit(.minutes(10))) struct ListingCacheTests {
    /// Where the lists of these tests are made.
    static let executor = BlockingExecutor(poolThreads: 2)

    /// A `make` that counts its calls and returns `body`, once `gate` (when given) is opened.
    final class Maker: Sendable {
        let builds = NIOLockedValueBox(0)
        let gate = DispatchSemaphore(value: 0)

        /// The nice value of the thread of each making, in order.
        let niceness = NIOLockedValueBox<[Int]>([])

        func make(_ body: String, waiting: Bool = false) -> @Sendable () -> ByteBuffer {
            { [self] in
                builds.withLockedValue { $0 += 1 }
                niceness.withLockedValue { $0.append(Self.threadNiceness()) }
                if waiting { gate.wait() }
                return ByteBuffer(string: body)
            }
        }

        /// The calling thread's nice value (field 19 of its `stat`).
        static func threadNiceness() -> Int {
            let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
            guard let end = stat.lastIndex(of: ")") else { return .min }
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) ?? .min : .min
        }

        var count: Int { builds.withLockedValue { $0 } }
    }

    static func text(_ listing: ListingCache.Listing) -> String {
        String(buffer: listing.body)
    }

    @Test func aListIsReusedUntilItsGenerationMoves() async {
        let cache = ListingCache(executor: Self.executor, lifetime: .seconds(3600))
        let maker = Maker()
        let make = maker.make("[]")
        let first = await cache.listing(preview: false, stamp: 1, make: make)
        let second = await cache.listing(preview: false, stamp: 1, make: make)
        #expect(maker.count == 1)
        // The ETag is the body's, made with it: the first half of its SHA-256, quoted.
        #expect(first.etag == second.etag && first.etag == "\"" + SHA256Digest.hash(Array("[]".utf8)).hexString.prefix(32) + "\"")
        // A moved generation is never served from the cache: it is waited for.
        let moved = await cache.listing(preview: false, stamp: 2, make: maker.make("[1]"))
        #expect(maker.count == 2 && Self.text(moved) == "[1]")
        #expect(moved.etag == RegistryResponder.etag(of: ByteBuffer(string: "[1]")) && moved.etag != first.etag)
        // A request that read the generation before it moved gets its own list, which never replaces the newer one.
        let late = await cache.listing(preview: false, stamp: 1, make: maker.make("[0]"))
        #expect(Self.text(late) == "[0]")
        let again = await cache.listing(preview: false, stamp: 2, make: maker.make("[x]"))
        #expect(Self.text(again) == "[1]" && maker.count == 3)
    }

    /// Requests for a list nobody has made yet all wait for one making of it.
    @Test func requestsAtOnceShareOneMaking() async {
        let cache = ListingCache(executor: Self.executor)
        let maker = Maker()
        let make = maker.make("[\"shared\"]", waiting: true)
        await withTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask { Self.text(await cache.listing(preview: false, stamp: 7, make: make)) }
            }
            // Every request is waiting once the one making has begun; then it may end.
            while maker.count == 0 { try? await Task.sleep(for: .milliseconds(1)) }
            maker.gate.signal()
            for await text in group { #expect(text == "[\"shared\"]") }
        }
        #expect(maker.count == 1)
    }

    /// Once a list's lifetime is over, the same generation's list is served at once while the next
    /// one is made (here it is held until the test lets it end): a request never waits for it.
    @Test func anExpiredListIsServedWhileTheNextIsMade() async {
        let cache = ListingCache(executor: Self.executor, lifetime: .zero)
        let maker = Maker()
        #expect(Self.text(await cache.listing(preview: true, stamp: 3, make: maker.make("[1]"))) == "[1]")
        // Expired: served as it is, and the next one (held) is started once, however often it is asked.
        let held = maker.make("[2]", waiting: true)
        // (A list is kept for ten times as long as it took to make, here a moment.)
        while maker.count < 2 {
            #expect(Self.text(await cache.listing(preview: true, stamp: 3, make: held)) == "[1]")
            try? await Task.sleep(for: .milliseconds(1))
        }
        for _ in 0..<5 {
            #expect(Self.text(await cache.listing(preview: true, stamp: 3, make: held)) == "[1]")
        }
        #expect(maker.count == 2)
        maker.gate.signal()
        // Served once it is made.
        var served = "[1]"
        for _ in 0..<10_000 where served == "[1]" {
            served = Self.text(await cache.listing(preview: true, stamp: 3, make: maker.make("[3]")))
            if served == "[1]" { try? await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(served == "[2]")
        // The first making was waited for; the ones in the background run at the lowest priority.
        #expect(maker.niceness.withLockedValue { $0 }.first == 0)
        #expect(maker.niceness.withLockedValue { $0 }.dropFirst().allSatisfy { $0 == 19 })
    }

    /// A list slow to make is kept for ten times as long as it took, a quick one for the lifetime.
    @Test func aSlowListIsKeptLonger() {
        #expect(ListingCache.lifetime(minimum: .seconds(1), took: .milliseconds(20)) == .seconds(1))
        #expect(ListingCache.lifetime(minimum: .seconds(1), took: .milliseconds(900)) == .seconds(9))
    }

    /// A list is made on a thread of its own, never on the task that asks for it (on Swift's
    /// cooperative pool, two list requests could stall every other request).
    @Test func aListIsMadeOnAThreadOfItsOwn() async {
        let cache = ListingCache(executor: Self.executor)
        let name = NIOLockedValueBox("")
        let listing = await cache.listing(preview: false, stamp: 1) {
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            name.withLockedValue { $0 = comm.trimmingCharacters(in: .newlines) }
            return ByteBuffer(string: "[]")
        }
        #expect(Self.text(listing) == "[]")
        #expect(name.withLockedValue { $0 } == "miniapp.listing")
    }
}

/// The registry's generation, which `serve` reads on every list request on the task that answers.
@Suite(.timeLimit(.minutes(10))) struct RegistryGenerationTests {
    /// A FIFO planted as `.generation` reads as no generation at once: opening it for reading, as
    /// Foundation's `contents(atPath:)` did, waited for a writer for ever.
    @Test func aPipeInPlaceOfTheGenerationFileDoesNotHoldItUp() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("generation-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let registry = Registry(root: root)
        #expect(registry.generation == 0)
        try "7\n".write(toFile: root + "/.generation", atomically: true, encoding: .utf8)
        #expect(registry.generation == 7)
        try FileManager.default.removeItem(atPath: root + "/.generation")
        #expect(mkfifo(root + "/.generation", 0o644) == 0)
        #expect(registry.generation == 0)
    }
}
