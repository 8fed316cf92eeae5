import Foundation
import MiniAppCore

/// One version of a fixture app.
public struct FixtureVersion: Sendable {
    public var versionId: String
    public var versionTag: String?
    /// Absolute URLs of the version's files.
    public var files: [String]
    public var publicKeyId: String?
    /// The `Signature` header, when there is one.
    public var signature: String?
    /// The bundle's manifest.json as JSON text, for the metadata endpoint.
    public var metadataJSON: String
    /// Whether only preview mode sees this version.
    public var preview: Bool

    public init(versionId: String, versionTag: String? = nil, files: [String] = [], publicKeyId: String? = nil, signature: String? = nil, metadataJSON: String = "{}", preview: Bool = false) {
        self.versionId = versionId
        self.versionTag = versionTag
        self.files = files
        self.publicKeyId = publicKeyId
        self.signature = signature
        self.metadataJSON = metadataJSON
        self.preview = preview
    }
}

/// One fixture app; `versions` are newest first.
public struct FixtureApp: Sendable {
    public var id: String
    public var displayName: String?
    public var icon: String?
    public var versions: [FixtureVersion]

    public init(id: String, displayName: String? = nil, icon: String? = nil, versions: [FixtureVersion]) {
        self.id = id
        self.displayName = displayName
        self.icon = icon
        self.versions = versions
    }
}

/// A platform that answers exactly as platform-api.md describes, for a fixed catalogue.
public struct PlatformFixture: Sendable {
    public var projectId: String
    public var subscriptionKey: String?
    public var apps: [FixtureApp]
    /// Public keys by id: `ecKey` (base64) and `pemKey`.
    public var keys: [String: (ecKey: String?, pemKey: String?)]
    /// Preview tokens and the app they resolve to.
    public var previewCodes: [String: String]
    /// Files served as they are, by path (such as `/cdn/app/ver-1/app.zip`), with ETag and Range support.
    public var blobs: [String: [UInt8]] = [:]

    public init(projectId: String = "proj-1", subscriptionKey: String? = nil, apps: [FixtureApp], keys: [String: (ecKey: String?, pemKey: String?)] = [:], previewCodes: [String: String] = [:]) {
        self.projectId = projectId
        self.subscriptionKey = subscriptionKey
        self.apps = apps
        self.keys = keys
        self.previewCodes = previewCodes
    }

    /// The answer to one request.
    public func handle(_ request: RecordedRequest) -> StubResponse {
        guard request.method == "GET" else { return .error(405, "method not allowed") }
        if let blob = blobs[request.path] { return Self.serve(blob, request) }
        if let subscriptionKey, request.header("apiKey") != "ras-" + subscriptionKey {
            return .json(value: ["error": "invalid_client", "error_description": "missing or wrong subscription key"], status: 401)
        }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init).dropFirst()
        let segments = Array(parts.last == "" ? parts.dropLast() : parts)
        if segments.count == 2, segments[0] == "keys" {
            guard let key = keys[segments[1]] else { return .error(404, "no such key") }
            var object: [String: Any] = ["id": segments[1]]
            if let ecKey = key.ecKey { object["ecKey"] = ecKey }
            if let pemKey = key.pemKey { object["pemKey"] = pemKey }
            return .json(value: object)
        }
        guard segments.count >= 3, segments[0] == "host", segments[1] == projectId else { return .error(404, "unknown host") }
        switch Array(segments.dropFirst(2)) {
        case ["miniapps"]:
            return list(preview: false, appId: request.query["miniAppId"])
        case ["miniapps", "preview"]:
            return list(preview: true, appId: request.query["miniAppId"])
        case let rest where rest.count >= 5 && rest[0] == "miniapp" && rest[2] == "version":
            let preview = rest.count == 6 && rest[4] == "preview"
            guard rest.count == (preview ? 6 : 5),
                  let version = version(app: rest[1], version: rest[3], preview: preview) else { return .error(404, "unknown app or version") }
            switch rest.last {
            case "manifest":
                let base = "http://\(request.header("Host") ?? "127.0.0.1")/"
                var object: [String: Any] = ["manifest": version.files.map { $0.hasPrefix("http") ? $0 : base + $0 }]
                if let keyId = version.publicKeyId { object["publicKeyId"] = keyId }
                return .json(value: object, headers: version.signature.map { [("Signature", $0)] } ?? [])
            case "metadata":
                return .json("{\"bundleManifest\": \(version.metadataJSON)}")
            default:
                return .error(404, "unknown endpoint")
            }
        case let rest where rest.count == 2 && rest[0] == "preview-codes":
            guard let appId = previewCodes[rest[1]], let app = apps.first(where: { $0.id == appId }),
                  let version = app.versions.first else { return .error(404, "unknown token") }
            var host: [String: Any] = ["id": projectId]
            if let subscriptionKey { host["subscriptionKey"] = subscriptionKey }
            return .json(value: ["miniapp": record(app, version), "host": host])
        default:
            return .error(404, "unknown endpoint")
        }
    }

    /// A file answer honouring `Range: bytes=N-` and `If-Range`.
    public static func serve(_ blob: [UInt8], _ request: RecordedRequest) -> StubResponse {
        let etag = entityTag(blob)
        var headers = [("ETag", etag), ("Accept-Ranges", "bytes"), ("Content-Type", "application/zip")]
        if let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
           let start = Int(range.dropFirst(6).dropLast()), request.header("If-Range") == nil || request.header("If-Range") == etag {
            guard start < blob.count else { return StubResponse(status: 416, headers: [("Content-Range", "bytes */\(blob.count)")]) }
            headers.append(("Content-Range", "bytes \(start)-\(blob.count - 1)/\(blob.count)"))
            return StubResponse(status: 206, headers: headers, body: Array(blob[start...]))
        }
        return StubResponse(status: 200, headers: headers, body: blob)
    }

    private func visible(_ app: FixtureApp, preview: Bool) -> [FixtureVersion] {
        app.versions.filter { preview || !$0.preview }
    }

    private func version(app appId: String, version versionId: String, preview: Bool) -> FixtureVersion? {
        guard let app = apps.first(where: { $0.id == appId }) else { return nil }
        return visible(app, preview: preview).first { $0.versionId == versionId }
    }

    private func list(preview: Bool, appId: String?) -> StubResponse {
        if let appId {
            guard let app = apps.first(where: { $0.id == appId }), let latest = visible(app, preview: preview).first else {
                return .json("[]")
            }
            return .json(value: [record(app, latest)])
        }
        return .json(value: apps.compactMap { app in visible(app, preview: preview).first.map { record(app, $0) } })
    }

    private func record(_ app: FixtureApp, _ version: FixtureVersion) -> [String: Any] {
        var versionObject: [String: Any] = ["versionId": version.versionId]
        if let tag = version.versionTag { versionObject["versionTag"] = tag }
        var object: [String: Any] = ["id": app.id, "version": versionObject]
        if let name = app.displayName { object["displayName"] = name }
        if let icon = app.icon { object["icon"] = icon }
        return object
    }
}

/// The ETag of `blob`: its size and the start of its SHA-256 (OpenSSL's, quick even in a debug build).
func entityTag(_ blob: [UInt8]) -> String {
    "\"\(blob.count)-\(SHA256Digest.hash(blob).prefix(8).hexString)\""
}
