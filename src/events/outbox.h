/* outbox.h - link events into the store's outbox (store_events.h), in the
 * transaction of the change that makes them, so that an event exists
 * exactly when its change committed.
 *
 * The backends call events_link from their link writes (insert: created;
 * update and enable: updated; delete; disable; a reservation that takes
 * the last allowed click: exhausted); the sweep calls events_expiries. A
 * write while no sink exists, or a bulk import (store_bulk), makes no event:
 * a sink receives the events from its creation on. Any thread inside a
 * write transaction. */
#ifndef SHORTD_EVENTS_OUTBOX_H
#define SHORTD_EVENTS_OUTBOX_H

#include <stdint.h>

#include "events/body.h"

struct store;

/* The event of 'type' for the link 'code' as it now stands, at 'at'. */
int events_link(struct store *st, enum event_type type, const char *code, int64_t at);
/* After a click-limit reservation left 'used' slots taken: link.exhausted
 * when that was the last one. */
int events_link_reserved(struct store *st, const char *code, int64_t used, int64_t at);
/* link.expired for each live link whose expiry passed since the last call
 * (meta "events_expired_upto"), at most 'limit'; *n how many. Its ID comes
 * from the code and the expiry, so nodes sweeping at once add it once. */
int events_expiries(struct store *st, int64_t now, int limit, int *n);

#endif
