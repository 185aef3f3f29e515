/* when.h - the times other shorteners' exports write, read as unix seconds.
 * Pure; for the importers' readers. */
#ifndef SHORTD_WHEN_H
#define SHORTD_WHEN_H

#include <stddef.h>
#include <stdint.h>

/* Reads 's' (n bytes) as one of:
 *   RFC 3339 (2024-01-02T03:04:05Z, +01:00), with +0100 and a space too
 *   "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS" without a zone: UTC
 *   "YYYY-MM-DD": midnight UTC
 *   "M/D/YYYY" with an optional "H:MM[:SS]" and AM/PM: UTC
 *   whole unix seconds
 * ERR_OK with *sec set; *sec 0 for MySQL's zero date ("0000-00-00 ...") and
 * for an empty string, which mean "unknown"; ERR_INVALID for anything else. */
int when_parse(const char *s, size_t n, int64_t *sec);

#endif
