/* test_ratelimit.c - the sliding window's arithmetic (admission, the fade of
 * the previous window, Retry-After and the headers' numbers), the in-memory
 * table (limits per key and per class, peeks that count nothing, memory that
 * stays bounded under a flood of keys, threads taking at once), password
 * attempts under both of their limits, and, with SHORTD_TEST_REDIS
 * (tests/redis.sh), two limiters sharing one count through Redis and falling
 * back to their own tables when it does not answer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/clientaddr.h"
#include "base/err.h"
#include "http/ratelimit.h"
#include "redirect/rcache.h"
#include "test.h"
#include "base/timeutil.h"

#include "base/banned.h"

void test_ratelimit_window_math(void)
{
    struct rl_info in;
    /* An empty window admits up to the limit, counting down. */
    CHECK(ratelimit_decide(5, 60000, 0, 0, 1000, &in));
    CHECK_EQ_INT(in.limit, 5);
    CHECK_EQ_INT(in.window, 60);
    CHECK_EQ_INT(in.remaining, 4);
    CHECK_EQ_INT(in.reset, 59);
    CHECK_EQ_INT(in.retry_after, 0);
    CHECK(ratelimit_decide(5, 60000, 0, 4, 1000, &in));
    CHECK_EQ_INT(in.remaining, 0);
    /* The sixth is refused: in the next window these 5 fade, and one fits
     * once a fifth of it has passed: 59 + 12 s. */
    CHECK(!ratelimit_decide(5, 60000, 0, 5, 1000, &in));
    CHECK_EQ_INT(in.remaining, 0);
    CHECK_EQ_INT(in.retry_after, 71);
    CHECK_EQ_INT(in.reset, 71);

    /* The previous window fades linearly: a full one (5) at e = 0 leaves no
     * room; at 1/5 of the window one request fits, at 2/5 two... */
    CHECK(!ratelimit_decide(5, 60000, 5, 0, 0, &in));
    CHECK_EQ_INT(in.retry_after, 12); /* 5 * (60 - t) / 60 + 1 <= 5 at t = 12 s */
    CHECK(!ratelimit_decide(5, 60000, 5, 0, 11999, &in));
    CHECK(ratelimit_decide(5, 60000, 5, 0, 12000, &in));
    CHECK_EQ_INT(in.remaining, 0);
    CHECK(!ratelimit_decide(5, 60000, 5, 1, 12000, &in));
    CHECK(ratelimit_decide(5, 60000, 5, 1, 24000, &in));
    CHECK(ratelimit_decide(5, 60000, 5, 3, 48000, &in));
    CHECK(!ratelimit_decide(5, 60000, 5, 4, 48000, &in));
    /* ...and almost nothing of it is left at the end. */
    CHECK(ratelimit_decide(5, 60000, 5, 3, 59999, &in));
    CHECK(!ratelimit_decide(5, 60000, 5, 4, 59999, &in));
    /* Over the limit in this window: the wait runs into the next one, where
     * this window's count fades in turn. */
    CHECK(!ratelimit_decide(5, 60000, 0, 5, 30000, &in));
    CHECK_EQ_INT(in.retry_after, 30 + 12);
    CHECK(!ratelimit_decide(1, 1000, 0, 1, 999, &in));
    CHECK_EQ_INT(in.retry_after, 2); /* 1 ms, then a whole window for it to fade */
    CHECK(!ratelimit_decide(10, 60000, 0, 10, 59999, &in));
    CHECK_EQ_INT(in.retry_after, 7); /* 1 ms + 6 s: rounded up, never 0 */

    /* No arithmetic overflow at the largest settings. */
    CHECK(ratelimit_decide(1000000000, 86400000LL, 999999999, 0, 1, &in));
    CHECK(!ratelimit_decide(1000000000, 86400000LL, 0, 1000000000, 1, &in));
}

static struct ratelimit *limiter(int64_t auth, int64_t window, struct rcache *shared)
{
    struct config_rate limits[RL_NCLASSES];
    memset(limits, 0, sizeof(limits));
    for (int i = 0; i < RL_NCLASSES; i++)
        limits[i] = (struct config_rate){auth, window};
    limits[RL_READ_KEY].limit = 0; /* one class off */
    limits[RL_PASSWORD] = (struct config_rate){3, window};
    limits[RL_PASSWORD_CLIENT] = (struct config_rate){5, window};
    uint8_t secret[RL_SECRET_BYTES];
    memset(secret, 7, sizeof(secret));
    return ratelimit_new(limits, secret, shared);
}

void test_ratelimit_memory(void)
{
    struct ratelimit *rl = limiter(3, 60, NULL);
    int64_t t0 = 1700000000000LL - 1700000000000LL % 60000 + 1000;
    struct rl_info in;
    int ok = 0;
    for (int i = 0; i < 10; i++)
        ok += ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t0 + i, &in);
    CHECK_EQ_INT(ok, 3);
    CHECK_EQ_INT(in.remaining, 0);
    CHECK(in.retry_after >= 59);
    /* Another key, another class: counts of their own. */
    CHECK(ratelimit_take(rl, RL_AUTH, "addr:1.2.3.5", 12, t0, &in));
    CHECK_EQ_INT(in.remaining, 2);
    CHECK(ratelimit_take(rl, RL_CREATE_ADDR, "addr:1.2.3.4", 12, t0, &in));
    /* A class that is off admits everything and says so (limit 0). */
    for (int i = 0; i < 10; i++)
        CHECK(ratelimit_take(rl, RL_READ_KEY, "key:1", 5, t0, &in));
    CHECK_EQ_INT(in.limit, 0);
    CHECK(!ratelimit_enabled(rl, RL_READ_KEY));
    CHECK(ratelimit_enabled(rl, RL_AUTH));

    /* Peeks count nothing. */
    for (int i = 0; i < 10; i++)
        CHECK(ratelimit_peek(rl, RL_AUTH, "addr:9.9.9.9", 12, t0, &in));
    CHECK_EQ_INT(in.remaining, 3);
    CHECK(!ratelimit_peek(rl, RL_AUTH, "addr:1.2.3.4", 12, t0 + 20, &in));
    CHECK(in.retry_after >= 59);

    /* The next window: the old count fades, one fits after 1/3 of it. */
    int64_t t1 = t0 - 1000 + 60000;
    CHECK(!ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t1 + 19000, &in));
    CHECK(ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t1 + 20000, &in));
    /* Two windows later everything is forgotten. */
    int64_t t3 = t1 + 120000;
    ok = 0;
    for (int i = 0; i < 5; i++)
        ok += ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t3, &in);
    CHECK_EQ_INT(ok, 3);

    /* A NULL limiter admits everything. */
    CHECK(ratelimit_take(NULL, RL_AUTH, "x", 1, t0, &in));
    ratelimit_free(rl);
}

void test_ratelimit_bounded(void)
{
    /* Four times as many keys as slots: nothing grows (the table is fixed),
     * every new key gets a slot by evicting the oldest of its neighbours. */
    struct ratelimit *rl = limiter(2, 60, NULL);
    int64_t t = 1700000040000LL;
    struct rl_info in;
    CHECK(ratelimit_take(rl, RL_AUTH, "addr:7.7.7.7", 12, t, &in));
    CHECK(ratelimit_take(rl, RL_AUTH, "addr:7.7.7.7", 12, t, &in));
    char key[64];
    int admitted = 0;
    for (int i = 0; i < 4 * RL_TABLE_ENTRIES; i++) {
        int n = snprintf(key, sizeof(key), "addr:flood-%d", i);
        admitted += ratelimit_take(rl, RL_AUTH, key, (size_t)n, t + 1 + i / 1000, &in);
    }
    CHECK_EQ_INT(admitted, 4 * RL_TABLE_ENTRIES);
    /* Once the flood's windows are over, new keys take their slots. */
    int64_t later = t + 3 * 60000;
    CHECK(ratelimit_take(rl, RL_AUTH, "addr:8.8.8.8", 12, later, &in));
    CHECK_EQ_INT(in.remaining, 1);
    ratelimit_free(rl);
}

struct taker {
    struct ratelimit *rl;
    int64_t now;
    int admitted;
};

static void *take_many(void *arg)
{
    struct taker *t = arg;
    struct rl_info in;
    for (int i = 0; i < 5000; i++)
        t->admitted += ratelimit_take(t->rl, RL_CREATE_KEY, "key:42", 6, t->now, &in);
    return NULL;
}

void test_ratelimit_threads(void)
{
    struct ratelimit *rl = limiter(1000, 3600, NULL);
    struct taker t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct taker){rl, 1700000000000LL - 1700000000000LL % 3600000 + 5, 0};
        pthread_create(&th[i], NULL, take_many, &t[i]);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += t[i].admitted;
    }
    CHECK_EQ_INT(total, 1000); /* exact under concurrency */
    ratelimit_free(rl);
}

/* SIGHUP's new limits: counts so far are kept, a class can be turned off and
 * on, and takes on other threads see one set or the other whole. */
void test_ratelimit_reload(void)
{
    struct ratelimit *rl = limiter(3, 60, NULL);
    int64_t t0 = 1700000000000LL - 1700000000000LL % 60000 + 1000;
    struct rl_info in;
    int ok = 0;
    for (int i = 0; i < 5; i++)
        ok += ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t0, &in);
    CHECK_EQ_INT(ok, 3);
    struct config_rate limits[RL_NCLASSES];
    for (int i = 0; i < RL_NCLASSES; i++)
        limits[i] = (struct config_rate){5, 60};
    ratelimit_set_limits(rl, limits);
    ok = 0;
    for (int i = 0; i < 5; i++)
        ok += ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t0, &in);
    CHECK_EQ_INT(ok, 2); /* 5 in all: the 3 taken before count */
    CHECK_EQ_INT(in.limit, 5);
    limits[RL_AUTH].limit = 0;
    ratelimit_set_limits(rl, limits);
    CHECK(!ratelimit_enabled(rl, RL_AUTH));
    CHECK(ratelimit_take(rl, RL_AUTH, "addr:1.2.3.4", 12, t0, &in));
    CHECK_EQ_INT(in.limit, 0);

    /* Four threads take while this one swaps the limits between 1000 and
     * 2000 per hour: each take sees a whole set, so at most 2000 get in. */
    limits[RL_CREATE_KEY] = (struct config_rate){1000, 3600};
    ratelimit_set_limits(rl, limits);
    struct taker t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct taker){rl, 1700000000000LL - 1700000000000LL % 3600000 + 5, 0};
        pthread_create(&th[i], NULL, take_many, &t[i]);
    }
    for (int i = 0; i < 200; i++) {
        limits[RL_CREATE_KEY].limit = i % 2 ? 1000 : 2000;
        ratelimit_set_limits(rl, limits);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += t[i].admitted;
    }
    CHECK(total >= 1000 && total <= 2000);
    ratelimit_free(rl);
}

void test_ratelimit_password(void)
{
    struct ratelimit *rl = limiter(100, 60, NULL); /* 3 per link, 5 per client */
    struct client_ip a, b;
    CHECK(clientaddr_parse("203.0.113.5", 11, &a));
    CHECK(clientaddr_parse("2001:db8::5", 11, &b));
    int64_t t = 1700000000000LL - 1700000000000LL % 60000 + 10;
    struct rl_info in;
    int ok = 0;
    for (int i = 0; i < 5; i++)
        ok += ratelimit_take_password(rl, &a, "link1", 5, t, &in);
    CHECK_EQ_INT(ok, 3); /* per client and link */
    CHECK_EQ_INT(in.limit, 3);
    CHECK(in.retry_after > 0);
    ok = 0;
    for (int i = 0; i < 5; i++)
        ok += ratelimit_take_password(rl, &a, "link2", 5, t, &in);
    CHECK_EQ_INT(ok, 0); /* the client's 5 over all links are used up */
    CHECK_EQ_INT(in.limit, 5);
    /* Another client is not affected. */
    CHECK(ratelimit_take_password(rl, &b, "link1", 5, t, &in));
    CHECK_EQ_INT(in.remaining, 2);
    ratelimit_free(rl);
}

/* ---- Redis ---- */

static const char *redis_url(void)
{
    const char *u = getenv("SHORTD_TEST_REDIS");
    if (u && *u)
        return u;
    printf("ratelimit: SHORTD_TEST_REDIS is unset: Redis checks skipped (tests/redis.sh runs "
           "them)\n");
    return NULL;
}

void test_ratelimit_redis(void)
{
    const char *url = redis_url();
    if (!url) {
        CHECK(true);
        return;
    }
    struct rcache *rc1 = NULL, *rc2 = NULL;
    CHECK_EQ_INT(rcache_new(url, 500, &rc1), ERR_OK);
    CHECK_EQ_INT(rcache_new(url, 500, &rc2), ERR_OK);
    struct ratelimit *n1 = limiter(7, 3600, rc1), *n2 = limiter(7, 3600, rc2);
    /* A key of this run only: the hash is keyed by the same secret on both. */
    char key[64];
    int kn = snprintf(key, sizeof(key), "addr:test-%ld-%d", (long)getpid(), rand());
    int64_t now = now_ms();
    struct rl_info in;
    int ok = 0;
    for (int i = 0; i < 20; i++)
        ok += ratelimit_take(i % 2 ? n1 : n2, RL_AUTH, key, (size_t)kn, now, &in);
    CHECK_EQ_INT(ok, 7); /* one count for both nodes */
    CHECK_EQ_INT(in.remaining, 0);
    /* The refusal seen through Redis is remembered for peeks. */
    CHECK(!ratelimit_peek(n1, RL_AUTH, key, (size_t)kn, now, &in));

    /* Redis unreachable: each node limits on its own and nothing fails. */
    struct rcache *dead = NULL;
    CHECK_EQ_INT(rcache_new("redis://127.0.0.1:1", 50, &dead), ERR_OK);
    struct ratelimit *n3 = limiter(7, 3600, dead);
    ok = 0;
    for (int i = 0; i < 20; i++)
        ok += ratelimit_take(n3, RL_AUTH, key, (size_t)kn, now, &in);
    CHECK_EQ_INT(ok, 7);
    ratelimit_free(n3);
    rcache_free(dead);
    ratelimit_free(n1);
    ratelimit_free(n2);
    rcache_free(rc1);
    rcache_free(rc2);
}
