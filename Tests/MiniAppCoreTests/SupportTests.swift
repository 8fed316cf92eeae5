import Foundation
import MiniAppTestSupport
import Synchronization
import Testing

@testable import MiniAppCore

struct JSONReaderTests {
    /// Documents on both sides of the grammar; the reader must agree with Foundation's decoder on each.
    static let documents: [String] = [
        #"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#, "  [ ]  ", "{}", "0", "-0.5e-3", "1E+2", "\"text\"",
        #""\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#, #"{"k": "a", "k": "b"}"#, "123456789012345", "[1,[2,[3]]]",
        "", " ", "{", "}", "{'a':1}", "01", "1.", ".5", "-", "+1", "1e", "NaN", "Infinity",
        "tru", "nul", "[1 2]", "{\"a\" 1}", "{1: 2}", "\"unterminated", "\"bad \\x escape\"", #""\ud800""#,
        #""\udc00\ud800""#, "\"raw\ttab\"", "[1] x", "\"\u{7F}\"", "1e400",
    ]

    @Test(arguments: documents)
    func agreesWithFoundation(_ text: String) {
        let foundation = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(JSONReader.value(Array(text.utf8)) == foundation)
    }

    @Test func readsValidNumbersThatFoundationsDecoderRefuses() throws {
        // RFC 8259 allows a zero with an exponent; JSONDecoder refuses it, JSONSerialization does not.
        #expect((try? JSONDecoder().decode(JSONValue.self, from: Data("0e2".utf8))) == nil)
        #expect(try JSONSerialization.jsonObject(with: Data("[0e2]".utf8)) as? [Double] == [0])
        #expect(JSONReader.value(Array("[0e2, 0E2]".utf8)) == .array([.number(0), .number(0)]))
    }

    @Test func refusesTrailingCommasThatFoundationLetsThrough() {
        #expect(JSONReader.value(Array("[1,]".utf8)) == nil)
        #expect(JSONReader.value(Array(#"{"a":1,}"#.utf8)) == nil)
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(JSONReader.value([0x22, 0xC3, 0x28, 0x22]) == nil)
        // Invalid UTF-8 in a string without escapes, including a cut-off sequence as long as its
        // replacement character: each refused, as Foundation refuses it; valid text read as it is.
        for invalid: [UInt8] in [[0x80], [0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0x80], [0xF0, 0x9F, 0x98], [0xED, 0xA0, 0x80], [0x61, 0xF4, 0x90, 0x80, 0x80]] {
            let document = [0x22] + invalid + [0x22]
            #expect(JSONReader.value(document) == nil, "\(invalid)")
            #expect((try? JSONDecoder().decode(JSONValue.self, from: Data(document))) == nil)
        }
        for valid in ["plain ascii", "caf\u{E9}", "\u{1F600}", "\u{7F}", "e\u{301}\u{FEFF}"] {
            #expect(JSONReader.value(Array(("\"" + valid + "\"").utf8)) == .string(valid))
        }
        #expect(JSONReader.value(Array((String(repeating: "[", count: 65) + String(repeating: "]", count: 65)).utf8)) == nil)
        #expect(JSONReader.value(Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)) != nil)
        #expect(JSONReader.value(Array(String(repeating: "[", count: 100_000).utf8)) == nil)
    }

    /// An icon or image URL is kept exactly when it parses, has an http or https scheme in any case, and
    /// a host: the scheme is checked on the text before it is parsed.
    @Test func webURLsAreTheParsedHTTPOnesWithAHost() {
        let texts = [
            "https://cdn.example/icon.png", "HTTPS://CDN.EXAMPLE/UP.png", "hTtP://x/", "http:x", "https:", "http://", "https://", "http:/x",
            "ftp://cdn.example/x", "httpx://x", "http+s://x", "https+://x", "", "h", "http", "javascript:alert(1)", "https://[::1]:8080/x",
            " http://x", "http://x y", "https://bücher.example/ü.png", "/relative/icon.png", "//cdn.example/x", "http://user@host/",
            "https://host:99999/", "https://cdn.example/\u{1B}[31m", "httpS://x?q#f", "https\u{0}://x",
        ]
        for text in texts {
            let before = URL(string: text).flatMap { url -> URL? in
                guard let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else { return nil }
                return url
            }
            #expect(AppRecord.webURL(text) == before, "\(text)")
        }
    }

    @Test func readsRecordsAsTheirDecoderDoes() throws {
        let installed = Date(timeIntervalSince1970: 1_795_349_861.237)
        let records = [
            InstallRecord(id: "app", versionId: "v1", versionTag: "1.0", path: "/c/b", source: .network, signature: .verified,
                          keyId: "k", sha256: String(repeating: "a", count: 64), sizeBytes: 34_058_255, installedAt: installed,
                          lastUsedAt: installed.addingTimeInterval(5), platform: "http://p.example/", projectId: "p"),
            InstallRecord(id: "app", versionId: "v2", versionTag: nil, path: "/c/b", source: .bundle, signature: .failed,
                          signatureDetail: "the signature does not match \"these\" bytes", sha256: "", sizeBytes: 0,
                          installedAt: installed, lastUsedAt: installed, platform: "local", projectId: nil),
        ]
        for record in records {
            let data = try RecordCoding.encoder(pretty: true).encode(record)
            #expect(InstallRecord(json: Array(data)) == record)
            #expect(try RecordCoding.decoder().decode(InstallRecord.self, from: data) == record)
        }
        let good = #"{"id":"a","versionId":"v","path":"/p","source":"cache","signature":"verified","sha256":"x","sizeBytes":1,"installedAt":"2026-11-22T09:58:06Z","lastUsedAt":"2026-11-22T09:58:06.5Z","platform":"local"}"#
        #expect(InstallRecord(json: Array(good.utf8))?.versionTag == nil)
        for broken in [
            good.replacingOccurrences(of: #""sizeBytes":1"#, with: #""sizeBytes":1.5"#),
            good.replacingOccurrences(of: #""source":"cache""#, with: #""source":"elsewhere""#),
            good.replacingOccurrences(of: #""installedAt":"2026-11-22T09:58:06Z""#, with: #""installedAt":"yesterday""#),
            good.replacingOccurrences(of: #""id":"a","#, with: ""),
            good.replacingOccurrences(of: #""platform":"local""#, with: #""platform":"local","keyId":7"#),
            "[]",
        ] {
            #expect(InstallRecord(json: Array(broken.utf8)) == nil)
            #expect((try? RecordCoding.decoder().decode(InstallRecord.self, from: Data(broken.utf8))) == nil)
        }
    }
}

struct SystemSupportTests {
    @Test func filesAreReadWhole() throws {
        let folder = try TemporaryDirectory.make().path
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try writeTestFile(folder + "/big", Data(bytes))
        #expect(FileReading.contents(folder + "/big") == bytes)
        try writeTestFile(folder + "/empty", Data())
        #expect(FileReading.contents(folder + "/empty") == [])
        guard case .missing = FileReading.read(folder + "/nothing") else { Issue.record("a missing file is not .missing"); return }
        guard case .missing = FileReading.read(folder + "/big/below") else { Issue.record("a path through a file is not .missing"); return }
        guard case .notARegularFile = FileReading.read(folder) else { Issue.record("a folder is not .notARegularFile"); return }
        guard case .notARegularFile = FileReading.read("/dev/zero") else { Issue.record("a device is not .notARegularFile"); return }
        // The rest of a descriptor, up to a limit.
        let descriptor = open(folder + "/big", O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        guard case .unreadable(EFBIG) = FileReading.readToEnd(descriptor, limit: 100_000) else { Issue.record("past the limit is not EFBIG"); return }
        lseek(descriptor, 0, SEEK_SET)
        #expect({ if case .contents(let read) = FileReading.readToEnd(descriptor, limit: bytes.count) { read == bytes } else { false } }())
        // A file past the limit is refused from its size, and a sparse one of terabytes allocates nothing.
        guard case .unreadable(EFBIG) = FileReading.read(folder + "/big", limit: 100_000) else { Issue.record("a file past the limit is not EFBIG"); return }
        #expect(FileReading.contents(folder + "/big", limit: bytes.count) == bytes)
        #expect(truncate(folder + "/empty", 8 << 40) == 0)
        guard case .unreadable(EFBIG) = FileReading.read(folder + "/empty") else { Issue.record("a sparse 8 TiB file is not EFBIG"); return }
    }

    @Test func forkJoinRunsEveryPartOnceAndConcurrently() {
        let runs = Mutex<[Int]>([])
        let started = Atomic<Int>(0)
        BlockingExecutor.forkJoin(3, name: "miniapp.test") { part in
            started.add(1, ordering: .relaxed)
            // Every part waits until all have started: this returns only if they run at the same time.
            while started.load(ordering: .relaxed) < 3 { sched_yield() }
            runs.withLock { $0.append(part) }
        }
        #expect(runs.withLock { $0.sorted() } == [0, 1, 2])
        let single = Mutex<[Int]>([])
        BlockingExecutor.forkJoin(0, name: "miniapp.test") { part in single.withLock { $0.append(part) } }
        #expect(single.withLock { $0 } == [0])
    }

    @Test func theExecutorRunsWorkOnItsPoolUntilItIsShutDown() async throws {
        let executor = BlockingExecutor(poolThreads: 2)
        #expect(try await executor.run { 6 * 7 } == 42)
        #expect(try await executor.runToCompletion { "done" } == "done")
        await executor.shutdown()
        await #expect(throws: (any Error).self) { try await executor.run { 1 } }
        await executor.shutdown()
        // An executor shut down before any use never starts a pool, and refuses work too.
        let unused = BlockingExecutor()
        await unused.shutdown()
        await #expect(throws: (any Error).self) { try await unused.run { 1 } }
    }

    @Test func theExecutorRunsNoMoreThreadsOfTheirOwnThanItsBound() async throws {
        let executor = BlockingExecutor(poolThreads: 1, maxOwnThreads: 2)
        let release = Mutex(false)
        let running = Atomic<Int>(0)
        let hold: @Sendable () -> Void = {
            running.add(1, ordering: .relaxed)
            while !release.withLock({ $0 }) { sched_yield() }
            running.subtract(1, ordering: .relaxed)
        }
        #expect(executor.startThread(name: "miniapp.test", hold))
        #expect(executor.startThread(name: "miniapp.test", hold))
        #expect(!executor.startThread(name: "miniapp.test", hold), "a third thread of its own started past the bound of 2")
        release.withLock { $0 = true }
        while running.load(ordering: .relaxed) > 0 { sched_yield() }
        // Past the bound, a call that needs its own thread runs on the pool instead.
        #expect(try await executor.runOnOwnThread(name: "miniapp.test") { 5 } == 5)
        await executor.shutdown()
    }

    @Test func theEnvironmentIsReadAsFoundationReadsIt() {
        let wanted = ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("MINIAPP_") || $0.key.hasPrefix("XDG_") || $0.key == "HOME" }
        #expect(ProcessEnvironment.variables() == wanted)
        #expect(ProcessEnvironment.currentDirectory() == FileManager.default.currentDirectoryPath)
        #expect(ProcessEnvironment.processorCount == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test func theOneShotHashIsTheStreamingHash() {
        #expect(SHA256Digest.hash(Array("abc".utf8)).hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0) }
        let streaming = SHA256Digest()
        streaming.update(bytes)
        #expect(SHA256Digest.hash(bytes) == streaming.finalize())
    }

    /// A record with every field set goes through each form, `record.json` and the user's document, and
    /// back: each form holds exactly the fields its place says, from the one list.
    @Test func everyFieldOfTheListIsWrittenAndReadByEachForm() throws {
        let when = Date(timeIntervalSince1970: 1_795_349_861.237)
        var record = InstallRecord(
            id: "app", versionId: "v2", versionTag: "2.0", path: "/c/b", source: .network, signature: .unverified,
            signatureDetail: "no key", keyId: "k1", sha256: String(repeating: "b", count: 64), sizeBytes: 9_007_199_254_740_991,
            installedAt: when, lastUsedAt: when.addingTimeInterval(1), platform: "http://p.example/", projectId: "p"
        )
        record.fileListDigest = "f"
        record.transfer = Transfer(method: .delta, fetchedBytes: 10, reusedBytes: 20)
        record.repairedAt = when.addingTimeInterval(2)
        record.downgradedFrom = AppVersion(versionId: "v3", versionTag: "3.0")
        record.signatureValue = "MEUC"
        record.signerKey = "-----BEGIN PUBLIC KEY-----"
        record.unsyncedBoot = "boot"
        record.preview = true
        record.zipBytes = 30
        for storage in [true, false] {
            let data = try (storage ? RecordCoding.storageEncoder() : RecordCoding.encoder(pretty: true)).encode(record)
            let keys = Set((try JSONSerialization.jsonObject(with: data) as? [String: Any])?.keys ?? [:].keys)
            let expected = Set(InstallRecord.fields.filter { $0.place.holds(storage: storage) }.map(\.key))
            #expect(keys == expected, "storage: \(storage)")
            var back = record
            if storage { back.zipBytes = 0 } else { (back.fileListDigest, back.signatureValue, back.signerKey, back.unsyncedBoot, back.preview) = (nil, nil, nil, nil, false) }
            #expect(InstallRecord(json: Array(data)) == back, "storage: \(storage)")
            #expect(try RecordCoding.decoder().decode(InstallRecord.self, from: data) == back, "storage: \(storage)")
        }
        #expect(InstallRecord.fields.map(\.key) == InstallRecord.fields.map(\.key).sorted(), "the list is in key order")
    }
}
