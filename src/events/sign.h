/* sign.h - Standard Webhooks signatures (https://www.standardwebhooks.com/):
 * HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" under the
 * secret's key, sent as "v1,<base64>"; during a rotation one per secret,
 * separated by a space. A secret is "whsec_" and the base64 of its key.
 * Pure; any thread. */
#ifndef SHORTD_EVENTS_SIGN_H
#define SHORTD_EVENTS_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define SIGN_KEY_BYTES 32 /* the key of a secret shortd makes */

/* A new secret: "whsec_" + base64 of SIGN_KEY_BYTES random bytes. */
void sign_secret_new(struct buf *out);
/* ERR_OK when 'secret' is "whsec_" and base64 of 1..64 bytes (or the bare
 * base64); ERR_INVALID otherwise. */
int sign_secret_check(const char *secret);

/* Appends "v1,<base64 signature>" to 'out' for each secret given (old may
 * be NULL), separated by a space. ERR_INVALID for a secret that does not
 * decode (nothing appended). */
int sign_header(const char *secret, const char *old, const char *msg_id, int64_t timestamp,
                const char *body, size_t body_len, struct buf *out);

#endif
