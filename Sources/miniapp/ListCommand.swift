import ArgumentParser
import MiniAppKit

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the mini-apps of the project.",
        discussion: """
            Examples:
              miniapp list --platform https://platform.example/ --project-id my-project
              miniapp list --json
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let configuration = try options.configuration(reading: .platformAccess)
        let cache = BundleCache(root: configuration.cacheDirectory, namespace: configuration.cacheNamespace)
        let entries: [ListedApp]
        if configuration.offline {
            var newest: [String: InstallRecord] = [:]
            for record in cache.withOtherNamespaces().flatMap({ $0.records() }) where (newest[record.id]?.installedAt ?? .distantPast) < record.installedAt {
                newest[record.id] = record
            }
            entries = newest.values.sorted { $0.id < $1.id }.map { record in
                ListedApp(record: AppRecord(id: record.id, version: AppVersion(versionId: record.versionId, versionTag: record.versionTag)), cached: true)
            }
        } else {
            let records = try await options.withPlatform(configuration) { try await $0.listApps() }
            entries = records.map { ListedApp(record: $0, cached: cache.record(appId: $0.id, versionId: $0.version.versionId) != nil) }
        }
        if options.json {
            try Console.json(entries)
            return
        }
        guard !entries.isEmpty else {
            if !options.quiet { Console.standardError(configuration.offline ? "no mini-apps in the cache" : "no mini-apps published") }
            return
        }
        var rows = [["ID", "NAME", "VERSION", "VERSION ID", "CACHED"]]
        for entry in entries {
            rows.append([
                entry.record.id, entry.record.displayName ?? "-", entry.record.version.versionTag ?? "-",
                entry.record.version.versionId, entry.cached ? "yes" : "no",
            ])
        }
        Console.output(Console.table(rows))
    }
}

/// An app record of `list`, with whether it is cached.
struct ListedApp: Encodable {
    var record: AppRecord
    var cached: Bool

    private enum CodingKeys: String, CodingKey { case cached }

    func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(cached, forKey: .cached)
    }
}
