/* test_rules.c - the rules that cut across handlers, in-process (harness.h):
 * which routes count as creates for the rate limits (ROUTE_CREATE) and the
 * store-unavailable answer (http_unavailable) on every route that fails. */
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
static int create(struct hx *h, const char *auth, const char *url, const char *alias,
                  char code[32])
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

    app->ratelimit = only_limit(RL_CREATE_KEY, 2);
    struct hx_resp resp;
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links", "{\"url\":\"https://example.com/1\"}",
                      &resp), 201);
    CHECK_EQ_STR(hx_header(&resp, "RateLimit-Limit"), "2");
    hx_resp_release(&resp);
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links/bulk", bulk, &resp), 200);
    CHECK_EQ_STR(hx_header(&resp, "RateLimit-Remaining"), "0");
    hx_resp_release(&resp);
    /* Both creates counted: the third is refused, by either route. */
    CHECK_EQ_INT(call(h, auth, "POST", "/api/links", "{\"url\":\"https://example.com/3\"}",
                      NULL), 429);
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
    app->ratelimit = NULL;
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
