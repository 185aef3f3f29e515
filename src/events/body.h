/* body.h - the JSON text of an event, fixed when it happens:
 *   {"id":"evt_...","idempotency_key":"evt_...","type":"click",
 *    "time":"<RFC 3339, ms>","data":{...}}
 * (the ID twice: ingest receivers match their results by idempotency_key).
 * A click's data is what shortd classified of it (human or bot, the bot's
 * kind and agent, the dimensions, the day's visitor hash, the A/B variant);
 * never an address. A link event's data is the link as the change left it
 * (never its password: only whether it has one). A batch is
 * {"events":[e1,e2,...]}, the events' text joined unchanged, so a retry or a
 * replay sends the same bytes.
 * Pure given the classifier (one thread at a time, classify.h). */
#ifndef SHORTD_EVENTS_BODY_H
#define SHORTD_EVENTS_BODY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

struct classify;
struct click_event;
struct link;

/* The event types, in the order of the bits a sink's filter is kept in. */
#define EVENT_TYPES(X)                                                                             \
    X(CLICK, "click")                                                                              \
    X(LINK_CREATED, "link.created")                                                                \
    X(LINK_UPDATED, "link.updated")                                                                \
    X(LINK_DELETED, "link.deleted")                                                                \
    X(LINK_DISABLED, "link.disabled")                                                              \
    X(LINK_EXPIRED, "link.expired")                                                                \
    X(LINK_EXHAUSTED, "link.exhausted")
#define X(name, text) EVT_##name,
enum event_type { EVENT_TYPES(X) EVT__COUNT };
#undef X

const char *event_type_name(enum event_type t);
/* EVT__COUNT for no such type. */
enum event_type event_type_parse(const char *s, size_t n);
/* "click,link.created" → a mask of (1u << type); "" or NULL: every type.
 * ERR_INVALID for an unknown name, with *bad pointing at it. */
int event_types_mask(const char *csv, unsigned *mask, const char **bad);

/* A click. 'self_hosts' as classify_referrer takes them. */
void events_click_body(struct classify *cl, const char *const *self_hosts, const char *id,
                       const struct click_event *e, struct buf *out);
/* Whether a click is a human's (the fold's rule: neither a prefetch nor a bot). */
bool events_click_human(struct classify *cl, const struct click_event *e);
/* A link event of 'type' at 'at'. */
void events_link_body(const char *id, enum event_type type, int64_t at, const struct link *l,
                      struct buf *out);

#endif
