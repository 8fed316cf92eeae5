public import Foundation
public import MiniAppCore
public import MiniAppPermissions

/// Where the platform API lives: a remote base URL or a local registry directory.
public enum PlatformLocation: Sendable, Equatable, CustomStringConvertible {
    /// A platform API at this base URL, which always ends with `/`.
    case remote(URL)
    /// A local registry directory at this absolute path.
    case registry(path: String)

    public var description: String {
        switch self {
        case .remote(let url): return url.absoluteString
        case .registry(let path): return path
        }
    }
}

/// What to do with a bundle whose signature is missing or does not verify.
public enum SignaturePolicy: String, Sendable, CaseIterable {
    /// Refuse the bundle.
    case required
    /// Install it anyway, record the result, and warn on every later use.
    case advisory
}

/// When and how often to retry a platform request that failed for a passing reason.
public struct RetryPolicy: Sendable, Equatable {
    /// How many attempts a request gets in all, the first included.
    public var maxAttempts: Int
    /// The backoff before the first retry; it doubles after each attempt.
    public var initialDelay: Duration
    /// The longest backoff between two attempts.
    public var maxDelay: Duration
    /// The most time one request may take, retries and waits included.
    public var totalBudget: Duration
    /// The longest `Retry-After` that is honoured; a longer one fails the request at once.
    public var maxRetryAfter: Duration

    /// A policy with the given limits; the defaults suit an interactive command.
    public init(
        maxAttempts: Int = 5,
        initialDelay: Duration = .milliseconds(250),
        maxDelay: Duration = .seconds(8),
        totalBudget: Duration = .seconds(60),
        maxRetryAfter: Duration = .seconds(30)
    ) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.totalBudget = totalBudget
        self.maxRetryAfter = maxRetryAfter
    }

    /// The backoff before retry number `retry` (1 for the first), with jitter between half and all of it.
    func backoff(beforeRetry retry: Int) -> Duration {
        let exponent = min(max(retry - 1, 0), 30)
        let full = min(initialDelay * (1 << exponent), maxDelay)
        let nanoseconds = full.nanoseconds
        guard nanoseconds > 1 else { return full }
        return .nanoseconds(Int64.random(in: (nanoseconds / 2)...nanoseconds))
    }
}

/// Timeouts, retries and size caps for talking to a platform.
public struct NetworkSettings: Sendable, Equatable {
    /// The longest wait for a TCP connection.
    public var connectTimeout: Duration
    /// The longest silence while waiting for bytes of an answer.
    public var readTimeout: Duration
    /// The retry policy for connection errors, 5xx and 429 answers.
    public var retry: RetryPolicy
    /// The largest JSON answer accepted.
    public var maxResponseBytes: Int

    /// Settings with the given values; the defaults suit an interactive command.
    public init(
        connectTimeout: Duration = .seconds(10),
        readTimeout: Duration = .seconds(30),
        retry: RetryPolicy = RetryPolicy(),
        maxResponseBytes: Int = 32 << 20
    ) {
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.retry = retry
        self.maxResponseBytes = maxResponseBytes
    }
}

/// Which cached versions to keep.
public struct RetentionPolicy: Sendable, Equatable {
    /// How many versions of each app to keep besides the most recently used one.
    public var previousVersions: Int
    /// The most bytes the cache may hold, when set.
    public var maxBytes: Int64?
    /// Whether every download and load ends with a prune.
    public var automatic: Bool

    /// A policy with the given values; by default one previous version, no size cap, no automatic prune.
    public init(previousVersions: Int = 1, maxBytes: Int64? = nil, automatic: Bool = false) {
        self.previousVersions = previousVersions
        self.maxBytes = maxBytes
        self.automatic = automatic
    }
}

/// Everything a client needs to know to talk to one platform and keep one cache.
public struct MiniAppConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The platform API; `nil` until one is configured.
    public var platform: PlatformLocation?
    /// The host project id, required for a remote platform.
    public var projectId: String?
    /// The subscription key, sent as `apiKey: ras-<key>`; never printed.
    public var subscriptionKey: String?
    /// Whether to see unpublished (preview) versions.
    public var preview: Bool
    /// The root of the bundle cache and of the permission store.
    public var cacheDirectory: String
    /// What to do with a missing or bad signature.
    public var signaturePolicy: SignaturePolicy
    /// The language asked for in metadata requests.
    public var language: String
    /// Whether to stay off the network and answer from the cache.
    public var offline: Bool
    /// Timeouts, retries and size caps.
    public var network: NetworkSettings
    /// Limits that keep hostile archives in check.
    public var extraction: ExtractionLimits
    /// The largest bundle download accepted, in bytes.
    public var maxDownloadBytes: Int64
    /// Pinned signing keys: key ids, base64 `ecKey` values or PEM public keys. When not empty, a
    /// bundle signed with any other key is refused.
    public var trustedKeys: [String]
    /// How long a fetched public key is reused before it is fetched again.
    public var keyCacheLifetime: Duration
    /// How long to wait for another process holding a version's lock.
    public var lockTimeout: Duration
    /// What `cache prune` keeps when not told otherwise.
    public var retention: RetentionPolicy
    /// Whether an update may be assembled from the app's kept zip and ranged requests for what changed
    /// (on by default; off means every version downloads its whole zip).
    public var delta: Bool = true
    /// Where the permission decisions live: `nil` for the SQLite store in the cache directory
    /// (`permissions.sqlite`), else a SQLite file or a PostgreSQL database.
    public var permissionStore: PermissionStoreLocation?
    /// How long a PostgreSQL permission store may take to connect and to answer each statement.
    public var permissionStoreTimeouts = PermissionStoreTimeouts()
    /// A file holding a trusted root of the platform's TUF repository. When set, every version taken
    /// from the platform is checked through The Update Framework's client workflow first (see
    /// <doc:TrustingTheUpdateChannel>), and its zip against the length and hashes TUF lists.
    public var tufRoot: String?
    /// Where the platform's TUF metadata is, a URL or a folder; `nil` for `tuf/metadata/` beside the
    /// platform (under its base URL, or in its registry folder).
    public var tufMetadata: String?

    /// The permission store this configuration uses.
    public var permissionStoreLocation: PermissionStoreLocation {
        permissionStore ?? .cache(cacheDirectory)
    }

    /// A configuration with the given values.
    public init(
        platform: PlatformLocation? = nil,
        projectId: String? = nil,
        subscriptionKey: String? = nil,
        preview: Bool = false,
        cacheDirectory: String,
        signaturePolicy: SignaturePolicy = .required,
        language: String = "default",
        offline: Bool = false,
        network: NetworkSettings = NetworkSettings(),
        extraction: ExtractionLimits = ExtractionLimits(),
        maxDownloadBytes: Int64 = 1 << 30,
        trustedKeys: [String] = [],
        keyCacheLifetime: Duration = .seconds(86_400),
        lockTimeout: Duration = .seconds(300),
        retention: RetentionPolicy = RetentionPolicy()
    ) {
        self.platform = platform
        self.projectId = projectId
        self.subscriptionKey = subscriptionKey
        self.preview = preview
        self.cacheDirectory = cacheDirectory
        self.signaturePolicy = signaturePolicy
        self.language = language
        self.offline = offline
        self.network = network
        self.extraction = extraction
        self.maxDownloadBytes = maxDownloadBytes
        self.trustedKeys = trustedKeys
        self.keyCacheLifetime = keyCacheLifetime
        self.lockTimeout = lockTimeout
        self.retention = retention
    }

    /// The part of the cache this configuration's platform and project use.
    public var cacheNamespace: CacheNamespace {
        CacheNamespace(platform: platform, projectId: platform == nil ? nil : projectId)
    }

    /// A summary that never shows the subscription key.
    public var description: String {
        "MiniAppConfiguration(platform: \(platform?.description ?? "none"), projectId: \(projectId ?? "none"), "
            + "subscriptionKey: \(subscriptionKey == nil ? "none" : "set"), preview: \(preview), "
            + "cacheDirectory: \(cacheDirectory), signaturePolicy: \(signaturePolicy.rawValue), "
            + "language: \(language), offline: \(offline), permissionStore: \(permissionStoreLocation))"
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
