/* api_sinks.c - /api/sinks (admin): the sinks events go to (events.h).
 * A sink's secret is shown once, in the answer that made it (create,
 * rotate-secret), never by a read. Writes go through the writer like every
 * other; the delivery thread reads the sinks again within a second. */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "events/events.h"
#include "events/sign.h"
#include "store/store.h"
#include "base/banned.h"

/* A sink as the API shows it; with its secret only when 'secret'. */
static json_t *sink_json(const struct sink *s, bool secret)
{
    char created[RFC3339_MAX];
    rfc3339_format(s->created_at, created);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(s->id));
    json_object_set_new(o, "kind", json_string(s->kind));
    json_object_set_new(o, "endpoint", json_string(s->endpoint));
    json_t *types = json_array();
    for (const char *p = s->types; p && *p;) {
        size_t n = strcspn(p, ",");
        json_array_append_new(types, json_stringn(p, n));
        p += n + (p[n] == ',');
    }
    json_object_set_new(o, "types", types);
    json_object_set_new(o, "owner", s->owner >= 0 ? json_integer(s->owner) : json_null());
    json_object_set_new(o, "domain", s->domain ? json_string(s->domain) : json_null());
    json_t *opts = json_loads(s->options ? s->options : "{}", 0, NULL);
    json_object_set_new(o, "options", opts ? opts : json_object());
    json_object_set_new(o, "rotating", json_boolean(s->secret_old != NULL));
    json_object_set_new(o, "created_at", json_string(created));
    if (secret)
        json_object_set_new(o, "secret", json_string(s->secret));
    return o;
}

static int list_one(const struct sink *s, void *arg)
{
    json_array_append_new(arg, sink_json(s, false));
    return 0;
}

int handle_sink_list(struct request *r)
{
    struct store *st = r->app->store;
    json_t *arr = json_array();
    if (st->ops->sink_list(st, list_one, arr) != ERR_OK) {
        json_decref(arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, arr);
}

static bool sink_id(struct request *r, int64_t *id)
{
    char text[24];
    size_t n = r->params[0].n;
    if (n == 0 || n >= sizeof(text))
        return false;
    memcpy(text, r->params[0].p, n);
    text[n] = '\0';
    char *end;
    long long v = strtoll(text, &end, 10);
    *id = v;
    return !*end && v > 0;
}

int handle_sink_get(struct request *r)
{
    int64_t id;
    if (!sink_id(r, &id))
        return http_error(r, 404, "not_found", NULL, "no such sink");
    struct store *st = r->app->store;
    struct sink s;
    int rc = st->ops->sink_get(st, id, &s);
    if (rc == ERR_NOTFOUND)
        return http_error(r, 404, "not_found", NULL, "no such sink");
    if (rc != ERR_OK)
        return http_unavailable(r, NULL);
    json_t *o = sink_json(&s, false);
    sink_release(&s);
    return http_json(r, 200, o);
}

/* ---- writes ---- */

enum sink_op { SINK_CREATE, SINK_PATCH, SINK_DELETE, SINK_ROTATE };

struct sink_job {
    struct api_job base;
    enum sink_op op;
    struct sink s; /* what the request gave (owned strings) */
    bool has_types, has_owner, has_domain, has_options;
    int64_t now;
};

static void sink_job_release(struct api_job *j)
{
    struct sink_job *k = (struct sink_job *)j;
    sink_release(&k->s);
    free(k);
}

static int sink_run(struct wjob *wj, struct store *st)
{
    struct sink_job *k = (struct sink_job *)wj;
    struct api_job *j = &k->base;
    char why[256] = "";
    int rc;
    if (k->op == SINK_CREATE) {
        char *given = k->s.secret;
        rc = events_sink_create(st, &k->s, k->now, why, sizeof(why));
        if (rc == ERR_INVALID)
            return api_job_error(j, 400, "invalid_field", NULL, why);
        if (rc != ERR_OK)
            return rc;
        if (k->s.secret != given)
            free(given); /* replaced by a secret made here, now ours */
        j->answer = sink_json(&k->s, true);
        j->status = 201;
        return ERR_OK;
    }
    struct sink cur;
    rc = st->ops->sink_get(st, k->s.id, &cur);
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 404, "not_found", NULL, "no such sink");
    if (rc != ERR_OK)
        return rc;
    if (k->op == SINK_DELETE) {
        rc = st->ops->sink_del(st, cur.id, k->now);
        j->status = 204;
    } else if (k->op == SINK_ROTATE) {
        struct buf fresh = BUF_INIT;
        sign_secret_new(&fresh);
        /* The current secret stays valid beside the new one until the next rotation. */
        rc = st->ops->sink_secret(st, cur.id, buf_cstr(&fresh), cur.secret);
        if (rc == ERR_OK) {
            free(cur.secret_old);
            cur.secret_old = cur.secret;
            cur.secret = buf_detach(&fresh, NULL);
            j->answer = sink_json(&cur, true);
            j->status = 200;
        }
        buf_release(&fresh);
    } else {
        /* PATCH: the filters and options; kind and endpoint make another sink. */
        if (k->has_types) {
            free(cur.types);
            cur.types = k->s.types;
            k->s.types = NULL;
        }
        if (k->has_owner)
            cur.owner = k->s.owner;
        if (k->has_domain) {
            free(cur.domain);
            cur.domain = k->s.domain;
            k->s.domain = NULL;
        }
        if (k->has_options) {
            free(cur.options);
            cur.options = k->s.options;
            k->s.options = NULL;
        }
        rc = events_sink_check(&cur, why, sizeof(why));
        if (rc == ERR_INVALID) {
            sink_release(&cur);
            return api_job_error(j, 400, "invalid_field", NULL, why);
        }
        rc = st->ops->sink_update(st, &cur);
        if (rc == ERR_OK) {
            j->answer = sink_json(&cur, false);
            j->status = 200;
        }
    }
    sink_release(&cur);
    return rc;
}

/* The body's fields into k->s: each a string (types: also an array of
 * strings), checked for its type here and for its meaning by
 * events_sink_check. Returns 0, or the error answer's status. */
static int read_body(struct request *r, struct sink_job *k, bool create)
{
    static const char *const known[] = {"kind",   "endpoint", "types",   "owner",
                                        "domain", "secret",   "options", NULL};
    const char *key;
    json_t *v;
    json_object_foreach(r->json, key, v)
    {
        bool ok = false;
        for (int i = 0; known[i] && !ok; i++)
            ok = !strcmp(key, known[i]);
        if (!ok || (!create &&
                    (!strcmp(key, "kind") || !strcmp(key, "endpoint") || !strcmp(key, "secret"))))
            return http_error(r, 400, "invalid_field", key,
                              create ? "unknown field" : "this field cannot be changed");
    }
    json_t *kind = json_object_get(r->json, "kind"), *ep = json_object_get(r->json, "endpoint");
    if (create && (!json_is_string(kind) || !json_is_string(ep)))
        return http_error(r, 400, "invalid_field", json_is_string(kind) ? "endpoint" : "kind",
                          "kind (webhook, ingest, redis-stream) and endpoint are needed");
    if (create) {
        k->s.kind = xstrdup(json_string_value(kind));
        k->s.endpoint = xstrdup(json_string_value(ep));
    }
    json_t *types = json_object_get(r->json, "types");
    if (types) {
        struct buf t = BUF_INIT;
        size_t i;
        json_t *one;
        if (json_is_array(types)) {
            json_array_foreach(types, i, one)
            {
                if (!json_is_string(one) || strchr(json_string_value(one), ',')) {
                    buf_release(&t);
                    return http_error(r, 400, "invalid_field", "types",
                                      "types must be an array of event type names");
                }
                buf_printf(&t, "%s%s", i ? "," : "", json_string_value(one));
            }
        } else {
            buf_release(&t);
            return http_error(r, 400, "invalid_field", "types",
                              "types must be an array of event type names");
        }
        k->s.types = xstrdup(buf_cstr(&t));
        k->has_types = true;
        buf_release(&t);
    } else if (create) {
        k->s.types = xstrdup("");
    }
    json_t *owner = json_object_get(r->json, "owner");
    k->s.owner = -1;
    if (owner) {
        if (!json_is_null(owner) && (!json_is_integer(owner) || json_integer_value(owner) < 1))
            return http_error(r, 400, "invalid_field", "owner", "owner must be a key id or null");
        k->s.owner = json_is_null(owner) ? -1 : json_integer_value(owner);
        k->has_owner = true;
    }
    json_t *domain = json_object_get(r->json, "domain");
    if (domain) {
        if (!json_is_null(domain) && !json_is_string(domain))
            return http_error(r, 400, "invalid_field", "domain", "domain must be a host or null");
        k->s.domain = json_is_null(domain) ? NULL : xstrdup(json_string_value(domain));
        k->has_domain = true;
    }
    json_t *secret = json_object_get(r->json, "secret");
    if (secret) {
        if (!json_is_string(secret))
            return http_error(r, 400, "invalid_field", "secret", "secret must be a string");
        k->s.secret = xstrdup(json_string_value(secret));
    }
    json_t *options = json_object_get(r->json, "options");
    if (options) {
        if (!json_is_object(options))
            return http_error(r, 400, "invalid_field", "options", "options must be an object");
        char *text = json_dumps(options, JSON_COMPACT);
        k->s.options = xstrdup(text);
        free(text);
        k->has_options = true;
    } else if (create) {
        k->s.options = xstrdup("{}");
    }
    return 0;
}

static int submit(struct request *r, enum sink_op op)
{
    struct sink_job *k = calloc(1, sizeof(*k));
    if (!k)
        abort();
    k->op = op;
    k->now = now_ms();
    k->base.release = sink_job_release;
    if (op != SINK_CREATE && !sink_id(r, &k->s.id)) {
        sink_job_release(&k->base);
        return http_error(r, 404, "not_found", NULL, "no such sink");
    }
    if (op == SINK_CREATE || op == SINK_PATCH) {
        int status = read_body(r, k, op == SINK_CREATE);
        if (status) {
            sink_job_release(&k->base);
            return status;
        }
    }
    return api_job_submit(r, &k->base, sink_run);
}

int handle_sink_create(struct request *r) { return submit(r, SINK_CREATE); }
int handle_sink_patch(struct request *r) { return submit(r, SINK_PATCH); }
int handle_sink_delete(struct request *r) { return submit(r, SINK_DELETE); }
int handle_sink_rotate(struct request *r) { return submit(r, SINK_ROTATE); }
