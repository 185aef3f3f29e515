/* aggregate.h - folding click events into per-link, per-day counters, and
 * the writer job that stores a batch of them together with the journal
 * position it covers (so a replay after a crash starts exactly where the
 * stored counters stop, and never counts a click twice).
 *
 * One thread at a time (the click pipeline's). */
#ifndef SHORTD_AGGREGATE_H
#define SHORTD_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clicks/event.h"

struct aggregate;
struct classify;
struct store;
struct writer;

/* 'self_hosts' (NULL-terminated) are shortd's own: referrers from them are internal. */
struct aggregate *aggregate_new(struct classify *cl, const char *const *self_hosts);
void aggregate_free(struct aggregate *a);

/* Classifies and counts one event. */
void aggregate_add(struct aggregate *a, const struct click_event *e);
/* The same for a site's page beacon (pageview.h): into its site day. */
struct page_event;
void aggregate_add_page(struct aggregate *a, const struct page_event *e);
/* A journal record of either kind, decoded and added: false (nothing
 * counted) for a record this version cannot read. */
bool aggregate_add_record(struct aggregate *a, const void *rec, size_t n);
/* What aggregate_add does to the event's link day 'r', for a caller that
 * keeps its own rows (the importer, import.h): the same classification, so
 * imported clicks have the same dimensions and bots apart as served ones. */
struct dayrow;
void aggregate_fold(struct classify *cl, const char *const *self_hosts, bool hurry,
                    struct dayrow *r, const struct click_event *e);
/* While on, aggregate_add classifies user agents in a hurry
 * (classify_ua_hurried): for when the fold is far behind. Off at first. */
void aggregate_set_hurry(struct aggregate *a, bool on);
bool aggregate_empty(const struct aggregate *a);
uint64_t aggregate_events(const struct aggregate *a); /* events folded since the last take */
/* Clicks folded since the start: of people, and of bots and prefetches
 * (for /metrics). Any thread. */
void aggregate_counts(const struct aggregate *a, uint64_t *clicks, uint64_t *bots);
/* Bytes the link days folded since the last take hold: their table and the
 * memory of their rows (the chunks in use, bump.h). */
size_t aggregate_bytes(const struct aggregate *a);

/* Moves everything folded so far into a job for writer 'w' that stores it
 * and sets the checkpoint to 'journal_pos', and submits it. The job stores
 * its link days a chunk (a transaction) at a time, going back to the end of
 * the writer's queue after each, so creates never wait for a whole job. A
 * chunk whose transaction fails is submitted again after a pause, until it
 * commits. done(pos, events, arg), unless NULL, runs on the writer thread
 * after the last commit; the job's memory is freed by the next submit (or
 * aggregate_free, once the writer has run every job), on the folding thread. */
void aggregate_submit(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                      void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg);

/* A job replayed after a crash that stopped it between two chunks (see
 * aggregate_checkpoint): the same clicks, folded again, and the same journal
 * position; it skips the link days the store already has. */
void aggregate_resume(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                      void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg);

/* Compacting (store_stats.h, "Appending"), for a store that appends link
 * days: on the folding thread, often (every wake-up will do), starts a
 * round of compacting when 'rows' appended rows wait or one has waited
 * 'every_ms' since the last round (aggregate_set_compact; 0: the
 * defaults, 2,000,000 and 30 s). A round runs as background jobs of 'w',
 * a chunk a transaction, taking turns with the other jobs; the first tick
 * after a start counts the rows a previous run left. aggregate_stop_compacting
 * ends a round at its next chunk and starts no other: call it before the
 * writer stops. */
void aggregate_tick(struct aggregate *a, struct writer *w);
void aggregate_set_compact(struct aggregate *a, size_t rows, int64_t every_ms);
void aggregate_stop_compacting(struct aggregate *a);
/* Appended rows not yet compacted; -1 until they are counted after a start */
int64_t aggregate_pending(const struct aggregate *a);

/* Checkpoints are kept per journal (the journal's id names them), so nodes
 * that share a store never overwrite each other's. Set before any submit. */
void aggregate_set_journal(struct aggregate *a, const char *journal_id);
/* Link days per transaction (0: the default, 4,000); for tests. */
void aggregate_set_chunk(struct aggregate *a, size_t link_days);

/* The journal position the stored counters cover (0 when none) and, when a
 * job was stopped between two chunks, the journal position it ends at
 * ('partial', else 0): the clicks from 'pos' to 'partial' are stored in
 * part, and go to aggregate_resume() before any later ones are folded. */
int aggregate_checkpoint(struct aggregate *a, struct store *st, uint64_t *pos, uint64_t *partial);

#endif
