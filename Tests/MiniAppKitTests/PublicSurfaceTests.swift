import Foundation
import MiniAppTestSupport
import Testing

/// What a host sees when it imports MiniAppKit: the public declarations of the module as built, read by
/// the toolchain's `swift-symbolgraph-extract` from the debug build's `Modules` folder.
@Suite struct PublicSurfaceTests {
    /// The most declarations a host may see when it imports MiniAppKit.
    static let limit = 200

    @Test(.enabled(if: PublicSurface.extractor != nil, "swift-symbolgraph-extract is not in the toolchain"))
    func aHostSeesAtMost200DocumentedDeclarations() async throws {
        let symbols = try await PublicSurface.declarations(of: "MiniAppKit")
        #expect(symbols.count > 50, "the symbol graph lost most of MiniAppKit: \(symbols.count) declarations")
        #expect(symbols.count <= Self.limit, """
            a host importing MiniAppKit sees \(symbols.count) declarations, more than \(Self.limit): make what \
            a host does not call `package` or internal
            """)
        let undocumented = symbols.filter { !$0.documented }.map(\.name).sorted()
        #expect(undocumented.isEmpty, "public declarations without a /// summary: \(undocumented.joined(separator: ", "))")
    }

    /// A host names MiniAppCore's and MiniAppPermissions' types too (records, manifests, errors, the store).
    @Test(.enabled(if: PublicSurface.extractor != nil, "swift-symbolgraph-extract is not in the toolchain"),
          arguments: ["MiniAppCore", "MiniAppPermissions"])
    func everyPublicDeclarationOfTheModulesAHostNamesIsDocumented(module: String) async throws {
        let symbols = try await PublicSurface.declarations(of: module)
        #expect(!symbols.isEmpty)
        let undocumented = symbols.filter { !$0.documented }.map(\.name).sorted()
        #expect(undocumented.isEmpty, "public declarations of \(module) without a /// summary: \(undocumented.joined(separator: ", "))")
    }
}

/// The public declarations of a module of this build, from its symbol graph.
enum PublicSurface {
    struct Declaration {
        /// The declaration's path, such as `BundleCache.verify(appId:)`.
        var name: String
        /// Whether it has a doc comment.
        var documented: Bool
    }

    /// The symbol graph extractor: on PATH, or beside the toolchain's `swift`.
    static let extractor: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/opt/swift/usr/bin", "/usr/bin"]
        return folders.map { $0 + "/swift-symbolgraph-extract" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The declarations `module` makes public, as a client that imports it sees them. Left out: members
    /// a protocol's extension gives every conforming type (`!=`, `SetAlgebra`'s methods, `Error`'s
    /// `localizedDescription`; their identifiers are marked `SYNTHESIZED`) and members the compiler
    /// writes for a conformance the type declares (`Codable`'s `init(from:)`, a raw-value enum's
    /// `init(rawValue:)`; they have no place in the sources). Both are documented where they are declared.
    static func declarations(of module: String) async throws -> [Declaration] {
        let products = try productsDirectory()
        let output = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: output) }
        var arguments = [
            "-module-name", module, "-I", products.appendingPathComponent("Modules").path,
            "-output-dir", output.path, "-minimum-access-level", "public",
        ]
        for map in moduleMaps(products: products) { arguments += ["-Xcc", "-fmodule-map-file=" + map] }
        let (status, errors) = try await run(extractor!, arguments)
        guard status == 0 else { throw SymbolGraphError(message: "swift-symbolgraph-extract exited \(status): \(errors)") }

        var declarations: [Declaration] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: output.path)
            .filter { $0 == "\(module).symbols.json" || $0.hasPrefix("\(module)@") && $0.hasSuffix(".symbols.json") }
        #expect(files.contains("\(module).symbols.json"))
        for file in files {
            let data = try Data(contentsOf: output.appendingPathComponent(file))
            let graph = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            for symbol in graph["symbols"] as? [[String: Any]] ?? [] {
                let identifier = (symbol["identifier"] as? [String: Any])?["precise"] as? String ?? ""
                guard !identifier.contains("::SYNTHESIZED::"), symbol["location"] != nil else { continue }
                let path = (symbol["pathComponents"] as? [String] ?? []).joined(separator: ".")
                declarations.append(Declaration(name: path, documented: symbol["docComment"] != nil))
            }
        }
        return declarations
    }

    /// The folder `swift build` put this test bundle and the `Modules` folder in.
    static func productsDirectory() throws -> URL {
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: selfPath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Modules/MiniAppKit.swiftmodule").path) {
                return directory
            }
            directory.deleteLastPathComponent()
        }
        throw SymbolGraphError(message: "no Modules/MiniAppKit.swiftmodule above \(selfPath)")
    }

    /// The C modules' maps a client of the built modules needs: those the build wrote beside its
    /// products, those of the checked-out dependencies and this package's own.
    static func moduleMaps(products: URL) -> [String] {
        let files = FileManager.default
        var folders: [URL] = []
        if let built = try? files.contentsOfDirectory(atPath: products.path) {
            folders += built.filter { $0.hasSuffix(".build") }.map { products.appendingPathComponent($0) }
        }
        var scratch = products
        while scratch.path != "/", !files.fileExists(atPath: scratch.appendingPathComponent("checkouts").path) {
            scratch.deleteLastPathComponent()
        }
        let checkouts = scratch.appendingPathComponent("checkouts")
        for package in (try? files.contentsOfDirectory(atPath: checkouts.path)) ?? [] {
            let sources = checkouts.appendingPathComponent(package).appendingPathComponent("Sources")
            for target in (try? files.contentsOfDirectory(atPath: sources.path)) ?? [] {
                folders += [sources.appendingPathComponent(target), sources.appendingPathComponent(target).appendingPathComponent("include")]
            }
        }
        let own = repositoryRoot.appendingPathComponent("Sources")
        folders += ((try? files.contentsOfDirectory(atPath: own.path)) ?? []).map { own.appendingPathComponent($0) }
        return folders.map { $0.appendingPathComponent("module.modulemap").path }.filter { files.fileExists(atPath: $0) }
    }

    /// Runs `tool` and returns its exit status and what it wrote to stderr.
    static func run(_ tool: String, _ arguments: [String]) async throws -> (Int32, String) {
        try await offPool {
            let process = try ChildProcess(tool, arguments, stderr: .pipe)
            let said = process.readToEnd()
            return (process.waitUntilExit(), String(decoding: said, as: UTF8.self))
        }
    }

    struct SymbolGraphError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
