/// One setting that the command line, the environment and the config file all give: its name in each,
/// and the one sentence that explains it. ``ConfigurationLoader`` reads the variable and the key by these
/// names, and the `miniapp` command makes its flag, its help and the words of its hints from them.
package struct SettingDeclaration: Sendable {
    /// The key in the JSON config file.
    package let key: String
    /// The `MINIAPP_*` environment variable.
    package let variable: String
    /// The command-line flag, with its dashes (`--cache-dir`).
    package let flag: String
    /// Whether the flag takes a value (`--lang en`) or stands alone (`--offline`).
    package let takesValue: Bool
    /// The flag's help, one sentence.
    package let help: String

    /// The flag's name without its dashes, as ArgumentParser's `customLong` takes it.
    package var longName: String { String(flag.dropFirst(2)) }
}

extension SettingDeclaration {
    package static let platform = Self(
        key: "platform", variable: "MINIAPP_PLATFORM", flag: "--platform", takesValue: true,
        help: "Base URL of a platform API, or a local registry directory."
    )
    package static let projectId = Self(
        key: "projectId", variable: "MINIAPP_PROJECT_ID", flag: "--project-id", takesValue: true,
        help: "The host project id."
    )
    package static let subscriptionKey = Self(
        key: "subscriptionKey", variable: "MINIAPP_SUBSCRIPTION_KEY", flag: "--subscription-key", takesValue: true,
        help: "The subscription key, sent as 'apiKey: ras-<key>' and never printed."
    )
    package static let preview = Self(
        key: "preview", variable: "MINIAPP_PREVIEW", flag: "--preview", takesValue: false,
        help: "Work with preview (unpublished) versions."
    )
    package static let cacheDir = Self(
        key: "cacheDir", variable: "MINIAPP_CACHE_DIR", flag: "--cache-dir", takesValue: true,
        help: "Root of the bundle cache and of the permission store."
    )
    package static let signaturePolicy = Self(
        key: "signaturePolicy", variable: "MINIAPP_SIGNATURE_POLICY", flag: "--signature-policy", takesValue: true,
        help: "required (default) or advisory."
    )
    package static let lang = Self(
        key: "lang", variable: "MINIAPP_LANG", flag: "--lang", takesValue: true,
        help: "Language for metadata, sent as ?lang= (default: default)."
    )
    package static let offline = Self(
        key: "offline", variable: "MINIAPP_OFFLINE", flag: "--offline", takesValue: false,
        help: "Never touch the network; answer from the cache."
    )
    /// Delta updates: on by default, so the flag turns them off (the variable and the key say either).
    package static let delta = Self(
        key: "delta", variable: "MINIAPP_DELTA", flag: "--no-delta", takesValue: false,
        help: "Download whole zips: never assemble an update from the app's kept zip."
    )
    package static let permissionStore = Self(
        key: "permissionStore", variable: "MINIAPP_PERMISSION_STORE", flag: "--permission-store", takesValue: true,
        help: "Where permission decisions live: a SQLite file, or postgres://user[:password]@host[:port]/database[?sslmode=...] (default: <cache-dir>/permissions.sqlite)."
    )

    package static let tufRoot = Self(
        key: "tufRoot", variable: "MINIAPP_TUF_ROOT", flag: "--tuf-root", takesValue: true,
        help: "A file holding a trusted root of the platform's TUF repository: every update is then checked through TUF."
    )
    package static let tufMetadata = Self(
        key: "tufMetadata", variable: "MINIAPP_TUF_METADATA", flag: "--tuf-metadata", takesValue: true,
        help: "Where the platform's TUF metadata is: a URL or a folder (default: tuf/metadata beside the platform)."
    )

    /// Every setting given all three ways, in the order `--help` lists their flags.
    package static let all: [Self] = [platform, projectId, subscriptionKey, preview, cacheDir, signaturePolicy, lang, offline, delta, permissionStore, tufRoot, tufMetadata]
}
