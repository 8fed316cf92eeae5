import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppKit
@testable import MiniAppCore

@Suite struct SignatureTests {
    let key = try! SigningKey.generate()
    let digest = SHA256Digest.hash(Array("zip bytes".utf8))

    @Test func signatureOfTheRightVersionAndDigestVerifies() throws {
        let signature = try BundleSignature.sign(versionId: "ver-1", sha256: digest, with: key)
        try BundleSignature.verify(signature, versionId: "ver-1", sha256: digest, key: key.publicKey, keyId: nil)
    }

    @Test func signatureFailsForAnotherVersionDigestOrKey() throws {
        let signature = try BundleSignature.sign(versionId: "ver-1", sha256: digest, with: key)
        #expect(throws: SignatureError.mismatch(versionId: "ver-2", keyId: nil)) {
            try BundleSignature.verify(signature, versionId: "ver-2", sha256: digest, key: key.publicKey, keyId: nil)
        }
        #expect(throws: SignatureError.self) {
            try BundleSignature.verify(signature, versionId: "ver-1", sha256: SHA256Digest.hash([1]), key: key.publicKey, keyId: nil)
        }
        #expect(throws: SignatureError.self) {
            try BundleSignature.verify(signature, versionId: "ver-1", sha256: digest, key: try SigningKey.generate().publicKey, keyId: nil)
        }
    }

    @Test(arguments: ["", "not base64!", "AAAA", "MAYCAQECAQE=", String(repeating: "MEUCIQ", count: 40)])
    func malformedSignaturesNeverVerify(signature: String) {
        #expect(throws: SignatureError.self) {
            try BundleSignature.verify(signature, versionId: "ver-1", sha256: digest, key: key.publicKey, keyId: nil)
        }
    }

    @Test func keyFormsRoundTripAndMustAgree() throws {
        let record = PublicKeyRecord(id: "k", ecKey: key.publicKey.ecKey, pemKey: key.publicKey.pem)
        #expect(try BundleSignature.publicKey(from: record) == key.publicKey)
        #expect(try PublicKey(pem: key.publicKey.pem) == key.publicKey)
        let other = try SigningKey.generate().publicKey
        #expect(throws: SignatureError.keyFormsDisagree(keyId: "k")) {
            try BundleSignature.publicKey(from: PublicKeyRecord(id: "k", ecKey: key.publicKey.ecKey, pemKey: other.pem))
        }
        #expect(throws: SignatureError.self) { try BundleSignature.publicKey(from: PublicKeyRecord(id: "k")) }
    }

    @Test(arguments: [
        Data([0x04] + [UInt8](repeating: 1, count: 64)).base64EncodedString(),
        Data([0x02] + [UInt8](repeating: 1, count: 32)).base64EncodedString(),
        Data([UInt8](repeating: 4, count: 10)).base64EncodedString(),
        "%%%",
    ])
    func badECKeysAreRefused(ecKey: String) {
        #expect(throws: SignatureError.self) { try PublicKey(ecKey: ecKey) }
    }

    @Test func stockOpenSSLAgreesBothWays() async throws {
        let directory = try TemporaryDirectory.make()
        let zip = Array("pretend this is a zip".utf8)
        let sha = SHA256Digest.hash(zip)
        try writeTestFile(directory.appendingPathComponent("msg").path, Data(BundleSignature.message(versionId: "v9", sha256: sha)))
        try writeTestFile(directory.appendingPathComponent("pub.pem").path, key.publicKey.pem)
        try writeTestFile(directory.appendingPathComponent("key.pem").path, key.pem)

        let ours = try BundleSignature.sign(versionId: "v9", sha256: sha, with: key)
        try writeTestFile(directory.appendingPathComponent("sig.der").path, Data(base64Encoded: ours)!)
        #expect(await runTool("/usr/bin/openssl", ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "msg"], in: directory) == 0)

        #expect(await runTool("/usr/bin/openssl", ["dgst", "-sha256", "-sign", "key.pem", "-out", "theirs.der", "msg"], in: directory) == 0)
        let theirs = try Data(contentsOf: directory.appendingPathComponent("theirs.der")).base64EncodedString()
        try BundleSignature.verify(theirs, versionId: "v9", sha256: sha, key: key.publicKey, keyId: nil)
    }

    @Test func keysOnOtherCurvesAreRefused() async throws {
        let directory = try TemporaryDirectory.make()
        await runTool("/usr/bin/openssl", ["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "k.pem"], in: directory)
        await runTool("/usr/bin/openssl", ["ec", "-in", "k.pem", "-pubout", "-out", "p.pem"], in: directory)
        let pem = try String(contentsOf: directory.appendingPathComponent("p.pem"), encoding: .utf8)
        #expect(throws: SignatureError.self) { try PublicKey(pem: pem) }
    }

    @Test func trustedKeysMatchByIdOrKey() throws {
        let trusted = try TrustedKeys([key.publicKey.keyId, "platform-id-7"])
        #expect(trusted.trusts(key.publicKey, keyId: "whatever"))
        let other = try SigningKey.generate().publicKey
        #expect(trusted.trusts(other, keyId: "platform-id-7"))
        #expect(!trusted.trusts(other, keyId: "another"))
        let byKey = try TrustedKeys([key.publicKey.pem])
        #expect(byKey.trusts(key.publicKey, keyId: nil))
        #expect(!byKey.trusts(other, keyId: key.publicKey.keyId))
        #expect(throws: ConfigurationError.self) { try TrustedKeys(["../not an id"]) }
    }
}
