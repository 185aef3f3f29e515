/* test_rules.c - the rules that cut across handlers, in-process (harness.h):
 * which routes count as creates for the rate limits (ROUTE_CREATE), the
 * store-unavailable answer (http_unavailable) on every route that fails, the
 * owner rule (owner.h) on every route of one link, and the one function
 * that tells every cache tier a link changed (tiers.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"
#include "api/router.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "harness.h"
#include "http/ratelimit.h"
#include "redirect/cache.h"
#include "redirect/rcache.h"
#include "redirect/tiers.h"
#include "store/bus.h"
#include "test.h"

#include "base/banned.h"

/* "Authorization: Bearer TOKEN" for a new key (the token is copied). */
static void key_header(struct hx *h, bool admin, char line[96])
{
    snprintf(line, 96, "Authorization: Bearer %s", hx_key(h, admin));
}

/* METHOD TARGET as the key of 'auth', with a JSON body when 'body' is set;
 * returns the status, and the answer in 'resp' when it is not NULL. */
static int call(struct hx *h, const char *auth, const char *method, const char *target,
                const char *body, struct hx_resp *resp)
{
    const char *headers[] = {auth, body ? "Content-Type: application/json" : NULL, NULL};
    struct hx_resp mine;
    struct hx_resp *out = resp ? resp : &mine;
    int status = hx_request(h, method, target, headers, body, out);
    if (!resp)
        hx_resp_release(&mine);
    return status;
}

/* Creates a link to 'url' (with 'alias' unless NULL); its code into 'code'. */
static int create(struct hx *h, const char *auth, const char *url, const char *alias, char code[32])
{
    char body[256];
    if (alias)
        snprintf(body, sizeof(body), "{\"url\":\"%s\",\"alias\":\"%s\"}", url, alias);
    else
        snprintf(body, sizeof(body), "{\"url\":\"%s\"}", url);
    struct hx_resp resp;
    int status = call(h, auth, "POST", "/api/links", body, &resp);
    const char *c = hx_json_str(&resp, "code");
    snprintf(code, 32, "%s", c ? c : "");
    if (status != 201)
        test_note("create: %d %s", status, resp.body);
    hx_resp_release(&resp);
    return status;
}

/* ---- ROUTE_CREATE ---- */

/* A limiter with only 'cls' on: 'limit' requests an hour per key. */
static struct ratelimit *only_limit(enum rl_class cls, int64_t limit)
{
    struct config_rate limits[RL_NCLASSES];
    memset(limits, 0, sizeof(limits));
    limits[cls] = (struct config_rate){limit, 3600};
    uint8_t secret[RL_SECRET_BYTES] = {7};
    return ratelimit_new(limits, secret, NULL);
}

/* The routes flagged ROUTE_CREATE (POST /api/links and /api/links/bulk) take
 * from the `create` limit and nothing else does; every other authenticated
 * route takes from the `read` limit, and the creates do not. */
void test_rules_create_limit(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct app *app = hx_app(h);
    char auth[96], code[32];
    key_header(h, false, auth);
    static const char bulk[] = "{\"links\":[{\"url\":\"https://example.com/b\"}]}";

    struct ratelimit *own = app->ratelimit; /* the harness's, if any: back at the end */
    app->ratelimit = only_limit(RL_CREATE_KEY, 2);
    struct hx_resp resp;
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links", "{\"url\":\"https://example.com/1\"}", &resp),
                 201);
    CHECK_EQ_STR(hx_header(&resp, "RateLimit-Limit"), "2");
    hx_resp_release(&resp);
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links/bulk", bulk, &resp), 200);
    CHECK_EQ_STR(hx_header(&resp, "RateLimit-Remaining"), "0");
    hx_resp_release(&resp);
    /* Both creates counted: the third is refused, by either route. */
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links", "{\"url\":\"https://example.com/3\"}", NULL),
                 429);
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links/bulk", bulk, &resp), 429);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "rate_limited");
    hx_resp_release(&resp);
    /* Routes that are no creates, a POST with a JSON body among them, pass
     * and say nothing of the create limit. */
    CHECK_EQ_INT(call(h, auth, "GET", "/api/links", NULL, &resp), 200);
    CHECK(hx_header(&resp, "RateLimit-Limit") == NULL);
    hx_resp_release(&resp);
    CHECK_EQ_INT(call(h, auth, "POST", "/api/domains", "{\"host\":\"go.example.net\"}", &resp),
                 201);
    CHECK(hx_header(&resp, "RateLimit-Limit") == NULL);
    hx_resp_release(&resp);
    ratelimit_free(app->ratelimit);

    /* The other way round: with only the read limit on, creates pass. */
    app->ratelimit = only_limit(RL_READ_KEY, 1);
    CHECK_EQ_INT(call(h, auth, "GET", "/api/links", NULL, NULL), 200);
    CHECK_EQ_INT(call(h, auth, "GET", "/api/links", NULL, NULL), 429);
    CHECK_EQ_INT(call(h, auth, "DELETE", "/api/domains/go.example.net", NULL, NULL), 429);
    CHECK_EQ_INT(create(h, auth, "https://example.com/4", NULL, code), 201);
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links/bulk", bulk, NULL), 200);
    ratelimit_free(app->ratelimit);
    app->ratelimit = own;
    hx_free(h);
}

/* ---- the store-unavailable answer ---- */

/* With the store's 'op' failing at every call: 503 'unavailable', with
 * Retry-After, in the API's error shape. */
static void unavailable(struct hx *h, const char *auth, const char *op, const char *method,
                        const char *target, const char *body)
{
    hx_fault(h, op, 0);
    struct hx_resp resp;
    bool ok = CHECK_EQ_INT(call(h, auth, method, target, body, &resp), 503) &
              CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "unavailable") &
              CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1") &
              CHECK_EQ_STR(resp.content_type, "application/json");
    if (!ok)
        test_note("%s %s with %s failing: %s", method, target, op, resp.body);
    hx_resp_release(&resp);
    hx_fault_clear(h);
}

/* GET /api/admin/blocklist answered its 503 without Retry-After; now every
 * 503 is http_unavailable's: a read's, and a write's whose commit fails. */
void test_rules_unavailable(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin[96], code[32], target[96];
    key_header(h, true, admin);
    CHECK_EQ_INT(create(h, admin, "https://example.com/u", NULL, code), 201);
    unavailable(h, admin, "block_list", "GET", "/api/admin/blocklist", NULL);
    /* The writer's failed job: a create, a block, a state change, an edit. */
    unavailable(h, admin, "commit", "POST", "/api/links", "{\"url\":\"https://example.com/v\"}");
    unavailable(h, admin, "commit", "POST", "/api/admin/blocklist", "{\"host\":\"bad.example\"}");
    snprintf(target, sizeof(target), "/api/links/%s/disable", code);
    unavailable(h, admin, "commit", "POST", target, NULL);
    snprintf(target, sizeof(target), "/api/links/%s", code);
    unavailable(h, admin, "link_get", "PATCH", target, "{\"title\":\"t\"}");
    /* ... and it did not happen. */
    struct hx_resp resp;
    CHECK_EQ_INT(call(h, admin, "GET", target, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "state"), "active");
    CHECK(hx_json_str(&resp, "title") == NULL);
    hx_resp_release(&resp);
    hx_free(h);
}

/* ---- the owner rule ---- */

/* Every route of one link: what its owner (and an admin) gets, and whether
 * it is for admin keys only (anyone else then gets 403 before any owner
 * rule). DELETE comes last: it ends the link. */
static const struct {
    const char *method, *pattern, *suffix, *body;
    int status;
    bool admin_only;
} one_link[] = {
    {"GET", "/api/links/:code", "", NULL, 200, false},
    {"GET", "/api/links/:code/stats", "/stats", NULL, 200, false},
    {"GET", "/api/links/:code/qr", "/qr", NULL, 200, false},
    {"GET", "/api/links/:code/history", "/history", NULL, 200, false},
    {"PATCH", "/api/links/:code", "", "{\"title\":\"mine\"}", 200, false},
    {"POST", "/api/links/:code/disable", "/disable", NULL, 200, true},
    {"POST", "/api/links/:code/enable", "/enable", NULL, 200, true},
    {"DELETE", "/api/links/:code", "", NULL, 204, false},
};
#define NONE_LINK ((int)(sizeof(one_link) / sizeof(one_link[0])))

/* Another owner's key gets, on every route of one link, the very answer of
 * a code that does not exist; the link is left as it was. Its owner and an
 * admin key get the route's answer. A new route under /api/links/:code
 * must be added to one_link[] (the test fails until it is). */
void test_rules_owner(void)
{
    int nnames = 0;
    const char *const *names = router_route_names(&nnames);
    for (int i = 0; i < nnames; i++) {
        if (!strstr(names[i], " /api/links/:code"))
            continue;
        bool listed = false;
        for (int k = 0; k < NONE_LINK; k++) {
            char name[96];
            snprintf(name, sizeof(name), "%s %s", one_link[k].method, one_link[k].pattern);
            listed = listed || !strcmp(name, names[i]);
        }
        if (!CHECK(listed))
            test_note("route '%s' is not in one_link[]", names[i]);
    }

    struct hx *h = hx_new();
    if (!h)
        return;
    char owner[96], other[96], admin[96], code[32], target[128];
    key_header(h, false, owner);
    key_header(h, false, other);
    key_header(h, true, admin);
    CHECK_EQ_INT(create(h, owner, "https://example.com/owned", NULL, code), 201);
    const char *state = "active"; /* as the routes so far left it */
    bool patched = false;
    for (int k = 0; k < NONE_LINK; k++) {
        snprintf(target, sizeof(target), "/api/links/%s%s", code, one_link[k].suffix);
        struct hx_resp theirs, none;
        int status = call(h, other, one_link[k].method, target, one_link[k].body, &theirs);
        if (one_link[k].admin_only) {
            CHECK_EQ_INT(status, 403);
        } else {
            /* The answer for a code nobody has, byte for byte. */
            char absent[128];
            snprintf(absent, sizeof(absent), "/api/links/nosuchcode%s", one_link[k].suffix);
            CHECK_EQ_INT(call(h, other, one_link[k].method, absent, one_link[k].body, &none), 404);
            if (!(CHECK_EQ_INT(status, 404) & CHECK_EQ_STR(theirs.body, none.body)))
                test_note("%s %s by another owner", one_link[k].method, one_link[k].pattern);
            hx_resp_release(&none);
        }
        hx_resp_release(&theirs);
        /* Nothing changed: the owner still sees the link as it was. */
        struct hx_resp now;
        snprintf(target, sizeof(target), "/api/links/%s", code);
        CHECK_EQ_INT(call(h, owner, "GET", target, NULL, &now), 200);
        if (!(CHECK_EQ_STR(hx_json_str(&now, "state"), state) &
              CHECK(patched ? hx_json_str(&now, "title") != NULL : !hx_json_str(&now, "title"))))
            test_note("after %s %s by another owner", one_link[k].method, one_link[k].pattern);
        hx_resp_release(&now);

        /* The owner (unless the route is an admin's), then an admin. */
        snprintf(target, sizeof(target), "/api/links/%s%s", code, one_link[k].suffix);
        bool last = k == NONE_LINK - 1;
        if (!one_link[k].admin_only && !last &&
            !CHECK_EQ_INT(call(h, owner, one_link[k].method, target, one_link[k].body, NULL),
                          one_link[k].status))
            test_note("%s %s by its owner", one_link[k].method, one_link[k].pattern);
        if (!CHECK_EQ_INT(call(h, admin, one_link[k].method, target, one_link[k].body, NULL),
                          one_link[k].status))
            test_note("%s %s by an admin", one_link[k].method, one_link[k].pattern);
        patched = patched || !strcmp(one_link[k].method, "PATCH");
        if (!strcmp(one_link[k].suffix, "/disable"))
            state = "disabled";
        else if (!strcmp(one_link[k].suffix, "/enable"))
            state = "active";
    }
    /* The admin's DELETE ended it, for its owner too. */
    snprintf(target, sizeof(target), "/api/links/%s", code);
    struct hx_resp resp;
    CHECK_EQ_INT(call(h, owner, "GET", target, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "state"), "deleted");
    hx_resp_release(&resp);
    hx_free(h);
}

/* ---- one place tells every cache tier ---- */

/* What the bus delivered, and what Redis held for the code at that moment. */
struct heard {
    pthread_mutex_t mu;
    struct rcache *rcache;
    int resyncs;
    int n;
    char codes[16][32];
    char redis_url[16][64]; /* "" when Redis had no entry */
};

static void on_code(const char *code, size_t n, void *arg)
{
    struct heard *hd = arg;
    pthread_mutex_lock(&hd->mu);
    if (!code) {
        hd->resyncs++;
    } else if (hd->n < 16 && n < 32) {
        memcpy(hd->codes[hd->n], code, n);
        hd->codes[hd->n][n] = '\0';
        struct link l;
        hd->redis_url[hd->n][0] = '\0';
        if (rcache_get(hd->rcache, code, n, &l) == ERR_OK) {
            snprintf(hd->redis_url[hd->n], 64, "%s", l.url ? l.url : "");
            link_release(&l);
        }
        hd->n++;
    }
    pthread_mutex_unlock(&hd->mu);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The index of the nth delivery of 'code' (n from 1), waiting at most
 * 'limit' ms for it; -1 when it did not come. */
static int heard(struct heard *hd, const char *code, int nth, int64_t limit)
{
    int64_t t0 = mono_ms();
    do {
        pthread_mutex_lock(&hd->mu);
        int seen = 0;
        for (int i = 0; i < hd->n; i++) {
            if (!strcmp(hd->codes[i], code) && ++seen == nth) {
                pthread_mutex_unlock(&hd->mu);
                return i;
            }
        }
        pthread_mutex_unlock(&hd->mu);
        sleep_ms(5);
    } while (mono_ms() - t0 < limit);
    return -1;
}

/* What this node's cache holds for 'code': 'M' a remembered miss, 'L' a
 * link (its URL into 'url'), '-' nothing. */
static char cached(struct app *app, const char *code, char url[64])
{
    struct cache_view v;
    url[0] = '\0';
    cache_read_lock();
    bool hit = cache_get(app->cache, code, strlen(code), now_ms(), &v);
    if (hit && !v.miss && v.url)
        snprintf(url, 64, "%.*s", (int)v.url_len, v.url);
    cache_read_unlock();
    return !hit ? '-' : v.miss ? 'M' : 'L';
}

/* Every write of a link reaches every tier through link_changed: a create
 * drops this node's remembered miss (an alias's on every node, through the
 * bus), an edit, a disable or a delete puts the new state in this node's
 * cache and in Redis, then tells the other nodes, Redis first. Redis and the
 * bus are checked when tests/redis.sh runs the tests. */
void test_rules_link_changed(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct app *app = hx_app(h);
    const char *redis = getenv("SHORTD_TEST_REDIS");
    struct heard hd = {.mu = PTHREAD_MUTEX_INITIALIZER};
    enum log_level saved = log_level;
    if (redis && *redis) {
        log_level = LOG_ERROR;
        CHECK_EQ_INT(rcache_new(redis, 1000, &app->rcache), ERR_OK);
        hd.rcache = app->rcache;
        CHECK_EQ_INT(bus_new(redis, NULL, 1000, on_code, &hd, &app->bus), ERR_OK);
        for (int64_t t0 = mono_ms(); mono_ms() - t0 < 5000;) {
            pthread_mutex_lock(&hd.mu);
            int up = hd.resyncs;
            pthread_mutex_unlock(&hd.mu);
            if (up)
                break;
            sleep_ms(5);
        }
    } else {
        printf("rules: SHORTD_TEST_REDIS is unset: the Redis and bus tiers are not checked "
               "(tests/redis.sh runs them)\n");
    }
    char auth[96], code[32], alias[32], target[96], url[64];
    key_header(h, false, auth);
    snprintf(alias, sizeof(alias), "tiers%ld", (long)(mono_ms() % 100000));

    /* Creates: a miss remembered before is dropped; the link is not cached
     * until its first click reads it. */
    cache_fill_miss(app->cache, alias, strlen(alias), now_ms());
    CHECK_EQ_INT(cached(app, alias, url), 'M');
    CHECK_EQ_INT(create(h, auth, "https://example.com/gen", NULL, code), 201);
    CHECK_EQ_INT(create(h, auth, "https://example.com/alias", alias, code), 201);
    CHECK_EQ_INT(cached(app, alias, url), '-');

    /* An edit: the new state here at once. */
    snprintf(target, sizeof(target), "/api/links/%s", alias);
    CHECK_EQ_INT(call(h, auth, "PATCH", target, "{\"url\":\"https://example.com/new\"}", NULL),
                 200);
    CHECK_EQ_INT(cached(app, alias, url), 'L');
    CHECK_EQ_STR(url, "https://example.com/new");
    if (app->bus) {
        struct link l;
        if (CHECK_EQ_INT(rcache_get(app->rcache, alias, strlen(alias), &l), ERR_OK)) {
            CHECK_EQ_STR(l.url, "https://example.com/new");
            link_release(&l);
        }
        /* The bus told the alias twice, at its create and at the edit,
         * and nothing before (the generated code, created first, never);
         * at the edit's, Redis held the new URL already. */
        CHECK_EQ_INT(heard(&hd, alias, 1, 2000), 0);
        if (CHECK_EQ_INT(heard(&hd, alias, 2, 2000), 1)) {
            pthread_mutex_lock(&hd.mu);
            CHECK_EQ_STR(hd.redis_url[1], "https://example.com/new");
            pthread_mutex_unlock(&hd.mu);
        }
    }

    /* A state change: disabled, then deleted, in every tier. */
    snprintf(target, sizeof(target), "/api/links/%s/disable", alias);
    char admin[96];
    key_header(h, true, admin);
    CHECK_EQ_INT(call(h, admin, "POST", target, NULL, NULL), 200);
    struct cache_view v;
    cache_read_lock();
    CHECK(cache_get(app->cache, alias, strlen(alias), now_ms(), &v) && v.state == LINK_DISABLED);
    cache_read_unlock();
    snprintf(target, sizeof(target), "/api/links/%s", alias);
    CHECK_EQ_INT(call(h, auth, "DELETE", target, NULL, NULL), 204);
    cache_read_lock();
    CHECK(cache_get(app->cache, alias, strlen(alias), now_ms(), &v) && v.state == LINK_DELETED);
    cache_read_unlock();
    if (app->rcache) {
        struct link l;
        if (CHECK_EQ_INT(rcache_get(app->rcache, alias, strlen(alias), &l), ERR_OK)) {
            CHECK_EQ_INT(l.state, LINK_DELETED);
            link_release(&l);
        }
    }

    /* The function alone, on an app with a cache and nothing else (the
     * CLI's has Redis only): a new code drops its miss, an edit is put. */
    struct app bare = {.cache = app->cache};
    struct link l = {.code = "barecode", .url = "https://example.com/bare", .state = LINK_ACTIVE};
    cache_fill_miss(app->cache, l.code, strlen(l.code), now_ms());
    CHECK_EQ_INT(link_changed(&bare, &l, LINK_NEW, now_ms()), ERR_OK);
    CHECK_EQ_INT(cached(app, l.code, url), '-');
    CHECK_EQ_INT(link_changed(&bare, &l, LINK_EDITED, now_ms()), ERR_OK);
    CHECK_EQ_INT(cached(app, l.code, url), 'L');
    CHECK_EQ_STR(url, "https://example.com/bare");

    bus_free(app->bus);
    app->bus = NULL;
    rcache_free(app->rcache);
    app->rcache = NULL;
    log_level = saved;
    pthread_mutex_destroy(&hd.mu);
    hx_free(h);
}
