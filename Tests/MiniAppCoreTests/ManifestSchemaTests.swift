import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

@Suite struct ManifestSchemaTests {
    let manifests = repositoryRoot.appendingPathComponent("Manifests")

    /// Which example files the JSON Schema accepts, by path, checked by Python's jsonschema.
    func schemaVerdicts(_ files: [String]) async throws -> [String: Bool] {
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            verdicts = {}
            for path in sys.argv[2:]:
                try:
                    jsonschema.validate(json.load(open(path)), schema)
                    verdicts[path] = True
                except (ValueError, jsonschema.ValidationError):
                    verdicts[path] = False
            print(json.dumps(verdicts))
            """
        let (status, output) = try await ChildProcess.output("/usr/bin/python3", ["-c", script, manifests.appendingPathComponent("schema/manifest.schema.json").path] + files)
        #expect(status == 0, "python3 with jsonschema is needed (scripts/bootstrap installs python3-jsonschema)")
        return try JSONDecoder().decode([String: Bool].self, from: Data(output.utf8))
    }

    @Test func parserAndSchemaAgreeOnEveryExample() async throws {
        var expected: [String: Bool] = [:]
        for (folder, valid) in [("good", true), ("bad", false)] {
            let directory = manifests.appendingPathComponent("examples/" + folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".json") {
                expected[directory.appendingPathComponent(name).path] = valid
            }
        }
        #expect(expected.values.filter { $0 }.count >= 4)
        #expect(expected.values.filter { !$0 }.count >= 8)
        let schema = try await schemaVerdicts(expected.keys.sorted())
        for (path, valid) in expected {
            let parsed = (try? JSONDecoder().decode(BundleManifest.self, from: Data(contentsOf: URL(fileURLWithPath: path)))) != nil
            #expect(parsed == valid, "parser on \(path)")
            #expect(schema[path] == valid, "schema on \(path)")
        }
    }

    @Test func demoManifestsAreValid() async throws {
        let sources = manifests.appendingPathComponent("demo/sources")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).map { sources.appendingPathComponent("\($0)/manifest.json").path }
        #expect(files.count == 3)
        #expect(try await schemaVerdicts(files).values.allSatisfy { $0 })
        for file in files { _ = try JSONDecoder().decode(BundleManifest.self, from: Data(contentsOf: URL(fileURLWithPath: file))) }
    }

    @Test func placeholdersResolveExactLanguageThenLanguageThenDefault() throws {
        let bundle = try BundleFactory.folder([
            "_locale/default/manifest.json": #"{"a": "A default", "b": "B default", "c": "C default"}"#,
            "_locale/ja/manifest.json": #"{"a": "A ja", "b": "B ja"}"#,
            "_locale/ja-JP/manifest.json": #"{"a": "A ja-JP"}"#,
        ])
        let localizer = ManifestLocalizer(bundleDirectory: bundle, language: "ja-JP")
        #expect(localizer.localize("__MANIFEST_a__ / __MANIFEST_b__ / __MANIFEST_c__ / __MANIFEST_d__") == "A ja-JP / B ja / C default / __MANIFEST_d__")
        #expect(ManifestLocalizer(bundleDirectory: bundle, language: "fr").localize("__MANIFEST_a__") == "A default")
        #expect(localizer.localize("__MANIFEST_bad key__ and __MANIFEST_") == "__MANIFEST_bad key__ and __MANIFEST_")
        let manifest = BundleManifest(reqPermissions: [PermissionDeclaration(name: "x", reason: "__MANIFEST_b__")], customMetaData: ["k": "__MANIFEST_c__!"])
        let localized = localizer.localize(manifest)
        #expect(localized.reqPermissions[0].reason == "B ja")
        #expect(localized.customMetaData["k"] == "C default!")
    }

    @Test func unknownPermissionNamesAreKept() throws {
        let text = #"{"reqPermissions": [{"name": "com.example.X"}, {"name": "rakuten.miniapp.user.USER_NAME"}]}"#
        let manifest = try JSONDecoder().decode(BundleManifest.self, from: Data(text.utf8))
        #expect(manifest.reqPermissions.map(\.known) == [nil, .userName])
    }
}
