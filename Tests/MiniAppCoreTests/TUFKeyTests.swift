import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// TUF's keys and signatures, as the reference implementation (securesystemslib under python-tuf) makes
/// them: each supported scheme verifies its signatures, refuses a changed message or a changed
/// signature, and computes the key id the reference computes.
@Suite struct TUFKeyTests {
    @Test func signaturesOfTheReferenceVerifyAndNothingElseDoes() async throws {
        let output = try await PythonTUF.run("""
            import json
            from securesystemslib.formats import encode_canonical
            from securesystemslib.signer import CryptoSigner
            payload = encode_canonical({"_type": "root", "version": 1, "text": "é\\\\\\""}).encode("utf-8")
            for signer in [CryptoSigner.generate_ed25519(), CryptoSigner.generate_ecdsa(), CryptoSigner.generate_rsa()]:
                signature = signer.sign(payload)
                print(json.dumps({"key": signer.public_key.to_dict(), "keyid": signer.public_key.keyid,
                                  "sig": signature.signature, "payload": payload.hex()}))
            """)
        let lines = output.split(separator: "\n")
        #expect(lines.count == 3)
        var schemes: [TUFKey.Scheme] = []
        for line in lines {
            guard case .object(let fields)? = JSONReader.value(Array(line.utf8)), let document = fields["key"],
                  case .string(let keyId)? = fields["keyid"], case .string(let signatureHex)? = fields["sig"],
                  case .string(let payloadHex)? = fields["payload"],
                  let signature = TUFKey.hex(signatureHex), let payload = TUFKey.hex(payloadHex) else {
                Issue.record("unreadable: \(line)")
                continue
            }
            let key = try TUFKey(document)
            schemes.append(key.scheme)
            #expect(key.computedId == keyId, "the key id is the SHA-256 of the key's canonical JSON")
            #expect(key.verifies(signature, of: payload), "\(key.scheme)")
            var changed = payload
            changed[changed.count / 2] ^= 1
            #expect(!key.verifies(signature, of: changed), "\(key.scheme): a changed message")
            var forged = signature
            forged[forged.count - 1] ^= 1
            #expect(!key.verifies(forged, of: payload), "\(key.scheme): a changed signature")
            #expect(!key.verifies([], of: payload))
        }
        #expect(Set(schemes) == Set(TUFKey.Scheme.allCases))
    }

    @Test func keysThisClientCannotUseAreRefusedByName() {
        let cases: [(JSONValue, String)] = [
            (.object(["keytype": .string("ed25519"), "scheme": .string("ed25519"), "keyval": .object(["public": .string("abcd")])]), "32 bytes"),
            (.object(["keytype": .string("ecdsa"), "scheme": .string("ecdsa-sha2-nistp384"), "keyval": .object(["public": .string("x")])]), "not supported"),
            (.object(["keytype": .string("rsa"), "scheme": .string("ed25519"), "keyval": .object(["public": .string(String(repeating: "0", count: 64))])]), "32 bytes"),
            (.object(["keytype": .string("rsa"), "scheme": .string("rsassa-pss-sha256"), "keyval": .object(["public": .string("not pem")])]), "cannot be read"),
            (.object(["keytype": .string("ed25519")]), "keyval"),
        ]
        for (document, reason) in cases {
            #expect(throws: TUFKey.Unusable.self) { try TUFKey(document) }
            do {
                _ = try TUFKey(document)
            } catch {
                #expect(error.description.contains(reason), "\(error.description)")
            }
        }
    }
}
