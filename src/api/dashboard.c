/* dashboard.c - serves the web dashboard from the table that
 * scripts/embed-web.mjs generates out of web/ and uPlot: /dashboard is the
 * app's index.html under a strict Content-Security-Policy (no inline script
 * or style; data only from this origin), /static/FILE the scripts, styles and
 * icons it loads. Every answer carries a strong ETag and asks the browser to
 * revalidate (no-cache), so a new binary is picked up at once while an
 * unchanged file costs only a 304. The API's OpenAPI document
 * (web/openapi.json) is one of these files, served at /api/openapi.json too.
 * /s.js is the page script that sites install (web/site/, built by
 * scripts/build-site-script.mjs): served the same way, and loadable by any
 * other origin's page. */
#include "api/dashboard.h"

#include <string.h>

#include "api/handlers.h"
#include "base/banned.h"

#include "web_assets.inc"
#include "site_script.inc"

#define NASSETS (sizeof(web_assets) / sizeof(web_assets[0]))

static const char csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const struct web_asset *dashboard_asset(struct slice name)
{
    for (size_t i = 0; i < NASSETS; i++)
        if (slice_eq(name, web_assets[i].name))
            return &web_assets[i];
    return NULL;
}

/* Whether an If-None-Match value ("a", W/"b", or *) names 'etag'. */
static bool etag_matches(struct slice inm, const char *etag)
{
    size_t n = strlen(etag);
    const char *p = inm.p, *end = inm.p + inm.n;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *start = p;
        while (p < end && *p != ',')
            p++;
        const char *stop = p;
        while (stop > start && (stop[-1] == ' ' || stop[-1] == '\t'))
            stop--;
        size_t len = (size_t)(stop - start);
        if (len == 1 && *start == '*')
            return true;
        if (len > 2 && start[0] == 'W' && start[1] == '/') {
            start += 2;
            len -= 2;
        }
        if (len == n && memcmp(start, etag, n) == 0)
            return true;
    }
    return false;
}

static int serve(struct request *r, const struct web_asset *a)
{
    http_add_header(r, "ETag", a->etag, strlen(a->etag));
    http_add_header(r, "Cache-Control", "no-cache", 8);
    http_add_header(r, "X-Content-Type-Options", "nosniff", 7);
    if (strncmp(a->type, "text/html", 9) == 0 || strncmp(a->type, "image/svg", 9) == 0) {
        http_add_header(r, "Content-Security-Policy", csp, sizeof(csp) - 1);
        http_add_header(r, "X-Frame-Options", "DENY", 4);
        http_add_header(r, "Referrer-Policy", "same-origin", 11);
    }
    struct slice inm = http_header(r, "if-none-match");
    if (inm.p && etag_matches(inm, a->etag)) {
        buf_reset(&r->resp_body);
        r->content_type = NULL;
        return 304;
    }
    return http_body(r, 200, a->type, a->data, a->len);
}

int handle_dashboard(struct request *r)
{
    const struct web_asset *a = dashboard_asset(SLICE_LIT("index.html"));
    if (!a)
        return http_error(r, 404, "not_found", NULL, "this build has no dashboard");
    return serve(r, a);
}

int handle_static(struct request *r)
{
    const struct web_asset *a = dashboard_asset(r->params[0]);
    if (!a)
        return http_error(r, 404, "not_found", NULL, "no such file");
    return serve(r, a);
}

int handle_openapi(struct request *r)
{
    const struct web_asset *a = dashboard_asset(SLICE_LIT("openapi.json"));
    if (!a)
        return http_error(r, 404, "not_found", NULL, "this build has no OpenAPI document");
    return serve(r, a);
}

int handle_site_script(struct request *r)
{
    /* Loaded by other sites' pages: also by those that ask every resource
     * to allow it (Cross-Origin-Embedder-Policy) or load it with CORS
     * (a crossorigin or integrity attribute). */
    http_add_header(r, "Cross-Origin-Resource-Policy", "cross-origin", 12);
    http_add_header(r, "Access-Control-Allow-Origin", "*", 1);
    return serve(r, &site_script);
}
