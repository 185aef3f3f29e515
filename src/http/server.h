/* server.h - the HTTP layer: N event-loop threads (libuv), each with its own
 * SO_REUSEPORT listening socket, parsing with llhttp, answering through the
 * dispatcher it is handed (struct server_dispatch). Owns limits, timeouts, keep-alive, pipelining and the connection
 * cap. */
#ifndef SHORTD_SERVER_H
#define SHORTD_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct app;
struct config;
struct request;
struct server;
struct worker;

/* Work handed to an event-loop thread from another thread. */
struct task {
    void (*fn)(struct task *t);
    struct task *next;
};

/* What the server calls for each request: the HTTP layer knows no route;
 * whoever builds it hands it the dispatcher (serve.c: the router's
 * router_entry). 'route' answers a complete request: the status, or
 * HTTP_ASYNC / HTTP_LATER (http.h). 'precheck' runs at headers-complete for
 * a request that announces a body: 0 to read the body, the status of an
 * answer already written (sent without reading the body), or HTTP_WAIT. */
struct server_dispatch {
    int (*route)(struct request *r);
    int (*precheck)(struct request *r);
};

/* Binds the listeners (ERR_IO with a message when the address is taken).
 * 'd' must outlive the server. */
int server_new(struct app *app, const struct server_dispatch *d, struct server **out);
/* The same checks of the listen address, binding nothing: for a start that
 * must refuse a busy address before it opens (or makes) its store. */
int server_check_listen(const struct config *cfg);
void server_free(struct server *s); /* after server_join */
/* For shortd doctor: whether 'listen' could be bound now, with no takeover.
 * ERR_OK when free; ERR_EXISTS when taken, 'who' naming the holder ("pid 123
 * (shortd)") when /proc says; ERR_INVALID for a bad address; ERR_IO for any
 * other refusal, 'who' with the system's reason. Logs nothing. */
int server_probe_listen(const char *listen, char *who, size_t cap);


int server_start(struct server *s);           /* starts the threads */
void server_stop_accepting(struct server *s); /* closes the listeners */
void server_stop(struct server *s);           /* closes every connection, ends the loops */
void server_join(struct server *s);

int server_nworkers(const struct server *s);
struct worker *server_worker(struct server *s, int i);

/* Runs t->fn(t) on worker w's thread. Thread-safe. */
void worker_post(struct worker *w, struct task *t);
/* The worker whose thread this is, or NULL on another thread. */
struct worker *worker_current(void);
int worker_index(const struct worker *w);
/* The worker whose loop serves request 'r' (any thread: for work that must
 * come back to it, from a store thread say). */
struct worker *request_worker(const struct request *r);
/* The worker's libuv loop, for work queued to libuv's thread pool from a
 * handler (uv_queue_work); its callbacks run on the worker's thread. */
struct uv_loop_s *worker_loop(struct worker *w);

/* In-process requests, for the unit tests' harness (tests/unit/harness.c):
 * a worker with a loop and a task queue but no listener or connection,
 * current on the calling thread. server_inproc_run routes a request filled
 * by the caller (r->app set, r->conn ignored) and, when the handler answers
 * later (HTTP_ASYNC), runs the loop until its http_resume; it returns the
 * status, the answer being left in r. A handler's http_later steps run at
 * once; a streamed answer (http_stream) is made whole into r->resp_body,
 * and when its producer fails server_inproc_run returns 0 (a client would
 * see the connection closed). What other threads do for the request comes
 * back to this worker (request_worker). One such worker at a time. */
struct worker *server_inproc_new(const struct server_dispatch *d);
int server_inproc_run(struct worker *w, struct request *r);
void server_inproc_free(struct worker *w);

#endif
