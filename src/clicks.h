/* clicks.h - counting clicks off the hot path.
 *
 * The redirect appends a small event to its own thread's buffer (no lock, no
 * allocation); the thread's tick hands the buffer to the writer, which folds
 * the events into per-link, per-day counters in one transaction. This is the
 * seam the analytics pipeline (journal, classification) grows from. */
#ifndef SHORTD_CLICKS_H
#define SHORTD_CLICKS_H

#include <stddef.h>
#include <stdint.h>

struct clicks;
struct writer;

struct clicks *clicks_new(struct writer *w, int nworkers);
void clicks_free(struct clicks *c);         /* after the last flush has been written */

/* Owner thread of worker 'worker' only. */
void clicks_record(struct clicks *c, int worker, const char *code, size_t n, int64_t now_ms);
void clicks_flush(struct clicks *c, int worker);

/* Recorded but not yet committed to the store. Any thread. */
uint64_t clicks_pending(struct clicks *c);

#endif
