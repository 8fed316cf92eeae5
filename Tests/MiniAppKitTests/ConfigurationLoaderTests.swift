import Foundation
import MiniAppPermissions
import MiniAppTestSupport
import Testing

@testable import MiniAppCore
@testable import MiniAppKit

@Suite struct ConfigurationLoaderTests {
    let home: URL

    init() throws {
        home = try TemporaryDirectory.make()
    }

    private func writeConfig(_ text: String, at path: String? = nil) throws -> String {
        let file = path ?? home.appendingPathComponent(".config/miniapp/config.json").path
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try writeTestFile(file, text)
        return file
    }

    private func loader(_ environment: [String: String] = [:]) -> ConfigurationLoader {
        ConfigurationLoader(environment: ["HOME": home.path].merging(environment) { _, new in new }, currentDirectory: home.path)
    }

    @Test func defaultsApplyWithNoSettings() throws {
        let configuration = try loader().load()
        #expect(configuration.platform == nil)
        #expect(configuration.preview == false)
        #expect(configuration.offline == false)
        #expect(configuration.signaturePolicy == .required)
        #expect(configuration.language == "default")
        #expect(configuration.cacheDirectory == home.path + "/.cache/miniapp")
        #expect(configuration.network == NetworkSettings())
    }

    @Test func commandLineBeatsEnvironmentBeatsFileBeatsDefault() throws {
        _ = try writeConfig(#"{"platform": "http://file.example/", "projectId": "file-p", "lang": "fr", "cacheDir": "/tmp/file-cache", "preview": true}"#)
        let environment = ["MINIAPP_PLATFORM": "http://env.example", "MINIAPP_PROJECT_ID": "env-p", "MINIAPP_PREVIEW": "no"]
        let configuration = try loader(environment).load(ConfigurationOverrides([.platform: .text("https://cli.example/api")]), reading: .all)
        #expect(configuration.platform == .remote(URL(string: "https://cli.example/api/")!))
        #expect(configuration.projectId == "env-p")
        #expect(configuration.preview == false)
        #expect(configuration.language == "fr")
        #expect(configuration.cacheDirectory == "/tmp/file-cache")
    }

    /// An empty variable is unset, as a shell user expects; an empty path given on the command line or
    /// in the file is an error, not the current folder.
    @Test func anEmptyCacheFolderOrPlatformIsRefusedUnlessItIsAnEmptyVariable() throws {
        #expect(try loader(["MINIAPP_CACHE_DIR": "", "MINIAPP_PLATFORM": ""]).load().cacheDirectory == home.path + "/.cache/miniapp")
        #expect(throws: ConfigurationError.invalidValue(setting: "cache directory", source: "--cache-dir", value: "", expected: "the path is empty; give the folder of the cache")) {
            try loader().load(ConfigurationOverrides([.cacheDir: .text("")]), reading: .all)
        }
        #expect(throws: ConfigurationError.self) { try loader().load(ConfigurationOverrides([.platform: .text("")]), reading: .all) }
        _ = try writeConfig(#"{"cacheDir": ""}"#)
        #expect(throws: ConfigurationError.self) { try loader().load() }
    }

    @Test func xdgPathsAreUsedForConfigAndCache() throws {
        let xdgConfig = home.appendingPathComponent("xdg-config").path
        _ = try writeConfig(#"{"projectId": "from-xdg"}"#, at: xdgConfig + "/miniapp/config.json")
        let configuration = try loader(["XDG_CONFIG_HOME": xdgConfig, "XDG_CACHE_HOME": "/var/tmp/xdg-cache"]).load()
        #expect(configuration.projectId == "from-xdg")
        #expect(configuration.cacheDirectory == "/var/tmp/xdg-cache/miniapp")
    }

    @Test func relativePathsAreResolvedAgainstTheCurrentFolderAndHome() throws {
        let configuration = try loader(["MINIAPP_CACHE_DIR": "./a/../b//c/."]).load()
        #expect(configuration.cacheDirectory == home.path + "/b/c")
        #expect(try loader().load(ConfigurationOverrides([.cacheDir: .text("~/x/./y/")]), reading: .all).cacheDirectory == home.path + "/x/y")
        #expect(try loader().load(ConfigurationOverrides([.cacheDir: .text("/../../z/..//w")]), reading: .all).cacheDirectory == "/w")
        let config = try writeConfig(#"{"projectId": "relative"}"#, at: home.path + "/conf/m.json")
        #expect(try loader(["MINIAPP_CONFIG": "conf/../conf/m.json"]).load().projectId == "relative")
        #expect(loader(["MINIAPP_CONFIG": "conf/m.json"]).configFile?.path == config)
    }

    @Test func thePermissionStoreComesFromEverySourceAndItsPasswordIsNeverShown() throws {
        #expect(try loader().load().permissionStoreLocation == .sqlite(path: home.path + "/.cache/miniapp/permissions.sqlite"))
        _ = try writeConfig(#"{"permissionStore": "postgres://file@db/perms", "permissionStoreTimeouts": {"connectSeconds": 1.5, "statementSeconds": 2}}"#)
        let fromFile = try loader().load()
        #expect(fromFile.permissionStoreTimeouts == PermissionStoreTimeouts(connect: .milliseconds(1500), statement: .seconds(2)))
        guard case .postgres(let file)? = fromFile.permissionStore else { Issue.record("not PostgreSQL"); return }
        #expect(file.user == "file" && file.host == "db" && file.database == "perms")
        let fromEnvironment = try loader(["MINIAPP_PERMISSION_STORE": "postgres://env:pw-env@db/perms", "PGPASSWORD": "unused"]).load()
        guard case .postgres(let environment)? = fromEnvironment.permissionStore else { Issue.record("not PostgreSQL"); return }
        #expect(environment.user == "env" && environment.password == "pw-env")
        #expect(!fromEnvironment.description.contains("pw-env"))
        let fromFlag = try loader(["MINIAPP_PERMISSION_STORE": "postgres://env@db/perms"]).load(ConfigurationOverrides([.permissionStore: .text("stores/p.sqlite")]), reading: .all)
        #expect(fromFlag.permissionStoreLocation == .sqlite(path: home.path + "/stores/p.sqlite"))
        #expect(try loader(["MINIAPP_PERMISSION_STORE": "postgres://u@h/d", "PGPASSWORD": "from-pg"]).load().permissionStore.map { "\($0)" } == "postgres://u@h:5432/d")
        let error = #expect(throws: ConfigurationError.self) {
            try loader(["MINIAPP_PERMISSION_STORE": "postgres://u:hunter2@h/d?sslmode=maybe"]).load()
        }
        #expect(error.map { "\($0)" }?.contains("hunter2") == false)
        #expect(error.map { "\($0)" }?.contains("sslmode") == true)
        _ = try writeConfig(#"{"permissionStoreTimeouts": {"connectSeconds": 0}}"#)
        #expect(throws: ConfigurationError.self) { try loader().load() }
    }

    @Test func aConfigFileThatCannotBeReadIsRefused() throws {
        let folder = home.path + "/folder.json"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(throws: ConfigurationError.unreadableFile(path: folder, reason: "it is not a regular file")) {
            try loader(["MINIAPP_CONFIG": folder]).load()
        }
    }

    @Test func configNamedByVariableMustExist() throws {
        #expect(throws: ConfigurationError.unreadableFile(path: "/nonexistent/miniapp.json", reason: "it does not exist")) {
            try loader(["MINIAPP_CONFIG": "/nonexistent/miniapp.json"]).load()
        }
    }

    @Test func tuningComesFromTheConfigFile() throws {
        let file = try writeConfig(#"{"retry": {"maxAttempts": 2, "initialDelayMs": 5, "budgetSeconds": 1.5, "maxRetryAfterSeconds": 3}, "timeouts": {"connectSeconds": 2, "readSeconds": 0.5}}"#, at: home.appendingPathComponent("c.json").path)
        let network = try loader(["MINIAPP_CONFIG": file]).load().network
        #expect(network.retry.maxAttempts == 2)
        #expect(network.retry.initialDelay == .milliseconds(5))
        #expect(network.retry.totalBudget == .milliseconds(1500))
        #expect(network.retry.maxRetryAfter == .seconds(3))
        #expect(network.connectTimeout == .seconds(2))
        #expect(network.readTimeout == .milliseconds(500))
    }

    @Test(arguments: [
        ("1", true), ("true", true), ("YES", true), ("0", false), ("false", false), ("no", false),
    ])
    func booleanVariablesAcceptTheDocumentedSpellings(value: String, expected: Bool) throws {
        let configuration = try loader(["MINIAPP_OFFLINE": value, "MINIAPP_PREVIEW": value]).load()
        #expect(configuration.offline == expected)
        #expect(configuration.preview == expected)
    }

    @Test(arguments: [
        (["MINIAPP_OFFLINE": "maybe"], "offline"),
        (["MINIAPP_PLATFORM": "ftp://x.example/"], "platform"),
        (["MINIAPP_PLATFORM": "https://"], "platform"),
        (["MINIAPP_PLATFORM": "https://h.example/?q=1"], "platform"),
        (["MINIAPP_PLATFORM": "/no/such/registry"], "platform"),
        (["MINIAPP_PROJECT_ID": "a/b"], "project id"),
        (["MINIAPP_SIGNATURE_POLICY": "lenient"], "signature policy"),
        (["MINIAPP_LANG": "en US"], "language"),
    ])
    func badValuesAreRefusedNamingTheSetting(environment: [String: String], setting: String) throws {
        let error = #expect(throws: ConfigurationError.self) { try loader(environment).load() }
        guard case .invalidValue(let named, let source, _, _)? = error else {
            Issue.record("expected an invalid value, got \(String(describing: error))")
            return
        }
        #expect(named == setting)
        #expect(source.hasPrefix("MINIAPP_"))
        #expect(error?.category == .usage)
    }

    @Test(arguments: [
        #"{"preview": "yes"}"#, #"{"platform": 5}"#, #"{"retry": {"maxAttempts": 0}}"#, #"{"timeouts": []}"#, #"[1, 2]"#, "{not json",
    ])
    func badConfigFilesAreRefused(text: String) throws {
        let file = try writeConfig(text, at: home.appendingPathComponent("bad.json").path)
        #expect(throws: ConfigurationError.self) { try loader(["MINIAPP_CONFIG": file]).load() }
    }

    @Test func registryDirectoryIsAccepted() throws {
        let configuration = try loader(["MINIAPP_PLATFORM": home.path]).load()
        #expect(configuration.platform == .registry(path: home.path))
    }

    @Test func descriptionNeverShowsTheSubscriptionKey() throws {
        let configuration = try loader(["MINIAPP_SUBSCRIPTION_KEY": "s3cr3t-key"]).load()
        #expect(configuration.subscriptionKey == "s3cr3t-key")
        #expect(!configuration.description.contains("s3cr3t"))
    }

    @Test func missingPlatformSaysHowToSetOne() {
        #expect(ConfigurationError.missingPlatform.description == "no platform configured: set the configuration's platform")
    }
}
