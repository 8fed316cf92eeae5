import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit
import MiniAppPermissions

struct PermissionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "permissions",
        abstract: "Show, grant, deny, reset, list, import and export the custom permissions of mini-apps.",
        discussion: """
            Decisions live in <cache-dir>/permissions.sqlite, shared safely between processes, or in the
            store --permission-store names (a SQLite file, or a PostgreSQL database a fleet shares); removing
            cached versions never touches them. Names may be full (rakuten.miniapp.user.USER_NAME) or short (USER_NAME).
            Examples:
              miniapp permissions show hello
              miniapp permissions grant hello USER_NAME LOCATION
              miniapp permissions export hello --format pairs > hello.json
              miniapp permissions export --format store | miniapp permissions import - --permission-store postgres://host/db
            """,
        subcommands: [
            PermissionsShowCommand.self, PermissionsGrantCommand.self, PermissionsDenyCommand.self, PermissionsResetCommand.self,
            PermissionsListCommand.self, PermissionsImportCommand.self, PermissionsExportCommand.self, PermissionsHistoryCommand.self,
        ]
    )
}

extension GlobalOptions {
    /// The manifest that declares the app's permissions: its newest cached version's, else the latest
    /// version's metadata from the platform (unless offline), else none.
    func declaredManifest(appId: String, in runtime: MiniAppRuntime, _ configuration: MiniAppConfiguration) async throws -> BundleManifest {
        if let (view, record) = runtime.cache.lookup(appId: appId) {
            return try view.manifest(of: record, language: configuration.language)
        }
        guard !configuration.offline, configuration.platform != nil else { return BundleManifest() }
        let platform = try runtime.platform()
        let latest = try await platform.latestVersion(ofApp: appId)
        return try await platform.metadata(appId: appId, versionId: latest.version.versionId, language: configuration.language)
    }

    /// The app's permissions as `show` lists them, after `change` (if any) was made to the store: one
    /// runtime reads the manifest and opens the store. The manifest is read first, so that a command
    /// that fails on it has not changed the store.
    func permissionStates(
        appId: String, _ configuration: MiniAppConfiguration, change: (@Sendable (PermissionStore) async throws -> Void)? = nil
    ) async throws -> [PermissionState] {
        try await withRuntime(configuration) { runtime in
            let manifest = try await declaredManifest(appId: appId, in: runtime, configuration)
            let store = try await runtime.permissionStore()
            if let change { try await change(store) }
            return try await store.permissions(appId: appId, manifest: manifest)
        }
    }

    /// Prints an app's permissions as `show` does.
    func renderPermissions(_ states: [PermissionState]) throws {
        if json {
            try Console.json(states)
            return
        }
        guard !states.isEmpty else {
            if !quiet { Console.standardError("no permissions declared or stored") }
            return
        }
        var rows = [["NAME", "STATUS", "REQUIRED", "DECIDED", "REASON"]]
        for state in states {
            let name = state.name + (state.known ? "" : " (unknown)") + (state.declared ? "" : " (not declared)")
            rows.append([name, state.status.rawValue, state.required ? "yes" : "no", state.decidedAt.map(RecordCoding.format) ?? "never", state.reason ?? "-"])
        }
        Console.output(Console.table(rows))
    }
}

struct PermissionsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Each permission the app declares (and any stored), with its status.")

    @Argument(help: "The mini-app's id.")
    var appId: String

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        let configuration = try options.configuration(reading: [.platformAccess, .permissions])
        try options.renderPermissions(try await options.permissionStates(appId: appId, configuration))
    }
}

/// The `<app-id> <name>...` that grant and deny take, checked before anything runs.
struct PermissionNamesArguments: ParsableArguments {
    @Argument(help: "The mini-app's id.")
    var appId: String

    @Argument(help: "Permission names, full or short.")
    var names: [String]

    func validate() throws {
        if names.isEmpty { throw ValidationError("name at least one permission") }
        if !Identifier.isValid(appId) { throw ValidationError(IdentifierError.invalid(kind: .app, value: appId).description) }
        for name in names where !PermissionName.isValid(name) { throw ValidationError(PermissionStoreError.invalidName(name).description) }
    }
}

/// What grant and deny share: set one status on the named permissions, then print the new list.
protocol PermissionDecisionCommand: AsyncParsableCommand {
    static var status: PermissionStatus { get }
    var target: PermissionNamesArguments { get }
    var options: GlobalOptions { get }
}

extension PermissionDecisionCommand {
    func run() async throws {
        let (appId, names) = (target.appId, target.names)
        let configuration = try options.configuration(reading: [.platformAccess, .permissions])
        let decisions = Dictionary(names.map { ($0, Self.status) }, uniquingKeysWith: { first, _ in first })
        let states = try await options.permissionStates(appId: appId, configuration) { try await $0.set(appId: appId, decisions, source: .commandLine) }
        try options.renderPermissions(states)
    }
}

struct PermissionsGrantCommand: PermissionDecisionCommand {
    static let configuration = CommandConfiguration(commandName: "grant", abstract: "Set permissions to ALLOWED; prints the new list.")
    static let status = PermissionStatus.allowed

    @OptionGroup var target: PermissionNamesArguments

    @OptionGroup var options: GlobalOptions
}

struct PermissionsDenyCommand: PermissionDecisionCommand {
    static let configuration = CommandConfiguration(commandName: "deny", abstract: "Set permissions to DENIED; prints the new list.")
    static let status = PermissionStatus.denied

    @OptionGroup var target: PermissionNamesArguments

    @OptionGroup var options: GlobalOptions
}

struct PermissionsResetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reset", abstract: "Forget the app's stored statuses.")

    @Argument(help: "The mini-app's id.")
    var appId: String

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        let configuration = try options.configuration(reading: .permissions)
        try await options.withPermissionStore(configuration) { try await $0.reset(appId: appId, source: .commandLine) }
        if !options.quiet && !options.json { Console.standardError("forgot the stored permissions of \(appId)") }
        if options.json { try Console.json([String: String]()) }
    }
}

struct PermissionsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Every cached app, and every app with stored decisions, with its statuses.")

    @OptionGroup var options: GlobalOptions

    struct Entry: Encodable {
        var id: String
        var permissions: [StoredPermission]
    }

    func run() async throws {
        let configuration = try options.configuration(reading: .permissions)
        let (stored, ids) = try await options.withRuntime(configuration) { runtime in
            let stored = try await runtime.permissionStore().appsWithDecisions()
            var ids = Set(stored.keys)
            for cache in runtime.caches { ids.formUnion(cache.records().map(\.id)) }
            return (stored, ids)
        }
        let entries = ids.sorted().map { Entry(id: $0, permissions: stored[$0] ?? []) }
        if options.json {
            try Console.json(entries)
            return
        }
        for entry in entries {
            let statuses = entry.permissions.map { "\($0.name)=\($0.status.rawValue)" }.joined(separator: " ")
            Console.output("\(entry.id)  \(statuses.isEmpty ? "(nothing decided)" : statuses)")
        }
    }
}

struct PermissionsExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print an app's permissions in an SDK interchange shape, or every decision of the store (--format store).",
        discussion: """
            --format store prints every decision with the time it was set, of one app or (without an app id) of
            every app: what 'permissions import' reads back into another store with the same times.
            """
    )

    @Argument(help: "The mini-app's id (optional with --format store: every app).")
    var appId: String?

    @Option(help: "full ([{permissionName, isPermissionGranted}]), pairs ({miniAppId, pairValues}) or store (every decision with its time).")
    var format: ExportFormat = .full

    @OptionGroup var options: GlobalOptions

    enum ExportFormat: String, ExpressibleByArgument, CaseIterable {
        case full, pairs, store

        /// The SDK shape of this format; `nil` for the store's own.
        var interchange: PermissionInterchange? { PermissionInterchange(rawValue: rawValue) }
    }

    func validate() throws {
        if appId == nil, format != .store { throw ValidationError("name the app to export, or use --format store for every app") }
        if let appId, !Identifier.isValid(appId) { throw ValidationError(IdentifierError.invalid(kind: .app, value: appId).description) }
    }

    func run() async throws {
        // Only an SDK shape reads the app's manifest (from the cache or the platform).
        let configuration = try options.configuration(reading: format == .store ? .permissions : [.platformAccess, .permissions])
        var data: Data
        switch (format.interchange, appId) {
        case (let shape?, let appId?):
            data = try shape.export(appId: appId, try await options.permissionStates(appId: appId, configuration))
        default:
            // --format store (validate() lets no other format through without an app).
            let snapshot = try await options.withPermissionStore(configuration) { try await $0.snapshot(appId: appId) }
            data = try RecordCoding.encoder(pretty: true).encode(snapshot)
        }
        data.append(UInt8(ascii: "\n"))
        Console.output(data)
    }
}

struct PermissionsImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Store the statuses of a document in either interchange shape, or every decision of a store export (- reads stdin).",
        discussion: """
            permissions import <app-id> <file> reads either SDK shape for one app; permissions import <file> reads
            an export in the store format (every app, each decision with its time).
            """
    )

    @Argument(help: "[<app-id>] <file>: the mini-app's id (not with a store export), then the JSON file, or - for standard input.")
    var arguments: [String] = []

    @OptionGroup var options: GlobalOptions

    func validate() throws {
        guard (1...2).contains(arguments.count) else { throw ValidationError("give the app id and the file, or only the file of a store export") }
        if arguments.count == 2, !Identifier.isValid(arguments[0]) {
            throw ValidationError(IdentifierError.invalid(kind: .app, value: arguments[0]).description)
        }
    }

    /// The most an import reads: a store export of tens of thousands of apps fits many times over, and
    /// an endless stdin (`/dev/zero`, `yes`) ends with an error instead of filling the memory.
    static let importLimit = 256 << 20

    /// The bytes of `file`, or of stdin for `-`.
    static func document(_ file: String) throws -> [UInt8] {
        let shown = file == "-" ? "stdin" : Sanitizer.printable(file, limit: 120)
        switch file == "-" ? FileReading.readToEnd(STDIN_FILENO, limit: importLimit) : FileReading.read(file, limit: importLimit) {
        case .contents(let bytes): return bytes
        case .unreadable(EFBIG): throw ImportFileError.tooBig(source: shown, limit: importLimit)
        case .missing: throw ImportFileError.unreadable(source: shown, reason: "it does not exist")
        case .notARegularFile: throw ImportFileError.unreadable(source: shown, reason: "it is not a regular file (to import from a pipe, give - and pipe it to stdin)")
        case .unreadable(let code): throw ImportFileError.unreadable(source: shown, reason: String(cString: strerror(code)))
        }
    }

    func run() async throws {
        let configuration = try options.configuration(reading: .permissions)
        let file = arguments[arguments.count - 1]
        let data = try Data(Self.document(file))
        let snapshot = try? RecordCoding.decoder().decode(PermissionSnapshot.self, from: data)
        if let snapshot, snapshot.format == PermissionSnapshot.formatName {
            guard snapshot.version == 1 else { throw PermissionStoreError.invalidImport(reason: "it is a store export of version \(snapshot.version), which this version cannot read") }
            var chosen = snapshot
            if arguments.count == 2 { chosen.apps = snapshot.apps.filter { $0.id == arguments[0] } }
            try await options.withPermissionStore(configuration) { try await $0.restore(chosen) }
            let count = chosen.apps.reduce(0) { $0 + $1.permissions.count }
            if options.json {
                try Console.json(["apps": chosen.apps.count, "decisions": count])
            } else if !options.quiet {
                Console.standardError("imported \(count) decision\(count == 1 ? "" : "s") of \(chosen.apps.count) app\(chosen.apps.count == 1 ? "" : "s")")
            }
            return
        }
        guard arguments.count == 2 else {
            throw PermissionStoreError.invalidImport(reason: "without an app id, only a store export (permissions export --format store) can be imported")
        }
        let appId = arguments[0]
        let parsed = try PermissionInterchange.parse(data)
        if let named = parsed.appId, named != appId {
            throw ValidationError("the document is for app \(named), not \(appId)")
        }
        // An SDK shape is checked against the app's manifest, from the cache or the platform.
        let withPlatform = try options.configuration(reading: [.platformAccess, .permissions])
        let statuses = parsed.statuses
        try options.renderPermissions(try await options.permissionStates(appId: appId, withPlatform) { try await $0.set(appId: appId, statuses, source: .commandLine) })
    }
}

struct PermissionsHistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history", abstract: "Every change of an app's permissions, oldest first.")

    @Argument(help: "The mini-app's id.")
    var appId: String

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        let configuration = try options.configuration(reading: .permissions)
        let changes = try await options.withPermissionStore(configuration) { try await $0.history(appId: appId) }
        if options.json {
            try Console.json(changes)
            return
        }
        for change in changes {
            Console.output("\(RecordCoding.format(change.changedAt))  \(change.name)  \(change.from?.rawValue ?? "undecided") -> \(change.to?.rawValue ?? "reset")")
        }
    }
}

/// A document to import that cannot be read.
enum ImportFileError: CategorizedError {
    case unreadable(source: String, reason: String)
    case tooBig(source: String, limit: Int)

    var category: ErrorCategory {
        switch self {
        case .unreadable: .notFound
        case .tooBig: .badData
        }
    }

    var description: String {
        switch self {
        case .unreadable(let source, let reason): "cannot read \(source): \(reason)"
        case .tooBig(let source, let limit): "\(source) holds over \(limit >> 20) MiB: not a permission document"
        }
    }
}
