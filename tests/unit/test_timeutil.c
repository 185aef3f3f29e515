/* test_timeutil.c - RFC 3339 and day conversions against known instants,
 * against the C library's gmtime_r/timegm on a spread of samples, and a walk
 * over every day from 1970 to 9999 with a naive calendar, so the calendar
 * arithmetic is never checked only against itself. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "test.h"
#include "base/timeutil.h"

#include "base/banned.h"

#define U(s) s, sizeof(s) - 1

static const char *fmt(int64_t ms, char out[RFC3339_MAX])
{
    rfc3339_format(ms, out);
    return out;
}

void test_time_clocks(void)
{
    int64_t now = now_ms();
    CHECK(now > 1700000000000LL); /* after November 2023 */
    CHECK(now < 4102444800000LL); /* before 2100 */
    int64_t a = mono_ms();
    int64_t b = mono_ms();
    CHECK(b >= a);
}

void test_rfc3339_format(void)
{
    char s[RFC3339_MAX];
    CHECK_EQ_STR(fmt(0, s), "1970-01-01T00:00:00Z");
    CHECK_EQ_STR(fmt(1, s), "1970-01-01T00:00:00.001Z");
    CHECK_EQ_STR(fmt(999, s), "1970-01-01T00:00:00.999Z");
    CHECK_EQ_STR(fmt(1000, s), "1970-01-01T00:00:01Z");
    CHECK_EQ_STR(fmt(1700000000000LL, s), "2023-11-14T22:13:20Z");
    CHECK_EQ_STR(fmt(1700000000120LL, s), "2023-11-14T22:13:20.120Z");
    CHECK_EQ_STR(fmt(951782400000LL, s), "2000-02-29T00:00:00Z");
    CHECK_EQ_STR(fmt(951868799999LL, s), "2000-02-29T23:59:59.999Z");
    CHECK_EQ_STR(fmt(4107542400000LL, s), "2100-03-01T00:00:00Z");
    CHECK_EQ_STR(fmt(253402300799999LL, s), "9999-12-31T23:59:59.999Z");
    CHECK_EQ_STR(fmt(-1, s), "1969-12-31T23:59:59.999Z");
    /* Any int64_t fits the buffer. */
    fmt(INT64_MAX, s);
    CHECK(strlen(s) < RFC3339_MAX && s[strlen(s) - 1] == 'Z');
    fmt(INT64_MIN, s);
    CHECK(strlen(s) < RFC3339_MAX && s[strlen(s) - 1] == 'Z');
}

void test_rfc3339_parse(void)
{
    static const struct {
        const char *in;
        size_t n;
        int64_t ms; /* -1: ERR_INVALID */
    } cases[] = {
        {U("1970-01-01T00:00:00Z"), 0},
        {U("2023-11-14T22:13:20Z"), 1700000000000LL},
        {U("2023-11-14t22:13:20z"), 1700000000000LL},
        {U("2023-11-14 22:13:20Z"), 1700000000000LL},
        {U("2023-11-14T22:13:20+00:00"), 1700000000000LL},
        {U("2023-11-14T22:13:20-00:00"), 1700000000000LL},
        {U("2023-11-15T00:13:20+02:00"), 1700000000000LL},
        {U("2023-11-14T17:13:20-05:00"), 1700000000000LL},
        {U("2023-11-15T03:43:20+05:30"), 1700000000000LL},
        {U("2023-11-13T23:14:20-22:59"), 1700000000000LL},
        {U("2023-11-14T22:13:20.123Z"), 1700000000123LL},
        {U("2023-11-14T22:13:20.1Z"), 1700000000100LL},
        {U("2023-11-14T22:13:20.12Z"), 1700000000120LL},
        {U("2023-11-14T22:13:20.000Z"), 1700000000000LL},
        {U("2023-11-14T22:13:20.123456789Z"), 1700000000123LL},
        {U("2023-11-14T22:13:20.9999Z"), 1700000000999LL},
        {U("2023-11-15T00:13:20.5+02:00"), 1700000000500LL},
        {U("2000-02-29T00:00:00Z"), 951782400000LL},
        {U("2024-02-29T12:00:00Z"), 1709208000000LL},
        {U("2023-12-31T23:59:59Z"), 1704067199000LL},
        {U("9999-12-31T23:59:59.999Z"), 253402300799999LL},

        /* Impossible dates and times */
        {U("2023-02-29T00:00:00Z"), -1},
        {U("2100-02-29T00:00:00Z"), -1}, /* centuries are not leap years */
        {U("2023-02-30T00:00:00Z"), -1},
        {U("2023-04-31T00:00:00Z"), -1},
        {U("2023-01-32T00:00:00Z"), -1},
        {U("2023-01-00T00:00:00Z"), -1},
        {U("2023-00-10T00:00:00Z"), -1},
        {U("2023-13-01T00:00:00Z"), -1},
        {U("2023-11-14T24:00:00Z"), -1},
        {U("2023-11-14T23:60:00Z"), -1},
        {U("2023-11-14T23:59:60Z"), -1},
        {U("1969-12-31T23:59:59Z"), -1},
        {U("0000-01-01T00:00:00Z"), -1},
        {U("1970-01-01T00:30:00+01:00"), -1}, /* before the epoch */
        {U("10000-01-01T00:00:00Z"), -1},

        /* Offsets */
        {U("2023-11-14T22:13:20"), -1},
        {U("2023-11-14T22:13:20.123"), -1},
        {U("2023-11-14T22:13:20+0200"), -1},
        {U("2023-11-14T22:13:20+02"), -1},
        {U("2023-11-14T22:13:20+24:00"), -1},
        {U("2023-11-14T22:13:20+02:60"), -1},
        {U("2023-11-14T22:13:20 +02:00"), -1},
        {U("2023-11-14T22:13:20UTC"), -1},

        /* Layout */
        {U(""), -1},
        {U("2023-11-14"), -1},
        {U("2023-11-14T22:13Z"), -1},
        {U("2023-11-14T22:13:20.Z"), -1},
        {U("2023-11-14T22:13:20ZZ"), -1},
        {U("2023-11-14T22:13:20Z "), -1},
        {U("2023-11-14T22:13:20Z\0"), -1},
        {U("2023-11-14T22:13:20+02:00x"), -1},
        {U(" 2023-11-14T22:13:20Z"), -1},
        {U("+2023-11-14T22:13:20Z"), -1},
        {U("2023-1-14T22:13:20Z"), -1},
        {U("2023/11/14T22:13:20Z"), -1},
        {U("2023-11-14X22:13:20Z"), -1},
        {U("2023-11-14T2:13:20Z"), -1},
        {U("2023-11-14T22:13:2Z"), -1},
        {U("2023-11-14T22:13:+2Z"), -1},
        {U("2O23-11-14T22:13:20Z"), -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ms = -42;
        int rc = rfc3339_parse(cases[i].in, cases[i].n, &ms);
        bool ok = cases[i].ms < 0 ? rc == ERR_INVALID && ms == -42
                                  : rc == ERR_OK && ms == cases[i].ms;
        if (!CHECK(ok))
            test_note("\"%s\": rc %d, ms %lld", cases[i].in, rc, (long long)ms);
    }

    /* Only n bytes are read. */
    int64_t ms = 0;
    CHECK_EQ_INT(rfc3339_parse("2023-11-14T22:13:20Zjunk", 20, &ms), ERR_OK);
    CHECK_EQ_INT(ms, 1700000000000LL);
    CHECK_EQ_INT(rfc3339_parse("2023-11-14T22:13:20Z", 19, &ms), ERR_INVALID);
}

static uint64_t next_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 11;
}

void test_rfc3339_round_trip(void)
{
    const int64_t max = 253402300799999LL; /* 9999-12-31T23:59:59.999Z */
    uint64_t state = 7;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        int64_t ms = (int64_t)(next_rand(&state) % (uint64_t)(max + 1));
        if (i % 2)
            ms -= ms % 1000; /* whole seconds too */
        char s[RFC3339_MAX];
        int64_t back = -1;
        rfc3339_format(ms, s);
        if (rfc3339_parse(s, strlen(s), &back) != ERR_OK || back != ms) {
            if (bad++ == 0)
                test_note("round trip of %lld gave \"%s\" -> %lld", (long long)ms, s,
                          (long long)back);
        }
    }
    CHECK_EQ_INT(bad, 0);
}

void test_rfc3339_against_libc(void)
{
    const int64_t max = 253402300799999LL;
    uint64_t state = 11;
    int bad_format = 0, bad_parse = 0;
    for (int i = 0; i < 100000; i++) {
        int64_t ms = (int64_t)(next_rand(&state) % (uint64_t)(max + 1));
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        if (!gmtime_r(&t, &tm))
            continue;
        char want[64];
        size_t len = strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S", &tm);
        if (ms % 1000)
            snprintf(want + len, sizeof(want) - len, ".%03dZ", (int)(ms % 1000));
        else
            snprintf(want + len, sizeof(want) - len, "Z");

        char got[RFC3339_MAX];
        rfc3339_format(ms, got);
        if (strcmp(got, want) != 0 && bad_format++ == 0)
            CHECK_EQ_STR(got, want);

        /* The same instant written with an offset of +hh:mm, via libc. */
        int off_min = (int)(next_rand(&state) % (24 * 60)) * (i % 2 ? 1 : -1);
        time_t local = t + off_min * 60;
        struct tm ltm;
        if (!gmtime_r(&local, &ltm) || ltm.tm_year + 1900 < 1970 || ltm.tm_year + 1900 > 9999)
            continue;
        char text[64];
        len = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &ltm);
        int a = off_min < 0 ? -off_min : off_min;
        snprintf(text + len, sizeof(text) - len, "%c%02d:%02d", off_min < 0 ? '-' : '+', a / 60,
                 a % 60);
        int64_t back = -1;
        if ((rfc3339_parse(text, strlen(text), &back) != ERR_OK || back != t * 1000) &&
            bad_parse++ == 0)
            test_note("\"%s\" gave %lld, libc says %lld", text, (long long)back,
                      (long long)t * 1000);
    }
    CHECK_EQ_INT(bad_format, 0);
    CHECK_EQ_INT(bad_parse, 0);
}

void test_day_functions(void)
{
    char s[11];
    CHECK_EQ_INT(day_number(0), 0);
    CHECK_EQ_INT(day_number(MS_PER_DAY - 1), 0);
    CHECK_EQ_INT(day_number(MS_PER_DAY), 1);
    CHECK_EQ_INT(day_number(-1), -1);
    CHECK_EQ_INT(day_number(1700000000000LL), 19675);

    day_format(0, s);
    CHECK_EQ_STR(s, "1970-01-01");
    day_format(19675, s);
    CHECK_EQ_STR(s, "2023-11-14");
    day_format(-1, s);
    CHECK_EQ_STR(s, "1969-12-31");
    day_format(-10000000, s); /* clamped to what fits */
    CHECK_EQ_STR(s, "0000-01-01");
    day_format(10000000, s);
    CHECK_EQ_STR(s, "9999-12-31");

    int64_t day = -7;
    CHECK_EQ_INT(day_parse(U("2023-11-14"), &day), ERR_OK);
    CHECK_EQ_INT(day, 19675);
    CHECK_EQ_INT(day_parse(U("1970-01-01"), &day), ERR_OK);
    CHECK_EQ_INT(day, 0);
    day = -7;
    CHECK_EQ_INT(day_parse(U("2023-02-29"), &day), ERR_INVALID);
    CHECK_EQ_INT(day_parse(U("1969-12-31"), &day), ERR_INVALID);
    CHECK_EQ_INT(day_parse(U("2023-11-14T"), &day), ERR_INVALID);
    CHECK_EQ_INT(day_parse(U("2023-11-4"), &day), ERR_INVALID);
    CHECK_EQ_INT(day_parse(U("23-11-14"), &day), ERR_INVALID);
    CHECK_EQ_INT(day_parse(U(""), &day), ERR_INVALID);
    CHECK_EQ_INT(day, -7);
}

/* "YYYY-MM-DD" digit by digit; snprintf would make the walk below slow. */
static void naive_date(int y, int m, int d, char out[11])
{
    const int fields[3][2] = {{y, 4}, {m, 2}, {d, 2}};
    char *p = out;
    for (int f = 0; f < 3; f++) {
        if (f > 0)
            *p++ = '-';
        for (int i = fields[f][1] - 1, v = fields[f][0]; i >= 0; i--, v /= 10)
            p[i] = (char)('0' + v % 10);
        p += fields[f][1];
    }
    *p = '\0';
}

/* Every day from 1970-01-01 to 9999-12-31, counted with a naive calendar. */
void test_day_every_day(void)
{
    static const int month_days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = 1970, m = 1, d = 1;
    int64_t day = 0;
    int bad = 0;
    for (;;) {
        char want[11], got[11];
        naive_date(y, m, d, want);
        day_format(day, got);
        int64_t back = -1;
        if (strcmp(got, want) != 0 || day_parse(want, 10, &back) != ERR_OK || back != day) {
            if (bad++ == 0)
                test_note("day %lld: formatted \"%s\", want \"%s\", parsed back %lld",
                          (long long)day, got, want, (long long)back);
        }
        if (y == 9999 && m == 12 && d == 31)
            break;
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        int len = m == 2 && leap ? 29 : month_days[m - 1];
        if (++d > len) {
            d = 1;
            if (++m > 12) {
                m = 1;
                y++;
            }
        }
        day++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(day, 2932896);
}
