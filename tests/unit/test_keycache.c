/* test_keycache.c - the per-node cache of API keys (keycache.c): a hit, a
 * miss, a revoked key never held, a read begun before a clear never held
 * after it, the table bounded under a flood of keys, entries past their TTL
 * gone, threads at once; then the same through links.c on a real SQLite
 * store (a key used once is known without the store until
 * links_forget_keys); and, with SHORTD_TEST_PG (tests/pg.sh), PostgreSQL's
 * key_revoke announcing BUS_KEYS on the invalidation bus at its commit. */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/bus.h"
#include "base/err.h"
#include "links/keycache.h"
#include "links/links.h"
#include "base/log.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "test.h"
#include "base/timeutil.h"

#include "base/banned.h"

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

/* ---- PostgreSQL: key_revoke tells the bus ---- */

struct heard {
    pthread_mutex_t mu;
    int keys, gaps;
};

static void on_message(const char *code, size_t n, void *arg)
{
    struct heard *h = arg;
    pthread_mutex_lock(&h->mu);
    if (!code)
        h->gaps++;
    else if (bus_is_keys(code, n))
        h->keys++;
    pthread_mutex_unlock(&h->mu);
}

static int heard(struct heard *h, bool keys)
{
    pthread_mutex_lock(&h->mu);
    int n = keys ? h->keys : h->gaps;
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* Polls until 'keys' (or gaps) reach 'n'; false after 'limit_ms'. */
static bool wait_heard(struct heard *h, bool keys, int n, int64_t limit_ms)
{
    int64_t t0 = mono_ms();
    while (heard(h, keys) < n) {
        if (mono_ms() - t0 > limit_ms)
            return false;
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    return true;
}

static bool pg_sql(const char *base, const char *sql)
{
    PGconn *pg = PQconnectdb(base);
    bool ok = PQstatus(pg) == CONNECTION_OK;
    if (ok) {
        PGresult *r = PQexec(pg, "SET client_min_messages = warning");
        PQclear(r);
        r = PQexec(pg, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
    }
    PQfinish(pg);
    return ok;
}

void test_keycache_pg_revoke_notifies(void)
{
    const char *base = getenv("SHORTD_TEST_PG");
    if (!base || !*base) {
        printf("keycache: SHORTD_TEST_PG is unset: PostgreSQL checks skipped "
               "(tests/pg.sh runs them)\n");
        return;
    }
    char schema[64], sql[256], url[1024];
    snprintf(schema, sizeof(schema), "shortd_test_keycache_%d", (int)getpid());
    snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema,
             schema);
    if (!CHECK(pg_sql(base, sql)))
        return;
    snprintf(url, sizeof(url), "%s%coptions=-csearch_path%%3D%s", base,
             strchr(base, '?') ? '&' : '?', schema);
    struct heard h = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    struct bus *b = NULL;
    struct store *st = NULL;
    int from = -1, to = -1;
    enum log_level saved = log_level;
    log_level = LOG_WARN;
    int rc = store_pg_migrate(url, &from, &to);
    log_level = saved;
    if (!CHECK_EQ_INT(rc, ERR_OK) || !CHECK_EQ_INT(store_open(url, &st), ERR_OK))
        goto out;
    CHECK_EQ_INT(bus_new(NULL, url, 1000, on_message, &h, &b), ERR_OK);
    if (!CHECK(b && wait_heard(&h, false, 1, 5000))) /* listening: its first (NULL, 0) */
        goto out;
    uint8_t hash[32];
    hash_of(42, hash);
    int64_t id = 0;
    struct apikey spec = {.name = "pg-key", .created_at = 100, .scopes = KEY_SCOPES_ALL};
    CHECK_EQ_INT(st->ops->key_insert(st, &spec, hash, &id), ERR_OK);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->key_revoke(st, id, 200), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    int64_t t0 = mono_ms();
    if (CHECK(wait_heard(&h, true, 1, 2000)))
        printf("keycache: PostgreSQL key revoke heard on the bus %lld ms after commit\n",
               (long long)(mono_ms() - t0));
    /* Nothing revoked, nothing announced; rolled back, nothing either. */
    CHECK_EQ_INT(st->ops->key_revoke(st, id, 300), ERR_NOTFOUND);
    hash_of(43, hash);
    int64_t id2 = 0;
    CHECK_EQ_INT(st->ops->key_insert(st, &spec, hash, &id2), ERR_OK);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->key_revoke(st, id2, 300), ERR_OK);
    st->ops->rollback(st);
    /* A message published after those reaches us after theirs would have. */
    bus_publish(b, BUS_KEYS, BUS_KEYS_LEN);
    CHECK(wait_heard(&h, true, 2, 2000));
    CHECK_EQ_INT(heard(&h, true), 2);
out:
    bus_free(b);
    if (st)
        st->ops->close(st);
    snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    pg_sql(base, sql);
    pthread_mutex_destroy(&h.mu);
}

/* A PostgreSQL listener that drops while Redis stays up: Redis covered the
 * codes of the gap, but not a revocation (announced on PostgreSQL only), so
 * the listener's return tells the node to forget its keys. */
void test_keycache_pg_listener_back(void)
{
    const char *pg = getenv("SHORTD_TEST_PG"), *redis = getenv("SHORTD_TEST_REDIS");
    if (!pg || !*pg || !redis || !*redis) {
        printf("keycache: SHORTD_TEST_PG or SHORTD_TEST_REDIS is unset: the listener check is "
               "skipped (tests/pg.sh tests/redis.sh run it)\n");
        return;
    }
    struct heard h = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    struct bus *b = NULL;
    enum log_level saved = log_level;
    log_level = LOG_OFF; /* the lost connection is logged as a warning */
    CHECK_EQ_INT(bus_new(redis, pg, 1000, on_message, &h, &b), ERR_OK);
    /* Both up: a message published now comes back on each transport. Every
     * one published is delivered twice in the end (queued until sent). */
    bool both = false;
    int sent = 0;
    while (!both && sent < 50) {
        int before = heard(&h, true);
        bus_publish(b, BUS_KEYS, BUS_KEYS_LEN);
        sent++;
        both = wait_heard(&h, true, before + 2, 100);
    }
    if (!CHECK(both) || !CHECK(wait_heard(&h, true, 2 * sent, 5000)))
        goto out;
    int keys = heard(&h, true), gaps = heard(&h, false);
    CHECK(pg_sql(pg, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = 'shortd-bus'"));
    CHECK(wait_heard(&h, true, keys + 1, 5000));
    CHECK_EQ_INT(heard(&h, false), gaps); /* Redis covered the codes */
out:
    bus_free(b);
    log_level = saved;
    pthread_mutex_destroy(&h.mu);
}
