import Foundation
import MiniAppTestSupport
import Testing

/// The library code that the README and the DocC catalogs show is code the tests compile and run: each
/// Swift block is a verbatim excerpt of an example (Examples/), and the quick start runs against the
/// demo registry, launch gate included.
@Suite struct DocumentationTests {
    static let documents: [URL] = {
        var found = [repositoryRoot.appendingPathComponent("README.md")]
        let sources = repositoryRoot.appendingPathComponent("Sources")
        let walker = FileManager.default.enumerator(atPath: sources.path)
        while let path = walker?.nextObject() as? String {
            if path.contains(".docc/"), path.hasSuffix(".md") { found.append(sources.appendingPathComponent(path)) }
        }
        return found
    }()

    /// The Swift code blocks of a Markdown document.
    static func swiftBlocks(in text: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test func everySwiftBlockIsAnExcerptOfACompiledExample() throws {
        var examples = ""
        let root = repositoryRoot.appendingPathComponent("Examples")
        let walker = FileManager.default.enumerator(atPath: root.path)
        while let path = walker?.nextObject() as? String {
            if path.hasSuffix(".swift") { examples += try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) + "\n" }
        }
        // Indentation aside: a document shows a function's body at the left margin.
        func unindented(_ text: String) -> String {
            text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.drop { $0 == " " } }.joined(separator: "\n")
        }
        examples = unindented(examples)
        var count = 0
        for document in Self.documents {
            for block in Self.swiftBlocks(in: try String(contentsOf: document, encoding: .utf8)) {
                count += 1
                #expect(examples.contains(unindented(block)), "a Swift block of \(document.lastPathComponent) is not in Examples/:\n\(block)")
            }
        }
        #expect(count >= 5, "the README and the DocC catalogs show library code")
    }

    @Test func theQuickStartRunsAgainstTheDemoRegistry() async throws {
        let cache = try TemporaryDirectory.make().path
        let binary = CommandRunner.executable.deletingLastPathComponent().appendingPathComponent("miniapp-quickstart")
        let (status, text) = try await ChildProcess.output(binary.path, [repositoryRoot.appendingPathComponent("Manifests/demo/registry").path, cache], mergeErrors: true)
        #expect(status == 0, "\(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains("hello hello-1-0-0"))
        #expect(lines.contains(#"hello needs ["rakuten.miniapp.user.USER_NAME"]"#))
        let folder = try #require(lines.first { $0.hasPrefix(cache) })
        #expect(FileManager.default.fileExists(atPath: folder + "/index.html"))
        #expect(lines.contains("true"))
        #expect(lines.contains("asked about rakuten.miniapp.device.LOCATION"))
        #expect(FileManager.default.fileExists(atPath: try #require(lines.last) + "/index.html"), "the permission flow loaded weather")
    }

    /// A program that lists, installs and loads (the quick start imports MiniAppKit alone) links no
    /// server and no argument parser; the CLI, which serves and parses, links both (so the check can fail).
    @Test func aHostThatInstallsAndLoadsLinksNeitherHummingbirdNorArgumentParser() async throws {
        let directory = CommandRunner.executable.deletingLastPathComponent()
        // Reading and searching debug binaries of a hundred megabytes takes seconds: off the pool.
        func links(_ program: String, _ module: String) async throws -> Bool {
            try await offPool {
                let binary = try Data(contentsOf: directory.appendingPathComponent(program))
                // A Swift module's mangled name: its length, then the name.
                return binary.range(of: Data("\(module.utf8.count)\(module)".utf8)) != nil
            }
        }
        #expect(try await !links("miniapp-quickstart", "Hummingbird"))
        #expect(try await !links("miniapp-quickstart", "ArgumentParser"))
        #expect(try await links("miniapp", "Hummingbird"))
        #expect(try await links("miniapp", "ArgumentParser"))
    }
}
