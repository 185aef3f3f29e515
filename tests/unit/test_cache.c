/* test_cache.c - the redirect cache: what put, fill and remove promise, the
 * compact entry layout read back exactly, misses and their bound. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "redirect/cache.h"
#include "test.h"

#include "base/banned.h"

static struct link mk(const char *code, const char *url, int64_t expires, int state)
{
    struct link l;
    memset(&l, 0, sizeof(l));
    snprintf(l.code, sizeof(l.code), "%s", code);
    l.url = (char *)url;
    l.expires_at = expires;
    l.state = state;
    return l;
}

static bool get(struct cache *c, const char *code, int64_t now, struct cache_view *v)
{
    cache_read_lock();
    bool hit = cache_get(c, code, strlen(code), now, v);
    cache_read_unlock();
    return hit;
}

void test_cache_put_get(void)
{
    cache_thread_register();
    struct cache *c = cache_new(1000, 1000);
    struct cache_view v;
    CHECK(!get(c, "abc1234", 0, &v));
    struct link a = mk("abc1234", "https://example.com/a", 0, LINK_ACTIVE);
    a.permanent = true;
    cache_put(c, &a);
    CHECK_EQ_INT(cache_entry_bytes(c), 32); /* 4 + 7 + 21 */
    CHECK(get(c, "abc1234", 0, &v));
    CHECK(!v.miss && v.url && v.url_len == strlen(a.url) && !memcmp(v.url, a.url, v.url_len));
    CHECK(v.permanent && v.state == LINK_ACTIVE && v.expires_at == 0);
    /* An expiry time (only stored when set) reads back to the millisecond. */
    struct link b = mk("with-expiry", "https://example.com/b", 1796030665123LL, LINK_ACTIVE);
    cache_put(c, &b);
    CHECK(get(c, "with-expiry", 0, &v));
    CHECK_EQ_INT(v.expires_at, 1796030665123LL);
    CHECK(v.url_len == strlen(b.url) && !memcmp(v.url, b.url, v.url_len) && !v.permanent);
    CHECK(!v.untracked);
    /* track: false is one flag bit, read back with the others. */
    struct link q = mk("quiet", "https://example.com/q", 0, LINK_ACTIVE);
    q.untracked = true;
    q.permanent = true;
    cache_put(c, &q);
    CHECK(get(c, "quiet", 0, &v));
    CHECK(v.untracked && v.permanent && v.state == LINK_ACTIVE && !v.controlled);
    cache_remove(c, "quiet", 5);
    /* Codes are case-sensitive. */
    CHECK(!get(c, "ABC1234", 0, &v));
    /* A put replaces: the deleted state wins, and has no URL. */
    struct link d = mk("abc1234", NULL, 0, LINK_DELETED);
    cache_put(c, &d);
    CHECK(get(c, "abc1234", 0, &v));
    CHECK(v.state == LINK_DELETED && v.url == NULL);
    CHECK_EQ_INT(cache_entries(c), 2);
    /* Entries are 4 bytes plus code and URL, rounded up to 8:
     * "with-expiry" is 4 + 8 + 11 + 21 = 44 -> 48, the deleted "abc1234"
     * 4 + 7 = 11 -> 16. */
    CHECK_EQ_INT(cache_entry_bytes(c), 48 + 16);
    cache_remove(c, "abc1234", 7);
    CHECK(!get(c, "abc1234", 0, &v));
    CHECK_EQ_INT(cache_entries(c), 1);
    CHECK_EQ_INT(cache_entry_bytes(c), 48);
    cache_reclaim(c);
    cache_free(c);
    cache_thread_unregister();
}

void test_cache_fill_never_overwrites(void)
{
    cache_thread_register();
    struct cache *c = cache_new(1000, 1000);
    struct cache_view v;
    /* A reader that read the store before a change must not undo it. */
    struct link fresh = mk("code001", NULL, 0, LINK_DELETED);
    struct link stale = mk("code001", "https://example.com/old", 0, LINK_ACTIVE);
    cache_put(c, &fresh);
    cache_fill(c, &stale, 0);
    CHECK(get(c, "code001", 0, &v) && v.state == LINK_DELETED);
    /* A miss is remembered until its time is up ... */
    cache_fill_miss(c, "unknown", 7, 10000);
    CHECK(get(c, "unknown", 10500, &v) && v.miss);
    struct link created = mk("unknown", "https://example.com/new", 0, LINK_ACTIVE);
    cache_fill(c, &created, 10500); /* the miss is still valid */
    CHECK(get(c, "unknown", 10500, &v) && v.miss);
    /* ... after which lookups fall through, and a fill replaces it. */
    CHECK(!get(c, "unknown", 11000, &v));
    cache_fill(c, &created, 11000);
    CHECK(get(c, "unknown", 11000, &v) && !v.miss && v.url_len == strlen(created.url));
    /* A writer's put replaces a miss at once. */
    cache_fill_miss(c, "alias-x", 7, 20000);
    struct link alias = mk("alias-x", "https://example.com/x", 0, LINK_ACTIVE);
    cache_put(c, &alias);
    CHECK(get(c, "alias-x", 20001, &v) && !v.miss);
    cache_clear(c);
    CHECK_EQ_INT(cache_entries(c), 0);
    CHECK(!get(c, "alias-x", 20001, &v));
    cache_free(c);
    cache_thread_unregister();
}

void test_cache_bounds(void)
{
    cache_thread_register();
    struct cache *c = cache_new(64, 1000);
    char code[16], url[64];
    for (int i = 0; i < 200; i++) {
        snprintf(code, sizeof(code), "k%05d", i);
        snprintf(url, sizeof(url), "https://example.com/%d", i);
        struct link l = mk(code, url, 0, LINK_ACTIVE);
        cache_fill(c, &l, 0);
    }
    CHECK_EQ_INT(cache_entries(c), 64);
    struct cache_view v;
    CHECK(get(c, "k00000", 0, &v) && v.url_len == strlen("https://example.com/0"));
    CHECK(!get(c, "k00199", 0, &v));
    /* Misses are held to an eighth of the cache. */
    struct cache *m = cache_new(64, 1000);
    for (int i = 0; i < 100; i++) {
        snprintf(code, sizeof(code), "m%05d", i);
        cache_fill_miss(m, code, strlen(code), 0);
    }
    CHECK_EQ_INT(cache_entries(m), 8);
    /* Entries of every size class are reused after a reclaim. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 64; i++) {
            snprintf(code, sizeof(code), "r%05d", i);
            char big[300];
            memset(big, 'a' + round, sizeof(big) - 1);
            big[sizeof(big) - 1] = '\0';
            struct link l = mk(code, big + (i * 4) % 200, 0, LINK_ACTIVE);
            cache_put(c, &l);
        }
        cache_clear(c);
        cache_reclaim(c);
    }
    CHECK_EQ_INT(cache_entries(c), 0);
    cache_free(m);
    cache_free(c);
    cache_thread_unregister();
}

static void code_of(int i, char *code, size_t cap) { snprintf(code, cap, "g%06d", i); }
static void url_of(int i, int version, char *url, size_t cap)
{
    snprintf(url, cap, "https://example.com/%d/v%d", i, version);
}

/* Whether code i is cached with the URL of 'version', or (version 0) of
 * version 1 or 2, read in one lookup. */
static bool has(struct cache *c, int i, int version)
{
    char code[16], url[64];
    code_of(i, code, sizeof(code));
    struct cache_view v;
    if (!get(c, code, 0, &v))
        return false;
    for (int k = version ? version : 1; k <= (version ? version : 2); k++) {
        url_of(i, k, url, sizeof(url));
        if (v.url_len == strlen(url) && !memcmp(v.url, url, v.url_len))
            return true;
    }
    return false;
}

static void put_n(struct cache *c, int from, int to, int version)
{
    char code[16], url[64];
    for (int i = from; i < to; i++) {
        code_of(i, code, sizeof(code));
        url_of(i, version, url, sizeof(url));
        struct link l = mk(code, url, 0, LINK_ACTIVE);
        cache_put(c, &l);
    }
}

/* The table grows past the size it grows at in the writer (256 Ki slots)
 * only in cache_reclaim; removals leave tombstones that later lookups must
 * step over, and puts reuse. Every entry stays findable through all of it. */
/* A scan of more unknown codes than the misses' bound: once its misses are
 * out of time, later unknown codes are remembered again (the expired ones
 * make room), not sent to the store on every lookup. */
void test_cache_misses_expire(void)
{
    cache_thread_register();
    struct cache *c = cache_new(64, 1000); /* at most 8 misses */
    char code[32];
    struct cache_view v;
    for (int i = 0; i < 100; i++) {
        snprintf(code, sizeof(code), "scan%03d", i);
        cache_fill_miss(c, code, strlen(code), 0);
    }
    CHECK_EQ_INT(cache_entries(c), 8);
    CHECK(get(c, "scan000", 999, &v) && v.miss);
    CHECK(!get(c, "scan099", 999, &v));
    /* A miss and a link made over a miss: the sweep takes only the miss. */
    struct link lk = mk("linked", "https://example.com/l", 0, LINK_ACTIVE);
    cache_put(c, &lk);
    for (int round = 1; round <= 3; round++) {
        int64_t t = round * 1000 + 500; /* every earlier miss is out of time */
        int remembered = 0;
        for (int i = 0; i < 8; i++) {
            snprintf(code, sizeof(code), "later%d_%d", round, i);
            cache_fill_miss(c, code, strlen(code), t);
            remembered += get(c, code, t, &v) && v.miss;
        }
        if (!CHECK_EQ_INT(remembered, 8))
            test_note("round %d: %d of 8 later misses remembered", round, remembered);
        CHECK_EQ_INT(cache_entries(c), 9); /* the 8 live misses and the link */
        CHECK(!get(c, "scan000", t, &v));
        CHECK(get(c, "linked", t, &v) && !v.miss && v.url_len == strlen(lk.url));
        /* Still bounded: a ninth live miss is not remembered. */
        cache_fill_miss(c, "one-more", 8, t);
        CHECK(!get(c, "one-more", t, &v));
    }
    /* A miss replaced by a newer one of the same code stays. */
    cache_fill_miss(c, "again", 5, 10000);
    cache_fill_miss(c, "again", 5, 11000);
    cache_fill_miss(c, "other", 5, 11500);
    CHECK(get(c, "again", 11500, &v) && v.miss);
    /* After a clear, the bound starts over. */
    cache_clear(c);
    for (int i = 0; i < 8; i++) {
        snprintf(code, sizeof(code), "clear%d", i);
        cache_fill_miss(c, code, strlen(code), 12000);
        CHECK(get(c, code, 12000, &v) && v.miss);
    }
    cache_reclaim(c);
    cache_free(c);
    cache_thread_unregister();
}

void test_cache_grow_and_churn(void)
{
    cache_thread_register();
    struct cache *c = cache_new(1000000, 1000);
    int n = 0;
    while (n < 400000) { /* fills up to nine tenths, then waits for the reclaim */
        put_n(c, n, n + 50000, 1);
        cache_reclaim(c);
        n += 50000;
    }
    CHECK_EQ_INT(cache_entries(c), 400000);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += !has(c, i, 1);
    CHECK_EQ_INT(bad, 0);
    /* Every other one removed: the rest are still found past the tombstones. */
    char code[16];
    for (int i = 0; i < n; i += 2) {
        code_of(i, code, sizeof(code));
        cache_remove(c, code, strlen(code));
    }
    CHECK_EQ_INT(cache_entries(c), n / 2);
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += (i % 2 == 0) == has(c, i, 1);
    CHECK_EQ_INT(bad, 0);
    /* Put back as a new version, and the others replaced. */
    put_n(c, 0, n, 2);
    cache_reclaim(c);
    CHECK_EQ_INT(cache_entries(c), n);
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += !has(c, i, 2);
    CHECK_EQ_INT(bad, 0);
    /* The batched lookup answers what cache_get does. */
    cache_read_lock();
    uint64_t h[64];
    for (int i = 0; i < 64; i++) {
        code_of(i * 101, code, sizeof(code));
        h[i] = cache_hash(c, code, strlen(code));
        cache_prefetch(c, h[i], 0);
    }
    for (int i = 0; i < 64; i++)
        cache_prefetch(c, h[i], 1);
    bad = 0;
    for (int i = 0; i < 64; i++) {
        code_of(i * 101, code, sizeof(code));
        struct cache_view a, b;
        bool ha = cache_get_hashed(c, code, strlen(code), h[i], 0, &a);
        bool hb = cache_get(c, code, strlen(code), 0, &b);
        bad += !ha || !hb || a.url != b.url || a.url_len != b.url_len;
    }
    cache_read_unlock();
    CHECK_EQ_INT(bad, 0);
    cache_free(c);
    cache_thread_unregister();
}

struct reader_arg {
    struct cache *c;
    atomic_bool *stop;
    long lookups, wrong;
};

/* Codes 0..999 are always cached, as version 1 or 2: a reader must find
 * each, every time, whole. */
static void *reader(void *p)
{
    struct reader_arg *a = p;
    cache_thread_register();
    while (!atomic_load(a->stop)) {
        for (int i = 0; i < 1000; i++) {
            /* The view points into the entry: compare it before the
             * entry can be freed, inside the read lock. */
            cache_read_lock();
            a->wrong += !has(a->c, i, 0);
            cache_read_unlock();
            a->lookups++;
        }
    }
    cache_thread_unregister();
    return NULL;
}

static void *reclaimer(void *p)
{
    struct reader_arg *a = p;
    cache_thread_register();
    while (!atomic_load(a->stop)) {
        cache_reclaim(a->c);
        a->lookups++;
    }
    cache_thread_unregister();
    return NULL;
}

/* Readers never miss an entry that is cached throughout, nor see a torn
 * one, while a writer replaces it, removes and adds others around it, and
 * another thread copies the table into a larger one under them (the
 * writer's changes going to both). At the end the table holds exactly what
 * was written. */
void test_cache_readers_during_writes(void)
{
    cache_thread_register();
    struct cache *c = cache_new(10000000, 1000);
    put_n(c, 0, 1000, 1);
    atomic_bool stop = false;
    struct reader_arg args[3] = {{c, &stop, 0, 0}, {c, &stop, 0, 0}, {c, &stop, 0, 0}};
    pthread_t th[3];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reader, &args[i]);
    pthread_create(&th[2], NULL, reclaimer, &args[2]);
    /* Fresh codes, so the table grows (and is copied) while they come; a
     * third of them removed again 600 later; the always-cached ones
     * replaced now and then. */
    char code[16];
    int top = 700000, version = 1;
    for (int i = 1000; i < top; i++) {
        put_n(c, i, i + 1, 1);
        if (i % 3 == 0 && i - 600 >= 1000) {
            code_of(i - 600, code, sizeof(code));
            cache_remove(c, code, strlen(code));
        }
        if (i % 50000 == 0)
            put_n(c, 0, 1000, version = 3 - version);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK(args[0].lookups > 0 && args[1].lookups > 0 && args[2].lookups > 0);
    CHECK_EQ_INT(args[0].wrong + args[1].wrong, 0);
    int bad = 0, kept = 0;
    for (int i = 0; i < top; i++) {
        bool removed = i >= 1000 && i + 600 < top && (i + 600) % 3 == 0;
        kept += !removed;
        bad += has(c, i, i < 1000 ? version : 1) == removed;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(cache_entries(c), kept);
    cache_free(c);
    cache_thread_unregister();
}
