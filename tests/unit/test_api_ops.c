/* test_api_ops.c - what operators ask (api_ops.c) in-process (harness.h):
 * GET / (the home redirect), /healthz, /readyz and /metrics; which of them
 * need the store, and what /readyz says when it fails; /api/ops/health and
 * the ops scope. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/aggregate.h"
#include "clicks/clicks.h"
#include "http/clientaddr.h"
#include "store/store.h"
#include "harness.h"
#include "test.h"

#include "base/banned.h"

void test_api_ops_home(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/", NULL, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "/dashboard");
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "no-store");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/", NULL, "x", &resp), 405);
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "GET");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_ops_healthz(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/healthz", NULL, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "application/json");
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "ok");
    hx_resp_release(&resp);
    /* The process answers: the store is not asked. */
    hx_fault(h, "ping", 0);
    hx_fault(h, "begin", 0);
    CHECK_EQ_INT(hx_request(h, "GET", "/healthz", NULL, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_fault_clear(h);
    CHECK_EQ_INT(hx_request(h, "HEAD", "/healthz", NULL, NULL, &resp), 200);
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_ops_readyz(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/readyz", NULL, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "ready");
    CHECK_EQ_STR(hx_json_str(&resp, "journal.state"), "ok");
    hx_resp_release(&resp);
    /* The store does not answer: not ready. A probe's answer, in its own
     * shape (the status says why), not the API's error. */
    hx_fault(h, "ping", 0);
    CHECK_EQ_INT(hx_request(h, "GET", "/readyz", NULL, NULL, &resp), 503);
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "store unavailable");
    hx_resp_release(&resp);
    hx_fault_clear(h);
    CHECK_EQ_INT(hx_request(h, "GET", "/readyz", NULL, NULL, &resp), 200);
    hx_resp_release(&resp);
    /* A node that is stopping says so. */
    atomic_store(&hx_app(h)->stopping, true);
    CHECK_EQ_INT(hx_request(h, "GET", "/readyz", NULL, NULL, &resp), 503);
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "stopping");
    hx_resp_release(&resp);
    atomic_store(&hx_app(h)->stopping, false);
    hx_free(h);
}

/* The value of the sample line "NAME VALUE" in Prometheus text, or -1. */
static long long sample(const char *text, const char *name)
{
    char want[128];
    snprintf(want, sizeof(want), "\n%s ", name);
    const char *p = strstr(text, want);
    return p ? atoll(p + strlen(want)) : -1;
}

void test_api_ops_metrics(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/m\"}", code), 201);
    char target[HX_CODE_MAX + 1];
    snprintf(target, sizeof(target), "/%s", code);
    const char *ua[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0", NULL};
    struct hx_resp resp;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(hx_request(h, "GET", target, ua, NULL, &resp), 302);
        hx_resp_release(&resp);
    }
    atomic_store(&hx_app(h)->links_counted, 1);

    /* Needs no store: answered with every op failing. */
    hx_fault(h, "ping", 0);
    hx_fault(h, "link_get", 0);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 200);
    hx_fault_clear(h);
    CHECK_EQ_STR(resp.content_type, "text/plain; version=0.0.4; charset=utf-8");
    CHECK(!strncmp(resp.body, "# HELP shortd_node_info", 23));
    CHECK(strstr(resp.body, "shortd_node_info{node=\"hx\"} 1\n") != NULL);
    CHECK(strstr(resp.body, "# TYPE shortd_requests_total counter") != NULL);
    /* The visits: one miss, then the cache. */
    CHECK(sample(resp.body, "shortd_cache_hits_total") >= 2);
    CHECK(sample(resp.body, "shortd_cache_misses_total") >= 1);
    CHECK(sample(resp.body, "shortd_cache_entries") >= 1);
    CHECK_EQ_INT(sample(resp.body, "shortd_links"), 1);
    CHECK(sample(resp.body, "shortd_clicks_pending") >= 0);
    CHECK(sample(resp.body, "shortd_store_jobs_total") >= 2); /* the create, the miss */
    CHECK_EQ_INT(sample(resp.body, "shortd_journal_up"), 1);
    CHECK(!strstr(resp.body, "shortd_redis_up")); /* no Redis here */
    hx_resp_release(&resp);
    /* The links gauge is left out until the links were first counted. */
    atomic_store(&hx_app(h)->links_counted, -1);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 200);
    CHECK_EQ_INT(sample(resp.body, "shortd_links"), -1);
    hx_resp_release(&resp);
    hx_free(h);
}

/* The check 'code' of a GET /api/ops/health answer, or NULL. */
static json_t *check_of(const struct hx_resp *resp, const char *code)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(resp->json, "checks"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "code")), code))
            return c;
    }
    return NULL;
}

static const char *state_of(const struct hx_resp *resp, const char *code)
{
    json_t *c = check_of(resp, code);
    return c ? json_string_value(json_object_get(c, "state")) : "(none)";
}

void test_api_ops_health(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin[HX_AUTH_MAX];
    hx_auth(h, true, admin);
    const char *headers[] = {admin, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", headers, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "node"), "hx");
    CHECK_EQ_STR(state_of(&resp, "store"), "ok");
    CHECK_EQ_STR(state_of(&resp, "journal"), "ok");
    CHECK_EQ_STR(state_of(&resp, "journal-age"), "ok");
    CHECK_EQ_STR(state_of(&resp, "fold"), "ok");
    CHECK_EQ_STR(state_of(&resp, "clock"), "ok"); /* SQLite: one machine */
    CHECK(check_of(&resp, "cache") == NULL);      /* no Redis here: not a check */
    /* No backup was ever recorded: that fails, and the whole report too. */
    CHECK_EQ_STR(state_of(&resp, "backup"), "fail");
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "fail");
    json_t *b = check_of(&resp, "backup");
    CHECK(b && strstr(json_string_value(json_object_get(b, "measured")), "no backup"));
    const char *since = b ? json_string_value(json_object_get(b, "since")) : NULL;
    char was[64];
    snprintf(was, sizeof(was), "%s", since ? since : "");
    hx_resp_release(&resp);

    /* A backup recorded: ok, with its age; the state's since moves. */
    struct store *st = hx_app(h)->store;
    CHECK_EQ_INT(st->ops->backup_note(st, now_ms() - 5000, 4096, "hx"), ERR_OK);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", headers, NULL, &resp), 200);
    CHECK_EQ_STR(state_of(&resp, "backup"), "ok");
    b = check_of(&resp, "backup");
    CHECK(b && json_real_value(json_object_get(b, "value")) >= 5.0);
    CHECK(b &&
          json_real_value(json_object_get(json_object_get(b, "thresholds"), "warn")) == 26 * 3600);
    hx_resp_release(&resp);

    /* The store does not answer: it fails, and what needs it is unknown
     * (never ok): the report says so. */
    hx_fault(h, "ping", 0);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", headers, NULL, &resp), 200);
    hx_fault_clear(h);
    CHECK_EQ_STR(state_of(&resp, "store"), "fail");
    CHECK_EQ_STR(state_of(&resp, "backup"), "unknown");
    CHECK_EQ_STR(state_of(&resp, "clock"), "unknown");
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "unknown");
    hx_resp_release(&resp);
    hx_free(h);
}

/* An API key of the ops scope alone: health and metrics, nothing else. */
void test_api_ops_scope(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin[HX_AUTH_MAX], user[HX_AUTH_MAX], ops[HX_AUTH_MAX];
    hx_auth(h, true, admin);
    hx_auth(h, false, user);
    const char *as_admin[] = {admin, NULL}, *as_user[] = {user, NULL}, *as_ops[] = {ops, NULL};
    struct hx_resp resp;
    /* Only an admin gives it: a user key lacks it. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/keys", as_user,
                            "{\"name\":\"o\",\"scopes\":[\"ops\"]}", &resp),
                 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/keys", as_admin,
                            "{\"name\":\"o\",\"scopes\":[\"ops\"]}", &resp),
                 201);
    snprintf(ops, sizeof(ops), "Authorization: Bearer %s", hx_json_str(&resp, "key"));
    hx_resp_release(&resp);

    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", as_ops, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", as_admin, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", as_user, NULL, &resp), 403);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "forbidden");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    /* Refused everything else, even the routes that need no scope. */
    static const char *const refused[][2] = {
        {"GET", "/api/links"},   {"GET", "/api/stats"},           {"GET", "/api/keys"},
        {"GET", "/api/session"}, {"GET", "/api/admin/blocklist"}, {"GET", "/api/domains"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (!CHECK_EQ_INT(hx_request(h, refused[i][0], refused[i][1], as_ops, NULL, &resp), 403))
            test_note("%s %s", refused[i][0], refused[i][1]);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", as_ops, "{\"url\":\"https://example.com/\"}",
                            &resp),
                 403);
    hx_resp_release(&resp);

    /* /metrics: open on a loopback listen address; else a key of the ops
     * scope (or admin), or an address metrics-allow lists. */
    struct app *app = hx_app(h);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 200);
    hx_resp_release(&resp);
    app->metrics_open = false;
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", as_user, NULL, &resp), 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", as_ops, NULL, &resp), 200);
    CHECK(resp.body && strstr(resp.body, "shortd_build_info{version=\""));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", as_admin, NULL, &resp), 200);
    hx_resp_release(&resp);
    char err[128];
    CHECK_EQ_INT(clientaddr_new("10.0.0.0/8", &app->metrics_allow, err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 401); /* 127.0.0.1 */
    hx_resp_release(&resp);
    clientaddr_free(app->metrics_allow);
    CHECK_EQ_INT(clientaddr_new("127.0.0.0/8", &app->metrics_allow, err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 200);
    hx_resp_release(&resp);
    clientaddr_free(app->metrics_allow);
    app->metrics_allow = NULL;
    hx_free(h);
}

/* The clicks' lag and the state a health check reads: while the store
 * refuses the clicks, the oldest waits and /metrics says how long; past the
 * bound the node is behind; once the store takes them, no lag. */
void test_api_ops_clicks_lag(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/lag\"}", code), 201);
    char target[HX_CODE_MAX + 1];
    snprintf(target, sizeof(target), "/%s", code);
    struct clicks *c = hx_app(h)->clicks;
    struct clicks_lag lag;
    clicks_lag(c, mono_ms(), &lag);
    CHECK_EQ_INT(lag.lag_ms, 0);
    CHECK(!lag.behind);

    hx_fault(h, "days_append", 0); /* the harness's store is SQLite */
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 302);
    hx_resp_release(&resp);
    clicks_flush(c, 0);
    for (int i = 0; i < 2000; i++) {
        clicks_lag(c, mono_ms(), &lag);
        if (lag.lag_ms >= 50)
            break;
        struct timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    CHECK(lag.lag_ms >= 50);
    CHECK_EQ_INT(lag.pending, 1);
    CHECK(!lag.behind);
    CHECK(clicks_keeping_up(c));
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 200);
    CHECK(strstr(resp.body, "\nshortd_clicks_lag_seconds 0.0") != NULL);
    CHECK(!strstr(resp.body, "\nshortd_clicks_lag_seconds 0.000\n"));
    CHECK(strstr(resp.body, "\nshortd_clicks_keeping_up 1\n") != NULL);
    CHECK(strstr(resp.body, "\nshortd_clicks_lag_bound_seconds 60\n") != NULL);
    hx_resp_release(&resp);
    /* A minute later, the same click still waiting: behind. */
    clicks_lag(c, mono_ms() + CLICKS_LAG_BOUND_MS + 1000, &lag);
    CHECK(lag.behind);
    CHECK(lag.lag_ms > CLICKS_LAG_BOUND_MS);

    hx_fault_clear(h);
    CHECK(hx_clicks_settle(h));
    clicks_lag(c, mono_ms() + CLICKS_LAG_BOUND_MS + 1000, &lag);
    CHECK_EQ_INT(lag.lag_ms, 0);
    CHECK_EQ_INT(lag.pending, 0);
    CHECK(!lag.behind);
    hx_free(h);
}

/* A harness with one link to 'url': its code, and "/CODE" in 'target'. */
static struct hx *with_link(const char *url, char code[HX_CODE_MAX], char target[HX_CODE_MAX + 1])
{
    struct hx *h = hx_new();
    if (!h)
        return NULL;
    char auth[HX_AUTH_MAX], body[128];
    hx_auth(h, false, auth);
    snprintf(body, sizeof(body), "{\"url\":\"%s\"}", url);
    CHECK_EQ_INT(hx_create(h, auth, body, code), 201);
    snprintf(target, HX_CODE_MAX + 1, "/%s", code);
    return h;
}

/* Past its bound of folded clicks held while a store job runs, the fold
 * waits: later clicks stay unfolded until the job is done, then every one
 * is stored. */
void test_api_ops_clicks_held(void)
{
    char code[HX_CODE_MAX], target[HX_CODE_MAX + 1];
    struct hx *h = with_link("https://example.com/held", code, target);
    if (!h)
        return;
    struct clicks *c = hx_app(h)->clicks;
    clicks_set_held_max(c, 1);
    hx_fault(h, "days_append", 0); /* the harness's store is SQLite */
    struct hx_resp resp;
    struct clicks_backlog bl = {0};
    /* A click at a time: the first goes into a job that cannot commit, the
     * next is folded while it retries, and the ones after it wait. */
    for (int round = 0; round < 4; round++) {
        CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 302);
        hx_resp_release(&resp);
        clicks_flush(c, 0);
        struct timespec pause = {0, 300000000L};
        nanosleep(&pause, NULL);
    }
    clicks_backlog(c, &bl);
    CHECK_EQ_INT(bl.unfolded, 2);
    CHECK_EQ_INT(clicks_pending(c), 4);

    hx_fault_clear(h);
    CHECK(hx_clicks_settle(h));
    clicks_backlog(c, &bl);
    CHECK_EQ_INT(bl.unfolded, 0);
    clicks_set_held_max(c, (size_t)512 << 20);
    hx_free(h);
}

/* Past the memory the clicks to fold may take, the journal's batches wait
 * on disk only (their memory freed) and the fold reads them back: every
 * click is stored once. */
void test_api_ops_clicks_on_disk(void)
{
    char code[HX_CODE_MAX], target[HX_CODE_MAX + 1];
    struct hx *h = with_link("https://example.com/disk", code, target);
    if (!h)
        return;
    struct clicks *c = hx_app(h)->clicks;
    clicks_set_backlog_max(c, 1);
    clicks_pause_fold(c, true);
    struct hx_resp resp;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 302);
            hx_resp_release(&resp);
        }
        clicks_flush(c, 0);
        struct timespec pause = {0, 200000000L};
        nanosleep(&pause, NULL);
        if (round == 2)
            sleep(1); /* batches a second apart are not joined: several wait on disk */
    }
    struct clicks_backlog bl = {0};
    clicks_backlog(c, &bl);
    CHECK_EQ_INT(bl.unfolded, 18);
    CHECK(bl.on_disk_bytes > 0);
    CHECK_EQ_INT(clicks_pending(c), 18);

    clicks_pause_fold(c, false);
    CHECK(hx_clicks_settle(h));
    clicks_backlog(c, &bl);
    CHECK_EQ_INT(bl.unfolded, 0);
    CHECK_EQ_INT(bl.on_disk_bytes, 0);
    struct link l;
    if (CHECK_EQ_INT(hx_app(h)->store->ops->link_get(hx_app(h)->store, code, &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks + l.bot_clicks, 18);
        link_release(&l);
    }
    clicks_set_backlog_max(c, 0);
    hx_free(h);
}

/* How many clicks wait to be counted is said, not judged: a node that keeps
 * up holds that many during a flood (checks.c). The journal check stays ok
 * with more than the 100,000 that once warned, all young; what is judged
 * is their age (journal-age, fold), and every one is then stored. */
void test_api_ops_backlog_not_judged(void)
{
    char code[HX_CODE_MAX], target[HX_CODE_MAX + 1];
    struct hx *h = with_link("https://example.com/many", code, target);
    if (!h)
        return;
    struct clicks *c = hx_app(h)->clicks;
    clicks_pause_fold(c, true);
    enum { MANY = 150000 };
    const char *ua = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    for (int i = 0; i < MANY; i++) {
        struct click_event e = {.ts = now_ms(), .visitor = (uint64_t)i + 1, .country = "NL"};
        e.code = (struct slice){code, strlen(code)};
        e.ua = (struct slice){ua, strlen(ua)};
        clicks_record(c, 0, &e);
    }
    clicks_flush(c, 0);
    struct clicks_backlog bl = {0};
    for (int i = 0; i < 500 && bl.unfolded < MANY; i++) {
        struct timespec pause = {0, 10000000L};
        nanosleep(&pause, NULL);
        clicks_backlog(c, &bl);
    }
    CHECK_EQ_INT(bl.unfolded, MANY);

    char admin[HX_AUTH_MAX];
    hx_auth(h, true, admin);
    const char *headers[] = {admin, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/ops/health", headers, NULL, &resp), 200);
    CHECK_EQ_STR(state_of(&resp, "journal"), "ok");
    json_t *j = check_of(&resp, "journal");
    CHECK(j &&
          strstr(json_string_value(json_object_get(j, "measured")), "150000 clicks journaled"));
    CHECK_EQ_STR(state_of(&resp, "journal-age"), "ok");
    CHECK_EQ_STR(state_of(&resp, "fold"), "ok");
    hx_resp_release(&resp);

    clicks_pause_fold(c, false);
    CHECK(hx_clicks_settle(h));
    struct link l;
    if (CHECK_EQ_INT(hx_app(h)->store->ops->link_get(hx_app(h)->store, code, &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks + l.bot_clicks, MANY);
        link_release(&l);
    }
    hx_free(h);
}

/* Rounds of compacting (aggregate.h) run beside the fold and the clicks
 * still coming, on the writer's background lane: what /metrics calls
 * uncompacted goes back to 0, and every click is counted once. */
void test_api_ops_clicks_compacted(void)
{
    char code[HX_CODE_MAX], target[HX_CODE_MAX + 1];
    struct hx *h = with_link("https://example.com/compact", code, target);
    if (!h)
        return;
    struct app *app = hx_app(h);
    aggregate_set_compact(app->aggregate, 1, 1); /* a round at every chance */
    struct hx_resp resp;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 4; i++) {
            CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 302);
            hx_resp_release(&resp);
        }
        clicks_flush(app->clicks, 0);
        CHECK(hx_clicks_settle(h));
    }
    bool compacted = false;
    for (int i = 0; i < 500 && !compacted; i++) {
        compacted = aggregate_pending(app->aggregate) == 0;
        struct timespec pause = {0, 10000000L};
        nanosleep(&pause, NULL);
    }
    CHECK(compacted);
    CHECK_EQ_INT(hx_request(h, "GET", "/metrics", NULL, NULL, &resp), 200);
    CHECK(strstr(resp.body, "\nshortd_clicks_uncompacted 0\n") != NULL);
    hx_resp_release(&resp);
    struct link l;
    if (CHECK_EQ_INT(app->store->ops->link_get(app->store, code, &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks + l.bot_clicks, 20);
        link_release(&l);
    }
    aggregate_set_compact(app->aggregate, 0, 0);
    hx_free(h);
}
