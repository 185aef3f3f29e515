/* buf.c - the growable, always NUL-terminated byte string of buf.h, and the
 * borrowed slices that request data travels in. */
#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/banned.h"

void buf_init(struct buf *b)
{
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_release(struct buf *b)
{
    free(b->p);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void buf_truncate(struct buf *b, size_t len)
{
    if (len >= b->len)
        return;
    b->len = len;
    b->p[len] = '\0';
}

void buf_reserve(struct buf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len)
        abort();
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        abort();
    b->p = p;
    b->cap = cap;
    b->p[b->len] = '\0';
}

void buf_add(struct buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_addc(struct buf *b, char c)
{
    buf_reserve(b, 1);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

void buf_add_u64(struct buf *b, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    buf_add(b, tmp + i, sizeof(tmp) - i);
}

void buf_add_i64(struct buf *b, int64_t v)
{
    if (v < 0) {
        buf_addc(b, '-');
        buf_add_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        buf_add_u64(b, (uint64_t)v);
    }
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if ((size_t)n < sizeof(small)) {
        buf_add(b, small, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *buf_cstr(const struct buf *b) { return b->p ? b->p : ""; }

char *buf_detach(struct buf *b, size_t *len)
{
    if (!b->p)
        buf_reserve(b, 0);
    char *p = b->p;
    if (len)
        *len = b->len;
    buf_init(b);
    return p;
}

int slice_eq(struct slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

int slice_ieq(struct slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && strncasecmp(s.p, lit, n) == 0;
}

char *slice_dup(struct slice s)
{
    char *p = malloc(s.n + 1);
    if (!p)
        abort();
    if (s.n)
        memcpy(p, s.p, s.n);
    p[s.n] = '\0';
    return p;
}

char *xstrdup(const char *s) { return slice_dup((struct slice){s, strlen(s)}); }
