import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// The client workflow's checks on a repository written with python-tuf's Metadata API: a chain of root
/// rotations followed, and each attack refused with its role and check.
@Suite struct TUFTrustedSetTests {
    /// Writes the repository and its attack variants into a fresh folder and returns a reader of them.
    static func repository() async throws -> (String) throws -> [UInt8] {
        let folder = try TemporaryDirectory.make().path
        _ = try await PythonTUF.run("""
            import copy, hashlib, sys
            from datetime import datetime, timedelta, timezone
            from securesystemslib.signer import CryptoSigner
            from tuf.api.metadata import Metadata, MetaFile, Root, Snapshot, Targets, Timestamp
            from tuf.api.serialization.json import JSONSerializer
            out = sys.argv[1]
            now = datetime.now(timezone.utc).replace(microsecond=0)
            future, past = now + timedelta(days=30), now - timedelta(days=1)
            signers = {"root": CryptoSigner.generate_ed25519(), "targets": CryptoSigner.generate_rsa(),
                       "snapshot": CryptoSigner.generate_ecdsa(), "timestamp": CryptoSigner.generate_ed25519()}
            def sign(signed, *keys):
                metadata = Metadata(signed)
                for key in keys:
                    metadata.sign(key, append=True)
                return metadata.to_bytes(JSONSerializer(compact=False))
            def dump(name, data):
                open(f"{out}/{name}", "wb").write(data)
            root = Root(expires=future)
            for role, signer in signers.items():
                root.add_key(signer.public_key, role)
            dump("1.root.json", sign(root, signers["root"]))
            dump("targets.json", sign(Targets(expires=future), signers["targets"]))
            snapshot = Snapshot(expires=future)
            snapshot_bytes = sign(snapshot, signers["snapshot"])
            dump("snapshot.json", snapshot_bytes)
            timestamp = Timestamp(expires=future)
            timestamp.snapshot_meta = MetaFile(version=1, length=len(snapshot_bytes), hashes={"sha256": hashlib.sha256(snapshot_bytes).hexdigest()})
            dump("timestamp.json", sign(timestamp, signers["timestamp"]))
            # Three rotations of the root key, each root signed by the keys before and after.
            previous, key = signers["root"], signers["root"]
            chained = root
            for version in (2, 3, 4):
                chained = copy.deepcopy(chained)
                chained.version = version
                key = CryptoSigner.generate_ecdsa()
                chained.revoke_key(previous.public_key.keyid, "root")
                chained.add_key(key.public_key, "root")
                dump(f"{version}.root.json", sign(chained, previous, key))
                if version == 2:
                    dump("2.root.only-new.json", sign(chained, key))
                previous = key
            skipping = copy.deepcopy(root)
            skipping.version = 3
            dump("3.root.skipping.json", sign(skipping, signers["root"]))
            later = copy.deepcopy(timestamp)
            later.version = 2
            dump("timestamp.v2.json", sign(later, signers["timestamp"]))
            dump("timestamp.wrong-key.json", sign(later, signers["snapshot"]))
            expired = copy.deepcopy(timestamp)
            expired.version = 3
            expired.expires = past
            dump("timestamp.expired.json", sign(expired, signers["timestamp"]))
            other = copy.deepcopy(snapshot)
            other.meta["targets.json"] = MetaFile(version=2)
            dump("snapshot.other.json", sign(other, signers["snapshot"]))
            """, [folder])
        return { name in try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))) }
    }

    static func expect(_ role: String, _ words: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("accepted: expected \(role) to fail (\(words))", sourceLocation: sourceLocation)
        } catch let error as TUFError {
            #expect(error.role == role && error.check.contains(words), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func aRepositoryOfTheReferenceIsTrustedThroughThreeRootRotations() async throws {
        let file = try await Self.repository()
        var trusted = try TUFTrustedSet(root: file("1.root.json"))
        for version in 2...4 { try trusted.updateRoot(file("\(version).root.json")) }
        #expect(trusted.root.version == 4)
        #expect(try trusted.updateTimestamp(file("timestamp.json")))
        try trusted.updateSnapshot(file("snapshot.json"))
        try trusted.updateTargets(file("targets.json"))
        #expect(trusted.targets?.version == 1)
    }

    @Test func eachAttackIsRefusedWithItsRoleAndCheck() async throws {
        let file = try await Self.repository()
        // A new root signed by its own key alone, and a root that skips a version.
        var chain = try TUFTrustedSet(root: file("1.root.json"))
        Self.expect("root", "from the trusted root's keys") { try chain.updateRoot(file("2.root.only-new.json")) }
        Self.expect("root", "does not follow") { try chain.updateRoot(file("3.root.skipping.json")) }
        Self.expect("root", "from the trusted root's keys") { try chain.updateRoot(file("3.root.json")) }
        // A timestamp signed by another role's key; a rollback of the timestamp; a freeze.
        var set = try TUFTrustedSet(root: file("1.root.json"))
        Self.expect("timestamp", "0 of the 1 signatures") { try set.updateTimestamp(file("timestamp.wrong-key.json")) }
        try set.updateTimestamp(file("timestamp.v2.json"))
        Self.expect("timestamp", "rollback") { try set.updateTimestamp(file("timestamp.json")) }
        var frozen = try TUFTrustedSet(root: file("1.root.json"))
        Self.expect("timestamp", "expired") { try frozen.updateTimestamp(file("timestamp.expired.json")) }
        // A snapshot that is not the one the timestamp names (mix and match).
        var mixed = try TUFTrustedSet(root: file("1.root.json"))
        try mixed.updateTimestamp(file("timestamp.json"))
        Self.expect("snapshot", "listed") { try mixed.updateSnapshot(file("snapshot.other.json")) }
        // A root past its expiry stops the refresh at the timestamp.
        var late = try TUFTrustedSet(root: file("1.root.json"), now: Date().addingTimeInterval(60 * 86_400))
        Self.expect("root", "expired") { try late.updateTimestamp(file("timestamp.json")) }
    }
}
