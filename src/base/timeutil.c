/* timeutil.c - the clocks, and conversions between milliseconds since the
 * epoch (UTC), day numbers and their RFC 3339 / "YYYY-MM-DD" text. The
 * calendar is Howard Hinnant's days_from_civil / civil_from_days arithmetic
 * on the proleptic Gregorian calendar, so nothing here touches the C
 * library's time zone state (timegm, gmtime): apart from the two clocks, every
 * function is pure and safe from any thread. Parsing is strict: one layout,
 * every field in range, an explicit offset, years 1970 to 9999. */
#include "base/timeutil.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "base/err.h"

#include "base/banned.h"

#define YEAR_MIN 1970
#define YEAR_MAX 9999

struct civil {
    int64_t year;
    unsigned month; /* 1..12 */
    unsigned day;   /* 1..31 */
};

/* Clocks */

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_ms(void) { return clock_ms(CLOCK_REALTIME); }

int64_t mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Calendar arithmetic */

/* Division rounding towards minus infinity, for times before 1970. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned char days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a valid date. Eras are 400-year cycles starting
 * on March 1st, so the leap day is the last day of its year. */
static int64_t days_from_civil(struct civil c)
{
    int64_t y = c.year - (c.month <= 2);
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;                          /* [0, 399] */
    int64_t mp = c.month > 2 ? c.month - 3 : c.month + 9; /* March = 0 */
    int64_t doy = (153 * mp + 2) / 5 + c.day - 1;         /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static struct civil civil_from_days(int64_t z)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11] */
    struct civil c;
    c.day = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    c.month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    c.year = yoe + era * 400 + (c.month <= 2);
    return c;
}

/* Formatting */

void rfc3339_format(int64_t ms, char out[RFC3339_MAX])
{
    int64_t day = floor_div(ms, MS_PER_DAY);
    int64_t in_day = ms % MS_PER_DAY; /* not ms - day * MS_PER_DAY: that overflows */
    if (in_day < 0)
        in_day += MS_PER_DAY;
    struct civil c = civil_from_days(day);
    unsigned secs = (unsigned)(in_day / 1000);
    unsigned frac = (unsigned)(in_day % 1000);

    int len = snprintf(out, RFC3339_MAX, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u", c.year, c.month,
                       c.day, secs / 3600, secs / 60 % 60, secs % 60);
    if (len < 0 || len >= RFC3339_MAX)
        return;
    if (frac)
        snprintf(out + len, (size_t)(RFC3339_MAX - len), ".%03uZ", frac);
    else
        snprintf(out + len, (size_t)(RFC3339_MAX - len), "Z");
}

int64_t day_number(int64_t ms) { return floor_div(ms, MS_PER_DAY); }

/* Days outside years 0..9999 do not fit the 10 characters; they are clamped
 * to the first or last day of that range. */
void day_format(int64_t day, char out[11])
{
    static const int64_t first = -719528; /* 0000-01-01 */
    static const int64_t last = 2932896;  /* 9999-12-31 */
    if (day < first)
        day = first;
    if (day > last)
        day = last;
    struct civil c = civil_from_days(day);
    snprintf(out, 11, "%04u-%02u-%02u", (unsigned)c.year, c.month, c.day);
}

/* Parsing */

/* Exactly 'len' ASCII digits at s, as a number. */
static bool parse_digits(const char *s, size_t len, unsigned *v)
{
    unsigned n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        n = n * 10 + (unsigned)(s[i] - '0');
    }
    *v = n;
    return true;
}

/* "YYYY-MM-DD" at the start of s (at least 10 bytes), a real date in range. */
static bool parse_date(const char *s, struct civil *c)
{
    unsigned y, m, d;
    if (!parse_digits(s, 4, &y) || s[4] != '-' || !parse_digits(s + 5, 2, &m) || s[7] != '-' ||
        !parse_digits(s + 8, 2, &d))
        return false;
    if (y < YEAR_MIN || y > YEAR_MAX || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
        return false;
    c->year = y;
    c->month = m;
    c->day = d;
    return true;
}

/* "HH:MM" at s (at least 5 bytes), 00:00 to 23:59, as minutes. */
static bool parse_hhmm(const char *s, unsigned *minutes)
{
    unsigned h, m;
    if (!parse_digits(s, 2, &h) || s[2] != ':' || !parse_digits(s + 3, 2, &m) || h > 23 || m > 59)
        return false;
    *minutes = h * 60 + m;
    return true;
}

int rfc3339_parse(const char *s, size_t n, int64_t *ms)
{
    /* "YYYY-MM-DDTHH:MM:SS" is 19 bytes; the shortest offset, "Z", one more. */
    if (n < 20)
        return ERR_INVALID;
    struct civil c;
    if (!parse_date(s, &c))
        return ERR_INVALID;
    if (s[10] != 'T' && s[10] != 't' && s[10] != ' ')
        return ERR_INVALID;
    unsigned hhmm, sec;
    if (!parse_hhmm(s + 11, &hhmm) || s[16] != ':' || !parse_digits(s + 17, 2, &sec) || sec > 59)
        return ERR_INVALID;

    size_t i = 19;
    unsigned frac = 0;
    if (s[i] == '.') {
        size_t start = ++i;
        unsigned scale = 100;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            frac += (unsigned)(s[i] - '0') * scale;
            scale /= 10;
            i++;
        }
        if (i == start)
            return ERR_INVALID;
    }

    int64_t offset_min = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-') && n - i >= 6) {
        unsigned off;
        if (!parse_hhmm(s + i + 1, &off))
            return ERR_INVALID;
        offset_min = s[i] == '-' ? -(int64_t)off : (int64_t)off;
        i += 6;
    } else {
        return ERR_INVALID;
    }
    if (i != n)
        return ERR_INVALID;

    int64_t secs = days_from_civil(c) * 86400 + hhmm * 60 + sec - offset_min * 60;
    int64_t result = secs * 1000 + frac;
    /* 1970-01-01T00:30+01:00 is before the epoch; nothing here wants that. */
    if (result < 0)
        return ERR_INVALID;
    *ms = result;
    return ERR_OK;
}

int day_parse(const char *s, size_t n, int64_t *day)
{
    struct civil c;
    if (n != 10 || !parse_date(s, &c))
        return ERR_INVALID;
    *day = days_from_civil(c);
    return ERR_OK;
}
