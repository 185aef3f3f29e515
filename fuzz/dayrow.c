/* dayrow.c (fuzz) - the packed day rows (dayrow.h) as a store could hand
 * them back: any bytes in the three blobs.
 *
 * The input is two stored rows, each three little-endian u16 lengths (dims,
 * visitors, recent) then those blobs; the counts are the first bytes of the
 * input. The first row is loaded and must round-trip: load, encode, load,
 * encode gives the same bytes twice. The second is the delta (loaded; when
 * it does not load, a row folded from a few clicks). dayrow_merge of the
 * first with the delta must, when the first loads, give the same blobs as
 * load + dayrow_add + dayrow_encode, which is what it stands for, and what
 * it gives must load again; dayrow_add_blobs sums both into a third row.
 * Reading back walks the tallies (in their documented order) and the
 * newest clicks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/bump.h"
#include "clicks/dayrow.h"
#include "base/err.h"
#include "base/banned.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

struct input {
    const uint8_t *p, *end;
};

static size_t take_u16(struct input *in)
{
    if (in->end - in->p < 2) {
        in->p = in->end;
        return 0;
    }
    size_t v = (size_t)(in->p[0] | in->p[1] << 8);
    in->p += 2;
    return v;
}

static const void *take(struct input *in, size_t n, size_t *got)
{
    size_t left = (size_t)(in->end - in->p);
    *got = n < left ? n : left;
    const void *p = *got ? in->p : NULL;
    in->p += *got;
    return p;
}

static void take_row(struct input *in, struct day_blobs *b, int64_t clicks)
{
    memset(b, 0, sizeof(*b));
    b->clicks = clicks;
    b->bots = clicks / 3;
    b->uniques = clicks / 2;
    size_t nd = take_u16(in), nv = take_u16(in), nr = take_u16(in);
    b->dims = take(in, nd, &b->ndims);
    b->visitors = take(in, nv, &b->nvisitors);
    b->recent = take(in, nr, &b->nrecent);
}

static bool same_blobs(const struct day_blobs *a, const struct day_blobs *b)
{
    return a->clicks == b->clicks && a->bots == b->bots && a->uniques == b->uniques &&
           a->ndims == b->ndims && a->nvisitors == b->nvisitors && a->nrecent == b->nrecent &&
           (!a->ndims || memcmp(a->dims, b->dims, a->ndims) == 0) &&
           (!a->nvisitors || memcmp(a->visitors, b->visitors, a->nvisitors) == 0) &&
           (!a->nrecent || memcmp(a->recent, b->recent, a->nrecent) == 0);
}

struct order {
    int dim;
    int64_t n;
    const char *value;
};

/* Sorted by dimension, then count (largest first), then value. */
static int tally_seen(int dim, const char *value, int64_t n, void *arg)
{
    struct order *o = arg;
    check(dim >= 0 && dim < DIM__COUNT && value != NULL);
    if (o->value) {
        check(dim >= o->dim);
        if (dim == o->dim)
            check(n < o->n || (n == o->n && strcmp(value, o->value) >= 0));
    }
    *o = (struct order){dim, n, value};
    return 0;
}

static int recent_seen(const struct recent_rec *c, void *arg)
{
    int64_t *newer = arg;
    for (int k = 0; k < 4; k++)
        check(strlen(c->text[k]) <= DIM_MAX);
    check(c->ts <= *newer);
    *newer = c->ts;
    return 0;
}

static void walk(const struct dayrow *r)
{
    struct order o = {0};
    dayrow_each_tally(r, tally_seen, &o);
    int64_t newest = INT64_MAX;
    dayrow_each_recent(r, RECENT_KEEP, recent_seen, &newest);
}

static void folded_delta(struct dayrow *d)
{
    static const char *const text[4] = {"news.example", "DE", "mobile", "Firefox"};
    dayrow_tally(d, DIM_COUNTRY, "DE", 2, 2);
    dayrow_tally(d, DIM_BROWSER, "Firefox", 7, 1);
    dayrow_visitor(d, 0x1234);
    dayrow_visitor(d, 0xfeed);
    dayrow_remember(d, 1767225600000, text);
    d->clicks = 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = {data, data + size};
    int64_t clicks = size ? data[0] : 0;
    struct day_blobs old, db;
    take_row(&in, &old, clicks);
    take_row(&in, &db, clicks + 1);

    struct buf d1 = BUF_INIT, v1 = BUF_INIT, r1 = BUF_INIT, d2 = BUF_INIT, v2 = BUF_INIT,
               r2 = BUF_INIT, d3 = BUF_INIT, v3 = BUF_INIT, r3 = BUF_INIT;
    struct day_blobs e1, e2, e3;

    struct dayrow row, again, delta, sum;
    dayrow_init(&row);
    dayrow_init(&again);
    dayrow_init(&sum);
    struct bump *mem = bump_new();
    dayrow_init_bump(&delta, mem);
    bool old_ok = dayrow_load(&row, &old) == ERR_OK;
    if (old_ok) {
        walk(&row);
        dayrow_encode(&row, &d1, &v1, &r1, &e1);
        check(dayrow_load(&again, &e1) == ERR_OK);
        dayrow_encode(&again, &d2, &v2, &r2, &e2);
        check(same_blobs(&e1, &e2));
    }
    if (dayrow_load(&delta, &db) != ERR_OK) {
        bump_clear(mem);
        dayrow_init_bump(&delta, mem);
        folded_delta(&delta);
    }

    int rc = dayrow_merge(&old, &delta, &d3, &v3, &r3, &e3);
    check(rc == (old_ok ? ERR_OK : ERR_INVALID));
    if (rc == ERR_OK) {
        dayrow_add(&row, &delta);
        dayrow_encode(&row, &d1, &v1, &r1, &e1);
        check(same_blobs(&e1, &e3));
        dayrow_release(&again);
        dayrow_init(&again);
        check(dayrow_load(&again, &e3) == ERR_OK);
        walk(&again);
    }
    check(dayrow_merge(NULL, &delta, &d2, &v2, &r2, &e2) == ERR_OK);

    if (dayrow_add_blobs(&sum, &old) == ERR_OK)
        check(old_ok);
    (void)dayrow_add_blobs(&sum, &db);
    (void)dayrow_uniques(&sum);
    walk(&sum);

    dayrow_release(&row);
    dayrow_release(&again);
    dayrow_release(&delta);
    dayrow_release(&sum);
    bump_free(mem);
    struct buf *bufs[] = {&d1, &v1, &r1, &d2, &v2, &r2, &d3, &v3, &r3};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(*bufs); i++)
        buf_release(bufs[i]);
    return 0;
}
