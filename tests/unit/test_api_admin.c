/* test_api_admin.c - /api/admin/blocklist (api_admin.c) in-process
 * (harness.h): destination hosts refused at create, admin keys only. Each
 * route's success, its 4xx answers (the field named), 403 for a key that
 * is no admin's, and its 503 on a failing store. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* Whether the blocklist holds 'host'. */
static bool blocked(struct hx *h, const char *const *admin, const char *host)
{
    struct hx_resp resp;
    bool found = false;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/admin/blocklist", admin, NULL, &resp), 200)) {
        CHECK(json_is_array(resp.json));
        size_t i;
        json_t *e;
        json_array_foreach(resp.json, i, e)
        {
            found = found || !strcmp(json_string_value(json_object_get(e, "host")), host);
        }
    }
    hx_resp_release(&resp);
    return found;
}

/* A user's key is refused (403 forbidden), no key is 401. */
static void admin_only(struct hx *h, const char *const *user, const char *method,
                       const char *target, const char *body)
{
    struct hx_resp resp;
    if (!CHECK_EQ_INT(hx_request(h, method, target, user, body, &resp), 403) |
        !CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "forbidden"))
        test_note("%s %s as a user: %s", method, target, resp.body);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, method, target, NULL, body, &resp), 401);
    hx_resp_release(&resp);
}

void test_api_admin_blocklist_add(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin_line[HX_AUTH_MAX], user_line[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *admin[] = {hx_auth(h, true, admin_line), NULL};
    const char *user[] = {hx_auth(h, false, user_line), NULL};
    const char *body = "{\"host\":\"Evil.Example\"}";
    admin_only(h, user, "POST", "/api/admin/blocklist", body);
    CHECK_EQ_INT(hx_create(h, user_line, "{\"url\":\"http://evil.example/x\"}", code), 201);

    /* Stored normalised; links to it and its subdomains are refused now. */
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/admin/blocklist", admin, body, &resp), 201);
    CHECK_EQ_STR(hx_json_str(&resp, "host"), "evil.example");
    CHECK(hx_json_str(&resp, "created_at") != NULL);
    hx_resp_release(&resp);
    CHECK(blocked(h, admin, "evil.example"));
    static const char *const refused[] = {"{\"url\":\"http://evil.example/x\"}",
                                          "{\"url\":\"https://a.b.evil.example/p?q=1\"}",
                                          "{\"url\":\"http://EVIL.EXAMPLE:8080/x\"}"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (!CHECK_EQ_INT(hx_request(h, "POST", "/api/links", user, refused[i], &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "url"))
            test_note("%s: %s", refused[i], resp.body);
        hx_resp_release(&resp);
    }
    /* A longer name that ends the same is another host. */
    CHECK_EQ_INT(hx_create(h, user_line, "{\"url\":\"http://notevil.example/x\"}", code), 201);

    CHECK_EQ_INT(hx_request(h, "POST", "/api/admin/blocklist", admin, body, &resp), 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "exists");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host");
    hx_resp_release(&resp);
    static const char *const bad[] = {
        "{\"host\":\"\"}",
        "{\"host\":\"a b\"}",
        "{\"host\":\"https://x.example/path\"}",
        "{\"host\":\"*.x.example\"}",
        "{\"host\":\".x.example\"}",
        "{\"host\":\"a..example\"}",
        "{\"host\":7}",
        "{}",
        "{\"host\":\"x.example\",\"y\":1}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int status = hx_request(h, "POST", "/api/admin/blocklist", admin, bad[i], &resp);
        if (!CHECK_EQ_INT(status, 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field") |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host"))
            test_note("%s: %s", bad[i], resp.body);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/admin/blocklist", admin, "{\"host\":", &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_json");
    hx_resp_release(&resp);
    hx_unavailable(h, "commit", 0, "POST", "/api/admin/blocklist", admin,
                   "{\"host\":\"other.example\"}");
    CHECK(!blocked(h, admin, "other.example"));
    hx_free(h);
}

void test_api_admin_blocklist_delete(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin_line[HX_AUTH_MAX], user_line[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *admin[] = {hx_auth(h, true, admin_line), NULL};
    const char *user[] = {hx_auth(h, false, user_line), NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/admin/blocklist", admin, "{\"host\":\"evil.example\"}",
                            &resp),
                 201);
    hx_resp_release(&resp);
    admin_only(h, user, "DELETE", "/api/admin/blocklist/evil.example", NULL);
    hx_unavailable(h, "commit", 0, "DELETE", "/api/admin/blocklist/evil.example", admin, NULL);
    CHECK(blocked(h, admin, "evil.example"));
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/admin/blocklist/EVIL.example", admin, NULL, &resp),
                 204);
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);
    CHECK(!blocked(h, admin, "evil.example"));
    /* Links to it are allowed again. */
    CHECK_EQ_INT(hx_create(h, user_line, "{\"url\":\"http://sub.evil.example/x\"}", code), 201);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/admin/blocklist/evil.example", admin, NULL, &resp),
                 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/admin/blocklist/a..example", admin, NULL, &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_admin_blocklist_list(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin_line[HX_AUTH_MAX], user_line[HX_AUTH_MAX];
    const char *admin[] = {hx_auth(h, true, admin_line), NULL};
    const char *user[] = {hx_auth(h, false, user_line), NULL};
    admin_only(h, user, "GET", "/api/admin/blocklist", NULL);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/admin/blocklist", admin, NULL, &resp), 200);
    CHECK(json_is_array(resp.json) && json_array_size(resp.json) == 0);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/admin/blocklist", admin, "{\"host\":\"a.example\"}",
                            &resp),
                 201);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/admin/blocklist", admin, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(resp.json, 0), "host")),
                 "a.example");
    CHECK(json_string_value(json_object_get(json_array_get(resp.json, 0), "created_at")) != NULL);
    hx_resp_release(&resp);
    /* The list cannot be read: 503 with Retry-After, as every route's
     * (it once wrote its own 503, without the header). */
    hx_unavailable(h, "block_list", 0, "GET", "/api/admin/blocklist", admin, NULL);
    hx_free(h);
}
