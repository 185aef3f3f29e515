/* storeq.c - the store threads of storeq.h.
 *
 * DESIGN
 * Two pools, each a FIFO list and 'nthreads' threads taking from it, under
 * one mutex: one for requests people wait on (API calls, controlled links,
 * the password form), one below it for a redirect's misses (storeq_job.low),
 * so that a flood of unknown codes takes neither the API's threads nor the
 * event loops' cores. A job's state moves once from QUEUED
 * to RUNNING (the store thread that takes it) or to CANCELLED (whoever
 * cancels it first; a compare-and-swap decides), so a cancelled job is
 * never run and a running one never cancelled.
 *
 * Waits are timed per event loop, on a lane of that loop's own: a list in
 * the order the waits started, which is the order of their deadlines (every
 * wait lasts timeout_ms), and one libuv timer armed for the first of them.
 * Starting, ending and timing out a wait are list operations on the loop
 * thread, without a lock. */
#include "store/storeq.h"

#include <pthread.h>
#include <stdlib.h>
#include <uv.h>

#include "app/app.h"
#include "redirect/cache.h"
#include "base/coop.h"
#include "base/err.h"
#include "base/log.h"
#include "http/server.h"
#include "store/store.h"
#include "base/timeutil.h"
#include "base/banned.h"

enum { QUEUED = 0, RUNNING = 1, CANCELLED = 2 };

struct lane {
    struct storeq *q;
    uv_timer_t timer;
    struct storeq_wait *head, *tail;
    bool armed;
};

/* One class of jobs (storeq_job.low): a queue and its threads. */
struct pool {
    struct storeq *q;
    pthread_cond_t cv; /* a job arrived, or stop */
    struct storeq_job *head, *tail;
    int64_t queued;
    int running;
    int nthreads;
    pthread_t *threads;
};

struct storeq {
    pthread_mutex_t mu;     /* both pools' queues, stop, draining */
    pthread_cond_t idle_cv; /* no job waits or runs */
    struct pool pools[2];   /* people waiting; a redirect's misses (low) */
    int64_t queue_max;      /* per pool */
    bool stop;
    bool draining; /* storeq_drain: nothing more is taken */
    struct lane *lanes;
    int nlanes;
    int64_t timeout_ms;
    _Atomic int64_t jobs, rejected, timeouts, heavy_refused;
    /* Heavy reads running, per key: few at once (each holds a store thread
     * or a streaming connection), so a short array scanned under heavy_mu. */
    pthread_mutex_t heavy_mu;
    struct heavy {
        int64_t key;
        int n;
    } * heavy;
    int nheavy, heavy_cap, heavy_per_key;
};

static bool idle(const struct storeq *q)
{
    for (int i = 0; i < 2; i++)
        if (q->pools[i].head || q->pools[i].running)
            return false;
    return true;
}

static void *store_thread(void *arg)
{
    struct pool *p = arg;
    struct storeq *q = p->q;
    cache_thread_register();
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!p->head && !q->stop)
            pthread_cond_wait(&p->cv, &q->mu);
        if (!p->head)
            break;
        struct storeq_job *j = p->head;
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        p->running++;
        pthread_mutex_unlock(&q->mu);
        coop_rest();
        int expect = QUEUED;
        bool mine = atomic_compare_exchange_strong(&j->state, &expect, RUNNING);
        store_set_deadline(mono_ms() + q->timeout_ms);
        j->run(j, !mine);
        store_set_deadline(0);
        pthread_mutex_lock(&q->mu);
        p->running--;
        if (idle(q))
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

int storeq_new(struct app *app, int nthreads, int queue_max, int64_t timeout_ms, int heavy_per_key,
               int nice, int low_nice, struct storeq **out)
{
    struct storeq *q = calloc(1, sizeof(*q));
    if (!q)
        abort();
    pthread_mutex_init(&q->mu, NULL);
    pthread_mutex_init(&q->heavy_mu, NULL);
    pthread_cond_init(&q->idle_cv, NULL);
    q->heavy_per_key = heavy_per_key > 0 ? heavy_per_key : 1;
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
    if (nthreads < 1)
        nthreads = 1;
    static const char *const names[2] = {"shortd-storeq", "shortd-misses"};
    for (int k = 0; k < 2; k++) {
        struct pool *p = &q->pools[k];
        p->q = q;
        pthread_cond_init(&p->cv, NULL);
        p->threads = calloc((size_t)nthreads, sizeof(*p->threads));
        if (!p->threads)
            abort();
    }
    for (int k = 0; k < 2; k++) {
        struct pool *p = &q->pools[k];
        for (int i = 0; i < (k ? (nthreads + 1) / 2 : nthreads); i++) { /* misses: half */
            struct coop_role role = {.name = names[k], .nice = k ? low_nice : nice};
            if (coop_start(&p->threads[i], role, store_thread, p) != 0) {
                log_at(LOG_ERROR, "cannot start a store thread");
                storeq_free(q);
                return ERR_NOMEM;
            }
            p->nthreads++;
        }
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
    while (!idle(q))
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
    for (int k = 0; k < 2; k++) {
        for (struct storeq_job *j = q->pools[k].head; j; j = j->next) {
            int expect = QUEUED;
            atomic_compare_exchange_strong(&j->state, &expect, CANCELLED);
        }
        pthread_cond_broadcast(&q->pools[k].cv);
    }
    pthread_mutex_unlock(&q->mu);
    for (int k = 0; k < 2; k++) {
        struct pool *p = &q->pools[k];
        for (int i = 0; i < p->nthreads; i++)
            pthread_join(p->threads[i], NULL);
        free(p->threads);
        pthread_cond_destroy(&p->cv);
    }
    free(q->lanes); /* their timers were closed with their loops */
    free(q->heavy);
    pthread_mutex_destroy(&q->heavy_mu);
    pthread_cond_destroy(&q->idle_cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

bool storeq_submit(struct storeq *q, struct storeq_job *j)
{
    atomic_store_explicit(&j->state, QUEUED, memory_order_relaxed);
    j->next = NULL;
    struct pool *p = &q->pools[j->low ? 1 : 0];
    pthread_mutex_lock(&q->mu);
    if (p->queued >= q->queue_max || q->stop || q->draining) {
        pthread_mutex_unlock(&q->mu);
        atomic_fetch_add(&q->rejected, 1);
        return false;
    }
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->queued++;
    pthread_cond_signal(&p->cv);
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
        return; /* an in-process request (the unit tests): not timed */
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
    out->queued = m->pools[0].queued + m->pools[1].queued;
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
