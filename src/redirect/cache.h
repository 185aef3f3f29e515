/* cache.h - short code -> what a redirect needs, shared by all event-loop
 * threads. An open-addressed hash table read under RCU (liburcu's memb
 * flavour): readers take no lock and write no shared memory; writers publish
 * immutable entries under a mutex and free replaced ones after a grace
 * period. Unknown codes are cached as misses for a short time. Threads that
 * call cache_get must be registered. */
#ifndef SHORTD_CACHE_H
#define SHORTD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_links.h"

struct cache;

/* What the redirect reads: valid only inside cache_read_lock/unlock. */
struct cache_view {
    bool miss;       /* a remembered unknown code */
    const char *url; /* NULL for a miss or a link without data (deleted, swept) */
    uint32_t url_len;
    int64_t expires_at; /* 0: never */
    uint8_t state;      /* enum link_state */
    bool permanent;
    bool controlled;    /* password, variants or max_clicks: ask the store */
    bool untracked;     /* track: false: record no click */
    const char *domain; /* the link's custom short host, NULL for none */
    uint8_t domain_len;
};

struct cache *cache_new(size_t max_entries, int64_t miss_ttl_ms);
void cache_free(struct cache *c); /* NULL is fine; no readers left */

/* Every thread that touches the cache */
void cache_thread_register(void);
void cache_thread_unregister(void);

/* Reading: between lock and unlock, views stay valid. */
void cache_read_lock(void);
void cache_read_unlock(void);
/* true when the code is cached (a link, or a remembered miss). */
bool cache_get(struct cache *c, const char *code, size_t n, int64_t now_ms, struct cache_view *out);

/* Many lookups at once, their memory loads overlapped: for every code
 * cache_hash, then cache_prefetch(..., 0) (starts loading its slots), then
 * for every code cache_prefetch(..., 1) (starts loading the entries those
 * slots point to), then cache_get_hashed, all inside the read lock.
 * Prefetching is a hint: leaving it out changes nothing but the time. */
uint64_t cache_hash(const struct cache *c, const char *code, size_t n);
void cache_prefetch(const struct cache *c, uint64_t hash, int step);
bool cache_get_hashed(struct cache *c, const char *code, size_t n, uint64_t hash, int64_t now_ms,
                      struct cache_view *out);

/* Writing (any registered thread). cache_put is for whoever changed the link
 * (after its commit): it replaces whatever is there. cache_fill and
 * cache_fill_miss are for a reader that has just read the store: they only
 * add when nothing valid is cached, so a reader can never overwrite a newer
 * change with what it read before that change. */
void cache_put(struct cache *c, const struct link *l);
void cache_fill(struct cache *c, const struct link *l, int64_t now_ms);
void cache_fill_miss(struct cache *c, const char *code, size_t n, int64_t now_ms);
void cache_remove(struct cache *c, const char *code, size_t n);
void cache_clear(struct cache *c);
/* Housekeeping, now and then, from a registered thread that is not an event
 * loop: grows a large table (a small one grows as it fills), and frees what
 * left the table after a grace period (it waits for readers). */
void cache_reclaim(struct cache *c);

/* Counters for /metrics: hits and misses of cache_get, every thread summed. */
uint64_t cache_entries(const struct cache *c);
/* The bytes those entries take: each is 4 bytes plus its code and URL (8
 * more with an expiry time, 1 + the host with a custom domain), rounded up
 * to 8. The table's slots (8 bytes each, a quarter to five eighths of them
 * empty) are not included. */
uint64_t cache_entry_bytes(const struct cache *c);
void cache_counts(const struct cache *c, uint64_t *hits, uint64_t *misses);

#endif
