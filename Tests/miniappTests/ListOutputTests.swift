import Foundation
import MiniAppCore
import MiniAppTestSupport
import Testing

@Suite struct ListOutputTests {
    /// The SHA-256 of what `list --json` and `list` printed (stdout, then stderr) for
    /// ``HostileCatalog/json(count:)`` of 10,000 apps with app-00003 version v3 cached, as the decoding
    /// through Foundation's JSONDecoder and encoding through JSONEncoder and one table string (commit
    /// 0d6853d) printed it: 9,056 records listed, 944 dropped with one warning.
    static let expected: [String: String] = [
        "list --json stdout": "8c368fa5f976ba99f7961eefc59d3e46ed33a5fc0f8fa2239be97eeddf7daf12",
        "list --json stderr": "b01c20b8018c0ab10f746f648139f4e55db73d8129351f31ad6d9ad642fedde5",
        "list stdout": "9ff70d4fcd3012638a00e6740e76e381832efdb7e4a39b4be011a86192bbfa11",
        "list stderr": "b01c20b8018c0ab10f746f648139f4e55db73d8129351f31ad6d9ad642fedde5",
    ]

    @Test func aTenThousandAppListWithHostileRecordsPrintsWhatItAlwaysPrinted() async throws {
        let catalog = HostileCatalog.json(count: 10_000)
        let cache = try TemporaryDirectory.make().path
        try await withTestServer({ request in
            request.path == "/host/proj-1/miniapps/" ? StubResponse(status: 200, headers: [("Content-Type", "application/json")], body: catalog) : .error(404)
        }) { server in
            // One listed version in the cache, so that `cached` is true once.
            let key = try SigningKey.generate()
            let signed = try BundleFactory.sign(try BundleFactory.zip(BundleFactory.helloFiles), versionId: "v3", key: key)
            let work = try TemporaryDirectory.make().path
            try writeTestFile(work + "/app.zip", Data(signed.zip))
            try writeTestFile(work + "/key.pem", Data(key.publicKey.pem.utf8))
            let installed = try await runAgainst(server, ["install", work + "/app.zip", "--app-id", "app-00003", "--version-id", "v3", "--signature", signed.signature, "--public-key", work + "/key.pem", "--cache-dir", cache])
            #expect(installed.status == 0, "stderr: \(installed.stderr)")
            var digests: [String: String] = [:]
            for arguments in [["list", "--json"], ["list"]] {
                let result = try await runAgainst(server, arguments + ["--cache-dir", cache])
                #expect(result.status == 0, "stderr: \(result.stderr.prefix(500))")
                let name = arguments.joined(separator: " ")
                digests[name + " stdout"] = SHA256Digest.hash(Array(result.stdout.utf8)).hexString
                digests[name + " stderr"] = SHA256Digest.hash(Array(result.stderr.utf8)).hexString
            }
            #expect(digests == Self.expected)
        }
    }
}
