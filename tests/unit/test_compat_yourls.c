/* test_compat_yourls.c - YOURLS's API (compat_yourls.c) in-process
 * (harness.h): each action, each format, each way YOURLS authenticates
 * (the key, its signature token plain or timestamped, and the ones shortd
 * refuses), the router's refusals in YOURLS's shape
 * (a wrong signature is rate limited like a wrong Bearer key), bad input
 * answered with YOURLS's error and storing nothing, and a failing store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "app/app.h"
#include "app/config.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "links/links.h"
#include "store/store.h"
#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* GET /yourls-api.php?QUERY&signature=KEY (no signature when key is NULL). */
static int yget(struct hx *h, const char *key, const char *query, struct hx_resp *resp)
{
    char target[1024];
    snprintf(target, sizeof(target), "/yourls-api.php?%s%s%s", query, key ? "&signature=" : "",
             key ? key : "");
    return hx_request(h, "GET", target, NULL, NULL, resp);
}

static bool starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The links the key has, as GET /api/links counts them. */
static long count_links(struct hx *h, const char *key)
{
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", key);
    const char *headers[] = {line, NULL};
    struct hx_resp resp;
    long n = -1;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/links?limit=1000", headers, NULL, &resp), 200))
        n = (long)json_array_size(resp.json);
    hx_resp_release(&resp);
    return n;
}

void test_compat_yourls_shorturl(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;

    /* A new link, json: YOURLS's success shape, the key order included. */
    CHECK_EQ_INT(yget(h, key,
                      "action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fy1"
                      "&keyword=yours1&title=T%C3%ADtle",
                      &resp),
                 200);
    CHECK_EQ_STR(resp.content_type, "application/json; charset=utf-8");
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "success");
    CHECK_EQ_STR(hx_json_str(&resp, "code"), "");
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "");
    CHECK_EQ_STR(hx_json_str(&resp, "statusCode"), "200");
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "https://example.com/y1 added to database");
    CHECK_EQ_STR(hx_json_str(&resp, "shorturl"), "http://sho.rt/yours1");
    CHECK_EQ_STR(hx_json_str(&resp, "title"), "T\xc3\xadtle");
    CHECK_EQ_STR(hx_json_str(&resp, "url.keyword"), "yours1");
    CHECK_EQ_STR(hx_json_str(&resp, "url.url"), "https://example.com/y1");
    CHECK(starts(resp.body, "{\"status\":\"success\",\"code\":\"\",\"message\":"));
    CHECK(resp.body && strstr(resp.body, "\"shorturl\":\"http:\\/\\/sho.rt\\/yours1\""));
    CHECK(resp.body && strstr(resp.body, "T\\u00edtle"));
    hx_resp_release(&resp);

    /* It is an ordinary link: it redirects (and the click counts). */
    const char *ua[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0", NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/yours1", ua, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/y1");
    hx_resp_release(&resp);
    hx_clicks_settle(h);

    /* The same URL again: error:url carrying the existing short URL, and
     * simple prints it (the quirk ShareX relies on). */
    CHECK_EQ_INT(yget(h, key, "action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fy1",
                      &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "fail");
    CHECK_EQ_STR(hx_json_str(&resp, "code"), "error:url");
    CHECK_EQ_STR(hx_json_str(&resp, "shorturl"), "http://sho.rt/yours1");
    CHECK_EQ_STR(hx_json_str(&resp, "message"),
                 "https://example.com/y1 already exists in database (short URL: sho.rt/yours1)");
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "400");
    CHECK_EQ_INT(hx_json_int(&resp, "url.clicks"), 1);
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=shorturl&format=simple&url=https%3A%2F%2Fexample.com%2Fy1",
                      &resp),
                 400);
    CHECK_EQ_STR(resp.body, "http://sho.rt/yours1");
    CHECK_EQ_STR(resp.content_type, "text/plain; charset=utf-8");
    hx_resp_release(&resp);

    /* A generated code; xml is the default format. */
    CHECK_EQ_INT(yget(h, key, "action=shorturl&url=https%3A%2F%2Fexample.com%2Fa%26b", &resp), 200);
    CHECK_EQ_STR(resp.content_type, "application/xml; charset=utf-8");
    CHECK(starts(resp.body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root><status>success"
                            "</status><code/><message>https://example.com/a&amp;b added to "
                            "database</message><errorCode/><statusCode>200</statusCode><url>"
                            "<keyword>"));
    CHECK(resp.body && strstr(resp.body, "</shorturl></root>\n"));
    hx_resp_release(&resp);

    /* A long URL is trimmed in the message as YOURLS trims it. */
    CHECK_EQ_INT(yget(h, key,
                      "action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2F"
                      "0123456789012345678901234567890123456789012345678901234567890",
                      &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "https://example.com/012345678901234567890123456"
                                                "78901234[...] added to database");
    hx_resp_release(&resp);

    /* POST, urlencoded: the body's parameters before the query's. */
    const char *form[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
    char body[1024];
    snprintf(body, sizeof(body),
             "action=shorturl&format=simple&url=https%%3A%%2F%%2Fexample.com%%2Fpost&signature=%s",
             key);
    CHECK_EQ_INT(hx_request(h, "POST", "/yourls-api.php?format=json", form, body, &resp), 200);
    CHECK(resp.body && strncmp(resp.body, "http://sho.rt/", 14) == 0 && !strchr(resp.body, '{'));
    hx_resp_release(&resp);

    /* POST, multipart (ShareX's request); a part may have no headers. */
    const char *mp[] = {"Content-Type: multipart/form-data; boundary=\"b-1\"", NULL};
    snprintf(body, sizeof(body),
             "preamble\r\n--b-1\r\n\r\nno name\r\n"
             "--b-1\r\nContent-Disposition: form-data; name=\"action\"\r\n\r\nshorturl\r\n"
             "--b-1\r\nContent-Disposition: form-data; name=\"url\"\r\n\r\n"
             "https://example.com/mp?x=1&y=%%41\r\n"
             "--b-1\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\njson\r\n"
             "--b-1\r\nContent-Disposition: form-data; name=\"signature\"\r\n\r\n%s\r\n--b-1--\r\n",
             key);
    CHECK_EQ_INT(hx_request(h, "POST", "/yourls-api.php", mp, body, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "url.url"), "https://example.com/mp?x=1&y=%41");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_compat_yourls_bad_input(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    CHECK_EQ_INT(yget(h, key,
                      "action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Ft&"
                      "keyword=taken1",
                      &resp),
                 200);
    hx_resp_release(&resp);
    long before = count_links(h, key);
    static const struct {
        const char *query, *code;
    } cases[] = {
        {"action=shorturl&format=json", "error:nourl"},
        {"action=shorturl&format=json&url=", "error:nourl"},
        {"action=shorturl&format=json&url=ftp%3A%2F%2Fexample.com%2F", "error:nourl"},
        {"action=shorturl&format=json&url=http%3A%2F%2Fsho.rt%2Fx", "error:noloop"},
        /* taken, a reserved word, shaped unlike an alias: shortd's rule, YOURLS's error */
        {"action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fo&keyword=taken1",
         "error:keyword"},
        {"action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fo&keyword=api",
         "error:keyword"},
        {"action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fo&keyword=a%2Fb",
         "error:keyword"},
        {"action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fo&keyword=%FF",
         "error:keyword"},
        {"action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2F%FF", "error:nourl"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_EQ_INT(yget(h, key, cases[i].query, &resp), 400);
        CHECK_EQ_STR(hx_json_str(&resp, "status"), "fail");
        if (!CHECK_EQ_STR(hx_json_str(&resp, "code"), cases[i].code))
            test_note("%s: %s", cases[i].query, resp.body);
        CHECK_EQ_STR(hx_json_str(&resp, "statusCode"), "400");
        CHECK(!hx_json_str(&resp, "error.code")); /* never shortd's shape */
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(count_links(h, key), before);

    /* A deleted code stays taken (YOURLS would hand it out again). */
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", key);
    const char *auth[] = {line, NULL};
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/links/taken1", auth, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key,
                      "action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Fz&"
                      "keyword=taken1",
                      &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "code"), "error:keyword");
    hx_resp_release(&resp);

    /* No action, or an unknown one. */
    CHECK_EQ_INT(yget(h, key, "format=json", &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "400");
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "Unknown or missing \"action\" parameter");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=delete&format=simple", &resp), 400);
    CHECK_EQ_STR(resp.body, "Unknown or missing \"action\" parameter");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_compat_yourls_reads(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64], other[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    snprintf(other, sizeof(other), "%s", hx_key(h, false));
    struct hx_resp resp;
    const char *urls[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        char q[256];
        snprintf(q, sizeof(q),
                 "action=shorturl&format=json&keyword=rd-%s&url=https%%3A%%2F%%2Fexample.com%%2F%s",
                 urls[i], urls[i]);
        CHECK_EQ_INT(yget(h, key, q, &resp), 200);
        hx_resp_release(&resp);
        /* filter=last orders by creation time: links of one millisecond
         * would come in code order instead */
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    /* rd-two: 2 clicks, rd-one: 1, rd-three: 0 */
    const char *clicks[] = {"/rd-two", "/rd-two", "/rd-one"};
    for (int i = 0; i < 3; i++) {
        const char *ua[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0", NULL};
        CHECK_EQ_INT(hx_request(h, "GET", clicks[i], ua, NULL, &resp), 302);
        hx_resp_release(&resp);
    }
    hx_clicks_settle(h);

    /* expand: a code or a full short URL */
    CHECK_EQ_INT(yget(h, key, "action=expand&format=json&shorturl=http%3A%2F%2Fsho.rt%2Frd-one",
                      &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "keyword"), "rd-one");
    CHECK_EQ_STR(hx_json_str(&resp, "longurl"), "https://example.com/one");
    CHECK_EQ_STR(hx_json_str(&resp, "shorturl"), "http://sho.rt/rd-one");
    CHECK_EQ_STR(hx_json_str(&resp, "title"), "https://example.com/one");
    CHECK_EQ_STR(hx_json_str(&resp, "statusCode"), "200");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=expand&format=simple&shorturl=rd-one", &resp), 200);
    CHECK_EQ_STR(resp.body, "https://example.com/one");
    hx_resp_release(&resp);
    /* another key's link is as absent as no link */
    CHECK_EQ_INT(yget(h, other, "action=expand&format=json&shorturl=rd-one", &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "Error: short URL not found");
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "404");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=expand&format=simple&shorturl=nosuch", &resp), 404);
    CHECK_EQ_STR(resp.body, "not found");
    hx_resp_release(&resp);

    /* url-stats */
    CHECK_EQ_INT(yget(h, key, "action=url-stats&format=json&shorturl=rd-two", &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "link.clicks"), 2);
    CHECK_EQ_STR(hx_json_str(&resp, "link.shorturl"), "http://sho.rt/rd-two");
    CHECK_EQ_STR(hx_json_str(&resp, "link.ip"), "");
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "success");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=url-stats&format=simple&shorturl=rd-two", &resp), 200);
    CHECK_EQ_STR(resp.body, "Need either XML or JSON format for stats");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=url-stats&format=json&shorturl=nosuch", &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "statusCode"), "404");
    hx_resp_release(&resp);

    /* stats: top, bottom, last, rand; limit and start; no limit lists none */
    CHECK_EQ_INT(yget(h, key, "action=stats&format=json&filter=top&limit=2", &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "links.link_1.shorturl"), "http://sho.rt/rd-two");
    CHECK_EQ_STR(hx_json_str(&resp, "links.link_2.shorturl"), "http://sho.rt/rd-one");
    CHECK(!hx_json_str(&resp, "links.link_3.shorturl"));
    CHECK_EQ_INT(hx_json_int(&resp, "stats.total_links"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "stats.total_clicks"), 3);
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=stats&format=json&filter=bottom&limit=10&start=1", &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "links.link_1.shorturl"), "http://sho.rt/rd-one");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=stats&format=json&filter=last&limit=1", &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "links.link_1.shorturl"), "http://sho.rt/rd-three");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=stats&format=json&filter=rand&limit=5", &resp), 200);
    CHECK(hx_json_str(&resp, "links.link_3.shorturl") && !hx_json_str(&resp, "links.link_4.url"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=stats&format=json", &resp), 200);
    CHECK(!json_object_get(resp.json, "links"));
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "success");
    hx_resp_release(&resp);
    /* the other key sees none of them */
    CHECK_EQ_INT(yget(h, other, "action=stats&format=json&limit=10", &resp), 200);
    CHECK(!json_object_get(resp.json, "links"));
    CHECK_EQ_INT(hx_json_int(&resp, "stats.total_links"), 0);
    hx_resp_release(&resp);

    /* db-stats */
    CHECK_EQ_INT(yget(h, key, "action=db-stats&format=json", &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "db-stats.total_links"), 3);
    CHECK_EQ_INT(hx_json_int(&resp, "db-stats.total_clicks"), 3);
    CHECK_EQ_STR(hx_json_str(&resp, "statusCode"), "200");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=db-stats", &resp), 200);
    CHECK_EQ_STR(resp.body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root><db-stats>"
                            "<total_links>3</total_links><total_clicks>3</total_clicks>"
                            "</db-stats><statusCode>200</statusCode><message>success</message>"
                            "</root>\n");
    hx_resp_release(&resp);

    /* a link on a custom domain has its short URL there */
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", key);
    const char *auth[] = {line, NULL};
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", auth, "{\"host\":\"go.example.com\"}",
                            &resp),
                 201);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", auth,
                            "{\"url\":\"https://example.com/d\",\"alias\":\"on-dom\","
                            "\"domain\":\"go.example.com\"}",
                            &resp),
                 201);
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=expand&format=json&shorturl=on-dom", &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "shorturl"), "http://go.example.com/on-dom");
    hx_resp_release(&resp);
    hx_free(h);
}

void test_compat_yourls_formats(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    CHECK_EQ_INT(yget(h, key, "action=version&format=json&db=1", &resp), 200);
    CHECK_EQ_STR(resp.body, "{\"version\":\"1.10.4\",\"db_version\":\"507\"}");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=version&format=simple", &resp), 200);
    CHECK_EQ_STR(resp.body, "1.10.4");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, key, "action=version&format=jsonp&callback=cb.x_1", &resp), 200);
    CHECK_EQ_STR(resp.content_type, "application/javascript; charset=utf-8");
    CHECK_EQ_STR(resp.body, "cb.x_1({\"version\":\"1.10.4\",\"callback\":\"cb.x_1\"})");
    hx_resp_release(&resp);
    /* jsonp's other name for the callback */
    CHECK_EQ_INT(yget(h, key, "action=version&format=jsonp&jsonp=f", &resp), 200);
    CHECK_EQ_STR(resp.body, "f({\"version\":\"1.10.4\",\"callback\":\"f\"})");
    hx_resp_release(&resp);
    /* a callback that is no plain name, or an empty one */
    const char *bad[] = {"action=version&format=jsonp&callback=alert(1)",
                         "action=version&format=jsonp&callback=a%5Cu2028",
                         "action=version&format=jsonp&callback="};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(yget(h, key, bad[i], &resp), 400);
        CHECK_EQ_STR(resp.body, "{\"errorCode\":\"400\",\"error\":\"Invalid callback parameter\"}");
        hx_resp_release(&resp);
    }
    /* none at all: YOURLS 1.10.4 checks no callback and writes "(...)" */
    CHECK_EQ_INT(yget(h, key, "action=version&format=jsonp", &resp), 200);
    CHECK_EQ_STR(resp.body, "({\"version\":\"1.10.4\"})");
    hx_resp_release(&resp);
    /* the callback shows in json too, as YOURLS adds it to every answer */
    CHECK_EQ_INT(yget(h, key, "action=version&format=json&callback=z", &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "callback"), "z");
    hx_resp_release(&resp);
    /* a callback that is no UTF-8 is dropped, even from a refusal */
    CHECK_EQ_INT(yget(h, "sk_wrong", "action=version&format=json&callback=%FF", &resp), 403);
    CHECK_EQ_STR(hx_json_str(&resp, "callback"), "");
    hx_resp_release(&resp);
    /* an unknown format is simple's */
    CHECK_EQ_INT(yget(h, key, "action=version&format=yaml", &resp), 200);
    CHECK_EQ_STR(resp.body, "1.10.4");
    hx_resp_release(&resp);
    /* HEAD answers as GET does, without the body */
    CHECK_EQ_INT(hx_request(h, "HEAD", "/yourls-api.php?action=version&signature=x", NULL, NULL,
                            &resp),
                 403);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_compat_yourls_auth(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;

    /* no signature */
    CHECK_EQ_INT(yget(h, NULL, "action=version&format=json", &resp), 403);
    CHECK_EQ_STR(resp.body,
                 "{\"message\":\"Please log in\",\"errorCode\":\"403\",\"callback\":\"\"}");
    CHECK(!hx_header(&resp, "WWW-Authenticate"));
    hx_resp_release(&resp);
    /* a wrong one, in each format */
    CHECK_EQ_INT(yget(h, "sk_wrong", "action=version", &resp), 403);
    CHECK_EQ_STR(resp.body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root><message>Please log "
                            "in</message><errorCode>403</errorCode><callback/></root>\n");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, "sk_wrong", "action=version&format=simple", &resp), 403);
    CHECK_EQ_STR(resp.body, "Please log in");
    hx_resp_release(&resp);
    CHECK_EQ_INT(yget(h, "sk_wrong", "action=version&format=jsonp&callback=cb", &resp), 403);
    CHECK_EQ_STR(resp.body,
                 "cb({\"message\":\"Please log in\",\"errorCode\":\"403\",\"callback\":\"cb\"})");
    hx_resp_release(&resp);
    /* a signature far too long to be a key */
    char longsig[300];
    memset(longsig, 'a', sizeof(longsig) - 1);
    longsig[sizeof(longsig) - 1] = '\0';
    CHECK_EQ_INT(yget(h, longsig, "action=version&format=simple", &resp), 403);
    hx_resp_release(&resp);
    /* username and password: shortd has no users, so every login fails */
    CHECK_EQ_INT(yget(h, NULL, "action=version&format=json&username=admin&password=pw", &resp),
                 403);
    CHECK_EQ_STR(hx_json_str(&resp, "message"), "Invalid username or password");
    hx_resp_release(&resp);
    /* a timestamped signature is a hash of a key's signature token
     * (test_compat_yourls_signature_token): an expired timestamp, a hash
     * not offered, and the key itself in place of a hash are refused */
    char q[256];
    const char *timed[] = {"timestamp=1&hash=md5&signature=0123456789abcdef0123456789abcdef",
                           "timestamp=4102444800&hash=nosuch&signature=00",
                           "timestamp=4102444800&hash=sha512&signature="};
    for (int i = 0; i < 3; i++) {
        snprintf(q, sizeof(q), "action=version&format=simple&%s%s", timed[i], i == 2 ? key : "");
        CHECK_EQ_INT(yget(h, NULL, q, &resp), 403);
        CHECK_EQ_STR(resp.body, "Please log in");
        hx_resp_release(&resp);
    }
    /* the key, in the query or the body */
    CHECK_EQ_INT(yget(h, key, "action=version&format=simple", &resp), 200);
    hx_resp_release(&resp);
    const char *form[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
    snprintf(q, sizeof(q), "action=version&format=simple&signature=%s", key);
    CHECK_EQ_INT(hx_request(h, "POST", "/yourls-api.php", form, q, &resp), 200);
    CHECK_EQ_STR(resp.body, "1.10.4");
    hx_resp_release(&resp);
    /* a Bearer header is not how YOURLS clients send a key */
    char line[HX_AUTH_MAX];
    snprintf(line, sizeof(line), "Authorization: Bearer %s", key);
    const char *bearer[] = {line, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/yourls-api.php?action=version", bearer, NULL, &resp), 403);
    hx_resp_release(&resp);

    /* Each refused key counts against the address's auth limit (20 by
     * default, 8 used above): a wrong signature is then 429 in YOURLS's
     * shape, and the limit holds for a Bearer key as well. */
    int status = 0;
    for (int i = 0; i < 20 && status != 429; i++) {
        status = yget(h, "sk_wrong", "action=version&format=json", &resp);
        if (status == 429) {
            CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "429");
            CHECK(hx_header(&resp, "Retry-After") != NULL);
        }
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(status, 429);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", bearer, NULL, &resp), 429);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "rate_limited");
    hx_resp_release(&resp);
    hx_free(h);
}

/* A signature as YOURLS's docs have a client make it: hex of
 * md(first . second), `hash` named unless it is NULL (md5 then). */
static void signed_query(char *q, size_t cap, const char *action, const char *hash, long long ts,
                         const char *tok, bool token_first)
{
    char t[32];
    snprintf(t, sizeof(t), "%lld", ts);
    const EVP_MD *md = EVP_get_digestbyname(hash ? hash : "md5");
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, md, NULL);
    EVP_DigestUpdate(ctx, token_first ? tok : t, strlen(token_first ? tok : t));
    EVP_DigestUpdate(ctx, token_first ? t : tok, strlen(token_first ? t : tok));
    EVP_DigestFinal_ex(ctx, d, &n);
    EVP_MD_CTX_free(ctx);
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    snprintf(q, cap, "%s&format=json&timestamp=%s&signature=%s%s%s", action, t, hex,
             hash ? "&hash=" : "", hash ? hash : "");
}

/* The id of the key whose token is 'token'. */
static int64_t key_id(struct hx *h, const char *token)
{
    struct apikey k = {0};
    struct slice s = {token, strlen(token)};
    CHECK_EQ_INT(links_authenticate(hx_app(h)->links, s, &k), ERR_OK);
    return k.id;
}

/* Status of GET /yourls-api.php?QUERY, and "Please log in" when refused. */
static int yq(struct hx *h, const char *query)
{
    struct hx_resp resp;
    int status = yget(h, NULL, query, &resp);
    if (status == 403) /* json, or simple's bare text */
        CHECK_EQ_STR(resp.json ? hx_json_str(&resp, "message") : resp.body, "Please log in");
    hx_resp_release(&resp);
    return status;
}

void test_compat_yourls_signature_token(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct app *app = hx_app(h);
    char key[64], other[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    snprintf(other, sizeof(other), "%s", hx_key(h, false));
    char tok[YOURLS_TOKEN_LEN + 1], tok2[YOURLS_TOKEN_LEN + 1];
    links_yourls_token(app->links, key_id(h, key), tok);
    links_yourls_token(app->links, key_id(h, other), tok2);
    CHECK_EQ_INT((long long)strspn(tok, "0123456789abcdef"), YOURLS_TOKEN_LEN);
    CHECK(strcmp(tok, tok2) != 0);
    char again[YOURLS_TOKEN_LEN + 1];
    links_yourls_token(app->links, key_id(h, key), again);
    CHECK_EQ_STR(again, tok); /* derived: the same every time */

    long long now = now_ms() / 1000;
    char q[512];
    /* md5 (the default, named or not), sha1, sha256, sha512; either order */
    const char *hashes[] = {NULL, "md5", "sha1", "sha256", "sha512"};
    for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
        signed_query(q, sizeof(q), "action=db-stats", hashes[i], now, tok, false);
        CHECK_EQ_INT(yq(h, q), 200);
        signed_query(q, sizeof(q), "action=db-stats", hashes[i], now, tok, true);
        CHECK_EQ_INT(yq(h, q), 200);
    }
    /* the plain token, as YOURLS's plain signature */
    snprintf(q, sizeof(q), "action=version&format=simple&signature=%s", tok);
    CHECK_EQ_INT(yq(h, q), 200);
    /* it authenticates as its key: the link is that key's, not the other's */
    signed_query(q, sizeof(q), "action=shorturl&url=https%3A%2F%2Fexample.com%2Fsigned", NULL, now,
                 tok, false);
    struct hx_resp resp;
    CHECK_EQ_INT(yget(h, NULL, q, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "status"), "success");
    hx_resp_release(&resp);
    CHECK_EQ_INT(count_links(h, key), 1);
    CHECK_EQ_INT(count_links(h, other), 0);

    /* inside the window either way: taken; at its edge or beyond: refused */
    signed_query(q, sizeof(q), "action=db-stats", "sha1", now - 43000, tok, false);
    CHECK_EQ_INT(yq(h, q), 200);
    signed_query(q, sizeof(q), "action=db-stats", "sha1", now + 43000, tok, false);
    CHECK_EQ_INT(yq(h, q), 200);
    int refusals = 0;
    signed_query(q, sizeof(q), "action=db-stats", NULL, now - 43200 - 5, tok, false);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    signed_query(q, sizeof(q), "action=db-stats", "sha512", now + 43200 + 60, tok, false);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    /* a hash that does not match its `hash`, or one not offered */
    signed_query(q, sizeof(q), "action=db-stats", "md5", now, tok, false);
    char *h5 = strstr(q, "&hash=md5");
    memcpy(h5, "&hash=sha1", 11);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    signed_query(q, sizeof(q), "action=db-stats", "md5", now, tok, false);
    h5 = strstr(q, "&hash=md5");
    memcpy(h5, "&hash=crc32", 12);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    /* a token no key has: a wrong signature */
    char fake[YOURLS_TOKEN_LEN + 1];
    memcpy(fake, tok, sizeof(fake));
    fake[0] = fake[0] == '0' ? '1' : '0';
    signed_query(q, sizeof(q), "action=db-stats", NULL, now, fake, false);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    snprintf(q, sizeof(q), "action=version&format=simple&signature=%s", fake);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;

    /* yourls-timestamp-window narrows it */
    app->cfg.yourls_timestamp_window = 60;
    signed_query(q, sizeof(q), "action=db-stats", NULL, now - 30, tok, false);
    CHECK_EQ_INT(yq(h, q), 200);
    signed_query(q, sizeof(q), "action=db-stats", NULL, now - 100, tok, false);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    app->cfg.yourls_timestamp_window = 43200;

    /* a revoked key's token, plain or timestamped, is refused at once */
    signed_query(q, sizeof(q), "action=db-stats", NULL, now, tok2, false);
    CHECK_EQ_INT(yq(h, q), 200);
    struct store *st = app->store;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->key_revoke(st, key_id(h, other), now_ms()), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    links_forget_keys(app->links);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    snprintf(q, sizeof(q), "action=version&format=simple&signature=%s", tok2);
    CHECK_EQ_INT(yq(h, q), 403);
    refusals++;
    CHECK_EQ_INT(count_links(h, key), 1);

    /* each wrong signature counted against the auth limit (20 a minute) */
    CHECK_EQ_INT(refusals, 9);
    int status = 0, tries = 0;
    signed_query(q, sizeof(q), "action=db-stats", NULL, now, fake, false);
    while (status != 429 && tries < 20) {
        status = yget(h, NULL, q, &resp);
        hx_resp_release(&resp);
        tries++;
    }
    CHECK_EQ_INT(status, 429);
    CHECK_EQ_INT(tries, 20 - refusals + 1);
    hx_free(h);
}

void test_compat_yourls_store_fails(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    CHECK_EQ_INT(yget(h, key, "action=version", &resp), 200); /* the key is cached now */
    hx_resp_release(&resp);
    long before = count_links(h, key);

    hx_fault(h, "link_insert", 0);
    CHECK_EQ_INT(yget(h, key, "action=shorturl&format=json&url=https%3A%2F%2Fexample.com%2Ff",
                      &resp),
                 503);
    CHECK_EQ_STR(hx_json_str(&resp, "code"), "error:db");
    CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1");
    hx_resp_release(&resp);
    hx_fault_clear(h);
    CHECK_EQ_INT(count_links(h, key), before);

    hx_fault(h, "link_get", 0);
    CHECK_EQ_INT(yget(h, key, "action=expand&format=json&shorturl=abc", &resp), 503);
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "503");
    hx_resp_release(&resp);
    hx_fault_clear(h);
    hx_fault(h, "link_list", 0);
    CHECK_EQ_INT(yget(h, key, "action=stats&format=json&limit=3", &resp), 503);
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "503");
    hx_resp_release(&resp);
    hx_fault_clear(h);

    /* a key the store must be asked about, while it fails: 503, YOURLS-shaped */
    char other[64];
    snprintf(other, sizeof(other), "%s", hx_key(h, false));
    hx_fault(h, "key_by_hash", 0);
    CHECK_EQ_INT(yget(h, other, "action=version&format=json", &resp), 503);
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "503");
    CHECK(!hx_json_str(&resp, "error.code"));
    hx_resp_release(&resp);
    hx_fault_clear(h);
    /* a signature token is checked against the key list: 503 while it fails */
    hx_fault(h, "key_list", 0);
    CHECK_EQ_INT(yget(h, "0123456789abcdef0123456789abcdef", "action=version&format=json", &resp),
                 503);
    CHECK_EQ_STR(hx_json_str(&resp, "errorCode"), "503");
    CHECK_EQ_STR(hx_header(&resp, "Retry-After"), "1");
    hx_resp_release(&resp);
    hx_fault_clear(h);
    hx_free(h);
}

/* Browser extensions and web pages call it as they call /api: CORS for the
 * origins cors-origins lists, preflight and answers alike. */
void test_compat_yourls_cors(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    hx_app(h)->cfg.cors_origins = xstrdup("moz-extension://0b8c7a4e");
    char key[64];
    snprintf(key, sizeof(key), "%s", hx_key(h, false));
    struct hx_resp resp;
    const char *const pre[] = {"Origin: moz-extension://0b8c7a4e",
                               "Access-Control-Request-Method: POST", NULL};
    CHECK_EQ_INT(hx_request(h, "OPTIONS", "/yourls-api.php", pre, NULL, &resp), 204);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "moz-extension://0b8c7a4e");
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Methods"), "GET, POST");
    hx_resp_release(&resp);
    const char *const origin[] = {"Origin: moz-extension://0b8c7a4e", NULL};
    char target[160];
    snprintf(target, sizeof(target), "/yourls-api.php?action=version&format=simple&signature=%s",
             key);
    CHECK_EQ_INT(hx_request(h, "GET", target, origin, NULL, &resp), 200);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "moz-extension://0b8c7a4e");
    hx_resp_release(&resp);
    /* the router's refusal too */
    CHECK_EQ_INT(hx_request(h, "GET", "/yourls-api.php?action=version", origin, NULL, &resp), 403);
    CHECK_EQ_STR(hx_header(&resp, "Access-Control-Allow-Origin"), "moz-extension://0b8c7a4e");
    hx_resp_release(&resp);
    hx_free(h);
}
