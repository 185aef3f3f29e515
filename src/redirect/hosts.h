/* hosts.h - which Host a short link answers on: the configured default short
 * hosts (config `hosts`), plus a link's own custom domain. Without default
 * hosts every host is accepted, as before custom domains existed. */
#ifndef SHORTD_HOSTS_H
#define SHORTD_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

#define HOSTS_MAX 32 /* default short hosts at most */
#define HOST_NAME_MAX_LEN 253

struct hostlist;

/* Parses "a.example,b.example" (spaces allowed, each normalised like a Host
 * header). *out is NULL for NULL or an empty list: host checking off.
 * ERR_INVALID with a message for a bad or overlong list. */
int hostlist_parse(const char *list, struct hostlist **out, char *err, size_t errlen);
void hostlist_free(struct hostlist *h); /* NULL is fine */

/* The host of a Host header: lowercase, without port or trailing dot, into
 * 'out' (at least HOST_NAME_MAX_LEN + 1 bytes); its length, or 0 when empty or
 * too long. */
size_t host_of_header(struct slice h, char *out);

/* Whether 'host' (as host_of_header gives it) is one of the list's. */
bool hostlist_has(const struct hostlist *h, const char *host, size_t n);

/* The list's hosts, i from 0 to hostlist_count - 1 (0 for NULL), as
 * host_of_header gives them; they live as long as the list. */
int hostlist_count(const struct hostlist *h);
const char *hostlist_name(const struct hostlist *h, int i);

#endif
