/* test_api_stats.c - the analytics API (api_stats.c) in-process (harness.h):
 * a link's stats, the top links of a day, the service's totals and the
 * export, with clicks made through the redirect and stored by the real
 * pipeline; their 4xx answers, the owner rule, and what each does when the
 * store fails. */
#include <stdio.h>
#include <string.h>

#include "base/timeutil.h"
#include "harness.h"
#include "test.h"

#include "base/banned.h"

#define BROWSER "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
#define BOT "User-Agent: Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

/* 'n' GETs of /CODE with the User-Agent line 'ua'. */
static void clicks(struct hx *h, const char *code, const char *ua, int n)
{
    char target[96];
    snprintf(target, sizeof(target), "/%s", code);
    const char *headers[] = {ua, NULL};
    for (int i = 0; i < n; i++) {
        struct hx_resp resp;
        CHECK_EQ_INT(hx_request(h, "GET", target, headers, NULL, &resp), 302);
        hx_resp_release(&resp);
    }
}

/* Today, or today + 'delta' days, as YYYY-MM-DD. */
static const char *day(int delta)
{
    static char d[11];
    day_format(day_number(now_ms()) + delta, d);
    return d;
}

/* Two keys, a link of the first with 3 human clicks and 1 bot click. */
struct fixture {
    struct hx *h;
    char auth[HX_AUTH_MAX], other[HX_AUTH_MAX], admin[HX_AUTH_MAX];
    const char *mine[2], *theirs[2], *admins[2];
    char code[HX_CODE_MAX];
};

static bool fixture(struct fixture *f)
{
    f->h = hx_new();
    if (!f->h)
        return false;
    f->mine[0] = hx_auth(f->h, false, f->auth);
    f->theirs[0] = hx_auth(f->h, false, f->other);
    f->admins[0] = hx_auth(f->h, true, f->admin);
    f->mine[1] = f->theirs[1] = f->admins[1] = NULL;
    if (!CHECK_EQ_INT(hx_create(f->h, f->auth, "{\"url\":\"https://example.com/s\"}", f->code),
                      201)) {
        hx_free(f->h);
        return false;
    }
    clicks(f->h, f->code, BROWSER, 3);
    clicks(f->h, f->code, BOT, 1);
    hx_clicks_settle(f->h);
    return true;
}

void test_api_stats_link(void)
{
    struct fixture f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    char target[160];
    snprintf(target, sizeof(target), "/api/links/%s/stats", f.code);
    struct hx_resp resp;

    /* The 30 days ending today, the clicks on the last. */
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "code"), f.code);
    CHECK_EQ_STR(hx_json_str(&resp, "to"), day(0));
    CHECK_EQ_STR(hx_json_str(&resp, "from"), day(-29));
    CHECK_EQ_INT(hx_json_int(&resp, "clicks"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "bot_clicks"), 1);
    CHECK_EQ_INT(hx_json_int(&resp, "unique_visitors"), 1);
    CHECK_EQ_INT(hx_json_int(&resp, "total_clicks"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "total_bot_clicks"), 1);
    json_t *days = json_object_get(resp.json, "days");
    CHECK_EQ_INT(json_array_size(days), 30);
    json_t *last = json_array_get(days, 29);
    CHECK_EQ_STR(json_string_value(json_object_get(last, "day")), day(0));
    CHECK_EQ_INT(json_integer_value(json_object_get(last, "clicks")), 3);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(days, 0), "clicks")), 0);
    CHECK_EQ_INT(hx_json_int(&resp, "browsers.Firefox"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "bot_kinds.crawler"), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(resp.json, "recent")), 3);
    hx_resp_release(&resp);

    /* An explicit range across a leap day, without the clicks. */
    snprintf(target, sizeof(target), "/api/links/%s/stats?from=2024-02-27&to=2024-03-02", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(json_object_get(resp.json, "days")), 5);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_array_get(json_object_get(resp.json, "days"), 2), "day")),
                 "2024-02-29");
    CHECK_EQ_INT(hx_json_int(&resp, "clicks"), 0);
    CHECK_EQ_INT(hx_json_int(&resp, "total_clicks"), 3);
    hx_resp_release(&resp);

    /* Bad ranges name the field. */
    static const struct {
        const char *query, *field;
    } bad[] = {
        {"?from=2024-03-02&to=2024-02-27", "from"},
        {"?from=2024-13-01&to=2024-12-31", "from"},
        {"?from=2024-02-01&to=2024-02-30", "to"},
        {"?from=yesterday", "from"},
        {"?to=20240105", "to"},
        {"?from=2020-01-01&to=2024-01-01", "from"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(target, sizeof(target), "/api/links/%s/stats%s", f.code, bad[i].query);
        if (!CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field") |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), bad[i].field))
            test_note("%s: %s", bad[i].query, resp.body);
        hx_resp_release(&resp);
    }

    /* Another owner sees a 404 as for no such code; the admin sees it. */
    snprintf(target, sizeof(target), "/api/links/%s/stats", f.code);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.theirs, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    CHECK(!strstr(resp.body, "example.com"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/nosuchcode1/stats", f.mine, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, f.admins, NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "clicks"), 3);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 401);
    hx_resp_release(&resp);

    /* The link, or its days, cannot be read: 503. */
    hx_unavailable(h, "link_get", 0, "GET", target, f.mine, NULL);
    hx_unavailable(h, "stats_days", 0, "GET", target, f.mine, NULL);
    hx_free(h);
}

void test_api_stats_top(void)
{
    struct fixture f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    char busy[HX_CODE_MAX], bots[HX_CODE_MAX], theirs[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, f.auth, "{\"url\":\"https://example.com/busy\"}", busy), 201);
    CHECK_EQ_INT(hx_create(h, f.auth, "{\"url\":\"https://example.com/bots\"}", bots), 201);
    CHECK_EQ_INT(hx_create(h, f.other, "{\"url\":\"https://example.com/theirs\"}", theirs), 201);
    clicks(h, busy, BROWSER, 5);
    clicks(h, bots, BOT, 4);
    clicks(h, theirs, BROWSER, 1);
    hx_clicks_settle(h);

    /* The caller's links of today by people's clicks: busy, then the
     * fixture's; one with bot clicks only is not in it. */
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/top", f.mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 2);
    json_t *first = json_array_get(resp.json, 0), *second = json_array_get(resp.json, 1);
    CHECK_EQ_STR(json_string_value(json_object_get(first, "code")), busy);
    CHECK_EQ_INT(json_integer_value(json_object_get(first, "clicks")), 5);
    CHECK(!strncmp(json_string_value(json_object_get(first, "short_url")), "http://sho.rt/", 14));
    CHECK_EQ_STR(json_string_value(json_object_get(second, "code")), f.code);
    CHECK_EQ_INT(json_integer_value(json_object_get(second, "clicks")), 3);
    hx_resp_release(&resp);
    char target[64];
    snprintf(target, sizeof(target), "/api/links/top?day=%s", day(-1));
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 0);
    hx_resp_release(&resp);
    /* The admin sees everyone's. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/top", f.admins, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 3);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/top?day=today", f.mine, NULL, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "day");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/top", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "stats_top", 0, "GET", "/api/links/top", f.mine, NULL);
    hx_free(h);
}

void test_api_stats_service(void)
{
    struct fixture f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    char theirs[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, f.other, "{\"url\":\"https://example.com/theirs\"}", theirs), 201);
    clicks(h, theirs, BROWSER, 2);
    hx_clicks_settle(h);
    /* Service-wide totals for any key; today's top per caller. */
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/stats", f.mine, NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "links"), 2);
    CHECK_EQ_INT(hx_json_int(&resp, "clicks"), 5);
    CHECK_EQ_INT(hx_json_int(&resp, "bot_clicks"), 1);
    CHECK_EQ_STR(hx_json_str(&resp, "day"), day(0));
    json_t *top = json_object_get(resp.json, "top_today");
    CHECK_EQ_INT(json_array_size(top), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(top, 0), "code")), f.code);
    /* The range: the caller's links together, by day and by dimension. */
    CHECK_EQ_STR(hx_json_str(&resp, "range.from"), day(-29));
    CHECK_EQ_STR(hx_json_str(&resp, "range.to"), day(0));
    CHECK_EQ_INT(hx_json_int(&resp, "range.clicks"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "range.unique_visitors"), 1);
    CHECK_EQ_INT(hx_json_int(&resp, "range.bot_clicks"), 1);
    CHECK_EQ_INT(hx_json_int(&resp, "range.browsers.Firefox"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "range.bot_kinds.crawler"), 1);
    json_t *days = json_object_get(json_object_get(resp.json, "range"), "days");
    CHECK_EQ_INT(json_array_size(days), 30);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(days, 29), "clicks")), 3);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(days, 0), "clicks")), 0);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/stats", f.admins, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(json_object_get(resp.json, "top_today")), 2);
    CHECK_EQ_INT(hx_json_int(&resp, "range.clicks"), 5);
    CHECK_EQ_INT(hx_json_int(&resp, "range.unique_visitors"), 2);
    CHECK_EQ_INT(hx_json_int(&resp, "range.browsers.Firefox"), 5);
    hx_resp_release(&resp);
    char target[64];
    snprintf(target, sizeof(target), "/api/stats?from=%s&to=%s", day(-1), day(-1));
    CHECK_EQ_INT(hx_request(h, "GET", target, f.mine, NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "range.clicks"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(resp.json, "range"), "days")), 1);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/stats?from=2026-13-01", f.mine, NULL, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "from");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/stats", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "stats_totals", 0, "GET", "/api/stats", f.mine, NULL);
    hx_unavailable(h, "stats_top", 0, "GET", "/api/stats", f.mine, NULL);
    hx_unavailable(h, "stats_all_days", 0, "GET", "/api/stats", f.mine, NULL);
    hx_free(h);
}

void test_api_stats_export(void)
{
    struct fixture f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    char theirs[HX_CODE_MAX], comma[HX_CODE_MAX], gone[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, f.other, "{\"url\":\"https://example.com/theirs\"}", theirs), 201);
    CHECK_EQ_INT(hx_create(h, f.auth, "{\"url\":\"https://example.com/a,b\"}", comma), 201);
    CHECK_EQ_INT(hx_create(h, f.auth, "{\"url\":\"https://example.com/gone\"}", gone), 201);
    char target[96];
    snprintf(target, sizeof(target), "/api/links/%s", gone);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "DELETE", target, f.mine, NULL, &resp), 204);
    hx_resp_release(&resp);

    /* JSON: the caller's links, deleted ones too, with their days. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=json", f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "application/json");
    CHECK_EQ_STR(hx_header(&resp, "Content-Disposition"),
                 "attachment; filename=\"shortd-export.json\"");
    CHECK(json_is_array(resp.json) && json_array_size(resp.json) == 3);
    size_t i;
    json_t *l;
    int seen = 0;
    json_array_foreach(resp.json, i, l)
    {
        const char *code = json_string_value(json_object_get(l, "code"));
        const char *state = json_string_value(json_object_get(l, "state"));
        if (code && !strcmp(code, f.code))
            seen += CHECK_EQ_STR(state, "active");
        else if (code && !strcmp(code, gone))
            seen += CHECK_EQ_STR(state, "deleted");
    }
    CHECK_EQ_INT(seen, 2);
    hx_resp_release(&resp);
    /* CSV: a header row, one row per link and day, fields quoted as needed. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=csv", f.mine, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "text/csv; charset=utf-8");
    CHECK(!strncmp(resp.body,
                   "code,short_url,url,created_at,state,day,clicks,unique_visitors,"
                   "bot_clicks\r\n",
                   72));
    char row[256];
    snprintf(row, sizeof(row), "\r\n%s,http://sho.rt/%s,https://example.com/s,", f.code, f.code);
    CHECK(strstr(resp.body, row) != NULL);
    CHECK(strstr(resp.body, ",\"https://example.com/a,b\",") != NULL);
    CHECK(!strstr(resp.body, theirs));
    hx_resp_release(&resp);
    /* The admin exports every link. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export", f.admins, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 4);
    hx_resp_release(&resp);
    /* HEAD: the head only. */
    CHECK_EQ_INT(hx_request(h, "HEAD", "/api/export?format=csv", f.mine, NULL, &resp), 200);
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);

    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=xml", f.mine, NULL, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "format");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);

    /* The store fails: an export streams, its 200 is on its way before the
     * first read, so it cannot answer 503 (see the report of issue 24): it
     * is cut short, which a client sees as a connection closed before the
     * end. Never a complete answer. */
    hx_fault(h, "link_list", 0);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=json", f.mine, NULL, &resp), 0);
    CHECK(!json_is_array(resp.json));
    hx_resp_release(&resp);
    hx_fault_clear(h);
    hx_fault(h, "link_list", 2); /* the second batch */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=json", f.mine, NULL, &resp), 0);
    CHECK(!json_is_array(resp.json));
    hx_resp_release(&resp);
    hx_fault_clear(h);
    /* The heavy read it held is given back: the next export runs. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export", f.mine, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_free(h);
}

/* A link on a custom domain is exported with its short URL on that domain
 * (the scheme of base-url), as the link object gives it: JSON and CSV. */
void test_api_stats_export_domain(void)
{
    struct fixture f;
    if (!fixture(&f))
        return;
    struct hx *h = f.h;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", f.mine, "{\"host\":\"go.example\"}", &resp),
                 201);
    hx_resp_release(&resp);
    char code[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, f.auth,
                           "{\"url\":\"https://example.com/d\",\"domain\":\"go.example\"}", code),
                 201);
    char want[128];
    snprintf(want, sizeof(want), "http://go.example/%s", code);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=json", f.mine, NULL, &resp), 200);
    size_t i;
    json_t *l;
    int found = 0;
    json_array_foreach(resp.json, i, l)
    {
        const char *c = json_string_value(json_object_get(l, "code"));
        if (c && !strcmp(c, code))
            found += CHECK_EQ_STR(json_string_value(json_object_get(l, "short_url")), want);
    }
    CHECK_EQ_INT(found, 1);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/export?format=csv", f.mine, NULL, &resp), 200);
    char row[320];
    snprintf(row, sizeof(row), "\r\n%s,%s,https://example.com/d,", code, want);
    CHECK(resp.body && strstr(resp.body, row) != NULL);
    hx_resp_release(&resp);
    hx_free(h);
}
