/* aggregate.h - folding click events into per-link, per-day counters, and
 * the writer job that stores a batch of them together with the journal
 * position it covers (so a replay after a crash starts exactly where the
 * stored counters stop, and never counts a click twice).
 *
 * One thread at a time (the click pipeline's). */
#ifndef SHORTD_AGGREGATE_H
#define SHORTD_AGGREGATE_H

#include <stdbool.h>
#include <stdint.h>

#include "event.h"

struct aggregate;
struct classify;
struct store;
struct writer;

/* 'self_hosts' (NULL-terminated) are shortd's own: referrers from them are internal. */
struct aggregate *aggregate_new(struct classify *cl, const char *const *self_hosts);
void aggregate_free(struct aggregate *a);

/* Classifies and counts one event. */
void aggregate_add(struct aggregate *a, const struct click_event *e);
bool aggregate_empty(const struct aggregate *a);
uint64_t aggregate_events(const struct aggregate *a);   /* events folded since the last take */

/* Moves everything folded so far into a job for writer 'w' that stores it
 * and sets the checkpoint to 'journal_pos', and submits it. A job whose
 * transaction fails is submitted again after a pause, with the same counters
 * and checkpoint, until it commits. done(pos, events, arg) runs on the
 * writer thread after the commit; the job frees itself. */
void aggregate_submit(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                      void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg);

/* Checkpoints are kept per journal (the journal's id names them), so nodes
 * that share a store never overwrite each other's. Set before any submit. */
void aggregate_set_journal(struct aggregate *a, const char *journal_id);

/* The journal position the stored counters cover (0 when none). */
int aggregate_checkpoint(struct aggregate *a, struct store *st, uint64_t *pos);

#endif
