public import Foundation

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

/// How a version's zip came: whole, or assembled from the app's kept zip and the ranges that changed.
public struct Transfer: Sendable, Equatable, Codable {
    /// The ways a zip can come.
    public enum Method: String, Sendable, Codable {
        /// Every byte came from the source (the network, or the local zip of `install`).
        case full
        /// Unchanged entries were copied from the kept zip of an earlier version; the rest was fetched.
        case delta
    }

    /// Whether the zip came whole or as a delta.
    public var method: Method
    /// The bytes read from the source: response bodies for a download (all attempts), the zip's size
    /// for a local bundle.
    public var fetchedBytes: Int64
    /// The bytes of the zip that did not travel: copied from the kept zip (entries whole, or their
    /// compressed data), or local headers rebuilt from the new zip's central directory.
    public var reusedBytes: Int64

    /// A transfer with the given method and byte counts.
    public init(method: Method, fetchedBytes: Int64, reusedBytes: Int64) {
        self.method = method
        self.fetchedBytes = fetchedBytes
        self.reusedBytes = reusedBytes
    }
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
    /// The SHA-256 of the version's `files.list`, kept in `record.json` only (not in the record's
    /// JSON for users): a list changed or cut short is damage. `nil` in records from before it existed.
    package var fileListDigest: String?
    /// How the zip came, for versions installed over the network or from a bundle.
    public var transfer: Transfer?
    /// When the version was last repaired from its kept zip, if ever.
    public var repairedAt: Date?
    /// The newer version this one was installed in place of, when it is an older version installed on
    /// purpose (asked for by id, or a rollback of the platform's latest allowed); written in the JSON as
    /// `downgradedFrom` (the version id) and `downgradedFromTag`.
    public var downgradedFrom: AppVersion?
    /// The size of the version's kept zip; 0 when none is kept. Not stored: the cache reads it.
    public var zipBytes: Int64 = 0
    /// The base64 signature the version was verified with, kept in `record.json` only, so that the kept
    /// zip can be verified again.
    package var signatureValue: String?
    /// The PEM public key the signature was verified with when it was given with the bundle rather than
    /// named by the platform, kept in `record.json` only, for the same reason.
    package var signerKey: String?
    /// Where the version first came from (``source`` says where this command got it): what a repair keeps.
    package var installedSource: InstallSource?
    /// The boot (``Durability/currentBoot``) in which the version was installed without waiting for the
    /// disk, kept in `record.json` only; `nil` when its install synced, or once a later boot found every
    /// file whole.
    package var unsyncedBoot: String?
    /// Whether the version was installed from the platform in preview mode, kept in `record.json` only:
    /// a pre-release tried in preview is no reason to call the published latest a rollback.
    package var preview = false

    /// Whether the version's files may differ from what was installed with nothing showing in their sizes
    /// and change times: installed without a sync in an earlier boot (a power cut may have left a file
    /// short or stale) and not found whole since, or in a boot that cannot be told.
    package var needsBootCheck: Bool {
        guard let unsyncedBoot else { return false }
        return unsyncedBoot != Durability.currentBoot
    }

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

    /// Written and read field by field from ``fields`` (`InstallRecord+Fields.swift`), as the fast
    /// reader and the command line's `--json` are: `record.json` when the encoder's `userInfo` has
    /// ``RecordCoding/storageKey``, else the user's document.
    public func encode(to encoder: any Encoder) throws {
        let storage = encoder.userInfo[RecordCoding.storageKey] as? Bool == true
        var container = encoder.container(keyedBy: FieldKey.self)
        for (key, value) in members(storage: storage) {
            try container.encode(RecordValue(value), forKey: FieldKey(stringValue: key))
        }
    }

    public init(from decoder: any Decoder) throws {
        guard case .object(let members) = try JSONValue(from: decoder), let record = InstallRecord(members: members) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an install record"))
        }
        self = record
    }

    /// A key of ``fields``.
    private struct FieldKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// A field's value, its whole numbers written as integers.
    private struct RecordValue: Encodable {
        let value: JSONValue
        init(_ value: JSONValue) { self.value = value }

        func encode(to encoder: any Encoder) throws {
            switch value {
            case .number(let number) where number == number.rounded() && abs(number) < 9e15:
                var container = encoder.singleValueContainer()
                try container.encode(Int64(number))
            case .object(let members):
                var container = encoder.container(keyedBy: FieldKey.self)
                for (key, member) in members { try container.encode(RecordValue(member), forKey: FieldKey(stringValue: key)) }
            default:
                try value.encode(to: encoder)
            }
        }
    }
}

extension InstallRecord {
    /// The record in `bytes` (a `record.json`), read without `Codable` (see ``JSONReader``) but field by
    /// field from the same ``fields`` as its `Decodable` conformance; `nil` when it is not a record.
    package init?(json bytes: [UInt8]) {
        guard case .object(let members)? = JSONReader.value(bytes) else { return nil }
        self.init(members: members)
    }
}

/// JSON coding for records: ISO-8601 UTC dates with milliseconds (`2026-11-22T09:58:06.237Z`), sorted keys.
///
/// Dates are formatted and parsed by hand: the ICU-backed formatters cost milliseconds to set up, which
/// the warm path of `load` cannot afford.
package enum RecordCoding {
    /// The `userInfo` key that makes an encoder write what only `record.json` holds.
    package static let storageKey = CodingUserInfoKey(rawValue: "miniapp.storage")!

    /// The encoder for `record.json`.
    package static func storageEncoder() -> JSONEncoder {
        let encoder = encoder(pretty: true)
        encoder.userInfo[storageKey] = true
        return encoder
    }

    /// An encoder for records and the CLI's JSON documents.
    package static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(format(date))
        }
        return encoder
    }

    /// A decoder matching ``encoder(pretty:)``; it takes dates with or without fractional seconds.
    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an ISO-8601 UTC date"))
            }
            return date
        }
        return decoder
    }

    /// `date` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    package static func format(_ date: Date) -> String {
        let milliseconds = self.milliseconds(date)
        var seconds = time_t(milliseconds.quotientAndRemainder(dividingBy: 1000).quotient - (milliseconds < 0 && milliseconds % 1000 != 0 ? 1 : 0))
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(fraction), 3))Z"
    }

    /// The date in `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, or `nil`.
    /// The whole milliseconds since 1970 of `date`, as ``format(_:)`` writes them. A date a few
    /// microseconds short of a millisecond is that millisecond: what a millisecond becomes after a
    /// trip through a `Double` of seconds.
    package static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000 + 0.01).rounded(.down))
    }

    package static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            ASCIIDigits.value(bytes[range]).map(Int32.init)
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1.asciiValue! }),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count > 21 else { return nil }
            var scale = 0.1
            for byte in bytes[20..<(bytes.count - 1)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                fraction += Double(byte - UInt8(ascii: "0")) * scale
                scale /= 10
            }
        } else if bytes.count != 20 {
            return nil
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Date(timeIntervalSince1970: Double(timegm(&parts)) + fraction)
    }
}
