/* writer.c - the group-commit thread of writer.h.
 *
 * DESIGN
 * Submitters append to a mutex-protected queue and signal a condition
 * variable. The writer takes everything queued (up to max_batch), runs the
 * batch in one BEGIN IMMEDIATE ... COMMIT, then calls each job's done().
 * While one batch commits, the next one accumulates, so under load the cost
 * of the fsync is shared by every job that arrived during the previous one.
 * A batch that stores clicks (a background job) yields the core every
 * COOP_SLICE_US, its commit and its jobs' done() included (coop.h). */
#include "writer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cache.h"
#include "coop.h"
#include "err.h"
#include "log.h"
#include "store.h"
#include "banned.h"

struct writer {
    struct store *st;
    int max_batch;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* work arrived, or stop */
    pthread_cond_t idle_cv;     /* queue empty and nothing running */
    struct wjob *head, *tail;
    bool busy;
    bool stop;
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
    return w;
}

static void run_batch(struct store *st, struct wjob *batch)
{
    bool background = false;
    for (struct wjob *j = batch; j; j = j->next)
        background |= j->background;
    if (background)
        coop_enter();
    int rc = st->ops->begin(st);
    for (struct wjob *j = batch; j; j = j->next) {
        if (rc != ERR_OK) {
            j->rc = ERR_STORAGE;
            continue;
        }
        if (j->single_write) {
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
    if (rc == ERR_OK)
        rc = st->ops->commit(st);
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
    if (background)
        coop_leave();
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    pthread_setname_np(pthread_self(), "shortd-writer");
    cache_thread_register();
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->head && w->stop)
            break;
        struct wjob *batch = w->head, *last = w->head;
        for (int n = 1; n < w->max_batch && last->next; n++)
            last = last->next;
        w->head = last->next;
        if (!w->head)
            w->tail = NULL;
        last->next = NULL;
        w->busy = true;
        pthread_mutex_unlock(&w->mu);

        run_batch(w->st, batch);

        pthread_mutex_lock(&w->mu);
        w->busy = false;
        if (!w->head)
            pthread_cond_broadcast(&w->idle_cv);
    }
    pthread_mutex_unlock(&w->mu);
    cache_thread_unregister();
    return NULL;
}

int writer_start(struct writer *w)
{
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0)
        return log_fail(ERR_IO, "cannot start the writer thread");
    w->started = true;
    return ERR_OK;
}

void writer_submit(struct writer *w, struct wjob *j)
{
    j->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail)
        w->tail->next = j;
    else
        w->head = j;
    w->tail = j;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_drain(struct writer *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->head || w->busy)
        pthread_cond_wait(&w->idle_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void writer_free(struct writer *w)
{
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->idle_cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void writer_run_now(struct store *st, struct wjob *j)
{
    j->next = NULL;
    run_batch(st, j);
}
