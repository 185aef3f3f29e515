/* keycache.h - the API keys this node has seen valid in the store, by the
 * keyed hash of their token (never the token), so that most requests are
 * authenticated without a store read. Bounded: a fixed table, allocated
 * once, where a new key takes the place of the oldest in its bucket. Entries
 * live 'ttl_ms' at most. Any thread: sharded mutexes. */
#ifndef SHORTD_KEYCACHE_H
#define SHORTD_KEYCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_keys.h"

#define KEYCACHE_HASH_BYTES 32

struct keycache;

/* Holds up to 'max_entries' (rounded up to a whole number of buckets) keys,
 * each for 'ttl_ms' after it was put. */
struct keycache *keycache_new(size_t max_entries, int64_t ttl_ms);
void keycache_free(struct keycache *c); /* NULL is fine */

/* Copies the key held for 'hash' into 'out': ERR_OK, or ERR_NOTFOUND when
 * none is (or it was put 'ttl_ms' or more before 'now', mono ms). */
int keycache_get(struct keycache *c, const uint8_t hash[KEYCACHE_HASH_BYTES], int64_t now,
                 struct apikey *out);

/* Read before the store read whose answer is then put: a key read before
 * keycache_clear is not held after it (its revocation may be what cleared). */
uint64_t keycache_epoch(struct keycache *c);
/* Holds 'k' for 'hash' as of 'now' (mono ms), unless it is revoked or the
 * cache was cleared since 'epoch' was read. Returns whether it is held. */
bool keycache_put(struct keycache *c, const uint8_t hash[KEYCACHE_HASH_BYTES],
                  const struct apikey *k, uint64_t epoch, int64_t now);
void keycache_remove(struct keycache *c, const uint8_t hash[KEYCACHE_HASH_BYTES]);
/* Forgets every key; a put of a read begun before this call is refused. */
void keycache_clear(struct keycache *c);

/* For /metrics: lookups that found a key, lookups that did not, keys held. */
void keycache_counts(struct keycache *c, uint64_t *hits, uint64_t *misses, uint64_t *entries);
/* The bytes the table takes, whatever it holds. */
size_t keycache_bytes(const struct keycache *c);

#endif
