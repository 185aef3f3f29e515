/* compat_bitly.c - Bitly's API v4, so that its SDKs and the tools built on
 * them work against shortd with nothing changed but the base URL and the
 * token.
 *
 * The shapes are those of Bitly API v4.0.0 as its OpenAPI document
 * (dev.bitly.com/api-reference) describes them: the bitlink object
 * (BitlinkBody, ShortenBitlinkBody), ExpandedBitlink, Clicks and
 * ClicksSummary, ClickMetrics (countries, referrers), User, Groups, and the Error object {message, description,
 * resource, errors: [{field, message, error_code}]}. Times are written as
 * Bitly writes them, "2006-01-02T15:04:05+0000".
 *
 * The key is a shortd API key, sent as Bitly's access token:
 * `Authorization: Bearer KEY`, or the bare token in that header (the npm
 * `bitly` SDK sends it so). Each key is one Bitly group, its guid a stable
 * function of the key's id. A bitlink is "host/code", in one path segment
 * (percent-encoded, as Bitly's own SDKs send it) or two; its host may be
 * shortd's own, the link's custom domain, or bit.ly (the SDKs rewrite every
 * short link to bit.ly/CODE), and only the code finds the link.
 *
 * Links made here are ordinary links: links_parse and links_create (the
 * same rules as POST /api/links; "reuse", as Bitly answers a URL the group
 * shortened already with its existing bitlink, 200), the group-commit writer
 * (apijob.h) and link_changed after the commit. Where a rule of shortd's
 * refuses what Bitly would take (archiving, deep links, a unit other than
 * day), the client gets Bitly's error for it. */
#include <ctype.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "api/idem.h"
#include "api/owner.h"
#include "api/report.h"
#include "api/router.h"
#include "app/app.h"
#include "base/err.h"
#include "base/jsonout.h"
#include "base/pct.h"
#include "base/timeutil.h"
#include "clicks/analytics.h"
#include "links/links.h"
#include "redirect/tiers.h"
#include "base/banned.h"

#define BITLY_DEFAULT_HOST "bit.ly" /* the domain Bitly's SDKs send by default */
#define BITLY_TIME_MAX 25           /* "2006-01-02T15:04:05+0000" */
#define GUID_LEN 11                 /* "Ba1bc23dE4F" */
#define BITLINK_MAX 512             /* bytes of a decoded bitlink */
#define PARAM_MAX 64                /* bytes of a decoded query value */

/* ---- what every answer shares ---- */

/* "2006-01-02T15:04:05+0000", Bitly's form of a time (UTC). */
static void bitly_time(int64_t ms, char out[BITLY_TIME_MAX])
{
    char t[RFC3339_MAX];
    rfc3339_format(ms, t);
    memcpy(out, t, 19);
    memcpy(out + 19, "+0000", 6);
}

/* A stable guid for key 'id': 'prefix' (B for a group, O for its
 * organization) and base62 characters of a hash of the id. */
static void guid_of(int64_t id, char prefix, char out[GUID_LEN + 1])
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    char in[48];
    int n = snprintf(in, sizeof(in), "shortd-bitly-group:%lld", (long long)id);
    uint8_t h[GUID_LEN];
    crypto_generichash(h, sizeof(h), (const uint8_t *)in, (size_t)n, NULL, 0);
    out[0] = prefix;
    for (int i = 1; i < GUID_LEN; i++)
        out[i] = b62[h[i] % 62];
    out[GUID_LEN] = '\0';
}

/* Which of Bitly's resources a route serves: the `resource` of its errors. */
static const char *resource_of(const struct request *r)
{
    const char *p = r->route ? r->route->pattern : "";
    if (strncmp(p, "/v4/user", 8) == 0)
        return "user";
    if (strncmp(p, "/v4/groups", 10) == 0)
        return "groups";
    return "bitlinks";
}

/* The resource of a path no route serves (or not with this method): its
 * segment after /v4/ ("organizations" for /v4/organizations/...), as Bitly
 * names it; /v4/shorten and /v4/expand are its "bitlinks". */
static json_t *path_resource(const struct request *r)
{
    struct slice p = r->path;
    size_t skip = strlen("/v4/");
    if (p.n <= skip)
        return json_string("");
    const char *s = p.p + skip;
    const char *slash = memchr(s, '/', p.n - skip);
    size_t n = slash ? (size_t)(slash - s) : p.n - skip;
    if ((n == 7 && !memcmp(s, "shorten", 7)) || (n == 6 && !memcmp(s, "expand", 6)))
        return json_string("bitlinks");
    json_t *name = json_stringn(s, n);
    return name ? name : json_string(""); /* not UTF-8 */
}

/* Bitly's error object: 'message' its code (NOT_FOUND, INVALID_ARG_...),
 * 'field' (or NULL) the one field error it lists. */
static json_t *fail_doc(const struct request *r, const char *message, const char *description,
                        const char *field, const char *error_code)
{
    json_t *o = json_pack("{s:s,s:s,s:s}", "message", message, "description", description,
                          "resource", resource_of(r));
    if (field)
        json_object_set_new(o, "errors",
                            json_pack("[{s:s,s:s,s:s}]", "field", field, "message", description,
                                      "error_code", error_code));
    return o;
}

static int fail(struct request *r, int status, const char *message, const char *description,
                const char *field, const char *error_code)
{
    return http_json(r, status, fail_doc(r, message, description, field, error_code));
}

static int not_found(struct request *r)
{
    return fail(r, 404, "NOT_FOUND", "The requested bitlink was not found.", NULL, NULL);
}

static int unavailable(struct request *r)
{
    http_add_header(r, "Retry-After", "1", 1);
    return fail(r, 503, "TEMPORARILY_UNAVAILABLE", "The store is unavailable; try again.", NULL,
                NULL);
}

/* The router's refusals (bitly_dialect.error): Bitly answers a missing or
 * wrong token 403 FORBIDDEN; a path under /v4/ that no route serves 404
 * NOT_FOUND, one served with other methods 405 METHOD_NOT_ALLOWED (the
 * router has set its Allow header), both naming the path's resource. */
static int bitly_error(struct request *r, int status, const char *code, const char *message)
{
    bool unserved = strcmp(code, "not_found") == 0;
    if (unserved || strcmp(code, "method_not_allowed") == 0) {
        const char *description = unserved
                                      ? "The requested resource was not found."
                                      : "The requested method is not allowed for this resource.";
        return http_json(r, unserved ? 404 : 405,
                         json_pack("{s:s,s:s,s:o}", "message",
                                   unserved ? "NOT_FOUND" : "METHOD_NOT_ALLOWED", "description",
                                   description, "resource", path_resource(r)));
    }
    if (strcmp(code, "rate_limited") == 0)
        return fail(r, 429, "RATE_LIMIT_EXCEEDED", message, NULL, NULL);
    if (strcmp(code, "unavailable") == 0)
        return fail(r, 503, "TEMPORARILY_UNAVAILABLE", message, NULL, NULL);
    if (strcmp(code, "unauthorized") == 0 || strcmp(code, "invalid_key") == 0 ||
        strcmp(code, "forbidden") == 0)
        return fail(r, 403, "FORBIDDEN", message, NULL, NULL);
    return fail(r, status, "INTERNAL_ERROR", message, NULL, NULL);
}

/* `Authorization: Bearer KEY`, or the bare KEY there. */
static bool bitly_token(const struct request *r, char *buf, size_t cap, struct slice *token)
{
    (void)buf;
    (void)cap;
    struct slice a = http_header(r, "authorization");
    if (!a.p)
        return false;
    if (a.n >= 7 && strncasecmp(a.p, "Bearer ", 7) == 0) {
        a.p += 7;
        a.n -= 7;
    }
    while (a.n && a.p[0] == ' ') {
        a.p++;
        a.n--;
    }
    if (!a.n)
        return false;
    *token = a;
    return true;
}

const struct api_dialect bitly_dialect = {
    .name = "bitly",
    .token = bitly_token,
    .token_in_body = false,
    .error = bitly_error,
    .prefix = "/v4/",
};

/* ---- bitlinks and hosts ---- */

/* The host of the base URL ("sho.rt", "127.0.0.1:8080"). */
static struct slice base_host(const struct app *app)
{
    const char *b = app->cfg.base_url;
    const char *s = strstr(b, "://");
    s = s ? s + 3 : b;
    return (struct slice){s, strcspn(s, "/")};
}

static bool host_is(struct slice h, const char *name)
{
    return name && strlen(name) == h.n && strncasecmp(h.p, name, h.n) == 0;
}

/* Whether a short host names shortd's own short links: Bitly's default
 * (what the SDKs send unless told) or the base URL's host. */
static bool host_is_default(const struct app *app, struct slice h)
{
    struct slice b = base_host(app);
    return host_is(h, BITLY_DEFAULT_HOST) || (h.n == b.n && strncasecmp(h.p, b.p, b.n) == 0);
}

/* A bitlink "host/code" (or a short URL with its scheme), split. */
struct bitlink {
    char host[BITLINK_MAX];
    char code[CODE_MAX + 1];
};

static bool bitlink_split(const char *s, size_t n, struct bitlink *b)
{
    const char *sch = memmem(s, n, "://", 3);
    if (sch) {
        n -= (size_t)(sch + 3 - s);
        s = sch + 3;
    }
    const char *slash = memchr(s, '/', n);
    if (!slash || slash == s || (size_t)(slash - s) >= sizeof(b->host))
        return false;
    size_t hn = (size_t)(slash - s), cn = n - hn - 1;
    if (!code_is_plausible(slash + 1, cn))
        return false;
    memcpy(b->host, s, hn);
    b->host[hn] = '\0';
    memcpy(b->code, slash + 1, cn);
    b->code[cn] = '\0';
    return true;
}

/* The route's bitlink: one percent-encoded parameter, or host and code. */
static bool bitlink_param(const struct request *r, struct bitlink *b)
{
    char dec[BITLINK_MAX];
    bool two = strstr(r->route->pattern, ":code") != NULL;
    struct slice p = r->params[0];
    long n = pct_form_decode(p.p, p.n, dec, sizeof(dec) - 1);
    if (n < 0)
        return false;
    if (two) {
        struct slice c = r->params[1];
        if ((size_t)n + 1 + c.n >= sizeof(dec))
            return false;
        dec[n++] = '/';
        long m = pct_form_decode(c.p, c.n, dec + n, sizeof(dec) - 1 - (size_t)n);
        if (m < 0)
            return false;
        n += m;
    }
    return bitlink_split(dec, (size_t)n, b);
}

/* Whether bitlink host 'h' may name link 'l'. */
static bool host_fits(const struct app *app, const char *h, const struct link *l)
{
    struct slice hs = {h, strlen(h)};
    return host_is_default(app, hs) || (l->domain && strcasecmp(h, l->domain) == 0);
}

/* A link the key may see, live or not, that bitlink 'b' names: ERR_OK,
 * ERR_NOTFOUND (none, another owner's, a deleted one, another host), or the
 * store's error. */
static int bitlink_find(const struct app *app, struct store *st, const struct bitlink *b,
                        int64_t scope, struct link *l)
{
    int rc = owner_link_get(st, b->code, scope, l);
    if (rc == ERR_OK && (l->state == LINK_DELETED || !l->url || !host_fits(app, b->host, l))) {
        link_release(l);
        rc = ERR_NOTFOUND;
    }
    return rc;
}

/* For a read: the route's link, or the status of the answer written. */
static int route_link(struct request *r, struct link *l)
{
    struct bitlink b;
    if (!bitlink_param(r, &b))
        return not_found(r);
    int rc = bitlink_find(r->app, r->app->store, &b, owner_scope(r), l);
    if (rc == ERR_NOTFOUND)
        return not_found(r);
    return rc == ERR_OK ? 0 : unavailable(r);
}

/* The bitlink object; 'full' adds what GET and PATCH answer beyond /v4/shorten's. */
static json_t *bitlink_json(const struct app *app, const struct link *l, bool full)
{
    struct buf su = BUF_INIT;
    link_short_url(&su, app->cfg.base_url, l->code, l->domain);
    const char *id = strstr(su.p, "://");
    id = id ? id + 3 : su.p;
    char created[BITLY_TIME_MAX], guid[GUID_LEN + 1];
    bitly_time(l->created_at, created);
    guid_of(l->owner, 'B', guid);
    json_t *tags = l->tags ? json_loads(l->tags, 0, NULL) : NULL;
    struct buf group = BUF_INIT;
    buf_printf(&group, "%s/v4/groups/%s", app->cfg.base_url, guid);
    json_t *o = json_pack("{s:s,s:s,s:s,s:[],s:s,s:b,s:o,s:[],s:{s:s}}", "created_at", created,
                          "id", id, "link", su.p, "custom_bitlinks", "long_url", l->url, "archived",
                          0, "tags", tags ? tags : json_array(), "deeplinks", "references", "group",
                          group.p);
    if (full)
        json_object_set_new(o, "title", l->title ? json_string(l->title) : json_null());
    buf_release(&su);
    buf_release(&group);
    return o;
}

/* The request body as a JSON object, or NULL with Bitly's 400 written. */
static json_t *body_object(struct request *r, int *status)
{
    json_t *o = json_loadb(r->body.p, r->body.n, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(o))
        return o;
    json_decref(o);
    *status = fail(r, 400, "INVALID_BODY", "The body must be a JSON object.", NULL, NULL);
    return NULL;
}

/* Deep links are not kept: an array of them that is not empty is refused. */
static bool deeplinks_refused(json_t *body)
{
    json_t *d = json_object_get(body, "deeplinks");
    return d && !json_is_null(d) && !(json_is_array(d) && json_array_size(d) == 0);
}

/* Bitly's field error for a field links_parse refused. */
static int field_refused(struct request *r, const char *field, const char *why)
{
    char msg[320];
    if (field && strcmp(field, "url") == 0 && strstr(why, "points back at this shortener"))
        return fail(r, 400, "ALREADY_A_BITLY_LINK", "The long URL is a short link already.",
                    "long_url", "invalid");
    const char *bfield = !field || strcmp(field, "url") == 0 ? "long_url" : field;
    const char *code = strcmp(bfield, "title") == 0    ? "INVALID_ARG_TITLE"
                       : strcmp(bfield, "tags") == 0   ? "INVALID_ARG_TAGS"
                       : strcmp(bfield, "domain") == 0 ? "INVALID_ARG_DOMAIN"
                                                       : "INVALID_ARG_LONG_URL";
    snprintf(msg, sizeof(msg), "%s %s", bfield, why);
    return fail(r, 400, code, msg, bfield, "invalid");
}

/* ---- POST /v4/shorten and POST /v4/bitlinks ---- */

struct create_job {
    struct api_job base;
    struct link_input in;
    int64_t owner, now;
    struct link link;
    bool full; /* POST /v4/bitlinks: the whole object */
    struct idem idem;
    bool reused, created;
    bool mismatch; /* the Idempotency-Key was used with another request */
    int refused;   /* REFUSED_*, or 0 */
};

#define REFUSED_BLOCKED 1      /* the destination's host is blocked */
#define REFUSED_DOMAIN 2       /* a custom domain that is not registered */
#define REFUSED_DOMAIN_OWNER 3 /* ... registered to another owner */

static void create_release(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    link_input_release(&c->in);
    link_release(&c->link);
    idem_release(&c->idem);
    free(c);
}

static int create_do(struct create_job *c, struct store *st)
{
    if (owner_key_domain(&c->base.r->key, &c->in.domain) != ERR_OK) {
        c->refused = REFUSED_DOMAIN_OWNER;
        return ERR_OK;
    }
    if (c->in.domain && !c->base.r->key.domain[0]) { /* a limited key's domain is granted */
        int64_t owner = -1;
        int rc = st->ops->domain_get(st, c->in.domain, &owner);
        if (rc == ERR_NOTFOUND || (rc == ERR_OK && owner != c->owner)) {
            c->refused = rc == ERR_NOTFOUND ? REFUSED_DOMAIN : REFUSED_DOMAIN_OWNER;
            return ERR_OK;
        }
        if (rc != ERR_OK)
            return rc;
    }
    int rc =
        links_create(c->base.r->app->links, st, &c->in, c->owner, c->now, &c->link, &c->reused);
    if (rc == ERR_FORBIDDEN) {
        c->refused = REFUSED_BLOCKED;
        return ERR_OK;
    }
    c->created = rc == ERR_OK && !c->reused;
    return rc;
}

/* The answer of a create that ran, and its status (any thread). */
static json_t *create_answer(const struct create_job *c, int *status)
{
    const struct request *r = c->base.r;
    *status = 400;
    if (c->refused == REFUSED_BLOCKED)
        return fail_doc(r, "INVALID_ARG_LONG_URL", "The long URL's host is blocked.", "long_url",
                        "invalid");
    if (c->refused == REFUSED_DOMAIN)
        return fail_doc(r, "INVALID_ARG_DOMAIN", "The domain is not registered.", "domain",
                        "invalid");
    if (c->refused) {
        *status = 403;
        return fail_doc(r, "FORBIDDEN", "The domain is registered to another key.", NULL, NULL);
    }
    *status = c->reused ? 200 : 201;
    return bitlink_json(r->app, &c->link, c->full);
}

/* With an Idempotency-Key, the answer is made here and remembered with the
 * key (idem.h): a replay, or the first answer, is then j->raw. */
static int create_run(struct wjob *wj, struct store *st)
{
    struct create_job *c = (struct create_job *)wj;
    struct api_job *j = &c->base;
    int rc;
    if (!idem_run_create(j, st, c->owner, &c->idem, c->now, &c->mismatch, &rc))
        return rc;
    rc = create_do(c, st);
    if (rc != ERR_OK || !c->idem.key)
        return rc;
    json_t *doc = create_answer(c, &j->status);
    struct buf b = BUF_INIT;
    jsonout(&b, doc);
    json_decref(doc);
    rc = idem_finish(st, c->owner, &c->idem, c->now, j->status, b.p);
    j->raw = buf_detach(&b, NULL);
    return rc;
}

static void create_after_commit(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    if (c->created)
        link_changed(j->r->app, &c->link, LINK_NEW, c->now);
}

static int create_respond(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    struct request *r = j->r;
    if (j->job.rc != ERR_OK)
        return unavailable(r);
    if (c->mismatch)
        return fail(r, 422, "UNPROCESSABLE_ENTITY",
                    "This Idempotency-Key was used with a different request.", NULL, NULL);
    if (j->replayed)
        http_add_header(r, "Idempotent-Replayed", "true", 4);
    if (j->raw) { /* remembered with its Idempotency-Key */
        http_body(r, j->status, "application/json", j->raw, strlen(j->raw));
        return j->status;
    }
    int status;
    json_t *doc = create_answer(c, &status);
    return http_json(r, status, doc);
}

/* Reads a create's body into a shortd create body (*out); 0, or the status
 * of Bitly's error written. */
static int create_body(struct request *r, json_t *body, bool full, json_t **out)
{
    json_t *url = json_object_get(body, "long_url");
    if (!json_is_string(url) || !json_string_length(url))
        return fail(r, 400, "INVALID_ARG_LONG_URL", "long_url must be a URL.", "long_url",
                    url ? "invalid" : "missing");
    json_t *group = json_object_get(body, "group_guid");
    if (group && !json_is_null(group)) {
        char guid[GUID_LEN + 1];
        guid_of(r->key.owner, 'B', guid);
        if (!json_is_string(group) || strcmp(json_string_value(group), guid) != 0)
            return fail(r, 403, "FORBIDDEN", "The group is not this key's.", NULL, NULL);
    }
    json_t *domain = json_object_get(body, "domain");
    if (domain && !json_is_null(domain) && !json_is_string(domain))
        return fail(r, 400, "INVALID_ARG_DOMAIN", "domain must be a string.", "domain", "invalid");
    if (full && deeplinks_refused(body))
        return fail(r, 400, "INVALID_ARG_DEEPLINKS", "Deep links are not supported.", "deeplinks",
                    "invalid");
    json_t *o = json_pack("{s:O,s:b}", "url", url, "reuse", 1);
    if (json_is_string(domain) &&
        !host_is_default(r->app,
                         (struct slice){json_string_value(domain), json_string_length(domain)}))
        json_object_set(o, "domain", domain);
    json_t *v;
    if (full && (v = json_object_get(body, "title")) && !json_is_null(v))
        json_object_set(o, "title", v);
    if (full && (v = json_object_get(body, "tags")) && !json_is_null(v))
        json_object_set(o, "tags", v);
    *out = o;
    return 0;
}

static int create(struct request *r, bool full)
{
    int status = 0;
    json_t *body = body_object(r, &status);
    if (!body)
        return status;
    json_t *in = NULL;
    status = create_body(r, body, full, &in);
    json_decref(body);
    if (status)
        return status;
    struct create_job *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->now = now_ms();
    const char *field = NULL;
    char why[256];
    int rc = links_parse(r->app->links, in, c->now, &c->in, &field, why, sizeof(why));
    json_decref(in);
    if (rc != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        return field_refused(r, field, why);
    }
    if (idem_read(r, c->now, &c->idem) != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        return fail(r, 400, "INVALID_ARG_IDEMPOTENCY_KEY",
                    "Idempotency-Key must be 1 to 255 visible ASCII characters.", NULL, NULL);
    }
    c->full = full;
    c->owner = r->key.owner;
    /* Without an Idempotency-Key a create writes one row: no savepoint. */
    c->base.job.single_write = !c->idem.key;
    c->base.after_commit = create_after_commit;
    c->base.respond = create_respond;
    c->base.release = create_release;
    return api_job_submit(r, &c->base, create_run);
}

int handle_bitly_shorten(struct request *r) { return create(r, false); }
int handle_bitly_create(struct request *r) { return create(r, true); }

/* ---- GET /v4/bitlinks/{bitlink} and POST /v4/expand ---- */

int handle_bitly_get(struct request *r)
{
    struct link l;
    int status = route_link(r, &l);
    if (status)
        return status;
    json_t *o = bitlink_json(r->app, &l, true);
    link_release(&l);
    return http_json(r, 200, o);
}

int handle_bitly_expand(struct request *r)
{
    int status = 0;
    json_t *body = body_object(r, &status);
    if (!body)
        return status;
    json_t *id = json_object_get(body, "bitlink_id");
    struct bitlink b;
    bool ok = json_is_string(id) &&
              bitlink_split(json_string_value(id), json_string_length(id), &b);
    bool given = json_is_string(id) && json_string_length(id);
    json_decref(body);
    if (!given)
        return fail(r, 400, "INVALID_ARG_BITLINK_ID", "bitlink_id must be a bitlink.", "bitlink_id",
                    "missing");
    if (!ok)
        return not_found(r);
    struct link l;
    int rc = bitlink_find(r->app, r->app->store, &b, owner_scope(r), &l);
    if (rc == ERR_NOTFOUND)
        return not_found(r);
    if (rc != ERR_OK)
        return unavailable(r);
    json_t *full = bitlink_json(r->app, &l, false);
    json_t *o = json_pack("{s:O,s:O,s:O,s:O}", "created_at", json_object_get(full, "created_at"),
                          "link", json_object_get(full, "link"), "id", json_object_get(full, "id"),
                          "long_url", json_object_get(full, "long_url"));
    json_decref(full);
    link_release(&l);
    return http_json(r, 200, o);
}

/* ---- PATCH /v4/bitlinks/{bitlink} ---- */

struct patch_job {
    struct api_job base;
    struct bitlink b;
    struct link_patch p;
    int64_t now, scope, key_id;
    struct link link;
    bool found, changed;
    int refused; /* REFUSED_BLOCKED, REFUSED_TOO_LONG, or 0 */
};

#define REFUSED_TOO_LONG 4 /* the long_url with the link's UTM is too long */

static void patch_release(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    link_patch_release(&pj->p);
    link_release(&pj->link);
    free(pj);
}

/* Reads, changes and writes the link in one transaction, a new destination
 * added to its history in the same one (as PATCH /api/links/CODE does). */
static int patch_run(struct wjob *wj, struct store *st)
{
    struct patch_job *pj = (struct patch_job *)wj;
    const struct app *app = pj->base.r->app;
    int rc = bitlink_find(app, st, &pj->b, pj->scope, &pj->link);
    if (rc == ERR_NOTFOUND)
        return ERR_OK;
    if (rc != ERR_OK)
        return rc;
    pj->found = true;
    if (!pj->p.fields)
        return ERR_OK;
    const char *field = NULL;
    rc = links_edit(app->links, st, &pj->link, &pj->p, pj->now, pj->key_id, &field);
    if (rc == ERR_FORBIDDEN) {
        pj->refused = REFUSED_BLOCKED;
        return ERR_OK;
    }
    if (rc == ERR_INVALID || rc == ERR_MISMATCH) { /* the url with the link's utm */
        pj->refused = REFUSED_TOO_LONG;
        return ERR_OK;
    }
    pj->changed = rc == ERR_OK;
    return rc;
}

static void patch_after_commit(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    if (pj->changed)
        link_changed(j->r->app, &pj->link, LINK_EDITED, pj->now);
}

static int patch_respond(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    struct request *r = j->r;
    if (j->job.rc != ERR_OK)
        return unavailable(r);
    if (!pj->found)
        return not_found(r);
    if (pj->refused == REFUSED_BLOCKED)
        return fail(r, 400, "INVALID_ARG_LONG_URL", "The long URL's host is blocked.", "long_url",
                    "invalid");
    if (pj->refused == REFUSED_TOO_LONG)
        return fail(r, 400, "INVALID_ARG_LONG_URL",
                    "The long URL is too long with this link's "
                    "UTM parameters.",
                    "long_url", "invalid");
    return http_json(r, 200, bitlink_json(r->app, &pj->link, true));
}

/* Bitly's PATCH body as a shortd one: title, tags and long_url are kept;
 * the rest of the bitlink object, sent back as read, is ignored. */
static int patch_body(struct request *r, json_t *body, json_t **out)
{
    json_t *a = json_object_get(body, "archived");
    if (json_is_true(a))
        return fail(r, 400, "INVALID_ARG_ARCHIVED",
                    "Archiving is not supported; delete the "
                    "link with DELETE /api/links/CODE.",
                    "archived", "invalid");
    if (deeplinks_refused(body))
        return fail(r, 400, "INVALID_ARG_DEEPLINKS", "Deep links are not supported.", "deeplinks",
                    "invalid");
    json_t *o = json_object();
    json_t *v;
    if ((v = json_object_get(body, "title")))
        json_object_set(o, "title", v);
    if ((v = json_object_get(body, "tags")))
        json_object_set(o, "tags", json_is_null(v) ? json_array() : v);
    if ((v = json_object_get(body, "long_url")) && !json_is_null(v))
        json_object_set(o, "url", v);
    *out = o;
    return 0;
}

int handle_bitly_patch(struct request *r)
{
    struct bitlink b;
    if (!bitlink_param(r, &b))
        return not_found(r);
    int status = 0;
    json_t *body = body_object(r, &status);
    if (!body)
        return status;
    json_t *in = NULL;
    status = patch_body(r, body, &in);
    json_decref(body);
    if (status)
        return status;
    struct patch_job *pj = calloc(1, sizeof(*pj));
    if (!pj)
        abort();
    pj->b = b;
    pj->now = now_ms();
    if (json_object_size(in)) {
        const char *field = NULL;
        char why[256];
        if (links_parse_patch(r->app->links, in, pj->now, &pj->p, &field, why, sizeof(why)) !=
            ERR_OK) {
            json_decref(in);
            link_patch_release(&pj->p);
            free(pj);
            return field_refused(r, field, why);
        }
    }
    json_decref(in);
    pj->scope = owner_scope(r);
    pj->key_id = r->key.id;
    pj->base.after_commit = patch_after_commit;
    pj->base.respond = patch_respond;
    pj->base.release = patch_release;
    return api_job_submit(r, &pj->base, patch_run);
}

/* ---- GET /v4/bitlinks/{bitlink}/clicks[/summary] ---- */

/* A query parameter, decoded: false when absent or empty. */
static bool query_str(const struct request *r, const char *name, char out[PARAM_MAX])
{
    struct slice v;
    if (!http_query_param(r, name, &v) || !v.n)
        return false;
    long n = pct_form_decode(v.p, v.n, out, PARAM_MAX - 1);
    if (n <= 0)
        return false;
    out[n] = '\0';
    return true;
}

/* A unit_reference: an ISO 8601 time, its offset written +hhmm (Bitly's
 * form), +hh:mm or Z; a '+' sent unencoded reads as a space. */
static bool parse_reference(char *s, int64_t *ms)
{
    size_t n = strlen(s);
    if (n > 5 && (s[n - 5] == '+' || s[n - 5] == '-' || s[n - 5] == ' ')) {
        if (s[n - 5] == ' ')
            s[n - 5] = '+';
        if (n + 1 >= PARAM_MAX)
            return false;
        memmove(s + n - 1, s + n - 2, 3); /* "+0000" -> "+00:00" */
        s[n - 2] = ':';
        n++;
    }
    return rfc3339_parse(s, n, ms) == ERR_OK;
}

struct clicks {
    int64_t from, to;  /* days */
    long units;        /* as asked (-1: all) */
    int64_t reference; /* ms */
    int64_t *per_day;  /* [to - from + 1] */
    int64_t total;
};

static int clicks_day(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    (void)uniques;
    (void)bots;
    struct clicks *c = arg;
    if (day >= c->from && day <= c->to) {
        c->per_day[day - c->from] += clicks;
        c->total += clicks;
    }
    return 0;
}

/* Reads unit, units and unit_reference into c's range, and the route's
 * link into 'l' (link_release it): 0, or the status of the answer written.
 * Bitly's units=-1 (its SDK's default) is every day since the link was
 * made. */
static int clicks_range(struct request *r, struct clicks *c, struct link *l)
{
    char v[PARAM_MAX];
    if (query_str(r, "unit", v) && strcmp(v, "day") != 0)
        return fail(r, 400, "INVALID_ARG_UNIT",
                    "Only unit=day is supported: clicks are kept "
                    "per day.",
                    "unit", "invalid");
    c->units = -1;
    if (query_str(r, "units", v)) {
        char *end;
        c->units = strtol(v, &end, 10);
        if (*end || c->units == 0 || c->units < -1 || c->units > STATS_MAX_DAYS)
            return fail(r, 400, "INVALID_ARG_UNITS", "units must be -1 or 1 to 1000.", "units",
                        "invalid");
    }
    c->reference = now_ms();
    if (query_str(r, "unit_reference", v) && !parse_reference(v, &c->reference))
        return fail(r, 400, "INVALID_ARG_UNIT_REFERENCE",
                    "unit_reference must be an ISO 8601 "
                    "time.",
                    "unit_reference", "invalid");
    int status = route_link(r, l);
    if (status)
        return status;
    c->to = day_number(c->reference);
    c->from = c->units > 0 ? c->to - (c->units - 1) : day_number(l->created_at);
    if (c->to - c->from >= STATS_MAX_DAYS)
        c->from = c->to - (STATS_MAX_DAYS - 1);
    if (c->from > c->to)
        c->from = c->to; /* a reference before the link was made: one empty day */
    return 0;
}

/* The route's link's clicks per day over the range asked: 0, or the status
 * of the answer written. */
static int clicks_read(struct request *r, struct clicks *c)
{
    struct link l;
    int status = clicks_range(r, c, &l);
    if (status)
        return status;
    c->per_day = calloc((size_t)(c->to - c->from + 1), sizeof(*c->per_day));
    if (!c->per_day)
        abort();
    struct store *st = r->app->store;
    int rc = st->ops->stats_days(st, l.code, c->from, c->to, clicks_day, c);
    link_release(&l);
    if (rc != ERR_OK) {
        free(c->per_day);
        return unavailable(r);
    }
    return 0;
}

/* What both answers share: unit, units, unit_reference. */
static json_t *clicks_head(const struct clicks *c)
{
    char ref[BITLY_TIME_MAX];
    bitly_time(c->reference, ref);
    return json_pack("{s:s,s:i,s:s}", "unit", "day", "units", (int)c->units, "unit_reference", ref);
}

int handle_bitly_clicks(struct request *r)
{
    struct clicks c = {0};
    int status = clicks_read(r, &c);
    if (status)
        return status;
    json_t *days = json_array();
    for (int64_t d = c.to; d >= c.from; d--) { /* newest first, as Bitly lists them */
        char date[BITLY_TIME_MAX];
        bitly_time(d * MS_PER_DAY, date);
        json_array_append_new(days, json_pack("{s:I,s:s}", "clicks",
                                              (json_int_t)c.per_day[d - c.from], "date", date));
    }
    free(c.per_day);
    json_t *o = clicks_head(&c);
    json_object_set_new(o, "link_clicks", days);
    return http_json(r, 200, o);
}

int handle_bitly_clicks_summary(struct request *r)
{
    struct clicks c = {0};
    int status = clicks_read(r, &c);
    if (status)
        return status;
    free(c.per_day);
    json_t *o = clicks_head(&c);
    json_object_set_new(o, "total_clicks", json_integer(c.total));
    return http_json(r, 200, o);
}

/* ---- GET /v4/bitlinks/{bitlink}/countries and /referrers ---- */

struct facet {
    int dim;
    json_t *metrics; /* [{value, clicks}] */
};

/* A referrer host is counted only when a click has one: the referrers
 * facet takes its "direct" clicks from the referrer group of that name. */
static int facet_row(int dim, const char *value, int64_t n, void *arg)
{
    struct facet *f = arg;
    bool direct = f->dim == DIM_REFERRER && dim == DIM_REF_GROUP && strcmp(value, "direct") == 0;
    if ((dim == f->dim || direct) && n > 0)
        json_array_append_new(f->metrics,
                              json_pack("{s:s,s:I}", "value", value, "clicks", (json_int_t)n));
    return 0;
}

/* Most clicks first; a tie by value, so that the order is the same each time. */
static int by_clicks(const void *a, const void *b)
{
    json_t *p = *(json_t *const *)a, *q = *(json_t *const *)b;
    json_int_t x = json_integer_value(json_object_get(p, "clicks"));
    json_int_t y = json_integer_value(json_object_get(q, "clicks"));
    if (x != y)
        return x < y ? 1 : -1;
    return strcmp(json_string_value(json_object_get(p, "value")),
                  json_string_value(json_object_get(q, "value")));
}

/* Bitly's ClickMetrics of one facet, from shortd's dimension 'dim', most
 * clicks first. */
static int facet(struct request *r, int dim, const char *name)
{
    struct clicks c = {0};
    struct link l;
    int status = clicks_range(r, &c, &l);
    if (status)
        return status;
    struct facet f = {dim, json_array()};
    struct store *st = r->app->store;
    int rc = st->ops->stats_dims(st, l.code, c.from, c.to, facet_row, &f);
    link_release(&l);
    if (rc != ERR_OK) {
        json_decref(f.metrics);
        return unavailable(r);
    }
    size_t n = json_array_size(f.metrics);
    json_t **v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        abort();
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(f.metrics, i));
    qsort(v, n, sizeof(*v), by_clicks);
    json_array_clear(f.metrics);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(f.metrics, v[i]);
    free(v);
    json_t *o = clicks_head(&c);
    json_object_set_new(o, "facet", json_string(name));
    json_object_set_new(o, "metrics", f.metrics);
    return http_json(r, 200, o);
}

int handle_bitly_countries(struct request *r) { return facet(r, DIM_COUNTRY, "countries"); }
int handle_bitly_referrers(struct request *r) { return facet(r, DIM_REFERRER, "referrers"); }

/* ---- GET /v4/user and GET /v4/groups: the key as a user with one group ---- */

int handle_bitly_user(struct request *r)
{
    char guid[GUID_LEN + 1], created[BITLY_TIME_MAX];
    guid_of(r->key.owner, 'B', guid);
    bitly_time(r->key.created_at, created);
    json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:s,s:b,s:b,s:s,s:[]}", "login", r->key.name, "name",
                          r->key.name, "is_active", 1, "created", created, "modified", created,
                          "is_sso_user", 0, "is_2fa_enabled", 0, "default_group_guid", guid,
                          "emails");
    return http_json(r, 200, o);
}

int handle_bitly_groups(struct request *r)
{
    char guid[GUID_LEN + 1], org[GUID_LEN + 1], created[BITLY_TIME_MAX];
    guid_of(r->key.owner, 'B', guid);
    guid_of(r->key.owner, 'O', org);
    bitly_time(r->key.created_at, created);
    struct buf ref = BUF_INIT;
    buf_printf(&ref, "%s/v4/organizations/%s", r->app->cfg.base_url, org);
    json_t *g = json_pack("{s:s,s:s,s:[],s:s,s:s,s:s,s:b,s:s,s:{s:s}}", "created", created,
                          "modified", created, "bsds", "guid", guid, "organization_guid", org,
                          "name", r->key.name, "is_active", 1, "role", "org-admin", "references",
                          "organization", ref.p);
    buf_release(&ref);
    return http_json(r, 200, json_pack("{s:[o]}", "groups", g));
}

/* ---- GET /v4/groups/{group_guid}/bitlinks: the group's bitlinks ---- */

#define LIST_SIZE_DEFAULT 50 /* Bitly's `size` default */
#define LIST_SIZE_MAX 100    /* and its most */
#define LIST_SCAN_MAX 10000  /* links one listing reads (its `total` stops there) */
#define LIST_TAGS_MAX 16     /* `tags` values one listing takes */

/* The listing's filters, as getBitlinksByGroup's parameters give them. */
struct group_list {
    const struct app *app;
    int64_t size, page;
    int64_t created_before, created_after, modified_after; /* ms; 0: none */
    bool none;                                             /* a filter no link can pass */
    char *tags[LIST_TAGS_MAX];
    int ntags;
    json_t *links;
    int64_t matched; /* links that pass, up to LIST_SCAN_MAX */
    bool any;        /* the store's page had a row */
    char last_code[CODE_MAX + 1];
    int64_t last_created;
};

/* Each value of query parameter 'name' (a form array: name=a&name=b),
 * decoded, to 'fn'; false when one is not decodable or fn refuses it. */
static bool query_each(const struct request *r, const char *name,
                       bool (*fn)(const char *v, void *arg), void *arg)
{
    struct slice q = r->query;
    size_t nl = strlen(name);
    for (size_t i = 0; i < q.n;) {
        const char *p = q.p + i;
        const char *amp = memchr(p, '&', q.n - i);
        size_t n = amp ? (size_t)(amp - p) : q.n - i;
        i += n + 1;
        if (n <= nl || memcmp(p, name, nl) != 0 || p[nl] != '=')
            continue;
        char v[PARAM_MAX];
        long vn = pct_form_decode(p + nl + 1, n - nl - 1, v, PARAM_MAX - 1);
        if (vn < 0 || memchr(v, '\0', (size_t)vn))
            return false;
        v[vn] = '\0';
        if (!fn(v, arg))
            return false;
    }
    return true;
}

static bool tag_add(const char *v, void *arg)
{
    struct group_list *g = arg;
    if (!*v)
        return true;
    if (g->ntags == LIST_TAGS_MAX)
        return false;
    g->tags[g->ntags++] = xstrdup(v);
    return true;
}

/* encoding_login: the key's name is its login (GET /v4/user). */
struct login_match {
    const char *login;
    bool asked, matched;
};

static bool login_check(const char *v, void *arg)
{
    struct login_match *m = arg;
    m->asked = true;
    m->matched = m->matched || strcmp(v, m->login) == 0;
    return true;
}

/* Whether the link's tags hold one of the listing's. */
static bool tags_match(const struct group_list *g, const struct link *l)
{
    if (!g->ntags)
        return true;
    json_t *tags = l->tags ? json_loads(l->tags, 0, NULL) : NULL;
    bool hit = false;
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        for (int k = 0; k < g->ntags && !hit; k++)
            hit = json_is_string(t) && strcmp(json_string_value(t), g->tags[k]) == 0;
    }
    json_decref(tags);
    return hit;
}

static int group_list_one(const struct link *l, void *arg)
{
    struct group_list *g = arg;
    g->any = true;
    memcpy(g->last_code, l->code, sizeof(g->last_code));
    g->last_created = l->created_at;
    if (!l->url)
        return 0;
    int64_t modified = l->changed_at > l->created_at ? l->changed_at : l->created_at;
    if ((g->created_before && l->created_at >= g->created_before) ||
        (g->created_after && l->created_at <= g->created_after) ||
        (g->modified_after && modified <= g->modified_after) || !tags_match(g, l))
        return 0;
    int64_t first = (g->page - 1) * g->size;
    if (g->matched >= first && g->matched < first + g->size)
        json_array_append_new(g->links, bitlink_json(g->app, l, true));
    g->matched++;
    return g->matched >= LIST_SCAN_MAX;
}

/* An integer query parameter (Unix seconds, a size, a page): true with *v
 * set, or with *v untouched when it is absent; false when it is no
 * integer. */
static bool query_int(const struct request *r, const char *name, int64_t *v)
{
    char s[PARAM_MAX];
    if (!query_str(r, name, s))
        return true;
    char *end;
    long long n = strtoll(s, &end, 10);
    if (*end || end == s || n < 0 || n > 100000000000LL)
        return false;
    *v = n;
    return true;
}

/* An on|off|both filter: 'on' is a property no shortd link has (archived,
 * a deep link, a custom bitlink), so it lists none. false for another word. */
static bool query_switch(const struct request *r, const char *name, bool *none)
{
    char s[PARAM_MAX];
    if (!query_str(r, name, s))
        return true;
    if (!strcmp(s, "on"))
        *none = true;
    return !strcmp(s, "on") || !strcmp(s, "off") || !strcmp(s, "both");
}

/* The URL of page 'page' of this listing: the request's own query with its
 * `page` replaced. */
static json_t *page_url(const struct request *r, const char *guid, int64_t page)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "%s/v4/groups/%s/bitlinks?", r->app->cfg.base_url, guid);
    struct slice q = r->query;
    for (size_t i = 0; i < q.n;) {
        const char *p = q.p + i;
        const char *amp = memchr(p, '&', q.n - i);
        size_t n = amp ? (size_t)(amp - p) : q.n - i;
        i += n + 1;
        if (!n || (n >= 5 && !memcmp(p, "page=", 5)) || (n == 4 && !memcmp(p, "page", 4)))
            continue;
        buf_add(&b, p, n);
        buf_addc(&b, '&');
    }
    buf_printf(&b, "page=%lld", (long long)page);
    json_t *s = json_stringn(b.p, b.len);
    buf_release(&b);
    return s ? s : json_string("");
}

/* Bitly's answer for a parameter it refuses: 400 INVALID_ARG_<NAME>. */
static int arg_refused(struct request *r, const char *name, const char *why)
{
    char message[64], description[128];
    snprintf(message, sizeof(message), "INVALID_ARG_");
    for (size_t i = strlen(message), k = 0; name[k] && i < sizeof(message) - 1; i++, k++)
        message[i] = (char)toupper((unsigned char)name[k]), message[i + 1] = '\0';
    snprintf(description, sizeof(description), "The value provided for %s is invalid: %s.", name,
             why);
    return fail(r, 400, message, description, name, "invalid");
}

int handle_bitly_group_bitlinks(struct request *r)
{
    char guid[GUID_LEN + 1];
    guid_of(r->key.owner, 'B', guid);
    if (!slice_eq(r->params[0], guid)) /* another key's group, or none: as group_guid in a create */
        return fail(r, 403, "FORBIDDEN", "The group is not this key's.", NULL, NULL);
    struct group_list g = {.app = r->app, .size = LIST_SIZE_DEFAULT, .page = 1};
    int64_t before = 0, after_s = 0, modified = 0;
    if (!query_int(r, "size", &g.size) || g.size < 1 || g.size > LIST_SIZE_MAX)
        return arg_refused(r, "size", "a whole number from 1 to 100");
    if (!query_int(r, "page", &g.page) || g.page < 1 || g.page > LIST_SCAN_MAX)
        return arg_refused(r, "page", "a whole number from 1");
    if (!query_int(r, "created_before", &before))
        return arg_refused(r, "created_before", "a Unix time in seconds");
    if (!query_int(r, "created_after", &after_s))
        return arg_refused(r, "created_after", "a Unix time in seconds");
    if (!query_int(r, "modified_after", &modified))
        return arg_refused(r, "modified_after", "a Unix time in seconds");
    g.created_before = before * 1000;
    g.created_after = after_s * 1000;
    g.modified_after = modified * 1000;
    static const char *const switches[] = {"archived", "deeplinks", "domain_deeplinks",
                                           "custom_bitlink"};
    for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
        if (!query_switch(r, switches[i], &g.none))
            return arg_refused(r, switches[i], "one of on, off and both");
    /* No shortd link is in a campaign or a channel. */
    struct slice v;
    if ((http_query_param(r, "campaign_guid", &v) && v.n) ||
        (http_query_param(r, "channel_guid", &v) && v.n))
        g.none = true;
    struct login_match login = {.login = r->key.name};
    if (!query_each(r, "encoding_login", login_check, &login))
        return arg_refused(r, "encoding_login", "not text");
    if (login.asked && !login.matched)
        g.none = true;
    char search[PARAM_MAX] = "";
    query_str(r, "query", search);
    int status = 0;
    if (!query_each(r, "tags", tag_add, &g)) {
        status = arg_refused(r, "tags", "at most 16 tags of text");
        goto out;
    }

    g.links = json_array();
    if (!g.none) {
        if (router_heavy_enter(r)) { /* its Retry-After is written: the body is Bitly's */
            json_decref(g.links);
            status = fail(r, 429, "RATE_LIMIT_EXCEEDED",
                          "This key already runs its share of searches; try again.", NULL, NULL);
            goto out;
        }
        char cursor[CODE_MAX + 1] = "";
        struct link_query q = {.owner = r->key.owner,
                               .states = 1u << LINK_DISABLED,
                               .want_live = true,
                               .want_expired = true,
                               .want_exhausted = true,
                               .now = now_ms(),
                               .limit = 1000,
                               .after_code = cursor,
                               .q = *search ? search : NULL};
        struct store *st = r->app->store;
        int rc;
        for (;;) {
            g.any = false;
            rc = st->ops->link_list(st, &q, group_list_one, &g);
            if (rc != ERR_OK || !g.any || g.matched >= LIST_SCAN_MAX)
                break;
            memcpy(cursor, g.last_code, sizeof(cursor));
            q.after_created = g.last_created;
        }
        router_heavy_leave(r->app, r->key.id);
        if (rc != ERR_OK) {
            json_decref(g.links);
            status = unavailable(r);
            goto out;
        }
    }
    int64_t pages = (g.matched + g.size - 1) / g.size;
    json_t *pagination =
        json_pack("{s:o,s:o,s:I,s:I,s:I}", "prev",
                  g.page > 1 ? page_url(r, guid, g.page - 1) : json_string(""), "next",
                  g.page < pages ? page_url(r, guid, g.page + 1) : json_string(""), "size",
                  (json_int_t)g.size, "page", (json_int_t)g.page, "total", (json_int_t)g.matched);
    status = http_json(r, 200, json_pack("{s:o,s:o}", "links", g.links, "pagination", pagination));
out:
    for (int i = 0; i < g.ntags; i++)
        free(g.tags[i]);
    return status;
}
