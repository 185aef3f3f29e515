/* store.c - picks a storage backend by the scheme of its URL. */
#include "store.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "banned.h"

void link_release(struct link *l)
{
    free(l->url);
    free(l->title);
    free(l->note);
    free(l->tags);
    l->url = l->title = l->note = l->tags = NULL;
}

int store_open(const char *url, struct store **out)
{
    *out = NULL;
    if (strncmp(url, "sqlite:", 7) == 0)
        return store_sqlite_ops.open(url + 7, out);
    if (strstr(url, "://"))
        return log_fail(ERR_INVALID, "unsupported store '%s' (this build knows sqlite:PATH)", url);
    return store_sqlite_ops.open(url, out);
}
