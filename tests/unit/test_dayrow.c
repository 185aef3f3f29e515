/* test_dayrow.c - the packed row of a link's day: tallies, newest clicks,
 * visitors (exact, then a sketch), the blobs and merging them. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clicks/dayrow.h"
#include "base/err.h"
#include "test.h"

#include "base/banned.h"

struct seen {
    int n;
    int dim[16];
    char value[16][DIM_MAX + 1];
    int64_t count[16];
};

static int collect(int dim, const char *value, int64_t n, void *arg)
{
    struct seen *s = arg;
    if (s->n < 16) {
        s->dim[s->n] = dim;
        snprintf(s->value[s->n], sizeof(s->value[0]), "%s", value);
        s->count[s->n] = n;
    }
    s->n++;
    return 0;
}

/* A stored row made from 'r', loaded back into a fresh struct. */
static int round_trip(const struct dayrow *r, struct dayrow *out)
{
    struct buf d = BUF_INIT, v = BUF_INIT, rc = BUF_INIT;
    struct day_blobs b;
    dayrow_encode(r, &d, &v, &rc, &b);
    dayrow_init(out);
    int err = dayrow_load(out, &b);
    buf_release(&d);
    buf_release(&v);
    buf_release(&rc);
    return err;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void test_dayrow_tallies(void)
{
    struct dayrow r;
    dayrow_init(&r);
    dayrow_tally(&r, DIM_COUNTRY, "NL", 2, 1);
    dayrow_tally(&r, DIM_COUNTRY, "DE", 2, 3);
    dayrow_tally(&r, DIM_COUNTRY, "NL", 2, 1);
    dayrow_tally(&r, DIM_REFERRER, "example.com", 11, 1);
    dayrow_tally(&r, DIM_COUNTRY, "AT", 2, 2);
    r.clicks = 7;
    r.bots = 2;

    struct dayrow back;
    CHECK_EQ_INT(round_trip(&r, &back), ERR_OK);
    CHECK_EQ_INT(back.clicks, 7);
    CHECK_EQ_INT(back.bots, 2);
    struct seen s = {0};
    dayrow_each_tally(&back, collect, &s);
    /* By dimension, then count (largest first), then value. */
    CHECK_EQ_INT(s.n, 4);
    CHECK_EQ_INT(s.dim[0], DIM_REFERRER);
    CHECK_EQ_STR(s.value[1], "DE");
    CHECK_EQ_INT(s.count[1], 3);
    CHECK_EQ_STR(s.value[2], "AT");
    CHECK_EQ_STR(s.value[3], "NL");
    CHECK_EQ_INT(s.count[3], 2);

    /* Merging a stored row with a delta adds tallies and counts. */
    struct dayrow delta;
    dayrow_init(&delta);
    delta.clicks = 1;
    dayrow_tally(&delta, DIM_COUNTRY, "NL", 2, 5);
    struct buf d = BUF_INIT, v = BUF_INIT, rc = BUF_INIT, d2 = BUF_INIT, v2 = BUF_INIT,
               rc2 = BUF_INIT;
    struct day_blobs old, merged;
    dayrow_encode(&r, &d, &v, &rc, &old);
    CHECK_EQ_INT(dayrow_merge(&old, &delta, &d2, &v2, &rc2, &merged), ERR_OK);
    CHECK_EQ_INT(merged.clicks, 8);
    struct dayrow m;
    dayrow_init(&m);
    CHECK_EQ_INT(dayrow_load(&m, &merged), ERR_OK);
    memset(&s, 0, sizeof(s));
    dayrow_each_tally(&m, collect, &s);
    CHECK_EQ_STR(s.value[1], "NL");
    CHECK_EQ_INT(s.count[1], 7);
    /* No stored row: the delta alone. */
    CHECK_EQ_INT(dayrow_merge(NULL, &delta, &d2, &v2, &rc2, &merged), ERR_OK);
    CHECK_EQ_INT(merged.clicks, 1);
    buf_release(&d);
    buf_release(&v);
    buf_release(&rc);
    buf_release(&d2);
    buf_release(&v2);
    buf_release(&rc2);
    dayrow_release(&m);
    dayrow_release(&delta);
    dayrow_release(&back);
    dayrow_release(&r);
}

void test_dayrow_many_values(void)
{
    struct dayrow r;
    dayrow_init(&r);
    char v[32];
    /* Past the hash index's threshold, and past the per-dimension cap. */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < TALLY_VALUES_MAX + 200; i++) {
            int n = snprintf(v, sizeof(v), "host%d.example", i);
            dayrow_tally(&r, DIM_REFERRER, v, (size_t)n, 1);
        }
    dayrow_tally(&r, DIM_COUNTRY, "NL", 2, 1);
    CHECK_EQ_INT(r.values[DIM_REFERRER], TALLY_VALUES_MAX + 1);
    struct dayrow back;
    CHECK_EQ_INT(round_trip(&r, &back), ERR_OK);
    struct seen s = {0};
    dayrow_each_tally(&back, collect, &s);
    CHECK_EQ_INT(s.n, TALLY_VALUES_MAX + 2);
    /* The 200 values beyond the cap, twice each, are "(other)": the top. */
    CHECK_EQ_STR(s.value[0], "(other)");
    CHECK_EQ_INT(s.count[0], 400);
    CHECK_EQ_INT(s.count[1], 2);
    /* A value longer than DIM_MAX is clamped, not refused. */
    char big[300];
    memset(big, 'x', sizeof(big));
    dayrow_tally(&back, DIM_COUNTRY, big, sizeof(big), 1);
    dayrow_tally(&back, DIM_COUNTRY, big, DIM_MAX, 1);
    CHECK_EQ_INT(back.values[DIM_COUNTRY], 2);
    dayrow_release(&back);
    dayrow_release(&r);
}

static void remember(struct dayrow *r, int64_t ts)
{
    char ref[32];
    snprintf(ref, sizeof(ref), "r%lld", (long long)ts);
    const char *text[4] = {ref, "NL", "desktop", "Firefox"};
    dayrow_remember(r, ts, text);
}

struct recent_seen {
    int n;
    int64_t ts[RECENT_KEEP + 5];
};

static int collect_recent(const struct recent_rec *c, void *arg)
{
    struct recent_seen *s = arg;
    s->ts[s->n++] = c->ts;
    return 0;
}

void test_dayrow_recent(void)
{
    struct dayrow r;
    dayrow_init(&r);
    for (int64_t t = 1; t <= 30; t++)
        remember(&r, t * 10);
    struct recent_seen s = {0};
    dayrow_each_recent(&r, 100, collect_recent, &s);
    CHECK_EQ_INT(s.n, RECENT_KEEP);
    CHECK_EQ_INT(s.ts[0], 300); /* newest first */
    CHECK_EQ_INT(s.ts[RECENT_KEEP - 1], 110);

    struct dayrow back;
    CHECK_EQ_INT(round_trip(&r, &back), ERR_OK);
    memset(&s, 0, sizeof(s));
    dayrow_each_recent(&back, 3, collect_recent, &s);
    CHECK_EQ_INT(s.n, 3);
    CHECK_EQ_INT(s.ts[2], 280);

    /* Another node's clicks, older and newer, merge in time order. */
    struct dayrow other;
    dayrow_init(&other);
    remember(&other, 5); /* older than all kept: dropped */
    remember(&other, 285);
    remember(&other, 400);
    dayrow_add(&back, &other);
    memset(&s, 0, sizeof(s));
    dayrow_each_recent(&back, 100, collect_recent, &s);
    CHECK_EQ_INT(s.n, RECENT_KEEP);
    CHECK_EQ_INT(s.ts[0], 400);
    CHECK_EQ_INT(s.ts[1], 300);
    CHECK_EQ_INT(s.ts[2], 290);
    CHECK_EQ_INT(s.ts[3], 285);
    CHECK_EQ_INT(s.ts[RECENT_KEEP - 1], 130);
    dayrow_release(&other);
    dayrow_release(&back);
    dayrow_release(&r);
}

void test_dayrow_visitors(void)
{
    struct dayrow r;
    dayrow_init(&r);
    uint64_t x = 42;
    uint64_t first[VISITORS_EXACT];
    for (int i = 0; i < VISITORS_EXACT; i++) {
        first[i] = splitmix(&x);
        dayrow_visitor(&r, first[i]);
        dayrow_visitor(&r, first[i]); /* a repeat is not a new visitor */
    }
    CHECK_EQ_INT(dayrow_uniques(&r), VISITORS_EXACT);
    CHECK(r.hll == NULL);

    /* Exact sets merge exactly: half the other's visitors are known. */
    struct dayrow b;
    dayrow_init(&b);
    for (int i = 0; i < 20; i++)
        dayrow_visitor(&b, i % 2 ? first[i] : splitmix(&x));
    struct dayrow small;
    dayrow_init(&small);
    for (int i = 0; i < 50; i++)
        dayrow_visitor(&small, first[i]);
    dayrow_add(&small, &b);
    CHECK_EQ_INT(dayrow_uniques(&small), 60);

    /* Past VISITORS_EXACT: the sketch, within 5 % at ten thousand. */
    for (int i = VISITORS_EXACT; i < 10000; i++)
        dayrow_visitor(&r, splitmix(&x));
    CHECK(r.hll != NULL);
    int64_t u = dayrow_uniques(&r);
    test_note("estimate %lld of 10000", (long long)u);
    CHECK(u > 9500 && u < 10500);

    /* Stored and loaded, the sketch gives the same estimate. */
    struct dayrow back;
    CHECK_EQ_INT(round_trip(&r, &back), ERR_OK);
    CHECK_EQ_INT(dayrow_uniques(&back), u);

    /* The union of two sketches with 5,000 visitors in common. */
    struct dayrow c;
    dayrow_init(&c);
    uint64_t y = 42;
    for (int i = 0; i < 5000; i++)
        dayrow_visitor(&c, splitmix(&y)); /* the same first 5,000 */
    for (int i = 0; i < 5000; i++)
        dayrow_visitor(&c, splitmix(&x)); /* 5,000 new */
    dayrow_add(&back, &c);
    u = dayrow_uniques(&back);
    test_note("union estimate %lld of 15000", (long long)u);
    CHECK(u > 14250 && u < 15750);

    /* A stored row whose visitors were pruned keeps its count. */
    struct day_blobs pruned = {.clicks = 10, .uniques = 9};
    struct dayrow p;
    dayrow_init(&p);
    CHECK_EQ_INT(dayrow_load(&p, &pruned), ERR_OK);
    dayrow_visitor(&p, 1);
    CHECK_EQ_INT(dayrow_uniques(&p), 10);
    dayrow_release(&p);
    dayrow_release(&c);
    dayrow_release(&back);
    dayrow_release(&small);
    dayrow_release(&b);
    dayrow_release(&r);
}

void test_dayrow_bad_blobs(void)
{
    struct dayrow r;
    dayrow_init(&r);
    dayrow_tally(&r, DIM_COUNTRY, "NL", 2, 300);
    remember(&r, 12345);
    dayrow_visitor(&r, 7);
    struct buf d = BUF_INIT, v = BUF_INIT, rc = BUF_INIT;
    struct day_blobs b;
    dayrow_encode(&r, &d, &v, &rc, &b);
    /* Every truncation of each blob is refused, never misread. */
    for (int which = 0; which < 3; which++) {
        size_t full = which == 0 ? b.ndims : which == 1 ? b.nrecent : b.nvisitors;
        for (size_t n = 1; n < full; n++) {
            struct day_blobs t = b;
            if (which == 0)
                t.ndims = n;
            else if (which == 1)
                t.nrecent = n;
            else
                t.nvisitors = n;
            struct dayrow x;
            dayrow_init(&x);
            if (!CHECK_EQ_INT(dayrow_load(&x, &t), ERR_INVALID))
                test_note("blob %d cut to %zu bytes", which, n);
            dayrow_release(&x);
        }
    }
    /* A wrong leading byte is refused too. */
    struct day_blobs t = b;
    t.dims = "Xabc";
    t.ndims = 4;
    struct dayrow x;
    dayrow_init(&x);
    CHECK_EQ_INT(dayrow_load(&x, &t), ERR_INVALID);
    dayrow_release(&x);
    buf_release(&d);
    buf_release(&v);
    buf_release(&rc);
    dayrow_release(&r);
}

/* What dayrow_merge() must equal: the stored row unpacked, the delta added,
 * and the sum packed again. */
static int merge_the_long_way(const struct day_blobs *old, const struct dayrow *delta,
                              struct buf *d, struct buf *v, struct buf *rc, struct day_blobs *out)
{
    struct dayrow r;
    dayrow_init(&r);
    int err = dayrow_load(&r, old);
    if (err == ERR_OK) {
        dayrow_add(&r, delta);
        dayrow_encode(&r, d, v, rc, out);
    }
    dayrow_release(&r);
    return err;
}

static bool same_blob(const void *a, size_t na, const void *b, size_t nb)
{
    return na == nb && (!na || !memcmp(a, b, na));
}

/* A stored recent blob written by hand: 'n' clicks at times ts[i], each
 * with a referrer of 'reflen' bytes (longer than DIM_MAX, or with a NUL,
 * when the test wants one). */
static void hand_recent(struct buf *b, int n, const int64_t *ts, const char *ref, size_t reflen)
{
    buf_reset(b);
    buf_addc(b, 'R');
    for (int i = 0; i < n; i++) {
        uint64_t t = (uint64_t)ts[i];
        do {
            buf_addc(b, (char)((t & 0x7f) | (t > 0x7f ? 0x80 : 0)));
            t >>= 7;
        } while (t);
        buf_addc(b, (char)reflen);
        buf_add(b, ref, reflen);
        buf_add(b, "\2NL\7desktop\7Firefox", 19);
    }
}

/* A click whose referrer tells it apart from every other ('id'), so the
 * order of clicks at the same time shows in the blob. */
static void remember_as(struct dayrow *r, int64_t ts, int id)
{
    char ref[32];
    snprintf(ref, sizeof(ref), "r%d", id);
    const char *text[4] = {ref, "NL", "desktop", "Firefox"};
    dayrow_remember(r, ts, text);
}

/* dayrow_merge() packs the newest clicks without unpacking the stored ones:
 * across random rows (times that tie, deltas out of order or past
 * RECENT_KEEP), its blobs equal the long way's byte for byte. */
void test_dayrow_merge_recent(void)
{
    uint64_t x = 7;
    struct buf d1 = BUF_INIT, v1 = BUF_INIT, r1 = BUF_INIT, d2 = BUF_INIT, v2 = BUF_INIT,
               r2 = BUF_INIT, od = BUF_INIT, ov = BUF_INIT, orc = BUF_INIT;
    for (int trial = 0; trial < 2000; trial++) {
        struct dayrow old, delta;
        dayrow_init(&old);
        dayrow_init(&delta);
        int nold = (int)(splitmix(&x) % (RECENT_KEEP + 1)), ndelta = (int)(splitmix(&x) % 30);
        int64_t span = 1 + (int64_t)(splitmix(&x) % 40); /* small: many ties */
        for (int i = 0; i < nold; i++)
            remember_as(&old, (int64_t)(splitmix(&x) % (uint64_t)span), i);
        for (int i = 0; i < ndelta; i++)
            remember_as(&delta, (int64_t)(splitmix(&x) % (uint64_t)span), 100 + i);
        old.clicks = nold;
        delta.clicks = ndelta;
        dayrow_tally(&delta, DIM_COUNTRY, "NL", 2, ndelta);
        dayrow_visitor(&delta, splitmix(&x));
        struct day_blobs ob, a, b;
        /* Stored rows are kept in time order: pack, unpack, pack. */
        struct dayrow sorted;
        dayrow_init(&sorted);
        dayrow_add(&sorted, &old);
        dayrow_encode(&sorted, &od, &ov, &orc, &ob);
        CHECK_EQ_INT(dayrow_merge(&ob, &delta, &d1, &v1, &r1, &a), ERR_OK);
        CHECK_EQ_INT(merge_the_long_way(&ob, &delta, &d2, &v2, &r2, &b), ERR_OK);
        bool ok = CHECK(same_blob(a.recent, a.nrecent, b.recent, b.nrecent));
        ok = CHECK(same_blob(a.dims, a.ndims, b.dims, b.ndims)) && ok;
        ok = CHECK(same_blob(a.visitors, a.nvisitors, b.visitors, b.nvisitors)) && ok;
        ok = CHECK_EQ_INT(a.clicks, b.clicks) && ok;
        ok = CHECK_EQ_INT(a.uniques, b.uniques) && ok;
        if (!ok)
            test_note("trial %d: %d stored clicks, %d new, times 0..%lld", trial, nold, ndelta,
                      (long long)span - 1);
        dayrow_release(&sorted);
        dayrow_release(&old);
        dayrow_release(&delta);
        if (!ok)
            break;
    }

    /* Stored text longer than DIM_MAX or holding a NUL, and a stored row
     * with more clicks than RECENT_KEEP (another version's): the same too. */
    char ref[200];
    memset(ref, 'r', sizeof(ref));
    ref[100] = '\0';
    int64_t ts[RECENT_KEEP + 5];
    for (int i = 0; i < RECENT_KEEP + 5; i++)
        ts[i] = 100 + i;
    struct dayrow delta;
    dayrow_init(&delta);
    remember(&delta, 110);
    remember(&delta, 500);
    const struct {
        int n;
        size_t reflen;
    } odd[] = {
        {3, 200},
        {3, 90},
        {RECENT_KEEP + 5, 3},
        {RECENT_KEEP, 0},
    };
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        hand_recent(&orc, odd[i].n, ts, ref, odd[i].reflen);
        struct day_blobs ob = {.clicks = 1, .recent = orc.p, .nrecent = orc.len}, a, b;
        CHECK_EQ_INT(dayrow_merge(&ob, &delta, &d1, &v1, &r1, &a), ERR_OK);
        CHECK_EQ_INT(merge_the_long_way(&ob, &delta, &d2, &v2, &r2, &b), ERR_OK);
        if (!CHECK(same_blob(a.recent, a.nrecent, b.recent, b.nrecent)))
            test_note("stored row %zu", i);
        /* Every truncation of the stored clicks is refused, as by dayrow_load(). */
        for (size_t cut = 1; cut < orc.len; cut++) {
            ob.nrecent = cut;
            int want = merge_the_long_way(&ob, &delta, &d2, &v2, &r2, &b);
            if (!CHECK_EQ_INT(dayrow_merge(&ob, &delta, &d1, &v1, &r1, &a), want))
                test_note("stored row %zu cut to %zu bytes", i, cut);
        }
    }
    dayrow_release(&delta);
    struct buf *all[] = {&d1, &v1, &r1, &d2, &v2, &r2, &od, &ov, &orc};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        buf_release(all[i]);
}

/* A row stored before the bot agents' dimension (DIM_BOT_AGENT) existed:
 * its bytes are what that version wrote, and they still load, merge with a
 * delta carrying agents, and come out with both. The format did not change
 * (a tally is its dimension's number, so a new dimension is only a new
 * number); an older reader skips the numbers it does not know. */
void test_dayrow_old_rows(void)
{
    static const char dims[] = "D"
                               "\x0a\x07"
                               "crawler"
                               "\x05" /* bot_kinds */
                               "\x0a\x07"
                               "monitor"
                               "\x01"
                               "\x03\x06"
                               "Chrome"
                               "\x02"; /* browsers */
    static const char recent[] = "R"
                                 "\x80\xb0\xe8\xc9\xd6\x33" /* a time in ms */
                                 "\x0e"
                                 "www.google.com"
                                 "\x02"
                                 "DE"
                                 "\x07"
                                 "desktop"
                                 "\x06"
                                 "Chrome";
    static const char visitors[] = "S"
                                   "\x01\x02\x03\x04\x05\x06\x07\x08";
    struct day_blobs old = {.clicks = 2,
                            .bots = 6,
                            .uniques = 1,
                            .dims = dims,
                            .ndims = sizeof(dims) - 1,
                            .recent = recent,
                            .nrecent = sizeof(recent) - 1,
                            .visitors = visitors,
                            .nvisitors = sizeof(visitors) - 1};

    struct dayrow r;
    dayrow_init(&r);
    CHECK_EQ_INT(dayrow_load(&r, &old), ERR_OK);
    struct seen s = {0};
    dayrow_each_tally(&r, collect, &s);
    CHECK_EQ_INT(s.n, 3);
    CHECK_EQ_INT(r.rcount, 1);
    CHECK_EQ_INT(dayrow_uniques(&r), 1);
    dayrow_release(&r);

    struct dayrow delta;
    dayrow_init(&delta);
    delta.bots = 2;
    dayrow_tally(&delta, DIM_BOT_KIND, "crawler", 7, 2);
    dayrow_tally(&delta, DIM_BOT_AGENT, "googlebot", 9, 1);
    dayrow_tally(&delta, DIM_BOT_AGENT, "other", 5, 1);
    struct buf d = BUF_INIT, v = BUF_INIT, rc = BUF_INIT;
    struct day_blobs out;
    CHECK_EQ_INT(dayrow_merge(&old, &delta, &d, &v, &rc, &out), ERR_OK);
    CHECK_EQ_INT(out.clicks, 2);
    CHECK_EQ_INT(out.bots, 8);
    CHECK_EQ_INT(out.uniques, 1);

    dayrow_init(&r);
    CHECK_EQ_INT(dayrow_load(&r, &out), ERR_OK);
    memset(&s, 0, sizeof(s));
    dayrow_each_tally(&r, collect, &s);
    static const struct {
        int dim;
        const char *value;
        int64_t n;
    } want[] = {
        {DIM_BROWSER, "Chrome", 2},      {DIM_BOT_KIND, "crawler", 7}, {DIM_BOT_KIND, "monitor", 1},
        {DIM_BOT_AGENT, "googlebot", 1}, {DIM_BOT_AGENT, "other", 1},
    };
    if (CHECK_EQ_INT(s.n, (int)(sizeof(want) / sizeof(want[0])))) {
        for (int i = 0; i < s.n; i++) {
            CHECK_EQ_INT(s.dim[i], want[i].dim);
            CHECK_EQ_STR(s.value[i], want[i].value);
            CHECK_EQ_INT(s.count[i], want[i].n);
        }
    }
    CHECK_EQ_INT(r.rcount, 1);
    CHECK_EQ_STR(r.recent[0].text[0], "www.google.com");
    dayrow_release(&r);
    dayrow_release(&delta);
    buf_release(&d);
    buf_release(&v);
    buf_release(&rc);
}
