/* geo.h - the country of a click, from a MaxMind database (GeoIP2 or
 * GeoLite2 Country or City: anything with country.iso_code) or from the
 * country header a CDN in front of shortd adds. Codes are ISO 3166-1 alpha-2,
 * upper case, NUL-terminated in a char[3]; "" means unknown. */
#ifndef SHORTD_GEO_H
#define SHORTD_GEO_H

#include <stddef.h>
#include <sys/socket.h>

struct geo;

/* Opening */

/* Maps the database at 'path' read-only (libmaxminddb, MMDB_MODE_MMAP) into
 * a new *out; ERR_IO, logged with the path, when it cannot be opened or is not
 * a MaxMind DB. */
int geo_open(const char *path, struct geo **out);
void geo_close(struct geo *g); /* NULL is fine */

/* Lookups */

/* The country of an AF_INET or AF_INET6 address (IPv4-mapped IPv6 included)
 * into 'cc'; "" when the database has none, for other families, and for a
 * NULL 'g' or 'sa'. Any thread, concurrently; no allocation, no logging (the
 * address is personal data). */
void geo_country(const struct geo *g, const struct sockaddr *sa, char cc[3]);

/* The value of a CDN country header (Cloudflare's CF-IPCountry and the like),
 * to be read only from a request whose peer is a trusted proxy
 * (clientaddr_peer_trusted), n bytes at v: two ASCII letters, after leading and
 * trailing spaces and tabs, become an upper case copy; "XX" (unknown), "T1"
 * (Tor) and anything else become "". Pure. */
void geo_from_header(const char *v, size_t n, char cc[3]);

#endif
