import ArgumentParser
import MiniAppKit

struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the latest (or a given) version of a mini-app and its state in the cache.",
        discussion: """
            Examples:
              miniapp info 1a2b3c
              miniapp info 1a2b3c --version 4d5e6f --json
            """
    )

    @Argument(help: "The mini-app's id.")
    var appId: String

    @Option(name: .customLong("version"), help: "A version id (default: the latest).")
    var versionId: String?

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        let configuration = try options.configuration()
        if configuration.offline {
            throw CacheLookupError.notCached(appId: appId, versionId: versionId)
        }
        let record = try await options.withPlatform(configuration) { try await $0.app(appId, version: versionId) }
        let info = AppInfo(record: record, cache: CacheState(present: false))
        if options.json {
            try Console.json(info)
            return
        }
        var rows = [["id", record.id]]
        if let name = record.displayName { rows.append(["name", name]) }
        rows.append(["version", record.version.versionTag ?? "-"])
        rows.append(["version id", record.version.versionId])
        if let icon = record.icon { rows.append(["icon", icon.absoluteString]) }
        if let text = record.promotionalText { rows.append(["promotion", text]) }
        if let image = record.promotionalImageUrl { rows.append(["promotion image", image.absoluteString]) }
        rows.append(["cached", info.cache.present ? "yes" : "no"])
        Console.output(Console.table(rows.map { [$0[0] + ":", $0[1]] }))
    }
}

/// Whether and how a version sits in the cache, as `info` reports it.
struct CacheState: Encodable {
    var present: Bool
}

/// `info`'s document: the app record and its `cache` state.
struct AppInfo: Encodable {
    var record: AppRecord
    var cache: CacheState

    private enum CodingKeys: String, CodingKey { case cache }

    func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(cache, forKey: .cache)
    }
}
