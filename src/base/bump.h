/* bump.h - a bump allocator for many small objects that die together: the
 * link days a folding table collects (aggregate.c).
 *
 * A busy second's table holds a hundred thousand link days, each five small
 * allocations (the day, its tallies, their text, its newest clicks, its
 * visitors) that malloc scatters over the heap and that are all freed at
 * once when the batch is stored: malloc and free were a large share of
 * folding with a million links (bench/HISTORY.md, "Up to commit 69fe67d").
 * Here they are laid end to end in 2 MiB chunks, so a link day's parts
 * share a page or two, and clearing the lot is one call. Chunks are kept
 * for the next table (as many as this one used; after a burst, a
 * sixty-fourth fewer at each clear), so a steady load maps nothing after
 * its first batches.
 *
 * One thread at a time. Allocation failure aborts (as in buf.h): the sizes
 * are the aggregator's, bounded by its own limits. */
#ifndef SHORTD_BUMP_H
#define SHORTD_BUMP_H

#include <stddef.h>

struct bump;

struct bump *bump_new(void);
void bump_free(struct bump *b); /* NULL is fine */

/* 'n' bytes, 16-byte aligned, not zeroed; valid until the next clear. */
void *bump_alloc(struct bump *b, size_t n);
/* Forgets every allocation; keeps chunks for reuse: as many as were used,
 * or 63/64 of those kept at the last clear, whichever is more. */
void bump_clear(struct bump *b);
/* Bytes of chunks mapped (in use or kept). */
size_t bump_mapped(const struct bump *b);
/* Bytes of chunks in use: mapped, less the spare ones kept. */
size_t bump_used(const struct bump *b);

#endif
