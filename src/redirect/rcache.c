/* rcache.c - the shared Redis cache tier: what a redirect needs, under
 * "shortd:l:<code>", as the text "1|STATE|PERMANENT|EXPIRES_AT|URL" (version,
 * enum link_state, 0 or 1, ms since the epoch or 0, and the destination, empty
 * when the link has none). Nothing else of a link is ever stored.
 *
 * DESIGN
 * hiredis's synchronous API, one blocking connection per calling thread
 * (found through a pthread key, made on first use, kept until rcache_free).
 * Every call is bounded by 'timeout_ms': a connect by redisConnectWithTimeout
 * (then AUTH and SELECT within what remains), each command by the socket's
 * SO_RCVTIMEO/SO_SNDTIMEO (redisSetTimeout); on a fresh connection the first
 * command gets only what the connect left, so a call never costs more than
 * 'timeout_ms' plus scheduling. A failed call (timeout, refused, closed, an
 * error reply) frees that thread's connection, since hiredis leaves a context
 * unusable after an I/O error, and opens the circuit breaker.
 * The breaker is three atomics shared by every thread: 'open_until' (0:
 * closed; else a CLOCK_MONOTONIC time before which every call answers
 * ERR_BUSY without touching the network), 'backoff' (250 ms on the first
 * failure, doubled by each failed probe up to 5 s) and 'epoch' (bumped at
 * every opening). When 'open_until' has passed, the one thread that wins a
 * compare-and-swap on it becomes the probe and tries Redis; the others keep
 * answering ERR_BUSY until the probe closes the breaker or opens it again.
 * A connection remembers the epoch it was made in and is dropped when that
 * has changed, so after an outage every thread reconnects (lazily, on its
 * next call) instead of failing once more on a socket from before it. The
 * opening is logged once, the closing once; failed probes only at debug.
 * A put or del that fails (or is turned away) leaves Redis holding what may
 * now be stale, for up to 24 h: its code is remembered (up to 4096) and the
 * first call that finds Redis answering again deletes them all in one DEL
 * before its own command, so the next read refills them from the store. */
#include "redirect/rcache.h"

#include <ctype.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "links/codes.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "base/banned.h"

#define KEY_PREFIX "shortd:l:"
#define KEY_PREFIX_LEN (sizeof(KEY_PREFIX) - 1)
#define TTL_MAX_MS (24 * 3600 * 1000LL) /* the longest any entry lives */
#define TTL_GONE_MS 60000LL             /* a link that answers 410 */
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 5000
#define PENDING_MAX 4096 /* codes whose put or del did not reach Redis */

/* One thread's connection. */
struct tconn {
    redisContext *ctx; /* NULL until first use and after a failure */
    uint64_t epoch;    /* the breaker epoch 'ctx' was made in */
    int timeout_set;   /* the socket timeout now on 'ctx', ms */
    struct tconn *next;
};

struct rcache {
    struct rcache_addr addr;
    char where[300]; /* "host:port" for messages */
    int timeout_ms;
    pthread_key_t key;          /* this thread's struct tconn */
    pthread_mutex_t mu;         /* guards 'conns' */
    struct tconn *conns;        /* every thread's, freed by rcache_free */
    _Atomic int64_t open_until; /* mono ms; 0: closed */
    _Atomic int64_t backoff;    /* ms of the current opening */
    _Atomic uint64_t epoch;     /* openings so far */
    _Atomic uint64_t hits, misses, errors;
    pthread_mutex_t pending_mu;    /* guards 'pending' */
    char (*pending)[CODE_MAX + 1]; /* PENDING_MAX codes to delete once Redis answers */
    _Atomic int npending;
    bool pending_lost; /* the overflow of this outage is logged */
};

/* ---- URLs and connections (shared with bus.c) ---- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes s[0..n) into out; false when it does not fit or is bad. */
static bool decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            if (i + 2 >= n)
                return false;
            int hi = hexval((unsigned char)s[i + 1]);
            int lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            ch = hi * 16 + lo;
            i += 2;
        }
        if (ch == 0 || o + 1 >= cap)
            return false;
        out[o++] = (char)ch;
    }
    out[o] = '\0';
    return true;
}

/* A decimal number in [lo, hi] that is all of s[0..n). */
static bool number(const char *s, size_t n, long lo, long hi, int *out)
{
    if (n == 0 || n > 9)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

int rcache_url_parse(const char *url, struct rcache_addr *out)
{
    memset(out, 0, sizeof(*out));
    out->port = 6379;
    if (!url || strncmp(url, "redis://", 8) != 0)
        return ERR_INVALID;
    const char *p = url + 8;
    /* The last '@' ends the user information: a password may hold an '@'. */
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            if (!decode(p, (size_t)(colon - p), out->user, sizeof(out->user)) ||
                !decode(colon + 1, (size_t)(at - colon - 1), out->pass, sizeof(out->pass)))
                return ERR_INVALID;
        } else if (!decode(p, (size_t)(at - p), out->pass, sizeof(out->pass))) {
            return ERR_INVALID; /* redis-cli reads "redis://SECRET@host" so too */
        }
        if (!*out->pass)
            return ERR_INVALID;
        p = at + 1;
    }
    const char *end = p + strcspn(p, "/?#");
    const char *host = p, *host_end;
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(end - host));
        if (!host_end)
            return ERR_INVALID;
        p = host_end + 1;
    } else {
        host_end = p + strcspn(p, ":/?#");
        p = host_end;
    }
    size_t hn = (size_t)(host_end - host);
    if (hn == 0 || hn >= sizeof(out->host))
        return ERR_INVALID;
    for (size_t i = 0; i < hn; i++)
        if (!isalnum((unsigned char)host[i]) && !strchr(".-_:", host[i]))
            return ERR_INVALID;
    memcpy(out->host, host, hn);
    out->host[hn] = '\0';
    if (*p == ':') {
        if (!number(p + 1, (size_t)(end - p - 1), 1, 65535, &out->port))
            return ERR_INVALID;
        p = end;
    }
    if (p != end)
        return ERR_INVALID;
    if (*p == '/') {
        p++;
        size_t dn = strlen(p);
        if (dn && !number(p, dn, 0, 1 << 20, &out->db))
            return ERR_INVALID;
        p += dn;
    }
    return *p ? ERR_INVALID : ERR_OK;
}

void rcache_describe(const struct redisContext *c, char *why, size_t n)
{
    if (c->err == REDIS_ERR_IO &&
        (strstr(c->errstr, "temporarily unavailable") || strstr(c->errstr, "timed out")))
        snprintf(why, n, "timed out");
    else if (c->err == REDIS_ERR_EOF)
        snprintf(why, n, "connection closed");
    else
        snprintf(why, n, "%s", c->errstr[0] ? c->errstr : "i/o error");
}

bool rcache_set_timeout(struct redisContext *c, int ms)
{
    if (ms < 1)
        ms = 1; /* 0 would mean no timeout at all */
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return redisSetTimeout(c, tv) == REDIS_OK;
}

/* Runs one connection-setup command; false (with 'why') unless it says OK. */
static bool setup_cmd(redisContext *c, int argc, const char **argv, const char *what, char *why,
                      size_t whylen)
{
    redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
    if (!rep) {
        rcache_describe(c, why, whylen);
        return false;
    }
    bool ok = rep->type == REDIS_REPLY_STATUS && !strcmp(rep->str, "OK");
    if (!ok)
        snprintf(why, whylen, "%s refused: %.*s", what,
                 (int)strcspn(rep->str ? rep->str : "", "\r\n"),
                 rep->str ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    return ok;
}

/* Sets what remains until 'deadline' as the socket timeout; false (with
 * 'why') when nothing remains. */
static bool remaining(redisContext *c, int64_t deadline, char *why, size_t whylen)
{
    int64_t left = deadline - mono_ms();
    if (left < 1) {
        snprintf(why, whylen, "timed out");
        return false;
    }
    if (!rcache_set_timeout(c, (int)left)) {
        rcache_describe(c, why, whylen);
        return false;
    }
    return true;
}

struct redisContext *rcache_connect(const struct rcache_addr *a, int timeout_ms, char *why,
                                    size_t whylen)
{
    int64_t deadline = mono_ms() + timeout_ms;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(a->host, a->port, tv);
    if (!c)
        abort();
    if (c->err) {
        rcache_describe(c, why, whylen);
        redisFree(c);
        return NULL;
    }
    bool ok = true;
    if (*a->pass) {
        const char *user[3] = {"AUTH", a->user, a->pass}, *plain[2] = {"AUTH", a->pass};
        ok = remaining(c, deadline, why, whylen) &&
             (*a->user ? setup_cmd(c, 3, user, "AUTH", why, whylen)
                       : setup_cmd(c, 2, plain, "AUTH", why, whylen));
    }
    if (ok && a->db) {
        char db[16];
        snprintf(db, sizeof(db), "%d", a->db);
        ok = remaining(c, deadline, why, whylen) &&
             setup_cmd(c, 2, (const char *[]){"SELECT", db}, "SELECT", why, whylen);
    }
    if (ok)
        ok = remaining(c, deadline, why, whylen);
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* ---- the breaker ---- */

/* ERR_OK when this call may go to Redis ('*probe' when it is the one that
 * tries again after a back-off), ERR_BUSY while the breaker is open. */
static int breaker_enter(struct rcache *r, int64_t now, bool *probe)
{
    *probe = false;
    int64_t until = atomic_load_explicit(&r->open_until, memory_order_acquire);
    if (until == 0)
        return ERR_OK;
    if (now < until)
        return ERR_BUSY;
    /* Half open: one thread probes; the rest wait for its verdict, which
     * comes within one timeout (twice it, and some, is the safe window). */
    int64_t window = now + 2LL * r->timeout_ms + 100;
    if (!atomic_compare_exchange_strong(&r->open_until, &until, window))
        return ERR_BUSY;
    *probe = true;
    return ERR_OK;
}

static void breaker_success(struct rcache *r, bool probe)
{
    if (!probe)
        return;
    atomic_store(&r->backoff, BACKOFF_MIN_MS);
    atomic_store_explicit(&r->open_until, 0, memory_order_release);
    log_at(LOG_INFO, "redis at '%s' is back", r->where);
}

static void breaker_failure(struct rcache *r, bool probe, const char *why)
{
    atomic_fetch_add_explicit(&r->errors, 1, memory_order_relaxed);
    int64_t now = mono_ms();
    if (probe) {
        int64_t b = atomic_load(&r->backoff) * 2;
        if (b > BACKOFF_MAX_MS)
            b = BACKOFF_MAX_MS;
        atomic_store(&r->backoff, b);
        atomic_fetch_add(&r->epoch, 1);
        atomic_store_explicit(&r->open_until, now + b, memory_order_release);
        log_at(LOG_DEBUG, "redis at '%s' still failing: %s (next try in %lld ms)", r->where, why,
               (long long)b);
        return;
    }
    int64_t closed = 0; /* the backoff is BACKOFF_MIN_MS since it closed */
    if (!atomic_compare_exchange_strong(&r->open_until, &closed, now + BACKOFF_MIN_MS))
        return; /* another thread opened it already */
    atomic_fetch_add(&r->epoch, 1);
    log_at(LOG_WARN, "redis at '%s' failed: %s; redirects use the store until it answers again",
           r->where, why);
}

/* ---- calls ---- */

static struct tconn *tconn_get(struct rcache *r)
{
    struct tconn *t = pthread_getspecific(r->key);
    if (t)
        return t;
    t = calloc(1, sizeof(*t));
    if (!t)
        abort();
    pthread_mutex_lock(&r->mu);
    t->next = r->conns;
    r->conns = t;
    pthread_mutex_unlock(&r->mu);
    pthread_setspecific(r->key, t);
    return t;
}

static void tconn_drop(struct tconn *t)
{
    if (t->ctx)
        redisFree(t->ctx);
    t->ctx = NULL;
}

/* Remembers a code whose put or del failed: what Redis holds for it may be
 * stale, so it is deleted before anything else once Redis answers. */
static void pending_add(struct rcache *r, const char *code)
{
    bool lost = false;
    pthread_mutex_lock(&r->pending_mu);
    int n = atomic_load_explicit(&r->npending, memory_order_relaxed);
    if (n < PENDING_MAX) {
        snprintf(r->pending[n], sizeof(r->pending[n]), "%s", code);
        atomic_store_explicit(&r->npending, n + 1, memory_order_relaxed);
    } else {
        lost = !r->pending_lost;
        r->pending_lost = true;
    }
    pthread_mutex_unlock(&r->pending_mu);
    if (lost)
        log_at(LOG_ERROR,
               "redis at '%s' missed more than %d changes: their entries may be "
               "stale until they expire (24 h at most)",
               r->where, PENDING_MAX);
}

/* Deletes the pending codes, in one DEL, on a working connection. */
static bool replay(struct rcache *r, struct tconn *t, char *why, size_t whylen)
{
    if (atomic_load_explicit(&r->npending, memory_order_relaxed) == 0)
        return true;
    pthread_mutex_lock(&r->pending_mu);
    int n = atomic_load_explicit(&r->npending, memory_order_relaxed);
    const char **argv = calloc((size_t)n + 1, sizeof(*argv));
    char(*keys)[KEY_PREFIX_LEN + CODE_MAX + 1] = calloc((size_t)n + 1, sizeof(*keys));
    if (!argv || !keys)
        abort();
    argv[0] = "DEL";
    for (int i = 0; i < n; i++) {
        snprintf(keys[i], sizeof(keys[i]), KEY_PREFIX "%s", r->pending[i]);
        argv[i + 1] = keys[i];
    }
    /* Under the lock: a put that fails meanwhile waits, so it is not lost
     * between this DEL and the emptying of the list. */
    redisReply *rep = n ? redisCommandArgv(t->ctx, n + 1, argv, NULL) : NULL;
    bool ok = !n || (rep && rep->type == REDIS_REPLY_INTEGER);
    if (ok) {
        atomic_store_explicit(&r->npending, 0, memory_order_relaxed);
        r->pending_lost = false;
    } else if (rep) {
        snprintf(why, whylen, "error reply: %.*s", rep->str ? (int)strcspn(rep->str, "\r\n") : 0,
                 rep->str ? rep->str : "");
    } else {
        rcache_describe(t->ctx, why, whylen);
    }
    pthread_mutex_unlock(&r->pending_mu);
    freeReplyObject(rep);
    free(keys);
    free(argv);
    return ok;
}

/* Runs one command on this thread's connection within the timeout. ERR_OK
 * with '*out' (freeReplyObject it) for any reply but an error one; ERR_BUSY
 * when the breaker is open or the call failed (which opens it). */
static int call(struct rcache *r, int argc, const char **argv, const size_t *lens, redisReply **out)
{
    *out = NULL;
    bool probe = false;
    if (breaker_enter(r, mono_ms(), &probe) != ERR_OK)
        return ERR_BUSY;
    struct tconn *t = tconn_get(r);
    uint64_t epoch = atomic_load(&r->epoch);
    if (t->ctx && t->epoch != epoch)
        tconn_drop(t); /* made before the last failure: assume it is dead */
    char why[160];
    if (!t->ctx) {
        t->ctx = rcache_connect(&r->addr, r->timeout_ms, why, sizeof(why));
        if (!t->ctx)
            goto fail;
        t->epoch = epoch;
        t->timeout_set = 0; /* what the connect left: this command only */
    } else if (t->timeout_set != r->timeout_ms) {
        if (!rcache_set_timeout(t->ctx, r->timeout_ms)) {
            rcache_describe(t->ctx, why, sizeof(why));
            goto fail;
        }
        t->timeout_set = r->timeout_ms;
    }
    if (!replay(r, t, why, sizeof(why)))
        goto fail;
    redisReply *rep = redisCommandArgv(t->ctx, argc, argv, lens);
    if (!rep) {
        rcache_describe(t->ctx, why, sizeof(why));
        goto fail;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(why, sizeof(why), "error reply: %.*s", (int)strcspn(rep->str, "\r\n"), rep->str);
        freeReplyObject(rep);
        goto fail;
    }
    breaker_success(r, probe);
    *out = rep;
    return ERR_OK;

fail:
    tconn_drop(t);
    breaker_failure(r, probe, why);
    return ERR_BUSY;
}

int rcache_command(struct rcache *r, int argc, const char **argv, const size_t *lens,
                   redisReply **out)
{
    return call(r, argc, argv, lens, out);
}

static void make_key(char key[KEY_PREFIX_LEN + CODE_MAX + 1], const char *code, size_t n)
{
    memcpy(key, KEY_PREFIX, KEY_PREFIX_LEN);
    memcpy(key + KEY_PREFIX_LEN, code, n);
    key[KEY_PREFIX_LEN + n] = '\0';
}

/* Reads a value written by set(); false when it is not one. Version 1 is
 * "1|state|permanent|expires_at|url"; version 2, for a link with a custom
 * domain, "2|state|permanent|expires_at|domain|url". 'permanent' is a digit
 * of bits: 1 permanent, 2 untracked (track: false); a node that knows only
 * 0 and 1 takes 2 and 3 for a miss, and its fill (NX) leaves them alone. */
static bool decode_value(const char *v, size_t n, struct link *out)
{
    const char *end = v + n;
    if (n < 8 || (v[0] != '1' && v[0] != '2') || v[1] != '|')
        return false;
    bool has_domain = v[0] == '2';
    const char *p = v + 2;
    if (p + 4 > end || p[0] < '0' || p[0] > '2' || p[1] != '|' || p[2] < '0' || p[2] > '3' ||
        p[3] != '|')
        return false;
    out->state = p[0] - '0';
    out->permanent = (p[2] - '0') & 1;
    out->untracked = (p[2] - '0') & 2;
    p += 4;
    int64_t exp = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 18)
        exp = exp * 10 + (*p++ - '0');
    if (p == digits || p >= end || *p != '|')
        return false;
    p++;
    out->expires_at = exp;
    if (has_domain) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar || bar == p)
            return false;
        out->domain = slice_dup((struct slice){p, (size_t)(bar - p)});
        p = bar + 1;
    }
    out->url = p < end ? slice_dup((struct slice){p, (size_t)(end - p)}) : NULL;
    return true;
}

int rcache_get(struct rcache *r, const char *code, size_t n, struct link *out)
{
    memset(out, 0, sizeof(*out));
    if (!code_is_plausible(code, n))
        return ERR_INVALID;
    char key[KEY_PREFIX_LEN + CODE_MAX + 1];
    make_key(key, code, n);
    redisReply *rep = NULL;
    int rc = call(r, 2, (const char *[]){"GET", key}, NULL, &rep);
    if (rc != ERR_OK)
        return rc;
    if (rep->type == REDIS_REPLY_STRING && decode_value(rep->str, rep->len, out)) {
        memcpy(out->code, code, n);
        out->code[n] = '\0';
        atomic_fetch_add_explicit(&r->hits, 1, memory_order_relaxed);
        rc = ERR_OK;
    } else {
        /* Absent, or not ours (an older format): a miss, rewritten after the store. */
        if (rep->type != REDIS_REPLY_NIL)
            log_at(LOG_DEBUG, "redis value of '%s' is not understood", key);
        atomic_fetch_add_explicit(&r->misses, 1, memory_order_relaxed);
        rc = ERR_NOTFOUND;
    }
    freeReplyObject(rep);
    return rc;
}

static int set(struct rcache *r, const struct link *l, int64_t now, bool only_new)
{
    size_t n = strlen(l->code);
    if (!code_is_plausible(l->code, n))
        return ERR_INVALID;
    char key[KEY_PREFIX_LEN + CODE_MAX + 1];
    make_key(key, l->code, n);
    bool gone = l->state != LINK_ACTIVE || !l->url || (l->expires_at && l->expires_at <= now);
    int64_t ttl = TTL_GONE_MS;
    if (!gone) {
        ttl = TTL_MAX_MS;
        if (l->expires_at && l->expires_at - now < ttl)
            ttl = l->expires_at - now;
    }
    /* A link with controls (password, variants, click limit) is read from
     * the store by every node: what is here must not answer for it. */
    if (link_controlled(l))
        return only_new ? ERR_OK : rcache_del(r, l->code, n);
    struct buf v = BUF_INIT;
    buf_printf(&v, "%c|%d|%d|%lld|", l->domain ? '2' : '1', l->state,
               (l->permanent ? 1 : 0) | (l->untracked ? 2 : 0), (long long)l->expires_at);
    if (l->domain)
        buf_printf(&v, "%s|", l->domain);
    if (l->url)
        buf_adds(&v, l->dest ? l->dest : l->url);
    char ttls[24];
    snprintf(ttls, sizeof(ttls), "%lld", (long long)ttl);
    const char *argv[6] = {"SET", key, buf_cstr(&v), "PX", ttls, "NX"};
    size_t lens[6] = {3, strlen(key), v.len, 2, strlen(ttls), 2};
    redisReply *rep = NULL;
    int rc = call(r, only_new ? 6 : 5, argv, lens, &rep);
    buf_release(&v);
    freeReplyObject(rep);
    if (rc == ERR_BUSY && !only_new)
        pending_add(r, l->code); /* a fill that fails leaves nothing stale */
    return rc;
}

int rcache_put(struct rcache *r, const struct link *l, int64_t now_ms)
{
    return set(r, l, now_ms, false);
}

int rcache_fill(struct rcache *r, const struct link *l, int64_t now_ms)
{
    return set(r, l, now_ms, true);
}

int rcache_del(struct rcache *r, const char *code, size_t n)
{
    if (!code_is_plausible(code, n))
        return ERR_INVALID;
    char key[KEY_PREFIX_LEN + CODE_MAX + 1];
    make_key(key, code, n);
    redisReply *rep = NULL;
    int rc = call(r, 2, (const char *[]){"DEL", key}, NULL, &rep);
    freeReplyObject(rep);
    if (rc == ERR_BUSY)
        pending_add(r, key + KEY_PREFIX_LEN);
    return rc;
}

/* ---- lifecycle ---- */

int rcache_new(const char *url, int timeout_ms, struct rcache **out)
{
    *out = NULL;
    if (timeout_ms < 1)
        return ERR_INVALID;
    struct rcache *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    if (rcache_url_parse(url, &r->addr) != ERR_OK) {
        free(r);
        return ERR_INVALID;
    }
    bool v6 = strchr(r->addr.host, ':') != NULL;
    snprintf(r->where, sizeof(r->where), "%s%s%s:%d", v6 ? "[" : "", r->addr.host, v6 ? "]" : "",
             r->addr.port);
    r->timeout_ms = timeout_ms;
    atomic_init(&r->open_until, 0);
    atomic_init(&r->backoff, BACKOFF_MIN_MS);
    atomic_init(&r->epoch, 0);
    atomic_init(&r->hits, 0);
    atomic_init(&r->misses, 0);
    atomic_init(&r->errors, 0);
    if (pthread_key_create(&r->key, NULL) != 0)
        abort();
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->pending_mu, NULL);
    r->pending = calloc(PENDING_MAX, sizeof(*r->pending));
    if (!r->pending)
        abort();
    atomic_init(&r->npending, 0);
    *out = r;
    return ERR_OK;
}

void rcache_free(struct rcache *r)
{
    if (!r)
        return;
    for (struct tconn *t = r->conns, *next; t; t = next) {
        next = t->next;
        tconn_drop(t);
        free(t);
    }
    pthread_key_delete(r->key);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->pending_mu);
    free(r->pending);
    explicit_bzero(r->addr.pass, sizeof(r->addr.pass));
    free(r);
}

void rcache_counts(const struct rcache *r, uint64_t *hits, uint64_t *misses, uint64_t *errors,
                   bool *down)
{
    *hits = atomic_load_explicit(&r->hits, memory_order_relaxed);
    *misses = atomic_load_explicit(&r->misses, memory_order_relaxed);
    *errors = atomic_load_explicit(&r->errors, memory_order_relaxed);
    *down = atomic_load_explicit(&r->open_until, memory_order_relaxed) != 0;
}
