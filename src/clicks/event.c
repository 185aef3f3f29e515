/* event.c - the record format of a click: a version byte, fixed fields in
 * little-endian order, then length-prefixed strings, each clamped to its
 * maximum: five in version 1, and in version 2 three more (the client
 * hints). Written by hand because it is 70 lines and must be stable on
 * disk; a serialisation library would add a dependency for no gain. */
#include "clicks/event.h"

#include <string.h>

#include "base/err.h"
#include "base/banned.h"

#define EVENT_VERSION 2 /* what event_encode writes; 1 still decodes */

static void put_u64(struct buf *b, uint64_t v)
{
    unsigned char p[8];
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    buf_add(b, p, 8);
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_str(struct buf *b, struct slice s, size_t max)
{
    size_t n = s.n < max ? s.n : max;
    unsigned char len[2] = {(unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
    buf_add(b, len, 2);
    buf_add(b, s.p, n);
}

size_t event_encode(const struct click_event *e, struct buf *out)
{
    size_t start = out->len;
    buf_addc(out, EVENT_VERSION);
    put_u64(out, (uint64_t)e->ts);
    put_u64(out, e->visitor);
    buf_addc(out, (char)e->flags);
    buf_add(out, e->country[0] ? e->country : "\0\0", 2);
    put_str(out, e->code, 64);
    put_str(out, e->ua, EVENT_UA_MAX);
    put_str(out, e->referer, EVENT_REFERER_MAX);
    put_str(out, e->lang, EVENT_LANG_MAX);
    put_str(out, e->query, EVENT_QUERY_MAX);
    put_str(out, e->ch_ua, EVENT_CH_UA_MAX);
    put_str(out, e->ch_mobile, 2);
    put_str(out, e->ch_platform, EVENT_CH_PLATFORM_MAX);
    return out->len - start;
}

static int get_str(const unsigned char **p, const unsigned char *end, struct slice *s)
{
    if (end - *p < 2)
        return ERR_INVALID;
    size_t n = (size_t)(*p)[0] | (size_t)(*p)[1] << 8;
    *p += 2;
    if ((size_t)(end - *p) < n)
        return ERR_INVALID;
    s->p = (const char *)*p;
    s->n = n;
    *p += n;
    return ERR_OK;
}

int event_decode(const void *rec, size_t n, struct click_event *e)
{
    const unsigned char *p = rec, *end = p + n;
    memset(e, 0, sizeof(*e));
    if (n < 20 || p[0] < 1 || p[0] > EVENT_VERSION)
        return ERR_INVALID;
    int version = p[0];
    e->ts = (int64_t)get_u64(p + 1);
    e->visitor = get_u64(p + 9);
    e->flags = p[17];
    e->country[0] = (char)p[18];
    e->country[1] = (char)p[19];
    e->country[2] = '\0';
    p += 20;
    if (get_str(&p, end, &e->code) || get_str(&p, end, &e->ua) || get_str(&p, end, &e->referer) ||
        get_str(&p, end, &e->lang) || get_str(&p, end, &e->query))
        return ERR_INVALID;
    if (version >= 2 && (get_str(&p, end, &e->ch_ua) || get_str(&p, end, &e->ch_mobile) ||
                         get_str(&p, end, &e->ch_platform)))
        return ERR_INVALID;
    return p == end ? ERR_OK : ERR_INVALID;
}
