/* sqlgen.h - the SQL text both backends run, written once: a link's
 * columns, the link list's query, and the pieces of the statements that
 * move whole tables (store_move.h). What differs between SQLite's SQL and
 * PostgreSQL's is named in struct sql_dialect.
 *
 * Pure: text and parameters out, nothing run. Names in the text come from
 * this file and store_move.h only; every value is a parameter. */
#ifndef SHORTD_SQLGEN_H
#define SHORTD_SQLGEN_H

#include "base/buf.h"
#include "store/store_links.h"
#include "store/store_move.h"

/* What a link is written and read with, in struct link's order. */
#define SQL_LINK_COLS                                                                              \
    "code, owner, url, title, note, tags, created_at, expires_at, changed_at, state, "             \
    "permanent, clicks, bot_clicks, password, domain, variants, utm, dest, max_clicks, used, "     \
    "track"
/* As read: the all-time totals are the pruned days' plus the kept days'
 * plus the days appended and not yet compacted ('pend_clicks' and
 * 'pend_bots', each a "+ ..." term). 'sum_cast' is the dialect's
 * (SQL_SUM_SQLITE, SQL_SUM_PG). */
#define SQL_LINK_READ_OF(sum_cast, pend_clicks, pend_bots)                                         \
    "code, owner, url, title, note, tags, created_at, expires_at, changed_at, state, "             \
    "permanent, clicks + coalesce((SELECT sum(d.clicks) FROM link_days d "                         \
    "WHERE d.code = links.code), 0)" sum_cast pend_clicks ", bot_clicks + "                        \
    "coalesce((SELECT sum(d.bots) FROM link_days d WHERE d.code = links.code), 0)" sum_cast        \
        pend_bots                                                                                  \
    ", password, domain, variants, utm, dest, max_clicks, used, imported_clicks, track"
#define SQL_PENDING_OF(col)                                                                        \
    " + coalesce((SELECT sum(p." col ") FROM link_days_pending p WHERE p.batch IN "                \
    "(SELECT batch FROM day_batches) AND p.code = links.code), 0)"
#define SQL_LINK_READ_SQLITE                                                                       \
    SQL_LINK_READ_OF(SQL_SUM_SQLITE, SQL_PENDING_OF("clicks"), SQL_PENDING_OF("bots"))
/* PostgreSQL's appended rows are found by their (code, day) index. */
#define SQL_PENDING_PG_OF(col)                                                                     \
    " + coalesce((SELECT sum(p." col ") FROM link_days_pending p "                                 \
    "WHERE p.code = links.code), 0)" SQL_SUM_PG
#define SQL_LINK_READ_PG                                                                           \
    SQL_LINK_READ_OF(SQL_SUM_PG, SQL_PENDING_PG_OF("clicks"), SQL_PENDING_PG_OF("bots"))
/* The day rows with the appended ones not yet compacted, for the sums
 * that can add them as they are. */
#define SQL_DAYS_AND_PENDING                                                                       \
    "(SELECT code, day, clicks, bots FROM link_days UNION ALL "                                    \
    "SELECT code, day, clicks, bots FROM link_days_pending)"
/* What a deleted or swept link loses (its code and counters stay). */
#define SQL_LINK_DATA_NULL                                                                         \
    "url = NULL, title = NULL, note = NULL, tags = NULL, password = NULL, variants = NULL, "       \
    "utm = NULL, dest = NULL"

/* A sum of integers read as int64: PostgreSQL's sum of bigints is numeric. */
#define SQL_SUM_SQLITE ""
#define SQL_SUM_PG "::bigint"

struct sql_dialect {
    const char *name;
    char param; /* parameter n is written '?n' (SQLite) or '$n' */
    /* Parameters of a column's type (enum col_type) are cast to this; NULL:
     * not cast (SQLite types values, not parameters). */
    const char *const *param_type;
    const char *false_cond; /* a condition that is false: "0", "false" */
    const char *sum_cast;   /* SQL_SUM_SQLITE, SQL_SUM_PG */
    const char *link_read;  /* SQL_LINK_READ_SQLITE, SQL_LINK_READ_PG */
    /* ASCII-only lowercase of an expression, between these two (both
     * backends fold the same letters whatever the server's locale) */
    const char *fold_open, *fold_close;
    const char *strpos; /* function(text, part): part's position, 0 if absent */
    /* A subquery that has a row when a link's tags (JSON array text) hold
     * an element equal to what follows it. */
    const char *tag_elem_eq;
    /* The row being upserted, in ON CONFLICT's WHERE: "" (SQLite names its
     * columns bare), "x." (PostgreSQL's statements alias the table x). */
    const char *upsert_row;
    const char *distinct; /* rows differ, NULLs equal: "IS NOT", "IS DISTINCT FROM" */
};

extern const struct sql_dialect sql_sqlite;
extern const struct sql_dialect sql_pg;

/* A statement: its text and its parameters, $1/?1 first. Values borrow
 * their bytes from what the statement was made of. */
#define SQL_PARAMS_MAX 10
struct sql_stmt {
    struct buf text;
    int nparams;
    struct store_value param[SQL_PARAMS_MAX];
};

void sql_stmt_init(struct sql_stmt *s);
void sql_stmt_release(struct sql_stmt *s);

/* ---- the link list (store_links.h's link_list) ---- */

/* Queries of one shape have the same text and parameter types (their
 * values differ): PostgreSQL prepares each shape once. Below SQL_LIST_SHAPES. */
#define SQL_LIST_SHAPES 1024
unsigned sqlgen_list_shape(const struct link_query *q);

/* The query of 'q' into 's' (initialised, empty). */
void sqlgen_list(struct sql_stmt *s, const struct sql_dialect *d, const struct link_query *q);

/* link_list_floor's query: created_at and code of the rows-th link of q's
 * owner after q's cursor (OFFSET rows - 1). Its shapes: sqlgen_floor_shape,
 * below SQL_FLOOR_SHAPES. */
#define SQL_FLOOR_SHAPES 4
unsigned sqlgen_floor_shape(const struct link_query *q);
void sqlgen_list_floor(struct sql_stmt *s, const struct sql_dialect *d, const struct link_query *q,
                       int rows);

/* ---- moving tables (store_move.h) ---- */

/* "a, b, c": the names of columns [from, to), each after 'prefix'. */
void sqlgen_cols(struct buf *b, const struct store_table *t, int from, int to, const char *prefix);
/* SELECT of every row of 't' in key order. */
void sqlgen_export(struct buf *b, const struct store_table *t);
/* SELECT of the rows of 't' and the sums of its 'sum' columns. */
void sqlgen_count(struct buf *b, const struct sql_dialect *d, const struct store_table *t);
/* " AND (k1, k2) op (p, p)": the key, each column after 'prefix', against
 * parameters numbered from 'first'. */
void sqlgen_key_bound(struct buf *b, const struct sql_dialect *d, const struct store_table *t,
                      const char *prefix, const char *op, int first);
/* The ON CONFLICT clause of an upsert into 't' (not meta, whose counter
 * each backend merges its own way): the columns that are not the key
 * take the new row's values, and a row that is already there as it is
 * counts no change. */
void sqlgen_upsert(struct buf *b, const struct sql_dialect *d, const struct store_table *t);

#endif
