/* test_redirect.c - GET|HEAD /CODE and the password gate's POST in-process
 * (harness.h), through the real router, cache, store threads and click
 * pipeline: the plain path (301/302, HEAD, 404, 410 for a deleted, disabled
 * or expired link, the cache, which requests are clicks), the controlled
 * path (password gate, A/B variants, click limits), UTM, the host check,
 * and the 503 of each when the store fails where it is needed. The answers
 * are those the end-to-end tests expect (basics, controls, exhausted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/clicks.h"
#include "harness.h"
#include "redirect/cache.h"
#include "redirect/gate.h"
#include "redirect/hosts.h"
#include "redirect/notfound.h"
#include "test.h"

#include "base/banned.h"

#define BROWSER "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
#define BOT "User-Agent: Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

static const char *const human[] = {BROWSER, NULL};
static const char *const bot[] = {BOT, NULL};
static const char *const prefetch[] = {BROWSER, "Sec-Purpose: prefetch", NULL};

/* METHOD /CODE as a browser (or with 'headers'): the status; the Location
 * goes to 'loc' when it is not NULL ("" when none). */
static int visit(struct hx *h, const char *method, const char *code, const char *const *headers,
                 char loc[512])
{
    char target[256];
    snprintf(target, sizeof(target), "/%s", code);
    struct hx_resp resp;
    int status = hx_request(h, method, target, headers ? headers : human, NULL, &resp);
    if (loc) {
        const char *l = hx_header(&resp, "Location");
        snprintf(loc, 512, "%s", l ? l : "");
    }
    hx_resp_release(&resp);
    return status;
}

/* The link object of 'code' as its owner 'auth' reads it (json_decref it). */
static json_t *link_of(struct hx *h, const char *auth, const char *code)
{
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s", code);
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    json_t *o = NULL;
    if (CHECK_EQ_INT(hx_request(h, "GET", target, headers, NULL, &resp), 200)) {
        o = resp.json;
        resp.json = NULL;
    }
    hx_resp_release(&resp);
    return o ? o : json_object();
}

/* The link's stored clicks and bot clicks, once every click made is stored. */
static void check_clicks(struct hx *h, const char *auth, const char *code, int clicks, int bots)
{
    hx_clicks_settle(h);
    json_t *o = link_of(h, auth, code);
    if (!CHECK_EQ_INT(json_integer_value(json_object_get(o, "clicks")), clicks) |
        !CHECK_EQ_INT(json_integer_value(json_object_get(o, "bot_clicks")), bots))
        test_note("link %s", code);
    json_decref(o);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

void test_redirect_plain(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], perm[HX_CODE_MAX], loc[512];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/landing?x=1\"}", code), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/forever\",\"permanent\":true}",
                           perm),
                 201);

    /* 302 with Location and Cache-Control: private, no-store. */
    char target[128];
    snprintf(target, sizeof(target), "/%s", code);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, human, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/landing?x=1");
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "private, no-store");
    hx_resp_release(&resp);
    /* HEAD answers like GET, without a body. */
    CHECK_EQ_INT(hx_request(h, "HEAD", target, human, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/landing?x=1");
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);
    /* The request's query is appended to the destination's own. */
    snprintf(target, sizeof(target), "%s?b=2", code);
    CHECK_EQ_INT(visit(h, "GET", target, NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://example.com/landing?x=1&b=2");

    /* A permanent link: 301, cacheable. */
    snprintf(target, sizeof(target), "/%s", perm);
    CHECK_EQ_INT(hx_request(h, "GET", target, human, NULL, &resp), 301);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://example.com/forever");
    const char *cc = hx_header(&resp, "Cache-Control");
    CHECK(cc && !strncmp(cc, "public, max-age=", 16) && atoi(cc + 16) > 0);
    hx_resp_release(&resp);

    /* Unknown codes, and codes that cannot exist, are 404; codes are case-sensitive. */
    CHECK_EQ_INT(hx_request(h, "GET", "/zzzzzzz", human, NULL, &resp), 404);
    CHECK_EQ_STR(resp.content_type, "text/plain; charset=utf-8");
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "HEAD", "zzzzzzz", NULL, NULL), 404);
    CHECK_EQ_INT(visit(h, "GET", "no!such", NULL, NULL), 404);
    char upper[HX_CODE_MAX];
    snprintf(upper, sizeof(upper), "%s", code);
    for (char *p = upper; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    CHECK_EQ_INT(visit(h, "GET", upper, NULL, NULL), 404);
    hx_free(h);
}

/* Deleted and disabled links answer 410 (HEAD too), as does an expired one,
 * decided from its stored time on every request, the cached ones too. */
void test_redirect_gone(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], admin[HX_AUTH_MAX], del[HX_CODE_MAX], off[HX_CODE_MAX],
        ttl[HX_CODE_MAX];
    hx_auth(h, false, auth);
    hx_auth(h, true, admin);
    const char *mine[] = {auth, NULL}, *admins[] = {admin, NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/del\"}", del), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/off\"}", off), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/ttl\",\"ttl\":1}", ttl), 201);
    int64_t created = mono_ms(); /* it expires within a second of this */
    /* Each cached first: the change must reach the cache. */
    CHECK_EQ_INT(visit(h, "GET", ttl, NULL, NULL), 302);
    CHECK_EQ_INT(visit(h, "GET", del, NULL, NULL), 302);
    CHECK_EQ_INT(visit(h, "GET", off, NULL, NULL), 302);

    char target[128];
    struct hx_resp resp;
    snprintf(target, sizeof(target), "/api/links/%s", del);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "GET", del, NULL, NULL), 410);
    CHECK_EQ_INT(visit(h, "HEAD", del, NULL, NULL), 410);

    snprintf(target, sizeof(target), "/api/links/%s/disable", off);
    CHECK_EQ_INT(hx_request(h, "POST", target, admins, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "GET", off, NULL, NULL), 410);
    snprintf(target, sizeof(target), "/api/links/%s/enable", off);
    CHECK_EQ_INT(hx_request(h, "POST", target, admins, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "GET", off, NULL, NULL), 302);

    /* ttl 1: the cached link expires in the cache, with the store down. */
    int64_t waited = mono_ms() - created;
    if (waited < 1100)
        sleep_ms((int)(1100 - waited));
    hx_fault(h, "link_get", 0);
    CHECK_EQ_INT(visit(h, "GET", ttl, NULL, NULL), 410);
    CHECK_EQ_INT(visit(h, "HEAD", ttl, NULL, NULL), 410);
    hx_fault_clear(h);
    /* And read from the store afresh, expired too. */
    cache_remove(hx_app(h)->cache, ttl, strlen(ttl));
    CHECK_EQ_INT(visit(h, "GET", ttl, NULL, NULL), 410);
    /* None of the 410s is a click. */
    check_clicks(h, auth, del, 1, 0);
    check_clicks(h, auth, ttl, 1, 0);
    hx_free(h);
}

/* The first visit reads the store and fills the cache; later ones need no
 * store, and an unknown code is remembered too (for miss-ttl). A code not
 * in the cache needs the store: 503 with Retry-After when it fails. */
void test_redirect_cache(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], other[HX_CODE_MAX], loc[512];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/c\"}", code), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/u\"}", other), 201);
    uint64_t hits0 = 0, misses0 = 0, hits = 0, misses = 0;
    cache_counts(hx_app(h)->cache, &hits0, &misses0);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 302);
    CHECK_EQ_INT(visit(h, "GET", "unknown1", NULL, NULL), 404);
    cache_counts(hx_app(h)->cache, &hits, &misses);
    CHECK_EQ_INT(hits - hits0, 0);
    CHECK_EQ_INT(misses - misses0, 2);

    hx_fault(h, "link_get", 0);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://example.com/c");
    CHECK_EQ_INT(visit(h, "GET", "unknown1", NULL, NULL), 404);
    cache_counts(hx_app(h)->cache, &hits, &misses);
    CHECK_EQ_INT(hits - hits0, 2);
    CHECK_EQ_INT(misses - misses0, 2);
    hx_fault_clear(h);

    /* Uncached: a link, and a code nobody can tell is unknown. */
    char target[128];
    snprintf(target, sizeof(target), "/%s", other);
    hx_unavailable(h, "link_get", 0, "GET", target, human, NULL);
    hx_unavailable(h, "link_get", 0, "HEAD", "/unknown2", human, NULL);
    /* Once the store answers, so does the link. */
    CHECK_EQ_INT(visit(h, "GET", other, NULL, NULL), 302);

    /* An alias asked for before it existed redirects once it is created. */
    CHECK_EQ_INT(visit(h, "GET", "later-alias", NULL, NULL), 404);
    char alias[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/l\",\"alias\":\"later-alias\"}",
                           alias),
                 201);
    CHECK_EQ_INT(visit(h, "GET", "later-alias", NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://example.com/l");
    hx_free(h);
}

/* A GET by a person is a click; HEAD is none; a bot's or a prefetch's GET
 * is a bot click (they get the redirect all the same). Miss or hit. */
void test_redirect_clicks(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], quiet[HX_CODE_MAX];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/k\"}", code), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/q\"}", quiet), 201);
    CHECK_EQ_INT(visit(h, "HEAD", code, NULL, NULL), 302); /* the miss */
    CHECK_EQ_INT(visit(h, "HEAD", code, NULL, NULL), 302);
    check_clicks(h, auth, code, 0, 0);
    CHECK_EQ_INT(visit(h, "GET", code, human, NULL), 302);
    check_clicks(h, auth, code, 1, 0);
    CHECK_EQ_INT(visit(h, "GET", code, bot, NULL), 302);
    CHECK_EQ_INT(visit(h, "GET", code, prefetch, NULL), 302);
    const char *no_ua[] = {NULL};
    CHECK_EQ_INT(visit(h, "GET", code, no_ua, NULL), 302);
    check_clicks(h, auth, code, 1, 3);
    CHECK_EQ_INT(visit(h, "GET", code, human, NULL), 302);
    check_clicks(h, auth, code, 2, 3);
    /* A click of a link counts for that link only. */
    check_clicks(h, auth, quiet, 0, 0);
    CHECK_EQ_INT(visit(h, "GET", quiet, bot, NULL), 302); /* a bot's miss */
    check_clicks(h, auth, quiet, 0, 1);
    hx_free(h);
}

/* PATCH /api/links/CODE with 'body' as the key of 'auth': the status. */
static int patch(struct hx *h, const char *auth, const char *code, const char *body)
{
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s", code);
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    int status = hx_request(h, "PATCH", target, headers, body, &resp);
    if (status != 200)
        test_note("PATCH %s: %s", code, resp.body ? resp.body : "");
    hx_resp_release(&resp);
    return status;
}

/* A link with track: false redirects as any other, and records nothing:
 * no click reaches this loop's buffer, on the plain path (the miss, then
 * the cache) and the controlled one (a password), until tracking is back. */
void test_redirect_untracked(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct clicks *clicks = hx_app(h)->clicks;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], gated[HX_CODE_MAX], loc[512];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://quiet.example/\",\"track\":false}", code),
                 201);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://quiet.example/g\",\"track\":false,"
                           "\"password\":\"pw\"}",
                           gated),
                 201);
    json_t *o = link_of(h, auth, code);
    CHECK(json_is_false(json_object_get(o, "track")));
    json_decref(o);

    uint64_t before = clicks_recorded(clicks);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, loc), 302); /* the miss */
    CHECK_EQ_STR(loc, "https://quiet.example/");
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 302); /* the cache */
    CHECK_EQ_INT(visit(h, "GET", code, bot, NULL), 302);
    struct hx_resp resp;
    char target[128];
    snprintf(target, sizeof(target), "/%s", gated);
    const char *form[] = {BROWSER, "Content-Type: application/x-www-form-urlencoded", NULL};
    CHECK_EQ_INT(hx_request(h, "POST", target, form, "password=pw", &resp), 302);
    hx_resp_release(&resp);
    CHECK_EQ_INT(clicks_recorded(clicks), before);
    check_clicks(h, auth, code, 0, 0);
    check_clicks(h, auth, gated, 0, 0);

    /* true → false → true: only the visits while tracked count. */
    CHECK_EQ_INT(patch(h, auth, code, "{\"track\":true}"), 200);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 302);
    CHECK_EQ_INT(clicks_recorded(clicks), before + 1);
    CHECK_EQ_INT(patch(h, auth, code, "{\"track\":false}"), 200);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 302);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 302);
    CHECK_EQ_INT(clicks_recorded(clicks), before + 1);
    check_clicks(h, auth, code, 1, 0);
    hx_free(h);
}

/* track: false with a click limit is refused, naming the field: a limit
 * counts the visits. */
void test_redirect_untracked_limit(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *headers[] = {hx_auth(h, false, auth), NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers,
                            "{\"url\":\"https://limit.example/\",\"track\":false,"
                            "\"max_clicks\":3}",
                            &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "track");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", headers,
                            "{\"url\":\"https://limit.example/\",\"track\":\"no\"}", &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "track");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://limit.example/\",\"max_clicks\":3}", code),
                 201);
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s", code);
    CHECK_EQ_INT(hx_request(h, "PATCH", target, headers, "{\"track\":false}", &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "track");
    hx_resp_release(&resp);
    CHECK_EQ_INT(patch(h, auth, code, "{\"track\":true}"), 200);
    hx_free(h);
}

/* Every redirect asks for the client hints the classifier reads, and never
 * with Critical-CH (Chromium would repeat the visit). */
void test_redirect_accept_ch(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], perm[HX_CODE_MAX], gated[HX_CODE_MAX];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://hints.example/\"}", code), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://hints.example/p\",\"permanent\":true}",
                           perm),
                 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://hints.example/g\",\"password\":\"pw\"}",
                           gated),
                 201);
    const char *form[] = {BROWSER, "Content-Type: application/x-www-form-urlencoded", NULL};
    struct {
        const char *method, *code, *body;
        int status;
    } cases[] = {{"GET", code, NULL, 302},
                 {"GET", code, NULL, 302},
                 {"HEAD", code, NULL, 302},
                 {"GET", perm, NULL, 301},
                 {"POST", gated, "password=pw", 302}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char target[128];
        snprintf(target, sizeof(target), "/%s", cases[i].code);
        struct hx_resp resp;
        CHECK_EQ_INT(hx_request(h, cases[i].method, target, cases[i].body ? form : human,
                                cases[i].body, &resp),
                     cases[i].status);
        if (!CHECK_EQ_STR(hx_header(&resp, "Accept-CH"),
                          "Sec-CH-UA, Sec-CH-UA-Mobile, Sec-CH-UA-Platform") |
            !CHECK(!hx_header(&resp, "Critical-CH")))
            test_note("case %zu", i);
        hx_resp_release(&resp);
    }
    hx_free(h);
}

/* POST /CODE with the form's password field. */
static int post_password(struct hx *h, const char *code, const char *form, bool browser,
                         struct hx_resp *resp)
{
    char target[128];
    snprintf(target, sizeof(target), "/%s", code);
    const char *headers[] = {BROWSER, "Content-Type: application/x-www-form-urlencoded",
                             browser ? "Accept: text/html" : NULL, NULL};
    return hx_request(h, "POST", target, headers, form, resp);
}

void test_redirect_password(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], plain[HX_CODE_MAX];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://secret.example/doc\","
                           "\"password\":\"p\\u00e4ss & +\"}",
                           code),
                 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://open.example/\"}", plain), 201);
    char target[128];
    snprintf(target, sizeof(target), "/%s", code);
    struct hx_resp resp;

    /* GET (and HEAD) show the gate under a strict CSP, never the destination. */
    CHECK_EQ_INT(hx_request(h, "GET", target, human, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "text/html; charset=utf-8");
    const char *csp = hx_header(&resp, "Content-Security-Policy");
    CHECK(csp && strstr(csp, "default-src 'none'") && strstr(csp, "form-action 'self'") &&
          !strstr(csp, "unsafe-inline"));
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "no-store");
    CHECK(strstr(resp.body, "name=\"password\"") != NULL);
    CHECK(!strstr(resp.body, "secret.example"));
    CHECK(!hx_header(&resp, "Location"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "HEAD", target, human, NULL, &resp), 200);
    CHECK(hx_header(&resp, "Content-Security-Policy") != NULL);
    hx_resp_release(&resp);

    /* A wrong password: 401 and the gate again. */
    CHECK_EQ_INT(post_password(h, code, "password=wrong", true, &resp), 401);
    CHECK(strstr(resp.body, "Wrong password") && !strstr(resp.body, "secret.example"));
    hx_resp_release(&resp);
    /* The right one: a 302 for a client, the continue page for a browser. */
    const char *right = "password=p%C3%A4ss+%26+%2B";
    CHECK_EQ_INT(post_password(h, code, right, false, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://secret.example/doc");
    hx_resp_release(&resp);
    CHECK_EQ_INT(post_password(h, code, right, true, &resp), 200);
    CHECK(strstr(resp.body, "https://secret.example/doc") != NULL);
    CHECK(strstr(resp.body, "http-equiv=\"refresh\"") != NULL);
    hx_resp_release(&resp);
    /* No password field: 400 with the gate. */
    CHECK_EQ_INT(post_password(h, code, "other=1", true, &resp), 400);
    CHECK(strstr(resp.body, "name=\"password\"") != NULL);
    hx_resp_release(&resp);
    /* Two right answers are two clicks; gate views and wrong tries none. */
    check_clicks(h, auth, code, 2, 0);

    /* The default limit, 5 attempts a minute per client and link, the right
     * ones included: the sixth is 429 with Retry-After and the gate. */
    CHECK_EQ_INT(post_password(h, code, "password=guess", true, &resp), 401);
    CHECK_EQ_STR(hx_header(&resp, "RateLimit-Remaining"), "0");
    hx_resp_release(&resp);
    CHECK_EQ_INT(post_password(h, code, right, true, &resp), 429);
    const char *retry = hx_header(&resp, "Retry-After");
    CHECK(retry && atoi(retry) >= 1 && atoi(retry) <= 120);
    CHECK(strstr(resp.body, "name=\"password\"") != NULL);
    hx_resp_release(&resp);

    /* A link without a password takes no POST; an unknown code is 404. */
    CHECK_EQ_INT(post_password(h, plain, "password=x", true, &resp), 405);
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "GET, HEAD");
    hx_resp_release(&resp);
    CHECK_EQ_INT(post_password(h, "nosuchcode", "password=x", true, &resp), 404);
    hx_resp_release(&resp);

    /* A protected link is read from the store on every request: 503 when
     * it fails, for the gate and for its POST. */
    hx_unavailable(h, "link_get", 0, "GET", target, human, NULL);
    const char *form[] = {BROWSER, "Content-Type: application/x-www-form-urlencoded", NULL};
    hx_unavailable(h, "link_get", 0, "POST", target, form, "password=x");
    hx_free(h);
}

/* A/B variants: each visitor is sent to one listed destination and keeps
 * it; the visitors of many user agents reach both; the stats say how many
 * each variant got. */
void test_redirect_variants(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], loc[512], first[512];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://ab.example/\",\"variants\":["
                           "{\"url\":\"https://ab.example/a\",\"weight\":1},"
                           "{\"url\":\"https://ab.example/b\",\"weight\":3}]}",
                           code),
                 201);
    const char *one[] = {"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/1.0 test-1", NULL};
    CHECK_EQ_INT(visit(h, "GET", code, one, first), 302);
    CHECK(!strcmp(first, "https://ab.example/a") || !strcmp(first, "https://ab.example/b"));
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(visit(h, "GET", code, one, loc), 302);
        CHECK_EQ_STR(loc, first);
    }
    int a = 0, b = 0;
    for (int i = 0; i < 60; i++) {
        char ua[96];
        snprintf(ua, sizeof(ua), "User-Agent: Mozilla/5.0 (X11; Linux x86_64) Firefox/%d.0 v-%d",
                 100 + i, i);
        const char *headers[] = {ua, NULL};
        CHECK_EQ_INT(visit(h, "GET", code, headers, loc), 302);
        if (!strcmp(loc, "https://ab.example/a"))
            a++;
        else if (CHECK_EQ_STR(loc, "https://ab.example/b"))
            b++;
    }
    CHECK(a > 0 && b > 0); /* both are chosen, by some of the visitors */
    if (!strcmp(first, "https://ab.example/a"))
        a += 4;
    else
        b += 4;
    hx_clicks_settle(h);
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s/stats", code);
    const char *mine[] = {auth, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 200);
    CHECK_EQ_INT(hx_json_int(&resp, "variants.1"), a);
    CHECK_EQ_INT(hx_json_int(&resp, "variants.2"), b);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/%s", code);
    hx_unavailable(h, "link_get", 0, "GET", target, human, NULL);
    hx_free(h);
}

/* max_clicks: bots, prefetches and HEAD get the redirect without using a
 * slot; people use one each until none is left, then everyone gets 410. */
void test_redirect_click_limit(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], loc[512];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://limited.example/\",\"max_clicks\":2}",
                           code),
                 201);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(visit(h, "GET", code, bot, NULL), 302);
        CHECK_EQ_INT(visit(h, "HEAD", code, NULL, NULL), 302);
        CHECK_EQ_INT(visit(h, "GET", code, prefetch, NULL), 302);
    }
    char target[128];
    snprintf(target, sizeof(target), "/%s", code);
    /* The reservation fails (the store, or its commit): 503, no slot used. */
    hx_unavailable(h, "link_reserve", 0, "GET", target, human, NULL);
    hx_unavailable(h, "commit", 0, "GET", target, human, NULL);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://limited.example/");
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 302);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, NULL), 410);
    CHECK_EQ_INT(visit(h, "HEAD", code, NULL, NULL), 410);
    CHECK_EQ_INT(visit(h, "GET", code, bot, NULL), 410);
    hx_clicks_settle(h);
    json_t *o = link_of(h, auth, code);
    CHECK_EQ_STR(json_string_value(json_object_get(o, "state")), "exhausted");
    CHECK_EQ_INT(json_integer_value(json_object_get(o, "clicks_left")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(o, "clicks")), 2);
    json_decref(o);
    hx_free(h);
}

/* UTM parameters are merged into the destination: an existing utm_*
 * parameter replaced, never duplicated, the fragment kept last. */
void test_redirect_utm(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], loc[512];
    hx_auth(h, false, auth);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://shop.example/p?utm_source=old&id=7"
                           "&utm_source=older#top\","
                           "\"utm\":{\"source\":\"news letter\",\"medium\":\"email\","
                           "\"campaign\":\"a&b\"}}",
                           code),
                 201);
    CHECK_EQ_INT(visit(h, "GET", code, NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://shop.example/p?utm_source=news%20letter&id=7&utm_medium=email"
                      "&utm_campaign=a%26b#top");
    hx_free(h);
}

/* With default short hosts configured, a link opens on them and on its own
 * custom domain; any other Host is 404 and no click. */
void test_redirect_hosts(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct app *app = hx_app(h);
    char why[200];
    int rc = hostlist_parse("sho.rt, www.sho.rt", &app->hosts, why, sizeof(why));
    if (!CHECK_EQ_INT(rc, ERR_OK)) {
        hx_free(h);
        return;
    }
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], plain[HX_CODE_MAX];
    hx_auth(h, false, auth);
    const char *mine[] = {auth, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, "{\"host\":\"go.example\"}", &resp),
                 201);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://dest.example/x\",\"domain\":\"go.example\"}", code),
                 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://dest.example/plain\"}", plain), 201);
    static const char *const open[] = {"Host: sho.rt", "Host: SHO.RT", "Host: www.sho.rt:443",
                                       "Host: go.example"};
    for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++) {
        const char *headers[] = {BROWSER, open[i], NULL};
        if (!CHECK_EQ_INT(visit(h, "GET", code, headers, NULL), 302))
            test_note("%s", open[i]);
    }
    static const char *const shut[] = {"Host: evil.example", "Host: x.go.example",
                                       "Host: sho.rt.evil.example"};
    for (size_t i = 0; i < sizeof(shut) / sizeof(shut[0]); i++) {
        const char *headers[] = {BROWSER, shut[i], NULL};
        if (!CHECK_EQ_INT(visit(h, "GET", code, headers, NULL), 404) |
            !CHECK_EQ_INT(visit(h, "GET", plain, headers, NULL), 404))
            test_note("%s", shut[i]);
    }
    /* The plain link does not open on another link's domain. */
    const char *theirs[] = {BROWSER, "Host: go.example", NULL};
    CHECK_EQ_INT(visit(h, "GET", plain, theirs, NULL), 404);
    check_clicks(h, auth, code, 4, 0);
    check_clicks(h, auth, plain, 0, 0);
    hostlist_free(app->hosts);
    app->hosts = NULL;
    hx_free(h);
}

/* ---- what visitors get when a code opens nothing (notfound.c) ---- */

#define HTML "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

/* GET /CODE as a browser: the status, and its page (HTML, under the gate's
 * CSP, never cached) holding 'says'; and as curl: the same status and the
 * plain text of before, byte for byte. */
static void check_page(struct hx *h, const char *code, int status, const char *says,
                       const char *text)
{
    const char *browser[] = {BROWSER, HTML, NULL}, *curl[] = {"User-Agent: curl/8.5.0", NULL};
    char target[256];
    snprintf(target, sizeof(target), "/%s", code);
    struct hx_resp resp;
    if (!CHECK_EQ_INT(hx_request(h, "GET", target, browser, NULL, &resp), status))
        test_note("code %s", code);
    CHECK_EQ_STR(resp.content_type, "text/html; charset=utf-8");
    CHECK_EQ_STR(hx_header(&resp, "Content-Security-Policy"), gate_csp);
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "no-store");
    CHECK(hx_header(&resp, "X-Robots-Tag") == NULL);
    if (!CHECK(resp.body && strstr(resp.body, says)))
        test_note("page of %s: %s", code, resp.body ? resp.body : "(none)");
    CHECK(resp.body && !strstr(resp.body, "<script"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "HEAD", target, browser, NULL, &resp), status);
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, curl, NULL, &resp), status);
    CHECK_EQ_STR(resp.content_type, "text/plain; charset=utf-8");
    CHECK_EQ_STR(resp.body, text);
    CHECK(hx_header(&resp, "Content-Security-Policy") == NULL);
    hx_resp_release(&resp);
}

#define NOT_FOUND_TEXT "Not Found: no link has this code\n"
#define GONE_TEXT "Gone: this link has expired or was removed\n"

/* Unknown, expired, deleted, disabled, used up: a browser gets a page saying
 * which (cached or read from the store alike), anyone else the old text. */
void test_redirect_visitor_pages(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], admin[HX_AUTH_MAX], del[HX_CODE_MAX], off[HX_CODE_MAX],
        ttl[HX_CODE_MAX], used[HX_CODE_MAX], locked[HX_CODE_MAX], target[128];
    hx_auth(h, false, auth);
    hx_auth(h, true, admin);
    const char *mine[] = {auth, NULL}, *admins[] = {admin, NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/del\"}", del), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/off\"}", off), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/ttl\",\"ttl\":1}", ttl), 201);
    int64_t created = mono_ms();
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/u\",\"max_clicks\":1}", used),
                 201);
    CHECK_EQ_INT(hx_create(h, auth,
                           "{\"url\":\"https://example.com/l\",\"max_clicks\":1,"
                           "\"password\":\"sesame-sesame\",\"ttl\":1}",
                           locked),
                 201);
    struct hx_resp resp;
    snprintf(target, sizeof(target), "/api/links/%s", del);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/api/links/%s/disable", off);
    CHECK_EQ_INT(hx_request(h, "POST", target, admins, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "GET", used, NULL, NULL), 302);

    check_page(h, "zzzzzzz", 404, "Link not found", NOT_FOUND_TEXT);
    check_page(h, "no!such", 404, "Link not found", NOT_FOUND_TEXT); /* cannot be a code */
    check_page(h, del, 410, "This link was deleted", GONE_TEXT);
    check_page(h, off, 410, "This link was disabled", GONE_TEXT);
    check_page(h, used, 410, "This link is used up", GONE_TEXT);
    int64_t waited = mono_ms() - created;
    if (waited < 1100)
        sleep_ms((int)(1100 - waited));
    check_page(h, ttl, 410, "This link has expired", GONE_TEXT);
    cache_remove(hx_app(h)->cache, ttl, strlen(ttl)); /* read from the store too */
    check_page(h, ttl, 410, "This link has expired", GONE_TEXT);
    /* A controlled link (read whole from the store) that expired: not "used up". */
    check_page(h, locked, 410, "This link has expired", GONE_TEXT);

    /* Whatever the address holds is shown as text, never as markup. */
    const char *browser[] = {BROWSER, HTML, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/<b>\"x'&y<i>", browser, NULL, &resp), 404);
    CHECK(resp.body && strstr(resp.body, "<title>&lt;b&gt;&quot;x&#39;&amp;y&lt;i&gt; "));
    CHECK(resp.body && strstr(resp.body, "<code>/&lt;b&gt;&quot;x&#39;&amp;y&lt;i&gt;</code>"));
    CHECK(resp.body && !strstr(resp.body, "<b>") && !strstr(resp.body, "<i>"));
    hx_resp_release(&resp);
    hx_free(h);
}

/* The fallbacks by setting: a code that opens nothing redirects to
 * invalid-short-url-redirect (every client, as Shlink), any other unknown
 * path outside /api/ to regular-404-redirect; live links are untouched. */
void test_redirect_fallbacks(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], del[HX_CODE_MAX], loc[512], target[128];
    hx_auth(h, false, auth);
    const char *mine[] = {auth, NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/live\"}", code), 201);
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/del\"}", del), 201);
    struct hx_resp resp;
    snprintf(target, sizeof(target), "/api/links/%s", del);
    CHECK_EQ_INT(hx_request(h, "DELETE", target, mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    /* Unset: the 404 of before for a path nothing serves. */
    CHECK_EQ_INT(hx_request(h, "GET", "/no/such/path", NULL, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);

    struct config *cfg = &hx_app(h)->cfg;
    cfg->invalid_redirect = xstrdup("https://www.example.org/missing");
    cfg->regular_404_redirect = xstrdup("https://www.example.org/404");
    const char *browser[] = {BROWSER, HTML, NULL};
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://www.example.org/missing");
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", browser, loc), 302);
    CHECK_EQ_STR(loc, "https://www.example.org/missing");
    CHECK_EQ_INT(visit(h, "HEAD", del, NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://www.example.org/missing");
    CHECK_EQ_INT(visit(h, "GET", code, NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://example.com/live");
    CHECK_EQ_INT(hx_request(h, "GET", "/no/such/path", NULL, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://www.example.org/404");
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "no-store");
    hx_resp_release(&resp);
    /* Not for the API, nor for another method. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/nothing", mine, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/no/such/path", NULL, NULL, &resp), 404);
    hx_resp_release(&resp);
    hx_free(h);
}

/* /robots.txt: the default keeps crawlers out of the API and the dashboard
 * only; the file's text when robots-txt was read. The API's and the
 * dashboard's answers carry X-Robots-Tag: noindex; redirects do not. */
void test_redirect_robots(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX], target[128];
    hx_auth(h, false, auth);
    const char *mine[] = {auth, NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/r\"}", code), 201);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/robots.txt", NULL, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "text/plain; charset=utf-8");
    CHECK_EQ_STR(resp.body, "User-agent: *\nDisallow: /api/\nDisallow: /dashboard\n");
    CHECK(hx_header(&resp, "X-Robots-Tag") == NULL);
    hx_resp_release(&resp);
    struct app *app = hx_app(h);
    app->robots = xstrdup("User-agent: *\nDisallow: /\n");
    app->robots_len = strlen(app->robots);
    CHECK_EQ_INT(hx_request(h, "GET", "/robots.txt", NULL, NULL, &resp), 200);
    CHECK_EQ_STR(resp.body, "User-agent: *\nDisallow: /\n");
    hx_resp_release(&resp);
    free(app->robots);
    app->robots = NULL;
    /* No alias may take it. */
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/x\",\"alias\":\"robots.txt\"}",
                           target),
                 400);

    /* noindex: the API (answers and refusals) and the dashboard ... */
    const char *const paths[] = {"/api/links", "/api/openapi.json", "/dashboard", "/healthz"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        CHECK_EQ_INT(hx_request(h, "GET", paths[i], mine, NULL, &resp), 200);
        if (!CHECK_EQ_STR(hx_header(&resp, "X-Robots-Tag"), "noindex"))
            test_note("path %s", paths[i]);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", NULL, NULL, &resp), 401);
    CHECK_EQ_STR(hx_header(&resp, "X-Robots-Tag"), "noindex");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/no/such/path", NULL, NULL, &resp), 404);
    CHECK_EQ_STR(hx_header(&resp, "X-Robots-Tag"), "noindex");
    hx_resp_release(&resp);
    /* ... not a short link's redirect, nor the home page's. */
    snprintf(target, sizeof(target), "/%s", code);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 302);
    CHECK(hx_header(&resp, "X-Robots-Tag") == NULL);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/", NULL, NULL, &resp), 302);
    CHECK(hx_header(&resp, "X-Robots-Tag") == NULL);
    hx_resp_release(&resp);
    hx_free(h);
}

/* PATCH /api/domains/HOST: a custom domain's own not-found redirects, which
 * win over the settings on that host only; shown by GET /api/domains, kept
 * when the body leaves them out, removed by null, gone with the domain. */
void test_redirect_domain_fallbacks(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], other[HX_AUTH_MAX], loc[512];
    hx_auth(h, false, auth);
    hx_auth(h, false, other);
    const char *mine[] = {auth, NULL}, *theirs[] = {other, NULL};
    const char *on_go[] = {"Host: go.example:8080", NULL};
    const char *on_go_browser[] = {"Host: go.example", BROWSER, HTML, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/domains", mine, "{\"host\":\"go.example\"}", &resp),
                 201);
    CHECK(json_is_null(json_object_get(resp.json, "invalid_short_url_redirect")));
    hx_resp_release(&resp);
    /* Nothing set: the page, and home for GET /. */
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", on_go_browser, NULL), 404);
    CHECK_EQ_INT(hx_request(h, "GET", "/", on_go, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "/dashboard");
    hx_resp_release(&resp);

    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", mine,
                            "{\"invalid_short_url_redirect\":\"https://Go.Example.org/oops\","
                            "\"regular_404_redirect\":\"https://go.example.org/404\","
                            "\"base_url_redirect\":\"https://go.example.org/\"}",
                            &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "host"), "go.example");
    CHECK_EQ_STR(hx_json_str(&resp, "invalid_short_url_redirect"), "https://go.example.org/oops");
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", on_go_browser, loc), 302);
    CHECK_EQ_STR(loc, "https://go.example.org/oops");
    CHECK_EQ_INT(visit(h, "HEAD", "zzzzzzz", on_go, loc), 302);
    CHECK_EQ_STR(loc, "https://go.example.org/oops");
    CHECK_EQ_INT(hx_request(h, "GET", "/a/b", on_go, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://go.example.org/404");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/", on_go, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://go.example.org/");
    hx_resp_release(&resp);
    /* The main host keeps its own answers, then the settings'. */
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", NULL, NULL), 404);
    hx_app(h)->cfg.invalid_redirect = xstrdup("https://main.example/missing");
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", NULL, loc), 302);
    CHECK_EQ_STR(loc, "https://main.example/missing");
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", on_go, loc), 302);
    CHECK_EQ_STR(loc, "https://go.example.org/oops");

    /* Left out: kept; null: removed (the setting applies again). */
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", mine,
                            "{\"invalid_short_url_redirect\":null}", &resp),
                 200);
    CHECK(json_is_null(json_object_get(resp.json, "invalid_short_url_redirect")));
    CHECK_EQ_STR(hx_json_str(&resp, "base_url_redirect"), "https://go.example.org/");
    hx_resp_release(&resp);
    CHECK_EQ_INT(visit(h, "GET", "zzzzzzz", on_go, loc), 302);
    CHECK_EQ_STR(loc, "https://main.example/missing");
    CHECK_EQ_INT(hx_request(h, "GET", "/api/domains", mine, NULL, &resp), 200);
    json_t *d0 = json_array_get(resp.json, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(d0, "host")), "go.example");
    CHECK_EQ_STR(json_string_value(json_object_get(d0, "regular_404_redirect")),
                 "https://go.example.org/404");
    CHECK(json_is_null(json_object_get(d0, "invalid_short_url_redirect")));
    hx_resp_release(&resp);

    /* The table as loaded from the store (at start, after another node's
     * change): forgotten here, read again. */
    struct fallbacks *fb = hx_app(h)->fallbacks;
    fallbacks_set(fb, "go.example", NULL);
    CHECK_EQ_INT(hx_request(h, "GET", "/a/b", on_go, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(fallbacks_load(fb, hx_app(h)->store), ERR_OK);
    CHECK_EQ_INT(hx_request(h, "GET", "/a/b", on_go, NULL, &resp), 302);
    CHECK_EQ_STR(hx_header(&resp, "Location"), "https://go.example.org/404");
    hx_resp_release(&resp);

    /* Refused: a stranger's domain, an unknown field, a URL that is none. */
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", theirs,
                            "{\"regular_404_redirect\":null}", &resp),
                 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", mine,
                            "{\"not_found_redirect\":\"https://a.example/\"}", &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "not_found_redirect");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", mine,
                            "{\"base_url_redirect\":\"javascript:alert(1)\"}", &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "base_url_redirect");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", mine,
                            "{\"base_url_redirect\":\"https://a.example/\\r\\nSet-Cookie: x=1\"}",
                            &resp),
                 400);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/domains/go.example", mine, "{}", &resp), 400);
    hx_resp_release(&resp);
    hx_unavailable(h, "domain_redirects_list", 0, "GET", "/api/domains", mine, NULL);

    /* A removed domain's redirects go with it. */
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/domains/go.example", mine, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/a/b", on_go, NULL, &resp), 404);
    hx_resp_release(&resp);
    hx_free(h);
}
