/* tiers.c - telling every cache tier that a link changed (tiers.h). */
#include "redirect/tiers.h"

#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "links/links.h"
#include "redirect/cache.h"
#include "redirect/rcache.h"
#include "store/bus.h"
#include "base/banned.h"

int link_changed(struct app *app, const struct link *l, enum link_change_kind what, int64_t now)
{
    size_t n = strlen(l->code);
    int rc = ERR_OK;
    if (app->cache) {
        if (what == LINK_EDITED)
            cache_put(app->cache, l);
        else
            cache_remove(app->cache, l->code, n); /* a remembered miss */
    }
    /* Redis remembers no misses: a new code has nothing there to drop. */
    if (app->rcache && what == LINK_EDITED)
        rc = rcache_put(app->rcache, l, now);
    /* A generated code is new to every node: a miss one remembers of it (a
     * scan's) expires within miss-ttl. */
    if (app->bus && what != LINK_NEW)
        bus_publish(app->bus, l->code, n);
    return rc;
}

void blocklist_changed(struct app *app)
{
    links_blocklist_changed(app->links);
    if (app->bus)
        bus_publish(app->bus, BUS_BLOCKLIST, BUS_BLOCKLIST_LEN);
}
