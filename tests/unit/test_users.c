/* test_users.c - users.h: the rules for names and passwords, and a user
 * made, given a new password and disabled in a real SQLite store, with the
 * key row that owns their links and the sessions each change ends; the
 * setup token of an empty store. (The store ops themselves are checked on
 * both backends by test_store.c.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "links/pwhash.h"
#include "links/users.h"
#include "store/store.h"
#include "test.h"

#include "base/banned.h"

void test_users_rules(void)
{
    static const struct {
        const char *name;
        const char *why; /* NULL: valid */
    } names[] = {
        {"ann", NULL},
        {"0ps", NULL},
        {"a.b_c-d@example.com", NULL},
        {"", "must be 1 to 64 characters"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "must be 1 to 64 characters"},
        {"Ann", "must start with a lowercase letter or a digit"},
        {".ann", "must start with a lowercase letter or a digit"},
        {"an n", "may hold only lowercase letters, digits and . _ - @"},
        {"anN", "may hold only lowercase letters, digits and . _ - @"},
        {"ann/x", "may hold only lowercase letters, digits and . _ - @"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *why = NULL;
        int rc = users_name_valid(names[i].name, &why);
        if (!names[i].why) {
            if (!CHECK_EQ_INT(rc, ERR_OK))
                test_note("name '%s': %s", names[i].name, why);
        } else if (CHECK_EQ_INT(rc, ERR_INVALID)) {
            CHECK_EQ_STR(why, names[i].why);
        }
    }
    const char *why = NULL;
    CHECK_EQ_INT(users_password_valid("1234567", 7, &why), ERR_INVALID);
    CHECK_EQ_STR(why, "must be at least 8 bytes");
    CHECK_EQ_INT(users_password_valid("12345678", 8, &why), ERR_OK);
    CHECK_EQ_INT(users_password_valid("1234\xff"
                                      "678",
                                      8, &why),
                 ERR_INVALID);
    CHECK_EQ_STR(why, "must be valid UTF-8");
    char big[PWHASH_PW_MAX + 1];
    memset(big, 'x', sizeof(big));
    CHECK_EQ_INT(users_password_valid(big, PWHASH_PW_MAX, &why), ERR_OK);
    CHECK_EQ_INT(users_password_valid(big, PWHASH_PW_MAX + 1, &why), ERR_INVALID);
}

static int count_sessions(struct store *st, int64_t user, const uint8_t (*hashes)[32], int n)
{
    int found = 0;
    for (int i = 0; i < n; i++) {
        struct session s;
        if (st->ops->session_get(st, hashes[i], 0, &s) == ERR_OK && s.user_id == user)
            found++;
    }
    return found;
}

void test_users_lifecycle(void)
{
    char dir[] = "/tmp/shortd-users-XXXXXX";
    if (!CHECK(mkdtemp(dir)))
        return;
    char path[64];
    snprintf(path, sizeof(path), "%s/db", dir);
    struct store *st = NULL;
    if (!CHECK_EQ_INT(store_open(path, &st), ERR_OK))
        return;
    const char *why = NULL;
    int64_t ann = 0, bob = 0, dup = 0;
    CHECK_EQ_INT(users_create(st, "ann", "ann-password", 12, USER_ADMIN, 100, &ann, &why), ERR_OK);
    CHECK_EQ_INT(users_create(st, "bob", "bob-password", 12, USER_VIEWER, 200, &bob, &why), ERR_OK);
    CHECK_EQ_INT(users_create(st, "ann", "ann-password", 12, USER_MEMBER, 300, &dup, &why),
                 ERR_EXISTS);
    CHECK_EQ_INT(users_create(st, "Cy", "cy-password", 11, USER_MEMBER, 300, &dup, &why),
                 ERR_INVALID);
    CHECK_EQ_INT(users_create(st, "cy", "short", 5, USER_MEMBER, 300, &dup, &why), ERR_INVALID);
    CHECK_EQ_STR(why, "must be at least 8 bytes");
    /* Refused names made no key row either. */
    int64_t n = 0;
    CHECK_EQ_INT(st->ops->key_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 2);

    struct user u;
    if (CHECK_EQ_INT(st->ops->user_by_name(st, "ann", &u), ERR_OK)) {
        CHECK_EQ_INT(u.id, ann);
        CHECK(pwhash_check(u.pwhash, "ann-password", 12));
        CHECK(!pwhash_check(u.pwhash, "bob-password", 12));
        /* The owner key: an admin key named after the user, which no token opens. */
        uint8_t none[32] = {0};
        struct apikey k;
        CHECK_EQ_INT(st->ops->key_by_hash(st, none, &k), ERR_NOTFOUND);
        CHECK(u.key_id > 0);
    }
    if (CHECK_EQ_INT(st->ops->user_by_name(st, "bob", &u), ERR_OK))
        CHECK_EQ_INT(u.role, USER_VIEWER);

    uint8_t h[3][32];
    memset(h, 0, sizeof(h));
    for (int i = 0; i < 3; i++)
        h[i][0] = (uint8_t)(i + 1);
    struct session s = {.user_id = ann, .created_at = 1, .seen_at = 1, .expires_at = 1000};
    CHECK_EQ_INT(st->ops->session_insert(st, h[0], &s), ERR_OK);
    CHECK_EQ_INT(st->ops->session_insert(st, h[1], &s), ERR_OK);
    s.user_id = bob;
    CHECK_EQ_INT(st->ops->session_insert(st, h[2], &s), ERR_OK);

    CHECK_EQ_INT(users_set_password(st, "ann", "new-password", 12, &why), ERR_OK);
    CHECK_EQ_INT(users_set_password(st, "ann", "short", 5, &why), ERR_INVALID);
    CHECK_EQ_INT(users_set_password(st, "nobody", "new-password", 12, &why), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->user_by_name(st, "ann", &u), ERR_OK)) {
        CHECK(pwhash_check(u.pwhash, "new-password", 12));
        CHECK(!pwhash_check(u.pwhash, "ann-password", 12));
    }
    CHECK_EQ_INT(count_sessions(st, ann, (const uint8_t(*)[32])h, 3), 0);
    CHECK_EQ_INT(count_sessions(st, bob, (const uint8_t(*)[32])h, 3), 1);

    CHECK_EQ_INT(users_disable(st, "bob", 500), ERR_OK);
    CHECK_EQ_INT(users_disable(st, "bob", 600), ERR_NOTFOUND);
    CHECK_EQ_INT(users_disable(st, "nobody", 600), ERR_NOTFOUND);
    CHECK_EQ_INT(count_sessions(st, bob, (const uint8_t(*)[32])h, 3), 0);
    if (CHECK_EQ_INT(st->ops->user_by_name(st, "bob", &u), ERR_OK))
        CHECK_EQ_INT(u.disabled_at, 500);
    st->ops->close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

void test_users_sessions(void)
{
    char dir[] = "/tmp/shortd-users-XXXXXX";
    if (!CHECK(mkdtemp(dir)))
        return;
    char path[64];
    snprintf(path, sizeof(path), "%s/db", dir);
    struct store *st = NULL;
    if (!CHECK_EQ_INT(store_open(path, &st), ERR_OK))
        return;
    uint8_t key[32], other[32];
    memset(key, 7, sizeof(key));
    memset(other, 8, sizeof(other));
    const char *why = NULL;
    int64_t ann = 0, bob = 0;
    CHECK_EQ_INT(users_create(st, "ann", "ann-password", 12, USER_MEMBER, 1, &ann, &why), ERR_OK);
    CHECK_EQ_INT(users_create(st, "bob", "bob-password", 12, USER_VIEWER, 1, &bob, &why), ERR_OK);

    /* Name and password: one answer for every failure. */
    struct user u;
    if (CHECK_EQ_INT(users_verify(st, "ann", "ann-password", 12, &u), ERR_OK))
        CHECK_EQ_INT(u.id, ann);
    CHECK_EQ_INT(users_verify(st, "ann", "bob-password", 12, &u), ERR_NOTFOUND);
    CHECK_EQ_INT(users_verify(st, "nobody", "ann-password", 12, &u), ERR_NOTFOUND);

    /* A session: its token, found by its hash, idle and capped. */
    char tok[SESSION_TOKEN_LEN + 1], tok2[SESSION_TOKEN_LEN + 1];
    CHECK_EQ_INT(users_session_start(st, key, ann, 1000, 100000, tok), ERR_OK);
    CHECK_EQ_INT(users_session_start(st, key, bob, 1000, 100000, tok2), ERR_OK);
    CHECK_EQ_INT(strlen(tok), SESSION_TOKEN_LEN);
    CHECK(strcmp(tok, tok2) != 0);
    struct slice t = {tok, SESSION_TOKEN_LEN};
    bool touch = true;
    if (CHECK_EQ_INT(users_session_check(st, key, t, 2000, 10000, &u, &touch), ERR_OK)) {
        CHECK_EQ_INT(u.id, ann);
        CHECK(!touch);
    }
    /* The store holds the keyed hash, not the token: another key finds nothing. */
    CHECK_EQ_INT(users_session_check(st, other, t, 2000, 10000, &u, &touch), ERR_NOTFOUND);
    CHECK_EQ_INT(users_session_check(st, key, (struct slice){tok, 42}, 2000, 10000, &u, &touch),
                 ERR_NOTFOUND);
    /* A minute after its last use, the caller is asked to touch it. */
    CHECK_EQ_INT(users_session_check(st, key, t, 1000 + USERS_TOUCH_MS, 100000, &u, &touch),
                 ERR_OK);
    CHECK(touch);
    /* Idle: unused for idle_ms; a touch keeps it going, up to its cap. */
    CHECK_EQ_INT(users_session_check(st, key, t, 11000, 10000, &u, &touch), ERR_NOTFOUND);
    uint8_t h[32];
    users_session_hash(key, t, h);
    CHECK_EQ_INT(st->ops->session_touch(st, h, 9000), ERR_OK);
    CHECK_EQ_INT(users_session_check(st, key, t, 11000, 10000, &u, &touch), ERR_OK);
    CHECK_EQ_INT(st->ops->session_touch(st, h, 100500), ERR_OK);
    CHECK_EQ_INT(users_session_check(st, key, t, 101000, 10000, &u, &touch), ERR_NOTFOUND);

    /* A disabled user's sessions, and ones that survived it, open nothing. */
    struct slice t2 = {tok2, SESSION_TOKEN_LEN};
    CHECK_EQ_INT(users_session_check(st, key, t2, 2000, 10000, &u, &touch), ERR_OK);
    uint8_t h2[32];
    users_session_hash(key, t2, h2);
    CHECK_EQ_INT(st->ops->user_disable(st, bob, 3000), ERR_OK); /* not users_disable: rows stay */
    CHECK_EQ_INT(users_session_check(st, key, t2, 4000, 10000, &u, &touch), ERR_NOTFOUND);
    CHECK_EQ_INT(users_verify(st, "bob", "bob-password", 12, &u), ERR_NOTFOUND);

    /* CSRF: derived from the token, the same every time, checked exactly. */
    char c1[SESSION_CSRF_LEN + 1], c2[SESSION_CSRF_LEN + 1], c3[SESSION_CSRF_LEN + 1];
    users_csrf_token(key, t, c1);
    users_csrf_token(key, t, c2);
    users_csrf_token(key, t2, c3);
    CHECK_EQ_STR(c1, c2);
    CHECK(strcmp(c1, c3) != 0);
    CHECK(users_csrf_ok(key, t, (struct slice){c1, strlen(c1)}));
    CHECK(!users_csrf_ok(key, t, (struct slice){c3, strlen(c3)}));
    CHECK(!users_csrf_ok(key, t, (struct slice){c1, strlen(c1) - 1}));
    CHECK(!users_csrf_ok(other, t, (struct slice){c1, strlen(c1)}));
    CHECK(!users_csrf_ok(key, t, (struct slice){NULL, 0}));
    st->ops->close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

void test_users_setup(void)
{
    char dir[] = "/tmp/shortd-users-XXXXXX";
    if (!CHECK(mkdtemp(dir)))
        return;
    char path[64];
    snprintf(path, sizeof(path), "%s/db", dir);
    struct store *st = NULL;
    if (!CHECK_EQ_INT(store_open(path, &st), ERR_OK))
        return;
    char tok[SETUP_TOKEN_LEN + 1], tok2[SETUP_TOKEN_LEN + 1];
    CHECK_EQ_INT(users_setup_start(st, 1000, tok), ERR_OK);
    CHECK_EQ_INT(strlen(tok), SETUP_TOKEN_LEN);
    struct slice t = {tok, SETUP_TOKEN_LEN};
    CHECK_EQ_INT(users_setup_check(st, t, 1000 + SETUP_TTL_MS - 1), ERR_OK);
    CHECK_EQ_INT(users_setup_check(st, t, 1000 + SETUP_TTL_MS), ERR_NOTFOUND); /* an hour on */
    CHECK_EQ_INT(users_setup_check(st, (struct slice){tok, 42}, 1000), ERR_NOTFOUND);
    /* The store keeps its hash, not the token. */
    uint8_t h[32];
    users_setup_hash(t, h);
    CHECK_EQ_INT(st->ops->setup_check(st, h, 1000), ERR_OK);
    CHECK(memcmp(h, tok, 32) != 0);
    /* A new one replaces it. */
    CHECK_EQ_INT(users_setup_start(st, 2000, tok2), ERR_OK);
    CHECK(strcmp(tok, tok2) != 0);
    CHECK_EQ_INT(users_setup_check(st, t, 2000), ERR_NOTFOUND);
    struct slice t2 = {tok2, SETUP_TOKEN_LEN};
    CHECK_EQ_INT(users_setup_check(st, t2, 2000), ERR_OK);

    /* A user made in the caller's transaction, as /api/setup does: then
     * setup is done, whatever the token. */
    const char *why = NULL;
    struct user u = {.role = USER_ADMIN, .created_at = 3000};
    snprintf(u.name, sizeof(u.name), "root");
    CHECK_EQ_INT(users_hash_password("root-password", 13, u.pwhash, &why), ERR_OK);
    char spare[USER_HASH_MAX];
    CHECK_EQ_INT(users_hash_password("short", 5, spare, &why), ERR_INVALID);
    CHECK_EQ_STR(why, "must be at least 8 bytes");
    int64_t id = 0, dup = 0;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(users_insert(st, &u, &id), ERR_OK);
    CHECK_EQ_INT(users_insert(st, &u, &dup), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(users_setup_check(st, t2, 3000), ERR_EXISTS);
    struct user got;
    if (CHECK_EQ_INT(users_verify(st, "root", "root-password", 13, &got), ERR_OK)) {
        CHECK_EQ_INT(got.id, id);
        CHECK_EQ_INT(got.role, USER_ADMIN);
        CHECK(got.key_id > 0);
    }
    int64_t n = 0;
    CHECK_EQ_INT(st->ops->key_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 1); /* the user's key row, the duplicate made none */
    st->ops->close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}
