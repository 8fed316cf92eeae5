import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit

/// `miniapp tuf ...`: the TUF repository a registry keeps in `<registry>/tuf`.
struct TUFCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tuf",
        abstract: "Keep a registry's TUF repository: its keys, roots, delegations and timestamp.",
        discussion: """
            A registry with a TUF repository (<registry>/tuf: metadata/ and targets/, plain files any \
            static server can serve) lists every version's zip as a signed target; clients configured \
            with its first root (--tuf-root) check each update against it. Each command signs with the \
            --key files it is given, each role with those the root (or the delegation) lists for it.
            Example:
              miniapp tuf keygen --out keys/root
              miniapp tuf init --registry ./registry --root-key keys/root.pem --targets-key keys/targets.pem \\
                --snapshot-key keys/snapshot.pem --timestamp-key keys/timestamp.pem
            """,
        subcommands: [
            TUFKeygenCommand.self, TUFInitCommand.self, TUFAddKeyCommand.self, TUFRevokeKeyCommand.self, TUFThresholdCommand.self,
            TUFRenewRootCommand.self, TUFDelegateCommand.self, TUFTimestampCommand.self, TUFStatusCommand.self,
        ]
    )
}

/// What every repository command takes: the registry, the signing keys, the output.
struct TUFRepositoryOptions: ParsableArguments {
    @Option(help: "The registry directory; its TUF repository is <registry>/tuf.")
    var registry: String

    @Option(name: .customLong("key"), help: "A PEM private key to sign with (repeatable).")
    var keys: [String] = []

    @OptionGroup var output: OutputOptions

    var repository: TUFRepository { TUFRepository(folder: KeyFiles.absolute(registry) + "/tuf") }

    func signers() throws -> [TUFSigner] { try keys.map(readTUFSigner) }

    /// Runs `change` on the repository holding the registry's lock, then prints its status.
    func change(_ change: @escaping @Sendable (TUFRepository) throws -> Void) async throws {
        try await changeTUF(registry: registry, output: output, change)
    }
}

/// Runs `change` on the TUF repository of `registry` holding the registry's lock, then prints its status.
func changeTUF(registry: String, output: OutputOptions, _ change: @escaping @Sendable (TUFRepository) throws -> Void) async throws {
    let folder = KeyFiles.absolute(registry)
    guard FileManager.default.fileExists(atPath: folder) else { throw ValidationError("\(registry) does not exist: give a registry directory") }
    let repository = TUFRepository(folder: folder + "/tuf")
    try await withOwnExecutor { executor in
        let lock = try await FileLock.acquire(folder + "/.lock", timeout: .seconds(60), executor: executor) {
            CacheError.busy(appId: "registry", versionId: "tuf", waitedSeconds: 60)
        }
        try await executor.run { try withExtendedLifetime(lock) { try change(repository) } }
    }
    try printStatus(of: repository, output: output)
}

/// The file at `path` as a TUF signing key.
func readTUFSigner(_ path: String) throws -> TUFSigner {
    let pem: [UInt8]
    do {
        pem = try FileReading.read(path, limit: keyFileLimit).bytes()
    } catch {
        throw TUFSigner.Failure("cannot use key \(path): \(error.description)")
    }
    do {
        return try TUFSigner(pem: String(decoding: pem, as: UTF8.self))
    } catch {
        throw TUFSigner.Failure("cannot use key \(path): \(error.description)")
    }
}

/// The public key in the PEM file at `path` (public, or private for its public half), as metadata lists it.
func readTUFPublicKey(_ path: String) throws -> JSONValue {
    let pem: [UInt8]
    do {
        pem = try FileReading.read(path, limit: keyFileLimit).bytes()
    } catch {
        throw TUFSigner.Failure("cannot use key \(path): \(error.description)")
    }
    do {
        return try TUFSigner.publicKey(pem: String(decoding: pem, as: UTF8.self))
    } catch {
        throw TUFSigner.Failure("cannot use key \(path): \(error.description)")
    }
}

/// Each top-level role's newest version and expiry, as JSON or a line each.
func printStatus(of repository: TUFRepository, output: OutputOptions) throws {
    let status = try repository.status()
    if output.json {
        var document: [String: [String: JSONValue]] = [:]
        for entry in status { document[entry.role] = ["version": .number(Double(entry.version)), "expires": .string(entry.expires)] }
        try Console.json(document)
    } else if !output.quiet {
        for entry in status { Console.output("\(entry.role) version \(entry.version), expires \(entry.expires)") }
    }
}

struct TUFKeygenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a new TUF key: <prefix>.pem (mode 0600) and <prefix>.pub.pem; prints its key id.",
        discussion: "Example:\n  miniapp tuf keygen --out keys/timestamp --type ed25519"
    )

    @Option(help: "Path prefix of the two key files.")
    var out: String

    @Option(help: "ed25519 (default), ecdsa (P-256) or rsa (3072 bits, RSA-PSS).")
    var type: String = "ed25519"

    @OptionGroup var output: OutputOptions

    struct Result: Encodable {
        var keyId: String
        var keyType: String
        var publicKeyPath: String
        var privateKeyPath: String
    }

    func validate() throws {
        guard TUFSigner.Kind(rawValue: type) != nil else { throw ValidationError("--type must be ed25519, ecdsa or rsa") }
    }

    func run() async throws {
        let signer = try TUFSigner.generate(TUFSigner.Kind(rawValue: type)!)
        let privatePath = out + ".pem", publicPath = out + ".pub.pem"
        for path in [privatePath, publicPath] where FileManager.default.fileExists(atPath: path) {
            throw ValidationError("\(path) already exists: pick another --out; keygen never overwrites a key")
        }
        try KeyFiles.write(signer.pem, to: privatePath, mode: 0o600)
        do {
            try KeyFiles.write(signer.publicPEM, to: publicPath, mode: 0o644)
        } catch {
            unlink(privatePath)
            throw error
        }
        let result = Result(keyId: signer.keyId, keyType: type, publicKeyPath: KeyFiles.absolute(publicPath), privateKeyPath: KeyFiles.absolute(privatePath))
        if output.json {
            try Console.json(result)
        } else {
            if !output.quiet { Console.standardError("wrote \(result.privateKeyPath) (private, 0600) and \(result.publicKeyPath)") }
            Console.output(result.keyId)
        }
    }
}

struct TUFInitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make the registry's TUF repository: a root with each role's keys and threshold, empty targets, a snapshot and a timestamp.",
        discussion: """
            Each --<role>-key is a PEM key file (public, or private); the private ones sign. Clients are \
            configured with the first root it writes, <registry>/tuf/metadata/1.root.json.
            Example:
              miniapp tuf init --registry ./registry --root-key r1.pem --root-key r2.pem --root-threshold 2 \\
                --targets-key t.pem --snapshot-key s.pem --timestamp-key ts.pem
            """
    )

    @Option(help: "The registry directory (created when missing).")
    var registry: String

    @Option(name: .customLong("root-key"), help: "A root key (repeatable).")
    var rootKeys: [String] = []
    @Option(name: .customLong("targets-key"), help: "A targets key (repeatable).")
    var targetsKeys: [String] = []
    @Option(name: .customLong("snapshot-key"), help: "A snapshot key (repeatable).")
    var snapshotKeys: [String] = []
    @Option(name: .customLong("timestamp-key"), help: "A timestamp key (repeatable): an online key, for serve to re-sign with.")
    var timestampKeys: [String] = []
    @Option(name: .customLong("root-threshold"), help: "How many root keys must sign a root (default 1).")
    var rootThreshold = 1
    @Option(name: .customLong("targets-threshold"), help: "How many targets keys must sign the targets (default 1).")
    var targetsThreshold = 1
    @Option(name: .customLong("snapshot-threshold"), help: "How many snapshot keys must sign a snapshot (default 1).")
    var snapshotThreshold = 1
    @Option(name: .customLong("timestamp-threshold"), help: "How many timestamp keys must sign a timestamp (default 1).")
    var timestampThreshold = 1

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let files = ["root": rootKeys, "targets": targetsKeys, "snapshot": snapshotKeys, "timestamp": timestampKeys]
        for (role, paths) in files where paths.isEmpty { throw ValidationError("--\(role)-key is needed: each role needs at least one key") }
        let keys = try files.mapValues { try $0.map(readTUFPublicKey) }
        // The private ones sign; a public key file is listed only.
        let signers = files.values.flatMap { $0 }.compactMap { try? readTUFSigner($0) }
        let thresholds = ["root": rootThreshold, "targets": targetsThreshold, "snapshot": snapshotThreshold, "timestamp": timestampThreshold]
        try FileManager.default.createDirectory(atPath: KeyFiles.absolute(registry), withIntermediateDirectories: true)
        try await changeTUF(registry: registry, output: output) { repository in try repository.create(keys: keys, thresholds: thresholds, signers: signers) }
    }
}

/// The top-level role a command changes in the root.
struct TUFRoleOption: ParsableArguments {
    @Option(help: "root, targets, snapshot or timestamp.")
    var role: String

    func validate() throws {
        guard TUFRepository.topLevelRoles.contains(role) else { throw ValidationError("--role must be root, targets, snapshot or timestamp") }
    }
}

struct TUFAddKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-key",
        abstract: "Add a key to a role in a new root (clients follow the chain of roots).",
        discussion: """
            The new root is signed by the --key files the current and the new root list for the root: a \
            threshold of each. When the role is targets, snapshot or timestamp, it is signed again too.
            Example:
              miniapp tuf add-key --registry ./registry --role root --public-key r3.pub.pem --key r1.pem --key r3.pem
            """
    )

    @OptionGroup var role: TUFRoleOption
    @Option(name: .customLong("public-key"), help: "The key to add (a PEM public key, or a private key for its public half).")
    var publicKey: String
    @OptionGroup var options: TUFRepositoryOptions

    func run() async throws {
        let key = try readTUFPublicKey(publicKey)
        let signers = try options.signers()
        let role = role.role
        try await options.change { repository in try repository.addKey(key, to: role, signers: signers) }
    }
}

struct TUFRevokeKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke-key",
        abstract: "Take a key from a role in a new root: what it signs is no longer trusted.",
        discussion: "Example:\n  miniapp tuf revoke-key --registry ./registry --role timestamp --key-id 1a2b... --key root.pem --key snapshot.pem --key new-timestamp.pem"
    )

    @OptionGroup var role: TUFRoleOption
    @Option(name: .customLong("key-id"), help: "The id of the key to revoke.")
    var keyId: String
    @OptionGroup var options: TUFRepositoryOptions

    func run() async throws {
        let signers = try options.signers()
        let (role, keyId) = (role.role, keyId)
        try await options.change { repository in try repository.revokeKey(keyId, from: role, signers: signers) }
    }
}

struct TUFThresholdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "threshold",
        abstract: "Set how many of a role's keys must sign it, in a new root.",
        discussion: "Example:\n  miniapp tuf threshold --registry ./registry --role root --threshold 2 --key r1.pem --key r2.pem"
    )

    @OptionGroup var role: TUFRoleOption
    @Option(help: "The number of keys that must sign.")
    var threshold: Int
    @OptionGroup var options: TUFRepositoryOptions

    func run() async throws {
        let signers = try options.signers()
        let (role, threshold) = (role.role, threshold)
        try await options.change { repository in try repository.setThreshold(threshold, of: role, signers: signers) }
    }
}

struct TUFRenewRootCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "renew-root",
        abstract: "Sign the root again as a new version with a new expiry.",
        discussion: "Example:\n  miniapp tuf renew-root --registry ./registry --key r1.pem"
    )

    @OptionGroup var options: TUFRepositoryOptions

    func run() async throws {
        let signers = try options.signers()
        try await options.change { repository in try repository.renewRoot(signers: signers) }
    }
}

struct TUFDelegateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delegate",
        abstract: "Delegate an app's targets to its publisher's keys: they, not the targets keys, sign its versions.",
        discussion: """
            The targets are signed again (with the --key files the root lists for them), then the snapshot \
            and the timestamp. publish then signs the app's versions with --tuf-key <publisher key>.
            Example:
              miniapp tuf delegate --registry ./registry --app-id hello --public-key hello.pub.pem \\
                --key targets.pem --key snapshot.pem --key timestamp.pem
            """
    )

    @Option(name: .customLong("app-id"), help: "The app whose versions the keys sign.")
    var appId: String
    @Option(name: .customLong("public-key"), help: "A key of the app's publisher (repeatable).")
    var publicKeys: [String] = []
    @Option(help: "How many of those keys must sign (default 1).")
    var threshold = 1
    @OptionGroup var options: TUFRepositoryOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        guard !publicKeys.isEmpty else { throw ValidationError("--public-key is needed: the keys that sign the app's versions") }
        let keys = try publicKeys.map(readTUFPublicKey)
        let signers = try options.signers()
        let (appId, threshold) = (appId, threshold)
        try await options.change { repository in
            try repository.delegate(appId, paths: [appId + "/*/*"], keys: keys, threshold: threshold, terminating: true, signers: signers)
        }
    }
}

struct TUFTimestampCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timestamp",
        abstract: "Sign the timestamp again, valid for another day (serve --tuf-timestamp-key does this on its own).",
        discussion: "Example:\n  miniapp tuf timestamp --registry ./registry --key timestamp.pem"
    )

    @OptionGroup var options: TUFRepositoryOptions

    func run() async throws {
        let signers = try options.signers()
        try await options.change { repository in try repository.resignTimestamp(with: signers) }
    }
}

struct TUFStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print each top-level role's newest version and expiry.",
        discussion: "Example:\n  miniapp tuf status --registry ./registry --json"
    )

    @Option(help: "The registry directory.")
    var registry: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try printStatus(of: TUFRepository(folder: KeyFiles.absolute(registry) + "/tuf"), output: output)
    }
}
