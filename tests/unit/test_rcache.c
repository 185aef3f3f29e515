/* test_rcache.c - the Redis cache tier and the invalidation bus, against a
 * real Redis (SHORTD_TEST_REDIS, started by tests/redis.sh) and a real
 * PostgreSQL (SHORTD_TEST_PG, tests/pg.sh); `tests/pg.sh tests/redis.sh
 * build/asan/unit_tests` runs everything. What needs no server (URLs, the
 * breaker against a closed port, the bus's queue) always runs; the rest is
 * skipped with one line when its variable is unset.
 *
 * Outages are real: Redis is stalled with DEBUG SLEEP from another
 * connection, or stopped with SHUTDOWN NOSAVE and started again from
 * SHORTD_TEST_REDIS_CONF on the same port. */
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "store/bus.h"
#include "base/err.h"
#include "base/log.h"
#include "redirect/rcache.h"
#include "store/store_links.h"
#include "test.h"
#include "base/timeutil.h"

#include "base/banned.h"

#define CLOSED_PORT_URL "redis://127.0.0.1:1" /* nothing listens: refused at once */
#define DAY_MS (24 * 3600 * 1000LL)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The server URLs, or NULL after one line saying what is skipped. */
static const char *redis_url(void)
{
    static bool noted;
    const char *u = getenv("SHORTD_TEST_REDIS");
    if (u && *u)
        return u;
    if (!noted)
        printf("rcache: SHORTD_TEST_REDIS is unset: Redis checks skipped "
               "(tests/redis.sh runs them)\n");
    noted = true;
    return NULL;
}

static const char *pg_url(void)
{
    static bool noted;
    const char *u = getenv("SHORTD_TEST_PG");
    if (u && *u)
        return u;
    if (!noted)
        printf("bus: SHORTD_TEST_PG is unset: PostgreSQL checks skipped "
               "(tests/pg.sh runs them)\n");
    noted = true;
    return NULL;
}

static const char *redis_conf(void)
{
    static bool noted;
    const char *c = getenv("SHORTD_TEST_REDIS_CONF");
    if (c && *c)
        return c;
    if (!noted)
        printf("rcache: SHORTD_TEST_REDIS_CONF is unset: Redis restarts skipped "
               "(tests/redis.sh sets it)\n");
    noted = true;
    return NULL;
}

/* Diagnostics off while no thread of ours runs (log_level is a plain global). */
static enum log_level quiet(void)
{
    signal(SIGPIPE, SIG_IGN); /* as serve.c: hiredis writes to closed sockets */
    enum log_level saved = log_level;
    log_level = LOG_OFF;
    return saved;
}

/* ---- a side connection to the test Redis ---- */

static redisContext *raw(void)
{
    struct rcache_addr a;
    if (!redis_url() || rcache_url_parse(redis_url(), &a) != ERR_OK)
        return NULL;
    char why[128];
    redisContext *c = rcache_connect(&a, 2000, why, sizeof(why));
    if (c)
        rcache_set_timeout(c, 5000);
    else
        test_note("cannot connect to SHORTD_TEST_REDIS: %s", why);
    return c;
}

/* Runs a command on a fresh side connection; its integer reply, or -1. */
static long long raw_int(const char *fmt, const char *arg)
{
    redisContext *c = raw();
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, fmt, arg);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

static char *raw_get(const char *key)
{
    redisContext *c = raw();
    if (!c)
        return NULL;
    redisReply *r = redisCommand(c, "GET %s", key);
    char *v = r && r->type == REDIS_REPLY_STRING ? slice_dup((struct slice){r->str, r->len}) : NULL;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* Runs a command whose words are split at spaces; false on an error reply. */
static bool raw_ok(const char *cmd)
{
    redisContext *c = raw();
    if (!c)
        return false;
    char words[256];
    snprintf(words, sizeof(words), "%s", cmd);
    const char *argv[16];
    int argc = 0;
    for (char *w = strtok(words, " "); w && argc < 16; w = strtok(NULL, " "))
        argv[argc++] = w;
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (r && !ok)
        test_note("%s: %s", cmd, r->str);
    freeReplyObject(r);
    redisFree(c);
    return ok;
}

static bool redis_answers(void)
{
    struct rcache_addr a;
    if (rcache_url_parse(redis_url(), &a) != ERR_OK)
        return false;
    char why[128];
    redisContext *c = rcache_connect(&a, 200, why, sizeof(why));
    if (!c)
        return false;
    redisReply *r = redisCommand(c, "PING");
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* Stops the test Redis (no save) and waits until it refuses connections. */
static bool redis_stop(void)
{
    redisContext *c = raw();
    if (!c)
        return false;
    redisReply *r = redisCommand(c, "SHUTDOWN NOSAVE"); /* no reply: it is gone */
    freeReplyObject(r);
    redisFree(c);
    for (int i = 0; i < 100; i++) {
        if (!redis_answers())
            return true;
        sleep_ms(50);
    }
    return false;
}

/* Starts it again from tests/redis.sh's config, on the same port. */
static bool redis_start(void)
{
    const char *conf = redis_conf();
    if (!conf)
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        /* The daemon must not keep our sockets open. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        execlp("redis-server", "redis-server", conf, "--daemonize", "yes", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    for (int i = 0; i < 100; i++) {
        if (redis_answers())
            return true;
        sleep_ms(50);
    }
    return false;
}

/* ---- stderr, captured to check what is logged ---- */

struct capture {
    int saved;
    char path[64];
};

static void capture_start(struct capture *c)
{
    snprintf(c->path, sizeof(c->path), "/tmp/shortd-rcache-log-XXXXXX");
    int fd = mkstemp(c->path);
    c->saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* The captured text (free it). */
static char *capture_end(struct capture *c)
{
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    struct buf b = BUF_INIT;
    FILE *f = fopen(c->path, "r");
    char chunk[512];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_add(&b, chunk, n);
    if (f)
        fclose(f);
    unlink(c->path);
    buf_adds(&b, "");
    return buf_detach(&b, NULL);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* ---- links ---- */

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

static int get(struct rcache *r, const char *code, struct link *out)
{
    return rcache_get(r, code, strlen(code), out);
}

static long long pttl(const char *code) { return raw_int("PTTL shortd:l:%s", code); }

/* ---- the cache tier ---- */

void test_rcache_url(void)
{
    static const struct {
        const char *url;
        int rc;
        const char *host;
        int port, db;
        const char *user, *pass;
    } cases[] = {
        {"redis://127.0.0.1:6380", ERR_OK, "127.0.0.1", 6380, 0, "", ""},
        {"redis://cache.internal", ERR_OK, "cache.internal", 6379, 0, "", ""},
        {"redis://127.0.0.1:6379/", ERR_OK, "127.0.0.1", 6379, 0, "", ""},
        {"redis://127.0.0.1:6379/5", ERR_OK, "127.0.0.1", 6379, 5, "", ""},
        {"redis://:s3cret@10.0.0.2:7000/1", ERR_OK, "10.0.0.2", 7000, 1, "", "s3cret"},
        {"redis://app:p%40ss%3Aw@h:1", ERR_OK, "h", 1, 0, "app", "p@ss:w"},
        {"redis://p@ss@h:2", ERR_OK, "h", 2, 0, "", "p@ss"},
        {"redis://[::1]:6390/2", ERR_OK, "::1", 6390, 2, "", ""},
        {"redis://[::1]", ERR_OK, "::1", 6379, 0, "", ""},
        {"rediss://127.0.0.1:6379", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"http://127.0.0.1:6379", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"127.0.0.1:6379", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://:6379", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h:0", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h:65536", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h:12x", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h:", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h/x", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h/1/2", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://h?db=1", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://[::1", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://:@h", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://:%zz@h", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://:a%0@h", ERR_INVALID, NULL, 0, 0, NULL, NULL},
        {"redis://ho st:1", ERR_INVALID, NULL, 0, 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rcache_addr a;
        int rc = rcache_url_parse(cases[i].url, &a);
        bool ok = CHECK_EQ_INT(rc, cases[i].rc);
        if (ok && rc == ERR_OK)
            ok = CHECK_EQ_STR(a.host, cases[i].host) && CHECK_EQ_INT(a.port, cases[i].port) &&
                 CHECK_EQ_INT(a.db, cases[i].db) && CHECK_EQ_STR(a.user, cases[i].user) &&
                 CHECK_EQ_STR(a.pass, cases[i].pass);
        if (!ok)
            test_note("url '%s'", cases[i].url);
    }
    struct rcache *r = (struct rcache *)1;
    CHECK_EQ_INT(rcache_new("redis://", 100, &r), ERR_INVALID);
    CHECK(r == NULL);
    CHECK_EQ_INT(rcache_new(NULL, 100, &r), ERR_INVALID);
    CHECK_EQ_INT(rcache_new("redis://127.0.0.1:6379", 0, &r), ERR_INVALID);
    rcache_free(NULL);

    /* Nothing is connected at start, and codes that cannot be are refused. */
    CHECK_EQ_INT(rcache_new(CLOSED_PORT_URL, 100, &r), ERR_OK);
    struct link l;
    CHECK_EQ_INT(rcache_get(r, "", 0, &l), ERR_INVALID);
    CHECK_EQ_INT(get(r, "has space", &l), ERR_INVALID);
    CHECK_EQ_INT(get(r, "0123456789012345678901234567890123456789", &l), ERR_INVALID);
    uint64_t hits, misses, errors;
    bool down = true;
    rcache_counts(r, &hits, &misses, &errors, &down);
    CHECK(hits == 0 && misses == 0 && errors == 0 && !down);
    rcache_free(r);
}

/* Against a closed port: the first call fails at once (refused) and opens the
 * breaker; until the back-off ends, calls answer ERR_BUSY without trying; a
 * failed probe doubles the back-off. One warning for the whole outage, and
 * never the password. */
void test_rcache_breaker(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct rcache *r = NULL;
    CHECK_EQ_INT(rcache_new("redis://:hunter2@127.0.0.1:1", 200, &r), ERR_OK);
    struct link l = mk("abc123", "https://example.com/", 0, LINK_ACTIVE), out;
    struct capture cap;
    capture_start(&cap);
    int64_t t0 = mono_ms();
    int rc1 = get(r, "abc123", &out);
    int64_t t1 = mono_ms();
    int rc2 = rcache_put(r, &l, now_ms());
    int rc3 = rcache_del(r, "abc123", 6);
    int64_t t2 = mono_ms();
    uint64_t hits, misses, errors1, errors2, errors3;
    bool down1, down2;
    rcache_counts(r, &hits, &misses, &errors1, &down1);
    sleep_ms(300);                    /* past the first 250 ms */
    int rc4 = get(r, "abc123", &out); /* the probe: fails again, 500 ms now */
    rcache_counts(r, &hits, &misses, &errors2, &down2);
    sleep_ms(300); /* within the 500 ms */
    int rc5 = get(r, "abc123", &out);
    rcache_counts(r, &hits, &misses, &errors3, &down2);
    char *log = capture_end(&cap);

    CHECK_EQ_INT(rc1, ERR_BUSY);
    CHECK(t1 - t0 < 150);
    CHECK_EQ_INT(rc2, ERR_BUSY);
    CHECK_EQ_INT(rc3, ERR_BUSY);
    CHECK(t2 - t1 < 5); /* the open breaker: no network at all */
    CHECK(down1);
    CHECK_EQ_INT(errors1, 1);
    CHECK_EQ_INT(rc4, ERR_BUSY);
    CHECK_EQ_INT(errors2, 2);
    CHECK_EQ_INT(rc5, ERR_BUSY);
    CHECK_EQ_INT(errors3, 2);
    CHECK(down2);
    CHECK_EQ_INT(count_of(log, "warn redis at '127.0.0.1:1' failed"), 1);
    CHECK(!strstr(log, "hunter2"));
    if (count_of(log, "failed") != 1)
        test_note("log: %s", log);
    free(log);

    /* Writes turned away are remembered for a DEL later, up to a bound. */
    capture_start(&cap);
    char code[24];
    for (int i = 0; i < 4100; i++) {
        snprintf(code, sizeof(code), "p%d", i);
        struct link p = mk(code, "https://example.com/", 0, LINK_ACTIVE);
        rcache_put(r, &p, now_ms());
    }
    log = capture_end(&cap);
    CHECK_EQ_INT(count_of(log, "error redis at '127.0.0.1:1' missed more than 4096 changes"), 1);
    free(log);
    rcache_free(r);
}

struct getter {
    struct rcache *r;
    const char *code;
    int rounds;
    atomic_int failures;
};

static void *get_many(void *arg)
{
    struct getter *g = arg;
    for (int i = 0; i < g->rounds; i++) {
        struct link l;
        int rc = get(g->r, g->code, &l);
        if (rc == ERR_OK && (!l.url || strcmp(l.url, "https://example.com/shared") != 0))
            rc = ERR_STORAGE;
        if (rc != ERR_OK)
            atomic_fetch_add(&g->failures, 1);
        link_release(&l);
    }
    return NULL;
}

void test_rcache_round_trip(void)
{
    struct rcache *r = NULL;
    CHECK_EQ_INT(rcache_new(CLOSED_PORT_URL, 100, &r), ERR_OK);
    struct link out;
    CHECK_EQ_INT(get(r, "no/slash", &out), ERR_INVALID);
    rcache_free(r);
    r = NULL;
    if (!redis_url())
        return;
    enum log_level saved = quiet();
    CHECK(raw_ok("FLUSHALL"));
    CHECK_EQ_INT(rcache_new(redis_url(), 1000, &r), ERR_OK);
    int64_t now = now_ms();

    /* A live link: everything a redirect needs, and only that. */
    struct link a = mk("abc123", "https://example.com/a?x=1|2#frag", 0, LINK_ACTIVE);
    a.permanent = true;
    a.owner = 42;
    a.title = "secret title";
    a.note = "private note";
    a.tags = "[\"t\"]";
    a.clicks = 99;
    CHECK_EQ_INT(rcache_put(r, &a, now), ERR_OK);
    memset(&out, 0xff, sizeof(out));
    CHECK_EQ_INT(get(r, "abc123", &out), ERR_OK);
    CHECK_EQ_STR(out.code, "abc123");
    CHECK_EQ_STR(out.url, a.url);
    CHECK_EQ_INT(out.state, LINK_ACTIVE);
    CHECK(out.permanent);
    CHECK_EQ_INT(out.expires_at, 0);
    CHECK(!out.title && !out.note && !out.tags && out.owner == 0 && out.clicks == 0);
    link_release(&out);
    char *v = raw_get("shortd:l:abc123");
    CHECK_EQ_STR(v, "1|0|1|0|https://example.com/a?x=1|2#frag");
    free(v);
    long long ttl = pttl("abc123");
    CHECK(ttl > DAY_MS - 10000 && ttl <= DAY_MS);

    /* Untracked (track: false): a bit beside permanent, read back. */
    struct link u = mk("quiet1", "https://example.com/q", 0, LINK_ACTIVE);
    u.untracked = true;
    CHECK_EQ_INT(rcache_put(r, &u, now), ERR_OK);
    v = raw_get("shortd:l:quiet1");
    CHECK_EQ_STR(v, "1|0|2|0|https://example.com/q");
    free(v);
    CHECK_EQ_INT(get(r, "quiet1", &out), ERR_OK);
    CHECK(out.untracked && !out.permanent);
    link_release(&out);
    CHECK_EQ_INT(get(r, "abc123", &out), ERR_OK);
    CHECK(!out.untracked && out.permanent);
    link_release(&out);

    /* Expiring: the entry lives until the link expires, never past 24 h. */
    struct link e = mk("exp10m", "https://example.com/e", now + 600000, LINK_ACTIVE);
    CHECK_EQ_INT(rcache_put(r, &e, now), ERR_OK);
    ttl = pttl("exp10m");
    CHECK(ttl > 590000 && ttl <= 600000);
    CHECK_EQ_INT(get(r, "exp10m", &out), ERR_OK);
    CHECK_EQ_INT(out.expires_at, now + 600000);
    CHECK(!out.permanent);
    link_release(&out);
    struct link far = mk("exp48h", "https://example.com/f", now + 2 * DAY_MS, LINK_ACTIVE);
    CHECK_EQ_INT(rcache_put(r, &far, now), ERR_OK);
    ttl = pttl("exp48h");
    CHECK(ttl > DAY_MS - 10000 && ttl <= DAY_MS);

    /* What answers 410 is kept a minute: expired, deleted, disabled. */
    struct link gone[3] = {
        mk("expired", "https://example.com/x", now - 1000, LINK_ACTIVE),
        mk("deleted", NULL, 0, LINK_DELETED),
        mk("disabled", "https://example.com/d", 0, LINK_DISABLED),
    };
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(rcache_put(r, &gone[i], now), ERR_OK);
        ttl = pttl(gone[i].code);
        if (!CHECK(ttl > 50000 && ttl <= 60000))
            test_note("%s: PTTL %lld", gone[i].code, ttl);
        CHECK_EQ_INT(get(r, gone[i].code, &out), ERR_OK);
        CHECK_EQ_INT(out.state, gone[i].state);
        CHECK_EQ_INT(out.expires_at, gone[i].expires_at);
        CHECK(gone[i].url ? out.url && !strcmp(out.url, gone[i].url) : !out.url);
        link_release(&out);
    }

    /* A fill never overwrites; a put does; a delete removes. */
    struct link b1 = mk("fillme", "https://example.com/1", 0, LINK_ACTIVE);
    struct link b2 = mk("fillme", "https://example.com/2", 0, LINK_ACTIVE);
    CHECK_EQ_INT(rcache_put(r, &b1, now), ERR_OK);
    CHECK_EQ_INT(rcache_fill(r, &b2, now), ERR_OK);
    CHECK_EQ_INT(get(r, "fillme", &out), ERR_OK);
    CHECK_EQ_STR(out.url, "https://example.com/1");
    link_release(&out);
    CHECK_EQ_INT(rcache_del(r, "fillme", 6), ERR_OK);
    CHECK_EQ_INT(get(r, "fillme", &out), ERR_NOTFOUND);
    CHECK_EQ_INT(rcache_del(r, "fillme", 6), ERR_OK); /* absent: fine */
    CHECK_EQ_INT(rcache_fill(r, &b2, now), ERR_OK);
    CHECK_EQ_INT(get(r, "fillme", &out), ERR_OK);
    CHECK_EQ_STR(out.url, "https://example.com/2");
    link_release(&out);

    /* Misses: absent, or a value that is not ours. */
    CHECK_EQ_INT(get(r, "nosuch", &out), ERR_NOTFOUND);
    CHECK(out.url == NULL);
    CHECK(raw_ok("SET shortd:l:junk 2|x"));
    CHECK_EQ_INT(get(r, "junk", &out), ERR_NOTFOUND);
    CHECK(raw_ok("SET shortd:l:junk2 1|0|0|12a|https://x"));
    CHECK_EQ_INT(get(r, "junk2", &out), ERR_NOTFOUND);
    uint64_t hits, misses, errors;
    bool down;
    rcache_counts(r, &hits, &misses, &errors, &down);
    CHECK_EQ_INT(hits, 9);
    CHECK_EQ_INT(misses, 4);
    CHECK_EQ_INT(errors, 0);
    CHECK(!down);

    /* Many threads at once, each on its own connection. */
    struct link s = mk("shared", "https://example.com/shared", 0, LINK_ACTIVE);
    CHECK_EQ_INT(rcache_put(r, &s, now), ERR_OK);
    struct getter g = {r, "shared", 200, 0};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, get_many, &g);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(atomic_load(&g.failures), 0);
    rcache_free(r);

    /* A database number, and an ACL user with a password. */
    char url[300];
    snprintf(url, sizeof(url), "%s/3", redis_url());
    CHECK_EQ_INT(rcache_new(url, 1000, &r), ERR_OK);
    struct link d = mk("indb3", "https://example.com/3", 0, LINK_ACTIVE);
    CHECK_EQ_INT(rcache_put(r, &d, now), ERR_OK);
    CHECK_EQ_INT(raw_int("EXISTS %s", "shortd:l:indb3"), 0); /* not in db 0 */
    CHECK_EQ_INT(get(r, "indb3", &out), ERR_OK);
    link_release(&out);
    rcache_free(r);
    CHECK(raw_ok("ACL SETUSER shortdtest on >pa@ss ~shortd:* +@all"));
    snprintf(url, sizeof(url), "redis://shortdtest:pa%%40ss@%s", redis_url() + 8);
    CHECK_EQ_INT(rcache_new(url, 1000, &r), ERR_OK);
    CHECK_EQ_INT(get(r, "abc123", &out), ERR_OK);
    link_release(&out);
    rcache_free(r);
    snprintf(url, sizeof(url), "redis://shortdtest:wrong@%s", redis_url() + 8);
    CHECK_EQ_INT(rcache_new(url, 1000, &r), ERR_OK);
    CHECK_EQ_INT(get(r, "abc123", &out), ERR_BUSY);
    rcache_free(r);
    CHECK(raw_ok("ACL DELUSER shortdtest"));
    log_level = saved;
}

static void *debug_sleep(void *arg)
{
    (void)arg;
    redisContext *c = raw();
    if (c) {
        redisReply *r = redisCommand(c, "DEBUG SLEEP 1");
        freeReplyObject(r);
        redisFree(c);
    }
    return NULL;
}

struct one_get {
    struct rcache *r;
    int rc;
    int64_t ms;
};

static void *timed_get(void *arg)
{
    struct one_get *g = arg;
    struct link l;
    int64_t t0 = mono_ms();
    g->rc = get(g->r, "stall1", &l);
    g->ms = mono_ms() - t0;
    link_release(&l);
    return NULL;
}

/* A Redis that stalls for a second (DEBUG SLEEP 1 from another connection):
 * a get gives up after the timeout, not the second; the breaker then answers
 * at once, on every thread, and closes by itself once Redis answers again;
 * the puts it turned away meanwhile become deletes, so nothing stale stays. */
void test_rcache_stalled(void)
{
    if (!redis_url()) {
        CHECK(true);
        return;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rcache *r = NULL;
    CHECK_EQ_INT(rcache_new(redis_url(), 200, &r), ERR_OK);
    struct link l = mk("stall1", "https://example.com/s", 0, LINK_ACTIVE), out;
    struct link stale = mk("stale1", "https://example.com/old", 0, LINK_ACTIVE);
    CHECK_EQ_INT(rcache_put(r, &l, now_ms()), ERR_OK);
    CHECK_EQ_INT(rcache_put(r, &stale, now_ms()), ERR_OK);
    CHECK_EQ_INT(get(r, "stall1", &out), ERR_OK);
    link_release(&out);

    struct capture cap;
    capture_start(&cap);
    pthread_t sleeper;
    pthread_create(&sleeper, NULL, debug_sleep, NULL);
    sleep_ms(100); /* DEBUG SLEEP has begun */
    int64_t t0 = mono_ms();
    int rc1 = get(r, "stall1", &out);
    int64_t stalled = mono_ms() - t0;
    t0 = mono_ms();
    int rc2 = get(r, "stall1", &out);
    int rc3 = rcache_put(r, &l, now_ms());
    int64_t open = mono_ms() - t0;
    struct one_get other = {r, -1, -1}; /* another thread, no connection yet */
    pthread_t t;
    pthread_create(&t, NULL, timed_get, &other);
    pthread_join(t, NULL);
    uint64_t hits, misses, errors;
    bool down;
    rcache_counts(r, &hits, &misses, &errors, &down);
    /* A change that cannot reach Redis now: what Redis holds is stale. */
    struct link del = mk("stale1", NULL, 0, LINK_DELETED);
    int rc4 = rcache_put(r, &del, now_ms());
    pthread_join(sleeper, NULL); /* Redis answers again */
    int rc = ERR_BUSY;
    int64_t t1 = mono_ms();
    while (rc == ERR_BUSY && mono_ms() - t1 < 6000) {
        rc = get(r, "stall1", &out);
        if (rc == ERR_BUSY)
            sleep_ms(20);
    }
    int64_t recovered = mono_ms() - t1;
    bool down_after;
    rcache_counts(r, &hits, &misses, &errors, &down_after);
    char *log = capture_end(&cap);

    CHECK_EQ_INT(rc1, ERR_BUSY);
    if (!CHECK(stalled >= 150 && stalled < 600))
        test_note("a get on a stalled Redis took %lld ms (timeout 200)", (long long)stalled);
    CHECK_EQ_INT(rc2, ERR_BUSY);
    CHECK_EQ_INT(rc3, ERR_BUSY);
    CHECK(open < 10);
    CHECK_EQ_INT(other.rc, ERR_BUSY);
    CHECK(other.ms < 10);
    CHECK(down);
    /* Both puts turned away were replayed as deletes: nothing stale stays. */
    CHECK_EQ_INT(rc4, ERR_BUSY);
    CHECK_EQ_INT(rc, ERR_NOTFOUND);
    CHECK_EQ_INT(get(r, "stale1", &out), ERR_NOTFOUND);
    CHECK_EQ_INT(rcache_put(r, &l, now_ms()), ERR_OK);
    CHECK_EQ_INT(get(r, "stall1", &out), ERR_OK);
    CHECK_EQ_STR(out.url, l.url);
    link_release(&out);
    if (!CHECK(recovered < 2500))
        test_note("recovered %lld ms after Redis woke", (long long)recovered);
    CHECK(!down_after);
    CHECK_EQ_INT(count_of(log, "failed: timed out"), 1);
    CHECK_EQ_INT(count_of(log, "is back"), 1);
    free(log);
    rcache_free(r);
}

/* A thread that keeps its connection across the phases of a test. */
struct worker {
    struct rcache *r;
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int todo, done; /* gets asked for, and answered */
    int rc;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->todo == w->done)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->todo < 0)
            break;
        pthread_mutex_unlock(&w->mu);
        struct link l;
        int rc = get(w->r, "restart1", &l);
        link_release(&l);
        pthread_mutex_lock(&w->mu);
        w->rc = rc;
        w->done++;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int worker_get(struct worker *w)
{
    pthread_mutex_lock(&w->mu);
    w->todo++;
    pthread_cond_broadcast(&w->cv);
    while (w->done != w->todo)
        pthread_cond_wait(&w->cv, &w->mu);
    int rc = w->rc;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* Redis stopped and started again on the same port: ERR_BUSY at once while
 * it is away, few attempts (the back-off), and every thread, including one
 * whose connection dates from before, works again by itself. */
void test_rcache_restart(void)
{
    if (!redis_url() || !redis_conf()) {
        CHECK(true);
        return;
    }
    enum log_level saved = quiet();
    struct rcache *r = NULL;
    CHECK_EQ_INT(rcache_new(redis_url(), 300, &r), ERR_OK);
    struct link l = mk("restart1", "https://example.com/r", 0, LINK_ACTIVE), out;
    CHECK_EQ_INT(rcache_put(r, &l, now_ms()), ERR_OK);
    struct worker w = {.r = r};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_create(&w.t, NULL, worker_main, &w);
    CHECK_EQ_INT(worker_get(&w), ERR_OK);

    if (!CHECK(redis_stop()))
        goto out;
    int64_t t0 = mono_ms();
    CHECK_EQ_INT(get(r, "restart1", &out), ERR_BUSY);
    int64_t first = mono_ms() - t0;
    CHECK(first < 300);
    int busy = 0, calls = 0;
    int64_t t1 = mono_ms();
    while (mono_ms() - t1 < 1500) {
        int64_t c0 = mono_ms();
        busy += get(r, "restart1", &out) == ERR_BUSY;
        calls++;
        CHECK(mono_ms() - c0 < 100); /* refused at once, or turned away */
        sleep_ms(10);
    }
    CHECK_EQ_INT(busy, calls);
    uint64_t hits, misses, errors;
    bool down;
    rcache_counts(r, &hits, &misses, &errors, &down);
    CHECK(down);
    if (!CHECK(errors >= 2 && errors <= 5)) /* the first failure, then 250, 500, 1000 ms */
        test_note("%llu failed attempts in 1.5 s", (unsigned long long)errors);

    if (!CHECK(redis_start()))
        goto out;
    int rc = ERR_BUSY;
    t1 = mono_ms();
    while (rc == ERR_BUSY && mono_ms() - t1 < 7000) {
        rc = get(r, "restart1", &out);
        if (rc == ERR_BUSY)
            sleep_ms(20);
    }
    CHECK_EQ_INT(rc, ERR_NOTFOUND);             /* a new, empty Redis */
    CHECK_EQ_INT(worker_get(&w), ERR_NOTFOUND); /* a new connection, lazily */
    CHECK_EQ_INT(rcache_put(r, &l, now_ms()), ERR_OK);
    CHECK_EQ_INT(worker_get(&w), ERR_OK);
    rcache_counts(r, &hits, &misses, &errors, &down);
    CHECK(!down);
out:
    pthread_mutex_lock(&w.mu);
    w.todo = -1;
    pthread_cond_broadcast(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(w.t, NULL);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    rcache_free(r);
    if (!redis_answers())
        redis_start();
    log_level = saved;
}

/* ---- the bus ---- */

#define INBOX_MAX 512

/* What one node's on_code saw. */
struct inbox {
    pthread_mutex_t mu;
    char codes[INBOX_MAX][32];
    int n;
    int resyncs; /* on_code(NULL, 0) */
};

static void inbox_init(struct inbox *in)
{
    memset(in, 0, sizeof(*in));
    pthread_mutex_init(&in->mu, NULL);
}

static void on_code(const char *code, size_t n, void *arg)
{
    struct inbox *in = arg;
    pthread_mutex_lock(&in->mu);
    if (!code)
        in->resyncs++;
    else if (in->n < INBOX_MAX && n < sizeof(in->codes[0])) {
        memcpy(in->codes[in->n], code, n);
        in->codes[in->n++][n] = '\0';
    }
    pthread_mutex_unlock(&in->mu);
}

static int inbox_count(struct inbox *in, const char *code)
{
    pthread_mutex_lock(&in->mu);
    int k = 0;
    for (int i = 0; i < in->n; i++)
        k += !strcmp(in->codes[i], code);
    pthread_mutex_unlock(&in->mu);
    return k;
}

static int inbox_resyncs(struct inbox *in)
{
    pthread_mutex_lock(&in->mu);
    int k = in->resyncs;
    pthread_mutex_unlock(&in->mu);
    return k;
}

/* Milliseconds until 'code' was seen 'times' times, or -1 after 'limit'. */
static int64_t wait_code(struct inbox *in, const char *code, int times, int64_t limit)
{
    int64_t t0 = mono_ms();
    while (mono_ms() - t0 < limit) {
        if (inbox_count(in, code) >= times)
            return mono_ms() - t0;
        sleep_ms(5);
    }
    return -1;
}

/* Each transport says (NULL, 0) once it is first up: wait for 'k' of them. */
static bool wait_resyncs(struct inbox *in, int k, int64_t limit)
{
    int64_t t0 = mono_ms();
    while (mono_ms() - t0 < limit) {
        if (inbox_resyncs(in) >= k)
            return true;
        sleep_ms(5);
    }
    return false;
}

static bool wait_published(struct bus *b, uint64_t n, int64_t limit)
{
    int64_t t0 = mono_ms();
    while (mono_ms() - t0 < limit) {
        uint64_t published, received, errors;
        bus_counts(b, &published, &received, &errors);
        if (published >= n)
            return true;
        sleep_ms(5);
    }
    return false;
}

static void pub(struct bus *b, const char *code) { bus_publish(b, code, strlen(code)); }

/* Whether codes from 'from' reach 'in' on both transports within 'limit' ms.
 * A transport that comes up while the other has been up all along owes no
 * resync (bus.c), so counting resyncs cannot tell that both are up: when
 * both connect within the same millisecond only one resync is made. */
static bool both_paths_up(struct bus *from, struct inbox *in, int64_t limit)
{
    int64_t t0 = mono_ms();
    for (int i = 0; mono_ms() - t0 < limit; i++) {
        char code[24];
        snprintf(code, sizeof(code), "ready%d", i);
        pub(from, code);
        if (wait_code(in, code, 2, 100) >= 0)
            return true;
    }
    return false;
}

/* Two nodes on one transport set: each sees what either publishes, within
 * the second the redirect promises, every code of a burst, nothing that
 * cannot be a code. */
static void two_nodes(const char *redis, const char *pg, int resyncs)
{
    struct inbox ia, ib;
    inbox_init(&ia);
    inbox_init(&ib);
    struct bus *a = NULL, *b = NULL;
    CHECK_EQ_INT(bus_new(redis, pg, 1000, on_code, &ia, &a), ERR_OK);
    CHECK_EQ_INT(bus_new(redis, pg, 1000, on_code, &ib, &b), ERR_OK);
    if (!CHECK(a && b && wait_resyncs(&ia, resyncs, 5000) && wait_resyncs(&ib, resyncs, 5000)))
        goto out;
    pub(a, "hello1");
    int64_t ms = wait_code(&ib, "hello1", 1, 1000);
    if (!CHECK(ms >= 0))
        test_note("not delivered within 1 s");
    CHECK(wait_code(&ia, "hello1", 1, 1000) >= 0); /* the publisher's own node too */
    pub(b, "back_1");
    CHECK(wait_code(&ia, "back_1", 1, 1000) >= 0);
    char code[24];
    for (int i = 0; i < 200; i++) {
        snprintf(code, sizeof(code), "burst%d", i);
        pub(a, code);
    }
    pub(a, "not a code");
    pub(a, "");
    CHECK(wait_code(&ib, "burst199", 1, 2000) >= 0);
    int seen = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(code, sizeof(code), "burst%d", i);
        seen += inbox_count(&ib, code) == 1;
    }
    CHECK_EQ_INT(seen, 200);
    /* A batch reaches the other node before its publisher counts it (the
     * count follows the send): wait for the count, on a loaded machine too */
    wait_published(a, 201, 2000);
    uint64_t published, received, errors;
    bus_counts(a, &published, &received, &errors);
    CHECK_EQ_INT(published, 201);
    CHECK_EQ_INT(errors, 0);
    wait_published(b, 1, 2000);
    bus_counts(b, &published, &received, &errors);
    CHECK_EQ_INT(published, 1);
    CHECK(received >= 202);
    CHECK_EQ_INT(inbox_count(&ib, "not a code"), 0);
out:;
    int64_t t0 = mono_ms();
    bus_free(a);
    bus_free(b);
    CHECK(mono_ms() - t0 < 500);
    pthread_mutex_destroy(&ia.mu);
    pthread_mutex_destroy(&ib.mu);
}

void test_bus_redis(void)
{
    struct bus *b = (struct bus *)1;
    struct inbox in;
    inbox_init(&in);
    CHECK_EQ_INT(bus_new(NULL, NULL, 100, on_code, &in, &b), ERR_INVALID);
    CHECK(b == NULL);
    CHECK_EQ_INT(bus_new("redis://h:x", NULL, 100, on_code, &in, &b), ERR_INVALID);
    enum log_level saved = quiet();
    CHECK_EQ_INT(bus_new(NULL, "mysql://x", 100, on_code, &in, &b), ERR_INVALID);
    CHECK_EQ_INT(bus_new(CLOSED_PORT_URL, NULL, 0, on_code, &in, &b), ERR_INVALID);

    /* Nothing listens: publishing never blocks, codes wait in a bounded
     * queue (the rest counted as errors), and bus_free returns at once. */
    CHECK_EQ_INT(bus_new(CLOSED_PORT_URL, NULL, 100, on_code, &in, &b), ERR_OK);
    int64_t t0 = mono_ms();
    char code[24];
    for (int i = 0; i < 5000; i++) {
        snprintf(code, sizeof(code), "q%d", i);
        pub(b, code);
    }
    CHECK(mono_ms() - t0 < 500);
    sleep_ms(100);
    uint64_t published, received, errors;
    bus_counts(b, &published, &received, &errors);
    CHECK_EQ_INT(published, 0);
    CHECK_EQ_INT(received, 0);
    CHECK(errors >= 5000 - 4096 + 1); /* dropped, and a failed connect */
    t0 = mono_ms();
    bus_free(b);
    CHECK(mono_ms() - t0 < 300);
    CHECK_EQ_INT(inbox_resyncs(&in), 0);
    bus_free(NULL);
    pthread_mutex_destroy(&in.mu);

    if (redis_url())
        two_nodes(redis_url(), NULL, 1);
    log_level = saved;
}

void test_bus_pg(void)
{
    struct inbox in;
    inbox_init(&in);
    enum log_level saved = quiet();
    struct bus *b = NULL;
    CHECK_EQ_INT(bus_new(NULL, "postgres://nobody@127.0.0.1:1/none", 100, on_code, &in, &b),
                 ERR_OK);
    pub(b, "abc");
    sleep_ms(50);
    int64_t t0 = mono_ms();
    bus_free(b);
    CHECK(mono_ms() - t0 < 300);
    pthread_mutex_destroy(&in.mu);
    if (pg_url())
        two_nodes(NULL, pg_url(), 1);
    log_level = saved;
}

/* Both transports, then Redis killed: PostgreSQL alone still delivers within
 * the second; when Redis is back, what was queued for it goes out, and since
 * PostgreSQL covered the gap nobody has to drop the whole cache. A node on
 * Redis alone does. */
void test_bus_redis_killed(void)
{
    if (!redis_url() || !pg_url() || !redis_conf()) {
        CHECK(true);
        return;
    }
    enum log_level saved = quiet();
    struct inbox ia, ib, ic;
    inbox_init(&ia);
    inbox_init(&ib);
    inbox_init(&ic);
    struct bus *a = NULL, *b = NULL, *c = NULL;
    CHECK_EQ_INT(bus_new(redis_url(), pg_url(), 500, on_code, &ia, &a), ERR_OK);
    CHECK_EQ_INT(bus_new(redis_url(), pg_url(), 500, on_code, &ib, &b), ERR_OK);
    CHECK_EQ_INT(bus_new(redis_url(), NULL, 500, on_code, &ic, &c), ERR_OK);
    if (!CHECK(wait_resyncs(&ia, 1, 15000) && wait_resyncs(&ib, 1, 15000) &&
               wait_resyncs(&ic, 1, 15000) && both_paths_up(a, &ib, 15000)))
        goto out;
    pub(a, "both1");
    CHECK(wait_code(&ib, "both1", 2, 1000) >= 0); /* once per transport */
    CHECK(wait_code(&ic, "both1", 1, 1000) >= 0);

    int rb = inbox_resyncs(&ib), rc = inbox_resyncs(&ic);
    if (!CHECK(redis_stop()))
        goto out;
    int64_t t0 = mono_ms();
    pub(a, "pgonly");
    int64_t ms = wait_code(&ib, "pgonly", 1, 1000);
    if (!CHECK(ms >= 0))
        test_note("not delivered through PostgreSQL within 1 s of Redis going away");
    CHECK(mono_ms() - t0 < 1000);
    sleep_ms(200);
    CHECK_EQ_INT(inbox_count(&ib, "pgonly"), 1);
    CHECK_EQ_INT(inbox_count(&ic, "pgonly"), 0);
    uint64_t published, received, errors;
    bus_counts(a, &published, &received, &errors);
    CHECK(errors >= 1);

    if (!CHECK(redis_start()))
        goto out;
    /* Back on Redis: what was queued for it goes out (both1 and pgonly, on
     * each transport), and C, on Redis alone, is told to drop everything. */
    CHECK(wait_published(a, 4, 8000));
    CHECK(wait_resyncs(&ic, rc + 1, 8000));
    /* Once B listens on Redis again, codes take both paths; PostgreSQL
     * covered its gap, so it was not told to drop everything. */
    bool twice = false;
    char code[24];
    for (int i = 0; i < 80 && !twice; i++) {
        snprintf(code, sizeof(code), "after%d", i);
        pub(a, code);
        twice = wait_code(&ib, code, 2, 100) >= 0;
    }
    CHECK(twice);
    CHECK_EQ_INT(inbox_resyncs(&ib), rb);
out:
    bus_free(a);
    bus_free(b);
    bus_free(c);
    pthread_mutex_destroy(&ia.mu);
    pthread_mutex_destroy(&ib.mu);
    pthread_mutex_destroy(&ic.mu);
    if (!redis_answers())
        redis_start();
    log_level = saved;
}
