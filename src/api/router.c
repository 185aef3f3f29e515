/* router.c - one literal route table, and the dispatcher that applies each
 * route's flags (authentication, admin, JSON body) before its handler runs.
 * Rate limits (ratelimit.h) apply around authentication: the `auth` limit
 * per client address before a key is looked at, counting each 401; the
 * `create` and `read` limits per key and per address once it is valid.
 * A path of exactly one segment that no route claims is a short code: the
 * redirect, checked first because it is the hot path.
 * Every route that is not ROUTE_LOOP, the password gate's POST too, runs on
 * a store thread (storeq.h), its authentication and rate limits included
 * (both may read the store or Redis); the connection waits meanwhile, as
 * for any answer that comes later (HTTP_ASYNC). */
#include "api/router.h"

#include <ctype.h>
#include <llhttp.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "http/clientaddr.h"
#include "http/cors.h"
#include "links/codes.h"
#include "base/err.h"
#include "api/handlers.h"
#include "links/links.h"
#include "links/users.h"
#include "http/ratelimit.h"
#include "http/server.h"
#include "store/storeq.h"
#include "store/writer.h"
#include "base/timeutil.h"
#include "base/banned.h"

/* Only a compatible API's routes name a dialect: the rest leave it NULL. */
/* The table is aligned by hand, a column a field: clang-format leaves it. */
/* clang-format off */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct route routes[] = {
    /* method   pattern                          handler                 flags */
    {"GET",    "/",                              handle_home,            ROUTE_LOOP | ROUTE_INDEX},
    {"GET",    "/robots.txt",                    handle_robots,          ROUTE_LOOP | ROUTE_INDEX},
    {"GET",    "/dashboard",                     handle_dashboard,       ROUTE_LOOP},
    {"GET",    "/static/:file",                  handle_static,          ROUTE_LOOP},
    {"GET",    "/s.js",                          handle_site_script,     ROUTE_LOOP},
    {"GET",    "/healthz",                       handle_healthz,         ROUTE_LOOP},
    {"GET",    "/readyz",                        handle_readyz,          0},
    {"GET",    "/metrics",                       handle_metrics,         ROUTE_AUTH | ROUTE_OPS},
    {"GET",    "/api/ops/health",                handle_ops_health,      ROUTE_AUTH | ROUTE_OPS},
    {"POST",   "/api/links",                     handle_link_create,     ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON | ROUTE_CREATE},
    {"POST",   "/api/links/bulk",                handle_link_bulk,       ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON | ROUTE_CREATE},
    {"GET",    "/api/links",                     handle_link_list,       ROUTE_AUTH | ROUTE_READ},
    {"GET",    "/api/links/top",                 handle_link_top,        ROUTE_AUTH | ROUTE_STATS},
    {"GET",    "/api/links/:code",               handle_link_get,        ROUTE_AUTH | ROUTE_READ},
    {"GET",    "/api/links/:code/stats",         handle_link_stats,      ROUTE_AUTH | ROUTE_STATS},
    {"GET",    "/api/links/:code/qr",            handle_link_qr,         ROUTE_AUTH | ROUTE_READ},
    {"GET",    "/api/stats",                     handle_stats,           ROUTE_AUTH | ROUTE_STATS},
    {"GET",    "/api/export",                    handle_export,          ROUTE_AUTH | ROUTE_READ},
    {"DELETE", "/api/links/:code",               handle_link_delete,     ROUTE_AUTH | ROUTE_WRITE},
    {"PATCH",  "/api/links/:code",               handle_link_patch,      ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON},
    {"GET",    "/api/links/:code/history",       handle_link_history,    ROUTE_AUTH | ROUTE_READ},
    {"POST",   "/api/domains",                   handle_domain_add,      ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON},
    {"GET",    "/e",                             handle_beacon,          ROUTE_LOOP},
    {"POST",   "/e",                             handle_beacon,          ROUTE_LOOP},
    {"POST",   "/api/sites",                     handle_site_create,     ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON},
    {"GET",    "/api/sites",                     handle_site_list,       ROUTE_AUTH | ROUTE_READ},
    {"GET",    "/api/sites/:id",                 handle_site_get,        ROUTE_AUTH | ROUTE_READ},
    {"PATCH",  "/api/sites/:id",                 handle_site_patch,      ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON},
    {"DELETE", "/api/sites/:id",                 handle_site_delete,     ROUTE_AUTH | ROUTE_WRITE},
    {"POST",   "/api/sites/:id/tokens",          handle_site_token_create, ROUTE_AUTH | ROUTE_WRITE},
    {"DELETE", "/api/sites/:id/tokens/:token",   handle_site_token_delete, ROUTE_AUTH | ROUTE_WRITE},
    {"GET",    "/api/sites/:id/stats",           handle_site_stats,      ROUTE_AUTH | ROUTE_STATS | ROUTE_SITE_TOKEN},
    {"GET",    "/badge/:file",                   handle_site_badge,      0},
    {"POST",   "/api/keys",                      handle_key_create,      ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON},
    {"GET",    "/api/keys",                      handle_key_list,        ROUTE_AUTH | ROUTE_READ},
    {"DELETE", "/api/keys/:id",                  handle_key_delete,      ROUTE_AUTH | ROUTE_WRITE},
    {"GET",    "/api/domains",                   handle_domain_list,     ROUTE_AUTH | ROUTE_READ},
    {"DELETE", "/api/domains/:host",             handle_domain_delete,   ROUTE_AUTH | ROUTE_WRITE},
    {"PATCH",  "/api/domains/:host",             handle_domain_patch,    ROUTE_AUTH | ROUTE_WRITE | ROUTE_JSON},
    {"POST",   "/api/links/:code/disable",       handle_link_disable,    ROUTE_ADMIN},
    {"POST",   "/api/links/:code/enable",        handle_link_enable,     ROUTE_ADMIN},
    {"GET",    "/api/admin/blocklist",           handle_blocklist_list,  ROUTE_ADMIN},
    {"POST",   "/api/admin/blocklist",           handle_blocklist_add,   ROUTE_ADMIN | ROUTE_JSON},
    {"DELETE", "/api/admin/blocklist/:host",     handle_blocklist_delete, ROUTE_ADMIN},
    {"POST",   "/api/sinks",                     handle_sink_create,     ROUTE_ADMIN | ROUTE_JSON},
    {"GET",    "/api/sinks",                     handle_sink_list,       ROUTE_ADMIN},
    {"GET",    "/api/sinks/:id",                 handle_sink_get,        ROUTE_ADMIN},
    {"PATCH",  "/api/sinks/:id",                 handle_sink_patch,      ROUTE_ADMIN | ROUTE_JSON},
    {"DELETE", "/api/sinks/:id",                 handle_sink_delete,     ROUTE_ADMIN},
    {"POST",   "/api/sinks/:id/rotate-secret",   handle_sink_rotate,     ROUTE_ADMIN},
    {"GET",    "/api/openapi.json",              handle_openapi,         ROUTE_LOOP},
    {"POST",   "/api/session",                   handle_session_create,  ROUTE_SIGNIN | ROUTE_JSON},
    {"GET",    "/api/session",                   handle_session_get,     ROUTE_AUTH},
    {"DELETE", "/api/session",                   handle_session_delete,  ROUTE_AUTH | ROUTE_ANYROLE},
    {"GET",    "/setup",                         handle_dashboard,       ROUTE_LOOP},
    {"GET",    "/api/setup",                     handle_setup_get,       0},
    {"POST",   "/api/setup",                     handle_setup_create,    ROUTE_SIGNIN | ROUTE_JSON},
    {"GET",    "/api/users",                     handle_user_list,       ROUTE_ADMIN},
    {"POST",   "/api/users",                     handle_user_create,     ROUTE_ADMIN | ROUTE_JSON},
    {"PATCH",  "/api/users/:id",                 handle_user_patch,      ROUTE_ADMIN | ROUTE_JSON},
    /* compatible APIs: each answers in its own shape (struct api_dialect) */
    {"GET",    "/yourls-api.php",                handle_yourls,          ROUTE_AUTH | ROUTE_READ | ROUTE_CREATE | ROUTE_CORS, &yourls_dialect},
    {"POST",   "/yourls-api.php",                handle_yourls,          ROUTE_AUTH | ROUTE_READ | ROUTE_CREATE | ROUTE_CORS, &yourls_dialect},
    /* Kutt's API v2 (compat_kutt.c); DELETE .../stats is how the npm `kutt`
     * client asks for stats */
    {"POST",   "/api/v2/links",                  handle_kutt_create,     ROUTE_AUTH | ROUTE_WRITE | ROUTE_CREATE | ROUTE_CORS, &kutt_dialect},
    {"GET",    "/api/v2/links",                  handle_kutt_list,       ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &kutt_dialect},
    {"PATCH",  "/api/v2/links/:id",              handle_kutt_patch,      ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &kutt_dialect},
    {"DELETE", "/api/v2/links/:id",              handle_kutt_delete,     ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &kutt_dialect},
    {"GET",    "/api/v2/links/:id/stats",        handle_kutt_stats,      ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &kutt_dialect},
    {"DELETE", "/api/v2/links/:id/stats",        handle_kutt_stats,      ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &kutt_dialect},
    {"GET",    "/api/v2/users",                  handle_kutt_user,       ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &kutt_dialect},
    {"POST",   "/api/v2/domains",                handle_kutt_domain_add, ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &kutt_dialect},
    {"DELETE", "/api/v2/domains/:id",            handle_kutt_domain_delete, ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &kutt_dialect},
    {"GET",    "/api/v2/health",                 handle_kutt_health,     ROUTE_LOOP | ROUTE_CORS, &kutt_dialect},
    /* Bitly v4 (compat_bitly.c): a bitlink "host/code" is one percent-encoded
     * segment or two; the one-segment routes come first, so that
     * /v4/bitlinks/ENCODED/clicks is not read as host ENCODED, code "clicks". */
    {"POST",  "/v4/shorten",                          handle_bitly_shorten,         ROUTE_AUTH | ROUTE_WRITE | ROUTE_CREATE | ROUTE_CORS, &bitly_dialect},
    {"POST",  "/v4/bitlinks",                         handle_bitly_create,          ROUTE_AUTH | ROUTE_WRITE | ROUTE_CREATE | ROUTE_CORS, &bitly_dialect},
    {"POST",  "/v4/expand",                           handle_bitly_expand,          ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:bitlink",                handle_bitly_get,             ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &bitly_dialect},
    {"PATCH", "/v4/bitlinks/:bitlink",                handle_bitly_patch,           ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:bitlink/clicks",         handle_bitly_clicks,          ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:bitlink/clicks/summary", handle_bitly_clicks_summary,  ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:bitlink/countries",      handle_bitly_countries,       ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:bitlink/referrers",      handle_bitly_referrers,       ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:host/:code",             handle_bitly_get,             ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &bitly_dialect},
    {"PATCH", "/v4/bitlinks/:host/:code",             handle_bitly_patch,           ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:host/:code/clicks",      handle_bitly_clicks,          ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:host/:code/clicks/summary", handle_bitly_clicks_summary, ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:host/:code/countries",   handle_bitly_countries,       ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/bitlinks/:host/:code/referrers",   handle_bitly_referrers,       ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/user",                             handle_bitly_user,            ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/groups",                           handle_bitly_groups,          ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &bitly_dialect},
    {"GET",   "/v4/groups/:group_guid/bitlinks",      handle_bitly_group_bitlinks,  ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &bitly_dialect},
    /* Shlink REST v3 (compat_shlink.c): answers in Shlink's shapes */
    {"POST",   "/rest/v3/short-urls",            handle_shlink_create,   ROUTE_AUTH | ROUTE_WRITE | ROUTE_CREATE | ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/v3/short-urls",            handle_shlink_list,     ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/v3/short-urls/:code",      handle_shlink_get,      ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &shlink_dialect},
    {"PATCH",  "/rest/v3/short-urls/:code",      handle_shlink_edit,     ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &shlink_dialect},
    {"DELETE", "/rest/v3/short-urls/:code",      handle_shlink_delete,   ROUTE_AUTH | ROUTE_WRITE | ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/v3/short-urls/:code/visits", handle_shlink_visits, ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/v3/visits",                handle_shlink_visits_summary, ROUTE_AUTH | ROUTE_STATS | ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/v3/tags",                  handle_shlink_tags,     ROUTE_AUTH | ROUTE_READ | ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/health",                   handle_shlink_health,   ROUTE_CORS, &shlink_dialect},
    {"GET",    "/rest/v3/health",                handle_shlink_health,   ROUTE_CORS, &shlink_dialect},
};
#pragma GCC diagnostic pop
/* clang-format on */
#define NROUTES ((int)(sizeof(routes) / sizeof(routes[0])))

/* Words no alias may take beyond the table's own first segments: paths that
 * browsers, crawlers and later features ask for. */
static const char *const extra_reserved[] = {"admin",       "static",     "assets",      "api",
                                             "favicon.ico", "robots.txt", "login",       "logout",
                                             "signin",      "signup",     "settings",    "docs",
                                             "health",      "status",     "www",         "qr",
                                             "stats",       "well-known", ".well-known", NULL};

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

/* Whether browsers of other origins may call the route (router.h). */
static bool is_cors(const struct route *rt)
{
    return (rt->flags & ROUTE_CORS) || strncmp(rt->pattern, "/api/", 5) == 0;
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

/* The token of 'Authorization: Bearer TOKEN'; false when there is none. */
static bool bearer_token(const struct request *r, struct slice *token)
{
    struct slice auth = http_header(r, "authorization");
    if (!auth.p || auth.n < 7 || strncasecmp(auth.p, "Bearer ", 7) != 0)
        return false;
    *token = (struct slice){auth.p + 7, auth.n - 7};
    while (token->n && token->p[0] == ' ') {
        token->p++;
        token->n--;
    }
    return true;
}

/* The route's dialect; NULL for shortd's own API (and no route). */
static const struct api_dialect *dialect_of(const struct request *r)
{
    return r->route ? r->route->dialect : NULL;
}

/* The request's key token, where its route's API carries it: 'buf' holds
 * it when the dialect had to decode it. */
static bool route_token(const struct request *r, char *buf, size_t cap, struct slice *token)
{
    const struct api_dialect *d = dialect_of(r);
    return d ? d->token(r, buf, cap, token) : bearer_token(r, token);
}

/* A refusal of the router's own (not a handler's), in the route's API's
 * shape: shortd's error object, or the dialect's. */
static int refuse(struct request *r, int status, const char *code, const char *message)
{
    const struct api_dialect *d = dialect_of(r);
    if (d)
        return d->error(r, status, code, message);
    return http_error(r, status, code, NULL, "%s", message);
}

/* 429 for a limit that refused (its headers and Retry-After kept), in the
 * route's API's shape. */
static int rate_refuse(struct request *r, const struct rl_info *info)
{
    int status = ratelimit_refuse(r, info);
    if (!dialect_of(r))
        return status;
    char msg[96];
    snprintf(msg, sizeof(msg), "too many requests; retry in %lld s",
             (long long)(info->retry_after > 0 ? info->retry_after : 1));
    return refuse(r, 429, "rate_limited", msg);
}

/* The token of the session cookie; false when there is none. */
static bool session_cookie(const struct request *r, struct slice *token)
{
    struct slice c = http_header(r, "cookie");
    static const char name[] = "shortd_session=";
    const size_t nn = sizeof(name) - 1;
    for (size_t i = 0; c.p && i < c.n;) {
        while (i < c.n && (c.p[i] == ' ' || c.p[i] == ';'))
            i++;
        size_t end = i;
        while (end < c.n && c.p[end] != ';')
            end++;
        if (end - i > nn && memcmp(c.p + i, name, nn) == 0) {
            *token = (struct slice){c.p + i + nn, end - i - nn};
            return true;
        }
        i = end;
    }
    return false;
}

/* Where a request comes from, as a browser says: this site's own pages
 * (Sec-Fetch-Site: same-origin, or an Origin of this host), another site,
 * or unsaid (no such header: not a browser's page, or a very old one). */
enum site { SITE_UNSAID, SITE_OWN, SITE_FOREIGN };

static enum site site_of(const struct request *r)
{
    struct slice site = http_header(r, "sec-fetch-site");
    if (site.p)
        return slice_eq(site, "same-origin") ? SITE_OWN : SITE_FOREIGN;
    struct slice o = http_header(r, "origin");
    if (!o.p)
        return SITE_UNSAID;
    const char *const schemes[] = {"https://", "http://"};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(schemes[i]);
        if (o.n > n && strncasecmp(o.p, schemes[i], n) == 0)
            return o.n - n == r->host.n && strncasecmp(o.p + n, r->host.p, r->host.n) == 0
                       ? SITE_OWN
                       : SITE_FOREIGN;
    }
    return SITE_FOREIGN;
}

struct touch_job {
    struct wjob job;
    uint8_t hash[32];
    int64_t now;
};

static int touch_run(struct wjob *j, struct store *st)
{
    struct touch_job *t = (struct touch_job *)j;
    int rc = st->ops->session_touch(st, t->hash, t->now);
    return rc == ERR_NOTFOUND ? ERR_OK : rc; /* signed out meanwhile */
}

static void touch_done(struct wjob *j) { free(j); }

/* A session's request, on a store thread: the session and its user, then a
 * write's CSRF token and origin, then a viewer's write refused. The session
 * is marked used through the writer, not waited for. */
static int authenticate_session(struct request *r, struct slice token, bool *refused)
{
    struct app *app = r->app;
    uint8_t key[32];
    links_session_key(app->links, key);
    struct user u;
    bool touch = false;
    int64_t now = now_ms();
    int rc =
        users_session_check(app->store, key, token, now, app->cfg.session_idle * 1000, &u, &touch);
    int status = 0;
    bool write = r->method != HTTP_GET && r->method != HTTP_HEAD;
    /* A session nobody can guess that ended is no attempt to guess one: the
     * `auth` limit does not count it, so a page left open is not locked out. */
    *refused = false;
    if (rc == ERR_NOTFOUND)
        status = http_error(r, 401, "session_ended", NULL, "the session has ended: sign in again");
    else if (rc != ERR_OK)
        status = http_unavailable(r, NULL);
    else if (write && site_of(r) != SITE_OWN)
        status = http_error(r, 403, "csrf", NULL,
                            "a signed-in write must come from this site's own pages");
    else if (write && !users_csrf_ok(key, token, http_header(r, "x-csrf-token")))
        status = http_error(r, 403, "csrf", "X-CSRF-Token",
                            "send the session's csrf_token (GET /api/session) in X-CSRF-Token");
    else if (write && u.role == USER_VIEWER && !(r->route->flags & ROUTE_ANYROLE))
        status = http_error(r, 403, "forbidden", NULL, "a viewer may read, not change");
    if (status == 0) {
        r->user_id = u.id;
        r->user_role = u.role;
        memcpy(r->user_name, u.name, sizeof(r->user_name));
        r->session = token;
        memset(&r->key, 0, sizeof(r->key));
        r->key.id = u.key_id;
        r->key.admin = u.role == USER_ADMIN;
        /* A session may do all its user's role allows (links_key_cap). */
        r->key.scopes = KEY_SCOPES_ALL;
        r->key.role = KEY_ROLE(u.role);
        r->key.user_id = u.id;
        r->key.owner = u.key_id;
        r->key.created_at = u.created_at;
        snprintf(r->key.name, sizeof(r->key.name), "user:%s", u.name);
    }
    if (status == 0 && touch) {
        struct touch_job *t = calloc(1, sizeof(*t));
        if (!t)
            abort();
        users_session_hash(key, token, t->hash);
        t->now = now;
        t->job.run = touch_run;
        t->job.done = touch_done;
        t->job.single_write = true;
        writer_submit(app->writer, &t->job);
    }
    sodium_memzero(key, sizeof(key));
    sodium_memzero(&u, sizeof(u));
    return status;
}

/* On a store thread: a key this node does not hold is read from the store.
 * *refused is set when the key is missing or wrong (the `auth` limit
 * counts those), whatever status the route's API gives that. */
static int authenticate(struct request *r, bool *refused)
{
    const struct api_dialect *d = dialect_of(r);
    char buf[KEY_TOKEN_LEN + 1];
    struct slice token;
    *refused = false;
    r->user_id = 0;
    int rc;
    if (route_token(r, buf, sizeof(buf), &token)) {
        rc = links_authenticate_cached(r->app->links, token, &r->key);
        if (rc == ERR_AGAIN) /* not known here yet */
            rc = links_authenticate(r->app->links, token, &r->key);
    } else if (!d && session_cookie(r, &token)) {
        return authenticate_session(r, token, refused);
    } else {
        rc = d && d->prove ? d->prove(r, &r->key) : ERR_INVALID;
    }
    if (rc == ERR_INVALID) {
        *refused = true;
        if (d)
            return refuse(r, 401, "unauthorized", "no API key");
        http_add_header(r, "WWW-Authenticate", "Bearer", 6);
        return http_error(r, 401, "unauthorized", NULL,
                          "send an API key as 'Authorization: Bearer KEY'");
    }
    if (rc == ERR_NOTFOUND) {
        *refused = true;
        if (d)
            return refuse(r, 401, "invalid_key", "unknown or revoked API key");
        http_add_header(r, "WWW-Authenticate", "Bearer error=\"invalid_token\"", 28);
        return http_error(r, 401, "unauthorized", NULL, "unknown or revoked API key");
    }
    if (rc != ERR_OK) {
        if (d) {
            http_add_header(r, "Retry-After", "1", 1);
            return refuse(r, 503, "unavailable", "the store is unavailable; try again");
        }
        return http_unavailable(r, NULL);
    }
    return 0;
}

/* The client's address as rate limit key material (ratelimit.c hashes it). */
static size_t addr_key(const struct request *r, char *out, size_t cap)
{
    struct client_ip ip;
    clientaddr_of(r, &ip);
    return ratelimit_key_addr(&ip, out, cap);
}

/* Authentication under the `auth` limit: a client over it is turned away
 * before its key is looked at (so a guess past the limit proves nothing), and
 * every 401 counts against its address. */
static int limited(struct request *r, int (*check)(struct request *r, bool *refused))
{
    struct ratelimit *rl = r->app->ratelimit;
    bool refused;
    if (!ratelimit_enabled(rl, RL_AUTH))
        return check(r, &refused);
    char key[64];
    size_t kn = addr_key(r, key, sizeof(key));
    int64_t now = now_ms();
    struct rl_info info;
    if (!ratelimit_peek(rl, RL_AUTH, key, kn, now, &info))
        return rate_refuse(r, &info);
    size_t before = r->resp_headers.len;
    int status = check(r, &refused);
    if (!refused)
        return status;
    if (!ratelimit_take(rl, RL_AUTH, key, kn, now, &info)) {
        buf_truncate(&r->resp_headers, before); /* the refusal's WWW-Authenticate */
        return rate_refuse(r, &info);
    }
    ratelimit_headers(r, &info);
    return status;
}

static int authenticate_limited(struct request *r) { return limited(r, authenticate); }

static int parse_json(struct request *r);

/* A sign-in (ROUTE_SIGNIN): its handler's 401 is a refused attempt.
 * Another site's page may not sign a browser in (to an account of the
 * attacker's choosing); a script, which says no site, may. */
static int sign_in(struct request *r, bool *refused)
{
    *refused = false;
    if (site_of(r) == SITE_FOREIGN)
        return http_error(r, 403, "csrf", NULL, "a sign-in must come from this site's own pages");
    int status = parse_json(r);
    if (!status)
        status = r->route->handler(r);
    *refused = status == 401;
    return status;
}

/* The `create` limits of a ROUTE_CREATE request, the `read` ones of any
 * other authenticated request, per key and per client address (all off by
 * default). */
static int limit_authenticated(struct request *r)
{
    struct ratelimit *rl = r->app->ratelimit;
    bool create = r->route->flags & ROUTE_CREATE;
    enum rl_class by_key = create ? RL_CREATE_KEY : RL_READ_KEY;
    enum rl_class by_addr = create ? RL_CREATE_ADDR : RL_READ_ADDR;
    if (!ratelimit_enabled(rl, by_key) && !ratelimit_enabled(rl, by_addr))
        return 0;
    int64_t now = now_ms();
    char key[64];
    struct rl_info k, a = {0};
    size_t kn = ratelimit_key_apikey(r->key.id, key, sizeof(key));
    bool ok = ratelimit_take(rl, by_key, key, kn, now, &k);
    if (ok) {
        kn = addr_key(r, key, sizeof(key));
        ok = ratelimit_take(rl, by_addr, key, kn, now, &a);
    }
    /* The tighter limit speaks: the one that refused, or the one with less left. */
    const struct rl_info *info = &k;
    if (a.limit && (!k.limit || (!ok ? a.retry_after > 0 : a.remaining < k.remaining)))
        info = &a;
    if (!ok)
        return rate_refuse(r, info);
    ratelimit_headers(r, info);
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


/* The scope the route needs (KEY_SCOPE_*), or 0. */
static unsigned route_scope(const struct route *rt)
{
    if (rt->flags & ROUTE_ADMIN)
        return KEY_SCOPE_ADMIN;
    if (rt->flags & ROUTE_WRITE)
        return KEY_SCOPE_LINKS_WRITE;
    if (rt->flags & ROUTE_STATS)
        return KEY_SCOPE_STATS_READ;
    return rt->flags & ROUTE_READ ? KEY_SCOPE_LINKS_READ : 0;
}

static int scope_refuse(struct request *r, unsigned scope)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "this API key lacks the '%s' scope", links_scope_name(scope));
    return refuse(r, 403, "forbidden", msg);
}

/* The one place where what a valid key may do is decided: its rights
 * (links_key_rights: its scopes within its user's role) replace its scopes
 * in r->key, and r->key.admin says whether they hold admin: an admin key
 * without the admin scope acts as any other key (its owner's links only:
 * owner.h). Then the route's scope is checked. 0, or the 403 written into r. */
static int check_rights(struct request *r)
{
    bool admin_key = links_key_cap(&r->key) & KEY_SCOPE_ADMIN;
    r->key.scopes = links_key_rights(&r->key);
    r->key.admin = r->key.scopes & KEY_SCOPE_ADMIN;
    /* A key not read from the store acts on its own links; so does a key
     * limited to a domain, even a user's: every link it sees is one it made,
     * on its domain, never the user's links on other domains. */
    if (!r->key.owner || r->key.domain[0])
        r->key.owner = r->key.id;
    if ((r->route->flags & ROUTE_ADMIN) && !admin_key)
        return refuse(r, 403, "forbidden", "this needs an admin API key");
    /* The node's health: the ops scope, or admin rights. */
    if (r->route->flags & ROUTE_OPS)
        return r->key.scopes & (KEY_SCOPE_OPS | KEY_SCOPE_ADMIN) ? 0
                                                                 : scope_refuse(r, KEY_SCOPE_OPS);
    /* A key of the ops scope alone reads the node's health, nothing else:
     * not even the routes that need no scope (its session's details). */
    if (!(r->key.scopes & ~KEY_SCOPE_OPS))
        return refuse(r, 403, "forbidden",
                      "this API key has only the 'ops' scope: it reads /api/ops/health and "
                      "/metrics, nothing else");
    unsigned need = route_scope(r->route);
    return need & ~r->key.scopes ? scope_refuse(r, need) : 0;
}

int router_need_scope(struct request *r, unsigned scope)
{
    return scope & ~r->key.scopes ? scope_refuse(r, scope) : 0;
}

/* Whether a ROUTE_OPS route outside /api/ (/metrics) is open to this
 * request without a key (router.h). */
static bool ops_open(const struct request *r, const struct route *rt)
{
    if (!(rt->flags & ROUTE_OPS) || !strncmp(rt->pattern, "/api/", 5))
        return false;
    if (r->app->metrics_open)
        return true;
    if (!r->app->metrics_allow)
        return false;
    struct client_ip ip;
    clientaddr_of(r, &ip);
    return clientaddr_trusted(r->app->metrics_allow, &ip);
}

/* A matched route's flags, then its handler: on a store thread unless the
 * route is ROUTE_LOOP. */
static int run_route(struct request *r)
{
    const struct route *rt = r->route;
    int status;
    if (rt->flags & ROUTE_SIGNIN)
        return limited(r, sign_in);
    struct slice site_token;
    bool by_token = (rt->flags & ROUTE_SITE_TOKEN) && site_token_in(r, &site_token);
    if ((rt->flags & (ROUTE_AUTH | ROUTE_ADMIN)) && !by_token) {
        status = r->authed ? 0 : authenticate_limited(r);
        r->authed = false;
        if (status)
            return status;
        links_key_used(r->app->links, r->key.id);
        status = limit_authenticated(r);
        if (status)
            return status;
        status = check_rights(r);
        if (status)
            return status;
    }
    if (rt->flags & ROUTE_JSON) {
        status = parse_json(r);
        if (status)
            return status;
    }
    return rt->handler(r);
}

static int gate_post(struct request *r) { return handle_gate_post(r, r->code); }

/* A precheck's key is good: 403 for a route it may not use (check_rights),
 * else 0 and the request is authenticated. */
static int prechecked(struct request *r)
{
    int status = check_rights(r);
    if (status)
        return status;
    r->authed = true;
    return 0;
}

/* Every answer but a short link's, the home page's and robots.txt: the API
 * and the dashboard are no pages for a search engine (ROUTE_INDEX). */
static void no_index(struct request *r) { http_add_header(r, "X-Robots-Tag", "noindex", 7); }

/* A precheck's refusal is an answer of its route: the CORS headers too. */
static int precheck_refused(struct request *r, int status)
{
    if (status > 0 && is_cors(r->route))
        cors_add_headers(r);
    if (status > 0 && !(r->route->flags & ROUTE_INDEX))
        no_index(r);
    return status;
}

/* router_precheck's check, on a store thread. */
static int precheck(struct request *r)
{
    int status = authenticate_limited(r);
    return precheck_refused(r, status ? status : prechecked(r));
}

/* ---- on a store thread ---- */

struct route_job {
    struct storeq_job job;
    struct storeq_wait wait;
    struct task task;
    struct storeq *q;
    struct request *r; /* not to be touched once the handler said HTTP_ASYNC */
    struct worker *w;
    int (*fn)(struct request *r);
    int status;
    int kind; /* OFF_* */
};

#define OFF_API 0      /* a route's answer */
#define OFF_GATE 1     /* the password gate's: in plain text */
#define OFF_PRECHECK 2 /* router_precheck's: ends with http_precheck_resume */

/* The gate's answer is a browser's, in plain text; any other, the API's
 * (in the route's own shape). */
static int unavailable(struct request *r, bool text)
{
    if (text)
        return http_unavailable_text(r);
    if (!dialect_of(r))
        return http_unavailable(r, "the store is busy or unavailable; try again");
    http_add_header(r, "Retry-After", "1", 1);
    return refuse(r, 503, "unavailable", "the store is busy or unavailable; try again");
}

/* The loop, after the handler ran: its answer, unless it answers later
 * (HTTP_ASYNC: a write, say, whose answer may be sent, and its connection
 * gone, before this runs). */
static void route_done(struct task *t)
{
    struct route_job *j = (struct route_job *)((char *)t - offsetof(struct route_job, task));
    storeq_wait_end(j->q, &j->wait);
    if (j->kind == OFF_PRECHECK)
        http_precheck_resume(j->r, j->status);
    else if (j->status != HTTP_ASYNC)
        http_resume(j->r, j->status);
    free(j);
}

static void route_job_run(struct storeq_job *sj, bool cancelled)
{
    struct route_job *j = (struct route_job *)sj;
    if (cancelled) { /* answered already, by route_timeout */
        free(j);
        return;
    }
    j->status = j->fn(j->r);
    worker_post(j->w, &j->task);
}

/* The loop, at the deadline: a job not yet begun is answered 503 here; one
 * that has begun answers when its store calls end (each is bounded). */
static void route_timeout(struct storeq_wait *w)
{
    struct route_job *j = (struct route_job *)((char *)w - offsetof(struct route_job, wait));
    struct request *r = j->r;
    if (!storeq_cancel(&j->job))
        return;
    int status = unavailable(r, j->kind == OFF_GATE);
    if (j->kind == OFF_PRECHECK)
        http_precheck_resume(r, precheck_refused(r, status));
    else
        http_resume(r, status);
}

/* Runs fn(r) on a store thread; returns HTTP_ASYNC (HTTP_WAIT for a
 * precheck), or 503 when too many requests wait for one already. Without
 * store threads (the unit tests' in-process requests), runs it here. */
static int offload(struct request *r, int (*fn)(struct request *r), int kind)
{
    struct storeq *q = r->app->storeq;
    if (!q)
        return fn(r); /* for OFF_PRECHECK too: 0 or the refusal */
    struct route_job *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    j->q = q;
    j->r = r;
    j->w = request_worker(r);
    j->fn = fn;
    j->kind = kind;
    j->job.run = route_job_run;
    j->task.fn = route_done;
    j->wait.on_timeout = route_timeout;
    if (!storeq_submit(q, &j->job)) {
        free(j);
        return unavailable(r, kind == OFF_GATE);
    }
    storeq_wait_start(q, &j->wait);
    return kind == OFF_PRECHECK ? HTTP_WAIT : HTTP_ASYNC;
}

int router_heavy_enter(struct request *r)
{
    struct storeq *q = r->app->storeq;
    if (!q || storeq_heavy_enter(q, r->key.id))
        return 0;
    http_add_header(r, "Retry-After", "1", 1);
    return http_error(r, 429, "too_many_heavy_reads", NULL,
                      "this key already runs %lld searches or exports; try again when one ends",
                      (long long)r->app->cfg.heavy_reads_per_key);
}

void router_heavy_leave(struct app *app, int64_t key_id)
{
    if (app->storeq)
        storeq_heavy_leave(app->storeq, key_id);
}

/* router_precheck's check on the event loop, when it reads nothing: a key
 * this node holds (links_authenticate_cached), from an address this node
 * does not know to be over the auth limit (ratelimit_peek asks no one
 * else). 0 (or 403) when so decided; -1 when a store thread must decide
 * (an unknown key, or a 401 that counts against the limit). */
static int precheck_here(struct request *r)
{
    char buf[KEY_TOKEN_LEN + 1];
    struct slice token;
    if (!route_token(r, buf, sizeof(buf), &token) ||
        links_authenticate_cached(r->app->links, token, &r->key) != ERR_OK)
        return -1;
    struct ratelimit *rl = r->app->ratelimit;
    if (ratelimit_enabled(rl, RL_AUTH)) {
        char key[64];
        size_t kn = addr_key(r, key, sizeof(key));
        struct rl_info info;
        if (!ratelimit_peek(rl, RL_AUTH, key, kn, now_ms(), &info))
            return -1;
    }
    return prechecked(r);
}

int router_precheck(struct request *r)
{
    init_tables();
    r->authed = false;
    if (is_single_segment(r->path))
        return 0; /* a short code: no key (the password gate reads its body) */
    const char *method = llhttp_method_name((llhttp_method_t)r->method);
    for (int i = 0; i < NROUTES; i++) {
        const struct route *rt = &routes[i];
        if (strcmp(rt->method, method) != 0 || !match(rt->pattern, r->path, r))
            continue;
        if (!(rt->flags & (ROUTE_AUTH | ROUTE_ADMIN)) || ops_open(r, rt))
            return 0;
        if (rt->dialect && rt->dialect->token_in_body)
            return 0; /* its key may be in the body: checked once that is read */
        r->route = rt;
        r->route_id = i + 2;
        int status = precheck_here(r);
        return status >= 0 ? precheck_refused(r, status) : offload(r, precheck, OFF_PRECHECK);
    }
    return 0;
}

/* The compatible API that owns 'path' (struct api_dialect's prefix), or NULL. */
static const struct api_dialect *path_dialect(struct slice path)
{
    for (int i = 0; i < NROUTES; i++) {
        const struct api_dialect *d = routes[i].dialect;
        if (d && d->prefix && path.n >= strlen(d->prefix) &&
            memcmp(path.p, d->prefix, strlen(d->prefix)) == 0)
            return d;
    }
    return NULL;
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
    if (r->method == HTTP_POST && is_single_segment(r->path)) {
        struct slice seg = {r->path.p + 1, r->path.n - 1};
        if (!is_reserved(seg)) {
            r->route_id = ROUTE_ID_REDIRECT;
            r->code = seg;
            return offload(r, gate_post, OFF_GATE);
        }
    }
    const char *method = llhttp_method_name((llhttp_method_t)r->method);
    bool path_matched = false, cors = false;
    char allow[64] = "";
    for (int i = 0; i < NROUTES; i++) {
        const struct route *rt = &routes[i];
        if (!match(rt->pattern, r->path, r))
            continue;
        path_matched = true;
        cors = cors || is_cors(rt);
        bool head_ok = r->method == HTTP_HEAD && strcmp(rt->method, "GET") == 0;
        if (strcmp(rt->method, method) != 0 && !head_ok) {
            size_t n = strlen(allow);
            snprintf(allow + n, sizeof(allow) - n, "%s%s", n ? ", " : "", rt->method);
            continue;
        }
        r->route = rt;
        r->route_id = i + 2;
        if (is_cors(rt))
            cors_add_headers(r);
        if (!(rt->flags & ROUTE_INDEX))
            no_index(r);
        if (ops_open(r, rt)) /* needs no key, reads no store: on the loop */
            return rt->handler(r);
        if (!(rt->flags & ROUTE_LOOP))
            return offload(r, run_route, OFF_API);
        return run_route(r);
    }
    /* A browser's preflight: answered here, with no key and no store. */
    if (cors && r->method == HTTP_OPTIONS && http_header(r, "origin").p)
        return cors_preflight(r, allow);
    const struct api_dialect *dialect = path_dialect(r->path);
    no_index(r);
    if (path_matched) {
        if (cors)
            cors_add_headers(r);
        http_add_header(r, "Allow", allow, strlen(allow));
        if (dialect) {
            char msg[80];
            snprintf(msg, sizeof(msg), "use %s", allow);
            return dialect->error(r, 405, "method_not_allowed", msg);
        }
        return http_error(r, 405, "method_not_allowed", NULL, "use %s", allow);
    }
    if (dialect)
        return dialect->error(r, 404, "not_found", "no such path");
    /* A reserved word that no route serves (robots.txt, favicon.ico, admin...)
     * is no short link either: nothing is there, whatever the method. */
    if (is_single_segment(r->path) && !is_reserved((struct slice){r->path.p + 1, r->path.n - 1}))
        return http_error(r, 405, "method_not_allowed", NULL, "short links answer GET and HEAD");
    return handle_no_route(r);
}

const struct server_dispatch router_entry = {.route = router_dispatch, .precheck = router_precheck};
