/* harness.h - handlers tested in-process: a request built here runs through
 * the real router and handlers, against a real SQLite store in a temporary
 * folder, and its answer comes back; no socket, no event-loop thread. The
 * app is assembled as `shortd serve` assembles it: store threads (storeq.h)
 * run the API and the redirect's misses, the group-commit writer the
 * writes, and clicks go through the real pipeline (journal, fold, store);
 * whatever answers later is waited for on the harness's own loop
 * (server_inproc_run in server.h). Rate limits have their defaults.
 *
 * A fault can be put on the store: a named op fails at its Nth call from
 * then on, or at every call, with ERR_STORAGE as a real failure gives. The
 * click pipeline's writes call the same ops (begin, commit): a test that
 * makes clicks settles them (hx_clicks_settle) before it puts a fault on
 * those. */
#ifndef SHORTD_TEST_HARNESS_H
#define SHORTD_TEST_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct app;
struct hx;

struct hx_resp {
    int status;         /* 0: the answer was cut short (a stream that failed) */
    char *headers;      /* the extra header lines, "Name: value\r\n" each */
    char *content_type; /* NULL when none */
    char *body;         /* as a client gets it: none for HEAD */
    size_t body_len;    /* bytes (a PNG holds NULs) */
    json_t *json;       /* the body parsed, NULL when it is no JSON */
};

/* A fresh app on a fresh store; NULL (with a failed check) when it cannot. */
struct hx *hx_new(void);
void hx_free(struct hx *h);
/* The app the requests run in, for a test that gives it a module (rate
 * limits, Redis, the bus: the test frees what it set and puts back what was
 * there before hx_free) or looks into one (the cache: the test's thread is
 * registered with it). */
struct app *hx_app(struct hx *h);

/* A new API key's token (static storage, valid until the next call). */
const char *hx_key(struct hx *h, bool admin);

/* Runs METHOD TARGET with 'headers' ("Name: value" strings, NULL-terminated;
 * NULL for none; a Host header sets the request's host, "sho.rt" else) and
 * 'body' (NULL for none); returns resp->status. The client is 127.0.0.1. */
int hx_request(struct hx *h, const char *method, const char *target, const char *const *headers,
               const char *body, struct hx_resp *resp);
void hx_resp_release(struct hx_resp *resp);

/* The value of response header 'name' (a copy in static storage), or NULL. */
const char *hx_header(const struct hx_resp *resp, const char *name);
/* resp->json's string at "a.b" (object keys; array indexes: "a.0"), or NULL. */
const char *hx_json_str(const struct hx_resp *resp, const char *path);
/* resp->json's integer at "a.b", or -1 when there is none. */
long long hx_json_int(const struct hx_resp *resp, const char *path);

/* Helpers most tests share. */
#define HX_AUTH_MAX 96
#define HX_CODE_MAX 64
/* A new key's "Authorization: Bearer TOKEN" header line, written into 'line'. */
const char *hx_auth(struct hx *h, bool admin, char line[HX_AUTH_MAX]);
/* POST /api/links with the JSON 'body' as the key of 'auth' (a header line,
 * or NULL for none); the new link's code goes to 'code' ("" when none).
 * Returns the status; notes the answer when it is not 201. */
int hx_create(struct hx *h, const char *auth, const char *body, char code[HX_CODE_MAX]);
/* With the store's 'op' failing (at its nth call, or every call with 0),
 * checks that the request is answered 503 with Retry-After: 1 (a JSON
 * answer with the error code "unavailable", a text one saying so); the
 * fault is removed after. True when every check passed. */
bool hx_unavailable(struct hx *h, const char *op, int nth, const char *method, const char *target,
                    const char *const *headers, const char *body);

/* Hands the clicks recorded so far to the pipeline and waits until the
 * store has them all (false, with a failed check, after 10 s). */
bool hx_clicks_settle(struct hx *h);

/* Store faults: op is one of the FAULT_OPS in harness.c (begin, commit,
 * link_get, link_insert, link_list, link_reserve, key_by_hash, ping, ...).
 * nth 0: every call fails; nth N: the Nth call counted from now fails,
 * once. hx_fault_clear removes every fault. Any op's calls, from any
 * thread, count. */
void hx_fault(struct hx *h, const char *op, int nth);
void hx_fault_clear(struct hx *h);

#endif
