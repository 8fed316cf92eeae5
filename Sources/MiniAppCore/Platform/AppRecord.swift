public import Foundation

/// One version of a mini-app as the platform names it.
public struct AppVersion: Sendable, Equatable, Hashable {
    /// The platform's id of the version, used in URLs and signatures.
    public var versionId: String
    /// The human version such as `1.2.0`; `nil` when the platform does not report it.
    public var versionTag: String?

    /// A version with the given id and tag.
    public init(versionId: String, versionTag: String? = nil) {
        self.versionId = versionId
        self.versionTag = versionTag
    }
}

/// A mini-app as the platform lists it: its id, display fields, and one version.
public struct AppRecord: Sendable, Equatable {
    /// The app id.
    public var id: String
    /// The name to show.
    public var displayName: String?
    /// The icon's URL.
    public var icon: URL?
    /// The version this record describes (the latest, in a list).
    public var version: AppVersion
    /// A promotional image's URL.
    public var promotionalImageUrl: URL?
    /// A promotional text.
    public var promotionalText: String?

    /// A record with the given fields.
    public init(
        id: String, displayName: String? = nil, icon: URL? = nil, version: AppVersion,
        promotionalImageUrl: URL? = nil, promotionalText: String? = nil
    ) {
        self.id = id
        self.displayName = displayName
        self.icon = icon
        self.version = version
        self.promotionalImageUrl = promotionalImageUrl
        self.promotionalText = promotionalText
    }
}

extension AppRecord {
    /// The elements of a platform's app list, each record or `nil` when it lacks a valid id or version,
    /// read by ``JSONReader`` in one pass: what decoding `[LenientElement<AppRecord>]` with Foundation's
    /// `JSONDecoder` gives, about ten times faster on a list of 10,000. `nil` when the reader does not
    /// take the document (it is stricter than Foundation: trailing commas, invalid UTF-8, lone
    /// surrogates, numbers out of range, nesting past 256): the caller then decodes with Foundation,
    /// which gives the same records or the same error as before.
    package static func listElements<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [AppRecord?]? {
        JSONReader.appRecords(bytes, maxDepth: 256)
    }

    /// `text` as an absolute http(s) URL with a host, else `nil`.
    static func webURL(_ text: String) -> URL? {
        // A URL's scheme is what comes before its first colon: the text is parsed only when that is
        // http or https (in any case), and the parsed scheme is not read again.
        var scheme = text.utf8.prefix(6).makeIterator()
        for expected in "http".utf8 {
            guard let byte = scheme.next(), byte | 0x20 == expected else { return nil }
        }
        var next = scheme.next()
        if next.map({ $0 | 0x20 }) == UInt8(ascii: "s") { next = scheme.next() }
        guard next == UInt8(ascii: ":"), let url = URL(string: text), url.host != nil else { return nil }
        return url
    }
}

extension KeyedDecodingContainer {
    /// The value at `key`, or `nil` when it is missing, null or of the wrong type.
    package func lenient<T: Decodable>(_ type: T.Type, forKey key: Key) -> T? {
        (try? decodeIfPresent(type, forKey: key)) ?? nil
    }

    /// The absolute URL at `key`, or `nil` when it is missing or not an absolute URL with a host.
    package func lenientURL(forKey key: Key) -> URL? {
        lenient(String.self, forKey: key).flatMap(AppRecord.webURL)
    }
}
