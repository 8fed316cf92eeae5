internal import CMiniAppOpenSSL

/// An incremental SHA-256, fed as bytes arrive.
package final class SHA256Digest {
    private let context: OpaquePointer

    /// A fresh digest.
    package init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("OpenSSL cannot create a SHA-256 context: \(OpenSSLError.drain())")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// Adds `bytes` to the digest.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// Adds `bytes` to the digest.
    package func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return done }
        Array(bytes).withUnsafeBytes { update($0) }
    }

    /// The digest of everything added so far; the digest must not be updated afterwards.
    package func finalize() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return output
    }

    /// The SHA-256 of `bytes`, for short inputs: it never waits for OpenSSL's start-up.
    package static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let done = Array(bytes).withUnsafeBytes { input in
            CMiniAppOpenSSL_sha256(input.baseAddress, input.count, &output)
        }
        guard done == 1 else { fatalError("OpenSSL cannot compute a SHA-256: \(OpenSSLError.drain())") }
        return output
    }
}

extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal. (Inlinable, so that other modules get it specialized: the
    /// generic form cost a cache hit's first use 0.1 ms of runtime type lookups.)
    @inlinable
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
