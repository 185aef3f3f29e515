/* clicks.c - the click pipeline of clicks.h.
 *
 * DESIGN
 * Hot path: clicks_record appends a length-prefixed encoded event to the
 * worker's own buffer; nothing is shared. clicks_flush (the worker's timer)
 * moves the buffer onto the pipeline queue under a mutex, once per interval.
 * The journal thread owns the journal: it appends every queued event, syncs
 * once, and hands the batches on to the fold thread, which owns the
 * aggregate: it folds them, and at most one store job is in flight at a
 * time, so checkpoints are stored in order. The journal is released up to
 * the last stored checkpoint, and rotated every flush interval so that
 * stored clicks do not wait for a full segment to leave the disk. Folding
 * and storing are background work: the fold thread (and the writer's store
 * lane) run at a lower priority ('background-nice') and yield often
 * (coop.h), so a redirect never waits
 * behind them; the journal thread keeps the normal priority, so however busy
 * the machine, a click answered is on disk within the sync interval. When
 * the fold falls behind by FOLD_HURRY it classifies in a hurry (the bot
 * check alone for user agents it has not cached: aggregate_set_hurry).
 * Past 'backlog_max' of clicks waiting in memory for the fold, a batch the
 * journal has synced goes hollow: its memory is freed and the fold reads
 * its clicks back from the journal when it gets there (fold_hollow), so a
 * store that falls behind for as long as a flood lasts costs disk, not
 * memory. Past backlog_max of clicks to fold, wherever they wait, the
 * event loops pause at each hand-over (clicks_flush), leaving the fold
 * and the store part of the cores. A store
 * job that fails is retried (after a pause) with the same counters and
 * checkpoint, so a passing store error delays counts and never loses or
 * doubles them.
 * Each batch carries the time its event loop handed it over; the queue's
 * head, the aggregate and the job in flight each publish their oldest, so
 * clicks_lag tells how stale the stats are without a lock.
 * Salts live in two slots (today's and tomorrow's); a slot is rewritten only
 * when its day is over, and readers check the day before and after reading
 * the key. */
#include "clicks/clicks.h"
#include "clicks/pageview.h"

#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clicks/aggregate.h"
#include "base/coop.h"
#include "base/err.h"
#include "clicks/journal.h"
#include "base/log.h"
#include "store/store.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "store/writer.h"
#include "base/banned.h"

#define LOCAL_CAP (64u << 20) /* a worker's unsent events, at most */
#define SEGMENT_MAX (64u << 20)
#define FOLD_BACKLOG_MAX (128u << 20)     /* journaled clicks in memory for the fold (default) */
#define FOLD_HURRY (FOLD_BACKLOG_MAX / 4) /* clicks to fold past which it classifies in a hurry */
#define HOLLOW_JOIN_MS 1000               /* hollow batches joined when handed over this close */
#define HOLLOW_CHUNK 65536                /* records the fold reads back from the journal a turn */
#define HOLLOW_STOP (-2)                  /* not an ERR_* */
/* Link days folded while a store job runs, at most (aggregate_bytes): a
 * slow store gets larger batches, which cost it less a click, but with
 * codes spread over millions of links each link day held is a kilobyte or
 * two of memory (bench/HISTORY.md, the issue 31 entry). */
#define FOLD_HELD_MAX ((size_t)512 << 20)
#define BACKPRESSURE_NS 5000000L
#define LULL_MS 100 /* no new click for this long: store the counters at once */

struct local {
    struct buf buf; /* [u16 length][event]... */
    size_t events;  /* ... how many */
    _Atomic uint64_t recorded;
    _Atomic uint64_t dropped;
    char pad[64];
};

struct batch {
    struct buf data;
    size_t events;
    uint64_t start_pos; /* journal position of its first event ... */
    uint64_t end_pos;   /* ... and after its last */
    bool hollow;        /* its events are in the journal only (data empty) */
    int64_t t_ms;       /* mono_ms() when its event loop handed it over */
    struct batch *next;
};

struct salt_slot {
    _Atomic int64_t day; /* -1: empty */
    uint8_t key[crypto_shorthash_KEYBYTES];
};

struct clicks {
    struct store *st;
    struct writer *writer;
    struct aggregate *agg;
    struct journal *journal;
    int nworkers;
    struct local *local;
    int64_t flush_ms;
    int64_t sync_ms;

    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct batch *queue, *queue_tail;
    bool stop;

    pthread_t fold_thread;
    pthread_mutex_t fold_mu;
    pthread_cond_t fold_cv;
    struct batch *fold, *fold_tail;   /* journaled, not yet folded */
    _Atomic size_t fold_bytes;        /* ... their size */
    _Atomic uint64_t fold_events;     /* ... how many */
    _Atomic uint64_t fold_events_max; /* the most there have been (journal thread) */
    _Atomic uint64_t pauses;          /* backpressure: event loops paused */
    bool fold_stop;                   /* nothing more will be journaled */
    _Atomic bool fold_paused;         /* clicks_pause_fold: batches wait in the journal */
    /* The freshness of the stats (clicks_lag): when the oldest click not yet
     * stored was handed over, wherever it waits (0: nothing waits there). */
    _Atomic int64_t fold_head_ms;  /* ... to be folded (fold_mu) */
    _Atomic int64_t agg_ms;        /* ... folded, not yet in a store job (fold thread) */
    _Atomic int64_t job_ms;        /* ... in the store job in flight */
    _Atomic size_t held_max;       /* FOLD_HELD_MAX, or a test's */
    _Atomic size_t backlog_max;    /* FOLD_BACKLOG_MAX, or the fold-memory-mb setting */
    _Atomic int64_t lull_ms;       /* LULL_MS, or the click-lull-ms setting */
    _Atomic uint64_t hollow_bytes; /* journal bytes of the hollow batches */

    _Atomic bool inflight; /* a store job is running */
    _Atomic uint64_t committed_pos;
    _Atomic uint64_t committed; /* events in the store */
    _Atomic uint64_t left;      /* events left in the journal at a stop (let_go) */
    uint64_t released;

    _Atomic bool journal_down; /* store every sync_ms rather than flush_ms */
    pthread_mutex_t health_mu;
    struct journal_health health; /* the journal's, as of its last sync */

    struct salt_slot salt[2];

    /* Events out (clicks_set_hold): what the sinks have yet to take */
    uint64_t (*hold)(void *arg);
    void *hold_arg;
    char id[33];                 /* the journal's id, once started */
    char *dir;                   /* its directory */
    _Atomic uint64_t synced_pos; /* the journal's synced end */
};

struct clicks *clicks_new(struct store *st, struct writer *w, struct aggregate *agg, int nworkers)
{
    struct clicks *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->st = st;
    c->writer = w;
    c->agg = agg;
    c->nworkers = nworkers;
    c->local = calloc((size_t)nworkers, sizeof(*c->local));
    if (!c->local)
        abort();
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_init(&c->fold_mu, NULL);
    pthread_cond_init(&c->fold_cv, NULL);
    pthread_mutex_init(&c->health_mu, NULL);
    atomic_store(&c->held_max, FOLD_HELD_MAX);
    atomic_store(&c->backlog_max, FOLD_BACKLOG_MAX);
    atomic_store(&c->lull_ms, LULL_MS);
    atomic_store(&c->salt[0].day, -1);
    atomic_store(&c->salt[1].day, -1);
    return c;
}

void clicks_free(struct clicks *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nworkers; i++)
        buf_release(&c->local[i].buf);
    free(c->local);
    for (struct batch *b = c->queue, *next; b; b = next) {
        next = b->next;
        buf_release(&b->data);
        free(b);
    }
    for (struct batch *b = c->fold, *next; b; b = next) {
        next = b->next;
        buf_release(&b->data);
        free(b);
    }
    journal_close(c->journal);
    free(c->dir);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->fold_cv);
    pthread_mutex_destroy(&c->fold_mu);
    pthread_mutex_destroy(&c->health_mu);
    sodium_memzero(c->salt, sizeof(c->salt));
    free(c);
}

/* ---- hot path ---- */

static void relaxed_inc(_Atomic uint64_t *v)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void clicks_record(struct clicks *c, int worker, const struct click_event *e)
{
    struct local *l = &c->local[worker];
    if (l->buf.len > LOCAL_CAP) {
        relaxed_inc(&l->dropped);
        return;
    }
    size_t at = l->buf.len;
    buf_add(&l->buf, "\0\0", 2);
    size_t n = event_encode(e, &l->buf);
    l->buf.p[at] = (char)(n & 0xff);
    l->buf.p[at + 1] = (char)(n >> 8);
    l->events++;
    relaxed_inc(&l->recorded);
}

void clicks_record_page(struct clicks *c, int worker, const struct page_event *e)
{
    struct local *l = &c->local[worker];
    if (l->buf.len > LOCAL_CAP) {
        relaxed_inc(&l->dropped);
        return;
    }
    size_t at = l->buf.len;
    buf_add(&l->buf, "\0\0", 2);
    size_t n = page_encode(e, &l->buf);
    l->buf.p[at] = (char)(n & 0xff);
    l->buf.p[at + 1] = (char)(n >> 8);
    l->events++;
    relaxed_inc(&l->recorded);
}

void clicks_flush(struct clicks *c, int worker)
{
    struct local *l = &c->local[worker];
    if (!l->buf.len)
        return;
    struct batch *b = calloc(1, sizeof(*b));
    if (!b)
        abort();
    b->data = l->buf;
    b->events = l->events;
    b->t_ms = mono_ms();
    buf_init(&l->buf);
    l->events = 0;
    pthread_mutex_lock(&c->mu);
    if (c->queue_tail)
        c->queue_tail->next = b;
    else
        c->queue = b;
    c->queue_tail = b;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    /* Backpressure: the fold thread has a lower priority, so while the event
     * loops keep every core busy it falls behind. Past backlog_max of
     * clicks waiting for it (in memory, then on disk only: hand_over), each
     * loop pauses at every hand-over (every journal-sync-ms), leaving it
     * part of the core, rather than drop clicks. Without the pause the
     * store got half the CPU under a long flood and the backlog grew four
     * times as fast (docs/performance.md, "A long flood"). */
    if (atomic_load_explicit(&c->fold_bytes, memory_order_relaxed) +
            atomic_load_explicit(&c->hollow_bytes, memory_order_relaxed) >
        atomic_load_explicit(&c->backlog_max, memory_order_relaxed)) {
        struct timespec pause = {0, BACKPRESSURE_NS};
        atomic_fetch_add_explicit(&c->pauses, 1, memory_order_relaxed);
        nanosleep(&pause, NULL);
    }
}

uint64_t clicks_recorded(struct clicks *c)
{
    uint64_t recorded = 0;
    for (int i = 0; i < c->nworkers; i++)
        recorded += atomic_load_explicit(&c->local[i].recorded, memory_order_relaxed);
    return recorded;
}

uint64_t clicks_pending(struct clicks *c)
{
    uint64_t recorded = clicks_recorded(c);
    uint64_t done = atomic_load(&c->committed) + atomic_load(&c->left);
    return recorded > done ? recorded - done : 0;
}

void clicks_backlog(struct clicks *c, struct clicks_backlog *out)
{
    out->unfolded = atomic_load_explicit(&c->fold_events, memory_order_relaxed);
    out->unfolded_max = atomic_load_explicit(&c->fold_events_max, memory_order_relaxed);
    out->pauses = atomic_load_explicit(&c->pauses, memory_order_relaxed);
    out->on_disk_bytes = atomic_load_explicit(&c->hollow_bytes, memory_order_relaxed);
    pthread_mutex_lock(&c->fold_mu);
    int64_t head = c->fold ? c->fold->t_ms : 0;
    pthread_mutex_unlock(&c->fold_mu);
    int64_t now = mono_ms();
    out->oldest_age_ms = head && now > head ? now - head : 0;
}

void clicks_pause_fold(struct clicks *c, bool paused)
{
    atomic_store(&c->fold_paused, paused);
    pthread_mutex_lock(&c->fold_mu);
    pthread_cond_signal(&c->fold_cv);
    pthread_mutex_unlock(&c->fold_mu);
}

/* The oldest of the non-zero times, 0 when all are. */
static int64_t oldest_ms(const int64_t *t, int n)
{
    int64_t o = 0;
    for (int i = 0; i < n; i++)
        if (t[i] && (!o || t[i] < o))
            o = t[i];
    return o;
}

void clicks_lag(struct clicks *c, int64_t now_ms, struct clicks_lag *out)
{
    int64_t t[3] = {atomic_load(&c->job_ms), atomic_load(&c->agg_ms),
                    atomic_load(&c->fold_head_ms)};
    out->pending = clicks_pending(c);
    int64_t o = out->pending ? oldest_ms(t, 3) : 0;
    out->lag_ms = o && now_ms > o ? now_ms - o : 0;
    out->behind = out->lag_ms > CLICKS_LAG_BOUND_MS;
}

void clicks_set_held_max(struct clicks *c, size_t bytes) { atomic_store(&c->held_max, bytes); }
void clicks_set_lull(struct clicks *c, int64_t ms) { atomic_store(&c->lull_ms, ms); }

void clicks_set_backlog_max(struct clicks *c, size_t bytes)
{
    atomic_store(&c->backlog_max, bytes ? bytes : FOLD_BACKLOG_MAX);
}

bool clicks_keeping_up(struct clicks *c)
{
    struct clicks_lag l;
    clicks_lag(c, mono_ms(), &l);
    return !l.behind;
}

/* ---- the pipeline thread ---- */

static void job_done(uint64_t pos, uint64_t events, void *arg)
{
    struct clicks *c = arg;
    atomic_store(&c->committed_pos, pos);
    atomic_fetch_add(&c->committed, events);
    atomic_store(&c->job_ms, 0);
    atomic_store(&c->inflight, false);
}

/* The next [u16 length][event] record of a batch; false at its end. */
static bool next_record(const char **p, const char *end, const char **rec, size_t *n)
{
    if (end - *p < 2)
        return false;
    *n = (unsigned char)(*p)[0] | (size_t)(unsigned char)(*p)[1] << 8;
    *p += 2;
    if ((size_t)(end - *p) < *n)
        return false;
    *rec = *p;
    *p += *n;
    return true;
}

/* Journals every event of a batch; remembers where the batch ends. */
static void journal_batch(struct clicks *c, struct batch *b)
{
    const char *p = b->data.p, *end = b->data.p + b->data.len, *rec;
    size_t n;
    b->start_pos = journal_end(c->journal);
    while (next_record(&p, end, &rec, &n))
        if (journal_append(c->journal, rec, n, &b->end_pos) != ERR_OK)
            log_at(LOG_ERROR, "cannot journal a click");
}

/* Whether the clicks to fold, in memory and on disk, are past FOLD_HURRY */
static bool in_a_hurry(struct clicks *c)
{
    return atomic_load(&c->fold_bytes) + atomic_load(&c->hollow_bytes) > FOLD_HURRY;
}

/* Folds a batch (still counted in fold_bytes); in a hurry
 * (aggregate_set_hurry) while the clicks to fold are past FOLD_HURRY. */
static void fold_batch(struct clicks *c, struct batch *b)
{
    const char *p = b->data.p, *end = b->data.p + b->data.len, *rec;
    size_t n;
    aggregate_set_hurry(c->agg, in_a_hurry(c));
    while (next_record(&p, end, &rec, &n)) {
        (void)aggregate_add_record(c->agg, rec, n);
        coop_point();
    }
}

/* Reading a hollow batch back: from 'from' up to 'upto', at most
 * HOLLOW_CHUNK records, or fewer once the aggregate holds held_max. */
struct hollow_read {
    struct clicks *c;
    uint64_t from, upto;
    uint64_t reached; /* the position after the last record folded */
    uint64_t events;  /* records folded */
};

static int fold_record(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    struct hollow_read *h = arg;
    (void)aggregate_add_record(h->c->agg, rec, n);
    h->reached = pos_after;
    coop_point();
    if (++h->events % 1024 == 0 &&
        (h->events >= HOLLOW_CHUNK || aggregate_bytes(h->c->agg) > atomic_load(&h->c->held_max)))
        return HOLLOW_STOP;
    return 0;
}

/* Folds the next part of a hollow batch, read from the journal (whose
 * segments from the store's checkpoint on are never released). A damaged
 * record ends its segment's part (journal_read logs it): the batch is then
 * over. ERR_IO when the journal cannot be read. */
static int fold_hollow(struct clicks *c, struct hollow_read *h)
{
    h->c = c;
    h->reached = h->from;
    h->events = 0;
    aggregate_set_hurry(c->agg, in_a_hurry(c));
    int rc = journal_read(c->dir, h->from, h->upto, fold_record, h);
    if (rc == ERR_OK)
        h->reached = h->upto;
    return rc == HOLLOW_STOP ? ERR_OK : rc;
}

/* Queues batch 'x', journaled, for the fold (fold_mu held). Past
 * backlog_max of clicks in memory, one the journal has synced goes hollow
 * (see DESIGN), joined to a hollow batch just before it. */
static void hand_over(struct clicks *c, struct batch *x, uint64_t synced)
{
    uint64_t events = x->events;
    bool hollow = x->end_pos && x->end_pos <= synced &&
                  atomic_load(&c->fold_bytes) + x->data.len > atomic_load(&c->backlog_max);
    if (hollow) {
        atomic_fetch_add(&c->hollow_bytes, x->end_pos - x->start_pos);
        buf_release(&x->data);
        x->hollow = true;
        struct batch *t = c->fold_tail;
        if (t && t->hollow && t->end_pos == x->start_pos && x->t_ms - t->t_ms < HOLLOW_JOIN_MS) {
            t->end_pos = x->end_pos;
            t->events += x->events;
            free(x);
            x = NULL;
        }
    } else {
        atomic_fetch_add(&c->fold_bytes, x->data.len);
    }
    if (x) {
        if (c->fold_tail) {
            c->fold_tail->next = x;
        } else {
            c->fold = x;
            atomic_store(&c->fold_head_ms, x->t_ms);
        }
        c->fold_tail = x;
    }
    uint64_t total = atomic_fetch_add(&c->fold_events, events) + events;
    if (total > atomic_load(&c->fold_events_max))
        atomic_store(&c->fold_events_max, total);
}

/* Stopping with clicks on disk only (fold_mu held, the journal up, so every
 * batch handed over is synced): the queue is let go, and the next start
 * replays it from the store's checkpoint, rather than the stop waiting
 * for the whole backlog to be read back and stored. Returns the clicks. */
static uint64_t let_go(struct clicks *c)
{
    uint64_t events = 0;
    for (struct batch *x = c->fold, *next; x; x = next) {
        next = x->next;
        events += x->events;
        if (x->hollow)
            atomic_fetch_sub(&c->hollow_bytes, x->end_pos - x->start_pos);
        else
            atomic_fetch_sub(&c->fold_bytes, x->data.len);
        buf_release(&x->data);
        free(x);
    }
    atomic_fetch_sub(&c->fold_events, events);
    atomic_fetch_add(&c->left, events);
    c->fold = c->fold_tail = NULL;
    atomic_store(&c->fold_head_ms, 0);
    return events;
}

/* Takes the head batch off the fold queue (fold_mu held); the caller owns it. */
static void pop_head(struct clicks *c)
{
    c->fold = c->fold->next;
    if (!c->fold)
        c->fold_tail = NULL;
    atomic_store(&c->fold_head_ms, c->fold ? c->fold->t_ms : 0);
}

/* Waits on cv (mu held) for at most 20 ms. */
static void wait_a_while(pthread_cond_t *cv, pthread_mutex_t *mu)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &until);
}

/* Publishes the journal's health, and while it is down makes the fold
 * thread store every sync interval: the store then keeps the promise of
 * the journal (a crash loses no more than a sync window of clicks). */
static void note_health(struct clicks *c)
{
    pthread_mutex_lock(&c->health_mu);
    journal_health(c->journal, &c->health);
    atomic_store(&c->journal_down, c->health.down);
    pthread_mutex_unlock(&c->health_mu);
}

void clicks_health(struct clicks *c, struct journal_health *out)
{
    pthread_mutex_lock(&c->health_mu);
    *out = c->health;
    pthread_mutex_unlock(&c->health_mu);
}

/* How far the journal may be released: up to 'done', the store's
 * checkpoint, but not past what a sink has yet to take. */
static uint64_t held(struct clicks *c, uint64_t done)
{
    uint64_t h = c->hold ? c->hold(c->hold_arg) : UINT64_MAX;
    return h < done ? h : done;
}

void clicks_set_hold(struct clicks *c, uint64_t (*hold)(void *arg), void *arg)
{
    c->hold = hold;
    c->hold_arg = arg;
}

const char *clicks_journal(struct clicks *c, const char **dir, uint64_t *synced)
{
    *dir = c->dir;
    *synced = atomic_load(&c->synced_pos);
    return c->id;
}

/* The journal thread: appends and syncs whatever the workers handed over,
 * passes it on to the fold thread, and releases the journal up to the last
 * stored checkpoint. */
static void *journal_main(void *arg)
{
    struct clicks *c = arg;
    uint64_t synced = c->released;
    int64_t next_rotate = mono_ms() + c->flush_ms;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (!c->queue && !c->stop) {
            wait_a_while(&c->cv, &c->mu);
        }
        struct batch *b = c->queue;
        c->queue = c->queue_tail = NULL;
        bool stopping = c->stop;
        pthread_mutex_unlock(&c->mu);

        for (struct batch *x = b; x; x = x->next)
            journal_batch(c, x);
        /* A journal that is down tries again every pass, clicks or not. */
        if (b || atomic_load(&c->journal_down)) {
            journal_sync(c->journal, &synced); /* a failure is logged, and shows in health */
            note_health(c);
        }
        pthread_mutex_lock(&c->fold_mu);
        for (struct batch *x = b, *next; x; x = next) {
            next = x->next;
            x->next = NULL;
            hand_over(c, x, synced);
        }
        c->fold_stop = stopping;
        pthread_cond_signal(&c->fold_cv);
        pthread_mutex_unlock(&c->fold_mu);

        uint64_t done = atomic_load(&c->committed_pos);
        bool rotated = false;
        if (mono_ms() >= next_rotate) {
            /* Every flush interval, so that stored clicks leave the disk
             * once their checkpoint is stored, not at segment_max. */
            rotated = journal_rotate(c->journal) == ERR_OK;
            next_rotate = mono_ms() + c->flush_ms;
        }
        atomic_store(&c->synced_pos, synced);
        if (done > c->released || rotated) {
            journal_skip_to(c->journal, done); /* stored while the journal was down */
            journal_release(c->journal, held(c, done));
            c->released = done;
            note_health(c);
        }
        pthread_mutex_lock(&c->mu);
        if (stopping && !c->queue)
            break;
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* The fold thread: folds journaled batches, one at a time, and every
 * flush interval hands what it folded to the writer. The checkpoint handed
 * to the store is the end of the last batch folded, never beyond. */
static void *fold_main(void *arg)
{
    struct clicks *c = arg;
    /* Where clicks_start left the journal; 'released' says the same but is
     * the journal thread's, which may be writing it already. */
    uint64_t folded = atomic_load(&c->committed_pos);
    int64_t next_store = mono_ms() + c->flush_ms;
    int64_t last_click = mono_ms(); /* when the fold last had clicks to fold */
    pthread_mutex_lock(&c->fold_mu);
    for (;;) {
        if (atomic_load(&c->journal_down) && next_store > mono_ms() + c->sync_ms)
            next_store = mono_ms() + c->sync_ms;
        bool due = mono_ms() >= next_store;
        bool waiting = atomic_load(&c->inflight) || aggregate_empty(c->agg);
        /* Paused, batches wait for the fold, unless the journal is stopping.
         * Past held_max the fold waits for the job in flight: the clicks
         * wait in the queue, past backlog_max on disk only (hand_over), so
         * the memory clicks take stays bounded. */
        bool paused = atomic_load(&c->fold_paused) && !c->fold_stop;
        bool full = atomic_load(&c->inflight) && !aggregate_empty(c->agg) &&
                    aggregate_bytes(c->agg) > atomic_load(&c->held_max);
        if (full || ((!c->fold || paused) && !c->fold_stop && (!due || waiting))) {
            wait_a_while(&c->fold_cv, &c->fold_mu);
            coop_rest();
        }
        paused = atomic_load(&c->fold_paused) && !c->fold_stop;
        struct batch *x = paused || full ? NULL : c->fold;
        if (x && x->hollow && c->fold_stop && !atomic_load(&c->journal_down)) {
            uint64_t left = let_go(c);
            log_at(LOG_INFO,
                   "stopping with %llu clicks still to count in the journal: the next start "
                   "counts them",
                   (unsigned long long)left);
            x = NULL;
        }
        struct hollow_read hr = {0};
        if (x) {
            /* The clicks of x are the aggregate's before they leave the queue. */
            if (!atomic_load(&c->agg_ms))
                atomic_store(&c->agg_ms, x->t_ms);
        }
        if (x && x->hollow) {
            /* It stays at the head until read to its end (which the journal
             * thread may move on meanwhile, joining later batches). */
            hr.from = x->start_pos;
            hr.upto = x->end_pos;
        } else if (x) {
            pop_head(c);
        }
        bool stopping = c->fold_stop && !c->fold;
        pthread_mutex_unlock(&c->fold_mu);

        if (x && x->hollow) {
            int rc = fold_hollow(c, &hr);
            pthread_mutex_lock(&c->fold_mu);
            if (rc == ERR_OK) {
                atomic_fetch_sub(&c->hollow_bytes, hr.reached - x->start_pos);
                x->start_pos = hr.reached;
                uint64_t gone = hr.events < x->events ? hr.events : x->events;
                if (x->start_pos >= x->end_pos) {
                    gone = x->events; /* with any a damaged record took */
                    pop_head(c);
                }
                x->events -= gone;
                atomic_fetch_sub(&c->fold_events, gone);
                if (x->start_pos >= x->end_pos)
                    free(x);
                folded = hr.reached;
            }
            pthread_mutex_unlock(&c->fold_mu);
            if (rc != ERR_OK) {
                log_at(LOG_ERROR, "cannot read clicks back from the journal (%s); trying again",
                       err_str(rc));
                usleep(100000);
            }
        } else if (x) {
            fold_batch(c, x);
            atomic_fetch_sub(&c->fold_bytes, x->data.len);
            atomic_fetch_sub(&c->fold_events, x->events);
            if (x->end_pos)
                folded = x->end_pos;
            buf_release(&x->data);
            free(x);
        }
        bool idle = !atomic_load(&c->inflight);
        int64_t now = mono_ms(), lull = atomic_load(&c->lull_ms);
        if (x)
            last_click = now;
        /* At the end of a burst nothing is gained by waiting for the interval:
         * the store job that follows has no more clicks to share link days */
        due = stopping || now >= next_store || (lull && !x && now - last_click >= lull);
        if (idle && !aggregate_empty(c->agg) && due) {
            atomic_store(&c->inflight, true);
            atomic_store(&c->job_ms, atomic_load(&c->agg_ms));
            atomic_store(&c->agg_ms, 0);
            aggregate_submit(c->agg, c->writer, folded, job_done, c);
            next_store = mono_ms() + (atomic_load(&c->journal_down) ? c->sync_ms : c->flush_ms);
        }
        if (stopping)
            aggregate_stop_compacting(c->agg);
        else
            aggregate_tick(c->agg, c->writer);
        if (stopping && !atomic_load(&c->inflight) && aggregate_empty(c->agg))
            break;
        if (stopping && atomic_load(&c->inflight))
            usleep(1000);
        pthread_mutex_lock(&c->fold_mu);
    }
    return NULL;
}

/* ---- start, replay, stop ---- */

#define REPLAY_STOP (-1)  /* not an ERR_* */
#define REPLAY_CHUNK (-3) /* nor this */

struct replay {
    struct aggregate *agg;
    uint64_t upto;    /* the last record ends here */
    uint64_t events;  /* clicks counted */
    uint64_t records; /* records read */
    uint64_t reached; /* the position after the last record read */
    size_t held_max;  /* past this, a chunk ends (0: no chunks) */
};

static int replay_one(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    struct replay *r = arg;
    if (aggregate_add_record(r->agg, rec, n))
        r->events++;
    r->reached = pos_after;
    if (pos_after >= r->upto)
        return REPLAY_STOP;
    if (r->held_max && ++r->records % 1024 == 0 && aggregate_bytes(r->agg) > r->held_max)
        return REPLAY_CHUNK;
    return 0;
}

struct wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
};

/* The journal's identity: a random id, made on first use, that names its
 * checkpoint in the store, so a journal (and whatever database it travels
 * with) always resumes from its own position. It is kept twice, in DIR/id
 * and DIR/id.bak, each "<32 hex digits> <CRC-32 of them, 8 hex digits>\n"
 * (a file of the 32 digits alone, as written before the copy, is read too):
 * one copy lost or damaged is restored from the other. */
#define ID_HEX 32

static bool is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* True when 'path' holds a valid id; *exists says whether the file was there. */
static bool id_read(const char *path, char id[ID_HEX + 1], bool *exists)
{
    char text[64];
    FILE *f = fopen(path, "r");
    *exists = f != NULL || errno != ENOENT;
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    if (n < ID_HEX || !is_hex(text, ID_HEX))
        return false;
    if (n == ID_HEX) {
        /* the format before the copy */
    } else if (n == ID_HEX + 10 && text[ID_HEX] == ' ' && text[ID_HEX + 9] == '\n' &&
               is_hex(text + ID_HEX + 1, 8)) {
        unsigned long want = strtoul(text + ID_HEX + 1, NULL, 16);
        if (libdeflate_crc32(0, text, ID_HEX) != want)
            return false;
    } else {
        return false;
    }
    memcpy(id, text, ID_HEX);
    id[ID_HEX] = '\0';
    return true;
}

static int id_write(const char *path, const char *id)
{
    char tmp[4104];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return log_fail(ERR_IO, "journal id file path '%s' is too long", path);
    FILE *f = fopen(tmp, "w");
    unsigned long crc = libdeflate_crc32(0, id, ID_HEX);
    if (!f || fprintf(f, "%s %08lx\n", id, crc) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        if (f)
            fclose(f);
        return log_fail(ERR_IO, "cannot write journal id file '%s': %s", path, strerror(errno));
    }
    fclose(f);
    if (rename(tmp, path) != 0)
        return log_fail(ERR_IO, "cannot write journal id file '%s': %s", path, strerror(errno));
    return ERR_OK;
}

/* Finds the journal's id in either copy, restoring the other, or makes a
 * new one (*made). *lost when both copies are gone or damaged while the
 * journal holds records: the store's position in them is then unknown. */
static int journal_id(const char *dir, bool has_records, char id[ID_HEX + 1], bool *made,
                      bool *lost)
{
    char path[2][4096], got[2][ID_HEX + 1];
    bool ok[2], exists[2];
    snprintf(path[0], sizeof(path[0]), "%s/id", dir);
    snprintf(path[1], sizeof(path[1]), "%s/id.bak", dir);
    for (int i = 0; i < 2; i++)
        ok[i] = id_read(path[i], got[i], &exists[i]);
    *lost = false;
    int use = ok[0] ? 0 : ok[1] ? 1 : -1;
    *made = use < 0;
    if (use >= 0) {
        memcpy(id, got[use], ID_HEX + 1);
    } else {
        unsigned char raw[16];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2hex(id, ID_HEX + 1, raw, sizeof(raw));
        *lost = has_records;
        if (!has_records && (exists[0] || exists[1]))
            log_at(LOG_WARN,
                   "journal id files '%s' and '%s' are missing or damaged; the journal "
                   "holds no clicks, so it starts afresh as '%s'",
                   path[0], path[1], id);
    }
    int rc = ERR_OK;
    for (int i = 0; i < 2 && rc == ERR_OK; i++) {
        if (ok[i] && !strcmp(got[i], id))
            continue;
        if (use >= 0 && (exists[i] || i == 0))
            log_at(LOG_WARN, "journal id file '%s' is %s: restored from '%s'", path[i],
                   exists[i] ? (ok[i] ? "different" : "damaged") : "missing", path[use]);
        rc = id_write(path[i], id);
        if (use >= 0)
            rc = ERR_OK; /* the id is known: a copy not restored only warns */
    }
    return rc;
}

static int first_record(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    (void)rec, (void)n, (void)pos_after;
    *(bool *)arg = true;
    return REPLAY_STOP;
}

/* Folds the journal's clicks from 'from' to 'upto' and stores them (as the
 * rest of a job stopped between chunks when 'resume'), waiting for the
 * writer. A backlog that a node left on disk (fold-memory-mb) may be
 * gigabytes: past held_max of folded clicks the part folded so far is
 * stored first, up to its last record, as the fold thread does. */
static int replay(struct clicks *c, uint64_t from, uint64_t upto, bool resume, uint64_t *events,
                  int *parts)
{
    for (;;) {
        struct replay r = {c->agg, upto, 0, 0, from, resume ? 0 : atomic_load(&c->held_max)};
        int rc = journal_replay(c->journal, from, replay_one, &r);
        if (rc != ERR_OK && rc != REPLAY_STOP && rc != REPLAY_CHUNK)
            return log_fail(rc, "cannot replay the click journal");
        *events += r.events;
        uint64_t to = rc == REPLAY_CHUNK ? r.reached : upto;
        if (!aggregate_empty(c->agg)) {
            if (resume)
                aggregate_resume(c->agg, c->writer, to, NULL, NULL);
            else
                aggregate_submit(c->agg, c->writer, to, NULL, NULL);
            writer_drain(c->writer); /* nothing else is writing yet */
            (*parts)++;
        }
        if (rc != REPLAY_CHUNK)
            return ERR_OK;
        from = to;
    }
}

int clicks_start(struct clicks *c, const char *journal_dir, int64_t flush_ms, int64_t sync_ms,
                 int nice)
{
    c->flush_ms = flush_ms;
    c->sync_ms = sync_ms;
    uint64_t end = 0, from = 0;
    int rc = journal_open(journal_dir, SEGMENT_MAX, &c->journal, &end);
    if (rc != ERR_OK)
        return rc;
    bool has_records = false, made = false, lost = false;
    rc = journal_replay(c->journal, 0, first_record, &has_records);
    if (rc != ERR_OK && rc != REPLAY_STOP)
        return rc;
    char id[ID_HEX + 1];
    rc = journal_id(journal_dir, has_records, id, &made, &lost);
    if (rc != ERR_OK)
        return rc;
    aggregate_set_journal(c->agg, id);
    memcpy(c->id, id, sizeof(c->id));
    c->dir = xstrdup(journal_dir);
    if (made && end > 0) {
        /* A new id has no checkpoint yet, which reads as position 0: the
         * store gets one at the end, so that a crash before the first store
         * replays nothing written before now. */
        aggregate_submit(c->agg, c->writer, end, NULL, NULL);
        writer_drain(c->writer);
    }
    uint64_t partial = 0;
    rc = aggregate_checkpoint(c->agg, c->st, &from, &partial);
    if (rc != ERR_OK)
        return rc;
    if (lost) {
        /* Replaying from 0 would count again whatever the store has. */
        log_at(LOG_WARN,
               "journal id files '%s/id' and '%s/id.bak' are missing or damaged, so the store's "
               "position in the journal is unknown: nothing is replayed (clicks journaled after "
               "the last store, if shortd did not stop cleanly, are not counted); the journal "
               "carries on as '%s'",
               journal_dir, journal_dir, id);
        from = end;
    }
    /* First the job a crash stopped between two chunks, on its own, then
     * everything after it. */
    uint64_t events = 0;
    int parts = 0;
    if (partial > from && partial <= end) {
        rc = replay(c, from, partial, true, &events, &parts);
        from = partial;
    } else if (partial > end) {
        /* Stopped part way while the journal was down: what it had not
         * stored is lost; replaying the journal under it would count the
         * rest twice. */
        log_at(LOG_WARN,
               "a job storing clicks of journal '%s' up to position %llu stopped part way, "
               "past the journal's end (%llu): its clicks not yet stored are lost",
               journal_dir, (unsigned long long)partial, (unsigned long long)end);
        from = partial;
    }
    if (rc == ERR_OK && from < end)
        rc = replay(c, from, end, false, &events, &parts);
    if (rc != ERR_OK)
        return rc;
    if (events)
        log_at(LOG_INFO, "replayed %llu clicks from the journal, stored in %d part%s",
               (unsigned long long)events, parts, parts == 1 ? "" : "s");
    if (from > end) {
        /* Stored while the journal was down, or the journal lost its tail:
         * positions below the store's are never used again. */
        log_at(LOG_WARN,
               "the store has the clicks of journal '%s' up to position %llu, past its end "
               "(%llu): nothing to replay, new clicks are journaled from there",
               journal_dir, (unsigned long long)from, (unsigned long long)end);
        journal_skip_to(c->journal, from);
        end = from;
    }
    atomic_store(&c->synced_pos, end);
    journal_release(c->journal, held(c, end));
    c->released = end;
    atomic_store(&c->committed_pos, end);
    note_health(c);
    struct coop_role fold = {"shortd-fold", nice, 0}, journaling = {"shortd-journal", -1, 0};
    if (coop_start(&c->fold_thread, fold, fold_main, c) != 0)
        return log_fail(ERR_IO, "cannot start the click pipeline");
    if (coop_start(&c->thread, journaling, journal_main, c) != 0) {
        pthread_mutex_lock(&c->fold_mu);
        c->fold_stop = true;
        pthread_cond_signal(&c->fold_cv);
        pthread_mutex_unlock(&c->fold_mu);
        pthread_join(c->fold_thread, NULL);
        return log_fail(ERR_IO, "cannot start the click pipeline");
    }
    c->started = true;
    return ERR_OK;
}

void clicks_stop(struct clicks *c)
{
    if (!c || !c->started)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_join(c->fold_thread, NULL);
    c->started = false;
    uint64_t dropped = 0;
    for (int i = 0; i < c->nworkers; i++)
        dropped += atomic_load(&c->local[i].dropped);
    if (dropped)
        log_at(LOG_WARN, "%llu clicks were dropped while the pipeline was full",
               (unsigned long long)dropped);
}

/* ---- visitors and salts ---- */

uint64_t clicks_visitor(const struct clicks *c, int64_t day, const void *addr, size_t addr_len,
                        const char *ua, size_t ua_len)
{
    const struct salt_slot *s = &c->salt[day & 1];
    if (atomic_load_explicit(&s->day, memory_order_acquire) != day)
        return 0;
    unsigned char msg[16 + 512];
    size_t an = addr_len < 16 ? addr_len : 16;
    size_t un = ua_len < 512 ? ua_len : 512;
    memcpy(msg, addr, an);
    if (un)
        memcpy(msg + an, ua, un);
    uint64_t h = 0;
    crypto_shorthash((unsigned char *)&h, msg, an + un, s->key);
    return h ? h : 1; /* 0 means "no visitor" */
}

struct salt_job {
    struct wjob job;
    int64_t day;
    uint8_t key[2][crypto_shorthash_KEYBYTES];
    struct wait w;
};

static int salt_run(struct wjob *j, struct store *st)
{
    struct salt_job *s = (struct salt_job *)j;
    for (int i = 0; i < 2; i++) {
        char name[40];
        snprintf(name, sizeof(name), "salt:%lld", (long long)(s->day + i));
        /* Nodes racing to make the day's salt: one insert wins, all read it. */
        struct buf v = BUF_INIT;
        int rc = st->ops->meta_get(st, name, &v);
        if (rc == ERR_NOTFOUND) {
            uint8_t fresh[sizeof(s->key[i])];
            randombytes_buf(fresh, sizeof(fresh));
            rc = st->ops->meta_add(st, name, fresh, sizeof(fresh));
            sodium_memzero(fresh, sizeof(fresh));
            if (rc == ERR_OK || rc == ERR_EXISTS)
                rc = st->ops->meta_get(st, name, &v);
        }
        if (rc == ERR_OK && v.len != sizeof(s->key[i]))
            rc = log_fail(ERR_STORAGE, "salt '%s' has the wrong size", name);
        if (rc == ERR_OK)
            memcpy(s->key[i], v.p, v.len);
        sodium_memzero(v.p, v.len);
        buf_release(&v);
        if (rc != ERR_OK)
            return rc;
    }
    /* Yesterday's salt is destroyed: its hashes can never be linked again. */
    for (int back = 1; back <= 3; back++) {
        char name[40];
        snprintf(name, sizeof(name), "salt:%lld", (long long)(s->day - back));
        int rc = st->ops->meta_del(st, name);
        if (rc != ERR_OK)
            return rc;
    }
    return st->ops->prune_visitors(st, s->day);
}

static void salt_done(struct wjob *j)
{
    struct salt_job *s = (struct salt_job *)j;
    pthread_mutex_lock(&s->w.mu);
    s->w.done = true;
    s->w.rc = j->rc;
    pthread_cond_signal(&s->w.cv);
    pthread_mutex_unlock(&s->w.mu);
}

static void set_slot(struct clicks *c, int64_t day, const uint8_t *key)
{
    struct salt_slot *s = &c->salt[day & 1];
    if (atomic_load(&s->day) == day)
        return;
    atomic_store_explicit(&s->day, -1, memory_order_release);
    memcpy(s->key, key, sizeof(s->key));
    atomic_store_explicit(&s->day, day, memory_order_release);
}

int clicks_rotate_salts(struct clicks *c, int64_t now_ms)
{
    int64_t today = day_number(now_ms);
    if (atomic_load(&c->salt[today & 1].day) == today &&
        atomic_load(&c->salt[(today + 1) & 1].day) == today + 1)
        return ERR_OK;
    struct salt_job s = {.day = today};
    s.job.run = salt_run;
    s.job.done = salt_done;
    pthread_mutex_init(&s.w.mu, NULL);
    pthread_cond_init(&s.w.cv, NULL);
    writer_submit(c->writer, &s.job);
    pthread_mutex_lock(&s.w.mu);
    while (!s.w.done)
        pthread_cond_wait(&s.w.cv, &s.w.mu);
    pthread_mutex_unlock(&s.w.mu);
    pthread_cond_destroy(&s.w.cv);
    pthread_mutex_destroy(&s.w.mu);
    if (s.w.rc == ERR_OK) {
        set_slot(c, today, s.key[0]);
        set_slot(c, today + 1, s.key[1]);
    }
    sodium_memzero(s.key, sizeof(s.key));
    return s.w.rc;
}
