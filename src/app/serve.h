/* serve.h - `shortd serve`: runs the service with a loaded configuration
 * until SIGTERM or SIGINT. Takes over cfg's strings. ERR_OK on a clean stop. */
#ifndef SHORTD_SERVE_H
#define SHORTD_SERVE_H

#include "app/config.h"

int serve_run(struct config *cfg);

#endif
