/* sink.h - the kinds of sink, each an ops table in a file of its own
 * (sink_webhook.c, sink_ingest.c, sink_redis.c), and the delivery of one
 * batch as the delivery thread (events.c) and `shortd events failed replay`
 * drive it.
 *
 * A delivery carries the batch's text ({"events":[...]}) and where each
 * event lies in it; a kind starts it, adding its HTTP requests to the curl
 * multi handle it is given (libcurl), is told of each one that ends, and
 * ends it by setting 'state'. A kind never blocks but for redis-stream,
 * whose calls are bounded by the timeout. Thread: the caller's. */
#ifndef SHORTD_EVENTS_SINK_H
#define SHORTD_EVENTS_SINK_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct sink;

enum delivery_state { DELIVERY_RUNNING, DELIVERY_OK, DELIVERY_FAILED };

struct delivery {
    const struct sink *sink;
    const char *body; /* {"events":[...]}, as sent every time */
    size_t body_len;
    const size_t *off, *len; /* each event's text in body */
    char *const *ids;        /* each event's ID */
    size_t n;
    int64_t timeout_ms;
    enum delivery_state state;
    char error[256]; /* why it failed, for the log and the archive */
    /* The kind's own */
    CURL *easy;
    struct curl_slist *headers;
    struct buf resp;
    size_t step; /* ingest's fallback: the event being sent alone */
    int fallback;
};

struct sink_kind {
    const char *name;
    /* Checks a sink's endpoint and options when it is made: ERR_OK, or
     * ERR_INVALID with 'why' naming what is wrong. */
    int (*check)(const struct sink *s, char *why, size_t n);
    /* Starts the delivery (adds requests to m), or ends it at once. */
    void (*start)(struct delivery *d, CURLM *m);
    /* One of its requests ended (curl's result and the HTTP status). */
    void (*ended)(struct delivery *d, CURLM *m, CURLcode rc, long status);
};

extern const struct sink_kind sink_webhook;
extern const struct sink_kind sink_ingest;
extern const struct sink_kind sink_redis;

/* The kind of that name, or NULL. */
const struct sink_kind *sink_kind_find(const char *name);

/* For the kinds: an easy handle POSTing 'body' to 'url' with the
 * delivery's timeout, its answer into d->resp, 'headers' taken (freed with
 * the handle); added to m. Ends the delivery as failed when curl refuses. */
void delivery_post(struct delivery *d, CURLM *m, const char *url, const char *body, size_t len,
                   struct curl_slist *headers);
/* Frees what a kind kept (the handle, headers, answer). */
void delivery_release(struct delivery *d, CURLM *m);
void delivery_fail(struct delivery *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks an http(s) URL: ERR_INVALID with 'why' otherwise. */
int sink_check_http(const char *url, char *why, size_t n);
/* Drives one delivery of kind 'k' to its end on a multi handle of its own
 * (the CLI's replay), then releases what the kind kept. */
void delivery_run(const struct sink_kind *k, struct delivery *d);

#endif
