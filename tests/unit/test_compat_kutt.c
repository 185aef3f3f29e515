/* test_compat_kutt.c - Kutt's API v2 (compat_kutt.c) in-process (harness.h):
 * each route's answer in Kutt's shape, its errors as {"error": "..."} with
 * Kutt's status, the ids (stable, turned back into codes, long aliases
 * too), a missing or wrong key, another owner's link, bad input storing
 * nothing, a failing store, CORS, and the paths under /api/v2/ no route serves
 * (Kutt's 404) beside shortd's own under /api. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/buf.h"
#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* METHOD /api/v2PATH as 'key' (none when NULL) with 'body'. */
static int kreq(struct hx *h, const char *key, const char *method, const char *path,
                const char *body, struct hx_resp *resp)
{
    char line[HX_AUTH_MAX], target[512];
    snprintf(line, sizeof(line), "X-API-KEY: %s", key ? key : "");
    const char *headers[] = {line, "Content-Type: application/json", NULL};
    snprintf(target, sizeof(target), "/api/v2%s", path);
    return hx_request(h, method, target, key ? headers : headers + 1, body, resp);
}

/* The answer is Kutt's error with this message. */
static bool kutt_error_is(const struct hx_resp *resp, const char *message)
{
    bool ok = json_is_object(resp->json) && json_object_size(resp->json) == 1 &&
              hx_json_str(resp, "error") && !strcmp(hx_json_str(resp, "error"), message);
    if (!ok)
        test_note("expected {\"error\": \"%s\"}, got %d %s", message, resp->status,
                  resp->body ? resp->body : "");
    return ok;
}

/* The links the key has (every state), as GET /api/links counts them. */
static long count_links(struct hx *h, const char *key)
{
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", key);
    const char *headers[] = {line, NULL};
    struct hx_resp resp;
    long n = -1;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=1000&state=all", headers, NULL, &resp),
                     200))
        n = (long)json_array_size(resp.json);
    hx_resp_release(&resp);
    return n;
}

/* Creates a link through Kutt's API: its id into 'id', its code into 'code'. */
static int kcreate(struct hx *h, const char *key, const char *body, char id[64], char code[64])
{
    struct hx_resp resp;
    int status = kreq(h, key, "POST", "/links", body, &resp);
    snprintf(id, 64, "%s", hx_json_str(&resp, "id") ? hx_json_str(&resp, "id") : "");
    snprintf(code, 64, "%s", hx_json_str(&resp, "address") ? hx_json_str(&resp, "address") : "");
    if (status != 201 && status != 200)
        test_note("POST /api/v2/links %s: %d %s", body, status, resp.body ? resp.body : "");
    hx_resp_release(&resp);
    return status;
}

static bool is_uuid(const char *s)
{
    if (!s || strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
            return false;
    }
    return true;
}

void test_compat_kutt_create(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;

    /* Kutt's link object, in Kutt's key order */
    CHECK_EQ_INT(kreq(h, key, "POST", "/links",
                      "{\"target\":\"example.com/k1\",\"description\":\"first\","
                      "\"customurl\":\"kutt1\"}",
                      &resp),
                 201);
    CHECK_EQ_STR(resp.content_type, "application/json; charset=utf-8");
    CHECK(is_uuid(hx_json_str(&resp, "id")));
    CHECK_EQ_STR(hx_json_str(&resp, "address"), "kutt1");
    CHECK_EQ_STR(hx_json_str(&resp, "target"), "http://example.com/k1"); /* http:// added */
    CHECK_EQ_STR(hx_json_str(&resp, "description"), "first");
    CHECK_EQ_STR(hx_json_str(&resp, "link"), "http://sho.rt/kutt1");
    CHECK_EQ_INT(hx_json_int(&resp, "visit_count"), 0);
    CHECK(json_is_false(json_object_get(resp.json, "password")));
    CHECK(json_is_false(json_object_get(resp.json, "banned")));
    CHECK(json_is_null(json_object_get(resp.json, "expire_in")));
    CHECK(json_is_null(json_object_get(resp.json, "domain")));
    CHECK(resp.body && !strncmp(resp.body, "{\"id\":", 6) &&
          strstr(resp.body, "\"visit_count\":0,\"domain\":null,\"link\":"));
    char id[64];
    snprintf(id, sizeof(id), "%s", hx_json_str(&resp, "id"));
    hx_resp_release(&resp);

    /* an ordinary link: it redirects, and shortd's API has it with its note */
    CHECK_EQ_INT(hx_request(h, "GET", "/kutt1", NULL, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "http://example.com/k1");
    hx_resp_release(&resp);
    char auth[HX_AUTH_MAX];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    const char *bearer[] = {auth, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/kutt1", bearer, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "note"), "first");
    hx_resp_release(&resp);

    /* reuse: the key's link to the target, 200, the same id */
    CHECK_EQ_INT(kreq(h, key, "POST", "/links",
                      "{\"target\":\"http://example.com/k1\",\"reuse\":true}", &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "id"), id);
    hx_resp_release(&resp);

    /* expire_in and password */
    CHECK_EQ_INT(kreq(h, key, "POST", "/links",
                      "{\"target\":\"https://example.com/k2\",\"expire_in\":\"2 hours\","
                      "\"password\":\"hunter22\"}",
                      &resp),
                 201);
    CHECK(json_is_true(json_object_get(resp.json, "password")));
    CHECK(json_is_string(json_object_get(resp.json, "expire_in")));
    hx_resp_release(&resp);

    /* the alias taken: Kutt's message, and Kutt's 500 */
    CHECK_EQ_INT(kreq(h, key, "POST", "/links",
                      "{\"target\":\"https://example.com/k3\",\"customurl\":\"kutt1\"}", &resp),
                 500);
    CHECK(kutt_error_is(&resp, "Custom URL is already in use."));
    hx_resp_release(&resp);
    hx_free(h);
}

/* Bad input: Kutt's message with 400, and nothing stored. */
void test_compat_kutt_bad_input(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    long before = count_links(h, key);
    static const struct {
        const char *body, *message;
    } cases[] = {
        {"{}", "Target is missing."},
        {"{\"target\":\"\"}", "Target is missing."},
        {"{\"target\":42}", "Invalid value"},
        {"{\"target\":\"notaurl\"}", "URL is not valid."},
        {"{\"target\":\"http://192.168.1.1/x\"}", "URL is not valid."},
        {"{\"target\":\"http://[2001:db8::1]/x\"}", "URL is not valid."},
        {"{\"target\":\"http://example.com:1/x\"}", "URL is not valid."},
        {"{\"target\":\"https://example.com/x\",\"expire_in\":\"2 fortnights\"}",
         "Expire format is invalid. Valid examples: 1m, 8h, 42 days."},
        {"{\"target\":\"https://example.com/x\",\"expire_in\":\"59s\"}",
         "Expire time should be more than 1 minute."},
        {"{\"target\":\"https://example.com/x\",\"expire_in\":\"200 years\"}",
         "Expire time should be at most 100 years."},
        {"{\"target\":\"https://example.com/x\",\"password\":\"ab\"}",
         "Password length must be between 3 and 64."},
        {"{\"target\":\"https://example.com/x\",\"customurl\":\"a/b\"}",
         "Custom URL is not valid."},
        {"{\"target\":\"https://example.com/x\",\"customurl\":\"abc\"}",
         "Custom URL must be 4 to 30 characters."},
        {"{\"target\":\"https://example.com/x\",\"customurl\":\"admin\"}",
         "You can't use this custom URL."},
        {"{\"target\":\"https://example.com/x\",\"reuse\":\"maybe\"}", "Reuse must be boolean."},
        {"{\"target\":\"https://example.com/x\",\"domain\":\"links.example.org\"}",
         "You can't use this domain."},
        {"{\"target\":\"https://example.com/x\",\"domain\":7}", "Domain should be string."},
        {"{\"target\":\"http://sho.rt/abcd\"}", "sho.rt URLs are not allowed."},
        {"{\"target\":\"ftp://example.com/x\"}", "URL is not valid."},
        {"[1]", "The body must be a JSON object."},
        {"{\"target\":", "The body must be a JSON object."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct hx_resp resp;
        if (!CHECK_EQ_INT(kreq(h, key, "POST", "/links", cases[i].body, &resp), 400))
            test_note("body %s", cases[i].body);
        CHECK(kutt_error_is(&resp, cases[i].message));
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(count_links(h, key), before);

    /* PATCH's refusals store nothing either */
    char id[64], code[64];
    CHECK_EQ_INT(kcreate(h, key, "{\"target\":\"https://example.com/p\"}", id, code), 201);
    char path[128];
    snprintf(path, sizeof(path), "/links/%s", id);
    struct hx_resp resp;
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{\"target\":\"ftp://example.com\"}", &resp), 400);
    CHECK(kutt_error_is(&resp, "URL is not valid."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{\"address\":\"renamed\"}", &resp), 400);
    CHECK(kutt_error_is(&resp, "Custom URL cannot be changed: create a new link instead."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{}", &resp), 500);
    CHECK(kutt_error_is(&resp, "Should at least update one field."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{\"target\":\"https://example.com/p\"}", &resp), 500);
    CHECK(kutt_error_is(&resp, "Should at least update one field."));
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/%s", code);
    CHECK_EQ_INT(hx_request(h, "GET", path, NULL, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/p");
    hx_resp_release(&resp);
    hx_free(h);
}

/* Ids: stable, turned back into the code (a long alias's too), and an id
 * that is none answered as Kutt does. */
void test_compat_kutt_ids(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    char id[64], code[64], lid[64], lcode[64], path[160];
    CHECK_EQ_INT(kcreate(h, key, "{\"target\":\"https://example.com/i\"}", id, code), 201);
    CHECK(is_uuid(id));
    CHECK_EQ_INT(kcreate(h, key,
                         "{\"target\":\"https://example.com/long\","
                         "\"customurl\":\"a-rather-long-alias-of-28ch\"}",
                         lid, lcode),
                 201);
    CHECK_EQ_STR(lcode, "a-rather-long-alias-of-28ch");
    CHECK(is_uuid(lid));
    CHECK(strcmp(id, lid) != 0);

    /* the list shows the same ids */
    struct hx_resp resp;
    CHECK_EQ_INT(kreq(h, key, "GET", "/links", NULL, &resp), 200);
    json_t *data = json_object_get(resp.json, "data");
    CHECK_EQ_INT((long long)json_array_size(data), 2);
    const char *first = json_string_value(json_object_get(json_array_get(data, 0), "id"));
    const char *second = json_string_value(json_object_get(json_array_get(data, 1), "id"));
    CHECK(first && second &&
          ((!strcmp(first, lid) && !strcmp(second, id)) ||
           (!strcmp(first, id) && !strcmp(second, lid))));
    hx_resp_release(&resp);

    /* each id finds its link (upper-case hex too) */
    snprintf(path, sizeof(path), "/links/%s/stats", lid);
    CHECK_EQ_INT(kreq(h, key, "GET", path, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "address"), lcode);
    hx_resp_release(&resp);
    char upper[64];
    snprintf(upper, sizeof(upper), "%s", id);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    snprintf(path, sizeof(path), "/links/%s/stats", upper);
    CHECK_EQ_INT(kreq(h, key, "GET", path, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "address"), code);
    CHECK_EQ_STR(hx_json_str(&resp, "id"), id);
    hx_resp_release(&resp);

    /* a UUID no link has, and one that is no id of ours */
    CHECK_EQ_INT(kreq(h, key, "GET", "/links/123e4567-e89b-12d3-a456-426614174000/stats", NULL,
                      &resp),
                 500);
    CHECK(kutt_error_is(&resp, "Link could not be found."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "DELETE", "/links/not-an-id", NULL, &resp), 400);
    CHECK(kutt_error_is(&resp, "ID is invalid."));
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/links/%s", code); /* a code is no id */
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{\"description\":\"x\"}", &resp), 400);
    CHECK(kutt_error_is(&resp, "ID is invalid."));
    hx_resp_release(&resp);
    hx_free(h);
}

/* List, edit, stats, delete, users and health. */
void test_compat_kutt_routes(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    char ids[3][64], codes[3][64], path[160];
    for (int i = 0; i < 3; i++) {
        char body[96];
        snprintf(body, sizeof(body), "{\"target\":\"https://example.com/r%d\"}", i);
        CHECK_EQ_INT(kcreate(h, key, body, ids[i], codes[i]), 201);
    }
    /* (links of one millisecond are in code order: the page is compared
     * with the whole list, not with the order of the creates) */
    struct hx_resp resp, all;
    CHECK_EQ_INT(kreq(h, key, "GET", "/links", NULL, &all), 200);
    CHECK_EQ_INT(kreq(h, key, "GET", "/links?limit=1&skip=1", NULL, &resp), 200);
    CHECK(resp.body && !strncmp(resp.body, "{\"total\":3,\"limit\":1,\"skip\":1,\"data\":[", 38));
    CHECK_EQ_INT((long long)json_array_size(json_object_get(resp.json, "data")), 1);
    CHECK(json_equal(json_array_get(json_object_get(resp.json, "data"), 0),
                     json_array_get(json_object_get(all.json, "data"), 1)));
    hx_resp_release(&resp);
    hx_resp_release(&all);
    /* (a search for "r2" alone also finds a random code holding it) */
    CHECK_EQ_INT(kreq(h, key, "GET", "/links?limit=500&skip=abc&search=example.com/r2", NULL,
                      &resp),
                 200);
    CHECK_EQ_INT(hx_json_int(&resp, "limit"), 50);
    CHECK_EQ_INT(hx_json_int(&resp, "skip"), 0);
    CHECK_EQ_INT(hx_json_int(&resp, "total"), 1);
    hx_resp_release(&resp);

    /* edit: target, description, expiry; password set, then removed */
    snprintf(path, sizeof(path), "/links/%s", ids[0]);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path,
                      "{\"target\":\"https://example.com/moved\",\"description\":\"d\","
                      "\"expire_in\":\"3d\",\"address\":\"",
                      &resp),
                 400); /* malformed JSON */
    hx_resp_release(&resp);
    char body[256];
    snprintf(body, sizeof(body),
             "{\"target\":\"https://example.com/moved\",\"description\":\"d\","
             "\"expire_in\":\"3d\",\"address\":\"%s\",\"password\":\"secret\"}",
             codes[0]);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, body, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "id"), ids[0]);
    CHECK_EQ_STR(hx_json_str(&resp, "target"), "https://example.com/moved");
    CHECK_EQ_STR(hx_json_str(&resp, "description"), "d");
    CHECK(json_is_string(json_object_get(resp.json, "expire_in")));
    CHECK(json_is_true(json_object_get(resp.json, "password")));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{\"password\":\"\"}", &resp), 200);
    CHECK(json_is_false(json_object_get(resp.json, "password")));
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/%s", codes[0]);
    const char *ua[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", path, ua, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/moved");
    hx_resp_release(&resp);

    /* stats: the click shows in the periods */
    hx_clicks_settle(h);
    snprintf(path, sizeof(path), "/links/%s/stats", ids[0]);
    CHECK_EQ_INT(kreq(h, key, "GET", path, NULL, &resp), 200);
    CHECK(resp.body && !strncmp(resp.body, "{\"lastYear\":", 12));
    CHECK_EQ_INT(hx_json_int(&resp, "lastDay.total"), 1);
    CHECK_EQ_INT(hx_json_int(&resp, "lastMonth.total"), 1);
    CHECK_EQ_INT(hx_json_int(&resp, "visit_count"), 1);
    CHECK_EQ_INT((long long)json_array_size(
                     json_object_get(json_object_get(resp.json, "lastDay"), "views")),
                 24);
    CHECK_EQ_INT((long long)json_array_size(
                     json_object_get(json_object_get(resp.json, "lastYear"), "views")),
                 12);
    CHECK_EQ_STR(hx_json_str(&resp, "id"), ids[0]);
    hx_resp_release(&resp);
    /* the npm client's DELETE .../stats reads them too, and deletes nothing */
    CHECK_EQ_INT(kreq(h, key, "DELETE", path, NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "lastWeek.total"), 1);
    hx_resp_release(&resp);

    /* delete: a tombstone, and then not found */
    snprintf(path, sizeof(path), "/links/%s", ids[1]);
    CHECK_EQ_INT(kreq(h, key, "DELETE", path, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "Link has been deleted successfully.");
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "DELETE", path, NULL, &resp), 500);
    CHECK(kutt_error_is(&resp, "Could not find the link."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "PATCH", path, "{\"description\":\"x\"}", &resp), 500);
    CHECK(kutt_error_is(&resp, "Link was not found."));
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/%s", codes[1]);
    CHECK_EQ_INT(hx_request(h, "GET", path, NULL, NULL, &resp), 410);
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "GET", "/links", NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "total"), 2);
    hx_resp_release(&resp);

    /* users and health */
    CHECK_EQ_INT(kreq(h, key, "GET", "/users", NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "apikey"), key);
    CHECK(json_is_array(json_object_get(resp.json, "domains")));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, NULL, "GET", "/health", NULL, &resp), 200);
    CHECK(resp.body && !strcmp(resp.body, "OK"));
    hx_resp_release(&resp);
    hx_free(h);
}

/* No key, a wrong key, a Bearer key: 401 "Unauthorized."; another owner's
 * link: Kutt's not-found on every route, the link unchanged. */
void test_compat_kutt_auth_owner(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64], other[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    snprintf(other, sizeof(other), "%s", hx_key(h, false));
    struct hx_resp resp;
    CHECK_EQ_INT(kreq(h, NULL, "GET", "/links", NULL, &resp), 401);
    CHECK(kutt_error_is(&resp, "Unauthorized."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, "sk_0000000000000000000000000000000000000000", "POST", "/links",
                      "{\"target\":\"https://example.com/w\"}", &resp),
                 401);
    CHECK(kutt_error_is(&resp, "Unauthorized."));
    hx_resp_release(&resp);
    char auth[HX_AUTH_MAX];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    const char *bearer[] = {auth, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/v2/users", bearer, NULL, &resp), 401);
    CHECK(kutt_error_is(&resp, "Unauthorized."));
    hx_resp_release(&resp);

    char id[64], code[64], path[160];
    CHECK_EQ_INT(kcreate(h, key, "{\"target\":\"https://example.com/mine\"}", id, code), 201);
    snprintf(path, sizeof(path), "/links/%s", id);
    CHECK_EQ_INT(kreq(h, other, "PATCH", path, "{\"target\":\"https://evil.example/\"}", &resp),
                 500);
    CHECK(kutt_error_is(&resp, "Link was not found."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, other, "DELETE", path, NULL, &resp), 500);
    CHECK(kutt_error_is(&resp, "Could not find the link."));
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/links/%s/stats", id);
    CHECK_EQ_INT(kreq(h, other, "GET", path, NULL, &resp), 500);
    CHECK(kutt_error_is(&resp, "Link could not be found."));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, other, "GET", "/links", NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "total"), 0);
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/%s", code);
    CHECK_EQ_INT(hx_request(h, "GET", path, NULL, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/mine");
    hx_resp_release(&resp);

    /* an admin key reaches it, and lists every link with all=true only */
    char admin[64];
    snprintf(admin, sizeof(admin), "%s", hx_key(h, true));
    CHECK_EQ_INT(kreq(h, admin, "GET", "/links", NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "total"), 0);
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, admin, "GET", "/links?all=true", NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "total"), 1);
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/links/%s/stats", id);
    CHECK_EQ_INT(kreq(h, admin, "GET", path, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_free(h);
}

/* A failing store: 503 with Retry-After, in Kutt's shape, nothing stored. */
void test_compat_kutt_store_fails(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    CHECK_EQ_INT(kreq(h, key, "GET", "/users", NULL, &resp), 200); /* the key is cached */
    hx_resp_release(&resp);
    long before = count_links(h, key);
    hx_fault(h, "link_insert", 0);
    CHECK_EQ_INT(kreq(h, key, "POST", "/links", "{\"target\":\"https://example.com/f\"}", &resp),
                 503);
    CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1");
    CHECK(hx_json_str(&resp, "error") != NULL);
    hx_resp_release(&resp);
    hx_fault_clear(h);
    CHECK_EQ_INT(count_links(h, key), before);
    hx_fault(h, "link_list", 0);
    CHECK_EQ_INT(kreq(h, key, "GET", "/links", NULL, &resp), 503);
    CHECK(hx_json_str(&resp, "error") != NULL);
    hx_resp_release(&resp);
    hx_fault_clear(h);
    char other[64];
    snprintf(other, sizeof(other), "%s", hx_key(h, false));
    hx_fault(h, "key_by_hash", 0);
    CHECK_EQ_INT(kreq(h, other, "GET", "/links", NULL, &resp), 503);
    CHECK(hx_json_str(&resp, "error") != NULL && !hx_json_str(&resp, "error.code"));
    hx_resp_release(&resp);
    hx_fault_clear(h);
    hx_free(h);
}

/* Browser extensions call it as they call /api: CORS for the origins
 * cors-origins lists, preflight and answers alike. */
void test_compat_kutt_cors(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    hx_app(h)->cfg.cors_origins = xstrdup("chrome-extension://kuttext");
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    const char *const pre[] = {"Origin: chrome-extension://kuttext",
                               "Access-Control-Request-Method: POST",
                               "Access-Control-Request-Headers: x-api-key, content-type", NULL};
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/v2/links", pre, NULL, &resp), 204);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "chrome-extension://kuttext");
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Methods"), "POST, GET");
    hx_resp_release(&resp);
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "X-API-KEY: %s", key);
    const char *const post[] = {"Origin: chrome-extension://kuttext", line, NULL};
    CHECK_EQ_INT(hx_request(h, "POST", "/api/v2/links", post,
                            "{\"target\":\"https://example.com/cors\"}", &resp),
                 201);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "chrome-extension://kuttext");
    hx_resp_release(&resp);
    const char *const anon[] = {"Origin: chrome-extension://kuttext", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/v2/links", anon, NULL, &resp), 401);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "chrome-extension://kuttext");
    hx_resp_release(&resp);
    hx_free(h);
}

/* A path under /api/v2/ that no route serves, or not with this method, is
 * Kutt's 404 {"error": "Cannot METHOD PATH"} (Kutt's Express app has no
 * 405); shortd's own paths under /api, and those only beginning like
 * /api/v2, keep shortd's answers. */
void test_compat_kutt_unserved(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    CHECK_EQ_INT(kreq(h, key, "GET", "/domains", NULL, &resp), 404);
    CHECK(kutt_error_is(&resp, "Cannot GET /api/v2/domains"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, NULL, "POST", "/links/abc/protected", "{}", &resp), 404);
    CHECK(kutt_error_is(&resp, "Cannot POST /api/v2/links/abc/protected"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "PUT", "/links", "{}", &resp), 404);
    CHECK(kutt_error_is(&resp, "Cannot PUT /api/v2/links"));
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "POST, GET");
    hx_resp_release(&resp);
    CHECK_EQ_INT(kreq(h, key, "POST", "/health", NULL, &resp), 404);
    CHECK(kutt_error_is(&resp, "Cannot POST /api/v2/health"));
    hx_resp_release(&resp);
    /* shortd's own: /api/v2 itself, /api/v2x/..., and a wrong method on /api/links. */
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", key);
    const char *headers[] = {line, NULL};
    const char *const own[] = {"/api/v2", "/api/v2x/links", "/api/nothing"};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        CHECK_EQ_INT(hx_request(h, "GET", own[i], headers, NULL, &resp), 404);
        CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "PUT", "/api/links", headers, NULL, &resp), 405);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "method_not_allowed");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", headers, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_free(h);
}
