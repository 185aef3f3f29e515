/* retry.h - when a failed delivery is tried again: after 'base' ms,
 * doubling with each failure up to 'cap', each wait drawn at random
 * between half and all of it (jitter, so sinks that failed together do not
 * come back together). Pure; any thread. */
#ifndef SHORTD_EVENTS_RETRY_H
#define SHORTD_EVENTS_RETRY_H

#include <stdint.h>

/* The wait after the 'failures'-th failure in a row (1, 2, ...), before
 * jitter: base * 2^(failures - 1), at most cap. */
int64_t retry_wait(int64_t base, int64_t cap, int failures);
/* The same with jitter: 'r' is a random 32-bit value. */
int64_t retry_jittered(int64_t base, int64_t cap, int failures, uint32_t r);

#endif
