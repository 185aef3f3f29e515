/* api_session.c - /api/session: signing in to the dashboard with a name and
 * a password, who is signed in, signing out; /api/setup: the first admin
 * account, made with the first start's setup token, signed in at once
 * (users.h).
 *
 * DESIGN
 * The token goes to the browser only as an HttpOnly, SameSite=Strict cookie
 * (Secure when base-url is https), so the page's scripts never hold it; the
 * page holds the CSRF token derived from it, which every write it makes
 * carries (the router checks it). Sessions live in the store, so a sign-in
 * or a sign-out holds on every node at once. The password check is Argon2
 * on this store thread (the router runs the route on one, never on an event
 * loop); the `auth` rate limit counts each refused sign-in (router.c). */
#include <sodium.h>
#include <stdio.h>
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

#define COOKIE "shortd_session"

struct session_job {
    struct api_job base;
    uint8_t key[32];
    int64_t user_id;
    enum user_role role;
    char name[USER_NAME_MAX + 1];
    int64_t now, max_ms;
    char token[SESSION_TOKEN_LEN + 1];
    uint8_t hash[32]; /* sign-out: the session to end */
};

static void session_release(struct api_job *j)
{
    sodium_memzero(j, sizeof(struct session_job));
    free(j);
}

static bool secure(const struct request *r)
{
    const char *base = r->app->cfg.base_url;
    return base && strncmp(base, "https://", 8) == 0;
}

/* Set-Cookie of 'token' for 'max_s' seconds ("" and 0 remove it). */
static void set_cookie(struct request *r, const char *token, int64_t max_s)
{
    char v[160];
    int n = snprintf(v, sizeof(v), COOKIE "=%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Strict%s",
                     token, (long long)max_s, secure(r) ? "; Secure" : "");
    http_add_header(r, "Set-Cookie", v, (size_t)n);
}

static json_t *whoami(const char *name, enum user_role role, const char *csrf)
{
    return json_pack("{s:s,s:s,s:s?}", "name", name, "role", user_role_name(role), "csrf_token",
                     csrf);
}

static int start_run(struct wjob *wj, struct store *st)
{
    struct session_job *s = (struct session_job *)wj;
    int rc = users_session_start(st, s->key, s->user_id, s->now, s->max_ms, s->token);
    s->base.status = 200;
    return rc;
}

static void start_render(struct api_job *j)
{
    struct session_job *s = (struct session_job *)j;
    char csrf[SESSION_CSRF_LEN + 1];
    users_csrf_token(s->key, (struct slice){s->token, SESSION_TOKEN_LEN}, csrf);
    set_cookie(j->r, s->token, s->max_ms / 1000);
    http_add_header(j->r, "Cache-Control", "no-store", 8);
    j->answer = whoami(s->name, s->role, csrf);
}

int handle_session_create(struct request *r)
{
    json_t *name = json_object_get(r->json, "name");
    json_t *pw = json_object_get(r->json, "password");
    if (!json_is_string(name))
        return http_error(r, 400, "invalid_field", "name", "name must be a string");
    if (!json_is_string(pw))
        return http_error(r, 400, "invalid_field", "password", "password must be a string");
    struct user u;
    int rc = users_verify(r->app->store, json_string_value(name), json_string_value(pw),
                          json_string_length(pw), &u);
    if (rc == ERR_NOTFOUND)
        return http_error(r, 401, "invalid_credentials", NULL, "wrong name or password");
    if (rc != ERR_OK)
        return http_unavailable(r, NULL);
    struct session_job *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    links_session_key(r->app->links, s->key);
    s->user_id = u.id;
    s->role = u.role;
    memcpy(s->name, u.name, sizeof(s->name));
    s->now = now_ms();
    s->max_ms = r->app->cfg.session_max * 1000;
    s->base.render = start_render;
    s->base.release = session_release;
    sodium_memzero(&u, sizeof(u)); /* two writes: the session, the user's last sign-in */
    return api_job_submit(r, &s->base, start_run);
}

int handle_session_get(struct request *r)
{
    http_add_header(r, "Cache-Control", "no-store", 8);
    if (!r->user_id) {
        json_t *doc = json_pack("{s:s,s:s,s:n}", "name", r->key.name, "role",
                                r->key.admin ? "admin" : "member", "csrf_token");
        return http_json(r, 200, doc);
    }
    uint8_t key[32];
    char csrf[SESSION_CSRF_LEN + 1];
    links_session_key(r->app->links, key);
    users_csrf_token(key, r->session, csrf);
    sodium_memzero(key, sizeof(key));
    return http_json(r, 200, whoami(r->user_name, r->user_role, csrf));
}

static int end_run(struct wjob *wj, struct store *st)
{
    struct session_job *s = (struct session_job *)wj;
    int rc = st->ops->session_end(st, s->hash);
    s->base.status = 204;
    return rc == ERR_NOTFOUND ? ERR_OK : rc; /* ended meanwhile: just as well */
}

static void end_render(struct api_job *j) { set_cookie(j->r, "", 0); }

int handle_session_delete(struct request *r)
{
    if (!r->user_id)
        return http_error(r, 400, "not_signed_in", NULL,
                          "this request carries an API key, not a session: there is nothing to "
                          "sign out of");
    struct session_job *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    links_session_key(r->app->links, s->key);
    users_session_hash(s->key, r->session, s->hash);
    s->base.render = end_render;
    s->base.release = session_release;
    s->base.job.single_write = true;
    return api_job_submit(r, &s->base, end_run);
}

/* ---- /api/setup: the first admin account, with the setup token ---- */

/* The answer for a token that setup refuses, and its status. */
static int setup_refuse(struct request *r, int rc)
{
    if (rc == ERR_EXISTS)
        return http_error(
            r, 409, "setup_done", NULL,
            "the first admin exists already: sign in, or ask an admin for an account");
    if (rc == ERR_NOTFOUND)
        return http_error(r, 401, "invalid_setup_token", "token",
                          "this setup link is unknown, used or expired (it lasts an hour): "
                          "restart shortd for a new one, or run shortd user create NAME "
                          "--role admin");
    return http_unavailable(r, NULL);
}

/* The token of ?token=; an empty slice when there is none. */
static struct slice query_token(const struct request *r)
{
    struct slice t = {"", 0};
    if (!http_query_param(r, "token", &t))
        t = (struct slice){"", 0};
    return t;
}

int handle_setup_get(struct request *r)
{
    http_add_header(r, "Cache-Control", "no-store", 8);
    int rc = users_setup_check(r->app->store, query_token(r), now_ms());
    if (rc != ERR_OK)
        return setup_refuse(r, rc);
    return http_json(r, 200, json_pack("{s:b}", "valid", 1));
}

struct setup_job {
    struct session_job s; /* its session, started with the account */
    char token[SETUP_TOKEN_LEN + 1];
    struct user u;
};

static void setup_release(struct api_job *j)
{
    sodium_memzero(j, sizeof(struct setup_job));
    free(j);
}

/* In one transaction: the token is checked again (another node may have
 * used it meanwhile), the admin made, the token ended and a session begun. */
static int setup_run(struct wjob *wj, struct store *st)
{
    struct setup_job *sj = (struct setup_job *)wj;
    struct api_job *j = &sj->s.base;
    struct slice token = {sj->token, strlen(sj->token)};
    int rc = users_setup_check(st, token, sj->s.now);
    if (rc == ERR_EXISTS)
        return api_job_error(j, 409, "setup_done", NULL,
                             "the first admin exists already: sign in, or ask an admin for an "
                             "account");
    if (rc == ERR_NOTFOUND)
        return api_job_error(j, 401, "invalid_setup_token", "token",
                             "this setup link is unknown, used or expired: restart shortd for a "
                             "new one");
    if (rc == ERR_OK)
        rc = users_insert(st, &sj->u, &sj->s.user_id);
    if (rc == ERR_OK)
        rc = st->ops->setup_end(st);
    if (rc == ERR_OK)
        rc =
            users_session_start(st, sj->s.key, sj->s.user_id, sj->s.now, sj->s.max_ms, sj->s.token);
    sj->s.base.status = 201;
    return rc;
}

int handle_setup_create(struct request *r)
{
    json_t *token = json_object_get(r->json, "token");
    json_t *name = json_object_get(r->json, "name");
    json_t *pw = json_object_get(r->json, "password");
    const char *why = NULL;
    if (!json_is_string(token))
        return http_error(r, 400, "invalid_field", "token",
                          "token must be a string (the setup link's token=)");
    if (!json_is_string(name) || json_string_length(name) > USER_NAME_MAX ||
        strlen(json_string_value(name)) != json_string_length(name) ||
        users_name_valid(json_string_value(name), &why) != ERR_OK)
        return http_error(r, 400, "invalid_field", "name", "name %s",
                          why ? why : "must be a string");
    if (!json_is_string(pw))
        return http_error(r, 400, "invalid_field", "password", "password must be a string");
    struct slice t = {json_string_value(token), json_string_length(token)};
    int64_t now = now_ms();
    /* Checked before Argon2 runs: a wrong token costs no hashing. */
    int rc = users_setup_check(r->app->store, t, now);
    if (rc != ERR_OK)
        return setup_refuse(r, rc);
    struct setup_job *sj = calloc(1, sizeof(*sj));
    if (!sj)
        abort();
    rc = users_hash_password(json_string_value(pw), json_string_length(pw), sj->u.pwhash, &why);
    if (rc != ERR_OK) {
        setup_release(&sj->s.base);
        if (rc == ERR_INVALID)
            return http_error(r, 400, "invalid_field", "password", "password %s", why);
        return http_unavailable(r, NULL);
    }
    snprintf(sj->u.name, sizeof(sj->u.name), "%s", json_string_value(name));
    sj->u.role = USER_ADMIN;
    sj->u.created_at = now;
    memcpy(sj->token, t.p, t.n); /* SETUP_TOKEN_LEN: users_setup_check said so */
    struct session_job *s = &sj->s;
    links_session_key(r->app->links, s->key);
    s->role = USER_ADMIN;
    memcpy(s->name, sj->u.name, sizeof(s->name));
    s->now = now;
    s->max_ms = r->app->cfg.session_max * 1000;
    s->base.render = start_render;
    s->base.release = setup_release;
    return api_job_submit(r, &s->base, setup_run);
}
