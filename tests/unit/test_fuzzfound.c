/* test_fuzzfound.c - what the libFuzzer targets (fuzz/, docs/fuzzing.md)
 * found, each checked through the module's public functions with the input
 * that showed it (also kept in fuzz/regressions/<target>/). */
#include <stdint.h>
#include <string.h>

#include "dayrow.h"
#include "err.h"
#include "test.h"

#include "banned.h"

static int64_t count_of(const struct dayrow *r, int dim, const char *value)
{
    for (size_t i = 0; i < r->ntallies; i++) {
        const struct tally *t = &r->tallies[i];
        if (t->dim == dim && t->len == strlen(value) && !memcmp(r->arena + t->off, value, t->len))
            return t->n;
    }
    return -1;
}

/* fuzz/regressions/dayrow/tally-count-overflow: a stored dims blob whose
 * counts add up past INT64_MAX overflowed a signed integer while loading
 * (undefined; wrapped to a negative count). Now the sum saturates, and a
 * count no encoder writes (past INT64_MAX) is refused. */
void test_fuzzfound_dayrow_counts(void)
{
    static const char twice_max[] = "D"
                                    "\x00\x01" "a" "\xff\xff\xff\xff\xff\xff\xff\xff\x7f"
                                    "\x00\x01" "a" "\xff\xff\xff\xff\xff\xff\xff\xff\x7f";
    struct day_blobs b = {.clicks = 1, .dims = twice_max, .ndims = sizeof(twice_max) - 1};
    struct dayrow r;
    dayrow_init(&r);
    CHECK_EQ_INT(dayrow_load(&r, &b), ERR_OK);
    CHECK_EQ_INT(count_of(&r, 0, "a"), INT64_MAX);
    /* Adding more to a saturated count leaves it there. */
    dayrow_tally(&r, 0, "a", 1, 5);
    CHECK_EQ_INT(count_of(&r, 0, "a"), INT64_MAX);
    dayrow_release(&r);

    static const char past_max[] = "D"
                                   "\x00\x01" "a" "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01";
    b.dims = past_max;
    b.ndims = sizeof(past_max) - 1;
    dayrow_init(&r);
    CHECK_EQ_INT(dayrow_load(&r, &b), ERR_INVALID);
    dayrow_release(&r);
}
