/* links.c - link and API-key rules shared by the HTTP API and the CLI.
 *
 * DESIGN
 * Generated codes come from a counter: the store hands out blocks of
 * CODE_BLOCK values with one write, and each value is mapped through the
 * keyed bijection of codes.c, so codes are unique without a lookup table and
 * cannot be enumerated without the per-install key. A candidate that is
 * already taken (an alias, a tombstone, another process's code) is skipped.
 * Only the writer thread (or a CLI command) creates, so the block state needs
 * no lock.
 * API keys are looked up by the keyed hash of their token. A key the store
 * said is valid is held in a per-node key cache (keycache.c), so that an
 * event loop can let it in without a store read (links_authenticate_cached);
 * every revocation, here or heard from another node, empties that cache. */
#include "links/links.h"

#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "links/codes.h"
#include "base/err.h"
#include "links/keycache.h"
#include "links/keyuse.h"
#include "links/pwhash.h"
#include "links/utm.h"
#include "links/variants.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "links/urlcheck.h"
#include "base/banned.h"

#define CODE_BLOCK 1000
#define KEY_SECRET_BYTES 32

struct links {
    struct store *st;
    const char *const *reserved;
    const char *const *self_hosts;
    struct scramble scramble;
    uint8_t key_secret[KEY_SECRET_BYTES];
    uint8_t variant_secret[KEY_SECRET_BYTES]; /* per-link A/B keys are derived from it */
    uint8_t yourls_key[32];                   /* from key_secret: keys' YOURLS signature tokens */
    uint64_t next, end;                       /* the claimed block not yet used */
    _Atomic int64_t nblocked;                 /* blocklist size; negative: count it again */
    _Atomic int64_t ndomains;                 /* registered custom domains, likewise */
    _Atomic int64_t nchanges; /* changes heard: each gives both a new negative stamp */
    struct keycache *keys;    /* API keys known valid, by token hash */
    struct keyuse *uses;      /* their last uses, not yet written */
};

void link_input_release(struct link_input *in)
{
    free(in->url);
    free(in->host);
    free(in->alias);
    free(in->title);
    free(in->note);
    free(in->tags);
    free(in->domain);
    if (in->password)
        sodium_memzero(in->password, strlen(in->password));
    free(in->password);
    free(in->variants);
    free(in->utm);
    free(in->dest);
    memset(in, 0, sizeof(*in));
}

void link_patch_release(struct link_patch *p)
{
    free(p->url);
    free(p->host);
    free(p->title);
    free(p->note);
    free(p->tags);
    free(p->password);
    free(p->variants);
    free(p->utm);
    memset(p, 0, sizeof(*p));
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
    links_blocklist_changed(l); /* not counted yet */
    uint8_t code_key[SCRAMBLE_KEY_BYTES];
    int rc = load_secret(st, "code_key", code_key, sizeof(code_key));
    if (rc == ERR_OK)
        rc = load_secret(st, "key_secret", l->key_secret, sizeof(l->key_secret));
    if (rc == ERR_OK)
        rc = load_secret(st, "variant_secret", l->variant_secret, sizeof(l->variant_secret));
    if (rc != ERR_OK) {
        free(l);
        return rc;
    }
    scramble_init(&l->scramble, code_key, CODE_SPACE);
    sodium_memzero(code_key, sizeof(code_key));
    static const char label[] = "shortd yourls signature tokens";
    crypto_generichash(l->yourls_key, sizeof(l->yourls_key), (const unsigned char *)label,
                       sizeof(label) - 1, l->key_secret, sizeof(l->key_secret));
    l->keys = keycache_new(LINKS_KEY_CACHE_MAX, LINKS_KEY_TTL_MS);
    l->uses = keyuse_new(LINKS_KEY_CACHE_MAX);
    *out = l;
    return ERR_OK;
}

void links_free(struct links *l)
{
    if (!l)
        return;
    keycache_free(l->keys);
    keyuse_free(l->uses);
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

static const char *const known_fields[] = {"url",      "alias",  "ttl",        "expires_at",
                                           "title",    "note",   "tags",       "permanent",
                                           "reuse",    "domain", "max_clicks", "password",
                                           "variants", "utm",    "track",      NULL};

static const char *const patch_fields[] = {"url",        "title", "note",     "tags",
                                           "expires_at", "ttl",   "password", "variants",
                                           "utm",        "track", NULL};

int links_domain_check(const char *host, size_t n, const char **why)
{
    if (n < 1 || n > 253) {
        *why = "must be a host name of 1 to 253 bytes";
        return ERR_INVALID;
    }
    if (host[n - 1] == '.') {
        *why = "must not end with a dot";
        return ERR_INVALID;
    }
    size_t label = 0, labels = 1;
    bool alpha_tld = false;
    for (size_t i = 0; i < n; i++) {
        char ch = host[i];
        if (ch == '.') {
            if (!label || host[i - 1] == '-') {
                *why = "is not a valid DNS name (empty label, or one ending with '-')";
                return ERR_INVALID;
            }
            label = 0;
            labels++;
            alpha_tld = false;
            continue;
        }
        if (ch == ':') {
            *why = "must not have a port";
            return ERR_INVALID;
        }
        if (ch >= 'A' && ch <= 'Z') {
            *why = "must be lower case";
            return ERR_INVALID;
        }
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
        if (!ok || (ch == '-' && !label) || ++label > 63) {
            *why = "is not a valid DNS name (labels of 1 to 63 letters, digits and inner '-')";
            return ERR_INVALID;
        }
        if (ch >= 'a' && ch <= 'z')
            alpha_tld = true;
    }
    if (host[n - 1] == '-') {
        *why = "is not a valid DNS name (a label ends with '-')";
        return ERR_INVALID;
    }
    if (labels < 2 || !alpha_tld) {
        *why = "must be a DNS name of two or more labels (not an IP address)";
        return ERR_INVALID;
    }
    return ERR_OK;
}

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

static int parse_tags(json_t *body, char **out, const char **field, char *why, size_t whylen)
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
    json_array_foreach(v, i, t)
    {
        if (!json_is_string(t))
            return bad(field, "tags", why, whylen, "must be an array of strings");
        size_t n = json_string_length(t);
        if (n < 1 || n > TAG_MAX)
            return bad(field, "tags", why, whylen, "each tag must be 1 to 64 bytes");
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)json_string_value(t)[k] < 0x20)
                return bad(field, "tags", why, whylen, "tags must not contain control characters");
    }
    *out = json_dumps(v, JSON_COMPACT);
    if (!*out)
        abort();
    return ERR_OK;
}

int links_dest(const char *url, const char *utm, char **dest)
{
    free(*dest);
    *dest = NULL;
    if (!utm || !url)
        return ERR_OK;
    json_t *o = json_loads(utm, 0, NULL);
    struct utm u;
    const char *field = NULL;
    int rc = o ? utm_from_json(o, &u, &field) : ERR_INVALID;
    json_decref(o);
    if (rc != ERR_OK)
        return rc;
    struct buf out = BUF_INIT;
    rc = utm_merge(url, &u, &out);
    if (rc == ERR_OK)
        *dest = buf_detach(&out, NULL);
    buf_release(&out);
    return rc;
}

void links_variant_key(const struct links *l, const char *code, uint8_t out[32])
{
    crypto_generichash(out, 32, (const unsigned char *)code, strlen(code), l->variant_secret,
                       sizeof(l->variant_secret));
}

/* utm, variants and password of a create or a PATCH: the JSON texts as
 * stored; the password is only checked here (the caller hashes it). */
static int parse_controls(struct links *l, json_t *body, char **utm, char **variants,
                          const char **field, char *why, size_t whylen)
{
    json_t *v = json_object_get(body, "utm");
    if (v && !json_is_null(v)) {
        struct utm u;
        if (utm_from_json(v, &u, field) != ERR_OK) {
            snprintf(why, whylen,
                     "must be an object of source, medium, campaign, term, content: "
                     "strings of 1 to 128 bytes");
            return ERR_INVALID;
        }
        json_t *o = utm_to_json(&u);
        *utm = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
    }
    v = json_object_get(body, "variants");
    if (v && !json_is_null(v)) {
        struct variants vs;
        struct urlcheck_opts uo = {.self_hosts = l->self_hosts, .blocked = NULL};
        char err[256];
        if (variants_parse(v, &uo, &vs, err, sizeof(err)) != ERR_OK) {
            *field = "variants";
            snprintf(why, whylen, "%s", err);
            return ERR_INVALID;
        }
        json_t *o = variants_to_json(&vs);
        *variants = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        variants_release(&vs);
    }
    v = json_object_get(body, "password");
    if (v && !json_is_null(v)) {
        const char *reason = NULL;
        if (!json_is_string(v))
            return bad(field, "password", why, whylen, "must be a string");
        if (pwhash_valid(json_string_value(v), json_string_length(v), &reason) != ERR_OK)
            return bad(field, "password", why, whylen, reason);
    }
    return ERR_OK;
}

static bool known(const char *const *names, const char *key)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(key, names[i]) == 0)
            return true;
    return false;
}

/* url: required at create, optional (never null) in a patch. */
static int parse_url(struct links *l, json_t *url, char **out, char **host, const char **field,
                     char *why, size_t whylen)
{
    if (!url || json_is_null(url))
        return bad(field, "url", why, whylen, "is required");
    if (!json_is_string(url))
        return bad(field, "url", why, whylen, "must be a string");
    struct buf norm = BUF_INIT, h = BUF_INIT;
    const char *reason = NULL;
    struct urlcheck_opts uo = {.self_hosts = l->self_hosts, .blocked = NULL};
    int rc = urlcheck(json_string_value(url), json_string_length(url), &uo, &norm, &h, &reason);
    if (rc != ERR_OK) {
        buf_release(&norm);
        buf_release(&h);
        return bad(field, "url", why, whylen, reason ? reason : "is not a valid URL");
    }
    *out = buf_detach(&norm, NULL);
    *host = buf_detach(&h, NULL);
    return ERR_OK;
}

/* ttl or expires_at: *set tells whether either was given (null: removed). */
static int parse_expiry(json_t *body, int64_t now, int64_t *expires_at, bool *set,
                        const char **field, char *why, size_t whylen)
{
    json_t *ttl = json_object_get(body, "ttl");
    json_t *exp = json_object_get(body, "expires_at");
    *set = ttl || exp;
    bool has_ttl = ttl && !json_is_null(ttl), has_exp = exp && !json_is_null(exp);
    if (has_ttl && has_exp)
        return bad(field, "ttl", why, whylen, "give ttl or expires_at, not both");
    *expires_at = 0;
    if (has_ttl) {
        if (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
            json_integer_value(ttl) > 100LL * 365 * 86400)
            return bad(field, "ttl", why, whylen,
                       "must be a whole number of seconds from 1 to 3153600000");
        *expires_at = now + (int64_t)json_integer_value(ttl) * 1000;
    }
    if (has_exp) {
        if (!json_is_string(exp) ||
            rfc3339_parse(json_string_value(exp), json_string_length(exp), expires_at) != ERR_OK)
            return bad(field, "expires_at", why, whylen,
                       "must be an RFC 3339 time such as 2030-01-31T12:00:00Z");
        if (*expires_at <= now)
            return bad(field, "expires_at", why, whylen, "is in the past");
    }
    return ERR_OK;
}

int links_parse(struct links *l, json_t *body, int64_t now, struct link_input *in,
                const char **field, char *why, size_t whylen)
{
    memset(in, 0, sizeof(*in));
    *field = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (!known(known_fields, key)) {
            *field = key;
            snprintf(why, whylen, "unknown field");
            return ERR_INVALID;
        }
    }

    int rc = parse_url(l, json_object_get(body, "url"), &in->url, &in->host, field, why, whylen);
    if (rc != ERR_OK)
        return rc;

    const char *reason = NULL;
    json_t *alias = json_object_get(body, "alias");
    if (alias && !json_is_null(alias)) {
        if (!json_is_string(alias))
            return bad(field, "alias", why, whylen, "must be a string");
        const char *s = json_string_value(alias);
        if (alias_check(s, json_string_length(alias), l->reserved, &reason) != ERR_OK)
            return bad(field, "alias", why, whylen, reason ? reason : "is not a valid alias");
        in->alias = xstrdup(s);
    }

    bool exp_set;
    rc = parse_expiry(body, now, &in->expires_at, &exp_set, field, why, whylen);
    if (rc != ERR_OK)
        return rc;

    json_t *dom = json_object_get(body, "domain");
    if (dom && !json_is_null(dom)) {
        if (!json_is_string(dom))
            return bad(field, "domain", why, whylen, "must be a string");
        if (links_domain_check(json_string_value(dom), json_string_length(dom), &reason) != ERR_OK)
            return bad(field, "domain", why, whylen, reason);
        in->domain = xstrdup(json_string_value(dom));
    }
    json_t *mc = json_object_get(body, "max_clicks");
    if (mc && !json_is_null(mc)) {
        if (!json_is_integer(mc) || json_integer_value(mc) < 1 ||
            json_integer_value(mc) > 1000000000000LL)
            return bad(field, "max_clicks", why, whylen,
                       "must be a whole number from 1 to 1000000000000");
        in->max_clicks = (int64_t)json_integer_value(mc);
    }

    rc = opt_string(body, "title", TITLE_MAX, &in->title, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_string(body, "note", NOTE_MAX, &in->note, field, why, whylen);
    if (rc == ERR_OK)
        rc = parse_tags(body, &in->tags, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_bool(body, "permanent", &in->permanent, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_bool(body, "reuse", &in->reuse, field, why, whylen);
    bool track = true;
    if (rc == ERR_OK)
        rc = opt_bool(body, "track", &track, field, why, whylen);
    in->untracked = !track;
    if (rc == ERR_OK && in->permanent && in->max_clicks)
        rc = bad(field, "max_clicks", why, whylen,
                 "cannot be used with permanent (a cached 301 would skip the count)");
    if (rc == ERR_OK && in->untracked && in->max_clicks)
        rc = bad(field, "track", why, whylen,
                 "cannot be false with max_clicks (a click limit counts the visits)");
    if (rc == ERR_OK)
        rc = parse_controls(l, body, &in->utm, &in->variants, field, why, whylen);
    if (rc == ERR_OK && in->permanent && (in->variants || json_object_get(body, "password")))
        rc = bad(field, in->variants ? "variants" : "password", why, whylen,
                 "cannot be used with permanent (a cached 301 would skip it)");
    if (rc == ERR_OK && in->utm && in->variants)
        rc = bad(
            field, "utm", why, whylen,
            "cannot be combined with variants (put the utm_* parameters in each variant's url)");
    if (rc == ERR_OK && links_dest(in->url, in->utm, &in->dest) != ERR_OK)
        rc = bad(field, "utm", why, whylen, "would make the destination longer than 8 KiB");
    return rc;
}

int links_parse_patch(struct links *l, json_t *body, int64_t now, struct link_patch *p,
                      const char **field, char *why, size_t whylen)
{
    memset(p, 0, sizeof(*p));
    *field = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (!known(patch_fields, key)) {
            *field = key;
            snprintf(why, whylen,
                     "unknown field (a PATCH may change url, title, note, tags, "
                     "expires_at/ttl, password, variants, utm, track)");
            return ERR_INVALID;
        }
    }
    if (!json_object_size(body))
        return bad(field, "body", why, whylen, "has nothing to change");
    int rc = ERR_OK;
    json_t *url = json_object_get(body, "url");
    if (url) {
        rc = parse_url(l, url, &p->url, &p->host, field, why, whylen);
        p->fields |= PATCH_URL;
    }
    bool exp_set = false;
    if (rc == ERR_OK)
        rc = parse_expiry(body, now, &p->expires_at, &exp_set, field, why, whylen);
    if (exp_set)
        p->fields |= PATCH_EXPIRES;
    if (rc == ERR_OK)
        rc = opt_string(body, "title", TITLE_MAX, &p->title, field, why, whylen);
    if (rc == ERR_OK)
        rc = opt_string(body, "note", NOTE_MAX, &p->note, field, why, whylen);
    if (rc == ERR_OK)
        rc = parse_tags(body, &p->tags, field, why, whylen);
    if (rc == ERR_OK)
        rc = parse_controls(l, body, &p->utm, &p->variants, field, why, whylen);
    json_t *track = json_object_get(body, "track");
    if (rc == ERR_OK && track) {
        if (!json_is_boolean(track))
            rc = bad(field, "track", why, whylen, "must be true or false");
        p->untracked = json_is_false(track);
        p->fields |= PATCH_TRACK;
    }
    p->fields |= (json_object_get(body, "title") ? PATCH_TITLE : 0) |
                 (json_object_get(body, "note") ? PATCH_NOTE : 0) |
                 (json_object_get(body, "tags") ? PATCH_TAGS : 0) |
                 (json_object_get(body, "password") ? PATCH_PASSWORD : 0) |
                 (json_object_get(body, "variants") ? PATCH_VARIANTS : 0) |
                 (json_object_get(body, "utm") ? PATCH_UTM : 0);
    return rc;
}

static void replace(char **slot, const char *v)
{
    free(*slot);
    *slot = v ? xstrdup(v) : NULL;
}

int links_apply_patch(struct link *lk, const struct link_patch *p, int64_t now, bool *url_changed)
{
    *url_changed = (p->fields & PATCH_URL) && (!lk->url || strcmp(lk->url, p->url) != 0);
    if (p->fields & PATCH_URL)
        replace(&lk->url, p->url);
    if (p->fields & PATCH_TITLE)
        replace(&lk->title, p->title);
    if (p->fields & PATCH_NOTE)
        replace(&lk->note, p->note);
    if (p->fields & PATCH_TAGS)
        replace(&lk->tags, p->tags);
    if (p->fields & PATCH_EXPIRES)
        lk->expires_at = p->expires_at;
    if (p->fields & PATCH_PASSWORD)
        replace(&lk->password, p->password);
    if (p->fields & PATCH_VARIANTS)
        replace(&lk->variants, p->variants);
    if (p->fields & PATCH_UTM)
        replace(&lk->utm, p->utm);
    if (p->fields & PATCH_TRACK)
        lk->untracked = p->untracked;
    lk->changed_at = now;
    if (lk->utm && lk->variants)
        return ERR_MISMATCH;
    return links_dest(lk->url, lk->utm, &lk->dest);
}

/* ---- creating ---- */

/* The next code of this process's block. It may be taken (by a link
 * imported or made by another version): the insert then refuses it, and
 * links_create() takes the next. Not looked up first: with a million links
 * that lookup was a real share of a create's time in the writer (bench/
 * HISTORY.md, "Up to commit 69fe67d"), and the insert walks the same index
 * anyway. */
static int next_code(struct links *l, struct store *st, char out[CODE_MAX + 1])
{
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
    return ERR_OK;
}

void links_forget_block(struct links *l) { l->next = l->end = 0; }

void links_blocklist_changed(struct links *l)
{
    int64_t stamp = -1 - atomic_fetch_add(&l->nchanges, 1);
    atomic_store(&l->nblocked, stamp);
    atomic_store(&l->ndomains, stamp);
}

static int count_host(const char *host, int64_t created_at, void *arg)
{
    (void)host;
    (void)created_at;
    (*(int64_t *)arg)++;
    return 0;
}

static int count_domain(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    (void)owner;
    return count_host(host, created_at, arg);
}

/* The size of the blocklist ('domains' false) or of the registered custom
 * domains, counted again after a change. A change heard while counting
 * (another node's, on the bus thread) may not be in this count: then it is
 * not kept, and the next create counts again. */
static int counted(struct links *l, struct store *st, bool domains, int64_t *n)
{
    _Atomic int64_t *slot = domains ? &l->ndomains : &l->nblocked;
    int64_t stamp = atomic_load(slot);
    *n = stamp;
    if (stamp >= 0)
        return ERR_OK;
    *n = 0;
    int rc = domains ? st->ops->domain_list(st, -1, count_domain, n)
                     : st->ops->block_list(st, count_host, n);
    if (rc == ERR_OK)
        atomic_compare_exchange_strong(slot, &stamp, *n);
    return rc;
}

/* The host and each parent domain (an IP address: only itself), against the
 * blocklist and the registered custom domains: a link to one of those would
 * come back to shortd. */
static int blocked(struct links *l, struct store *st, const char *host, bool *yes)
{
    *yes = false;
    int64_t nblocked, ndomains;
    int rc = counted(l, st, false, &nblocked);
    if (rc == ERR_OK)
        rc = counted(l, st, true, &ndomains);
    if (rc != ERR_OK || (nblocked == 0 && ndomains == 0))
        return rc;
    bool ip = host_is_ip(host);
    for (const char *h = host; h && *h; h = ip ? NULL : strchr(h, '.'), h = h ? h + 1 : NULL) {
        if (nblocked)
            rc = st->ops->block_has(st, h, yes);
        if (rc == ERR_OK && !*yes && ndomains) {
            int64_t owner;
            rc = st->ops->domain_get(st, h, &owner);
            *yes = rc == ERR_OK;
            rc = rc == ERR_NOTFOUND ? ERR_OK : rc;
        }
        if (rc != ERR_OK || *yes)
            return rc;
    }
    return ERR_OK;
}

int links_check_blocked(struct links *l, struct store *st, const char *url, const char *variants,
                        const char **field)
{
    const char *urls[VARIANTS_MAX + 1];
    int n = 0;
    struct variants vs = {.n = 0};
    if (url)
        urls[n++] = url;
    if (variants && variants_from_text(variants, &vs) == ERR_OK)
        for (int i = 0; i < vs.n; i++)
            urls[n++] = vs.v[i].url;
    int rc = ERR_OK;
    for (int i = 0; rc == ERR_OK && i < n; i++) {
        struct buf norm = BUF_INIT, host = BUF_INIT;
        const char *why = NULL;
        struct urlcheck_opts uo = {.self_hosts = NULL, .blocked = NULL};
        bool yes = false;
        if (urlcheck(urls[i], strlen(urls[i]), &uo, &norm, &host, &why) == ERR_OK)
            rc = blocked(l, st, host.p, &yes);
        if (rc == ERR_OK && yes) {
            *field = url && i == 0 ? "url" : "variants";
            rc = ERR_FORBIDDEN;
        }
        buf_release(&norm);
        buf_release(&host);
    }
    variants_release(&vs);
    return rc;
}

int links_edit(struct links *l, struct store *st, struct link *lk, const struct link_patch *p,
               int64_t now, int64_t by_key, const char **field)
{
    char *old_url = xstrdup(lk->url);
    bool url_changed = false;
    int rc = links_apply_patch(lk, p, now, &url_changed);
    if (rc == ERR_OK && (p->fields & (PATCH_URL | PATCH_VARIANTS)))
        rc = links_check_blocked(l, st, (p->fields & PATCH_URL) ? lk->url : NULL,
                                 (p->fields & PATCH_VARIANTS) ? lk->variants : NULL, field);
    if (rc == ERR_OK)
        rc = st->ops->link_update(st, lk);
    if (rc == ERR_OK && url_changed)
        rc = st->ops->history_add(st, lk->code, old_url, lk->url, now, by_key);
    free(old_url);
    return rc;
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
    out->untracked = in->untracked;
    out->domain = in->domain ? xstrdup(in->domain) : NULL;
    out->max_clicks = in->max_clicks;
    out->password = in->password ? xstrdup(in->password) : NULL;
    out->variants = in->variants ? xstrdup(in->variants) : NULL;
    out->utm = in->utm ? xstrdup(in->utm) : NULL;
    out->dest = in->dest ? xstrdup(in->dest) : NULL;
    do {
        if (!in->alias && (rc = next_code(l, st, out->code)) != ERR_OK)
            break;
        rc = st->ops->link_insert(st, out);
    } while (rc == ERR_EXISTS && !in->alias); /* a generated code taken: the next */
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
    case LINK_DELETED: return "deleted";
    case LINK_DISABLED: return "disabled";
    default:
        if (l->expires_at && l->expires_at <= now)
            return "expired";
        /* Its redirect answers 410 as an expired link's does. */
        return l->max_clicks > 0 && l->used >= l->max_clicks ? "exhausted" : "active";
    }
}

void link_short_url(struct buf *out, const char *base_url, const char *code, const char *domain)
{
    const char *scheme_end = strstr(base_url, "://");
    if (domain && scheme_end) {
        buf_add(out, base_url, (size_t)(scheme_end - base_url) + 3);
        buf_adds(out, domain);
    } else {
        buf_adds(out, base_url);
    }
    buf_addc(out, '/');
    buf_adds(out, code);
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
    struct apikey spec = {.admin = admin, .scopes = KEY_SCOPES_ALL};
    snprintf(spec.name, sizeof(spec.name), "%s", name);
    return links_key_make(l, st, &spec, token, id);
}

int links_key_make(struct links *l, struct store *st, const struct apikey *spec,
                   char token[KEY_TOKEN_LEN + 1], int64_t *id)
{
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = links_key_insert(l, st, spec, token, id);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK)
        st->ops->rollback(st);
    return rc;
}

int links_key_insert(struct links *l, struct store *st, const struct apikey *spec,
                     char token[KEY_TOKEN_LEN + 1], int64_t *id)
{
    struct apikey k = *spec;
    k.created_at = now_ms();
    memcpy(token, "sk_", 3);
    for (int i = 3; i < KEY_TOKEN_LEN; i++)
        token[i] = base62[randombytes_uniform(62)];
    token[KEY_TOKEN_LEN] = '\0';
    uint8_t hash[32];
    key_hash(l, token, KEY_TOKEN_LEN, hash);
    return st->ops->key_insert(st, &k, hash, id);
}

int links_authenticate(struct links *l, struct slice token, struct apikey *out)
{
    if (token.n != KEY_TOKEN_LEN)
        return ERR_NOTFOUND;
    uint8_t hash[32];
    key_hash(l, token.p, token.n, hash);
    /* Read before the store: a revocation heard while it reads wins. */
    uint64_t epoch = keycache_epoch(l->keys);
    int rc = l->st->ops->key_by_hash(l->st, hash, out);
    if (rc == ERR_OK && (out->revoked_at || out->user_disabled))
        rc = ERR_NOTFOUND;
    if (rc == ERR_OK)
        keycache_put(l->keys, hash, out, epoch, mono_ms());
    else if (rc == ERR_NOTFOUND)
        keycache_remove(l->keys, hash);
    return rc;
}

/* An unknown token is not remembered: a key made a moment ago (by the CLI,
 * or on another node) must work at once, and tokens nobody holds must not
 * push real keys out; the auth rate limit bounds how often one client asks. */
int links_authenticate_cached(struct links *l, struct slice token, struct apikey *out)
{
    if (token.n != KEY_TOKEN_LEN)
        return ERR_NOTFOUND;
    uint8_t hash[32];
    key_hash(l, token.p, token.n, hash);
    return keycache_get(l->keys, hash, mono_ms(), out) == ERR_OK ? ERR_OK : ERR_AGAIN;
}

void links_forget_keys(struct links *l) { keycache_clear(l->keys); }

void links_key_used(struct links *l, int64_t key_id) { keyuse_note(l->uses, key_id, now_ms()); }

size_t links_key_uses(struct links *l, int64_t *ids, int64_t *ats, size_t cap)
{
    return keyuse_drain(l->uses, ids, ats, cap);
}

static const struct {
    const char *name;
    unsigned bit;
} scope_names[] = {
    {"links:read", KEY_SCOPE_LINKS_READ},
    {"links:write", KEY_SCOPE_LINKS_WRITE},
    {"stats:read", KEY_SCOPE_STATS_READ},
    {"admin", KEY_SCOPE_ADMIN},
    {"ops", KEY_SCOPE_OPS},
};
#define NSCOPES (sizeof(scope_names) / sizeof(scope_names[0]))

int links_scope_parse(struct slice name, unsigned *bit)
{
    for (size_t i = 0; i < NSCOPES; i++)
        if (strlen(scope_names[i].name) == name.n &&
            memcmp(scope_names[i].name, name.p, name.n) == 0) {
            *bit = scope_names[i].bit;
            return ERR_OK;
        }
    return ERR_INVALID;
}

const char *links_scope_name(unsigned bit)
{
    for (size_t i = 0; i < NSCOPES; i++)
        if (scope_names[i].bit == bit)
            return scope_names[i].name;
    return NULL;
}

unsigned links_key_cap(const struct apikey *k)
{
    switch (k->role) {
    case KEY_ROLE(USER_ADMIN): return KEY_SCOPES_ALL | KEY_SCOPE_OPS;
    case KEY_ROLE(USER_MEMBER): return KEY_SCOPES_ALL & ~KEY_SCOPE_ADMIN;
    case KEY_ROLE(USER_VIEWER): return KEY_SCOPE_LINKS_READ | KEY_SCOPE_STATS_READ;
    default: /* a key of no user: its own admin flag, as before users; the ops
              * scope when it was made with it (`shortd key create --scopes ops`) */
        return (KEY_SCOPES_ALL | KEY_SCOPE_OPS) & ~(k->admin ? 0 : KEY_SCOPE_ADMIN);
    }
}

unsigned links_key_rights(const struct apikey *k) { return k->scopes & links_key_cap(k); }

void links_session_key(const struct links *l, uint8_t out[32])
{
    static const char label[] = "shortd session tokens";
    crypto_generichash(out, 32, (const unsigned char *)label, sizeof(label) - 1, l->key_secret,
                       sizeof(l->key_secret));
}

void links_yourls_token(const struct links *l, int64_t key_id, char out[YOURLS_TOKEN_LEN + 1])
{
    char msg[48];
    int n = snprintf(msg, sizeof(msg), "yourls-signature:%lld", (long long)key_id);
    uint8_t h[YOURLS_TOKEN_LEN / 2];
    crypto_generichash(h, sizeof(h), (const unsigned char *)msg, (size_t)n, l->yourls_key,
                       sizeof(l->yourls_key));
    sodium_bin2hex(out, YOURLS_TOKEN_LEN + 1, h, sizeof(h));
    sodium_memzero(h, sizeof(h));
}

void links_key_counts(struct links *l, uint64_t *hits, uint64_t *misses, uint64_t *entries,
                      size_t *bytes)
{
    keycache_counts(l->keys, hits, misses, entries);
    *bytes = keycache_bytes(l->keys);
}
