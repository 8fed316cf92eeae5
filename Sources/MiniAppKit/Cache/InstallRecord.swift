import Foundation

/// Where a command got the bundle it reports.
public enum InstallSource: String, Sendable, Codable {
    /// Downloaded by this command.
    case network
    /// Reused from the cache.
    case cache
    /// Installed from a local zip.
    case bundle
}

/// What the signature check said when the version was installed.
public enum SignatureStatus: String, Sendable, Codable {
    /// Checked and valid.
    case verified
    /// Not checked: no signature, or nothing to check it with (advisory policy only).
    case unverified
    /// Checked and invalid (advisory policy only).
    case failed
}

/// A cached version, as spec/cli.md documents it; written last, so a version without one does not exist.
public struct InstallRecord: Sendable, Equatable, Codable {
    /// The app id.
    public var id: String
    /// The version id.
    public var versionId: String
    /// The version tag, when the platform reported one.
    public var versionTag: String?
    /// The folder holding `index.html`.
    public var path: String
    /// Where the command that reports this record got the bundle.
    public var source: InstallSource
    /// The signature check's result at install time.
    public var signature: SignatureStatus
    /// Why the signature is not `verified`, when it is not.
    public var signatureDetail: String?
    /// The id of the key that verified the signature.
    public var keyId: String?
    /// The lowercase hex SHA-256 of the zip.
    public var sha256: String
    /// The sum of the sizes of the installed files.
    public var sizeBytes: Int64
    /// When the version was installed.
    public var installedAt: Date
    /// When the version was last downloaded, installed or loaded.
    public var lastUsedAt: Date
    /// The platform the version came from (a URL, a registry directory, or `local`).
    public var platform: String
    /// The project id the version came from, when there is one.
    public var projectId: String?

    /// A record with the given values.
    public init(
        id: String, versionId: String, versionTag: String?, path: String, source: InstallSource,
        signature: SignatureStatus, signatureDetail: String? = nil, keyId: String? = nil, sha256: String,
        sizeBytes: Int64, installedAt: Date, lastUsedAt: Date, platform: String, projectId: String?
    ) {
        self.id = id
        self.versionId = versionId
        self.versionTag = versionTag
        self.path = path
        self.source = source
        self.signature = signature
        self.signatureDetail = signatureDetail
        self.keyId = keyId
        self.sha256 = sha256
        self.sizeBytes = sizeBytes
        self.installedAt = installedAt
        self.lastUsedAt = lastUsedAt
        self.platform = platform
        self.projectId = projectId
    }

    private enum CodingKeys: String, CodingKey {
        case id, versionId, versionTag, path, source, signature, signatureDetail, keyId, sha256, sizeBytes
        case installedAt, lastUsedAt, platform, projectId
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(versionId, forKey: .versionId)
        try container.encode(versionTag, forKey: .versionTag)
        try container.encode(path, forKey: .path)
        try container.encode(source, forKey: .source)
        try container.encode(signature, forKey: .signature)
        try container.encodeIfPresent(signatureDetail, forKey: .signatureDetail)
        try container.encodeIfPresent(keyId, forKey: .keyId)
        try container.encode(sha256, forKey: .sha256)
        try container.encode(sizeBytes, forKey: .sizeBytes)
        try container.encode(installedAt, forKey: .installedAt)
        try container.encode(lastUsedAt, forKey: .lastUsedAt)
        try container.encode(platform, forKey: .platform)
        try container.encode(projectId, forKey: .projectId)
    }
}

/// JSON coding for records: ISO-8601 dates with milliseconds, sorted keys.
public enum RecordCoding {
    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
    private static let lock = NSLock()

    /// An encoder for records and the CLI's JSON documents.
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(lock.withLock { formatter.string(from: date) })
        }
        return encoder
    }

    /// A decoder matching ``encoder(pretty:)``; it also takes dates without fractional seconds.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            if let date = lock.withLock({ formatter.date(from: text) }) ?? ISO8601DateFormatter().date(from: text) { return date }
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an ISO-8601 date"))
        }
        return decoder
    }
}
