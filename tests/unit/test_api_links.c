/* test_api_links.c - the links API (api_links.c) in-process (harness.h):
 * create (one, idempotent, in bulk), get, list, edit and its history,
 * delete, disable and enable; their 4xx answers (the field named), the
 * owner rule (another owner's link is 404) and their 503 when the store
 * fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* A harness with two keys and a link of the first one's to 'url': its
 * code, its /api/links/CODE, and each key's Authorization header list. */
struct owned {
    struct hx *h;
    char line[HX_AUTH_MAX], other_line[HX_AUTH_MAX];
    const char *mine[2], *theirs[2];
    char code[HX_CODE_MAX], target[96];
};

/* False (with nothing left to free) when the harness or the link cannot be
 * made; the test is then over. */
static bool owned_link(struct owned *o, const char *url)
{
    o->h = hx_new();
    if (!o->h)
        return false;
    o->mine[0] = hx_auth(o->h, false, o->line);
    o->theirs[0] = hx_auth(o->h, false, o->other_line);
    o->mine[1] = o->theirs[1] = NULL;
    char body[256];
    snprintf(body, sizeof(body), "{\"url\":\"%s\"}", url);
    if (!CHECK_EQ_INT(hx_create(o->h, o->mine[0], body, o->code), 201)) {
        hx_free(o->h);
        return false;
    }
    snprintf(o->target, sizeof(o->target), "/api/links/%s", o->code);
    return true;
}

void test_api_links_create(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[HX_AUTH_MAX];
    const char *auth = hx_auth(h, false, line);
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;

    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers, "{\"url\":\"https://example.com/a\"}",
                            &resp),
                 201);
    CHECK_EQ_STR(hx_json_str(&resp, "url"), "https://example.com/a");
    CHECK(hx_json_str(&resp, "code") && strlen(hx_json_str(&resp, "code")) > 0);
    hx_resp_release(&resp);

    /* 400s name the field at fault. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers, "{\"url\":5}", &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "url");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers, "{\"title\":\"t\"}", &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "url");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers, "{\"url\":", &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_json");
    hx_resp_release(&resp);

    /* Without a key, or with an unknown one: 401. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", NULL, "{\"url\":\"https://example.com/b\"}",
                            &resp),
                 401);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "unauthorized");
    CHECK_EQ_STR(hx_header(&resp, "WWW-Authenticate"), "Bearer");
    hx_resp_release(&resp);
    const char *wrong[] = {"Authorization: Bearer sk_0000000000000000000000000000000000000000",
                           NULL};
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", wrong, "{\"url\":\"https://example.com/b\"}",
                            &resp),
                 401);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_links_create_store_fails(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[HX_AUTH_MAX];
    const char *auth = hx_auth(h, false, line);
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    /* The group commit fails: the create is not acknowledged. */
    hx_unavailable(h, "commit", 0, "POST", "/api/links", headers,
                   "{\"url\":\"https://example.com/a\"}");
    /* The insert itself fails (once): 503 too, and the next create succeeds. */
    hx_unavailable(h, "link_insert", 1, "POST", "/api/links", headers,
                   "{\"url\":\"https://example.com/a\"}");
    char code[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/a\"}", code), 201);
    /* Nothing of the failed creates was kept: the list holds one link. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", headers, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 1);
    hx_resp_release(&resp);
    /* A key not known to this node yet cannot be looked up: 503, not 401. */
    char fresh_line[HX_AUTH_MAX];
    const char *fresh[] = {hx_auth(h, false, fresh_line), NULL};
    hx_unavailable(h, "key_by_hash", 0, "POST", "/api/links", fresh,
                   "{\"url\":\"https://example.com/c\"}");
    /* One it knows (from its key cache) needs no store read to be let in. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", headers, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_links_get(void)
{
    struct owned o;
    if (!owned_link(&o, "https://example.com/mine"))
        return;
    struct hx *h = o.h;
    const char *const code = o.code, *const target = o.target;
    const char **mine = o.mine, **theirs = o.theirs;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "code"), code);
    CHECK_EQ_STR(hx_json_str(&resp, "url"), "https://example.com/mine");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/nosuchcode", mine, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    /* Another owner's link is not found, as if it did not exist. */
    CHECK_EQ_INT(hx_request(h, "GET", target, theirs, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "link_get", 0, "GET", target, mine, NULL);
    hx_free(h);
}

void test_api_links_list(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[HX_AUTH_MAX], other_line[HX_AUTH_MAX];
    const char *auth = hx_auth(h, false, line);
    const char *other = hx_auth(h, false, other_line);
    char a[HX_CODE_MAX], b[HX_CODE_MAX], c[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/1\"}", a), 201);
    /* Newest first means by creation time: two creates in one millisecond
     * would tie (and be ordered by code). */
    struct timespec ms = {0, 2000000L};
    nanosleep(&ms, NULL);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/2\"}", b), 201);
    CHECK_EQ_INT(hx_create(h, other, "{\"url\":\"https://example.com/3\"}", c), 201);
    const char *mine[] = {auth, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", mine, NULL, &resp), 200);
    json_t *links = resp.json; /* an array */
    /* Newest first, the caller's own only. */
    CHECK_EQ_INT(json_array_size(links), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(links, 0), "code")), b);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(links, 1), "code")), a);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=1", mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 1);
    CHECK(hx_header(&resp, "Link") && strstr(hx_header(&resp, "Link"), "rel=\"next\""));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=0", mine, NULL, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "limit");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links?state=gone", mine, NULL, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "state");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "link_list", 0, "GET", "/api/links", mine, NULL);
    hx_free(h);
}

void test_api_links_delete(void)
{
    struct owned o;
    if (!owned_link(&o, "https://example.com/del"))
        return;
    struct hx *h = o.h;
    const char *const target = o.target;
    const char **mine = o.mine, **theirs = o.theirs;
    struct hx_resp resp;
    /* Another owner cannot delete it, nor learn that it exists. */
    CHECK_EQ_INT(hx_request(h, "DELETE", target, theirs, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    /* The commit fails: 503, and the link is still there. */
    hx_unavailable(h, "commit", 0, "DELETE", target, mine, NULL);
    CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "state"), "active");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/links/nosuchcode", mine, NULL, &resp), 404);
    hx_resp_release(&resp);
    /* Gone from the list of live links. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 0);
    hx_resp_release(&resp);
    hx_free(h);
}

/* The link object of 'target' (/api/links/CODE) as 'who' reads it. */
static int get_link(struct hx *h, const char *target, const char *const *who, struct hx_resp *resp)
{
    return hx_request(h, "GET", target, who, NULL, resp);
}

/* Where GET /CODE sends a browser now ("" for no Location): its status. */
static int location(struct hx *h, const char *code, char loc[256])
{
    char target[HX_CODE_MAX + 1];
    snprintf(target, sizeof(target), "/%s", code);
    const char *ua[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0", NULL};
    struct hx_resp resp;
    int status = hx_request(h, "GET", target, ua, NULL, &resp);
    const char *l = hx_header(&resp, "Location");
    snprintf(loc, 256, "%s", l ? l : "");
    hx_resp_release(&resp);
    return status;
}

void test_api_links_idempotency(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[HX_AUTH_MAX];
    const char *auth = hx_auth(h, false, line);
    const char *keyed[] = {auth, "Idempotency-Key: order-17", NULL};
    const char *body = "{\"url\":\"https://example.com/once\"}";
    struct hx_resp resp;
    /* A failed commit remembers nothing: the retry creates. */
    hx_unavailable(h, "commit", 0, "POST", "/api/links", keyed, body);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", keyed, body, &resp), 201);
    CHECK(!hx_header(&resp, "Idempotent-Replayed"));
    char code[HX_CODE_MAX];
    const char *made = hx_json_str(&resp, "code");
    snprintf(code, sizeof(code), "%s", made ? made : "");
    hx_resp_release(&resp);
    /* The same request again: the first answer, replayed. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", keyed, body, &resp), 201);
    CHECK_EQ_STR(hx_header(&resp, "Idempotent-Replayed"), "true");
    CHECK_EQ_STR(hx_json_str(&resp, "code"), code);
    hx_resp_release(&resp);
    /* Another body under the key: 422. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", keyed, "{\"url\":\"https://example.com/two\"}",
                            &resp),
                 422);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "idempotency_mismatch");
    hx_resp_release(&resp);
    const char *bad[] = {auth, "Idempotency-Key: has space", NULL};
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", bad, body, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_header");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "Idempotency-Key");
    hx_resp_release(&resp);
    /* One link was made. */
    const char *mine[] = {auth, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 1);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_links_bulk(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[HX_AUTH_MAX], taken[HX_CODE_MAX];
    const char *auth = hx_auth(h, false, line);
    const char *mine[] = {auth, NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/t\",\"alias\":\"taken-1\"}",
                           taken),
                 201);
    struct hx_resp resp;
    /* A result per item, in order: a refused item gets the error a single
     * create would answer, the others are created. */
    const char *body = "{\"links\":["
                       "{\"url\":\"https://example.com/b1\"},"
                       "{\"url\":\"ftp://example.com/\"},"
                       "{\"url\":\"https://example.com/b3\",\"alias\":\"taken-1\"},"
                       "{\"url\":\"https://example.com/b4\",\"permanent\":true},"
                       "{\"url\":\"https://example.com/b5\",\"password\":\"x\"},"
                       "{\"url\":\"https://example.com/b6\",\"colour\":\"red\"},"
                       "7]}";
    static const struct {
        int status;
        const char *field;
    } want[] = {{201, NULL},       {400, "url"},    {409, "alias"}, {201, NULL},
                {400, "password"}, {400, "colour"}, {400, NULL}};
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links/bulk", mine, body, &resp), 200);
    json_t *results = json_object_get(resp.json, "results");
    CHECK_EQ_INT(json_array_size(results), 7);
    char made[HX_CODE_MAX] = "";
    for (size_t i = 0; i < 7 && i < json_array_size(results); i++) {
        json_t *r = json_array_get(results, i);
        int status = (int)json_integer_value(json_object_get(r, "status"));
        json_t *e = json_object_get(r, "error");
        const char *field = json_string_value(json_object_get(e, "field"));
        bool ok = CHECK_EQ_INT(status, want[i].status);
        if (want[i].status == 201) {
            ok = CHECK(json_is_object(json_object_get(r, "link")) && !e) && ok;
            if (!made[0])
                snprintf(made, sizeof(made), "%s",
                         json_string_value(json_object_get(json_object_get(r, "link"), "code")));
        } else {
            ok = CHECK(json_is_object(e) && json_object_get(e, "field")) && ok;
            ok = (want[i].field ? CHECK_EQ_STR(field, want[i].field) : CHECK(!field)) && ok;
            ok = CHECK_EQ_STR(json_string_value(json_object_get(e, "code")),
                              status == 409 ? "alias_taken" : "invalid_field") &&
                 ok;
        }
        if (!ok)
            test_note("item %zu", i);
    }
    hx_resp_release(&resp);
    char loc[256];
    CHECK_EQ_INT(location(h, made, loc), 302);
    CHECK_EQ_STR(loc, "https://example.com/b1");

    /* A bad envelope is refused whole, naming "links" (or the field). */
    static const struct {
        const char *body, *code, *field;
    } bad[] = {
        {"{}", "invalid_field", "links"},
        {"{\"links\":[]}", "invalid_field", "links"},
        {"{\"links\":{\"url\":\"https://example.com/\"}}", "invalid_field", "links"},
        {"{\"links\":[{\"url\":\"https://example.com/\"}],\"dry_run\":true}", "invalid_field",
         "dry_run"},
        {"[{\"url\":\"https://example.com/\"}]", "invalid_json", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bool ok =
            CHECK_EQ_INT(hx_request(h, "POST", "/api/links/bulk", mine, bad[i].body, &resp), 400);
        ok = CHECK_EQ_STR(hx_json_str(&resp, "error.code"), bad[i].code) && ok;
        if (bad[i].field)
            ok = CHECK_EQ_STR(hx_json_str(&resp, "error.field"), bad[i].field) && ok;
        if (!ok)
            test_note("%s: %s", bad[i].body, resp.body);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links/bulk", NULL, body, &resp), 401);
    hx_resp_release(&resp);

    /* With an Idempotency-Key a retried batch replays its answer; another
     * body under the key is 422. */
    const char *keyed[] = {auth, "Idempotency-Key: batch-1", NULL};
    const char *two = "{\"links\":[{\"url\":\"https://example.com/k1\"},"
                      "{\"url\":\"https://example.com/k2\"}]}";
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links/bulk", keyed, two, &resp), 200);
    char *first = json_dumps(resp.json, JSON_SORT_KEYS);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links/bulk", keyed, two, &resp), 200);
    CHECK_EQ_STR(hx_header(&resp, "Idempotent-Replayed"), "true");
    char *again = json_dumps(resp.json, JSON_SORT_KEYS);
    CHECK_EQ_STR(again, first);
    free(first);
    free(again);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links/bulk", keyed,
                            "{\"links\":[{\"url\":"
                            "\"https://example.com/k3\"}]}",
                            &resp),
                 422);
    hx_resp_release(&resp);

    /* The commit fails: 503, none of the batch is kept. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=1000", mine, NULL, &resp), 200);
    size_t before = json_array_size(resp.json);
    hx_resp_release(&resp);
    hx_unavailable(h, "commit", 0, "POST", "/api/links/bulk", mine, two);
    hx_unavailable(h, "link_insert", 2, "POST", "/api/links/bulk", mine, two);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=1000", mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), before);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_links_patch(void)
{
    struct owned o;
    if (!owned_link(&o, "https://one.example/a"))
        return;
    struct hx *h = o.h;
    const char *const code = o.code, *const target = o.target;
    const char **mine = o.mine, **theirs = o.theirs;
    char admin_line[HX_AUTH_MAX], loc[256];
    const char *admin[] = {hx_auth(h, true, admin_line), NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(location(h, code, loc), 302); /* now cached */

    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine,
                            "{\"url\":\"https://two.example/b\",\"title\":null,\"note\":\"n\","
                            "\"tags\":[\"y\",\"z\"]}",
                            &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "url"), "https://two.example/b");
    CHECK(json_is_null(json_object_get(resp.json, "title")));
    CHECK_EQ_STR(hx_json_str(&resp, "note"), "n");
    CHECK_EQ_INT(json_array_size(json_object_get(resp.json, "tags")), 2);
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 302);
    CHECK_EQ_STR(loc, "https://two.example/b"); /* the cache learnt it */

    /* A password makes it a protected link: the gate, until removed. */
    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, "{\"password\":\"one\"}", &resp), 200);
    CHECK(json_is_true(json_object_get(resp.json, "protected")));
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 200);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, "{\"password\":null}", &resp), 200);
    CHECK(json_is_false(json_object_get(resp.json, "protected")));
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 302);

    /* Another owner: 404; an admin may. */
    CHECK_EQ_INT(hx_request(h, "PATCH", target, theirs, "{\"url\":\"https://bob.example/\"}",
                            &resp),
                 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, admin, "{\"note\":\"by admin\"}", &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "note"), "by admin");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/links/nosuchcode", mine, "{\"note\":\"x\"}", &resp),
                 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, NULL, "{\"note\":\"x\"}", &resp), 401);
    hx_resp_release(&resp);

    /* Bad fields are 400 naming the field (the list of the e2e suite). */
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"url\":null}", "url"},
        {"{\"url\":\"ftp://x.example/\"}", "url"},
        {"{\"alias\":\"newname\"}", "alias"},
        {"{\"max_clicks\":3}", "max_clicks"},
        {"{\"ttl\":0}", "ttl"},
        {"{}", "body"},
        {"{\"password\":\"\"}", "password"},
        {"{\"tags\":\"a,b\"}", "tags"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, bad[i].body, &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field") |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), bad[i].field))
            test_note("%s: %s", bad[i].body, resp.body);
        hx_resp_release(&resp);
    }

    /* The store fails (the read in the job, or the commit): 503, unchanged. */
    const char *change = "{\"url\":\"https://three.example/c\"}";
    hx_unavailable(h, "link_get", 0, "PATCH", target, mine, change);
    hx_unavailable(h, "link_update", 0, "PATCH", target, mine, change);
    hx_unavailable(h, "commit", 0, "PATCH", target, mine, change);
    CHECK_EQ_INT(get_link(h, target, mine, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "url"), "https://two.example/b");
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 302);
    CHECK_EQ_STR(loc, "https://two.example/b");

    /* A deleted link cannot be changed. */
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, change, &resp), 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "deleted");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_links_history(void)
{
    struct owned o;
    if (!owned_link(&o, "https://one.example/a"))
        return;
    struct hx *h = o.h;
    const char *const target = o.target;
    const char **mine = o.mine, **theirs = o.theirs;
    char history[128];
    snprintf(history, sizeof(history), "%s/history", target);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", history, mine, NULL, &resp), 200);
    CHECK(json_is_array(resp.json) && json_array_size(resp.json) == 0);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, "{\"url\":\"https://two.example/b\"}", &resp),
                 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, "{\"title\":\"same url\"}", &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, mine, "{\"url\":\"https://three.example/c\"}",
                            &resp),
                 200);
    hx_resp_release(&resp);

    /* Every move of the destination, newest first. */
    CHECK_EQ_INT(hx_request(h, "GET", history, mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 2);
    json_t *newest = json_array_get(resp.json, 0), *oldest = json_array_get(resp.json, 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(newest, "seq")), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(newest, "old_url")), "https://two.example/b");
    CHECK_EQ_STR(json_string_value(json_object_get(newest, "new_url")), "https://three.example/c");
    CHECK_EQ_INT(json_integer_value(json_object_get(oldest, "seq")), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(oldest, "old_url")), "https://one.example/a");
    CHECK(json_is_string(json_object_get(oldest, "changed_at")));
    CHECK(json_is_integer(json_object_get(oldest, "by_key")));
    hx_resp_release(&resp);

    CHECK_EQ_INT(hx_request(h, "GET", history, theirs, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/nosuchcode/history", mine, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", history, NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "link_get", 0, "GET", history, mine, NULL);
    hx_unavailable(h, "history_list", 0, "GET", history, mine, NULL);
    hx_free(h);
}

void test_api_links_disable_enable(void)
{
    struct owned o;
    if (!owned_link(&o, "https://example.com/toggle"))
        return;
    struct hx *h = o.h;
    const char *const code = o.code, *const target = o.target;
    const char **mine = o.mine;
    char admin_line[HX_AUTH_MAX], loc[256], disable[128], enable[128];
    const char *admin[] = {hx_auth(h, true, admin_line), NULL};
    snprintf(disable, sizeof(disable), "%s/disable", target);
    snprintf(enable, sizeof(enable), "%s/enable", target);
    struct hx_resp resp;
    CHECK_EQ_INT(location(h, code, loc), 302);

    /* Admin keys only: the owner too gets 403. */
    for (int i = 0; i < 2; i++) {
        const char *t = i ? enable : disable;
        CHECK_EQ_INT(hx_request(h, "POST", t, mine, NULL, &resp), 403);
        CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "forbidden");
        hx_resp_release(&resp);
        CHECK_EQ_INT(hx_request(h, "POST", t, NULL, NULL, &resp), 401);
        hx_resp_release(&resp);
    }
    hx_unavailable(h, "commit", 0, "POST", disable, admin, NULL);
    CHECK_EQ_INT(location(h, code, loc), 302);
    CHECK_EQ_INT(hx_request(h, "POST", disable, admin, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "state"), "disabled");
    CHECK_EQ_STR(hx_json_str(&resp, "code"), code);
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 410);
    CHECK_EQ_INT(get_link(h, target, mine, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "state"), "disabled");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links?state=disabled", mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 1);
    hx_resp_release(&resp);

    hx_unavailable(h, "commit", 0, "POST", enable, admin, NULL);
    CHECK_EQ_INT(location(h, code, loc), 410);
    CHECK_EQ_INT(hx_request(h, "POST", enable, admin, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "state"), "active");
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 302);
    CHECK_EQ_STR(loc, "https://example.com/toggle");

    CHECK_EQ_INT(hx_request(h, "POST", "/api/links/zzzzzzz/disable", admin, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    /* A deleted link stays deleted. */
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", enable, admin, NULL, &resp), 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "deleted");
    hx_resp_release(&resp);
    CHECK_EQ_INT(location(h, code, loc), 410);
    hx_free(h);
}

void test_api_links_list_filters(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[HX_AUTH_MAX], admin_line[HX_AUTH_MAX], live[HX_CODE_MAX], dead[HX_CODE_MAX],
        off[HX_CODE_MAX], tagged[HX_CODE_MAX];
    const char *auth = hx_auth(h, false, line);
    const char *mine[] = {auth, NULL};
    const char *admin[] = {hx_auth(h, true, admin_line), NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/live\"}", live), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/dead\"}", dead), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/off\"}", off), 201);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://example.com/t\",\"title\":\"Caf\\u00e9 menu\","
                           "\"tags\":[\"food\"]}",
                           tagged),
                 201);
    char target[128];
    struct hx_resp resp;
    snprintf(target, sizeof(target), "/api/links/%s", dead);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/api/links/%s/disable", off);
    CHECK_EQ_INT(hx_request(h, "POST", target, admin, NULL, &resp), 200);
    hx_resp_release(&resp);

    static const struct {
        const char *query;
        int n;
    } lists[] = {
        {"", 2},
        {"?state=active", 2},
        {"?state=deleted", 1},
        {"?state=disabled", 1},
        {"?state=active,deleted", 3},
        {"?state=all", 4},
        {"?tag=food", 1},
        {"?tag=none", 0},
        {"?q=caf%C3%A9", 1},
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        snprintf(target, sizeof(target), "/api/links%s", lists[i].query);
        if (!CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 200) |
            !CHECK_EQ_INT(json_array_size(resp.json), lists[i].n))
            test_note("%s: %s", lists[i].query, resp.body);
        hx_resp_release(&resp);
    }
    /* Pages: following the Link header gives every link once. */
    int seen = 0;
    snprintf(target, sizeof(target), "/api/links?limit=1&state=all");
    for (int page = 0; page < 10 && target[0]; page++) {
        CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 200);
        seen += (int)json_array_size(resp.json);
        const char *next = hx_header(&resp, "Link");
        target[0] = '\0';
        if (next && next[0] == '<')
            snprintf(target, sizeof(target), "%.*s", (int)strcspn(next + 1, ">"), next + 1);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(seen, 4);

    static const struct {
        const char *query, *field;
    } bad[] = {
        {"?limit=1001", "limit"},  {"?limit=x", "limit"}, {"?cursor=abc", "cursor"},
        {"?state=spent", "state"}, {"?tag=%FF", "tag"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(target, sizeof(target), "/api/links%s", bad[i].query);
        if (!CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), bad[i].field))
            test_note("%s: %s", bad[i].query, resp.body);
        hx_resp_release(&resp);
    }
    /* A search reads the store too. */
    hx_unavailable(h, "link_list", 0, "GET", "/api/links?q=menu", mine, NULL);
    hx_free(h);
}
