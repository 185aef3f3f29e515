/* store.h - the storage contract: everything shortd keeps, behind one ops
 * table per backend. SQLite (store_sqlite.c) is the embedded default; the
 * scale-out backend implements the same table.
 *
 * Threads: a store is shared by all threads; a backend keeps one connection
 * per calling thread. Reads may run on any thread. Writes run inside
 * begin/commit on one thread at a time (the writer thread of writer.c, or a
 * CLI command), so a backend never sees two write transactions of one process
 * at once. Times are milliseconds since the epoch (UTC). */
#ifndef SHORTD_STORE_H
#define SHORTD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "links/codes.h"
#include "store/tables.h"

enum link_state {
    LINK_ACTIVE = 0,    /* live unless expires_at has passed */
    LINK_DELETED = 1,   /* tombstone: code kept for ever, data removed */
    LINK_DISABLED = 2,  /* switched off by an admin, data kept */
};

/* A link as stored. Strings are owned by the struct (link_release frees). */
struct link {
    char code[CODE_MAX + 1];
    int64_t owner;      /* API key id */
    char *url;          /* NULL once removed (deleted, or swept after expiry) */
    char *title;        /* NULL when absent */
    char *note;
    char *tags;         /* JSON array text, NULL for none */
    int64_t created_at;
    int64_t expires_at; /* 0: never */
    int64_t changed_at; /* last change of state */
    int state;          /* enum link_state */
    bool permanent;     /* 301 instead of 302 */
    int64_t clicks;     /* all-time human clicks */
    int64_t bot_clicks; /* all-time bot and prefetch clicks */
    /* Link controls (schema 2) */
    char *password;     /* Argon2id string (pwhash.h), NULL: not protected */
    char *domain;       /* lowercase custom short host, NULL: the default hosts only */
    char *variants;     /* A/B destinations, JSON text, NULL for none */
    char *utm;          /* UTM object, JSON text, NULL for none */
    char *dest;         /* url with utm merged (what the redirect sends), NULL: url */
    int64_t max_clicks; /* 0: no limit */
    int64_t used;       /* click slots reserved (max_clicks) */
};

/* True when a redirect of the link needs more than its destination: a
 * password, A/B variants or a click limit (the redirect's controlled path). */
bool link_controlled(const struct link *l);

void link_release(struct link *l);

/* The calling thread's bound on its store calls, on the monotonic clock
 * (timeutil.h's mono_ms; 0: none). A store thread sets it for each job
 * (storeq.h); a backend ends a call that runs past it with ERR_STORAGE
 * (SQLite interrupts the statement, PostgreSQL drops the connection and
 * opens another on the next call). */
void store_set_deadline(int64_t mono_ms);
int64_t store_deadline(void);

/* Listing: newest first; 'after_*' is the cursor (0/"" for the first page). */
struct link_query {
    int64_t owner;      /* -1: every owner */
    unsigned states;    /* bit (1 << state) per wanted stored state ... */
    bool want_live;     /* ... and of LINK_ACTIVE, whether live ones ... */
    bool want_expired;  /* ... expired ones ... */
    bool want_exhausted; /* ... and unexpired ones whose click limit is used up
                          * (max_clicks > 0, used >= max_clicks) are wanted */
    int64_t now;
    int64_t after_created;
    const char *after_code;
    int limit;
    const char *tag;    /* NULL, or only links whose tags array holds exactly this */
    const char *q;      /* NULL, or only links with this in code, url, title or note
                         * (a plain substring, ASCII letters in any case) */
};

struct apikey {
    int64_t id;
    char name[128];
    bool admin;
    int64_t created_at;
    int64_t revoked_at; /* 0: valid */
};

/* A remembered idempotent answer. 'body' is owned (free()). */
struct idem_rec {
    uint8_t fingerprint[32];
    int status;
    char *body;
    int64_t created_at;
};

/* One of the last clicks of a link, as the stats show it. */
struct recent_click {
    int64_t ts;
    const char *referrer;
    const char *country;
    const char *device;
    const char *browser;
};

/* One link's clicks of one day, folded by the aggregator (dayrow.h). */
struct dayrow;
struct day_delta {
    const char *code;
    int64_t day;
    const struct dayrow *row;
};

/* Service-wide (or one owner's) totals. */
struct totals {
    int64_t links, clicks, bot_clicks;
};

typedef int (*link_cb)(const struct link *l, void *arg);     /* non-zero stops */
typedef int (*day_cb)(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg);
typedef int (*dim_cb)(int dim, const char *value, int64_t n, void *arg);
typedef int (*recent_cb)(const struct recent_click *r, void *arg);
typedef int (*top_cb)(const char *code, int64_t clicks, void *arg);
typedef int (*key_cb)(const struct apikey *k, void *arg);
typedef int (*host_cb)(const char *host, int64_t created_at, void *arg);
typedef int (*row_cb)(const struct store_value *row, void *arg);    /* non-zero stops */

/* One change of a link's destination (PATCH), newest first when listed. */
struct link_change {
    int64_t seq;        /* 1, 2, ... per code */
    const char *old_url;
    const char *new_url;
    int64_t changed_at;
    int64_t by_key;     /* API key id that made the change */
};
typedef int (*change_cb)(const struct link_change *c, void *arg);
typedef int (*domain_cb)(const char *host, int64_t owner, int64_t created_at, void *arg);

struct store;

struct store_ops {
    const char *name;   /* "sqlite" */

    /* Lifecycle */
    int (*open)(const char *target, struct store **out);  /* creates/migrates the schema */
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

    /* Links */
    int (*link_get)(struct store *st, const char *code, struct link *out);  /* any state */
    int (*link_insert)(struct store *st, const struct link *l);            /* ERR_EXISTS */
    int (*link_find_live)(struct store *st, int64_t owner, const char *url, int64_t now,
                          struct link *out);
    int (*link_set_state)(struct store *st, const char *code, int state, int64_t now);
    int (*link_list)(struct store *st, const struct link_query *q, link_cb cb, void *arg);
    int (*link_count)(struct store *st, int64_t *n);
    /* Removes the data of links expired before 'before', at most 'limit'. */
    int (*link_sweep)(struct store *st, int64_t before, int limit, int *swept);
    /* Writes the changeable fields of an existing link (url, title, note,
     * tags, expires_at, changed_at, password, variants, utm, dest);
     * ERR_NOTFOUND when there is no such code. */
    int (*link_update)(struct store *st, const struct link *l);
    /* Takes one click slot of a link with max_clicks: ERR_OK with the slots
     * now used, ERR_TOOBIG when none is left (or the link has no limit). In
     * PostgreSQL one conditional UPDATE, exact across nodes. */
    int (*link_reserve)(struct store *st, const char *code, int64_t *used);

    /* Destination history (link_history), appended in the change's transaction */
    int (*history_add)(struct store *st, const char *code, const char *old_url,
                       const char *new_url, int64_t at, int64_t by_key);
    int (*history_list)(struct store *st, const char *code, int limit, change_cb cb, void *arg);

    /* Custom short domains, one owner each */
    int (*domain_add)(struct store *st, const char *host, int64_t owner, int64_t now); /* ERR_EXISTS */
    int (*domain_get)(struct store *st, const char *host, int64_t *owner);   /* ERR_NOTFOUND */
    int (*domain_del)(struct store *st, const char *host, int64_t owner);    /* ERR_NOTFOUND */
    int (*domain_list)(struct store *st, int64_t owner, domain_cb cb, void *arg); /* -1: all */

    /* Click analytics, written by the aggregator inside a write transaction:
     * each delta is merged into its link's row of that day (dayrow_merge),
     * which is created when absent. 'd' is sorted by (code, day), so nodes
     * sharing a store take row locks in one order. Days are days since the
     * epoch. */
    int (*agg_days)(struct store *st, const struct day_delta *d, size_t n);
    /* Removes day rows before 'before_day', at most 'limit', oldest first,
     * adding their counts to their links' kept totals (which never shrink). */
    int (*prune_days)(struct store *st, int64_t before_day, int limit, int *pruned);
    /* Visitor hashes are only needed while their day's salt lives: drops the
     * visitor sets of days before 'before_day' (their unique counts stay).
     * Clicks merged into such a day later count as new visitors; SQLite then
     * keeps no set for it at all. */
    int (*prune_visitors)(struct store *st, int64_t before_day);

    /* Reading analytics */
    int (*stats_days)(struct store *st, const char *code, int64_t from, int64_t to, day_cb cb,
                      void *arg);
    int (*stats_dims)(struct store *st, const char *code, int64_t from, int64_t to, dim_cb cb,
                      void *arg);                       /* summed over the days */
    int (*stats_recent)(struct store *st, const char *code, int limit, recent_cb cb, void *arg);
    int (*stats_totals)(struct store *st, int64_t owner, struct totals *out); /* -1: all */
    int (*stats_top)(struct store *st, int64_t owner, int64_t day, int limit, top_cb cb,
                     void *arg);

    /* API keys: only keyed hashes are stored */
    int (*key_insert)(struct store *st, const char *name, const uint8_t hash[32], bool admin,
                      int64_t now, int64_t *id);
    int (*key_by_hash)(struct store *st, const uint8_t hash[32], struct apikey *out);
    int (*key_list)(struct store *st, key_cb cb, void *arg);
    /* ERR_NOTFOUND. A shared store also publishes BUS_KEYS (bus.h) to every
     * listening node in the same transaction, delivered at commit. */
    int (*key_revoke)(struct store *st, int64_t id, int64_t now);
    int (*key_count)(struct store *st, int64_t *n);

    /* Idempotency keys, scoped to an API key */
    int (*idem_get)(struct store *st, int64_t key_id, const char *idem, int64_t since,
                    struct idem_rec *out);
    int (*idem_put)(struct store *st, int64_t key_id, const char *idem,
                    const struct idem_rec *rec);
    /* Claims a key for this transaction (a record without an answer yet):
     * ERR_OK when claimed, ERR_EXISTS when a record is there; a concurrent
     * claimer in another transaction waits for this one to finish. */
    int (*idem_claim)(struct store *st, int64_t key_id, const char *idem,
                      const struct idem_rec *rec);
    int (*idem_sweep)(struct store *st, int64_t before);

    /* Destination blocklist (lowercase hosts) */
    int (*block_add)(struct store *st, const char *host, int64_t now);   /* ERR_EXISTS */
    int (*block_del)(struct store *st, const char *host);                /* ERR_NOTFOUND */
    int (*block_has)(struct store *st, const char *host, bool *yes);
    int (*block_list)(struct store *st, host_cb cb, void *arg);

    /* Whole tables, for moving a store (`shortd migrate-store`): rows of a
     * table of tables.h as arrays of values, in key order. */
    int (*export_rows)(struct store *st, int table, row_cb cb, void *arg);
    /* Inside begin/commit: 'n' rows in key order, all after the key 'after'
     * (the previous batch's last row; NULL for the first batch). A row is
     * inserted, or replaces the row with its key (meta's 'counter' keeps the
     * larger number). For a mirror table, rows from after 'after' up to the
     * last row's key (to the end of the table when 'to_end') that are not in
     * the batch are removed, so one pass makes the table the source's.
     * '*changed' gets the rows added, changed or removed. */
    int (*import_rows)(struct store *st, int table, const struct store_value *rows, size_t n,
                       const struct store_value *after, bool to_end, int64_t *changed);
    int (*table_count)(struct store *st, int table, struct table_count *out);
};

/* Every backend's store begins with this. */
struct store {
    const struct store_ops *ops;
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

/* Tests: the WAL sizes, in pages, at which a SQLite store's checkpoint
 * thread copies the WAL and the next commit starts it again (1,000 and
 * 16,384 unless set). Call before background(). */
void store_sqlite_checkpoint_at(struct store *st, int copy_pages, int restart_pages);

/* Hands a day row's newest clicks (dayrow.h), newest first, to a
 * stats_recent callback: what both backends answer stats_recent with. */
int store_each_recent(const struct dayrow *r, int limit, recent_cb cb, void *arg);

/* Copies 'url' into 'out' with any password replaced by "***", for messages. */
void store_redact(const char *url, char *out, size_t n);
/* True for a store shared by several nodes (PostgreSQL), false for a file. */
bool store_is_shared(const char *url);

/* Opens "sqlite:PATH", a plain PATH, or "postgres://..." ("postgresql://"),
 * which must already carry this binary's schema; ERR_INVALID for an unknown
 * scheme. */
int store_open(const char *url, struct store **out);

/* Brings a PostgreSQL database to this binary's schema: the pending
 * migrations in one transaction, under an advisory lock so two migrators
 * never race. 'from' and 'to' get the versions before and after. */
int store_pg_migrate(const char *url, int *from, int *to);

#endif
