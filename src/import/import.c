/* import.c - the import sink: checks each record a reader hands over,
 * applies the conflict rule, re-counts visits through the click pipeline's
 * own classification and writes through the store in large transactions.
 *
 * DESIGN
 * Codes: every code the source gives is remembered for the run (a hash
 * table of code → what became of it), so a visit or tally of a code the
 * source never gave is refused, one of a link that was there already is
 * dropped, and a code given twice is refused the second time.
 *
 * Totals and crashes: a new link is inserted with its source totals as
 * imported totals (link_imported), in the transaction of its insert. Its
 * visits and tallies are folded into day rows per (code, day) in memory and
 * stored with agg_days when the transaction commits; the same transaction
 * takes as many clicks back from the link's imported totals as its days
 * gained (never more than there are). So at every commit a link's all-time
 * total is its source's (or more, when the visits outnumber it), and a run
 * killed at any point and run again counts no visit twice: the rerun finds
 * the link there with the same destination and drops its visits. What the
 * killed run had not stored of its history stays in the imported totals.
 *
 * Transactions: 'batch_rows' records each (links, visits, tallies alike;
 * records that write nothing yet, such as visits folded in memory, open
 * none), which also bumps the change generation so serving nodes drop
 * their caches and answer the new codes at once. The import's store work
 * is bulk work (store_bulk): the backend may keep a large cache for it.
 * Day rows of links this run inserted, on days it has not stored yet, go
 * to agg_days marked fresh: inserted without reading them first. A dry run does everything but the
 * writes; --on-conflict fail runs one dry pass first and writes only when it
 * found no conflict.
 *
 * History larger than memory: when the folded days reach DAYS_HELD or
 * FOLDS_HELD, they are sorted and written as a run to a temporary file
 * (in TMPDIR, deleted as it is made) instead of being stored. At the end
 * the runs are merged in key order, each link day's parts added up
 * (dayrow_add, the same sum the store's merge makes), and stored once, in
 * order. A source whose log is not in link order (YOURLS's is in time
 * order, a link's visits spread over the whole of it) would otherwise
 * rewrite day rows all over the store at every flush: the bytes written,
 * not the work, bounded the import (bench/HISTORY.md, issue 26). A killed
 * run stores none of the history it held, which its links' imported
 * totals then still count, as above. */
#include "import/import.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/router.h"
#include "base/buf.h"
#include "base/bump.h"
#include "base/err.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/timeutil.h"
#include "clicks/aggregate.h"
#include "clicks/classify.h"
#include "clicks/dayrow.h"
#include "clicks/event.h"
#include "links/codes.h"
#include "links/links.h"
#include "links/urlcheck.h"
#include "store/store.h"
#include "base/banned.h"

/* What became of a code of the source */
enum fate {
    FATE_NEW,      /* inserted by this run: its visits count */
    FATE_THERE,    /* the store had it with the same destination */
    FATE_CONFLICT, /* the store had it with another (kept, or replaced) */
    FATE_REFUSED,  /* the record was refused */
};

struct code_ent {
    char *code;
    uint8_t fate;
    int64_t line;        /* where the source first gave it */
    int64_t remain;      /* imported clicks not yet taken back by days ... */
    int64_t remain_bots; /* ... and bot clicks (bot days take these first) */
    /* The days of it this run stored, as a range (a log in time order
     * stores each link's days in order): a link day outside it has no row
     * yet if this run inserted the link, so agg_days needs not read it */
    int64_t days_lo, days_hi;
    bool days_stored;
};

/* Link days folded in memory before they are stored, and records folded
 * into them: each record may add a newest click (about 540 bytes, up to
 * RECENT_KEEP a link day) and tally values, so the second bounds the
 * memory held to a few hundred megabytes whatever the source's shape. */
#define DAYS_HELD 100000
#define FOLDS_HELD 400000

/* Link days a transaction of store_days, in batch_rows: a store page holds
 * the rows of several link days, and each commit writes every page it
 * changed to the WAL again, so fewer, larger day transactions write each
 * page fewer times. A serving node's writer waits for each one. */
#define DAYS_TX_BATCHES 10

/* One link day being folded */
struct iday {
    struct code_ent *ent;
    int64_t day;
    struct dayrow row;
    struct iday *next_in_slot;
};

struct import_sink {
    struct store *st;
    struct links *links;
    const struct import_opts *o;
    struct import_summary *sum;
    bool write; /* false: a dry run (or the dry pass of --on-conflict fail) */
    int64_t now;
    struct classify *cl;
    const char *const *reserved;

    /* Open addressing over entries that never move (day rows point at
     * them), allocated with their code from 'code_mem' */
    struct code_ent **codes;
    size_t ncodes, codes_cap; /* cap a power of two */
    struct bump *code_mem;

    struct bump *mem; /* iday and their rows, cleared at each commit */
    struct iday **days;
    size_t ndays, days_cap;
    size_t folds; /* visits and tallies folded into them */

    /* Folded days written out, sorted, when memory was full (see DESIGN) */
    FILE **runs;
    size_t nruns;
    uint64_t spilled, spilled_bytes; /* link days in them, and their size */
    struct buf enc[3];

    bool in_tx;
    size_t rows;         /* records in the open transaction */
    struct buf replaced; /* codes the open transaction replaced, each NUL-ended */
    int failed;          /* the store's error that stopped the import */
    int64_t records;
    struct progress *pg;
};

/* ---- the code table ---- */

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static struct code_ent *code_find(struct import_sink *s, const char *code, bool add)
{
    if (add && (s->ncodes + 1) * 4 > s->codes_cap * 3) {
        size_t cap = s->codes_cap ? 2 * s->codes_cap : 1024;
        struct code_ent **t = calloc(cap, sizeof(*t));
        if (!t)
            abort();
        for (size_t i = 0; i < s->codes_cap; i++) {
            if (!s->codes[i])
                continue;
            size_t j = hash_str(s->codes[i]->code, strlen(s->codes[i]->code)) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = s->codes[i];
        }
        free(s->codes);
        s->codes = t;
        s->codes_cap = cap;
    }
    if (!s->codes_cap)
        return NULL;
    size_t n = strlen(code);
    size_t j = hash_str(code, n) & (s->codes_cap - 1);
    while (s->codes[j]) {
        if (!strcmp(s->codes[j]->code, code))
            return s->codes[j];
        j = (j + 1) & (s->codes_cap - 1);
    }
    if (!add)
        return NULL;
    struct code_ent *e = bump_alloc(s->code_mem, sizeof(*e) + n + 1);
    memset(e, 0, sizeof(*e));
    e->code = (char *)(e + 1);
    memcpy(e->code, code, n + 1);
    s->codes[j] = e;
    s->ncodes++;
    return e;
}

/* ---- reporting ---- */

static void where_text(struct import_where w, char *out, size_t n)
{
    if (w.table)
        snprintf(out, n, "%s row %lld", w.table, (long long)w.n);
    else if (w.n)
        snprintf(out, n, "line %lld", (long long)w.n);
    else
        snprintf(out, n, "source");
}

static void say(struct import_sink *s, struct import_where w, const char *what, const char *fmt,
                va_list ap)
{
    if (s->o->quiet)
        return;
    char place[96];
    where_text(w, place, sizeof(place));
    progress_clear(s->pg);
    fprintf(stderr, "import: %s: %s", place, what);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void import_refuse(struct import_sink *s, struct import_where where, const char *fmt, ...)
{
    s->sum->refused++;
    va_list ap;
    va_start(ap, fmt);
    say(s, where, "refused: ", fmt, ap);
    va_end(ap);
}

static void conflict(struct import_sink *s, struct import_where where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void conflict(struct import_sink *s, struct import_where where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(s, where, "conflict: ", fmt, ap);
    va_end(ap);
}

void import_progress(struct import_sink *s, uint64_t done, uint64_t total)
{
    progress_update(s->pg, done, total);
}

void import_progress_unit(struct import_sink *s, const char *unit)
{
    progress_set_unit(s->pg, unit);
}

/* ---- transactions ---- */

static int cmp_iday(const void *a, const void *b)
{
    const struct iday *x = *(struct iday *const *)a, *y = *(struct iday *const *)b;
    int c = strcmp(x->ent->code, y->ent->code);
    if (c)
        return c;
    return x->day < y->day ? -1 : x->day > y->day;
}

/* How much of a link's imported totals days of 'clicks' and 'bots' account
 * for: clicks take imported clicks; bots take imported bot clicks, and once
 * those are gone, imported clicks (a source whose total counts everyone). */
static void take_back(const struct code_ent *e, int64_t clicks, int64_t bots, int64_t *back,
                      int64_t *back_bots)
{
    *back_bots = bots < e->remain_bots ? bots : e->remain_bots;
    int64_t rest = clicks + bots - *back_bots;
    *back = rest < e->remain ? rest : e->remain;
}

static void days_clear(struct import_sink *s)
{
    for (size_t i = 0; i < s->days_cap; i++)
        for (struct iday *d = s->days[i]; d; d = d->next_in_slot)
            dayrow_release(&d->row);
    if (s->days)
        memset(s->days, 0, s->days_cap * sizeof(*s->days));
    s->ndays = 0;
    s->folds = 0;
    bump_clear(s->mem);
}

static size_t batch_max(const struct import_sink *s)
{
    return s->o->batch_rows ? s->o->batch_rows : IMPORT_BATCH_ROWS;
}

/* Commits the open transaction, telling serving nodes of its links. */
static int commit_tx(struct import_sink *s)
{
    int rc = store_generation_bump(s->st);
    if (rc == ERR_OK)
        rc = s->st->ops->commit(s->st);
    else
        s->st->ops->rollback(s->st);
    s->in_tx = false;
    s->rows = 0;
    for (size_t at = 0; rc == ERR_OK && s->o->replaced && at < s->replaced.len;
         at += strlen(s->replaced.p + at) + 1)
        s->o->replaced(s->replaced.p + at, s->o->replaced_arg);
    buf_reset(&s->replaced);
    if (rc != ERR_OK && !s->failed)
        s->failed = log_fail(rc, "the import's transaction failed: %s", err_str(rc));
    return rc;
}

/* The folded days, sorted by code and day (the caller frees the array). */
static struct iday **days_sorted(struct import_sink *s)
{
    struct iday **v = malloc((s->ndays ? s->ndays : 1) * sizeof(*v));
    if (!v)
        abort();
    size_t n = 0;
    for (size_t i = 0; i < s->days_cap; i++)
        for (struct iday *d = s->days[i]; d; d = d->next_in_slot)
            v[n++] = d;
    qsort(v, n, sizeof(*v), cmp_iday);
    return v;
}

/* Stores 'n' link days sorted as agg_days wants them: DAYS_TX_BATCHES
 * times batch_rows link days a transaction (the first in the open one, if
 * any), each also taking what its days gained back from their links'
 * imported totals. A dry run only counts what a real one would take back. */
static int store_sorted(struct import_sink *s, struct iday **v, size_t n)
{
    struct day_delta *dd = malloc((n ? n : 1) * sizeof(*dd));
    if (!dd)
        abort();
    for (size_t i = 0; i < n; i++) {
        const struct code_ent *e = v[i]->ent;
        int64_t day = v[i]->day;
        bool fresh = e->fate == FATE_NEW &&
                     (!e->days_stored || day < e->days_lo || day > e->days_hi);
        dd[i] = (struct day_delta){e->code, day, &v[i]->row, fresh};
    }
    int rc = ERR_OK;
    for (size_t at = 0; rc == ERR_OK && at < n;) {
        size_t tx = DAYS_TX_BATCHES * batch_max(s);
        size_t end = at + tx < n ? at + tx : n;
        if (s->write && !s->in_tx) {
            rc = s->st->ops->begin(s->st);
            s->in_tx = rc == ERR_OK;
        }
        if (rc == ERR_OK && s->write)
            rc = s->st->ops->agg_days(s->st, dd + at, end - at);
        while (rc == ERR_OK && at < end) {
            struct code_ent *e = v[at]->ent;
            int64_t clicks = 0, bots = 0;
            for (; at < end && v[at]->ent == e; at++) {
                clicks += v[at]->row.clicks;
                bots += v[at]->row.bots;
                int64_t day = v[at]->day;
                e->days_lo = e->days_stored && e->days_lo < day ? e->days_lo : day;
                e->days_hi = e->days_stored && e->days_hi > day ? e->days_hi : day;
                e->days_stored = true;
            }
            int64_t back = 0, back_bots = 0;
            take_back(e, clicks, bots, &back, &back_bots);
            if (s->write && (back || back_bots))
                rc = s->st->ops->link_imported(s->st, e->code, -back, -back_bots);
            e->remain -= back;
            e->remain_bots -= back_bots;
        }
        if (s->in_tx && rc == ERR_OK) {
            rc = commit_tx(s);
        } else if (s->in_tx) {
            s->st->ops->rollback(s->st);
            s->in_tx = false;
        }
    }
    free(dd);
    if (rc != ERR_OK && !s->failed)
        s->failed = log_fail(rc, "the import's transaction failed: %s", err_str(rc));
    return rc;
}

/* Stores the folded days and forgets them. */
static int store_days(struct import_sink *s)
{
    if (!s->ndays)
        return ERR_OK;
    struct iday **v = days_sorted(s);
    int rc = store_sorted(s, v, s->ndays);
    free(v);
    days_clear(s);
    return rc;
}

/* ---- runs: folded days in temporary files ---- */

/* A run's record: its link day and counts, then the three blobs of
 * dayrow_encode. The entry is a pointer into this process's code table,
 * which never moves and outlives the runs. */
struct run_rec {
    struct code_ent *ent;
    int64_t day, clicks, bots, uniques;
    uint32_t ndims, nvisitors, nrecent;
};

static FILE *run_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/shortd-import-XXXXXX", dir && *dir ? dir : "/tmp");
    if (n < 0 || (size_t)n >= sizeof(path))
        return NULL;
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path);
    FILE *f = fdopen(fd, "w+");
    if (!f)
        close(fd);
    return f;
}

static bool put(FILE *f, const void *p, size_t n) { return !n || fwrite(p, 1, n, f) == n; }

/* Writes the folded days, sorted, as a new run and forgets them. */
static int spill_days(struct import_sink *s)
{
    if (!s->ndays)
        return ERR_OK;
    FILE *f = run_file();
    if (!f)
        return s->failed = log_fail(ERR_IO,
                                    "cannot make a temporary file for the import's "
                                    "history (TMPDIR): %s",
                                    strerror(errno));
    struct iday **v = days_sorted(s);
    bool ok = true;
    for (size_t i = 0; ok && i < s->ndays; i++) {
        struct day_blobs b;
        dayrow_encode(&v[i]->row, &s->enc[0], &s->enc[1], &s->enc[2], &b);
        struct run_rec r = {v[i]->ent,
                            v[i]->day,
                            b.clicks,
                            b.bots,
                            b.uniques,
                            (uint32_t)b.ndims,
                            (uint32_t)b.nvisitors,
                            (uint32_t)b.nrecent};
        ok = put(f, &r, sizeof(r)) && put(f, b.dims, b.ndims) && put(f, b.visitors, b.nvisitors) &&
             put(f, b.recent, b.nrecent);
        s->spilled_bytes += sizeof(r) + b.ndims + b.nvisitors + b.nrecent;
    }
    s->spilled += s->ndays;
    free(v);
    days_clear(s);
    if (ok)
        ok = fflush(f) == 0 && fseek(f, 0, SEEK_SET) == 0;
    if (!ok) {
        fclose(f);
        return s->failed = log_fail(ERR_IO,
                                    "cannot write the import's history to a temporary "
                                    "file (TMPDIR): %s",
                                    strerror(errno));
    }
    s->runs = realloc(s->runs, (s->nruns + 1) * sizeof(*s->runs));
    if (!s->runs)
        abort();
    s->runs[s->nruns++] = f;
    return ERR_OK;
}

/* A run being read: its next record, whose blobs are in 'blob' */
struct run_head {
    FILE *f;
    bool has;
    struct run_rec r;
    struct buf blob;
};

/* Reads the run's next record, adding its size to 'read'. */
static int run_next(struct run_head *h, uint64_t *read)
{
    h->has = false;
    size_t got = fread(&h->r, sizeof(h->r), 1, h->f);
    if (got != 1)
        return ferror(h->f) ? ERR_IO : ERR_OK;
    size_t n = (size_t)h->r.ndims + h->r.nvisitors + h->r.nrecent;
    buf_reset(&h->blob);
    buf_reserve(&h->blob, n + 1);
    if (fread(h->blob.p, 1, n, h->f) != n)
        return ERR_IO;
    *read += sizeof(h->r) + n;
    h->has = true;
    return ERR_OK;
}

static struct day_blobs run_blobs(const struct run_head *h)
{
    const char *p = h->blob.p;
    return (struct day_blobs){h->r.clicks,
                              h->r.bots,
                              h->r.uniques,
                              h->r.ndims ? p : NULL,
                              h->r.nvisitors ? p + h->r.ndims : NULL,
                              h->r.nrecent ? p + h->r.ndims + h->r.nvisitors : NULL,
                              h->r.ndims,
                              h->r.nvisitors,
                              h->r.nrecent};
}

static int cmp_rec(const struct run_rec *a, const struct run_rec *b)
{
    int c = a->ent == b->ent ? 0 : strcmp(a->ent->code, b->ent->code);
    if (c)
        return c;
    return a->day < b->day ? -1 : a->day > b->day;
}

/* The end of a source that did not fit in memory: the days still folded
 * become the last run, then every run is merged in key order and each
 * link day stored once. Parts of a link day are added in the order their
 * runs were written, so its newest clicks stay in arrival order. */
static int store_runs(struct import_sink *s)
{
    int rc = spill_days(s);
    struct run_head *h = calloc(s->nruns, sizeof(*h));
    if (!h)
        abort();
    uint64_t read = 0;
    for (size_t i = 0; rc == ERR_OK && i < s->nruns; i++) {
        h[i].f = s->runs[i];
        rc = run_next(&h[i], &read);
    }
    size_t tx = DAYS_TX_BATCHES * batch_max(s);
    struct iday **v = malloc(tx * sizeof(*v));
    if (!v)
        abort();
    if (rc == ERR_OK)
        log_at(LOG_INFO,
               "import: storing the history: %llu parts of link days from %zu runs, %llu MB",
               (unsigned long long)s->spilled, s->nruns,
               (unsigned long long)(s->spilled_bytes >> 20));
    progress_phase(s->pg, "history", "bytes");
    size_t n = 0;
    while (rc == ERR_OK) {
        struct run_head *min = NULL;
        for (size_t i = 0; i < s->nruns; i++)
            if (h[i].has && (!min || cmp_rec(&h[i].r, &min->r) < 0))
                min = &h[i];
        if (!min) {
            rc = n ? store_sorted(s, v, n) : ERR_OK;
            break;
        }
        struct iday *d = bump_alloc(s->mem, sizeof(*d));
        d->ent = min->r.ent;
        d->day = min->r.day;
        dayrow_init_bump(&d->row, s->mem);
        struct run_rec key = min->r;
        for (size_t i = 0; rc == ERR_OK && i < s->nruns; i++) {
            if (!h[i].has || cmp_rec(&h[i].r, &key))
                continue;
            struct dayrow part;
            dayrow_init_bump(&part, s->mem);
            struct day_blobs b = run_blobs(&h[i]);
            if (dayrow_load(&part, &b) != ERR_OK)
                rc = log_fail(ERR_IO, "the import's temporary file is damaged");
            dayrow_add(&d->row, &part);
            if (rc == ERR_OK)
                rc = run_next(&h[i], &read);
        }
        v[n++] = d;
        if (rc == ERR_OK && n == tx) {
            rc = store_sorted(s, v, n);
            n = 0;
            bump_clear(s->mem);
            progress_update(s->pg, read, s->spilled_bytes);
        }
    }
    progress_update(s->pg, read, s->spilled_bytes);
    if (rc == ERR_IO && !s->failed)
        s->failed = log_fail(rc, "cannot read the import's history back from its temporary file");
    free(v);
    for (size_t i = 0; i < s->nruns; i++)
        buf_release(&h[i].blob);
    free(h);
    bump_clear(s->mem);
    return rc;
}

static void runs_close(struct import_sink *s)
{
    for (size_t i = 0; i < s->nruns; i++)
        fclose(s->runs[i]);
    free(s->runs);
    s->runs = NULL;
    s->nruns = 0;
}

/* Ends a transaction of batch_rows records. The days folded so far stay in
 * memory until there are DAYS_HELD of them or FOLDS_HELD records folded
 * (or the source ends), then go to a run (a dry run, which stores
 * nothing, only counts them): a store write per visit would be the
 * import's cost. Links are safe to commit before their days, since their
 * imported totals cover the days not stored yet. */
static int commit(struct import_sink *s)
{
    int rc = s->in_tx ? commit_tx(s) : ERR_OK;
    s->rows = 0;
    if (rc == ERR_OK &&
        (s->ndays >= (s->o->days_held ? s->o->days_held : DAYS_HELD) || s->folds >= FOLDS_HELD))
        rc = s->write ? spill_days(s) : store_days(s);
    return rc;
}

/* The end of the source: everything still held. */
static int finish(struct import_sink *s)
{
    int rc = s->in_tx ? commit_tx(s) : ERR_OK;
    if (rc == ERR_OK)
        rc = s->nruns ? store_runs(s) : store_days(s);
    return rc;
}

/* Opens a transaction if none is open, for a link's writes (visits and
 * tallies are only folded in memory until store_days). */
static int need_tx(struct import_sink *s)
{
    if (s->failed)
        return s->failed;
    if (!s->write || s->in_tx)
        return ERR_OK;
    int rc = s->st->ops->begin(s->st);
    if (rc != ERR_OK)
        return s->failed = log_fail(rc, "cannot begin the import's transaction");
    s->in_tx = true;
    return ERR_OK;
}

static int counted(struct import_sink *s)
{
    s->records++;
    if (++s->rows >= batch_max(s))
        return commit(s);
    return ERR_OK;
}

/* ---- links ---- */

static bool is_reserved(struct import_sink *s, const char *code)
{
    for (const char *const *r = s->reserved; *r; r++)
        if (!strcasecmp(*r, code))
            return true;
    return false;
}

/* Why 'l' cannot be a link, or NULL; its URL as stored goes to 'url'. */
static const char *check_link(struct import_sink *s, const struct import_link *l, struct buf *url,
                              char *why, size_t n)
{
    if (!l->code || !*l->code)
        return "no code";
    size_t len = strlen(l->code);
    if (!code_is_plausible(l->code, len)) {
        snprintf(why, n, "code '%.40s' is not 1 to %d of the characters 0-9 A-Z a-z _ -", l->code,
                 CODE_MAX);
        return why;
    }
    if (is_reserved(s, l->code)) {
        snprintf(why, n, "code '%s' is a reserved path of shortd", l->code);
        return why;
    }
    if (!l->url || !*l->url) {
        snprintf(why, n, "code '%s' has no destination", l->code);
        return why;
    }
    static const char *const no_hosts[] = {NULL};
    struct urlcheck_opts uo = {.self_hosts = no_hosts, .blocked = NULL};
    struct buf host = BUF_INIT;
    const char *uwhy = NULL;
    int rc = urlcheck(l->url, strlen(l->url), &uo, url, &host, &uwhy);
    buf_release(&host);
    if (rc != ERR_OK) {
        snprintf(why, n, "code '%s': destination %s", l->code, uwhy ? uwhy : "is not valid");
        return why;
    }
    if (l->domain && *l->domain) {
        const char *dwhy = NULL;
        if (links_domain_check(l->domain, strlen(l->domain), &dwhy) != ERR_OK) {
            snprintf(why, n, "code '%s': domain '%.80s' %s", l->code, l->domain, dwhy);
            return why;
        }
    }
    if (l->tags && *l->tags) {
        json_t *t = json_loads(l->tags, 0, NULL);
        bool ok = json_is_array(t);
        json_decref(t);
        if (!ok) {
            snprintf(why, n, "code '%s': tags are not a JSON array", l->code);
            return why;
        }
    }
    return NULL;
}

static int insert_link(struct import_sink *s, const struct import_link *l, const char *url)
{
    struct store *st = s->st;
    int rc;
    char domain[256] = "";
    if (l->domain && *l->domain) {
        snprintf(domain, sizeof(domain), "%s", l->domain);
        int64_t owner;
        rc = st->ops->domain_get(st, domain, &owner);
        if (rc == ERR_NOTFOUND) {
            rc = st->ops->domain_add(st, domain, s->o->owner, s->now);
            if (rc == ERR_OK || rc == ERR_EXISTS)
                s->sum->domains_added += rc == ERR_OK;
            rc = rc == ERR_EXISTS ? ERR_OK : rc;
        }
        if (rc != ERR_OK)
            return rc;
    }
    struct link k = {0};
    memcpy(k.code, l->code, strlen(l->code) + 1);
    k.owner = s->o->owner;
    k.url = (char *)url;
    k.title = (char *)(l->title && *l->title ? l->title : NULL);
    k.tags = (char *)(l->tags && *l->tags ? l->tags : NULL);
    k.created_at = l->created_at > 0 ? l->created_at * 1000 : s->now;
    k.expires_at = l->expires_at > 0 ? l->expires_at * 1000 : 0;
    k.changed_at = s->now;
    k.state = l->disabled ? LINK_DISABLED : LINK_ACTIVE;
    k.permanent = l->permanent;
    k.untracked = l->untracked;
    k.password = (char *)(l->password && *l->password ? l->password : NULL);
    k.domain = *domain ? domain : NULL;
    k.max_clicks = l->max_clicks > 0 ? l->max_clicks : 0;
    rc = st->ops->link_insert(st, &k);
    if (rc == ERR_OK && (l->clicks > 0 || l->bot_clicks > 0))
        rc = st->ops->link_imported(st, l->code, l->clicks > 0 ? l->clicks : 0,
                                    l->bot_clicks > 0 ? l->bot_clicks : 0);
    return rc;
}

static int replace_url(struct import_sink *s, struct link *old, const char *url,
                       const struct import_link *l, bool *done)
{
    struct link_patch p = {.fields = PATCH_URL};
    struct buf norm = BUF_INIT, host = BUF_INIT;
    const char *why = NULL;
    struct urlcheck_opts uo = {.self_hosts = NULL, .blocked = NULL};
    int rc = urlcheck(url, strlen(url), &uo, &norm, &host, &why);
    if (rc == ERR_OK) {
        p.url = buf_detach(&norm, NULL);
        p.host = buf_detach(&host, NULL);
        const char *field = NULL;
        rc = s->st->ops->savepoint(s->st);
        if (rc == ERR_OK) {
            rc = links_edit(s->links, s->st, old, &p, s->now, s->o->owner, &field);
            s->st->ops->savepoint_end(s->st, rc == ERR_OK);
        }
    }
    buf_release(&norm);
    buf_release(&host);
    link_patch_release(&p);
    *done = rc == ERR_OK;
    if (rc == ERR_FORBIDDEN || rc == ERR_INVALID || rc == ERR_MISMATCH) {
        import_refuse(s, l->where, "code '%s': cannot replace its destination: %s", l->code,
                      rc == ERR_FORBIDDEN ? "the host is blocked" : err_str(rc));
        return ERR_OK;
    }
    return rc;
}

/* A copy of 'in' with its domain lowercased into 'domain' and its title cut
 * to what the API takes (on a character boundary): a long title is no
 * reason to lose a link. */
static void normalise(const struct import_link *in, struct import_link *out, char domain[256],
                      char title[TITLE_MAX + 1])
{
    *out = *in;
    if (in->domain && *in->domain) {
        size_t n = strlen(in->domain);
        n = n < 255 ? n : 255;
        for (size_t i = 0; i < n; i++)
            domain[i] = (char)tolower((unsigned char)in->domain[i]);
        domain[n] = '\0';
        out->domain = domain;
    }
    if (in->title && strlen(in->title) > TITLE_MAX) {
        size_t n = TITLE_MAX;
        while (n && ((unsigned char)in->title[n] & 0xc0) == 0x80)
            n--;
        memcpy(title, in->title, n);
        title[n] = '\0';
        out->title = title;
    }
}

int import_link(struct import_sink *s, const struct import_link *given)
{
    int rc = need_tx(s);
    if (rc != ERR_OK)
        return rc;
    char domain[256], title[TITLE_MAX + 1];
    struct import_link copy;
    normalise(given, &copy, domain, title);
    const struct import_link *l = &copy;
    struct buf url = BUF_INIT;
    char why[256];
    const char *bad = check_link(s, l, &url, why, sizeof(why));
    if (bad) {
        /* Its visits are then dropped, not refused one by one; a code
         * the source gave before keeps what became of it */
        if (l->code && *l->code && code_is_plausible(l->code, strlen(l->code))) {
            struct code_ent *e = code_find(s, l->code, true);
            if (!e->line) {
                e->fate = FATE_REFUSED;
                e->line = l->where.n ? l->where.n : -1;
            }
        }
        import_refuse(s, l->where, "%s", bad);
        buf_release(&url);
        return ERR_OK;
    }
    struct code_ent *e = code_find(s, l->code, true);
    if (e->line) {
        char first[96];
        where_text((struct import_where){l->where.table, e->line}, first, sizeof(first));
        import_refuse(s, l->where, "code '%s' was given before (%s)", l->code, first);
        buf_release(&url);
        return ERR_OK;
    }
    e->line = l->where.n ? l->where.n : -1;
    struct link old = {0};
    rc = s->st->ops->link_get(s->st, l->code, &old);
    if (rc == ERR_NOTFOUND) {
        e->fate = FATE_NEW;
        e->remain = l->clicks > 0 ? l->clicks : 0;
        e->remain_bots = l->bot_clicks > 0 ? l->bot_clicks : 0;
        const char *field = NULL;
        rc = links_check_blocked(s->links, s->st, url.p, NULL, &field);
        if (rc == ERR_FORBIDDEN) {
            e->fate = FATE_REFUSED;
            import_refuse(s, l->where, "code '%s': destination host is blocked", l->code);
            rc = ERR_OK;
        } else if (rc == ERR_OK && s->write) {
            rc = insert_link(s, l, url.p);
        }
        if (rc == ERR_OK && e->fate == FATE_NEW)
            s->sum->links_imported++;
    } else if (rc == ERR_OK) {
        bool same = old.url && !strcmp(old.url, url.p);
        e->fate = same ? FATE_THERE : FATE_CONFLICT;
        if (same) {
            s->sum->links_there++;
        } else {
            s->sum->conflicts++;
            char *was = xstrdup(old.url ? old.url : "(deleted)");
            if (s->o->conflict == IMPORT_KEEP && old.url && old.state != LINK_DELETED) {
                bool done = true;
                if (s->write)
                    rc = replace_url(s, &old, url.p, l, &done);
                if (rc == ERR_OK && done) {
                    s->sum->replaced++;
                    buf_add(&s->replaced, l->code, strlen(l->code) + 1);
                    conflict(s, l->where, "code '%s' pointed at %s; now at %s", l->code, was,
                             url.p);
                }
            } else {
                conflict(s, l->where, "code '%s' is taken (%s), kept; the source has %s", l->code,
                         was, url.p);
            }
            free(was);
        }
        link_release(&old);
    }
    buf_release(&url);
    if (rc != ERR_OK)
        return s->failed = log_fail(rc, "cannot import code '%s': %s", l->code, err_str(rc));
    return counted(s);
}

/* ---- visits and tallies ---- */

/* The code's entry when its visits count: refused (not in the source) or
 * dropped (the link was there) otherwise, NULL then. */
static struct code_ent *visit_target(struct import_sink *s, const char *code, struct import_where w,
                                     int64_t n)
{
    struct code_ent *e = code && *code ? code_find(s, code, false) : NULL;
    if (!e) {
        import_refuse(s, w, "code '%.40s' is not a link of the source", code ? code : "");
        return NULL;
    }
    if (e->fate != FATE_NEW) {
        s->sum->visits_dropped += n;
        return NULL;
    }
    return e;
}

/* A link day's slot: its code's entry (which never moves) and its day,
 * mixed so that neighbouring entries and days spread (a splitmix64 step). */
static uint64_t day_hash(const struct code_ent *e, int64_t day)
{
    uint64_t h = (uint64_t)(uintptr_t)e ^ ((uint64_t)day * 0x9e3779b97f4a7c15ULL);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

static struct dayrow *day_of(struct import_sink *s, struct code_ent *e, int64_t day)
{
    s->folds++;
    if ((s->ndays + 1) * 2 > s->days_cap) {
        size_t cap = s->days_cap ? 2 * s->days_cap : 1024;
        struct iday **t = calloc(cap, sizeof(*t));
        if (!t)
            abort();
        for (size_t i = 0; i < s->days_cap; i++)
            for (struct iday *d = s->days[i], *nx; d; d = nx) {
                nx = d->next_in_slot;
                size_t j = day_hash(d->ent, d->day) & (cap - 1);
                d->next_in_slot = t[j];
                t[j] = d;
            }
        free(s->days);
        s->days = t;
        s->days_cap = cap;
    }
    size_t j = day_hash(e, day) & (s->days_cap - 1);
    for (struct iday *d = s->days[j]; d; d = d->next_in_slot)
        if (d->ent == e && d->day == day)
            return &d->row;
    struct iday *d = bump_alloc(s->mem, sizeof(*d));
    d->ent = e;
    d->day = day;
    dayrow_init_bump(&d->row, s->mem);
    d->next_in_slot = s->days[j];
    s->days[j] = d;
    s->ndays++;
    return &d->row;
}

static struct slice sl(const char *p) { return (struct slice){p ? p : "", p ? strlen(p) : 0}; }

int import_visit(struct import_sink *s, const struct import_visit *v)
{
    if (s->failed)
        return s->failed;
    struct code_ent *e = visit_target(s, v->code, v->where, 1);
    if (!e)
        return counted(s);
    if (v->at <= 0) {
        import_refuse(s, v->where, "visit of '%s' has no time", v->code);
        return counted(s);
    }
    struct click_event ev = {.ts = v->at * 1000,
                             .code = sl(v->code),
                             .ua = sl(v->user_agent),
                             .referer = sl(v->referrer),
                             .lang = sl(v->language),
                             .query = sl(v->query)};
    if (v->country && strlen(v->country) == 2) {
        ev.country[0] = (char)(v->country[0] & ~0x20);
        ev.country[1] = (char)(v->country[1] & ~0x20);
    }
    /* The same limits a served click's event has (event.h) */
    ev.ua.n = ev.ua.n < EVENT_UA_MAX ? ev.ua.n : EVENT_UA_MAX;
    ev.referer.n = ev.referer.n < EVENT_REFERER_MAX ? ev.referer.n : EVENT_REFERER_MAX;
    ev.lang.n = ev.lang.n < EVENT_LANG_MAX ? ev.lang.n : EVENT_LANG_MAX;
    ev.query.n = ev.query.n < EVENT_QUERY_MAX ? ev.query.n : EVENT_QUERY_MAX;
    struct dayrow *r = day_of(s, e, day_number(ev.ts));
    int64_t bots = r->bots;
    aggregate_fold(s->cl, NULL, false, r, &ev);
    s->sum->visits++;
    s->sum->visit_bots += r->bots - bots;
    return counted(s);
}

int import_tally(struct import_sink *s, const struct import_tally *t)
{
    if (s->failed)
        return s->failed;
    struct code_ent *e = visit_target(s, t->code, t->where, t->clicks);
    if (!e)
        return counted(s);
    if (t->at <= 0 || t->clicks < 0 || t->bots < 0) {
        import_refuse(s, t->where, "tally of '%s' has no time or a negative count", t->code);
        return counted(s);
    }
    struct dayrow *r = day_of(s, e, day_number(t->at * 1000));
    r->clicks += t->clicks;
    r->bots += t->bots > 0 ? t->bots : 0;
    r->uniques_base += t->uniques > 0 ? t->uniques : 0;
    for (size_t i = 0; i < t->nvalues; i++) {
        const struct import_tally_value *x = &t->values[i];
        if (x->dim < 0 || x->dim >= DIM_LINK_COUNT || !x->value || !*x->value || x->n <= 0)
            continue;
        char v[DIM_MAX + 1];
        size_t n = clamp_utf8(x->value, strlen(x->value), v);
        dayrow_tally(r, x->dim, v, n, x->n);
    }
    s->sum->tallies++;
    s->sum->tally_clicks += t->clicks + (t->bots > 0 ? t->bots : 0);
    return counted(s);
}

/* ---- running ---- */

static int run_pass(struct store *st, struct links *l, const struct import_format *f,
                    const char *source, const struct import_opts *o, bool write,
                    struct import_summary *out)
{
    memset(out, 0, sizeof(*out));
    struct import_sink s = {.st = st,
                            .links = l,
                            .o = o,
                            .sum = out,
                            .write = write,
                            .now = now_ms(),
                            .reserved = router_reserved(),
                            .mem = bump_new(),
                            .code_mem = bump_new()};
    int rc = classify_new(4096, &s.cl);
    if (rc != ERR_OK) {
        bump_free(s.mem);
        bump_free(s.code_mem);
        return rc;
    }
    s.pg = progress_new("import", "rows", o->progress);
    bool bulk = store_bulk();
    store_set_bulk(true);
    rc = f->read(source, &s);
    if (s.failed)
        rc = s.failed;
    if (rc == ERR_OK)
        rc = finish(&s);
    else if (s.in_tx)
        st->ops->rollback(st);
    store_set_bulk(bulk);
    progress_end(s.pg);
    for (size_t i = 0; i < s.codes_cap; i++)
        if (s.codes[i] && s.codes[i]->fate == FATE_NEW)
            out->imported_clicks += s.codes[i]->remain + s.codes[i]->remain_bots;
    days_clear(&s);
    runs_close(&s);
    for (int i = 0; i < 3; i++)
        buf_release(&s.enc[i]);
    free(s.days);
    free(s.codes);
    buf_release(&s.replaced);
    bump_free(s.code_mem);
    bump_free(s.mem);
    classify_free(s.cl);
    return rc;
}

int import_run(struct store *st, struct links *l, const struct import_format *f, const char *source,
               const struct import_opts *o, struct import_summary *out)
{
    if (o->conflict == IMPORT_FAIL && !o->dry_run) {
        /* The dry pass reports each row; the writing one then only counts */
        int rc = run_pass(st, l, f, source, o, false, out);
        if (rc != ERR_OK || out->conflicts) {
            out->failed_on_conflict = rc == ERR_OK;
            return rc;
        }
        struct import_opts quiet = *o;
        quiet.quiet = true;
        return run_pass(st, l, f, source, &quiet, true, out);
    }
    return run_pass(st, l, f, source, o, !o->dry_run, out);
}
