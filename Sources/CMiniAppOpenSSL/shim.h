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

/* Macros that do not import into Swift. */
static inline long CMiniAppOpenSSL_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

#endif
