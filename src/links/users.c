/* users.c - making, changing and disabling users (users.h). Hashing a
 * password takes tens of milliseconds, so it happens before the transaction
 * begins: a store's write lock is never held while Argon2 runs. */
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

/* The hash of a new password, or ERR_INVALID with *why. */
static int hash_password(const char *pw, size_t n, char out[PWHASH_MAX], const char **why)
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
    rc = hash_password(pw, n, u.pwhash, why);
    if (rc != ERR_OK)
        return rc;
    /* The key row only names the owner of the user's links: its hash is
     * random, so no token hashes to it and it never opens the API. */
    uint8_t hash[32];
    randombytes_buf(hash, sizeof(hash));
    char key_name[sizeof(u.name) + 8];
    snprintf(key_name, sizeof(key_name), "user:%s", name);
    rc = st->ops->begin(st);
    if (rc == ERR_OK) {
        /* A name taken by a user: refused before a key row is made. */
        struct user old;
        rc = st->ops->user_by_name(st, name, &old);
        rc = rc == ERR_OK ? ERR_EXISTS : rc == ERR_NOTFOUND ? ERR_OK : rc;
    }
    if (rc == ERR_OK)
        rc = st->ops->key_insert(st, key_name, hash, role == USER_ADMIN, now, &u.key_id);
    if (rc == ERR_OK)
        rc = st->ops->user_insert(st, &u, id);
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
    if (rc != ERR_OK)
        st->ops->rollback(st);
    sodium_memzero(&u, sizeof(u));
    return rc;
}

int users_set_password(struct store *st, const char *name, const char *pw, size_t n,
                       const char **why)
{
    char hash[PWHASH_MAX];
    int rc = hash_password(pw, n, hash, why);
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
