// `stat` reaches these tests through libarchive's header too (MemberImportVisibility).
import Foundation
import CMiniAppArchive
import Logging
import NIOConcurrencyHelpers
import MiniAppCore
import MiniAppTestSupport
import NIOPosix
import Testing

@testable import MiniAppKit

/// Updates that fetch only what changed, share unchanged files between versions, and repair offline,
/// against a real server on 127.0.0.1 that counts what it sends.
@Suite struct DeltaUpdateTests {
    let cache = try! TemporaryDirectory.make().path + "/cache"

    static func files(version: Int, changed: Int = 3) -> [String: String] {
        BundleFactory.updateFiles(version: version, changed: changed)
    }

    typealias Platform = UpdatePlatform

    /// Installs version 1, then version 2 as an update with the host in `mode`; returns the update's record.
    func update(
        mode: RangeMode, answersProbes: Bool = true, rangeDelay: Duration? = nil, v2: [String: String] = DeltaUpdateTests.files(version: 2), zips: (v1: [UInt8], v2: [UInt8])? = nil,
        configure: (inout MiniAppConfiguration) -> Void = { _ in },
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
        before: (BundleCache, InstallRecord) throws -> Void = { _, _ in },
        then: (Platform, TestHTTPServer, InstallRecord, BundleCache) async throws -> Void = { _, _, _, _ in }
    ) async throws -> (InstallRecord, RangeHost, Platform) {
        let host = RangeHost(mode: .multipart)
        let platform = try zips.map { try Platform(host: host, zips: $0) } ?? Platform(host: host, v2: v2)
        let cache = self.cache
        let record = try await withTestServer({ [platform] in platform.handle($0) }) { server in
            let v1 = try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") }
            #expect(v1.record.transfer?.method == .full)
            #expect(v1.record.zipBytes == Int64(platform.zips["/zips/ver-1.zip"]!.count))
            host.reset()
            host.mode = mode
            host.answersProbes = answersProbes
            host.rangeDelay = rangeDelay
            platform.published.withLockedValue { $0 = true }
            var configuration = makeConfiguration(server, cache: cache)
            configure(&configuration)
            try before(BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor), v1.record)
            let record = try await withInstaller(configuration, logger: logger) { try await $0.download(appId: "app-hello") }.record
            try await then(platform, server, record, BundleCache(root: cache, namespace: configuration.cacheNamespace, executor: testExecutor))
            return record
        }
        #expect(record.versionId == "ver-2")
        // Whatever the way, the installed files are version 2's, byte for byte.
        for (path, text) in v2 {
            #expect(FileManager.default.contents(atPath: record.path + "/" + path) == Data(text.utf8), "\(path)")
        }
        return (record, host, platform)
    }

    @Test func anUpdateFetchesOnlyTheChangedEntriesInOneMultipartRequest() async throws {
        var found: BundleCache?
        let (record, host, platform) = try await update(mode: .multipart, then: { _, _, _, cache in found = cache })
        let size = platform.zips["/zips/ver-2.zip"]!.count
        #expect(record.transfer?.method == .delta)
        #expect(host.bytesSent < size / 5, "sent \(host.bytesSent) of \(size)")
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        #expect((record.transfer?.reusedBytes ?? 0) + (record.transfer?.fetchedBytes ?? 0) >= Int64(size))
        #expect(host.zipRequests == 2, "the end, then one request for every changed range: \(host.rangeHeaders)")
        #expect(host.probes == 1, "a HEAD asked meanwhile what the server does with several ranges")
        #expect(host.rangeHeaders.last?.contains(",") == true)
        // Only the newest version keeps its zip.
        let view = try #require(found)
        #expect(view.check(record, thorough: true).intact)
        #expect(view.records(appId: "app-hello").map { $0.zipBytes } == [Int64(size), 0])
        #expect(record.zipBytes == Int64(size))
    }

    @Test func aServerThatAnswersOneRangeAtATimeGetsOneRequestPerRange() async throws {
        let (record, host, platform) = try await update(mode: .firstRangeOnly)
        #expect(record.transfer?.method == .delta)
        #expect(host.zipRequests >= 4, "\(host.rangeHeaders)")
        #expect(host.rangeHeaders.allSatisfy { !$0.contains(",") }, "the HEAD said so: \(host.rangeHeaders)")
        #expect(host.bytesSent < platform.zips["/zips/ver-2.zip"]!.count / 5)
    }

    @Test func aServerThatSendsTheWholeZipForSeveralRangesGetsSingleRangesFromTheFirstUpdate() async throws {
        var base: URL?
        let (record, host, platform) = try await update(mode: .wholeForSeveral, then: { _, server, _, _ in base = server.baseURL })
        let size = platform.zips["/zips/ver-2.zip"]!.count
        // A HEAD asking for two ranges got a 200: no GET asks for several, and no whole zip travels.
        #expect(record.transfer?.method == .delta)
        #expect(host.probes == 1)
        #expect(host.rangeHeaders.allSatisfy { !$0.contains(",") }, "\(host.rangeHeaders)")
        #expect(host.zipRequests >= 4, "the end, then one request per range: \(host.rangeHeaders)")
        #expect(host.bytesSent < size / 5, "sent \(host.bytesSent) of \(size)")
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        // What was learnt is kept for the next process: it asks that server for one range at a time.
        let remembered = try FileManager.default.contentsOfDirectory(atPath: cache + "/ranges")
        #expect(remembered.count == 1)
        let later = RangeSupport(directory: cache + "/ranges", executor: testExecutor)
        let zip = try #require(base).appendingPathComponent("zips/ver-3.zip").absoluteString
        #expect(await later.multipart(zip) == false)
    }

    @Test func aSlowSingleRangeServerIsAskedForSeveralRangesAtOnceOnSeveralConnections() async throws {
        // Every range answer takes 400 ms (an object store's first byte): the client asks for the next
        // ranges without waiting for the one before, and writes them in order (`update` checks every file).
        let v2 = Self.files(version: 2, changed: 12)
        let (record, host, _) = try await update(mode: .firstRangeOnly, rangeDelay: .milliseconds(400), v2: v2)
        #expect(record.transfer?.method == .delta)
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        #expect(host.rangeOverlap >= 2, "\(host.rangeHeaders)")
        #expect(host.rangeHeaders.allSatisfy { !$0.contains(",") })
    }

    @Test func aRangeLargerThanWhatIsFetchedAheadIsStreamedInTurnFromASingleRangeServer() async throws {
        // A new file of 4 MB of letters that barely compress: its range is over the 2 MiB fetched ahead
        // into memory, so it is streamed on its own between the small ranges around it.
        var state: UInt64 = 7
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/".utf8)
        let big = String(decoding: (0..<(4 << 20)).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return letters[Int(state >> 58)]
        }, as: UTF8.self)
        var v2 = Self.files(version: 2)
        v2["assets/big.js"] = big
        let (record, host, _) = try await update(mode: .firstRangeOnly, v2: v2)
        #expect(record.transfer?.method == .delta)
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        let sizes = host.rangeHeaders.compactMap { header -> Int? in
            let bounds = header.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
            return bounds.count == 2 ? bounds[1] - bounds[0] + 1 : nil
        }
        #expect(sizes.contains { $0 > 2 << 20 }, "\(host.rangeHeaders)")
        #expect(sizes.filter { $0 <= 2 << 20 }.count >= 2, "small ranges around it: \(host.rangeHeaders)")
    }

    @Test func aServerThatSendsTheWholeZipForSeveralRangesUnaskedHasThatAnswerUsedAsTheDownload() async throws {
        // A server that does not answer the HEAD is asked for several ranges with a GET.
        var base: URL?
        let (record, host, platform) = try await update(mode: .wholeForSeveral, answersProbes: false, then: { _, server, _, _ in base = server.baseURL })
        let size = platform.zips["/zips/ver-2.zip"]!.count
        #expect(host.probes == 1)
        #expect(record.transfer?.method == .full)
        #expect(host.bytesSent < size + size / 5, "no byte fetched twice but the zip's end: \(host.bytesSent) of \(size)")
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        // What was learnt is kept for the next process: it asks that server for one range at a time.
        let remembered = try FileManager.default.contentsOfDirectory(atPath: cache + "/ranges")
        #expect(remembered.count == 1)
        let later = RangeSupport(directory: cache + "/ranges", executor: testExecutor)
        #expect(await later.multipart("http://127.0.0.1:1/zips/any.zip") == nil, "another origin is unknown")
        let zip = try #require(base).appendingPathComponent("zips/ver-3.zip").absoluteString
        #expect(await later.multipart(zip) == false)
    }

    @Test func noRangeSupportIsAFullDownloadOfOneRequest() async throws {
        let (record, host, platform) = try await update(mode: .none)
        #expect(record.transfer == Transfer(method: .full, fetchedBytes: Int64(platform.zips["/zips/ver-2.zip"]!.count), reusedBytes: 0))
        #expect(host.zipRequests == 1)
    }

    @Test(arguments: [RangeMode.changingETag, .lyingSize])
    func aZipThatChangesDuringTheUpdateEndsInAVerifiedFullDownload(mode: RangeMode) async throws {
        let (record, host, _) = try await update(mode: mode)
        #expect(record.transfer?.method == .full)
        #expect(record.signature == .verified)
        #expect(host.zipRequests >= 3)
    }

    @Test func aTamperedRangeFailsTheDigestAndTheWholeZipDecides() async throws {
        let (record, _, platform) = try await update(mode: .tampered)
        #expect(record.transfer?.method == .full)
        #expect(record.signature == .verified)
        #expect((record.transfer?.fetchedBytes ?? 0) > Int64(platform.zips["/zips/ver-2.zip"]!.count))
    }

    @Test func aZipWhoseEveryEntryChangedIsFetchedOnceNotTwice() async throws {
        let (record, host, platform) = try await update(mode: .multipart, v2: Dictionary(uniqueKeysWithValues: Self.files(version: 2, changed: 120).map { ($0.key, ($0.key.hasSuffix(".json") ? " " : "/*2*/") + $0.value) }))
        let size = platform.zips["/zips/ver-2.zip"]!.count
        // Only the folder entries, whose bytes did not change, are reused.
        #expect((record.transfer?.reusedBytes ?? 1024) < 1024)
        #expect(host.bytesSent <= size + 1024, "sent \(host.bytesSent) of \(size)")
    }

    @Test func aCentralDirectoryThatOutgrewTheFirstRangeTakesOneMoreRequest() async throws {
        // 3,000 new files with long names: the new central directory is several times the kept one's.
        var v2 = Self.files(version: 2)
        for index in 0..<3000 { v2["added/\(String(repeating: "long-name-", count: 8))\(index).txt"] = "\(index)" }
        let (record, host, _) = try await update(mode: .multipart, v2: v2)
        #expect(record.transfer?.method == .delta)
        #expect(host.rangeHeaders.count == 3, "the end, the rest of the directory, the changed entries: \(host.rangeHeaders)")
        #expect(host.rangeHeaders.first?.hasPrefix("bytes=-") == true)
    }

    @Test func deltaCanBeTurnedOff() async throws {
        let (record, host, _) = try await update(mode: .multipart) { $0.delta = false }
        #expect(record.transfer?.method == .full)
        #expect(host.rangeHeaders.isEmpty)
    }

    @Test func unchangedFilesAreSharedReadOnlyAndSurviveTheOlderVersionsRemoval() async throws {
        var found: BundleCache?
        let (record, _, _) = try await update(mode: .multipart, then: { _, _, _, cache in found = cache })
        let view = try #require(found)
        let older = try #require(view.record(appId: "app-hello", versionId: "ver-1"))
        var first = stat(), second = stat()
        #expect(lstat(older.path + "/assets/part-0.js", &first) == 0 && lstat(record.path + "/assets/part-0.js", &second) == 0)
        #expect(first.st_ino == second.st_ino)
        #expect(second.st_mode & 0o777 == 0o444)
        #expect(lstat(older.path + "/assets/part-5.js", &first) == 0 && lstat(record.path + "/assets/part-5.js", &second) == 0)
        #expect(first.st_ino != second.st_ino, "a changed file is its own")
        // Both stay intact, and their quick checks stay quick: nothing left to hash.
        #expect(view.check(older).intact && view.check(record).intact)
        _ = try await view.remove(appId: "app-hello", versionId: "ver-1")
        #expect(view.check(record).intact)
        #expect(view.check(record, thorough: true).intact)
        #expect(FileManager.default.contents(atPath: record.path + "/assets/part-0.js") == Data(Self.files(version: 2)["assets/part-0.js"]!.utf8))
    }

    /// The files the update linked from the older version instead of inflating them, from its log.
    static func linkedCounts(_ records: LogRecorder) -> [Int] {
        records.messages.filter { $0.message == "unchanged files linked" }.compactMap { $0.metadata["linked"].flatMap { Int("\($0)") } }
    }

    @Test func entriesCopiedFromTheKeptZipAreLinkedFromTheOlderVersionNotInflated() async throws {
        let log = LogRecorder()
        var found: BundleCache?
        let (record, _, _) = try await update(mode: .multipart, logger: log.logger, then: { _, _, _, cache in found = cache })
        let view = try #require(found)
        let older = try #require(view.record(appId: "app-hello", versionId: "ver-1"))
        let files = Self.files(version: 2)
        // Every file but the three that changed (none is empty), and maybe one whose bytes are partly in
        // a range fetched and partly in the zip's end.
        let linked = try #require(Self.linkedCounts(log).first)
        #expect((files.count - 4...files.count - 3).contains(linked), "\(linked) of \(files.count)")
        var first = stat(), second = stat()
        #expect(lstat(older.path + "/assets/part-0.js", &first) == 0 && lstat(record.path + "/assets/part-0.js", &second) == 0)
        #expect(first.st_ino == second.st_ino)
        #expect(lstat(older.path + "/assets/part-5.js", &first) == 0 && lstat(record.path + "/assets/part-5.js", &second) == 0)
        #expect(first.st_ino != second.st_ino, "a changed file is its own")
        // Both versions pass their quick checks (the links' change times are recorded or attested) and
        // their full ones.
        #expect(view.check(record).intact && view.check(older).intact)
        #expect(view.check(record, thorough: true).intact && view.check(older, thorough: true).intact)
        _ = try await view.remove(appId: "app-hello", versionId: "ver-1")
        #expect(view.check(record).intact)
    }

    @Test func aFileOfTheOlderVersionChangedSinceItWasHashedIsInflatedFromTheNewZip() async throws {
        let log = LogRecorder()
        _ = try await update(mode: .multipart, logger: log.logger, before: { _, older in
            let path = older.path + "/assets/part-0.js"
            chmod(path, 0o644)
            try writeTestFile(path, "tampered")
        })
        // The update checked every file it installed against version 2's content (in `update`).
        let linked = try #require(Self.linkedCounts(log).first)
        #expect((Self.files(version: 2).count - 5...Self.files(version: 2).count - 4).contains(linked), "\(linked)")
    }

    @Test func aKeptZipThatIsNotTheOneInstalledLendsNoFiles() async throws {
        let log = LogRecorder()
        let (record, _, _) = try await update(mode: .multipart, logger: log.logger, before: { cache, older in
            // One byte of the kept zip's central directory ("version made by" of its first record): the
            // delta plan does not see it, the digest does.
            let zip = try #require(cache.keptZipPath(older))
            chmod(zip, 0o644)
            var bytes = try #require(FileManager.default.contents(atPath: zip).map { [UInt8]($0) })
            let end = bytes.count - 22
            let directory = Int(bytes[end + 16]) | Int(bytes[end + 17]) << 8 | Int(bytes[end + 18]) << 16 | Int(bytes[end + 19]) << 24
            bytes[directory + 4] ^= 0x01
            try writeTestFile(zip, Data(bytes))
        })
        #expect(record.transfer?.method == .delta)
        #expect(Self.linkedCounts(log).isEmpty, "nothing linked")
    }

    @Test func aDamagedVersionIsRepairedOfflineFromItsKeptZipForEveryVersionSharingTheFile() async throws {
        let cache = self.cache
        _ = try await update(mode: .multipart, then: { platform, server, record, view in
            let older = try #require(view.record(appId: "app-hello", versionId: "ver-1"))
            // A shared file changed in place, a file removed, a file added.
            chmod(record.path + "/assets/part-0.js", 0o644)
            try writeTestFile(record.path + "/assets/part-0.js", "tampered")
            try FileManager.default.removeItem(atPath: record.path + "/assets/part-1.js")
            try writeTestFile(record.path + "/added.js", "added")
            #expect(!view.check(older).intact, "the shared file is damaged in both")
            var offline = makeConfiguration(server, cache: cache)
            offline.offline = true
            let requests = platform.host.zipRequests
            let outcome = try await withInstaller(offline) { try await $0.download(appId: "app-hello") }
            #expect(platform.host.zipRequests == requests, "no network")
            #expect(outcome.notes.first?.contains("repaired") == true, "\(outcome.notes)")
            let repaired = try #require(view.record(appId: "app-hello", versionId: "ver-2"))
            #expect(repaired.repairedAt != nil)
            #expect(repaired.installedSource == .network)
            #expect(repaired.transfer == record.transfer)
            #expect(view.check(repaired, thorough: true).intact)
            #expect(view.check(older, thorough: true).intact, "the repair restored the shared file for every version")
            #expect(view.check(older).intact)

            // A kept zip that fails its digest is not used: offline, the damaged version is refused (65).
            try writeTestFile(repaired.path + "/index.html", "tampered")
            let zip = try #require(view.keptZipPath(repaired))
            chmod(zip, 0o644)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: zip))
            try handle.seek(toOffset: 100)
            try handle.write(contentsOf: Data([0x42]))
            try handle.close()
            #expect(try await view.verifyKeptZip(repaired) != nil)
            let error = await #expect(throws: CacheError.self) {
                try await withInstaller(offline) { try await $0.download(appId: "app-hello", versionId: "ver-2") }
            }
            #expect(error?.category == .badData)
            // Online, the version is downloaded again instead.
            let again = try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") }
            #expect(again.record.source == .network)
            #expect(try await view.verifyKeptZip(try #require(view.record(appId: "app-hello", versionId: "ver-2"))) == nil)

            // A link planted in place of the kept zip is not followed, even to the very same bytes: the
            // check names it, and the damaged version is not repaired from it offline.
            let current = try #require(view.record(appId: "app-hello", versionId: "ver-2"))
            let keptPath = try #require(view.keptZipPath(current))
            let elsewhere = try TemporaryDirectory.make().path + "/same.zip"
            try FileManager.default.copyItem(atPath: keptPath, toPath: elsewhere)
            try FileManager.default.removeItem(atPath: keptPath)
            #expect(symlink(elsewhere, keptPath) == 0)
            #expect(try await view.verifyKeptZip(current) == "it cannot be read")
            try writeTestFile(current.path + "/index.html", Array("tampered".utf8))
            let refused = await #expect(throws: CacheError.self) {
                try await withInstaller(offline) { try await $0.download(appId: "app-hello", versionId: "ver-2") }
            }
            #expect(refused?.category == .badData, "the kept zip would have repaired it, were the link followed")
            // Online, it is downloaded again, and the cache keeps a zip of its own in the link's place.
            let fresh = try await withInstaller(makeConfiguration(server, cache: cache)) { try await $0.download(appId: "app-hello") }
            #expect(fresh.record.source == .network)
            var info = stat()
            #expect(lstat(keptPath, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
            #expect(try await view.verifyKeptZip(fresh.record) == nil)
        })
    }
}


/// Updates of zips that another producer made at every version (new entry times, data descriptors,
/// zip64 local headers): the compressed data the kept zip holds is copied whatever the headers say.
extension DeltaUpdateTests {
    /// How a pipeline zips its build.
    enum Producer: String, CaseIterable, Sendable {
        case plain, streamed, zip64

        func options(year: Int) -> PythonZip.Options {
            PythonZip.Options(year: year, streamed: self == .streamed, zip64: self == .zip64)
        }
    }

    @Test(arguments: Producer.allCases)
    func aPipelineRebuildFetchesLittleMoreThanAPerfectDelta(producer: Producer) async throws {
        let files = Self.files(version: 1)
        let zips = (try await PythonZip.make(files, producer.options(year: 2020)), try await PythonZip.make(files, producer.options(year: 2021)))
        let perfect = try await offPool { try perfectDeltaBytes(old: zips.0, new: zips.1) }
        #expect(perfect < zips.1.count / 20, "every header differs, no data: \(perfect) of \(zips.1.count)")
        // The first entry's extra field: in its local header, and in the central directory.
        let zip = zips.1
        func le16(_ at: Int) -> Int { Int(zip[at]) | Int(zip[at + 1]) << 8 }
        let directory = le16(zip.count - 22 + 16) | le16(zip.count - 22 + 18) << 16
        let extras = (local: le16(28), central: le16(directory + 30))
        #expect(producer == .zip64 ? extras.local > extras.central : extras.local == extras.central, "\(extras)")
        #expect(producer == .streamed ? le16(6) & 0x8 != 0 : le16(6) & 0x8 == 0, "a data descriptor follows each streamed entry")
        let log = LogRecorder()
        var found: BundleCache?
        let (record, host, _) = try await update(mode: .multipart, v2: files, zips: zips, logger: log.logger, then: { _, _, _, cache in found = cache })
        #expect(record.transfer?.method == .delta)
        #expect(record.signature == .verified)
        #expect(host.bytesSent <= perfect + perfect / 10 + 32 << 10, "sent \(host.bytesSent), a perfect delta \(perfect), the zip \(zips.1.count)")
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        #expect((record.transfer?.reusedBytes ?? 0) + (record.transfer?.fetchedBytes ?? 0) >= Int64(zips.1.count))
        // Local headers that say what the central directory says are rebuilt from it: the zip's end is
        // the only request. zip64 local headers have an extra field the directory does not repeat.
        #expect(host.zipRequests == (producer == .zip64 ? 2 : 1), "the end, then the headers in one multipart request: \(host.rangeHeaders.count)")
        #expect(log.messages.contains { $0.message == "delta plan" && $0.metadata["predicted"] == "\(producer != .zip64)" })
        let view = try #require(found)
        #expect(view.check(record, thorough: true).intact)
        // Entries whose local headers say the same but their time and extra field (zip64 sizes there,
        // not in the central directory) are linked, not inflated.
        let linked = Self.linkedCounts(log).first ?? 0
        #expect(linked >= 120, "\(linked) of \(files.count)")
    }

    @Test func aReleaseWithChangedAndMovedFilesFetchesWhatChangedAndLinksTheMovedFiles() async throws {
        var v2 = Self.files(version: 2)
        for index in stride(from: 10, to: 120, by: 10) {
            v2["moved/renamed-\(index).js"] = v2.removeValue(forKey: "assets/part-\(index).js")
        }
        let zips = (try await PythonZip.make(Self.files(version: 1), .init(year: 2020)), try await PythonZip.make(v2, .init(year: 2021)))
        let perfect = try await offPool { try perfectDeltaBytes(old: zips.0, new: zips.1) }
        let log = LogRecorder()
        var found: BundleCache?
        let (record, host, _) = try await update(mode: .multipart, v2: v2, zips: zips, logger: log.logger, then: { _, _, _, cache in found = cache })
        #expect(record.transfer?.method == .delta)
        #expect(host.bytesSent <= perfect + perfect / 10 + 32 << 10, "sent \(host.bytesSent), a perfect delta \(perfect), the zip \(zips.1.count)")
        #expect(host.bytesSent < zips.1.count / 10)
        let view = try #require(found)
        let older = try #require(view.record(appId: "app-hello", versionId: "ver-1"))
        var first = stat(), second = stat()
        #expect(lstat(older.path + "/assets/part-20.js", &first) == 0 && lstat(record.path + "/moved/renamed-20.js", &second) == 0)
        #expect(first.st_ino == second.st_ino, "a moved file is the older version's file")
        #expect(lstat(older.path + "/assets/part-5.js", &first) == 0 && lstat(record.path + "/assets/part-5.js", &second) == 0)
        #expect(first.st_ino != second.st_ino, "a changed file is its own")
        #expect(view.check(record, thorough: true).intact && view.check(older, thorough: true).intact)
    }

    @Test func aCandidateWhoseDataDiffersThoughItsCRCAndSizesMatchEndsInAVerifiedFullDownload() async throws {
        // The same file deflated as one stored block, once with the block header's padding bits set:
        // the same content, CRC-32 and sizes, other compressed bytes, under another name.
        let v1 = Self.files(version: 1)
        var v2 = v1
        v2["assets/moved.js"] = v2.removeValue(forKey: "assets/part-0.js")
        let zips = (
            try await PythonZip.make(v1, .init(year: 2020, stored: ["assets/part-0.js"])),
            try await PythonZip.make(v2, .init(year: 2021, stored: ["assets/moved.js"], padded: ["assets/moved.js"]))
        )
        let log = LogRecorder()
        let (record, _, _) = try await update(mode: .multipart, v2: v2, zips: zips, logger: log.logger)
        // The assembled zip failed its signature; the whole zip decided (`update` checked every file).
        #expect(log.messages.contains { $0.message == "assembled zip does not verify; downloading it whole" })
        #expect(record.transfer?.method == .full)
        #expect(record.signature == .verified)
        #expect((record.transfer?.fetchedBytes ?? 0) > Int64(zips.1.count))
    }

    @Test(arguments: [false, true])
    func localHeadersThatSayOtherThanTheCentralDirectoryInTheSameLengthsAreFetched(keptSaysSo: Bool) async throws {
        // Every local header's extra field holds another time than the directory's, in as many bytes.
        // Whether the kept zip's headers did so too or not (the producer changed), the new zip's own
        // headers within its end show it: none is predicted, and they are fetched in the one delta.
        let files = Self.files(version: 1)
        let zips = (
            try await PythonZip.make(files, .init(year: 2020, localTimes: keptSaysSo)), try await PythonZip.make(files, .init(year: 2021, localTimes: true))
        )
        let perfect = try await offPool { try perfectDeltaBytes(old: zips.0, new: zips.1) }
        let log = LogRecorder()
        let (record, host, _) = try await update(mode: .multipart, v2: files, zips: zips, logger: log.logger)
        #expect(!log.messages.contains { $0.message == "assembled zip with predicted local headers does not verify; fetching them" })
        #expect(!log.messages.contains { $0.message == "assembled zip does not verify; downloading it whole" })
        #expect(log.messages.contains { $0.message == "delta plan" && $0.metadata["predicted"] == "false" })
        #expect(record.transfer?.method == .delta)
        #expect(record.signature == .verified)
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        #expect(host.zipRequests == 2, "the end, then the headers: \(host.rangeHeaders.count)")
        #expect(host.bytesSent <= perfect + perfect / 10 + 32 << 10, "sent \(host.bytesSent), a perfect delta \(perfect), the zip \(zips.1.count)")
    }

    @Test func predictedLocalHeadersTheSignatureProvesWrongAreFetchedInOneMoreDelta() async throws {
        // The new zip's headers within its end say what its central directory does, those before them
        // another time in as many bytes: the headers rebuilt from the directory are wrong, the signature
        // says so, and a delta that fetches them follows: one more delta, not a full download.
        let files = Self.files(version: 1)
        let early = Set(files.keys.filter { $0.hasPrefix("assets/part-") && Int($0.dropFirst(12).dropLast(3))! < 100 })
        let zips = (
            try await PythonZip.make(files, .init(year: 2020)), try await PythonZip.make(files, .init(year: 2021, localTimes: true, localTimesOnly: early))
        )
        let perfect = try await offPool { try perfectDeltaBytes(old: zips.0, new: zips.1) }
        let log = LogRecorder()
        let (record, host, _) = try await update(mode: .multipart, v2: files, zips: zips, logger: log.logger)
        #expect(log.messages.contains { $0.message == "assembled zip with predicted local headers does not verify; fetching them" })
        #expect(!log.messages.contains { $0.message == "assembled zip does not verify; downloading it whole" })
        #expect(record.transfer?.method == .delta)
        #expect(record.signature == .verified)
        #expect(record.transfer?.fetchedBytes == Int64(host.bytesSent))
        #expect(host.zipRequests == 3, "the end and the headers, after the end alone: \(host.rangeHeaders.count)")
        #expect(host.bytesSent <= 2 * (perfect + perfect / 10 + 32 << 10), "sent \(host.bytesSent), a perfect delta \(perfect), the zip \(zips.1.count)")
    }

    @Test func aZipFromAnotherProducerReusesTheCompressedDataTheKeptZipHolds() async throws {
        // Version 1 from the library's own writer, version 2 from Python's zipfile, the same files.
        let files = Self.files(version: 1)
        let zips = (try BundleFactory.zip(files), try await PythonZip.make(files, .init(year: 2021)))
        let perfect = try await offPool { try perfectDeltaBytes(old: zips.0, new: zips.1) }
        let (record, host, _) = try await update(mode: .multipart, v2: files, zips: zips)
        #expect(record.transfer?.method == .delta)
        #expect(host.bytesSent <= perfect + perfect / 10 + 32 << 10, "sent \(host.bytesSent), a perfect delta \(perfect), the zip \(zips.1.count)")
    }
}

/// Keeps what is logged, for tests that check what a run did.
final class LogRecorder: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let entries = NIOLockedValueBox<[Entry]>([])

    var messages: [Entry] { entries.withLockedValue { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(recorder: self) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let entry = Entry(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { _, new in new })
            recorder.entries.withLockedValue { $0.append(entry) }
        }
    }
}

/// What the kept zip's local headers teach about its producer: whether the next zip's local headers can
/// be rebuilt from its central directory, and which values it writes before a data descriptor.
extension DeltaUpdateTests {
    @Test func theLocalHeaderStyleIsLearntFromTheKeptZip() async throws {
        let files = Self.files(version: 1)
        let folder = try TemporaryDirectory.make().path
        func style(_ zip: [UInt8]) throws -> ZipLayout.LocalHeaderStyle? {
            try writeTestFile(folder + "/kept.zip", zip)
            return try ZipLayout.read(folder + "/kept.zip", maxEntries: 1000).localHeaderStyle
        }
        // libarchive (the library's writer, streamed): the uncompressed size, no CRC-32 or compressed size.
        #expect(try style(try BundleFactory.zip(files)) == .init(uncompressedSize: true))
        // Python's zipfile: every value when it can seek back, zeros when streamed.
        #expect(try style(try await PythonZip.make(files, .init())) == .init())
        #expect(try style(try await PythonZip.make(files, .init(streamed: true))) == .init())
        // Local extra fields of the predicted length that say something else: nothing is predicted.
        #expect(try style(try await PythonZip.make(files, .init(localTimes: true))) == nil)
        // Info-ZIP: longer extra fields in the local headers than in the directory, which no span
        // allows to guess (or, streamed, a longer extra field before a shorter data descriptor).
        let source = try BundleFactory.folder(files)
        #expect(await runTool("/bin/sh", ["-c", "cd '\(source)' && zip -qr '\(folder)/infozip.zip' . && zip -qr - . > '\(folder)/pipe.zip'"]) == 0)
        for name in ["infozip", "pipe"] {
            #expect(try ZipLayout.read(folder + "/\(name).zip", maxEntries: 1000).localHeaderStyle == nil, "\(name)")
        }
    }
}

extension DeltaUpdateTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("ZipCorpus").path

    /// Every zip of the corpus (7-Zip, Info-ZIP, macOS, Windows, WinRAR, WinZip, Go, Python, libarchive,
    /// hostile ones), and a zip of each local producer, taken as the kept zip: where its style is learnt,
    /// every local header and data descriptor predicted from its central directory is the zip's own,
    /// byte for byte. (A wrong guess would cost one more delta, never a wrong install: this checks that
    /// guesses are right where the kept zip says they will be.)
    @Test func predictedLocalHeadersAreTheZipsOwnAcrossProducers() async throws {
        var zips = try FileManager.default.subpathsOfDirectory(atPath: Self.corpus).filter { $0.hasSuffix(".zip") }.map { Self.corpus + "/" + $0 }
        let folder = try TemporaryDirectory.make().path
        let files = Self.files(version: 1)
        for (name, zip) in [
            ("library", try BundleFactory.zip(files)), ("python", try await PythonZip.make(files)),
            ("python-streamed", try await PythonZip.make(files, .init(streamed: true))),
        ] {
            try writeTestFile(folder + "/\(name).zip", zip)
            zips.append(folder + "/\(name).zip")
        }
        // Info-ZIP, streamed from a pipe too (data descriptors).
        let source = try BundleFactory.folder(files)
        #expect(await runTool("/bin/sh", ["-c", "cd '\(source)' && zip -qr '\(folder)/infozip.zip' . && zip -qr - . > '\(folder)/infozip-pipe.zip'"]) == 0)
        zips += ["infozip", "infozip-pipe"].map { folder + "/\($0).zip" }
        var predicted = 0
        var learnt: [String] = []
        for path in zips {
            guard let layout = try? ZipLayout.read(path, maxEntries: 100_000), let style = layout.localHeaderStyle else { continue }
            learnt.append(URL(fileURLWithPath: path).lastPathComponent)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            for span in layout.spans where span.end <= layout.directoryStart {
                guard let guess = span.predictedLocalBytes(style: style) else { continue }
                let start = Int(span.offset)
                #expect(Array(bytes[start..<(start + guess.header.count)]) == guess.header, "\(path): local header at \(start)")
                let end = Int(span.end)
                #expect(Array(bytes[(end - guess.descriptor.count)..<end]) == guess.descriptor, "\(path): data descriptor before \(end)")
                predicted += 1
            }
        }
        #expect(predicted > 500, "\(learnt)")
        for producer in ["library.zip", "python.zip", "python-streamed.zip", "time-win7.zip", "time-go.zip", "go-with-datadesc-sig.zip"] {
            #expect(learnt.contains(producer), "\(producer): \(learnt)")
        }
    }
}
