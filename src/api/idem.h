/* idem.h - Idempotency-Key on the creates (POST /api/links, its bulk form,
 * and the compatible APIs' creates): the same key with the same request
 * answers the first answer again, however often and however concurrently
 * it is sent; the key with another request is refused. Records are scoped
 * to the API key and forgotten after `idempotency-ttl`.
 *
 * A create's job calls idem_start first in its transaction and, when it is
 * to run, idem_finish with its answer last, in the same transaction: the
 * link and the answer that made it are durable together or not at all. */
#ifndef SHORTD_IDEM_H
#define SHORTD_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/apijob.h"
#include "base/buf.h"
#include "store/store.h"

#define IDEM_KEY_MAX 255
#define IDEM_BAD_HEADER "Idempotency-Key must be 1 to 255 visible ASCII characters"
#define IDEM_MISMATCH "this Idempotency-Key was used with a different request"

/* An Idempotency-Key as a create carries it. */
struct idem {
    char *key;               /* NULL when none (owned) */
    uint8_t fingerprint[32]; /* of what the request asks */
    int64_t since;           /* records older than this are forgotten */
};

/* Reads the Idempotency-Key header into 'k' (k->key NULL without one),
 * fingerprinting the request's path and body. ERR_OK, or ERR_INVALID for
 * a malformed header (the caller answers IDEM_BAD_HEADER in its shape). */
int idem_read(const struct request *r, int64_t now, struct idem *k);

/* Fingerprints 'parts' instead (NULL p: an absent part), for a create whose
 * body is no stable text (a multipart form: its boundary changes). */
void idem_fingerprint(struct idem *k, const struct slice *parts, size_t n);

/* Inside the job's transaction, before anything is written: ERR_NOTFOUND
 * when the job is to run (the key is now claimed: a request with the same
 * key on another node waits until this transaction ends, then finds its
 * answer); ERR_OK for a replay (j->status, j->raw and j->replayed set);
 * ERR_EXISTS when the key was used with another request; or the store's
 * error. */
int idem_start(struct api_job *j, struct store *st, int64_t owner, const struct idem *k,
               int64_t now);

/* idem_start for a compatible API's create, which answers a mismatch in
 * its own shape later: true when the create is to run (no key, or a key
 * now claimed); false with *rc what the job returns: ERR_OK for a replay
 * or a mismatch (*mismatch then true), or the store's error. */
bool idem_run_create(struct api_job *j, struct store *st, int64_t owner, const struct idem *k,
                     int64_t now, bool *mismatch, int *rc);

/* Remembers the answer ('body', JSON text) with the key, in the job's
 * transaction. */
int idem_finish(struct store *st, int64_t owner, const struct idem *k, int64_t now, int status,
                const char *body);

void idem_release(struct idem *k);

#endif
