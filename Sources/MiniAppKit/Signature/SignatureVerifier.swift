import MiniAppCore
/// The result of checking one bundle's signature, before the policy is applied.
struct SignatureOutcome: Sendable {
    /// What the check found.
    var status: SignatureStatus
    /// The id of the key that verified it.
    var keyId: String?
    /// Why it is not verified.
    var error: SignatureError?
    /// A platform key fetched for this check that verified the signature: the installer keeps it once
    /// the version is committed (a failed install leaves no key behind).
    var fetchedKey: PublicKeyRecord?

    static func verified(keyId: String?) -> SignatureOutcome { SignatureOutcome(status: .verified, keyId: keyId) }
    static func unverified(_ error: SignatureError) -> SignatureOutcome { SignatureOutcome(status: .unverified, error: error) }
    static func failed(_ error: SignatureError, keyId: String? = nil) -> SignatureOutcome { SignatureOutcome(status: .failed, keyId: keyId, error: error) }
}

/// A platform key fetched while the bundle downloads, and what parsing it gave.
struct PrefetchedKey: Sendable {
    var record: PublicKeyRecord
    var key: Result<PublicKey, SignatureError>
}

/// Checks bundle signatures with a given key, a platform key (cached with an expiry) or a pinned key.
struct SignatureVerifier: Sendable {
    let trusted: TrustedKeys
    let keyStore: KeyStore?
    let platform: (any PlatformAPI)?

    /// Checks `signature` over `versionId` and `sha256`. The key is `explicitKey` when given, else the
    /// platform's key `keyId`, else a pinned whole key.
    /// `prefetched` is what ``prefetch(keyId:)`` fetched while the bundle was downloading, if anything.
    func check(
        signature: String?, keyId: String?, explicitKey: PublicKey? = nil, prefetched: Result<PrefetchedKey, any Error>? = nil,
        versionId: String, sha256: [UInt8]
    ) async -> SignatureOutcome {
        guard let signature, !signature.isEmpty else { return .unverified(.missingSignature(versionId: versionId)) }
        if let explicitKey {
            return verify(signature, versionId: versionId, sha256: sha256, key: explicitKey, keyId: keyId ?? explicitKey.keyId)
        }
        if let keyId {
            return await checkWithPlatformKey(signature, keyId: keyId, prefetched: prefetched, versionId: versionId, sha256: sha256)
        }
        guard !trusted.keys.isEmpty else {
            return .failed(.keyUnavailable(keyId: "(none)", reason: "the platform names no key id and no trusted key is configured"))
        }
        var last = SignatureOutcome.failed(.mismatch(versionId: versionId, keyId: nil))
        for key in trusted.keys {
            last = verify(signature, versionId: versionId, sha256: sha256, key: key, keyId: key.keyId)
            if last.status == .verified { return last }
        }
        return last
    }

    /// Whether a signature by the platform key `keyId` can be checked: there is a platform to fetch it
    /// from, or an earlier install kept it.
    func canCheck(keyId: String) -> Bool {
        platform != nil || keyStore?.record(id: keyId, stale: true) != nil
    }

    /// Fetches the platform key `keyId` unless a fresh copy is stored, and parses it, so that both
    /// overlap the download (OpenSSL's decoders took 2.4 ms of a cold download's path); the result is
    /// only trusted once a signature verifies with it.
    func prefetch(keyId: String?) async -> Result<PrefetchedKey, any Error>? {
        guard let keyId, let platform, keyStore?.record(id: keyId) == nil else { return nil }
        do {
            let record = try await platform.publicKey(id: keyId)
            return .success(PrefetchedKey(record: record, key: Result { () throws(SignatureError) in try BundleSignature.publicKey(from: record) }))
        } catch {
            return .failure(error)
        }
    }

    private func checkWithPlatformKey(_ signature: String, keyId: String, prefetched: Result<PrefetchedKey, any Error>?, versionId: String, sha256: [UInt8]) async -> SignatureOutcome {
        // A stored key that does not verify stays stored: the bundle may be what is wrong (tampered, the
        // wrong signature, a page served instead of the zip). The platform's key is fetched again, and
        // only one that verifies replaces it, when the install commits; a failure leaves keys/ as it was.
        if let stored = keyStore?.record(id: keyId, stale: platform == nil), let key = try? BundleSignature.publicKey(from: stored) {
            let outcome = verify(signature, versionId: versionId, sha256: sha256, key: key, keyId: keyId)
            if outcome.status == .verified { return outcome }
        }
        guard let platform else {
            return .failed(.keyUnavailable(keyId: keyId, reason: "no platform to fetch it from"), keyId: keyId)
        }
        let key: PublicKey
        do {
            let record: PublicKeyRecord
            if let prefetched {
                let fetched = try prefetched.get()
                record = fetched.record
                key = try fetched.key.get()
            } else {
                record = try await platform.publicKey(id: keyId)
                key = try BundleSignature.publicKey(from: record)
            }
            var outcome = verify(signature, versionId: versionId, sha256: sha256, key: key, keyId: keyId)
            if outcome.status == .verified { outcome.fetchedKey = record }
            return outcome
        } catch let error as SignatureError {
            return .failed(error, keyId: keyId)
        } catch {
            let reason = (error as? any CategorizedError)?.description ?? "\(error)"
            return .failed(.keyUnavailable(keyId: keyId, reason: reason), keyId: keyId)
        }
    }

    private func verify(_ signature: String, versionId: String, sha256: [UInt8], key: PublicKey, keyId: String?) -> SignatureOutcome {
        guard trusted.trusts(key, keyId: keyId) else { return .failed(.untrustedKey(keyId: keyId), keyId: keyId) }
        do {
            try BundleSignature.verify(signature, versionId: versionId, sha256: sha256, key: key, keyId: keyId)
            return .verified(keyId: keyId)
        } catch {
            return .failed(error, keyId: keyId)
        }
    }
}
