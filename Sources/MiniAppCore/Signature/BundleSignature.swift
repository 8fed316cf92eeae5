import Foundation

/// The platform's signature scheme: ECDSA P-256 over `versionId` followed by the zip's hex SHA-256.
public enum BundleSignature {
    /// The signed message for a version and the SHA-256 of its zip.
    public static func message(versionId: String, sha256: [UInt8]) -> [UInt8] {
        Array(versionId.utf8) + Array(sha256.hexString.utf8)
    }

    /// The base64 DER signature of a zip with this SHA-256, for this version.
    public static func sign(versionId: String, sha256: [UInt8], with key: SigningKey) throws(SignatureError) -> String {
        Data(try key.sign(message(versionId: versionId, sha256: sha256))).base64EncodedString()
    }

    /// The base64 DER signature of the zip at `path`, for this version.
    public static func sign(bundleAt path: String, versionId: String, with key: SigningKey) throws -> String {
        try sign(versionId: versionId, sha256: FileHashing.bundle(at: path).digest, with: key)
    }

    /// Checks `signature` (base64 DER) against the version and digest; throws when it does not match.
    public static func verify(_ signature: String, versionId: String, sha256: [UInt8], key: PublicKey, keyId: String?) throws(SignatureError) {
        guard let der = Data(base64Encoded: signature.trimmingCharacters(in: .whitespacesAndNewlines)), !der.isEmpty else {
            throw .malformedSignature(reason: "it is not base64")
        }
        guard der.count <= 80, der.first == 0x30 else {
            throw .malformedSignature(reason: "it is not a DER ECDSA signature")
        }
        guard key.isValidSignature([UInt8](der), for: message(versionId: versionId, sha256: sha256)) else {
            throw .mismatch(versionId: versionId, keyId: keyId)
        }
    }

    /// The key described by a `keys/{id}` answer; when it has both forms they must be the same key.
    public static func publicKey(from record: PublicKeyRecord) throws(SignatureError) -> PublicKey {
        var fromEC: PublicKey?
        var fromPEM: PublicKey?
        do {
            if let ecKey = record.ecKey, !ecKey.isEmpty { fromEC = try PublicKey(ecKey: ecKey) }
            if let pemKey = record.pemKey, !pemKey.isEmpty { fromPEM = try PublicKey(pem: pemKey) }
        } catch {
            if case .invalidPublicKey(_, let reason) = error { throw .invalidPublicKey(keyId: record.id, reason: reason) }
            throw error
        }
        switch (fromEC, fromPEM) {
        case let (ec?, pem?):
            guard ec == pem else { throw .keyFormsDisagree(keyId: record.id) }
            return ec
        case let (ec?, nil): return ec
        case let (nil, pem?): return pem
        case (nil, nil): throw .invalidPublicKey(keyId: record.id, reason: "the answer has neither ecKey nor pemKey")
        }
    }
}
