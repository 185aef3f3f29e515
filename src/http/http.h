/* http.h - one HTTP request and its answer, as handlers see them.
 *
 * The server (server.c) fills a request from the wire and calls the dispatcher
 * it was handed (the router, api/router.h);
 * a handler reads the request, writes the answer with the functions below and
 * returns the status. A handler that must wait (a durable write) returns
 * HTTP_ASYNC and later, on the same event-loop thread, fills the answer and
 * calls http_resume(). Request data are borrowed slices, valid until the
 * answer is sent. */
#ifndef SHORTD_HTTP_H
#define SHORTD_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "store/store_keys.h"

#define HTTP_ASYNC 0
#define HTTP_ASYNC_DONE (-1) /* internal: the answer was already written */
#define HTTP_LATER (-2)      /* from http_later */
#define HTTP_STREAM (-3)     /* internal: http_stream off the loop, begun by http_resume */
#define HTTP_WAIT (-4)       /* from a precheck: it ends with http_precheck_resume */
#define HTTP_MAX_HEADERS 100
#define HTTP_MAX_PARAMS 2

struct app;
struct conn;
struct route;

struct header {
    struct slice name;
    struct slice value;
};

struct request {
    /* From the wire */
    int method;          /* llhttp's HTTP_GET, HTTP_POST... */
    struct slice target; /* raw request target */
    struct slice path;   /* target before '?' */
    struct slice query;  /* after '?' (without it); empty when none */
    struct slice host;
    struct header headers[HTTP_MAX_HEADERS];
    int nheaders;
    struct slice body;
    const struct sockaddr_storage *peer; /* never logged, never stored */
    uint64_t start_ns;                   /* uv_hrtime() when the request was complete */

    /* From the router */
    const struct route *route; /* NULL for the redirect and server errors */
    int route_id;              /* metrics label index */
    struct slice params[HTTP_MAX_PARAMS];
    struct apikey key; /* valid when ROUTE_AUTH; a session's is its user's key row */
    bool authed;       /* key checked at headers-complete (router_precheck) */
    int64_t user_id;   /* a signed-in session's user; 0 for an API key */
    enum user_role user_role;
    char user_name[USER_NAME_MAX + 1];
    struct slice session; /* the session cookie's token, when user_id is set */
    json_t *json;         /* parsed body when ROUTE_JSON; freed after the answer */

    /* The answer */
    int status;
    const char *content_type; /* static string, NULL for no body type */
    struct buf resp_headers;  /* extra "Name: value\r\n" lines */
    struct buf resp_body;

    /* The short code a redirect or a gate's POST serves, kept across
     * http_later's steps and the hop to a store thread */
    struct slice code;
    uint64_t code_hash; /* cache_hash of it (redirect only) */

    struct app *app;
    struct conn *conn; /* the server's, opaque */
};

/* Reading the request */
struct slice http_header(const struct request *r, const char *name); /* p NULL when absent */
/* Finds 'name' in the query string; the value is not decoded. */
bool http_query_param(const struct request *r, const char *name, struct slice *value);

/* Writing the answer; each returns 'status' so a handler can `return http_...`. */
void http_add_header(struct request *r, const char *name, const char *value, size_t n);
int http_body(struct request *r, int status, const char *content_type, const char *body, size_t n);
int http_json(struct request *r, int status, json_t *doc); /* steals 'doc' */
/* {"error": {"code": CODE, "message": MESSAGE, "field": FIELD|null}} */
int http_error(struct request *r, int status, const char *code, const char *field, const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));

/* The one answer of a store (or a thread pool) that cannot serve now, for
 * every route: 503 with Retry-After: 1, {"error": {"code": "unavailable",
 * "message": MESSAGE}}; NULL says the store is unavailable. */
int http_unavailable(struct request *r, const char *message);
/* The same for a browser (the redirect, the password gate): 503 with
 * Retry-After: 1 and Cache-Control: no-store, in plain text. */
int http_unavailable_text(struct request *r);

/* Sends the answer of a request whose handler returned HTTP_ASYNC. Event-loop
 * thread of the request only. */
void http_resume(struct request *r, int status);

/* For router_precheck, whose check returned HTTP_ASYNC: 0 reads the body
 * on, a status refuses the request with the answer written into r. Event-
 * loop thread of the request only. */
void http_precheck_resume(struct request *r, int status);

/* For a handler that answers faster in company (the redirect: the cache
 * loads of many requests overlap): it is called back after the loop has read
 * every connection that was ready, in the same turn of the loop. http_later
 * returns HTTP_LATER for the handler to return, or 0 when too many wait
 * already (the handler then answers at once). 'fn' runs with step 0 for
 * every waiting request first (to prefetch), then with step 1, when it
 * returns what a handler returns (a status, or HTTP_ASYNC). */
typedef int (*http_later_fn)(struct request *r, int step);
int http_later(struct request *r, http_later_fn fn);

/* A streamed answer (Transfer-Encoding: chunked), for bodies too large to
 * build in memory. next() runs whenever the previous piece is written, on
 * the request's loop thread, or on a store thread when 'offload' is set: it appends the next piece to 'out' and returns
 * 1 for more, 0 at the end, -1 on failure (the connection is then closed, so
 * the client sees a truncated body rather than a wrong one). done() releases
 * 'state' in every case. A handler returns http_stream(...). */
struct http_stream {
    int (*next)(struct request *r, struct buf *out, void *state);
    void (*done)(void *state);
    void *state;
    bool offload; /* next() reads the store: it runs on a store thread (storeq.h) */
};
int http_stream(struct request *r, int status, const char *content_type,
                const struct http_stream *s);

const char *http_reason(int status);

#endif
