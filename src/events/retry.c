/* retry.c - the backoff schedule (retry.h). */
#include "events/retry.h"

#include "base/banned.h"

int64_t retry_wait(int64_t base, int64_t cap, int failures)
{
    int64_t w = base;
    for (int i = 1; i < failures && w < cap; i++)
        w *= 2;
    return w < cap ? w : cap;
}

int64_t retry_jittered(int64_t base, int64_t cap, int failures, uint32_t r)
{
    int64_t w = retry_wait(base, cap, failures);
    int64_t half = w / 2;
    return w - half + (int64_t)((uint64_t)r * (uint64_t)half / UINT32_MAX);
}
