/* api_domains.c - /api/domains: the custom short hosts an owner registers.
 * A link created with "domain" must name one of its owner's domains; it then
 * opens on that host as well as on the default hosts (config `hosts`). A
 * host has one owner: registering it again is a no-op for that owner and a
 * 409 for anyone else. Writes go through the group commit (apijob.h). */
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "app/app.h"
#include "base/err.h"
#include "api/handlers.h"
#include "links/links.h"
#include "redirect/tiers.h"
#include "base/timeutil.h"
#include "base/banned.h"

static json_t *domain_json(const char *host, int64_t created_at)
{
    char ts[RFC3339_MAX];
    rfc3339_format(created_at, ts);
    return json_pack("{s:s,s:s}", "host", host, "created_at", ts);
}

static int list_cb(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    (void)owner;
    json_array_append_new(arg, domain_json(host, created_at));
    return 0;
}

int handle_domain_list(struct request *r)
{
    struct store *st = r->app->store;
    json_t *arr = json_array();
    if (st->ops->domain_list(st, r->key.owner, list_cb, arr) != ERR_OK) {
        json_decref(arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, arr);
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
 * counts them again, this one at once, the others when the bus tells them. */
static void domain_after_commit(struct api_job *j) { blocklist_changed(j->r->app); }

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
