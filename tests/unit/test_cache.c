/* test_cache.c - the redirect cache: what put, fill and remove promise, the
 * compact entry layout read back exactly, misses and their bound. */
#include <stdio.h>
#include <string.h>

#include "cache.h"
#include "test.h"

#include "banned.h"

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
    CHECK_EQ_INT(cache_entry_bytes(c), 48);     /* 20 + 7 + 21 */
    CHECK(get(c, "abc1234", 0, &v));
    CHECK(!v.miss && v.url && v.url_len == strlen(a.url) && !memcmp(v.url, a.url, v.url_len));
    CHECK(v.permanent && v.state == LINK_ACTIVE && v.expires_at == 0);
    /* An expiry time (only stored when set) reads back to the millisecond. */
    struct link b = mk("with-expiry", "https://example.com/b", 1796030665123LL, LINK_ACTIVE);
    cache_put(c, &b);
    CHECK(get(c, "with-expiry", 0, &v));
    CHECK_EQ_INT(v.expires_at, 1796030665123LL);
    CHECK(v.url_len == strlen(b.url) && !memcmp(v.url, b.url, v.url_len) && !v.permanent);
    /* Codes are case-sensitive. */
    CHECK(!get(c, "ABC1234", 0, &v));
    /* A put replaces: the deleted state wins, and has no URL. */
    struct link d = mk("abc1234", NULL, 0, LINK_DELETED);
    cache_put(c, &d);
    CHECK(get(c, "abc1234", 0, &v));
    CHECK(v.state == LINK_DELETED && v.url == NULL);
    CHECK_EQ_INT(cache_entries(c), 2);
    /* Entries are 20 bytes plus code and URL, rounded up to 8 (never the
     * struct's padded sizeof): "with-expiry" is 20 + 8 + 11 + 21 = 60 -> 64,
     * the deleted "abc1234" 20 + 7 = 27 -> 32. */
    CHECK_EQ_INT(cache_entry_bytes(c), 64 + 32);
    cache_remove(c, "abc1234", 7);
    CHECK(!get(c, "abc1234", 0, &v));
    CHECK_EQ_INT(cache_entries(c), 1);
    CHECK_EQ_INT(cache_entry_bytes(c), 64);
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
    cache_fill(c, &created, 10500);                 /* the miss is still valid */
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
