/* test_keycache.c - the per-node cache of API keys (keycache.c): a hit, a
 * miss, a revoked key never held, a read begun before a clear never held
 * after it, the table bounded under a flood of keys, entries past their TTL
 * gone, threads at once; then the same through links.c on a real SQLite
 * store (a key used once is known without the store until
 * links_forget_keys). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "keycache.h"
#include "links.h"
#include "store.h"
#include "test.h"
#include "timeutil.h"

#include "banned.h"

static void hash_of(uint64_t n, uint8_t out[KEYCACHE_HASH_BYTES])
{
    /* Spread like a digest: the table picks buckets by the first bytes. */
    uint64_t x = n * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    for (int i = 0; i < KEYCACHE_HASH_BYTES; i++) {
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ull;
        out[i] = (uint8_t)(x >> 56);
    }
}

static struct apikey key_named(int64_t id, const char *name)
{
    struct apikey k;
    memset(&k, 0, sizeof(k));
    k.id = id;
    snprintf(k.name, sizeof(k.name), "%s", name);
    k.created_at = 1000;
    return k;
}

void test_keycache_hit_miss(void)
{
    struct keycache *c = keycache_new(64, 60000);
    uint8_t h1[32], h2[32];
    hash_of(1, h1);
    hash_of(2, h2);
    struct apikey k = key_named(7, "alice"), got;
    k.admin = true;
    CHECK_EQ_INT(keycache_get(c, h1, 100, &got), ERR_NOTFOUND);
    CHECK(keycache_put(c, h1, &k, keycache_epoch(c), 100));
    memset(&got, 0, sizeof(got));
    if (CHECK_EQ_INT(keycache_get(c, h1, 200, &got), ERR_OK)) {
        CHECK_EQ_INT(got.id, 7);
        CHECK_EQ_STR(got.name, "alice");
        CHECK(got.admin);
        CHECK_EQ_INT(got.created_at, 1000);
    }
    CHECK_EQ_INT(keycache_get(c, h2, 200, &got), ERR_NOTFOUND);
    /* A second put of the same hash replaces, it does not add. */
    k.id = 8;
    CHECK(keycache_put(c, h1, &k, keycache_epoch(c), 300));
    if (CHECK_EQ_INT(keycache_get(c, h1, 300, &got), ERR_OK))
        CHECK_EQ_INT(got.id, 8);
    uint64_t hits, misses, entries;
    keycache_counts(c, &hits, &misses, &entries);
    CHECK_EQ_INT(hits, 2);
    CHECK_EQ_INT(misses, 2);
    CHECK_EQ_INT(entries, 1);
    keycache_free(c);
    keycache_free(NULL);
}

void test_keycache_revoked(void)
{
    struct keycache *c = keycache_new(64, 60000);
    uint8_t h[32];
    hash_of(3, h);
    struct apikey k = key_named(3, "bob"), got;
    /* A revoked key is never held. */
    k.revoked_at = 500;
    CHECK(!keycache_put(c, h, &k, keycache_epoch(c), 100));
    CHECK_EQ_INT(keycache_get(c, h, 100, &got), ERR_NOTFOUND);
    /* Removed when the store says it is revoked. */
    k.revoked_at = 0;
    CHECK(keycache_put(c, h, &k, keycache_epoch(c), 100));
    keycache_remove(c, h);
    CHECK_EQ_INT(keycache_get(c, h, 100, &got), ERR_NOTFOUND);
    /* A store read that began before a clear (the revocation's) and ends
     * after it is not held: it may have read the key still valid. */
    uint64_t before = keycache_epoch(c);
    keycache_clear(c);
    CHECK(!keycache_put(c, h, &k, before, 200));
    CHECK_EQ_INT(keycache_get(c, h, 200, &got), ERR_NOTFOUND);
    CHECK(keycache_put(c, h, &k, keycache_epoch(c), 200));
    CHECK_EQ_INT(keycache_get(c, h, 200, &got), ERR_OK);
    keycache_free(c);
}

void test_keycache_bounded(void)
{
    struct keycache *c = keycache_new(1000, 60000);
    size_t bytes = keycache_bytes(c);
    uint64_t hits, misses, entries;
    struct apikey k = key_named(1, "k"), got;
    for (uint64_t i = 0; i < 100000; i++) {
        uint8_t h[32];
        hash_of(i, h);
        k.id = (int64_t)i + 1;
        CHECK(keycache_put(c, h, &k, keycache_epoch(c), 1 + (int64_t)i));
    }
    keycache_counts(c, &hits, &misses, &entries);
    /* Rounded up to whole buckets, never past twice the size asked for. */
    CHECK(entries >= 1000 && entries <= 2000);
    CHECK_EQ_INT(keycache_bytes(c), bytes);
    CHECK(bytes < 2000 * (sizeof(struct apikey) + 64) + 4096);
    /* The newest key is held; the first one made way. */
    uint8_t h[32];
    hash_of(99999, h);
    if (CHECK_EQ_INT(keycache_get(c, h, 100000, &got), ERR_OK))
        CHECK_EQ_INT(got.id, 100000);
    hash_of(0, h);
    CHECK_EQ_INT(keycache_get(c, h, 100000, &got), ERR_NOTFOUND);
    /* Forgetting empties it. */
    keycache_clear(c);
    keycache_counts(c, &hits, &misses, &entries);
    CHECK_EQ_INT(entries, 0);
    hash_of(99999, h);
    CHECK_EQ_INT(keycache_get(c, h, 100000, &got), ERR_NOTFOUND);
    keycache_free(c);
}

void test_keycache_ttl(void)
{
    struct keycache *c = keycache_new(64, 60000);
    uint8_t h[32];
    hash_of(5, h);
    struct apikey k = key_named(5, "carol"), got;
    CHECK(keycache_put(c, h, &k, keycache_epoch(c), 1000));
    CHECK_EQ_INT(keycache_get(c, h, 1000 + 59999, &got), ERR_OK);
    CHECK_EQ_INT(keycache_get(c, h, 1000 + 60000, &got), ERR_NOTFOUND);
    uint64_t hits, misses, entries;
    keycache_counts(c, &hits, &misses, &entries);
    CHECK_EQ_INT(entries, 0);
    keycache_free(c);
}

/* ---- threads ---- */

struct worker {
    struct keycache *c;
    int id;
    int wrong; /* lookups that returned another key than the hash's */
};

static void *hammer(void *arg)
{
    struct worker *w = arg;
    struct apikey got;
    for (int i = 0; i < 20000; i++) {
        uint64_t n = (uint64_t)((i * 7 + w->id * 131) % 3000);
        uint8_t h[32];
        hash_of(n, h);
        if (keycache_get(w->c, h, 10, &got) == ERR_OK) {
            if (got.id != (int64_t)n + 1)
                w->wrong++;
        } else {
            struct apikey k = key_named((int64_t)n + 1, "t");
            keycache_put(w->c, h, &k, keycache_epoch(w->c), 10);
        }
        if (w->id == 0 && i % 5000 == 4999)
            keycache_clear(w->c);
    }
    return NULL;
}

void test_keycache_threads(void)
{
    struct keycache *c = keycache_new(1024, 60000);
    enum { N = 6 };
    pthread_t t[N];
    struct worker w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (struct worker){c, i, 0};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
    }
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        wrong += w[i].wrong;
    }
    CHECK_EQ_INT(wrong, 0);
    uint64_t hits, misses, entries;
    keycache_counts(c, &hits, &misses, &entries);
    CHECK_EQ_INT(hits + misses, N * 20000);
    CHECK(entries <= 2048);
    keycache_free(c);
}

/* ---- through links.c, on a SQLite store ---- */

static struct slice tok(const char *t) { return (struct slice){t, strlen(t)}; }

void test_keycache_links(void)
{
    char dir[] = "/tmp/shortd-keycache-XXXXXX";
    if (!CHECK(mkdtemp(dir)))
        return;
    char url[128], path[128];
    snprintf(url, sizeof(url), "sqlite:%s/db", dir);
    struct store *st = NULL;
    struct links *l = NULL;
    static const char *const none[] = {NULL};
    if (!CHECK_EQ_INT(store_open(url, &st), ERR_OK) ||
        !CHECK_EQ_INT(links_new(st, none, none, &l), ERR_OK))
        goto out;
    char token[KEY_TOKEN_LEN + 1], other[KEY_TOKEN_LEN + 1];
    int64_t id = 0, other_id = 0;
    CHECK_EQ_INT(links_key_create(l, st, "alice", false, token, &id), ERR_OK);
    CHECK_EQ_INT(links_key_create(l, st, "bob", true, other, &other_id), ERR_OK);
    struct apikey k;
    /* Not a key at all; a key not known yet; known once the store said so. */
    CHECK_EQ_INT(links_authenticate_cached(l, tok("sk_short"), &k), ERR_NOTFOUND);
    CHECK_EQ_INT(links_authenticate_cached(l, tok(token), &k), ERR_AGAIN);
    CHECK_EQ_INT(links_authenticate(l, tok(token), &k), ERR_OK);
    memset(&k, 0, sizeof(k));
    if (CHECK_EQ_INT(links_authenticate_cached(l, tok(token), &k), ERR_OK)) {
        CHECK_EQ_INT(k.id, id);
        CHECK_EQ_STR(k.name, "alice");
        CHECK(!k.admin);
    }
    CHECK_EQ_INT(links_authenticate_cached(l, tok(other), &k), ERR_AGAIN);
    /* An unknown token of the right shape is not remembered. */
    char unknown[KEY_TOKEN_LEN + 1];
    memcpy(unknown, token, sizeof(unknown));
    unknown[5] = unknown[5] == 'a' ? 'b' : 'a';
    CHECK_EQ_INT(links_authenticate(l, tok(unknown), &k), ERR_NOTFOUND);
    CHECK_EQ_INT(links_authenticate_cached(l, tok(unknown), &k), ERR_AGAIN);

    /* Revoked in the store: refused by every read of it, and by the cache
     * once the node forgets what it knew (the bus's or the generation's
     * news). */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->key_revoke(st, id, now_ms()), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(links_authenticate(l, tok(token), &k), ERR_NOTFOUND);
    CHECK_EQ_INT(links_authenticate_cached(l, tok(token), &k), ERR_AGAIN);
    CHECK_EQ_INT(links_authenticate(l, tok(other), &k), ERR_OK);
    CHECK_EQ_INT(links_authenticate_cached(l, tok(other), &k), ERR_OK);
    links_forget_keys(l);
    CHECK_EQ_INT(links_authenticate_cached(l, tok(other), &k), ERR_AGAIN);
    uint64_t hits, misses, entries;
    size_t bytes = 0;
    links_key_counts(l, &hits, &misses, &entries, &bytes);
    CHECK_EQ_INT(hits, 2);
    CHECK_EQ_INT(misses, 5);
    CHECK_EQ_INT(entries, 0);
    CHECK(bytes > LINKS_KEY_CACHE_MAX * sizeof(struct apikey));
out:
    links_free(l);
    if (st)
        st->ops->close(st);
    static const char *const files[] = {"db", "db-wal", "db-shm", NULL};
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}
