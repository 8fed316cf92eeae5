import Foundation
import Synchronization
internal import CMiniAppOpenSSL

/// OpenSSL's start-up, which the first hash or signature check otherwise waits for.
package enum CryptoRuntime {
    /// Starts OpenSSL's one-time set-up (reading its configuration file and loading its providers,
    /// about 0.8 ms) on a thread of `executor`'s own, so that it overlaps with whatever the caller does
    /// before its first hash; a hash started meanwhile waits for it. Calling it is optional and idempotent.
    ///
    /// It also tells OpenSSL not to free its state at exit, so that a process may exit while the set-up
    /// is still running on the other thread (the operating system reclaims the memory either way).
    package static func warmUp(on executor: BlockingExecutor) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
        executor.startThread(name: "miniapp.openssl") {
            let context = EVP_MD_CTX_new()
            if EVP_DigestInit_ex(context, EVP_sha256(), nil) != 1 { ERR_clear_error() }
            EVP_MD_CTX_free(context)
        }
    }

    private static let started = Atomic<Bool>(false)
}
