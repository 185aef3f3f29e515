/* api_admin.c - /api/admin/blocklist: destination hosts refused at create
 * (a host and all its subdomains). Admin keys only (the router checks). */
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "app/app.h"
#include "base/err.h"
#include "api/handlers.h"
#include "redirect/tiers.h"
#include "base/timeutil.h"
#include "links/urlcheck.h"
#include "base/banned.h"

static int list_cb(const char *host, int64_t created_at, void *arg)
{
    char ts[RFC3339_MAX];
    rfc3339_format(created_at, ts);
    json_array_append_new(arg, json_pack("{s:s,s:s}", "host", host, "created_at", ts));
    return 0;
}

int handle_blocklist_list(struct request *r)
{
    struct store *st = r->app->store;
    json_t *arr = json_array();
    if (st->ops->block_list(st, list_cb, arr) != ERR_OK) {
        json_decref(arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, arr);
}

struct block_job {
    struct api_job base;
    char *host;
    bool add;
    int64_t now;
};

static void block_release(struct api_job *j)
{
    struct block_job *b = (struct block_job *)j;
    free(b->host);
    free(b);
}

static int block_run(struct wjob *wj, struct store *st)
{
    struct block_job *b = (struct block_job *)wj;
    struct api_job *j = &b->base;
    int rc = b->add ? st->ops->block_add(st, b->host, b->now) : st->ops->block_del(st, b->host);
    if (rc == ERR_EXISTS)
        return api_job_error(j, 409, "exists", "host", "this host is already blocked");
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 404, "not_found", "host", "this host is not blocked");
    if (rc != ERR_OK)
        return rc;
    if (b->add) {
        char ts[RFC3339_MAX];
        rfc3339_format(b->now, ts);
        j->answer = json_pack("{s:s,s:s}", "host", b->host, "created_at", ts);
        j->status = 201;
    } else {
        j->status = 204;
    }
    return ERR_OK;
}

/* This node counts the blocklist again at once, the others when the bus
 * tells them. */
static void block_after_commit(struct api_job *j) { blocklist_changed(j->r->app); }

static int submit(struct request *r, const char *host, size_t n, bool add)
{
    struct buf norm = BUF_INIT;
    bool ok = !memchr(host, '/', n) && !memchr(host, '*', n) &&
              host_normalise(host, n, &norm) == ERR_OK && norm.len <= 253;
    for (size_t i = 0; ok && i < norm.len; i++) {
        char ch = norm.p[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
             ch == ':';
    }
    if (!ok || norm.p[0] == '.' || strstr(norm.p, "..")) {
        buf_release(&norm);
        return http_error(r, 400, "invalid_field", "host",
                          "host must be a host name such as evil.example (its subdomains are "
                          "blocked with it)");
    }
    struct block_job *b = calloc(1, sizeof(*b));
    if (!b)
        abort();
    b->host = buf_detach(&norm, NULL);
    b->add = add;
    b->now = now_ms();
    b->base.release = block_release;
    b->base.after_commit = block_after_commit;
    return api_job_submit(r, &b->base, block_run);
}

int handle_blocklist_add(struct request *r)
{
    json_t *host = json_object_get(r->json, "host");
    if (!json_is_string(host) || json_object_size(r->json) != 1)
        return http_error(r, 400, "invalid_field", "host",
                          "the body must be {\"host\": \"example.com\"}");
    return submit(r, json_string_value(host), json_string_length(host), true);
}

int handle_blocklist_delete(struct request *r)
{
    return submit(r, r->params[0].p, r->params[0].n, false);
}
