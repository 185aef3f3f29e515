/* clicks.c - per-thread click buffers and the job that folds them into the
 * store.
 *
 * DESIGN
 * Each worker owns one buffer of fixed-size events. A flush moves the whole
 * buffer into a writer job (one allocation per flush, none per click); the
 * job sorts its events by (code, day) and writes one upsert per run. A job
 * whose transaction fails is submitted again, so a passing storage error
 * delays clicks instead of losing them. 'recorded' has one writer per
 * worker; 'committed' is written by the writer thread only. */
#include "clicks.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codes.h"
#include "err.h"
#include "log.h"
#include "store.h"
#include "timeutil.h"
#include "writer.h"
#include "banned.h"

#define FIRST_CAP 256
#define MAX_RETRIES 5

struct click {
    int64_t day;
    uint8_t len;
    char code[CODE_MAX];
};

struct local {
    struct click *ev;
    size_t n, cap;
    _Atomic uint64_t recorded;
    char pad[64];
};

struct flush_job {
    struct wjob job;
    struct clicks *owner;
    struct click *ev;
    size_t n;
    int tries;
};

struct clicks {
    struct writer *writer;
    int nworkers;
    struct local *local;
    _Atomic uint64_t committed;
};

struct clicks *clicks_new(struct writer *w, int nworkers)
{
    struct clicks *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->writer = w;
    c->nworkers = nworkers;
    c->local = calloc((size_t)nworkers, sizeof(*c->local));
    if (!c->local)
        abort();
    return c;
}

void clicks_free(struct clicks *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nworkers; i++)
        free(c->local[i].ev);
    free(c->local);
    free(c);
}

void clicks_record(struct clicks *c, int worker, const char *code, size_t n, int64_t now_ms)
{
    struct local *l = &c->local[worker];
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : FIRST_CAP;
        struct click *ev = realloc(l->ev, cap * sizeof(*ev));
        if (!ev)
            abort();
        l->ev = ev;
        l->cap = cap;
    }
    struct click *e = &l->ev[l->n++];
    e->day = day_number(now_ms);
    e->len = (uint8_t)(n < CODE_MAX ? n : CODE_MAX);
    memcpy(e->code, code, e->len);
    atomic_store_explicit(&l->recorded,
                          atomic_load_explicit(&l->recorded, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static int cmp_click(const void *a, const void *b)
{
    const struct click *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    int c = memcmp(x->code, y->code, x->len);
    if (c)
        return c;
    return x->day < y->day ? -1 : x->day > y->day;
}

static int flush_run(struct wjob *j, struct store *st)
{
    struct flush_job *f = (struct flush_job *)j;
    if (f->tries == 0)
        qsort(f->ev, f->n, sizeof(*f->ev), cmp_click);
    size_t i = 0;
    while (i < f->n) {
        size_t k = i + 1;
        while (k < f->n && cmp_click(&f->ev[i], &f->ev[k]) == 0)
            k++;
        char code[CODE_MAX + 1];
        memcpy(code, f->ev[i].code, f->ev[i].len);
        code[f->ev[i].len] = '\0';
        int rc = st->ops->clicks_add(st, code, f->ev[i].day, (int64_t)(k - i));
        if (rc != ERR_OK)
            return rc;
        i = k;
    }
    return ERR_OK;
}

static void flush_done(struct wjob *j)
{
    struct flush_job *f = (struct flush_job *)j;
    if (j->rc != ERR_OK && ++f->tries < MAX_RETRIES) {
        log_at(LOG_WARN, "click flush failed (%s); retrying", err_str(j->rc));
        writer_submit(f->owner->writer, j);
        return;
    }
    if (j->rc != ERR_OK)
        log_at(LOG_ERROR, "dropped %zu clicks after %d failed flushes", f->n, f->tries);
    atomic_fetch_add(&f->owner->committed, f->n);
    free(f->ev);
    free(f);
}

void clicks_flush(struct clicks *c, int worker)
{
    struct local *l = &c->local[worker];
    if (!l->n)
        return;
    struct flush_job *f = calloc(1, sizeof(*f));
    if (!f)
        abort();
    f->job.run = flush_run;
    f->job.done = flush_done;
    f->owner = c;
    f->ev = l->ev;
    f->n = l->n;
    l->ev = NULL;
    l->n = l->cap = 0;
    writer_submit(c->writer, &f->job);
}

uint64_t clicks_pending(struct clicks *c)
{
    uint64_t recorded = 0;
    for (int i = 0; i < c->nworkers; i++)
        recorded += atomic_load_explicit(&c->local[i].recorded, memory_order_relaxed);
    uint64_t committed = atomic_load(&c->committed);
    return recorded > committed ? recorded - committed : 0;
}
