import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// The repository side: what ``TUFRepository`` writes is read by python-tuf's `ngclient.Updater`
/// (the reference client) and by ``TUFUpdater``, through key rotations, root rotations and
/// delegations; a change clients would refuse is refused before anything is written.
/// One test at a time: each makes RSA keys and runs python-tuf, which load the suite's busy first minutes.
@Suite(.serialized) struct TUFRepositoryTests {
    /// A repository with one key per top-level role, of each kind, and the signers for it.
    struct Setup {
        let repository: TUFRepository
        var signers: [String: [TUFSigner]]

        init() throws {
            repository = TUFRepository(folder: try TemporaryDirectory.make().path + "/tuf")
            signers = [
                "root": [try TUFSigner.generate(.ecdsa)], "targets": [try TUFSigner.generate(.rsa)],
                "snapshot": [try TUFSigner.generate(.ed25519)], "timestamp": [try TUFSigner.generate(.ed25519)],
            ]
            try repository.create(keys: signers.mapValues { $0.map(\.publicKey) }, signers: signers.values.flatMap { $0 })
        }

        /// A setup made off Swift's cooperative pool: making an RSA key holds a thread for up to a second.
        static func make() async throws -> Setup {
            try await offPool { try Setup() }
        }

        /// Every key of every role.
        var pool: [TUFSigner] { signers.values.flatMap { $0 } }

        /// A file holding `text`.
        func file(_ text: String) throws -> String {
            let path = try TemporaryDirectory.make().path + "/bundle.zip"
            try writeTestFile(path, Data(text.utf8))
            return path
        }

        /// What our client, trusting the first root in a fresh folder, downloads for `path`.
        func ours(_ path: String) async throws -> [UInt8]? {
            let client = try TemporaryDirectory.make().path + "/metadata"
            let executor = BlockingExecutor()
            do {
                let root = try [UInt8](Data(contentsOf: URL(fileURLWithPath: repository.metadataFolder + "/1.root.json")))
                try await TUFUpdater.initialize(folder: client, root: root, executor: executor)
                let remote = TUFFolderRemote(metadataFolder: repository.metadataFolder, targetsFolder: repository.targetsFolder, executor: executor)
                var updater = try await TUFUpdater(folder: client, remote: remote, executor: executor)
                let bytes = if let target = try await updater.target(path) { try await updater.download(target) } else { [UInt8]?.none }
                await executor.shutdown()
                return bytes
            } catch {
                await executor.shutdown()
                throw error
            }
        }

        /// What python-tuf's client, trusting the first root in a fresh folder, downloads for `paths`.
        func reference(_ paths: [String]) async throws -> [String] {
            let folder = try TemporaryDirectory.make().path
            return try await PythonTUF.ngclient(repository: repository.folder, client: folder + "/metadata", downloads: folder + "/downloads", targets: paths)
        }

        var metadataFiles: Set<String> { Set(FileReading.children(of: repository.metadataFolder)) }
    }

    @Test func aRepositoryWrittenHereIsReadByTheReferenceAndByUs() async throws {
        let setup = try await Setup.make()
        let custom = JSONValue.object(["appId": .string("demo"), "versionId": .string("v1"), "versionTag": .string("1.0.0\u{1}")])
        try setup.repository.addTarget("demo/v1/bundle.zip", file: setup.file("zip one"), custom: custom, signers: setup.pool)
        #expect(setup.metadataFiles == ["1.root.json", "1.targets.json", "2.targets.json", "1.snapshot.json", "2.snapshot.json", "timestamp.json"])
        #expect(try await setup.ours("demo/v1/bundle.zip") == Array("zip one".utf8))
        #expect(try await setup.reference(["demo/v1/bundle.zip", "demo/v2/bundle.zip"]) == [
            #"demo/v1/bundle.zip zip one {"appId": "demo", "versionId": "v1", "versionTag": "1.0.0\u0001"}"#, "missing demo/v2/bundle.zip",
        ])
        // The target is kept under its hash, as consistent snapshots name it.
        let digest = SHA256Digest.hash(Array("zip one".utf8)).hexString
        #expect(FileManager.default.fileExists(atPath: setup.repository.targetsFolder + "/demo/v1/\(digest).bundle.zip"))
    }

    @Test func clientsFollowThreeRootRotationsAndATimestampKeyRotation() async throws {
        var setup = try await Setup.make()
        for kind in [TUFSigner.Kind.ed25519, .rsa, .ecdsa] {
            let next = try await offPool { try TUFSigner.generate(kind) }
            let old = setup.signers["root"]!
            setup.signers["root"] = old + [next]
            try setup.repository.addKey(next.publicKey, to: "root", signers: setup.pool)
            try setup.repository.revokeKey(old[0].keyId, from: "root", signers: setup.pool)
            setup.signers["root"] = [next]
        }
        let timestamp = try TUFSigner.generate(.ecdsa)
        try setup.repository.addKey(timestamp.publicKey, to: "timestamp", signers: setup.pool)
        let oldTimestamp = setup.signers["timestamp"]![0]
        setup.signers["timestamp"] = [timestamp]
        try setup.repository.revokeKey(oldTimestamp.keyId, from: "timestamp", signers: setup.pool)
        try setup.repository.addTarget("a.zip", file: setup.file("after rotations"), signers: setup.pool)
        #expect(try setup.repository.newest("root").version == 9)
        #expect(try await setup.ours("a.zip") == Array("after rotations".utf8))
        #expect(try await setup.reference(["a.zip"]).first == "a.zip after rotations null")
        // A timestamp signed again later is one version up and names the same snapshot.
        let before = try setup.repository.newest("timestamp")
        try setup.repository.resignTimestamp(with: [timestamp])
        let after = try setup.repository.newest("timestamp")
        #expect(after.version == before.version + 1 && after.signed["meta"] == before.signed["meta"])
        #expect(try await setup.reference(["a.zip"]).first == "a.zip after rotations null")
    }

    @Test func aThresholdOfRootKeysIsNeededAndAChangeClientsWouldRefuseIsNotWritten() async throws {
        var setup = try await Setup.make()
        let second = try TUFSigner.generate(.ed25519)
        setup.signers["root"]! += [second]
        try setup.repository.addKey(second.publicKey, to: "root", signers: setup.pool)
        try setup.repository.setThreshold(2, of: "root", signers: setup.pool)
        let files = setup.metadataFiles
        // One of two root keys; a new root key signing alone; a timestamp by a key the root does not list.
        let alone = try TUFSigner.generate(.ed25519)
        #expect(throws: TUFRepositoryError.self) { try setup.repository.renewRoot(signers: [second]) }
        #expect(throws: TUFRepositoryError.self) { try setup.repository.addKey(alone.publicKey, to: "root", signers: [alone]) }
        #expect(throws: TUFRepositoryError("none of the keys given may sign timestamp: give a threshold of its keys")) {
            try setup.repository.resignTimestamp(with: [alone])
        }
        let lone = try await Setup.make()
        #expect(throws: TUFRepositoryError("the root role's last key cannot be revoked: add its successor first")) {
            try lone.repository.revokeKey(lone.signers["root"]![0].keyId, from: "root", signers: lone.pool)
        }
        #expect(setup.metadataFiles == files)
        try setup.repository.renewRoot(signers: setup.pool)
        #expect(try await setup.reference([]) == [])
    }

    @Test func anAppsTargetsAreDelegatedToItsPublishersKey() async throws {
        let setup = try await Setup.make()
        let publisher = try TUFSigner.generate(.ecdsa)
        try setup.repository.delegate("demo", paths: ["demo/*/*"], keys: [publisher.publicKey], signers: setup.pool)
        try setup.repository.addTarget("demo/v1/bundle.zip", file: setup.file("delegated"), role: "demo", signers: setup.pool + [publisher])
        // A key the delegation does not list signs nothing for it, and nothing is written.
        let files = setup.metadataFiles
        #expect(throws: TUFRepositoryError("none of the keys given may sign demo: give a threshold of its keys")) {
            try setup.repository.addTarget("demo/v2/bundle.zip", file: setup.file("x"), role: "demo", signers: setup.pool)
        }
        #expect(setup.metadataFiles == files)
        // Signed by the app's key but with no snapshot key at hand: no metadata, and no target file left.
        let targetFiles = Set(FileManager.default.enumerator(atPath: setup.repository.targetsFolder)?.allObjects as? [String] ?? [])
        #expect(throws: TUFRepositoryError("none of the keys given may sign snapshot: give a threshold of its keys")) {
            try setup.repository.addTarget("demo/v3/bundle.zip", file: setup.file("y"), role: "demo", signers: [publisher] + setup.signers["timestamp"]!)
        }
        #expect(setup.metadataFiles == files)
        #expect(Set(FileManager.default.enumerator(atPath: setup.repository.targetsFolder)?.allObjects as? [String] ?? []) == targetFiles)
        #expect(try await setup.ours("demo/v1/bundle.zip") == Array("delegated".utf8))
        #expect(try await setup.reference(["demo/v1/bundle.zip"]).first == "demo/v1/bundle.zip delegated null")
    }

    @Test func keysOfEachKindRoundTripThroughPEM() async throws {
        // Off the cooperative pool: making an RSA key holds a thread for up to a second.
        try await offPool {
            for kind in TUFSigner.Kind.allCases {
                let signer = try TUFSigner.generate(kind)
                let read = try TUFSigner(pem: signer.pem)
                #expect(read.keyId == signer.keyId && read.kind == kind)
                let key = try TUFKey(read.publicKey)
                #expect(key.verifies(try read.sign(Array("message".utf8)), of: Array("message".utf8)))
                #expect(!key.verifies(try read.sign(Array("message".utf8)), of: Array("messagE".utf8)))
            }
            #expect(throws: TUFSigner.Failure.self) { try TUFSigner(pem: "not a key") }
        }
    }
}
