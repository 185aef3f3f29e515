/* clicks.h - the click pipeline, from the redirect to the store.
 *
 * The redirect encodes each click into its own thread's buffer (no lock, no
 * allocation once warm). Every journal-sync-ms each event-loop thread hands
 * its buffer to the journal thread, which appends the events to the durable
 * journal and syncs it (one fsync for everything that arrived); the fold
 * thread folds them into counters (aggregate.h); every click-flush-ms (or
 * after a lull, clicks_set_lull) the counters go to the store through the
 * writer's background lane, with the journal position they cover. On start
 * the journal is replayed from that position. */
#ifndef SHORTD_CLICKS_H
#define SHORTD_CLICKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clicks/event.h"

struct aggregate;
struct clicks;
struct journal_health;
struct store;
struct writer;

#define SALT_BYTES 16

struct clicks *clicks_new(struct store *st, struct writer *w, struct aggregate *agg, int nworkers);
/* Opens (locks) the journal, replays what the store has not counted yet and
 * starts the journal thread and the fold thread, the latter 'nice' lower in
 * priority (coop.h). Counters go to the store every 'flush_ms', and every
 * 'sync_ms' while the journal is down (journal.h), so that they, rather than
 * the journal, keep the clicks of a crash. ERR_BUSY when another process
 * holds the journal. */
int clicks_start(struct clicks *c, const char *journal_dir, int64_t flush_ms, int64_t sync_ms,
                 int nice);
/* After every worker has handed over its last buffer: journals, folds and
 * stores everything, then stops the threads. */
void clicks_stop(struct clicks *c);
void clicks_free(struct clicks *c);

/* Events out (events.h): before clicks_start, 'hold' tells how far the
 * journal may be released for the sinks' sake (UINT64_MAX: no limit); it is
 * called on the journal thread, and by clicks_start once the journal's id
 * is known. */
void clicks_set_hold(struct clicks *c, uint64_t (*hold)(void *arg), void *arg);
/* Once started: the journal's id (as the store's checkpoint names it), its
 * directory and its synced end (journal_read may read up to it). Any thread. */
const char *clicks_journal(struct clicks *c, const char **dir, uint64_t *synced);

/* Event-loop thread 'worker' only */
void clicks_record(struct clicks *c, int worker, const struct click_event *e);
/* A site's page beacon (pageview.h), journaled and folded as a click is. */
struct page_event;
void clicks_record_page(struct clicks *c, int worker, const struct page_event *e);
void clicks_flush(struct clicks *c, int worker);

/* Clicks recorded but not yet in the store (after clicks_stop: nor left
 * in the journal for the next start, which a stop does with a backlog on
 * disk). Any thread. */
uint64_t clicks_pending(struct clicks *c);
/* Clicks recorded (clicks_record) since the start, every event loop's.
 * Any thread. */
uint64_t clicks_recorded(struct clicks *c);
/* The fold's backlog. Past a bound (about 32 MiB of clicks), the fold
 * thread classifies the user agents it has not seen in a hurry (the bot
 * check alone: aggregate_set_hurry). Past four times that in memory
 * (clicks_set_backlog_max), further clicks wait in the journal on disk
 * only, and the fold reads them back; and while they are past it, wherever
 * they wait, each event loop pauses at each hand-over (backpressure). */
struct clicks_backlog {
    uint64_t unfolded;      /* clicks journaled, not yet classified and counted */
    uint64_t unfolded_max;  /* the most there have been since the start */
    uint64_t on_disk_bytes; /* journal bytes of those waiting on disk only */
    uint64_t pauses;        /* pauses of the event loops for it */
    int64_t oldest_age_ms; /* how long the oldest of them has waited since its hand-over; 0: none */
};
/* Any thread. */
void clicks_backlog(struct clicks *c, struct clicks_backlog *out);
/* Stops (true) or resumes the fold: clicks stay journaled, and wait there
 * to be counted. For maintenance and for tests of the operations checks
 * (the `fold-paused` setting, applied on SIGHUP). Stopping the journal
 * folds what waits regardless. Any thread. */
void clicks_pause_fold(struct clicks *c, bool paused);
/* How fresh the stats are: a click is in the store (and the stats) within
 * CLICKS_LAG_BOUND_MS of its redirect while the node keeps up; the lag is
 * how long the oldest click not yet stored has waited (0 when none waits;
 * clicks still in an event loop's buffer, at most journal-sync-ms old, are
 * not counted). Past the bound the node is behind: the journal still holds
 * every click, so nothing is lost, but the stats are staler than promised
 * and an operations check should say so. Any thread. */
#define CLICKS_LAG_BOUND_MS 60000
struct clicks_lag {
    int64_t lag_ms;   /* age of the oldest click not yet stored */
    uint64_t pending; /* clicks recorded, not yet stored (clicks_pending) */
    bool behind;      /* lag_ms past CLICKS_LAG_BOUND_MS */
};
/* 'now_ms' is mono_ms() (timeutil.h); tests pass a later time. */
void clicks_lag(struct clicks *c, int64_t now_ms, struct clicks_lag *out);
/* The fold holds at most about 512 MiB of folded clicks while a store job
 * runs (the fold-held-mb setting); past that it waits, and the clicks wait
 * to be folded (above). A replay at the start stores what it folded each
 * time it passes the bound. Any thread. */
void clicks_set_held_max(struct clicks *c, size_t bytes);
/* The memory the clicks waiting for the fold may take before further ones
 * wait on disk only (the fold-memory-mb setting; 0: the default, 128 MiB).
 * Any thread. */
void clicks_set_backlog_max(struct clicks *c, size_t bytes);
/* Counters are stored every flush_ms (clicks_start) while clicks keep
 * coming, and at once when none has come for 'ms' (the click-lull-ms
 * setting; 0: only every flush_ms): the end of a burst is in the stats
 * without waiting out the interval. Any thread. */
void clicks_set_lull(struct clicks *c, int64_t ms);
/* For health checks: false while the node is behind (above). */
bool clicks_keeping_up(struct clicks *c);
/* The journal's health as of its last sync (journal.h). Any thread. */
void clicks_health(struct clicks *c, struct journal_health *out);

/* Unique visitors: a keyed hash of (address, user agent) under the salt of
 * the click's day (0 when that day's salt is not loaded). Any thread. */
uint64_t clicks_visitor(const struct clicks *c, int64_t day, const void *addr, size_t addr_len,
                        const char *ua, size_t ua_len);
/* Loads (creating) the salts of today and tomorrow from the store, where
 * every node finds the same ones, and destroys older ones. Main thread. */
int clicks_rotate_salts(struct clicks *c, int64_t now_ms);

#endif
