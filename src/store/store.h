/* store.h - the storage contract: everything shortd keeps, behind one ops
 * table per backend. SQLite (store_sqlite.c) is the embedded default;
 * PostgreSQL (store_pg.c) is the scale-out backend and implements the same
 * table. This header holds opening a store, transactions and settings;
 * each area's records and ops have a header of their own, and a caller
 * includes those of the areas it uses:
 *   store_links.h   links, destination history, custom domains, idempotency
 *   store_stats.h   click analytics: link days, pruning, reading stats
 *   store_keys.h    API keys and the destination blocklist
 *   store_move.h    whole tables as rows, for moving a store
 *   store_events.h  sinks, their positions, the link outbox, failed batches
 *   store_sites.h   site analytics: sites, their hosts and tokens, site days
 *   store_watch.h   backups made, the store's clock, leases (operations)
 *
 * Threads: a store is shared by all threads; a backend keeps one connection
 * per calling thread. Reads may run on any thread. Writes run inside
 * begin/commit on one thread at a time (the writer thread of writer.c, or a
 * CLI command), so a backend never sees two write transactions of one process
 * at once. Times are milliseconds since the epoch (UTC).
 *
 * Adding an op: its member goes into its area's STORE_OPS_* list, its
 * function into both backends' tables, and its checks into
 * tests/unit/test_store.c, which runs them against both. */
#ifndef SHORTD_STORE_H
#define SHORTD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* The areas: each ends by including this header, so including any of them
 * gives the whole table. */
#include "store/store_events.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/store_move.h"
#include "store/store_sites.h"
#include "store/store_stats.h"
#include "store/store_watch.h"

struct store;

struct store_ops {
    const char *name; /* "sqlite", "postgres" */

    /* Lifecycle */
    int (*open)(const char *target, struct store **out); /* creates/migrates the schema */
    void (*close)(struct store *st);
    /* Starts the backend's own upkeep in threads of its own at this nice
     * (coop.h), stopped by close; NULL when the backend has none. A serving
     * node calls it once; a CLI command does without. */
    int (*background)(struct store *st, int nice);
    int (*ping)(struct store *st);
    int (*backup)(struct store *st, const char *to_path);

    /* Write transactions (one thread at a time) and a savepoint per unit of work */
    int (*begin)(struct store *st);
    int (*commit)(struct store *st);
    void (*rollback)(struct store *st);
    int (*savepoint)(struct store *st);
    void (*savepoint_end)(struct store *st, bool keep);

    /* Settings and counters: secrets, the code counter, the change generation */
    int (*meta_get)(struct store *st, const char *key, struct buf *val); /* ERR_NOTFOUND */
    int (*meta_put)(struct store *st, const char *key, const void *val, size_t n);
    int (*meta_del)(struct store *st, const char *key);
    /* Inserts only when absent (ERR_EXISTS otherwise): of nodes racing to
     * create a value, one wins and all then read the same. */
    int (*meta_add)(struct store *st, const char *key, const void *val, size_t n);
    int (*claim_block)(struct store *st, uint64_t size, uint64_t *start);

    STORE_OPS_LINKS
    STORE_OPS_STATS
    STORE_OPS_KEYS
    STORE_OPS_MOVE
    STORE_OPS_EVENTS
    STORE_OPS_SITES
    STORE_OPS_WATCH
};

/* Every backend's store begins with this. */
struct store {
    const struct store_ops *ops;
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

/* Opens "sqlite:PATH", a plain PATH, or "postgres://..." ("postgresql://"),
 * which must already carry this binary's schema; ERR_INVALID for an unknown
 * scheme. */
int store_open(const char *url, struct store **out);

/* The change generation (meta 'generation'): commands that change links or
 * keys under a running server bump it in their transaction, and a server
 * that sees it move drops its cache. store_generation: ERR_OK and *g (0
 * until the first bump), or the store's error. */
int store_generation(struct store *st, int64_t *g);
int store_generation_bump(struct store *st); /* inside a transaction */

/* Brings a PostgreSQL database to this binary's schema: the pending
 * migrations in one transaction, under an advisory lock so two migrators
 * never race. 'from' and 'to' get the versions before and after. */
int store_pg_migrate(const char *url, int *from, int *to);

/* True for a store shared by several nodes (PostgreSQL), false for a file. */
bool store_is_shared(const char *url);
/* Copies 'url' into 'out' with any password replaced by "***", for messages. */
void store_redact(const char *url, char *out, size_t n);

/* What `shortd doctor` reads of a store, read only, without opening it
 * through its ops (which migrate a SQLite file, and refuse a PostgreSQL
 * schema they do not know). Filled as far as it got; 'why' says where it
 * stopped (never a password). */
#define STORE_HEALTH_MARKS 16
#define STORE_HEALTH_PINGS 5
struct store_health {
    bool reached;           /* the file opened, or the server answered */
    int64_t connect_us;     /* time to open or connect */
    int64_t query_us;       /* SELECT 1's round trip (PostgreSQL: the fastest of
                             * STORE_HEALTH_PINGS) */
    int schema;             /* the database's schema version; 0: none yet */
    int schema_wanted;      /* this binary's */
    char journal_mode[16];  /* SQLite's; "" for PostgreSQL */
    int64_t server_now_ms;  /* PostgreSQL's now(); 0 for SQLite */
    int64_t newest_link_ms; /* newest links.created_at; 0: no link */
    int64_t newest_day;     /* newest day with counted clicks; -1: none */
    int64_t journal_marks;  /* click journal checkpoints stored (a served store has one) */
    /* The first STORE_HEALTH_MARKS of them: journal id, position */
    struct {
        char id[48];
        int64_t pos;
    } marks[STORE_HEALTH_MARKS];
    int nmarks;
    char why[256];
};
/* ERR_OK when every read worked; ERR_STORAGE otherwise, with 'why'. */
int store_inspect(const char *url, int timeout_s, struct store_health *out);
int store_sqlite_inspect(const char *path, struct store_health *out);
int store_pg_inspect(const char *url, int timeout_s, struct store_health *out);

/* The calling thread's bound on its store calls, on the monotonic clock
 * (timeutil.h's mono_ms; 0: none). A store thread sets it for each job
 * (storeq.h); a backend ends a call that runs past it with ERR_STORAGE
 * (SQLite interrupts the statement, PostgreSQL drops the connection and
 * opens another on the next call). */
void store_set_deadline(int64_t mono_ms);
int64_t store_deadline(void);

/* Whether the calling thread's write transactions are bulk work (an
 * import): large transactions touching much of the store, for which a
 * backend may keep a larger cache on that thread's connection. Set it
 * before the thread's first begin; false when never set. */
void store_set_bulk(bool bulk);
bool store_bulk(void);

/* The calling thread's backup() reports its progress here: pages copied of
 * the total, after each step (NULL: none). For the CLI's progress line. */
typedef void (*store_backup_cb)(int64_t done, int64_t total, void *arg);
void store_set_backup_progress(store_backup_cb cb, void *arg);
void store_backup_progress(int64_t done, int64_t total); /* for backends */

/* Tests: the WAL sizes, in pages, at which a SQLite store's checkpoint
 * thread copies the WAL and the next commit starts it again (1,000 and
 * 16,384 unless set). Call before background(). */
void store_sqlite_checkpoint_at(struct store *st, int copy_pages, int restart_pages);

#endif
