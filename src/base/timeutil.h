/* timeutil.h - wall-clock time in milliseconds since the epoch (UTC) and
 * RFC 3339 text. Pure apart from now_ms(). */
#ifndef SHORTD_TIMEUTIL_H
#define SHORTD_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#define MS_PER_DAY 86400000LL
#define RFC3339_MAX 32

int64_t now_ms(void);  /* CLOCK_REALTIME */
int64_t mono_ms(void); /* CLOCK_MONOTONIC */
int64_t mono_us(void); /* CLOCK_MONOTONIC, in microseconds */

/* "2026-11-30T09:00:00Z", with ".123" before the Z when ms % 1000 != 0. */
void rfc3339_format(int64_t ms, char out[RFC3339_MAX]);
/* Accepts YYYY-MM-DDTHH:MM:SS[.fraction](Z|z|+hh:mm|-hh:mm), 't' or ' ' as the
 * separator too. Fractions beyond milliseconds are truncated. ERR_INVALID on
 * anything else, including impossible dates (Feb 30) and years < 1970. */
int rfc3339_parse(const char *s, size_t n, int64_t *ms);

/* Days since 1970-01-01 (UTC) and its "YYYY-MM-DD" text. */
int64_t day_number(int64_t ms);
void day_format(int64_t day, char out[11]);
int day_parse(const char *s, size_t n, int64_t *day); /* "YYYY-MM-DD" */

#endif
