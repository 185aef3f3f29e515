/* clientaddr.h - the address of the client behind a request.
 *
 * The TCP peer, unless the peer is one of the configured trusted proxies
 * (`trusted-proxies`: IPv4 and IPv6 CIDRs; none by default, so by default
 * X-Forwarded-For is never believed). Behind a trusted proxy, X-Forwarded-For
 * is read from the right (the hop the proxy itself appended first), trusted
 * addresses are skipped, and the first untrusted one is the client. A
 * malformed entry stops the walk: the last good hop is the client then (a
 * client can write anything on the left, never on the right of what a proxy
 * appends). IPv4-mapped IPv6 addresses count as IPv4.
 *
 * The same trust decides whether the country header a CDN adds is believed
 * (clientaddr_peer_trusted).
 *
 * The address is personal data: it may feed a keyed hash, a country lookup or
 * a rate limit key, and is never logged or stored. */
#ifndef SHORTD_CLIENTADDR_H
#define SHORTD_CLIENTADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/buf.h"

#define CLIENTADDR_TEXT_MAX 46 /* INET6_ADDRSTRLEN */

struct clientaddr; /* the trusted proxies, immutable once made */
struct request;

struct client_ip {
    int family;        /* AF_INET or AF_INET6; 0: unknown */
    uint8_t bytes[16]; /* 4 or 16 used */
    size_t n;
};

/* Building */

/* Parses 'cidrs' (comma or space separated: "10.0.0.0/8, ::1, fd00::/8"; a
 * bare address is a single host; NULL or "" trusts nothing) into a new *out.
 * ERR_INVALID with the offending entry named in 'err'. */
int clientaddr_new(const char *cidrs, struct clientaddr **out, char *err, size_t errlen);
void clientaddr_free(struct clientaddr *ca); /* NULL is fine */

/* Resolving (any thread, no allocation, pure) */

bool clientaddr_trusted(const struct clientaddr *ca, const struct client_ip *ip);
/* The client, from the peer and the X-Forwarded-For values in the order they
 * came ('nxff' header lines, each a comma list). A NULL 'ca' trusts nothing. */
void clientaddr_resolve(const struct clientaddr *ca, const struct sockaddr *peer,
                        const struct slice *xff, int nxff, struct client_ip *out);
/* The client of a request: the app's trusted proxies and its headers. */
void clientaddr_of(const struct request *r, struct client_ip *out);
/* Whether the request's TCP peer is one of the app's trusted proxies: only
 * then is a header that a proxy or CDN sets about the client (its country:
 * config `country-header`) believed, since anyone else can send it too. */
bool clientaddr_peer_trusted(const struct request *r);

/* Conversions */

/* One address as X-Forwarded-For may carry it: "1.2.3.4", "1.2.3.4:5678",
 * "2001:db8::1", "[2001:db8::1]:443", spaces around. False when it is not one. */
bool clientaddr_parse(const char *s, size_t n, struct client_ip *out);
bool clientaddr_from_sockaddr(const struct sockaddr *sa, struct client_ip *out);
void clientaddr_to_sockaddr(const struct client_ip *ip, struct sockaddr_storage *out);
/* "1.2.3.4" or "2001:db8::1"; "" for an unknown family. */
void clientaddr_format(const struct client_ip *ip, char out[CLIENTADDR_TEXT_MAX]);

#endif
