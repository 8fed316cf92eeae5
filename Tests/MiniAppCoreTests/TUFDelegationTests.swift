import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// Delegated targets roles as python-tuf writes and matches them: which paths a role covers, the
/// delegator's keys, and a role reached through a second delegator checked again (the case the
/// conformance suite's test #405 adds, which python-tuf and go-tuf fail).
@Suite struct TUFDelegationTests {
    @Test func pathPatternsMatchAsTheReferenceMatchesThem() async throws {
        let targets = ["apps/demo/1.0.0.zip", "apps/demo.zip", "apps/x", "apps/", "a/b/c", "a/b", "file.txt", "f[1].txt", "dir/file-9.tgz", "é/ü.zip"]
        let patterns = ["apps/*", "apps/*/*", "*", "*.zip", "apps/*.zip", "a/?/c", "a/*", "f[0-9].txt", "f[!0-9].txt", "f[1].txt", "dir/file-[0-9].tgz", "*/*", "é/*", "apps/demo/1.0.0.zip", "[", "a[", "apps/**"]
        var pairs: [(String, String)] = []
        for target in targets { for pattern in patterns { pairs.append((target, pattern)) } }
        let folder = try TemporaryDirectory.make().path
        try writeTestFile(folder + "/pairs.json", JSONEncoder().encode(pairs.map { [$0.0, $0.1] }))
        try writeTestFile(folder + "/targets.json", JSONEncoder().encode(targets))
        let output = try await PythonTUF.run("""
            import json, sys
            from tuf.api.metadata import DelegatedRole
            for target, pattern in json.load(open(sys.argv[1], encoding="utf-8")):
                role = DelegatedRole("r", [], 1, False, paths=[pattern])
                print("1" if role.is_delegated_path(target) else "0")
            for target in json.load(open(sys.argv[2], encoding="utf-8")):
                for prefix in ["0", "4", "a", "f", "8f", "e3"]:
                    role = DelegatedRole("r", [], 1, False, path_hash_prefixes=[prefix])
                    print("1" if role.is_delegated_path(target) else "0")
            """, [folder + "/pairs.json", folder + "/targets.json"])
        let reference = output.split(separator: "\n").map { $0 == "1" }
        let prefixes = ["0", "4", "a", "f", "8f", "e3"]
        #expect(reference.count == pairs.count + targets.count * prefixes.count)
        var differ: [String] = []
        for ((target, pattern), expected) in zip(pairs, reference) where TUFDelegatedRole.matches(target, pattern: pattern) != expected {
            differ.append("\(target) ~ \(pattern): reference \(expected)")
        }
        let hashed = targets.flatMap { target in prefixes.map { (target, $0) } }
        for ((target, prefix), expected) in zip(hashed, reference.dropFirst(pairs.count)) {
            let role = TUFDelegatedRole(name: "r", keys: TUFRoleKeys(keyIds: [], threshold: 1), terminating: false, paths: nil, pathHashPrefixes: [prefix])
            if role.covers(target) != expected { differ.append("\(target) hash ~ \(prefix): reference \(expected)") }
        }
        #expect(reference.dropFirst(pairs.count).contains(true), "some target's hash starts with one of the prefixes")
        #expect(differ.isEmpty, "\(differ)")
    }

    @Test func aDelegatedRoleIsTrustedThroughItsDelegatorOnly() async throws {
        let folder = try TemporaryDirectory.make().path
        _ = try await PythonTUF.run("""
            import hashlib, sys
            from datetime import datetime, timedelta, timezone
            from securesystemslib.signer import CryptoSigner
            from tuf.api.metadata import (DelegatedRole, Delegations, Metadata, MetaFile, Root, Snapshot, Targets, Timestamp)
            from tuf.api.serialization.json import JSONSerializer
            out = sys.argv[1]
            future = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
            top = {name: CryptoSigner.generate_ed25519() for name in ["root", "targets", "snapshot", "timestamp"]}
            a_key, b_key, shared_key, stranger = (CryptoSigner.generate_ed25519() for _ in range(4))
            def sign(signed, *keys):
                metadata = Metadata(signed)
                for key in keys:
                    metadata.sign(key, append=True)
                return metadata.to_bytes(JSONSerializer(compact=False))
            def dump(name, data):
                open(f"{out}/{name}", "wb").write(data)
            root = Root(expires=future)
            for role, signer in top.items():
                root.add_key(signer.public_key, role)
            dump("root.json", sign(root, top["root"]))
            # targets delegates to a (apps/*) and b (apps/*); each delegates "shared" with a key of its own.
            targets = Targets(expires=future)
            targets.delegations = Delegations(keys={}, roles={})
            for name, key in (("a", a_key), ("b", b_key)):
                targets.delegations.keys[key.public_key.keyid] = key.public_key
                targets.delegations.roles[name] = DelegatedRole(name, [key.public_key.keyid], 1, False, paths=["apps/*"])
            dump("targets.json", sign(targets, top["targets"]))
            for name, key, shared_signer in (("a", a_key, shared_key), ("b", b_key, stranger)):
                delegating = Targets(expires=future)
                delegating.delegations = Delegations(keys={shared_signer.public_key.keyid: shared_signer.public_key},
                                                     roles={"shared": DelegatedRole("shared", [shared_signer.public_key.keyid], 1, False, paths=["apps/*"])})
                dump(f"{name}.json", sign(delegating, key))
            dump("shared.json", sign(Targets(expires=future), shared_key))
            dump("a.wrong-key.json", sign(Targets(expires=future), stranger))
            snapshot = Snapshot(expires=future)
            for name in ("a", "b", "shared"):
                snapshot.meta[f"{name}.json"] = MetaFile(version=1)
            snapshot_bytes = sign(snapshot, top["snapshot"])
            dump("snapshot.json", snapshot_bytes)
            timestamp = Timestamp(expires=future)
            timestamp.snapshot_meta = MetaFile(version=1, length=len(snapshot_bytes), hashes={"sha256": hashlib.sha256(snapshot_bytes).hexdigest()})
            dump("timestamp.json", sign(timestamp, top["timestamp"]))
            """, [folder])
        func file(_ name: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))) }
        var trusted = try TUFTrustedSet(root: file("root.json"))
        try trusted.updateTimestamp(file("timestamp.json"))
        try trusted.updateSnapshot(file("snapshot.json"))
        try trusted.updateTargets(file("targets.json"))
        #expect(try trusted.delegations(of: "targets")?.roles.map(\.name) == ["a", "b"])
        #expect(try trusted.delegations(of: "targets")?.roles.first?.covers("apps/demo.zip") == true)

        // A role signed by a key its delegator does not name is refused.
        var refused = trusted
        #expect(throws: TUFError.self) { try refused.updateDelegatedTargets(file("a.wrong-key.json"), role: "a", delegator: "targets") }

        try trusted.updateDelegatedTargets(file("a.json"), role: "a", delegator: "targets")
        try trusted.updateDelegatedTargets(file("b.json"), role: "b", delegator: "targets")
        try trusted.updateDelegatedTargets(file("shared.json"), role: "shared", delegator: "a")
        #expect(trusted.delegatedTargets("shared") != nil)
        try trusted.recheck(role: "shared", delegator: "a")
        // Reached through b, whose key for "shared" did not sign it, the cached role is not trusted.
        do {
            try trusted.recheck(role: "shared", delegator: "b")
            Issue.record("a cached delegated role was trusted through a delegator whose keys did not sign it")
        } catch {
            #expect(error.role == "shared" && error.check.contains("b's keys"), "\(error)")
        }
    }
}
