import ArgumentParser
import MiniAppCore
import MiniAppKit

struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List, verify, remove and prune cached versions.",
        discussion: """
            These act on every cached version, whichever platform and project it came from.
            """,
        subcommands: [CacheListCommand.self, CacheVerifyCommand.self, CacheRemoveCommand.self, CachePruneCommand.self]
    )
}

extension MiniAppRuntime {
    /// The cache views a `cache` command acts on: every platform and project's part of the cache.
    var caches: [BundleCache] { cache.withOtherNamespaces() }
}

struct CacheListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List every cached version.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let configuration = try options.configuration(reading: [.lockTimeout])
        let records = try await options.withRuntime(configuration) { $0.caches.flatMap { $0.records() } }
        if options.json {
            try Console.json(records)
            return
        }
        guard !records.isEmpty else {
            if !options.quiet { Console.standardError("the cache is empty") }
            return
        }
        var rows = [["ID", "VERSION", "VERSION ID", "SIGNATURE", "BYTES", "LAST USED", "PATH"]]
        for record in records {
            rows.append([
                record.id, record.versionTag ?? "-", record.versionId, record.signature.rawValue, "\(record.sizeBytes)",
                RecordCoding.format(record.lastUsedAt), record.path,
            ])
        }
        Console.output(Console.table(rows))
    }
}

struct CacheVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-check cached versions against the digests recorded at install; exit 65 naming each damaged one."
    )

    @Argument(help: "Only this app's versions.")
    var appId: String?

    @Flag(help: "Also re-verify each kept zip against its recorded digest and signature, with the cached key.")
    var signatures = false

    @OptionGroup var options: GlobalOptions

    struct KeptZip: Encodable {
        var bytes: Int64
        var verified: Bool
        var problem: String?
    }

    struct Entry: Encodable {
        var id: String
        /// `null` for a file of the app's own (the memory of its latest versions).
        var versionId: String?
        var intact: Bool
        var problems: [String]
        /// With `--signatures`: the kept zip's check, `null` when the version keeps none.
        var keptZip: KeptZip??

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(versionId, forKey: .versionId)
            try container.encode(intact, forKey: .intact)
            try container.encode(problems, forKey: .problems)
            if let keptZip { try container.encode(keptZip, forKey: .keptZip) }
        }

        private enum CodingKeys: String, CodingKey { case id, versionId, intact, problems, keptZip }
    }

    func run() async throws {
        if let appId { try Identifier.validate(appId, as: .app) }
        let configuration = try options.configuration(reading: [.lockTimeout, .trust, .limits])
        let (appId, signatures) = (appId, signatures)
        let entries = try await options.withRuntime(configuration) { runtime in
            // Every file is hashed: OpenSSL's set-up overlaps with reading the records.
            CryptoRuntime.warmUp(on: runtime.executor)
            var entries: [Entry] = []
            for cache in runtime.caches {
                for check in try await cache.verify(appId: appId) {
                    var entry = Entry(id: check.record.id, versionId: check.record.versionId, intact: check.report.intact, problems: check.report.problems)
                    if signatures {
                        entry.keptZip = .some(nil)
                        if check.record.zipBytes > 0 {
                            do {
                                let problem = try await cache.verifyKeptZip(check.record, trustedKeys: configuration.trustedKeys)
                                entry.keptZip = .some(KeptZip(bytes: check.record.zipBytes, verified: problem == nil, problem: problem))
                            } catch CacheError.notCached {
                                // The zip went meanwhile (a newer version was installed): none is kept.
                            }
                        }
                    }
                    entries.append(entry)
                }
                // A record or a memory that cannot be read is damage too, not a version that is not there.
                let unreadable = try await runtime.executor.run { cache.unreadableFiles(appId: appId) }
                for file in unreadable {
                    entries.append(Entry(id: file.appId, versionId: file.versionId, intact: false, problems: [file.problem]))
                }
            }
            return entries
        }
        if options.json {
            try Console.json(entries)
        } else {
            for entry in entries {
                var state = entry.intact ? "ok" : "damaged: " + entry.problems.joined(separator: ", ")
                if let zip = entry.keptZip, let zip {
                    state += zip.verified ? "; kept zip verified" : "; kept zip failed: \(zip.problem ?? "")"
                }
                Console.output("\(entry.id) \(entry.versionId ?? "-") \(state)")
            }
        }
        let failedZips = entries.filter { $0.keptZip??.verified == false }
        if !failedZips.isEmpty {
            let names = failedZips.map { "\($0.id) \($0.versionId ?? "-")" }.joined(separator: ", ")
            let damaged = entries.filter { !$0.intact }.map { "\($0.id) \($0.versionId ?? "-")" }
            Console.error("\(failedZips.count) kept zip\(failedZips.count == 1 ? " fails" : "s fail") its digest or signature check (\(names))"
                + (damaged.isEmpty ? "" : "; damaged: \(damaged.joined(separator: ", "))")
                + ": run 'miniapp download <app-id> --version <version-id> --force' to download it again")
            throw ExitCode(ExitStatus.code(for: .badData))
        }
        let damaged = entries.filter { !$0.intact }
        if !damaged.isEmpty {
            let names = damaged.map { "\($0.id) \($0.versionId ?? "-")" }.joined(separator: ", ")
            let remedy = damaged.contains { $0.versionId == nil }
                ? "each problem above says what to do" : "run 'miniapp download <app-id> --version <version-id> --force' to reinstall"
            Console.error("\(damaged.count) cached version\(damaged.count == 1 ? " is" : "s are") damaged (\(names)): \(remedy)")
            throw ExitCode(ExitStatus.code(for: .badData))
        }
    }
}

struct CacheRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Delete cached versions of an app; the permission store is kept.")

    @OptionGroup var target: AppVersionArguments

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let (appId, versionId) = (target.appId, target.versionId)
        let configuration = try options.configuration(reading: [.lockTimeout])
        let removed = try await options.withRuntime(configuration) { runtime in
            var removed: [InstallRecord] = []
            for cache in runtime.caches where cache.records(appId: appId).contains(where: { versionId == nil || $0.versionId == versionId }) {
                removed += try await cache.remove(appId: appId, versionId: versionId)
            }
            return removed
        }
        guard !removed.isEmpty else { throw RemovalError.nothingCached(appId: appId, versionId: versionId) }
        if options.json {
            try Console.json(removed)
        } else if !options.quiet {
            for record in removed { Console.standardError("removed \(record.id) \(record.versionId)") }
        }
    }
}

struct CachePruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Drop old versions, least recently used first.",
        discussion: "Without options, keeps each app's most recently used version plus retention.previousVersions (default 1)."
    )

    @Option(help: "Keep the n most recently used versions of each app.")
    var keep: Int?

    @Option(name: .customLong("max-bytes"), help: "Then drop the least recently used until the cache holds at most n bytes.")
    var maxBytes: Int64?

    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if let keep, keep < 0 { throw ValidationError("--keep must be 0 or more") }
        if let maxBytes, maxBytes < 0 { throw ValidationError("--max-bytes must be 0 or more") }
    }

    func run() async throws {
        let configuration = try options.configuration(reading: [.lockTimeout, .retention])
        let retention = configuration.retention
        let keep = keep ?? (maxBytes == nil ? retention.previousVersions + 1 : nil)
        let maxBytes = maxBytes ?? retention.maxBytes
        let removed = try await options.withRuntime(configuration) { runtime in
            var removed: [InstallRecord] = []
            for cache in runtime.caches {
                removed += try await cache.prune(keep: keep, maxBytes: maxBytes)
            }
            return removed
        }
        if options.json {
            try Console.json(removed)
        } else if !options.quiet {
            for record in removed { Console.standardError("removed \(record.id) \(record.versionId)") }
            Console.standardError("pruned \(removed.count) version\(removed.count == 1 ? "" : "s")")
        }
    }
}

/// `cache remove` of something that is not cached.
enum RemovalError: CategorizedError {
    case nothingCached(appId: String, versionId: String?)

    var category: ErrorCategory { .notFound }

    var description: String {
        switch self {
        case .nothingCached(let appId, let versionId):
            return "\(versionId.map { "version \($0) of app \(appId)" } ?? "app \(appId)") is not in the cache: nothing to remove"
        }
    }
}
