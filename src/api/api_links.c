/* api_links.c - /api/links: create (one, or up to 1,000 in one transaction),
 * list, read, edit (PATCH) and its history, delete, disable, enable.
 * Reads run on the event-loop thread against its own store connection;
 * writes go through the group commit (apijob.h) and are durable before they
 * are answered. */
#include <ctype.h>
#include <llhttp.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "app/app.h"
#include "base/err.h"
#include "api/router.h"
#include "api/handlers.h"
#include "api/idem.h"
#include "links/links.h"
#include "base/log.h"
#include "api/owner.h"
#include "base/pct.h"
#include "links/pwhash.h"
#include "redirect/tiers.h"
#include "http/server.h"
#include "base/timeutil.h"
#include "base/banned.h"

#define LIST_DEFAULT 50
#define LIST_MAX 1000
/* ?spark=DAYS: at most this many days, on pages of at most SPARK_PAGE links
 * (one read of daily counts a link). */
#define SPARK_MAX 90
#define SPARK_PAGE 100
#define FILTER_MAX 128 /* bytes of a tag or q filter */
#define BULK_MAX 1000  /* links in one POST /api/links/bulk */

/* The link object of the API. */
json_t *link_json(const struct app *app, const struct link *l, int64_t now)
{
    char created[RFC3339_MAX], expires[RFC3339_MAX] = "";
    rfc3339_format(l->created_at, created);
    if (l->expires_at)
        rfc3339_format(l->expires_at, expires);
    json_t *tags = l->tags ? json_loads(l->tags, 0, NULL) : NULL;
    if (!tags)
        tags = json_array();
    int64_t days = link_days_remaining(l, now);
    json_t *o = json_object();
    json_object_set_new(o, "code", json_string(l->code));
    struct buf su = BUF_INIT;
    link_short_url(&su, app->cfg.base_url, l->code, l->domain);
    json_object_set_new(o, "short_url", json_stringn(su.p, su.len));
    buf_release(&su);
    json_object_set_new(o, "url", l->url ? json_string(l->url) : json_null());
    json_object_set_new(o, "created_at", json_string(created));
    json_object_set_new(o, "expires_at", l->expires_at ? json_string(expires) : json_null());
    json_object_set_new(o, "state", json_string(link_state_name(l, now)));
    json_object_set_new(o, "days_remaining", days < 0 ? json_null() : json_integer(days));
    json_object_set_new(o, "clicks", json_integer(l->clicks));
    json_object_set_new(o, "bot_clicks", json_integer(l->bot_clicks));
    json_object_set_new(o, "title", l->title ? json_string(l->title) : json_null());
    json_object_set_new(o, "note", l->note ? json_string(l->note) : json_null());
    json_object_set_new(o, "tags", tags);
    json_object_set_new(o, "permanent", json_boolean(l->permanent));
    json_object_set_new(o, "track", json_boolean(!l->untracked));
    json_object_set_new(o, "domain", l->domain ? json_string(l->domain) : json_null());
    json_object_set_new(o, "protected", json_boolean(l->password != NULL));
    json_object_set_new(o, "max_clicks", l->max_clicks ? json_integer(l->max_clicks) : json_null());
    json_object_set_new(o, "clicks_left",
                        l->max_clicks
                            ? json_integer(l->max_clicks > l->used ? l->max_clicks - l->used : 0)
                            : json_null());
    json_t *variants = l->variants ? json_loads(l->variants, 0, NULL) : NULL;
    json_object_set_new(o, "variants", variants ? variants : json_null());
    json_t *utm = l->utm ? json_loads(l->utm, 0, NULL) : NULL;
    json_object_set_new(o, "utm", utm ? utm : json_null());
    if (l->dest)
        json_object_set_new(o, "destination", json_string(l->dest));
    return o;
}

/* ---- passwords: hashed on libuv's thread pool before the writer job ---- */

struct hash_wait {
    struct task task;
    char *pw; /* a copy until it is handed to the pool, then wiped */
    size_t n;
    struct request *r;
    struct api_job *job;
    char **slot; /* where the hash goes in the job */
    int (*run)(struct wjob *, struct store *);
};

static void hashed(int rc, const char *hash, void *arg)
{
    struct hash_wait *w = arg;
    struct request *r = w->r;
    if (rc == ERR_OK) {
        *w->slot = xstrdup(hash);
        api_job_submit(r, w->job, w->run);
    } else {
        w->job->release(w->job);
        http_resume(r, http_unavailable(r, "cannot hash the password now; try again"));
    }
    free(w);
}

/* On the request's loop: the hash goes to libuv's thread pool. */
static void hash_start(struct task *t)
{
    struct hash_wait *w = (struct hash_wait *)t;
    int rc = pwhash_make_async(worker_loop(request_worker(w->r)), w->pw, w->n, hashed, w);
    sodium_memzero(w->pw, w->n);
    free(w->pw);
    w->pw = NULL;
    if (rc != ERR_OK) {
        struct request *r = w->r;
        w->job->release(w->job);
        free(w);
        http_resume(r, http_unavailable(r, "cannot hash the password now; try again"));
    }
}

/* Submits 'job' once the body's "password" (checked by the parser) is
 * hashed into *slot; at once when the body has none (or null). Never blocks
 * the event loop: Argon2id runs on the thread pool. */
static int submit_hashed(struct request *r, struct api_job *job, char **slot,
                         int (*run)(struct wjob *, struct store *))
{
    json_t *pw = json_object_get(r->json, "password");
    if (!json_is_string(pw))
        return api_job_submit(r, job, run);
    struct hash_wait *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    *w = (struct hash_wait){.r = r, .job = job, .slot = slot, .run = run};
    w->n = json_string_length(pw);
    w->pw = malloc(w->n ? w->n : 1);
    if (!w->pw)
        abort();
    memcpy(w->pw, json_string_value(pw), w->n);
    w->task.fn = hash_start;
    worker_post(request_worker(r), &w->task); /* a handler runs on a store thread */
    return HTTP_ASYNC;
}

/* ---- create ---- */

/* idem_start for shortd's own creates: another request under the key is
 * 422 idempotency_mismatch. */
static int idem_begin(struct api_job *j, struct store *st, int64_t owner, const struct idem *k,
                      int64_t now)
{
    int rc = idem_start(j, st, owner, k, now);
    if (rc == ERR_EXISTS)
        return api_job_error(j, 422, "idempotency_mismatch", NULL, IDEM_MISMATCH);
    return rc;
}

/* The answer is remembered with the key, in the same transaction. */
static int idem_end(struct api_job *j, struct store *st, int64_t owner, const struct idem *k,
                    int64_t now)
{
    char *body = json_dumps(j->answer, JSON_COMPACT);
    if (!body)
        abort();
    int rc = idem_finish(st, owner, k, now, j->status, body);
    free(body);
    return rc;
}

/* Reads the Idempotency-Key header into 'k': 0, or the status of the 400
 * already written. */
static int idem_header(struct request *r, int64_t now, struct idem *k)
{
    if (idem_read(r, now, k) != ERR_OK)
        return http_error(r, 400, "invalid_header", "Idempotency-Key", IDEM_BAD_HEADER);
    return 0;
}

/* What a create that did not happen answers. */
struct refusal {
    int status;
    const char *code, *field, *message;
};

/* One create inside the writer's transaction, shared by single and bulk
 * creates. ERR_OK with 'out' the link (*reused: the caller's existing one),
 * ERR_OK with 'no' filled when the rules refuse it (nothing written), or a
 * storage error that fails the whole job. */
static int create_one(struct app *app, struct store *st, const struct link_input *in, int64_t owner,
                      int64_t now, struct link *out, bool *reused, struct refusal *no)
{
    memset(no, 0, sizeof(*no));
    int rc = links_create(app->links, st, in, owner, now, out, reused);
    if (rc == ERR_EXISTS)
        *no = (struct refusal){409, "alias_taken", "alias",
                               "this alias is taken (or was used "
                               "before)"};
    else if (rc == ERR_FORBIDDEN)
        *no = (struct refusal){400, "invalid_field", "url", "destination host is blocked"};
    else
        return rc;
    return ERR_OK;
}

static json_t *refusal_json(const struct refusal *no)
{
    return json_pack("{s:s,s:s,s:s?}", "code", no->code, "message", no->message, "field",
                     no->field);
}

struct create_job {
    struct api_job base;
    struct link_input in;
    int64_t owner;
    int64_t now;
    struct idem idem;
    struct link link;
    bool created;
};

static void create_release(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    link_input_release(&c->in);
    link_release(&c->link);
    free(c->idem.key);
    free(c);
}

static int create_run(struct wjob *wj, struct store *st)
{
    struct create_job *c = (struct create_job *)wj;
    struct api_job *j = &c->base;
    struct app *app = j->r->app;
    if (c->idem.key) {
        int rc = idem_begin(j, st, c->owner, &c->idem, c->now);
        if (rc != ERR_NOTFOUND)
            return rc;
    }
    if (owner_key_domain(&j->r->key, &c->in.domain) != ERR_OK)
        return api_job_error(j, 403, "forbidden", "domain",
                             "this API key is limited to links on another domain");
    if (c->in.domain && !j->r->key.domain[0]) { /* a limited key's domain is granted */
        int64_t owner = -1;
        int rc = st->ops->domain_get(st, c->in.domain, &owner);
        if (rc == ERR_NOTFOUND)
            return api_job_error(j, 400, "invalid_field", "domain",
                                 "domain is not registered (POST /api/domains first)");
        if (rc != ERR_OK)
            return rc;
        if (owner != c->owner)
            return api_job_error(j, 403, "forbidden", "domain",
                                 "domain is registered to another owner");
    }
    if (c->in.variants) {
        const char *field = NULL;
        int rc = links_check_blocked(app->links, st, NULL, c->in.variants, &field);
        if (rc == ERR_FORBIDDEN)
            return api_job_error(j, 400, "invalid_field", field, "a variant's host is blocked");
        if (rc != ERR_OK)
            return rc;
    }
    bool reused = false;
    struct refusal no;
    int rc = create_one(app, st, &c->in, c->owner, c->now, &c->link, &reused, &no);
    if (rc != ERR_OK)
        return rc;
    if (no.status) {
        api_job_error(j, no.status, no.code, no.field, no.message);
    } else {
        c->created = !reused;
        j->status = reused ? 200 : 201;
        if (c->idem.key) /* the answer is remembered with the key */
            j->answer = link_json(app, &c->link, c->now);
    }
    return c->idem.key ? idem_end(j, st, c->owner, &c->idem, c->now) : ERR_OK;
}

static void create_after_commit(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    if (c->created)
        link_changed(j->r->app, &c->link, c->in.alias ? LINK_NEW_ALIAS : LINK_NEW, c->now);
}

static void create_render(struct api_job *j)
{
    struct create_job *c = (struct create_job *)j;
    if (j->status == 200 || j->status == 201)
        j->answer = link_json(j->r->app, &c->link, c->now);
}

int handle_link_create(struct request *r)
{
    struct app *app = r->app;
    struct create_job *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->now = now_ms();
    const char *field = NULL;
    char why[256];
    if (links_parse(app->links, r->json, c->now, &c->in, &field, why, sizeof(why)) != ERR_OK) {
        link_input_release(&c->in);
        free(c);
        return http_error(r, 400, "invalid_field", field, "%s %s", field ? field : "body", why);
    }
    int status = idem_header(r, c->now, &c->idem);
    if (status) {
        link_input_release(&c->in);
        free(c);
        return status;
    }
    c->owner = r->key.owner;
    /* Without an Idempotency-Key a create writes one row (a code block claim
     * may come with it, harmless to keep), so it needs no savepoint. */
    c->base.job.single_write = !c->idem.key;
    c->base.after_commit = create_after_commit;
    c->base.render = create_render;
    c->base.release = create_release;
    return submit_hashed(r, &c->base, &c->in.password, create_run);
}

/* ---- bulk create ---- */

struct bulk_item {
    struct link_input in;
    int status;       /* 0 until decided */
    json_t *error;    /* {"code", "message", "field"} when refused */
    struct link link; /* 200/201 */
};

struct bulk_job {
    struct api_job base;
    int64_t owner;
    int64_t now;
    struct idem idem;
    size_t n;
    struct bulk_item *items;
};

static void bulk_release(struct api_job *j)
{
    struct bulk_job *b = (struct bulk_job *)j;
    for (size_t i = 0; i < b->n; i++) {
        link_input_release(&b->items[i].in);
        link_release(&b->items[i].link);
        json_decref(b->items[i].error);
    }
    free(b->items);
    free(b->idem.key);
    free(b);
}

/* {"results": [{"status": 201, "link": {...}} | {"status": 409, "error": {...}}, ...]} */
static json_t *bulk_answer(struct bulk_job *b, const struct app *app)
{
    json_t *results = json_array();
    for (size_t i = 0; i < b->n; i++) {
        struct bulk_item *it = &b->items[i];
        json_t *o = json_pack("{s:i}", "status", it->status);
        if (it->error)
            json_object_set(o, "error", it->error);
        else
            json_object_set_new(o, "link", link_json(app, &it->link, b->now));
        json_array_append_new(results, o);
    }
    return json_pack("{s:o}", "results", results);
}

/* Every item in its own savepoint inside the job's: a refused item leaves
 * nothing behind and never fails the others; a storage error fails them all. */
static int bulk_run(struct wjob *wj, struct store *st)
{
    struct bulk_job *b = (struct bulk_job *)wj;
    struct api_job *j = &b->base;
    struct app *app = j->r->app;
    if (b->idem.key) {
        int rc = idem_begin(j, st, b->owner, &b->idem, b->now);
        if (rc != ERR_NOTFOUND)
            return rc;
    }
    for (size_t i = 0; i < b->n; i++) {
        struct bulk_item *it = &b->items[i];
        if (it->status)
            continue; /* refused by the parse */
        if (owner_key_domain(&j->r->key, &it->in.domain) != ERR_OK) {
            struct refusal no = {403, "forbidden", "domain",
                                 "this API key is limited to links on another domain"};
            it->status = no.status;
            it->error = refusal_json(&no);
            continue;
        }
        int rc = st->ops->savepoint(st);
        if (rc != ERR_OK)
            return rc;
        bool reused = false;
        struct refusal no;
        rc = create_one(app, st, &it->in, b->owner, b->now, &it->link, &reused, &no);
        st->ops->savepoint_end(st, rc == ERR_OK && !no.status);
        if (rc != ERR_OK)
            return rc;
        if (no.status) {
            it->status = no.status;
            it->error = refusal_json(&no);
        } else {
            it->status = reused ? 200 : 201;
        }
    }
    j->status = 200;
    if (!b->idem.key)
        return ERR_OK;
    j->answer = bulk_answer(b, app);
    return idem_end(j, st, b->owner, &b->idem, b->now);
}

static void bulk_after_commit(struct api_job *j)
{
    struct bulk_job *b = (struct bulk_job *)j;
    if (j->replayed || j->status != 200)
        return;
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i].status == 201)
            link_changed(j->r->app, &b->items[i].link,
                         b->items[i].in.alias ? LINK_NEW_ALIAS : LINK_NEW, b->now);
}

static void bulk_render(struct api_job *j)
{
    if (j->status == 200)
        j->answer = bulk_answer((struct bulk_job *)j, j->r->app);
}

int link_bulk_body(json_t *body, json_t **links, const char **field, char *why, size_t whylen)
{
    const char *key;
    json_t *v;
    *links = NULL;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "links") != 0) {
            *field = key;
            snprintf(why, whylen, "%s unknown field", key);
            return ERR_INVALID;
        }
    }
    json_t *a = json_object_get(body, "links");
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > BULK_MAX) {
        *field = "links";
        snprintf(why, whylen, "links must be an array of 1 to %d link objects", BULK_MAX);
        return ERR_INVALID;
    }
    *links = a;
    return ERR_OK;
}

int link_bulk_item(struct links *l, json_t *v, int64_t now, struct link_input *in, json_t **error)
{
    const char *field = NULL;
    char why[256];
    memset(in, 0, sizeof(*in));
    *error = NULL;
    if (!json_is_object(v)) {
        *error = json_pack("{s:s,s:s,s:n}", "code", "invalid_field", "message",
                           "each item must be a link object as POST /api/links takes", "field");
    } else if (json_object_get(v, "password")) {
        /* Argon2id costs tens of milliseconds a password: a thousand in
         * one request would hold the thread pool for seconds. */
        *error = json_pack("{s:s,s:s,s:s}", "code", "invalid_field", "message",
                           "password cannot be set in a bulk create; use POST /api/links "
                           "or PATCH the link",
                           "field", "password");
    } else if (links_parse(l, v, now, in, &field, why, sizeof(why)) != ERR_OK) {
        link_input_release(in);
        struct buf msg = BUF_INIT;
        buf_printf(&msg, "%s %s", field ? field : "body", why);
        *error = json_pack("{s:s,s:s%,s:s?}", "code", "invalid_field", "message", msg.p, msg.len,
                           "field", field);
        buf_release(&msg);
    }
    return *error ? 400 : 0;
}

int handle_link_bulk(struct request *r)
{
    struct app *app = r->app;
    json_t *links, *v;
    const char *field = NULL;
    char why[256];
    if (link_bulk_body(r->json, &links, &field, why, sizeof(why)) != ERR_OK)
        return http_error(r, 400, "invalid_field", field, "%s", why);
    struct bulk_job *b = calloc(1, sizeof(*b));
    if (!b)
        abort();
    b->now = now_ms();
    b->owner = r->key.owner;
    b->n = json_array_size(links);
    b->items = calloc(b->n, sizeof(*b->items));
    if (!b->items)
        abort();
    size_t i;
    json_array_foreach(links, i, v)
    {
        struct bulk_item *it = &b->items[i];
        it->status = link_bulk_item(app->links, v, b->now, &it->in, &it->error);
    }
    int status = idem_header(r, b->now, &b->idem);
    if (status) {
        bulk_release(&b->base);
        return status;
    }
    b->base.after_commit = bulk_after_commit;
    b->base.render = bulk_render;
    b->base.release = bulk_release;
    return api_job_submit(r, &b->base, bulk_run);
}

/* ---- list ---- */

struct list_ctx {
    const struct app *app;
    json_t *arr;
    int64_t now;
    int want;
    int seen;
    int64_t last_created;
    char last_code[CODE_MAX + 1];
};

static int list_cb(const struct link *l, void *arg)
{
    struct list_ctx *x = arg;
    if (x->seen++ == x->want)
        return 1; /* one more than a page: there is a next page */
    json_array_append_new(x->arr, link_json(x->app, l, x->now));
    x->last_created = l->created_at;
    snprintf(x->last_code, sizeof(x->last_code), "%s", l->code);
    return 0;
}

/* A sparkline: link 'o''s human clicks on each of the 'days' days to today
 * (UTC), oldest first, as o["spark"]. */
struct spark_ctx {
    json_t *arr;
    int64_t from;
};

static int spark_day(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    (void)uniques;
    (void)bots;
    struct spark_ctx *x = arg;
    json_t *slot = json_array_get(x->arr, (size_t)(day - x->from));
    if (slot)
        json_integer_set(slot, clicks);
    return 0;
}

static int add_sparks(struct store *st, json_t *links, int days, int64_t today)
{
    size_t i;
    json_t *o;
    json_array_foreach(links, i, o)
    {
        struct spark_ctx x = {.arr = json_array(), .from = today - (days - 1)};
        for (int d = 0; d < days; d++)
            json_array_append_new(x.arr, json_integer(0));
        const char *code = json_string_value(json_object_get(o, "code"));
        int rc = st->ops->stats_days(st, code, x.from, today, spark_day, &x);
        json_object_set_new(o, "spark", x.arr);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

static bool parse_int(struct slice s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s.n || s.n > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (!isdigit((unsigned char)s.p[i]))
            return false;
        v = v * 10 + (s.p[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* "active,expired,exhausted,deleted,disabled" or "all" */
static bool parse_states(struct slice s, struct link_query *q)
{
    q->states = 0;
    q->want_live = q->want_expired = q->want_exhausted = false;
    const char *p = s.p, *end = s.p + s.n;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        struct slice w = {p, (size_t)((comma ? comma : end) - p)};
        if (slice_eq(w, "active"))
            q->want_live = true;
        else if (slice_eq(w, "expired"))
            q->want_expired = true;
        else if (slice_eq(w, "exhausted"))
            q->want_exhausted = true;
        else if (slice_eq(w, "deleted"))
            q->states |= 1u << LINK_DELETED;
        else if (slice_eq(w, "disabled"))
            q->states |= 1u << LINK_DISABLED;
        else if (slice_eq(w, "all")) {
            q->want_live = q->want_expired = q->want_exhausted = true;
            q->states |= (1u << LINK_DELETED) | (1u << LINK_DISABLED);
        } else
            return false;
        p = comma ? comma + 1 : end;
    }
    return q->states || q->want_live || q->want_expired || q->want_exhausted;
}

/* A filter from the query string: percent-decoded ('+' is a space), at most
 * FILTER_MAX bytes of UTF-8 without NUL. Absent or empty: *out stays "".
 * False when it breaks those rules. */
static bool filter_param(const struct request *r, const char *name, char out[FILTER_MAX + 1])
{
    out[0] = '\0';
    struct slice v;
    if (!http_query_param(r, name, &v))
        return true;
    long dn = pct_form_decode(v.p, v.n, out, FILTER_MAX);
    if (dn < 0 || memchr(out, '\0', (size_t)dn))
        return false;
    size_t n = (size_t)dn;
    out[n] = '\0';
    json_t *utf8 = json_stringn(out, n); /* NULL when not valid UTF-8 */
    json_decref(utf8);
    return utf8 != NULL;
}

/* '&name=value' for the next page's link, the value percent-encoded. */
static void add_filter(struct buf *b, const char *name, const char *value)
{
    if (!*value)
        return;
    buf_printf(b, "&%s=", name);
    pct_encode(b, value);
}

int handle_link_list(struct request *r)
{
    struct app *app = r->app;
    struct link_query q = {.owner = owner_scope(r),
                           .want_live = true,
                           .want_expired = true,
                           .want_exhausted = true,
                           .now = now_ms(),
                           .limit = LIST_DEFAULT};
    struct slice v;
    int64_t limit = LIST_DEFAULT;
    if (http_query_param(r, "limit", &v) && !parse_int(v, 1, LIST_MAX, &limit))
        return http_error(r, 400, "invalid_field", "limit",
                          "limit must be a whole number from 1 "
                          "to 1000");
    struct slice state = SLICE_LIT("active,expired,exhausted");
    if (http_query_param(r, "state", &v)) {
        state = v;
        if (!parse_states(v, &q))
            return http_error(r, 400, "invalid_field", "state",
                              "state must be a comma list of active, expired, exhausted, "
                              "deleted, disabled, or all");
    }
    int64_t spark = 0;
    if (http_query_param(r, "spark", &v) && !parse_int(v, 1, SPARK_MAX, &spark))
        return http_error(r, 400, "invalid_field", "spark",
                          "spark must be a whole number of days from 1 to 90");
    if (spark && limit > SPARK_PAGE)
        return http_error(r, 400, "invalid_field", "spark",
                          "spark needs a limit of at most 100 links");
    char after_code[CODE_MAX + 1] = "";
    if (http_query_param(r, "cursor", &v)) {
        const char *dot = memchr(v.p, '.', v.n);
        struct slice num = {v.p, dot ? (size_t)(dot - v.p) : 0};
        struct slice code = {dot ? dot + 1 : NULL, dot ? v.n - num.n - 1 : 0};
        if (!dot || !parse_int(num, 0, INT64_MAX / 2, &q.after_created) ||
            !code_is_plausible(code.p, code.n))
            return http_error(r, 400, "invalid_field", "cursor",
                              "cursor must be a value from a Link header");
        memcpy(after_code, code.p, code.n);
        after_code[code.n] = '\0';
        q.after_code = after_code;
    }
    char tag[FILTER_MAX + 1], text[FILTER_MAX + 1];
    if (!filter_param(r, "tag", tag))
        return http_error(r, 400, "invalid_field", "tag",
                          "tag must be at most 128 bytes of UTF-8, percent-encoded");
    if (!filter_param(r, "q", text))
        return http_error(r, 400, "invalid_field", "q",
                          "q must be at most 128 bytes of UTF-8, percent-encoded");
    q.tag = *tag ? tag : NULL;
    q.q = *text ? text : NULL;
    q.limit = (int)limit + 1;
    /* A filter reads the rows of the owner it passes over: one page reads
     * search-page-rows of them at most (the floor), so a search takes
     * bounded time whatever the owner holds, and goes on in the next page. */
    bool filtered = q.q || q.tag;
    char floor_code[CODE_MAX + 1];
    int64_t floor_created = 0;
    int rc = ERR_OK;
    if (q.q) {
        int status = router_heavy_enter(r);
        if (status)
            return status;
    }
    if (filtered) {
        rc = app->store->ops->link_list_floor(app->store, &q, (int)app->cfg.search_page_rows,
                                              &floor_created, floor_code);
        if (rc == ERR_OK) {
            q.floor_created = floor_created;
            q.floor_code = floor_code;
        }
    }
    struct list_ctx x = {.app = app, .arr = json_array(), .now = q.now, .want = (int)limit};
    if (rc == ERR_OK || rc == ERR_NOTFOUND)
        rc = app->store->ops->link_list(app->store, &q, list_cb, &x);
    if (rc == ERR_OK && spark)
        rc = add_sparks(app->store, x.arr, (int)spark, day_number(q.now));
    if (q.q)
        router_heavy_leave(app, r->key.id);
    if (rc != ERR_OK) {
        json_decref(x.arr);
        return http_unavailable(r, NULL);
    }
    if (x.seen <= x.want && q.floor_code) {
        /* The page's rows are read and the owner has more: the next page
         * goes on below the floor, even when this one found nothing. */
        x.seen = x.want + 1;
        x.last_created = floor_created;
        memcpy(x.last_code, floor_code, sizeof(x.last_code));
    }
    if (x.seen > x.want) {
        struct buf link = BUF_INIT;
        buf_printf(&link, "</api/links?limit=%lld&state=%.*s", (long long)limit, (int)state.n,
                   state.p);
        if (spark)
            buf_printf(&link, "&spark=%lld", (long long)spark);
        add_filter(&link, "tag", tag);
        add_filter(&link, "q", text);
        buf_printf(&link, "&cursor=%lld.%s>; rel=\"next\"", (long long)x.last_created, x.last_code);
        http_add_header(r, "Link", link.p, link.len);
        buf_release(&link);
    }
    return http_json(r, 200, x.arr);
}

/* ---- read ---- */

int handle_link_get(struct request *r)
{
    struct app *app = r->app;
    char code[CODE_MAX + 1];
    struct link l;
    int status = owner_link(r, code, &l);
    if (status)
        return status;
    json_t *o = link_json(app, &l, now_ms());
    link_release(&l);
    return http_json(r, 200, o);
}

/* ---- state changes: delete, disable, enable ---- */

struct state_job {
    struct api_job base;
    char code[CODE_MAX + 1];
    int state;
    int64_t now;
    int64_t owner; /* owner_scope() */
    struct link link;
    bool changed;
};

static void state_release(struct api_job *j)
{
    struct state_job *s = (struct state_job *)j;
    link_release(&s->link);
    free(s);
}

static int state_run(struct wjob *wj, struct store *st)
{
    struct state_job *s = (struct state_job *)wj;
    struct api_job *j = &s->base;
    struct app *app = j->r->app;
    int rc = owner_link_get(st, s->code, s->owner, &s->link);
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 404, "not_found", NULL, OWNER_NOT_FOUND);
    if (rc != ERR_OK)
        return rc;
    if (s->link.state == LINK_DELETED && s->state != LINK_DELETED)
        return api_job_error(j, 409, "deleted", NULL, "a deleted link cannot be changed");
    if (s->link.state != s->state) {
        rc = st->ops->link_set_state(st, s->code, s->state, s->now);
        if (rc != ERR_OK)
            return rc;
        link_release(&s->link);
        rc = st->ops->link_get(st, s->code, &s->link);
        if (rc != ERR_OK)
            return rc;
        s->changed = true;
    }
    if (s->state == LINK_DELETED) {
        j->status = 204;
    } else {
        j->status = 200;
        j->answer = link_json(app, &s->link, s->now);
    }
    return ERR_OK;
}

static void state_after_commit(struct api_job *j)
{
    struct state_job *s = (struct state_job *)j;
    if (s->changed)
        link_changed(j->r->app, &s->link, LINK_EDITED, s->now);
}

static int change_state(struct request *r, int state)
{
    struct state_job *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    int status = owner_code(r, s->code);
    if (status) {
        free(s);
        return status;
    }
    s->state = state;
    s->now = now_ms();
    s->owner = owner_scope(r);
    s->base.after_commit = state_after_commit;
    s->base.release = state_release;
    return api_job_submit(r, &s->base, state_run);
}

int handle_link_delete(struct request *r) { return change_state(r, LINK_DELETED); }
int handle_link_disable(struct request *r) { return change_state(r, LINK_DISABLED); }
int handle_link_enable(struct request *r) { return change_state(r, LINK_ACTIVE); }

/* ---- edit: PATCH /api/links/CODE, and its history ---- */

static struct links *app_links(const struct api_job *j) { return j->r->app->links; }

struct patch_job {
    struct api_job base;
    char code[CODE_MAX + 1];
    struct link_patch p;
    int64_t now;
    int64_t owner;  /* owner_scope() */
    int64_t key_id; /* who changes it, for the history */
    struct link link;
    bool changed;
};

static void patch_release(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    link_patch_release(&pj->p);
    link_release(&pj->link);
    free(pj);
}

/* Reads, changes and writes the link in one transaction; a new destination
 * is appended to the history in the same one. */
static int patch_run(struct wjob *wj, struct store *st)
{
    struct patch_job *pj = (struct patch_job *)wj;
    struct api_job *j = &pj->base;
    int rc = owner_link_get(st, pj->code, pj->owner, &pj->link);
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 404, "not_found", NULL, OWNER_NOT_FOUND);
    if (rc != ERR_OK)
        return rc;
    if (pj->link.state == LINK_DELETED || !pj->link.url)
        return api_job_error(j, 409, "deleted", NULL,
                             "a deleted (or swept) link cannot be changed");
    if ((pj->p.fields & PATCH_PASSWORD) && pj->p.password && pj->link.permanent)
        return api_job_error(j, 400, "invalid_field", "password",
                             "password cannot protect a permanent link (a cached 301 skips it)");
    if ((pj->p.fields & PATCH_TRACK) && pj->p.untracked && pj->link.max_clicks > 0)
        return api_job_error(j, 400, "invalid_field", "track",
                             "track cannot be false on a link with max_clicks (a click limit "
                             "counts the visits)");
    const char *field = NULL;
    rc = links_edit(app_links(j), st, &pj->link, &pj->p, pj->now, pj->key_id, &field);
    if (rc == ERR_MISMATCH)
        return api_job_error(j, 400, "invalid_field", "utm",
                             "utm cannot be combined with variants (put the utm_* parameters in "
                             "each variant's url)");
    if (rc == ERR_INVALID)
        return api_job_error(j, 400, "invalid_field", "utm",
                             "utm: the destination with these parameters would exceed 8 KiB");
    if (rc == ERR_FORBIDDEN)
        return api_job_error(j, 400, "invalid_field", field, "destination host is blocked");
    if (rc != ERR_OK)
        return rc;
    pj->changed = true;
    j->status = 200;
    return ERR_OK;
}

static void patch_after_commit(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    if (pj->changed)
        link_changed(j->r->app, &pj->link, LINK_EDITED, pj->now);
}

static void patch_render(struct api_job *j)
{
    struct patch_job *pj = (struct patch_job *)j;
    if (j->status == 200)
        j->answer = link_json(j->r->app, &pj->link, pj->now);
}

int handle_link_patch(struct request *r)
{
    struct app *app = r->app;
    struct patch_job *pj = calloc(1, sizeof(*pj));
    if (!pj)
        abort();
    int status = owner_code(r, pj->code);
    if (status) {
        free(pj);
        return status;
    }
    pj->now = now_ms();
    const char *field = NULL;
    char why[256];
    if (links_parse_patch(app->links, r->json, pj->now, &pj->p, &field, why, sizeof(why)) !=
        ERR_OK) {
        link_patch_release(&pj->p);
        free(pj);
        return http_error(r, 400, "invalid_field", field, "%s %s", field ? field : "body", why);
    }
    pj->owner = owner_scope(r);
    pj->key_id = r->key.id;
    pj->base.after_commit = patch_after_commit;
    pj->base.render = patch_render;
    pj->base.release = patch_release;
    return submit_hashed(r, &pj->base, &pj->p.password, patch_run);
}

static int history_row(const struct link_change *c, void *arg)
{
    char at[RFC3339_MAX];
    rfc3339_format(c->changed_at, at);
    json_array_append_new(arg, json_pack("{s:I,s:s?,s:s?,s:s,s:I}", "seq", (json_int_t)c->seq,
                                         "old_url", c->old_url, "new_url", c->new_url, "changed_at",
                                         at, "by_key", (json_int_t)c->by_key));
    return 0;
}

int handle_link_history(struct request *r)
{
    struct app *app = r->app;
    char code[CODE_MAX + 1];
    struct link l;
    int status = owner_link(r, code, &l);
    if (status)
        return status;
    link_release(&l);
    json_t *arr = json_array();
    if (app->store->ops->history_list(app->store, code, LIST_MAX, history_row, arr) != ERR_OK) {
        json_decref(arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, arr);
}
