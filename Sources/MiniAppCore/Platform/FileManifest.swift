public import Foundation

/// The files of one version, with what is needed to verify them.
public struct FileManifest: Sendable, Equatable {
    /// The absolute URLs of the version's files; normally one zip.
    public var urls: [URL]
    /// The id of the public key that signed the version, when the platform names one.
    public var publicKeyId: String?
    /// The base64 DER signature from the `Signature` header, when the platform sent one.
    public var signature: String?

    /// A manifest with the given fields.
    public init(urls: [URL], publicKeyId: String? = nil, signature: String? = nil) {
        self.urls = urls
        self.publicKeyId = publicKeyId
        self.signature = signature
    }
}

extension FileManifest: Decodable {
    private enum CodingKeys: String, CodingKey { case manifest, files, publicKeyId }

    /// Decodes `{"manifest": [url...], "publicKeyId": id}` (also `files` for the URL list).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let texts = try container.decodeIfPresent([String].self, forKey: .manifest)
            ?? container.decode([String].self, forKey: .files)
        guard !texts.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .manifest, in: container, debugDescription: "the file list is empty")
        }
        urls = try texts.map { text in
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                  ["http", "https"].contains(scheme), url.host != nil else {
                throw DecodingError.dataCorruptedError(forKey: .manifest, in: container, debugDescription: "a file URL is not an absolute http(s) URL")
            }
            return url
        }
        publicKeyId = container.lenient(String.self, forKey: .publicKeyId).flatMap { $0.isEmpty ? nil : $0 }
        signature = nil
    }
}
