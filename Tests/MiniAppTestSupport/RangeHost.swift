import Foundation
import MiniAppCore
import MiniAppKit
public import NIOConcurrencyHelpers

/// How a ``RangeHost`` answers `Range` requests for zips.
public enum RangeMode: Sendable {
    /// Single ranges as 206, several as 206 `multipart/byteranges` (as nginx does).
    case multipart
    /// Single ranges as 206; several as a 206 of the first range alone.
    case firstRangeOnly
    /// Several ranges as a 200 with the whole zip (as nginx with `max_ranges 1`).
    case wholeForSeveral
    /// No range support: every answer is a 200 with the whole zip.
    case none
    /// As `multipart`, but the ETag changes after the first request (a zip replaced mid-update).
    case changingETag
    /// As `multipart`, but one byte of the first range of every answer that does not end at the zip's end is flipped.
    case tampered
    /// As `multipart`, but later answers claim a zip one byte longer.
    case lyingSize
}

/// Serves zips with `Range` support in one of several ways, counting requests and body bytes: the
/// server side of delta-update tests.
public final class RangeHost: Sendable {
    private struct State {
        var mode: RangeMode
        var requests = 0
        var zipRequests = 0
        var bytes = 0
        var ranges: [String] = []
        var probes = 0
        var answersProbes = true
        var rangeDelay: Duration?
        var arrivals: [ContinuousClock.Instant] = []
        var overlap = 0
    }

    private let state: NIOLockedValueBox<State>

    public init(mode: RangeMode) {
        state = NIOLockedValueBox(State(mode: mode))
    }

    public var mode: RangeMode {
        get { state.withLockedValue { $0.mode } }
        set { state.withLockedValue { $0.mode = newValue } }
    }

    /// GET requests for zips, and the body bytes sent for them, since the last ``reset()``.
    public var zipRequests: Int { state.withLockedValue { $0.zipRequests } }
    public var bytesSent: Int { state.withLockedValue { $0.bytes } }
    /// The `Range` headers of those requests, in order.
    public var rangeHeaders: [String] { state.withLockedValue { $0.ranges } }
    /// HEAD requests for zips (which get the headers a GET would, and no body), since the last ``reset()``.
    public var probes: Int { state.withLockedValue { $0.probes } }
    /// Whether HEAD requests are answered (else `405`, as some servers do).
    public var answersProbes: Bool {
        get { state.withLockedValue { $0.answersProbes } }
        set { state.withLockedValue { $0.answersProbes = newValue } }
    }

    /// How long each answer to a GET with a `Range` waits before it goes (a server slow to answer, as
    /// object stores are), and the most such requests that arrived within that time of each other: more
    /// than one means the client did not wait for one answer before asking the next.
    public var rangeDelay: Duration? {
        get { state.withLockedValue { $0.rangeDelay } }
        set { state.withLockedValue { $0.rangeDelay = newValue } }
    }
    public var rangeOverlap: Int { state.withLockedValue { $0.overlap } }

    public func reset() {
        state.withLockedValue {
            $0.arrivals = []
            $0.overlap = 0
            $0.zipRequests = 0
            $0.requests = 0
            $0.bytes = 0
            $0.ranges = []
            $0.probes = 0
        }
    }

    /// The answer to `request` for `blob`.
    public func serve(_ blob: [UInt8], _ request: RecordedRequest) -> StubResponse {
        if request.method == "HEAD" {
            let answered = state.withLockedValue { state in
                state.probes += 1
                return state.answersProbes
            }
            guard answered else { return StubResponse(status: 405) }
            return answer(blob, request, counted: false)
        }
        var response = answer(blob, request)
        state.withLockedValue { state in
            state.zipRequests += 1
            state.bytes += response.body.count
            if let delay = state.rangeDelay, request.header("Range") != nil {
                let now = ContinuousClock.now
                state.arrivals = state.arrivals.filter { now - $0 < delay } + [now]
                state.overlap = max(state.overlap, state.arrivals.count)
                response.delay = delay
            }
        }
        return response
    }

    private func answer(_ blob: [UInt8], _ request: RecordedRequest, counted: Bool = true) -> StubResponse {
        let (mode, count) = state.withLockedValue { state -> (RangeMode, Int) in
            guard counted else { return (state.mode, max(state.requests, 1)) }
            state.requests += 1
            if let range = request.header("Range") { state.ranges.append(range) }
            return (state.mode, state.requests)
        }
        let etag = mode == .changingETag && count > 1 ? "\"changed-\(count)\"" : entityTag(blob)
        var headers = [("ETag", etag), ("Accept-Ranges", mode == .none ? "none" : "bytes")]
        let whole = StubResponse(status: 200, headers: headers + [("Content-Type", "application/zip")], body: blob)
        guard mode != .none, let value = request.header("Range"), let ranges = Self.ranges(value, size: blob.count) else { return whole }
        guard !ranges.isEmpty else { return StubResponse(status: 416, headers: [("Content-Range", "bytes */\(blob.count)")]) }
        let total = mode == .lyingSize && count > 1 ? blob.count + 1 : blob.count
        var data = blob
        if mode == .tampered, counted, ranges.first!.upperBound < blob.count {
            data[ranges.first!.lowerBound] ^= 0xFF
        }
        if ranges.count == 1 || mode == .firstRangeOnly {
            let range = ranges[0]
            headers.append(("Content-Type", "application/zip"))
            headers.append(("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"))
            return StubResponse(status: 206, headers: headers, body: Array(data[range]))
        }
        if mode == .wholeForSeveral { return whole }
        let boundary = "00000000000000000042"
        var body: [UInt8] = []
        for range in ranges {
            body += Array("\r\n--\(boundary)\r\nContent-Type: application/zip\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)\r\n\r\n".utf8)
            body += data[range]
        }
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        headers.append(("Content-Type", "multipart/byteranges; boundary=\(boundary)"))
        return StubResponse(status: 206, headers: headers, body: body)
    }

    /// The ranges of `bytes=...` within `size` bytes, unsatisfiable ones left out; `nil` when the
    /// header is not a byte-range set.
    static func ranges(_ value: String, size: Int) -> [Range<Int>]? {
        guard value.hasPrefix("bytes=") else { return nil }
        var result: [Range<Int>] = []
        for spec in value.dropFirst(6).split(separator: ",") {
            let parts = spec.trimmingCharacters(in: .whitespaces).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            if parts[0].isEmpty {
                guard let suffix = Int(parts[1]) else { return nil }
                if suffix > 0, size > 0 { result.append(max(size - suffix, 0)..<size) }
                continue
            }
            guard let first = Int(parts[0]) else { return nil }
            let last = parts[1].isEmpty ? size - 1 : min(Int(parts[1]) ?? -1, size - 1)
            guard last >= first || first >= size else { return nil }
            if first < size { result.append(first..<(last + 1)) }
        }
        return result
    }
}

/// A platform with versions 1 and 2 of app-hello (``BundleFactory/updateFiles(version:changed:)``)
/// whose zips a ``RangeHost`` serves; version 2 is listed once ``published`` is set.
public struct UpdatePlatform: Sendable {
    public var fixture: PlatformFixture
    public let host: RangeHost
    /// The zips by request path (`/zips/ver-1.zip`, `/zips/ver-2.zip`).
    public let zips: [String: [UInt8]]
    /// Whether version 2 is published yet.
    public let published = NIOLockedValueBox(false)

    public init(host: RangeHost, v2: [String: String] = BundleFactory.updateFiles(version: 2)) throws {
        try self.init(host: host, zips: (try BundleFactory.zip(BundleFactory.updateFiles(version: 1)), try BundleFactory.zip(v2)))
    }

    /// Versions 1 and 2 with zips made elsewhere (by another producer, or crafted).
    public init(host: RangeHost, zips made: (v1: [UInt8], v2: [UInt8])) throws {
        let key = try SigningKey.generate()
        var versions: [FixtureVersion] = []
        var zips: [String: [UInt8]] = [:]
        for (id, zip) in [("ver-1", made.v1), ("ver-2", made.v2)] {
            let signed = try BundleFactory.sign(zip, versionId: id, key: key)
            let path = "zips/\(id).zip"
            zips["/" + path] = signed.zip
            versions.append(FixtureVersion(versionId: id, versionTag: id, files: [path], publicKeyId: "key-1", signature: signed.signature))
        }
        fixture = PlatformFixture(
            apps: [FixtureApp(id: "app-hello", versions: versions.reversed())],
            keys: ["key-1": (ecKey: key.publicKey.ecKey, pemKey: key.publicKey.pem)]
        )
        self.host = host
        self.zips = zips
    }

    public func handle(_ request: RecordedRequest) -> StubResponse {
        if let zip = zips[request.path] { return host.serve(zip, request) }
        guard published.withLockedValue({ $0 }) else {
            var early = fixture
            early.apps[0].versions = fixture.apps[0].versions.filter { $0.versionId == "ver-1" }
            return early.handle(request)
        }
        return fixture.handle(request)
    }
}
