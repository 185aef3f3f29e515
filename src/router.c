/* router.c - one literal route table, and the dispatcher that applies each
 * route's flags (authentication, admin, JSON body) before its handler runs.
 * A path of exactly one segment that no route claims is a short code: the
 * redirect, checked first because it is the hot path. */
#include "router.h"

#include <ctype.h>
#include <llhttp.h>
#include <string.h>

#include "app.h"
#include "codes.h"
#include "err.h"
#include "handlers.h"
#include "links.h"
#include "banned.h"

static const struct route routes[] = {
    /* method   pattern                          handler                 flags */
    {"GET",    "/",                              handle_home,            0},
    {"GET",    "/dashboard",                     handle_dashboard,       0},
    {"GET",    "/static/:file",                  handle_static,          0},
    {"GET",    "/healthz",                       handle_healthz,         0},
    {"GET",    "/readyz",                        handle_readyz,          0},
    {"GET",    "/metrics",                       handle_metrics,         0},
    {"POST",   "/api/links",                     handle_link_create,     ROUTE_AUTH | ROUTE_JSON},
    {"POST",   "/api/links/bulk",                handle_link_bulk,       ROUTE_AUTH | ROUTE_JSON},
    {"GET",    "/api/links",                     handle_link_list,       ROUTE_AUTH},
    {"GET",    "/api/links/top",                 handle_link_top,        ROUTE_AUTH},
    {"GET",    "/api/links/:code",               handle_link_get,        ROUTE_AUTH},
    {"GET",    "/api/links/:code/stats",         handle_link_stats,      ROUTE_AUTH},
    {"GET",    "/api/links/:code/qr",            handle_link_qr,         ROUTE_AUTH},
    {"GET",    "/api/stats",                     handle_stats,           ROUTE_AUTH},
    {"GET",    "/api/export",                    handle_export,          ROUTE_AUTH},
    {"DELETE", "/api/links/:code",               handle_link_delete,     ROUTE_AUTH},
    {"POST",   "/api/links/:code/disable",       handle_link_disable,    ROUTE_ADMIN},
    {"POST",   "/api/links/:code/enable",        handle_link_enable,     ROUTE_ADMIN},
    {"GET",    "/api/admin/blocklist",           handle_blocklist_list,  ROUTE_ADMIN},
    {"POST",   "/api/admin/blocklist",           handle_blocklist_add,   ROUTE_ADMIN | ROUTE_JSON},
    {"DELETE", "/api/admin/blocklist/:host",     handle_blocklist_delete, ROUTE_ADMIN},
};
#define NROUTES ((int)(sizeof(routes) / sizeof(routes[0])))

/* Words no alias may take beyond the table's own first segments: paths that
 * browsers, crawlers and later features ask for. */
static const char *const extra_reserved[] = {
    "admin", "static", "assets", "api", "favicon.ico", "robots.txt", "login", "logout",
    "signin", "signup", "settings", "docs", "health", "status", "www", "qr", "stats",
    "well-known", ".well-known", NULL};

static const char *reserved[NROUTES + sizeof(extra_reserved) / sizeof(extra_reserved[0])];
static char reserved_store[NROUTES][32];
static const char *route_names[NROUTES + 2];
static char route_name_store[NROUTES][64];

static void init_tables(void)
{
    if (route_names[0])
        return;
    int n = 0;
    for (int i = 0; i < NROUTES; i++) {
        const char *p = routes[i].pattern + 1;
        size_t len = strcspn(p, "/");
        if (!len || len >= sizeof(reserved_store[0]))
            continue;
        bool seen = false;
        for (int k = 0; k < n; k++)
            seen = seen || (strlen(reserved[k]) == len && strncmp(reserved[k], p, len) == 0);
        if (seen)
            continue;
        memcpy(reserved_store[n], p, len);
        reserved_store[n][len] = '\0';
        reserved[n] = reserved_store[n];
        n++;
    }
    for (int i = 0; extra_reserved[i]; i++)
        reserved[n++] = extra_reserved[i];
    reserved[n] = NULL;
    route_names[ROUTE_ID_OTHER] = "other";
    route_names[ROUTE_ID_REDIRECT] = "redirect";
    for (int i = 0; i < NROUTES; i++) {
        snprintf(route_name_store[i], sizeof(route_name_store[i]), "%s %s", routes[i].method,
                 routes[i].pattern);
        route_names[i + 2] = route_name_store[i];
    }
}

const char *const *router_reserved(void)
{
    init_tables();
    return reserved;
}

const char *const *router_route_names(int *n)
{
    init_tables();
    *n = NROUTES + 2;
    return route_names;
}

/* Matches 'path' against 'pattern', capturing ':' segments into r->params. */
static bool match(const char *pattern, struct slice path, struct request *r)
{
    const char *p = pattern, *s = path.p, *end = path.p + path.n;
    int np = 0;
    while (*p && s < end) {
        if (*p != '/' || *s != '/')
            return false;
        p++;
        s++;
        const char *seg = s;
        while (s < end && *s != '/')
            s++;
        size_t seglen = (size_t)(s - seg);
        if (*p == ':') {
            if (!seglen || np == HTTP_MAX_PARAMS)
                return false;
            r->params[np++] = (struct slice){seg, seglen};
            while (*p && *p != '/')
                p++;
        } else {
            size_t plen = strcspn(p, "/");
            if (plen != seglen || strncmp(p, seg, plen) != 0)
                return false;
            p += plen;
        }
    }
    return !*p && s == end;
}

static bool is_single_segment(struct slice path)
{
    return path.n > 1 && path.p[0] == '/' && !memchr(path.p + 1, '/', path.n - 1);
}

static bool is_reserved(struct slice seg)
{
    for (const char *const *w = reserved; *w; w++)
        if (slice_ieq(seg, *w))
            return true;
    return false;
}

static int authenticate(struct request *r)
{
    struct slice auth = http_header(r, "authorization");
    if (!auth.p || auth.n < 7 || strncasecmp(auth.p, "Bearer ", 7) != 0) {
        http_add_header(r, "WWW-Authenticate", "Bearer", 6);
        return http_error(r, 401, "unauthorized", NULL,
                          "send an API key as 'Authorization: Bearer KEY'");
    }
    struct slice token = {auth.p + 7, auth.n - 7};
    while (token.n && token.p[0] == ' ') {
        token.p++;
        token.n--;
    }
    int rc = links_authenticate(r->app->links, token, &r->key);
    if (rc == ERR_NOTFOUND) {
        http_add_header(r, "WWW-Authenticate", "Bearer error=\"invalid_token\"", 28);
        return http_error(r, 401, "unauthorized", NULL, "unknown or revoked API key");
    }
    if (rc != ERR_OK) {
        http_add_header(r, "Retry-After", "1", 1);
        return http_error(r, 503, "unavailable", NULL, "the store is unavailable; try again");
    }
    return 0;
}

static int parse_json(struct request *r)
{
    json_error_t err;
    r->json = json_loadb(r->body.p, r->body.n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!r->json)
        return http_error(r, 400, "invalid_json", NULL, "malformed JSON: %s (line %d, column %d)",
                          err.text, err.line, err.column);
    if (!json_is_object(r->json))
        return http_error(r, 400, "invalid_json", NULL, "the body must be a JSON object");
    return 0;
}

int router_dispatch(struct request *r)
{
    init_tables();
    r->json = NULL;
    /* The hot path: GET or HEAD of one path segment that no route owns. */
    if ((r->method == HTTP_GET || r->method == HTTP_HEAD) && is_single_segment(r->path)) {
        struct slice seg = {r->path.p + 1, r->path.n - 1};
        if (!is_reserved(seg)) {
            r->route_id = ROUTE_ID_REDIRECT;
            return handle_redirect(r, seg);
        }
    }
    const char *method = llhttp_method_name((llhttp_method_t)r->method);
    bool path_matched = false;
    char allow[64] = "";
    for (int i = 0; i < NROUTES; i++) {
        const struct route *rt = &routes[i];
        if (!match(rt->pattern, r->path, r))
            continue;
        path_matched = true;
        bool head_ok = r->method == HTTP_HEAD && strcmp(rt->method, "GET") == 0;
        if (strcmp(rt->method, method) != 0 && !head_ok) {
            size_t n = strlen(allow);
            snprintf(allow + n, sizeof(allow) - n, "%s%s", n ? ", " : "", rt->method);
            continue;
        }
        r->route = rt;
        r->route_id = i + 2;
        int status;
        if (rt->flags & (ROUTE_AUTH | ROUTE_ADMIN)) {
            status = authenticate(r);
            if (status)
                return status;
        }
        if ((rt->flags & ROUTE_ADMIN) && !r->key.admin)
            return http_error(r, 403, "forbidden", NULL, "this needs an admin API key");
        if (rt->flags & ROUTE_JSON) {
            status = parse_json(r);
            if (status)
                return status;
        }
        return rt->handler(r);
    }
    if (path_matched) {
        http_add_header(r, "Allow", allow, strlen(allow));
        return http_error(r, 405, "method_not_allowed", NULL, "use %s", allow);
    }
    if (is_single_segment(r->path))
        return http_error(r, 405, "method_not_allowed", NULL, "short links answer GET and HEAD");
    return http_error(r, 404, "not_found", NULL, "no such path");
}
