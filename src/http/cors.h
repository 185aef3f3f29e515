/* cors.h - Cross-Origin Resource Sharing: which other sites' pages may call
 * the API from a browser (the `cors-origins` setting: a comma list of exact
 * origins such as https://app.example, or *; none by default), and the
 * headers that tell the browser so. The router decides which routes take
 * part (router.h: ROUTE_CORS); a request without an Origin header, or from
 * an origin not listed, is answered exactly as without CORS.
 *
 * No answer ever carries Access-Control-Allow-Credentials: the API takes its
 * key from a header the page's script sets, never from a cookie, so a browser
 * needs no credentials mode to call it, and refusing it keeps a listed
 * origin (or *) from ever riding on a browser's ambient authority.
 * Pure functions of the request and the setting: any thread. */
#ifndef SHORTD_CORS_H
#define SHORTD_CORS_H

#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"

/* Checks a `cors-origins` value at startup: ERR_OK, or ERR_INVALID with the
 * reason in 'err'. NULL or "" is valid (no origin). */
int cors_check(const char *origins, char *err, size_t errlen);

/* Whether 'origin' (an Origin header's value) is one of 'origins'. */
bool cors_allowed(const char *origins, struct slice origin);

/* For an answer of a CORS route: when its Origin is allowed, adds
 * Access-Control-Allow-Origin (the origin, echoed), Vary: Origin and
 * Access-Control-Expose-Headers; else nothing. */
void cors_add_headers(struct request *r);

/* Answers a preflight (OPTIONS with an Origin) of a CORS path whose routes
 * take 'methods' ("GET, PATCH"): 204, with the Access-Control-Allow-*
 * headers when the origin is allowed. Returns 204. */
int cors_preflight(struct request *r, const char *methods);

#endif
