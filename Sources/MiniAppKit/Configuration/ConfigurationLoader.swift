import Foundation
public import MiniAppCore
import MiniAppPermissions

/// Settings given on the command line; `nil` means "not given here".
public struct ConfigurationOverrides: Sendable, Equatable {
    /// `--platform`: the platform's base URL or a registry folder.
    public var platform: String?
    /// `--project-id`: the project whose mini-apps the platform lists.
    public var projectId: String?
    /// `--subscription-key`: the key sent to the platform with every request.
    public var subscriptionKey: String?
    /// `--preview`: whether unpublished (preview) versions are listed and installed.
    public var preview: Bool?
    /// `--cache-dir`: the cache folder.
    public var cacheDirectory: String?
    /// `--signature-policy`: `required` or `advisory`.
    public var signaturePolicy: String?
    /// `--lang`: the language manifests are localised to.
    public var language: String?
    /// `--offline`: whether only the cache is used, never the platform.
    public var offline: Bool?
    /// `--no-delta` (as `false`): whether an update fetches only the files that changed.
    public var delta: Bool?
    /// `--permission-store`: a SQLite file path or a `postgres://` URL.
    public var permissionStore: String?
    /// `--tuf-root`: a file holding a trusted root of the platform's TUF repository.
    public var tufRoot: String?
    /// `--tuf-metadata`: the URL or folder of the platform's TUF metadata.
    public var tufMetadata: String?

    /// Overrides with the given values.
    public init(
        platform: String? = nil, projectId: String? = nil, subscriptionKey: String? = nil,
        preview: Bool? = nil, cacheDirectory: String? = nil, signaturePolicy: String? = nil,
        language: String? = nil, offline: Bool? = nil, delta: Bool? = nil, permissionStore: String? = nil,
        tufRoot: String? = nil, tufMetadata: String? = nil
    ) {
        self.tufRoot = tufRoot
        self.tufMetadata = tufMetadata
        self.delta = delta
        self.permissionStore = permissionStore
        self.platform = platform
        self.projectId = projectId
        self.subscriptionKey = subscriptionKey
        self.preview = preview
        self.cacheDirectory = cacheDirectory
        self.signaturePolicy = signaturePolicy
        self.language = language
        self.offline = offline
    }
}

/// The settings a piece of work reads. A loader asked for some reads and checks only those: the others
/// keep their defaults, and a bad value there (a registry folder not made yet, a mistyped language) stops
/// nothing that does not use it.
package struct ConfigurationSettings: OptionSet, Sendable, Hashable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    /// The platform, which also names the cache's namespace.
    package static let platform = Self(rawValue: 1 << 0)
    package static let projectId = Self(rawValue: 1 << 1)
    package static let subscriptionKey = Self(rawValue: 1 << 2)
    package static let preview = Self(rawValue: 1 << 3)
    package static let offline = Self(rawValue: 1 << 4)
    package static let delta = Self(rawValue: 1 << 5)
    package static let signaturePolicy = Self(rawValue: 1 << 6)
    package static let language = Self(rawValue: 1 << 7)
    package static let permissionStore = Self(rawValue: 1 << 8)
    /// `retry`, `timeouts` and `maxResponseBytes`.
    package static let network = Self(rawValue: 1 << 9)
    /// `limits`: extraction limits and the largest download.
    package static let limits = Self(rawValue: 1 << 10)
    /// `retention`.
    package static let retention = Self(rawValue: 1 << 11)
    /// `trustedKeys` and `keyCacheSeconds`.
    package static let trust = Self(rawValue: 1 << 12)
    /// `lockTimeoutSeconds`.
    package static let lockTimeout = Self(rawValue: 1 << 13)
    /// `permissionStoreTimeouts`.
    package static let permissionStoreTimeouts = Self(rawValue: 1 << 14)
    /// `tufRoot` and `tufMetadata`.
    package static let updateChannel = Self(rawValue: 1 << 15)

    /// What talking to the platform reads.
    package static let platformAccess: Self = [.platform, .projectId, .subscriptionKey, .preview, .offline, .network, .language]
    /// What opening the permission store reads.
    package static let permissions: Self = [.permissionStore, .permissionStoreTimeouts, .lockTimeout]
    /// What downloading, checking and installing a bundle reads.
    package static let installing: Self = [.platformAccess, .delta, .signaturePolicy, .limits, .retention, .trust, .lockTimeout, .updateChannel]
    /// Every setting.
    package static let all = Self(rawValue: (1 << 16) - 1)
}

/// Builds a ``MiniAppConfiguration`` from the command line, then `MINIAPP_*` variables, then the
/// JSON config file, then the defaults, validating every value it takes.
public struct ConfigurationLoader: Sendable {
    /// The process environment (or a test's stand-in).
    public var environment: [String: String]
    /// The current directory, against which relative paths are resolved.
    public var currentDirectory: String

    /// A loader reading the given environment.
    public init(
        environment: [String: String] = ProcessEnvironment.variables(),
        currentDirectory: String = ProcessEnvironment.currentDirectory()
    ) {
        self.environment = environment
        self.currentDirectory = currentDirectory
    }

    /// The config file to read, and whether it must exist (it must when `MINIAPP_CONFIG` names it).
    package var configFile: (path: String, required: Bool)? {
        if let named = environment["MINIAPP_CONFIG"], !named.isEmpty {
            return (absolute(named), true)
        }
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty {
            return (absolute(xdg) + "/miniapp/config.json", false)
        }
        if let home = environment["HOME"], !home.isEmpty {
            return (home + "/.config/miniapp/config.json", false)
        }
        return nil
    }

    /// The resolved, validated configuration: every setting read and checked.
    public func load(_ overrides: ConfigurationOverrides = ConfigurationOverrides()) throws(ConfigurationError) -> MiniAppConfiguration {
        try load(overrides, reading: .all)
    }

    /// The resolved, validated configuration. Only `settings` (and the cache directory) are read and
    /// checked; the others keep their defaults whatever the command line, environment or file say.
    package func load(_ overrides: ConfigurationOverrides = ConfigurationOverrides(), reading settings: ConfigurationSettings) throws(ConfigurationError) -> MiniAppConfiguration {
        let file = try readConfigFile()
        let lookup = SettingLookup(overrides: overrides, environment: environment, file: file, reading: settings)

        let cacheDirectory: String
        if let given = try lookup.string(.cacheDir, override: overrides.cacheDirectory) {
            // An empty path given on purpose would be the current folder: a cache made wherever the command ran.
            guard !given.value.isEmpty else {
                throw .invalidValue(setting: "cache directory", source: given.source, value: "", expected: "the path is empty; give the folder of the cache")
            }
            cacheDirectory = absolute(given.value)
        } else {
            cacheDirectory = defaultCacheDirectory()
        }
        var configuration = MiniAppConfiguration(cacheDirectory: cacheDirectory)

        if let platform = try lookup.string(.platform, override: overrides.platform) {
            configuration.platform = try parsePlatform(platform.value, source: platform.source)
        }
        if let project = try lookup.string(.projectId, override: overrides.projectId) {
            guard Identifier.isValid(project.value) else {
                throw .invalidValue(setting: "project id", source: project.source, value: project.value,
                                    expected: "use 1 to 128 characters of A-Z a-z 0-9 . _ -")
            }
            configuration.projectId = project.value
        }
        // An empty MINIAPP_SUBSCRIPTION_KEY is a deliberate "no key" (no apiKey header), not an unset variable.
        if let key = try lookup.string(.subscriptionKey, override: overrides.subscriptionKey, emptyIsSet: true, secret: true) {
            guard key.value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalidValue(setting: "subscription key", source: key.source, value: "(hidden)",
                                    expected: "use printable ASCII without spaces")
            }
            configuration.subscriptionKey = key.value.isEmpty ? nil : key.value
        }
        if let preview = try lookup.bool(.preview, override: overrides.preview) {
            configuration.preview = preview
        }
        if let offline = try lookup.bool(.offline, override: overrides.offline) {
            configuration.offline = offline
        }
        if let delta = try lookup.bool(.delta, override: overrides.delta) {
            configuration.delta = delta
        }
        if let policy = try lookup.string(.signaturePolicy, override: overrides.signaturePolicy) {
            guard let value = SignaturePolicy(rawValue: policy.value) else {
                throw .invalidValue(setting: "signature policy", source: policy.source, value: policy.value,
                                    expected: "use required or advisory")
            }
            configuration.signaturePolicy = value
        }
        if let language = try lookup.string(.lang, override: overrides.language) {
            guard ManifestLocalizer.isValidLanguage(language.value) else {
                throw .invalidValue(setting: "language", source: language.source, value: language.value,
                                    expected: "use a language code such as en, ja-JP or default")
            }
            configuration.language = language.value
        }
        if let store = try lookup.string(.permissionStore, override: overrides.permissionStore, secret: true) {
            do {
                configuration.permissionStore = try PermissionStoreLocation.parse(
                    store.value.contains("://") || store.value.isEmpty ? store.value : absolute(store.value),
                    environment: environment, currentDirectory: currentDirectory
                )
            } catch {
                // The value may hold a password: it is never repeated.
                guard case .invalidLocation(let reason) = error else { throw .invalidValue(setting: "permission store", source: store.source, value: "(hidden)", expected: error.description) }
                throw .invalidValue(setting: "permission store", source: store.source, value: "(hidden)", expected: "\(reason); use a file path or postgres://user[:password]@host[:port]/database[?sslmode=...]")
            }
        }
        if let root = try lookup.string(.tufRoot, override: overrides.tufRoot) {
            guard !root.value.isEmpty else {
                throw .invalidValue(setting: "TUF root", source: root.source, value: "", expected: "the path is empty; give the file holding the trusted root")
            }
            configuration.tufRoot = absolute(root.value)
        }
        if let metadata = try lookup.string(.tufMetadata, override: overrides.tufMetadata) {
            let lowered = metadata.value.lowercased()
            if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
                guard let url = URL(string: metadata.value), url.host?.isEmpty == false, url.query == nil, url.fragment == nil, url.user == nil else {
                    throw .invalidValue(setting: "TUF metadata", source: metadata.source, value: metadata.value, expected: "use an http:// or https:// URL (no query, fragment or credentials) or a folder")
                }
                configuration.tufMetadata = metadata.value
            } else {
                guard !metadata.value.isEmpty, !metadata.value.contains("://") else {
                    throw .invalidValue(setting: "TUF metadata", source: metadata.source, value: metadata.value, expected: "use an http:// or https:// URL or a folder")
                }
                configuration.tufMetadata = absolute(metadata.value)
            }
        }
        configuration.network = try lookup.networkSettings()
        try lookup.applyCacheSettings(to: &configuration)
        return configuration
    }

    private func defaultCacheDirectory() -> String {
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty { return absolute(xdg) + "/miniapp" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache/miniapp"
    }

    /// `path` made absolute against the current folder (`~/` against the home folder), with `.`, `..`
    /// and repeated slashes taken out by reading the path alone, as `URL.standardizedFileURL` does.
    private func absolute(_ path: String) -> String {
        let expanded = path.hasPrefix("~/") ? (environment["HOME"] ?? NSHomeDirectory()) + path.dropFirst(1) : path
        let full = expanded.hasPrefix("/") ? expanded : currentDirectory + "/" + expanded
        var components: [Substring] = []
        for component in full.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        // Joined by hand: `joined(separator:)` on substrings cost every command 0.2 ms of first-use
        // runtime work (a protocol-conformance scan and a slow witness lookup, found with perf).
        var absolute = ""
        for component in components {
            absolute += "/"
            absolute += String(component)
        }
        return absolute.isEmpty ? "/" : absolute
    }

    private func parsePlatform(_ value: String, source: String) throws(ConfigurationError) -> PlatformLocation {
        let lowered = value.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            let withSlash = value.hasSuffix("/") ? value : value + "/"
            guard let url = URL(string: withSlash), let host = url.host, !host.isEmpty,
                  url.query == nil, url.fragment == nil, url.user == nil else {
                throw .invalidValue(setting: "platform", source: source, value: value,
                                    expected: "use a base URL such as https://platform.example/ (no query, fragment or credentials)")
            }
            return .remote(url)
        }
        if value.isEmpty {
            throw .invalidValue(setting: "platform", source: source, value: value,
                                expected: "the value is empty; use an http:// or https:// URL or a registry directory")
        }
        if value.contains("://") {
            throw .invalidValue(setting: "platform", source: source, value: value,
                                expected: "use an http:// or https:// URL or a registry directory")
        }
        let path = absolute(value)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .invalidValue(setting: "platform", source: source, value: value,
                                expected: "use an http:// or https:// URL or an existing registry directory")
        }
        return .registry(path: path)
    }

    private func readConfigFile() throws(ConfigurationError) -> [String: JSONValue] {
        guard let (path, required) = configFile else { return [:] }
        let read = FileReading.read(path)
        switch read {
        case .missing where !required: return [:]
        case .unreadable(EFBIG): throw .unreadableFile(path: path, reason: "it is over \(FileReading.defaultLimit >> 20) MiB")
        default: break
        }
        let data: Data
        do {
            data = Data(try read.bytes())
        } catch {
            throw .unreadableFile(path: path, reason: error.description)
        }
        guard case .object(let dictionary)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw .unreadableFile(path: path, reason: "it is not a JSON object")
        }
        return dictionary
    }
}

/// Looks one setting up in the command line, the environment and the config file, in that order.
private struct SettingLookup {
    let overrides: ConfigurationOverrides
    let environment: [String: String]
    let file: [String: JSONValue]
    /// The settings asked for; a lookup of any other finds nothing.
    let reading: ConfigurationSettings

    init(overrides: ConfigurationOverrides, environment: [String: String], file: [String: JSONValue], reading: ConfigurationSettings) {
        self.overrides = overrides
        self.environment = environment
        self.file = file
        self.reading = reading
    }

    typealias Found<Value> = (value: Value, source: String)
    private static let fileSource = "the config file"

    /// The setting each config file key belongs to; the cache directory is always read.
    private static let settingOfKey: [String: ConfigurationSettings] = [
        "platform": .platform, "projectId": .projectId, "subscriptionKey": .subscriptionKey, "preview": .preview,
        "offline": .offline, "delta": .delta, "signaturePolicy": .signaturePolicy, "lang": .language,
        "permissionStore": .permissionStore, "retry": .network, "timeouts": .network, "maxResponseBytes": .network,
        "limits": .limits, "retention": .retention, "trustedKeys": .trust, "keyCacheSeconds": .trust,
        "lockTimeoutSeconds": .lockTimeout, "permissionStoreTimeouts": .permissionStoreTimeouts,
        "tufRoot": .updateChannel, "tufMetadata": .updateChannel,
    ]

    /// Whether the top-level config file key `key` (and its flag and variable) is to be read.
    private func reads(_ key: String) -> Bool {
        Self.settingOfKey[key].map { reading.isSuperset(of: $0) } ?? true
    }

    /// `emptyIsSet` makes an empty environment variable a value; otherwise it counts as unset.
    /// `secret` keeps a value of the wrong type out of the error too.
    func string(_ setting: SettingDeclaration, override: String?, emptyIsSet: Bool = false, secret: Bool = false) throws(ConfigurationError) -> Found<String>? {
        let (key, flag, variable) = (setting.key, setting.flag, setting.variable)
        guard reads(key) else { return nil }
        if let override { return (override, flag) }
        if let value = environment[variable], emptyIsSet || !value.isEmpty { return (value, variable) }
        switch file[key] {
        case nil, .null?: return nil
        case .string(let value)?: return (value, Self.fileSource)
        case let other?:
            throw .invalidValue(setting: key, source: Self.fileSource, value: secret ? "(hidden)" : other.compactText, expected: "use a string")
        }
    }

    func bool(_ setting: SettingDeclaration, override: Bool?) throws(ConfigurationError) -> Bool? {
        let (key, variable) = (setting.key, setting.variable)
        guard reads(key) else { return nil }
        if let override { return override }
        if let value = environment[variable], !value.isEmpty {
            switch value.lowercased() {
            case "1", "true", "yes": return true
            case "0", "false", "no": return false
            default:
                throw .invalidValue(setting: key, source: variable, value: value, expected: "use 1/true/yes or 0/false/no")
            }
        }
        switch file[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        case let other?:
            throw .invalidValue(setting: key, source: Self.fileSource, value: other.compactText, expected: "use true or false")
        }
    }

    func networkSettings() throws(ConfigurationError) -> NetworkSettings {
        var settings = NetworkSettings()
        let retry = try section("retry")
        if let value = try number(retry, "maxAttempts", in: "retry", range: 1...100) { settings.retry.maxAttempts = Int(value) }
        if let value = try number(retry, "initialDelayMs", in: "retry", range: 0...600_000) { settings.retry.initialDelay = .milliseconds(value) }
        if let value = try number(retry, "maxDelayMs", in: "retry", range: 0...600_000) { settings.retry.maxDelay = .milliseconds(value) }
        if let value = try number(retry, "budgetSeconds", in: "retry", range: 0...3600) { settings.retry.totalBudget = .milliseconds(value * 1000) }
        if let value = try number(retry, "maxRetryAfterSeconds", in: "retry", range: 0...3600) { settings.retry.maxRetryAfter = .milliseconds(value * 1000) }
        let timeouts = try section("timeouts")
        if let value = try number(timeouts, "connectSeconds", in: "timeouts", range: 0.001...3600) { settings.connectTimeout = .milliseconds(value * 1000) }
        if let value = try number(timeouts, "readSeconds", in: "timeouts", range: 0.001...3600) { settings.readTimeout = .milliseconds(value * 1000) }
        if let value = try number(file, "maxResponseBytes", in: nil, range: 1024...Double(1 << 34)) { settings.maxResponseBytes = Int(value) }
        return settings
    }

    func applyCacheSettings(to configuration: inout MiniAppConfiguration) throws(ConfigurationError) {
        let limits = try section("limits")
        if let value = try number(limits, "maxEntries", in: "limits", range: 1...10_000_000) { configuration.extraction.maxEntries = Int(value) }
        if let value = try number(limits, "maxUnpackedBytes", in: "limits", range: 1...Double(1 << 50)) { configuration.extraction.maxUnpackedBytes = Int64(value) }
        if let value = try number(limits, "maxCompressionRatio", in: "limits", range: 1...1_000_000) { configuration.extraction.maxCompressionRatio = value }
        if let value = try number(limits, "ratioFloorBytes", in: "limits", range: 0...Double(1 << 50)) { configuration.extraction.ratioFloorBytes = Int64(value) }
        if let value = try number(limits, "maxDownloadBytes", in: "limits", range: 1...Double(1 << 50)) { configuration.maxDownloadBytes = Int64(value) }
        let retention = try section("retention")
        if let value = try number(retention, "previousVersions", in: "retention", range: 0...1000) { configuration.retention.previousVersions = Int(value) }
        if let value = try number(retention, "maxBytes", in: "retention", range: 0...Double(1 << 50)) { configuration.retention.maxBytes = Int64(value) }
        switch retention["automatic"] {
        case nil, .null?: break
        case .bool(let value)?: configuration.retention.automatic = value
        case let other?: throw .invalidValue(setting: "retention.automatic", source: Self.fileSource, value: other.compactText, expected: "use true or false")
        }
        if let value = try number(file, "keyCacheSeconds", in: nil, range: 0...31_536_000) { configuration.keyCacheLifetime = .milliseconds(value * 1000) }
        if let value = try number(file, "lockTimeoutSeconds", in: nil, range: 0...86_400) { configuration.lockTimeout = .milliseconds(value * 1000) }
        let storeTimeouts = try section("permissionStoreTimeouts")
        if let value = try number(storeTimeouts, "connectSeconds", in: "permissionStoreTimeouts", range: 0.001...3600) {
            configuration.permissionStoreTimeouts.connect = .milliseconds(value * 1000)
        }
        if let value = try number(storeTimeouts, "statementSeconds", in: "permissionStoreTimeouts", range: 0.001...3600) {
            configuration.permissionStoreTimeouts.statement = .milliseconds(value * 1000)
        }
        switch reads("trustedKeys") ? file["trustedKeys"] : nil {
        case nil, .null?:
            break
        case .array(let values)?:
            configuration.trustedKeys = try values.map { value throws(ConfigurationError) in
                guard case .string(let text) = value, !text.isEmpty else {
                    throw .invalidValue(setting: "trustedKeys", source: Self.fileSource, value: value.compactText, expected: "use key ids, base64 ecKey values or PEM public keys")
                }
                return text
            }
            _ = try TrustedKeys(configuration.trustedKeys)
        case let other?:
            throw .invalidValue(setting: "trustedKeys", source: Self.fileSource, value: other.compactText, expected: "use an array of strings")
        }
    }

    private func section(_ key: String) throws(ConfigurationError) -> [String: JSONValue] {
        guard reads(key) else { return [:] }
        switch file[key] {
        case nil, .null?: return [:]
        case .object(let dictionary)?: return dictionary
        case let other?:
            throw .invalidValue(setting: key, source: Self.fileSource, value: other.compactText, expected: "use a JSON object")
        }
    }

    private func number(_ dictionary: [String: JSONValue], _ key: String, in section: String?, range: ClosedRange<Double>) throws(ConfigurationError) -> Double? {
        let name = section.map { "\($0).\(key)" } ?? key
        if section == nil, !reads(key) { return nil }
        switch dictionary[key] {
        case nil, .null?: return nil
        case .number(let value)? where range.contains(value): return value
        case let other?:
            throw .invalidValue(setting: name, source: Self.fileSource, value: other.compactText,
                                expected: "use a number from \(range.lowerBound) to \(range.upperBound)")
        }
    }
}
