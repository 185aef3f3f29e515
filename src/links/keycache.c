/* keycache.c - API keys known valid, by token hash, for every thread.
 *
 * DESIGN
 * A set-associative table: the hash (already a keyed BLAKE2b digest, so
 * uniform) picks a bucket of KEYCACHE_WAYS slots; a lookup compares at most
 * that many digests, and a put into a full bucket replaces its oldest entry,
 * so the table never grows and never needs a sweep. Buckets are spread over
 * NSHARDS mutexes: a lookup holds one for a few compares and a copy, so
 * threads (event loops, store threads) rarely meet. Counters live in the
 * shards, under their lock, so counting costs no atomic of its own.
 * Clearing is what revocation does, and it must win against a store read
 * that began before the revocation committed and put the key afterwards: a
 * clear first bumps the epoch, then empties each shard under its lock; a put
 * checks the epoch its reader saw under the shard's lock. Either the put
 * comes first and the clear then empties it, or the put sees the new epoch
 * and is refused. */
#include "links/keycache.h"

#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

#define KEYCACHE_WAYS 4
#define NSHARDS 16

struct slot {
    uint8_t hash[KEYCACHE_HASH_BYTES];
    struct apikey key;
    int64_t put_at; /* mono ms; 0: empty */
};

struct shard {
    pthread_mutex_t mu;
    uint64_t hits, misses, entries;
    char pad[64]; /* keeps the next shard's lock off this line */
};

struct keycache {
    size_t nbuckets; /* a power of two, at least NSHARDS */
    int64_t ttl_ms;
    _Atomic uint64_t epoch;
    struct shard shards[NSHARDS];
    struct slot *slots; /* nbuckets * KEYCACHE_WAYS */
};

struct keycache *keycache_new(size_t max_entries, int64_t ttl_ms)
{
    struct keycache *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->nbuckets = NSHARDS;
    while (c->nbuckets * KEYCACHE_WAYS < max_entries)
        c->nbuckets *= 2;
    c->ttl_ms = ttl_ms;
    atomic_init(&c->epoch, 0);
    for (int i = 0; i < NSHARDS; i++)
        pthread_mutex_init(&c->shards[i].mu, NULL);
    c->slots = calloc(c->nbuckets * KEYCACHE_WAYS, sizeof(*c->slots));
    if (!c->slots)
        abort();
    return c;
}

void keycache_free(struct keycache *c)
{
    if (!c)
        return;
    for (int i = 0; i < NSHARDS; i++)
        pthread_mutex_destroy(&c->shards[i].mu);
    sodium_memzero(c->slots, c->nbuckets * KEYCACHE_WAYS * sizeof(*c->slots));
    free(c->slots);
    free(c);
}

/* The bucket of 'hash' (its first slot) and the shard that guards it. */
static struct slot *bucket(struct keycache *c, const uint8_t *hash, struct shard **sh)
{
    uint64_t h;
    memcpy(&h, hash, sizeof(h));
    size_t b = (size_t)(h & (c->nbuckets - 1));
    *sh = &c->shards[b % NSHARDS];
    return &c->slots[b * KEYCACHE_WAYS];
}

static struct slot *find(struct slot *s, const uint8_t *hash)
{
    for (int i = 0; i < KEYCACHE_WAYS; i++)
        if (s[i].put_at && sodium_memcmp(s[i].hash, hash, KEYCACHE_HASH_BYTES) == 0)
            return &s[i];
    return NULL;
}

static void empty(struct shard *sh, struct slot *s)
{
    sodium_memzero(s, sizeof(*s));
    sh->entries--;
}

int keycache_get(struct keycache *c, const uint8_t hash[KEYCACHE_HASH_BYTES], int64_t now,
                 struct apikey *out)
{
    struct shard *sh;
    struct slot *b = bucket(c, hash, &sh);
    pthread_mutex_lock(&sh->mu);
    struct slot *s = find(b, hash);
    if (s && now - s->put_at >= c->ttl_ms) {
        empty(sh, s);
        s = NULL;
    }
    if (s) {
        *out = s->key;
        sh->hits++;
    } else {
        sh->misses++;
    }
    pthread_mutex_unlock(&sh->mu);
    return s ? ERR_OK : ERR_NOTFOUND;
}

uint64_t keycache_epoch(struct keycache *c)
{
    return atomic_load_explicit(&c->epoch, memory_order_acquire);
}

bool keycache_put(struct keycache *c, const uint8_t hash[KEYCACHE_HASH_BYTES],
                  const struct apikey *k, uint64_t epoch, int64_t now)
{
    if (k->revoked_at)
        return false;
    struct shard *sh;
    struct slot *b = bucket(c, hash, &sh);
    pthread_mutex_lock(&sh->mu);
    bool held = atomic_load_explicit(&c->epoch, memory_order_acquire) == epoch;
    if (held) {
        struct slot *s = find(b, hash);
        for (int i = 0; !s && i < KEYCACHE_WAYS; i++)
            if (!b[i].put_at)
                s = &b[i];
        if (!s) {
            s = &b[0];
            for (int i = 1; i < KEYCACHE_WAYS; i++)
                if (b[i].put_at < s->put_at)
                    s = &b[i];
        }
        if (!s->put_at)
            sh->entries++;
        memcpy(s->hash, hash, KEYCACHE_HASH_BYTES);
        s->key = *k;
        s->put_at = now > 0 ? now : 1; /* 0 marks an empty slot */
    }
    pthread_mutex_unlock(&sh->mu);
    return held;
}

void keycache_remove(struct keycache *c, const uint8_t hash[KEYCACHE_HASH_BYTES])
{
    struct shard *sh;
    struct slot *b = bucket(c, hash, &sh);
    pthread_mutex_lock(&sh->mu);
    struct slot *s = find(b, hash);
    if (s)
        empty(sh, s);
    pthread_mutex_unlock(&sh->mu);
}

void keycache_clear(struct keycache *c)
{
    atomic_fetch_add_explicit(&c->epoch, 1, memory_order_acq_rel);
    for (size_t i = 0; i < NSHARDS; i++) {
        struct shard *sh = &c->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (size_t b = i; b < c->nbuckets; b += NSHARDS) {
            struct slot *s = &c->slots[b * KEYCACHE_WAYS];
            for (int w = 0; w < KEYCACHE_WAYS; w++)
                if (s[w].put_at)
                    empty(sh, &s[w]);
        }
        pthread_mutex_unlock(&sh->mu);
    }
}

void keycache_counts(struct keycache *c, uint64_t *hits, uint64_t *misses, uint64_t *entries)
{
    *hits = *misses = *entries = 0;
    for (int i = 0; i < NSHARDS; i++) {
        struct shard *sh = &c->shards[i];
        pthread_mutex_lock(&sh->mu);
        *hits += sh->hits;
        *misses += sh->misses;
        *entries += sh->entries;
        pthread_mutex_unlock(&sh->mu);
    }
}

size_t keycache_bytes(const struct keycache *c)
{
    return sizeof(*c) + c->nbuckets * KEYCACHE_WAYS * sizeof(struct slot);
}
