/* opscheck.h - `shortd ops check`: asks a running node for its operations
 * report (GET /api/ops/health) and prints it for a person or as JSON. The
 * report is the node's own: only the serving process knows its journal and
 * fold, and a node that does not answer is the first thing to know. */
#ifndef SHORTD_OPSCHECK_H
#define SHORTD_OPSCHECK_H

#include <stdbool.h>
#include <stdio.h>

/* Asks 'base_url' (http://HOST:PORT) with the API key 'key' (the ops scope
 * or an admin key). Returns the exit status: 0 every check ok, 1 a warning,
 * 2 a failure or a check that could not be made, the node not answering, or
 * the key refused (each said on 'err'). */
int opscheck_run(const char *base_url, const char *key, bool json, FILE *out, FILE *err);

#endif
