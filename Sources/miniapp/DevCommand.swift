import ArgumentParser
import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import MiniAppPermissions
import MiniAppWebHost

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Serve a mini-app's folder as it is in a browser host with the real bridge, reloading it on every change.",
        discussion: """
            The folder is what a build tool writes (index.html and manifest.json): nothing is published, signed
            or cached. It runs as `run` runs an installed app (same origins, bridge, launch gate, prompts and
            storage); each change under the folder reloads the app's frame, and a changed manifest.json is read
            again. Without --host-profile, a sample profile (a user, contacts, tokens, a location, a catalogue, and
            the dialect's tabs or navigation) answers every action, and the host page says so. The app id is --app-id, else the folder's name made an id. Decisions and storage live in a
            store of the folder's own, under $XDG_STATE_HOME/miniapp/dev/<digest of the folder's path>/
            (~/.local/state by default), unless --permission-store names one to share. manifest.json is
            checked at the start and on every change (stderr and the host page), and each call of an action
            whose permission the manifest does not declare is reported once.
            --check only checks the folder: one line per problem on stdout, exit 65 when there is any.
            Examples:
              miniapp dev dist
              miniapp dev dist --app-id my-app --port 8080 --host-profile profile.json --open
              miniapp dev --check dist
            """
    )

    @Argument(help: "The folder to serve: it holds index.html and manifest.json.")
    var folder: String

    @Option(name: .customLong("app-id"), help: "The app id to serve it as (default: the folder's name made an id).")
    var appId: String?

    @Flag(help: "Only check the folder's manifest.json (one line per problem; exit 65 when there is any).")
    var check = false

    @OptionGroup var hosting: BrowserHostArguments

    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if let appId, !Identifier.isValid(appId) {
            throw ValidationError(IdentifierError.invalid(kind: .app, value: appId).description)
        }
    }

    func run() async throws {
        let executor = BlockingExecutor()
        if check { return try await checkOnly(executor) }
        // Without a profile of the developer's, a sample one answers every action: it says it is one.
        let chosen = try hosting.profile(fallback: HostProfile())
        let dialect = hosting.dialect(profile: chosen)
        let profile = hosting.hostProfile == nil ? HostProfile.sample(for: dialect) : chosen
        let folder = self.folder
        guard let root = try await executor.run({ BrowserHost.realFolder(folder) }) else { throw DevelopmentFolderError.notAFolder(path: folder) }
        let appId = self.appId ?? BrowserHost.developmentAppId(folder: root)
        let state = BrowserHost.stateDirectory(folder: root, environment: ProcessInfo.processInfo.environment)
        var configuration = try options.configuration(reading: [.language, .permissions])
        // Development never touches the user's cache, nor their decisions unless asked to.
        configuration.cacheDirectory = state
        configuration.offline = true
        configuration.platform = nil
        if options.permissionStore == nil { configuration.permissionStore = .sqlite(path: state + "/permissions.sqlite") }
        try await options.withRuntime(configuration, executor: executor) { runtime in
            let identity = try await BrowserHost.identity(keptIn: state, executor: runtime.executor)
            let host = try await hosting.host(runtime: runtime, profile: profile, identity: identity, logger: options.logger)
            let session = try await host.develop(folder: root, appId: appId)
            let json = options.json, quiet = options.quiet, open = hosting.open
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await report in session.reports { Self.show(report, quiet: quiet) }
                }
                group.addTask {
                    try await host.watch(session)
                }
                group.addTask {
                    try await host.run { url in
                        let origin = "http://\(BrowserHost.label(of: appId)).localhost:\(url.port ?? 0)"
                        if json {
                            try? Console.json(DevDocument(url: url.absoluteString, id: appId, folder: root, origin: origin, publish: session.publishCommand))
                        } else {
                            Console.output(url.absoluteString)
                            if !quiet {
                                Console.standardError("serving \(root) as \(appId) at \(origin); the host page is \(url.absoluteString) (Ctrl-C stops)")
                                if profile.sample == true {
                                    Console.standardError("answering as a \(host.dialect.title) host from a sample host profile: pass --host-profile to use your own")
                                }
                                Console.standardError("to publish it: \(session.publishCommand)")
                            }
                        }
                        if open { BrowserHostArguments.openInBrowser(url, quiet: quiet) }
                    }
                }
                // The host ends at SIGINT or SIGTERM: the watch and the reports end with it.
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// `--check`: the folder's problems, one line each on stdout (`--json`: an array), exit 65 when any.
    private func checkOnly(_ executor: BlockingExecutor) async throws {
        let folder = self.folder
        let found = try await executor.run { () -> (String, [ManifestProblem])? in
            BrowserHost.realFolder(folder).map { ($0, ManifestCheck.problems(ofFolder: $0)) }
        }
        await executor.shutdown()
        guard let (root, problems) = found else { throw DevelopmentFolderError.notAFolder(path: folder) }
        if options.json {
            try Console.json(problems.map { CheckedProblem(kind: $0.kind.rawValue, message: $0.message) })
        } else {
            for problem in problems { Console.output("\(root)/manifest.json: \(problem.message)") }
            if problems.isEmpty, !options.quiet { Console.standardError("\(root): no problems") }
        }
        if !problems.isEmpty { throw ExitCode(ExitStatus.code(for: .badData)) }
    }

    private static func show(_ report: DevelopmentReport, quiet: Bool) {
        switch report {
        case .checked(let problems):
            for problem in problems { Console.warning("manifest.json: \(problem.message)", quiet: quiet) }
            if problems.isEmpty, !quiet { Console.standardError("manifest.json: no problems") }
        case .manifestKept(let reason):
            Console.warning("\(reason); the last good manifest.json stays in force", quiet: quiet)
        case .undeclaredPermission(let warning):
            Console.warning(warning, quiet: quiet)
        case .reloaded(let paths, let manifestChanged):
            if !quiet { Console.standardError("reloaded (\(paths) changed\(manifestChanged ? ", manifest.json read again" : ""))") }
        }
    }
}

/// What `dev --json` prints once the host listens.
private struct DevDocument: Encodable {
    let url: String
    let id: String
    let folder: String
    let origin: String
    let publish: String
}

/// One problem of `dev --check --json`.
private struct CheckedProblem: Encodable {
    let kind: String
    let message: String
}
