/* dayrow.c - the packed row of one link's day: folding, merging, and the
 * blob encodings.
 *
 * DESIGN
 * Written by hand because the blobs are shortd's own storage format: small,
 * versioned by a leading byte, and cheap to merge. All integers are unsigned
 * LEB128 varints except the visitor hashes (8 bytes little-endian).
 *   dims:     'D', then per tally: dim, len, value bytes, n
 *   recent:   'R', then oldest first per click: ts, and four (len, bytes)
 *   visitors: 'S', then the sorted hashes; or 'H', then HLL_M registers
 * A blob that does not parse is refused (ERR_INVALID) rather than guessed at.
 *
 * Tallies are kept unsorted, searched linearly while a row has few (the
 * usual case) and through a hash index once it has many; they are sorted
 * only when read. */
#include "clicks/dayrow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

/* A row's arrays come from malloc, or from its bump allocator when it has
 * one: then they are never freed one by one, and growing one copies it. */
static void *row_grow(struct dayrow *r, void *p, size_t had, size_t n)
{
    if (r->mem) {
        void *q = bump_alloc(r->mem, n);
        if (had)
            memcpy(q, p, had);
        return q;
    }
    void *q = realloc(p, n);
    if (!q)
        abort();
    return q;
}

static void *row_zalloc(struct dayrow *r, size_t n)
{
    void *p = row_grow(r, NULL, 0, n);
    memset(p, 0, n);
    return p;
}

static void row_drop(struct dayrow *r, void *p)
{
    if (!r->mem)
        free(p);
}

void dayrow_init(struct dayrow *r) { memset(r, 0, sizeof(*r)); }

void dayrow_init_bump(struct dayrow *r, struct bump *mem)
{
    dayrow_init(r);
    r->mem = mem;
}

void dayrow_release(struct dayrow *r)
{
    row_drop(r, r->tallies);
    row_drop(r, r->arena);
    row_drop(r, r->index);
    row_drop(r, r->recent);
    row_drop(r, r->vis);
    row_drop(r, r->hll);
    memset(r, 0, sizeof(*r));
}

/* ---- folding ---- */

#define INDEX_FROM 32 /* tallies searched linearly up to this many */

static uint64_t tally_hash(int dim, const char *v, size_t len)
{
    uint64_t h = 14695981039346656037ULL ^ (uint64_t)dim;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)v[i]) * 1099511628211ULL;
    return h;
}

static bool tally_is(const struct dayrow *r, const struct tally *t, int dim, const char *v,
                     size_t len)
{
    return t->dim == dim && t->len == len && !memcmp(r->arena + t->off, v, len);
}

static void index_put(struct dayrow *r, size_t i)
{
    const struct tally *t = &r->tallies[i];
    size_t mask = r->nindex - 1, k = tally_hash(t->dim, r->arena + t->off, t->len) & mask;
    while (r->index[k])
        k = (k + 1) & mask;
    r->index[k] = (uint32_t)i + 1;
}

static void index_rebuild(struct dayrow *r)
{
    row_drop(r, r->index);
    r->nindex = 64;
    while (r->nindex < r->ntallies * 2)
        r->nindex *= 2;
    r->index = row_zalloc(r, r->nindex * sizeof(*r->index));
    for (size_t i = 0; i < r->ntallies; i++)
        index_put(r, i);
}

static struct tally *tally_find(struct dayrow *r, int dim, const char *v, size_t len)
{
    if (!r->index) {
        for (size_t i = 0; i < r->ntallies; i++)
            if (tally_is(r, &r->tallies[i], dim, v, len))
                return &r->tallies[i];
        return NULL;
    }
    size_t mask = r->nindex - 1;
    for (size_t k = tally_hash(dim, v, len) & mask; r->index[k]; k = (k + 1) & mask)
        if (tally_is(r, &r->tallies[r->index[k] - 1], dim, v, len))
            return &r->tallies[r->index[k] - 1];
    return NULL;
}

void dayrow_tally(struct dayrow *r, int dim, const char *value, size_t len, int64_t n)
{
    if (len > DIM_MAX)
        len = DIM_MAX;
    struct tally *t = tally_find(r, dim, value, len);
    if (t) {
        /* Counts from stored rows may be anything: saturate, never overflow. */
        t->n = n > 0 && t->n > INT64_MAX - n ? INT64_MAX : t->n + n;
        return;
    }
    if (r->values[dim] >= TALLY_VALUES_MAX && !(len == 7 && !memcmp(value, "(other)", 7))) {
        dayrow_tally(r, dim, "(other)", 7, n);
        return;
    }
    if (r->ntallies == r->cap) {
        size_t had = r->cap * sizeof(*r->tallies);
        r->cap = r->cap ? r->cap * 2 : 16;
        r->tallies = row_grow(r, r->tallies, had, r->cap * sizeof(*r->tallies));
    }
    if (r->used + len + 1 > r->room) {
        size_t had = r->used;
        while (r->used + len + 1 > r->room)
            r->room = r->room ? r->room * 2 : 256;
        r->arena = row_grow(r, r->arena, had, r->room);
    }
    memcpy(r->arena + r->used, value, len);
    r->arena[r->used + len] = '\0';
    r->tallies[r->ntallies++] = (struct tally){(uint32_t)r->used, (uint8_t)len, (uint8_t)dim, n};
    r->used += len + 1;
    r->values[dim]++;
    if (r->ntallies == INDEX_FROM || (r->index && r->ntallies * 2 > r->nindex))
        index_rebuild(r);
    else if (r->index)
        index_put(r, r->ntallies - 1);
}

static struct recent_rec *recent_slot(struct dayrow *r)
{
    if (r->rcount < RECENT_KEEP) {
        if (r->rcount == r->rcap) {
            size_t had = (size_t)r->rcount * sizeof(*r->recent);
            r->rcap = r->rcap ? r->rcap * 2 : 1;
            if (r->rcap > RECENT_KEEP)
                r->rcap = RECENT_KEEP;
            r->recent = row_grow(r, r->recent, had, (size_t)r->rcap * sizeof(*r->recent));
        }
        return &r->recent[r->rcount++];
    }
    struct recent_rec *c = &r->recent[r->rnext];
    r->rnext = (r->rnext + 1) % RECENT_KEEP;
    return c;
}

static void set_text(char out[DIM_MAX + 1], const char *s, size_t n)
{
    if (n > DIM_MAX)
        n = DIM_MAX;
    memcpy(out, s, n);
    out[n] = '\0';
}

void dayrow_remember(struct dayrow *r, int64_t ts, const char *const text[4])
{
    struct recent_rec *c = recent_slot(r);
    c->ts = ts;
    for (int k = 0; k < 4; k++)
        set_text(c->text[k], text[k] ? text[k] : "", text[k] ? strlen(text[k]) : 0);
}

/* The i-th newest-but-oldest click: i = 0 is the oldest kept. */
static const struct recent_rec *recent_at(const struct dayrow *r, int i)
{
    return &r->recent[(r->rcount < RECENT_KEEP ? i : (r->rnext + i) % RECENT_KEEP)];
}

/* ---- visitors ---- */

static void hll_add(uint8_t *regs, uint64_t h)
{
    uint32_t idx = (uint32_t)(h >> (64 - HLL_P));
    uint64_t rest = h << HLL_P | (1ULL << (HLL_P - 1)); /* a sentinel bounds the rank */
    uint8_t rank = (uint8_t)(__builtin_clzll(rest) + 1);
    if (regs[idx] < rank)
        regs[idx] = rank;
}

static void to_sketch(struct dayrow *r)
{
    r->hll = row_zalloc(r, HLL_M);
    for (size_t i = 0; i < r->nvis; i++)
        hll_add(r->hll, r->vis[i]);
    row_drop(r, r->vis);
    r->vis = NULL;
    r->nvis = r->viscap = 0;
}

void dayrow_visitor(struct dayrow *r, uint64_t h)
{
    if (r->hll) {
        hll_add(r->hll, h);
        return;
    }
    size_t lo = 0, hi = r->nvis;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->vis[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->nvis && r->vis[lo] == h)
        return;
    if (r->nvis == VISITORS_EXACT) {
        to_sketch(r);
        hll_add(r->hll, h);
        return;
    }
    if (r->nvis == r->viscap) {
        size_t had = r->nvis * sizeof(*r->vis);
        r->viscap = r->viscap ? r->viscap * 2 : 4;
        r->vis = row_grow(r, r->vis, had, r->viscap * sizeof(*r->vis));
    }
    memmove(r->vis + lo + 1, r->vis + lo, (r->nvis - lo) * sizeof(*r->vis));
    r->vis[lo] = h;
    r->nvis++;
}

int64_t dayrow_uniques(const struct dayrow *r)
{
    if (!r->hll)
        return r->uniques_base + (int64_t)r->nvis;
    /* Flajolet et al.'s estimate, with linear counting for small sets. */
    double sum = 0;
    unsigned zeros = 0;
    for (unsigned i = 0; i < HLL_M; i++) {
        sum += ldexp(1.0, -r->hll[i]);
        zeros += r->hll[i] == 0;
    }
    double m = HLL_M, est = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    if (est <= 2.5 * m && zeros)
        est = m * log(m / zeros);
    return r->uniques_base + (int64_t)(est + 0.5);
}

/* ---- merging ---- */

static void add_recent(struct dayrow *r, const struct recent_rec *c)
{
    /* Clicks of several nodes may arrive out of order: keep the newest. */
    if (r->rcount == RECENT_KEEP && c->ts < recent_at(r, 0)->ts)
        return;
    struct recent_rec *slot = recent_slot(r);
    *slot = *c;
    /* Bubble it back to its place in time order (rarely more than no step). */
    for (int i = r->rcount - 1; i > 0; i--) {
        struct recent_rec *a = (struct recent_rec *)recent_at(r, i - 1);
        struct recent_rec *b = (struct recent_rec *)recent_at(r, i);
        if (a->ts <= b->ts)
            break;
        struct recent_rec t = *a;
        *a = *b;
        *b = t;
    }
}

/* Everything of 'd' but its newest clicks. */
static void add_counts(struct dayrow *r, const struct dayrow *d)
{
    r->clicks += d->clicks;
    r->bots += d->bots;
    r->uniques_base += d->uniques_base;
    for (size_t i = 0; i < d->ntallies; i++) {
        const struct tally *t = &d->tallies[i];
        dayrow_tally(r, t->dim, d->arena + t->off, t->len, t->n);
    }
    if (d->hll) {
        if (!r->hll)
            to_sketch(r);
        for (unsigned i = 0; i < HLL_M; i++)
            if (r->hll[i] < d->hll[i])
                r->hll[i] = d->hll[i];
    } else {
        for (size_t i = 0; i < d->nvis; i++)
            dayrow_visitor(r, d->vis[i]);
    }
}

void dayrow_add(struct dayrow *r, const struct dayrow *d)
{
    add_counts(r, d);
    for (int i = 0; i < d->rcount; i++)
        add_recent(r, recent_at(d, i));
}

/* ---- encoding ---- */

/* Writes v at p (at most VARINT_MAX bytes); returns the end. */
#define VARINT_MAX 10
static char *varint_at(char *p, uint64_t v)
{
    do {
        *p++ = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return p;
}

/* Ends 'b' at 'w', which was written through b->p after buf_reserve(). */
static void end_at(struct buf *b, char *w)
{
    b->len = (size_t)(w - b->p);
    b->p[b->len] = '\0';
}

struct reader {
    const unsigned char *p, *end;
    bool bad;
};

static uint64_t get_varint(struct reader *rd)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (rd->p >= rd->end)
            break;
        unsigned char c = *rd->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    rd->bad = true;
    return 0;
}

static const char *get_bytes(struct reader *rd, size_t n)
{
    if ((size_t)(rd->end - rd->p) < n) {
        rd->bad = true;
        return NULL;
    }
    const char *s = (const char *)rd->p;
    rd->p += n;
    return s;
}

struct tally_view {
    const char *v;
    const struct tally *t;
};

static int cmp_view(const void *x, const void *y)
{
    const struct tally_view *a = x, *b = y;
    if (a->t->dim != b->t->dim)
        return a->t->dim < b->t->dim ? -1 : 1;
    if (a->t->n != b->t->n)
        return a->t->n > b->t->n ? -1 : 1;
    size_t la = a->t->len, lb = b->t->len;
    int c = memcmp(a->v, b->v, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

/* One of the newest clicks, as it is written: its text by pointer and
 * length (into a struct recent_rec, or into a stored blob). */
struct rview {
    int64_t ts;
    const char *text[4];
    size_t len[4];
};

static struct rview view_of(const struct recent_rec *c)
{
    struct rview v = {.ts = c->ts};
    for (int k = 0; k < 4; k++) {
        v.text[k] = c->text[k];
        v.len[k] = strlen(c->text[k]);
    }
    return v;
}

/* The recent blob of v[0..n) (n > 0), oldest first, into 'recent' and 'b'. */
static void put_recent(const struct rview *v, int n, struct buf *recent, struct day_blobs *b)
{
    buf_reset(recent);
    buf_reserve(recent, 1 + (size_t)n * (VARINT_MAX + 4 * (1 + DIM_MAX)));
    char *w = recent->p;
    *w++ = 'R';
    for (int i = 0; i < n; i++) {
        w = varint_at(w, (uint64_t)v[i].ts);
        for (int k = 0; k < 4; k++) {
            *w++ = (char)v[i].len[k];
            memcpy(w, v[i].text[k], v[i].len[k]);
            w += v[i].len[k];
        }
    }
    end_at(recent, w);
    b->recent = recent->p;
    b->nrecent = recent->len;
}

void dayrow_encode(const struct dayrow *r, struct buf *dims, struct buf *visitors,
                   struct buf *recent, struct day_blobs *b)
{
    buf_reset(dims);
    buf_reset(visitors);
    buf_reset(recent);
    memset(b, 0, sizeof(*b));
    b->clicks = r->clicks;
    b->bots = r->bots;
    b->uniques = dayrow_uniques(r);
    /* Written straight into room reserved at the most each part can take:
     * this runs for every link day stored, and a buf call per field cost
     * storing clicks measurably (bench/HISTORY.md, "Figures once quoted in
     * code comments"). */
    if (r->ntallies) {
        buf_reserve(dims, 1 + r->ntallies * (2 + VARINT_MAX) + r->used);
        char *w = dims->p;
        *w++ = 'D';
        for (size_t i = 0; i < r->ntallies; i++) {
            const struct tally *t = &r->tallies[i];
            *w++ = (char)t->dim;
            *w++ = (char)t->len;
            memcpy(w, r->arena + t->off, t->len);
            w = varint_at(w + t->len, (uint64_t)t->n);
        }
        end_at(dims, w);
        b->dims = dims->p;
        b->ndims = dims->len;
    }
    if (r->rcount) {
        struct rview v[RECENT_KEEP];
        for (int i = 0; i < r->rcount; i++)
            v[i] = view_of(recent_at(r, i));
        put_recent(v, r->rcount, recent, b);
    }
    if (r->hll) {
        buf_addc(visitors, 'H');
        buf_add(visitors, r->hll, HLL_M);
    } else if (r->nvis) {
        buf_addc(visitors, 'S');
        for (size_t i = 0; i < r->nvis; i++) {
            unsigned char le[8];
            for (int k = 0; k < 8; k++)
                le[k] = (unsigned char)(r->vis[i] >> (8 * k));
            buf_add(visitors, le, 8);
        }
    }
    if (visitors->len) {
        b->visitors = visitors->p;
        b->nvisitors = visitors->len;
    }
}

static struct reader reader_of(const void *p, size_t n, char tag)
{
    /* No arithmetic on a NULL blob (absent), not even + 0: that is undefined. */
    struct reader rd = {p, p ? (const unsigned char *)p + n : NULL, false};
    if (!p || !n)
        rd.p = rd.end;
    else if (n == 1 || *rd.p++ != (unsigned char)tag)
        rd.bad = true; /* the encoder never writes a tag alone */
    return rd;
}

static int load_dims(struct dayrow *r, const struct day_blobs *b)
{
    r->clicks = b->clicks;
    r->bots = b->bots;
    struct reader rd = reader_of(b->dims, b->ndims, 'D');
    while (!rd.bad && rd.p < rd.end) {
        const char *hdr = get_bytes(&rd, 2);
        const char *v = hdr ? get_bytes(&rd, (unsigned char)hdr[1]) : NULL;
        uint64_t n = get_varint(&rd);
        if (n > INT64_MAX)
            rd.bad = true; /* no count the encoder writes */
        if (!rd.bad && (unsigned char)hdr[0] < DIM__COUNT)
            dayrow_tally(r, (unsigned char)hdr[0], v, (unsigned char)hdr[1], (int64_t)n);
    }
    return rd.bad ? ERR_INVALID : ERR_OK;
}

static int load_recent(struct dayrow *r, const struct day_blobs *b)
{
    struct reader rd = reader_of(b->recent, b->nrecent, 'R');
    while (!rd.bad && rd.p < rd.end) {
        struct recent_rec c;
        c.ts = (int64_t)get_varint(&rd);
        for (int k = 0; k < 4 && !rd.bad; k++) {
            const char *len = get_bytes(&rd, 1);
            const char *v = len ? get_bytes(&rd, (unsigned char)*len) : NULL;
            if (v)
                set_text(c.text[k], v, (unsigned char)*len);
        }
        if (!rd.bad)
            add_recent(r, &c);
    }
    return rd.bad ? ERR_INVALID : ERR_OK;
}

static int load_visitors(struct dayrow *r, const struct day_blobs *b)
{
    if (b->visitors && b->nvisitors) {
        const unsigned char *p = b->visitors;
        if (p[0] == 'H' && b->nvisitors == 1 + HLL_M) {
            r->hll = row_grow(r, NULL, 0, HLL_M);
            memcpy(r->hll, p + 1, HLL_M);
        } else if (p[0] == 'S' && b->nvisitors > 1 && (b->nvisitors - 1) % 8 == 0) {
            for (size_t i = 1; i < b->nvisitors; i += 8) {
                uint64_t h = 0;
                for (int k = 7; k >= 0; k--)
                    h = h << 8 | p[i + (size_t)k];
                dayrow_visitor(r, h);
            }
        } else {
            return ERR_INVALID;
        }
    } else {
        /* The visitors were pruned (their day's salt is gone): keep the count. */
        r->uniques_base = b->uniques;
    }
    return ERR_OK;
}

int dayrow_load(struct dayrow *r, const struct day_blobs *b)
{
    int rc = load_dims(r, b);
    if (rc == ERR_OK)
        rc = load_recent(r, b);
    if (rc == ERR_OK)
        rc = load_visitors(r, b);
    return rc;
}

int dayrow_add_blobs(struct dayrow *r, const struct day_blobs *b)
{
    struct dayrow one;
    dayrow_init(&one);
    int rc = dayrow_load(&one, b);
    if (rc == ERR_OK)
        dayrow_add(r, &one);
    dayrow_release(&one);
    return rc;
}

/* The newest clicks of a stored row merged with a delta's, as the bytes
 * they are stored as: the same blob as load + add + encode (the unit test
 * compares them byte for byte), without unpacking each stored click into a
 * struct recent_rec of 524 bytes, mostly padding, or growing an array to
 * hold them, which storing clicks paid for (bench/HISTORY.md, "Up to commit
 * 69fe67d"). Kept: the RECENT_KEEP newest by time, and of
 * clicks at the same time the later arrivals (stored ones arrived first),
 * in time order, as add_recent() keeps them. ERR_NOTFOUND when the stored
 * row holds more clicks than that (another version's): the caller then
 * takes the long way. */
static int merge_recent(const struct day_blobs *old, const struct dayrow *delta, struct buf *recent,
                        struct day_blobs *out)
{
    struct rview v[2 * RECENT_KEEP];
    int n = 0;
    struct reader rd = reader_of(old->recent, old->nrecent, 'R');
    while (!rd.bad && rd.p < rd.end) {
        if (n == RECENT_KEEP)
            return ERR_NOTFOUND;
        struct rview *c = &v[n++];
        c->ts = (int64_t)get_varint(&rd);
        for (int k = 0; k < 4 && !rd.bad; k++) {
            const char *len = get_bytes(&rd, 1);
            size_t m = len ? (unsigned char)*len : 0;
            c->text[k] = len ? get_bytes(&rd, m) : NULL;
            /* As set_text() then strlen(): clamped, up to a NUL. */
            c->len[k] = c->text[k] ? strnlen(c->text[k], m < DIM_MAX ? m : DIM_MAX) : 0;
        }
    }
    if (rd.bad)
        return ERR_INVALID;
    for (int i = 0; i < delta->rcount; i++)
        v[n++] = view_of(recent_at(delta, i));
    /* A stable insertion sort by time: arrival order breaks ties. */
    for (int i = 1; i < n; i++) {
        struct rview x = v[i];
        int j = i;
        for (; j > 0 && v[j - 1].ts > x.ts; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    int from = n > RECENT_KEEP ? n - RECENT_KEEP : 0;
    if (from < n)
        put_recent(v + from, n - from, recent, out);
    return ERR_OK;
}

int dayrow_merge(const struct day_blobs *old, const struct dayrow *delta, struct buf *dims,
                 struct buf *visitors, struct buf *recent, struct day_blobs *out)
{
    if (!old) {
        /* A new row is the delta as it is (its recent clicks are in arrival
         * order, which a single journal keeps in time order). */
        dayrow_encode(delta, dims, visitors, recent, out);
        return ERR_OK;
    }
    struct dayrow r;
    dayrow_init(&r);
    int rc = load_dims(&r, old);
    if (rc == ERR_OK)
        rc = load_visitors(&r, old);
    if (rc == ERR_OK) {
        add_counts(&r, delta);
        dayrow_encode(&r, dims, visitors, recent, out); /* all but the newest clicks */
        rc = merge_recent(old, delta, recent, out);
    }
    if (rc == ERR_NOTFOUND) {
        /* More stored clicks than this version keeps: unpack them all. */
        dayrow_release(&r); /* and empty again */
        rc = dayrow_load(&r, old);
        if (rc == ERR_OK) {
            dayrow_add(&r, delta);
            dayrow_encode(&r, dims, visitors, recent, out);
        }
    }
    dayrow_release(&r);
    return rc;
}

/* ---- reading ---- */

int dayrow_each_tally(const struct dayrow *r, tally_cb cb, void *arg)
{
    struct tally_view *v = r->ntallies ? malloc(r->ntallies * sizeof(*v)) : NULL;
    if (r->ntallies && !v)
        abort();
    for (size_t i = 0; i < r->ntallies; i++)
        v[i] = (struct tally_view){r->arena + r->tallies[i].off, &r->tallies[i]};
    if (r->ntallies)
        qsort(v, r->ntallies, sizeof(*v), cmp_view);
    int stop = 0;
    for (size_t i = 0; i < r->ntallies && !stop; i++)
        stop = cb(v[i].t->dim, v[i].v, v[i].t->n, arg);
    free(v);
    return stop;
}

bool dayrow_recent_full_since(const struct dayrow *r, int64_t ts)
{
    return r->rcount >= RECENT_KEEP && recent_at(r, 0)->ts >= ts;
}

int dayrow_each_recent(const struct dayrow *r, int limit, recent_rec_cb cb, void *arg)
{
    for (int i = r->rcount - 1, k = 0; i >= 0 && k < limit; i--, k++)
        if (cb(recent_at(r, i), arg))
            return 1;
    return 0;
}
