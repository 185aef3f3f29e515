/* api_domains.c - /api/domains: the custom short hosts an owner registers.
 * A link created with "domain" must name one of its owner's domains; it then
 * opens on that host as well as on the default hosts (config `hosts`). A
 * host has one owner: registering it again is a no-op for that owner and a
 * 409 for anyone else. Writes go through the group commit (apijob.h).
 * PATCH sets a domain's not-found redirects (Shlink's: base URL, regular
 * 404, invalid short URL; notfound.h), which this node's table learns after
 * the commit and the others when the bus tells them (blocklist_changed). */
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "app/app.h"
#include "base/err.h"
#include "api/handlers.h"
#include "links/links.h"
#include "links/urlcheck.h"
#include "redirect/notfound.h"
#include "redirect/tiers.h"
#include "base/timeutil.h"
#include "base/banned.h"

/* The redirects' names, in the API as in the store, by enum fallback_kind. */
static const char *const redirect_names[3] = {"base_url_redirect", "regular_404_redirect",
                                              "invalid_short_url_redirect"};

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *domain_json(const char *host, int64_t created_at)
{
    char ts[RFC3339_MAX];
    rfc3339_format(created_at, ts);
    json_t *o = json_pack("{s:s,s:s}", "host", host, "created_at", ts);
    for (int k = 0; k < 3; k++)
        json_object_set_new(o, redirect_names[k], json_null());
    return o;
}

static void set_redirects(json_t *o, const struct domain_redirects *d)
{
    const char *v[3] = {d->base_url, d->regular_404, d->invalid};
    for (int k = 0; k < 3; k++)
        json_object_set_new(o, redirect_names[k], str_or_null(v[k]));
}

/* The listing: the domains by host (the array's objects, borrowed). */
struct listing {
    json_t *arr;
    json_t *by_host;
};

static int list_cb(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    (void)owner;
    struct listing *l = arg;
    json_t *o = domain_json(host, created_at);
    json_array_append_new(l->arr, o);
    json_object_set(l->by_host, host, o);
    return 0;
}

static int list_redirects_cb(const char *host, int64_t owner, const struct domain_redirects *d,
                             void *arg)
{
    (void)owner;
    json_t *o = json_object_get(((struct listing *)arg)->by_host, host);
    if (o)
        set_redirects(o, d);
    return 0;
}

int handle_domain_list(struct request *r)
{
    struct store *st = r->app->store;
    struct listing l = {json_array(), json_object()};
    int rc = st->ops->domain_list(st, r->key.owner, list_cb, &l);
    if (rc == ERR_OK)
        rc = st->ops->domain_redirects_list(st, r->key.owner, list_redirects_cb, &l);
    json_decref(l.by_host);
    if (rc != ERR_OK) {
        json_decref(l.arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, l.arr);
}

struct domain_job {
    struct api_job base;
    char *host;
    int64_t owner;
    bool add;
    int64_t now;
};

static void domain_release(struct api_job *j)
{
    struct domain_job *d = (struct domain_job *)j;
    free(d->host);
    free(d);
}

static int domain_run(struct wjob *wj, struct store *st)
{
    struct domain_job *d = (struct domain_job *)wj;
    struct api_job *j = &d->base;
    if (!d->add) {
        int rc = st->ops->domain_del(st, d->host, d->owner);
        if (rc == ERR_NOTFOUND)
            return api_job_error(j, 404, "not_found", "host", "you have no such domain");
        if (rc == ERR_OK)
            j->status = 204;
        return rc;
    }
    int64_t owner = -1;
    int rc = st->ops->domain_get(st, d->host, &owner);
    if (rc == ERR_OK && owner != d->owner)
        return api_job_error(j, 409, "domain_taken", "host",
                             "this domain is registered to another owner");
    if (rc == ERR_OK) {
        j->status = 200; /* already the caller's: nothing to do */
    } else if (rc == ERR_NOTFOUND) {
        rc = st->ops->domain_add(st, d->host, d->owner, d->now);
        if (rc == ERR_EXISTS) /* another node's owner came first */
            return api_job_error(j, 409, "domain_taken", "host",
                                 "this domain is registered to another owner");
        if (rc != ERR_OK)
            return rc;
        j->status = 201;
    } else {
        return rc;
    }
    j->answer = domain_json(d->host, d->now);
    return ERR_OK;
}

/* Links may not point at a registered domain (it is shortd): every node
 * counts them again, this one at once, the others when the bus tells them.
 * A removed domain's redirects go with it. */
static void domain_after_commit(struct api_job *j)
{
    struct domain_job *d = (struct domain_job *)j;
    if (!d->add) {
        fallbacks_set(j->r->app->fallbacks, d->host, NULL);
        fallbacks_mark_stale(j->r->app->fallbacks);
    }
    blocklist_changed(j->r->app);
}

static int submit(struct request *r, const char *host, size_t n, bool add)
{
    const char *why = NULL;
    if (links_domain_check(host, n, &why) != ERR_OK)
        return http_error(r, 400, "invalid_field", "host", "host %s", why);
    if (memchr(host, '\0', n))
        return http_error(r, 400, "invalid_field", "host", "host must not contain NUL");
    struct domain_job *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    d->host = slice_dup((struct slice){host, n});
    d->owner = r->key.owner;
    d->add = add;
    d->now = now_ms();
    d->base.release = domain_release;
    d->base.after_commit = domain_after_commit;
    /* Adding is read-then-insert: it needs its savepoint. */
    d->base.job.single_write = !add;
    return api_job_submit(r, &d->base, domain_run);
}

int handle_domain_add(struct request *r)
{
    json_t *host = json_object_get(r->json, "host");
    if (!json_is_string(host) || json_object_size(r->json) != 1)
        return http_error(r, 400, "invalid_field", "host",
                          "the body must be {\"host\": \"go.example.com\"}");
    return submit(r, json_string_value(host), json_string_length(host), true);
}

int handle_domain_delete(struct request *r)
{
    return submit(r, r->params[0].p, r->params[0].n, false);
}

/* ---- PATCH /api/domains/:host: the not-found redirects ---- */

struct redirects_job {
    struct api_job base;
    char *host;
    int64_t owner;
    bool given[3]; /* the body names it ... */
    char *url[3];  /* ... with this URL (NULL: unset it); then, what it is */
    bool found;
    int64_t created_at;
};

static void redirects_release(struct api_job *j)
{
    struct redirects_job *d = (struct redirects_job *)j;
    free(d->host);
    for (int k = 0; k < 3; k++)
        free(d->url[k]);
    free(d);
}

static int find_created(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    (void)owner;
    struct redirects_job *d = arg;
    if (strcmp(host, d->host) != 0)
        return 0;
    d->found = true;
    d->created_at = created_at;
    return 1;
}

/* What the body leaves out keeps its stored value. */
static int find_current(const char *host, int64_t owner, const struct domain_redirects *cur,
                        void *arg)
{
    (void)owner;
    struct redirects_job *d = arg;
    if (strcmp(host, d->host) != 0)
        return 0;
    const char *v[3] = {cur->base_url, cur->regular_404, cur->invalid};
    for (int k = 0; k < 3; k++)
        if (!d->given[k] && v[k])
            d->url[k] = xstrdup(v[k]);
    return 1;
}

static int redirects_run(struct wjob *wj, struct store *st)
{
    struct redirects_job *d = (struct redirects_job *)wj;
    struct api_job *j = &d->base;
    int rc = st->ops->domain_list(st, d->owner, find_created, d);
    if (rc != ERR_OK)
        return rc;
    if (!d->found)
        return api_job_error(j, 404, "not_found", "host", "you have no such domain");
    rc = st->ops->domain_redirects_list(st, d->owner, find_current, d);
    if (rc != ERR_OK)
        return rc;
    struct domain_redirects now = {d->url[0], d->url[1], d->url[2]};
    rc = st->ops->domain_redirects_set(st, d->host, d->owner, &now);
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 404, "not_found", "host", "you have no such domain");
    if (rc != ERR_OK)
        return rc;
    j->status = 200;
    j->answer = domain_json(d->host, d->created_at);
    set_redirects(j->answer, &now);
    return ERR_OK;
}

/* This node's table at once (and read again by the main thread: notfound.h);
 * the others when the bus tells them. */
static void redirects_after_commit(struct api_job *j)
{
    struct redirects_job *d = (struct redirects_job *)j;
    if (j->status != 200)
        return;
    struct domain_redirects now = {d->url[0], d->url[1], d->url[2]};
    fallbacks_set(j->r->app->fallbacks, d->host, &now);
    fallbacks_mark_stale(j->r->app->fallbacks);
    blocklist_changed(j->r->app);
}

int handle_domain_patch(struct request *r)
{
    struct slice host = r->params[0];
    const char *why = NULL;
    if (links_domain_check(host.p, host.n, &why) != ERR_OK)
        return http_error(r, 400, "invalid_field", "host", "host %s", why);
    const char *key;
    json_t *v;
    json_object_foreach(r->json, key, v)
    {
        bool known = false;
        for (int k = 0; k < 3; k++)
            known = known || strcmp(key, redirect_names[k]) == 0;
        if (!known)
            return http_error(r, 400, "invalid_field", key,
                              "unknown field '%s'; a domain takes base_url_redirect, "
                              "regular_404_redirect and invalid_short_url_redirect",
                              key);
    }
    if (!json_object_size(r->json))
        return http_error(r, 400, "invalid_field", NULL,
                          "the body must set base_url_redirect, regular_404_redirect or "
                          "invalid_short_url_redirect (a URL, or null to remove it)");
    struct redirects_job *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    for (int k = 0; k < 3; k++) {
        v = json_object_get(r->json, redirect_names[k]);
        if (!v)
            continue;
        d->given[k] = true;
        if (json_is_null(v))
            continue;
        if (!json_is_string(v)) {
            redirects_release(&d->base);
            return http_error(r, 400, "invalid_field", redirect_names[k],
                              "%s must be a URL or null", redirect_names[k]);
        }
        struct urlcheck_opts o = {0};
        struct buf url = BUF_INIT, h = BUF_INIT;
        int rc = urlcheck(json_string_value(v), json_string_length(v), &o, &url, &h, &why);
        buf_release(&h);
        if (rc != ERR_OK || memchr(json_string_value(v), '\0', json_string_length(v))) {
            buf_release(&url);
            redirects_release(&d->base);
            return http_error(r, 400, "invalid_field", redirect_names[k], "%s %s",
                              redirect_names[k], why ? why : "must not contain NUL");
        }
        d->url[k] = buf_detach(&url, NULL);
    }
    d->host = slice_dup(host);
    d->owner = r->key.owner;
    d->base.release = redirects_release;
    d->base.after_commit = redirects_after_commit;
    return api_job_submit(r, &d->base, redirects_run);
}
