/* rcache.h - the shared Redis cache tier between the in-process cache and the
 * store: code -> what a redirect needs, under "shortd:l:<code>". Redis is
 * never the only copy: every answer other than ERR_OK or ERR_NOTFOUND means
 * "ask the store".
 *
 * Every call is bounded by the timeout given to rcache_new: connects use
 * redisConnectWithTimeout and commands socket timeouts (redisSetTimeout), so
 * a Redis that is down, stalled or unreachable costs at most that long once;
 * a circuit breaker then answers ERR_BUSY at once (back-off from 250 ms,
 * doubling to 5 s) until one call tries Redis again by itself. The process
 * must ignore SIGPIPE (serve.c does). Host names are resolved on connect, not
 * bounded by the timeout: give an address or a name in /etc/hosts. */
#ifndef SHORTD_RCACHE_H
#define SHORTD_RCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_links.h"

struct rcache;

/* url: redis://HOST:PORT[/DB], redis://:PASSWORD@HOST:PORT[/DB] (or
 * USER:PASSWORD@ for Redis ACLs; %XX escapes allowed in both); the port
 * defaults to 6379, HOST may be [IPv6]. Never blocks: connections are made on
 * first use, one per calling thread. ERR_INVALID for a bad URL. */
int rcache_new(const char *url, int timeout_ms, struct rcache **out);
void rcache_free(struct rcache *r); /* NULL is fine; no thread uses it any more */

/* Any thread. ERR_OK with 'out' filled (code, url, state, expires_at,
 * permanent, domain, untracked; the rest zero; free with link_release) on a hit; ERR_NOTFOUND on
 * a miss; ERR_BUSY when Redis is down or slow; ERR_INVALID for what cannot be a
 * code (code_is_plausible). */
int rcache_get(struct rcache *r, const char *code, size_t n, struct link *out);

/* For whoever changed the link, after its commit: replaces what is there.
 * TTL: min(24 h, time to expiry); a link that cannot be served (expired,
 * deleted, disabled) is kept 60 s, so its 410 comes from the cache and a
 * stale fill cannot replace it meanwhile. ERR_BUSY when down. */
int rcache_put(struct rcache *r, const struct link *l, int64_t now_ms);
/* For a reader that has just read the store (SET ... NX): only adds when
 * nothing is there, so it never overwrites a newer change with what it read
 * before that change (cache.h's cache_fill). */
int rcache_fill(struct rcache *r, const struct link *l, int64_t now_ms);
int rcache_del(struct rcache *r, const char *code, size_t n);
/* A put or del that answers ERR_BUSY is not lost: the code is deleted from
 * Redis by the first call that finds it answering again (up to 4096 codes
 * per outage; beyond that, logged), so no stale entry outlives an outage. */

/* Counters for /metrics, any thread: hits, misses, errors (failed calls:
 * timeouts, refused connections, error replies; not the calls the open
 * breaker turned away), and whether the breaker is open now. */
void rcache_counts(const struct rcache *r, uint64_t *hits, uint64_t *misses, uint64_t *errors,
                   bool *down);

/* Any other module's command (ratelimit.c's script), on this thread's
 * connection, under the same timeout and circuit breaker: ERR_OK with '*out'
 * (freeReplyObject it) for any reply but an error one; ERR_BUSY when Redis is
 * down, slow or the breaker is open. */
struct redisReply;
int rcache_command(struct rcache *r, int argc, const char **argv, const size_t *lens,
                   struct redisReply **out);

/* Shared with bus.c */
struct rcache_addr {
    char host[256];
    int port;
    int db;
    char user[128]; /* "" unless the URL names an ACL user */
    char pass[256]; /* "" for none; never logged */
};
struct redisContext;

int rcache_url_parse(const char *url, struct rcache_addr *out); /* ERR_INVALID */
/* A blocking connection, authenticated and on its database, made within
 * 'timeout_ms' in all; its socket timeout is left at what remains of it
 * (at least 1 ms). NULL on failure with the reason (never the password) in
 * 'why'. */
struct redisContext *rcache_connect(const struct rcache_addr *a, int timeout_ms, char *why,
                                    size_t whylen);
/* Why a context failed, in words for the log ("timed out", ...). */
void rcache_describe(const struct redisContext *c, char *why, size_t whylen);
/* The socket timeout of every later read and write; false on failure. */
bool rcache_set_timeout(struct redisContext *c, int ms);

#endif
