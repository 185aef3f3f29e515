/* csvread.c - CSV records over libcsv (Debian's libcsv3), which does the
 * quoting rules; this file only turns its callbacks into an iterator and
 * counts lines. libcsv is fed a line at a time: a line end outside quotes
 * ends a record (CSV_REPALL_NL reports even blank ones, which are dropped),
 * so the record in progress always started on the first line fed since the
 * last record ended. */
#include "import/csvread.h"

#include <csv.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/banned.h"

struct csvread {
    FILE *f;
    bool own; /* not stdin */
    struct csv_parser p;
    char *line; /* getline's buffer */
    size_t cap;
    int64_t lineno;     /* lines fed */
    int64_t start;      /* line the record in progress started on, 0: none */
    struct buf arena;   /* fields of the records ready, NUL-terminated */
    size_t *off, *lens; /* each field's offset in arena and length */
    size_t nfields, fcap;
    /* Records ready: their first field, field count and line */
    struct ready {
        size_t first, n;
        int64_t line;
    } * rec;
    size_t nrec, rcap, next; /* records ready and the next to hand out */
    size_t rec_first;        /* first field of the record in progress */
    const char **ptrs;       /* what csv_record.field points at */
    size_t pcap;
    uint64_t size;
    bool eof;
    char error[160];
};

static void on_field(void *s, size_t len, void *arg)
{
    struct csvread *r = arg;
    if (r->nfields == r->fcap) {
        r->fcap = r->fcap ? 2 * r->fcap : 64;
        r->off = realloc(r->off, r->fcap * sizeof(*r->off));
        r->lens = realloc(r->lens, r->fcap * sizeof(*r->lens));
        if (!r->off || !r->lens)
            abort();
    }
    const char *p = s ? s : "";
    size_t n = strnlen(p, len);
    r->off[r->nfields] = r->arena.len;
    r->lens[r->nfields++] = n;
    buf_add(&r->arena, p, n);
    buf_addc(&r->arena, '\0');
}

static void on_record(int c, void *arg)
{
    struct csvread *r = arg;
    (void)c;
    size_t n = r->nfields - r->rec_first;
    if (n) {
        if (r->nrec == r->rcap) {
            r->rcap = r->rcap ? 2 * r->rcap : 16;
            r->rec = realloc(r->rec, r->rcap * sizeof(*r->rec));
            if (!r->rec)
                abort();
        }
        r->rec[r->nrec++] = (struct ready){r->rec_first, n, r->start ? r->start : r->lineno};
    }
    r->rec_first = r->nfields;
    r->start = 0;
}

struct csvread *csvread_from(FILE *f)
{
    struct csvread *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    r->f = f;
    struct stat sb;
    if (fstat(fileno(r->f), &sb) == 0 && S_ISREG(sb.st_mode))
        r->size = (uint64_t)sb.st_size;
    if (csv_init(&r->p, CSV_REPALL_NL) != 0)
        abort();
    buf_init(&r->arena);
    return r;
}

int csvread_open(const char *path, struct csvread **out)
{
    if (!strcmp(path, "-")) {
        *out = csvread_from(stdin);
        return ERR_OK;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return ERR_IO;
    *out = csvread_from(f);
    (*out)->own = true;
    return ERR_OK;
}

void csvread_free(struct csvread *r)
{
    if (!r)
        return;
    if (r->own && r->f)
        fclose(r->f);
    csv_free(&r->p);
    free(r->line);
    buf_release(&r->arena);
    free(r->off);
    free(r->lens);
    free(r->rec);
    free(r->ptrs);
    free(r);
}

/* Drops the records handed out, keeping the one in progress. */
static void compact(struct csvread *r)
{
    size_t keep = r->nfields - r->rec_first;
    size_t from = keep ? r->off[r->rec_first] : r->arena.len;
    size_t bytes = r->arena.len - from;
    if (bytes)
        memmove(r->arena.p, r->arena.p + from, bytes);
    buf_truncate(&r->arena, bytes);
    for (size_t i = 0; i < keep; i++) {
        r->off[i] = r->off[r->rec_first + i] - from;
        r->lens[i] = r->lens[r->rec_first + i];
    }
    r->nfields = keep;
    r->rec_first = 0;
    r->nrec = r->next = 0;
}

int csvread_next(struct csvread *r, struct csv_record *rec)
{
    if (r->next == r->nrec)
        compact(r);
    while (r->next == r->nrec && !r->eof) {
        errno = 0;
        ssize_t n = getline(&r->line, &r->cap, r->f);
        if (n < 0) {
            if (ferror(r->f)) {
                snprintf(r->error, sizeof(r->error), "cannot read line %lld: %s",
                         (long long)r->lineno + 1, strerror(errno ? errno : EIO));
                return -1;
            }
            r->eof = true;
            csv_fini(&r->p, on_field, on_record, r);
            break;
        }
        r->lineno++;
        if (!r->start)
            r->start = r->lineno;
        if (csv_parse(&r->p, r->line, (size_t)n, on_field, on_record, r) != (size_t)n) {
            snprintf(r->error, sizeof(r->error), "line %lld: %s", (long long)r->lineno,
                     csv_strerror(csv_error(&r->p)));
            return -1;
        }
    }
    if (r->next == r->nrec)
        return 0;
    struct ready *x = &r->rec[r->next++];
    if (x->n > r->pcap) {
        r->pcap = x->n;
        r->ptrs = realloc(r->ptrs, r->pcap * sizeof(*r->ptrs));
        if (!r->ptrs)
            abort();
    }
    for (size_t i = 0; i < x->n; i++)
        r->ptrs[i] = r->arena.p + r->off[x->first + i];
    rec->field = r->ptrs;
    rec->len = r->lens + x->first;
    rec->n = x->n;
    rec->line = x->line;
    return 1;
}

const char *csvread_error(const struct csvread *r) { return r->error; }

uint64_t csvread_offset(const struct csvread *r)
{
    off_t o = ftello(r->f);
    return o > 0 ? (uint64_t)o : 0;
}

uint64_t csvread_size(const struct csvread *r) { return r->size; }

int csv_column(const struct csv_record *header, const char *name)
{
    size_t want = strlen(name);
    for (size_t i = 0; i < header->n; i++) {
        const char *p = header->field[i];
        size_t n = header->len[i];
        /* A UTF-8 byte order mark before the first name is no part of it */
        if (i == 0 && n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) {
            p += 3;
            n -= 3;
        }
        while (n && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == want && !strncasecmp(p, name, n))
            return (int)i;
    }
    return -1;
}
