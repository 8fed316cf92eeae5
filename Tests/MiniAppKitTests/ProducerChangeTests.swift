import Foundation
import MiniAppCore
import MiniAppTestSupport
import Testing

@testable import MiniAppKit

/// Updates whose new zip another tool made than the kept one, at another compression level: other
/// entry times, extra fields and compressed data, so that little or nothing of the kept zip is reusable.
/// The new zip's own local headers decide whether any is guessed, and the update costs about the zip.
extension DeltaUpdateTests {
    /// The tool that zips version 2 (version 1 is Python's `zipfile` at level 9), at deflate level 1.
    enum OtherProducer: String, CaseIterable, Sendable {
        case infoZip, bsdtar, python

        /// The zip of `files` as this tool writes it at deflate level 1.
        func zip(_ files: [String: String]) async throws -> [UInt8] {
            let source = try BundleFactory.folder(files)
            let zip = try TemporaryDirectory.make().path + "/bundle.zip"
            let command: String
            switch self {
            case .python: return try await PythonZip.make(files, .init(year: 2021, level: 1))
            case .infoZip: command = "cd '\(source)' && zip -q -1 -r '\(zip)' ."
            case .bsdtar: command = "cd '\(source)' && bsdtar --options zip:compression-level=1 -a -cf '\(zip)' ."
            }
            guard await runTool("/bin/sh", ["-c", command]) == 0 else { throw CocoaError(.fileWriteUnknown) }
            return try await offPool { [UInt8](try Data(contentsOf: URL(fileURLWithPath: zip))) }
        }
    }

    /// The hello app with 400 more files of every kind a bundle holds: prose and code that compress
    /// well (their compressed bytes depend on the level), printable noise that barely does, and tiny
    /// files (the same at any level); version 2 changes every fiftieth.
    static func manyFiles(version: Int) -> [String: String] {
        var generator = SeededGenerator(seed: 37)
        let words = (0..<300).map { _ in String((0..<(2 + Int(generator.next() % 8))).map { _ in Character(UnicodeScalar(97 + UInt8(generator.next() % 26))) }) }
        var files = BundleFactory.helloFiles
        for index in 0..<400 {
            let length = 1000 + Int(generator.next() % 20_000)
            var text: String
            switch index % 4 {
            case 0: text = (0..<(length / 6)).map { _ in words[Int(generator.next() % 300)] }.joined(separator: " ")
            case 1: text = String(decoding: (0..<length).map { _ in 33 + UInt8(generator.next() % 94) }, as: UTF8.self)
            case 2: text = (0..<(length / 50)).map { "function f\($0)(a, b) { return a + b * \($0); } // \(words[Int(generator.next() % 300)])" }.joined(separator: "\n")
            default: text = String(repeating: words[Int(generator.next() % 300)], count: 1 + Int(generator.next() % 30)) + " \(index)"
            }
            if version > 1, index % 50 == 7 { text = "// changed\n" + text }
            files["assets/d\(index % 7)/f\(index).js"] = text
        }
        return files
    }

    @Test(arguments: OtherProducer.allCases)
    func anUpdateAcrossAChangeOfProducerCostsAtMostALittleMoreThanTheZip(producer: OtherProducer) async throws {
        let v2 = Self.manyFiles(version: 2)
        let zips = (try await PythonZip.make(Self.manyFiles(version: 1), .init(year: 2020, level: 9)), try await producer.zip(v2))
        let log = LogRecorder()
        var found: BundleCache?
        let (record, host, platform) = try await update(mode: .multipart, v2: v2, zips: zips, logger: log.logger, then: { _, _, _, cache in found = cache })
        // The signed zip the server holds (a signature comment added).
        let size = try #require(platform.zips["/zips/ver-2.zip"]).count
        #expect(record.signature == .verified)
        #expect(Double(host.bytesSent) <= Double(size) * 1.15, "sent \(host.bytesSent) for a zip of \(size) in \(host.zipRequests) requests")
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        // One delta, with no guess the signature proves wrong, and no whole zip after it.
        #expect(!log.messages.contains { $0.message == "assembled zip with predicted local headers does not verify; fetching them" })
        #expect(!log.messages.contains { $0.message == "assembled zip does not verify; downloading it whole" })
        let view = try #require(found)
        #expect(view.check(record, thorough: true).intact)
    }
}
