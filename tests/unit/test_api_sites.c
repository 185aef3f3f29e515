/* test_api_sites.c - /api/sites, the beacon and the badge (api_sites.c,
 * collect.c) in-process (harness.h): an owner registers a site, beacons of
 * every kind go through the real pipeline, and the stats show exactly what
 * was counted; foreign hosts, malformed and oversized payloads are
 * answered the same and counted nowhere; another owner sees nothing; a
 * read token opens one site's stats. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

#define CHROME_UA                                                                                  \
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "          \
    "Chrome/120.0.0.0 Safari/537.36"

/* GET /e?v=<json as base64url> with these headers; the answer is checked
 * to be the GIF every time. */
static void beacon(struct hx *h, const char *json, const char *origin, const char *ua)
{
    char v[6000], target[6100];
    sodium_bin2base64(v, sizeof(v), (const unsigned char *)json, strlen(json),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    snprintf(target, sizeof(target), "/e?v=%s", v);
    const char *headers[3] = {NULL, NULL, NULL};
    int n = 0;
    if (origin)
        headers[n++] = origin;
    headers[n++] = ua;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, headers, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "image/gif");
    CHECK_EQ_INT(resp.body_len, 43);
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "no-store");
    hx_resp_release(&resp);
}

static long long stat_of(struct hx *h, const char *auth, const char *path)
{
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    long long v = -2;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/blog/stats", headers, NULL, &resp), 200))
        v = hx_json_int(&resp, path);
    hx_resp_release(&resp);
    return v;
}

void test_api_sites(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char alice[HX_AUTH_MAX], bob[HX_AUTH_MAX];
    const char *mine[] = {hx_auth(h, false, alice), NULL};
    const char *theirs[] = {hx_auth(h, false, bob), NULL};
    struct hx_resp resp;

    /* Bad input: each refusal names its field. */
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"id\":\"Blog\",\"hosts\":[\"blog.example\"]}", "id"},
        {"{\"id\":\"blog\",\"hosts\":[]}", "hosts"},
        {"{\"id\":\"blog\",\"hosts\":[\"https://blog.example\"]}", "hosts"},
        {"{\"id\":\"blog\",\"hosts\":[\"a.example\",\"A.example\"]}", "hosts"},
        {"{\"id\":\"blog\",\"hosts\":[\"blog.example\"],\"badge\":1}", "badge"},
        {"{\"id\":\"blog\",\"hosts\":[\"blog.example\"],\"color\":1}", "color"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_INT(hx_request(h, "POST", "/api/sites", mine, bad[i].body, &resp), 400);
        if (!CHECK_EQ_STR(hx_json_str(&resp, "error.field"), bad[i].field))
            test_note("body %s", bad[i].body);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/sites", mine,
                            "{\"id\":\"blog\",\"hosts\":[\"Blog.Example\",\"www.blog.example\"],"
                            "\"badge\":true}",
                            &resp),
                 201);
    CHECK_EQ_STR(hx_json_str(&resp, "id"), "blog");
    CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(resp.json, "hosts"), 0)),
                 "blog.example");
    hx_resp_release(&resp);
    /* The id and the hosts are taken. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/sites", theirs,
                            "{\"id\":\"blog\",\"hosts\":[\"other.example\"]}", &resp),
                 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "site_taken");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/sites", theirs,
                            "{\"id\":\"other\",\"hosts\":[\"www.blog.example\"]}", &resp),
                 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "host_taken");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/other", theirs, NULL, &resp), 404);
    hx_resp_release(&resp); /* the refused create left nothing */

    /* Beacons: two identical page views (both count), an event, the
     * probe's verdicts, a bot, a foreign host, malformed and oversized. */
    const char *origin = "Origin: https://blog.example";
    const char *pv = "{\"p\":\"/post\",\"r\":\"https://friend.example/item\",\"l\":\"en-US\","
                     "\"tz\":\"UTC\",\"w\":390,\"uv\":1,\"ss\":1,\"z\":\"aaaaaa\"}";
    beacon(h, pv, origin, CHROME_UA);
    beacon(h, pv, origin, CHROME_UA);
    beacon(h, "{\"p\":\"/post\",\"ev\":\"outbound\",\"et\":\"https://x.example/\"}", origin,
           CHROME_UA);
    beacon(h, "{\"ev\":\"hi\",\"et\":\"150-2000\"}", origin, CHROME_UA);
    beacon(h, "{\"ev\":\"bot\",\"et\":\"synthetic\"}", origin, CHROME_UA);
    beacon(h, pv, origin, "User-Agent: curl/8.0");
    beacon(h, pv, "Origin: https://evil.example", CHROME_UA);
    /* No Origin: the Referer's host, then the payload's. */
    beacon(h, "{\"p\":\"/r\"}", "Referer: https://www.blog.example/r", CHROME_UA);
    beacon(h, "{\"p\":\"/h\",\"h\":\"blog.example\"}", NULL, CHROME_UA);
    struct hx_resp r2;
    const char *hdrs[] = {origin, CHROME_UA, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/e?v=***", hdrs, NULL, &r2), 200);
    CHECK_EQ_INT(r2.body_len, 43);
    hx_resp_release(&r2);
    CHECK_EQ_INT(hx_request(h, "POST", "/e", hdrs, "v=e30", &r2), 204); /* {} by sendBeacon */
    hx_resp_release(&r2);
    CHECK_EQ_INT(hx_request(h, "POST", "/e", hdrs, "garbage", &r2), 204);
    hx_resp_release(&r2);
    CHECK_EQ_INT(hx_request(h, "HEAD", "/e?v=e30", hdrs, NULL, &r2), 200); /* never counted */
    hx_resp_release(&r2);
    char big[5200] = "/e?v=";
    memset(big + 5, 'A', 5000);
    big[5005] = '\0';
    CHECK_EQ_INT(hx_request(h, "GET", big, hdrs, NULL, &r2), 200);
    hx_resp_release(&r2);
    if (!hx_clicks_settle(h)) {
        hx_free(h);
        return;
    }

    const char *auth = alice;
    CHECK_EQ_INT(stat_of(h, auth, "page_views"), 5); /* 2 + /r + /h + {} */
    CHECK_EQ_INT(stat_of(h, auth, "bots"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "paths./post"), 2);
    CHECK_EQ_INT(stat_of(h, auth, "paths./r"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "paths./h"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "paths./"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "uv"), 2);
    CHECK_EQ_INT(stat_of(h, auth, "sessions"), 2);
    CHECK_EQ_INT(stat_of(h, auth, "bounce"), 0);
    CHECK_EQ_INT(stat_of(h, auth, "viewports.xs"), 2);
    CHECK_EQ_INT(stat_of(h, auth, "ref_groups.referral"), 2);
    CHECK_EQ_INT(stat_of(h, auth, "ref_groups.direct"), 3);
    CHECK_EQ_INT(stat_of(h, auth, "events.outbound"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "hi.150-2000"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "bot.synthetic"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "bot.ua"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "bot_kinds.http_library"), 1);
    CHECK_EQ_INT(stat_of(h, auth, "browsers.Chrome"), 5);
    CHECK_EQ_INT(stat_of(h, auth, "page_views_total"), 5);

    /* Another owner: 404 for everything of it. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/blog/stats", theirs, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/sites/blog", theirs, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites", theirs, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 0);
    hx_resp_release(&resp);

    /* A read token: this site's stats, nothing else. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/sites/blog/tokens", mine, NULL, &resp), 201);
    char token[64] = "";
    if (hx_json_str(&resp, "token"))
        snprintf(token, sizeof(token), "%s", hx_json_str(&resp, "token"));
    long long tid = hx_json_int(&resp, "id");
    hx_resp_release(&resp);
    CHECK(strncmp(token, "st_", 3) == 0 && strlen(token) == 43);
    char target[128], bearer[96];
    snprintf(target, sizeof(target), "/api/sites/blog/stats?token=%s", token);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "page_views"), 5);
    hx_resp_release(&resp);
    snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s", token);
    const char *tok[] = {bearer, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/blog/stats?format=csv", tok, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "text/csv; charset=utf-8");
    CHECK(resp.body && strstr(resp.body, "page_views,,5\r\n"));
    CHECK(resp.body && strstr(resp.body, "ref_groups,referral,2\r\n"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/blog", tok, NULL, &resp), 401);
    hx_resp_release(&resp); /* a token reads stats only */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/blog/stats?token=st_nope", NULL, NULL, &resp),
                 401);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/api/sites/blog/tokens/%lld", tid);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/api/sites/blog/stats?token=%s", token);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 401);
    hx_resp_release(&resp);

    /* The badge: all-time page views, while the site has one. */
    CHECK_EQ_INT(hx_request(h, "GET", "/badge/blog.svg", NULL, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "image/svg+xml");
    CHECK(resp.body && strstr(resp.body, ">5</text>"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/sites/blog", mine, "{\"badge\":false}", &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/badge/blog.svg", NULL, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/badge/nope.svg", NULL, NULL, &resp), 404);
    hx_resp_release(&resp);

    /* Hosts replaced: the old host's beacons count nowhere from now on. */
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/sites/blog", mine, "{\"hosts\":[\"new.example\"]}",
                            &resp),
                 200);
    hx_resp_release(&resp);
    beacon(h, "{\"p\":\"/old\"}", origin, CHROME_UA);
    beacon(h, "{\"p\":\"/new\"}", "Origin: https://new.example", CHROME_UA);
    if (hx_clicks_settle(h)) {
        CHECK_EQ_INT(stat_of(h, auth, "paths./old"), -1);
        CHECK_EQ_INT(stat_of(h, auth, "paths./new"), 1);
    }

    /* A failing store: every read and write of sites answers 503, a beacon
     * its GIF (it reads no store). */
    CHECK(hx_unavailable(h, "site_get", 0, "GET", "/api/sites/blog", mine, NULL));
    CHECK(hx_unavailable(h, "site_list", 0, "GET", "/api/sites", mine, NULL));
    CHECK(hx_unavailable(h, "site_stats_days", 0, "GET", "/api/sites/blog/stats", mine, NULL));
    CHECK(hx_unavailable(h, "site_get", 0, "GET", "/badge/blog.svg", NULL, NULL));
    CHECK(hx_unavailable(h, "site_token_find", 0, "GET", "/api/sites/blog/stats?token=st_x", NULL,
                         NULL));
    CHECK(hx_unavailable(h, "commit", 0, "PATCH", "/api/sites/blog", mine, "{\"badge\":true}"));
    hx_fault(h, "site_get", 0);
    beacon(h, "{\"p\":\"/down\"}", "Origin: https://new.example", CHROME_UA);
    hx_fault_clear(h);

    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/sites/blog", mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/sites/blog/stats", mine, NULL, &resp), 404);
    hx_resp_release(&resp);
    hx_free(h);
}
