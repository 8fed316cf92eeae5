import Foundation
import MiniAppCore
import MiniAppTestSupport
import Testing

@testable import miniapp

/// The hand-written JSON of an install record is byte for byte what JSONEncoder gives through
/// `Console.json`, for every field present or absent and hostile text in every string.
struct ConsoleJSONTests {
    /// (On a thread of its own: JSONEncoder in a debug build takes seconds for these, which the
    /// cooperative pool's two threads cannot give without holding back every other test.)
    @Test func recordsAreWrittenAsJSONEncoderWritesThem() async throws {
        let mismatches = try await offPool { () throws -> [String] in
            let texts = [
                "", "plain", "bench-1", "quote \" backslash \\ slash / //", "tab\t newline\n return\r bs\u{8} ff\u{C}", "\u{0}\u{1}\u{1B}[31m\u{1F}",
                "\u{7F}", "\u{80}\u{85}\u{9B}\u{9F}", "\u{A0}\u{C2}\u{100}", "é 漢字 😀 👩‍👩‍👧 🇯🇵 e\u{301}", "\u{2028}\u{2029}\u{FEFF}",
                "/dev/shm/a b/bundles/0123/app/v1/bundle", "http://127.0.0.1:8080/", String(repeating: "long ", count: 2_000),
            ]
            let dates = [0, 1_795_349_861.237, 1_795_349_861.9999, -1.5, 4_102_444_800.001, 253_402_300_799.999].map(Date.init(timeIntervalSince1970:))
            let sizes: [Int64] = [0, 1, 34_058_255, -1, .max, .min]
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            func next(_ bound: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(bound))
            }
            func text() -> String { texts[next(texts.count)] }
            func maybe<T>(_ value: @autoclosure () -> T) -> T? { next(2) == 0 ? nil : value() }
            var mismatches: [String] = []
            for _ in 0..<300 {
                var record = InstallRecord(
                    id: text(), versionId: text(), versionTag: maybe(text()), path: text(),
                    source: [.network, .cache, .bundle][next(3)], signature: [.verified, .unverified, .failed][next(3)],
                    signatureDetail: maybe(text()), keyId: maybe(text()), sha256: text(), sizeBytes: sizes[next(sizes.count)],
                    installedAt: dates[next(dates.count)], lastUsedAt: dates[next(dates.count)], platform: text(), projectId: maybe(text())
                )
                record.repairedAt = maybe(dates[next(dates.count)])
                record.transfer = maybe(Transfer(method: next(2) == 0 ? .full : .delta, fetchedBytes: sizes[next(sizes.count)], reusedBytes: sizes[next(sizes.count)]))
                record.zipBytes = sizes[next(sizes.count)]
                record.downgradedFrom = maybe(AppVersion(versionId: text(), versionTag: maybe(text())))
                let written = Data(ConsoleJSON.record(record) + [UInt8(ascii: "\n")])
                if try written != Console.jsonData(record) { mismatches.append(String(decoding: written, as: UTF8.self)) }
            }
            return mismatches
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) records differ; the first: \(mismatches.first ?? "")")
    }
}
