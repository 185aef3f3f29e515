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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
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

/* For a writer job (whose transaction is the caller's), the two halves of
 * users_create: users_hash_password before (Argon2: a store thread, never
 * the writer or an event loop; ERR_INVALID with *why), users_insert inside
 * the transaction (u's name, already checked with users_name_valid, pwhash,
 * role and created_at; the user's key row too; ERR_EXISTS for a taken
 * name). */
int users_hash_password(const char *pw, size_t n, char out[USER_HASH_MAX], const char **why);
int users_insert(struct store *st, const struct user *u, int64_t *id);

/* ---- the first admin ---- */

/* The first start of an empty store (no user, no API key) makes a setup
 * token, base64url of 32 random bytes, that opens /setup once, within
 * SETUP_TTL_MS, to make the first admin account. The store keeps only its
 * hash (unkeyed: the token is random, so the hash reveals nothing), one at a
 * time, so every node accepts it and a later start replaces it. */
#define SETUP_TOKEN_LEN 43
#define SETUP_TTL_MS (3600 * 1000)

void users_setup_hash(struct slice token, uint8_t out[32]);
/* A new token replaces any other (own transaction): ERR_OK with 'token'. */
int users_setup_start(struct store *st, int64_t now, char token[SETUP_TOKEN_LEN + 1]);
/* Whether 'token' opens setup now: ERR_OK; ERR_NOTFOUND for an unknown,
 * used or expired one (a token of the wrong shape too); ERR_EXISTS when a
 * user exists already (setup is done, whatever the token). */
int users_setup_check(struct store *st, struct slice token, int64_t now);

/* ---- signing in ---- */

/* A session token is base64url (no padding) of 32 random bytes; the store
 * keeps only its hash keyed with 'key' (links_session_key), so a copy of
 * the store opens no session. The CSRF token of a session is derived from
 * its token with the same key: every node computes it, nothing more is
 * stored, and a page of another site can neither read nor guess it. */
#define SESSION_TOKEN_LEN 43
#define SESSION_CSRF_LEN 43

void users_session_hash(const uint8_t key[32], struct slice token, uint8_t out[32]);
void users_csrf_token(const uint8_t key[32], struct slice token, char out[SESSION_CSRF_LEN + 1]);
/* Constant time; false for a missing or wrong 'csrf'. */
bool users_csrf_ok(const uint8_t key[32], struct slice token, struct slice csrf);

/* Name and password: ERR_OK with *out, or ERR_NOTFOUND alike for an unknown
 * name, a disabled user and a wrong password (an unknown name is checked
 * against a fixed hash, so it takes as long). Synchronous Argon2 (tens of
 * milliseconds): a store thread or the CLI, never an event loop. */
int users_verify(struct store *st, const char *name, const char *pw, size_t n, struct user *out);

/* Makes a token and stores its session for 'user_id', capped at now +
 * max_ms, and notes the sign-in (user_signed_in). In the caller's
 * transaction (a writer job: two writes). */
int users_session_start(struct store *st, const uint8_t key[32], int64_t user_id, int64_t now,
                        int64_t max_ms, char token[SESSION_TOKEN_LEN + 1]);

/* The session of 'token' and its user: ERR_OK when the session is within
 * its cap, was used less than idle_ms ago and its user is not disabled;
 * ERR_NOTFOUND otherwise (also for a token of the wrong shape). *touch is
 * set when its seen_at is a minute old or more (half the idle time when
 * that is shorter): the caller then writes session_touch, so a busy
 * session writes at most once a minute. */
int users_session_check(struct store *st, const uint8_t key[32], struct slice token, int64_t now,
                        int64_t idle_ms, struct user *u, bool *touch);
#define USERS_TOUCH_MS 60000

#endif
