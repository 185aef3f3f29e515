/* ratelimit.c - sliding-window limits (the two-window weighted counter of
 * ratelimit.h) in a bounded in-memory table, or in Redis shared by nodes.
 *
 * DESIGN
 * Worker threads call ratelimit_take for API requests (and password
 * attempts). The local table is RL_TABLE_ENTRIES slots cut into NSHARDS
 * shards, each behind its own mutex, so threads rarely meet; a key's slot is
 * found by open addressing within PROBE slots of its hash. A slot holds the
 * 16-byte keyed hash, its class, the index of its current fixed window and
 * the two counts; it rolls forward when a later window begins, and is free
 * for another key once both of its windows are over. No slot is ever
 * allocated: memory is fixed when the limiter is made.
 *
 * With a shared Redis every take is one EVAL of SCRIPT on the keys of the
 * current and the previous window (both read, the current one incremented
 * when admitted, all atomically in Redis), through rcache_command: the same
 * per-thread connections, timeout and circuit breaker as the link cache.
 * A refusal from Redis is remembered in the local slot ('blocked_until'), so
 * ratelimit_peek can turn a refused client away without a round trip. When
 * Redis does not answer, the local table decides. */
#include "http/ratelimit.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/clientaddr.h"
#include "base/err.h"
#include "http/http.h"
#include "base/log.h"
#include "redirect/rcache.h"
#include "store/store.h"
#include "base/banned.h"

#define NSHARDS 64
#define SHARD_SLOTS (RL_TABLE_ENTRIES / NSHARDS)
#define PROBE 8
#define HASH_BYTES 16
#define KEY_PREFIX "shortd:rl:"

/* KEYS[1]: the current window's count, KEYS[2]: the previous one's.
 * ARGV: limit, window (ms), ms into the current window. Returns
 * {admitted, previous count, current count before this request}. */
static const char SCRIPT[] =
    "local cur = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
    "local prev = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "local l, w, e = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "if prev * (w - e) + (cur + 1) * w <= l * w then\n"
    "  redis.call('INCR', KEYS[1])\n"
    "  redis.call('PEXPIRE', KEYS[1], 2 * w + 1000)\n"
    "  return {1, prev, cur}\n"
    "end\n"
    "return {0, prev, cur}\n";

struct slot {
    uint8_t key[HASH_BYTES]; /* keyed hash of class and key material */
    int64_t window;          /* index of the current fixed window; 0: free */
    int64_t blocked_until;   /* ms: Redis refused until then; 0: no */
    uint32_t prev, cur;      /* admitted in the previous and current window */
    uint8_t cls;
};

struct shard {
    pthread_mutex_t mu;
    struct slot slots[SHARD_SLOTS];
};

/* The limits in force, one immutable set: ratelimit_set_limits (SIGHUP)
 * publishes a new one whole, so that a take reads a limit and its window from
 * the same set. A replaced set stays allocated, on the new one's 'older',
 * until ratelimit_free: a take may still be reading it, and reloads are rare. */
struct limit_set {
    struct config_rate r[RL_NCLASSES];
    struct limit_set *older;
};

struct ratelimit {
    _Atomic(struct limit_set *) limits;
    uint8_t secret[RL_SECRET_BYTES];
    struct rcache *shared; /* NULL: this node only */
    struct shard *shards;  /* NSHARDS */
};

/* ---- the window arithmetic ---- */

static int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

bool ratelimit_decide(int64_t limit, int64_t window_ms, int64_t prev, int64_t cur,
                      int64_t elapsed_ms, struct rl_info *info)
{
    int64_t L = limit, W = window_ms, e = elapsed_ms;
    bool ok = prev * (W - e) + (cur + 1) * W <= L * W;
    int64_t after = ok ? cur + 1 : cur;
    info->limit = L;
    info->window = W / 1000;
    int64_t left = L * W - prev * (W - e) - after * W;
    info->remaining = left > 0 ? left / W : 0;
    info->reset = ceil_div(W - e, 1000);
    info->retry_after = 0;
    if (ok)
        return true;
    /* The first moment one more fits: later in this window, when the
     * previous count has faded enough, or else in the next one. */
    int64_t wait = -1;
    if (cur + 1 <= L && prev > 0) {
        int64_t t = ceil_div(prev * (W - e) - (L - cur - 1) * W, prev);
        if (e + t < W)
            wait = t;
    }
    if (wait < 0)
        wait = (W - e) + (cur > 0 ? ceil_div(cur * W - (L - 1) * W, cur) : 0);
    info->retry_after = ceil_div(wait, 1000);
    if (info->retry_after < 1)
        info->retry_after = 1;
    info->reset = info->retry_after;
    return false;
}

/* ---- keys ---- */

static void hash_key(const struct ratelimit *rl, enum rl_class c, const void *key, size_t n,
                     uint8_t out[HASH_BYTES])
{
    crypto_generichash_state st;
    uint8_t cls = (uint8_t)c;
    crypto_generichash_init(&st, rl->secret, sizeof(rl->secret), HASH_BYTES);
    crypto_generichash_update(&st, &cls, 1);
    crypto_generichash_update(&st, key, n);
    crypto_generichash_final(&st, out, HASH_BYTES);
}

size_t ratelimit_key_addr(const struct client_ip *ip, char *out, size_t cap)
{
    char text[CLIENTADDR_TEXT_MAX];
    clientaddr_format(ip, text);
    int n = snprintf(out, cap, "addr:%s", text);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t ratelimit_key_apikey(int64_t key_id, char *out, size_t cap)
{
    int n = snprintf(out, cap, "key:%" PRId64, key_id);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* ---- the local table ---- */

static struct shard *shard_of(struct ratelimit *rl, const uint8_t h[HASH_BYTES], uint32_t *start)
{
    uint32_t a, b;
    memcpy(&a, h, 4);
    memcpy(&b, h + 4, 4);
    *start = b % SHARD_SLOTS;
    return &rl->shards[a % NSHARDS];
}

/* The limit of class 'c' now. */
static struct config_rate limit_of(const struct ratelimit *rl, int c)
{
    return atomic_load_explicit(&rl->limits, memory_order_acquire)->r[c];
}

static int64_t window_ms_of(const struct ratelimit *rl, int cls)
{
    return limit_of(rl, cls).window * 1000;
}

/* Moves a slot's counts to window 'w'. */
static void roll(struct slot *s, int64_t w)
{
    if (s->window == w)
        return;
    s->prev = s->window == w - 1 ? s->cur : 0;
    s->cur = 0;
    s->window = w;
}

/* The slot of 'h' in 'sh' (locked), or NULL. */
static struct slot *find(struct shard *sh, uint32_t start, const uint8_t h[HASH_BYTES])
{
    for (int i = 0; i < PROBE; i++) {
        struct slot *s = &sh->slots[(start + (uint32_t)i) % SHARD_SLOTS];
        if ((s->window || s->blocked_until) && memcmp(s->key, h, HASH_BYTES) == 0)
            return s;
    }
    return NULL;
}

/* The slot of 'h', claiming a free, finished or else the oldest one. */
static struct slot *claim(const struct ratelimit *rl, struct shard *sh, uint32_t start,
                          const uint8_t h[HASH_BYTES], enum rl_class c, int64_t now)
{
    struct slot *s = find(sh, start, h);
    if (s)
        return s;
    struct slot *victim = NULL;
    int64_t oldest = INT64_MAX;
    for (int i = 0; i < PROBE; i++) {
        struct slot *t = &sh->slots[(start + (uint32_t)i) % SHARD_SLOTS];
        int64_t w = window_ms_of(rl, t->cls);
        int64_t ends = (t->window + 2) * (w ? w : 1000); /* when both windows are over */
        if (!t->window && !t->blocked_until) {
            victim = t;
            break;
        }
        if (t->blocked_until > ends)
            ends = t->blocked_until;
        if (ends <= now) {
            victim = t;
            break;
        }
        if (ends < oldest) {
            oldest = ends;
            victim = t;
        }
    }
    memset(victim, 0, sizeof(*victim));
    memcpy(victim->key, h, HASH_BYTES);
    victim->cls = (uint8_t)c;
    return victim;
}

static bool local_take(struct ratelimit *rl, enum rl_class c, struct config_rate lim,
                       const uint8_t h[HASH_BYTES], int64_t now, struct rl_info *info)
{
    int64_t W = lim.window * 1000;
    uint32_t start;
    struct shard *sh = shard_of(rl, h, &start);
    pthread_mutex_lock(&sh->mu);
    struct slot *s = claim(rl, sh, start, h, c, now);
    roll(s, now / W);
    bool ok = ratelimit_decide(lim.limit, W, s->prev, s->cur, now % W, info);
    if (ok && s->cur < UINT32_MAX)
        s->cur++;
    pthread_mutex_unlock(&sh->mu);
    return ok;
}

/* Remembers Redis's refusal until its retry time, for ratelimit_peek. */
static void local_block(struct ratelimit *rl, enum rl_class c, const uint8_t h[HASH_BYTES],
                        int64_t now, int64_t until)
{
    uint32_t start;
    struct shard *sh = shard_of(rl, h, &start);
    pthread_mutex_lock(&sh->mu);
    struct slot *s = claim(rl, sh, start, h, c, now);
    s->blocked_until = until;
    pthread_mutex_unlock(&sh->mu);
}

/* ---- Redis ---- */

/* ERR_OK with the verdict and 'info', or ERR_BUSY: the local table decides. */
static int shared_take(struct ratelimit *rl, struct config_rate lim, const uint8_t h[HASH_BYTES],
                       int64_t now, struct rl_info *info, bool *ok)
{
    int64_t W = lim.window * 1000, w = now / W, e = now % W;
    char hex[HASH_BYTES * 2 + 1];
    sodium_bin2hex(hex, sizeof(hex), h, HASH_BYTES);
    char cur[64], prev[64], limit[24], win[24], el[24];
    snprintf(cur, sizeof(cur), KEY_PREFIX "%s:%" PRId64, hex, w);
    snprintf(prev, sizeof(prev), KEY_PREFIX "%s:%" PRId64, hex, w - 1);
    snprintf(limit, sizeof(limit), "%" PRId64, lim.limit);
    snprintf(win, sizeof(win), "%" PRId64, W);
    snprintf(el, sizeof(el), "%" PRId64, e);
    const char *argv[] = {"EVAL", SCRIPT, "2", cur, prev, limit, win, el};
    redisReply *rep = NULL;
    int rc = rcache_command(rl->shared, 8, argv, NULL, &rep);
    if (rc != ERR_OK)
        return ERR_BUSY;
    rc = ERR_BUSY;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
        rep->element[0]->type == REDIS_REPLY_INTEGER &&
        rep->element[1]->type == REDIS_REPLY_INTEGER &&
        rep->element[2]->type == REDIS_REPLY_INTEGER) {
        ratelimit_decide(lim.limit, W, rep->element[1]->integer, rep->element[2]->integer, e, info);
        *ok = rep->element[0]->integer == 1;
        if (*ok)
            info->retry_after = 0;
        else if (!info->retry_after)
            info->retry_after = 1;
        rc = ERR_OK;
    } else {
        log_at(LOG_WARN, "redis answered the rate limit script unexpectedly (type %d)", rep->type);
    }
    freeReplyObject(rep);
    return rc;
}

/* ---- the interface ---- */

bool ratelimit_enabled(const struct ratelimit *rl, enum rl_class c)
{
    return rl && c < RL_NCLASSES && limit_of(rl, c).limit > 0;
}

static void unlimited(struct rl_info *info) { memset(info, 0, sizeof(*info)); }

bool ratelimit_take(struct ratelimit *rl, enum rl_class c, const void *key, size_t n,
                    int64_t now_ms, struct rl_info *info)
{
    struct config_rate lim = {0};
    if (ratelimit_enabled(rl, c))
        lim = limit_of(rl, c); /* one set for the whole take */
    if (lim.limit <= 0) {
        unlimited(info);
        return true;
    }
    uint8_t h[HASH_BYTES];
    hash_key(rl, c, key, n, h);
    if (rl->shared) {
        bool ok = false;
        if (shared_take(rl, lim, h, now_ms, info, &ok) == ERR_OK) {
            if (!ok)
                local_block(rl, c, h, now_ms, now_ms + info->retry_after * 1000);
            return ok;
        }
    }
    return local_take(rl, c, lim, h, now_ms, info);
}

bool ratelimit_peek(struct ratelimit *rl, enum rl_class c, const void *key, size_t n,
                    int64_t now_ms, struct rl_info *info)
{
    struct config_rate lim = {0};
    if (ratelimit_enabled(rl, c))
        lim = limit_of(rl, c);
    if (lim.limit <= 0) {
        unlimited(info);
        return true;
    }
    uint8_t h[HASH_BYTES];
    hash_key(rl, c, key, n, h);
    int64_t W = lim.window * 1000, w = now_ms / W;
    uint32_t start;
    struct shard *sh = shard_of(rl, h, &start);
    pthread_mutex_lock(&sh->mu);
    struct slot *s = find(sh, start, h);
    struct slot copy = s ? *s : (struct slot){0};
    pthread_mutex_unlock(&sh->mu);
    roll(&copy, w);
    bool ok = ratelimit_decide(lim.limit, W, copy.prev, copy.cur, now_ms % W, info);
    if (ok) { /* a peek counts nothing: say what is left before this request */
        info->remaining = info->remaining + 1 > info->limit ? info->limit : info->remaining + 1;
    }
    if (ok && copy.blocked_until > now_ms) {
        ok = false;
        info->remaining = 0;
        info->retry_after = ceil_div(copy.blocked_until - now_ms, 1000);
        info->reset = info->retry_after;
    }
    return ok;
}

bool ratelimit_take_password(struct ratelimit *rl, const struct client_ip *ip, const char *code,
                             size_t n, int64_t now_ms, struct rl_info *info)
{
    char key[CLIENTADDR_TEXT_MAX + 80];
    size_t kn = ratelimit_key_addr(ip, key, sizeof(key));
    struct rl_info per_client;
    bool ok = ratelimit_take(rl, RL_PASSWORD_CLIENT, key, kn, now_ms, &per_client);
    if (kn + 1 + n < sizeof(key)) {
        key[kn] = '|';
        memcpy(key + kn + 1, code, n);
        kn += 1 + n;
    }
    if (ok) {
        ok = ratelimit_take(rl, RL_PASSWORD, key, kn, now_ms, info);
    } else {
        ratelimit_peek(rl, RL_PASSWORD, key, kn, now_ms, info);
    }
    /* The tighter of the two speaks. */
    if (!ratelimit_enabled(rl, RL_PASSWORD) ||
        (per_client.limit && (!ok ? per_client.retry_after > info->retry_after
                                  : per_client.remaining < info->remaining)))
        *info = per_client;
    return ok;
}

void ratelimit_limits(const struct config *cfg, struct config_rate out[RL_NCLASSES])
{
    out[RL_CREATE_ADDR] = cfg->rate_create_addr;
    out[RL_CREATE_KEY] = cfg->rate_create_key;
    out[RL_READ_ADDR] = cfg->rate_read_addr;
    out[RL_READ_KEY] = cfg->rate_read_key;
    out[RL_AUTH] = cfg->rate_auth;
    out[RL_PASSWORD] = cfg->rate_password;
    out[RL_PASSWORD_CLIENT] = cfg->rate_password_client;
}

int ratelimit_secret(struct store *st, uint8_t out[RL_SECRET_BYTES])
{
    static const char name[] = "ratelimit_key";
    struct buf v = BUF_INIT;
    int rc = st->ops->meta_get(st, name, &v);
    if (rc == ERR_NOTFOUND) {
        uint8_t fresh[RL_SECRET_BYTES];
        randombytes_buf(fresh, sizeof(fresh));
        rc = st->ops->meta_add(st, name, fresh, sizeof(fresh)); /* one node wins */
        sodium_memzero(fresh, sizeof(fresh));
        if (rc == ERR_OK || rc == ERR_EXISTS)
            rc = st->ops->meta_get(st, name, &v);
    }
    if (rc == ERR_OK && v.len != RL_SECRET_BYTES)
        rc = log_fail(ERR_STORAGE, "secret '%s' has the wrong size", name);
    if (rc == ERR_OK)
        memcpy(out, v.p, RL_SECRET_BYTES);
    if (v.p)
        sodium_memzero(v.p, v.len);
    buf_release(&v);
    return rc;
}

struct ratelimit *ratelimit_new(const struct config_rate limits[RL_NCLASSES],
                                const uint8_t secret[RL_SECRET_BYTES], struct rcache *shared)
{
    struct ratelimit *rl = calloc(1, sizeof(*rl));
    if (!rl)
        abort();
    atomic_init(&rl->limits, NULL);
    ratelimit_set_limits(rl, limits);
    memcpy(rl->secret, secret, RL_SECRET_BYTES);
    rl->shared = shared;
    rl->shards = calloc(NSHARDS, sizeof(*rl->shards));
    if (!rl->shards)
        abort();
    for (int i = 0; i < NSHARDS; i++)
        pthread_mutex_init(&rl->shards[i].mu, NULL);
    return rl;
}

void ratelimit_set_limits(struct ratelimit *rl, const struct config_rate limits[RL_NCLASSES])
{
    struct limit_set *l = calloc(1, sizeof(*l));
    if (!l)
        abort();
    memcpy(l->r, limits, sizeof(l->r));
    for (int i = 0; i < RL_NCLASSES; i++)
        if (l->r[i].window < 1)
            l->r[i].window = 60;
    l->older = atomic_load(&rl->limits);
    atomic_store_explicit(&rl->limits, l, memory_order_release);
}

void ratelimit_free(struct ratelimit *rl)
{
    if (!rl)
        return;
    for (struct limit_set *l = atomic_load(&rl->limits), *older; l; l = older) {
        older = l->older;
        free(l);
    }
    for (int i = 0; i < NSHARDS; i++)
        pthread_mutex_destroy(&rl->shards[i].mu);
    free(rl->shards);
    sodium_memzero(rl->secret, sizeof(rl->secret));
    free(rl);
}

/* ---- HTTP answers ---- */

void ratelimit_headers(struct request *r, const struct rl_info *info)
{
    if (!info->limit)
        return;
    buf_printf(&r->resp_headers,
               "RateLimit-Limit: %" PRId64 "\r\nRateLimit-Remaining: %" PRId64
               "\r\nRateLimit-Reset: %" PRId64 "\r\nRateLimit-Policy: %" PRId64 ";w=%" PRId64
               "\r\n",
               info->limit, info->remaining, info->reset, info->limit, info->window);
}

int ratelimit_refuse(struct request *r, const struct rl_info *info)
{
    ratelimit_headers(r, info);
    int64_t after = info->retry_after > 0 ? info->retry_after : 1;
    buf_printf(&r->resp_headers, "Retry-After: %" PRId64 "\r\n", after);
    return http_error(r, 429, "rate_limited", NULL,
                      "too many requests: at most %" PRId64 " per %" PRId64 " s; retry in %" PRId64
                      " s",
                      info->limit, info->window, after);
}
