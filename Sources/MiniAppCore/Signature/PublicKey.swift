import Foundation
internal import CMiniAppOpenSSL

/// A P-256 public key that verifies platform signatures.
public final class PublicKey: @unchecked Sendable, Equatable {
    /// The DER prefix of a P-256 SubjectPublicKeyInfo holding an uncompressed point.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
        0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    private let key: OpaquePointer
    /// The 65-byte uncompressed point `04 || X || Y`.
    public let point: [UInt8]

    /// The key with this uncompressed point, as `ecKey` carries it (base64 decoded).
    public init(point: [UInt8]) throws(SignatureError) {
        guard point.count == 65, point.first == 0x04 else {
            throw .invalidPublicKey(keyId: nil, reason: "the point is not 65 bytes starting with 04")
        }
        let der = Self.spkiPrefix + point
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            throw .invalidPublicKey(keyId: nil, reason: "the point is not on the P-256 curve: \(OpenSSLError.drain())")
        }
        self.key = parsed
        self.point = point
    }

    /// The key in `ecKey` form: base64 of the uncompressed point.
    public convenience init(ecKey: String) throws(SignatureError) {
        guard let bytes = Data(base64Encoded: ecKey.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw .invalidPublicKey(keyId: nil, reason: "ecKey is not base64")
        }
        try self.init(point: [UInt8](bytes))
    }

    /// The key in a PEM `PUBLIC KEY` block; it must be on P-256.
    public convenience init(pem: String) throws(SignatureError) {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let parsed else {
            throw .invalidPublicKey(keyId: nil, reason: "not a PEM public key: \(OpenSSLError.drain())")
        }
        defer { EVP_PKEY_free(parsed) }
        try self.init(point: Self.uncompressedPoint(of: parsed))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The uncompressed P-256 point of `key`, or an error when it is not a P-256 key.
    package static func uncompressedPoint(of key: OpaquePointer) throws(SignatureError) -> [UInt8] {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            _ = OpenSSLError.drain()
            throw .invalidPublicKey(keyId: nil, reason: "it is not an elliptic-curve key")
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard group == "prime256v1" || group == "P-256" else {
            throw .invalidPublicKey(keyId: nil, reason: "it is on curve \(group), not P-256")
        }
        var point: [UInt8] = [0x04]
        for coordinate in ["qx", "qy"] {
            var number: OpaquePointer?
            guard EVP_PKEY_get_bn_param(key, coordinate, &number) == 1, let number else {
                _ = OpenSSLError.drain()
                throw .invalidPublicKey(keyId: nil, reason: "its point cannot be read")
            }
            defer { BN_free(number) }
            var bytes = [UInt8](repeating: 0, count: 32)
            guard BN_bn2binpad(number, &bytes, 32) == 32 else {
                _ = OpenSSLError.drain()
                throw .invalidPublicKey(keyId: nil, reason: "its point is malformed")
            }
            point += bytes
        }
        return point
    }

    /// The id derived from the key: the first 32 hex digits of the SHA-256 of its point.
    public var keyId: String { String(SHA256Digest.hash(point).hexString.prefix(32)) }

    /// The key in `ecKey` form.
    public var ecKey: String { Data(point).base64EncodedString() }

    /// The key as a PEM `PUBLIC KEY` block.
    public var pem: String {
        let der = Data(Self.spkiPrefix + point).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(der)\n-----END PUBLIC KEY-----\n"
    }

    /// Whether `signature` (DER) is a valid ECDSA P-256 SHA-256 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            _ = OpenSSLError.drain()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            _ = OpenSSLError.drain()
            return false
        }
        let result = EVP_DigestVerify(context, signature, signature.count, message, message.count)
        if result != 1 { _ = OpenSSLError.drain() }
        return result == 1
    }

    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool {
        lhs.point == rhs.point
    }
}
