/* test_api_users.c - /api/users and /api/setup in-process (harness.h): the
 * first admin made with the setup token (and signed in), the token refused
 * once used; an admin session lists, makes and changes users, a member's
 * and a viewer's are refused; a failing store answers 503 and changes
 * nothing. */
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "harness.h"
#include "links/users.h"
#include "test.h"

#include "base/banned.h"

struct page {
    char cookie[128]; /* "Cookie: shortd_session=..." */
    char csrf[96];    /* "X-CSRF-Token: ..." */
};

/* The session of an answer that set one (sign-in, setup). */
static bool page_of(struct hx_resp *resp, struct page *p)
{
    const char *set = hx_header(resp, "Set-Cookie");
    const char *csrf = hx_json_str(resp, "csrf_token");
    if (!CHECK(set && csrf))
        return false;
    snprintf(p->cookie, sizeof(p->cookie), "Cookie: %.*s", (int)strcspn(set, ";"), set);
    snprintf(p->csrf, sizeof(p->csrf), "X-CSRF-Token: %s", csrf);
    return true;
}

static bool sign_in(struct hx *h, const char *name, struct page *p)
{
    char body[160];
    snprintf(body, sizeof(body), "{\"name\": \"%s\", \"password\": \"%s-password\"}", name, name);
    struct hx_resp resp;
    bool ok = CHECK_EQ_INT(hx_request(h, "POST", "/api/session", NULL, body, &resp), 200) &&
              page_of(&resp, p);
    hx_resp_release(&resp);
    return ok;
}

void test_api_users_setup(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    struct store *st = hx_app(h)->store;
    char token[SETUP_TOKEN_LEN + 1];
    if (!CHECK_EQ_INT(users_setup_start(st, now_ms(), token), ERR_OK)) {
        hx_free(h);
        return;
    }
    char target[128], body[256];
    snprintf(target, sizeof(target), "/api/setup?token=%s", token);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/setup?token=nope", NULL, NULL, &resp), 401);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_setup_token");
    hx_resp_release(&resp);
    CHECK(hx_unavailable(h, "user_count", 0, "GET", target, NULL, NULL));

    /* Bad input names its field; a failing commit makes nothing. */
    snprintf(body, sizeof(body),
             "{\"token\": \"%s\", \"name\": \"Root\", \"password\": \"pw-pw-pw-pw\"}", token);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/setup", NULL, body, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "name");
    hx_resp_release(&resp);
    snprintf(body, sizeof(body), "{\"token\": \"%s\", \"name\": \"root\", \"password\": \"pw\"}",
             token);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/setup", NULL, body, &resp), 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "password");
    hx_resp_release(&resp);
    snprintf(body, sizeof(body),
             "{\"token\": \"%s\", \"name\": \"root\", \"password\": \"root-password\"}", token);
    CHECK(hx_unavailable(h, "commit", 0, "POST", "/api/setup", NULL, body));
    int64_t n = -1;
    CHECK_EQ_INT(st->ops->user_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 0);

    /* The token makes the admin, signed in; then it is spent. */
    struct page root;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/setup", NULL, body, &resp), 201);
    CHECK_EQ_STR(hx_json_str(&resp, "role"), "admin");
    bool ok = page_of(&resp, &root);
    hx_resp_release(&resp);
    if (ok) {
        const char *read[] = {root.cookie, NULL};
        CHECK_EQ_INT(hx_request(h, "GET", "/api/users", read, NULL, &resp), 200);
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/setup", NULL, body, &resp), 409);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "setup_done");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 409);
    hx_resp_release(&resp);
    hx_free(h);
}

static void make_user(struct hx *h, const char *name, enum user_role role)
{
    const char *why = NULL;
    int64_t id = 0;
    char pw[64];
    snprintf(pw, sizeof(pw), "%s-password", name);
    CHECK_EQ_INT(users_create(hx_app(h)->store, name, pw, strlen(pw), role, now_ms(), &id, &why),
                 ERR_OK);
}

void test_api_users_admin(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    make_user(h, "ada", USER_ADMIN);
    make_user(h, "mel", USER_MEMBER);
    make_user(h, "val", USER_VIEWER);
    struct page ada, mel, val;
    if (!sign_in(h, "ada", &ada) || !sign_in(h, "mel", &mel) || !sign_in(h, "val", &val)) {
        hx_free(h);
        return;
    }
    const char *site = "Sec-Fetch-Site: same-origin";
    const char *ada_page[] = {ada.cookie, site, ada.csrf, NULL};
    const char *mel_page[] = {mel.cookie, site, mel.csrf, NULL};
    const char *val_page[] = {val.cookie, site, val.csrf, NULL};
    const char *ada_read[] = {ada.cookie, NULL};
    struct hx_resp resp;

    CHECK_EQ_INT(hx_request(h, "GET", "/api/users", ada_read, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "users.1.name"), "mel");
    CHECK_EQ_STR(hx_json_str(&resp, "users.2.role"), "viewer");
    hx_resp_release(&resp);
    const char *mel_read[] = {mel.cookie, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/users", mel_read, NULL, &resp), 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/users", mel_page,
                            "{\"name\": \"eve\", \"password\": \"eve-password\"}", &resp),
                 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/users/2", val_page, "{\"role\": \"admin\"}", &resp),
                 403);
    hx_resp_release(&resp);

    CHECK_EQ_INT(hx_request(h, "POST", "/api/users", ada_page,
                            "{\"name\": \"eve\", \"password\": \"eve-password\", \"role\": "
                            "\"viewer\"}",
                            &resp),
                 201);
    CHECK_EQ_STR(hx_json_str(&resp, "role"), "viewer");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/users", ada_page,
                            "{\"name\": \"eve\", \"password\": \"eve-password\"}", &resp),
                 409);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/users/2", ada_page, "{\"role\": \"viewer\"}", &resp),
                 200);
    CHECK_EQ_STR(hx_json_str(&resp, "role"), "viewer");
    hx_resp_release(&resp);
    /* The member is a viewer now: their writes are refused at once. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", mel_page, "{\"url\": \"https://m.example/\"}",
                            &resp),
                 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/users/1", ada_page, "{\"disabled\": true}", &resp),
                 409);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "PATCH", "/api/users/3", ada_page, "{\"disabled\": true}", &resp),
                 200);
    hx_resp_release(&resp);
    const char *val_read[] = {val.cookie, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", val_read, NULL, &resp), 401);
    hx_resp_release(&resp);

    /* A failing store: 503, and nothing changed. */
    CHECK(hx_unavailable(h, "user_list", 0, "GET", "/api/users", ada_read, NULL));
    CHECK(
        hx_unavailable(h, "commit", 0, "PATCH", "/api/users/2", ada_page, "{\"role\": \"admin\"}"));
    struct user u;
    if (CHECK_EQ_INT(hx_app(h)->store->ops->user_get(hx_app(h)->store, 2, &u), ERR_OK))
        CHECK_EQ_INT(u.role, USER_VIEWER);
    hx_free(h);
}
