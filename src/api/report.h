/* report.h - reports built from the store, shared by the HTTP API and the
 * CLI: one link's stats over a range of days, and the export of links with
 * their daily counts, produced piece by piece so a large export never sits
 * in memory. Any thread with its own store connection (all of them). */
#ifndef SHORTD_REPORT_H
#define SHORTD_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "store/store_links.h"

#define STATS_MAX_DAYS 1000

/* The stats object of link 'l' for days [from, to] (days since the epoch). */
int report_stats(struct store *st, const struct link *l, int64_t from, int64_t to, json_t **out);

/* Every link of 'owner' (-1: all) together over days [from, to]: the
 * days, their sums and every dimension, shaped as the stats object
 * without the per-link fields. */
int report_service(struct store *st, int64_t owner, int64_t from, int64_t to, json_t **out);

struct export;
enum export_format { EXPORT_JSON, EXPORT_CSV };

/* Links of 'owner' (-1: all), every state, newest first. */
struct export *export_new(struct store *st, int64_t owner, enum export_format f,
                          const char *base_url);
/* Appends the next piece; 1 when more follows, 0 at the end, -1 on a store error. */
int export_next(struct export *x, struct buf *out);
void export_free(struct export *x);
/* Links written so far (for a progress line). */
int64_t export_count(const struct export *x);

#endif
