import Foundation
import MiniAppTestSupport
import Testing

/// A bad value of one setting, in the environment or in the config file.
enum BadSetting: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case registryNotMadeYet, platformURL, projectId, subscriptionKey, preview, offline, delta, signaturePolicy, language
    case permissionStore, network, limits, retention, trust, lockTimeout, permissionStoreTimeouts

    var testDescription: String { rawValue }

    /// The setting it belongs to (several bad values may share one).
    var setting: String {
        switch self {
        case .registryNotMadeYet, .platformURL: return "platform"
        default: return rawValue
        }
    }

    /// The environment that carries it; `notYet` is a registry folder that does not exist yet.
    func environment(notYet: String) -> [String: String] {
        switch self {
        case .registryNotMadeYet: return ["MINIAPP_PLATFORM": notYet]
        case .platformURL: return ["MINIAPP_PLATFORM": "ftp://platform.example/"]
        case .projectId: return ["MINIAPP_PROJECT_ID": "no spaces allowed"]
        case .subscriptionKey: return ["MINIAPP_SUBSCRIPTION_KEY": "two words"]
        case .preview: return ["MINIAPP_PREVIEW": "maybe"]
        case .offline: return ["MINIAPP_OFFLINE": "maybe"]
        case .delta: return ["MINIAPP_DELTA": "maybe"]
        case .signaturePolicy: return ["MINIAPP_SIGNATURE_POLICY": "lenient"]
        case .language: return ["MINIAPP_LANG": "../etc"]
        case .permissionStore: return ["MINIAPP_PERMISSION_STORE": "mysql://host/db"]
        default: return [:]
        }
    }

    /// The config file that carries it, if it is one of the file's settings.
    var configFile: String? {
        switch self {
        case .network: return #"{"retry": "often"}"#
        case .limits: return #"{"limits": {"maxEntries": -1}}"#
        case .retention: return #"{"retention": "all"}"#
        case .trust: return #"{"trustedKeys": [""]}"#
        case .lockTimeout: return #"{"lockTimeoutSeconds": "long"}"#
        case .permissionStoreTimeouts: return #"{"permissionStoreTimeouts": []}"#
        default: return nil
        }
    }
}

/// A command and the settings it reads; every other setting must not stop it.
struct SettingUse: Sendable, CustomTestStringConvertible {
    var arguments: [String]
    var uses: Set<String>

    var testDescription: String { arguments.prefix(3).joined(separator: " ") }

    static let platformAccess: Set<String> = ["platform", "projectId", "subscriptionKey", "preview", "offline", "network", "language"]
    static let permissions: Set<String> = ["permissionStore", "permissionStoreTimeouts", "lockTimeout"]
    static let installing = platformAccess.union(["delta", "signaturePolicy", "limits", "retention", "trust", "lockTimeout"])

    /// Every command (`load` reads every setting, so none is unused there). `W` stands for the work folder.
    static let commands: [SettingUse] = [
        SettingUse(arguments: ["keygen", "--out", "W/new-key"], uses: []),
        SettingUse(arguments: ["sign", "W/app.zip", "--version-id", "v-9", "--key", "W/k.pem"], uses: []),
        SettingUse(arguments: ["serve", "W/registry", "--port", "0"], uses: []),
        SettingUse(arguments: ["publish", "W/app.zip", "--registry", "W/not-yet", "--app-id", "fresh", "--version-tag", "1.0.0", "--key", "W/k.pem"], uses: ["limits"]),
        SettingUse(arguments: ["list"], uses: platformAccess),
        SettingUse(arguments: ["info", "hello"], uses: platformAccess),
        SettingUse(arguments: ["manifest", "hello"], uses: platformAccess),
        SettingUse(arguments: ["download", "hello"], uses: installing),
        SettingUse(arguments: ["install", "W/app.zip", "--app-id", "local", "--version-id", "v-9", "--signature", "SIGNATURE", "--public-key", "W/k.pub.pem"], uses: installing),
        SettingUse(arguments: ["cache", "list"], uses: ["lockTimeout"]),
        SettingUse(arguments: ["cache", "verify"], uses: ["lockTimeout", "trust", "limits"]),
        SettingUse(arguments: ["cache", "prune"], uses: ["lockTimeout", "retention"]),
        SettingUse(arguments: ["cache", "remove", "hello"], uses: ["lockTimeout"]),
        SettingUse(arguments: ["permissions", "show", "hello"], uses: platformAccess.union(permissions)),
        SettingUse(arguments: ["permissions", "grant", "hello", "USER_NAME"], uses: platformAccess.union(permissions)),
        SettingUse(arguments: ["permissions", "deny", "hello", "USER_NAME"], uses: platformAccess.union(permissions)),
        SettingUse(arguments: ["permissions", "export", "hello"], uses: platformAccess.union(permissions)),
        SettingUse(arguments: ["permissions", "import", "hello", "W/pairs.json"], uses: platformAccess.union(permissions)),
        SettingUse(arguments: ["permissions", "export", "--format", "store"], uses: permissions),
        SettingUse(arguments: ["permissions", "import", "W/store.json"], uses: permissions),
        SettingUse(arguments: ["permissions", "reset", "hello"], uses: permissions),
        SettingUse(arguments: ["permissions", "list"], uses: permissions),
        SettingUse(arguments: ["permissions", "history", "hello"], uses: permissions),
    ]

    /// Each command with each bad value of a setting it does not use.
    static let unusedCases: [(SettingUse, BadSetting)] = commands.flatMap { command in
        BadSetting.allCases.filter { !command.uses.contains($0.setting) }.map { (command, $0) }
    }

    /// Each command with each bad value of a setting it uses: still refused, as before.
    static let usedCases: [(SettingUse, BadSetting)] = commands.flatMap { command in
        BadSetting.allCases.filter { command.uses.contains($0.setting) }.map { (command, $0) }
    }
}

@Suite struct UnusedSettingTests {
    let work = try! TemporaryDirectory.make().path

    /// A key, a zip, a registry with hello published, and for the commands that work on them hello
    /// in the cache with a decision stored and the documents import reads. Returns the clean environment.
    func fixture(for command: SettingUse) async throws -> [String: String] {
        let environment = ["MINIAPP_PLATFORM": work + "/registry", "MINIAPP_CACHE_DIR": work + "/cache"]
        try await succeed(["keygen", "--out", work + "/k"])
        try writeTestFile(work + "/app.zip", Data(try BundleFactory.zip(BundleFactory.helloFiles)))
        try await succeed(["publish", work + "/app.zip", "--registry", work + "/registry", "--app-id", "hello", "--version-tag", "1.0.0", "--key", work + "/k.pem"])
        guard ["cache", "permissions", "info", "manifest"].contains(command.arguments[0]) else { return environment }
        try await succeed(["download", "hello"], environment)
        guard command.arguments[0] == "permissions" else { return environment }
        try await succeed(["permissions", "grant", "hello", "LOCATION"], environment)
        try writeTestFile(work + "/pairs.json", #"{"miniAppId": "hello", "pairValues": [{"first": "rakuten.miniapp.user.USER_NAME", "second": "ALLOWED"}]}"#)
        let store = try await succeed(["permissions", "export", "--format", "store"], environment)
        try writeTestFile(work + "/store.json", Data(store.stdout.utf8))
        return environment
    }

    @discardableResult
    func succeed(_ arguments: [String], _ environment: [String: String] = [:]) async throws -> CommandResult {
        let result = try await CommandRunner.run(arguments, environment: environment)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")): stderr: \(result.stderr)")
        return result
    }

    /// The command's arguments for this work folder, and its environment with `bad` added.
    func prepare(_ command: SettingUse, _ bad: BadSetting, _ base: [String: String]) async throws -> ([String], [String: String]) {
        var arguments = command.arguments.map { $0.hasPrefix("W/") ? work + $0.dropFirst(1) : $0 }
        if let index = arguments.firstIndex(of: "SIGNATURE") {
            let signed = try await succeed(["sign", work + "/app.zip", "--version-id", "v-9", "--key", work + "/k.pem"])
            arguments[index] = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var environment = base.merging(bad.environment(notYet: work + "/not-yet")) { _, new in new }
        if let text = bad.configFile {
            try writeTestFile(work + "/config.json", Data(text.utf8))
            environment["MINIAPP_CONFIG"] = work + "/config.json"
        }
        return (arguments, environment)
    }

    @Test(arguments: SettingUse.unusedCases)
    func aBadSettingTheCommandDoesNotUseStopsNothing(_ command: SettingUse, _ bad: BadSetting) async throws {
        let (arguments, environment) = try await prepare(command, bad, try await fixture(for: command))
        if arguments.first == "serve" {
            let (server, _, _) = try await startServe(arguments[1], environment: environment)
            server.interrupt()
            #expect(await server.exited() == 0)
            return
        }
        let result = try await CommandRunner.run(arguments, environment: environment)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("invalid"), "stderr: \(result.stderr)")
        if arguments.first == "publish" {
            #expect(FileManager.default.fileExists(atPath: work + "/not-yet/apps"), "the first publish made the registry")
        }
    }

    @Test(arguments: SettingUse.usedCases)
    func aBadSettingTheCommandUsesIsStillRefused(_ command: SettingUse, _ bad: BadSetting) async throws {
        let (arguments, environment) = try await prepare(command, bad, try await fixture(for: command))
        let before = CacheTree(work + "/cache")
        let result = try await CommandRunner.run(arguments, environment: environment)
        expectFailure(result, status: 64, mentioning: "invalid")
        #expect(CacheTree(work + "/cache") == before, "the cache and the store are as they were")
    }
}
