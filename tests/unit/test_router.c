/* test_router.c - the router's own answers, in-process (harness.h): paths no
 * route owns, methods a route does not answer, reserved words. */
#include <string.h>

#include "harness.h"
#include "api/router.h"
#include "test.h"

#include "base/banned.h"

void test_router_not_found(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/nothing", NULL, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    CHECK_EQ_STR(resp.content_type, "application/json");
    hx_resp_release(&resp);
    /* Two segments under no route: no short code either. */
    CHECK_EQ_INT(hx_request(h, "GET", "/abc/def", NULL, NULL, &resp), 404);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_router_method_not_allowed(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    /* A route's path with a method none of its routes answers: 405 with Allow. */
    CHECK_EQ_INT(hx_request(h, "PUT", "/api/links", NULL, NULL, &resp), 405);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "method_not_allowed");
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "POST, GET");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PUT", "/api/links/abc", NULL, NULL, &resp), 405);
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "GET, DELETE, PATCH");
    hx_resp_release(&resp);
    /* A short code answers GET and HEAD only. */
    CHECK_EQ_INT(hx_request(h, "DELETE", "/abc", NULL, NULL, &resp), 405);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "method_not_allowed");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_router_reserved(void)
{
    const char *const *words = router_reserved();
    bool api = false, dashboard = false, robots = false;
    for (const char *const *w = words; *w; w++) {
        api = api || !strcmp(*w, "api");
        dashboard = dashboard || !strcmp(*w, "dashboard"); /* a route's first segment */
        robots = robots || !strcmp(*w, "robots.txt");      /* a route, and an extra word */
    }
    CHECK(api);
    CHECK(dashboard);
    CHECK(robots);

    struct hx *h = hx_new();
    if (!h)
        return;
    struct hx_resp resp;
    /* A reserved word is no short code: not the redirect, whatever the method. */
    static const char *const paths[] = {"/login", "/favicon.ico", "/admin", "/API"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        if (!CHECK_EQ_INT(hx_request(h, "GET", paths[i], NULL, NULL, &resp), 404))
            test_note("GET %s: %s", paths[i], resp.body);
        hx_resp_release(&resp);
        if (!CHECK_EQ_INT(hx_request(h, "POST", paths[i], NULL, "x", &resp), 404))
            test_note("POST %s: %s", paths[i], resp.body);
        hx_resp_release(&resp);
    }
    hx_free(h);
}
