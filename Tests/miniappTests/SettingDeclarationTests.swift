import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit
import MiniAppTestSupport
import Testing

@testable import miniapp

/// Every setting is reachable the three ways spec/cli.md gives it (a flag, a `MINIAPP_*` variable, a
/// config file key) by the names of its one ``SettingDeclaration``, and each way gives the same value.
struct SettingDeclarationTests {
    /// A value of a setting as each way spells it: after the flag (nil for a flag alone), in the
    /// variable, and as the JSON of the key.
    struct Sample {
        var flagValue: String?
        var variable: String
        var json: String
    }

    static let folder = "/tmp/miniapp-settings"

    /// One sample per declared setting, none the default: a setting declared without one fails the test.
    static let samples: [String: Sample] = [
        "platform": Sample(flagValue: "https://platform.example/api/", variable: "https://platform.example/api/", json: #""https://platform.example/api/""#),
        "projectId": Sample(flagValue: "proj-7", variable: "proj-7", json: #""proj-7""#),
        "subscriptionKey": Sample(flagValue: "key-123", variable: "key-123", json: #""key-123""#),
        "preview": Sample(flagValue: nil, variable: "1", json: "true"),
        "cacheDir": Sample(flagValue: folder + "/cache", variable: folder + "/cache", json: #""\#(folder)/cache""#),
        "signaturePolicy": Sample(flagValue: "advisory", variable: "advisory", json: #""advisory""#),
        "lang": Sample(flagValue: "ja-JP", variable: "ja-JP", json: #""ja-JP""#),
        "offline": Sample(flagValue: nil, variable: "yes", json: "true"),
        "delta": Sample(flagValue: nil, variable: "0", json: "false"),
        "permissionStore": Sample(flagValue: folder + "/store.sqlite", variable: folder + "/store.sqlite", json: #""\#(folder)/store.sqlite""#),
        "tufRoot": Sample(flagValue: folder + "/root.json", variable: folder + "/root.json", json: #""\#(folder)/root.json""#),
        "tufMetadata": Sample(flagValue: "https://cdn.example/tuf/metadata/", variable: "https://cdn.example/tuf/metadata/", json: #""https://cdn.example/tuf/metadata/""#),
    ]

    @Test(arguments: SettingDeclaration.all.map(\.key))
    func eachSettingIsReachedByItsFlagItsVariableAndItsKey(key: String) throws {
        let setting = try #require(SettingDeclaration.all.first { $0.key == key })
        let sample = try #require(Self.samples[key], "no sample for the declared setting \(key)")
        let home = try TemporaryDirectory.make().path
        let base = ["HOME": home, "XDG_CACHE_HOME": Self.folder + "/default-cache"]
        let loader = ConfigurationLoader(environment: base, currentDirectory: home)
        let defaults = try loader.load()

        let arguments = [setting.flag] + (sample.flagValue.map { [$0] } ?? [])
        let options = try GlobalOptions.parse(arguments)
        let byFlag = try loader.load(options.overrides, reading: .all)
        // The quick reading of plain lines takes the flag as ArgumentParser does.
        #expect(QuickCommandLine.command(["list"] + arguments) == .list(options.settings))

        let byVariable = try ConfigurationLoader(environment: base.merging([setting.variable: sample.variable]) { $1 }, currentDirectory: home).load()

        let file = home + "/config.json"
        try writeTestFile(file, Data("{\"\(setting.key)\": \(sample.json)}".utf8))
        let byKey = try ConfigurationLoader(environment: base.merging(["MINIAPP_CONFIG": file]) { $1 }, currentDirectory: home).load()

        #expect(byFlag != defaults, "\(setting.flag) changed nothing")
        #expect(byVariable == byFlag, "\(setting.variable) and \(setting.flag) disagree")
        #expect(byKey == byFlag, "the config key \(setting.key) and \(setting.flag) disagree")
    }

    /// Every declared setting has its flag in `--help`, with the declaration's help.
    @Test func theHelpListsEveryDeclaredFlag() {
        let help = GlobalOptions.helpMessage(columns: 1000)
        for setting in SettingDeclaration.all {
            #expect(help.contains(setting.flag), "\(setting.flag) is missing from --help")
            #expect(help.contains(setting.help), "the help of \(setting.flag) is not its declaration's")
        }
    }

    /// One sample per setting only the config file gives, none the default: a setting declared without
    /// one fails the test.
    static let fileSamples: [String: String] = [
        "retry": #"{"maxAttempts": 7, "initialDelayMs": 5, "maxDelayMs": 50, "budgetSeconds": 9, "maxRetryAfterSeconds": 3}"#,
        "timeouts": #"{"connectSeconds": 2.5, "readSeconds": 4}"#,
        "maxResponseBytes": "4096",
        "limits": #"{"maxEntries": 9, "maxUnpackedBytes": 99, "maxCompressionRatio": 9, "ratioFloorBytes": 9, "maxDownloadBytes": 999}"#,
        "retention": #"{"previousVersions": 3, "maxBytes": 1000, "automatic": true}"#,
        "keyCacheSeconds": "60",
        "lockTimeoutSeconds": "7",
        "permissionStoreTimeouts": #"{"connectSeconds": 1, "statementSeconds": 2}"#,
        "trustedKeys": #"["a1b2c3"]"#,
    ]

    /// Every setting only the config file gives is read by its key, and each of its members changes the
    /// configuration: a member the declaration forgets to read fails here.
    @Test(arguments: FileSettingDeclaration.all.map(\.key))
    func eachFileSettingIsReadByItsKey(key: String) throws {
        let sample = try #require(Self.fileSamples[key], "no sample for the declared config key \(key)")
        let home = try TemporaryDirectory.make().path
        let base = ["HOME": home, "XDG_CACHE_HOME": Self.folder + "/default-cache"]
        let defaults = try ConfigurationLoader(environment: base, currentDirectory: home).load()
        func loaded(_ json: String) throws -> MiniAppConfiguration {
            let file = home + "/config.json"
            try writeTestFile(file, Data("{\"\(key)\": \(json)}".utf8))
            return try ConfigurationLoader(environment: base.merging(["MINIAPP_CONFIG": file]) { $1 }, currentDirectory: home).load()
        }
        #expect(try loaded(sample) != defaults, "the config key \(key) changed nothing")
        // Each member of an object alone changes something too.
        guard case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: Data(sample.utf8)) else { return }
        for (member, value) in members {
            let one = "{\"\(member)\": \(String(decoding: try JSONEncoder().encode(value), as: UTF8.self))}"
            #expect(try loaded(one) != defaults, "\(key).\(member) changed nothing")
        }
    }
}
