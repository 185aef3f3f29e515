/* tiers.h - the one place that tells every copy of a link outside the store
 * that the link changed. Whoever commits a change to a link calls
 * link_changed after the commit, never a tier by itself:
 *   1. this node's cache (cache.h), its remembered misses included;
 *   2. the shared Redis tier (rcache.h), when there is one;
 *   3. the bus (bus.h): every node drops its cached copy or miss of the code,
 *      and reads the link again at its next click: from Redis first, which
 *      therefore holds the new state before the bus speaks.
 * What needs no telling: an expiry sweep (an expired link answers 410 from
 * its expiry time, cached or not) and a click that uses up a link's click
 * limit (a link with controls is never served from a cache). The CLI has no
 * cache and no bus: it tells Redis here, and the serving nodes empty their
 * caches when the store's change generation moves (serve.c). */
#ifndef SHORTD_TIERS_H
#define SHORTD_TIERS_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store_links.h"

struct app;

enum link_change_kind {
    LINK_NEW,       /* a generated code: only this node's misses are dropped */
    LINK_NEW_ALIAS, /* a chosen alias: any node may have remembered a miss of it */
    LINK_EDITED,    /* anything else (edited, deleted, disabled, enabled): every copy */
};

/* After the commit that made 'l' what it is (for a new link, the code is
 * all it reads): every tier of the app that is set (cache, rcache, bus may
 * be NULL) learns it, in the order above. A new link is not cached here: its
 * first click reads it. Any thread registered with the cache (cache.h).
 * ERR_OK, or ERR_BUSY when Redis could not be told: rcache.h deletes the
 * code there when Redis answers again, as long as this process lives. */
int link_changed(struct app *app, const struct link *l, enum link_change_kind what, int64_t now);

/* After the commit that changed the blocklist or the registered custom
 * domains: this node counts them again at once, the others when the bus
 * tells them (links_blocklist_changed). Any thread. */
void blocklist_changed(struct app *app);

#endif
