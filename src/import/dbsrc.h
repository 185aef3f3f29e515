/* dbsrc.h - a peer's database as an import source: its SQLite file, opened
 * read-only, or its PostgreSQL database by a postgres:// URL, read in one
 * read-only snapshot. Rows come back as text, streamed (never the whole
 * result in memory), so one reader's queries serve both kinds; a reader
 * writes the few expressions that differ (dates as unix seconds) for each.
 * One thread. */
#ifndef SHORTD_DBSRC_H
#define SHORTD_DBSRC_H

#include <stdbool.h>
#include <stdint.h>

struct dbsrc;

/* 'source' starting with "postgres://" or "postgresql://" is a PostgreSQL
 * URL; anything else is the path of an SQLite file, which must exist. ERR_OK
 * and *out, or ERR_IO (logged, the source named) when it cannot be opened. */
int dbsrc_open(const char *source, struct dbsrc **out);
void dbsrc_close(struct dbsrc *d); /* NULL is fine */

bool dbsrc_is_pg(const struct dbsrc *d);

/* Calls 'row' with each row's columns as text (NULL for SQL NULL; numbers
 * in their decimal form; booleans "1"/"0" on SQLite, "t"/"f" on PostgreSQL:
 * see dbsrc_bool), valid during the call only. 'row' returns ERR_OK to go
 * on, anything else to stop with that code. ERR_OK at the end of the rows;
 * ERR_IO (logged with 'what', e.g. "links") when the query fails, e.g. the
 * table is missing. */
int dbsrc_query(struct dbsrc *d, const char *what, const char *sql,
                int (*row)(void *arg, const char *const *cols, int ncols), void *arg);

/* A boolean column's text as either database writes it. */
bool dbsrc_bool(const char *v);
/* A decimal integer column: true and *out, false when absent or not one. */
bool dbsrc_int(const char *v, int64_t *out);

#endif
