/* links.c - link and API-key rules shared by the HTTP API and the CLI.
 *
 * DESIGN
 * Generated codes come from a counter: the store hands out blocks of
 * CODE_BLOCK values with one write, and each value is mapped through the
 * keyed bijection of codes.c, so codes are unique without a lookup table and
 * cannot be enumerated without the per-install key. A candidate that is
 * already taken (an alias, a tombstone, another process's code) is skipped.
 * Only the writer thread (or a CLI command) creates, so the block state needs
 * no lock. */
#include "links.h"

#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codes.h"
#include "err.h"
#include "log.h"
#include "timeutil.h"
#include "urlcheck.h"
#include "banned.h"

#define CODE_BLOCK 1000
#define KEY_SECRET_BYTES 32

struct links {
    struct store *st;
    const char *const *reserved;
    const char *const *self_hosts;
    struct scramble scramble;
    uint8_t key_secret[KEY_SECRET_BYTES];
    uint64_t next, end;     /* the claimed block not yet used */
    _Atomic int64_t nblocked;   /* blocklist size; -1: count it again */
};

void link_input_release(struct link_input *in)
{
    free(in->url);
    free(in->host);
    free(in->alias);
    free(in->title);
    free(in->note);
    free(in->tags);
    memset(in, 0, sizeof(*in));
}

/* Reads a secret from meta, or creates it in its own transaction. */
static int load_secret(struct store *st, const char *name, uint8_t *out, size_t n)
{
    struct buf v = BUF_INIT;
    int rc = st->ops->meta_get(st, name, &v);
    if (rc == ERR_NOTFOUND) {
        rc = st->ops->begin(st);
        if (rc == ERR_OK) {
            /* Another process may have created it meanwhile. */
            rc = st->ops->meta_get(st, name, &v);
            if (rc == ERR_NOTFOUND) {
                randombytes_buf(out, n);
                rc = st->ops->meta_put(st, name, out, n);
                buf_reset(&v);
                buf_add(&v, out, n);
            }
            rc = rc == ERR_OK ? st->ops->commit(st) : rc;
            if (rc != ERR_OK)
                st->ops->rollback(st);
        }
    }
    if (rc == ERR_OK && v.len != n)
        rc = log_fail(ERR_STORAGE, "secret '%s' has the wrong size", name);
    if (rc == ERR_OK)
        memcpy(out, v.p, n);
    buf_release(&v);
    return rc;
}

int links_new(struct store *st, const char *const *reserved, const char *const *self_hosts,
              struct links **out)
{
    struct links *l = calloc(1, sizeof(*l));
    if (!l)
        abort();
    l->st = st;
    l->reserved = reserved;
    l->self_hosts = self_hosts;
    atomic_store(&l->nblocked, -1);
    uint8_t code_key[SCRAMBLE_KEY_BYTES];
    int rc = load_secret(st, "code_key", code_key, sizeof(code_key));
    if (rc == ERR_OK)
        rc = load_secret(st, "key_secret", l->key_secret, sizeof(l->key_secret));
    if (rc != ERR_OK) {
        free(l);
        return rc;
    }
    scramble_init(&l->scramble, code_key, CODE_SPACE);
    sodium_memzero(code_key, sizeof(code_key));
    *out = l;
    return ERR_OK;
}

void links_free(struct links *l)
{
    if (!l)
        return;
    sodium_memzero(l, sizeof(*l));
    free(l);
}

/* ---- parsing a create request ---- */

static int bad(const char **field, const char *name, char *why, size_t whylen, const char *msg)
{
    *field = name;
    snprintf(why, whylen, "%s", msg);
    return ERR_INVALID;
}

static const char *const known_fields[] = {"url",        "alias",     "ttl",   "expires_at",
                                           "title",      "note",      "tags",  "permanent",
                                           "reuse",      NULL};

static int opt_string(json_t *body, const char *name, size_t max, char **out, const char **field,
                      char *why, size_t whylen)
{
    json_t *v = json_object_get(body, name);
    if (!v || json_is_null(v))
        return ERR_OK;
    if (!json_is_string(v))
        return bad(field, name, why, whylen, "must be a string");
    size_t n = json_string_length(v);
    if (n > max) {
        *field = name;
        snprintf(why, whylen, "must be at most %zu bytes", max);
        return ERR_INVALID;
    }
    if (memchr(json_string_value(v), '\0', n))
        return bad(field, name, why, whylen, "must not contain NUL characters");
    *out = xstrdup(json_string_value(v));
    return ERR_OK;
}

static int opt_bool(json_t *body, const char *name, bool *out, const char **field, char *why,
                    size_t whylen)
{
    json_t *v = json_object_get(body, name);
    if (!v || json_is_null(v))
        return ERR_OK;
    if (!json_is_boolean(v))
        return bad(field, name, why, whylen, "must be true or false");
    *out = json_is_true(v);
    return ERR_OK;
}

static int parse_tags(json_t *body, struct link_input *in, const char **field, char *why,
                      size_t whylen)
{
    json_t *v = json_object_get(body, "tags");
    if (!v || json_is_null(v))
        return ERR_OK;
    if (!json_is_array(v))
        return bad(field, "tags", why, whylen, "must be an array of strings");
    if (json_array_size(v) > TAGS_MAX)
        return bad(field, "tags", why, whylen, "must have at most 20 tags");
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t) {
        if (!json_is_string(t))
            return bad(field, "tags", why, whylen, "must be an array of strings");
        size_t n = json_string_length(t);
        if (n < 1 || n > TAG_MAX)
            return bad(field, "tags", why, whylen, "each tag must be 1 to 64 bytes");
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)json_string_value(t)[k] < 0x20)
                return bad(field, "tags", why, whylen, "tags must not contain control characters");
    }
    in->tags = json_dumps(v, JSON_COMPACT);
    if (!in->tags)
        abort();
    return ERR_OK;
}

int links_parse(struct links *l, json_t *body, int64_t now, struct link_input *in,
                const char **field, char *why, size_t whylen)
{
    memset(in, 0, sizeof(*in));
    *field = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        bool known = false;
        for (int i = 0; known_fields[i]; i++)
            known = known || strcmp(key, known_fields[i]) == 0;
        if (!known) {
            *field = key;
            snprintf(why, whylen, "unknown field");
            return ERR_INVALID;
        }
    }

    json_t *url = json_object_get(body, "url");
    if (!url || json_is_null(url))
        return bad(field, "url", why, whylen, "is required");
    if (!json_is_string(url))
        return bad(field, "url", why, whylen, "must be a string");
    struct buf norm = BUF_INIT, host = BUF_INIT;
    const char *reason = NULL;
    struct urlcheck_opts uo = {.self_hosts = l->self_hosts, .blocked = NULL};
    int rc = urlcheck(json_string_value(url), json_string_length(url), &uo, &norm, &host, &reason);
    if (rc != ERR_OK) {
        buf_release(&norm);
        buf_release(&host);
        return bad(field, "url", why, whylen, reason ? reason : "is not a valid URL");
    }
    in->url = buf_detach(&norm, NULL);
    in->host = buf_detach(&host, NULL);

    json_t *alias = json_object_get(body, "alias");
    if (alias && !json_is_null(alias)) {
        if (!json_is_string(alias))
            return bad(field, "alias", why, whylen, "must be a string");
        const char *s = json_string_value(alias);
        if (alias_check(s, json_string_length(alias), l->reserved, &reason) != ERR_OK)
            return bad(field, "alias", why, whylen, reason ? reason : "is not a valid alias");
        in->alias = xstrdup(s);
    }

    json_t *ttl = json_object_get(body, "ttl");
    json_t *exp = json_object_get(body, "expires_at");
    bool has_ttl = ttl && !json_is_null(ttl), has_exp = exp && !json_is_null(exp);
    if (has_ttl && has_exp)
        return bad(field, "ttl", why, whylen, "give ttl or expires_at, not both");
    if (has_ttl) {
        if (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
            json_integer_value(ttl) > 100LL * 365 * 86400)
            return bad(field, "ttl", why, whylen,
                       "must be a whole number of seconds from 1 to 3153600000");
        in->expires_at = now + (int64_t)json_integer_value(ttl) * 1000;
    }
    if (has_exp) {
        if (!json_is_string(exp) ||
            rfc3339_parse(json_string_value(exp), json_string_length(exp), &in->expires_at) !=
                ERR_OK)
            return bad(field, "expires_at", why, whylen,
                       "must be an RFC 3339 time such as 2030-01-31T12:00:00Z");
        if (in->expires_at <= now)
            return bad(field, "expires_at", why, whylen, "is in the past");
    }

    rc = opt_string(body, "title", TITLE_MAX, &in->title, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_string(body, "note", NOTE_MAX, &in->note, field, why, whylen);
    if (rc == ERR_OK)
        rc = parse_tags(body, in, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_bool(body, "permanent", &in->permanent, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_bool(body, "reuse", &in->reuse, field, why, whylen);
    return rc;
}

/* ---- creating ---- */

static int next_code(struct links *l, struct store *st, char out[CODE_MAX + 1])
{
    for (;;) {
        if (l->next >= l->end) {
            uint64_t start;
            int rc = st->ops->claim_block(st, CODE_BLOCK, &start);
            if (rc != ERR_OK)
                return rc;
            l->next = start;
            l->end = start + CODE_BLOCK;
        }
        uint64_t n = l->next++;
        if (n >= CODE_SPACE)
            return log_fail(ERR_TOOBIG, "every generated code is used");
        code_from_counter(&l->scramble, n, out);
        out[CODE_LEN] = '\0';
        struct link taken;
        int rc = st->ops->link_get(st, out, &taken);
        if (rc == ERR_NOTFOUND)
            return ERR_OK;
        if (rc != ERR_OK)
            return rc;
        link_release(&taken);   /* an alias or another process's code: skip it */
    }
}

void links_forget_block(struct links *l)
{
    l->next = l->end = 0;
}

void links_blocklist_changed(struct links *l)
{
    atomic_store(&l->nblocked, -1);
}

static int count_host(const char *host, int64_t created_at, void *arg)
{
    (void)host;
    (void)created_at;
    (*(int64_t *)arg)++;
    return 0;
}

/* The host and each parent domain, against the blocklist. */
static int blocked(struct links *l, struct store *st, const char *host, bool *yes)
{
    *yes = false;
    int64_t n = atomic_load(&l->nblocked);
    if (n < 0) {
        n = 0;
        int rc = st->ops->block_list(st, count_host, &n);
        if (rc != ERR_OK)
            return rc;
        atomic_store(&l->nblocked, n);
    }
    if (n == 0)
        return ERR_OK;
    for (const char *h = host; h && *h; h = strchr(h, '.'), h = h ? h + 1 : NULL) {
        int rc = st->ops->block_has(st, h, yes);
        if (rc != ERR_OK || *yes)
            return rc;
    }
    return ERR_OK;
}

int links_create(struct links *l, struct store *st, const struct link_input *in, int64_t owner,
                 int64_t now, struct link *out, bool *reused)
{
    *reused = false;
    memset(out, 0, sizeof(*out));
    bool is_blocked;
    int rc = blocked(l, st, in->host, &is_blocked);
    if (rc != ERR_OK)
        return rc;
    if (is_blocked)
        return ERR_FORBIDDEN;
    if (in->reuse) {
        rc = st->ops->link_find_live(st, owner, in->url, now, out);
        if (rc == ERR_OK) {
            *reused = true;
            return ERR_OK;
        }
        if (rc != ERR_NOTFOUND)
            return rc;
    }
    if (in->alias) {
        struct link taken;
        rc = st->ops->link_get(st, in->alias, &taken);
        if (rc == ERR_OK) {
            link_release(&taken);
            return ERR_EXISTS;
        }
        if (rc != ERR_NOTFOUND)
            return rc;
        snprintf(out->code, sizeof(out->code), "%s", in->alias);
    } else {
        rc = next_code(l, st, out->code);
        if (rc != ERR_OK)
            return rc;
    }
    out->owner = owner;
    out->url = xstrdup(in->url);
    out->title = in->title ? xstrdup(in->title) : NULL;
    out->note = in->note ? xstrdup(in->note) : NULL;
    out->tags = in->tags ? xstrdup(in->tags) : NULL;
    out->created_at = now;
    out->changed_at = now;
    out->expires_at = in->expires_at;
    out->state = LINK_ACTIVE;
    out->permanent = in->permanent;
    rc = st->ops->link_insert(st, out);
    if (rc != ERR_OK)
        link_release(out);
    return rc;
}

/* ---- what a caller sees ---- */

bool link_is_live(const struct link *l, int64_t now)
{
    return l->state == LINK_ACTIVE && l->url && (l->expires_at == 0 || l->expires_at > now);
}

const char *link_state_name(const struct link *l, int64_t now)
{
    switch (l->state) {
    case LINK_DELETED:
        return "deleted";
    case LINK_DISABLED:
        return "disabled";
    default:
        return l->expires_at && l->expires_at <= now ? "expired" : "active";
    }
}

int64_t link_days_remaining(const struct link *l, int64_t now)
{
    if (!l->expires_at)
        return -1;
    if (l->expires_at <= now)
        return 0;
    return (l->expires_at - now + MS_PER_DAY - 1) / MS_PER_DAY;
}

/* ---- API keys ---- */

static const char base62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static void key_hash(const struct links *l, const char *token, size_t n, uint8_t out[32])
{
    crypto_generichash(out, 32, (const unsigned char *)token, n, l->key_secret,
                       sizeof(l->key_secret));
}

int links_key_create(struct links *l, struct store *st, const char *name, bool admin,
                     char token[KEY_TOKEN_LEN + 1], int64_t *id)
{
    memcpy(token, "sk_", 3);
    for (int i = 3; i < KEY_TOKEN_LEN; i++)
        token[i] = base62[randombytes_uniform(62)];
    token[KEY_TOKEN_LEN] = '\0';
    uint8_t hash[32];
    key_hash(l, token, KEY_TOKEN_LEN, hash);
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->key_insert(st, name, hash, admin, now_ms(), id);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK)
        st->ops->rollback(st);
    return rc;
}

int links_authenticate(struct links *l, struct slice token, struct apikey *out)
{
    if (token.n != KEY_TOKEN_LEN)
        return ERR_NOTFOUND;
    uint8_t hash[32];
    key_hash(l, token.p, token.n, hash);
    int rc = l->st->ops->key_by_hash(l->st, hash, out);
    if (rc == ERR_OK && out->revoked_at)
        return ERR_NOTFOUND;
    return rc;
}
