/* test_cors.c - CORS: the `cors-origins` values accepted at startup, which
 * origins match, and the router's answers with an Origin, in-process
 * (harness.h): preflights of API paths, the headers of actual answers, and
 * nothing for requests without an Origin, other origins, or the redirect. */
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "harness.h"
#include "http/cors.h"
#include "test.h"

#include "base/banned.h"

void test_cors_check(void)
{
    static const char *const good[] = {NULL,
                                       "",
                                       "*",
                                       "https://app.example",
                                       "http://localhost:5173",
                                       "https://a.example, https://b.example:8443",
                                       "chrome-extension://abcdefghijklmnop",
                                       "moz-extension://0b8c7a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21,*"};
    static const char *const bad[] = {"https://app.example/",
                                      "https://app.example/path",
                                      "app.example",
                                      "https://",
                                      "//app.example",
                                      "https://user@app.example",
                                      "https://a.example, nope",
                                      "**",
                                      "https://app example"};
    char why[256];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!CHECK_EQ_INT(cors_check(good[i], why, sizeof(why)), ERR_OK))
            test_note("'%s': %s", good[i] ? good[i] : "(null)", why);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (!CHECK_EQ_INT(cors_check(bad[i], why, sizeof(why)), ERR_INVALID))
            test_note("'%s' was accepted", bad[i]);
        CHECK(strstr(why, "cors-origins") != NULL);
    }
}

void test_cors_allowed(void)
{
    const char *list = " https://app.example ,http://localhost:5173";
    CHECK(cors_allowed(list, SLICE_LIT("https://app.example")));
    CHECK(cors_allowed(list, SLICE_LIT("http://localhost:5173")));
    CHECK(cors_allowed(list, SLICE_LIT("HTTPS://APP.EXAMPLE"))); /* scheme and host: any case */
    CHECK(!cors_allowed(list, SLICE_LIT("https://app.example.evil")));
    CHECK(!cors_allowed(list, SLICE_LIT("https://app.exampl")));
    CHECK(!cors_allowed(list, SLICE_LIT("http://app.example")));
    CHECK(!cors_allowed(list, SLICE_LIT("http://localhost")));
    CHECK(!cors_allowed(list, SLICE_LIT("null")));
    CHECK(!cors_allowed(list, SLICE_LIT("")));
    CHECK(!cors_allowed(NULL, SLICE_LIT("https://app.example")));
    CHECK(!cors_allowed("", SLICE_LIT("https://app.example")));
    CHECK(cors_allowed("https://x.example,*", SLICE_LIT("https://anything.example")));
}

/* True when 'resp' carries no CORS header at all. */
static bool no_cors(const struct hx_resp *resp)
{
    return !strstr(resp->headers, "Access-Control-") && !hx_header(resp, "Vary");
}

void test_cors_preflight(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    hx_app(h)->cfg.cors_origins = xstrdup("https://app.example, chrome-extension://abcdef");
    struct hx_resp resp;
    const char *const pre[] = {"Origin: https://app.example", "Access-Control-Request-Method: POST",
                               "Access-Control-Request-Headers: authorization, content-type", NULL};
    /* No key needed, the methods of the path's routes, no credentials. */
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/links", pre, NULL, &resp), 204);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "https://app.example");
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Methods"), "POST, GET");
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Headers"),
                 "Authorization, Content-Type, Idempotency-Key, X-API-KEY");
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Max-Age"), "7200");
    CHECK_EQ_STR(hx_header(&resp, "Vary"), "Origin");
    CHECK(!hx_header(&resp, "Access-Control-Allow-Credentials"));
    CHECK(resp.body_len == 0);
    hx_resp_release(&resp);
    const char *const ext[] = {"Origin: chrome-extension://abcdef",
                               "Access-Control-Request-Method: PATCH", NULL};
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/links/abcd", ext, NULL, &resp), 204);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "chrome-extension://abcdef");
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Methods"), "GET, DELETE, PATCH");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/openapi.json", ext, NULL, &resp), 204);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Methods"), "GET");
    hx_resp_release(&resp);

    /* An origin not listed: answered, but nothing that lets it in. */
    const char *const other[] = {"Origin: https://evil.example",
                                 "Access-Control-Request-Method: POST", NULL};
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/links", other, NULL, &resp), 204);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    /* Without an Origin, OPTIONS is what it always was: 405 with Allow. */
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/links", NULL, NULL, &resp), 405);
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "POST, GET");
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    /* Paths outside the API take no part: a short code, /healthz, nothing. */
    static const char *const outside[] = {"/abcd", "/healthz", "/dashboard", "/api/nothing"};
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        int status = hx_request(h, "OPTIONS", outside[i], pre, NULL, &resp);
        if (!CHECK(status == 405 || status == 404) || !CHECK(no_cors(&resp)))
            test_note("OPTIONS %s: %d", outside[i], status);
        hx_resp_release(&resp);
    }
    hx_free(h);
}

void test_cors_answers(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    hx_app(h)->cfg.cors_origins = xstrdup("https://app.example");
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\": \"https://example.com/cors\"}", code), 201);
    struct hx_resp resp;
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s", code);

    const char *const from_app[] = {auth, "Origin: https://app.example", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", target, from_app, NULL, &resp), 200);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "https://app.example");
    CHECK_EQ_STR(hx_header(&resp, "Vary"), "Origin");
    const char *expose = hx_header(&resp, "Access-Control-Expose-Headers");
    CHECK(expose && strstr(expose, "Link") && strstr(expose, "Retry-After") &&
          strstr(expose, "RateLimit-Remaining") && strstr(expose, "Location"));
    CHECK(!hx_header(&resp, "Access-Control-Allow-Credentials"));
    CHECK(!hx_header(&resp, "Access-Control-Allow-Methods")); /* a preflight's only */
    hx_resp_release(&resp);

    /* Errors of an API route too, so that a page can read them. */
    const char *const no_key[] = {"Origin: https://app.example", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", no_key, NULL, &resp), 401);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "https://app.example");
    CHECK(hx_header(&resp, "WWW-Authenticate") != NULL);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PUT", "/api/links", no_key, NULL, &resp), 405);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "https://app.example");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/openapi.json", no_key, NULL, &resp), 200);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "https://app.example");
    hx_resp_release(&resp);

    /* Another origin, or none: not a CORS header. */
    const char *const from_evil[] = {auth, "Origin: https://evil.example", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", target, from_evil, NULL, &resp), 200);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    const char *const plain[] = {auth, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", target, plain, NULL, &resp), 200);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);

    /* The redirect and the other non-API routes never carry them. */
    snprintf(target, sizeof(target), "/%s", code);
    CHECK_EQ_INT(hx_request(h, "GET", target, no_key, NULL, &resp), 302);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/healthz", no_key, NULL, &resp), 200);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    hx_free(h);
}

void test_cors_default_none(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    const char *const pre[] = {"Origin: https://app.example", "Access-Control-Request-Method: GET",
                               NULL};
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/api/links", pre, NULL, &resp), 204);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", pre, NULL, &resp), 401);
    CHECK(no_cors(&resp));
    hx_resp_release(&resp);
    hx_free(h);
}
