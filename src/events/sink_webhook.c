/* sink_webhook.c - the webhook sink: the batch POSTed to the endpoint,
 * signed as Standard Webhooks does it (sign.h); any 2xx acknowledges it.
 * The webhook-id is a hash of the batch's text, so a retry of the same
 * batch carries the same one; receivers deduplicate on the events' own IDs
 * in any case. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "events/sign.h"
#include "events/sink.h"
#include "store/store_events.h"
#include "base/banned.h"

static int webhook_check(const struct sink *s, char *why, size_t n)
{
    if (sink_check_http(s->endpoint, why, n) != ERR_OK)
        return ERR_INVALID;
    if (sign_secret_check(s->secret) != ERR_OK) {
        snprintf(why, n, "secret is not whsec_ and the base64 of a key");
        return ERR_INVALID;
    }
    return ERR_OK;
}

static void webhook_start(struct delivery *d, CURLM *m)
{
    unsigned char h[16];
    char id[4 + 33];
    crypto_generichash(h, sizeof(h), (const unsigned char *)d->body, d->body_len, NULL, 0);
    memcpy(id, "msg_", 4);
    sodium_bin2hex(id + 4, 33, h, sizeof(h));
    int64_t ts = now_ms() / 1000;
    struct buf sig = BUF_INIT, line = BUF_INIT;
    if (sign_header(d->sink->secret, d->sink->secret_old, id, ts, d->body, d->body_len, &sig) !=
        ERR_OK) {
        delivery_fail(d, "the sink's secret does not decode");
        buf_release(&sig);
        return;
    }
    struct curl_slist *hd = NULL;
    buf_printf(&line, "webhook-id: %s", id);
    hd = curl_slist_append(hd, buf_cstr(&line));
    buf_reset(&line);
    buf_printf(&line, "webhook-timestamp: %lld", (long long)ts);
    hd = curl_slist_append(hd, buf_cstr(&line));
    buf_reset(&line);
    buf_printf(&line, "webhook-signature: %s", buf_cstr(&sig));
    hd = curl_slist_append(hd, buf_cstr(&line));
    buf_release(&line);
    buf_release(&sig);
    delivery_post(d, m, d->sink->endpoint, d->body, d->body_len, hd);
}

static void webhook_ended(struct delivery *d, CURLM *m, CURLcode rc, long status)
{
    (void)m;
    if (rc != CURLE_OK)
        delivery_fail(d, "%s", curl_easy_strerror(rc));
    else if (status < 200 || status > 299)
        delivery_fail(d, "answered HTTP %ld", status);
    else
        d->state = DELIVERY_OK;
}

const struct sink_kind sink_webhook = {
    .name = "webhook",
    .check = webhook_check,
    .start = webhook_start,
    .ended = webhook_ended,
};
