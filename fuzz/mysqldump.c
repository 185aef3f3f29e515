/* mysqldump.c (fuzz) - the mysqldump INSERT reader (import/mysqldump.h) on
 * any bytes.
 *
 * The input is a dump; its first byte is the size of the pieces it is fed
 * in the second time (1-256 bytes). Besides surviving it, the reader must
 * keep its promises: values NUL-terminated at their length, NULL values
 * empty, rows numbered from 1 in their statement, lines within the input and
 * never going back; and the same rows and reports whatever the pieces, as a
 * push parser may stop anywhere. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "import/mysqldump.h"
#include "base/banned.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

struct run {
    struct buf log; /* every row and report, written out */
    int64_t last_line;
    int64_t lines; /* newlines in the input + 1 */
};

static int on_row(void *ctx, const struct mysql_row *row)
{
    struct run *r = ctx;
    check(row->line >= r->last_line && row->line <= r->lines);
    check(row->index >= 1);
    check(row->nvalues <= MYSQLDUMP_VALUES_MAX && row->ncolumns <= MYSQLDUMP_VALUES_MAX);
    check((row->columns != NULL) == (row->ncolumns > 0));
    r->last_line = row->line;
    buf_printf(&r->log, "row %s %lld %lld %zu:", row->table, (long long)row->line,
               (long long)row->index, row->ncolumns);
    for (size_t i = 0; i < row->ncolumns; i++)
        buf_printf(&r->log, " %s", row->columns[i]);
    for (size_t i = 0; i < row->nvalues; i++) {
        const struct mysql_value *v = &row->values[i];
        check(v->p[v->n] == '\0');
        check(v->n <= MYSQLDUMP_VALUE_MAX);
        check(!v->null || (v->n == 0 && !v->string));
        buf_printf(&r->log, "|%d%d%zu:", v->null, v->string, v->n);
        buf_add(&r->log, v->p, v->n);
    }
    buf_addc(&r->log, '\n');
    return ERR_OK;
}

static void on_bad(void *ctx, int64_t line, const char *why)
{
    struct run *r = ctx;
    check(line >= r->last_line && line <= r->lines);
    check(why && *why);
    r->last_line = line;
    buf_printf(&r->log, "bad %lld %s\n", (long long)line, why);
}

static void parse(struct run *r, const char *p, size_t n, size_t piece)
{
    struct mysqldump_calls calls = {.row = on_row, .bad = on_bad, .ctx = r};
    struct mysqldump *d = mysqldump_new(&calls);
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        check(mysqldump_feed(d, p + off, k) == ERR_OK);
    }
    mysqldump_finish(d);
    check(mysqldump_line(d) == r->lines);
    mysqldump_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    size_t piece = (size_t)data[0] + 1;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    int64_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += p[i] == '\n';

    struct run whole = {.log = BUF_INIT, .lines = lines};
    struct run pieces = {.log = BUF_INIT, .lines = lines};
    parse(&whole, p, n, n ? n : 1);
    parse(&pieces, p, n, piece);
    check(whole.log.len == pieces.log.len);
    check(whole.log.len == 0 || memcmp(whole.log.p, pieces.log.p, whole.log.len) == 0);
    buf_release(&whole.log);
    buf_release(&pieces.log);
    return 0;
}
