import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit

@main
struct Miniapp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "miniapp",
        abstract: "List, download, verify, cache and load signed mini-apps.",
        discussion: """
            Examples:
              miniapp list --platform https://platform.example/ --project-id my-project
              miniapp info 1a2b3c --json
              miniapp manifest 1a2b3c --lang ja
            'miniapp --version' prints the tool's version.
            """,
        subcommands: [
            ListCommand.self, InfoCommand.self, ManifestCommand.self, DownloadCommand.self, InstallCommand.self,
            LoadCommand.self, CacheCommand.self, PermissionsCommand.self, KeygenCommand.self, SignCommand.self, PublishCommand.self, ServeCommand.self,
            TUFCommand.self,
            RunCommand.self, DevCommand.self,
        ]
    )

    /// Parses the command line, runs the command, and turns every failure into one `error:` line and
    /// the exit code of spec/cli.md.
    static func main() async {
        // libarchive converts each zip entry's DOS time with mktime(), and while TZ is unset glibc reads
        // /etc/localtime's status again on every mktime(): about 3,600 stats for a bundle of 1,000 files.
        // Naming the same file in TZ keeps the zone and reads it once.
        if getenv("TZ") == nil { setenv("TZ", ":/etc/localtime", 0) }
        // The library's blocking work runs on the executor's thread pool, started at its first use. Starting its
        // threads (and one more to start them) while any command parsed cost every command CPU on a
        // two-core machine: without it, release, 3 x 11 interleaved runs, `--version` 11.4-11.9 ->
        // 10.1-10.5 ms, a cache hit of `download --version` 18.2-19.6 -> 17.4-18.1 ms, of `download`
        // 25.6-28.9 -> 23.8-24.8 ms. Only the quick commands below start it early, on this
        // thread, which has nothing else to do.
        // The tool's own --version is only `miniapp --version`. ArgumentParser's `version:` would add the
        // flag to every command, where `download --version` is the version id (the help listed both),
        // and a root flag would swallow a `download --version` given without its value.
        if CommandLine.arguments.dropFirst() == ["--version"] {
            Console.output(PackageInfo.version)
            Foundation.exit(0)
        }
        // `download <app-id> [--version <id>]` and `list` in their plain forms skip ArgumentParser.
        if let command = QuickCommandLine.command(Array(CommandLine.arguments.dropFirst())) {
            // The process's executor, which the command's runtime takes over and shuts down; made here
            // so that this thread can start its pool (below) while the command gets ready.
            let executor = BlockingExecutor()
            // A cache hit of a given version is answered here, on this thread, before any other starts:
            // starting NIO's thread pool, a thread for the command and the hops between them took 0.85 ms
            // of such a hit's 5.4 from `main` (dynamic build, uprobes, medians of 41 interleaved
            // runs). What it cannot answer (anything else) is run as follows, from the start.
            do {
                if try command.runFromCacheNow(executor: executor) { finish() }
            } catch {
                exitForFailure(error)
            }
            // The command runs on the global executor while this thread, otherwise parked until the
            // exit, starts the executor's thread pool, which every quick command needs a millisecond or two later
            // (whichever gets there first starts it; the other waits for it). A cache hit of `download
            // --version` went, from `main` to the exit, 7.1 -> 5.8 ms this way (median of 21, ftrace on
            // uprobes, before the answer above): the pool's start (1.3 ms: three conformance scans, two
            // threads started and waited for) overlaps the settings. (`runAndExit` exits the process: the
            // wait below never ends.)
            let run = Task.detached { () async -> Void in await runAndExit(command, executor: executor) }
            executor.start()
            await run.value
        }
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
            // OpenSSL's set-up (CryptoRuntime.warmUp) is started where hashing is sure to follow: by the
            // installer once a version must be downloaded, repaired or installed, and by `cache verify`.
            // Started here for every command, it cost a cache hit (which hashes nothing) about 0.9 ms of
            // its 19 (release, 31 interleaved runs).
        } catch {
            exitForParseError(error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch {
            exitForFailure(error)
        }
        finish()
    }

    /// Runs a quick command and exits on the thread that ran its end. Nonisolated, the function runs on
    /// the global executor: the exit does not wait for the main actor, whose queue (the main thread,
    /// parked in `dispatch_main` once it has started the thread pool) would get a new thread for it.
    nonisolated private static func runAndExit(_ command: QuickCommandLine.Command, executor: BlockingExecutor) async -> Never {
        do {
            try await command.run(executor: executor)
        } catch {
            exitForFailure(error)
        }
        finish()
    }

    /// Ends a command that succeeded.
    private static func finish() -> Never {
        HeldLog.flush()
        // Exit here rather than return: returning from an async main hands the exit to the main queue,
        // which starts a thread for it (about 0.3 ms of a warm `download`).
        Foundation.exit(0)
    }

    private static func exitForParseError(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        if code == .success {
            Console.output(fullMessage(for: error))
            Foundation.exit(0)
        }
        let message = Self.message(for: error)
        Console.error(message.isEmpty ? "invalid command line" : message)
        Console.standardError("run 'miniapp --help' or 'miniapp <command> --help' for usage")
        HeldLog.flush()
        Foundation.exit(ExitStatus.usage)
    }

    private static func exitForFailure(_ error: any Error) -> Never {
        let code: Int32
        switch error {
        case let exit as ExitCode:
            code = exit.rawValue
        case let categorized as any CategorizedError:
            Console.error(CLIMessages.describe(categorized))
            code = ExitStatus.code(for: categorized.category)
        case is CancellationError:
            Console.error("interrupted")
            code = ExitStatus.interrupted
        default:
            let parseCode = exitCode(for: error)
            if parseCode == .success || parseCode == .validationFailure { exitForParseError(error) }
            let nsError = error as NSError
            if nsError.domain == NSCocoaErrorDomain || nsError.domain == NSPOSIXErrorDomain {
                Console.error("local I/O failed: \(nsError.localizedDescription)")
                code = ExitStatus.code(for: .localIO)
            } else {
                Console.error("unexpected failure: \(error)")
                code = ExitStatus.internalError
            }
        }
        HeldLog.flush()
        Foundation.exit(code)
    }
}
