import Foundation
import MiniAppKit
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
@Suite struct ListingCacheTests {
    @Test func aListSlowerToBuildThanTheCacheLastsIsStillReused() {
        let cache = ListingCache()
        let builds = NIOLockedValueBox(0)
        let make = { () -> ByteBuffer in
            builds.withLockedValue { $0 += 1 }
            // Longer than the second a body is kept: the second must count from when the body is ready.
            Thread.sleep(forTimeInterval: 1.2)
            return ByteBuffer(string: "[]")
        }
        let first = cache.listing(preview: false, stamp: 1, make: make)
        let second = cache.listing(preview: false, stamp: 1, make: make)
        #expect(builds.withLockedValue { $0 } == 1)
        // The ETag is the body's, made with it: the first half of its SHA-256, quoted.
        #expect(first.etag == second.etag && first.etag == "\"" + SHA256Digest.hash(Array("[]".utf8)).hexString.prefix(32) + "\"")
        // A moved generation is never served from the cache.
        let moved = cache.listing(preview: false, stamp: 2, make: { builds.withLockedValue { $0 += 1 }; return ByteBuffer(string: "[1]") })
        #expect(builds.withLockedValue { $0 } == 2)
        #expect(moved.etag == RegistryResponder.etag(of: ByteBuffer(string: "[1]")) && moved.etag != first.etag)
    }
}
