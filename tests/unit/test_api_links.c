/* test_api_links.c - the links API (api_links.c) in-process (harness.h):
 * create, get, list and delete; their 4xx answers and their 503 when the
 * store fails. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* "Authorization: Bearer TOKEN" for 'token' (a copy in 'line'). */
static const char *bearer(char line[96], const char *token)
{
    snprintf(line, 96, "Authorization: Bearer %s", token);
    return line;
}

/* Creates a link to 'url' as the key 'auth'; its code goes to 'code'. */
static int create(struct hx *h, const char *auth, const char *url, char code[32])
{
    const char *headers[] = {auth, "Content-Type: application/json", NULL};
    char body[256];
    snprintf(body, sizeof(body), "{\"url\":\"%s\"}", url);
    struct hx_resp resp;
    int status = hx_request(h, "POST", "/api/links", headers, body, &resp);
    const char *c = hx_json_str(&resp, "code");
    snprintf(code, 32, "%s", c ? c : "");
    if (status != 201)
        test_note("create: %d %s", status, resp.body);
    hx_resp_release(&resp);
    return status;
}

/* With the store's 'op' failing (at its nth call, or every call with 0),
 * the request is answered 503 'unavailable' with Retry-After, as every
 * route must. */
static void unavailable(struct hx *h, const char *op, int nth, const char *method,
                        const char *target, const char *const *headers, const char *body)
{
    hx_fault(h, op, nth);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, method, target, headers, body, &resp), 503);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "unavailable");
    CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1");
    hx_resp_release(&resp);
}

/* A harness with two keys and a link of the first one's to 'url': its
 * code, its /api/links/CODE, and each key's Authorization header list. */
struct owned {
    struct hx *h;
    char line[96], other_line[96];
    const char *mine[2], *theirs[2];
    char code[32], target[96];
};

/* False (with nothing left to free) when the harness or the link cannot be
 * made; the test is then over. */
static bool owned_link(struct owned *o, const char *url)
{
    o->h = hx_new();
    if (!o->h)
        return false;
    o->mine[0] = bearer(o->line, hx_key(o->h, false));
    o->theirs[0] = bearer(o->other_line, hx_key(o->h, false));
    o->mine[1] = o->theirs[1] = NULL;
    if (!CHECK_EQ_INT(create(o->h, o->mine[0], url, o->code), 201)) {
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
    char line[96];
    const char *auth = bearer(line, hx_key(h, false));
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;

    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers,
                            "{\"url\":\"https://example.com/a\"}", &resp),
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
    char line[96];
    const char *auth = bearer(line, hx_key(h, false));
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    /* The group commit fails: the create is not acknowledged. */
    unavailable(h, "commit", 0, "POST", "/api/links", headers,
                "{\"url\":\"https://example.com/a\"}");
    hx_fault_clear(h);
    /* The insert itself fails (once): 503 too, and the next create succeeds. */
    unavailable(h, "link_insert", 1, "POST", "/api/links", headers,
                "{\"url\":\"https://example.com/a\"}");
    char code[32];
    CHECK_EQ_INT(create(h, auth, "https://example.com/a", code), 201);
    /* Nothing of the failed creates was kept: the list holds one link. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", headers, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 1);
    hx_resp_release(&resp);
    /* A key not known to this node yet cannot be looked up: 503, not 401. */
    char fresh_line[96];
    const char *fresh[] = {bearer(fresh_line, hx_key(h, false)), NULL};
    unavailable(h, "key_by_hash", 0, "POST", "/api/links", fresh,
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
    unavailable(h, "link_get", 0, "GET", target, mine, NULL);
    hx_free(h);
}

void test_api_links_list(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char line[96], other_line[96];
    const char *auth = bearer(line, hx_key(h, false));
    const char *other = bearer(other_line, hx_key(h, false));
    char a[32], b[32], c[32];
    CHECK_EQ_INT(create(h, auth, "https://example.com/1", a), 201);
    /* Newest first means by creation time: two creates in one millisecond
     * would tie (and be ordered by code). */
    struct timespec ms = {0, 2000000L};
    nanosleep(&ms, NULL);
    CHECK_EQ_INT(create(h, auth, "https://example.com/2", b), 201);
    CHECK_EQ_INT(create(h, other, "https://example.com/3", c), 201);
    const char *mine[] = {auth, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", mine, NULL, &resp), 200);
    json_t *links = resp.json;   /* an array */
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
    unavailable(h, "link_list", 0, "GET", "/api/links", mine, NULL);
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
    unavailable(h, "commit", 0, "DELETE", target, mine, NULL);
    hx_fault_clear(h);
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
