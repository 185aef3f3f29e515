/* idem.c - Idempotency-Key records around a create's job (idem.h). */
#include "api/idem.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "http/http.h"
#include "base/banned.h"

int idem_read(const struct request *r, int64_t now, struct idem *k)
{
    struct slice h = http_header(r, "idempotency-key");
    if (!h.p)
        return ERR_OK;
    if (h.n < 1 || h.n > IDEM_KEY_MAX)
        return ERR_INVALID;
    for (size_t i = 0; i < h.n; i++)
        if (h.p[i] < 0x21 || h.p[i] > 0x7e)
            return ERR_INVALID;
    k->key = slice_dup(h);
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, (const unsigned char *)r->path.p, r->path.n);
    crypto_generichash_update(&st, (const unsigned char *)"\n", 1);
    crypto_generichash_update(&st, (const unsigned char *)r->body.p, r->body.n);
    crypto_generichash_final(&st, k->fingerprint, 32);
    k->since = now - r->app->cfg.idempotency_ttl * 1000;
    return ERR_OK;
}

void idem_fingerprint(struct idem *k, const struct slice *parts, size_t n)
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    for (size_t i = 0; i < n; i++) {
        /* each part's length first (all ones: absent), so that no two lists
         * of parts hash the same text */
        uint64_t len = parts[i].p ? (uint64_t)parts[i].n : UINT64_MAX;
        crypto_generichash_update(&st, (const unsigned char *)&len, sizeof(len));
        if (parts[i].p)
            crypto_generichash_update(&st, (const unsigned char *)parts[i].p, parts[i].n);
    }
    crypto_generichash_final(&st, k->fingerprint, 32);
}

int idem_start(struct api_job *j, struct store *st, int64_t owner, const struct idem *k,
               int64_t now)
{
    struct idem_rec rec;
    int rc = st->ops->idem_get(st, owner, k->key, k->since, &rec);
    if (rc == ERR_NOTFOUND) {
        /* (An expired record in the way is simply replaced.) */
        struct idem_rec claim = {.status = 0, .created_at = now};
        memcpy(claim.fingerprint, k->fingerprint, 32);
        rc = st->ops->idem_claim(st, owner, k->key, &claim);
        if (rc == ERR_EXISTS)
            rc = st->ops->idem_get(st, owner, k->key, k->since, &rec);
        else if (rc == ERR_OK)
            rc = ERR_NOTFOUND;
    }
    if (rc == ERR_OK && rec.status == 0) {
        free(rec.body); /* claimed, never answered (cannot outlive its transaction) */
        rc = ERR_NOTFOUND;
    }
    if (rc != ERR_OK)
        return rc;
    if (sodium_memcmp(rec.fingerprint, k->fingerprint, 32) != 0) {
        free(rec.body);
        return ERR_EXISTS;
    }
    j->status = rec.status;
    j->raw = rec.body;
    j->replayed = true;
    return ERR_OK;
}

bool idem_run_create(struct api_job *j, struct store *st, int64_t owner, const struct idem *k,
                     int64_t now, bool *mismatch, int *rc)
{
    *mismatch = false;
    if (!k->key)
        return true;
    *rc = idem_start(j, st, owner, k, now);
    if (*rc == ERR_NOTFOUND)
        return true;
    *mismatch = *rc == ERR_EXISTS;
    if (*mismatch)
        *rc = ERR_OK;
    return false;
}

int idem_finish(struct store *st, int64_t owner, const struct idem *k, int64_t now, int status,
                const char *body)
{
    struct idem_rec rec = {.status = status, .created_at = now, .body = (char *)body};
    memcpy(rec.fingerprint, k->fingerprint, 32);
    return st->ops->idem_put(st, owner, k->key, &rec);
}

void idem_release(struct idem *k)
{
    free(k->key);
    k->key = NULL;
}
