/// A permission a mini-app declares, with the reason it gives the user.
public struct PermissionDeclaration: Sendable, Equatable, Codable {
    /// The full permission name, known or not.
    public var name: String
    /// Why the mini-app wants it.
    public var reason: String?

    /// A declaration with the given name and reason.
    public init(name: String, reason: String? = nil) {
        self.name = name
        self.reason = reason
    }

    /// The known permission this names, or `nil` when the name is not one the platform defines.
    public var known: KnownPermission? { KnownPermission(rawValue: name) }

    private enum CodingKeys: String, CodingKey { case name, reason }

    /// Decodes `{"name", "reason"?}`; the name must not be empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        guard !name.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .name, in: container, debugDescription: "the permission name is empty")
        }
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(reason, forKey: .reason)
    }
}

/// An access token a mini-app asks for: the audience and its scopes.
public struct AccessTokenPermission: Sendable, Equatable, Codable {
    /// The token's audience.
    public var audience: String
    /// The scopes asked for.
    public var scopes: [String]

    /// A token permission with the given audience and scopes.
    public init(audience: String, scopes: [String]) {
        self.audience = audience
        self.scopes = scopes
    }
}

/// A bundle's manifest.json, as the platform's metadata endpoint returns it.
public struct BundleManifest: Sendable, Equatable {
    /// Permissions that must be allowed before the mini-app may launch.
    public var reqPermissions: [PermissionDeclaration]
    /// Permissions the mini-app may ask for later.
    public var optPermissions: [PermissionDeclaration]
    /// Access tokens the mini-app asks for.
    public var accessTokenPermissions: [AccessTokenPermission]
    /// Free key/value pairs for the host.
    public var customMetaData: [String: String]

    /// A manifest with the given fields.
    public init(
        reqPermissions: [PermissionDeclaration] = [], optPermissions: [PermissionDeclaration] = [],
        accessTokenPermissions: [AccessTokenPermission] = [], customMetaData: [String: String] = [:]
    ) {
        self.reqPermissions = reqPermissions
        self.optPermissions = optPermissions
        self.accessTokenPermissions = accessTokenPermissions
        self.customMetaData = customMetaData
    }
}

extension BundleManifest: Codable {
    private enum CodingKeys: String, CodingKey {
        case reqPermissions, optPermissions, accessTokenPermissions, customMetaData
    }

    /// Decodes a manifest; every key is optional, but a key that is present must have the right shape,
    /// since silently dropping a required permission would open the launch gate.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        reqPermissions = try container.decodeIfPresent([PermissionDeclaration].self, forKey: .reqPermissions) ?? []
        optPermissions = try container.decodeIfPresent([PermissionDeclaration].self, forKey: .optPermissions) ?? []
        accessTokenPermissions = try container.decodeIfPresent([AccessTokenPermission].self, forKey: .accessTokenPermissions) ?? []
        customMetaData = try container.decodeIfPresent([String: String].self, forKey: .customMetaData) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reqPermissions, forKey: .reqPermissions)
        try container.encode(optPermissions, forKey: .optPermissions)
        try container.encode(accessTokenPermissions, forKey: .accessTokenPermissions)
        try container.encode(customMetaData, forKey: .customMetaData)
    }
}
