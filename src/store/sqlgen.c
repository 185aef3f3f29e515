/* sqlgen.c - the SQL text both backends run, written once (sqlgen.h). */
#include "store/sqlgen.h"

#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

static const char *const pg_param_type[] = {
    [COL_INT] = "bigint", [COL_BOOL] = "boolean", [COL_TEXT] = "text", [COL_BLOB] = "bytea"};

const struct sql_dialect sql_sqlite = {
    .name = "sqlite",
    .param = '?',
    .param_type = NULL,
    .false_cond = "0",
    .sum_cast = SQL_SUM_SQLITE,
    .link_read = SQL_LINK_READ_SQLITE,
    .fold_open = "lower(",
    .fold_close = ")",
    .strpos = "instr",
    .tag_elem_eq = "SELECT 1 FROM json_each(links.tags) WHERE value = ",
    .upsert_row = "",
    .distinct = "IS NOT",
};

/* lower() under the "C" collation folds ASCII letters only, like SQLite's,
 * whatever the server's locale: q matches the same links in both backends.
 * (translate() did the same, many times slower: bench/HISTORY.md.) */
const struct sql_dialect sql_pg = {
    .name = "postgres",
    .param = '$',
    .param_type = pg_param_type,
    .false_cond = "false",
    .sum_cast = SQL_SUM_PG,
    .link_read = SQL_LINK_READ_PG,
    .fold_open = "lower(",
    .fold_close = " COLLATE \"C\")",
    .strpos = "strpos",
    .tag_elem_eq = "SELECT 1 FROM json_array_elements_text(tags::json) t WHERE t = ",
    .upsert_row = "x.",
    .distinct = "IS DISTINCT FROM",
};

void sql_stmt_init(struct sql_stmt *s)
{
    memset(s, 0, sizeof(*s));
    buf_init(&s->text);
}

void sql_stmt_release(struct sql_stmt *s)
{
    buf_release(&s->text);
    s->nparams = 0;
}

static struct store_value int_value(int64_t i)
{
    return (struct store_value){.type = VAL_INT, .i = i};
}

static struct store_value text_value(const char *p)
{
    return (struct store_value){.type = VAL_TEXT, .p = p, .n = strlen(p)};
}

/* Writes the parameter numbered *n, first adding 'v' as a new one when *n
 * is 0: a value the text names more than once is one parameter. */
static void param_at(struct sql_stmt *s, const struct sql_dialect *d, int *n, struct store_value v)
{
    if (!*n) {
        if (s->nparams == SQL_PARAMS_MAX)
            abort(); /* the statements here have a fixed, smaller number */
        s->param[s->nparams++] = v;
        *n = s->nparams;
    }
    buf_printf(&s->text, "%c%d", d->param, *n);
}

/* Writes a new parameter holding 'v'. */
static void param(struct sql_stmt *s, const struct sql_dialect *d, struct store_value v)
{
    int n = 0;
    param_at(s, d, &n, v);
}

/* ---- the link list ---- */

enum {
    SHAPE_DELETED = 1 << 0,
    SHAPE_DISABLED = 1 << 1,
    SHAPE_LIVE = 1 << 2,
    SHAPE_EXPIRED = 1 << 3,
    SHAPE_OWNER = 1 << 4,
    SHAPE_CURSOR = 1 << 5,
    SHAPE_TAG = 1 << 6,
    SHAPE_Q = 1 << 7,
    SHAPE_EXHAUSTED = 1 << 8,
    SHAPE_FLOOR = 1 << 9, /* below SQL_LIST_SHAPES */
};

unsigned sqlgen_list_shape(const struct link_query *q)
{
    return (q->states & (1u << LINK_DELETED) ? SHAPE_DELETED : 0) |
           (q->states & (1u << LINK_DISABLED) ? SHAPE_DISABLED : 0) |
           (q->want_live ? SHAPE_LIVE : 0) | (q->want_expired ? SHAPE_EXPIRED : 0) |
           (q->want_exhausted ? SHAPE_EXHAUSTED : 0) | (q->owner >= 0 ? SHAPE_OWNER : 0) |
           (q->after_code && *q->after_code ? SHAPE_CURSOR : 0) | (q->tag ? SHAPE_TAG : 0) |
           (q->q ? SHAPE_Q : 0) | (q->floor_code ? SHAPE_FLOOR : 0);
}

/* Which links: the wanted states, any of them. */
static void list_states(struct sql_stmt *s, const struct sql_dialect *d, const struct link_query *q,
                        unsigned shape)
{
    struct buf *b = &s->text;
    int now = 0;
    buf_printf(b, " WHERE (%s", d->false_cond);
    if (shape & SHAPE_DELETED)
        buf_adds(b, " OR state = 1");
    if (shape & SHAPE_DISABLED)
        buf_adds(b, " OR state = 2");
    if (shape & SHAPE_LIVE) {
        buf_adds(b, " OR (state = 0 AND (expires_at = 0 OR expires_at > ");
        param_at(s, d, &now, int_value(q->now));
        buf_adds(b, ") AND (max_clicks = 0 OR used < max_clicks))");
    }
    if (shape & SHAPE_EXPIRED) {
        buf_adds(b, " OR (state = 0 AND expires_at > 0 AND expires_at <= ");
        param_at(s, d, &now, int_value(q->now));
        buf_adds(b, ")");
    }
    if (shape & SHAPE_EXHAUSTED) {
        buf_adds(b, " OR (state = 0 AND (expires_at = 0 OR expires_at > ");
        param_at(s, d, &now, int_value(q->now));
        buf_adds(b, ") AND max_clicks > 0 AND used >= max_clicks)");
    }
    buf_adds(b, ")");
}

/* q: a plain substring of the code, url, title or note, ASCII letters in
 * any case. strpos/instr, not LIKE: no character of q is a wildcard. */
static void list_search(struct sql_stmt *s, const struct sql_dialect *d, const char *q)
{
    static const char *const cols[] = {"code", "url", "title", "note"};
    struct buf *b = &s->text;
    int n = 0;
    buf_adds(b, " AND (");
    for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
        buf_printf(b, "%s%s(%s%s%s, %s", i ? " OR " : "", d->strpos, d->fold_open, cols[i],
                   d->fold_close, d->fold_open);
        param_at(s, d, &n, text_value(q));
        buf_printf(b, "%s) > 0", d->fold_close);
    }
    buf_adds(b, ")");
}

/* "LEAD (created_at, code) OP (created, code)": a bound in the list's order,
 * after " WHERE " or " AND ". */
static void list_bound(struct sql_stmt *s, const struct sql_dialect *d, const char *lead,
                       const char *op, int64_t created, const char *code)
{
    buf_printf(&s->text, "%s(created_at, code) %s (", lead, op);
    param(s, d, int_value(created));
    buf_adds(&s->text, ", ");
    param(s, d, text_value(code));
    buf_adds(&s->text, ")");
}

#define LIST_ORDER " ORDER BY created_at DESC, code DESC"

/* The page: the links after the cursor (and down to a search's floor), in
 * the list's order, at most 'limit'. With sqlgen_list_floor, the one place
 * that knows the order and its keyset cursor. */
static void list_page(struct sql_stmt *s, const struct sql_dialect *d, const struct link_query *q,
                      unsigned shape)
{
    if (shape & SHAPE_CURSOR)
        list_bound(s, d, " AND ", "<", q->after_created, q->after_code);
    if (shape & SHAPE_FLOOR)
        list_bound(s, d, " AND ", ">=", q->floor_created, q->floor_code);
    buf_adds(&s->text, LIST_ORDER " LIMIT ");
    param(s, d, int_value(q->limit));
}

void sqlgen_list(struct sql_stmt *s, const struct sql_dialect *d, const struct link_query *q)
{
    unsigned shape = sqlgen_list_shape(q);
    struct buf *b = &s->text;
    buf_printf(b, "SELECT %s FROM links", d->link_read);
    list_states(s, d, q, shape);
    if (shape & SHAPE_OWNER) {
        buf_adds(b, " AND owner = ");
        param(s, d, int_value(q->owner));
    }
    if (shape & SHAPE_TAG) {
        buf_printf(b, " AND EXISTS (%s", d->tag_elem_eq);
        param(s, d, text_value(q->tag));
        buf_adds(b, ")");
    }
    if (shape & SHAPE_Q)
        list_search(s, d, q->q);
    list_page(s, d, q, shape);
}

unsigned sqlgen_floor_shape(const struct link_query *q)
{
    return (q->owner >= 0 ? 1u : 0) | (q->after_code && *q->after_code ? 2u : 0);
}

/* The owner's rows in the list's order, every state: the index on (owner,
 * created_at, code), or on (created_at, code) for every owner, walked for
 * 'rows' entries at most. */
void sqlgen_list_floor(struct sql_stmt *s, const struct sql_dialect *d, const struct link_query *q,
                       int rows)
{
    unsigned shape = sqlgen_floor_shape(q);
    struct buf *b = &s->text;
    buf_adds(b, "SELECT created_at, code FROM links");
    if (shape & 1) {
        buf_adds(b, " WHERE owner = ");
        param(s, d, int_value(q->owner));
    }
    if (shape & 2)
        list_bound(s, d, shape & 1 ? " AND " : " WHERE ", "<", q->after_created, q->after_code);
    buf_adds(b, LIST_ORDER " LIMIT 1 OFFSET ");
    param(s, d, int_value(rows > 0 ? rows - 1 : 0));
}

/* ---- moving tables ---- */

void sqlgen_cols(struct buf *b, const struct store_table *t, int from, int to, const char *prefix)
{
    for (int i = from; i < to; i++)
        buf_printf(b, "%s%s%s", i > from ? ", " : "", prefix, t->cols[i].name);
}

void sqlgen_export(struct buf *b, const struct store_table *t)
{
    buf_adds(b, "SELECT ");
    sqlgen_cols(b, t, 0, t->ncols, "");
    buf_printf(b, " FROM %s ORDER BY ", t->name);
    sqlgen_cols(b, t, 0, t->nkeys, "");
}

void sqlgen_count(struct buf *b, const struct sql_dialect *d, const struct store_table *t)
{
    buf_adds(b, "SELECT count(*)");
    for (int i = 0; i < 2; i++)
        buf_printf(b, ", coalesce(sum(%s), 0)%s", t->sum[i] ? t->sum[i] : "0", d->sum_cast);
    buf_printf(b, " FROM %s", t->name);
}

void sqlgen_key_bound(struct buf *b, const struct sql_dialect *d, const struct store_table *t,
                      const char *prefix, const char *op, int first)
{
    buf_adds(b, " AND (");
    sqlgen_cols(b, t, 0, t->nkeys, prefix);
    buf_printf(b, ") %s (", op);
    for (int i = 0; i < t->nkeys; i++) {
        buf_printf(b, "%s%c%d", i ? ", " : "", d->param, first + i);
        if (d->param_type)
            buf_printf(b, "::%s", d->param_type[t->cols[i].type]);
    }
    buf_adds(b, ")");
}

void sqlgen_upsert(struct buf *b, const struct sql_dialect *d, const struct store_table *t)
{
    buf_adds(b, " ON CONFLICT (");
    sqlgen_cols(b, t, 0, t->nkeys, "");
    if (t->ncols == t->nkeys) {
        buf_adds(b, ") DO NOTHING");
        return;
    }
    buf_adds(b, ") DO UPDATE SET ");
    for (int i = t->nkeys; i < t->ncols; i++)
        buf_printf(b, "%s%s = excluded.%s", i > t->nkeys ? ", " : "", t->cols[i].name,
                   t->cols[i].name);
    buf_adds(b, " WHERE (");
    sqlgen_cols(b, t, t->nkeys, t->ncols, d->upsert_row);
    buf_printf(b, ") %s (", d->distinct);
    sqlgen_cols(b, t, t->nkeys, t->ncols, "excluded.");
    buf_adds(b, ")");
}
