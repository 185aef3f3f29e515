/* test_api_domains.c - /api/domains (api_domains.c) in-process (harness.h):
 * an owner registers, lists and deletes its custom short hosts; a host has
 * one owner; links may take only their owner's domains. Each route's 4xx
 * answers name the field, and a failing store answers 503. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* Whether the list of 'auth' holds 'host'. */
static bool listed(struct hx *h, const char *auth, const char *host)
{
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    bool found = false;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/domains", headers, NULL, &resp), 200)) {
        CHECK(json_is_array(resp.json));
        size_t i;
        json_t *d;
        json_array_foreach(resp.json, i, d)
        {
            found = found || !strcmp(json_string_value(json_object_get(d, "host")), host);
        }
    }
    hx_resp_release(&resp);
    return found;
}

void test_api_domains_add(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char alice[HX_AUTH_MAX], bob[HX_AUTH_MAX];
    const char *mine[] = {hx_auth(h, false, alice), NULL};
    const char *theirs[] = {hx_auth(h, false, bob), NULL};
    const char *body = "{\"host\":\"go.example\"}";
    struct hx_resp resp;

    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, body, &resp), 201);
    CHECK_EQ_STR(hx_json_str(&resp, "host"), "go.example");
    CHECK(hx_json_str(&resp, "created_at") != NULL);
    hx_resp_release(&resp);
    /* Again by its owner: nothing to do. By anyone else: 409. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, body, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", theirs, body, &resp), 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "domain_taken");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host");
    hx_resp_release(&resp);
    CHECK(listed(h, alice, "go.example"));
    CHECK(!listed(h, bob, "go.example"));

    /* Host names only, as the e2e suite lists them; the body is {"host"} alone. */
    static const char *const bad[] = {
        "{\"host\":\"UPPER.example\"}",
        "{\"host\":\"x.example:8080\"}",
        "{\"host\":\"x.example.\"}",
        "{\"host\":\"localhost\"}",
        "{\"host\":\"1.2.3.4\"}",
        "{\"host\":\"-a.example\"}",
        "{\"host\":\"a..example\"}",
        "{\"host\":\"a b.example\"}",
        "{\"host\":\"\"}",
        "{\"host\":5}",
        "{}",
        "{\"host\":\"a.example\",\"x\":1}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, bad[i], &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field") |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host"))
            test_note("%s: %s", bad[i], resp.body);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", NULL, body, &resp), 401);
    hx_resp_release(&resp);
    /* The write, or the read before it, fails: 503, nothing registered. */
    hx_unavailable(h, "commit", 0, "POST", "/api/domains", mine, "{\"host\":\"new.example\"}");
    hx_unavailable(h, "domain_get", 0, "POST", "/api/domains", mine, "{\"host\":\"new.example\"}");
    CHECK(!listed(h, alice, "new.example"));
    hx_free(h);
}

void test_api_domains_list(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char alice[HX_AUTH_MAX];
    const char *mine[] = {hx_auth(h, false, alice), NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/domains", mine, NULL, &resp), 200);
    CHECK(json_is_array(resp.json) && json_array_size(resp.json) == 0);
    hx_resp_release(&resp);
    static const char *const hosts[] = {"{\"host\":\"a.example\"}", "{\"host\":\"b.example\"}"};
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, hosts[i], &resp), 201);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "GET", "/api/domains", mine, NULL, &resp), 200);
    CHECK_EQ_INT(json_array_size(resp.json), 2);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/domains", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "domain_list", 0, "GET", "/api/domains", mine, NULL);
    hx_free(h);
}

void test_api_domains_delete(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char alice[HX_AUTH_MAX], bob[HX_AUTH_MAX];
    const char *mine[] = {hx_auth(h, false, alice), NULL};
    const char *theirs[] = {hx_auth(h, false, bob), NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, "{\"host\":\"go.example\"}", &resp),
                 201);
    hx_resp_release(&resp);
    /* Only its owner deletes it: anyone else is told there is none. */
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/domains/go.example", theirs, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/domains/go.example", NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    hx_unavailable(h, "commit", 0, "DELETE", "/api/domains/go.example", mine, NULL);
    CHECK(listed(h, alice, "go.example"));
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/domains/go.example", mine, NULL, &resp), 204);
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);
    CHECK(!listed(h, alice, "go.example"));
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/domains/go.example", mine, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/domains/UPPER.example", mine, NULL, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "host");
    hx_resp_release(&resp);
    hx_free(h);
}

/* A link with "domain" must name one of its owner's domains. */
void test_api_domains_links(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char alice[HX_AUTH_MAX], bob[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *mine[] = {hx_auth(h, false, alice), NULL};
    const char *theirs[] = {hx_auth(h, false, bob), NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, "{\"host\":\"go.example\"}", &resp),
                 201);
    hx_resp_release(&resp);
    const char *body = "{\"url\":\"https://dest.example/\",\"domain\":\"go.example\"}";
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", mine, body, &resp), 201);
    CHECK_EQ_STR(hx_json_str(&resp, "domain"), "go.example");
    const char *code_ = hx_json_str(&resp, "code");
    snprintf(code, sizeof(code), "%s", code_ ? code_ : "");
    char want[128];
    snprintf(want, sizeof(want), "http://go.example/%s", code);
    CHECK_EQ_STR(hx_json_str(&resp, "short_url"), want);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", theirs, body, &resp), 403);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "domain");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", theirs,
                            "{\"url\":\"https://dest.example/\",\"domain\":\"nobody.example\"}",
                            &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "domain");
    hx_resp_release(&resp);
    /* A registered domain is shortd itself: no link may point at it. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", mine, "{\"url\":\"https://go.example/x\"}",
                            &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "url");
    hx_resp_release(&resp);
    hx_free(h);
}
