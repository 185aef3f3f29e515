/* urlcheck.h - what a destination URL may be. Pure functions, no I/O. */
#ifndef SHORTD_URLCHECK_H
#define SHORTD_URLCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

#define URL_MAX 8192

struct urlcheck_opts {
    const char *const *self_hosts; /* NULL-terminated hosts that are shortd itself */
    const char *const
        *blocked; /* NULL-terminated lowercase blocked hosts (and their subdomains), or NULL */
};

/* Validates 'url' as a destination: http or https, a host, at most URL_MAX
 * bytes, no whitespace or control characters (nothing that could split a
 * Location header), not pointing at one of self_hosts (a name or its
 * subdomains, an address in any spelling, and any loopback host when one of
 * self_hosts is loopback), not a blocked host.
 * On success: ERR_OK, the URL as it will be stored in 'out' (the scheme and
 * host lowercased, bytes >= 0x80 percent-encoded) and the host (lowercase, no
 * port, no trailing dot, no brackets for IPv6) in 'host'.
 * On failure: ERR_INVALID / ERR_TOOBIG / ERR_FORBIDDEN (blocked or self) and a
 * human-readable reason in *why. 'out' and 'host' are reset first. */
int urlcheck(const char *url, size_t n, const struct urlcheck_opts *o, struct buf *out,
             struct buf *host, const char **why);

/* Normalises a host for comparison: lowercase, port, trailing dot and IPv6
 * brackets removed, an IP address in one canonical form (IPv6 compressed;
 * IPv4, IPv4-mapped IPv6 included and the numeric spellings browsers read as
 * IPv4 such as "2130706433" or "0x7f.1", as a dotted quad). Writes into 'out'
 * (reset first). ERR_INVALID if empty. */
int host_normalise(const char *h, size_t n, struct buf *out);

/* True when 'host' equals 'rule' or is a subdomain of it (both normalised);
 * an IP address only matches itself. */
bool host_matches(const char *host, const char *rule);

/* Whether a normalised host is an IP address (a dotted quad or IPv6). */
bool host_is_ip(const char *host);
/* Whether a normalised host is this machine: localhost (and its subdomains),
 * 127.0.0.0/8, ::1, or the unspecified 0.0.0.0 and :: (which browsers
 * connect to as this machine). */
bool host_is_loopback(const char *host);

#endif
