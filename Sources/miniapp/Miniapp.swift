import ArgumentParser
import Foundation
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
            """,
        version: PackageInfo.version,
        subcommands: [
            ListCommand.self, InfoCommand.self, ManifestCommand.self, DownloadCommand.self, InstallCommand.self,
            LoadCommand.self, CacheCommand.self, PermissionsCommand.self, KeygenCommand.self, SignCommand.self, PublishCommand.self, ServeCommand.self,
        ]
    )

    /// Parses the command line, runs the command, and turns every failure into one `error:` line and
    /// the exit code of spec/cli.md.
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
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
    }

    private static func exitForParseError(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        if code == .success {
            print(fullMessage(for: error))
            Foundation.exit(0)
        }
        let message = Self.message(for: error)
        Console.error(message.isEmpty ? "invalid command line" : message)
        Console.standardError("run 'miniapp --help' or 'miniapp <command> --help' for usage")
        Foundation.exit(ExitStatus.usage)
    }

    private static func exitForFailure(_ error: any Error) -> Never {
        switch error {
        case let exit as ExitCode:
            Foundation.exit(exit.rawValue)
        case let categorized as any CategorizedError:
            Console.error(categorized.description)
            Foundation.exit(ExitStatus.code(for: categorized.category))
        case is CancellationError:
            Console.error("interrupted")
            Foundation.exit(ExitStatus.interrupted)
        default:
            let code = exitCode(for: error)
            if code == .success || code == .validationFailure { exitForParseError(error) }
            let nsError = error as NSError
            if nsError.domain == NSCocoaErrorDomain || nsError.domain == NSPOSIXErrorDomain {
                Console.error("local I/O failed: \(nsError.localizedDescription)")
                Foundation.exit(ExitStatus.code(for: .localIO))
            }
            Console.error("unexpected failure: \(error)")
            Foundation.exit(ExitStatus.internalError)
        }
    }
}
