/* pageview.c - the page record (a kind byte, fixed fields in little-endian
 * order, then length-prefixed strings, as event.c's click record) and its
 * fold into a site day. */
#include "clicks/pageview.h"

#include <string.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/analytics.h"
#include "clicks/classify.h"
#include "clicks/dayrow.h"
#include "sites/beacon.h"
#include "base/banned.h"

#define PAGE_UA_MAX 512
#define PAGE_FIXED 16 /* kind, ts (8), flags, country (2), width (4) */

static void put_str(struct buf *b, struct slice s, size_t max)
{
    size_t n = s.n < max ? s.n : max;
    unsigned char len[2] = {(unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
    buf_add(b, len, 2);
    buf_add(b, s.p, n);
}

size_t page_encode(const struct page_event *e, struct buf *out)
{
    size_t start = out->len;
    unsigned char fixed[PAGE_FIXED];
    fixed[0] = PAGE_RECORD;
    for (int i = 0; i < 8; i++)
        fixed[1 + i] = (unsigned char)((uint64_t)e->ts >> (8 * i));
    fixed[9] = e->flags;
    fixed[10] = (unsigned char)e->country[0];
    fixed[11] = (unsigned char)(e->country[0] ? e->country[1] : 0);
    for (int i = 0; i < 4; i++)
        fixed[12 + i] = (unsigned char)((uint32_t)e->width >> (8 * i));
    buf_add(out, fixed, sizeof(fixed));
    put_str(out, e->site, 64);
    put_str(out, e->ua, PAGE_UA_MAX);
    put_str(out, e->ref, BEACON_REF_MAX);
    const struct slice *dims[] = {&e->path, &e->host, &e->lang, &e->tz, &e->us,
                                  &e->um,   &e->uc,   &e->ev,   &e->et};
    for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
        put_str(out, *dims[i], DIM_MAX);
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

bool page_is_record(const void *rec, size_t n)
{
    return n >= 1 && *(const unsigned char *)rec == PAGE_RECORD;
}

int page_decode(const void *rec, size_t n, struct page_event *e)
{
    const unsigned char *p = rec, *end = p + n;
    memset(e, 0, sizeof(*e));
    if (n < PAGE_FIXED || p[0] != PAGE_RECORD)
        return ERR_INVALID;
    uint64_t ts = 0;
    for (int i = 7; i >= 0; i--)
        ts = ts << 8 | p[1 + i];
    e->ts = (int64_t)ts;
    e->flags = p[9];
    e->country[0] = (char)p[10];
    e->country[1] = (char)p[11];
    uint32_t w = 0;
    for (int i = 3; i >= 0; i--)
        w = w << 8 | p[12 + i];
    e->width = (int32_t)w;
    p += PAGE_FIXED;
    struct slice *all[] = {&e->site, &e->ua, &e->ref, &e->path, &e->host, &e->lang,
                           &e->tz,   &e->us, &e->um,  &e->uc,   &e->ev,   &e->et};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (get_str(&p, end, all[i]) != ERR_OK)
            return ERR_INVALID;
    return p == end ? ERR_OK : ERR_INVALID;
}

/* A value clamped and counted; nothing for an empty one. */
static void count(struct dayrow *r, int dim, struct slice v)
{
    char out[DIM_MAX + 1];
    size_t n = clamp_utf8(v.p, v.n, out);
    if (n)
        dayrow_tally(r, dim, out, n, 1);
}

static void count_str(struct dayrow *r, int dim, const char *v)
{
    if (v && *v)
        dayrow_tally(r, dim, v, strlen(v), 1);
}

static bool slice_is(struct slice s, const char *w)
{
    return s.n == strlen(w) && memcmp(s.p, w, s.n) == 0;
}

void page_fold(struct classify *cl, bool hurry, struct dayrow *r, const struct page_event *e)
{
    struct ua_info ua;
    if (hurry)
        (void)classify_ua_hurried(cl, e->ua.p, e->ua.n, &ua);
    else
        classify_ua(cl, e->ua.p, e->ua.n, &ua);
    if (ua.bot != BOT_NONE) { /* whatever the payload says */
        r->bots++;
        count_str(r, DIM_BOT, "ua");
        count_str(r, DIM_BOT_KIND, bot_kind_name(ua.bot));
        return;
    }
    if (slice_is(e->ev, "hi")) {
        if (slice_is(e->et, "<150") || slice_is(e->et, "150-2000") || slice_is(e->et, ">2000"))
            count(r, DIM_HI, e->et);
        return;
    }
    if (slice_is(e->ev, "bot")) {
        if (slice_is(e->et, "synthetic"))
            count_str(r, DIM_BOT, "synthetic");
        return;
    }
    if (e->ev.n) {
        count(r, DIM_EVENT, e->ev);
        count(r, DIM_EVENT_TARGET, e->et);
        return;
    }
    r->clicks++;
    int64_t day = day_number(e->ts);
    int64_t secs = e->ts / 1000;
    int hour = (int)((secs % 86400 + 86400) % 86400 / 3600);
    int dow = (int)((day % 7 + 7 + 3) % 7) + 1; /* ISO weekday, as a link's (aggregate.c) */
    char hh[3] = {(char)('0' + hour / 10), (char)('0' + hour % 10), '\0'};
    char dh[5] = {(char)('0' + dow), '-', hh[0], hh[1], '\0'};
    char refhost[DIM_MAX + 1], host[DIM_MAX + 1];
    enum ref_group group;
    classify_referrer(e->ref.p, e->ref.n, NULL, refhost, &group);
    size_t hn = clamp_utf8(e->host.p, e->host.n, host);
    /* A referrer on the page's own host: a move inside the site. */
    if (hn && strcmp(refhost, host) == 0)
        group = REF_INTERNAL;
    count(r, DIM_PATH, e->path.n ? e->path : (struct slice){"/", 1});
    count_str(r, DIM_HOST, host);
    count_str(r, DIM_REFERRER, refhost);
    count_str(r, DIM_REF_GROUP, ref_group_name(group));
    count(r, DIM_LANGUAGE, e->lang);
    count(r, DIM_TZ, e->tz);
    count_str(r, DIM_BROWSER, ua.browser);
    count_str(r, DIM_OS, ua.os);
    count_str(r, DIM_DEVICE, device_name(ua.device));
    count_str(r, DIM_HOUR, hh);
    count_str(r, DIM_DOWHOUR, dh);
    count_str(r, DIM_COUNTRY, e->country);
    count_str(r, DIM_VIEWPORT, beacon_viewport(e->width));
    count(r, DIM_UTM_SOURCE, e->us);
    count(r, DIM_UTM_MEDIUM, e->um);
    count(r, DIM_UTM_CAMPAIGN, e->uc);
    if (e->flags & PAGE_UV)
        count_str(r, DIM_UV, "1");
    if (e->flags & PAGE_SS)
        count_str(r, DIM_SESSIONS, "1");
    if (e->flags & PAGE_BO)
        count_str(r, DIM_BOUNCE, "1");
}
