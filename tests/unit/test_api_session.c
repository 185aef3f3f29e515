/* test_api_session.c - /api/session in-process (harness.h): a sign-in's
 * cookie opens the API as its user (an admin user as an admin key, a member
 * as their own key row), every cookie write wants the CSRF token and the
 * site's own origin, a viewer's writes are refused, bearer keys are as they
 * were, and a failing store answers 503 at sign-in and at each request. */
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "harness.h"
#include "links/users.h"
#include "test.h"

#include "base/banned.h"

struct signed_in {
    char cookie[128]; /* "Cookie: shortd_session=..." */
    char csrf[96];    /* "X-CSRF-Token: ..." */
};

static bool sign_in(struct hx *h, const char *name, const char *pw, struct signed_in *s)
{
    char body[160];
    snprintf(body, sizeof(body), "{\"name\": \"%s\", \"password\": \"%s\"}", name, pw);
    struct hx_resp resp;
    bool ok = CHECK_EQ_INT(hx_request(h, "POST", "/api/session", NULL, body, &resp), 200);
    const char *set = ok ? hx_header(&resp, "Set-Cookie") : NULL;
    const char *csrf = ok ? hx_json_str(&resp, "csrf_token") : NULL;
    ok = ok && CHECK(set && csrf);
    if (ok) {
        snprintf(s->cookie, sizeof(s->cookie), "Cookie: %.*s", (int)strcspn(set, ";"), set);
        snprintf(s->csrf, sizeof(s->csrf), "X-CSRF-Token: %s", csrf);
        CHECK(strstr(set, "HttpOnly") && strstr(set, "SameSite=Strict") && strstr(set, "Path=/"));
    }
    hx_resp_release(&resp);
    return ok;
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

void test_api_session_roles(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    make_user(h, "ada", USER_ADMIN);
    make_user(h, "mel", USER_MEMBER);
    make_user(h, "val", USER_VIEWER);
    struct signed_in ada, mel, val;
    if (!sign_in(h, "ada", "ada-password", &ada) || !sign_in(h, "mel", "mel-password", &mel) ||
        !sign_in(h, "val", "val-password", &val)) {
        hx_free(h);
        return;
    }
    const char *site = "Sec-Fetch-Site: same-origin";
    const char *mel_page[] = {mel.cookie, site, mel.csrf, NULL};
    const char *val_page[] = {val.cookie, site, val.csrf, NULL};
    const char *ada_page[] = {ada.cookie, site, ada.csrf, NULL};
    const char *mel_read[] = {mel.cookie, NULL};
    struct hx_resp resp;

    /* The member's link is theirs: the admin user sees it, a key's is not the member's. */
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", mel_page, "{\"url\": \"https://m.example/\"}",
                            &resp),
                 201);
    char code[HX_CODE_MAX] = "";
    if (hx_json_str(&resp, "code"))
        snprintf(code, sizeof(code), "%s", hx_json_str(&resp, "code"));
    hx_resp_release(&resp);
    char line[HX_AUTH_MAX], other[HX_CODE_MAX];
    CHECK_EQ_INT(hx_create(h, hx_auth(h, false, line), "{\"url\": \"https://k.example/\"}", other),
                 201);
    char path[128];
    snprintf(path, sizeof(path), "/api/links/%s", code);
    CHECK_EQ_INT(hx_request(h, "GET", path, mel_read, NULL, &resp), 200);
    hx_resp_release(&resp);
    const char *ada_read[] = {ada.cookie, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", path, ada_read, NULL, &resp), 200);
    hx_resp_release(&resp);
    snprintf(path, sizeof(path), "/api/links/%s", other);
    CHECK_EQ_INT(hx_request(h, "GET", path, mel_read, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/admin/blocklist", mel_read, NULL, &resp), 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/admin/blocklist", ada_read, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/admin/blocklist", ada_page,
                            "{\"host\": \"evil.example\"}", &resp),
                 201);
    hx_resp_release(&resp);

    /* A viewer reads and writes nothing; it may sign out. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links", val_page, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", val_page, "{\"url\": \"https://v.example/\"}",
                            &resp),
                 403);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "forbidden");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "DELETE", "/api/session", val_page, NULL, &resp), 204);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/session", val_page, NULL, &resp), 401);
    hx_resp_release(&resp);

    /* CSRF: no token, another site, no origin said: refused, nothing made. */
    const char *no_token[] = {mel.cookie, site, NULL};
    const char *cross[] = {mel.cookie, "Sec-Fetch-Site: cross-site", mel.csrf, NULL};
    const char *unsaid[] = {mel.cookie, mel.csrf, NULL};
    const char *evil[] = {mel.cookie, "Origin: https://evil.example", mel.csrf, NULL};
    const char *own[] = {mel.cookie, "Origin: https://sho.rt", mel.csrf, NULL};
    const char *const *refused[] = {no_token, cross, unsaid, evil};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(hx_request(h, "POST", "/api/links", refused[i],
                                "{\"url\": \"https://csrf.example/\"}", &resp),
                     403);
        CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "csrf");
        hx_resp_release(&resp);
    }
    CHECK_EQ_INT(hx_request(h, "POST", "/api/links", own, "{\"url\": \"https://own.example/\"}",
                            &resp),
                 201);
    hx_resp_release(&resp);

    /* GET /api/session with a key names the key; the session's gives the token. */
    const char *key[] = {line, NULL};
    CHECK_EQ_INT(hx_request(h, "GET", "/api/session", key, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "role"), "member");
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/session", mel_read, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "name"), "mel");
    CHECK(hx_json_str(&resp, "csrf_token") &&
          strcmp(mel.csrf + strlen("X-CSRF-Token: "), hx_json_str(&resp, "csrf_token")) == 0);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_session_failures(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    make_user(h, "mel", USER_MEMBER);
    struct signed_in mel;
    if (!sign_in(h, "mel", "mel-password", &mel)) {
        hx_free(h);
        return;
    }
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/session", NULL,
                            "{\"name\": \"mel\", \"password\": \"wrong-password\"}", &resp),
                 401);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_credentials");
    CHECK(!hx_header(&resp, "Set-Cookie"));
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", "/api/session", NULL, "{\"name\": 5, \"password\": \"x\"}",
                            &resp),
                 400);
    CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "name");
    hx_resp_release(&resp);
    /* A store that fails: 503 at sign-in, at a session's check, at a sign-in's write. */
    CHECK(hx_unavailable(h, "user_by_name", 0, "POST", "/api/session", NULL,
                         "{\"name\": \"mel\", \"password\": \"mel-password\"}"));
    const char *read[] = {mel.cookie, NULL};
    CHECK(hx_unavailable(h, "session_get", 0, "GET", "/api/links", read, NULL));
    CHECK(hx_unavailable(h, "commit", 0, "POST", "/api/session", NULL,
                         "{\"name\": \"mel\", \"password\": \"mel-password\"}"));
    /* And all is well after. */
    CHECK_EQ_INT(hx_request(h, "GET", "/api/session", read, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_free(h);
}
