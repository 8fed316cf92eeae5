import Foundation
internal import CMiniAppOpenSSL

/// A private key that signs TUF metadata, of one of the three kinds ``TUFKey`` verifies: Ed25519,
/// ECDSA on P-256 (SHA-256) and RSA-PSS (SHA-256, at least 3072 bits when made here), through OpenSSL.
/// Its public half is written as securesystemslib writes it, so python-tuf and go-tuf read it.
package final class TUFSigner: @unchecked Sendable {
    /// The kinds of key.
    package enum Kind: String, Sendable, CaseIterable {
        case ed25519, ecdsa, rsa
    }

    /// Why a key cannot be made, read or used.
    package struct Failure: CategorizedError, Equatable {
        package let description: String
        /// A key given that cannot be used is the caller's to fix.
        package var category: ErrorCategory { .usage }

        package init(_ description: String) {
            self.description = description
        }
    }

    package let kind: Kind
    /// The public key as metadata lists it (`keytype`, `scheme`, `keyval.public`).
    package let publicKey: JSONValue
    /// The public key's id: the hex SHA-256 of its canonical JSON.
    package let keyId: String
    // An EVP_PKEY, never changed once made; OpenSSL signs with it from any thread.
    private let key: OpaquePointer

    private init(key: OpaquePointer) throws(Failure) {
        self.key = key
        do {
            (kind, publicKey) = try Self.describe(key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.keyId = CanonicalJSON.encode(publicKey).map { SHA256Digest.hash($0).hexString } ?? ""
    }

    /// The public key in `pem` (a public key block, or a private key whose public half is meant) as
    /// metadata lists it.
    package static func publicKey(pem: String) throws(Failure) -> JSONValue {
        let bytes = Array(pem.utf8)
        let read: (OpaquePointer) -> OpaquePointer? = pem.contains("PRIVATE KEY")
            ? { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) } : { bio in PEM_read_bio_PUBKEY(bio, nil, nil, nil) }
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
        guard let parsed else { throw Failure("it is not a PEM key (\(OpenSSLError.drain()))") }
        defer { EVP_PKEY_free(parsed) }
        return try describe(parsed).publicKey
    }

    /// The kind of `key` and its public half as metadata lists it.
    private static func describe(_ key: OpaquePointer) throws(Failure) -> (kind: Kind, publicKey: JSONValue) {
        let kind: Kind
        let publicValue: String
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_ED25519:
            var raw = [UInt8](repeating: 0, count: 32)
            var length = 32
            guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else {
                throw Failure("the Ed25519 key's public half cannot be read (\(OpenSSLError.drain()))")
            }
            kind = .ed25519
            publicValue = raw.hexString
        case EVP_PKEY_EC:
            guard (try? PublicKey.uncompressedPoint(of: key)) != nil else { throw Failure("an ECDSA key must be on P-256") }
            kind = .ecdsa
            publicValue = publicPEM(key)
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(key) >= 2048 else { throw Failure("an RSA key must have 2048 bits or more") }
            kind = .rsa
            publicValue = publicPEM(key)
        default:
            throw Failure("the key is not Ed25519, ECDSA P-256 or RSA")
        }
        let scheme = switch kind {
        case .ed25519: TUFKey.Scheme.ed25519
        case .ecdsa: TUFKey.Scheme.ecdsaP256
        case .rsa: TUFKey.Scheme.rsaPSS
        }
        return (kind, .object([
            "keytype": .string(kind.rawValue), "scheme": .string(scheme.rawValue), "keyval": .object(["public": .string(publicValue)]),
        ]))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// A new random key of `kind`.
    package static func generate(_ kind: Kind) throws(Failure) -> TUFSigner {
        let name = switch kind {
        case .ed25519: "ED25519"
        case .ecdsa: "EC"
        case .rsa: "RSA"
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, name, nil) else { throw Failure("OpenSSL cannot make a \(kind) key (\(OpenSSLError.drain()))") }
        defer { EVP_PKEY_CTX_free(context) }
        var ready = EVP_PKEY_keygen_init(context) == 1
        if kind == .ecdsa { ready = ready && EVP_PKEY_CTX_set_group_name(context, "P-256") == 1 }
        if kind == .rsa { ready = ready && EVP_PKEY_CTX_set_rsa_keygen_bits(context, 3072) == 1 }
        var generated: OpaquePointer?
        guard ready, EVP_PKEY_generate(context, &generated) == 1, let generated else {
            throw Failure("OpenSSL cannot make a \(kind) key (\(OpenSSLError.drain()))")
        }
        return try TUFSigner(key: generated)
    }

    /// The key in a PEM private key block (PKCS#8, or OpenSSL's traditional EC and RSA forms).
    package convenience init(pem: String) throws(Failure) {
        let parsed: OpaquePointer? = Array(pem.utf8).withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let parsed else { throw Failure("it is not a PEM private key (\(OpenSSLError.drain()))") }
        try self.init(key: parsed)
    }

    /// The private key as a PKCS#8 PEM block.
    package var pem: String {
        Self.write(key) { bio, key in PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) }
    }

    /// The public key as a PEM block (SubjectPublicKeyInfo), for whoever lists it in metadata.
    package var publicPEM: String { Self.publicPEM(key) }

    /// This key's signature of `message` under its scheme (RSA-PSS with a salt as long as the digest,
    /// as securesystemslib signs).
    package func sign(_ message: [UInt8]) throws(Failure) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw Failure("OpenSSL cannot sign (\(OpenSSLError.drain()))") }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        let ready = switch kind {
        case .ed25519: EVP_DigestSignInit(context, nil, nil, nil, key) == 1
        case .ecdsa: EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1
        case .rsa:
            EVP_DigestSignInit(context, &keyContext, EVP_sha256(), nil, key) == 1
                && EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, EVP_sha256()) == 1
        }
        var length = 0
        guard ready, EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw Failure("OpenSSL cannot sign (\(OpenSSLError.drain()))")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw Failure("OpenSSL cannot sign (\(OpenSSLError.drain()))")
        }
        return Array(signature.prefix(length))
    }

    private static func publicPEM(_ key: OpaquePointer) -> String {
        write(key) { bio, key in PEM_write_bio_PUBKEY(bio, key) }
    }

    private static func write(_ key: OpaquePointer, _ body: (OpaquePointer, OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { fatalError("OpenSSL cannot allocate a memory BIO") }
        defer { BIO_free(bio) }
        guard body(bio, key) == 1 else { fatalError("OpenSSL cannot write a key: \(OpenSSLError.drain())") }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = CMiniAppOpenSSL_BIO_get_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}
