/* sign.c - Standard Webhooks signatures (sign.h), over libsodium's
 * HMAC-SHA256 and base64. */
#include "events/sign.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

#define PREFIX "whsec_"
#define KEY_MAX 64

/* The key of a secret, with or without its prefix. */
static int secret_key(const char *secret, unsigned char key[KEY_MAX], size_t *n)
{
    if (!secret)
        return ERR_INVALID;
    if (!strncmp(secret, PREFIX, strlen(PREFIX)))
        secret += strlen(PREFIX);
    size_t len = strlen(secret);
    if (!len ||
        sodium_base642bin(key, KEY_MAX, secret, len, NULL, n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        *n == 0)
        return ERR_INVALID;
    return ERR_OK;
}

void sign_secret_new(struct buf *out)
{
    unsigned char key[SIGN_KEY_BYTES];
    char b64[sodium_base64_ENCODED_LEN(SIGN_KEY_BYTES, sodium_base64_VARIANT_ORIGINAL)];
    randombytes_buf(key, sizeof(key));
    sodium_bin2base64(b64, sizeof(b64), key, sizeof(key), sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(key, sizeof(key));
    buf_adds(out, PREFIX);
    buf_adds(out, b64);
}

int sign_secret_check(const char *secret)
{
    unsigned char key[KEY_MAX];
    size_t n;
    int rc = secret_key(secret, key, &n);
    sodium_memzero(key, sizeof(key));
    return rc;
}

static int sign_one(const char *secret, const char *msg_id, const char *ts, const char *body,
                    size_t body_len, char b64[64])
{
    unsigned char key[KEY_MAX], mac[crypto_auth_hmacsha256_BYTES];
    size_t n;
    if (secret_key(secret, key, &n) != ERR_OK)
        return ERR_INVALID;
    crypto_auth_hmacsha256_state h;
    crypto_auth_hmacsha256_init(&h, key, n);
    crypto_auth_hmacsha256_update(&h, (const unsigned char *)msg_id, strlen(msg_id));
    crypto_auth_hmacsha256_update(&h, (const unsigned char *)".", 1);
    crypto_auth_hmacsha256_update(&h, (const unsigned char *)ts, strlen(ts));
    crypto_auth_hmacsha256_update(&h, (const unsigned char *)".", 1);
    crypto_auth_hmacsha256_update(&h, (const unsigned char *)body, body_len);
    crypto_auth_hmacsha256_final(&h, mac);
    sodium_memzero(key, sizeof(key));
    sodium_bin2base64(b64, 64, mac, sizeof(mac), sodium_base64_VARIANT_ORIGINAL);
    return ERR_OK;
}

int sign_header(const char *secret, const char *old, const char *msg_id, int64_t timestamp,
                const char *body, size_t body_len, struct buf *out)
{
    char ts[24], a[64], b[64];
    snprintf(ts, sizeof(ts), "%" PRId64, timestamp);
    if (sign_one(secret, msg_id, ts, body, body_len, a) != ERR_OK)
        return ERR_INVALID;
    if (old && sign_one(old, msg_id, ts, body, body_len, b) != ERR_OK)
        return ERR_INVALID;
    buf_adds(out, "v1,");
    buf_adds(out, a);
    if (old) {
        buf_adds(out, " v1,");
        buf_adds(out, b);
    }
    return ERR_OK;
}
