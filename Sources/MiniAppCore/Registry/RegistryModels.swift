public import Foundation

/// `apps/<app-id>/app.json`: what the platform lists about an app, besides its versions.
public struct RegistryApp: Sendable, Codable, Equatable {
    /// The app id.
    public var id: String
    /// The name the platform lists the app under.
    public var displayName: String?
    /// The app's icon URL.
    public var icon: String?
    /// The promotional image's URL.
    public var promotionalImageUrl: String?
    /// The promotional text.
    public var promotionalText: String?

    /// An app entry with the given fields.
    public init(id: String, displayName: String? = nil, icon: String? = nil, promotionalImageUrl: String? = nil, promotionalText: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.icon = icon
        self.promotionalImageUrl = promotionalImageUrl
        self.promotionalText = promotionalText
    }
}

/// `apps/<app-id>/versions/<version-id>/version.json`: one published (or preview) version.
public struct RegistryVersion: Sendable, Codable, Equatable {
    /// The version id.
    public var versionId: String
    /// The version's tag, as the publisher named it.
    public var versionTag: String
    /// Whether only preview mode sees it.
    public var preview: Bool
    /// When it was published.
    public var publishedAt: Date
    /// The id of the key that signed it (`keys/<id>.json`).
    public var publicKeyId: String
    /// Base64 DER signature over `versionId` + hex SHA-256 of `bundle.zip`.
    public var signature: String
    /// The lowercase hex SHA-256 of `bundle.zip`.
    public var sha256: String
    /// The size of `bundle.zip` in bytes.
    public var sizeBytes: Int64

    /// A version entry with the given fields.
    public init(versionId: String, versionTag: String, preview: Bool, publishedAt: Date, publicKeyId: String, signature: String, sha256: String, sizeBytes: Int64) {
        self.versionId = versionId
        self.versionTag = versionTag
        self.preview = preview
        self.publishedAt = publishedAt
        self.publicKeyId = publicKeyId
        self.signature = signature
        self.sha256 = sha256
        self.sizeBytes = sizeBytes
    }
}

/// `preview-codes/<token>.json`: the version a preview code points at.
public struct RegistryPreviewCode: Sendable, Codable, Equatable {
    /// The app id.
    public var appId: String
    /// The version id.
    public var versionId: String

    /// A code that points at version `versionId` of app `appId`.
    public init(appId: String, versionId: String) {
        self.appId = appId
        self.versionId = versionId
    }
}
