import Foundation
internal import CMiniAppOpenSSL

/// A P-256 private key that signs bundles the way the platform does.
public final class SigningKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// The matching public key.
    public let publicKey: PublicKey

    private init(key: OpaquePointer) throws(SignatureError) {
        self.key = key
        do {
            self.publicKey = try PublicKey(point: PublicKey.uncompressedPoint(of: key))
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// A new random P-256 key.
    public static func generate() throws(SignatureError) -> SigningKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw .invalidPrivateKey(path: "(new key)", reason: OpenSSLError.drain())
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
              EVP_PKEY_generate(context, &generated) == 1, let generated else {
            throw .invalidPrivateKey(path: "(new key)", reason: OpenSSLError.drain())
        }
        return try SigningKey(key: generated)
    }

    /// The key in a PEM private key block (`PRIVATE KEY` or `EC PRIVATE KEY`); `path` names it in errors.
    public convenience init(pem: String, path: String = "(key)") throws(SignatureError) {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let parsed else {
            throw .invalidPrivateKey(path: path, reason: "it is not a PEM private key (\(OpenSSLError.drain()))")
        }
        do {
            try self.init(key: parsed)
        } catch {
            throw .invalidPrivateKey(path: path, reason: "it is not a P-256 key")
        }
    }

    /// The private key as a PKCS#8 PEM block.
    public var pem: String {
        guard let bio = BIO_new(BIO_s_mem()) else { fatalError("OpenSSL cannot allocate a memory BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            fatalError("OpenSSL cannot write a private key: \(OpenSSLError.drain())")
        }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = CMiniAppOpenSSL_BIO_get_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    /// The DER ECDSA SHA-256 signature of `message`.
    public func sign(_ message: [UInt8]) throws(SignatureError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .invalidPrivateKey(path: "(key)", reason: OpenSSLError.drain()) }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw .invalidPrivateKey(path: "(key)", reason: OpenSSLError.drain())
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw .invalidPrivateKey(path: "(key)", reason: OpenSSLError.drain())
        }
        return Array(signature.prefix(length))
    }
}
