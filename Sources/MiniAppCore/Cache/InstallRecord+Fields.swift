import Foundation

extension InstallRecord {
    /// Which documents hold a field: the user's (`--json` of `download`, `install`, `load`, `info`), the
    /// cache's `record.json`, or both.
    package enum Place: Sendable {
        case both
        case user
        case storage

        /// Whether the user's document (`storage` false) or `record.json` (`storage` true) holds it.
        func holds(storage: Bool) -> Bool {
            switch self {
            case .both: true
            case .user: !storage
            case .storage: storage
            }
        }
    }

    /// One field of a record's JSON documents: the one place a field is declared. `Codable`, the fast
    /// reader a cache hit uses (``init(json:)``) and the command line's `--json` all go through
    /// ``fields``, so a field added there is written and read alike by each.
    package struct Field: Sendable {
        /// Its key in the JSON.
        package let key: String
        /// The documents that hold it.
        package let place: Place
        /// Its value in `record`, or `nil` when the documents leave it out.
        package let value: @Sendable (_ record: InstallRecord) -> JSONValue?
        /// Sets it in `record` from `value` (`nil` when the document has no such key); `false` when the
        /// value breaks its rules (a required field absent, a wrong type), and then the document is no record.
        package let read: @Sendable (_ record: inout InstallRecord, _ value: JSONValue?) -> Bool
    }

    /// Every field, sorted by key (the order every document writes them in).
    package static let fields: [Field] = [
        Field(key: "downgradedFrom", place: .both, value: { $0.downgradedFrom.map { .string($0.versionId) } }) { record, value in
            guard let versionId = Field.optionalString(value) else { return false }
            record.downgradedFrom = versionId.map { AppVersion(versionId: $0, versionTag: record.downgradedFrom?.versionTag) }
            return true
        },
        Field(key: "downgradedFromTag", place: .both, value: { $0.downgradedFrom?.versionTag.map { .string($0) } }) { record, value in
            // Read after downgradedFrom (the keys' order): a tag without its version is dropped.
            guard let tag = Field.optionalString(value) else { return false }
            record.downgradedFrom?.versionTag = tag
            return true
        },
        .string("fileList", \.fileListDigest, place: .storage, nullWhenAbsent: false),
        .string("id", \.id),
        .date("installedAt", \.installedAt),
        .string("keyId", \.keyId, nullWhenAbsent: false),
        .date("lastUsedAt", \.lastUsedAt),
        .string("path", \.path),
        .string("platform", \.platform),
        Field(key: "preview", place: .storage, value: { $0.preview ? .bool(true) : nil }) { record, value in
            switch value {
            case nil: record.preview = false
            case .bool(let flag)?: record.preview = flag
            default: return false
            }
            return true
        },
        .string("projectId", \.projectId, nullWhenAbsent: true),
        Field(key: "repairedAt", place: .both, value: { $0.repairedAt.map { .string(RecordCoding.format($0)) } }) { record, value in
            guard let text = Field.optionalString(value) else { return false }
            guard let text else {
                record.repairedAt = nil
                return true
            }
            guard let date = RecordCoding.parse(text) else { return false }
            record.repairedAt = date
            return true
        },
        .string("sha256", \.sha256),
        .raw("signature", \.signature),
        .string("signatureDetail", \.signatureDetail, nullWhenAbsent: false),
        .string("signatureValue", \.signatureValue, place: .storage, nullWhenAbsent: false),
        .string("signerKey", \.signerKey, place: .storage, nullWhenAbsent: false),
        .integer("sizeBytes", \.sizeBytes),
        .raw("source", \.source),
        Field(key: "transfer", place: .both, value: { record in
            record.transfer.map { transfer in
                .object(["fetchedBytes": .number(Double(transfer.fetchedBytes)), "method": .string(transfer.method.rawValue), "reusedBytes": .number(Double(transfer.reusedBytes))])
            }
        }) { record, value in
            switch value {
            case nil, .null?:
                record.transfer = nil
            case .object(let parts)?:
                guard case .string(let name)? = parts["method"], let method = Transfer.Method(rawValue: name),
                      let fetched = Field.integer(parts["fetchedBytes"]), let reused = Field.integer(parts["reusedBytes"]) else { return false }
                record.transfer = Transfer(method: method, fetchedBytes: fetched, reusedBytes: reused)
            default:
                return false
            }
            return true
        },
        .string("unsyncedBoot", \.unsyncedBoot, place: .storage, nullWhenAbsent: false),
        .string("versionId", \.versionId),
        .string("versionTag", \.versionTag, nullWhenAbsent: true),
        // The kept zip's size is the cache's to read, not stored; absent from a user's document it is 0.
        Field(key: "zipBytes", place: .user, value: { .number(Double($0.zipBytes)) }) { record, value in
            guard let value else {
                record.zipBytes = 0
                return true
            }
            guard let bytes = Field.integer(value) else { return false }
            record.zipBytes = bytes
            return true
        },
    ]

    /// A record with nothing set, which ``fields`` fill in.
    private static var blank: InstallRecord {
        InstallRecord(
            id: "", versionId: "", versionTag: nil, path: "", source: .cache, signature: .unverified, sha256: "", sizeBytes: 0,
            installedAt: .distantPast, lastUsedAt: .distantPast, platform: "", projectId: nil
        )
    }

    /// The record the JSON object `members` holds, read field by field; `nil` when it is not a record.
    package init?(members: [String: JSONValue]) {
        var record = Self.blank
        for field in Self.fields {
            guard field.read(&record, members[field.key]) else { return nil }
        }
        self = record
    }

    /// The JSON object of the record as the user's document (`storage` false) or `record.json` holds it.
    package func members(storage: Bool) -> [(key: String, value: JSONValue)] {
        Self.fields.compactMap { field in
            guard field.place.holds(storage: storage), let value = field.value(self) else { return nil }
            return (field.key, value)
        }
    }
}

extension InstallRecord.Field {
    /// A required text, or an optional one: written as `null` when absent if `nullWhenAbsent`, else left out.
    static func string(_ key: String, _ path: WritableKeyPath<InstallRecord, String> & Sendable, place: InstallRecord.Place = .both) -> Self {
        Self(key: key, place: place, value: { .string($0[keyPath: path]) }) { record, value in
            guard case .string(let text)? = value else { return false }
            record[keyPath: path] = text
            return true
        }
    }

    static func string(
        _ key: String, _ path: WritableKeyPath<InstallRecord, String?> & Sendable, place: InstallRecord.Place = .both, nullWhenAbsent: Bool
    ) -> Self {
        Self(key: key, place: place, value: { record in
            record[keyPath: path].map { .string($0) } ?? (nullWhenAbsent ? .null : nil)
        }) { record, value in
            guard let text = optionalString(value) else { return false }
            record[keyPath: path] = text
            return true
        }
    }

    /// A required date, as ``RecordCoding`` writes it.
    static func date(_ key: String, _ path: WritableKeyPath<InstallRecord, Date> & Sendable) -> Self {
        Self(key: key, place: .both, value: { .string(RecordCoding.format($0[keyPath: path])) }) { record, value in
            guard case .string(let text)? = value, let date = RecordCoding.parse(text) else { return false }
            record[keyPath: path] = date
            return true
        }
    }

    /// A required whole number.
    static func integer(_ key: String, _ path: WritableKeyPath<InstallRecord, Int64> & Sendable) -> Self {
        Self(key: key, place: .both, value: { .number(Double($0[keyPath: path])) }) { record, value in
            guard let number = integer(value) else { return false }
            record[keyPath: path] = number
            return true
        }
    }

    /// A required value of a string enumeration.
    static func raw<Value: RawRepresentable<String> & SendableMetatype>(_ key: String, _ path: WritableKeyPath<InstallRecord, Value> & Sendable) -> Self {
        Self(key: key, place: .both, value: { .string($0[keyPath: path].rawValue) }) { record, value in
            guard case .string(let text)? = value, let parsed = Value(rawValue: text) else { return false }
            record[keyPath: path] = parsed
            return true
        }
    }

    /// `.some(nil)` for an absent value or `null`, `.some(text)` for a string, `nil` for anything else.
    static func optionalString(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: .some(nil)
        case .string(let text)?: .some(text)
        default: nil
        }
    }

    /// The whole number `value` holds exactly, or `nil`.
    static func integer(_ value: JSONValue?) -> Int64? {
        guard case .number(let number)? = value else { return nil }
        return Int64(exactly: number)
    }
}
