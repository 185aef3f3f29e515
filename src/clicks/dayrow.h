/* dayrow.h - one link's clicks of one day, packed into one stored row.
 *
 * A click touches one row: the link's row of that day holds its counts, its
 * dimension tallies, its newest clicks and its visitors, the last three as
 * blobs that both store backends keep byte for byte. The aggregator folds
 * events into a struct dayrow in memory; a store merges that into the stored
 * row (read, dayrow_merge, write) once per batch, so a click costs one row
 * write instead of one per dimension.
 *
 * Visitors: the day's keyed visitor hashes, exact while there are at most
 * VISITORS_EXACT of them (a sorted list), then a HyperLogLog sketch of
 * 2^HLL_P registers (standard error 1.04 / sqrt(1024), about 3.3 %). The
 * 'uniques' column is the set's size or the sketch's estimate.
 *
 * A dimension keeps at most TALLY_VALUES_MAX distinct values a day; clicks
 * with further new values count under "(other)", so hostile input cannot
 * grow a row without bound.
 *
 * Pure: no I/O; one thread per struct. */
#ifndef SHORTD_DAYROW_H
#define SHORTD_DAYROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clicks/analytics.h"
#include "base/buf.h"
#include "base/bump.h"
#include "clicks/classify.h"

#define VISITORS_EXACT 128
#define TALLY_VALUES_MAX 1000 /* distinct values per dimension and day, then "(other)" */
#define HLL_P 10
#define HLL_M (1u << HLL_P)

struct tally {
    uint32_t off; /* value: 'len' bytes at arena + off */
    uint8_t len;
    uint8_t dim; /* enum dim */
    int64_t n;
};

struct recent_rec {
    int64_t ts;
    char text[4][DIM_MAX + 1]; /* referrer, country, device, browser */
};

struct dayrow {
    int64_t clicks, bots; /* human and bot clicks */
    int64_t uniques_base; /* uniques of a stored row whose visitors were pruned */
    struct tally *tallies;
    size_t ntallies, cap;
    char *arena; /* tally values, NUL-terminated */
    size_t used, room;
    uint32_t *index; /* open addressing over tallies (i + 1), once many */
    size_t nindex;
    uint16_t values[DIM__COUNT]; /* distinct values per dimension */
    struct recent_rec *recent;   /* the newest human clicks: in arrival order */
    int rnext, rcount, rcap;     /* until RECENT_KEEP, then a ring from rnext */
    uint64_t *vis;               /* sorted hashes while exact ... */
    size_t nvis, viscap;
    uint8_t *hll;     /* ... the sketch once not (HLL_M registers) */
    struct bump *mem; /* where the arrays come from; NULL: malloc */
};

void dayrow_init(struct dayrow *r);
/* A row whose arrays come from 'mem' and are freed with it (bump.h), for
 * rows that die together. */
void dayrow_init_bump(struct dayrow *r, struct bump *mem);
void dayrow_release(struct dayrow *r);

/* Folding */
void dayrow_tally(struct dayrow *r, int dim, const char *value, size_t len, int64_t n);
void dayrow_remember(struct dayrow *r, int64_t ts, const char *const text[4]);
void dayrow_visitor(struct dayrow *r, uint64_t hash);
int64_t dayrow_uniques(const struct dayrow *r);

/* A row as stored: counts and the three blobs (NULL, 0 when absent). */
struct day_blobs {
    int64_t clicks, bots, uniques;
    const void *dims, *visitors, *recent;
    size_t ndims, nvisitors, nrecent;
};

/* Reads a stored row into 'r' (initialised, empty). ERR_INVALID for a blob
 * this version cannot read (the row is then left as far as it was read). */
int dayrow_load(struct dayrow *r, const struct day_blobs *b);
/* Adds everything of 'delta' to 'r'. */
void dayrow_add(struct dayrow *r, const struct dayrow *delta);
/* Adds a stored row's blobs to 'r' (summing rows for a range of days);
 * ERR_INVALID, adding nothing, for a blob this version cannot read. */
int dayrow_add_blobs(struct dayrow *r, const struct day_blobs *b);
/* Encodes 'r' into the three bufs (reset first) and its counts into 'b',
 * whose blob pointers then point into the bufs. */
void dayrow_encode(const struct dayrow *r, struct buf *dims, struct buf *visitors,
                   struct buf *recent, struct day_blobs *b);
/* load + add + encode: the stored row 'old' (NULL for none) with 'delta'. */
int dayrow_merge(const struct day_blobs *old, const struct dayrow *delta, struct buf *dims,
                 struct buf *visitors, struct buf *recent, struct day_blobs *out);

/* Reading: tallies sorted by dimension, then count (largest first), then
 * value; cb returns non-zero to stop. */
typedef int (*tally_cb)(int dim, const char *value, int64_t n, void *arg);
int dayrow_each_tally(const struct dayrow *r, tally_cb cb, void *arg);
/* Whether the newest clicks are full and none is older than 'ts': a click
 * before 'ts' would not be kept. */
bool dayrow_recent_full_since(const struct dayrow *r, int64_t ts);
/* The newest clicks, newest first, at most 'limit'. */
typedef int (*recent_rec_cb)(const struct recent_rec *c, void *arg);
int dayrow_each_recent(const struct dayrow *r, int limit, recent_rec_cb cb, void *arg);

#endif
