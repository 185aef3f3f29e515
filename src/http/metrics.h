/* metrics.h - request counters and latency histograms for /metrics.
 * Each event-loop thread writes only its own block (no shared cache line on
 * the hot path); a scrape sums the blocks. Label sets are fixed: the route
 * table's names and a fixed list of statuses. */
#ifndef SHORTD_METRICS_H
#define SHORTD_METRICS_H

#include <stdint.h>

#include "base/buf.h"

struct metrics;
struct metrics_local;

/* 'routes' (nroutes names, index = route id) must outlive the metrics. */
struct metrics *metrics_new(const char *const *routes, int nroutes);
void metrics_free(struct metrics *m);

/* The block of worker 'i', made on first use. */
struct metrics_local *metrics_local(struct metrics *m, int i);

/* Owner thread only */
void metrics_observe(struct metrics_local *l, int route, int status, uint64_t ns);
void metrics_rejected(struct metrics_local *l);
void metrics_rejected_addr(struct metrics_local *l); /* over the per-address cap */
/* Answer bytes this worker's connections hold unsent (set by its tick). */
void metrics_output_queued(struct metrics_local *l, uint64_t bytes);

/* Appends the Prometheus text of every counter. Any thread. */
void metrics_render(struct metrics *m, struct buf *out);

#endif
