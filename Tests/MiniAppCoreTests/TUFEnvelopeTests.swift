import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// Metadata written and signed by python-tuf's Metadata API: the signed object's canonical bytes, and a
/// role's threshold counted over distinct keys of the role, as the reference counts it.
@Suite struct TUFEnvelopeTests {
    @Test func aThresholdIsMetByDistinctKeysOfTheRoleAsTheReferenceSays() async throws {
        let folder = try TemporaryDirectory.make().path
        let output = try await PythonTUF.run("""
            import sys
            from datetime import datetime, timezone
            from securesystemslib.signer import CryptoSigner
            from tuf.api.metadata import Metadata, Root
            from tuf.api.serialization.json import JSONSerializer
            folder = sys.argv[1]
            signers = [CryptoSigner.generate_ed25519(), CryptoSigner.generate_ecdsa(), CryptoSigner.generate_rsa()]
            outsider = CryptoSigner.generate_ed25519()
            root = Root(expires=datetime(2030, 1, 1, tzinfo=timezone.utc))
            for signer in signers:
                root.add_key(signer.public_key, "root")
            root.roles["root"].threshold = 2
            def write(name, sign):
                metadata = Metadata(root)
                for signer in sign:
                    metadata.sign(signer, append=True)
                open(f"{folder}/{name}.json", "wb").write(metadata.to_bytes(JSONSerializer(compact=False)))
                try:
                    root.verify_delegate("root", metadata.signed_bytes, metadata.signatures)
                    print(name, "trusted")
                except Exception:
                    print(name, "refused")
            write("two", [signers[0], signers[2]])
            write("one", [signers[1]])
            write("outsider", [signers[1], outsider])
            write("three", signers)
            """, [folder])
        var reference: [String: Bool] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            reference[String(parts[0])] = parts[1] == "trusted"
        }
        #expect(reference == ["two": true, "one": false, "outsider": false, "three": true])
        for (name, trusted) in reference {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name).json")))
            let envelope = try TUFEnvelope(bytes)
            guard case .object(let signed) = envelope.signed, case .object(let keyDocuments)? = signed["keys"],
                  case .object(let roles)? = signed["roles"], case .object(let rootRole)? = roles["root"],
                  case .array(let keyIdValues)? = rootRole["keyids"], case .number(let threshold)? = rootRole["threshold"] else {
                Issue.record("\(name): not a root")
                continue
            }
            let keys = try keyDocuments.mapValues { try TUFKey($0) }
            let keyIds = keyIdValues.compactMap { if case .string(let id) = $0 { id } else { nil } }
            let signers = envelope.signers(among: keyIds, keys: keys)
            #expect((signers.count >= Int(threshold)) == trusted, "\(name): \(signers.count) signers")
            // A key id listed twice is one signer; the same signature twice is no metadata at all.
            #expect(envelope.signers(among: keyIds + keyIds, keys: keys) == signers)
            #expect(throws: TUFEnvelope.Malformed(description: "it has two signatures by key \(Self.firstKeyId(bytes))")) {
                try TUFEnvelope(Array(String(decoding: bytes, as: UTF8.self)
                    .replacingOccurrences(of: "\"signatures\": [", with: "\"signatures\": [\(Self.firstSignature(bytes)),").utf8))
            }
        }
        #expect(throws: TUFEnvelope.Malformed.self) { try TUFEnvelope(Array(#"{"signed": {"version": 1.5}, "signatures": []}"#.utf8)) }
        #expect(throws: TUFEnvelope.Malformed.self) { try TUFEnvelope(Array(#"{"signed": {}, "signatures": [{"keyid": "a", "sig": "zz"}]}"#.utf8)) }
    }

    /// The key id of the first signature of a metadata file.
    static func firstKeyId(_ bytes: [UInt8]) -> String {
        guard case .object(let fields)? = JSONReader.value(bytes), case .array(let signatures)? = fields["signatures"],
              case .object(let first)? = signatures.first, case .string(let keyId)? = first["keyid"] else { return "" }
        return keyId
    }

    /// The first signature object of a metadata file, as JSON.
    static func firstSignature(_ bytes: [UInt8]) -> String {
        guard case .object(let fields)? = JSONReader.value(bytes), case .array(let signatures)? = fields["signatures"],
              let first = signatures.first, let data = try? JSONEncoder().encode(first) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }
}
