import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit

/// The client-under-test command line of the public TUF conformance suite
/// (theupdateframework/tuf-conformance, CLIENT-CLI.md), over the library's TUF client: `init`,
/// `refresh` and `download`, exit 0 when the step succeeded fully and 1 otherwise, with one line on
/// standard error saying why.
@main
struct TUFClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "miniapp-tuf-client",
        abstract: "The TUF conformance suite's client command line, over miniapp's TUF client.",
        discussion: """
            Steps: init TRUSTED_ROOT (keep a trusted root in the metadata folder, no request), refresh \
            (the top-level metadata, as the client workflow says), download (refresh, then each \
            --target-name in order into --target-dir, a file already there with the right hashes kept).
            """
    )

    @Option(name: .customLong("metadata-dir"), help: "The folder of trusted metadata.")
    var metadataDirectory: String

    @Option(name: .customLong("metadata-url"), help: "The base URL of the repository's metadata.")
    var metadataURL: String?

    @Option(name: .customLong("target-name"), help: "A target path to download (repeatable, in order).")
    var targetNames: [String] = []

    @Option(name: .customLong("target-base-url"), help: "The base URL of the repository's targets.")
    var targetBaseURL: String?

    @Option(name: .customLong("target-dir"), help: "Where downloaded targets are kept.")
    var targetDirectory: String?

    @Flag(name: .shortAndLong, help: "Say more (repeatable).")
    var verbose: Int

    @Argument(help: "init, refresh or download.")
    var step: String

    @Argument(help: "For init: the file holding the trusted root.")
    var trustedRoot: String?

    /// Runs the step; any failure, a command line the parser refuses included, exits 1 (the suite's
    /// contract) with one line on standard error.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if let client = command as? TUFClientCommand {
                try await client.run()
            } else {
                try command.run()
            }
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            let message = error is ExitCode ? "" : fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            if !message.isEmpty { FileHandle.standardError.write(Data("miniapp-tuf-client: \(message)\n".utf8)) }
            Foundation.exit(1)
        }
    }

    func run() async throws {
        do {
            try await perform()
        } catch let error as ExitCode {
            throw error
        } catch {
            FileHandle.standardError.write(Data("miniapp-tuf-client: \(step): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    private func perform() async throws {
        switch step {
        case "init":
            guard let trustedRoot else { throw Usage("init needs the trusted root's file") }
            guard let root = FileReading.contents(trustedRoot, limit: TUFLimits().rootBytes) else { throw Usage("\(trustedRoot) cannot be read") }
            let executor = BlockingExecutor()
            do {
                try await TUFUpdater.initialize(folder: metadataDirectory, root: root, executor: executor)
            } catch {
                await executor.shutdown()
                throw error
            }
            await executor.shutdown()
        case "refresh", "download":
            guard let metadataURL else { throw Usage("\(step) needs --metadata-url") }
            let runtime = MiniAppRuntime(configuration: MiniAppConfiguration(cacheDirectory: metadataDirectory), connections: .perRequest)
            do {
                var updater = try await runtime.tufUpdater(folder: metadataDirectory, metadataURL: metadataURL, targetsURL: targetBaseURL ?? metadataURL)
                try await updater.refresh()
                if step == "download" { try await download(&updater) }
            } catch {
                await runtime.shutdown()
                throw error
            }
            await runtime.shutdown()
        default:
            throw Usage("the step is init, refresh or download, not \(step)")
        }
    }

    private func download(_ updater: inout TUFUpdater) async throws {
        guard let targetDirectory, targetBaseURL != nil, !targetNames.isEmpty else {
            throw Usage("download needs --target-name, --target-base-url and --target-dir")
        }
        try FileManager.default.createDirectory(atPath: targetDirectory, withIntermediateDirectories: true)
        for name in targetNames {
            guard let target = try await updater.target(name) else { throw Usage("no trusted targets role lists \(name)") }
            let path = targetDirectory + "/" + TUFUpdater.quote(name)
            if let kept = FileReading.contents(path, limit: target.length), target.matches(kept) { continue }
            let bytes = try await updater.download(target)
            try Durability.writeAtomically(Data(bytes), to: path, durable: false)
        }
    }

    private struct Usage: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
