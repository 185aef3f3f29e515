/* urlcheck.h - what a destination URL may be. Pure functions, no I/O. */
#ifndef SHORTD_URLCHECK_H
#define SHORTD_URLCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define URL_MAX 8192

struct urlcheck_opts {
    const char *const *self_hosts;  /* NULL-terminated lowercase hosts that are shortd itself */
    const char *const *blocked;     /* NULL-terminated lowercase blocked hosts (and their subdomains), or NULL */
};

/* Validates 'url' as a destination: http or https, a host, at most URL_MAX
 * bytes, no whitespace or control characters (nothing that could split a
 * Location header), not pointing at one of self_hosts, not a blocked host.
 * On success: ERR_OK, the URL as it will be stored in 'out' (the scheme and
 * host lowercased, bytes >= 0x80 percent-encoded) and the host (lowercase, no
 * port, no trailing dot, no brackets for IPv6) in 'host'.
 * On failure: ERR_INVALID / ERR_TOOBIG / ERR_FORBIDDEN (blocked or self) and a
 * human-readable reason in *why. 'out' and 'host' are reset first. */
int urlcheck(const char *url, size_t n, const struct urlcheck_opts *o, struct buf *out,
             struct buf *host, const char **why);

/* Normalises a host for comparison: lowercase, port, trailing dot and IPv6
 * brackets removed. Writes into 'out' (reset first). ERR_INVALID if empty. */
int host_normalise(const char *h, size_t n, struct buf *out);

/* True when 'host' equals 'rule' or is a subdomain of it (both normalised). */
bool host_matches(const char *host, const char *rule);

#endif
