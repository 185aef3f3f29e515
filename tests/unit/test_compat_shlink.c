/* test_compat_shlink.c - Shlink's REST API v3 (compat_shlink.c) in-process
 * (harness.h): each route's answer in Shlink's shape, its errors as Shlink's
 * problem+json, a missing and a wrong key, another owner's link answered as
 * a code nobody has, bad input storing nothing, and 503 when the store
 * fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

#define ERR "https://shlink.io/api/error/"

/* A harness with two keys, as X-Api-Key header lines. */
struct two {
    struct hx *h;
    char token[HX_AUTH_MAX], line[HX_AUTH_MAX + 16], other_line[HX_AUTH_MAX + 16];
    const char *mine[3], *theirs[2];
};

static bool two_keys(struct two *t)
{
    t->h = hx_new();
    if (!t->h)
        return false;
    snprintf(t->token, sizeof(t->token), "%s", hx_key(t->h, false));
    snprintf(t->line, sizeof(t->line), "X-Api-Key: %s", t->token);
    snprintf(t->other_line, sizeof(t->other_line), "X-Api-Key: %s", hx_key(t->h, false));
    t->mine[0] = t->line;
    t->mine[1] = "Content-Type: application/json";
    t->mine[2] = NULL;
    t->theirs[0] = t->other_line;
    t->theirs[1] = NULL;
    return true;
}

/* Checks an answer is Shlink's problem of 'type' with 'status'. */
static bool is_problem(const struct hx_resp *r, int status, const char *type)
{
    char want[128];
    snprintf(want, sizeof(want), ERR "%s", type);
    bool ok = CHECK_EQ_INT(r->status, status) &
              CHECK_EQ_STR(r->content_type, "application/problem+json") &
              CHECK_EQ_STR(hx_json_str(r, "type"), want) &
              CHECK_EQ_INT(hx_json_int(r, "status"), status) &
              CHECK(hx_json_str(r, "title") != NULL) & CHECK(hx_json_str(r, "detail") != NULL);
    if (!ok)
        test_note("answer: %d %s", r->status, r->body ? r->body : "");
    return ok;
}

/* invalidElements is exactly [element]. */
static bool names_only(const struct hx_resp *r, const char *element)
{
    json_t *a = json_object_get(r->json, "invalidElements");
    bool ok = CHECK(json_array_size(a) == 1) &&
              CHECK_EQ_STR(json_string_value(json_array_get(a, 0)), element);
    if (!ok)
        test_note("answer: %s", r->body ? r->body : "");
    return ok;
}

static long long links_of(struct two *t)
{
    struct hx_resp r;
    hx_request(t->h, "GET", "/rest/v3/short-urls?itemsPerPage=-1", t->mine, NULL, &r);
    long long n = hx_json_int(&r, "shortUrls.pagination.totalItems");
    hx_resp_release(&r);
    return n;
}

void test_compat_shlink_create(void)
{
    struct two t;
    if (!two_keys(&t))
        return;
    struct hx_resp r;
    CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine,
                            "{\"longUrl\":\"https://example.com/a\",\"customSlug\":\"my-slug\","
                            "\"tags\":[\"x\"],\"title\":\"T\",\"maxVisits\":3,"
                            "\"validUntil\":\"2099-01-01T00:00:00+00:00\","
                            "\"validSince\":\"2020-01-01T00:00:00Z\",\"crawlable\":true}",
                            &r),
                 200);
    CHECK_EQ_STR(r.content_type, "application/json");
    CHECK_EQ_STR(hx_json_str(&r, "shortCode"), "my-slug");
    CHECK_EQ_STR(hx_json_str(&r, "shortUrl"), "http://sho.rt/my-slug");
    CHECK_EQ_STR(hx_json_str(&r, "longUrl"), "https://example.com/a");
    CHECK_EQ_STR(hx_json_str(&r, "meta.validUntil"), "2099-01-01T00:00:00+00:00");
    CHECK_EQ_INT(hx_json_int(&r, "meta.maxVisits"), 3);
    CHECK(json_is_null(json_object_get(json_object_get(r.json, "meta"), "validSince")));
    CHECK_EQ_INT(hx_json_int(&r, "visitsSummary.total"), 0);
    CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(r.json, "tags"), 0)), "x");
    hx_resp_release(&r);

    /* The link is shortd's: /api/links sees it, under its owner's key. */
    char bearer[HX_AUTH_MAX + 32];
    snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s", t.token);
    const char *own[] = {bearer, NULL};
    CHECK_EQ_INT(hx_request(t.h, "GET", "/api/links/my-slug", own, NULL, &r), 200);
    CHECK_EQ_INT(hx_json_int(&r, "max_clicks"), 3);
    hx_resp_release(&r);

    /* findIfExists: the existing link, nothing new. */
    CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine,
                            "{\"longUrl\":\"https://example.com/a\",\"findIfExists\":true}", &r),
                 200);
    CHECK_EQ_STR(hx_json_str(&r, "shortCode"), "my-slug");
    hx_resp_release(&r);
    CHECK_EQ_INT(links_of(&t), 1);
    hx_free(t.h);
}

void test_compat_shlink_create_refused(void)
{
    struct two t;
    if (!two_keys(&t))
        return;
    struct hx_resp r;
    static const struct {
        const char *body, *element;
    } bad[] = {
        {"{\"longUrl\":\"https://example.com/f\",\"validSince\":\"2099-01-01T00:00:00Z\"}",
         "validSince"},
        {"{\"longUrl\":\"https://example.com/f\",\"validSince\":\"yesterday\"}", "validSince"},
        {"{\"longUrl\":\"ftp://example.com/f\"}", "longUrl"},
        {"{\"title\":\"no url\"}", "longUrl"},
        {"{\"longUrl\":\"https://example.com/f\",\"customSlug\":\"api\"}", "customSlug"},
        {"{\"longUrl\":\"https://example.com/f\",\"customSlug\":\"rest\"}", "customSlug"},
        {"{\"longUrl\":\"https://example.com/f\",\"maxVisits\":0}", "maxVisits"},
        {"{\"longUrl\":\"https://example.com/f\",\"validUntil\":\"2001-01-01T00:00:00Z\"}",
         "validUntil"},
        {"{\"longUrl\":\"https://example.com/f\",\"tags\":\"x\"}", "tags"},
        {"{\"longUrl\":\"https://example.com/f\",\"domain\":\"not.registered.example\"}", "domain"},
        {"{\"longUrl\":\"https://example.com/f\",\"pathPrefix\":\"p\"}", "pathPrefix"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine, bad[i].body, &r);
        if (!(is_problem(&r, 400, "invalid-data") & names_only(&r, bad[i].element)))
            test_note("body %s", bad[i].body);
        hx_resp_release(&r);
    }
    hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine, "{\"longUrl\":", &r);
    is_problem(&r, 400, "malformed-request-body");
    hx_resp_release(&r);
    CHECK_EQ_INT(links_of(&t), 0);

    /* A slug taken, by this key or another, is non-unique-slug. */
    CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.theirs,
                            "{\"longUrl\":\"https://example.com/o\",\"customSlug\":\"taken\"}", &r),
                 200);
    hx_resp_release(&r);
    hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine,
               "{\"longUrl\":\"https://example.com/m\",\"customSlug\":\"taken\"}", &r);
    is_problem(&r, 400, "non-unique-slug");
    CHECK_EQ_STR(hx_json_str(&r, "customSlug"), "taken");
    CHECK_EQ_STR(hx_json_str(&r, "detail"), "Provided slug \"taken\" is already in use.");
    hx_resp_release(&r);
    CHECK_EQ_INT(links_of(&t), 0);

    /* The store failing is a 503 problem, and stores nothing. */
    hx_fault(t.h, "commit", 0);
    CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine,
                            "{\"longUrl\":\"https://example.com/down\"}", &r),
                 503);
    CHECK_EQ_STR(r.content_type, "application/problem+json");
    CHECK(hx_header(&r, "Retry-After") != NULL);
    hx_resp_release(&r);
    hx_fault_clear(t.h);
    CHECK_EQ_INT(links_of(&t), 0);
    hx_free(t.h);
}

void test_compat_shlink_keys(void)
{
    struct two t;
    if (!two_keys(&t))
        return;
    struct hx_resp r;
    hx_request(t.h, "GET", "/rest/v3/short-urls", NULL, NULL, &r);
    is_problem(&r, 401, "missing-authentication");
    hx_resp_release(&r);
    const char *wrong[] = {"X-Api-Key: sk_0000000000000000000000000000000000000000", NULL};
    hx_request(t.h, "POST", "/rest/v3/short-urls", wrong, "{\"longUrl\":\"https://example.com/w\"}",
               &r);
    is_problem(&r, 401, "invalid-api-key");
    CHECK_EQ_STR(hx_json_str(&r, "detail"), "Provided API key does not exist or is invalid.");
    hx_resp_release(&r);
    /* A shortd Bearer key is not how Shlink's clients send theirs. */
    char bearer[HX_AUTH_MAX + 32];
    snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s", t.token);
    const char *as_bearer[] = {bearer, NULL};
    hx_request(t.h, "GET", "/rest/v3/tags", as_bearer, NULL, &r);
    is_problem(&r, 401, "missing-authentication");
    hx_resp_release(&r);
    /* A path or a method no route serves under /rest is Shlink's problem too. */
    hx_request(t.h, "GET", "/rest/v3/domains", t.mine, NULL, &r);
    is_problem(&r, 404, "not-found");
    CHECK_EQ_STR(hx_json_str(&r, "detail"), "Cannot GET /rest/v3/domains");
    hx_resp_release(&r);
    CHECK_EQ_INT(hx_request(t.h, "PUT", "/rest/v3/short-urls", t.mine, NULL, &r), 405);
    CHECK_EQ_STR(r.content_type, "application/problem+json");
    CHECK_EQ_STR(hx_header(&r, "Allow"), "POST, GET");
    hx_resp_release(&r);
    /* The health check needs no key. */
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/health", NULL, NULL, &r), 200);
    CHECK_EQ_STR(r.content_type, "application/health+json");
    CHECK_EQ_STR(hx_json_str(&r, "status"), "pass");
    hx_resp_release(&r);
    hx_fault(t.h, "ping", 0);
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/health", NULL, NULL, &r), 503);
    CHECK_EQ_STR(hx_json_str(&r, "status"), "fail");
    hx_resp_release(&r);
    hx_fault_clear(t.h);
    hx_free(t.h);
}

void test_compat_shlink_one_link(void)
{
    struct two t;
    if (!two_keys(&t))
        return;
    struct hx_resp r, none;
    CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine,
                            "{\"longUrl\":\"https://example.com/one\",\"customSlug\":\"one-link\","
                            "\"tags\":[\"a\",\"b\"]}",
                            &r),
                 200);
    hx_resp_release(&r);

    /* Another owner gets, on every route of one link, what a code nobody
     * has gets; the link stays as it was. */
    static const struct {
        const char *method, *suffix, *body;
    } routes[] = {
        {"GET", "", NULL},
        {"GET", "/visits", NULL},
        {"PATCH", "", "{\"title\":\"theirs\"}"},
        {"DELETE", "", NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        char target[96], absent[96];
        snprintf(target, sizeof(target), "/rest/v3/short-urls/one-link%s", routes[i].suffix);
        snprintf(absent, sizeof(absent), "/rest/v3/short-urls/no-such%s", routes[i].suffix);
        hx_request(t.h, routes[i].method, target, t.theirs, routes[i].body, &r);
        hx_request(t.h, routes[i].method, absent, t.theirs, routes[i].body, &none);
        is_problem(&r, 404, "short-url-not-found");
        CHECK_EQ_STR(hx_json_str(&r, "shortCode"), "one-link");
        CHECK_EQ_STR(hx_json_str(&none, "detail"), "No URL found with short code \"no-such\"");
        hx_resp_release(&r);
        hx_resp_release(&none);
    }
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls/one-link", t.mine, NULL, &r), 200);
    CHECK(json_is_null(json_object_get(r.json, "title")));
    hx_resp_release(&r);

    /* The owner edits it; what shortd cannot keep is refused, unchanged. */
    CHECK_EQ_INT(hx_request(t.h, "PATCH", "/rest/v3/short-urls/one-link", t.mine,
                            "{\"longUrl\":\"https://example.com/two\",\"title\":\"New\","
                            "\"tags\":[\"c\"],\"validUntil\":null,\"forwardQuery\":false}",
                            &r),
                 200);
    CHECK_EQ_STR(hx_json_str(&r, "longUrl"), "https://example.com/two");
    CHECK_EQ_STR(hx_json_str(&r, "title"), "New");
    hx_resp_release(&r);
    static const struct {
        const char *body, *element;
    } bad[] = {
        {"{\"maxVisits\":5}", "maxVisits"},
        {"{\"validSince\":\"2099-01-01T00:00:00Z\"}", "validSince"},
        {"{\"longUrl\":\"nope\"}", "longUrl"},
        {"{\"longUrl\":null}", "longUrl"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hx_request(t.h, "PATCH", "/rest/v3/short-urls/one-link", t.mine, bad[i].body, &r);
        if (!(is_problem(&r, 400, "invalid-data") & names_only(&r, bad[i].element)))
            test_note("PATCH %s", bad[i].body);
        hx_resp_release(&r);
    }
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls/one-link?domain=DEFAULT", t.mine, NULL,
                            &r),
                 200);
    CHECK_EQ_STR(hx_json_str(&r, "longUrl"), "https://example.com/two");
    hx_resp_release(&r);
    hx_request(t.h, "GET", "/rest/v3/short-urls/one-link?domain=other.example", t.mine, NULL, &r);
    is_problem(&r, 404, "short-url-not-found");
    CHECK_EQ_STR(hx_json_str(&r, "domain"), "other.example");
    hx_resp_release(&r);

    /* Visits: none yet, paginated as Shlink does. */
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls/one-link/visits", t.mine, NULL, &r),
                 200);
    CHECK_EQ_INT(hx_json_int(&r, "visits.pagination.totalItems"), 0);
    CHECK_EQ_INT(hx_json_int(&r, "visits.pagination.itemsPerPage"), 10);
    CHECK_EQ_INT(hx_json_int(&r, "visits.pagination.pagesCount"), 1);
    hx_resp_release(&r);

    /* Delete: 204, then it is gone and its slug is never handed out again. */
    CHECK_EQ_INT(hx_request(t.h, "DELETE", "/rest/v3/short-urls/one-link", t.mine, NULL, &r), 204);
    hx_resp_release(&r);
    hx_request(t.h, "GET", "/rest/v3/short-urls/one-link", t.mine, NULL, &r);
    is_problem(&r, 404, "short-url-not-found");
    hx_resp_release(&r);
    hx_request(t.h, "DELETE", "/rest/v3/short-urls/one-link", t.mine, NULL, &r);
    is_problem(&r, 404, "short-url-not-found");
    hx_resp_release(&r);
    hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine,
               "{\"longUrl\":\"https://example.com/again\",\"customSlug\":\"one-link\"}", &r);
    is_problem(&r, 400, "non-unique-slug");
    hx_resp_release(&r);
    hx_free(t.h);
}

void test_compat_shlink_list(void)
{
    struct two t;
    if (!two_keys(&t))
        return;
    struct hx_resp r;
    static const char *const made[] = {
        "{\"longUrl\":\"https://example.com/1\",\"customSlug\":\"sl-c\",\"tags\":[\"red\"]}",
        "{\"longUrl\":\"https://example.com/2\",\"customSlug\":\"sl-a\",\"tags\":[\"blue\"]}",
        "{\"longUrl\":\"https://example.com/3\",\"customSlug\":\"sl-b\","
        "\"tags\":[\"red\",\"blue\"],"
        "\"title\":\"needle\"}",
    };
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.mine, made[i], &r), 200);
        hx_resp_release(&r);
    }
    CHECK_EQ_INT(hx_request(t.h, "POST", "/rest/v3/short-urls", t.theirs,
                            "{\"longUrl\":\"https://example.com/x\",\"tags\":[\"green\"]}", &r),
                 200);
    hx_resp_release(&r);

    CHECK_EQ_INT(hx_request(t.h, "GET",
                            "/rest/v3/short-urls?itemsPerPage=2&page=2&orderBy=shortCode-ASC",
                            t.mine, NULL, &r),
                 200);
    json_t *data = json_object_get(json_object_get(r.json, "shortUrls"), "data");
    CHECK(json_array_size(data) == 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(data, 0), "shortCode")), "sl-c");
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.currentPage"), 2);
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.pagesCount"), 2);
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.itemsPerPage"), 2);
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.itemsInCurrentPage"), 1);
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.totalItems"), 3);
    hx_resp_release(&r);

    CHECK_EQ_INT(hx_request(t.h, "GET",
                            "/rest/v3/short-urls?tags%5B%5D=red&tags%5B%5D=blue&tagsMode=all",
                            t.mine, NULL, &r),
                 200);
    data = json_object_get(json_object_get(r.json, "shortUrls"), "data");
    CHECK(json_array_size(data) == 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(data, 0), "shortCode")), "sl-b");
    hx_resp_release(&r);
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls?tags[]=red&tags[]=blue", t.mine, NULL,
                            &r),
                 200);
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.totalItems"), 3);
    hx_resp_release(&r);
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls?searchTerm=needle", t.mine, NULL, &r),
                 200);
    CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.totalItems"), 1);
    hx_resp_release(&r);

    static const struct {
        const char *query;
        long long total;
    } filters[] = {
        {"startDate=2099-01-01T00:00:00%2B00:00", 0},
        {"endDate=2000-01-01T00:00:00Z", 0},
        {"startDate=2000-01-01T00:00:00Z&endDate=2099-01-01T00:00:00Z", 3},
        {"domain=DEFAULT", 3},
        {"domain=links.example", 0},
        {"excludeMaxVisitsReached=true&excludePastValidUntil=true", 3},
    };
    for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
        char target[160];
        snprintf(target, sizeof(target), "/rest/v3/short-urls?%s", filters[i].query);
        CHECK_EQ_INT(hx_request(t.h, "GET", target, t.mine, NULL, &r), 200);
        if (!CHECK_EQ_INT(hx_json_int(&r, "shortUrls.pagination.totalItems"), filters[i].total))
            test_note("GET %s", target);
        hx_resp_release(&r);
    }
    hx_request(t.h, "GET", "/rest/v3/short-urls?startDate=soon", t.mine, NULL, &r);
    is_problem(&r, 400, "invalid-data");
    names_only(&r, "startDate");
    hx_resp_release(&r);
    hx_request(t.h, "GET", "/rest/v3/short-urls?orderBy=color-ASC", t.mine, NULL, &r);
    is_problem(&r, 400, "invalid-data");
    names_only(&r, "orderBy");
    hx_resp_release(&r);
    hx_request(t.h, "GET", "/rest/v3/short-urls?itemsPerPage=0", t.mine, NULL, &r);
    is_problem(&r, 400, "invalid-data");
    hx_resp_release(&r);

    /* Tags: this key's only, sorted. */
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/tags", t.mine, NULL, &r), 200);
    data = json_object_get(json_object_get(r.json, "tags"), "data");
    CHECK(json_array_size(data) == 2);
    CHECK_EQ_STR(json_string_value(json_array_get(data, 0)), "blue");
    CHECK_EQ_STR(json_string_value(json_array_get(data, 1)), "red");
    CHECK_EQ_INT(hx_json_int(&r, "tags.pagination.totalItems"), 2);
    hx_resp_release(&r);

    /* The visits summary, with a click counted. */
    const char *browser[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
                             "(KHTML, like Gecko) Chrome/120.0 Safari/537.36",
                             NULL};
    CHECK_EQ_INT(hx_request(t.h, "GET", "/sl-a", browser, NULL, &r), 302);
    hx_resp_release(&r);
    if (hx_clicks_settle(t.h)) {
        CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/visits", t.mine, NULL, &r), 200);
        CHECK_EQ_INT(hx_json_int(&r, "visits.nonOrphanVisits.total"), 1);
        CHECK_EQ_INT(hx_json_int(&r, "visits.nonOrphanVisits.nonBots"), 1);
        CHECK_EQ_INT(hx_json_int(&r, "visits.nonOrphanVisits.bots"), 0);
        CHECK_EQ_INT(hx_json_int(&r, "visits.orphanVisits.total"), 0);
        hx_resp_release(&r);
        CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/visits", t.theirs, NULL, &r), 200);
        CHECK_EQ_INT(hx_json_int(&r, "visits.nonOrphanVisits.total"), 0);
        hx_resp_release(&r);
        CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls/sl-a/visits", t.mine, NULL, &r),
                     200);
        CHECK_EQ_INT(hx_json_int(&r, "visits.pagination.totalItems"), 1);
        json_t *v = json_array_get(json_object_get(json_object_get(r.json, "visits"), "data"), 0);
        CHECK(json_is_false(json_object_get(v, "potentialBot")));
        CHECK_EQ_STR(json_string_value(json_object_get(v, "visitedUrl")), "http://sho.rt/sl-a");
        CHECK_EQ_STR(json_string_value(json_object_get(v, "redirectUrl")), "https://example.com/2");
        hx_resp_release(&r);
        CHECK_EQ_INT(hx_request(t.h, "GET",
                                "/rest/v3/short-urls/sl-a/visits?startDate=2099-01-01T00:00:00Z",
                                t.mine, NULL, &r),
                     200);
        CHECK_EQ_INT(hx_json_int(&r, "visits.pagination.totalItems"), 0);
        hx_resp_release(&r);
    }

    /* A list when the store fails. */
    hx_fault(t.h, "link_list", 0);
    CHECK_EQ_INT(hx_request(t.h, "GET", "/rest/v3/short-urls", t.mine, NULL, &r), 503);
    CHECK_EQ_STR(r.content_type, "application/problem+json");
    hx_resp_release(&r);
    hx_fault_clear(t.h);
    hx_free(t.h);
}
