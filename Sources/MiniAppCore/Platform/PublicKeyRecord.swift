/// A platform's public signing key as `keys/{id}` answers it.
public struct PublicKeyRecord: Sendable, Equatable, Codable {
    /// The key id; it must equal the id asked for.
    public var id: String
    /// Base64 of the 65-byte uncompressed P-256 point.
    public var ecKey: String?
    /// The same key as PEM.
    public var pemKey: String?

    /// A record with the given fields.
    public init(id: String, ecKey: String? = nil, pemKey: String? = nil) {
        self.id = id
        self.ecKey = ecKey
        self.pemKey = pemKey
    }
}
