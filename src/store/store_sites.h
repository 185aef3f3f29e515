/* store_sites.h - the site analytics area of the store (store.h): sites
 * (an id its owner chooses, a badge flag, an all-time page view total),
 * the hosts that name them, their read tokens, and one row per site and
 * UTC day (dayrow.h's packed dims; 'clicks' are page views, 'bots' the
 * classifier's bot hits). STORE_OPS_SITES is this area's part of struct
 * store_ops. Days are days since the epoch. */
#ifndef SHORTD_STORE_SITES_H
#define SHORTD_STORE_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct day_delta;

#define SITE_ID_MAX 64 /* a site id: 1..SITE_ID_MAX of [a-z0-9-] */

/* A site as stored. */
struct site_info {
    char id[SITE_ID_MAX + 1];
    int64_t owner; /* the owner key row's id, as links' owner */
    bool badge;
    int64_t created_at;
    int64_t pv_total; /* all-time page views, counted while 'badge' is on */
};

/* Each callback's non-zero return stops the listing. */
typedef int (*site_cb)(const struct site_info *s, void *arg);
typedef int (*site_host_cb)(const char *host, const char *site, void *arg);
typedef int (*site_token_cb)(int64_t id, int64_t created_at, void *arg);

/* What a site takes in the store (shortd site size). */
struct site_size {
    int64_t rows;  /* its day rows */
    int64_t bytes; /* their dims blobs */
};

#define STORE_OPS_SITES                                                                              \
    /* Sites (insert: ERR_EXISTS; the others ERR_NOTFOUND for no such id) */                         \
    int (*site_insert)(struct store * st, const struct site_info *s);                                \
    int (*site_get)(struct store * st, const char *id, struct site_info *out);                       \
    int (*site_set_badge)(struct store * st, const char *id, bool badge);                            \
    int (*site_list)(struct store * st, int64_t owner, site_cb cb, void *arg); /* -1: all */         \
    /* Removes the site, its hosts, tokens and day rows, and nothing else. */                        \
    int (*site_delete)(struct store * st, const char *id);                                           \
    /* Hosts: add (ERR_EXISTS when another site or this one has it), every                         \
     * host of one site removed, and listed by host (site NULL: every site's) */ \
    int (*site_host_add)(struct store * st, const char *host, const char *site);                     \
    int (*site_hosts_clear)(struct store * st, const char *site);                                    \
    int (*site_hosts_list)(struct store * st, const char *site, site_host_cb cb, void *arg);         \
    /* Read tokens, stored as a keyed hash: the site a hash opens                                  \
     * (ERR_NOTFOUND), added (its id into *id), removed (ERR_NOTFOUND), listed */ \
    int (*site_token_add)(struct store * st, const char *site, const uint8_t hash[32],               \
                          int64_t now, int64_t *id);                                                 \
    int (*site_token_find)(struct store * st, const uint8_t hash[32], char site[SITE_ID_MAX + 1]);   \
    int (*site_token_del)(struct store * st, const char *site, int64_t id);                          \
    int (*site_token_list)(struct store * st, const char *site, site_token_cb cb, void *arg);        \
                                                                                                     \
    /* Day rows: merged by the aggregator inside a write transaction (each                         \
     * delta's 'code' is a site id; page views also go to the site's                               \
     * pv_total when it has a badge), pruned like link days, read back. */ \
    int (*site_agg_days)(struct store * st, const struct day_delta *d, size_t n);                    \
    int (*site_prune_days)(struct store * st, int64_t before_day, int limit, int *pruned);           \
    int (*site_stats_days)(struct store * st, const char *site, int64_t from, int64_t to,            \
                           day_cb cb, void *arg); /* clicks: page views; uniques: 0 */               \
    int (*site_stats_dims)(struct store * st, const char *site, int64_t from, int64_t to,            \
                           dim_cb cb, void *arg);                                                    \
    int (*site_size)(struct store * st, const char *site, struct site_size *out);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
