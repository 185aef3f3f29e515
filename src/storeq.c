/* storeq.c - the store threads of storeq.h.
 *
 * DESIGN
 * One queue for the node (a mutex, a condition variable, a FIFO list) and
 * 'nthreads' threads taking from it. A job's state moves once from QUEUED
 * to RUNNING (the store thread that takes it) or to CANCELLED (whoever
 * cancels it first; a compare-and-swap decides), so a cancelled job is
 * never run and a running one never cancelled.
 *
 * Waits are timed per event loop, on a lane of that loop's own: a list in
 * the order the waits started, which is the order of their deadlines (every
 * wait lasts timeout_ms), and one libuv timer armed for the first of them.
 * Starting, ending and timing out a wait are list operations on the loop
 * thread, without a lock. */
#include "storeq.h"

#include <pthread.h>
#include <stdlib.h>
#include <uv.h>

#include "app.h"
#include "cache.h"
#include "coop.h"
#include "err.h"
#include "log.h"
#include "server.h"
#include "store.h"
#include "timeutil.h"
#include "banned.h"

enum { QUEUED = 0, RUNNING = 1, CANCELLED = 2 };

struct lane {
    struct storeq *q;
    uv_timer_t timer;
    struct storeq_wait *head, *tail;
    bool armed;
};

struct storeq {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* a job arrived, or stop */
    pthread_cond_t idle_cv;     /* the queue emptied and no job runs */
    struct storeq_job *head, *tail;
    int64_t queued, queue_max;
    int running;
    bool stop;
    bool draining;              /* storeq_drain: nothing more is taken */
    int nthreads;
    pthread_t *threads;
    struct lane *lanes;
    int nlanes;
    int64_t timeout_ms;
    _Atomic int64_t jobs, rejected, timeouts, heavy_refused;
    /* Heavy reads running, per key: few at once (each holds a store thread
     * or a streaming connection), so a short array scanned under heavy_mu. */
    pthread_mutex_t heavy_mu;
    struct heavy { int64_t key; int n; } *heavy;
    int nheavy, heavy_cap, heavy_per_key;
};

static void *store_thread(void *arg)
{
    struct storeq *q = arg;
    cache_thread_register();
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->stop)
            pthread_cond_wait(&q->cv, &q->mu);
        if (!q->head)
            break;
        struct storeq_job *j = q->head;
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
        q->queued--;
        q->running++;
        pthread_mutex_unlock(&q->mu);
        coop_rest();
        int expect = QUEUED;
        bool mine = atomic_compare_exchange_strong(&j->state, &expect, RUNNING);
        store_set_deadline(mono_ms() + q->timeout_ms);
        j->run(j, !mine);
        store_set_deadline(0);
        pthread_mutex_lock(&q->mu);
        q->running--;
        if (!q->head && !q->running)
            pthread_cond_broadcast(&q->idle_cv);
    }
    pthread_mutex_unlock(&q->mu);
    cache_thread_unregister();
    return NULL;
}

static void lane_arm(struct lane *l);

static void on_deadline(uv_timer_t *t)
{
    struct lane *l = t->data;
    l->armed = false;
    uint64_t now = uv_now(t->loop);
    while (l->head && l->head->deadline <= now) {
        struct storeq_wait *w = l->head;
        l->head = w->next;
        if (l->head)
            l->head->prev = NULL;
        else
            l->tail = NULL;
        w->linked = false;
        w->prev = w->next = NULL;
        atomic_fetch_add(&l->q->timeouts, 1);
        w->on_timeout(w);
    }
    lane_arm(l);
}

static void lane_arm(struct lane *l)
{
    if (!l->head || l->armed)
        return;
    uint64_t now = uv_now(l->timer.loop);
    uint64_t in = l->head->deadline > now ? l->head->deadline - now : 0;
    uv_timer_start(&l->timer, on_deadline, in, 0);
    l->armed = true;
}

int storeq_new(struct app *app, int nthreads, int queue_max, int64_t timeout_ms,
               int heavy_per_key, int nice, struct storeq **out)
{
    struct storeq *q = calloc(1, sizeof(*q));
    if (!q)
        abort();
    pthread_mutex_init(&q->mu, NULL);
    pthread_mutex_init(&q->heavy_mu, NULL);
    q->heavy_per_key = heavy_per_key > 0 ? heavy_per_key : 1;
    pthread_cond_init(&q->cv, NULL);
    pthread_cond_init(&q->idle_cv, NULL);
    q->queue_max = queue_max > 0 ? queue_max : 1;
    q->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    q->nlanes = app->server ? server_nworkers(app->server) : 0;
    q->lanes = calloc((size_t)q->nlanes + 1, sizeof(*q->lanes));
    if (!q->lanes)
        abort();
    for (int i = 0; i < q->nlanes; i++) {
        struct lane *l = &q->lanes[i];
        l->q = q;
        uv_timer_init(worker_loop(server_worker(app->server, i)), &l->timer);
        l->timer.data = l;
    }
    q->threads = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof(*q->threads));
    if (!q->threads)
        abort();
    for (int i = 0; i < (nthreads > 0 ? nthreads : 1); i++) {
        struct coop_role role = {.name = "shortd-storeq", .nice = nice, .slice_us = 0};
        if (coop_start(&q->threads[i], role, store_thread, q) != 0) {
            log_at(LOG_ERROR, "cannot start a store thread");
            storeq_free(q);
            return ERR_NOMEM;
        }
        q->nthreads++;
    }
    *out = q;
    return ERR_OK;
}

void storeq_drain(struct storeq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->draining = true;
    while (q->head || q->running)
        pthread_cond_wait(&q->idle_cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void storeq_free(struct storeq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    /* What still waits will not run: each job is told so and releases. */
    for (struct storeq_job *j = q->head; j; j = j->next) {
        int expect = QUEUED;
        atomic_compare_exchange_strong(&j->state, &expect, CANCELLED);
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++)
        pthread_join(q->threads[i], NULL);
    free(q->threads);
    free(q->lanes);     /* their timers were closed with their loops */
    free(q->heavy);
    pthread_mutex_destroy(&q->heavy_mu);
    pthread_cond_destroy(&q->idle_cv);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

bool storeq_submit(struct storeq *q, struct storeq_job *j)
{
    atomic_store_explicit(&j->state, QUEUED, memory_order_relaxed);
    j->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->queued >= q->queue_max || q->stop || q->draining) {
        pthread_mutex_unlock(&q->mu);
        atomic_fetch_add(&q->rejected, 1);
        return false;
    }
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->queued++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    atomic_fetch_add(&q->jobs, 1);
    return true;
}

bool storeq_cancel(struct storeq_job *j)
{
    int expect = QUEUED;
    return atomic_compare_exchange_strong(&j->state, &expect, CANCELLED);
}

void storeq_wait_start(struct storeq *q, struct storeq_wait *w)
{
    struct worker *me = worker_current();
    int i = me ? worker_index(me) : -1;
    w->lane = i;
    w->linked = false;
    if (i < 0 || i >= q->nlanes)
        return;     /* an in-process request (the unit tests): not timed */
    struct lane *l = &q->lanes[i];
    w->deadline = uv_now(l->timer.loop) + (uint64_t)q->timeout_ms;
    w->next = NULL;
    w->prev = l->tail;
    if (l->tail)
        l->tail->next = w;
    else
        l->head = w;
    l->tail = w;
    w->linked = true;
    lane_arm(l);
}

void storeq_wait_end(struct storeq *q, struct storeq_wait *w)
{
    if (!w->linked)
        return;
    struct lane *l = &q->lanes[w->lane];
    if (w->prev)
        w->prev->next = w->next;
    else
        l->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        l->tail = w->prev;
    w->linked = false;
    w->prev = w->next = NULL;
    if (!l->head && l->armed) {
        uv_timer_stop(&l->timer);
        l->armed = false;
    }
}

void storeq_counts(const struct storeq *q, struct storeq_counts *out)
{
    struct storeq *m = (struct storeq *)q;
    pthread_mutex_lock(&m->mu);
    out->queued = m->queued;
    pthread_mutex_unlock(&m->mu);
    out->jobs = atomic_load(&m->jobs);
    out->rejected = atomic_load(&m->rejected);
    out->timeouts = atomic_load(&m->timeouts);
    out->heavy_refused = atomic_load(&m->heavy_refused);
}

bool storeq_heavy_enter(struct storeq *q, int64_t key_id)
{
    pthread_mutex_lock(&q->heavy_mu);
    struct heavy *h = NULL;
    for (int i = 0; i < q->nheavy && !h; i++)
        if (q->heavy[i].key == key_id)
            h = &q->heavy[i];
    bool ok = !h || h->n < q->heavy_per_key;
    if (ok && !h) {
        if (q->nheavy == q->heavy_cap) {
            q->heavy_cap = q->heavy_cap ? q->heavy_cap * 2 : 16;
            q->heavy = realloc(q->heavy, (size_t)q->heavy_cap * sizeof(*q->heavy));
            if (!q->heavy)
                abort();
        }
        h = &q->heavy[q->nheavy++];
        *h = (struct heavy){.key = key_id, .n = 0};
    }
    if (ok)
        h->n++;
    pthread_mutex_unlock(&q->heavy_mu);
    if (!ok)
        atomic_fetch_add(&q->heavy_refused, 1);
    return ok;
}

void storeq_heavy_leave(struct storeq *q, int64_t key_id)
{
    pthread_mutex_lock(&q->heavy_mu);
    for (int i = 0; i < q->nheavy; i++) {
        if (q->heavy[i].key != key_id)
            continue;
        if (--q->heavy[i].n == 0)
            q->heavy[i] = q->heavy[--q->nheavy];
        break;
    }
    pthread_mutex_unlock(&q->heavy_mu);
}

int64_t storeq_timeout_ms(const struct storeq *q) { return q->timeout_ms; }
