/* compat_shlink.c - Shlink's REST API v3 (/rest/v3/...), so that its SDKs
 * and web client work against shortd with nothing changed but the server's
 * URL and the key.
 *
 * The shapes are those of Shlink 5.1 (shlinkio/shlink 59c62a2:
 * docs/swagger/, module/Rest/src/Action, module/Core/src/Exception,
 * ShortUrl::toArray, Visit::jsonSerialize, VisitsStats) as
 * @shlinkio/shlink-js-sdk 3.2.1 calls them: short URLs created, listed
 * ({shortUrls: {data, pagination}}), read, edited and deleted; a short
 * URL's visits; the visits summary; the tags; the health check. The key is
 * the X-Api-Key header (shlink_dialect). Every error is RFC 7807
 * application/problem+json with Shlink's `type`, `title`, `detail`,
 * `status` and its extra fields (invalidElements, shortCode, customSlug).
 *
 * Links made here are ordinary links: links_parse and links_create (the
 * rules of POST /api/links; findIfExists is shortd's reuse), the group
 * commit (apijob.h) and link_changed after it; reads find one link through
 * owner.h. Where shortd's rules differ, the client gets Shlink's own error:
 * a validSince in the future (a link of shortd redirects from its creation;
 * a past or present validSince is already true, so it is taken) and a
 * maxVisits changed by an edit (shortd sets a click limit at creation only)
 * are invalid-data naming that field; a slug the alias rules refuse is
 * invalid-data naming customSlug; a slug taken or once used is
 * non-unique-slug. shortd keeps clicks as daily counts plus the last human
 * clicks of each link (RECENT_KEEP): a short URL's visits are those last
 * clicks; it tracks no orphan visits, so their summary is zero. */
#include <ctype.h>
#include <llhttp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "api/idem.h"
#include "api/owner.h"
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

#define SHLINK_VERSION "5.1.0" /* the Shlink whose API this speaks */
#define ERROR_BASE "https://shlink.io/api/error/"
#define PER_PAGE_DEFAULT 10 /* ShortUrlsParams::DEFAULT_ITEMS_PER_PAGE */
#define SCAN_MAX 10000      /* links a list or the tags read (the key's newest) */
#define FILTER_MAX 128      /* bytes of a searchTerm or a tag filter */
#define TAG_FILTERS 20      /* tags[] values a list takes */

/* ---- answers ---- */

/* Shlink's problem details: 'type' is Shlink's error code (its URL is
 * built here), or NULL for a refusal Shlink has no code for (about:blank,
 * RFC 7807's). 'extra' (stolen, may be NULL) adds its fields. */
/* The problem document itself (any thread); 'extra' is stolen. */
static json_t *problem_doc(int status, const char *type, const char *title, const char *detail,
                           json_t *extra)
{
    char t[128];
    snprintf(t, sizeof(t), "%s%s", type ? ERROR_BASE : "about:blank", type ? type : "");
    json_t *doc = json_pack("{s:s,s:s,s:s,s:i}", "type", t, "title", title, "detail", detail,
                            "status", status);
    if (extra)
        json_object_update(doc, extra);
    json_decref(extra);
    return doc;
}

/* A JSON answer: a short URL's application/json, or, for an error status,
 * application/problem+json. 'doc' is stolen. */
static int shlink_json(struct request *r, int status, json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!s)
        abort();
    http_body(r, status, status < 400 ? "application/json" : "application/problem+json", s,
              strlen(s));
    free(s);
    return status;
}

static int problem(struct request *r, int status, const char *type, const char *title,
                   const char *detail, json_t *extra)
{
    return shlink_json(r, status, problem_doc(status, type, title, detail, extra));
}

/* invalid-data naming the offending fields (a JSON array, stolen). */
static int invalid(struct request *r, json_t *elements)
{
    return problem(r, 400, "invalid-data", "Invalid data", "Provided data is not valid",
                   json_pack("{s:o}", "invalidElements", elements));
}

static int invalid1(struct request *r, const char *element)
{
    return invalid(r, json_pack("[s]", element));
}

static int not_found(struct request *r, const char *code, const char *domain)
{
    char detail[CODE_MAX + 300];
    snprintf(detail, sizeof(detail), "No URL found with short code \"%s\"%s%s%s", code,
             domain ? " for domain \"" : "", domain ? domain : "", domain ? "\"" : "");
    json_t *extra = json_pack("{s:s}", "shortCode", code);
    if (domain)
        json_object_set_new(extra, "domain", json_string(domain));
    return problem(r, 404, "short-url-not-found", "Short URL not found", detail, extra);
}

static int unavailable(struct request *r)
{
    http_add_header(r, "Retry-After", "1", 1);
    return problem(r, 503, NULL, "Service Unavailable", "the store is unavailable; try again",
                   NULL);
}

/* The router's refusals (shlink_dialect.error), as Shlink's
 * AuthenticationMiddleware answers them; the others, which Shlink does not
 * have, as RFC 7807's about:blank with their status. */
static int shlink_error(struct request *r, int status, const char *code, const char *message)
{
    if (strcmp(code, "unauthorized") == 0)
        return problem(r, 401, "missing-authentication", "Invalid authorization",
                       "Expected one of the following authentication headers, [\"X-Api-Key\"], "
                       "but none were provided",
                       json_pack("{s:[s]}", "expectedHeaders", "X-Api-Key"));
    if (strcmp(code, "invalid_key") == 0)
        return problem(r, 401, "invalid-api-key", "Invalid API key",
                       "Provided API key does not exist or is invalid.", NULL);
    if (strcmp(code, "not_found") == 0) { /* Mezzio's ProblemDetailsNotFoundHandler */
        char detail[300];
        int n = (int)(r->path.n < 200 ? r->path.n : 200);
        snprintf(detail, sizeof(detail), "Cannot %s %.*s",
                 llhttp_method_name((llhttp_method_t)r->method), n, r->path.p);
        return problem(r, 404, "not-found", "Not Found", detail, NULL);
    }
    const char *title = status == 403   ? "Forbidden"
                        : status == 405 ? "Method Not Allowed"
                        : status == 429 ? "Too Many Requests"
                                        : "Service Unavailable";
    return problem(r, status, NULL, title, message, NULL);
}

static bool shlink_token(const struct request *r, char *buf, size_t cap, struct slice *token)
{
    (void)buf;
    (void)cap;
    *token = http_header(r, "x-api-key");
    return token->p && token->n;
}

const struct api_dialect shlink_dialect = {
    .name = "shlink",
    .token = shlink_token,
    .error = shlink_error,
    .prefix = "/rest/",
};

/* ---- the ShortUrl object ---- */

/* Shlink's dates: ATOM, "2026-01-31T12:00:00+00:00" (UTC here). */
static json_t *atom(int64_t ms)
{
    if (!ms)
        return json_null();
    char t[RFC3339_MAX], out[32];
    rfc3339_format(ms, t);
    snprintf(out, sizeof(out), "%.19s+00:00", t);
    return json_string(out);
}

static json_t *short_url_json(const struct app *app, const struct link *l)
{
    struct buf su = BUF_INIT;
    link_short_url(&su, app->cfg.base_url, l->code, l->domain);
    json_t *tags = l->tags ? json_loads(l->tags, 0, NULL) : NULL;
    json_t *o = json_object();
    json_object_set_new(o, "shortCode", json_string(l->code));
    json_object_set_new(o, "shortUrl", json_stringn(su.p, su.len));
    json_object_set_new(o, "longUrl", json_string(l->url ? l->url : ""));
    /* Shlink 3's per-device URLs: shortd has none (it has A/B variants) */
    json_object_set_new(o, "deviceLongUrls",
                        json_pack("{s:n,s:n,s:n}", "android", "ios", "desktop"));
    json_object_set_new(o, "dateCreated", atom(l->created_at));
    json_object_set_new(o, "visitsSummary",
                        json_pack("{s:I,s:I,s:I}", "total", (json_int_t)(l->clicks + l->bot_clicks),
                                  "nonBots", (json_int_t)l->clicks, "bots",
                                  (json_int_t)l->bot_clicks));
    json_object_set_new(o, "tags", tags ? tags : json_array());
    json_t *max = l->max_clicks ? json_integer(l->max_clicks) : json_null();
    json_object_set_new(o, "meta",
                        json_pack("{s:n,s:o,s:o}", "validSince", "validUntil", atom(l->expires_at),
                                  "maxVisits", max));
    json_object_set_new(o, "domain", l->domain ? json_string(l->domain) : json_null());
    json_object_set_new(o, "title", l->title ? json_string(l->title) : json_null());
    json_object_set_new(o, "crawlable", json_false());
    json_object_set_new(o, "forwardQuery", json_boolean(app->cfg.pass_query));
    json_object_set_new(o, "hasRedirectRules", json_false());
    buf_release(&su);
    return o;
}

/* ---- what the handlers share ---- */

/* The request's body as a JSON object into r->json (freed with the answer):
 * 0, or Shlink's malformed-request-body written into r. An empty body is
 * an empty object. */
static int body_json(struct request *r)
{
    json_t *doc = r->body.n ? json_loadb(r->body.p, r->body.n, JSON_REJECT_DUPLICATES, NULL)
                            : json_object();
    if (!json_is_object(doc)) {
        json_decref(doc);
        return problem(r, 400, "malformed-request-body", "Malformed request body",
                       "Provided request does not contain a valid JSON body.", NULL);
    }
    r->json = doc;
    return 0;
}

/* validSince: null, or a date that has come (shortd's links redirect from
 * their creation, so only those can be honoured). False for any other. */
static bool valid_since_ok(json_t *v, int64_t now)
{
    if (!v || json_is_null(v))
        return true;
    int64_t ms;
    return json_is_string(v) &&
           rfc3339_parse(json_string_value(v), json_string_length(v), &ms) == ERR_OK && ms <= now;
}

/* Shlink's name of a field of shortd's (links_parse's). */
static const char *shlink_field(const char *field)
{
    static const char *const map[][2] = {
        {"url", "longUrl"},          {"alias", "customSlug"},   {"expires_at", "validUntil"},
        {"max_clicks", "maxVisits"}, {"reuse", "findIfExists"},
    };
    for (size_t i = 0; field && i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(field, map[i][0]) == 0)
            return map[i][1];
    return field ? field : "longUrl";
}

/* Copies Shlink field 'from' of 'src' to shortd field 'to' of 'dst'. */
static void carry(json_t *dst, const char *to, json_t *src, const char *from)
{
    json_t *v = json_object_get(src, from);
    if (v)
        json_object_set(dst, to, v);
}

/* The path's short code: 0, or the 404 written into r. */
static int path_code(struct request *r, char code[CODE_MAX + 1])
{
    struct slice c = r->params[0];
    if (!code_is_plausible(c.p, c.n)) {
        char shown[CODE_MAX + 1];
        snprintf(shown, sizeof(shown), "%.*s", (int)(c.n < CODE_MAX ? c.n : CODE_MAX), c.p);
        for (char *p = shown; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == '"')
                *p = '?';
        return not_found(r, shown, NULL);
    }
    memcpy(code, c.p, c.n);
    code[c.n] = '\0';
    return 0;
}

/* The `domain` query parameter, decoded into 'out' ("" when absent or
 * DEFAULT, Shlink's word for the default domain). */
static void domain_param(const struct request *r, char out[FILTER_MAX + 1])
{
    out[0] = '\0';
    struct slice v;
    if (!http_query_param(r, "domain", &v))
        return;
    long n = pct_form_decode(v.p, v.n, out, FILTER_MAX);
    out[n < 0 ? 0 : n] = '\0';
    if (strlen(out) != (size_t)(n < 0 ? 0 : n) || strcmp(out, "DEFAULT") == 0)
        out[0] = '\0';
}

/* Whether a link answers to the request's `domain` (none: any). */
static bool domain_matches(const struct link *l, const char *domain)
{
    return !*domain || (l->domain && strcasecmp(l->domain, domain) == 0);
}

/* The link of the path's code that the key may see and that is not
 * deleted: 0 with 'l' filled (link_release it), or the status of the
 * answer written into r. */
static int find_link(struct request *r, char code[CODE_MAX + 1], struct link *l)
{
    int status = path_code(r, code);
    if (status)
        return status;
    char domain[FILTER_MAX + 1];
    domain_param(r, domain);
    int rc = owner_link_get(r->app->store, code, owner_scope(r), l);
    if (rc == ERR_OK && (l->state == LINK_DELETED || !l->url || !domain_matches(l, domain))) {
        link_release(l);
        rc = ERR_NOTFOUND;
    }
    if (rc == ERR_NOTFOUND)
        return not_found(r, code, *domain ? domain : NULL);
    if (rc != ERR_OK)
        return unavailable(r);
    return 0;
}

/* ---- POST /rest/v3/short-urls ---- */

struct create_job {
    struct api_job base;
    struct link_input in;
    int64_t owner, now;
    struct idem idem;
    struct link link;
    bool created;
    bool mismatch; /* the Idempotency-Key was used with another request */
    int refused;   /* ERR_EXISTS (slug), ERR_FORBIDDEN (url), ERR_NOTFOUND (domain) */
};

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
        c->refused = ERR_NOTFOUND; /* as another owner's domain */
        return ERR_OK;
    }
    if (c->in.domain && !c->base.r->key.domain[0]) { /* a limited key's domain is granted */
        int64_t owner = -1;
        int rc = st->ops->domain_get(st, c->in.domain, &owner);
        if (rc == ERR_OK && owner != c->owner)
            rc = ERR_NOTFOUND; /* another owner's domain is none of this key's */
        if (rc == ERR_NOTFOUND) {
            c->refused = ERR_NOTFOUND;
            return ERR_OK;
        }
        if (rc != ERR_OK)
            return rc;
    }
    bool reused = false;
    int rc = links_create(c->base.r->app->links, st, &c->in, c->owner, c->now, &c->link, &reused);
    if (rc == ERR_EXISTS || rc == ERR_FORBIDDEN) {
        c->refused = rc;
        return ERR_OK;
    }
    c->created = rc == ERR_OK && !reused;
    return rc;
}

static void create_after_commit(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    if (c->created)
        link_changed(j->r->app, &c->link, c->in.alias ? LINK_NEW_ALIAS : LINK_NEW, c->now);
}

/* The answer of a create that ran, and its status (any thread). */
static json_t *create_answer(const struct create_job *c, const struct app *app, int *status)
{
    *status = 400;
    if (c->refused == ERR_EXISTS) {
        char detail[CODE_MAX + 300];
        snprintf(detail, sizeof(detail), "Provided slug \"%s\" is already in use%s%s%s.",
                 c->in.alias, c->in.domain ? " for domain \"" : "",
                 c->in.domain ? c->in.domain : "", c->in.domain ? "\"" : "");
        json_t *extra = json_pack("{s:s}", "customSlug", c->in.alias);
        if (c->in.domain)
            json_object_set_new(extra, "domain", json_string(c->in.domain));
        return problem_doc(400, "non-unique-slug", "Invalid custom slug", detail, extra);
    }
    if (c->refused)
        return problem_doc(400, "invalid-data", "Invalid data", "Provided data is not valid",
                           json_pack("{s:[s]}", "invalidElements",
                                     c->refused == ERR_NOTFOUND ? "domain" : "longUrl"));
    *status = 200;
    return short_url_json(app, &c->link);
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
    json_t *doc = create_answer(c, j->r->app, &j->status);
    if (j->status < 400) { /* written as http_json and problem() write them */
        struct buf b = BUF_INIT;
        jsonout(&b, doc);
        j->raw = buf_detach(&b, NULL);
    } else {
        j->raw = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    json_decref(doc);
    if (!j->raw)
        abort();
    return idem_finish(st, c->owner, &c->idem, c->now, j->status, j->raw);
}

static int create_respond(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    struct request *r = j->r;
    if (j->job.rc != ERR_OK)
        return unavailable(r);
    if (c->mismatch)
        return problem(r, 422, NULL, "Unprocessable Entity",
                       "This Idempotency-Key was used with a different request.", NULL);
    if (j->replayed)
        http_add_header(r, "Idempotent-Replayed", "true", 4);
    if (j->raw) { /* remembered with its Idempotency-Key */
        http_body(r, j->status, j->status < 400 ? "application/json" : "application/problem+json",
                  j->raw, strlen(j->raw));
        return j->status;
    }
    int status;
    json_t *doc = create_answer(c, r->app, &status);
    return status < 400 ? http_json(r, status, doc) : shlink_json(r, status, doc);
}

int handle_shlink_create(struct request *r)
{
    int status = body_json(r);
    if (status)
        return status;
    json_t *in = r->json;
    int64_t now = now_ms();
    if (!valid_since_ok(json_object_get(in, "validSince"), now))
        return invalid1(r, "validSince");
    json_t *prefix = json_object_get(in, "pathPrefix");
    if (prefix && !json_is_null(prefix) && !(json_is_string(prefix) && !json_string_length(prefix)))
        return invalid1(r, "pathPrefix"); /* shortd's codes have no prefixes */
    /* crawlable, forwardQuery, shortCodeLength, validateUrl... are Shlink's
     * settings of a link that shortd decides itself: not carried over. */
    json_t *body = json_object();
    json_t *url = json_object_get(in, "longUrl");
    json_object_set_new(body, "url", url ? json_incref(url) : json_string(""));
    carry(body, "alias", in, "customSlug");
    carry(body, "title", in, "title");
    carry(body, "tags", in, "tags");
    carry(body, "expires_at", in, "validUntil");
    carry(body, "max_clicks", in, "maxVisits");
    carry(body, "reuse", in, "findIfExists");
    carry(body, "domain", in, "domain");
    json_t *slug = json_object_get(body, "alias");
    if (json_is_string(slug) && !json_string_length(slug))
        json_object_del(body, "alias"); /* Shlink takes "" as none */

    struct create_job *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->now = now;
    const char *field = NULL;
    char why[256];
    int rc = links_parse(r->app->links, body, now, &c->in, &field, why, sizeof(why));
    json_decref(body);
    if (rc != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        return invalid1(r, shlink_field(field));
    }
    if (idem_read(r, now, &c->idem) != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        return problem(r, 400, NULL, "Bad Request",
                       "Idempotency-Key must be 1 to 255 visible ASCII characters.", NULL);
    }
    c->owner = r->key.owner;
    /* Without an Idempotency-Key a create writes one row: no savepoint. */
    c->base.job.single_write = !c->idem.key;
    c->base.after_commit = create_after_commit;
    c->base.respond = create_respond;
    c->base.release = create_release;
    return api_job_submit(r, &c->base, create_run);
}

/* ---- GET /rest/v3/short-urls/{shortCode} ---- */

int handle_shlink_get(struct request *r)
{
    char code[CODE_MAX + 1];
    struct link l;
    int status = find_link(r, code, &l);
    if (status)
        return status;
    json_t *o = short_url_json(r->app, &l);
    link_release(&l);
    return http_json(r, 200, o);
}

/* ---- GET /rest/v3/short-urls and /rest/v3/tags: a scan of the key's links ---- */

/* What a list sorts and pages: enough of each link to order it. */
struct row {
    char code[CODE_MAX + 1];
    int64_t created_at, clicks, total;
    char *url, *title;
};

struct scan {
    struct row *v;
    size_t n;
    bool any;
    char last_code[CODE_MAX + 1];
    int64_t last_created;
    const char *const *tags;       /* NULL-terminated tags[] filter, or NULL */
    bool all_tags;                 /* tagsMode=all */
    json_t *tag_set;               /* for /tags: every tag seen (an object used as a set) */
    int64_t since, until;          /* startDate, endDate of dateCreated (0: none) */
    const char *domain;            /* "": any */
    bool no_expired, no_exhausted; /* excludePastValidUntil, excludeMaxVisitsReached */
};

/* Whether the link's tags (JSON text) pass the tags[] filter. */
static bool tags_match(const struct scan *s, const char *tags)
{
    if (!s->tags || !s->tags[0])
        return true;
    json_t *a = tags ? json_loads(tags, 0, NULL) : NULL;
    size_t hits = 0, want = 0;
    for (; s->tags[want]; want++) {
        size_t i;
        json_t *t;
        json_array_foreach(a, i, t)
        {
            if (strcmp(json_string_value(t), s->tags[want]) == 0) {
                hits++;
                break;
            }
        }
    }
    json_decref(a);
    return s->all_tags ? hits == want : hits > 0;
}

static int scan_one(const struct link *l, void *arg)
{
    struct scan *s = arg;
    s->any = true;
    memcpy(s->last_code, l->code, sizeof(s->last_code));
    s->last_created = l->created_at;
    if (!l->url || s->n == SCAN_MAX || !tags_match(s, l->tags) ||
        (s->since && l->created_at < s->since) || (s->until && l->created_at > s->until) ||
        (s->domain && !domain_matches(l, s->domain)))
        return 0;
    if (s->tag_set) {
        json_t *a = l->tags ? json_loads(l->tags, 0, NULL) : NULL;
        size_t i;
        json_t *t;
        json_array_foreach(a, i, t) json_object_set(s->tag_set, json_string_value(t), json_true());
        json_decref(a);
        s->n++;
        return 0;
    }
    struct row *w = &s->v[s->n++];
    memcpy(w->code, l->code, sizeof(w->code));
    w->created_at = l->created_at;
    w->clicks = l->clicks;
    w->total = l->clicks + l->bot_clicks;
    w->url = xstrdup(l->url);
    w->title = l->title ? xstrdup(l->title) : NULL;
    return 0;
}

/* Reads the key's newest links (SCAN_MAX at most, deleted and disabled ones
 * left out) into s, page by page, as a heavy read (router_heavy_enter).
 * 'text' filters as GET /api/links's q does. 0, or the status of the answer
 * written into r. */
static int scan_links(struct request *r, struct scan *s, const char *text)
{
    if (router_heavy_enter(r)) /* its Retry-After is written: the body is Shlink's */
        return problem(r, 429, NULL, "Too Many Requests",
                       "this key already runs its share of searches; try again", NULL);
    if (!s->tag_set) {
        s->v = calloc(SCAN_MAX, sizeof(*s->v));
        if (!s->v)
            abort();
    }
    char after[CODE_MAX + 1] = "";
    struct link_query q = {.owner = owner_scope(r),
                           .want_live = true,
                           .want_expired = !s->no_expired,
                           .want_exhausted = !s->no_exhausted,
                           .now = now_ms(),
                           .limit = 1000,
                           .after_code = after,
                           .q = text && *text ? text : NULL};
    struct store *st = r->app->store;
    int rc;
    for (;;) {
        s->any = false;
        rc = st->ops->link_list(st, &q, scan_one, s);
        if (rc != ERR_OK || !s->any || s->n == SCAN_MAX)
            break;
        memcpy(after, s->last_code, sizeof(after));
        q.after_created = s->last_created;
    }
    router_heavy_leave(r->app, r->key.id);
    return rc == ERR_OK ? 0 : unavailable(r);
}

static void scan_release(struct scan *s)
{
    for (size_t i = 0; s->v && i < s->n; i++) {
        free(s->v[i].url);
        free(s->v[i].title);
    }
    free(s->v);
    json_decref(s->tag_set);
}

/* A query parameter as a whole number in [lo, hi]: false when present and
 * not one. */
static bool int_param(const struct request *r, const char *name, int64_t lo, int64_t hi,
                      int64_t *out)
{
    struct slice v;
    if (!http_query_param(r, name, &v))
        return true;
    bool neg = v.n && v.p[0] == '-';
    size_t i = neg;
    int64_t n = 0;
    if (i == v.n || v.n > 12)
        return false;
    for (; i < v.n; i++) {
        if (!isdigit((unsigned char)v.p[i]))
            return false;
        n = n * 10 + (v.p[i] - '0');
    }
    n = neg ? -n : n;
    if (n < lo || n > hi)
        return false;
    *out = n;
    return true;
}

/* Shlink's pagination object: Pagerfanta's, which counts one page when
 * there is nothing. */
static json_t *pagination(int64_t page, int64_t per_page, size_t in_page, size_t total)
{
    int64_t pages = per_page > 0 ? (int64_t)((total + (size_t)per_page - 1) / (size_t)per_page) : 1;
    if (pages < 1)
        pages = 1;
    return json_pack("{s:I,s:I,s:I,s:I,s:I}", "currentPage", (json_int_t)page, "pagesCount",
                     (json_int_t)pages, "itemsPerPage", (json_int_t)per_page, "itemsInCurrentPage",
                     (json_int_t)in_page, "totalItems", (json_int_t)total);
}

/* The page and itemsPerPage parameters (-1: every item on one page):
 * false when either is not a number Shlink takes. */
static bool page_params(const struct request *r, int64_t *page, int64_t *per_page)
{
    *page = 1;
    *per_page = PER_PAGE_DEFAULT;
    return int_param(r, "page", 1, 1000000, page) &&
           int_param(r, "itemsPerPage", -1, SCAN_MAX, per_page) && *per_page != 0;
}

/* The slice of a list of 'n' items that a page shows: [*from, *to). */
static void page_bounds(size_t n, int64_t page, int64_t per_page, size_t *from, size_t *to)
{
    if (per_page < 0) {
        *from = 0;
        *to = n;
        return;
    }
    size_t f = (size_t)((page - 1) * per_page);
    *from = f < n ? f : n;
    *to = *from + (size_t)per_page < n ? *from + (size_t)per_page : n;
}

/* orderBy's field and direction ("dateCreated-ASC"...). qsort takes no
 * context: the order of the list being sorted is its thread's. */
enum order { BY_DATE, BY_CODE, BY_URL, BY_TITLE, BY_VISITS, BY_NONBOT };
static _Thread_local enum order order_field;
static _Thread_local int order_dir;

static int cmp_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

static int by_order(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    int c = 0;
    switch (order_field) {
    case BY_DATE: c = (a->created_at > b->created_at) - (a->created_at < b->created_at); break;
    case BY_CODE: c = strcmp(a->code, b->code); break;
    case BY_URL: c = cmp_str(a->url, b->url); break;
    case BY_TITLE: c = cmp_str(a->title, b->title); break;
    case BY_VISITS: c = (a->total > b->total) - (a->total < b->total); break;
    case BY_NONBOT: c = (a->clicks > b->clicks) - (a->clicks < b->clicks); break;
    }
    return c * order_dir;
}

static bool parse_order(struct slice v, enum order *field, int *dir)
{
    static const struct {
        const char *name;
        enum order f;
    } fields[] = {
        {"dateCreated", BY_DATE}, {"shortCode", BY_CODE}, {"longUrl", BY_URL},
        {"title", BY_TITLE},      {"visits", BY_VISITS},  {"nonBotVisits", BY_NONBOT},
    };
    const char *dash = memchr(v.p, '-', v.n);
    struct slice name = {v.p, dash ? (size_t)(dash - v.p) : v.n};
    struct slice d = {dash ? dash + 1 : "", dash ? v.n - name.n - 1 : 0};
    *dir = 1;
    if (dash && slice_eq(d, "DESC"))
        *dir = -1;
    else if (dash && !slice_eq(d, "ASC"))
        return false;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (slice_eq(name, fields[i].name)) {
            *field = fields[i].f;
            return true;
        }
    }
    return false;
}

/* The values of tags[] (or tags%5B%5D) in the query, decoded into 'store'
 * (each FILTER_MAX + 1 bytes), NULL-terminated in 'out'. False when one is
 * too long or not text. */
static bool tag_params(const struct request *r, char store[][FILTER_MAX + 1],
                       const char *out[TAG_FILTERS + 1])
{
    size_t n = 0;
    const char *p = r->query.p, *end = r->query.p + r->query.n;
    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        struct slice k = {p, eq ? (size_t)(eq - p) : 0};
        if (eq && (slice_eq(k, "tags[]") || slice_eq(k, "tags%5B%5D") || slice_eq(k, "tags"))) {
            if (n == TAG_FILTERS)
                return false;
            long dn = pct_form_decode(eq + 1, (size_t)(stop - eq - 1), store[n], FILTER_MAX);
            if (dn < 0 || memchr(store[n], '\0', (size_t)dn))
                return false;
            store[n][dn] = '\0';
            out[n] = store[n];
            n++;
        }
        p = amp ? amp + 1 : NULL;
    }
    out[n] = NULL;
    return true;
}

/* A date parameter (startDate, endDate) as ms into *out (left alone when
 * absent): false when it is no ISO 8601 date-time. */
static bool date_param(const struct request *r, const char *name, int64_t *out)
{
    struct slice v;
    if (!http_query_param(r, name, &v) || !v.n)
        return true;
    char d[64];
    long n = pct_form_decode(v.p, v.n, d, sizeof(d) - 1);
    return n > 0 && rfc3339_parse(d, (size_t)n, out) == ERR_OK;
}

/* A true/false parameter: true only for "true". */
static bool flag_param(const struct request *r, const char *name)
{
    struct slice v;
    return http_query_param(r, name, &v) && slice_eq(v, "true");
}

int handle_shlink_list(struct request *r)
{
    int64_t page, per_page;
    if (!page_params(r, &page, &per_page))
        return invalid1(r, "itemsPerPage");
    enum order field = BY_DATE;
    int dir = -1; /* shortd's order: newest first */
    struct slice v;
    if (http_query_param(r, "orderBy", &v) && v.n && !parse_order(v, &field, &dir))
        return invalid1(r, "orderBy");
    char text[FILTER_MAX + 1] = "";
    if (http_query_param(r, "searchTerm", &v)) {
        long dn = pct_form_decode(v.p, v.n, text, FILTER_MAX);
        if (dn < 0 || memchr(text, '\0', (size_t)dn))
            return invalid1(r, "searchTerm");
        text[dn] = '\0';
    }
    char(*tagbuf)[FILTER_MAX + 1] = calloc(TAG_FILTERS, FILTER_MAX + 1);
    if (!tagbuf)
        abort();
    const char *tags[TAG_FILTERS + 1];
    struct scan s = {.tags = tags};
    if (!tag_params(r, tagbuf, tags)) {
        free(tagbuf);
        return invalid1(r, "tags");
    }
    s.all_tags = http_query_param(r, "tagsMode", &v) && slice_eq(v, "all");
    s.no_expired = flag_param(r, "excludePastValidUntil");
    s.no_exhausted = flag_param(r, "excludeMaxVisitsReached");
    char domain[FILTER_MAX + 1];
    domain_param(r, domain);
    s.domain = *domain ? domain : NULL;
    const char *bad = !date_param(r, "startDate", &s.since) ? "startDate"
                      : !date_param(r, "endDate", &s.until) ? "endDate"
                                                            : NULL;
    if (bad) {
        free(tagbuf);
        return invalid1(r, bad);
    }
    int status = scan_links(r, &s, text);
    free(tagbuf);
    if (status) {
        scan_release(&s);
        return status;
    }
    if (field != BY_DATE || dir != -1) {
        order_field = field;
        order_dir = dir;
        qsort(s.v, s.n, sizeof(*s.v), by_order);
    }
    size_t from, to;
    page_bounds(s.n, page, per_page, &from, &to);
    json_t *data = json_array();
    struct store *st = r->app->store;
    for (size_t i = from; i < to; i++) {
        struct link l;
        if (st->ops->link_get(st, s.v[i].code, &l) != ERR_OK)
            continue;
        json_array_append_new(data, short_url_json(r->app, &l));
        link_release(&l);
    }
    json_t *doc = json_pack("{s:{s:o,s:o}}", "shortUrls", "data", data, "pagination",
                            pagination(page, per_page < 0 ? (int64_t)s.n : per_page,
                                       json_array_size(data), s.n));
    scan_release(&s);
    return http_json(r, 200, doc);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int handle_shlink_tags(struct request *r)
{
    int64_t page, per_page;
    page = 1;
    per_page = -1; /* the tags come on one page unless asked otherwise */
    if (!int_param(r, "page", 1, 1000000, &page) ||
        !int_param(r, "itemsPerPage", -1, SCAN_MAX, &per_page) || !per_page)
        return invalid1(r, "itemsPerPage");
    struct scan s = {.tag_set = json_object()};
    int status = scan_links(r, &s, NULL);
    if (status) {
        scan_release(&s);
        return status;
    }
    size_t n = json_object_size(s.tag_set), k = 0;
    const char **names = calloc(n ? n : 1, sizeof(*names));
    if (!names)
        abort();
    const char *name;
    json_t *val;
    json_object_foreach(s.tag_set, name, val) names[k++] = name;
    qsort(names, n, sizeof(*names), by_name);
    size_t from, to;
    page_bounds(n, page, per_page, &from, &to);
    json_t *data = json_array();
    for (size_t i = from; i < to; i++)
        json_array_append_new(data, json_string(names[i]));
    free(names);
    json_t *doc =
        json_pack("{s:{s:o,s:o}}", "tags", "data", data, "pagination",
                  pagination(page, per_page < 0 ? (int64_t)n : per_page, json_array_size(data), n));
    scan_release(&s);
    return http_json(r, 200, doc);
}

/* ---- PATCH and DELETE /rest/v3/short-urls/{shortCode} ---- */

struct edit_job {
    struct api_job base;
    char code[CODE_MAX + 1];
    char domain[FILTER_MAX + 1];
    bool remove; /* DELETE */
    struct link_patch p;
    int64_t now, owner, key_id;
    struct link link;
    bool changed, missing;
};

static void edit_release(struct api_job *j)
{
    struct edit_job *e = (struct edit_job *)j;
    link_patch_release(&e->p);
    link_release(&e->link);
    free(e);
}

static int edit_run(struct wjob *wj, struct store *st)
{
    struct edit_job *e = (struct edit_job *)wj;
    int rc = owner_link_get(st, e->code, e->owner, &e->link);
    if (rc == ERR_OK &&
        (e->link.state == LINK_DELETED || !e->link.url || !domain_matches(&e->link, e->domain)))
        rc = ERR_NOTFOUND;
    if (rc == ERR_NOTFOUND) {
        e->missing = true;
        return ERR_OK;
    }
    if (rc != ERR_OK)
        return rc;
    if (e->remove) {
        rc = st->ops->link_set_state(st, e->code, LINK_DELETED, e->now);
        if (rc == ERR_OK) {
            link_release(&e->link);
            rc = st->ops->link_get(st, e->code, &e->link);
        }
        e->changed = rc == ERR_OK;
        return rc;
    }
    if (!e->p.fields)
        return ERR_OK; /* nothing shortd keeps was changed */
    const char *field = NULL;
    rc = links_edit(e->base.r->app->links, st, &e->link, &e->p, e->now, e->key_id, &field);
    if (rc == ERR_INVALID || rc == ERR_MISMATCH || rc == ERR_FORBIDDEN) {
        e->base.status = 400; /* the destination cannot be taken */
        return ERR_OK;
    }
    e->changed = rc == ERR_OK;
    return rc;
}

static void edit_after_commit(struct api_job *j)
{
    struct edit_job *e = (struct edit_job *)j;
    if (e->changed)
        link_changed(j->r->app, &e->link, LINK_EDITED, e->now);
}

static int edit_respond(struct api_job *j)
{
    struct edit_job *e = (struct edit_job *)j;
    struct request *r = j->r;
    if (j->job.rc != ERR_OK)
        return unavailable(r);
    if (e->missing)
        return not_found(r, e->code, *e->domain ? e->domain : NULL);
    if (j->status == 400)
        return invalid1(r, "longUrl");
    if (e->remove)
        return http_body(r, 204, NULL, "", 0);
    return http_json(r, 200, short_url_json(r->app, &e->link));
}

static struct edit_job *edit_new(struct request *r)
{
    struct edit_job *e = calloc(1, sizeof(*e));
    if (!e)
        abort();
    e->now = now_ms();
    e->owner = owner_scope(r);
    e->key_id = r->key.id;
    domain_param(r, e->domain);
    e->base.after_commit = edit_after_commit;
    e->base.respond = edit_respond;
    e->base.release = edit_release;
    return e;
}

int handle_shlink_delete(struct request *r)
{
    struct edit_job *e = edit_new(r);
    int status = path_code(r, e->code);
    if (status) {
        free(e);
        return status;
    }
    e->remove = true;
    return api_job_submit(r, &e->base, edit_run);
}

int handle_shlink_edit(struct request *r)
{
    int status = body_json(r);
    if (status)
        return status;
    json_t *in = r->json;
    struct edit_job *e = edit_new(r);
    status = path_code(r, e->code);
    if (status) {
        free(e);
        return status;
    }
    const char *bad = NULL;
    json_t *max = json_object_get(in, "maxVisits");
    if (!valid_since_ok(json_object_get(in, "validSince"), e->now))
        bad = "validSince";
    else if (max && !json_is_null(max))
        bad = "maxVisits"; /* shortd sets a click limit when a link is made, only */
    json_t *body = json_object();
    carry(body, "url", in, "longUrl");
    carry(body, "title", in, "title");
    carry(body, "tags", in, "tags");
    carry(body, "expires_at", in, "validUntil");
    const char *field = NULL;
    char why[256];
    if (!bad && json_object_size(body) &&
        links_parse_patch(r->app->links, body, e->now, &e->p, &field, why, sizeof(why)) != ERR_OK)
        bad = shlink_field(field);
    json_decref(body);
    if (bad) {
        link_patch_release(&e->p);
        free(e);
        return invalid1(r, bad);
    }
    /* An edit of nothing shortd keeps (crawlable, forwardQuery...) changes
     * nothing and answers the link, as Shlink does. */
    return api_job_submit(r, &e->base, edit_run);
}

/* ---- visits ---- */

struct visits_ctx {
    json_t *arr;
    const char *short_url, *long_url;
    int64_t since, until; /* startDate, endDate (0: none) */
};

static int visit_row(const struct recent_click *c, void *arg)
{
    struct visits_ctx *x = arg;
    if ((x->since && c->ts < x->since) || (x->until && c->ts > x->until))
        return 0;
    json_t *loc = json_null();
    if (c->country && *c->country)
        loc = json_pack("{s:s,s:s,s:s,s:s,s:n,s:n,s:s,s:b}", "countryCode", c->country,
                        "countryName", "", "regionName", "", "cityName", "", "latitude",
                        "longitude", "timezone", "", "isEmpty", 0);
    json_t *v = json_pack("{s:s,s:o,s:s,s:o,s:b,s:s,s:s}", "referer",
                          c->referrer ? c->referrer : "", "date", atom(c->ts), "userAgent",
                          c->browser ? c->browser : "", "visitLocation", loc, "potentialBot", 0,
                          "visitedUrl", x->short_url, "redirectUrl", x->long_url);
    json_array_append_new(x->arr, v);
    return 0;
}

int handle_shlink_visits(struct request *r)
{
    int64_t page, per_page;
    if (!page_params(r, &page, &per_page))
        return invalid1(r, "itemsPerPage");
    char code[CODE_MAX + 1];
    struct link l;
    int status = find_link(r, code, &l);
    if (status)
        return status;
    struct buf su = BUF_INIT;
    link_short_url(&su, r->app->cfg.base_url, l.code, l.domain);
    struct visits_ctx x = {.arr = json_array(), .short_url = su.p, .long_url = l.url};
    if (!date_param(r, "startDate", &x.since) || !date_param(r, "endDate", &x.until)) {
        buf_release(&su);
        link_release(&l);
        json_decref(x.arr);
        return invalid1(r, x.since ? "endDate" : "startDate");
    }
    struct store *st = r->app->store;
    int rc = st->ops->stats_recent(st, l.code, RECENT_KEEP, visit_row, &x);
    buf_release(&su);
    link_release(&l);
    if (rc != ERR_OK) {
        json_decref(x.arr);
        return unavailable(r);
    }
    size_t n = json_array_size(x.arr), from, to;
    page_bounds(n, page, per_page, &from, &to);
    json_t *data = json_array();
    for (size_t i = from; i < to; i++)
        json_array_append(data, json_array_get(x.arr, i));
    json_decref(x.arr);
    json_t *doc =
        json_pack("{s:{s:o,s:o}}", "visits", "data", data, "pagination",
                  pagination(page, per_page < 0 ? (int64_t)n : per_page, json_array_size(data), n));
    return http_json(r, 200, doc);
}

int handle_shlink_visits_summary(struct request *r)
{
    struct totals t;
    struct store *st = r->app->store;
    if (st->ops->stats_totals(st, owner_scope(r), &t) != ERR_OK)
        return unavailable(r);
    json_t *doc = json_pack("{s:{s:{s:I,s:I,s:I},s:{s:i,s:i,s:i}}}", "visits", "nonOrphanVisits",
                            "total", (json_int_t)(t.clicks + t.bot_clicks), "nonBots",
                            (json_int_t)t.clicks, "bots", (json_int_t)t.bot_clicks, "orphanVisits",
                            "total", 0, "nonBots", 0, "bots", 0);
    return http_json(r, 200, doc);
}

/* ---- GET /rest/health ---- */

int handle_shlink_health(struct request *r)
{
    struct store *st = r->app->store;
    bool pass = st->ops->ping(st) == ERR_OK;
    json_t *doc = json_pack("{s:s,s:s,s:{s:s,s:s}}", "status", pass ? "pass" : "fail", "version",
                            SHLINK_VERSION, "links", "about", "https://shlink.io", "project",
                            "https://github.com/shlinkio/shlink");
    char *s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!s)
        abort();
    int status = http_body(r, pass ? 200 : 503, "application/health+json", s, strlen(s));
    free(s);
    return status;
}
