/* writer.c - the group-commit thread of writer.h.
 *
 * DESIGN
 * Submitters append to a mutex-protected queue and signal a condition
 * variable. The writer takes everything queued (up to max_batch), runs the
 * batch in one BEGIN IMMEDIATE ... COMMIT, then calls each job's done().
 * While one batch commits, the next one accumulates, so under load the cost
 * of the fsync is shared by every job that arrived during the previous one.
 *
 * Two lanes, each a queue and a thread, run batches one at a time (take_turn),
 * each thread on its own store connection. The foreground lane runs creates
 * and every other write at the normal priority. The background lane runs
 * the jobs that store clicks at a lower priority ('background-nice'),
 * yielding every COOP_SLICE_US, its commit included (coop.h): a redirect
 * never waits behind it. Creates do not wait for the priority clicks get
 * either: a click job stores 64 link days at a time and ends its batch as
 * soon as a foreground batch waits (writer_waiting), which then goes first.
 * With 4,000 link days a batch, a create used to wait up to a second
 * behind it while redirects kept both cores busy. */
#include "store/writer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "redirect/cache.h"
#include "base/coop.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/store.h"
#include "base/banned.h"

/* A lane: a queue and the thread that runs it. */
struct lane {
    struct writer *w;
    const char *name;
    struct wjob *head, *tail;
    pthread_t thread;
    bool started;
    bool busy;
};

struct writer {
    struct store *st;
    int max_batch;
    pthread_mutex_t mu;     /* the queues, busy, stop, the turn */
    pthread_cond_t cv;      /* work arrived, or stop */
    pthread_cond_t idle_cv; /* a batch finished */
    pthread_cond_t turn_cv; /* ... so the other lane may take its turn */
    struct lane lanes[2];   /* foreground, background */
    bool stop;
    /* One batch at a time, whichever lane. A foreground batch goes before
     * the background's next one, and the background lane's batches end
     * early while it waits (writer_waiting); once the background has
     * waited WRITER_SLICE_US, it goes after the next foreground batch, so
     * neither lane can starve the other. (It went after every foreground
     * batch: a batch of one create that came just too late then cost the
     * others a whole background turn; bench/HISTORY.md, "Creates during a
     * round of compacting".) */
    bool running;
    int fg_waiting;           /* foreground batches waiting for their turn */
    bool bg_waiting, bg_owed; /* the background lane waits; goes next */
    int64_t bg_wait_since;    /* when it began to wait (mono_us) */
};

struct writer *writer_new(struct store *st, int max_batch)
{
    struct writer *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    w->st = st;
    w->max_batch = max_batch > 0 ? max_batch : 1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->idle_cv, NULL);
    pthread_cond_init(&w->turn_cv, NULL);
    w->lanes[0] = (struct lane){.w = w, .name = "shortd-writer"};
    w->lanes[1] = (struct lane){.w = w, .name = "shortd-store"};
    return w;
}

static void run_batch(struct store *st, struct wjob *batch)
{
    /* A job alone in its batch needs no savepoint: the transaction is one,
     * rolled back whole if the job fails. (Under a savepoint SQLite copies
     * each page the job changes into a statement journal first; storing
     * clicks, a job that is always alone, paid that for nothing.) */
    bool alone = !batch->next;
    int rc = st->ops->begin(st);
    for (struct wjob *j = batch; j; j = j->next) {
        if (rc != ERR_OK) {
            j->rc = ERR_STORAGE;
            continue;
        }
        if (j->single_write || alone) {
            j->rc = j->run(j, st);
            continue;
        }
        if (st->ops->savepoint(st) != ERR_OK) {
            j->rc = ERR_STORAGE;
            continue;
        }
        j->rc = j->run(j, st);
        st->ops->savepoint_end(st, j->rc == ERR_OK);
    }
    if (rc == ERR_OK) {
        if (alone && batch->rc != ERR_OK)
            st->ops->rollback(st); /* the job keeps its own error */
        else
            rc = st->ops->commit(st);
    }
    if (rc != ERR_OK) {
        st->ops->rollback(st);
        for (struct wjob *j = batch; j; j = j->next)
            if (j->rc == ERR_OK)
                j->rc = ERR_STORAGE;
    }
    struct wjob *j = batch;
    while (j) {
        struct wjob *next = j->next;
        j->next = NULL;
        j->done(j);
        j = next;
    }
}

/* Waits (w->mu held) until the lane may run a batch, and marks it running. */
static void take_turn(struct writer *w, bool background)
{
    if (background) {
        w->bg_waiting = true;
        w->bg_wait_since = mono_us();
        while (w->running || (w->fg_waiting > 0 && !w->bg_owed))
            pthread_cond_wait(&w->turn_cv, &w->mu);
        w->bg_waiting = w->bg_owed = false;
    } else {
        w->fg_waiting++;
        while (w->running || w->bg_owed)
            pthread_cond_wait(&w->turn_cv, &w->mu);
        w->fg_waiting--;
        if (w->bg_waiting && mono_us() - w->bg_wait_since >= WRITER_SLICE_US)
            w->bg_owed = true;
    }
    w->running = true;
}

bool writer_waiting(struct writer *w)
{
    pthread_mutex_lock(&w->mu);
    bool waiting = w->fg_waiting > 0;
    pthread_mutex_unlock(&w->mu);
    return waiting;
}

static void *writer_main(void *arg)
{
    struct lane *l = arg;
    struct writer *w = l->w;
    cache_thread_register();
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!l->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!l->head && w->stop)
            break;
        struct wjob *batch = l->head, *last = l->head;
        for (int n = 1; n < w->max_batch && last->next; n++)
            last = last->next;
        l->head = last->next;
        if (!l->head)
            l->tail = NULL;
        last->next = NULL;
        l->busy = true;
        take_turn(w, l == &w->lanes[1]);
        pthread_mutex_unlock(&w->mu);

        run_batch(w->st, batch);

        pthread_mutex_lock(&w->mu);
        w->running = false;
        l->busy = false;
        pthread_cond_broadcast(&w->turn_cv);
        pthread_cond_broadcast(&w->idle_cv);
    }
    pthread_mutex_unlock(&w->mu);
    cache_thread_unregister();
    return NULL;
}

int writer_start(struct writer *w, int background_nice)
{
    for (int i = 0; i < 2; i++) {
        struct lane *l = &w->lanes[i];
        /* the create lane keeps the event loops' priority */
        struct coop_role role = {l->name, i == 1 ? background_nice : -1, 0};
        if (coop_start(&l->thread, role, writer_main, l) != 0)
            return log_fail(ERR_IO, "cannot start the writer thread");
        l->started = true;
    }
    return ERR_OK;
}

void writer_submit(struct writer *w, struct wjob *j)
{
    struct lane *l = &w->lanes[j->background];
    j->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static bool idle(const struct writer *w)
{
    for (int i = 0; i < 2; i++)
        if (w->lanes[i].head || w->lanes[i].busy)
            return false;
    return true;
}

void writer_drain(struct writer *w)
{
    pthread_mutex_lock(&w->mu);
    while (!idle(w))
        pthread_cond_wait(&w->idle_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void writer_free(struct writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < 2; i++)
        if (w->lanes[i].started)
            pthread_join(w->lanes[i].thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->idle_cv);
    pthread_cond_destroy(&w->turn_cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void writer_run_now(struct store *st, struct wjob *j)
{
    j->next = NULL;
    run_batch(st, j);
}
