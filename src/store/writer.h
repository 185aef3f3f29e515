/* writer.h - group commit: every write of the process runs in batches, one
 * transaction (and one fsync) per batch, one batch at a time; foreground
 * jobs on one thread, background ones (storing clicks) on another with a
 * lower priority.
 *
 * A job's run() executes on the writer thread inside the batch's transaction,
 * within a savepoint of its own: a job that returns an error has its own
 * changes rolled back without disturbing the others (a job that writes at
 * most one statement, which SQL makes atomic by itself, may skip it; a job
 * alone in its batch has the transaction for one). After the batch commits
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
    bool single_write; /* run() writes at most once: no savepoint needed */
    bool background;   /* stores clicks: runs in the background lane (coop.h) */
    struct wjob *next;
};

struct writer *writer_new(struct store *st, int max_batch);
/* Starts both threads, the background one 'background_nice' lower. */
int writer_start(struct writer *w, int background_nice);
/* Waits for every submitted job to be done, then stops the threads and frees. */
void writer_free(struct writer *w);

void writer_submit(struct writer *w, struct wjob *j); /* any thread */
/* Whether a foreground batch is waiting for the running one: a background
 * job that can stop part way (storing clicks) then ends its batch early, so
 * that creates do not wait for a low-priority thread on a busy machine. */
bool writer_waiting(struct writer *w);
/* The least time each lane gets while the other waits: a waiting background
 * lane goes next once it has waited this long, and a background job that
 * costs much to stop and start again (compacting) runs this long first. */
#define WRITER_SLICE_US 2000
void writer_drain(struct writer *w); /* waits until idle */

/* Without writer threads (the CLI): begin, run, commit, done, on this thread. */
void writer_run_now(struct store *st, struct wjob *j);

#endif
