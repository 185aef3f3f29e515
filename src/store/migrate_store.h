/* migrate_store.h - copies one store into another, every table of store_move.h
 * (`shortd migrate-store`, e.g. SQLite into PostgreSQL), then counts both.
 * The target becomes a copy of the source; a rerun writes only the rows
 * that changed since, so it is safe to repeat. */
#ifndef SHORTD_MIGRATE_STORE_H
#define SHORTD_MIGRATE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_move.h"

/* What happened to one table. */
struct migrate_table {
    int64_t copied;              /* rows read from the source */
    int64_t written;             /* target rows added, changed or removed */
    struct table_count from, to; /* both stores, counted after the copy */
};

struct migrate_result {
    struct migrate_table t[TABLE__COUNT];
};

/* Called after each batch, and with 'done' when a table is complete. */
typedef void (*migrate_progress_fn)(const char *table, int64_t rows, bool done, void *arg);

#define MIGRATE_BATCH_ROWS 2000 /* rows per transaction, by default */

/* Copies 'from' into 'to', 'batch_rows' rows per transaction, tables in the
 * order of store_move.h, then counts both into 'out'. ERR_INVALID, with the
 * reason in 'why', when 'to' must not be written: it holds links or keys
 * made under other secrets, or clicks that a node served from it counted
 * (a copy would overwrite them). Other errors are logged; whatever was
 * committed before one stays, and a rerun carries on. */
int migrate_store(struct store *from, struct store *to, size_t batch_rows,
                  migrate_progress_fn progress, void *arg, struct migrate_result *out, char *why,
                  size_t whylen);

/* True when both stores have the same rows and sums in every table. */
bool migrate_store_verified(const struct migrate_result *r);

#endif
