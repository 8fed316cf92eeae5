import ArgumentParser
import Foundation
import Logging
import MiniAppCore
import MiniAppKit
import MiniAppBridge
import MiniAppPermissions
import MiniAppWebHost

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a mini-app in a browser: install it as load does, then host it with its bridge on 127.0.0.1.",
        discussion: """
            Prints the host page's URL (http://localhost:<port>/) as the first line of stdout and serves until
            interrupted. The app runs in a frame of its own origin (http://<app>.localhost:<port>); the host page
            asks for the permissions its launch gate needs and for those it requests, and lists what it was
            granted with a way to revoke it. --host-profile names a JSON file standing in for the host's user
            (userName, profilePhoto, contacts, accessTokens, points, locale, hostVersion, ...). --dialect makes the host
            one of another kind (liquidstate, forem, corva): the app's pages get that host's globals, events and
            launch; --path and --query say where the app is launched.
            Examples:
              miniapp run 1a2b3c
              miniapp run 1a2b3c --port 8080 --host-profile profile.json --open
              miniapp run my-dashboards --dialect corva --path /dashboards/1234 --query native=true
            """
    )

    @OptionGroup var target: AppTargetArguments

    @OptionGroup var hosting: BrowserHostArguments

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let profile = try hosting.profile()
        let configuration = try target.values.configuration(try options.configuration(reading: .all))
        try await options.withRuntime(configuration) { runtime in
            if !configuration.offline, configuration.platform == nil { throw ConfigurationError.missingPlatform }
            let (appId, versionId) = try await target.values.ids(in: runtime)
            let installer = try runtime.installer()
            let record: InstallRecord
            do {
                let outcome = try await installer.load(appId: appId, versionId: versionId, progress: options.progressBar(for: appId))
                for note in outcome.notes { Console.warning(note, quiet: options.quiet) }
                record = outcome.record
            } catch PermissionStoreError.launchRefused(_, let missing) {
                // The host page asks for what the launch gate needs before the app starts.
                guard let cached = try await installer.cachedVersions(appId: appId).first(where: { versionId == nil || $0.versionId == versionId }) else {
                    throw PermissionStoreError.launchRefused(appId: appId, missing: missing)
                }
                record = cached
            }
            // Only once the app is installed: a refused run leaves the cache and the store as they were.
            let identity = try await BrowserHost.identity(keptIn: configuration.cacheDirectory, executor: runtime.executor)
            let host = try await hosting.host(runtime: runtime, profile: profile, identity: identity, logger: options.logger)
            // A tab of the host's that runs another app: that app is installed and served too.
            var records = [record]
            for tabApp in Set((profile.tabs ?? []).compactMap(\.app)).subtracting([record.id]).sorted() {
                do {
                    records.append(try await installer.load(appId: tabApp, progress: nil).record)
                } catch PermissionStoreError.launchRefused {
                    if let cached = try await installer.cachedVersions(appId: tabApp).first { records.append(cached) }
                } catch {
                    Console.warning("the tab of \(tabApp) stays empty: \(error)", quiet: options.quiet)
                }
            }
            let json = options.json, quiet = options.quiet, open = hosting.open
            try await host.run(records) { url in
                let origin = "http://\(BrowserHost.label(of: record.id)).localhost:\(url.port ?? 0)"
                if json {
                    try? Console.json(RunDocument(url: url.absoluteString, id: record.id, versionId: record.versionId, origin: origin))
                } else {
                    Console.output(url.absoluteString)
                    if !quiet { Console.standardError("running \(record.id) \(record.versionId) at \(origin); the host page is \(url.absoluteString) (Ctrl-C stops)") }
                }
                if open { BrowserHostArguments.openInBrowser(url, quiet: quiet) }
            }
        }
    }
}

/// The options of the browser host that `run` and `dev` share.
struct BrowserHostArguments: ParsableArguments {
    @Option(help: "The port to listen on (0, the default, picks a free one).")
    var port: Int = 0

    @Option(name: .customLong("host-profile"), help: "A JSON file standing in for the host's user.")
    var hostProfile: String?

    @Option(name: .customLong("secure-storage-limit"), help: "How many bytes each app's secure storage may hold (keys plus values, UTF-8; default 1048576).")
    var secureStorageLimit: Int = 1 << 20

    @Flag(help: "Open the host page in the default browser.")
    var open = false

    @Option(help: "How the host's apps call it: rakuten, liquidstate, forem or corva (default: the host profile's \"dialect\", else rakuten).")
    var dialect: String?

    @Option(help: "The path the app is launched at, such as /dashboards/1234 (default: the host profile's launch.path, else the dialect's).")
    var path: String?

    @Option(help: "A query item name=value added to the launch URL, as a host passes its queryParams (repeatable; a=1&b=2 adds both).")
    var query: [String] = []

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (1...(1 << 30)).contains(secureStorageLimit) else { throw ValidationError("--secure-storage-limit must be 1 to 1073741824 bytes") }
        if let dialect, BridgeDialect.builtIn[dialect] == nil { throw ValidationError("--dialect: " + BridgeDialectError.unknown(name: dialect).description) }
        if let path, !HostProfile.isPath(path) { throw ValidationError("--path must start with / and stay below it (no ..)") }
        _ = try queryItems()
    }

    /// `--query`'s items, each `name=value` (percent-decoded), in order.
    func queryItems() throws -> [URLQueryItem] {
        var items: [URLQueryItem] = []
        for argument in query {
            for pair in argument.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                guard !name.isEmpty, name.utf8.count <= 256 else { throw ValidationError("--query takes name=value items: \(Sanitizer.printable(String(pair), limit: 80))") }
                let value = parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : ""
                items.append(URLQueryItem(name: name, value: value))
            }
        }
        return items
    }

    /// The host profile `--host-profile` names, else `fallback` (an empty one).
    func profile(fallback: HostProfile = HostProfile()) throws -> HostProfile {
        try hostProfile.map(Self.readProfile) ?? fallback
    }

    /// The dialect `--dialect` names, else the profile's, else Rakuten's.
    func dialect(profile: HostProfile) -> BridgeDialect {
        (dialect ?? profile.dialect).flatMap { BridgeDialect.builtIn[$0] } ?? .rakuten
    }

    /// A browser host with these options.
    func host(runtime: MiniAppRuntime, profile: HostProfile, identity: BridgeIdentity, logger: Logger) async throws -> BrowserHost {
        try await BrowserHost(
            runtime: runtime, profile: profile, environment: profile.environment(BridgeEnvironment(secureStorageLimit: secureStorageLimit)),
            identity: identity, port: port, dialect: dialect(profile: profile), launch: BrowserHost.Launch(path: path, query: try queryItems()), logger: logger
        )
    }

    /// The host profile in `path`: a regular file of at most 1 MiB holding one JSON object.
    static func readProfile(_ path: String) throws -> HostProfile {
        let shown = Sanitizer.printable(path, limit: 120)
        let read = FileReading.read(path, limit: 1 << 20)
        if case .unreadable(EFBIG) = read { throw ValidationError("--host-profile \(shown): it is over 1 MiB") }
        let bytes: [UInt8]
        do {
            bytes = try read.bytes()
        } catch {
            throw ValidationError("--host-profile \(shown): \(error)")
        }
        do {
            return try HostProfile(json: Data(bytes))
        } catch {
            throw ValidationError("--host-profile \(shown): \(error.description)")
        }
    }

    /// Opens `url` with `xdg-open`, and warns once it is known that no browser opened: `xdg-open` is
    /// not on PATH (env's 127), or it failed (no desktop, no browser set), which the host outlives.
    static func openInBrowser(_ url: URL, quiet: Bool) {
        let advice = "open \(url.absoluteString) yourself"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url.absoluteString]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.terminationHandler = { ended in
            guard ended.terminationReason != .exit || ended.terminationStatus != 0 else { return }
            let why = ended.terminationReason == .exit && ended.terminationStatus == 127
                ? "xdg-open is not on PATH" : "xdg-open failed with status \(ended.terminationStatus)"
            Console.warning("cannot open a browser (\(why)): \(advice)", quiet: quiet)
        }
        do { try process.run() } catch { Console.warning("cannot open a browser (xdg-open): \(advice)", quiet: quiet) }
    }
}

/// What `run --json` prints once the host listens.
private struct RunDocument: Encodable {
    let url: String
    let id: String
    let versionId: String
    let origin: String
}
