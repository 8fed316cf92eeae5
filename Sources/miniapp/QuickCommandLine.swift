import ArgumentParser
import MiniAppCore
import MiniAppKit

/// The command lines scripts run most (`download <app-id>` with or without `--version`, and `list`),
/// read without ArgumentParser, whose first use cost a cache hit about 3 of its 19 ms: it reflects on
/// every command on the path, and its property wrappers and reflection make the Swift runtime look up
/// about 45 protocol conformances, each a scan of the 12,000 conformance records of the binary and its
/// libraries (perf and uprobes).
///
/// Only a plain subset is read here: the command's name first, then its options as `--name value` or
/// `--name=value`, its flags, and one app id. Anything else (help, `--`, a repeated option, a value that
/// starts with `-` or is empty, an unknown or abbreviated option, more app ids, a line that fails the
/// command's validation) returns `nil`, and ArgumentParser parses it, with its own messages. What is read
/// here is the command ArgumentParser makes of the same line, as plain values: a test compares both on
/// every line of a generated corpus.
enum QuickCommandLine {
    /// A command read quickly, ready to run.
    enum Command: Equatable, Sendable {
        case download(AppTarget, force: Bool, CommandSettings)
        case list(CommandSettings)

        /// Runs the command with `executor`, which its runtime takes over.
        func run(executor: BlockingExecutor) async throws {
            switch self {
            case .download(let target, let force, let settings): try await DownloadCommand.download(target, force: force, options: settings, executor: executor)
            case .list(let settings): try await ListCommand.list(options: settings, executor: executor)
            }
        }

        /// Answers the command on the calling thread before any other thread starts, when it can: a
        /// download of a given version that the cache holds intact, without starting `executor`. `false`
        /// when ``run(executor:)`` must answer it.
        func runFromCacheNow(executor: BlockingExecutor) throws -> Bool {
            guard case .download(let target, force: false, let settings) = self,
                  let outcome = DownloadCommand.cachedOutcomeNow(target, options: settings, executor: executor)
            else { return false }
            try settings.render(outcome, verb: "downloaded")
            return true
        }
    }

    /// The command `arguments` (without the program's name) ask for, or `nil` for ArgumentParser.
    static func command(_ arguments: [String]) -> Command? {
        guard let name = arguments.first else { return nil }
        let rest = arguments.dropFirst()
        switch name {
        case "download":
            guard let line = Line(rest, options: globalOptionNames + ["--version", "--preview-code"], flags: globalFlagNames + ["--force"]),
                  line.positionals.count == 1, let settings = settings(line)
            else { return nil }
            let target = AppTarget(appId: line.positionals[0], versionId: line.option("--version"), previewCode: line.option("--preview-code"))
            guard (try? target.validate()) != nil else { return nil }
            return .download(target, force: line.flag("--force"), settings)
        case "list":
            guard let line = Line(rest, options: globalOptionNames, flags: globalFlagNames), line.positionals.isEmpty, let settings = settings(line) else { return nil }
            return .list(settings)
        default:
            return nil
        }
    }

    /// ``GlobalOptions``'s options and flags, by their long names: the settings' from their
    /// ``SettingDeclaration``, then the output flags. (Arrays, not sets: a set of strings made here was
    /// the process's first use of `String: Hashable`, a conformance scan of its own.)
    private static let (globalOptionNames, globalFlagNames): ([String], [String]) = {
        // A plain loop: no key path or closure for the runtime to make on the way to a cache hit.
        var options: [String] = []
        var flags: [String] = []
        for setting in SettingDeclaration.all {
            if setting.takesValue { options.append(setting.flag) } else { flags.append(setting.flag) }
        }
        return (options, flags + ["--json", "--verbose", "--quiet"])
    }()

    /// The line's settings, each declared setting read by its flag, or `nil` when they fail their validation.
    private static func settings(_ line: Line) -> CommandSettings? {
        var overrides = ConfigurationOverrides()
        for setting in SettingDeclaration.all {
            overrides[setting] = setting.takesValue ? line.option(setting.flag).map(SettingValue.text) : setting.flagValue(given: line.flag(setting.flag))
        }
        let settings = CommandSettings(overrides: overrides, json: line.flag("--json"), verbose: line.flag("--verbose"), quiet: line.flag("--quiet"))
        return (try? settings.validate()) != nil ? settings : nil
    }

    /// A command line's options, flags and positional values, or `nil` when it is not in the plain subset.
    private struct Line {
        private let optionNames: [String]
        private let flagNames: [String]
        private var values: [String?]
        private var given: [Bool]
        private(set) var positionals: [String] = []

        init?(_ arguments: ArraySlice<String>, options optionNames: [String], flags flagNames: [String]) {
            self.optionNames = optionNames
            self.flagNames = flagNames
            values = Array(repeating: nil, count: optionNames.count)
            given = Array(repeating: false, count: flagNames.count)
            var index = arguments.startIndex
            while index < arguments.endIndex {
                let token = arguments[index]
                index += 1
                guard token.hasPrefix("-") else {
                    // `help` is ArgumentParser's word wherever it stands.
                    guard !token.isEmpty, token != "help" else { return nil }
                    positionals.append(token)
                    continue
                }
                let name: String
                var value: String?
                switch token {
                case "-v": name = "--verbose"
                case "-q": name = "--quiet"
                case _ where token.hasPrefix("--"):
                    if let equals = token.firstIndex(of: "=") {
                        name = String(token[..<equals])
                        value = String(token[token.index(after: equals)...])
                    } else {
                        name = token
                    }
                default: return nil
                }
                if let flag = flagNames.firstIndex(of: name) {
                    guard value == nil, !given[flag] else { return nil }
                    given[flag] = true
                    continue
                }
                guard let option = optionNames.firstIndex(of: name), values[option] == nil else { return nil }
                if value == nil, index < arguments.endIndex {
                    value = arguments[index]
                    index += 1
                }
                guard let value, !value.isEmpty, !value.hasPrefix("-") else { return nil }
                values[option] = value
            }
        }

        func option(_ name: String) -> String? {
            optionNames.firstIndex(of: name).flatMap { values[$0] }
        }

        func flag(_ name: String) -> Bool {
            flagNames.firstIndex(of: name).map { given[$0] } ?? false
        }
    }
}
