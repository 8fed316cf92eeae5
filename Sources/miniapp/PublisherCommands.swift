import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit
import MiniAppRegistry

/// Output options of the publisher commands, which need no platform.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON document on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Say less on stderr.")
    var quiet = false
}

/// The most a PEM key file may hold: a P-256 key takes a few hundred bytes, with comments a few more.
let keyFileLimit = 64 << 10

/// Reads a PEM private key file.
func readSigningKey(_ path: String) throws -> SigningKey {
    let pem: [UInt8]
    do {
        pem = try FileReading.read(path, limit: keyFileLimit).bytes()
    } catch {
        throw SignatureError.invalidPrivateKey(path: path, reason: error.description)
    }
    return try SigningKey(pem: String(decoding: pem, as: UTF8.self), path: path)
}

struct KeygenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a new P-256 signing key: <prefix>.pem (mode 0600) and <prefix>.pub.pem.",
        discussion: """
            Prints the key id that publish records and serve answers keys/{id} with.
            Example:
              miniapp keygen --out keys/publisher
            """
    )

    @Option(help: "Path prefix of the two key files.")
    var out: String

    @OptionGroup var output: OutputOptions

    struct Result: Encodable {
        var keyId: String
        var ecKey: String
        var publicKeyPath: String
        var privateKeyPath: String
    }

    func run() async throws {
        let key = try SigningKey.generate()
        let privatePath = out + ".pem"
        let publicPath = out + ".pub.pem"
        for path in [privatePath, publicPath] where FileManager.default.fileExists(atPath: path) {
            throw ValidationError("\(path) already exists: pick another --out; keygen never overwrites a key")
        }
        try KeyFiles.write(key.pem, to: privatePath, mode: 0o600)
        do {
            try KeyFiles.write(key.publicKey.pem, to: publicPath, mode: 0o644)
        } catch {
            unlink(privatePath)
            throw error
        }
        let result = Result(keyId: key.publicKey.keyId, ecKey: key.publicKey.ecKey, publicKeyPath: KeyFiles.absolute(publicPath), privateKeyPath: KeyFiles.absolute(privatePath))
        if output.json {
            try Console.json(result)
        } else {
            if !output.quiet { Console.standardError("wrote \(result.privateKeyPath) (private, 0600) and \(result.publicKeyPath)") }
            Console.output(result.keyId)
        }
    }
}

/// Writing key files with exact modes.
enum KeyFiles {
    /// Writes `text` to a new file with `mode`, refusing to replace one.
    static func write(_ text: String, to path: String, mode: mode_t) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw KeyFileError.unwritable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        fchmod(descriptor, mode)
        let bytes = Array(text.utf8)
        guard Glibc.write(descriptor, bytes, bytes.count) == bytes.count, fsync(descriptor) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(path)
            throw KeyFileError.unwritable(path: path, reason: reason)
        }
    }

    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

/// A subscription key file that cannot be read or holds no key.
struct SubscriptionKeyFileError: CategorizedError {
    var path: String
    var reason: String

    var category: ErrorCategory { .usage }
    var description: String { "cannot use --subscription-key-file \(path): \(reason)" }
}

/// A key file that cannot be written.
enum KeyFileError: CategorizedError {
    case unwritable(path: String, reason: String)

    var category: ErrorCategory { .localIO }

    var description: String {
        switch self {
        case .unwritable(let path, let reason): return "cannot write \(path): \(reason); check the folder exists and is writable"
        }
    }
}

struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print the platform signature of a bundle: ECDSA P-256 over the version id and the zip's SHA-256.",
        discussion: """
            Example:
              miniapp sign app.zip --version-id 4d5e6f --key keys/publisher.pem
            """
    )

    @Argument(help: "The bundle zip.")
    var bundle: String

    @Option(name: .customLong("version-id"), help: "The version id the signature is for.")
    var versionId: String

    @Option(help: "The PEM private key.")
    var key: String

    @OptionGroup var output: OutputOptions

    func run() async throws {
        try Identifier.validate(versionId, as: .version)
        let signingKey = try readSigningKey(key)
        let signature = try BundleSignature.sign(bundleAt: bundle, versionId: versionId, with: signingKey)
        if output.json {
            try Console.json(["signature": signature] as [String: String])
        } else {
            Console.output(signature)
        }
    }
}

struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Check, zip, sign and add a version to a local registry directory.",
        discussion: """
            A folder is zipped deterministically; a zip is taken as it is. The bundle must pass the same
            checks as an install and have a valid manifest.json.
            Examples:
              miniapp publish ./hello --registry ./registry --app-id hello --version-tag 1.0.0 --key keys/publisher.pem
              miniapp publish hello.zip --registry ./registry --app-id hello --version-tag 1.1.0-beta --key k.pem --preview
            """
    )

    @Argument(help: "The bundle folder or zip.")
    var source: String

    @Option(help: "The registry directory (created when missing).")
    var registry: String

    @Option(name: .customLong("app-id"), help: "The mini-app's id.")
    var appId: String

    @Option(name: .customLong("version-tag"), help: "The human version, such as 1.2.0.")
    var versionTag: String

    @Option(help: "The PEM private key to sign with.")
    var key: String

    @Option(name: .customLong("version-id"), help: "The version id (default: a new random one).")
    var versionId: String?

    @Option(name: .customLong("display-name"), help: "The name the app is listed under.")
    var displayName: String?

    @Flag(help: "Only preview mode sees the version; prints a preview code.")
    var preview = false

    @Option(name: .customLong("tuf-key"), help: "When the registry keeps a TUF repository: a PEM key that signs it (repeatable; the targets or the app's delegated key, the snapshot key, the timestamp key).")
    var tufKeys: [String] = []

    @OptionGroup var output: OutputOptions

    func run() async throws {
        try Identifier.validate(appId, as: .app)
        if let versionId { try Identifier.validate(versionId, as: .version) }
        let signingKey = try readSigningKey(key)
        if tufKeys.isEmpty, TUFRepository(folder: KeyFiles.absolute(registry) + "/tuf").exists {
            throw ValidationError("\(registry) keeps a TUF repository: give --tuf-key for its targets (or the app's delegated role), snapshot and timestamp")
        }
        let tufSigners = try tufKeys.map(readTUFSigner)
        let limits = try ConfigurationLoader().load(reading: .limits).extraction
        // `publish` installs nothing, so it needs no runtime.
        var request = PublishRequest(
            source: source, appId: appId, versionTag: versionTag, versionId: versionId, displayName: displayName, preview: preview, key: signingKey
        )
        request.tufSigners = tufSigners
        let result = try await withOwnExecutor { [request] executor in
            try await RegistryPublisher(registry: Registry(root: KeyFiles.absolute(registry)), executor: executor, limits: limits).publish(request)
        }
        if output.json {
            try Console.json(result)
            return
        }
        if !output.quiet { Console.standardError("published \(result.id) \(result.versionTag) as version \(result.versionId), signed with key \(result.keyId)") }
        Console.output(result.versionId)
        if let code = result.previewCode { Console.output("preview code: \(code)") }
    }
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a registry directory over the platform API.",
        discussion: """
            The first line on stdout is 'listening on http://HOST:PORT/'; a request log goes to stderr.
            SIGINT or SIGTERM stops it gracefully.
            Example:
              miniapp serve ./registry --port 8080 --subscription-key s3cret
            """
    )

    @Argument(help: "The registry directory.")
    var registry: String

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one.")
    var port = 0

    @Option(name: .customLong("project-id"), help: "Answer only for this project id (default: any).")
    var projectId: String?

    @Option(name: .customLong("subscription-key"), help: "Require 'apiKey: ras-<key>' on every JSON endpoint.")
    var subscriptionKey: String?

    @Option(name: .customLong("subscription-key-file"), help: "Read the subscription key from this file (its first line), so that it is not on the command line, where other users of the machine can read it.")
    var subscriptionKeyFile: String?

    @Option(name: .customLong("public-url"), help: "The base URL clients reach the server at (behind a proxy or CDN), for the zip URLs it hands out (default: the request's Host when valid, else the listening address).")
    var publicURL: String?

    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection may go without a complete request header: the time to send one, and between keep-alive requests.")
    var idleTimeout: Double = 10

    @Option(name: .customLong("max-connections"), help: "The most connections open at once; more wait to be accepted (default: 1000, or fewer to stay 64 below the process's open-file limit).")
    var maxConnections: Int?

    /// `--max-connections`, or 1000 kept 64 below the open-file limit: the server never runs out of
    /// descriptors for the files it serves.
    var connectionLimit: Int {
        if let maxConnections { return maxConnections }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < 1_000_000_000 else { return 1000 }
        return max(min(1000, Int(limit.rlim_cur) - 64), 1)
    }

    @Option(name: .customLong("shutdown-grace"), help: "Seconds a graceful stop (SIGINT, SIGTERM) lets requests in flight finish before closing what is left.")
    var shutdownGrace: Double = 5

    @Option(name: .customLong("send-timeout"), help: "Seconds an answer may go without sending a byte (a client that stops reading) before its connection is closed.")
    var sendTimeout: Double = 30

    @Flag(name: .shortAndLong, help: "No request log.")
    var quiet = false

    @Option(name: .customLong("tuf-timestamp-key"), help: "When the registry keeps a TUF repository: its online timestamp key (PEM), to sign the timestamp again before it expires.")
    var tufTimestampKey: String?

    /// `--public-url` as a URL: http or https, with a host, and no query, fragment or user info.
    var parsedPublicURL: URL? {
        guard let publicURL, let components = URLComponents(string: publicURL), ["http", "https"].contains(components.scheme?.lowercased() ?? ""),
              let host = components.host, !host.isEmpty, components.query == nil, components.fragment == nil,
              components.user == nil, components.password == nil else { return nil }
        return components.url
    }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
        guard idleTimeout > 0, idleTimeout <= 3600 else { throw ValidationError("--idle-timeout must be more than 0 and at most 3600 seconds") }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be 1 or more") }
        guard shutdownGrace >= 0, shutdownGrace <= 3600 else { throw ValidationError("--shutdown-grace must be from 0 to 3600 seconds") }
        guard sendTimeout > 0, sendTimeout <= 3600 else { throw ValidationError("--send-timeout must be more than 0 and at most 3600 seconds") }
        if publicURL != nil, parsedPublicURL == nil {
            throw ValidationError("--public-url must be an http:// or https:// URL with a host and no query, such as https://apps.example.com/")
        }
        if let projectId, !Identifier.isValid(projectId) { throw ValidationError("invalid --project-id '\(projectId)'") }
        if subscriptionKey != nil, subscriptionKeyFile != nil { throw ValidationError("give --subscription-key or --subscription-key-file, not both") }
    }

    /// `--subscription-key`, or the first line of `--subscription-key-file`.
    func key() throws -> String? {
        guard let subscriptionKeyFile else { return subscriptionKey }
        let line: Substring
        do {
            let bytes = try FileReading.read(subscriptionKeyFile, limit: keyFileLimit).bytes()
            line = String(decoding: bytes, as: UTF8.self).split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        } catch {
            throw SubscriptionKeyFileError(path: subscriptionKeyFile, reason: error.description)
        }
        let key = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
        guard !key.isEmpty else { throw SubscriptionKeyFileError(path: subscriptionKeyFile, reason: "its first line is empty") }
        return key
    }

    func run() async throws {
        let subscriptionKey = try key()
        var log: (@Sendable (String) -> Void)?
        if !quiet {
            log = { line in Console.standardError(line) }
        }
        let timestampSigners = try tufTimestampKey.map { [try readTUFSigner($0)] } ?? []
        // `serve` runs no mini-app, so it needs no runtime.
        try await withOwnExecutor { executor in
            var server = RegistryServer(
                registry: Registry(root: KeyFiles.absolute(registry)), executor: executor, host: host, port: port,
                projectId: projectId, subscriptionKey: subscriptionKey, publicURL: parsedPublicURL,
                limits: ServerLimits(idleTimeout: .milliseconds(Int64(idleTimeout * 1000)), maxConnections: connectionLimit, shutdownGrace: .milliseconds(Int64(shutdownGrace * 1000)), sendTimeout: .milliseconds(Int64(sendTimeout * 1000))),
                requestLog: log
            )
            server.tufTimestampSigners = timestampSigners
            try await server.run { (url: URL) async in
                Console.output("listening on \(url.absoluteString)")
            }
        }
    }
}

/// Runs `body` with an executor of the command's own, for a command that needs no runtime, and shuts
/// it down however `body` ends.
func withOwnExecutor<Result: Sendable>(_ body: (BlockingExecutor) async throws -> Result) async throws -> Result {
    let executor = BlockingExecutor()
    do {
        let result = try await body(executor)
        await executor.shutdown()
        return result
    } catch {
        await executor.shutdown()
        throw error
    }
}
