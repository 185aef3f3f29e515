/* pct.h - percent-encoding (RFC 3986) and form decoding
 * (application/x-www-form-urlencoded), for the few places shortd writes or
 * reads them: UTM values, the password gate's path and form, the links
 * list's filters. Pure. */
#ifndef SHORTD_PCT_H
#define SHORTD_PCT_H

#include <stddef.h>

#include "base/buf.h"

/* The value of a hex digit (either case), or -1. */
int pct_hex_value(unsigned char c);

/* Appends s with every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~)
 * percent-encoded: safe in a query, a path and HTML alike. */
void pct_encode(struct buf *out, const char *s);

/* Decodes s[0..n) as a form value: %XX escapes, '+' for a space. Writes at
 * most 'cap' bytes to 'out' (out may be NULL to only measure). Returns the
 * decoded length, -1 for a bad escape, -2 when it does not fit in 'cap'. */
long pct_form_decode(const char *s, size_t n, char *out, size_t cap);

#endif
