/* store_keys.h - the keys and admin area of the store (store.h): API keys,
 * of which only keyed hashes are stored, and the destination blocklist.
 * STORE_OPS_KEYS is this area's part of struct store_ops. */
#ifndef SHORTD_STORE_KEYS_H
#define SHORTD_STORE_KEYS_H

#include <stdbool.h>
#include <stdint.h>

struct store;

struct apikey {
    int64_t id;
    char name[128];
    bool admin;
    int64_t created_at;
    int64_t revoked_at; /* 0: valid */
};

/* Each callback's non-zero return stops the listing. */
typedef int (*key_cb)(const struct apikey *k, void *arg);
typedef int (*host_cb)(const char *host, int64_t created_at, void *arg);

#define STORE_OPS_KEYS                                                                               \
    /* API keys */                                                                                   \
    int (*key_insert)(struct store * st, const char *name, const uint8_t hash[32], bool admin,       \
                      int64_t now, int64_t *id);                                                     \
    int (*key_by_hash)(struct store * st, const uint8_t hash[32], struct apikey *out);               \
    int (*key_list)(struct store * st, key_cb cb, void *arg);                                        \
    /* ERR_NOTFOUND. A shared store also publishes BUS_KEYS (bus.h) to every                       \
     * listening node in the same transaction, delivered at commit. */ \
    int (*key_revoke)(struct store * st, int64_t id, int64_t now);                                   \
    int (*key_count)(struct store * st, int64_t * n);                                                \
                                                                                                     \
    /* Destination blocklist (lowercase hosts) */                                                    \
    int (*block_add)(struct store * st, const char *host, int64_t now); /* ERR_EXISTS */             \
    int (*block_del)(struct store * st, const char *host);              /* ERR_NOTFOUND */           \
    int (*block_has)(struct store * st, const char *host, bool *yes);                                \
    int (*block_list)(struct store * st, host_cb cb, void *arg);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
