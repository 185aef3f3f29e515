/* outbox.c - link events into the outbox (outbox.h). */
#include "events/outbox.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "events/id.h"
#include "store/store.h"
#include "base/banned.h"

#define EXPIRED_KEY "events_expired_upto"

static int first_sink(const struct sink *s, void *arg)
{
    (void)s;
    *(bool *)arg = true;
    return 1;
}

/* Whether any sink would take an event; the table is a handful of rows. */
static int wanted(struct store *st, bool *yes)
{
    *yes = false;
    if (store_bulk())
        return ERR_OK;
    return st->ops->sink_list(st, first_sink, yes);
}

static int add(struct store *st, enum event_type type, const struct link *l, int64_t at)
{
    char id[EVENT_ID_SIZE];
    if (type == EVT_LINK_EXPIRED)
        events_id_expired(l->code, l->expires_at, id); /* found by every node's sweep */
    else
        events_id_random(id);
    struct buf body = BUF_INIT;
    events_link_body(id, type, at, l, &body);
    struct outbox_event e = {
        .id = id,
        .type = event_type_name(type),
        .at = at,
        .code = l->code,
        .owner = l->owner,
        .domain = l->domain,
        .body = buf_cstr(&body),
    };
    int rc = st->ops->outbox_add(st, &e);
    buf_release(&body);
    return rc;
}

int events_link(struct store *st, enum event_type type, const char *code, int64_t at)
{
    bool yes;
    int rc = wanted(st, &yes);
    if (rc != ERR_OK || !yes)
        return rc;
    struct link l;
    rc = st->ops->link_get(st, code, &l);
    if (rc != ERR_OK)
        return rc;
    rc = add(st, type, &l, at);
    link_release(&l);
    return rc;
}

int events_link_reserved(struct store *st, const char *code, int64_t used, int64_t at)
{
    bool yes;
    int rc = wanted(st, &yes);
    if (rc != ERR_OK || !yes)
        return rc;
    struct link l;
    rc = st->ops->link_get(st, code, &l);
    if (rc != ERR_OK)
        return rc;
    if (l.max_clicks > 0 && used == l.max_clicks)
        rc = add(st, EVT_LINK_EXHAUSTED, &l, at);
    link_release(&l);
    return rc;
}

struct expiring {
    struct store *st;
    int64_t last; /* expiry of the last link reported */
    int n;
    int rc;
};

static int one_expired(const struct link *l, void *arg)
{
    struct expiring *x = arg;
    x->rc = add(x->st, EVT_LINK_EXPIRED, l, l->expires_at);
    if (x->rc != ERR_OK)
        return 1;
    x->last = l->expires_at;
    x->n++;
    return 0;
}

int events_expiries(struct store *st, int64_t now, int limit, int *n)
{
    *n = 0;
    struct buf v = BUF_INIT;
    int64_t from = 0;
    int rc = st->ops->meta_get(st, EXPIRED_KEY, &v);
    if (rc == ERR_OK)
        from = strtoll(buf_cstr(&v), NULL, 10);
    buf_release(&v);
    if (rc != ERR_OK && rc != ERR_NOTFOUND)
        return rc;
    bool yes;
    rc = wanted(st, &yes);
    if (rc != ERR_OK)
        return rc;
    if (!from || !yes) {
        /* No sink has wanted them so far: only expiries from now on count. */
        from = now;
    } else {
        struct expiring x = {st, from, 0, ERR_OK};
        rc = st->ops->link_expiring(st, from, now, limit, one_expired, &x);
        if (rc == ERR_OK)
            rc = x.rc;
        if (rc != ERR_OK)
            return rc;
        *n = x.n;
        /* A full page resumes after its last expiry; a link beyond the
         * page expiring in that very millisecond is not reported (a page
         * of 'limit' links is taken at each sweep, so that takes more
         * than 'limit' links expiring in one millisecond). */
        from = x.n == limit ? x.last : now;
    }
    char text[24];
    snprintf(text, sizeof(text), "%" PRId64, from);
    return st->ops->meta_put(st, EXPIRED_KEY, text, strlen(text));
}
