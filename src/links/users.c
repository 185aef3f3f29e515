/* users.c - making, changing and disabling users, signing them in and
 * checking their sessions (users.h). Hashing a password takes tens of
 * milliseconds, so it happens before the transaction begins: a store's
 * write lock is never held while Argon2 runs. */
#include "links/users.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "links/pwhash.h"
#include "store/store.h"
#include "base/banned.h"

_Static_assert(USER_HASH_MAX >= PWHASH_MAX, "a stored user hash must hold a pwhash string");

int users_name_valid(const char *name, const char **why)
{
    size_t n = strlen(name);
    if (n < 1 || n > USER_NAME_MAX) {
        *why = "must be 1 to 64 characters";
        return ERR_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (i == 0 && !alnum) {
            *why = "must start with a lowercase letter or a digit";
            return ERR_INVALID;
        }
        if (!alnum && !strchr("._-@", c)) {
            *why = "may hold only lowercase letters, digits and . _ - @";
            return ERR_INVALID;
        }
    }
    return ERR_OK;
}

int users_password_valid(const char *pw, size_t n, const char **why)
{
    if (n < USERS_PW_MIN) {
        *why = "must be at least 8 bytes";
        return ERR_INVALID;
    }
    return pwhash_valid(pw, n, why);
}

int users_hash_password(const char *pw, size_t n, char out[USER_HASH_MAX], const char **why)
{
    int rc = users_password_valid(pw, n, why);
    if (rc == ERR_OK)
        rc = pwhash_make(pw, n, out);
    return rc;
}

int users_create(struct store *st, const char *name, const char *pw, size_t n, enum user_role role,
                 int64_t now, int64_t *id, const char **why)
{
    struct user u = {.role = role, .created_at = now};
    int rc = users_name_valid(name, why);
    if (rc != ERR_OK)
        return rc;
    snprintf(u.name, sizeof(u.name), "%s", name);
    rc = users_hash_password(pw, n, u.pwhash, why);
    if (rc != ERR_OK)
        return rc;
    rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = users_insert(st, &u, id);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK)
        st->ops->rollback(st);
    sodium_memzero(&u, sizeof(u));
    return rc;
}

int users_insert(struct store *st, const struct user *in, int64_t *id)
{
    /* A name taken by a user: refused before a key row is made. */
    struct user u;
    int rc = st->ops->user_by_name(st, in->name, &u);
    if (rc != ERR_NOTFOUND)
        return rc == ERR_OK ? ERR_EXISTS : rc;
    u = *in;
    /* The key row only names the owner of the user's links: its hash is
     * random, so no token hashes to it and it never opens the API. */
    uint8_t hash[32];
    randombytes_buf(hash, sizeof(hash));
    struct apikey owner = {.admin = u.role == USER_ADMIN,
                           .created_at = u.created_at,
                           .scopes = KEY_SCOPES_ALL};
    snprintf(owner.name, sizeof(owner.name), "user:%s", u.name);
    rc = st->ops->key_insert(st, &owner, hash, &u.key_id);
    if (rc == ERR_OK)
        rc = st->ops->user_insert(st, &u, id);
    sodium_memzero(&u, sizeof(u));
    return rc;
}

int users_set_password(struct store *st, const char *name, const char *pw, size_t n,
                       const char **why)
{
    char hash[USER_HASH_MAX];
    int rc = users_hash_password(pw, n, hash, why);
    if (rc != ERR_OK)
        return rc;
    struct user u;
    rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->user_by_name(st, name, &u);
    if (rc == ERR_OK)
        rc = st->ops->user_set_password(st, u.id, hash);
    if (rc == ERR_OK)
        rc = st->ops->session_end_user(st, u.id);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK)
        st->ops->rollback(st);
    sodium_memzero(hash, sizeof(hash));
    return rc;
}

int users_disable(struct store *st, const char *name, int64_t now)
{
    struct user u;
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->user_by_name(st, name, &u);
    if (rc == ERR_OK)
        rc = st->ops->user_disable(st, u.id, now);
    if (rc == ERR_OK)
        rc = st->ops->session_end_user(st, u.id);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK)
        st->ops->rollback(st);
    return rc;
}

/* ---- the first admin ---- */

void users_setup_hash(struct slice token, uint8_t out[32])
{
    static const char label[] = "shortd setup token";
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, 32);
    crypto_generichash_update(&h, (const unsigned char *)label, sizeof(label));
    crypto_generichash_update(&h, (const unsigned char *)token.p, token.n);
    crypto_generichash_final(&h, out, 32);
}

int users_setup_start(struct store *st, int64_t now, char token[SETUP_TOKEN_LEN + 1])
{
    uint8_t raw[32], hash[32];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(token, SETUP_TOKEN_LEN + 1, raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof(raw));
    users_setup_hash((struct slice){token, SETUP_TOKEN_LEN}, hash);
    int rc = st->ops->begin(st);
    if (rc == ERR_OK)
        rc = st->ops->setup_put(st, hash, now + SETUP_TTL_MS);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK) {
        st->ops->rollback(st);
        sodium_memzero(token, SETUP_TOKEN_LEN + 1);
    }
    return rc;
}

int users_setup_check(struct store *st, struct slice token, int64_t now)
{
    int64_t n = 0;
    int rc = st->ops->user_count(st, &n);
    if (rc != ERR_OK)
        return rc;
    if (n > 0)
        return ERR_EXISTS;
    if (token.n != SETUP_TOKEN_LEN)
        return ERR_NOTFOUND;
    uint8_t hash[32];
    users_setup_hash(token, hash);
    return st->ops->setup_check(st, hash, now);
}

/* ---- signing in ---- */

static void keyed(const uint8_t key[32], const char *label, struct slice token, uint8_t *out,
                  size_t n)
{
    crypto_generichash_state h;
    crypto_generichash_init(&h, key, 32, n);
    crypto_generichash_update(&h, (const unsigned char *)label, strlen(label) + 1);
    crypto_generichash_update(&h, (const unsigned char *)token.p, token.n);
    crypto_generichash_final(&h, out, n);
}

void users_session_hash(const uint8_t key[32], struct slice token, uint8_t out[32])
{
    keyed(key, "session", token, out, 32);
}

void users_csrf_token(const uint8_t key[32], struct slice token, char out[SESSION_CSRF_LEN + 1])
{
    uint8_t h[32];
    keyed(key, "csrf", token, h, sizeof(h));
    sodium_bin2base64(out, SESSION_CSRF_LEN + 1, h, sizeof(h),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

bool users_csrf_ok(const uint8_t key[32], struct slice token, struct slice csrf)
{
    if (csrf.n != SESSION_CSRF_LEN)
        return false;
    char want[SESSION_CSRF_LEN + 1];
    users_csrf_token(key, token, want);
    return sodium_memcmp(want, csrf.p, SESSION_CSRF_LEN) == 0;
}

/* What an unknown name's password is checked against: a hash made with
 * today's parameters of a password nobody was given. */
static const char no_user_hash[] = "$argon2id$v=19$m=19456,t=2,p=1$0oM3hAUWUnOGt2jsOIqyIQ$VORaM/"
                                   "lb66/JLWnSPoKHOh1qpQ1uasMtsmrzsl+64kE";

int users_verify(struct store *st, const char *name, const char *pw, size_t n, struct user *out)
{
    int rc = st->ops->user_by_name(st, name, out);
    if (rc != ERR_OK && rc != ERR_NOTFOUND)
        return rc;
    bool ok = pwhash_check(rc == ERR_OK ? out->pwhash : no_user_hash, pw, n);
    if (rc == ERR_OK && (!ok || out->disabled_at))
        rc = ERR_NOTFOUND;
    return rc;
}

int users_session_start(struct store *st, const uint8_t key[32], int64_t user_id, int64_t now,
                        int64_t max_ms, char token[SESSION_TOKEN_LEN + 1])
{
    uint8_t raw[32], hash[32];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(token, SESSION_TOKEN_LEN + 1, raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof(raw));
    users_session_hash(key, (struct slice){token, SESSION_TOKEN_LEN}, hash);
    struct session s = {.user_id = user_id,
                        .created_at = now,
                        .seen_at = now,
                        .expires_at = now + max_ms};
    int rc = st->ops->session_insert(st, hash, &s);
    if (rc == ERR_OK)
        rc = st->ops->user_signed_in(st, user_id, now);
    return rc;
}

int users_session_check(struct store *st, const uint8_t key[32], struct slice token, int64_t now,
                        int64_t idle_ms, struct user *u, bool *touch)
{
    *touch = false;
    if (token.n != SESSION_TOKEN_LEN)
        return ERR_NOTFOUND;
    uint8_t hash[32];
    users_session_hash(key, token, hash);
    struct session s;
    int rc = st->ops->session_get(st, hash, now, &s);
    if (rc == ERR_OK && s.seen_at + idle_ms <= now)
        rc = ERR_NOTFOUND;
    if (rc == ERR_OK)
        rc = st->ops->user_get(st, s.user_id, u);
    if (rc == ERR_OK && u->disabled_at)
        rc = ERR_NOTFOUND;
    if (rc == ERR_OK)
        *touch = now - s.seen_at >= (idle_ms / 2 < USERS_TOUCH_MS ? idle_ms / 2 : USERS_TOUCH_MS);
    return rc;
}
