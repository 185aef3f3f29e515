/* dashboard.h - the web dashboard's files (web/ and uPlot), compiled into the
 * binary by scripts/embed-web.mjs and served by GET /dashboard and
 * GET /static/FILE (their handlers are in handlers.h). The table is static,
 * read-only data: any thread may read it. */
#ifndef SHORTD_DASHBOARD_H
#define SHORTD_DASHBOARD_H

#include <stddef.h>

#include "base/buf.h"

struct web_asset {
    const char *name; /* after /static/, e.g. "app.js" */
    const char *type; /* Content-Type */
    const char *etag; /* strong ETag, quotes included */
    size_t len;
    const char *data; /* 'len' bytes */
};

/* The file called 'name', or NULL when there is none. */
const struct web_asset *dashboard_asset(struct slice name);

#endif
