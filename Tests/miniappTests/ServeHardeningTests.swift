import Foundation
import MiniAppCore
@testable import MiniAppRegistry
import MiniAppTestSupport
import Testing

/// A TCP connection to 127.0.0.1:`port`, with a receive buffer of `receiveBuffer` bytes when given.
func connectedSocket(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer { setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(descriptor)
        throw POSIXError(.ECONNREFUSED)
    }
    return descriptor
}

/// One HTTP/1.1 exchange over a plain socket, with exactly the request text given (headers a client
/// library would rewrite, such as Host, included); the whole answer as text.
func rawHTTP(port: Int, _ request: String) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            let descriptor: Int32
            do {
                descriptor = try connectedSocket(port: port)
            } catch {
                continuation.resume(throwing: error)
                return
            }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = request.withCString { send(descriptor, $0, strlen($0), 0) }
            var answer = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 { break }
                answer += buffer[0..<count]
            }
            close(descriptor)
            continuation.resume(returning: String(decoding: answer, as: UTF8.self))
        }
    }
}

/// A connection that sends `text` and then neither sends nor reads more; its descriptor.
func stallingConnection(port: Int, _ text: String) throws -> Int32 {
    let descriptor = try connectedSocket(port: port, receiveBuffer: 4096)
    _ = text.withCString { send(descriptor, $0, strlen($0), 0) }
    return descriptor
}

/// Reads from `descriptor` off the cooperative pool, waiting at most `seconds` for each read: the
/// first read's result (`all` false: bytes, 0 when closed, -1 when nothing came), or the bytes read
/// until the connection ended or went quiet (`all` true).
func receive(_ descriptor: Int32, waiting seconds: Int, all: Bool = false) async -> Int {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            guard all else { return continuation.resume(returning: recv(descriptor, &buffer, buffer.count, 0)) }
            var total = 0
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 { break }
                total += count
            }
            continuation.resume(returning: total)
        }
    }
}

/// The parts of a `multipart/byteranges` body with `boundary`, read as a client does (each part's
/// length from its `Content-Range`): each part's headers and bytes; `nil` when it is malformed.
func byteranges(_ body: Data, boundary: String) -> [(headers: [String: String], bytes: Data)]? {
    let bytes = [UInt8](body)
    let delimiter = Array("\r\n--\(boundary)".utf8)
    var parts: [(headers: [String: String], bytes: Data)] = []
    var at = 0
    func skip(_ expected: [UInt8]) -> Bool {
        guard bytes.count - at >= expected.count, Array(bytes[at..<(at + expected.count)]) == expected else { return false }
        at += expected.count
        return true
    }
    while true {
        guard skip(delimiter) else { return nil }
        if skip(Array("--\r\n".utf8)) { return at == bytes.count ? parts : nil }
        guard skip(Array("\r\n".utf8)) else { return nil }
        var headers: [String: String] = [:]
        while !skip(Array("\r\n".utf8)) {
            guard let end = bytes[at...].firstIndex(of: UInt8(ascii: "\r")), end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: "\n") else { return nil }
            let line = String(decoding: bytes[at..<end], as: UTF8.self)
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            at = end + 2
        }
        guard let range = headers["content-range"], range.hasPrefix("bytes "),
              case let bounds = (range.dropFirst(6).split(separator: "/").first ?? "").split(separator: "-"), bounds.count == 2,
              let first = Int(bounds[0]), let last = Int(bounds[1]), last >= first, bytes.count - at >= last - first + 1 else { return nil }
        parts.append((headers, Data(bytes[at..<(at + last - first + 1)])))
        at += last - first + 1
    }
}

/// `nil` when `body` is `expected`, else where they first differ: big bodies are compared with it, as a
/// failed `#expect(a == b)` of them would diff (and print) every byte.
func difference(_ body: Data, _ expected: Data) -> String? {
    guard body != expected else { return nil }
    let at = Array(Swift.zip(body, expected)).firstIndex { $0 != $1 } ?? min(body.count, expected.count)
    return "\(body.count) bytes instead of \(expected.count), first different at \(at)"
}

/// The `multipart/byteranges` body nginx would send for `ranges` of `whole` (a zip) with `boundary`.
func nginxLayout(_ whole: Data, _ ranges: [ClosedRange<Int>], boundary: String) -> Data {
    var body = Data()
    for range in ranges {
        body += Data("\r\n--\(boundary)\r\nContent-Type: application/zip\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(whole.count)\r\n\r\n".utf8)
        body += whole[range]
    }
    return body + Data("\r\n--\(boundary)--\r\n".utf8)
}

/// Why a test's answer is not the `multipart/byteranges` it should be.
struct NotMultipart: Error {
    var headers: [String: String]
}

/// The boundary and parts of a `multipart/byteranges` answer (status, headers, body).
func multipart(_ answer: (Int, [String: String], Data)) throws -> (boundary: String, parts: [(headers: [String: String], bytes: Data)]) {
    guard let boundary = multipartBoundary(answer.1["content-type"]), let parts = byteranges(answer.2, boundary: boundary) else {
        throw NotMultipart(headers: answer.1)
    }
    return (boundary, parts)
}

/// The boundary of a `multipart/byteranges` content type, `nil` for another type.
func multipartBoundary(_ contentType: String?) -> String? {
    guard let contentType, contentType.hasPrefix("multipart/byteranges; boundary=") else { return nil }
    return String(contentType.dropFirst("multipart/byteranges; boundary=".count))
}

/// The path of an nginx executable, `nil` when none is installed.
let nginxPath: String? = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx", "/usr/local/bin/nginx", "/opt/homebrew/bin/nginx"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// `miniapp serve` facing hostile clients and a registry with planted files.
@Suite struct ServeHardeningTests {
    let work = try! TemporaryDirectory.make().path

    /// A registry with one published version of `hello` (with `extra` files); its id and the version's folder.
    func registry(extra: [String: String] = [:]) async throws -> (root: String, versionId: String, version: String) {
        #expect(try await CommandRunner.run(["keygen", "--out", work + "/k"]).status == 0)
        let root = work + "/registry"
        let folder = try BundleFactory.folder(BundleFactory.helloFiles.merging(extra) { $1 })
        let published = try await CommandRunner.run(["publish", folder, "--registry", root, "--app-id", "hello", "--version-tag", "1.0.0", "--key", work + "/k.pem", "--json"])
        let versionId = try #require((try published.json() as? [String: Any])?["versionId"] as? String)
        return (root, versionId, root + "/apps/hello/versions/" + versionId)
    }

    func stop(_ process: ChildProcess) {
        process.terminate()
        process.waitUntilExit()
    }

    @Test func anEmptyZipIsServedEmptyAndNoRegistryFileStopsTheServer() async throws {
        let (root, versionId, version) = try await registry()
        let (process, base, _) = try await startServe(root)
        defer { stop(process) }
        #expect(truncate(version + "/bundle.zip", 0) == 0)
        let zipURL = base.appendingPathComponent("files/min-hello/ver-\(versionId)/bundle.zip")
        let (status, headers, body) = try await fetch(zipURL)
        #expect(status == 200 && headers["content-length"] == "0" && body.isEmpty)
        #expect(try await fetch(zipURL, headers: ["Range": "bytes=0-"]).0 == 416)
        #expect(try await fetch(zipURL, headers: ["Range": "bytes=-5"]).0 == 416)
        #expect(process.isRunning)
        #expect(try await fetch(base.appendingPathComponent("host/p/miniapps")).0 == 200)
    }

    @Test func onlyTheRegistrysOwnRegularFilesAreServed() async throws {
        let (root, versionId, version) = try await registry()
        let (process, base, _) = try await startServe(root)
        defer { stop(process) }
        let zipURL = base.appendingPathComponent("files/min-hello/ver-\(versionId)/bundle.zip")
        let secret = work + "/secret.zip"
        try writeTestFile(secret, Data("outside the registry".utf8))

        try FileManager.default.moveItem(atPath: version + "/bundle.zip", toPath: work + "/real.zip")
        try FileManager.default.createSymbolicLink(atPath: version + "/bundle.zip", withDestinationPath: secret)
        let linked = try await fetch(zipURL)
        #expect(linked.0 == 404 && !String(decoding: linked.2, as: UTF8.self).contains("outside"))
        try FileManager.default.removeItem(atPath: version + "/bundle.zip")
        try FileManager.default.createDirectory(atPath: version + "/bundle.zip", withIntermediateDirectories: true)
        #expect(try await fetch(zipURL).0 == 404)

        // A linked manifest.json is not read through the metadata endpoint.
        try writeTestFile(work + "/outside.json", #"{"customMetaData": {"leak": "outside the registry"}}"#)
        try FileManager.default.removeItem(atPath: version + "/manifest.json")
        try FileManager.default.createSymbolicLink(atPath: version + "/manifest.json", withDestinationPath: work + "/outside.json")
        let metadata = try await fetch(base.appendingPathComponent("host/p/miniapp/hello/version/\(versionId)/metadata"))
        #expect(metadata.0 != 200 && !String(decoding: metadata.2, as: UTF8.self).contains("outside"))

        // A version folder reached through a link is not the registry's.
        try FileManager.default.removeItem(atPath: version + "/bundle.zip")
        try FileManager.default.moveItem(atPath: work + "/real.zip", toPath: version + "/bundle.zip")
        try FileManager.default.moveItem(atPath: root + "/apps/hello", toPath: work + "/hello-app")
        try FileManager.default.createSymbolicLink(atPath: root + "/apps/hello", withDestinationPath: work + "/hello-app")
        #expect(try await fetch(zipURL).0 == 404)
        #expect(process.isRunning)
    }

    @Test func zipURLsComeFromThePublicURLOrAValidHostOnly() async throws {
        let (root, versionId, _) = try await registry()
        let path = "/host/p/miniapp/hello/version/\(versionId)/manifest"
        let (process, base, _) = try await startServe(root)
        let port = try #require(base.port)
        for host in ["evil.example/x?", "1@evil.example", "evil.example:99999", "a b", "evil.example#"] {
            let answer = try await rawHTTP(port: port, "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
            #expect(answer.contains("\"http://127.0.0.1:\(port)/files/min-hello/ver-\(versionId)/bundle.zip\""), "Host \(host): \(answer)")
        }
        let valid = try await rawHTTP(port: port, "GET \(path) HTTP/1.1\r\nHost: apps.example:8080\r\nConnection: close\r\n\r\n")
        #expect(valid.contains("\"http://apps.example:8080/files/min-hello/ver-\(versionId)/bundle.zip\""), "\(valid)")
        stop(process)

        let (behindProxy, proxied, _) = try await startServe(root, ["--public-url", "https://cdn.example/apps"])
        defer { stop(behindProxy) }
        let answer = try await rawHTTP(port: try #require(proxied.port), "GET \(path) HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n")
        #expect(answer.contains("\"https://cdn.example/apps/files/min-hello/ver-\(versionId)/bundle.zip\""), "\(answer)")
        expectFailure(try await CommandRunner.run(["serve", root, "--public-url", "ftp://x/"]), status: 64, mentioning: "--public-url")
    }

    @Test func rangesFollowRFC9110() async throws {
        let (root, versionId, version) = try await registry()
        let (process, base, _) = try await startServe(root)
        defer { stop(process) }
        let zipURL = base.appendingPathComponent("files/min-hello/ver-\(versionId)/bundle.zip")
        let whole = try Data(contentsOf: URL(fileURLWithPath: version + "/bundle.zip"))
        for ignored in ["items=0-9", "bytes=0-1,x-4", "bytes=5-2", "bytes=abc", "bytes=+1-2"] {
            let (status, _, body) = try await fetch(zipURL, headers: ["Range": ignored])
            #expect(status == 200 && body == whole, "\(ignored)")
        }
        let suffix = try await fetch(zipURL, headers: ["Range": "bytes=-5"])
        #expect(suffix.0 == 206 && suffix.2 == whole.suffix(5) && suffix.1["content-range"] == "bytes \(whole.count - 5)-\(whole.count - 1)/\(whole.count)")
        let middle = try await fetch(zipURL, headers: ["Range": "bytes=2-9"])
        #expect(middle.0 == 206 && middle.2 == whole[2...9])
        #expect(try await fetch(zipURL, headers: ["Range": "bytes=\(whole.count)-"]).0 == 416)
        let stale = try await fetch(zipURL, headers: ["Range": "bytes=2-9", "If-Range": "\"other\""])
        #expect(stale.0 == 200 && stale.2 == whole)
    }

    @Test func aPlantedAppRecordIsSkippedAndSaid() async throws {
        let (root, _, _) = try await registry()
        for (folder, id) in [("evil", "hello"), ("other", "../../etc")] {
            try FileManager.default.createDirectory(atPath: root + "/apps/\(folder)/versions", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: root + "/apps/hello/versions/" + (try FileManager.default.contentsOfDirectory(atPath: root + "/apps/hello/versions")[0]),
                                             toPath: root + "/apps/\(folder)/versions/v-1")
            try writeTestFile(root + "/apps/\(folder)/app.json", #"{"id": "\#(id)", "displayName": "Planted"}"#)
        }
        let (process, base, log) = try await startServe(root)
        let (status, _, body) = try await fetch(base.appendingPathComponent("host/p/miniapps"))
        stop(process)
        #expect(status == 200)
        let apps = try #require(try JSONSerialization.jsonObject(with: body) as? [[String: Any]])
        #expect(apps.compactMap { $0["id"] as? String } == ["hello"])
        #expect(!apps.contains { $0["displayName"] as? String == "Planted" })
        let lines = try String(contentsOf: log, encoding: .utf8)
        #expect(lines.contains("skipped apps/evil/app.json") && lines.contains("skipped apps/other/app.json"), "\(lines)")
    }

    @Test func answersCarryAPublicServersHeadersAndTheLogNeverTheKey() async throws {
        let (root, versionId, _) = try await registry()
        let (process, base, log) = try await startServe(root, ["--subscription-key", "s3cret-key"])
        let zip = try await fetch(base.appendingPathComponent("files/min-hello/ver-\(versionId)/bundle.zip"))
        let list = try await fetch(base.appendingPathComponent("host/p/miniapps"), headers: ["apiKey": "ras-s3cret-key"])
        stop(process)
        #expect(zip.1["cache-control"] == "public, max-age=31536000, immutable" && zip.1["x-content-type-options"] == "nosniff" && zip.1["etag"] != nil)
        #expect(list.0 == 200 && list.1["cache-control"] == "no-cache" && list.1["x-content-type-options"] == "nosniff" && list.1["etag"] != nil)
        let lines = try String(contentsOf: log, encoding: .utf8)
        #expect(!lines.contains("s3cret"))
        #expect(lines.contains("GET /files/min-hello/ver-\(versionId)/bundle.zip 200 \(zip.2.count)B"), "\(lines)")
    }

    @Test func aClientThatNeverFinishesItsHeaderIsCutOff() async throws {
        let (root, _, _) = try await registry()
        let (process, base, _) = try await startServe(root, ["--idle-timeout", "1"])
        defer { stop(process) }
        let port = try #require(base.port)
        // Half a request header, then nothing: the slowloris.
        let descriptor = try stallingConnection(port: port, "GET /host/p/miniapps HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        defer { close(descriptor) }
        // 0: the server closed it; -1 (EAGAIN): still open after 20 s.
        #expect(await receive(descriptor, waiting: 20) >= 0, "the server kept a connection with half a header open")
        #expect(try await fetch(base.appendingPathComponent("host/p/miniapps")).0 == 200)
    }

    @Test func aStopEndsWithinItsGraceWhileAClientStallsADownload() async throws {
        let (root, versionId, _) = try await registry(extra: ["big.bin": noise(24 << 20, seed: 3)])
        let (process, base, _) = try await startServe(root, ["--shutdown-grace", "1"])
        let port = try #require(base.port)
        // A download whose client reads nothing: the server's writes stall.
        let descriptor = try stallingConnection(port: port, "GET /files/min-hello/ver-\(versionId)/bundle.zip HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        defer { close(descriptor) }
        try await Task.sleep(for: .milliseconds(500))
        process.kill(SIGTERM)
        for _ in 0..<300 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!process.isRunning, "still running 30 s after SIGTERM")
        if process.isRunning {
            process.kill(SIGKILL)
        } else {
            #expect(process.terminationStatus == 0)
        }
        await process.exited()
    }

    @Test func connectionsBeyondTheLimitWaitUntilOthersLeave() async throws {
        let (root, _, _) = try await registry()
        let (process, base, _) = try await startServe(root, ["--max-connections", "2", "--idle-timeout", "60"])
        defer { stop(process) }
        let port = try #require(base.port)
        let holders = try (0..<2).map { _ in try stallingConnection(port: port, "GET /host/p/miniapps HTTP/1.1\r\nHost: 127.0.0.1\r\n") }
        try await Task.sleep(for: .milliseconds(300))
        let third = try stallingConnection(port: port, "GET /host/p/miniapps HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        defer { close(third) }
        #expect(await receive(third, waiting: 2) < 0, "a third connection was served while two were open")
        for holder in holders { close(holder) }
        #expect(await receive(third, waiting: 20) > 0, "the third connection was not served once the others left")
    }

    @Test func aClientThatStopsReadingADownloadIsCutOffAfterTheSendTimeout() async throws {
        let (root, versionId, version) = try await registry(extra: ["big.bin": noise(24 << 20, seed: 5)])
        let zipSize = try #require(try FileManager.default.attributesOfItem(atPath: version + "/bundle.zip")[.size] as? Int)
        let (process, base, _) = try await startServe(root, ["--send-timeout", "1"])
        defer { stop(process) }
        let descriptor = try stallingConnection(port: try #require(base.port), "GET /files/min-hello/ver-\(versionId)/bundle.zip HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        defer { close(descriptor) }
        try await Task.sleep(for: .seconds(4))
        // Reading now: a connection the server cut off ends before the whole zip; one it kept gets all.
        let received = await receive(descriptor, waiting: 20, all: true)
        #expect(received < zipSize, "the stalled download was not cut off (\(received) of \(zipSize) bytes arrived)")
        #expect(try await fetch(base.appendingPathComponent("host/p/miniapps")).0 == 200)
    }

    /// A registry whose zip is a few hundred kilobytes (a part spans several chunks read from disk);
    /// the zip's URL, its bytes, and the server (to stop).
    func bigZip() async throws -> (process: ChildProcess, url: URL, whole: Data) {
        let (root, versionId, version) = try await registry(extra: ["big.bin": noise(300 << 10, seed: 11)])
        let (process, base, _) = try await startServe(root)
        let whole = try Data(contentsOf: URL(fileURLWithPath: version + "/bundle.zip"))
        return (process, base.appendingPathComponent("files/min-hello/ver-\(versionId)/bundle.zip"), whole)
    }

    @Test func rangeHeadersAreReadAsRFC9110Says() {
        let parse = { RegistryResponder.parseRange($0, size: 1000) }
        #expect(parse("bytes=0-99") == .range(0..<100))
        #expect(parse("bytes=0-99, 200-299 ,-50") == .ranges([0..<100, 200..<300, 950..<1000]))
        #expect(parse("bytes=0-99,,100-199,") == .ranges([0..<100, 100..<200]))
        #expect(parse("bytes=500-,0-9,5-19") == .ranges([0..<20, 500..<1000]))
        #expect(parse("bytes=500-599,0-9,100-199") == .ranges([500..<600, 0..<10, 100..<200]))
        #expect(parse("bytes=0-9,5-99999999999999999999999") == .range(0..<1000))
        #expect(parse("bytes=1000-,99999999999999999999999-,-0") == .unsatisfiable)
        #expect(parse("bytes=1000-,7-8") == .range(7..<9))
        for ignored in ["bytes=", "bytes=,", "bytes=0-1,x", "bytes=+1-2", "bytes=1--2", "bytes=2-1,3-4", "bytes 0-1", "items=0-1,2-3"] {
            #expect(parse(ignored) == .ignored, "\(ignored)")
        }
        let many = (0..<RegistryResponder.maxRanges).map { "\($0 * 2)-\($0 * 2)" }
        #expect(parse("bytes=" + many.joined(separator: ",")) == .ranges((0..<200).map { ($0 * 2)..<($0 * 2 + 1) }))
        #expect(parse("bytes=" + (many + ["999-"]).joined(separator: ",")) == .ignored)
    }

    @Test func severalRangesComeAsMultipartByterangesLaidOutAsNginxDoes() async throws {
        let (process, zipURL, whole) = try await bigZip()
        defer { stop(process) }
        let size = whole.count
        #expect(size > 250_001)
        let asked = [0...99, 200...299, (size - 50)...(size - 1), 1000...250_000]
        let (status, headers, body) = try await fetch(zipURL, headers: ["Range": "bytes=0-99,200-299,-50, 1000-250000"])
        #expect(status == 206)
        let boundary = try #require(multipartBoundary(headers["content-type"]), "\(headers)")
        #expect(boundary.count >= 20 && boundary.allSatisfy(\.isHexDigit))
        #expect(headers["content-length"] == "\(body.count)")
        #expect(headers["content-range"] == nil)
        #expect(headers["etag"] != nil && headers["accept-ranges"] == "bytes" && headers["x-content-type-options"] == "nosniff")
        #expect(headers["cache-control"] == "public, max-age=31536000, immutable")
        let parts = try #require(byteranges(body, boundary: boundary))
        #expect(parts.map(\.bytes) == asked.map { whole[$0] })
        #expect(parts.map { $0.headers["content-range"] } == asked.map { "bytes \($0.lowerBound)-\($0.upperBound)/\(size)" })
        #expect(parts.allSatisfy { $0.headers["content-type"] == "application/zip" })
        #expect(difference(body, nginxLayout(whole, asked, boundary: boundary)) == nil)
        // Each answer has a boundary of its own.
        let again = try await fetch(zipURL, headers: ["Range": "bytes=0-99,200-299"])
        #expect(again.0 == 206 && multipartBoundary(again.1["content-type"]) != boundary)
        // Ends past the file are clamped, as for one range.
        let clamped = try await fetch(zipURL, headers: ["Range": "bytes=0-0,\(size - 2)-\(size + 100)"])
        let clampedBoundary = try multipart(clamped).boundary
        #expect(difference(clamped.2, nginxLayout(whole, [0...0, (size - 2)...(size - 1)], boundary: clampedBoundary)) == nil)
        #expect(process.isRunning)
    }

    @Test func moreThan200RangesGetTheWholeFile() async throws {
        let (process, zipURL, whole) = try await bigZip()
        defer { stop(process) }
        let ranges = (0..<201).map { "\($0 * 10)-\($0 * 10 + 4)" }
        let many = try await fetch(zipURL, headers: ["Range": "bytes=" + ranges.joined(separator: ",")])
        #expect(many.0 == 200 && difference(many.2, whole) == nil && many.1["content-length"] == "\(whole.count)")
        let most = try await fetch(zipURL, headers: ["Range": "bytes=" + ranges.dropLast().joined(separator: ",")])
        #expect(most.0 == 206)
        let parts = try multipart(most).parts
        #expect(parts.map(\.bytes) == (0..<200).map { whole[($0 * 10)...($0 * 10 + 4)] })
    }

    @Test func overlappingRangesAreMergedIntoTheirUnion() async throws {
        let (process, zipURL, whole) = try await bigZip()
        defer { stop(process) }
        let size = whole.count
        // Overlapping into one range: a plain single-range answer.
        let one = try await fetch(zipURL, headers: ["Range": "bytes=0-99,50-149,10-20"])
        #expect(one.0 == 206 && one.2 == whole[0...149] && one.1["content-range"] == "bytes 0-149/\(size)")
        // The same bytes asked for over and over are sent once (no amplification).
        let repeated = try await fetch(zipURL, headers: ["Range": "bytes=" + Array(repeating: "0-", count: 200).joined(separator: ",")])
        #expect(repeated.0 == 206 && difference(repeated.2, whole) == nil && repeated.1["content-range"] == "bytes 0-\(size - 1)/\(size)")
        // Some overlapping: the sorted union, every byte asked for in it once.
        let asked = [(size - 100)...(size - 1), 0...9, 5...19, 1000...1999, 1500...2500]
        let (status, headers, body) = try await fetch(zipURL, headers: ["Range": "bytes=-100,0-9,5-19,1000-1999,1500-2500"])
        #expect(status == 206 && headers["content-length"] == "\(body.count)")
        let parts = try multipart((status, headers, body)).parts
        #expect(parts.map(\.bytes) == [whole[0...19], whole[1000...2500], whole[(size - 100)...(size - 1)]])
        var covered = IndexSet()
        for part in parts {
            let bounds = try #require(part.headers["content-range"]?.dropFirst(6).split(separator: "/").first?.split(separator: "-").compactMap { Int($0) })
            #expect(whole[bounds[0]...bounds[1]] == part.bytes)
            covered.insert(integersIn: bounds[0]...bounds[1])
        }
        #expect(asked.allSatisfy { covered.contains(integersIn: $0) })
        #expect(parts.reduce(0) { $0 + $1.bytes.count } <= size)
    }

    @Test func unsatisfiableRangesAreDroppedAndNoneLeftIs416() async throws {
        let (process, zipURL, whole) = try await bigZip()
        defer { stop(process) }
        let size = whole.count
        let mixed = try await fetch(zipURL, headers: ["Range": "bytes=\(size)-,0-9,-0,\(size + 5)-\(size + 9),20-29"])
        #expect(mixed.0 == 206)
        let parts = try multipart(mixed).parts
        #expect(parts.map(\.bytes) == [whole[0...9], whole[20...29]])
        let single = try await fetch(zipURL, headers: ["Range": "bytes=\(size)-,0-9,-0"])
        #expect(single.0 == 206 && single.2 == whole[0...9] && single.1["content-range"] == "bytes 0-9/\(size)")
        let none = try await fetch(zipURL, headers: ["Range": "bytes=\(size)-,\(size + 1)-\(size + 2),-0"])
        #expect(none.0 == 416 && none.1["content-range"] == "bytes */\(size)" && none.2.isEmpty)
        // One range that is not a byte range at all: the header is ignored.
        let bad = try await fetch(zipURL, headers: ["Range": "bytes=0-9,20-10"])
        #expect(bad.0 == 200 && difference(bad.2, whole) == nil)
        #expect(process.isRunning)
    }

    @Test func aHeadOrAStaleIfRangeOfSeveralRanges() async throws {
        let (process, zipURL, whole) = try await bigZip()
        defer { stop(process) }
        let port = try #require(zipURL.port)
        let get = try await fetch(zipURL, headers: ["Range": "bytes=0-99,200-299"])
        let head = try await rawHTTP(port: port, "HEAD \(zipURL.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-99,200-299\r\nConnection: close\r\n\r\n")
        let (top, rest) = try #require(head.range(of: "\r\n\r\n").map { (head[..<$0.lowerBound], head[$0.upperBound...]) })
        let lines = top.lowercased().split(separator: "\r\n")
        #expect(lines.first?.hasPrefix("http/1.1 206") == true, "\(head)")
        #expect(lines.contains("content-length: \(get.2.count)") && lines.contains { $0.hasPrefix("content-type: multipart/byteranges; boundary=") }, "\(head)")
        #expect(rest.isEmpty, "a HEAD answer had a body")
        let etag = try #require(get.1["etag"])
        let stale = try await fetch(zipURL, headers: ["Range": "bytes=0-99,200-299", "If-Range": "\"other\""])
        #expect(stale.0 == 200 && difference(stale.2, whole) == nil)
        let fresh = try await fetch(zipURL, headers: ["Range": "bytes=0-99,200-299", "If-Range": etag])
        let freshBoundary = try multipart(fresh).boundary
        #expect(fresh.0 == 206 && difference(fresh.2, nginxLayout(whole, [0...99, 200...299], boundary: freshBoundary)) == nil)
    }

    @Test(.enabled(if: nginxPath != nil, "nginx is not installed"))
    func multipartAnswersMatchNginxs() async throws {
        let (process, zipURL, whole) = try await bigZip()
        defer { stop(process) }
        let prefix = work + "/nginx"
        try FileManager.default.createDirectory(atPath: prefix + "/root/logs", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: prefix + "/logs", withIntermediateDirectories: true)
        try writeTestFile(prefix + "/root/bundle.zip", whole)
        let port = try freePort()
        try writeTestFile(prefix + "/nginx.conf", """
            daemon off; master_process off; pid \(prefix)/nginx.pid; error_log \(prefix)/error.log;
            events {}
            http {
                access_log off; types { application/zip zip; }
                client_body_temp_path \(prefix)/tmp; proxy_temp_path \(prefix)/tmp; fastcgi_temp_path \(prefix)/tmp;
                uwsgi_temp_path \(prefix)/tmp; scgi_temp_path \(prefix)/tmp;
                server { listen 127.0.0.1:\(port); root \(prefix)/root; }
            }
            """)
        let nginx = try ChildProcess(try #require(nginxPath), ["-p", prefix, "-c", prefix + "/nginx.conf"])
        defer { nginx.stop() }
        let nginxURL = try #require(URL(string: "http://127.0.0.1:\(port)/bundle.zip"))
        for _ in 0..<100 where (try? await fetch(nginxURL)) == nil { try await Task.sleep(for: .milliseconds(50)) }
        for range in ["bytes=0-99,200-299,-50", "bytes=0-0,1000-250000,\(whole.count - 2)-\(whole.count + 100)", "bytes=5-9,\(whole.count)-,20-29"] {
            let ours = try await fetch(zipURL, headers: ["Range": range])
            let theirs = try await fetch(nginxURL, headers: ["Range": range])
            #expect(ours.0 == theirs.0, "\(range)")
            let mine = try #require(multipartBoundary(ours.1["content-type"]))
            let other = try #require(multipartBoundary(theirs.1["content-type"]), "\(theirs.1)")
            #expect(theirs.1["content-length"] == "\(theirs.2.count)")
            #expect(difference(ours.2, theirs.2.replacing(Data(other.utf8), with: Data(mine.utf8))) == nil, "\(range)")
        }
    }
}
