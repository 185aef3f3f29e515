/* storeq.h - the store threads: the one place where a request waits for
 * storage, so that no event loop ever does.
 *
 * Anything a request needs from the store or the shared cache (an uncached
 * code, a controlled link, an API key not yet known, every API call) is a
 * job queued here; a store thread runs it on its own store and Redis
 * connections, and the job hands its answer back to the request's event
 * loop (worker_post). Meanwhile the loop serves everything else, and the
 * connection, paused like any that waits (HTTP_ASYNC), keeps its pipelined
 * requests in order.
 *
 * Bounds. At most 'queue_max' jobs wait per node and pool: storeq_submit
 * refuses the next one at once, and its request is answered 503. A request waits at
 * most 'timeout_ms' for its answer: a wait (struct storeq_wait, on the
 * request's loop) that reaches its deadline has on_timeout() called on that
 * loop, which answers 503 with Retry-After unless the job has begun and
 * still uses the request (then the store's own bound on each call ends
 * it). A job that has not begun can be cancelled (storeq_cancel): it is then
 * run with 'cancelled' set, to release what it holds and touch nothing else.
 *
 * Store threads run below the event loops' priority (coop.h: a yield every
 * COOP_SLICE_US inside SQLite too), so a long search shares a core rather
 * than taking it from a loop; a redirect's misses run in a pool of their
 * own, lower still. */
#ifndef SHORTD_STOREQ_H
#define SHORTD_STOREQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct app;
struct storeq;
struct worker;

struct storeq_job {
    /* A store thread. With 'cancelled' the job was cancelled before it
     * began: release, answer nothing. */
    void (*run)(struct storeq_job *j, bool cancelled);
    bool low; /* a redirect's miss: the pool below the others */
    /* Internal */
    _Atomic int state;
    struct storeq_job *next;
};

/* A request's wait, on its event loop (one wait at a time per request). */
struct storeq_wait {
    void (*on_timeout)(struct storeq_wait *w); /* the loop; once, if ever */
    /* Internal */
    struct storeq_wait *prev, *next;
    uint64_t deadline; /* the loop's clock, ms */
    int lane;
    bool linked;
};

/* Two pools, started at once, each thread with the calling process's cache
 * registration (cache.h): 'nthreads' threads at nice 'nice' (coop.h) for
 * what people wait on, and half as many (at least one) at 'low_nice' for
 * the jobs flagged 'low' (a redirect's misses, which a flood of unknown
 * codes can send at any rate: fewer of them at once leave more of the
 * cores, PostgreSQL's backends' share included, to cached redirects). At most 'queue_max' jobs wait in each. The waits of worker i
 * are timed on worker i's loop: call before server_start. */
int storeq_new(struct app *app, int nthreads, int queue_max, int64_t timeout_ms, int heavy_per_key,
               int nice, int low_nice, struct storeq **out);
/* At shutdown, before the connections close: refuses every job from now
 * on and waits until none waits or runs, so every answer finds its request. */
void storeq_drain(struct storeq *q);
/* Runs what is queued (as cancelled), stops the threads and frees. After
 * server_join: no loop waits any more. NULL is fine. */
void storeq_free(struct storeq *q);

/* Any thread. False when 'queue_max' jobs wait already (counted as
 * rejected): the caller answers 503 itself. */
bool storeq_submit(struct storeq *q, struct storeq_job *j);
/* Any thread. True when 'j' had not begun: it never will, and its run()
 * is called with 'cancelled' instead. False once it has begun. */
bool storeq_cancel(struct storeq_job *j);

/* The event loop of the request: starts timing a wait of timeout_ms ... */
void storeq_wait_start(struct storeq *q, struct storeq_wait *w);
/* ... and ends it (its answer came); nothing when it timed out already. */
void storeq_wait_end(struct storeq *q, struct storeq_wait *w);

/* Heavy reads (a search, an export) of one API key at a time, at most
 * 'per_key' (storeq_new): true when this one may run, and then
 * storeq_heavy_leave when it ends; false (counted) when the key has its
 * share running already. Any thread. */
bool storeq_heavy_enter(struct storeq *q, int64_t key_id);
void storeq_heavy_leave(struct storeq *q, int64_t key_id);

/* For /metrics: jobs waiting now, jobs taken, refused (queue full), and
 * waits that reached their deadline. */
struct storeq_counts {
    int64_t queued, jobs, rejected, timeouts, heavy_refused;
};
void storeq_counts(const struct storeq *q, struct storeq_counts *out);

#endif
