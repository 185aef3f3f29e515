/* store_watch.h - the operations area of the store (store.h): the backups
 * made, the store's own clock, and leases that let one node of a cluster do
 * a job the others stand by for (sending alerts). STORE_OPS_WATCH is this
 * area's part of struct store_ops. Each op is one statement, run outside
 * any transaction on the calling thread's connection. */
#ifndef SHORTD_STORE_WATCH_H
#define SHORTD_STORE_WATCH_H

#include <stdbool.h>
#include <stdint.h>

struct store;

#define STORE_OPS_WATCH                                                                              \
    /* Records a backup that ended at 'ended_at' (ms), 'bytes' long, made by                       \
     * 'node'. */ \
    int (*backup_note)(struct store * st, int64_t ended_at, int64_t bytes, const char *node);        \
    /* The newest backup recorded: ERR_NOTFOUND when there is none. */                               \
    int (*backup_last)(struct store * st, int64_t * ended_at, int64_t * bytes);                      \
    /* The store server's clock (ms): ERR_NOTFOUND for a store in a file,                          \
     * which has no clock of its own. */ \
    int (*clock_ms)(struct store * st, int64_t * now);                                               \
    /* Takes or renews the lease 'name' for 'holder' until now + ttl_ms: *held                     \
     * says whether 'holder' has it now (it is free, expired or its own). */ \
    int (*lease_take)(struct store * st, const char *name, const char *holder, int64_t now,          \
                      int64_t ttl_ms, bool *held);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
