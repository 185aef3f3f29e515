/* api_sites.c - /api/sites: the sites whose pages send beacons (sites.h),
 * their read tokens, their stats, and the public badge.
 *
 * A site belongs to the owner that made it: another owner's site is a 404,
 * as for links (owner.h); an admin key sees every site. Writes go through
 * the group commit (apijob.h); after the commit this node reads its host →
 * site table again and the others hear of it on the bus (the domains'
 * message: tiers.h). A site's stats can also be read with one of its read
 * tokens ("st_" and 40 base62 characters, shown once, stored as a BLAKE2b
 * hash: a random 238-bit token needs no key stretching), in ?token= or as
 * the Bearer: the router lets such a request through without a key
 * (ROUTE_SITE_TOKEN) and site_stats checks the token here. */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "api/owner.h"
#include "api/report.h"
#include "app/app.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "clicks/analytics.h"
#include "redirect/tiers.h"
#include "sites/sites.h"
#include "store/store.h"
#include "base/banned.h"

#define SITE_HOSTS_MAX 32
#define SITE_TOKEN_LEN 43 /* "st_" + 40 base62 characters */
#define DEFAULT_DAYS 30
#define BADGE_MAX_AGE "300"

/* ---- reading a site ---- */

struct site_read {
    struct site_info s;
    json_t *hosts;
    json_t *tokens;
};

static int add_host(const char *host, const char *site, void *arg)
{
    (void)site;
    json_array_append_new(arg, json_string(host));
    return 0;
}

static int add_token(int64_t id, int64_t created_at, void *arg)
{
    char ts[RFC3339_MAX];
    rfc3339_format(created_at, ts);
    json_array_append_new(arg, json_pack("{s:I,s:s}", "id", (json_int_t)id, "created_at", ts));
    return 0;
}

static json_t *site_json(const struct site_info *s, json_t *hosts, json_t *tokens)
{
    char ts[RFC3339_MAX];
    rfc3339_format(s->created_at, ts);
    json_t *o = json_pack("{s:s,s:o,s:b,s:s,s:I}", "id", s->id, "hosts",
                          hosts ? hosts : json_array(), "badge", s->badge, "created_at", ts,
                          "page_views_total", (json_int_t)s->pv_total);
    if (tokens)
        json_object_set_new(o, "tokens", tokens);
    return o;
}

/* The site of the path's :id within the request key's scope: 0 with 's'
 * filled, or the answer written into r (400, 404, 503). */
static int owned_site(struct request *r, struct site_info *s)
{
    struct slice id = r->params[0];
    const char *why;
    if (site_id_check(id.p, id.n, &why) != ERR_OK)
        return http_error(r, 404, "not_found", "id", "no such site");
    char idz[SITE_ID_MAX + 1];
    memcpy(idz, id.p, id.n);
    idz[id.n] = '\0';
    struct store *st = r->app->store;
    int rc = st->ops->site_get(st, idz, s);
    int64_t scope = owner_scope(r);
    if (rc == ERR_NOTFOUND || (rc == ERR_OK && scope != OWNER_ANY && s->owner != scope))
        return http_error(r, 404, "not_found", "id", "no such site");
    if (rc != ERR_OK)
        return http_unavailable(r, NULL);
    return 0;
}

int handle_site_get(struct request *r)
{
    struct site_info s;
    int status = owned_site(r, &s);
    if (status)
        return status;
    struct store *st = r->app->store;
    json_t *hosts = json_array(), *tokens = json_array();
    int rc = st->ops->site_hosts_list(st, s.id, add_host, hosts);
    if (rc == ERR_OK)
        rc = st->ops->site_token_list(st, s.id, add_token, tokens);
    if (rc != ERR_OK) {
        json_decref(hosts);
        json_decref(tokens);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, site_json(&s, hosts, tokens));
}

struct listing {
    struct store *st;
    json_t *arr;
    int rc;
};

static int list_site(const struct site_info *s, void *arg)
{
    struct listing *l = arg;
    json_t *hosts = json_array();
    l->rc = l->st->ops->site_hosts_list(l->st, s->id, add_host, hosts);
    json_array_append_new(l->arr, site_json(s, hosts, NULL));
    return l->rc != ERR_OK;
}

int handle_site_list(struct request *r)
{
    struct store *st = r->app->store;
    struct listing l = {st, json_array(), ERR_OK};
    int rc = st->ops->site_list(st, owner_scope(r), list_site, &l);
    if (rc != ERR_OK || l.rc != ERR_OK) {
        json_decref(l.arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, l.arr);
}

/* ---- writes ---- */

enum site_op { OP_CREATE, OP_PATCH, OP_DELETE, OP_TOKEN_ADD, OP_TOKEN_DEL };

struct site_job {
    struct api_job base;
    enum site_op op;
    struct site_info s; /* id, owner (the caller's scope), badge, created_at */
    int64_t scope;      /* OWNER_ANY or the caller's owner id */
    bool set_badge;     /* PATCH: the body sets badge (to new_badge) ... */
    bool new_badge;
    bool set_hosts; /* ... and hosts */
    char (*hosts)[HOST_NAME_MAX_LEN + 1];
    size_t nhosts;
    uint8_t token_hash[32]; /* OP_TOKEN_ADD */
    char token[SITE_TOKEN_LEN + 1];
    int64_t token_id;   /* OP_TOKEN_DEL */
    bool changed_hosts; /* after the commit: read the host table again */
    const char *taken;  /* the first host another site holds */
};

static void site_job_release(struct api_job *j)
{
    struct site_job *s = (struct site_job *)j;
    free(s->hosts);
    sodium_memzero(s->token, sizeof(s->token));
    free(s);
}

/* A host of the job's that another site holds. */
static int find_conflict(const char *host, const char *site, void *arg)
{
    struct site_job *s = arg;
    if (strcmp(site, s->s.id) == 0)
        return 0;
    for (size_t i = 0; i < s->nhosts; i++)
        if (strcmp(s->hosts[i], host) == 0) {
            s->taken = s->hosts[i];
            return 1;
        }
    return 0;
}

/* Whether another site holds one of the job's hosts: ERR_OK with the 409
 * answer set (and *taken true), ERR_OK, or the store's error. Checked
 * before anything is written, so a refused job writes nothing. */
static int hosts_taken(struct site_job *s, struct store *st, bool *taken)
{
    s->taken = NULL;
    int rc = st->ops->site_hosts_list(st, NULL, find_conflict, s);
    *taken = rc == ERR_OK && s->taken;
    if (!*taken)
        return rc;
    char msg[HOST_NAME_MAX_LEN + 64];
    snprintf(msg, sizeof(msg), "host '%s' belongs to another site", s->taken);
    return api_job_error(&s->base, 409, "host_taken", "hosts", msg);
}

/* The site's hosts replaced by the job's. */
static int put_hosts(struct site_job *s, struct store *st)
{
    int rc = st->ops->site_hosts_clear(st, s->s.id);
    for (size_t i = 0; i < s->nhosts && rc == ERR_OK; i++)
        rc = st->ops->site_host_add(st, s->hosts[i], s->s.id);
    s->changed_hosts = true;
    return rc;
}

/* The stored site within the caller's scope, into s->s: ERR_OK, or the 404
 * answer set (ERR_OK too, with status 404), or the store's error. */
static int job_site(struct site_job *s, struct store *st, bool *found)
{
    struct site_info cur;
    *found = false;
    int rc = st->ops->site_get(st, s->s.id, &cur);
    if (rc == ERR_NOTFOUND || (rc == ERR_OK && s->scope != OWNER_ANY && cur.owner != s->scope))
        return api_job_error(&s->base, 404, "not_found", "id", "no such site");
    if (rc != ERR_OK)
        return rc;
    s->s = cur;
    *found = true;
    return ERR_OK;
}

static int site_run(struct wjob *wj, struct store *st)
{
    struct site_job *s = (struct site_job *)wj;
    struct api_job *j = &s->base;
    int rc;
    bool taken;
    if (s->op == OP_CREATE || s->set_hosts) {
        rc = hosts_taken(s, st, &taken);
        if (rc != ERR_OK || taken)
            return rc;
    }
    if (s->op == OP_CREATE) {
        rc = st->ops->site_insert(st, &s->s);
        if (rc == ERR_EXISTS)
            return api_job_error(j, 409, "site_taken", "id", "a site with this id exists");
        j->status = 201;
        return rc == ERR_OK ? put_hosts(s, st) : rc;
    }
    bool found;
    rc = job_site(s, st, &found);
    if (rc != ERR_OK || !found)
        return rc;
    switch (s->op) {
    case OP_PATCH:
        j->status = 200;
        if (s->set_badge) {
            rc = st->ops->site_set_badge(st, s->s.id, s->new_badge);
            s->s.badge = s->new_badge;
        }
        if (rc == ERR_OK && s->set_hosts)
            rc = put_hosts(s, st);
        return rc;
    case OP_DELETE:
        j->status = 204;
        s->changed_hosts = true;
        return st->ops->site_delete(st, s->s.id);
    case OP_TOKEN_ADD:
        j->status = 201;
        return st->ops->site_token_add(st, s->s.id, s->token_hash, now_ms(), &s->token_id);
    case OP_TOKEN_DEL:
        rc = st->ops->site_token_del(st, s->s.id, s->token_id);
        if (rc == ERR_NOTFOUND)
            return api_job_error(j, 404, "not_found", "token", "this site has no such token");
        j->status = 204;
        return rc;
    default: return ERR_INVALID;
    }
}

/* On the writer thread, after the commit: this node's host table is read
 * again at once (a beacon right after the answer finds its site), the
 * others are told on the bus. */
static void site_after_commit(struct api_job *j)
{
    struct site_job *s = (struct site_job *)j;
    struct app *app = j->r->app;
    if (!s->changed_hosts || (j->status != 200 && j->status != 201 && j->status != 204))
        return;
    if (sitemap_load(app->sites, app->store) != ERR_OK)
        sitemap_mark_stale(app->sites); /* the main thread tries again */
    blocklist_changed(app);
}

/* The answer, on the loop: the site as it now is (its hosts as given). */
static void site_render(struct api_job *j)
{
    struct site_job *s = (struct site_job *)j;
    if (j->answer || j->status == 204)
        return;
    if (s->op == OP_TOKEN_ADD) {
        j->answer = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)s->token_id, "site", s->s.id,
                              "token", s->token);
        return;
    }
    json_t *hosts = NULL;
    if (s->op == OP_CREATE || s->set_hosts) {
        hosts = json_array();
        for (size_t i = 0; i < s->nhosts; i++)
            json_array_append_new(hosts, json_string(s->hosts[i]));
    }
    j->answer = site_json(&s->s, hosts, NULL);
    if (!hosts)
        json_object_del(j->answer, "hosts"); /* unchanged: GET has them */
}

static struct site_job *job_new(struct request *r, enum site_op op)
{
    struct site_job *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->op = op;
    s->scope = owner_scope(r);
    s->base.release = site_job_release;
    s->base.after_commit = site_after_commit;
    s->base.render = site_render;
    return s;
}

/* The body's "hosts": an array of 1..SITE_HOSTS_MAX host names, checked and
 * normalised, no repeats. 0, or the 400 written into r. */
static int body_hosts(struct request *r, json_t *arr, struct site_job *s)
{
    if (!json_is_array(arr) || !json_array_size(arr) || json_array_size(arr) > SITE_HOSTS_MAX)
        return http_error(r, 400, "invalid_field", "hosts",
                          "hosts must be an array of 1 to 32 host names");
    s->nhosts = json_array_size(arr);
    s->hosts = calloc(s->nhosts, sizeof(*s->hosts));
    if (!s->hosts)
        abort();
    for (size_t i = 0; i < s->nhosts; i++) {
        json_t *h = json_array_get(arr, i);
        const char *why = "must be a string";
        if (!json_is_string(h) ||
            site_host_check(json_string_value(h), json_string_length(h), s->hosts[i], &why) !=
                ERR_OK ||
            strlen(json_string_value(h)) != json_string_length(h))
            return http_error(r, 400, "invalid_field", "hosts", "hosts[%zu] %s", i, why);
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->hosts[k], s->hosts[i]) == 0)
                return http_error(r, 400, "invalid_field", "hosts", "hosts[%zu] repeats '%s'", i,
                                  s->hosts[i]);
    }
    return 0;
}

static int body_badge(struct request *r, json_t *v, bool *out)
{
    if (!json_is_boolean(v))
        return http_error(r, 400, "invalid_field", "badge", "badge must be true or false");
    *out = json_is_true(v);
    return 0;
}

/* Fields other than 'allowed' (NULL-terminated) are refused. */
static int body_fields(struct request *r, const char *const *allowed, const char *what)
{
    const char *key;
    json_t *v;
    json_object_foreach(r->json, key, v)
    {
        bool ok = false;
        for (int i = 0; allowed[i]; i++)
            ok = ok || strcmp(key, allowed[i]) == 0;
        if (!ok)
            return http_error(r, 400, "invalid_field", key, "unknown field '%s'; %s", key, what);
    }
    return 0;
}

static int submit_job(struct request *r, struct site_job *s, int status)
{
    if (status) {
        site_job_release(&s->base);
        return status;
    }
    return api_job_submit(r, &s->base, site_run);
}

int handle_site_create(struct request *r)
{
    static const char *const allowed[] = {"id", "hosts", "badge", NULL};
    struct site_job *s = job_new(r, OP_CREATE);
    int status = body_fields(r, allowed, "a site takes id, hosts and badge");
    json_t *id = json_object_get(r->json, "id");
    const char *why = "must be a string";
    if (!status && (!json_is_string(id) ||
                    site_id_check(json_string_value(id), json_string_length(id), &why) != ERR_OK ||
                    strlen(json_string_value(id)) != json_string_length(id)))
        status = http_error(r, 400, "invalid_field", "id", "id %s", why);
    if (!status)
        status = body_hosts(r, json_object_get(r->json, "hosts"), s);
    json_t *badge = json_object_get(r->json, "badge");
    if (!status && badge)
        status = body_badge(r, badge, &s->s.badge);
    if (!status) {
        memcpy(s->s.id, json_string_value(id), json_string_length(id));
        s->s.owner = r->key.owner;
        s->s.created_at = now_ms();
    }
    return submit_job(r, s, status);
}

/* The path's :id into the job; 0, or the 404 written into r. */
static int path_id(struct request *r, struct site_job *s)
{
    struct slice id = r->params[0];
    const char *why;
    if (site_id_check(id.p, id.n, &why) != ERR_OK)
        return http_error(r, 404, "not_found", "id", "no such site");
    memcpy(s->s.id, id.p, id.n);
    return 0;
}

int handle_site_patch(struct request *r)
{
    static const char *const allowed[] = {"hosts", "badge", NULL};
    struct site_job *s = job_new(r, OP_PATCH);
    int status = path_id(r, s);
    if (!status)
        status = body_fields(r, allowed, "a site's hosts and badge can change");
    if (!status && !json_object_size(r->json))
        status = http_error(r, 400, "invalid_field", NULL, "the body must set hosts or badge");
    json_t *hosts = json_object_get(r->json, "hosts"), *badge = json_object_get(r->json, "badge");
    if (!status && hosts) {
        s->set_hosts = true;
        status = body_hosts(r, hosts, s);
    }
    if (!status && badge) {
        s->set_badge = true;
        status = body_badge(r, badge, &s->new_badge);
    }
    return submit_job(r, s, status);
}

int handle_site_delete(struct request *r)
{
    struct site_job *s = job_new(r, OP_DELETE);
    return submit_job(r, s, path_id(r, s));
}

static void token_hash(const char *token, size_t n, uint8_t out[32])
{
    crypto_generichash(out, 32, (const unsigned char *)token, n, NULL, 0);
}

int handle_site_token_create(struct request *r)
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    struct site_job *s = job_new(r, OP_TOKEN_ADD);
    int status = path_id(r, s);
    memcpy(s->token, "st_", 3);
    for (int i = 3; i < SITE_TOKEN_LEN; i++)
        s->token[i] = b62[randombytes_uniform(62)];
    s->token[SITE_TOKEN_LEN] = '\0';
    token_hash(s->token, SITE_TOKEN_LEN, s->token_hash);
    return submit_job(r, s, status);
}

int handle_site_token_delete(struct request *r)
{
    struct site_job *s = job_new(r, OP_TOKEN_DEL);
    int status = path_id(r, s);
    struct slice t = r->params[1];
    char num[24];
    char *end;
    if (!status && (t.n == 0 || t.n >= sizeof(num)))
        status = http_error(r, 404, "not_found", "token", "this site has no such token");
    if (!status) {
        memcpy(num, t.p, t.n);
        num[t.n] = '\0';
        s->token_id = strtoll(num, &end, 10);
        if (*end || s->token_id <= 0)
            status = http_error(r, 404, "not_found", "token", "this site has no such token");
    }
    return submit_job(r, s, status);
}

/* ---- stats ---- */

bool site_token_in(const struct request *r, struct slice *token)
{
    if (http_query_param(r, "token", token))
        return true;
    struct slice a = http_header(r, "authorization");
    if (a.p && a.n > 7 + 3 && slice_ieq((struct slice){a.p, 7}, "bearer ") &&
        memcmp(a.p + 7, "st_", 3) == 0) {
        *token = (struct slice){a.p + 7, a.n - 7};
        return true;
    }
    return false;
}

/* ?NAME=YYYY-MM-DD, or 'fallback' when absent. */
static bool day_param(struct request *r, const char *name, int64_t fallback, int64_t *day)
{
    struct slice v;
    if (!http_query_param(r, name, &v)) {
        *day = fallback;
        return true;
    }
    return day_parse(v.p, v.n, day) == ERR_OK;
}

struct stats_ctx {
    json_t *days;
    int64_t next;
    int64_t pv, bots;
    json_t *o;
    int64_t heat[7][24];
};

static json_t *day_obj(int64_t day, int64_t pv, int64_t bots)
{
    char d[11];
    day_format(day, d);
    return json_pack("{s:s,s:I,s:I}", "day", d, "page_views", (json_int_t)pv, "bots",
                     (json_int_t)bots);
}

static int stats_day(int64_t day, int64_t pv, int64_t uniques, int64_t bots, void *arg)
{
    (void)uniques;
    struct stats_ctx *x = arg;
    for (; x->next < day; x->next++)
        json_array_append_new(x->days, day_obj(x->next, 0, 0));
    json_array_append_new(x->days, day_obj(day, pv, bots));
    x->next = day + 1;
    x->pv += pv;
    x->bots += bots;
    return 0;
}

/* The flags' dimensions hold one value, "1": their count is a number. */
static bool is_counter(int dim)
{
    return dim == DIM_UV || dim == DIM_SESSIONS || dim == DIM_BOUNCE;
}

static int stats_dim(int dim, const char *value, int64_t n, void *arg)
{
    struct stats_ctx *x = arg;
    if (dim < 0 || dim >= DIM__COUNT || dim == DIM_VARIANT || dim == DIM_BOT_AGENT)
        return 0;
    if (is_counter(dim)) {
        json_object_set_new(x->o, dim_names[dim], json_integer(n));
        return 0;
    }
    if (dim == DIM_DOWHOUR && value[0] >= '1' && value[0] <= '7' && value[1] == '-') {
        int h = atoi(value + 2);
        if (h >= 0 && h < 24)
            x->heat[value[0] - '1'][h] += n;
    }
    json_object_set_new(json_object_get(x->o, dim_names[dim]), value, json_integer(n));
    return 0;
}

/* The stats object of site 'id' over [from, to]: the days, then each
 * dimension ranked (largest first), the heatmap (ISO weekday 1..7 by UTC
 * hour, from dowhour), the bots apart, and the probe's verdicts as their
 * own counters. */
static int site_report(struct store *st, const struct site_info *s, int64_t from, int64_t to,
                       json_t **out)
{
    struct stats_ctx x = {.days = json_array(), .next = from, .o = json_object()};
    const char *head[] = {"site", "from", "to", "page_views", "bots", "uv", "sessions", "bounce"};
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
        json_object_set_new(x.o, head[i], json_integer(0));
    for (int d = 0; d < DIM__COUNT; d++)
        if (d != DIM_VARIANT && d != DIM_BOT_AGENT && !is_counter(d))
            json_object_set_new(x.o, dim_names[d], json_object());
    int rc = st->ops->site_stats_days(st, s->id, from, to, stats_day, &x);
    if (rc == ERR_OK)
        rc = st->ops->site_stats_dims(st, s->id, from, to, stats_dim, &x);
    if (rc != ERR_OK) {
        json_decref(x.o);
        json_decref(x.days);
        return rc;
    }
    for (; x.next <= to; x.next++)
        json_array_append_new(x.days, day_obj(x.next, 0, 0));
    char f[11], t[11];
    day_format(from, f);
    day_format(to, t);
    json_object_set_new(x.o, "site", json_string(s->id));
    json_object_set_new(x.o, "from", json_string(f));
    json_object_set_new(x.o, "to", json_string(t));
    json_object_set_new(x.o, "page_views", json_integer(x.pv));
    json_object_set_new(x.o, "bots", json_integer(x.bots));
    json_t *heat = json_array();
    for (int d = 0; d < 7; d++) {
        json_t *row = json_array();
        for (int h = 0; h < 24; h++)
            json_array_append_new(row, json_integer(x.heat[d][h]));
        json_array_append_new(heat, row);
    }
    json_object_set_new(x.o, "heatmap", heat);
    json_object_set_new(x.o, "days", x.days);
    if (s->badge)
        json_object_set_new(x.o, "page_views_total", json_integer(s->pv_total));
    *out = x.o;
    return ERR_OK;
}

/* RFC 4180: quoted when it holds a comma, quote or line break. */
static void csv_field(struct buf *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        buf_adds(out, s);
        return;
    }
    buf_addc(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            buf_addc(out, '"');
        buf_addc(out, *s);
    }
    buf_addc(out, '"');
}

/* The stats as CSV: "dimension,value,count" rows: page_views and bots,
 * each day's page views ("day"), then every dimension's values ranked. */
static void site_csv(json_t *o, struct buf *out)
{
    buf_adds(out, "dimension,value,count\r\n");
    buf_printf(out, "page_views,,%lld\r\n",
               (long long)json_integer_value(json_object_get(o, "page_views")));
    buf_printf(out, "bots,,%lld\r\n", (long long)json_integer_value(json_object_get(o, "bots")));
    for (int d = 0; d < DIM__COUNT; d++)
        if (is_counter(d))
            buf_printf(out, "%s,1,%lld\r\n", dim_names[d],
                       (long long)json_integer_value(json_object_get(o, dim_names[d])));
    size_t i;
    json_t *day;
    json_array_foreach(json_object_get(o, "days"), i, day)
    {
        buf_printf(out, "day,%s,%lld\r\n", json_string_value(json_object_get(day, "day")),
                   (long long)json_integer_value(json_object_get(day, "page_views")));
    }
    for (int d = 0; d < DIM__COUNT; d++) {
        json_t *dim = json_object_get(o, dim_names[d]);
        if (!json_is_object(dim))
            continue;
        const char *k;
        json_t *v;
        json_object_foreach(dim, k, v)
        {
            buf_printf(out, "%s,", dim_names[d]);
            csv_field(out, k);
            buf_printf(out, ",%lld\r\n", (long long)json_integer_value(v));
        }
    }
}

int handle_site_stats(struct request *r)
{
    struct store *st = r->app->store;
    struct site_info s;
    struct slice token;
    if (site_token_in(r, &token)) {
        uint8_t hash[32];
        char site[SITE_ID_MAX + 1];
        token_hash(token.p, token.n, hash);
        int rc = st->ops->site_token_find(st, hash, site);
        if (rc != ERR_OK && rc != ERR_NOTFOUND)
            return http_unavailable(r, NULL);
        struct slice id = r->params[0];
        if (rc == ERR_NOTFOUND || strlen(site) != id.n || memcmp(site, id.p, id.n) != 0)
            return http_error(r, 401, "invalid_token", "token",
                              "this token does not open this site's stats");
        rc = st->ops->site_get(st, site, &s);
        if (rc == ERR_NOTFOUND)
            return http_error(r, 404, "not_found", "id", "no such site");
        if (rc != ERR_OK)
            return http_unavailable(r, NULL);
    } else {
        int status = owned_site(r, &s);
        if (status)
            return status;
    }
    int64_t today = day_number(now_ms());
    int64_t to, from;
    if (!day_param(r, "to", today, &to))
        return http_error(r, 400, "invalid_field", "to", "to must be a day, YYYY-MM-DD");
    if (!day_param(r, "from", to - (DEFAULT_DAYS - 1), &from))
        return http_error(r, 400, "invalid_field", "from", "from must be a day, YYYY-MM-DD");
    if (from > to)
        return http_error(r, 400, "invalid_field", "from", "from must not be after to");
    if (to - from >= STATS_MAX_DAYS)
        return http_error(r, 400, "invalid_field", "from", "a range is at most 1000 days");
    struct slice format = {0};
    bool csv = http_query_param(r, "format", &format) && slice_ieq(format, "csv");
    if (format.p && !csv && !slice_ieq(format, "json"))
        return http_error(r, 400, "invalid_field", "format", "format must be json or csv");
    json_t *o = NULL;
    if (site_report(st, &s, from, to, &o) != ERR_OK)
        return http_unavailable(r, NULL);
    if (!csv)
        return http_json(r, 200, o);
    struct buf out = BUF_INIT;
    site_csv(o, &out);
    json_decref(o);
    char disp[SITE_ID_MAX + 64];
    int dn = snprintf(disp, sizeof(disp), "attachment; filename=\"%s-stats.csv\"", s.id);
    http_add_header(r, "Content-Disposition", disp, (size_t)dn);
    int status = http_body(r, 200, "text/csv; charset=utf-8", out.p ? out.p : "", out.len);
    buf_release(&out);
    return status;
}

/* ---- the badge ---- */

int handle_site_badge(struct request *r)
{
    struct slice f = r->params[0];
    const char *why;
    struct site_info s;
    int rc = ERR_NOTFOUND;
    if (f.n > 4 && memcmp(f.p + f.n - 4, ".svg", 4) == 0 &&
        site_id_check(f.p, f.n - 4, &why) == ERR_OK) {
        char id[SITE_ID_MAX + 1];
        memcpy(id, f.p, f.n - 4);
        id[f.n - 4] = '\0';
        rc = r->app->store->ops->site_get(r->app->store, id, &s);
    }
    if (rc != ERR_OK && rc != ERR_NOTFOUND)
        return http_unavailable(r, NULL);
    if (rc == ERR_NOTFOUND || !s.badge)
        return http_error(r, 404, "not_found", NULL, "no such badge");
    char n[32];
    long long v = (long long)s.pv_total;
    if (v >= 1000000)
        snprintf(n, sizeof(n), "%.1fM", (double)v / 1e6);
    else if (v >= 10000)
        snprintf(n, sizeof(n), "%.1fk", (double)v / 1e3);
    else
        snprintf(n, sizeof(n), "%lld", v);
    /* Two boxes, "page views" and the count, in a width from its length. */
    int right = 12 + 7 * (int)strlen(n);
    struct buf svg = BUF_INIT;
    buf_printf(&svg,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"20\" role=\"img\" "
               "aria-label=\"page views: %s\"><title>page views: %s</title>"
               "<rect width=\"76\" height=\"20\" fill=\"#555\"/>"
               "<rect x=\"76\" width=\"%d\" height=\"20\" fill=\"#007ec6\"/>"
               "<g fill=\"#fff\" font-family=\"Verdana,DejaVu Sans,sans-serif\" font-size=\"11\">"
               "<text x=\"6\" y=\"14\">page views</text><text x=\"%d\" y=\"14\">%s</text></g>"
               "</svg>",
               76 + right, n, n, right, 82, n);
    http_add_header(r, "Cache-Control", "public, max-age=" BADGE_MAX_AGE,
                    strlen("public, max-age=" BADGE_MAX_AGE));
    int status = http_body(r, 200, "image/svg+xml", svg.p, svg.len);
    buf_release(&svg);
    return status;
}
