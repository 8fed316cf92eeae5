/// What a preview code (QR code or deep link token) resolves to.
public struct PreviewCode: Sendable, Equatable {
    /// The host project a preview code may name, with its subscription key.
    public struct Host: Sendable, Equatable {
        /// The host project id.
        public var id: String
        /// The subscription key to use for it.
        public var subscriptionKey: String?

        /// A host project `id`, with the subscription key to use for it.
        public init(id: String, subscriptionKey: String? = nil) {
            self.id = id
            self.subscriptionKey = subscriptionKey
        }
    }

    /// The mini-app and version the code points at.
    public var miniapp: AppRecord
    /// The host the code belongs to, when it names one.
    public var host: Host?

    /// What a code resolves to: `miniapp`, of `host` when it names one.
    public init(miniapp: AppRecord, host: Host? = nil) {
        self.miniapp = miniapp
        self.host = host
    }
}

extension PreviewCode.Host: Decodable {
    private enum CodingKeys: String, CodingKey { case id, subscriptionKey, subscriptionkey }

    /// Decodes `{"id", "subscriptionKey"}`, also spelled `subscriptionkey`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        subscriptionKey = container.lenient(String.self, forKey: .subscriptionKey)
            ?? container.lenient(String.self, forKey: .subscriptionkey)
    }
}

extension PreviewCode: Decodable {
    private enum CodingKeys: String, CodingKey { case miniapp, host }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        miniapp = try container.decode(AppRecord.self, forKey: .miniapp)
        host = try container.decodeIfPresent(Host.self, forKey: .host)
    }
}
