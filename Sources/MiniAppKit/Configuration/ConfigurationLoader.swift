import Foundation
public import MiniAppCore
import MiniAppPermissions

/// Settings given on the command line, by their ``SettingDeclaration``; a setting not given here is
/// looked up in the environment, then in the config file.
package struct ConfigurationOverrides: Sendable, Equatable {
    /// What was given, by the setting's config key: a dozen at most, so a list (no hashing on the way to a cache hit).
    private var given: [(key: String, value: SettingValue)] = []

    /// No setting given.
    package init() {}

    /// The given values.
    package init(_ values: KeyValuePairs<SettingDeclaration, SettingValue>) {
        for (setting, value) in values { self[setting] = value }
    }

    /// The value given for `setting`, if any.
    package subscript(setting: SettingDeclaration) -> SettingValue? {
        get { given.first { $0.key == setting.key }?.value }
        set {
            given.removeAll { $0.key == setting.key }
            if let newValue { given.append((setting.key, newValue)) }
        }
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.given.count == rhs.given.count && lhs.given.allSatisfy { mine in rhs.given.contains { $0.key == mine.key && $0.value == mine.value } }
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

    /// The resolved, validated configuration from the environment and the config file: every setting
    /// read and checked.
    public func load() throws(ConfigurationError) -> MiniAppConfiguration {
        try load(ConfigurationOverrides(), reading: .all)
    }

    /// The resolved, validated configuration: every declared setting (``SettingDeclaration/all``, then
    /// ``FileSettingDeclaration/all``) that `settings` asks for is looked up and checked by its
    /// declaration; the others keep their defaults whatever the command line, environment or file say.
    package func load(_ overrides: ConfigurationOverrides = ConfigurationOverrides(), reading settings: ConfigurationSettings) throws(ConfigurationError) -> MiniAppConfiguration {
        let file = try readConfigFile()
        var configuration = MiniAppConfiguration(cacheDirectory: defaultCacheDirectory())
        for setting in SettingDeclaration.all where settings.isSuperset(of: setting.readBy) {
            if let (value, source) = try lookUp(setting, overrides: overrides, file: file) {
                try setting.apply(value, source, &configuration, self)
            }
        }
        for setting in FileSettingDeclaration.all where settings.isSuperset(of: setting.readBy) {
            switch file[setting.key] {
            case nil, .null?: continue
            case let json?: try setting.apply(ConfigFileValue(name: setting.key, json: json), &configuration)
            }
        }
        return configuration
    }

    /// `setting`'s value and where it came from: the command line, then the environment, then the config
    /// file; `nil` when none gives it.
    private func lookUp(_ setting: SettingDeclaration, overrides: ConfigurationOverrides, file: [String: JSONValue]) throws(ConfigurationError) -> (SettingValue, String)? {
        if let given = overrides[setting] { return (given, setting.flag) }
        if let text = environment[setting.variable], setting.emptyVariableIsSet || !text.isEmpty {
            guard case .toggle = setting.kind else { return (.text(text), setting.variable) }
            switch text.lowercased() {
            case "1", "true", "yes": return (.toggle(true), setting.variable)
            case "0", "false", "no": return (.toggle(false), setting.variable)
            default: throw .invalidValue(setting: setting.key, source: setting.variable, value: text, expected: "use 1/true/yes or 0/false/no")
            }
        }
        let value = ConfigFileValue(name: setting.key, json: file[setting.key] ?? .null)
        switch (setting.kind, value.json) {
        case (_, .null): return nil
        case (.text, .string(let text)): return (.text(text), ConfigFileValue.source)
        case (.toggle, .bool(let on)): return (.toggle(on), ConfigFileValue.source)
        case (.text, _) where setting.secret:
            throw .invalidValue(setting: setting.key, source: ConfigFileValue.source, value: "(hidden)", expected: "use a string")
        case (.text, _): throw value.invalid(expected: "use a string")
        case (.toggle, _): throw value.invalid(expected: "use true or false")
        }
    }

    private func defaultCacheDirectory() -> String {
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty { return absolute(xdg) + "/miniapp" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache/miniapp"
    }

    /// `path` made absolute against the current folder (`~/` against the home folder), with `.`, `..`
    /// and repeated slashes taken out by reading the path alone, as `URL.standardizedFileURL` does.
    func absolute(_ path: String) -> String {
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

    func parsePlatform(_ value: String, source: String) throws(ConfigurationError) -> PlatformLocation {
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
