/* sink.c - what the kinds of sink share (sink.h): the kind table, one
 * HTTP POST on a curl multi handle, and a delivery run to its end. */
#include "events/sink.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/banned.h"

static const struct sink_kind *const kinds[] = {&sink_webhook, &sink_ingest, &sink_redis};

const struct sink_kind *sink_kind_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kinds[i]->name, name))
            return kinds[i];
    return NULL;
}

void delivery_fail(struct delivery *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->error, sizeof(d->error), fmt, ap);
    va_end(ap);
    d->state = DELIVERY_FAILED;
}

/* Answers are kept up to this size: enough for 100 results. */
#define RESP_MAX (1u << 20)

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    struct buf *b = arg;
    size_t n = size * nmemb;
    if (b->len + n <= RESP_MAX)
        buf_add(b, p, n);
    return n;
}

void delivery_post(struct delivery *d, CURLM *m, const char *url, const char *body, size_t len,
                   struct curl_slist *headers)
{
    if (!d->easy)
        d->easy = curl_easy_init();
    else
        curl_easy_reset(d->easy);
    curl_slist_free_all(d->headers);
    d->headers = curl_slist_append(headers, "Content-Type: application/json");
    buf_reset(&d->resp);
    CURL *e = d->easy;
    if (!e) {
        delivery_fail(d, "cannot make an HTTP request");
        return;
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, d->headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)d->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)d->timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "shortd-events/1");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &d->resp);
    curl_easy_setopt(e, CURLOPT_PRIVATE, d);
    if (curl_multi_add_handle(m, e) != CURLM_OK)
        delivery_fail(d, "cannot start an HTTP request");
}

void delivery_release(struct delivery *d, CURLM *m)
{
    if (d->easy) {
        if (m)
            curl_multi_remove_handle(m, d->easy);
        curl_easy_cleanup(d->easy);
        d->easy = NULL;
    }
    curl_slist_free_all(d->headers);
    d->headers = NULL;
    buf_release(&d->resp);
}

int sink_check_http(const char *url, char *why, size_t n)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    int rc = ERR_INVALID;
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        snprintf(why, n, "endpoint '%s' is not a URL", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
        snprintf(why, n, "endpoint '%s' is not an http:// or https:// URL", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
        snprintf(why, n, "endpoint '%s' names no host", url);
        goto out;
    }
    rc = ERR_OK;
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

void delivery_run(const struct sink_kind *k, struct delivery *d)
{
    CURLM *m = curl_multi_init();
    if (!m) {
        delivery_fail(d, "cannot make an HTTP request");
        return;
    }
    d->state = DELIVERY_RUNNING;
    k->start(d, m);
    while (d->state == DELIVERY_RUNNING) {
        int running = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        bool ended = false;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            long status = 0;
            CURL *e = msg->easy_handle;
            CURLcode rc = msg->data.result;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
            curl_multi_remove_handle(m, e);
            k->ended(d, m, rc, status);
            ended = true;
            break; /* 'ended' may have added a request: read again */
        }
        if (!ended && d->state == DELIVERY_RUNNING)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    delivery_release(d, m);
    curl_multi_cleanup(m);
}
