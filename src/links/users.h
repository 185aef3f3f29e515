/* users.h - people who sign in to the dashboard: the rules for their names
 * and passwords, and making, changing and disabling them in the store.
 *
 * A user's links belong to an API key row made for them with the user (its
 * id is users.key_id, its name "user:NAME", its hash random so that no token
 * opens it): links.owner, domains.owner and the idempotency records need no
 * second kind of owner, and a signed-in user acts exactly as that key. An
 * admin user's key row is an admin key. Passwords are Argon2id (pwhash.h);
 * the password itself is never stored or kept past the call. */
#ifndef SHORTD_USERS_H
#define SHORTD_USERS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_keys.h"

#define USERS_PW_MIN 8 /* bytes: the shortest account password */

/* ERR_OK, or ERR_INVALID and *why, a reason to put after the thing's name
 * (static): a name is 1 to 64 of a-z 0-9 . _ - @, starting with a letter or
 * a digit; a password 8 to 128 bytes of UTF-8 without NUL. */
int users_name_valid(const char *name, const char **why);
int users_password_valid(const char *pw, size_t n, const char **why);

/* Each runs its own transaction on 'st'; 'why' (static) says what was wrong
 * for ERR_INVALID. create: the user and their key row together; ERR_EXISTS
 * for a taken name. set_password and disable end every session of the user
 * in the same transaction; ERR_NOTFOUND for an unknown name, and disable
 * also for a user already disabled. */
int users_create(struct store *st, const char *name, const char *pw, size_t n, enum user_role role,
                 int64_t now, int64_t *id, const char **why);
int users_set_password(struct store *st, const char *name, const char *pw, size_t n,
                       const char **why);
int users_disable(struct store *st, const char *name, int64_t now);

#endif
