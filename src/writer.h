/* writer.h - group commit: one thread runs every write of the process in
 * batches, one transaction (and one fsync) per batch.
 *
 * A job's run() executes on the writer thread inside the batch's transaction,
 * within a savepoint of its own: a job that returns an error has its own
 * changes rolled back without disturbing the others (a job that writes at
 * most one statement, which SQL makes atomic by itself, may skip it). After the batch commits
 * (or fails, in which case every job's rc becomes ERR_STORAGE), each job's
 * done() runs on the writer thread with j->rc set; it owns the job from then
 * on. Nothing is acknowledged before its commit is on disk. */
#ifndef SHORTD_WRITER_H
#define SHORTD_WRITER_H

#include <stdbool.h>

struct store;
struct writer;

struct wjob {
    int (*run)(struct wjob *j, struct store *st);
    void (*done)(struct wjob *j);
    int rc;
    bool single_write;      /* run() writes at most once: no savepoint needed */
    bool background;        /* stores clicks: its batch yields the core often (coop.h) */
    struct wjob *next;
};

struct writer *writer_new(struct store *st, int max_batch);
int writer_start(struct writer *w);
/* Waits for every submitted job to be done, then stops the thread and frees. */
void writer_free(struct writer *w);

void writer_submit(struct writer *w, struct wjob *j);   /* any thread */
void writer_drain(struct writer *w);                    /* waits until idle */

/* Without a writer thread (the CLI): begin, run, commit, done, on this thread. */
void writer_run_now(struct store *st, struct wjob *j);

#endif
