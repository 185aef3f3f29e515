/* test_compat_bitly.c - Bitly's API v4 (compat_bitly.c) in-process
 * (harness.h): each route's answer, its errors in Bitly's shape
 * ({message, description, resource, errors}), a wrong or missing token
 * (403 FORBIDDEN), another owner's bitlink (404 NOT_FOUND, as a code
 * nobody has), bad input storing nothing, the store failing (503), and
 * the paths under /v4/ no route serves (404 NOT_FOUND, 405). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

#define BROWSER "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"

/* A harness with two keys (Bearer header lines, and the bare token form the
 * npm SDK sends for the first), and a link of the first one's made through
 * /v4/shorten: its code. */
struct fx {
    struct hx *h;
    char line[HX_AUTH_MAX], other_line[HX_AUTH_MAX], bare_line[HX_AUTH_MAX];
    const char *mine[2], *theirs[2], *bare[2];
    char code[HX_CODE_MAX];
};

static bool fixture(struct fx *f)
{
    f->h = hx_new();
    if (!f->h)
        return false;
    f->mine[0] = hx_auth(f->h, false, f->line);
    f->theirs[0] = hx_auth(f->h, false, f->other_line);
    snprintf(f->bare_line, sizeof(f->bare_line), "Authorization: %s",
             f->line + strlen("Authorization: Bearer "));
    f->bare[0] = f->bare_line;
    f->mine[1] = f->theirs[1] = f->bare[1] = NULL;
    struct hx_resp resp;
    bool ok = CHECK_EQ_INT(hx_request(f->h, "POST", "/v4/shorten", f->bare,
                                      "{\"long_url\":\"https://example.com/a\"}", &resp),
                           201);
    const char *id = hx_json_str(&resp, "id");
    ok = ok && CHECK(id && strncmp(id, "sho.rt/", 7) == 0 && strlen(id + 7) < HX_CODE_MAX);
    if (ok)
        snprintf(f->code, sizeof(f->code), "%s", id + 7);
    hx_resp_release(&resp);
    if (!ok)
        hx_free(f->h);
    return ok;
}

/* Checks Bitly's error shape and its message code. */
static bool bitly_error(const struct hx_resp *resp, const char *message, const char *resource)
{
    bool ok = CHECK_EQ_STR(hx_json_str(resp, "message"), message) &
              CHECK_EQ_STR(hx_json_str(resp, "resource"), resource) &
              CHECK(hx_json_str(resp, "description") != NULL) &
              CHECK(!json_object_get(resp->json, "error"));
    if (!ok)
        test_note("answer: %s", resp->body ? resp->body : "(none)");
    return ok;
}

/* The field its one field error names. */
static const char *error_field(const struct hx_resp *resp)
{
    json_t *e = json_array_get(json_object_get(resp->json, "errors"), 0);
    return json_string_value(json_object_get(e, "field"));
}

/* How many links GET /api/links lists for 'headers'' key. */
static long long links_of(struct hx *h, const char *const *headers)
{
    struct hx_resp resp;
    long long n = -1;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=1000", headers, NULL, &resp), 200))
        n = (long long)json_array_size(resp.json);
    hx_resp_release(&resp);
    return n;
}

void test_compat_bitly_shorten(void)
{
    struct fx f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    struct hx_resp resp;

    /* The bitlink object; the same URL again is the same bitlink, 200. */
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", f.mine,
                            "{\"long_url\":\"https://example.com/a\",\"domain\":\"bit.ly\"}",
                            &resp),
                 200);
    char id[96];
    snprintf(id, sizeof(id), "sho.rt/%s", f.code);
    CHECK_EQ_STR(hx_json_str(&resp, "id"), id);
    char link[96];
    snprintf(link, sizeof(link), "http://sho.rt/%s", f.code);
    CHECK_EQ_STR(hx_json_str(&resp, "link"), link);
    CHECK_EQ_STR(hx_json_str(&resp, "long_url"), "https://example.com/a");
    const char *created = hx_json_str(&resp, "created_at");
    CHECK(created && strlen(created) == 24 && strcmp(created + 19, "+0000") == 0);
    CHECK(json_is_false(json_object_get(resp.json, "archived")));
    CHECK(json_array_size(json_object_get(resp.json, "tags")) == 0);
    CHECK(json_is_array(json_object_get(resp.json, "deeplinks")));
    CHECK(json_is_array(json_object_get(resp.json, "custom_bitlinks")));
    CHECK(strstr(hx_json_str(&resp, "references.group"), "http://sho.rt/v4/groups/B") != NULL);
    CHECK(!json_object_get(resp.json, "title"));
    hx_resp_release(&resp);

    /* An ordinary link: it redirects. */
    char target[96];
    snprintf(target, sizeof(target), "/%s", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/a");
    hx_resp_release(&resp);

    /* POST /v4/bitlinks keeps title and tags. */
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/bitlinks", f.mine,
                            "{\"long_url\":\"https://example.com/b\",\"title\":\"T\","
                            "\"tags\":[\"x\"],\"deeplinks\":[]}",
                            &resp),
                 201);
    CHECK_EQ_STR(hx_json_str(&resp, "title"), "T");
    CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(resp.json, "tags"), 0)), "x");
    hx_resp_release(&resp);

    /* Bad input: Bitly's errors, nothing stored. */
    long long before = links_of(h, f.mine);
    static const struct {
        const char *path, *body, *message, *field;
        int status;
    } bad[] = {
        {"/v4/shorten", "{}", "INVALID_ARG_LONG_URL", "long_url", 400},
        {"/v4/shorten", "{\"long_url\":\"nope\"}", "INVALID_ARG_LONG_URL", "long_url", 400},
        {"/v4/shorten", "{\"long_url\":\"http://sho.rt/abc\"}", "ALREADY_A_BITLY_LINK", "long_url",
         400},
        {"/v4/shorten", "{\"long_url\":\"https://example.com/c\",\"domain\":\"no.example\"}",
         "INVALID_ARG_DOMAIN", "domain", 400},
        {"/v4/shorten", "{\"long_url\":\"https://example.com/c\",\"group_guid\":\"Bxxxxxxxxxx\"}",
         "FORBIDDEN", NULL, 403},
        {"/v4/shorten", "{\"long_url\":", "INVALID_BODY", NULL, 400},
        {"/v4/bitlinks", "{\"long_url\":\"https://example.com/c\",\"tags\":\"x\"}",
         "INVALID_ARG_TAGS", "tags", 400},
        {"/v4/bitlinks", "{\"long_url\":\"https://example.com/c\",\"title\":7}",
         "INVALID_ARG_TITLE", "title", 400},
        {"/v4/bitlinks", "{\"long_url\":\"https://example.com/c\",\"deeplinks\":[{}]}",
         "INVALID_ARG_DEEPLINKS", "deeplinks", 400},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!CHECK_EQ_INT(hx_request(h, "POST", bad[i].path, f.mine, bad[i].body, &resp),
                          bad[i].status) |
            !bitly_error(&resp, bad[i].message, "bitlinks") |
            !(bad[i].field ? CHECK_EQ_STR(error_field(&resp), bad[i].field)
                           : CHECK(!json_object_get(resp.json, "errors"))))
            test_note("POST %s %s", bad[i].path, bad[i].body);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(links_of(h, f.mine), before);

    /* No token, a wrong one: 403 FORBIDDEN, in Bitly's shape. */
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", NULL,
                            "{\"long_url\":\"https://example.com/d\"}", &resp),
                 403);
    bitly_error(&resp, "FORBIDDEN", "bitlinks");
    hx_resp_release(&resp);
    const char *wrong[] = {"Authorization: Bearer sk_0000000000000000000000000000000000000000",
                           NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/v4/user", wrong, NULL, &resp), 403);
    bitly_error(&resp, "FORBIDDEN", "user");
    hx_resp_release(&resp);
    CHECK_EQ_INT(links_of(h, f.mine), before);

    /* The store failing: 503 TEMPORARILY_UNAVAILABLE. */
    hx_fault(h, "link_insert", 0);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", f.mine,
                            "{\"long_url\":\"https://example.com/e\"}", &resp),
                 503);
    bitly_error(&resp, "TEMPORARILY_UNAVAILABLE", "bitlinks");
    CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1");
    hx_resp_release(&resp);
    hx_fault_clear(h);
    hx_free(h);
}

void test_compat_bitly_bitlinks(void)
{
    struct fx f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    struct hx_resp resp;
    char target[160], id[96];
    snprintf(id, sizeof(id), "sho.rt/%s", f.code);

    /* GET: the bitlink in one encoded segment or two, any of the hosts
     * that name it. */
    static const char *const forms[] = {"sho.rt/", "sho.rt%2F", "sho.rt%2f", "bit.ly/"};
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        snprintf(target, sizeof(target), "/v4/bitlinks/%s%s", forms[i], f.code);
        if (!(CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200) &
              CHECK_EQ_STR(hx_json_str(&resp, "id"), id)))
            test_note("GET %s", target);
        CHECK(json_is_null(json_object_get(resp.json, "title")));
        hx_resp_release(&resp);
    }
    snprintf(target, sizeof(target), "/v4/bitlinks/other.example/%s", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 404);
    bitly_error(&resp, "NOT_FOUND", "bitlinks");
    hx_resp_release(&resp);

    /* Another owner's bitlink answers as one nobody has, on every route. */
    static const struct {
        const char *method, *suffix, *body;
    } routes[] = {
        {"GET", "", NULL},           {"PATCH", "", "{\"title\":\"theirs\"}"},
        {"GET", "/clicks", NULL},    {"GET", "/clicks/summary", NULL},
        {"GET", "/referrers", NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        struct hx_resp none;
        snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/%s%s", f.code, routes[i].suffix);
        int status = hx_request(h, routes[i].method, target, f.theirs, routes[i].body, &resp);
        snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/nosuchcode%s", routes[i].suffix);
        CHECK_EQ_INT(hx_request(h, routes[i].method, target, f.theirs, routes[i].body, &none), 404);
        if (!(CHECK_EQ_INT(status, 404) & CHECK_EQ_STR(resp.body, none.body)))
            test_note("%s %s by another owner", routes[i].method, routes[i].suffix);
        hx_resp_release(&resp);
        hx_resp_release(&none);
    }
    char body[160];
    snprintf(body, sizeof(body), "{\"bitlink_id\":\"%s\"}", id);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/expand", f.theirs, body, &resp), 404);
    bitly_error(&resp, "NOT_FOUND", "bitlinks");
    hx_resp_release(&resp);

    /* expand */
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/expand", f.mine, body, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "long_url"), "https://example.com/a");
    CHECK_EQ_STR(hx_json_str(&resp, "id"), id);
    CHECK(json_object_size(resp.json) == 4);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/expand", f.mine, "{}", &resp), 400);
    bitly_error(&resp, "INVALID_ARG_BITLINK_ID", "bitlinks");
    hx_resp_release(&resp);

    /* PATCH: title, tags, long_url; the rest of the object is ignored. */
    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt%%2F%s", f.code);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, f.mine,
                            "{\"title\":\"Mine\",\"tags\":[\"a\"],\"long_url\":"
                            "\"https://example.com/moved\",\"archived\":false,\"id\":\"x\","
                            "\"domain\":\"bit.ly\"}",
                            &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "title"), "Mine");
    CHECK_EQ_STR(hx_json_str(&resp, "long_url"), "https://example.com/moved");
    hx_resp_release(&resp);
    char own[96];
    snprintf(own, sizeof(own), "/api/links/%s", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", own, f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "title"), "Mine");
    CHECK_EQ_STR(hx_json_str(&resp, "url"), "https://example.com/moved");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, f.mine, "{\"archived\":true}", &resp), 400);
    bitly_error(&resp, "INVALID_ARG_ARCHIVED", "bitlinks");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, f.mine, "{\"long_url\":\"nope\",\"title\":\"X\"}",
                            &resp),
                 400);
    bitly_error(&resp, "INVALID_ARG_LONG_URL", "bitlinks");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", own, f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "title"), "Mine");
    hx_resp_release(&resp);

    /* The store failing: 503 in Bitly's shape. */
    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/%s", f.code);
    hx_fault(h, "link_get", 0);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 503);
    bitly_error(&resp, "TEMPORARILY_UNAVAILABLE", "bitlinks");
    hx_resp_release(&resp);
    hx_fault_clear(h);
    hx_free(h);
}

void test_compat_bitly_clicks(void)
{
    struct fx f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    struct hx_resp resp;
    char target[160];
    snprintf(target, sizeof(target), "/%s", f.code);
    const char *ua[] = {BROWSER, NULL},
               *referred[] = {BROWSER, "Referer: https://news.example/a", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", target, ua, NULL, &resp), 302);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, referred, NULL, &resp), 302);
    hx_resp_release(&resp);
    hx_clicks_settle(h);
    char today[32];
    time_t t = time(NULL);
    strftime(today, sizeof(today), "%Y-%m-%dT00:00:00+0000", gmtime(&t));

    snprintf(target, sizeof(target),
             "/v4/bitlinks/sho.rt/%s/clicks?unit=day&units=-1&size=50"
             "&unit_reference=",
             f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    json_t *days = json_object_get(resp.json, "link_clicks");
    CHECK(json_array_size(days) == 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(days, 0), "date")), today);
    CHECK(json_integer_value(json_object_get(json_array_get(days, 0), "clicks")) == 2);
    CHECK_EQ_STR(hx_json_str(&resp, "unit"), "day");
    CHECK(hx_json_int(&resp, "units") == -1);
    hx_resp_release(&resp);

    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt%%2F%s/clicks?units=5", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    days = json_object_get(resp.json, "link_clicks");
    CHECK(json_array_size(days) == 5);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(days, 0), "date")), today);
    hx_resp_release(&resp);

    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/%s/clicks/summary", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK(hx_json_int(&resp, "total_clicks") == 2);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target),
             "/v4/bitlinks/sho.rt%%2F%s/clicks/"
             "summary?units=2&unit_reference=2020-01-02T00:00:00%%2B0000",
             f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK(hx_json_int(&resp, "total_clicks") == 0);
    CHECK_EQ_STR(hx_json_str(&resp, "unit_reference"), "2020-01-02T00:00:00+0000");
    hx_resp_release(&resp);

    /* countries and referrers: Bitly's ClickMetrics of one facet. */
    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/%s/referrers", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "facet"), "referrers");
    json_t *m = json_object_get(resp.json, "metrics");
    CHECK(json_array_size(m) == 2);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 0), "value")), "direct");
    CHECK(json_integer_value(json_object_get(json_array_get(m, 0), "clicks")) == 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(m, 1), "value")), "news.example");
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt%%2F%s/countries?units=3", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "facet"), "countries");
    CHECK(json_is_array(json_object_get(resp.json, "metrics")));
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/%s/countries", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.theirs, NULL, &resp), 404);
    bitly_error(&resp, "NOT_FOUND", "bitlinks");
    hx_resp_release(&resp);

    static const struct {
        const char *query, *message;
    } bad[] = {
        {"unit=hour", "INVALID_ARG_UNIT"},
        {"units=0", "INVALID_ARG_UNITS"},
        {"units=1001", "INVALID_ARG_UNITS"},
        {"units=x", "INVALID_ARG_UNITS"},
        {"unit_reference=yesterday", "INVALID_ARG_UNIT_REFERENCE"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(target, sizeof(target), "/v4/bitlinks/sho.rt/%s/clicks?%s", f.code, bad[i].query);
        if (!(CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 400) &
              bitly_error(&resp, bad[i].message, "bitlinks")))
            test_note("%s", bad[i].query);
        hx_resp_release(&resp);
    }
    hx_free(h);
}

void test_compat_bitly_user_groups(void)
{
    struct fx f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    struct hx_resp resp;
    char guid[32] = "", other[32] = "";
    CHECK_EQ_INT(hx_request(h, "GET", "/v4/groups", f.mine, NULL, &resp), 200);
    json_t *groups = json_object_get(resp.json, "groups");
    CHECK(json_array_size(groups) == 1);
    const char *g = json_string_value(json_object_get(json_array_get(groups, 0), "guid"));
    if (CHECK(g && strlen(g) == 11 && g[0] == 'B'))
        snprintf(guid, sizeof(guid), "%s", g);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/v4/user", f.bare, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "default_group_guid"), guid);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/v4/groups", f.theirs, NULL, &resp), 200);
    g = json_string_value(
        json_object_get(json_array_get(json_object_get(resp.json, "groups"), 0), "guid"));
    if (CHECK(g != NULL))
        snprintf(other, sizeof(other), "%s", g);
    CHECK(strcmp(guid, other) != 0);
    hx_resp_release(&resp);

    /* A group_guid is taken when it is the key's own. */
    char body[160];
    snprintf(body, sizeof(body), "{\"long_url\":\"https://example.com/g\",\"group_guid\":\"%s\"}",
             guid);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", f.mine, body, &resp), 201);
    hx_resp_release(&resp);
    snprintf(body, sizeof(body), "{\"long_url\":\"https://example.com/h\",\"group_guid\":\"%s\"}",
             other);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", f.mine, body, &resp), 403);
    bitly_error(&resp, "FORBIDDEN", "bitlinks");
    hx_resp_release(&resp);

    /* v4 is a reserved word: no alias takes it. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", f.mine,
                            "{\"url\":\"https://example.com/v\",\"alias\":\"v4\"}", &resp),
                 400);
    hx_resp_release(&resp);
    hx_free(h);
}

/* A custom domain: `domain` names it when it is the key's; the bitlink's
 * id and link are on it, and the bitlink is found by it. */
void test_compat_bitly_domain(void)
{
    struct fx f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", f.mine, "{\"host\":\"go.example\"}", &resp),
                 201);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", f.mine,
                            "{\"long_url\":\"https://example.com/dom\",\"domain\":\"go.example\"}",
                            &resp),
                 201);
    const char *id = hx_json_str(&resp, "id");
    char code[HX_CODE_MAX] = "", target[160];
    if (CHECK(id && strncmp(id, "go.example/", 11) == 0 && strlen(id + 11) < sizeof(code)))
        snprintf(code, sizeof(code), "%s", id + 11);
    char link[96];
    snprintf(link, sizeof(link), "http://go.example/%s", code);
    CHECK_EQ_STR(hx_json_str(&resp, "link"), link);
    hx_resp_release(&resp);
    static const char *const hosts[] = {"go.example", "sho.rt", "bit.ly"};
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        snprintf(target, sizeof(target), "/v4/bitlinks/%s%%2F%s", hosts[i], code);
        if (!CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200))
            test_note("GET %s", target);
        hx_resp_release(&resp);
    }
    /* Another key may not shorten on it: Bitly's FORBIDDEN, nothing stored. */
    long long before = links_of(h, f.theirs);
    CHECK_EQ_INT(hx_request(h, "POST", "/v4/shorten", f.theirs,
                            "{\"long_url\":\"https://example.com/dom2\",\"domain\":\"go.example\"}",
                            &resp),
                 403);
    bitly_error(&resp, "FORBIDDEN", "bitlinks");
    hx_resp_release(&resp);
    CHECK_EQ_INT(links_of(h, f.theirs), before);
    hx_free(h);
}

/* A path under /v4/ that no route serves is Bitly's 404 NOT_FOUND, one
 * served with other methods its 405 METHOD_NOT_ALLOWED (with Allow), both
 * naming the path's resource; shortd's own paths keep shortd's answers. */
void test_compat_bitly_unserved(void)
{
    struct fx f;
    if (!fixture(&f))
        return;
    struct hx_resp resp;
    char path[256];
    snprintf(path, sizeof(path), "/v4/groups/Ba1bc23dE4F/tags");
    CHECK_EQ_INT(hx_request(f.h, "GET", path, f.mine, NULL, &resp), 404);
    bitly_error(&resp, "NOT_FOUND", "groups");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(f.h, "GET", "/v4/organizations", f.mine, NULL, &resp), 404);
    bitly_error(&resp, "NOT_FOUND", "organizations");
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/v4/bitlinks/sho.rt/%s", f.code);
    CHECK_EQ_INT(hx_request(f.h, "DELETE", path, f.mine, NULL, &resp), 405);
    bitly_error(&resp, "METHOD_NOT_ALLOWED", "bitlinks");
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "GET, PATCH");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(f.h, "GET", "/v4/shorten", f.mine, NULL, &resp), 405);
    bitly_error(&resp, "METHOD_NOT_ALLOWED", "bitlinks");
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "POST");
    hx_resp_release(&resp);
    /* The link is still there, and shortd's own paths answer as before. */
    CHECK_EQ_INT(hx_request(f.h, "GET", path, f.mine, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(f.h, "GET", "/v4", f.mine, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(f.h, "PUT", "/api/links", f.mine, NULL, &resp), 405);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "method_not_allowed");
    hx_resp_release(&resp);
    hx_free(f.h);
}
