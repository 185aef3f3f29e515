/* keyuse.c - API keys' last uses, batched for the store.
 *
 * DESIGN
 * A set-associative table by key id, like keycache.c's: an id picks a
 * bucket of KEYUSE_WAYS slots, guarded by one of NSHARDS mutexes. A note
 * holds its shard's lock for a few compares; within a minute of the last
 * mark it changes nothing. The drain (the main thread's housekeeping, once
 * a second) walks the shards one at a time, so a note waits at most for one
 * shard's walk. */
#include "links/keyuse.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/banned.h"

#define KEYUSE_WAYS 4
#define NSHARDS 16

struct use {
    int64_t id;        /* 0: empty */
    int64_t marked_at; /* wall ms of the last mark */
    bool pending;      /* marked, not yet drained */
};

struct shard {
    pthread_mutex_t mu;
    char pad[64]; /* keeps the next shard's lock off this line */
};

struct keyuse {
    size_t nbuckets; /* a power of two, at least NSHARDS */
    struct shard shards[NSHARDS];
    struct use *uses; /* nbuckets * KEYUSE_WAYS */
};

struct keyuse *keyuse_new(size_t max_keys)
{
    struct keyuse *u = calloc(1, sizeof(*u));
    if (!u)
        abort();
    u->nbuckets = NSHARDS;
    while (u->nbuckets * KEYUSE_WAYS < max_keys)
        u->nbuckets *= 2;
    for (int i = 0; i < NSHARDS; i++)
        pthread_mutex_init(&u->shards[i].mu, NULL);
    u->uses = calloc(u->nbuckets * KEYUSE_WAYS, sizeof(*u->uses));
    if (!u->uses)
        abort();
    return u;
}

void keyuse_free(struct keyuse *u)
{
    if (!u)
        return;
    for (int i = 0; i < NSHARDS; i++)
        pthread_mutex_destroy(&u->shards[i].mu);
    free(u->uses);
    free(u);
}

/* Ids are small consecutive integers: a multiplicative hash spreads them. */
static size_t bucket_of(const struct keyuse *u, int64_t id)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (u->nbuckets - 1);
}

void keyuse_note(struct keyuse *u, int64_t id, int64_t now)
{
    size_t b = bucket_of(u, id);
    struct shard *sh = &u->shards[b % NSHARDS];
    struct use *s = &u->uses[b * KEYUSE_WAYS], *slot = NULL;
    pthread_mutex_lock(&sh->mu);
    for (int i = 0; !slot && i < KEYUSE_WAYS; i++)
        if (s[i].id == id)
            slot = &s[i];
    if (slot && now - slot->marked_at < KEYUSE_EVERY_MS && now >= slot->marked_at) {
        pthread_mutex_unlock(&sh->mu);
        return;
    }
    if (!slot) { /* an empty slot, else the one marked longest ago */
        slot = &s[0];
        for (int i = 0; i < KEYUSE_WAYS && slot->id; i++)
            if (!s[i].id || s[i].marked_at < slot->marked_at)
                slot = &s[i];
        slot->id = id;
    }
    slot->marked_at = now;
    slot->pending = true;
    pthread_mutex_unlock(&sh->mu);
}

size_t keyuse_drain(struct keyuse *u, int64_t *ids, int64_t *ats, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < NSHARDS && n < cap; i++) {
        struct shard *sh = &u->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (size_t b = i; b < u->nbuckets && n < cap; b += NSHARDS) {
            struct use *s = &u->uses[b * KEYUSE_WAYS];
            for (int w = 0; w < KEYUSE_WAYS && n < cap; w++) {
                if (!s[w].pending)
                    continue;
                s[w].pending = false;
                ids[n] = s[w].id;
                ats[n++] = s[w].marked_at;
            }
        }
        pthread_mutex_unlock(&sh->mu);
    }
    return n;
}
