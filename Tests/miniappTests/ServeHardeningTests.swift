import Foundation
import MiniAppCore
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

/// `miniapp serve` facing hostile clients and a registry with planted files (issue 14).
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

    func stop(_ process: Process) {
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
        try Data("outside the registry".utf8).write(to: URL(fileURLWithPath: secret))

        try FileManager.default.moveItem(atPath: version + "/bundle.zip", toPath: work + "/real.zip")
        try FileManager.default.createSymbolicLink(atPath: version + "/bundle.zip", withDestinationPath: secret)
        let linked = try await fetch(zipURL)
        #expect(linked.0 == 404 && !String(decoding: linked.2, as: UTF8.self).contains("outside"))
        try FileManager.default.removeItem(atPath: version + "/bundle.zip")
        try FileManager.default.createDirectory(atPath: version + "/bundle.zip", withIntermediateDirectories: true)
        #expect(try await fetch(zipURL).0 == 404)

        // A linked manifest.json is not read through the metadata endpoint.
        try #"{"customMetaData": {"leak": "outside the registry"}}"#.write(toFile: work + "/outside.json", atomically: true, encoding: .utf8)
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
        for ignored in ["items=0-9", "bytes=0-1,3-4", "bytes=abc"] {
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
            try #"{"id": "\#(id)", "displayName": "Planted"}"#.write(toFile: root + "/apps/\(folder)/app.json", atomically: true, encoding: .utf8)
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
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<300 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!process.isRunning, "still running 30 s after SIGTERM")
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        } else {
            #expect(process.terminationStatus == 0)
        }
        process.waitUntilExit()
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
}
