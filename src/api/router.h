/* router.h - the route table and dispatch.
 *
 * Adding a route:
 *   1. write `int handle_x(struct request *r)` in the api_*.c file of its
 *      resource and declare it in handlers.h;
 *   2. add one line to routes[] in router.c (method, pattern, handler, flags).
 * A compatible API's route names its dialect (struct api_dialect) as a fifth
 * field; its handlers live in compat_<api>.c.
 * A route of one link (/api/links/:code...) finds it through owner.h, which
 * answers another owner's link 404, and is listed in test_rules.c.
 * Its first path segment becomes a reserved word (no alias may take it), its
 * name a label in /metrics; authentication, body parsing and JSON errors are
 * done here, once, for every route. A route runs on a store thread
 * (storeq.h), never on an event loop, unless it is flagged ROUTE_LOOP: only
 * routes that read nothing from the store or Redis may be.
 * A route under /api/, or one flagged ROUTE_CORS, answers browsers of the
 * origins `cors-origins` lists: its path's OPTIONS preflight is answered
 * here, on the event loop and without a key, with the methods of the table's
 * routes for that path; its answers carry the CORS headers (cors.h). */
#ifndef SHORTD_ROUTER_H
#define SHORTD_ROUTER_H

#include "http/http.h"

#define ROUTE_AUTH (1u << 0)    /* needs a valid API key */
#define ROUTE_ADMIN (1u << 1)   /* admin key only (implies ROUTE_AUTH) */
#define ROUTE_JSON (1u << 2)    /* body must be a JSON object; parsed into r->json */
#define ROUTE_LOOP (1u << 3)    /* needs no store: answered on the event loop */
#define ROUTE_CREATE (1u << 4)  /* creates links: the `create` rate limits count it, not `read` */
#define ROUTE_SIGNIN (1u << 6)  /* its 401 is a failed sign-in: the `auth` limit counts it */
#define ROUTE_ANYROLE (1u << 7) /* a viewer's session may write it too (signing out) */
#define ROUTE_INDEX (1u << 11)  /* crawlers may index it: no X-Robots-Tag */
/* A site read token (?token= or a Bearer "st_...") may stand for the key:
 * such a request skips ROUTE_AUTH and its handler checks the token. */
#define ROUTE_SITE_TOKEN (1u << 12)
#define ROUTE_CORS                                                                                 \
    (1u << 5) /* other sites' pages may call it (cors-origins, cors.h); every
                                 * route under /api/ is, flagged or not */
/* The scope a ROUTE_AUTH route needs of its key (store_keys.h's KEY_SCOPE_*),
 * one of these; a ROUTE_ADMIN route needs the admin scope. A key without it
 * is refused 403, in the route's API's shape. */
#define ROUTE_READ (1u << 8)   /* links:read: reads links */
#define ROUTE_WRITE (1u << 9)  /* links:write: creates, edits, deletes links */
#define ROUTE_STATS (1u << 10) /* stats:read: reads analytics */
/* ops: reads this node's health (/api/ops/health, /metrics) and nothing
 * else. Needs the ops scope or an admin key (or an admin's session); a key
 * of the ops scope alone is refused every other route. A ROUTE_OPS route
 * outside /api/ (/metrics) needs no key at all when the listen address is a
 * loopback one, or from an address `metrics-allow` lists. */
#define ROUTE_OPS (1u << 13)

/* Authentication: an API key (Authorization: Bearer), or on shortd's own
 * routes a dashboard session (users.h): its cookie, and on every write
 * (not GET or HEAD) its CSRF token in X-CSRF-Token and a request from the
 * site's own pages (Sec-Fetch-Site: same-origin, or an Origin of this
 * host); else 403 "csrf". A session acts as its user's key row (an admin
 * user's is an admin key); a viewer's writes are refused 403. */

/* A compatible API's ways (YOURLS's, Kutt's...): where a request carries
 * its key and how an error is written. The router authenticates a route
 * of any dialect as it does its own (key cache, store read, the `auth`
 * rate limit counting each refused key) and writes each of its own refusals
 * (no key, a wrong key, 403, 429, 503) through error(). */
struct api_dialect {
    const char *name;
    /* The key's token, decoded into 'buf' (cap bytes) when it must be:
     * true with *token set, false when the request carries none. */
    bool (*token)(const struct request *r, char *buf, size_t cap, struct slice *token);
    bool token_in_body; /* token() may read the body: checked once it is read */
    /* NULL, or, when token() gives none, the key a request proves it holds
     * without carrying it (YOURLS's timestamped signature, a hash of a
     * token derived from the key): called on a store thread, it may read
     * the store. ERR_OK with *key set; ERR_NOTFOUND for a proof that
     * matches no valid key (refused and counted as a wrong key);
     * ERR_INVALID when the request carries no proof either (no key); any
     * other, the store's error (503). */
    int (*prove)(const struct request *r, struct apikey *key);
    /* Writes the answer for one of the router's refusals, in the API's
     * own shape, and returns its status (which may differ from 'status':
     * YOURLS answers a refused key 403). 'code' is shortd's: unauthorized
     * (no key), invalid_key, forbidden, rate_limited, unavailable; and,
     * under 'prefix', method_not_allowed (405) and not_found (404). */
    int (*error)(struct request *r, int status, const char *code, const char *message);
    /* NULL, or the path prefix the API owns ("/rest/"): a path under it
     * that no route serves, or not with this method, is answered 404 or
     * 405 through error(), not in shortd's shape. */
    const char *prefix;
};

struct route {
    const char *method;
    const char *pattern; /* "/api/links/:code": ':' segments are parameters */
    int (*handler)(struct request *r);
    unsigned flags;
    const struct api_dialect *dialect; /* NULL: shortd's own API */
};

/* Routes a complete request: a route, or the redirect at the root path.
 * Returns the status, or HTTP_ASYNC. */
int router_dispatch(struct request *r);

/* At headers-complete, for a request that announces a body: when its route
 * needs a key, checks the key (and the auth rate limit) before the body is
 * read. Returns 0 to read the body, the status of an answer already
 * written into r (401, 403, 429, 503), sent without reading the body, or
 * HTTP_WAIT when the check needs the store: it then ends with
 * http_precheck_resume. */
int router_precheck(struct request *r);

/* The two above, as the HTTP layer takes them (server_new). */
struct server_dispatch;
extern const struct server_dispatch router_entry;

/* A heavy read (a search, an export) of the request's key begins: 0, or
 * 429 with Retry-After written into r when the key runs its share
 * (heavy-reads-per-key) already. Each 0 is matched by one
 * router_heavy_leave(app, key_id) when the read ends. Any thread. */
int router_heavy_enter(struct request *r);
void router_heavy_leave(struct app *app, int64_t key_id);

/* For a route whose needs depend on its input (YOURLS's one route of
 * many actions): 0 when the request's key has 'scope' (KEY_SCOPE_*), else
 * the 403 written into r in the route's API's shape. */
int router_need_scope(struct request *r, unsigned scope);

/* NULL-terminated reserved words: first path segments of the routes and a
 * few names kept for later (lower case). */
const char *const *router_reserved(void);

/* Metrics labels: index = request.route_id. */
const char *const *router_route_names(int *n);

#define ROUTE_ID_OTHER 0
#define ROUTE_ID_REDIRECT 1

#endif
