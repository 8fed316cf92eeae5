import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit

struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the latest (or a given) version of a mini-app and its state in the cache.",
        discussion: """
            Examples:
              miniapp info 1a2b3c
              miniapp info 1a2b3c --version 4d5e6f --json
              miniapp info --preview-code 7f3a9c
            """
    )

    @OptionGroup var target: AppTargetArguments

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let configuration = try target.values.configuration(try options.configuration(reading: .platformAccess))
        let (record, found, rollback) = try await options.withRuntime(configuration) { runtime -> (AppRecord, (cache: BundleCache, record: InstallRecord)?, Rollback?) in
            let (appId, versionId) = try await target.values.ids(in: runtime)
            let cache = runtime.cache
            if configuration.offline {
                guard let cached = cache.lookup(appId: appId, versionId: versionId) else {
                    throw CacheError.notCached(appId: appId, versionId: versionId)
                }
                return (AppRecord(id: cached.record.id, version: AppVersion(versionId: cached.record.versionId, versionTag: cached.record.versionTag)), cached, nil)
            }
            let record = try await runtime.platform().app(appId, version: versionId)
            // The latest version, checked against what the cache remembers (a version asked for by id is no rollback).
            let rollback = versionId == nil ? (try? cache.rollback(appId: appId, offered: record.version, preview: configuration.preview)) ?? nil : nil
            return (record, cache.record(appId: appId, versionId: record.version.versionId).map { (cache, $0) }, rollback)
        }
        var state = CacheState(present: false)
        if let (view, cached) = found {
            state = CacheState(present: true, path: cached.path, signature: cached.signature.rawValue, intact: view.check(cached).intact)
        }
        let info = AppInfo(record: record, cache: state, rollbackFrom: rollback?.newer)
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
        if let rollback {
            rows.append(["rollback", "yes: older than \(Rollback.describe(rollback.newer)), known before; download refuses it, load keeps the newer version"])
        }
        if state.present, let path = state.path {
            rows.append(["cached", "yes (\(state.intact == true ? "intact" : "damaged"), signature \(state.signature ?? "-"))"])
            rows.append(["path", path])
        } else {
            rows.append(["cached", "no"])
        }
        Console.output(Console.table(rows.map { [$0[0] + ":", $0[1]] }))
    }
}

/// Whether and how a version sits in the cache, as `info` reports it.
struct CacheState: Encodable {
    var present: Bool
    var path: String?
    var signature: String?
    var intact: Bool?

    private enum CodingKeys: String, CodingKey { case present, path, signature, intact }

    /// Every key is written, `null` when unknown, as the contract's document shape has them.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(present, forKey: .present)
        try container.encode(path, forKey: .path)
        try container.encode(signature, forKey: .signature)
        try container.encode(intact, forKey: .intact)
    }
}

/// `info`'s document: the app record and its `cache` state.
struct AppInfo: Encodable {
    var record: AppRecord
    var cache: CacheState
    /// When the platform's latest version is a rollback: the newer version the cache knows of.
    var rollbackFrom: AppVersion?

    private enum CodingKeys: String, CodingKey { case cache, rollbackFrom }
    private enum VersionKeys: String, CodingKey { case versionId, versionTag }

    func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(cache, forKey: .cache)
        if let rollbackFrom {
            var version = container.nestedContainer(keyedBy: VersionKeys.self, forKey: .rollbackFrom)
            try version.encode(rollbackFrom.versionId, forKey: .versionId)
            try version.encode(rollbackFrom.versionTag, forKey: .versionTag)
        } else {
            try container.encodeNil(forKey: .rollbackFrom)
        }
    }
}
