/* cors.c - the allowed origins of `cors-origins` and the CORS headers of a
 * preflight and of an actual answer (cors.h). The setting is read as text on
 * every request that has an Origin: a short list, scanned without copying. */
#include "http/cors.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "app/app.h"
#include "base/err.h"
#include "base/banned.h"

/* What a script may send beyond the CORS-safelisted headers: the API's key
 * (Authorization: Bearer, and the X-API-KEY / X-Api-Key of the compatible
 * APIs; header names are case-insensitive), its JSON body and its
 * idempotency key. */
static const char allow_headers[] = "Authorization, Content-Type, Idempotency-Key, X-API-KEY";

/* What a script may read beyond the CORS-safelisted response headers. */
static const char expose_headers[] =
    "Link, Location, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, "
    "RateLimit-Policy, Idempotent-Replayed, Content-Disposition, ETag, WWW-Authenticate";

/* Seconds a browser may reuse a preflight's answer (Chromium keeps at most
 * two hours, whatever it is told). */
#define PREFLIGHT_MAX_AGE "7200"

/* The next entry of a comma list, trimmed: false at the end. */
static bool next_entry(const char **cursor, struct slice *out)
{
    const char *p = *cursor;
    while (*p == ',' || *p == ' ' || *p == '\t')
        p++;
    if (!*p)
        return false;
    const char *start = p;
    while (*p && *p != ',')
        p++;
    const char *end = p;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *out = (struct slice){start, (size_t)(end - start)};
    *cursor = p;
    return true;
}

/* An origin as a browser serializes it: SCHEME://HOST[:PORT], nothing after
 * (no path, not even a '/'). Any scheme, so that a browser extension
 * (chrome-extension://ID) can be listed. */
static bool is_origin(struct slice s)
{
    size_t i = 0;
    if (!s.n || !isalpha((unsigned char)s.p[0]))
        return false;
    while (i < s.n &&
           (isalnum((unsigned char)s.p[i]) || s.p[i] == '+' || s.p[i] == '-' || s.p[i] == '.'))
        i++;
    if (s.n - i < 4 || memcmp(s.p + i, "://", 3) != 0)
        return false;
    for (i += 3; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c <= ' ' || c >= 0x7f || strchr("/?#@\\\"", c))
            return false;
    }
    return true;
}

int cors_check(const char *origins, char *err, size_t errlen)
{
    struct slice e;
    for (const char *p = origins ? origins : ""; next_entry(&p, &e);) {
        if ((e.n == 1 && e.p[0] == '*') || is_origin(e))
            continue;
        snprintf(err, errlen,
                 "cors-origins: '%.*s' is not an origin (SCHEME://HOST[:PORT], no path) or *",
                 (int)(e.n > 200 ? 200 : e.n), e.p);
        return ERR_INVALID;
    }
    return ERR_OK;
}

bool cors_allowed(const char *origins, struct slice origin)
{
    if (!origins || !origin.n)
        return false;
    struct slice e;
    for (const char *p = origins; next_entry(&p, &e);) {
        if (e.n == 1 && e.p[0] == '*')
            return true;
        if (e.n == origin.n && strncasecmp(e.p, origin.p, e.n) == 0)
            return true;
    }
    return false;
}

/* The request's Origin when the setting allows it; p NULL otherwise. */
static struct slice allowed_origin(const struct request *r)
{
    struct slice origin = http_header(r, "origin");
    if (!origin.p || !cors_allowed(r->app->cfg.cors_origins, origin))
        return (struct slice){NULL, 0};
    return origin;
}

void cors_add_headers(struct request *r)
{
    struct slice origin = allowed_origin(r);
    if (!origin.p)
        return;
    http_add_header(r, "Access-Control-Allow-Origin", origin.p, origin.n);
    http_add_header(r, "Vary", "Origin", 6);
    http_add_header(r, "Access-Control-Expose-Headers", expose_headers, sizeof(expose_headers) - 1);
}

int cors_preflight(struct request *r, const char *methods)
{
    http_add_header(r, "Allow", methods, strlen(methods));
    buf_reset(&r->resp_body);
    r->content_type = NULL;
    struct slice origin = allowed_origin(r);
    if (!origin.p)
        return 204;
    http_add_header(r, "Access-Control-Allow-Origin", origin.p, origin.n);
    http_add_header(r, "Access-Control-Allow-Methods", methods, strlen(methods));
    http_add_header(r, "Access-Control-Allow-Headers", allow_headers, sizeof(allow_headers) - 1);
    http_add_header(r, "Access-Control-Max-Age", PREFLIGHT_MAX_AGE, sizeof(PREFLIGHT_MAX_AGE) - 1);
    http_add_header(r, "Vary", "Origin", 6);
    return 204;
}
