/* ratelimit.h - sliding-window request limits per client address and per API
 * key, in memory on one node, shared through Redis between nodes.
 *
 * The window is the two-window weighted counter: time is cut into fixed
 * windows of W seconds; a limit of L admits a request at e ms into the
 * current window when
 *     prev * (W - e) / W + cur + 1 <= L
 * (prev, cur: requests admitted in the previous and the current window), so
 * the previous window's count fades out linearly as the current one fills.
 * Error bound: exact when the previous window's requests were spread evenly
 * over it. Otherwise the estimate is off by at most the part of the previous
 * window's count that the linear fade misplaces: in the worst case (all of
 * them at its very end) a span of W seconds straddling a boundary holds up to
 * 2 L admitted requests, never more, since each fixed window admits at most
 * L; and a client whose previous requests all came early is refused a little
 * sooner than a true sliding log would refuse it. A burst inside one window
 * is counted exactly (the tests rely on that).
 *
 * Keys are never addresses: the caller's key material ("addr:1.2.3.4",
 * "key:42", "addr:1.2.3.4|code") is hashed with BLAKE2b keyed by a
 * per-install secret (meta "ratelimit_key") together with the class, and
 * only the 16-byte hash is kept, in memory or in Redis.
 *
 * Memory: a fixed table (RL_TABLE_ENTRIES) in sharded, mutex-guarded parts;
 * a slot whose windows are over is reused, and when a neighbourhood is full
 * the slot with the oldest window is evicted (so memory is bounded whatever
 * the number of clients; a flood of distinct clients can only forget counts).
 *
 * Redis (PostgreSQL mode with --cache): one Lua script per take reads and
 * increments two window keys "shortd:rl:<hash>:<window>" (expiring after
 * 2 W); every node shares the count. When Redis fails or its breaker is open
 * (rcache.h), the take is answered by this node's own table instead: limits
 * stay per node until Redis answers, and no request fails because of it. */
#ifndef SHORTD_RATELIMIT_H
#define SHORTD_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/config.h"

#define RL_TABLE_ENTRIES (1 << 16)
#define RL_SECRET_BYTES 32

struct ratelimit;
struct rcache;
struct store;
struct request;
struct client_ip;

/* What is limited, and by what key. */
enum rl_class {
    RL_CREATE_ADDR,     /* POST /api/links and /api/links/bulk, per client address */
    RL_CREATE_KEY,      /* the same, per API key */
    RL_READ_ADDR,       /* every other authenticated API request, per address */
    RL_READ_KEY,        /* the same, per API key */
    RL_AUTH,            /* API requests without a valid key (401s), per address */
    RL_PASSWORD,        /* password attempts per client address and link */
    RL_PASSWORD_CLIENT, /* password attempts per client address over all links */
    RL_NCLASSES
};

/* The state of one limit after a take, for the RateLimit-* headers. */
struct rl_info {
    int64_t limit;       /* 0: the class is off (no headers) */
    int64_t window;      /* seconds */
    int64_t remaining;   /* requests left now */
    int64_t reset;       /* seconds until the current window ends */
    int64_t retry_after; /* seconds until one more is admitted; 0 when admitted */
};

/* Lifecycle */

/* 'limits' by class (config.h's rate-* settings), 'secret' RL_SECRET_BYTES;
 * 'shared' (may be NULL) is the Redis that nodes share; it must outlive the
 * limiter. Never fails. */
struct ratelimit *ratelimit_new(const struct config_rate limits[RL_NCLASSES],
                                const uint8_t secret[RL_SECRET_BYTES], struct rcache *shared);
void ratelimit_free(struct ratelimit *rl); /* NULL is fine */
/* Replaces the limits (SIGHUP, on the main thread; one caller at a time)
 * while any thread takes: each take uses the old set or the new one whole.
 * Counts so far are kept. */
void ratelimit_set_limits(struct ratelimit *rl, const struct config_rate limits[RL_NCLASSES]);
/* The limits of a config, by class. */
void ratelimit_limits(const struct config *cfg, struct config_rate out[RL_NCLASSES]);
/* Reads the per-install secret from meta, or creates it (one wins among
 * nodes starting together). Main thread, at start-up. */
int ratelimit_secret(struct store *st, uint8_t out[RL_SECRET_BYTES]);

/* Limiting (any thread) */

bool ratelimit_enabled(const struct ratelimit *rl, enum rl_class c);
/* Counts one request of class 'c' by 'key' (n bytes of key material) at
 * 'now_ms'. True when admitted. 'info' is filled in every case (limit 0 when
 * the class is off: then always true). A NULL 'rl' admits everything. */
bool ratelimit_take(struct ratelimit *rl, enum rl_class c, const void *key, size_t n,
                    int64_t now_ms, struct rl_info *info);
/* Would a take be refused? Counts nothing and asks only this node: its own
 * counts, and refusals it has seen from Redis (until their retry time).
 * True when not known to be over the limit. */
bool ratelimit_peek(struct ratelimit *rl, enum rl_class c, const void *key, size_t n,
                    int64_t now_ms, struct rl_info *info);
/* A password attempt by client 'ip' at link 'code': takes RL_PASSWORD (per
 * client and link) and then RL_PASSWORD_CLIENT (per client); false when
 * either refuses; 'info' is the tighter of the two. */
bool ratelimit_take_password(struct ratelimit *rl, const struct client_ip *ip, const char *code,
                             size_t n, int64_t now_ms, struct rl_info *info);

/* Key material: "addr:<address>" / "key:<id>" into 'out'; returns its length. */
size_t ratelimit_key_addr(const struct client_ip *ip, char *out, size_t cap);
size_t ratelimit_key_apikey(int64_t key_id, char *out, size_t cap);

/* The window arithmetic (pure; exposed for the unit tests): whether one more
 * request is admitted with 'prev' and 'cur' counted, 'elapsed_ms' into a
 * window of 'window_ms', and what the headers say after it. */
bool ratelimit_decide(int64_t limit, int64_t window_ms, int64_t prev, int64_t cur,
                      int64_t elapsed_ms, struct rl_info *info);

/* HTTP answers */

/* Adds RateLimit-Limit, -Remaining, -Reset and -Policy (nothing when
 * info->limit is 0). */
void ratelimit_headers(struct request *r, const struct rl_info *info);
/* 429 with those headers, Retry-After and the project's JSON error body. */
int ratelimit_refuse(struct request *r, const struct rl_info *info);

#endif
