/* apijob.c - the round trip of apijob.h: event loop -> writer -> event loop. */
#include "api/apijob.h"

#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "base/banned.h"

static void finish_on_loop(struct task *t)
{
    struct api_job *j = (struct api_job *)((char *)t - offsetof(struct api_job, task));
    struct request *r = j->r;
    int status;
    if (j->respond) {
        status = j->respond(j);
    } else if (j->job.rc != ERR_OK) {
        status = http_unavailable(r, NULL); /* whatever run() said did not happen */
    } else {
        if (j->replayed)
            http_add_header(r, "Idempotent-Replayed", "true", 4);
        status = j->status;
        if (!j->raw && !j->answer && j->render)
            j->render(j);
        if (j->raw) {
            http_body(r, status, "application/json", j->raw, strlen(j->raw));
        } else if (j->answer) {
            http_json(r, status, j->answer);
            j->answer = NULL;
        }
    }
    http_resume(r, status);
    if (j->answer)
        json_decref(j->answer);
    free(j->raw);
    j->release(j);
}

static void done_on_writer(struct wjob *wj)
{
    struct api_job *j = (struct api_job *)wj;
    if (wj->rc == ERR_OK && j->after_commit)
        j->after_commit(j);
    worker_post(j->w, &j->task);
}

int api_job_submit(struct request *r, struct api_job *j, int (*run)(struct wjob *, struct store *))
{
    j->r = r;
    j->w = request_worker(r);
    j->job.run = run;
    j->job.done = done_on_writer;
    j->task.fn = finish_on_loop;
    writer_submit(r->app->writer, &j->job);
    return HTTP_ASYNC;
}

int api_job_error(struct api_job *j, int status, const char *code, const char *field,
                  const char *message)
{
    j->status = status;
    if (j->answer)
        json_decref(j->answer);
    j->answer =
        json_pack("{s:{s:s,s:s,s:s?}}", "error", "code", code, "message", message, "field", field);
    return ERR_OK;
}
