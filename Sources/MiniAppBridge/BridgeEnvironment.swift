import Foundation
public import MiniAppCore

/// What a host tells its mini-apps about itself: answered without asking anyone.
public struct BridgeEnvironment: Sendable, Equatable {
    /// The host's version (`getHostEnvironmentInfo`'s `hostVersion`).
    public var hostVersion: String
    /// The bridge's SDK version, a semantic version (the sample apps compare it).
    public var sdkVersion: String
    /// The host's locale, such as `en-US` or `ja-JP`.
    public var hostLocale: String
    /// The platform the bridge reports, such as `Web`.
    public var platform: String
    /// The platform's version.
    public var platformVersion: String
    /// Whether the host is in dark mode.
    public var darkMode: Bool
    /// The host's primary and secondary colours (`getHostAppThemeColors`), such as `#BF0000`.
    public var primaryColor: String
    public var secondaryColor: String
    /// How many bytes (keys plus values, UTF-8) each app's secure storage may hold.
    public var secureStorageLimit: Int

    /// An environment; every value has a default.
    public init(
        hostVersion: String = PackageInfo.version, sdkVersion: String = PackageInfo.version, hostLocale: String = "en-US",
        platform: String = "Web", platformVersion: String = "Linux", darkMode: Bool = false,
        primaryColor: String = "#BF0000", secondaryColor: String = "#FFFFFF", secureStorageLimit: Int = 1 << 20
    ) {
        self.hostVersion = hostVersion
        self.sdkVersion = sdkVersion
        self.hostLocale = hostLocale
        self.platform = platform
        self.platformVersion = platformVersion
        self.darkMode = darkMode
        self.primaryColor = primaryColor
        self.secondaryColor = secondaryColor
        self.secureStorageLimit = secureStorageLimit
    }
}

/// Identifiers each app gets from its host: stable for one app on one host, and not linkable across apps
/// (each is an HMAC-SHA-256 of the app id under the host's secret).
public struct BridgeIdentity: Sendable {
    private let secret: [UInt8]

    /// Identifiers derived from `secret` (at least 16 bytes; keep it, or every app's ids change).
    public init(secret: [UInt8]) {
        precondition(secret.count >= 16, "a bridge identity needs a secret of at least 16 bytes")
        self.secret = secret
    }

    /// A fresh random secret of 32 bytes.
    public static func randomSecret() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The id `getUniqueId` answers for the app.
    public func uniqueId(appId: String) -> String { derive("unique-id", appId) }
    /// The id `getMessagingUniqueId` answers for the app.
    public func messagingUniqueId(appId: String) -> String { derive("messaging-unique-id", appId) }
    /// The id `getMauid` answers for the app.
    public func mauid(appId: String) -> String { derive("mauid", appId) }

    private func derive(_ purpose: String, _ appId: String) -> String {
        HMAC.sha256(key: secret, message: Array("\(purpose)\u{0}\(appId)".utf8)).hexString
    }
}

/// HMAC (RFC 2104) over SHA-256.
enum HMAC {
    static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256Digest.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256Digest.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256Digest.hash(block.map { $0 ^ 0x5C } + inner)
    }
}
