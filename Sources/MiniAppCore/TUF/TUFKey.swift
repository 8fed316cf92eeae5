import Foundation
internal import CMiniAppOpenSSL

/// A public key as The Update Framework's metadata lists it (`{"keytype", "scheme", "keyval":
/// {"public"}}`, securesystemslib's forms): Ed25519 (`ed25519`, the key's 32 bytes in hex), ECDSA on
/// P-256 (`ecdsa` or `ecdsa-sha2-nistp256`, scheme `ecdsa-sha2-nistp256`, a PEM public key) and RSA-PSS
/// (`rsa`, scheme `rsassa-pss-sha256`, a PEM public key), verified through OpenSSL.
package final class TUFKey: @unchecked Sendable {
    /// The schemes this client verifies.
    package enum Scheme: String, Sendable, CaseIterable {
        case ed25519 = "ed25519"
        case ecdsaP256 = "ecdsa-sha2-nistp256"
        case rsaPSS = "rsassa-pss-sha256"
    }

    package let scheme: Scheme
    /// The key as its metadata wrote it: what its id is computed from.
    package let document: JSONValue
    // An EVP_PKEY: immutable once made, and OpenSSL's verification does not change it.
    private let key: OpaquePointer

    /// Why a key cannot be used.
    package struct Unusable: Error, CustomStringConvertible {
        package let description: String
    }

    /// The key `document` describes; ``Unusable`` when its type, scheme or value is not one this client
    /// verifies (a role may still be trusted through its other keys).
    package init(_ document: JSONValue) throws(Unusable) {
        guard case .object(let fields) = document, case .string(let type)? = fields["keytype"], case .string(let schemeName)? = fields["scheme"],
              case .object(let value)? = fields["keyval"], case .string(let publicKey)? = value["public"] else {
            throw Unusable(description: "a key needs keytype, scheme and keyval.public")
        }
        guard let scheme = Scheme(rawValue: schemeName) else { throw Unusable(description: "scheme \(schemeName) is not supported") }
        let made: OpaquePointer?
        switch scheme {
        case .ed25519:
            guard type == "ed25519", let raw = Self.hex(publicKey), raw.count == 32 else { throw Unusable(description: "an ed25519 key is 32 bytes in hex") }
            made = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count)
        case .ecdsaP256:
            guard type == "ecdsa" || type == "ecdsa-sha2-nistp256" else { throw Unusable(description: "scheme \(schemeName) needs an ecdsa key, not \(type)") }
            made = Self.pem(publicKey)
            if let made, (try? PublicKey.uncompressedPoint(of: made)) == nil {
                EVP_PKEY_free(made)
                throw Unusable(description: "an ecdsa-sha2-nistp256 key must be on P-256")
            }
        case .rsaPSS:
            guard type == "rsa" else { throw Unusable(description: "scheme \(schemeName) needs an rsa key, not \(type)") }
            made = Self.pem(publicKey)
            if let made, EVP_PKEY_get_base_id(made) != EVP_PKEY_RSA || EVP_PKEY_get_bits(made) < 2048 {
                EVP_PKEY_free(made)
                throw Unusable(description: "an rsassa-pss-sha256 key must be RSA of 2048 bits or more")
            }
        }
        guard let made else {
            _ = OpenSSLError.drain()
            throw Unusable(description: "the \(type) key's value cannot be read")
        }
        self.scheme = scheme
        self.document = document
        self.key = made
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The key's id as the specification defines it: the hex SHA-256 of its canonical JSON.
    package var computedId: String? {
        CanonicalJSON.encode(document).map { SHA256Digest.hash($0).hexString }
    }

    /// Whether `signature` is this key's signature of `message` under its scheme.
    package func verifies(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            _ = OpenSSLError.drain()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        let ready: Bool
        switch scheme {
        case .ed25519:
            ready = EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1
        case .ecdsaP256:
            ready = EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1
        case .rsaPSS:
            ready = EVP_DigestVerifyInit(context, &keyContext, EVP_sha256(), nil, key) == 1
                && EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_AUTO) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, EVP_sha256()) == 1
        }
        guard ready else {
            _ = OpenSSLError.drain()
            return false
        }
        let result = EVP_DigestVerify(context, signature, signature.count, message, message.count)
        if result != 1 { _ = OpenSSLError.drain() }
        return result == 1
    }

    /// Lowercase or uppercase hex as bytes; `nil` when it is not hex.
    package static func hex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        func nibble(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func pem(_ text: String) -> OpaquePointer? {
        Array(text.utf8).withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
    }
}
