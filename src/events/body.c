/* body.c - the JSON text of events (body.h), written with jansson and
 * jsonout, which keeps the keys in the order they were added: the same
 * event always gives the same bytes. */
#include "events/body.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonout.h"
#include "base/timeutil.h"
#include "clicks/classify.h"
#include "clicks/event.h"
#include "store/store_links.h"
#include "base/banned.h"

static const char *const type_names[] = {
#define X(name, text) text,
    EVENT_TYPES(X)
#undef X
};

const char *event_type_name(enum event_type t)
{
    return (unsigned)t < EVT__COUNT ? type_names[t] : "unknown";
}

enum event_type event_type_parse(const char *s, size_t n)
{
    for (int t = 0; t < EVT__COUNT; t++)
        if (strlen(type_names[t]) == n && !memcmp(type_names[t], s, n))
            return (enum event_type)t;
    return EVT__COUNT;
}

int event_types_mask(const char *csv, unsigned *mask, const char **bad)
{
    *mask = 0;
    *bad = NULL;
    if (!csv || !*csv) {
        *mask = (1u << EVT__COUNT) - 1;
        return ERR_OK;
    }
    for (const char *p = csv; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        enum event_type t = event_type_parse(p, n);
        if (t == EVT__COUNT) {
            *bad = p;
            return ERR_INVALID;
        }
        *mask |= 1u << t;
        p += n + (end ? 1 : 0);
    }
    return ERR_OK;
}

/* {"id":...,"type":...,"time":...,"data":data}, taking 'data'. */
static void envelope(const char *id, const char *type, int64_t at, json_t *data, struct buf *out)
{
    char when[RFC3339_MAX];
    rfc3339_format(at, when);
    json_t *e = json_object();
    json_object_set_new(e, "id", json_string(id));
    /* Seed 004's ingest matches results by it: the same ID. */
    json_object_set_new(e, "idempotency_key", json_string(id));
    json_object_set_new(e, "type", json_string(type));
    json_object_set_new(e, "time", json_string(when));
    json_object_set_new(e, "data", data);
    jsonout(out, e);
    json_decref(e);
}

/* A string of the record (clamped, valid UTF-8), or null when empty. */
static json_t *opt_str(const char *s) { return s && *s ? json_string(s) : json_null(); }

bool events_click_human(struct classify *cl, const struct click_event *e)
{
    struct ua_info ua;
    classify_ua(cl, e->ua.p, e->ua.n, &ua);
    return !(e->flags & EVENT_PREFETCH) && ua.bot == BOT_NONE;
}

void events_click_body(struct classify *cl, const char *const *self_hosts, const char *id,
                       const struct click_event *e, struct buf *out)
{
    struct ua_info ua;
    classify_ua(cl, e->ua.p, e->ua.n, &ua);
    bool prefetch = e->flags & EVENT_PREFETCH;
    bool human = !prefetch && ua.bot == BOT_NONE;
    char code[DIM_MAX + 1], host[DIM_MAX + 1], lang[16], src[DIM_MAX + 1], med[DIM_MAX + 1],
        camp[DIM_MAX + 1], visitor[17];
    enum ref_group group;
    clamp_utf8(e->code.p, e->code.n, code);
    classify_referrer(e->referer.p, e->referer.n, self_hosts, host, &group);
    classify_language(e->lang.p, e->lang.n, lang);
    classify_utm(e->query.p, e->query.n, src, med, camp);
    snprintf(visitor, sizeof(visitor), "%016llx", (unsigned long long)e->visitor);
    unsigned variant = (e->flags & EVENT_VARIANT_MASK) >> EVENT_VARIANT_SHIFT;

    json_t *d = json_object();
    json_object_set_new(d, "code", json_string(code));
    json_object_set_new(d, "human", json_boolean(human));
    json_object_set_new(d, "bot_kind",
                        human      ? json_null()
                        : prefetch ? json_string("prefetch")
                                   : json_string(bot_kind_name(ua.bot)));
    json_object_set_new(d, "agent", opt_str(ua.agent));
    json_object_set_new(d, "visitor", e->visitor ? json_string(visitor) : json_null());
    json_object_set_new(d, "variant", variant ? json_integer(variant) : json_null());
    json_object_set_new(d, "country", opt_str(e->country));
    json_object_set_new(d, "browser", json_string(ua.browser));
    json_object_set_new(d, "os", json_string(ua.os));
    json_object_set_new(d, "device", json_string(device_name(ua.device)));
    json_object_set_new(d, "referrer", opt_str(host));
    json_object_set_new(d, "referrer_group", json_string(ref_group_name(group)));
    json_object_set_new(d, "language", opt_str(lang));
    json_t *utm = json_object();
    json_object_set_new(utm, "source", opt_str(src));
    json_object_set_new(utm, "medium", opt_str(med));
    json_object_set_new(utm, "campaign", opt_str(camp));
    json_object_set_new(d, "utm", utm);
    envelope(id, "click", e->ts, d, out);
}

static json_t *opt_time(int64_t ms)
{
    if (!ms)
        return json_null();
    char t[RFC3339_MAX];
    rfc3339_format(ms, t);
    return json_string(t);
}

/* JSON text kept by the store (tags, variants, utm), or null. */
static json_t *opt_json(const char *text)
{
    json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
    return v ? v : json_null();
}

void events_link_body(const char *id, enum event_type type, int64_t at, const struct link *l,
                      struct buf *out)
{
    static const char *const states[] = {"active", "deleted", "disabled"};
    json_t *d = json_object();
    json_object_set_new(d, "code", json_string(l->code));
    json_object_set_new(d, "owner", json_integer(l->owner));
    json_object_set_new(d, "domain", opt_str(l->domain));
    json_object_set_new(d, "url", opt_str(l->url));
    json_object_set_new(d, "destination", opt_str(l->dest ? l->dest : l->url));
    json_object_set_new(d, "title", opt_str(l->title));
    json_object_set_new(d, "tags", opt_json(l->tags));
    json_object_set_new(d, "state", json_string((unsigned)l->state < 3 ? states[l->state] : "?"));
    json_object_set_new(d, "created_at", opt_time(l->created_at));
    json_object_set_new(d, "expires_at", opt_time(l->expires_at));
    json_object_set_new(d, "permanent", json_boolean(l->permanent));
    json_object_set_new(d, "protected", json_boolean(l->password != NULL));
    json_object_set_new(d, "max_clicks", l->max_clicks ? json_integer(l->max_clicks) : json_null());
    json_object_set_new(d, "used", json_integer(l->used));
    json_object_set_new(d, "variants", opt_json(l->variants));
    json_object_set_new(d, "utm", opt_json(l->utm));
    envelope(id, event_type_name(type), at, d, out);
}
