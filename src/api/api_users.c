/* api_users.c - /api/users: the people who sign in to the dashboard, listed,
 * made and changed by an admin (the router lets only admin keys and admin
 * sessions in). A change of role, a disabling and a password reset hold at
 * once: a session reads its user on every request; disabling and a password
 * reset end the user's sessions in the same transaction; the user's API
 * keys, which act with its role and refuse a disabled user, leave this
 * node's key cache at commit and every other node's through the bus
 * (PostgreSQL's user_set_role, user_disable, user_enable announce it). An
 * admin cannot disable themselves or take their own admin role: the last
 * way in is never closed from the dashboard by a slip. Passwords are hashed
 * here, on the store thread, before the write is queued (users.h). */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "api/apijob.h"
#include "api/handlers.h"
#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "links/links.h"
#include "links/users.h"
#include "base/banned.h"

static json_t *time_or_null(int64_t ms)
{
    if (!ms)
        return json_null();
    char ts[RFC3339_MAX];
    rfc3339_format(ms, ts);
    return json_string(ts);
}

/* A user as the API shows them (never their password hash). */
static json_t *user_json(const struct user *u)
{
    json_t *o = json_pack("{s:I,s:s,s:s,s:b}", "id", (json_int_t)u->id, "name", u->name, "role",
                          user_role_name(u->role), "disabled", u->disabled_at != 0);
    json_object_set_new(o, "created_at", time_or_null(u->created_at));
    json_object_set_new(o, "disabled_at", time_or_null(u->disabled_at));
    json_object_set_new(o, "last_signin_at", time_or_null(u->last_signin_at));
    return o;
}

static int list_cb(const struct user *u, void *arg)
{
    json_array_append_new(arg, user_json(u));
    return 0;
}

int handle_user_list(struct request *r)
{
    struct store *st = r->app->store;
    json_t *arr = json_array();
    if (st->ops->user_list(st, list_cb, arr) != ERR_OK) {
        json_decref(arr);
        return http_unavailable(r, NULL);
    }
    http_add_header(r, "Cache-Control", "no-store", 8);
    return http_json(r, 200, json_pack("{s:o}", "users", arr));
}

struct user_job {
    struct api_job base;
    struct user u; /* create: the new user; patch: its id */
    bool set_role, set_disabled, set_password;
    enum user_role role;
    bool disabled;
    int64_t now;
};

static void user_release(struct api_job *j)
{
    sodium_memzero(j, sizeof(struct user_job));
    free(j);
}

static int create_run(struct wjob *wj, struct store *st)
{
    struct user_job *uj = (struct user_job *)wj;
    struct api_job *j = &uj->base;
    int rc = users_insert(st, &uj->u, &uj->u.id);
    if (rc == ERR_EXISTS)
        return api_job_error(j, 409, "exists", "name", "a user with this name exists already");
    if (rc != ERR_OK)
        return rc;
    j->answer = user_json(&uj->u);
    j->status = 201;
    return ERR_OK;
}

static int patch_run(struct wjob *wj, struct store *st)
{
    struct user_job *uj = (struct user_job *)wj;
    struct api_job *j = &uj->base;
    struct user u;
    int rc = st->ops->user_get(st, uj->u.id, &u);
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 404, "not_found", "id", "there is no user with this id");
    if (rc == ERR_OK && uj->set_role && u.role != uj->role)
        rc = st->ops->user_set_role(st, u.id, uj->role);
    if (rc == ERR_OK && uj->set_disabled && uj->disabled && !u.disabled_at)
        rc = st->ops->user_disable(st, u.id, uj->now);
    if (rc == ERR_OK && uj->set_disabled && !uj->disabled && u.disabled_at)
        rc = st->ops->user_enable(st, u.id);
    if (rc == ERR_OK && uj->set_password)
        rc = st->ops->user_set_password(st, u.id, uj->u.pwhash);
    /* Disabled, or a new password: every session of theirs ends. */
    if (rc == ERR_OK && ((uj->set_disabled && uj->disabled) || uj->set_password))
        rc = st->ops->session_end_user(st, u.id);
    if (rc == ERR_OK)
        rc = st->ops->user_get(st, u.id, &u);
    if (rc != ERR_OK)
        return rc;
    j->answer = user_json(&u);
    j->status = 200;
    sodium_memzero(&u, sizeof(u));
    return ERR_OK;
}

/* The user's keys act with what changed: this node forgets the keys it
 * holds; the bus tells the others (PostgreSQL). */
static void user_after_commit(struct api_job *j) { links_forget_keys(j->r->app->links); }

static struct user_job *job_new(void)
{
    struct user_job *uj = calloc(1, sizeof(*uj));
    if (!uj)
        abort();
    uj->base.release = user_release;
    uj->base.after_commit = user_after_commit;
    uj->now = now_ms();
    return uj;
}

/* Only the fields in 'allowed' (a NULL-terminated list): 0, or the 400. */
static int known_fields(struct request *r, const char *const *allowed, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach(r->json, k, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(k, *a) == 0;
        if (!ok)
            return http_error(r, 400, "invalid_field", k, "unknown field '%s' (%s)", k, what);
    }
    return 0;
}

static int parse_role(struct request *r, json_t *v, enum user_role *out)
{
    if (!json_is_string(v) || user_role_parse(json_string_value(v), out) != ERR_OK)
        return http_error(r, 400, "invalid_field", "role",
                          "role must be \"admin\", \"member\" or \"viewer\"");
    return 0;
}

/* The password's hash into 'out': 0, or the 400 (or 503). */
static int hash_password(struct request *r, json_t *v, char out[USER_HASH_MAX])
{
    const char *why = "must be a string";
    int rc = json_is_string(v)
                 ? users_hash_password(json_string_value(v), json_string_length(v), out, &why)
                 : ERR_INVALID;
    if (rc == ERR_INVALID)
        return http_error(r, 400, "invalid_field", "password", "password %s", why);
    return rc == ERR_OK ? 0 : http_unavailable(r, NULL);
}

int handle_user_create(struct request *r)
{
    static const char *const allowed[] = {"name", "password", "role", NULL};
    int status = known_fields(r, allowed, "a user takes name, password and role");
    if (status)
        return status;
    json_t *name = json_object_get(r->json, "name");
    const char *why = "must be a string";
    if (!json_is_string(name) || json_string_length(name) > USER_NAME_MAX ||
        strlen(json_string_value(name)) != json_string_length(name) ||
        users_name_valid(json_string_value(name), &why) != ERR_OK)
        return http_error(r, 400, "invalid_field", "name", "name %s", why);
    enum user_role role = USER_MEMBER;
    json_t *v = json_object_get(r->json, "role");
    status = v ? parse_role(r, v, &role) : 0;
    if (status)
        return status;
    struct user_job *uj = job_new();
    status = hash_password(r, json_object_get(r->json, "password"), uj->u.pwhash);
    if (status) {
        user_release(&uj->base);
        return status;
    }
    snprintf(uj->u.name, sizeof(uj->u.name), "%s", json_string_value(name));
    uj->u.role = role;
    uj->u.created_at = uj->now;
    return api_job_submit(r, &uj->base, create_run);
}

int handle_user_patch(struct request *r)
{
    static const char *const allowed[] = {"role", "disabled", "password", NULL};
    int status = known_fields(r, allowed, "a user's role, disabled and password may change");
    if (status)
        return status;
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
        return http_error(r, 404, "not_found", "id", "there is no user with this id");
    enum user_role role = USER_MEMBER;
    json_t *vrole = json_object_get(r->json, "role");
    json_t *vdis = json_object_get(r->json, "disabled");
    json_t *vpw = json_object_get(r->json, "password");
    status = vrole ? parse_role(r, vrole, &role) : 0;
    if (status)
        return status;
    if (vdis && !json_is_boolean(vdis))
        return http_error(r, 400, "invalid_field", "disabled", "disabled must be true or false");
    if (!vrole && !vdis && !vpw)
        return http_error(r, 400, "invalid_field", NULL,
                          "nothing to change: give role, disabled or password");
    /* The signed-in admin keeps their own way in. */
    if (r->user_id == id && vrole && role != USER_ADMIN)
        return http_error(r, 409, "self", "role",
                          "you cannot take your own admin role: another admin can");
    if (r->user_id == id && vdis && json_is_true(vdis))
        return http_error(r, 409, "self", "disabled",
                          "you cannot disable yourself: another admin can");
    struct user_job *uj = job_new();
    status = vpw ? hash_password(r, vpw, uj->u.pwhash) : 0;
    if (status) {
        user_release(&uj->base);
        return status;
    }
    uj->u.id = id;
    uj->set_role = vrole != NULL;
    uj->role = role;
    uj->set_disabled = vdis != NULL;
    uj->disabled = vdis && json_is_true(vdis);
    uj->set_password = vpw != NULL;
    return api_job_submit(r, &uj->base, patch_run);
}
