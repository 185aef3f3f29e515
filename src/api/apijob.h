/* apijob.h - an HTTP request whose answer waits for a durable write.
 *
 * The handler fills a job, submits it and returns HTTP_ASYNC. run() executes
 * on the writer thread inside the group commit and sets status and answer;
 * after the commit, after_commit() (if any) tells the caches (tiers.h) on
 * the writer thread; then the answer is sent from the request's own
 * event-loop thread. A failed job (run() or the commit) answers
 * http_unavailable's 503, whatever run() said (unless respond() writes
 * the answer). */
#ifndef SHORTD_APIJOB_H
#define SHORTD_APIJOB_H

#include <jansson.h>
#include <stdbool.h>

#include "http/http.h"
#include "http/server.h"
#include "store/writer.h"

struct api_job {
    struct wjob job;
    struct task task;
    struct request *r;
    struct worker *w;
    int status;
    json_t *answer; /* sent as the body (owned) ... */
    char *raw;      /* ... or this JSON text (owned), if set */
    bool replayed;  /* an idempotent replay */
    void (*after_commit)(struct api_job *j);
    /* Optional: builds 'answer' on the loop thread when run() left it empty,
     * so the writer thread does only what must be serialised. */
    void (*render)(struct api_job *j);
    /* Optional: writes the answer itself, on the loop thread, in another
     * API's shape or format (a compatible API's), and returns its status;
     * it runs whether the job failed or not (job.rc tells). */
    int (*respond)(struct api_job *j);
    void (*release)(struct api_job *j); /* frees what embeds the job */
};

/* 'j' must be zeroed apart from what the caller set; returns HTTP_ASYNC. */
int api_job_submit(struct request *r, struct api_job *j, int (*run)(struct wjob *, struct store *));

/* For run(): sets the answer to an error object and returns ERR_OK. */
int api_job_error(struct api_job *j, int status, const char *code, const char *field,
                  const char *message);

#endif
