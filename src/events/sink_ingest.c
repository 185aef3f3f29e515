/* sink_ingest.c - the ingest sink, seed 004's contract: the batch as
 * {"events":[...]} POSTed to ENDPOINT/batch, authorized with the sink's
 * secret as a bearer token. A 200 must say success: true and hold one
 * result per event, in order, with its index and idempotency_key; recorded
 * and duplicate acknowledge the event, any other status (ignored, invalid,
 * conflict, unknown), a malformed 200, another status or a network failure
 * retries the batch (the events already recorded then come back as
 * duplicates). A 404 means ingest has no batch route: each event then goes
 * alone to ENDPOINT/ingest, which must answer 202 with success: true, the
 * same idempotency_key and status "queued". */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "events/sink.h"
#include "store/store_events.h"
#include "base/banned.h"

static int ingest_check(const struct sink *s, char *why, size_t n)
{
    if (sink_check_http(s->endpoint, why, n) != ERR_OK)
        return ERR_INVALID;
    if (!s->secret || !*s->secret) {
        snprintf(why, n, "an ingest sink needs its write secret (--secret)");
        return ERR_INVALID;
    }
    return ERR_OK;
}

static void post(struct delivery *d, CURLM *m, const char *route, const char *body, size_t len)
{
    struct buf url = BUF_INIT, auth = BUF_INIT;
    const char *ep = d->sink->endpoint;
    size_t n = strlen(ep);
    while (n && ep[n - 1] == '/')
        n--;
    buf_add(&url, ep, n);
    buf_adds(&url, route);
    buf_printf(&auth, "Authorization: Bearer %s", d->sink->secret);
    struct curl_slist *hd = curl_slist_append(NULL, buf_cstr(&auth));
    delivery_post(d, m, buf_cstr(&url), body, len, hd);
    buf_release(&url);
    buf_release(&auth);
}

static void ingest_start(struct delivery *d, CURLM *m)
{
    d->fallback = 0;
    d->step = 0;
    post(d, m, "/batch", d->body, d->body_len);
}

/* The batch's answer: every result recorded or duplicate, or why not. */
static void judge_batch(struct delivery *d)
{
    json_error_t err;
    json_t *v = json_loadb(d->resp.p ? d->resp.p : "", d->resp.len, 0, &err);
    json_t *results = json_object_get(v, "results");
    if (!v || !json_is_true(json_object_get(v, "success")) || !json_is_array(results) ||
        json_array_size(results) != d->n) {
        delivery_fail(d, "ingest's 200 is malformed (success, results: one per event)");
        json_decref(v);
        return;
    }
    for (size_t i = 0; i < d->n; i++) {
        json_t *r = json_array_get(results, i);
        json_t *index = json_object_get(r, "index");
        const char *key = json_string_value(json_object_get(r, "idempotency_key"));
        const char *status = json_string_value(json_object_get(r, "status"));
        if (!json_is_integer(index) || (size_t)json_integer_value(index) != i || !key ||
            strcmp(key, d->ids[i]) || !status) {
            delivery_fail(d, "ingest's result %zu does not match event '%s'", i, d->ids[i]);
            json_decref(v);
            return;
        }
        if (strcmp(status, "recorded") && strcmp(status, "duplicate")) {
            delivery_fail(d, "ingest answered '%.40s' for event '%s'", status, d->ids[i]);
            json_decref(v);
            return;
        }
    }
    json_decref(v);
    d->state = DELIVERY_OK;
}

/* One event's answer from /ingest. */
static bool judge_one(struct delivery *d)
{
    json_t *v = json_loadb(d->resp.p ? d->resp.p : "", d->resp.len, 0, NULL);
    const char *key = json_string_value(json_object_get(v, "idempotency_key"));
    const char *status = json_string_value(json_object_get(v, "status"));
    bool ok = v && json_is_true(json_object_get(v, "success")) && key &&
              !strcmp(key, d->ids[d->step]) && status && !strcmp(status, "queued");
    json_decref(v);
    if (!ok)
        delivery_fail(d, "ingest's 202 for event '%s' is malformed", d->ids[d->step]);
    return ok;
}

static void ingest_ended(struct delivery *d, CURLM *m, CURLcode rc, long status)
{
    if (rc != CURLE_OK) {
        delivery_fail(d, "%s", curl_easy_strerror(rc));
        return;
    }
    if (!d->fallback) {
        if (status == 404) {
            d->fallback = 1;
            d->step = 0;
            post(d, m, "/ingest", d->body + d->off[0], d->len[0]);
        } else if (status != 200) {
            delivery_fail(d, "ingest's /batch answered HTTP %ld", status);
        } else {
            judge_batch(d);
        }
        return;
    }
    if (status != 202) {
        delivery_fail(d, "ingest's /ingest answered HTTP %ld for event '%s'", status,
                      d->ids[d->step]);
        return;
    }
    if (!judge_one(d))
        return;
    if (++d->step == d->n) {
        d->state = DELIVERY_OK;
        return;
    }
    post(d, m, "/ingest", d->body + d->off[d->step], d->len[d->step]);
}

const struct sink_kind sink_ingest = {
    .name = "ingest",
    .check = ingest_check,
    .start = ingest_start,
    .ended = ingest_ended,
};
