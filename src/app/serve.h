/* serve.h - `shortd serve`: runs the service with a loaded configuration
 * until SIGTERM or SIGINT. Takes over cfg's strings. ERR_OK on a clean stop.
 * On SIGHUP it reads the configuration again with 'reload' (the same file,
 * environment and flags as at the start) and applies the live settings
 * (config.h's config_reload); the others it names in a log line, for the
 * next start. */
#ifndef SHORTD_SERVE_H
#define SHORTD_SERVE_H

#include <stddef.h>

#include "app/config.h"

struct serve_reload {
    /* Fills 'out' (config_init first), or returns an ERR_* with a message in
     * 'err' and 'out' released. Main thread. */
    int (*load)(void *arg, struct config *out, char *err, size_t errlen);
    void *arg;
};

int serve_run(struct config *cfg, const struct serve_reload *reload); /* reload: NULL for none */

#endif
