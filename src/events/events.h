/* events.h - events out: the delivery thread ("shortd-events") that takes
 * each sink's events from their sources and delivers them in batches.
 *
 * Sources: this node's click journal (clicks.h; a click event exists once
 * its record is synced, and its ID comes from the record's place, id.h)
 * and the store's outbox of link events (outbox.h), delivered once across
 * a cluster by whichever node holds the sink's lease on it. Each sink has
 * a durable position in each source (store_events.h), moved only after the
 * sink acknowledged the batch: a crash or a restart delivers again from
 * there, the same bytes under the same IDs, and receivers deduplicate on
 * the IDs. The journal keeps what a sink has not taken (events_hold).
 *
 * A failed batch is tried again after retry_base, doubling to retry_cap,
 * with jitter; once the sink has failed for retry_budget it moves to the
 * failed archive (with its body and hash) in the transaction that moves
 * the position on: never dropped. While the sink keeps failing, each next
 * batch is archived at its first failure; a success ends that. Every sink has its own batches and timers,
 * and every HTTP call a timeout, so a dead sink slows no other one, and
 * nothing of this runs on an event loop or a store thread. */
#ifndef SHORTD_EVENTS_H
#define SHORTD_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

struct clicks;
struct sink;
struct store;
struct writer;

struct events_config {
    int64_t retry_base_ms;         /* first wait after a failure */
    int64_t retry_cap_ms;          /* longest wait */
    int64_t retry_budget_ms;       /* how long a batch is retried before it is archived */
    int64_t batch_wait_ms;         /* how long a batch may wait to fill */
    int64_t timeout_ms;            /* every call to a sink */
    int batch_max;                 /* events in a batch, at most */
    int inflight;                  /* batches in flight per sink, at most */
    const char *node;              /* this node's name, for the outbox lease */
    const char *const *self_hosts; /* as classify_referrer takes them */
};

/* 'clicks' NULL: link events only. The writer stores positions and the
 * archive. Nothing runs before events_start. */
struct events *events_new(struct store *st, struct writer *w, struct clicks *clicks,
                          const struct events_config *cfg);
/* For clicks_set_hold (clicks.h): how far the journal may be released. */
uint64_t events_hold(void *events);
/* Starts the thread (after clicks_start). ERR_IO when it cannot. */
int events_start(struct events *ev);
/* Stops the thread; batches not acknowledged are delivered after the next
 * start. */
void events_stop(struct events *ev);
void events_free(struct events *ev); /* NULL is fine */

/* Per sink, for /metrics and the operations checks (issue 29). */
struct events_sink_status {
    int64_t sink;
    char kind[16];
    uint64_t lag_events; /* not yet delivered (counted up to EVENTS_LAG_CAP) */
    int64_t lag_seconds; /* age of the oldest event not yet delivered; 0: none */
    uint64_t backlog;    /* events in batches waiting for a retry */
    uint64_t failures;   /* failed attempts since the start */
    uint64_t deliveries; /* acknowledged batches since the start */
    uint64_t delivered;  /* ... and their events */
    uint64_t archived;   /* batches moved to the failed archive since the start */
    uint64_t unresolved; /* batches of this sink in the archive, unresolved */
    bool failing;        /* its last attempt failed */
};
#define EVENTS_LAG_CAP 100000
/* Fills at most 'max' entries; returns how many sinks there are. Any thread. */
int events_status(struct events *ev, struct events_sink_status *out, int max);
/* Unresolved batches in the archive, every sink. Any thread. */
uint64_t events_unresolved(struct events *ev);
/* Appends the sinks' figures to /metrics' text (Prometheus). Any thread. */
void events_metrics(struct events *ev, struct buf *out);

/* Managing sinks (the API and the CLI), in the caller's write transaction.
 * Creates a sink from 's' (kind, endpoint, types, owner, domain, options;
 * a webhook's secret made here unless given), checks it, and starts its
 * position in the outbox at the head: it receives the events from now on.
 * ERR_INVALID with 'why'. 's->id' and 's->secret' are set. */
int events_sink_create(struct store *st, struct sink *s, int64_t now, char *why, size_t n);
/* Checks a sink's kind, endpoint, types and options: ERR_INVALID with 'why'. */
int events_sink_check(const struct sink *s, char *why, size_t n);

/* Sends an archived batch again, unchanged, to its sink, and records the
 * outcome with the batch (the archive keeps it). ERR_OK when the sink
 * acknowledged it; ERR_IO with 'why' when not; ERR_NOTFOUND. */
int events_replay(struct store *st, int64_t failed_id, int64_t timeout_ms, char *why, size_t n);

#endif
