/* store_stats.h - the click analytics area of the store (store.h): one row
 * per link and day (dayrow.h), merged by the aggregator, pruned by age and
 * read back as days, dimensions, recent clicks, totals and top links.
 * STORE_OPS_STATS is this area's part of struct store_ops. Days are days
 * since the epoch. */
#ifndef SHORTD_STORE_STATS_H
#define SHORTD_STORE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct dayrow;

/* One link's clicks of one day, folded by the aggregator (dayrow.h). */
struct day_delta {
    const char *code;
    int64_t day;
    const struct dayrow *row;
    /* The writer stored no row of this link day before (a link an import
     * inserted, on a day it had not stored yet): the row is most likely
     * absent, and a backend may insert it without reading first (and merge
     * as usual when the insert finds one after all). */
    bool fresh;
};

/* One of the last clicks of a link, as the stats show it. */
struct recent_click {
    int64_t ts;
    const char *referrer;
    const char *country;
    const char *device;
    const char *browser;
};

/* Service-wide (or one owner's) totals. */
struct totals {
    int64_t links, clicks, bot_clicks;
};

/* Each callback's non-zero return stops the listing. */
typedef int (*day_cb)(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg);
typedef int (*dim_cb)(int dim, const char *value, int64_t n, void *arg);
typedef int (*recent_cb)(const struct recent_click *r, void *arg);
typedef int (*top_cb)(const char *code, int64_t clicks, void *arg);

/* For backends: hands a day row's newest clicks, newest first, to a
 * stats_recent callback (what both answer stats_recent with). */
int store_each_recent(const struct dayrow *r, int limit, recent_cb cb, void *arg);

/* For backends: days' figures summed from rows in any order (the reads
 * that add appended link days to the stored ones, "Appending" below). */
struct day_sum {
    int64_t day, clicks, uniques, bots;
};
struct day_sums {
    struct day_sum *v;
    size_t n, cap;
};
/* The sums of 'day', added (zero) when absent. */
struct day_sum *store_day_sum(struct day_sums *s, int64_t day);
/* Hands every day to 'cb' in day order (until it returns non-zero). */
void store_day_sums_each(struct day_sums *s, day_cb cb, void *arg);

#define STORE_OPS_STATS                                                                              \
    /* Written by the aggregator inside a write transaction: each delta is                         \
     * merged into its link's row of that day (dayrow_merge), which is                             \
     * created when absent. 'd' is sorted by (code, day), so nodes sharing a                       \
     * store take row locks in one order. */ \
    int (*agg_days)(struct store * st, const struct day_delta *d, size_t n);                         \
    /* Appending (NULL in a backend where agg_days is the only way):                              \
     * a batch's link days written as they are, under a new batch number, in                       \
     * (code, day) order: the end of a tree, no stored row read or rewritten.                       \
     * Every read above and below adds them to the day rows until                                  \
     * days_compact merges them in, in key order, and deletes them in the                          \
     * same transaction, so no click is ever counted twice or missed. */  \
    /* A new batch number, past every one stored and past 'after' */                                 \
    int (*days_batch)(struct store * st, int64_t after, int64_t * batch);                            \
    int (*days_append)(struct store * st, int64_t batch, const struct day_delta *d, size_t n);       \
    /* Merges the appended rows of at most 'limit' link days of the batches                       \
     * up to 'upto' (the oldest first); *rows: how many appended rows it                            \
     * took (0: none were left). 'stop' (may be NULL) is asked every few                            \
     * link days: true ends the pass early, what it took kept. */  \
    int (*days_compact)(struct store * st, int64_t upto, size_t limit, bool (*stop)(void *arg),      \
                        void *stop_arg, size_t *rows);                                               \
    /* Appended rows left, and the newest batch number (0: none) */                                  \
    int (*days_pending)(struct store * st, int64_t * rows, int64_t * newest);                        \
    /* Removes day rows before 'before_day', at most 'limit', oldest first,                        \
     * adding their counts to their links' kept totals (which never shrink). */ \
    int (*prune_days)(struct store * st, int64_t before_day, int limit, int *pruned);                \
    /* Visitor hashes are only needed while their day's salt lives: drops the                      \
     * visitor sets of days before 'before_day' (their unique counts stay).                        \
     * Clicks merged into such a day later count as new visitors; SQLite then                      \
     * keeps no set for it at all. */ \
    int (*prune_visitors)(struct store * st, int64_t before_day);                                    \
                                                                                                     \
    /* Reading */                                                                                    \
    int (*stats_days)(struct store * st, const char *code, int64_t from, int64_t to, day_cb cb,      \
                      void *arg);                                                                    \
    int (*stats_dims)(struct store * st, const char *code, int64_t from, int64_t to, dim_cb cb,      \
                      void *arg); /* summed over the days */                                         \
    int (*stats_recent)(struct store * st, const char *code, int limit, recent_cb cb, void *arg);    \
    int (*stats_totals)(struct store * st, int64_t owner, struct totals * out); /* -1: all */        \
    int (*stats_top)(struct store * st, int64_t owner, int64_t day, int limit, top_cb cb,            \
                     void *arg);                                                                     \
    /* stats_days and stats_dims over every link of 'owner' (-1: all) together:                    \
     * a day's uniques are the sum of its links' (one visitor of two links counts                  \
     * twice). */ \
    int (*stats_all_days)(struct store * st, int64_t owner, int64_t from, int64_t to, day_cb cb,     \
                          void *arg);                                                                \
    int (*stats_all_dims)(struct store * st, int64_t owner, int64_t from, int64_t to, dim_cb cb,     \
                          void *arg);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
