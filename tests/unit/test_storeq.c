/* test_storeq.c - the store threads' queue: every job runs once, the queue
 * bound refuses at once, a job not yet begun can be cancelled (and is then
 * told so), a running one cannot; each job runs under its deadline; the
 * heavy-read share per key. Waits are timed on event loops: the end-to-end
 * tests (storage-freeze, pipeline-order) cover them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"
#include "base/err.h"
#include "store/store.h"
#include "store/storeq.h"
#include "test.h"
#include "base/timeutil.h"

#include "base/banned.h"

struct tjob {
    struct storeq_job job;
    atomic_int *ran, *cancelled;
    int64_t deadline_seen;
    /* A job that holds its thread until told to go. */
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    bool *go, *started;
};

static void tjob_run(struct storeq_job *j, bool cancelled)
{
    struct tjob *t = (struct tjob *)j;
    if (cancelled) {
        atomic_fetch_add(t->cancelled, 1);
        return;
    }
    t->deadline_seen = store_deadline();
    if (t->mu) {
        pthread_mutex_lock(t->mu);
        *t->started = true;
        pthread_cond_broadcast(t->cv);
        while (!*t->go)
            pthread_cond_wait(t->cv, t->mu);
        pthread_mutex_unlock(t->mu);
    }
    atomic_fetch_add(t->ran, 1);
}

void test_storeq_runs_each_once(void)
{
    struct app app;
    memset(&app, 0, sizeof(app));
    struct storeq *q;
    CHECK_EQ_INT(storeq_new(&app, 3, 10000, 500, 2, 0, 0, &q), ERR_OK);
    /* Both pools' threads carry their names (at most 15 bytes, or the
     * kernel refuses the name and they show as the process's). */
    CHECK_EQ_INT(test_threads_named("shortd-storeq", NULL), 3);
    CHECK_EQ_INT(test_threads_named("shortd-misses", NULL), 2);
    enum { N = 2000 };
    struct tjob *jobs = calloc(N, sizeof(*jobs));
    atomic_int ran = 0, cancelled = 0;
    int64_t before = mono_ms();
    for (int i = 0; i < N; i++) {
        jobs[i] = (struct tjob){.ran = &ran, .cancelled = &cancelled};
        jobs[i].job.run = tjob_run;
        jobs[i].job.low = i % 2; /* both pools */
        CHECK(storeq_submit(q, &jobs[i].job));
    }
    storeq_drain(q);
    CHECK_EQ_INT(atomic_load(&ran), N);
    CHECK_EQ_INT(atomic_load(&cancelled), 0);
    /* Each ran under a deadline of about now + timeout, and none is left
     * on this thread. */
    int64_t after = mono_ms();
    for (int i = 0; i < N; i++)
        if (!CHECK(jobs[i].deadline_seen >= before + 500 && jobs[i].deadline_seen <= after + 500))
            break;
    CHECK_EQ_INT(store_deadline(), 0);
    struct storeq_counts c;
    storeq_counts(q, &c);
    CHECK_EQ_INT(c.jobs, N);
    CHECK_EQ_INT(c.queued, 0);
    CHECK_EQ_INT(c.rejected, 0);
    /* Once drained (shutdown), nothing more is taken. */
    struct tjob late = {.ran = &ran, .cancelled = &cancelled};
    late.job.run = tjob_run;
    CHECK(!storeq_submit(q, &late.job));
    storeq_free(q);
    free(jobs);
}

/* Waits (boundedly) until *n reaches 'want'. */
static bool poll_until(atomic_int *n, int want)
{
    int64_t end = mono_ms() + 10000;
    while (atomic_load(n) < want && mono_ms() < end)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return atomic_load(n) >= want;
}

void test_storeq_bound_and_cancel(void)
{
    struct app app;
    memset(&app, 0, sizeof(app));
    struct storeq *q;
    CHECK_EQ_INT(storeq_new(&app, 1, 2, 1000, 2, 0, 0, &q), ERR_OK);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    bool go = false, started = false;
    atomic_int ran = 0, cancelled = 0;
    struct tjob hold = {.ran = &ran,
                        .cancelled = &cancelled,
                        .mu = &mu,
                        .cv = &cv,
                        .go = &go,
                        .started = &started};
    hold.job.run = tjob_run;
    CHECK(storeq_submit(q, &hold.job));
    pthread_mutex_lock(&mu);
    while (!started)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    /* The one thread is held: two wait, the third is refused at once. */
    struct tjob a = {.ran = &ran, .cancelled = &cancelled}, b = a, c = a;
    a.job.run = b.job.run = c.job.run = tjob_run;
    CHECK(storeq_submit(q, &a.job));
    CHECK(storeq_submit(q, &b.job));
    CHECK(!storeq_submit(q, &c.job));
    /* The other pool has its own thread and its own bound. */
    struct tjob lo = {.ran = &ran, .cancelled = &cancelled};
    lo.job.run = tjob_run;
    lo.job.low = true;
    CHECK(storeq_submit(q, &lo.job));
    CHECK(poll_until(&ran, 1));
    struct storeq_counts n;
    storeq_counts(q, &n);
    CHECK_EQ_INT(n.queued, 2);
    CHECK_EQ_INT(n.rejected, 1);
    /* A waiting job can be cancelled once; the running one cannot. */
    CHECK(storeq_cancel(&a.job));
    CHECK(!storeq_cancel(&a.job));
    CHECK(!storeq_cancel(&hold.job));
    pthread_mutex_lock(&mu);
    go = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    storeq_drain(q);
    CHECK_EQ_INT(atomic_load(&ran), 3);       /* lo, hold and b */
    CHECK_EQ_INT(atomic_load(&cancelled), 1); /* a, told so */
    CHECK(!storeq_cancel(&b.job));            /* it ran */
    storeq_free(q);
}

void test_storeq_heavy_per_key(void)
{
    struct app app;
    memset(&app, 0, sizeof(app));
    struct storeq *q;
    CHECK_EQ_INT(storeq_new(&app, 1, 10, 1000, 2, 0, 0, &q), ERR_OK);
    CHECK(storeq_heavy_enter(q, 7));
    CHECK(storeq_heavy_enter(q, 7));
    CHECK(!storeq_heavy_enter(q, 7)); /* its share runs */
    CHECK(storeq_heavy_enter(q, 8));  /* another key's own share */
    storeq_heavy_leave(q, 7);
    CHECK(storeq_heavy_enter(q, 7));
    for (int k = 100; k < 200; k++) /* many keys at once */
        CHECK(storeq_heavy_enter(q, k));
    for (int k = 100; k < 200; k++)
        storeq_heavy_leave(q, k);
    storeq_heavy_leave(q, 7);
    storeq_heavy_leave(q, 7);
    storeq_heavy_leave(q, 8);
    CHECK(storeq_heavy_enter(q, 7));
    struct storeq_counts n;
    storeq_counts(q, &n);
    CHECK_EQ_INT(n.heavy_refused, 1);
    storeq_heavy_leave(q, 7);
    storeq_free(q);
}
