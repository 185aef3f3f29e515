/* when.c - the times of other shorteners' exports (when.h): normalised to
 * RFC 3339 text and read by timeutil's parser, so every date check is one. */
#include "import/when.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "base/banned.h"

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return n > 0;
}

static int rfc(const char *s, size_t n, int64_t *sec)
{
    int64_t ms;
    int rc = rfc3339_parse(s, n, &ms);
    if (rc == ERR_OK)
        *sec = ms / 1000;
    return rc;
}

/* A number of at most 'max' digits at *p, moving past it; -1 when none. */
static int number(const char **p, const char *end, int max)
{
    int v = 0, k = 0;
    while (*p < end && **p >= '0' && **p <= '9' && k < max) {
        v = v * 10 + (**p - '0');
        (*p)++;
        k++;
    }
    return k ? v : -1;
}

/* "M/D/YYYY[ H:MM[:SS][ AM|PM]]", as spreadsheets write dates */
static int us_date(const char *s, size_t n, int64_t *sec)
{
    const char *p = s, *end = s + n;
    int mo = number(&p, end, 2);
    if (mo < 0 || p == end || *p++ != '/')
        return ERR_INVALID;
    int d = number(&p, end, 2);
    if (d < 0 || p == end || *p++ != '/')
        return ERR_INVALID;
    int y = number(&p, end, 4);
    if (y < 1000)
        return ERR_INVALID;
    int h = 0, mi = 0, se = 0;
    if (p < end && *p == ' ') {
        p++;
        h = number(&p, end, 2);
        if (h < 0 || p == end || *p++ != ':')
            return ERR_INVALID;
        mi = number(&p, end, 2);
        if (mi < 0)
            return ERR_INVALID;
        if (p < end && *p == ':') {
            p++;
            se = number(&p, end, 2);
            if (se < 0)
                return ERR_INVALID;
        }
        if (p < end && *p == ' ')
            p++;
        if (end - p == 2 && (p[1] == 'M' || p[1] == 'm')) {
            bool pm = p[0] == 'P' || p[0] == 'p';
            if ((!pm && p[0] != 'A' && p[0] != 'a') || h < 1 || h > 12)
                return ERR_INVALID;
            h = h % 12 + (pm ? 12 : 0);
            p = end;
        }
    }
    if (p != end)
        return ERR_INVALID;
    char iso[32];
    int len = snprintf(iso, sizeof(iso), "%04d-%02d-%02dT%02d:%02d:%02dZ", y, mo, d, h, mi, se);
    if (len <= 0 || (size_t)len >= sizeof(iso))
        return ERR_INVALID;
    return rfc(iso, (size_t)len, sec);
}

int when_parse(const char *s, size_t n, int64_t *sec)
{
    *sec = 0;
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (!n)
        return ERR_OK;
    if (digits(s, n)) {
        if (n > 11)
            return ERR_INVALID;
        long long v = 0;
        for (size_t i = 0; i < n; i++)
            v = v * 10 + (s[i] - '0');
        *sec = v;
        return ERR_OK;
    }
    if (n >= 10 && !memcmp(s, "0000-00-00", 10))
        return ERR_OK; /* MySQL's zero date: unknown */
    if (memchr(s, '/', n))
        return us_date(s, n, sec);
    char iso[64];
    if (n >= sizeof(iso) - 1 || n < 10)
        return ERR_INVALID;
    memcpy(iso, s, n);
    if (n == 10) { /* a date alone */
        memcpy(iso + n, "T00:00:00Z", 10);
        return rfc(iso, n + 10, sec);
    }
    /* a zone written +0100 (Bitly's API) becomes +01:00 */
    if (n >= 24 && (iso[n - 5] == '+' || iso[n - 5] == '-') && digits(iso + n - 4, 4) &&
        iso[n - 3] != ':') {
        iso[n] = iso[n - 1];
        iso[n - 1] = iso[n - 2];
        iso[n - 2] = ':';
        n++;
    }
    char last = iso[n - 1];
    bool zoned = last == 'Z' || last == 'z' ||
                 (n >= 25 && (iso[n - 6] == '+' || iso[n - 6] == '-') && iso[n - 3] == ':');
    if (!zoned)
        iso[n++] = 'Z'; /* no zone: UTC */
    return rfc(iso, n, sec);
}
