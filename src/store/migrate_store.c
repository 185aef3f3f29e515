/* migrate_store.c - copies one store into another, table by table, through
 * the export_rows / import_rows pair of store.h, then counts both.
 *
 * DESIGN
 * The source streams each table's rows in key order into a batch; every
 * batch_rows rows (2000 unless told) go to the target in a transaction of its
 * own, with the key of the previous batch's last row, so a mirror table loses
 * exactly the rows between the two that the source no longer has. Memory is
 * one batch, whatever the size of a table. Every write is an upsert that
 * leaves equal rows alone, so a rerun writes only what changed, and an
 * interrupted run is finished by running again. meta goes first: the secrets
 * that API keys and codes were made with arrive before the keys and codes.
 * Nothing here knows SQL; the backends do. */
#include "store/migrate_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

/* Rows read but not yet written, with copies of their bytes. */
struct batch {
    struct store *to;
    int table;
    const struct store_table *t;
    size_t max;               /* rows per batch */
    struct store_value *rows; /* max * ncols */
    size_t *off;              /* where each text or blob starts in 'bytes' */
    struct buf bytes;
    size_t n;
    struct store_value after[TABLE_KEYS_MAX]; /* the key of the last row written */
    struct buf after_bytes;
    bool has_after;
    struct migrate_table *res;
    migrate_progress_fn progress;
    void *arg;
    int rc; /* the first error, which stops the export */
};

static bool has_bytes(const struct store_value *v)
{
    return v->type == VAL_TEXT || v->type == VAL_BLOB;
}

/* Copies 'n' values into 'dst', their bytes into 'bytes' (NUL-terminated)
 * at the offsets kept in 'off'; the pointers are set by point_at. */
static void copy_values(struct store_value *dst, size_t *off, struct buf *bytes,
                        const struct store_value *src, int n)
{
    for (int i = 0; i < n; i++) {
        dst[i] = src[i];
        if (!has_bytes(&src[i]))
            continue;
        off[i] = bytes->len;
        buf_add(bytes, src[i].p, src[i].n);
        buf_addc(bytes, '\0');
        dst[i].p = NULL;
    }
}

/* Points the text and blob values at their bytes, once 'bytes' stops moving. */
static void point_at(struct store_value *v, const size_t *off, const struct buf *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (has_bytes(&v[i]))
            v[i].p = bytes->p + off[i];
}

/* Writes the batch in one transaction; 'to_end' for the last one of a table. */
static int batch_write(struct batch *b, bool to_end)
{
    struct store *to = b->to;
    int ncols = b->t->ncols;
    point_at(b->rows, b->off, &b->bytes, b->n * (size_t)ncols);
    int64_t written = 0;
    int rc = to->ops->begin(to);
    if (rc == ERR_OK)
        rc = to->ops->import_rows(to, b->table, b->rows, b->n, b->has_after ? b->after : NULL,
                                  to_end, &written);
    if (rc == ERR_OK)
        rc = to->ops->commit(to);
    else
        to->ops->rollback(to);
    if (rc != ERR_OK)
        return log_fail(rc, "cannot write the rows of '%s' to the target", b->t->name);
    b->res->written += written;
    if (b->n) {
        size_t off[TABLE_KEYS_MAX];
        buf_reset(&b->after_bytes);
        copy_values(b->after, off, &b->after_bytes, b->rows + (b->n - 1) * (size_t)ncols,
                    b->t->nkeys);
        point_at(b->after, off, &b->after_bytes, (size_t)b->t->nkeys);
        b->has_after = true;
    }
    b->n = 0;
    buf_reset(&b->bytes);
    if (b->progress)
        b->progress(b->t->name, b->res->copied, false, b->arg);
    return ERR_OK;
}

static int batch_add(const struct store_value *row, void *arg)
{
    struct batch *b = arg;
    size_t at = b->n * (size_t)b->t->ncols;
    copy_values(b->rows + at, b->off + at, &b->bytes, row, b->t->ncols);
    b->n++;
    b->res->copied++;
    if (b->n == b->max)
        b->rc = batch_write(b, false);
    return b->rc != ERR_OK;
}

static int copy_table(struct store *from, struct store *to, int table, size_t batch_rows,
                      struct migrate_table *res, migrate_progress_fn progress, void *arg)
{
    const struct store_table *t = &store_tables[table];
    struct batch b = {.to = to,
                      .table = table,
                      .t = t,
                      .max = batch_rows,
                      .res = res,
                      .progress = progress,
                      .arg = arg,
                      .rc = ERR_OK};
    b.rows = calloc(batch_rows * (size_t)t->ncols, sizeof(*b.rows));
    b.off = calloc(batch_rows * (size_t)t->ncols, sizeof(*b.off));
    if (!b.rows || !b.off)
        abort();
    int rc = from->ops->export_rows(from, table, batch_add, &b);
    if (rc != ERR_OK)
        log_at(LOG_ERROR, "cannot read '%s' from the source", t->name);
    else
        rc = b.rc;
    /* The last batch also removes, from a mirror table, what lies after it. */
    if (rc == ERR_OK)
        rc = batch_write(&b, true);
    if (rc == ERR_OK && progress)
        progress(t->name, res->copied, true, arg);
    free(b.rows);
    free(b.off);
    buf_release(&b.bytes);
    buf_release(&b.after_bytes);
    return rc;
}

/* ---- may the target be written? ---- */

/* Whether both stores hold the same value (or none) under meta 'key'. */
static int same_meta(struct store *a, struct store *b, const char *key, bool *same)
{
    struct buf va = BUF_INIT, vb = BUF_INIT;
    int ra = a->ops->meta_get(a, key, &va);
    int rb = b->ops->meta_get(b, key, &vb);
    int rc = ERR_OK;
    if ((ra != ERR_OK && ra != ERR_NOTFOUND) || (rb != ERR_OK && rb != ERR_NOTFOUND))
        rc = ERR_STORAGE;
    else if (ra != rb)
        *same = false;
    else
        *same = va.len == vb.len && (!va.len || memcmp(va.p, vb.p, va.len) == 0);
    buf_release(&va);
    buf_release(&vb);
    return rc;
}

struct ckpt_check {
    struct store *from;
    char key[128]; /* a checkpoint only the target has */
    int rc;
};

/* A journal checkpoint ("journal_pos", "journal_pos:ID") in the target that
 * the source lacks was written by a node serving the target. */
static int ckpt_row(const struct store_value *row, void *arg)
{
    struct ckpt_check *c = arg;
    if (row[0].type != VAL_TEXT || strncmp(row[0].p, "journal_pos", 11) != 0)
        return 0;
    struct buf v = BUF_INIT;
    int rc = c->from->ops->meta_get(c->from, row[0].p, &v);
    buf_release(&v);
    if (rc == ERR_NOTFOUND)
        snprintf(c->key, sizeof(c->key), "%s", row[0].p);
    else if (rc != ERR_OK)
        c->rc = rc;
    return rc != ERR_OK;
}

static int check_target(struct store *from, struct store *to, char *why, size_t whylen)
{
    struct table_count links, keys;
    int rc = to->ops->table_count(to, TABLE_LINKS, &links);
    if (rc == ERR_OK)
        rc = to->ops->table_count(to, TABLE_API_KEYS, &keys);
    static const char *const secrets[] = {"code_key", "key_secret"};
    for (int i = 0; rc == ERR_OK && (links.rows || keys.rows) && i < 2; i++) {
        bool same = true;
        rc = same_meta(from, to, secrets[i], &same);
        if (rc == ERR_OK && !same) {
            snprintf(why, whylen,
                     "the target already holds %lld links and %lld API keys, "
                     "made under secrets other than the source's; copy into a new database "
                     "(prepared by shortd migrate) or one that only migrate-store has written",
                     (long long)links.rows, (long long)keys.rows);
            return ERR_INVALID;
        }
    }
    struct ckpt_check c = {.from = from, .rc = ERR_OK};
    if (rc == ERR_OK)
        rc = to->ops->export_rows(to, TABLE_META, ckpt_row, &c);
    if (rc == ERR_OK)
        rc = c.rc;
    if (rc == ERR_OK && c.key[0]) {
        snprintf(why, whylen,
                 "the target holds the click checkpoint '%s', which the source "
                 "does not: a node has served the target and counted clicks into it, and a "
                 "copy would overwrite them",
                 c.key);
        return ERR_INVALID;
    }
    if (rc != ERR_OK)
        return log_fail(rc, "cannot read what the target already holds");
    return ERR_OK;
}

/* ---- the copy ---- */

/* Link days the source appended and has not compacted yet (store_stats.h,
 * "Appending") are merged into its day rows first: the copy moves day rows. */
static int compact_source(struct store *st)
{
    if (!st->ops->days_compact)
        return ERR_OK;
    size_t rows = 0;
    do {
        int rc = st->ops->begin(st);
        if (rc == ERR_OK)
            rc = st->ops->days_compact(st, INT64_MAX, 4096, NULL, NULL, &rows);
        if (rc == ERR_OK)
            rc = st->ops->commit(st);
        else
            st->ops->rollback(st);
        if (rc != ERR_OK)
            return log_fail(rc, "cannot merge the source's appended clicks into its day rows");
    } while (rows);
    return ERR_OK;
}

int migrate_store(struct store *from, struct store *to, size_t batch_rows,
                  migrate_progress_fn progress, void *arg, struct migrate_result *out, char *why,
                  size_t whylen)
{
    memset(out, 0, sizeof(*out));
    if (!batch_rows)
        batch_rows = MIGRATE_BATCH_ROWS;
    int rc = check_target(from, to, why, whylen);
    if (rc == ERR_OK)
        rc = compact_source(from);
    for (int i = 0; rc == ERR_OK && i < TABLE__COUNT; i++)
        rc = copy_table(from, to, i, batch_rows, &out->t[i], progress, arg);
    for (int i = 0; rc == ERR_OK && i < TABLE__COUNT; i++) {
        rc = from->ops->table_count(from, i, &out->t[i].from);
        if (rc == ERR_OK)
            rc = to->ops->table_count(to, i, &out->t[i].to);
    }
    return rc;
}

bool migrate_store_verified(const struct migrate_result *r)
{
    for (int i = 0; i < TABLE__COUNT; i++) {
        const struct table_count *a = &r->t[i].from, *b = &r->t[i].to;
        if (a->rows != b->rows || a->sum[0] != b->sum[0] || a->sum[1] != b->sum[1])
            return false;
    }
    return true;
}
