#ifndef CMINIAPP_OPENSSL_SHIM_H
#define CMINIAPP_OPENSSL_SHIM_H

#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/obj_mac.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <openssl/sha.h>
#include <openssl/rsa.h>

/* Macros that do not import into Swift. */
static inline long CMiniAppOpenSSL_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

/* A one-shot SHA-256 through the low-level functions, which need none of OpenSSL's provider set-up
   (about 0.8 ms on first use): short strings hashed at start do not wait for it. Same digest. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline int CMiniAppOpenSSL_sha256(const void *data, size_t count, unsigned char *digest) {
    SHA256_CTX context;
    return SHA256_Init(&context) == 1 && SHA256_Update(&context, data, count) == 1
        && SHA256_Final(digest, &context) == 1;
}
#pragma GCC diagnostic pop
#pragma clang diagnostic pop

#endif
