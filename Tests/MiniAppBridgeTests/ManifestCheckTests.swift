import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppTestSupport
import Testing

/// `miniapp dev --check`'s static check of a manifest (Manifests/dev-check), and its agreement with the
/// schema's verdicts on Manifests/examples.
@Suite struct ManifestCheckTests {
    static let root = repositoryRoot.appendingPathComponent("Manifests")

    static func problems(_ file: String) throws -> [ManifestProblem] {
        ManifestCheck.problems(inManifest: Array(try Data(contentsOf: root.appendingPathComponent(file))))
    }

    static let bad: [(file: String, kind: ManifestProblem.Kind, says: String)] = [
        ("misspelt-permission.json", .unknownPermission, "did you mean rakuten.miniapp.user.USER_NAME?"),
        ("short-name.json", .unknownPermission, "the full name rakuten.miniapp.user.CONTACT_LIST"),
        ("wrong-prefix.json", .unknownPermission, "did you mean rakuten.miniapp.user.CONTACT_LIST?"),
        ("unknown-permission.json", .unknownPermission, "'com.example.TELEPORT' is not a permission the SDKs know"),
        ("required-and-optional.json", .duplicate, "in both reqPermissions and optPermissions"),
        ("twice-required.json", .duplicate, "reqPermissions[1]: reqPermissions names rakuten.miniapp.user.USER_NAME twice"),
        ("audience-without-scope.json", .accessToken, "the audience 'rae' has no scope"),
        ("audience-twice.json", .duplicate, "names the audience 'rae' twice"),
        ("token-without-permission.json", .accessToken, "neither reqPermissions nor optPermissions declares rakuten.miniapp.user.ACCESS_TOKEN"),
        ("permission-without-audience.json", .accessToken, "accessTokenPermissions lists no audience"),
        ("misspelt-key.json", .misspeltKey, "did you mean reqPermissions?"),
        ("name-not-a-string.json", .schema, "reqPermissions[0].name is not a non-empty string"),
        ("trailing-comma.json", .schema, "not JSON"),
    ]

    @Test(arguments: bad)
    func aBadManifestGetsOneProblemOfItsKind(file: String, kind: ManifestProblem.Kind, says: String) throws {
        let problems = try Self.problems("dev-check/bad/" + file)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.kind == kind, "\(problems)")
        #expect(problems.first?.message.contains(says) == true, "\(problems)")
    }

    @Test func everyBadManifestIsInTheTable() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("dev-check/bad").path)
        #expect(Set(files) == Set(Self.bad.map(\.file)))
    }

    @Test(arguments: ["full.json", "empty.json"])
    func aGoodManifestHasNoProblem(file: String) throws {
        #expect(try Self.problems("dev-check/good/" + file) == [])
    }

    /// The check's shape rules are the schema's: the examples the schema refuses get a schema problem,
    /// those it accepts none.
    @Test func theCheckAgreesWithTheSchemaOnEveryExample() throws {
        for (folder, valid) in [("good", true), ("bad", false)] {
            let directory = Self.root.appendingPathComponent("examples/" + folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".json") {
                let schemaProblems = try Self.problems("examples/\(folder)/\(name)").filter { $0.kind == .schema }
                #expect(schemaProblems.isEmpty == valid, "\(folder)/\(name): \(schemaProblems)")
            }
        }
    }

    /// Every permission the SDKs know gates some method an app's code calls, so that the check of a
    /// required permission no script uses covers each of them.
    @Test func everyKnownPermissionGatesAMethod() {
        for permission in KnownPermission.allCases {
            #expect(!BridgeDispatcher.methodNames(gatedBy: permission).isEmpty, "\(permission)")
        }
        #expect(BridgeDispatcher.methodNames(gatedBy: .contactList) == ["getContacts"])
        #expect(BridgeDispatcher.methodNames(gatedBy: .location) == ["requestPermission", "getCurrentPosition"])
    }

    @Test func aFolderIsCheckedForItsFilesAndForRequiredPermissionsNoScriptCalls() throws {
        let folder = try TemporaryDirectory.make().path
        #expect(ManifestCheck.problems(ofFolder: folder).map(\.kind) == [.missingFile, .missingFile])
        try writeTestFile(folder + "/index.html", Array("<script src=app.js></script>".utf8))
        try writeTestFile(folder + "/manifest.json", Array(#"{"reqPermissions": [{"name": "rakuten.miniapp.user.POINTS"}]}"#.utf8))
        let unused = ManifestCheck.problems(ofFolder: folder)
        #expect(unused.map(\.kind) == [.unusedRequirement] && unused[0].message.contains("calls getPoints"), "\(unused)")
        // A script outside the folder's reach (a dot folder) does not count; one in a subfolder does.
        try FileManager.default.createDirectory(atPath: folder + "/.cache/js", withIntermediateDirectories: true)
        try writeTestFile(folder + "/.cache/js/app.js", Array("MiniAppBridge.getPoints()".utf8))
        #expect(ManifestCheck.problems(ofFolder: folder).map(\.kind) == [.unusedRequirement])
        try FileManager.default.createDirectory(atPath: folder + "/js", withIntermediateDirectories: true)
        try writeTestFile(folder + "/js/app.js", Array("MiniApp.user.getPoints().then(show)".utf8))
        #expect(ManifestCheck.problems(ofFolder: folder) == [])
    }
}
