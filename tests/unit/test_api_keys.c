/* test_api_keys.c - API keys' scopes, as the router enforces them, and
 * /api/keys (api_keys.c), in-process (harness.h): each scope on each kind of
 * route, of shortd's API and of each compatible one; keys made, listed and
 * revoked through the API; and keyuse.h's once-a-minute marks. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "test.h"

#include "app/app.h"
#include "base/err.h"
#include "links/keyuse.h"
#include "links/links.h"
#include "store/store.h"
#include "base/banned.h"

/* A key made by 'maker' (a header line) through POST /api/keys with 'body':
 * its token into 'token' (64 bytes at least); returns the status. */
static int make_key(struct hx *h, const char *maker, const char *body, char *token, size_t cap)
{
    const char *headers[] = {maker, NULL};
    struct hx_resp resp;
    int status = hx_request(h, "POST", "/api/keys", headers, body, &resp);
    const char *k = hx_json_str(&resp, "key");
    snprintf(token, cap, "%s", status == 201 && k ? k : "");
    hx_resp_release(&resp);
    return status;
}

/* A scoped key's "Authorization: Bearer" line, made by an admin key. */
static const char *scoped(struct hx *h, const char *admin, const char *scopes,
                          char line[HX_AUTH_MAX])
{
    char body[256], token[64];
    snprintf(body, sizeof(body), "{\"name\":\"k\",\"scopes\":%s}", scopes);
    CHECK_EQ_INT(make_key(h, admin, body, token, sizeof(token)), 201);
    snprintf(line, HX_AUTH_MAX, "Authorization: Bearer %s", token);
    return line;
}

/* METHOD TARGET with 'auth' and 'body': the status; 'code' set to the
 * error's code for shortd's shape. */
static int call(struct hx *h, const char *auth, const char *method, const char *target,
                const char *body, char code[32])
{
    const char *headers[] = {auth, "Content-Type: application/json", NULL};
    struct hx_resp resp;
    int status = hx_request(h, method, target, headers, body, &resp);
    if (code) {
        const char *c = hx_json_str(&resp, "error.code");
        snprintf(code, 32, "%s", c ? c : "");
    }
    hx_resp_release(&resp);
    return status;
}

void test_api_keys_scopes(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin[HX_AUTH_MAX], reader[HX_AUTH_MAX], writer[HX_AUTH_MAX], stats[HX_AUTH_MAX];
    char noadmin[HX_AUTH_MAX], code[32], link[HX_CODE_MAX];
    hx_auth(h, true, admin);
    scoped(h, admin, "[\"links:read\"]", reader);
    scoped(h, admin, "[\"links:write\"]", writer);
    scoped(h, admin, "[\"stats:read\"]", stats);
    scoped(h, admin, "[\"links:read\",\"links:write\",\"stats:read\"]", noadmin);
    const char *body = "{\"url\":\"https://example.com/scoped\"}";

    /* links:read reads, and nothing else. */
    CHECK_EQ_INT(call(h, reader, "GET", "/api/links", NULL, NULL), 200);
    CHECK_EQ_INT(call(h, reader, "POST", "/api/links", body, code), 403);
    CHECK_EQ_STR(code, "forbidden");
    CHECK_EQ_INT(call(h, reader, "GET", "/api/stats", NULL, code), 403);
    CHECK_EQ_INT(call(h, reader, "GET", "/api/admin/blocklist", NULL, NULL), 403);
    /* links:write creates, edits and deletes, and reads no list. */
    if (CHECK_EQ_INT(hx_create(h, writer, body, link), 201)) {
        char target[128];
        snprintf(target, sizeof(target), "/api/links/%s", link);
        CHECK_EQ_INT(call(h, writer, "PATCH", target, "{\"title\":\"t\"}", NULL), 200);
        CHECK_EQ_INT(call(h, reader, "PATCH", target, "{\"title\":\"u\"}", NULL), 403);
        CHECK_EQ_INT(call(h, writer, "GET", "/api/links", NULL, NULL), 403);
        snprintf(target, sizeof(target), "/api/links/%s/stats", link);
        CHECK_EQ_INT(call(h, writer, "GET", target, NULL, NULL), 403);
        CHECK_EQ_INT(call(h, reader, "DELETE", target + 0, NULL, NULL), 405);
        snprintf(target, sizeof(target), "/api/links/%s", link);
        CHECK_EQ_INT(call(h, reader, "DELETE", target, NULL, NULL), 403);
        CHECK_EQ_INT(call(h, writer, "DELETE", target, NULL, NULL), 204);
    }
    /* stats:read reads analytics only. */
    CHECK_EQ_INT(call(h, stats, "GET", "/api/stats", NULL, NULL), 200);
    CHECK_EQ_INT(call(h, stats, "GET", "/api/links", NULL, NULL), 403);
    /* An admin key without the admin scope: no admin route. */
    CHECK_EQ_INT(call(h, noadmin, "GET", "/api/admin/blocklist", NULL, code), 403);
    CHECK_EQ_STR(code, "forbidden");
    CHECK_EQ_INT(call(h, admin, "GET", "/api/admin/blocklist", NULL, NULL), 200);
    CHECK_EQ_INT(hx_create(h, noadmin, body, link), 201);

    /* Each compatible API refuses a create of a links:read key, 403 in its shape. */
    char token[80];
    snprintf(token, sizeof(token), "%s", reader + strlen("Authorization: Bearer "));
    char kutt[HX_AUTH_MAX];
    snprintf(kutt, sizeof(kutt), "X-API-KEY: %s", token);
    CHECK_EQ_INT(call(h, kutt, "POST", "/api/v2/links", "{\"target\":\"https://example.com/k\"}",
                      NULL),
                 403);
    CHECK_EQ_INT(call(h, kutt, "GET", "/api/v2/links", NULL, NULL), 200);
    CHECK_EQ_INT(call(h, reader, "POST", "/v4/shorten", "{\"long_url\":\"https://example.com/b\"}",
                      NULL),
                 403);
    char shlink[HX_AUTH_MAX];
    snprintf(shlink, sizeof(shlink), "X-Api-Key: %s", token);
    struct hx_resp resp;
    const char *sh[] = {shlink, "Content-Type: application/json", NULL};
    CHECK_EQ_INT(hx_request(h, "POST", "/rest/v3/short-urls", sh,
                            "{\"longUrl\":\"https://example.com/s\"}", &resp),
                 403);
    CHECK(resp.json && json_integer_value(json_object_get(resp.json, "status")) == 403);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/rest/v3/short-urls", sh, NULL, &resp), 200);
    hx_resp_release(&resp);
    char target[256];
    snprintf(target, sizeof(target),
             "/yourls-api.php?action=shorturl&format=json&url=https%%3A%%2F%%2Fexample.com%%2Fy"
             "&signature=%s",
             token);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 403);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/yourls-api.php?action=stats&format=json&signature=%s",
             token);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 403);
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/yourls-api.php?action=version&format=json&signature=%s",
             token);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 200);
    hx_resp_release(&resp);
    hx_free(h);
}

/* Whether GET /api/keys as 'auth' lists 'n' keys. */
static size_t listed(struct hx *h, const char *auth)
{
    const char *headers[] = {auth, NULL};
    struct hx_resp resp;
    size_t n = 0;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/keys", headers, NULL, &resp), 200))
        n = json_array_size(json_object_get(resp.json, "keys"));
    hx_resp_release(&resp);
    return n;
}

void test_api_keys_manage(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char admin[HX_AUTH_MAX], user[HX_AUTH_MAX], reader[HX_AUTH_MAX], code[32], token[64];
    hx_auth(h, true, admin);
    hx_auth(h, false, user);
    scoped(h, admin, "[\"links:read\"]", reader);
    /* The answer: the token once, the scopes, no domain. */
    const char *headers[] = {admin, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "POST", "/api/keys", headers,
                            "{\"name\":\"ci\",\"scopes\":[\"stats:read\",\"links:read\"]}", &resp),
                 201);
    CHECK(hx_json_str(&resp, "key") && !strncmp(hx_json_str(&resp, "key"), "sk_", 3));
    json_t *sc = json_object_get(resp.json, "scopes");
    CHECK(json_array_size(sc) == 2 &&
          !strcmp(json_string_value(json_array_get(sc, 0)), "links:read") &&
          !strcmp(json_string_value(json_array_get(sc, 1)), "stats:read"));
    CHECK(json_is_null(json_object_get(resp.json, "domain")));
    CHECK(json_is_null(json_object_get(resp.json, "last_used_at")));
    long long ci = hx_json_int(&resp, "id");
    hx_resp_release(&resp);

    /* A key gives no more than it has. */
    CHECK_EQ_INT(make_key(h, reader, "{\"name\":\"x\",\"scopes\":[\"links:write\"]}", token,
                          sizeof(token)),
                 403);
    CHECK_EQ_INT(make_key(h, user, "{\"name\":\"x\",\"scopes\":[\"admin\"]}", token, sizeof(token)),
                 403);
    /* Bad bodies name their field. */
    CHECK_EQ_INT(call(h, admin, "POST", "/api/keys", "{\"name\":\"\"}", code), 400);
    CHECK_EQ_STR(code, "invalid_field");
    CHECK_EQ_INT(call(h, admin, "POST", "/api/keys", "{\"name\":\"a\",\"scopes\":[\"links:rw\"]}",
                      code),
                 400);
    CHECK_EQ_INT(call(h, admin, "POST", "/api/keys", "{\"name\":\"a\",\"scopes\":[]}", code), 400);
    CHECK_EQ_INT(call(h, admin, "POST", "/api/keys", "{\"name\":\"a\",\"owner\":1}", code), 400);
    CHECK_EQ_INT(call(h, admin, "POST", "/api/keys", "{\"name\":\"a\",\"domain\":\"go.example\"}",
                      code),
                 400); /* not a registered domain */

    /* An admin key lists every key; a key of no user, itself. */
    CHECK(listed(h, admin) >= 4);
    CHECK_EQ_INT((long long)listed(h, user), 1);
    /* Revoking: another's key is not found; one's own is refused at once. */
    char target[64];
    snprintf(target, sizeof(target), "/api/keys/%lld", ci);
    CHECK_EQ_INT(call(h, user, "DELETE", target, NULL, NULL), 404);
    CHECK_EQ_INT(call(h, admin, "DELETE", target, NULL, NULL), 204);
    CHECK_EQ_INT(call(h, admin, "DELETE", target, NULL, NULL), 404);
    CHECK_EQ_INT(call(h, admin, "DELETE", "/api/keys/abc", NULL, NULL), 404);
    CHECK_EQ_INT(make_key(h, admin,
                          "{\"name\":\"gone\",\"scopes\":[\"links:read\",\"links:write\"]}", token,
                          sizeof(token)),
                 201);
    char gone[HX_AUTH_MAX];
    snprintf(gone, sizeof(gone), "Authorization: Bearer %s", token);
    CHECK_EQ_INT(call(h, gone, "GET", "/api/links", NULL, NULL), 200); /* now cached */
    headers[0] = gone;
    long long gone_id = -1;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/keys", headers, NULL, &resp), 200))
        gone_id = json_integer_value(
            json_object_get(json_array_get(json_object_get(resp.json, "keys"), 0), "id"));
    hx_resp_release(&resp);
    snprintf(target, sizeof(target), "/api/keys/%lld", gone_id);
    CHECK(gone_id > 0);
    CHECK_EQ_INT(call(h, gone, "DELETE", target, NULL, NULL), 204);
    CHECK_EQ_INT(call(h, gone, "GET", "/api/links", NULL, code), 401);
    hx_free(h);
}

void test_api_keys_domain(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char owner[HX_AUTH_MAX], limited[HX_AUTH_MAX], code[32], token[64], link[HX_CODE_MAX];
    hx_auth(h, false, owner);
    CHECK_EQ_INT(call(h, owner, "POST", "/api/domains", "{\"host\":\"go.example\"}", NULL), 201);
    CHECK_EQ_INT(call(h, owner, "POST", "/api/domains", "{\"host\":\"to.example\"}", NULL), 201);
    CHECK_EQ_INT(make_key(h, owner, "{\"name\":\"d\",\"domain\":\"go.example\"}", token,
                          sizeof(token)),
                 201);
    snprintf(limited, sizeof(limited), "Authorization: Bearer %s", token);
    /* Its keys are limited to its domain too. */
    CHECK_EQ_INT(make_key(h, limited, "{\"name\":\"e\",\"domain\":\"to.example\"}", token,
                          sizeof(token)),
                 403);
    /* It creates on its domain (by default too), never on another. */
    CHECK_EQ_INT(hx_create(h, limited,
                           "{\"url\":\"https://example.com/d1\",\"domain\":\"go.example\"}", link),
                 201);
    CHECK_EQ_INT(hx_create(h, limited, "{\"url\":\"https://example.com/d2\"}", link), 201);
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s", link);
    const char *headers[] = {limited, NULL};
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", target, headers, NULL, &resp), 200);
    CHECK_EQ_STR(hx_json_str(&resp, "domain"), "go.example");
    hx_resp_release(&resp);
    CHECK_EQ_INT(call(h, limited, "POST", "/api/links",
                      "{\"url\":\"https://example.com/d3\",\"domain\":\"to.example\"}", code),
                 403);
    hx_free(h);
}

/* A user of 'role' (its links owned by key 'owner_key') and a key of it
 * with every scope: the key's "Authorization" line. */
static const char *user_key(struct hx *h, enum user_role role, int64_t owner_key, bool disabled,
                            char line[HX_AUTH_MAX])
{
    struct app *app = hx_app(h);
    struct store *st = app->store;
    static int n;
    struct user u = {.role = role, .key_id = owner_key, .created_at = 1};
    snprintf(u.name, sizeof(u.name), "user%d", ++n);
    snprintf(u.pwhash, sizeof(u.pwhash), "$argon2id$x");
    int64_t uid = 0;
    CHECK_EQ_INT(st->ops->user_insert(st, &u, &uid), ERR_OK);
    if (disabled)
        CHECK_EQ_INT(st->ops->user_disable(st, uid, 2), ERR_OK);
    struct apikey spec = {.user_id = uid, .scopes = KEY_SCOPES_ALL, .admin = true};
    snprintf(spec.name, sizeof(spec.name), "of user %d", n);
    char token[KEY_TOKEN_LEN + 1];
    int64_t id = 0;
    CHECK_EQ_INT(links_key_make(app->links, st, &spec, token, &id), ERR_OK);
    snprintf(line, HX_AUTH_MAX, "Authorization: Bearer %s", token);
    return line;
}

/* A key can never do more than its user's role, whatever its scopes (or
 * its own admin flag): a viewer's reads, a member's own links. */
void test_api_keys_roles(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char owner[HX_AUTH_MAX], viewer[HX_AUTH_MAX], member[HX_AUTH_MAX], admin[HX_AUTH_MAX];
    char off[HX_AUTH_MAX], code[32], link[HX_CODE_MAX];
    hx_auth(h, false, owner);
    const char *oh[] = {owner, NULL};
    struct hx_resp resp;
    int64_t owner_id = -1;
    if (CHECK_EQ_INT(hx_request(h, "GET", "/api/keys", oh, NULL, &resp), 200))
        owner_id = json_integer_value(
            json_object_get(json_array_get(json_object_get(resp.json, "keys"), 0), "id"));
    hx_resp_release(&resp);
    if (!CHECK(owner_id > 0)) {
        hx_free(h);
        return;
    }
    CHECK_EQ_INT(hx_create(h, owner, "{\"url\":\"https://example.com/own\"}", link), 201);
    user_key(h, USER_VIEWER, owner_id, false, viewer);
    user_key(h, USER_MEMBER, owner_id, false, member);
    user_key(h, USER_ADMIN, owner_id, false, admin);
    user_key(h, USER_MEMBER, owner_id, true, off);
    const char *body = "{\"url\":\"https://example.com/role\"}";
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s", link);
    /* A viewer's key reads its user's links and analytics, and changes nothing. */
    CHECK_EQ_INT(call(h, viewer, "GET", target, NULL, NULL), 200);
    CHECK_EQ_INT(call(h, viewer, "GET", "/api/stats", NULL, NULL), 200);
    CHECK_EQ_INT(call(h, viewer, "POST", "/api/links", body, code), 403);
    CHECK_EQ_STR(code, "forbidden");
    CHECK_EQ_INT(call(h, viewer, "DELETE", target, NULL, NULL), 403);
    /* A member's key: its user's links, no admin route (its admin flag aside). */
    CHECK_EQ_INT(call(h, member, "PATCH", target, "{\"title\":\"m\"}", NULL), 200);
    CHECK_EQ_INT(call(h, member, "GET", "/api/admin/blocklist", NULL, NULL), 403);
    /* An admin's key: the admin routes. */
    CHECK_EQ_INT(call(h, admin, "GET", "/api/admin/blocklist", NULL, NULL), 200);
    /* A disabled user's key is refused as a revoked one. */
    CHECK_EQ_INT(call(h, off, "GET", "/api/links", NULL, NULL), 401);
    /* The viewer cannot make itself a key with more than its role. */
    CHECK_EQ_INT(call(h, viewer, "POST", "/api/keys",
                      "{\"name\":\"w\",\"scopes\":[\"links:write\"]}", code),
                 403);
    hx_free(h);
}

void test_keyuse_marks(void)
{
    struct keyuse *u = keyuse_new(16);
    int64_t ids[8], ats[8];
    keyuse_note(u, 7, 1000);
    keyuse_note(u, 7, 2000); /* within the minute: nothing new */
    keyuse_note(u, 9, 3000);
    size_t n = keyuse_drain(u, ids, ats, 8);
    CHECK_EQ_INT((long long)n, 2);
    for (size_t i = 0; i < n; i++)
        CHECK(ids[i] == 7 ? ats[i] == 1000 : ids[i] == 9 && ats[i] == 3000);
    CHECK_EQ_INT((long long)keyuse_drain(u, ids, ats, 8), 0);
    keyuse_note(u, 7, 1000 + KEYUSE_EVERY_MS - 1);
    CHECK_EQ_INT((long long)keyuse_drain(u, ids, ats, 8), 0);
    keyuse_note(u, 7, 1000 + KEYUSE_EVERY_MS);
    n = keyuse_drain(u, ids, ats, 8);
    CHECK(n == 1 && ids[0] == 7 && ats[0] == 1000 + KEYUSE_EVERY_MS);
    /* More keys than the table holds: each still marked once, at most. */
    for (int64_t id = 1; id <= 200; id++)
        keyuse_note(u, id, 500000);
    size_t total = 0;
    while ((n = keyuse_drain(u, ids, ats, 8)) > 0)
        total += n;
    CHECK(total > 0 && total <= 200);
    keyuse_free(u);
}
