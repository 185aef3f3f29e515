/* store_keys.h - the keys and admin area of the store (store.h): API keys,
 * of which only keyed hashes are stored, users and their sessions (of which
 * also only keyed hashes are stored), and the destination blocklist.
 * STORE_OPS_KEYS is this area's part of struct store_ops. */
#ifndef SHORTD_STORE_KEYS_H
#define SHORTD_STORE_KEYS_H

#include <stdbool.h>
#include <stdint.h>

struct store;

/* What a key may do: a set of scopes, the full set unless it was made with
 * fewer. Stored as this bit set (NULL in the store: KEY_SCOPES_ALL). */
#define KEY_SCOPE_LINKS_READ (1u << 0)  /* links:read: see links */
#define KEY_SCOPE_LINKS_WRITE (1u << 1) /* links:write: create, edit, delete links */
#define KEY_SCOPE_STATS_READ (1u << 2)  /* stats:read: analytics */
#define KEY_SCOPE_ADMIN (1u << 3)       /* admin: the admin routes (an admin key's) */
/* ops: the node's health and metrics (ROUTE_OPS), nothing else. Never in a
 * key unless asked for: KEY_SCOPES_ALL, a key's default, leaves it out (an
 * admin key reads those routes through its admin scope). */
#define KEY_SCOPE_OPS (1u << 4)
#define KEY_SCOPES_ALL                                                                             \
    (KEY_SCOPE_LINKS_READ | KEY_SCOPE_LINKS_WRITE | KEY_SCOPE_STATS_READ | KEY_SCOPE_ADMIN)

#define KEY_DOMAIN_MAX 253 /* a host name's longest */

/* apikey.role: a zeroed key has no user (and acts with its own admin flag). */
#define KEY_NO_USER 0
#define KEY_ROLE(user_role) ((int)(user_role) + 1)

struct apikey {
    int64_t id;
    char name[128];
    bool admin;
    int64_t created_at;
    int64_t revoked_at;              /* 0: valid */
    int64_t user_id;                 /* 0: none (a key made before users) */
    unsigned scopes;                 /* KEY_SCOPE_* bits */
    char domain[KEY_DOMAIN_MAX + 1]; /* "": any; else the one custom domain it is limited to */
    int64_t last_used_at;            /* 0: never (as of the last write, once a minute) */
    /* Read with the key, from its user (users table): */
    int role;           /* KEY_NO_USER, or KEY_ROLE(its user's enum user_role) */
    bool user_disabled; /* its user is disabled: the key is refused */
    int64_t owner;      /* whose links it acts on: its user's key_id, else its own id */
};

/* A person who signs in to the dashboard. Never removed, only disabled.
 * Their links, domains and idempotency records are those of the API key
 * 'key_id', made for them when they were created: a session acts as it. */
enum user_role { USER_ADMIN, USER_MEMBER, USER_VIEWER };
#define USER_NAME_MAX 64  /* bytes, without the NUL */
#define USER_HASH_MAX 128 /* the stored hash, with the NUL (pwhash.h's PWHASH_MAX) */

struct user {
    int64_t id;
    char name[USER_NAME_MAX + 1];
    char pwhash[USER_HASH_MAX]; /* "$argon2id$..." */
    enum user_role role;
    int64_t key_id; /* owner of the user's links */
    int64_t created_at;
    int64_t disabled_at;    /* 0: may sign in */
    int64_t last_signin_at; /* 0: never signed in */
};

/* "admin", "member", "viewer"; user_role_parse: ERR_OK or ERR_INVALID. */
const char *user_role_name(enum user_role r);
int user_role_parse(const char *s, enum user_role *out);

/* A signed-in session, known by the keyed hash of its token. It is over at
 * expires_at, or sooner when unused for the idle time after seen_at: the
 * caller decides with its setting, so a changed setting applies at once. */
struct session {
    int64_t user_id;
    int64_t created_at;
    int64_t seen_at;
    int64_t expires_at;
};

/* Each callback's non-zero return stops the listing. */
typedef int (*key_cb)(const struct apikey *k, void *arg);
typedef int (*user_cb)(const struct user *u, void *arg);
typedef int (*host_cb)(const char *host, int64_t created_at, void *arg);

#define STORE_OPS_KEYS                                                                                \
    /* API keys */                                                                                    \
    /* k's name, admin, user_id, scopes, domain and created_at; ERR_EXISTS for a                  \
     * hash already stored */   \
    int (*key_insert)(struct store * st, const struct apikey *k, const uint8_t hash[32],              \
                      int64_t *id);                                                                   \
    int (*key_by_hash)(struct store * st, const uint8_t hash[32], struct apikey *out);                \
    int (*key_list)(struct store * st, key_cb cb, void *arg);                                         \
    /* ERR_NOTFOUND. A shared store also publishes BUS_KEYS (bus.h) to every                       \
     * listening node in the same transaction, delivered at commit. */  \
    int (*key_revoke)(struct store * st, int64_t id, int64_t now);                                    \
    int (*key_count)(struct store * st, int64_t * n);                                                 \
    /* Sets key 'id''s last_used_at to 'at' unless it holds a later time. */                          \
    int (*key_touch)(struct store * st, int64_t id, int64_t at);                                      \
                                                                                                      \
    /* Users: insert fills *id from u (its id ignored); ERR_EXISTS for a                            \
     * taken name. Reads: ERR_NOTFOUND. Disabling a disabled user: ERR_NOTFOUND;        \
     * disabling publishes BUS_KEYS (as key_revoke does) on a shared store. */ \
    int (*user_insert)(struct store * st, const struct user *u, int64_t *id);                         \
    int (*user_get)(struct store * st, int64_t id, struct user * out);                                \
    int (*user_by_name)(struct store * st, const char *name, struct user *out);                       \
    int (*user_list)(struct store * st, user_cb cb, void *arg); /* by id */                           \
    int (*user_set_password)(struct store * st, int64_t id, const char *pwhash);                      \
    int (*user_disable)(struct store * st, int64_t id, int64_t now);                                  \
    int (*user_count)(struct store * st, int64_t * n);                                                \
    /* Role changes and enabling publish BUS_KEYS too (a user's keys act with                       \
     * its role). set_role: ERR_NOTFOUND; enable: ERR_NOTFOUND unless disabled. */ \
    int (*user_set_role)(struct store * st, int64_t id, enum user_role role);                         \
    int (*user_enable)(struct store * st, int64_t id);                                                \
    int (*user_signed_in)(struct store * st, int64_t id, int64_t at);                                 \
                                                                                                      \
    /* The one-time setup token (users.h) by its hash: put replaces any other;                      \
     * check: ERR_NOTFOUND unless it is the stored one and 'now' is before its                      \
     * expiry; end removes it (none: ERR_OK). */ \
    int (*setup_put)(struct store * st, const uint8_t hash[32], int64_t expires_at);                  \
    int (*setup_check)(struct store * st, const uint8_t hash[32], int64_t now);                       \
    int (*setup_end)(struct store * st);                                                              \
                                                                                                      \
    /* Sessions by the keyed hash of their token. get: ERR_NOTFOUND (also for                       \
     * one past expires_at at 'now'). touch sets seen_at. end: ERR_NOTFOUND.                        \
     * end_user ends all of a user's; sweep removes those past expires_at or                        \
     * last seen before 'idle_before', '*n' gets how many. */ \
    int (*session_insert)(struct store * st, const uint8_t hash[32], const struct session *s);        \
    int (*session_get)(struct store * st, const uint8_t hash[32], int64_t now,                        \
                       struct session *out);                                                          \
    int (*session_touch)(struct store * st, const uint8_t hash[32], int64_t now);                     \
    int (*session_end)(struct store * st, const uint8_t hash[32]);                                    \
    int (*session_end_user)(struct store * st, int64_t user_id);                                      \
    int (*session_sweep)(struct store * st, int64_t now, int64_t idle_before, int64_t * n);           \
                                                                                                      \
    /* Destination blocklist (lowercase hosts) */                                                     \
    int (*block_add)(struct store * st, const char *host, int64_t now); /* ERR_EXISTS */              \
    int (*block_del)(struct store * st, const char *host);              /* ERR_NOTFOUND */            \
    int (*block_has)(struct store * st, const char *host, bool *yes);                                 \
    int (*block_list)(struct store * st, host_cb cb, void *arg);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
