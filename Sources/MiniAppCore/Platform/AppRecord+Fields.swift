import Foundation

extension AppRecord {
    /// One field of a platform's app record: the one place a field is declared. `Codable`, the fast
    /// reader of app lists (``listElements(_:)``), the texts `list` prints from (``AppListText``) and
    /// `list --json` all go through ``fields``, so a field added there is read and written alike by each.
    package struct Field: Sendable {
        /// What its text must be.
        package enum Kind: Sendable {
            /// A safe identifier (``Identifier/isValid(_:)``), required: a record without a valid one is dropped.
            case identifier
            /// Any string; dropped when it is not one.
            case text
            /// An absolute http(s) URL with a host (``AppRecord/webURL(_:)``), kept as `URL.absoluteString`;
            /// dropped when it is not one.
            case webURL
        }

        /// Its key in the record's JSON, or in its `version` object.
        package let key: String
        /// Whether it is a member of the record's `version` object rather than of the record.
        package let inVersion: Bool
        package let kind: Kind
        /// Its place in ``fields`` and in an ``AppListText/Entry``.
        package let slot: Int
        /// Its text in `record` as the platform's JSON holds it, or `nil` when the record has none.
        package let text: @Sendable (_ record: AppRecord) -> String?
        /// Sets it in `record` from a text that passed its kind's check.
        let set: @Sendable (_ record: inout AppRecord, _ text: String) -> Void

        package static let displayName = Field(key: "displayName", inVersion: false, kind: .text, slot: 0, text: { $0.displayName }) { $0.displayName = $1 }
        package static let icon = Field(key: "icon", inVersion: false, kind: .webURL, slot: 1, text: { $0.icon?.absoluteString }) { $0.icon = AppRecord.webURL($1) }
        package static let id = Field(key: "id", inVersion: false, kind: .identifier, slot: 2, text: { $0.id }) { $0.id = $1 }
        package static let promotionalImageUrl = Field(
            key: "promotionalImageUrl", inVersion: false, kind: .webURL, slot: 3, text: { $0.promotionalImageUrl?.absoluteString }
        ) { $0.promotionalImageUrl = AppRecord.webURL($1) }
        package static let promotionalText = Field(key: "promotionalText", inVersion: false, kind: .text, slot: 4, text: { $0.promotionalText }) {
            $0.promotionalText = $1
        }
        package static let versionId = Field(key: "versionId", inVersion: true, kind: .identifier, slot: 5, text: { $0.version.versionId }) {
            $0.version.versionId = $1
        }
        package static let versionTag = Field(key: "versionTag", inVersion: true, kind: .text, slot: 6, text: { $0.version.versionTag }) {
            $0.version.versionTag = $1
        }

        /// The key of the object that holds the version's fields.
        package static let versionKey = "version"

        /// Whether `text` is what its kind says (else the field is dropped, or for an identifier the record).
        func accepts(_ text: String) -> Bool {
            switch kind {
            case .identifier: Identifier.isValid(text)
            case .text: true
            case .webURL: AppRecord.webURL(text) != nil
            }
        }
    }

    /// Every field: the record's own sorted by key, then its version's (``Field/slot`` is the place here).
    package static let fields: [Field] = [.displayName, .icon, .id, .promotionalImageUrl, .promotionalText, .versionId, .versionTag]
    /// The record's own fields, and its version's, each in the order of ``fields``.
    package static let recordFields = fields.filter { !$0.inVersion }
    package static let versionFields = fields.filter(\.inVersion)

    /// A record with nothing set, which ``fields`` fill in; its required fields are empty until then.
    static var blank: AppRecord { AppRecord(id: "", version: AppVersion(versionId: "")) }

    /// The fields a record must have (its identifiers): without one, valid, it is dropped.
    package static let requiredFields = fields.filter { $0.kind == .identifier }

    /// Whether every required field was set, given `hasVersion` says whether the version object was there.
    static func isComplete(_ record: AppRecord, hasVersion: Bool) -> Bool {
        hasVersion && requiredFields.allSatisfy { $0.text(record)?.isEmpty == false }
    }
}

extension AppRecord: Codable {
    fileprivate struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes leniently: the identifiers (`id`, `version.versionId`) must be right, every other field is
    /// dropped when it is not.
    public init(from decoder: any Decoder) throws {
        var record = Self.blank
        let container = try decoder.container(keyedBy: Key.self)
        try Self.decode(Self.recordFields, from: container, into: &record)
        let version = try container.nestedContainer(keyedBy: Key.self, forKey: Key(stringValue: Field.versionKey))
        try Self.decode(Self.versionFields, from: version, into: &record)
        self = record
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for field in Self.recordFields {
            try container.encodeIfPresent(field.text(self), forKey: Key(stringValue: field.key))
        }
        try container.encode(version, forKey: Key(stringValue: Field.versionKey))
    }

    /// `fields` of `container` set in `record`: an identifier must be there and valid, any other field
    /// is dropped when it is not what its kind says.
    fileprivate static func decode(_ fields: [Field], from container: KeyedDecodingContainer<Key>, into record: inout AppRecord) throws {
        for field in fields {
            let key = Key(stringValue: field.key)
            guard field.kind == .identifier else {
                if let text = container.lenient(String.self, forKey: key), field.accepts(text) { field.set(&record, text) }
                continue
            }
            let text = try container.decode(String.self, forKey: key)
            guard field.accepts(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(field.key) is not a safe identifier")
            }
            field.set(&record, text)
        }
    }
}

extension AppVersion: Codable {
    /// Decodes the version fields of ``AppRecord/fields``: `versionId` must be a safe identifier.
    public init(from decoder: any Decoder) throws {
        var record = AppRecord.blank
        try AppRecord.decode(AppRecord.versionFields, from: try decoder.container(keyedBy: AppRecord.Key.self), into: &record)
        self = record.version
    }

    /// Encodes every version field, `null` when absent.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AppRecord.Key.self)
        let record = AppRecord(id: "", version: self)
        for field in AppRecord.versionFields {
            try container.encode(field.text(record), forKey: AppRecord.Key(stringValue: field.key))
        }
    }
}
