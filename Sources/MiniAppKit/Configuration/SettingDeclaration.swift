import Foundation
import MiniAppCore
import MiniAppPermissions

/// A setting's value as the command line, a `MINIAPP_*` variable or the config file gave it, before its
/// declaration checks it.
package enum SettingValue: Sendable, Equatable {
    /// The text after a flag, a variable's text, or a string in the config file.
    case text(String)
    /// A flag alone, `1/true/yes` or `0/false/no` in a variable, or a boolean in the config file.
    case toggle(Bool)
}

/// One setting that the command line, the environment and the config file all give, declared once: its
/// name in each, its type, the work that reads it, its help, and how its value is checked and where it
/// goes in ``MiniAppConfiguration`` (whose property initialisers are the defaults).
/// ``ConfigurationLoader`` reads every declaration in ``all`` and nothing else, and the `miniapp` command
/// makes its flags, their help and the words of its hints from them (a test holds each layer to the list).
package struct SettingDeclaration: Sendable {
    /// How the setting's value is written.
    package enum Kind: Sendable, Equatable {
        /// A value: `--lang en`, `MINIAPP_LANG=en`, `"lang": "en"`.
        case text
        /// On or off: the flag alone sets `flagValue` (`--no-delta` sets `false`).
        case toggle(flagValue: Bool)
    }

    /// The key in the JSON config file.
    package let key: String
    /// The `MINIAPP_*` environment variable.
    package let variable: String
    /// The command-line flag, with its dashes (`--cache-dir`).
    package let flag: String
    /// The type of its value.
    package let kind: Kind
    /// The flag's help, one sentence.
    package let help: String
    /// The work that reads it: a load that does not ask for it neither reads nor checks it. Empty for
    /// a setting every load reads (the cache folder).
    package let readBy: ConfigurationSettings
    /// Whether the value must never be repeated, not even in an error (a key, a password in a URL).
    package let secret: Bool
    /// Whether an empty variable is a value given on purpose rather than an unset one.
    package let emptyVariableIsSet: Bool
    /// Checks a value from `source` (the flag, the variable or the file) and puts it in the configuration.
    let apply: @Sendable (SettingValue, _ source: String, inout MiniAppConfiguration, ConfigurationLoader) throws(ConfigurationError) -> Void

    /// Whether the flag takes a value (`--lang en`) or stands alone (`--offline`).
    package var takesValue: Bool { kind == .text }

    /// The flag's name without its dashes, as ArgumentParser's `customLong` takes it.
    package var longName: String { String(flag.dropFirst(2)) }

    /// What a flag that stands alone gives when the command line has it (`given`): `nil` when it does not.
    package func flagValue(given: Bool) -> SettingValue? {
        guard given, case .toggle(let flagValue) = kind else { return nil }
        return .toggle(flagValue)
    }

    /// A setting whose value is text, given to `apply` with where it came from.
    private init(
        key: String, variable: String, flag: String, readBy: ConfigurationSettings, secret: Bool = false, emptyVariableIsSet: Bool = false, help: String,
        text apply: @escaping @Sendable (String, _ source: String, inout MiniAppConfiguration, ConfigurationLoader) throws(ConfigurationError) -> Void
    ) {
        self.init(key: key, variable: variable, flag: flag, kind: .text, help: help, readBy: readBy, secret: secret, emptyVariableIsSet: emptyVariableIsSet) {
            value, source, configuration, loader throws(ConfigurationError) in
            guard case .text(let text) = value else { return }
            try apply(text, source, &configuration, loader)
        }
    }

    /// A setting that is on or off, whose flag sets `flagValue`.
    private init(
        key: String, variable: String, flag: String, flagValue: Bool = true, readBy: ConfigurationSettings, help: String,
        toggle apply: @escaping @Sendable (inout MiniAppConfiguration, Bool) -> Void
    ) {
        self.init(key: key, variable: variable, flag: flag, kind: .toggle(flagValue: flagValue), help: help, readBy: readBy, secret: false, emptyVariableIsSet: false) {
            value, _, configuration, _ in
            if case .toggle(let on) = value { apply(&configuration, on) }
        }
    }

    private init(
        key: String, variable: String, flag: String, kind: Kind, help: String, readBy: ConfigurationSettings, secret: Bool, emptyVariableIsSet: Bool,
        apply: @escaping @Sendable (SettingValue, _ source: String, inout MiniAppConfiguration, ConfigurationLoader) throws(ConfigurationError) -> Void
    ) {
        self.key = key
        self.variable = variable
        self.flag = flag
        self.kind = kind
        self.help = help
        self.readBy = readBy
        self.secret = secret
        self.emptyVariableIsSet = emptyVariableIsSet
        self.apply = apply
    }
}

extension SettingDeclaration {
    package static let platform = Self(
        key: "platform", variable: "MINIAPP_PLATFORM", flag: "--platform", readBy: .platform,
        help: "Base URL of a platform API, or a local registry directory."
    ) { value, source, configuration, loader throws(ConfigurationError) in
        configuration.platform = try loader.parsePlatform(value, source: source)
    }
    package static let projectId = Self(
        key: "projectId", variable: "MINIAPP_PROJECT_ID", flag: "--project-id", readBy: .projectId,
        help: "The host project id."
    ) { value, source, configuration, _ throws(ConfigurationError) in
        guard Identifier.isValid(value) else {
            throw .invalidValue(setting: "project id", source: source, value: value, expected: "use 1 to 128 characters of A-Z a-z 0-9 . _ -")
        }
        configuration.projectId = value
    }
    /// An empty `MINIAPP_SUBSCRIPTION_KEY` is a deliberate "no key" (no `apiKey` header), not an unset variable.
    package static let subscriptionKey = Self(
        key: "subscriptionKey", variable: "MINIAPP_SUBSCRIPTION_KEY", flag: "--subscription-key", readBy: .subscriptionKey, secret: true, emptyVariableIsSet: true,
        help: "The subscription key, sent as 'apiKey: ras-<key>' and never printed."
    ) { value, source, configuration, _ throws(ConfigurationError) in
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalidValue(setting: "subscription key", source: source, value: "(hidden)", expected: "use printable ASCII without spaces")
        }
        configuration.subscriptionKey = value.isEmpty ? nil : value
    }
    package static let preview = Self(
        key: "preview", variable: "MINIAPP_PREVIEW", flag: "--preview", readBy: .preview,
        help: "Work with preview (unpublished) versions."
    ) { $0.preview = $1 }
    package static let cacheDir = Self(
        key: "cacheDir", variable: "MINIAPP_CACHE_DIR", flag: "--cache-dir", readBy: [],
        help: "Root of the bundle cache and of the permission store."
    ) { value, source, configuration, loader throws(ConfigurationError) in
        // An empty path given on purpose would be the current folder: a cache made wherever the command ran.
        guard !value.isEmpty else {
            throw .invalidValue(setting: "cache directory", source: source, value: "", expected: "the path is empty; give the folder of the cache")
        }
        configuration.cacheDirectory = loader.absolute(value)
    }
    package static let signaturePolicy = Self(
        key: "signaturePolicy", variable: "MINIAPP_SIGNATURE_POLICY", flag: "--signature-policy", readBy: .signaturePolicy,
        help: "required (default) or advisory."
    ) { value, source, configuration, _ throws(ConfigurationError) in
        guard let policy = SignaturePolicy(rawValue: value) else {
            throw .invalidValue(setting: "signature policy", source: source, value: value, expected: "use required or advisory")
        }
        configuration.signaturePolicy = policy
    }
    package static let lang = Self(
        key: "lang", variable: "MINIAPP_LANG", flag: "--lang", readBy: .language,
        help: "Language for metadata, sent as ?lang= (default: default)."
    ) { value, source, configuration, _ throws(ConfigurationError) in
        guard ManifestLocalizer.isValidLanguage(value) else {
            throw .invalidValue(setting: "language", source: source, value: value, expected: "use a language code such as en, ja-JP or default")
        }
        configuration.language = value
    }
    package static let offline = Self(
        key: "offline", variable: "MINIAPP_OFFLINE", flag: "--offline", readBy: .offline,
        help: "Never touch the network; answer from the cache."
    ) { $0.offline = $1 }
    /// Delta updates: on by default, so the flag turns them off (the variable and the key say either).
    package static let delta = Self(
        key: "delta", variable: "MINIAPP_DELTA", flag: "--no-delta", flagValue: false, readBy: .delta,
        help: "Download whole zips: never assemble an update from the app's kept zip."
    ) { $0.delta = $1 }
    package static let permissionStore = Self(
        key: "permissionStore", variable: "MINIAPP_PERMISSION_STORE", flag: "--permission-store", readBy: .permissionStore, secret: true,
        help: "Where permission decisions live: a SQLite file, or postgres://user[:password]@host[:port]/database[?sslmode=...] (default: <cache-dir>/permissions.sqlite)."
    ) { value, source, configuration, loader throws(ConfigurationError) in
        do throws(PermissionStoreError) {
            configuration.permissionStore = try PermissionStoreLocation.parse(
                value.contains("://") || value.isEmpty ? value : loader.absolute(value),
                environment: loader.environment, currentDirectory: loader.currentDirectory
            )
        } catch {
            // The value may hold a password: it is never repeated.
            guard case .invalidLocation(let reason) = error else {
                throw .invalidValue(setting: "permission store", source: source, value: "(hidden)", expected: error.description)
            }
            throw .invalidValue(
                setting: "permission store", source: source, value: "(hidden)",
                expected: "\(reason); use a file path or postgres://user[:password]@host[:port]/database[?sslmode=...]"
            )
        }
    }
    package static let tufRoot = Self(
        key: "tufRoot", variable: "MINIAPP_TUF_ROOT", flag: "--tuf-root", readBy: .updateChannel,
        help: "A file holding a trusted root of the platform's TUF repository: every update is then checked through TUF."
    ) { value, source, configuration, loader throws(ConfigurationError) in
        guard !value.isEmpty else {
            throw .invalidValue(setting: "TUF root", source: source, value: "", expected: "the path is empty; give the file holding the trusted root")
        }
        configuration.tufRoot = loader.absolute(value)
    }
    package static let tufMetadata = Self(
        key: "tufMetadata", variable: "MINIAPP_TUF_METADATA", flag: "--tuf-metadata", readBy: .updateChannel,
        help: "Where the platform's TUF metadata is: a URL or a folder (default: tuf/metadata beside the platform)."
    ) { value, source, configuration, loader throws(ConfigurationError) in
        let lowered = value.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            guard let url = URL(string: value), url.host?.isEmpty == false, url.query == nil, url.fragment == nil, url.user == nil else {
                throw .invalidValue(
                    setting: "TUF metadata", source: source, value: value,
                    expected: "use an http:// or https:// URL (no query, fragment or credentials) or a folder"
                )
            }
            configuration.tufMetadata = value
        } else {
            guard !value.isEmpty, !value.contains("://") else {
                throw .invalidValue(setting: "TUF metadata", source: source, value: value, expected: "use an http:// or https:// URL or a folder")
            }
            configuration.tufMetadata = loader.absolute(value)
        }
    }

    /// Every setting given all three ways, in the order `--help` lists their flags.
    package static let all: [Self] = [platform, projectId, subscriptionKey, preview, cacheDir, signaturePolicy, lang, offline, delta, permissionStore, tufRoot, tufMetadata]
}

/// One setting only the config file gives (a number, an object of numbers, a list), declared once: its
/// key, the work that reads it, what it means, and how its value is checked and where it goes.
package struct FileSettingDeclaration: Sendable {
    /// The top-level key in the JSON config file.
    package let key: String
    /// The work that reads it (see ``SettingDeclaration/readBy``).
    package let readBy: ConfigurationSettings
    /// What it sets, one sentence.
    package let help: String
    /// Checks the key's value (never `null`) and puts it in the configuration.
    let apply: @Sendable (ConfigFileValue, inout MiniAppConfiguration) throws(ConfigurationError) -> Void

    private init(key: String, readBy: ConfigurationSettings, help: String, apply: @escaping @Sendable (ConfigFileValue, inout MiniAppConfiguration) throws(ConfigurationError) -> Void) {
        self.key = key
        self.readBy = readBy
        self.help = help
        self.apply = apply
    }

    package static let retry = Self(key: "retry", readBy: .network, help: "How often and how patiently a failed request is tried again.") {
        value, configuration throws(ConfigurationError) in
        let retry = try value.object()
        if let number = try retry.number("maxAttempts", range: 1...100) { configuration.network.retry.maxAttempts = Int(number) }
        if let number = try retry.number("initialDelayMs", range: 0...600_000) { configuration.network.retry.initialDelay = .milliseconds(number) }
        if let number = try retry.number("maxDelayMs", range: 0...600_000) { configuration.network.retry.maxDelay = .milliseconds(number) }
        if let number = try retry.number("budgetSeconds", range: 0...3600) { configuration.network.retry.totalBudget = .milliseconds(number * 1000) }
        if let number = try retry.number("maxRetryAfterSeconds", range: 0...3600) { configuration.network.retry.maxRetryAfter = .milliseconds(number * 1000) }
    }
    package static let timeouts = Self(key: "timeouts", readBy: .network, help: "How long to wait for a connection and for each read.") {
        value, configuration throws(ConfigurationError) in
        let timeouts = try value.object()
        if let number = try timeouts.number("connectSeconds", range: 0.001...3600) { configuration.network.connectTimeout = .milliseconds(number * 1000) }
        if let number = try timeouts.number("readSeconds", range: 0.001...3600) { configuration.network.readTimeout = .milliseconds(number * 1000) }
    }
    package static let maxResponseBytes = Self(key: "maxResponseBytes", readBy: .network, help: "The largest platform answer read, in bytes.") {
        value, configuration throws(ConfigurationError) in
        configuration.network.maxResponseBytes = Int(try value.number(range: 1024...Double(1 << 34)))
    }
    package static let limits = Self(key: "limits", readBy: .limits, help: "Limits on what an archive may unpack to, and on the largest download.") {
        value, configuration throws(ConfigurationError) in
        let limits = try value.object()
        if let number = try limits.number("maxEntries", range: 1...10_000_000) { configuration.extraction.maxEntries = Int(number) }
        if let number = try limits.number("maxUnpackedBytes", range: 1...Double(1 << 50)) { configuration.extraction.maxUnpackedBytes = Int64(number) }
        if let number = try limits.number("maxCompressionRatio", range: 1...1_000_000) { configuration.extraction.maxCompressionRatio = number }
        if let number = try limits.number("ratioFloorBytes", range: 0...Double(1 << 50)) { configuration.extraction.ratioFloorBytes = Int64(number) }
        if let number = try limits.number("maxDownloadBytes", range: 1...Double(1 << 50)) { configuration.maxDownloadBytes = Int64(number) }
    }
    package static let retention = Self(key: "retention", readBy: .retention, help: "What `cache prune` keeps, and whether installs prune on their own.") {
        value, configuration throws(ConfigurationError) in
        let retention = try value.object()
        if let number = try retention.number("previousVersions", range: 0...1000) { configuration.retention.previousVersions = Int(number) }
        if let number = try retention.number("maxBytes", range: 0...Double(1 << 50)) { configuration.retention.maxBytes = Int64(number) }
        if let automatic = try retention.bool("automatic") { configuration.retention.automatic = automatic }
    }
    package static let keyCacheSeconds = Self(key: "keyCacheSeconds", readBy: .trust, help: "How long a fetched public key is reused.") {
        value, configuration throws(ConfigurationError) in
        configuration.keyCacheLifetime = .milliseconds(try value.number(range: 0...31_536_000) * 1000)
    }
    package static let lockTimeoutSeconds = Self(key: "lockTimeoutSeconds", readBy: .lockTimeout, help: "How long to wait for another process holding a version's lock.") {
        value, configuration throws(ConfigurationError) in
        configuration.lockTimeout = .milliseconds(try value.number(range: 0...86_400) * 1000)
    }
    package static let permissionStoreTimeouts = Self(
        key: "permissionStoreTimeouts", readBy: .permissionStoreTimeouts, help: "How long a PostgreSQL permission store may take to connect and to answer."
    ) { value, configuration throws(ConfigurationError) in
        let timeouts = try value.object()
        if let number = try timeouts.number("connectSeconds", range: 0.001...3600) { configuration.permissionStoreTimeouts.connect = .milliseconds(number * 1000) }
        if let number = try timeouts.number("statementSeconds", range: 0.001...3600) { configuration.permissionStoreTimeouts.statement = .milliseconds(number * 1000) }
    }
    package static let trustedKeys = Self(key: "trustedKeys", readBy: .trust, help: "The only keys a bundle may be signed with: key ids, base64 ecKey values or PEM public keys.") {
        value, configuration throws(ConfigurationError) in
        guard case .array(let values) = value.json else { throw value.invalid(expected: "use an array of strings") }
        configuration.trustedKeys = try values.map { item throws(ConfigurationError) in
            guard case .string(let text) = item, !text.isEmpty else {
                throw ConfigurationError.invalidValue(
                    setting: value.name, source: ConfigFileValue.source, value: item.compactText, expected: "use key ids, base64 ecKey values or PEM public keys"
                )
            }
            return text
        }
        _ = try TrustedKeys(configuration.trustedKeys)
    }

    /// Every setting only the config file gives, in the order a load checks them.
    package static let all: [Self] = [retry, timeouts, maxResponseBytes, limits, retention, keyCacheSeconds, lockTimeoutSeconds, permissionStoreTimeouts, trustedKeys]
}

/// A value of the config file, named for its errors (`retry.maxAttempts`).
package struct ConfigFileValue: Sendable {
    /// Where a config file value comes from, as errors say it.
    static let source = "the config file"

    /// Its name in errors: the key, or `section.key`.
    let name: String
    let json: JSONValue

    /// The error for this value when it is not what `expected` says.
    func invalid(expected: String) -> ConfigurationError {
        .invalidValue(setting: name, source: Self.source, value: json.compactText, expected: expected)
    }

    /// The value as a number in `range`.
    func number(range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard case .number(let value) = json, range.contains(value) else {
            throw invalid(expected: "use a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// The value as a JSON object.
    func object() throws(ConfigurationError) -> Section {
        guard case .object(let members) = json else { throw invalid(expected: "use a JSON object") }
        return Section(name: name, members: members)
    }

    /// The members of an object of the config file; an absent or `null` member is not given.
    struct Section {
        let name: String
        let members: [String: JSONValue]

        func number(_ key: String, range: ClosedRange<Double>) throws(ConfigurationError) -> Double? {
            try member(key)?.number(range: range)
        }

        func bool(_ key: String) throws(ConfigurationError) -> Bool? {
            guard let value = member(key) else { return nil }
            guard case .bool(let on) = value.json else { throw value.invalid(expected: "use true or false") }
            return on
        }

        private func member(_ key: String) -> ConfigFileValue? {
            switch members[key] {
            case nil, .null?: return nil
            case let json?: return ConfigFileValue(name: name + "." + key, json: json)
            }
        }
    }
}
