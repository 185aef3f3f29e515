/* api_keys.c - /api/keys: API keys made, listed and revoked with a key.
 * A key sees the keys of its own user (a key made before users: itself),
 * an admin key every key. A key it makes belongs to the same user, and can
 * do no more than it can: its scopes are a subset of the maker's rights
 * (links_key_rights), its domain the maker's when the maker has one, and a
 * domain it names must be one of the maker's custom domains (any, for an
 * admin key). The token is in the creation's answer only. Revoking empties
 * this node's key cache at commit; other nodes hear it on the bus
 * (PostgreSQL's key_revoke announces it), as after `shortd key revoke`.
 * Writes go through the group commit (apijob.h). */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "links/links.h"
#include "base/banned.h"

#define KEY_NAME_MAX 100

static json_t *scopes_json(unsigned scopes)
{
    json_t *a = json_array();
    for (unsigned bit = 1; bit <= KEY_SCOPE_OPS; bit <<= 1)
        if (scopes & bit)
            json_array_append_new(a, json_string(links_scope_name(bit)));
    return a;
}

static json_t *time_or_null(int64_t ms)
{
    if (!ms)
        return json_null();
    char ts[RFC3339_MAX];
    rfc3339_format(ms, ts);
    return json_string(ts);
}

/* A key as the API shows it (never its token or hash): its scopes are what
 * it may do (an admin scope only on an admin key). */
static json_t *key_json(const struct apikey *k)
{
    json_t *o = json_pack("{s:I,s:s,s:b,s:o}", "id", (json_int_t)k->id, "name", k->name, "admin",
                          k->admin, "scopes", scopes_json(links_key_rights(k)));
    json_object_set_new(o, "domain", k->domain[0] ? json_string(k->domain) : json_null());
    json_object_set_new(o, "user_id", k->user_id ? json_integer(k->user_id) : json_null());
    json_object_set_new(o, "created_at", time_or_null(k->created_at));
    json_object_set_new(o, "last_used_at", time_or_null(k->last_used_at));
    json_object_set_new(o, "revoked_at", time_or_null(k->revoked_at));
    return o;
}

/* Whether key 'k' is one that the request's key may see and revoke. */
static bool is_visible(const struct request *r, const struct apikey *k)
{
    if (r->key.admin)
        return true;
    if (r->key.user_id)
        return k->user_id == r->key.user_id;
    return k->id == r->key.id;
}

struct list_ctx {
    const struct request *r;
    json_t *arr;
};

static int list_cb(const struct apikey *k, void *arg)
{
    struct list_ctx *c = arg;
    if (is_visible(c->r, k))
        json_array_append_new(c->arr, key_json(k));
    return 0;
}

int handle_key_list(struct request *r)
{
    struct store *st = r->app->store;
    struct list_ctx c = {r, json_array()};
    if (st->ops->key_list(st, list_cb, &c) != ERR_OK) {
        json_decref(c.arr);
        return http_unavailable(r, NULL);
    }
    return http_json(r, 200, json_pack("{s:o}", "keys", c.arr));
}

struct key_job {
    struct api_job base;
    struct apikey spec;  /* the key to make, or the one to revoke (id) */
    struct apikey maker; /* the request's key, its rights in scopes */
    bool create;
};

static void key_release(struct api_job *j) { free(j); }

/* Finds key 'id' among those the maker may see. */
struct find_ctx {
    const struct apikey *maker;
    int64_t id;
    bool found;
};

static int find_cb(const struct apikey *k, void *arg)
{
    struct find_ctx *f = arg;
    if (k->id != f->id)
        return 0;
    const struct apikey *m = f->maker;
    f->found = !k->revoked_at &&
               (m->admin || (m->user_id ? k->user_id == m->user_id : k->id == m->id));
    return 1;
}

static int revoke_run(struct key_job *kj, struct store *st)
{
    struct api_job *j = &kj->base;
    struct find_ctx f = {&kj->maker, kj->spec.id, false};
    int rc = st->ops->key_list(st, find_cb, &f);
    if (rc != ERR_OK)
        return rc;
    if (!f.found)
        return api_job_error(j, 404, "not_found", "id", "you have no valid key with this id");
    rc = st->ops->key_revoke(st, kj->spec.id, now_ms());
    if (rc == ERR_NOTFOUND) /* revoked meanwhile, elsewhere */
        return api_job_error(j, 404, "not_found", "id", "you have no valid key with this id");
    if (rc == ERR_OK)
        j->status = 204;
    return rc;
}

static int key_run(struct wjob *wj, struct store *st)
{
    struct key_job *kj = (struct key_job *)wj;
    struct api_job *j = &kj->base;
    if (!kj->create)
        return revoke_run(kj, st);
    if (kj->spec.domain[0] && !kj->maker.domain[0]) {
        int64_t owner = -1;
        int rc = st->ops->domain_get(st, kj->spec.domain, &owner);
        if (rc == ERR_NOTFOUND || (rc == ERR_OK && !kj->maker.admin && owner != kj->maker.owner))
            return api_job_error(j, 400, "invalid_field", "domain",
                                 "domain must be one of your custom domains (POST /api/domains)");
        if (rc != ERR_OK)
            return rc;
    }
    char token[KEY_TOKEN_LEN + 1];
    int64_t id = 0;
    int rc = links_key_insert(j->r->app->links, st, &kj->spec, token, &id);
    if (rc != ERR_OK)
        return rc;
    kj->spec.id = id;
    kj->spec.created_at = now_ms();
    j->answer = key_json(&kj->spec);
    json_object_set_new(j->answer, "key", json_string(token));
    sodium_memzero(token, sizeof(token));
    j->status = 201;
    return ERR_OK;
}

/* A revocation is seen here at once; the bus tells the other nodes. */
static void key_after_commit(struct api_job *j)
{
    struct key_job *kj = (struct key_job *)j;
    if (!kj->create)
        links_forget_keys(j->r->app->links);
}

static struct key_job *job_new(struct request *r, bool create)
{
    struct key_job *kj = calloc(1, sizeof(*kj));
    if (!kj)
        abort();
    kj->maker = r->key;
    kj->create = create;
    kj->base.release = key_release;
    kj->base.after_commit = key_after_commit;
    return kj;
}

/* "scopes": an array of scope names, each one the maker has. */
static int parse_scopes(struct request *r, json_t *v, unsigned *out)
{
    if (!v) {
        *out = r->key.scopes; /* all the maker may do */
        return 0;
    }
    if (!json_is_array(v) || !json_array_size(v))
        return http_error(r, 400, "invalid_field", "scopes",
                          "scopes must be a non-empty array of links:read, links:write, "
                          "stats:read, admin, ops");
    *out = 0;
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s)
    {
        unsigned bit;
        if (!json_is_string(s) ||
            links_scope_parse((struct slice){json_string_value(s), json_string_length(s)}, &bit) !=
                ERR_OK)
            return http_error(r, 400, "invalid_field", "scopes",
                              "scopes[%zu] is not one of links:read, links:write, stats:read, "
                              "admin, ops",
                              i);
        /* An admin gives the ops scope, which no key has by default. */
        if (!((r->key.scopes | (r->key.admin ? KEY_SCOPE_OPS : 0)) & bit))
            return http_error(r, 403, "forbidden", "scopes",
                              "scopes[%zu]: a key cannot give a scope it lacks ('%s')", i,
                              links_scope_name(bit));
        *out |= bit;
    }
    return 0;
}

static int parse_domain(struct request *r, json_t *v, char out[KEY_DOMAIN_MAX + 1])
{
    const char *maker = r->key.domain;
    if (!v || json_is_null(v)) {
        snprintf(out, KEY_DOMAIN_MAX + 1, "%s", maker); /* the maker's limit, if any */
        return 0;
    }
    const char *why = NULL;
    if (!json_is_string(v) ||
        links_domain_check(json_string_value(v), json_string_length(v), &why) != ERR_OK ||
        json_string_length(v) > KEY_DOMAIN_MAX)
        return http_error(r, 400, "invalid_field", "domain", "domain %s",
                          why ? why : "must be a host name or null");
    if (maker[0] && strcmp(maker, json_string_value(v)) != 0)
        return http_error(r, 403, "forbidden", "domain",
                          "this key is limited to '%s' and cannot make a key for another domain",
                          maker);
    snprintf(out, KEY_DOMAIN_MAX + 1, "%s", json_string_value(v));
    return 0;
}

int handle_key_create(struct request *r)
{
    const char *k;
    json_t *v;
    json_object_foreach(r->json, k, v)
    {
        if (strcmp(k, "name") != 0 && strcmp(k, "scopes") != 0 && strcmp(k, "domain") != 0)
            return http_error(r, 400, "invalid_field", k,
                              "unknown field '%s' (a key takes name, scopes and domain)", k);
    }
    json_t *name = json_object_get(r->json, "name");
    if (!json_is_string(name) || !json_string_length(name) ||
        json_string_length(name) > KEY_NAME_MAX ||
        memchr(json_string_value(name), '\0', json_string_length(name)))
        return http_error(r, 400, "invalid_field", "name", "name must be a string of 1 to %d bytes",
                          KEY_NAME_MAX);
    unsigned scopes = 0;
    char domain[KEY_DOMAIN_MAX + 1];
    int status = parse_scopes(r, json_object_get(r->json, "scopes"), &scopes);
    if (!status)
        status = parse_domain(r, json_object_get(r->json, "domain"), domain);
    if (status)
        return status;
    struct key_job *kj = job_new(r, true);
    snprintf(kj->spec.name, sizeof(kj->spec.name), "%s", json_string_value(name));
    kj->spec.scopes = scopes;
    /* Only an admin key has the admin scope to give; a user's key takes its
     * admin rights from the user's role (links_key_cap). */
    kj->spec.admin = !r->key.user_id && (scopes & KEY_SCOPE_ADMIN);
    kj->spec.user_id = r->key.user_id;
    memcpy(kj->spec.domain, domain, sizeof(domain));
    /* Checking the domain reads before the insert: it needs its savepoint. */
    kj->base.job.single_write = !domain[0] || r->key.domain[0];
    return api_job_submit(r, &kj->base, key_run);
}

int handle_key_delete(struct request *r)
{
    struct slice p = r->params[0];
    int64_t id = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (p.p[i] < '0' || p.p[i] > '9' || id > (INT64_MAX - 9) / 10) {
            id = 0;
            break;
        }
        id = id * 10 + (p.p[i] - '0');
    }
    if (id <= 0)
        return http_error(r, 404, "not_found", "id", "you have no valid key with this id");
    struct key_job *kj = job_new(r, false);
    kj->spec.id = id;
    return api_job_submit(r, &kj->base, key_run);
}
