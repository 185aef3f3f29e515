/* notfound.h - the custom domains' not-found redirects (Shlink's), held in
 * memory: the answers that use them (notfound.c, the home page) run on
 * event loops, which never read the store. The table is loaded at start,
 * changed in place after this node commits a change, and loaded again when
 * another node's change is heard (marked stale, then loaded by the main
 * thread). Any thread; a lookup takes one mutex, and only the answers that
 * were 404, 410 or the home page's look. */
#ifndef SHORTD_NOTFOUND_H
#define SHORTD_NOTFOUND_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "store/store_links.h"

struct fallbacks;

enum fallback_kind {
    FALLBACK_BASE_URL,    /* GET / */
    FALLBACK_REGULAR_404, /* a path nothing serves */
    FALLBACK_INVALID,     /* a code that opens nothing */
};

struct fallbacks *fallbacks_new(void);
void fallbacks_free(struct fallbacks *f); /* NULL is fine */

/* Replaces the table with the store's (a store read: not on an event loop). */
int fallbacks_load(struct fallbacks *f, struct store *st);
/* After this node's commit: 'host' now has 'd' (NULL: removed). NULL 'f':
 * nothing to do. */
void fallbacks_set(struct fallbacks *f, const char *host, const struct domain_redirects *d);
/* The store's domains changed (another node's change, or this node's: the
 * table is then read again after the commit, so that a load that raced
 * with fallbacks_set cannot keep an older copy): fallbacks_take_stale says
 * so once. NULL 'f': nothing to do, never stale. */
void fallbacks_mark_stale(struct fallbacks *f);
bool fallbacks_take_stale(struct fallbacks *f);

/* The 'kind' URL set for 'host' (as host_of_header gives it), copied into
 * 'out' (reset first): true when there is one. NULL 'f' has none. */
bool fallbacks_get(struct fallbacks *f, const char *host, size_t n, enum fallback_kind kind,
                   struct buf *out);

#endif
