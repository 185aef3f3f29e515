/* manage.c - making sinks and replaying archived batches (events.h), for
 * the API and the CLI. */
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "events/body.h"
#include "events/events.h"
#include "events/sign.h"
#include "events/sink.h"
#include "store/store.h"
#include "base/banned.h"

int events_sink_check(const struct sink *s, char *why, size_t n)
{
    const struct sink_kind *k = sink_kind_find(s->kind);
    if (!k) {
        snprintf(why, n, "kind '%s' is none of webhook, ingest, redis-stream",
                 s->kind ? s->kind : "");
        return ERR_INVALID;
    }
    if (!s->endpoint || !*s->endpoint) {
        snprintf(why, n, "a sink needs an endpoint");
        return ERR_INVALID;
    }
    unsigned mask;
    const char *bad;
    if (event_types_mask(s->types, &mask, &bad) != ERR_OK) {
        size_t len = strcspn(bad, ",");
        snprintf(why, n,
                 "event type '%.*s' is none of click, link.created, link.updated, "
                 "link.deleted, link.disabled, link.expired, link.exhausted",
                 (int)(len < 64 ? len : 64), bad);
        return ERR_INVALID;
    }
    if (s->domain && !*s->domain) {
        snprintf(why, n, "domain is empty");
        return ERR_INVALID;
    }
    return k->check(s, why, n);
}

int events_sink_create(struct store *st, struct sink *s, int64_t now, char *why, size_t n)
{
    struct buf secret = BUF_INIT;
    if (!s->secret || !*s->secret) {
        sign_secret_new(&secret);
        s->secret = (char *)buf_cstr(&secret);
    }
    int rc = events_sink_check(s, why, n);
    int64_t head = 0;
    if (rc == ERR_OK)
        rc = st->ops->outbox_head(st, &head);
    s->created_at = now;
    if (rc == ERR_OK)
        rc = st->ops->sink_add(st, s);
    /* Link events from now on; clicks from when each node first sees it. */
    if (rc == ERR_OK)
        rc = st->ops->sink_pos_set(st, s->id, "links", -1, head);
    if (secret.p) {
        if (rc == ERR_OK) {
            s->secret = buf_detach(&secret, NULL); /* the caller's to free */
        } else {
            s->secret = NULL;
            buf_release(&secret);
        }
    }
    return rc;
}

int events_replay(struct store *st, int64_t failed_id, int64_t timeout_ms, char *why, size_t n)
{
    struct failed_batch f;
    int rc = st->ops->failed_get(st, failed_id, &f);
    if (rc != ERR_OK) {
        snprintf(why, n, rc == ERR_NOTFOUND ? "no failed batch %" PRId64 : "cannot read it",
                 failed_id);
        return rc;
    }
    struct sink s;
    rc = st->ops->sink_get(st, f.sink, &s);
    if (rc != ERR_OK) {
        snprintf(why, n, "its sink %" PRId64 " is deleted", f.sink);
        failed_release(&f);
        return rc;
    }
    /* Where each event lies in the body, and its ID, as delivered. */
    json_t *v = json_loads(f.body, 0, NULL);
    json_t *list = json_object_get(v, "events");
    size_t count = json_array_size(list);
    size_t *off = calloc(count ? count : 1, sizeof(*off));
    size_t *len = calloc(count ? count : 1, sizeof(*len));
    char **ids = calloc(count ? count : 1, sizeof(*ids));
    if (!off || !len || !ids)
        abort();
    rc = ERR_OK;
    const char *p = strstr(f.body, "[");
    for (size_t i = 0; p && i < count; i++) {
        /* Each event is an object written by jsonout: find its end by depth,
         * minding strings. */
        const char *start = p + 1, *q = start;
        int depth = 0;
        bool str = false;
        for (; *q; q++) {
            if (str) {
                if (*q == '\\' && q[1])
                    q++;
                else if (*q == '"')
                    str = false;
            } else if (*q == '"') {
                str = true;
            } else if (*q == '{') {
                depth++;
            } else if (*q == '}' && --depth == 0) {
                break;
            }
        }
        off[i] = (size_t)(start - f.body);
        len[i] = (size_t)(q + 1 - start);
        ids[i] = (char *)json_string_value(json_object_get(json_array_get(list, i), "id"));
        p = q + 1;
    }
    const struct sink_kind *k = sink_kind_find(s.kind);
    if (!v || !json_is_array(list) || !k) {
        snprintf(why, n, "batch %" PRId64 " is not a batch of events", failed_id);
        rc = ERR_INVALID;
        goto out;
    }
    struct delivery d = {
        .sink = &s,
        .body = f.body,
        .body_len = strlen(f.body),
        .off = off,
        .len = len,
        .ids = ids,
        .n = count,
        .timeout_ms = timeout_ms,
    };
    delivery_run(k, &d);
    char result[300];
    if (d.state == DELIVERY_OK)
        snprintf(result, sizeof(result), "delivered");
    else
        snprintf(result, sizeof(result), "failed: %s", d.error);
    int wrc = ERR_STORAGE;
    if (st->ops->begin(st) == ERR_OK) {
        wrc = st->ops->failed_replayed(st, failed_id, now_ms(), result);
        if (wrc == ERR_OK)
            wrc = st->ops->commit(st);
        else
            st->ops->rollback(st);
    }
    if (d.state != DELIVERY_OK) {
        snprintf(why, n, "%s", d.error);
        rc = ERR_IO;
    } else if (wrc != ERR_OK) {
        snprintf(why, n, "delivered, but the outcome could not be recorded");
        rc = wrc;
    }
out:
    json_decref(v);
    free(off);
    free(len);
    free(ids);
    sink_release(&s);
    failed_release(&f);
    return rc;
}
