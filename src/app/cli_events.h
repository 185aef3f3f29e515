/* cli_events.h - the commands of events out (cli.c's table calls them):
 * `shortd sink add|list|delete|rotate-secret` and `shortd events failed
 * list|inspect|replay|resolve`. Each takes an open store, prints its
 * result on stdout (errors on stderr, naming what is wrong) and returns
 * the process's exit status. */
#ifndef SHORTD_CLI_EVENTS_H
#define SHORTD_CLI_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct store;

struct cli_sink_args {
    const char *kind, *endpoint, *types, *owner, *domain, *secret, *options;
};

int cli_sink_add(struct store *st, const struct cli_sink_args *a);
int cli_sink_list(struct store *st);
int cli_sink_delete(struct store *st, const char *id);
int cli_sink_rotate(struct store *st, const char *id);
/* pos: the verb and its ID. */
int cli_events_failed(struct store *st, int npos, const char *const *pos, bool all,
                      const char *operator_name, const char *reason, int64_t timeout_ms);

#endif
