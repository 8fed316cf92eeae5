import ArgumentParser
import Foundation
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
        try await Self.list(options: options.settings)
    }

    /// The list, from plain values: what `run()` does, and what ``QuickCommandLine`` runs.
    static func list(options: CommandSettings) async throws {
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
            let folders = cache.appFolderNames()
            entries = records.map { ListedApp(record: $0, cached: folders.contains($0.id) && cache.record(appId: $0.id, versionId: $0.version.versionId) != nil) }
        }
        if options.json {
            if entries.isEmpty { try Console.json(entries) } else { ListOutput.json(entries) }
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
        ListOutput.table(rows)
    }
}

/// `list`'s output written as it is made, in chunks: the same bytes as ``Console/json(_:)`` of the
/// entries (JSONEncoder, pretty, sorted keys, slashes as they are, then DEL and C1 escaped) and as
/// ``Console/output(_:)`` of ``Console/table(_:)``, without building the document through `Encodable`
/// or the table as one string (on a list of 10,000 apps that took most of the command's time).
enum ListOutput {
    private static let chunkBytes = 1 << 16

    /// The JSON array of `entries` (not empty: an empty one is `Console.json`'s).
    static func json(_ entries: [ListedApp]) {
        var out: [UInt8] = []
        out.reserveCapacity(chunkBytes + 4096)
        out.append(contentsOf: "[\n".utf8)
        for (index, entry) in entries.enumerated() {
            let record = entry.record
            out.append(contentsOf: index == 0 ? "  {\n    \"cached\" : ".utf8 : ",\n  {\n    \"cached\" : ".utf8)
            out.append(contentsOf: entry.cached ? "true".utf8 : "false".utf8)
            member("displayName", record.displayName, &out)
            member("icon", record.icon?.absoluteString, &out)
            member("id", record.id, &out)
            member("promotionalImageUrl", record.promotionalImageUrl?.absoluteString, &out)
            member("promotionalText", record.promotionalText, &out)
            out.append(contentsOf: ",\n    \"version\" : {\n      \"versionId\" : ".utf8)
            ConsoleJSON.string(record.version.versionId, &out)
            out.append(contentsOf: ",\n      \"versionTag\" : ".utf8)
            if let tag = record.version.versionTag { ConsoleJSON.string(tag, &out) } else { out.append(contentsOf: "null".utf8) }
            out.append(contentsOf: "\n    }\n  }".utf8)
            if out.count >= chunkBytes {
                Console.output(Data(out))
                out.removeAll(keepingCapacity: true)
            }
        }
        out.append(contentsOf: "\n]\n".utf8)
        Console.output(Data(out))
    }

    private static func member(_ key: StaticString, _ value: String?, _ out: inout [UInt8]) {
        guard let value else { return }
        out.append(contentsOf: ",\n    \"".utf8)
        out.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        out.append(contentsOf: "\" : ".utf8)
        ConsoleJSON.string(value, &out)
    }

    /// `rows` as ``Console/table(_:)`` lays them out, each cell made terminal-safe as
    /// ``Console/output(_:)`` makes the whole text, written in chunks.
    static func table(_ rows: [[String]]) {
        guard let columnCount = rows.map(\.count).max() else { return }
        var widths = [Int](repeating: 0, count: columnCount)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], width(cell)) }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chunkBytes + 4096)
        for (rowIndex, row) in rows.enumerated() {
            if rowIndex > 0 { out.append(UInt8(ascii: "\n")) }
            for (index, cell) in row.enumerated() {
                if index > 0 { out.append(contentsOf: "  ".utf8) }
                guard index < row.count - 1 else {
                    out.append(contentsOf: Console.terminalSafe(cell).utf8)
                    continue
                }
                if isASCII(cell) {
                    out.append(contentsOf: Console.terminalSafe(cell).utf8)
                    out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: widths[index] - cell.utf8.count))
                } else {
                    out.append(contentsOf: Console.terminalSafe(cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)).utf8)
                }
            }
            if out.count >= chunkBytes {
                Console.output(Data(out))
                out.removeAll(keepingCapacity: true)
            }
        }
        out.append(UInt8(ascii: "\n"))
        Console.output(Data(out))
    }

    /// The width ``Console/table(_:)`` gives `cell`: its count of characters.
    private static func width(_ cell: String) -> Int {
        isASCII(cell) ? cell.utf8.count : cell.count
    }

    /// ASCII without CR (CR LF is one character of two bytes): one character per byte.
    private static func isASCII(_ cell: String) -> Bool {
        cell.utf8.allSatisfy { $0 < 0x80 && $0 != 0x0D }
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
