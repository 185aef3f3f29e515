/* test_when.c - the times of other shorteners' exports (import/when.h):
 * each shape read, the unknowns, and what is refused. */
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "import/when.h"
#include "test.h"

#include "base/banned.h"

static int64_t when(const char *s)
{
    int64_t sec = -1;
    if (when_parse(s, strlen(s), &sec) != ERR_OK)
        return -1;
    return sec;
}

void test_when_formats(void)
{
    CHECK_EQ_INT(when("2024-01-02 03:04:05"), 1704164645); /* MySQL DATETIME: UTC */
    CHECK_EQ_INT(when("2024-01-02T03:04:05"), 1704164645);
    CHECK_EQ_INT(when("2024-01-02T03:04:05Z"), 1704164645);
    CHECK_EQ_INT(when("2024-01-02T04:04:05+01:00"), 1704164645);
    CHECK_EQ_INT(when("2024-01-02T04:04:05+0100"), 1704164645); /* Bitly's API */
    CHECK_EQ_INT(when("2024-01-02T03:04:05+0000"), 1704164645);
    CHECK_EQ_INT(when("2024-01-02 03:04:05.250"), 1704164645);
    CHECK_EQ_INT(when("2024-01-02"), 1704153600);
    CHECK_EQ_INT(when("1/2/2024"), 1704153600);
    CHECK_EQ_INT(when("1/2/2024 3:04"), 1704164640);
    CHECK_EQ_INT(when("1/2/2024 3:04:05 AM"), 1704164645);
    CHECK_EQ_INT(when("1/2/2024 3:04 PM"), 1704207840);
    CHECK_EQ_INT(when("1/2/2024 12:00 AM"), 1704153600);
    CHECK_EQ_INT(when("1704164645"), 1704164645);
    CHECK_EQ_INT(when("  2024-01-02 03:04:05 \r"), 1704164645);
    /* unknown: empty, MySQL's zero date */
    CHECK_EQ_INT(when(""), 0);
    CHECK_EQ_INT(when("0000-00-00 00:00:00"), 0);
    /* refused */
    CHECK_EQ_INT(when("2024-02-30 00:00:00"), -1);
    CHECK_EQ_INT(when("yesterday"), -1);
    CHECK_EQ_INT(when("13/2/2024"), -1);
    CHECK_EQ_INT(when("1/2/2024 13:00 PM"), -1);
    CHECK_EQ_INT(when("1/2/2024 3:04 XM"), -1);
    CHECK_EQ_INT(when("2024-01-02 03:04"), -1);
    CHECK_EQ_INT(when("123456789012"), -1);
}
