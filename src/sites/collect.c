/* collect.c - GET /e and POST /e: a site's page beacon, on the event loop.
 *
 * Every beacon gets the same answer whatever happens to it (counted, a bot,
 * a foreign host, malformed, oversized): a 43-byte transparent GIF to an
 * image request, 204 to sendBeacon's POST. The payload is decoded into
 * fixed buffers (beacon.h), the page's host looked up in the in-memory
 * host → site table (sites.h), and the beacon recorded into this loop's
 * click buffer (pageview.h): no store call, no lock and no allocation once
 * the buffers are warm. One clock read gives its day, hour and dowhour.
 * The client's address is used for the country lookup alone, as for a
 * click, and goes no further. HEAD is answered and never counted. */
#include <llhttp.h>
#include <string.h>
#include <sys/socket.h>

#include "api/handlers.h"
#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/clicks.h"
#include "clicks/geo.h"
#include "clicks/pageview.h"
#include "http/clientaddr.h"
#include "http/server.h"
#include "sites/beacon.h"
#include "sites/sites.h"
#include "base/banned.h"

/* GIF89a, 1x1, one transparent colour: the smallest image every browser
 * takes (43 bytes). */
static const unsigned char gif[43] = {0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01,
                                      0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
                                      0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,
                                      0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
                                      0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b};

/* The 'v' of a query or of a text/plain body "v=...". */
static bool payload_of(struct slice s, struct slice *v)
{
    const char *p = s.p, *end = s.p + s.n;
    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        if (stop - p >= 2 && p[0] == 'v' && p[1] == '=') {
            *v = (struct slice){p + 2, (size_t)(stop - p - 2)};
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

static struct slice sl(const char *s) { return (struct slice){s, strlen(s)}; }

/* Counts the beacon if it is one of a site's; answers nothing. */
static void collect(struct request *r, struct slice v)
{
    const struct app *app = r->app;
    struct beacon b;
    if (beacon_decode(v.p, v.n, &b) != ERR_OK)
        return;
    /* The page's host: Origin, else Referer, else the payload's. */
    char host[HOST_NAME_MAX_LEN + 1];
    size_t hn = 0;
    struct slice origin = http_header(r, "origin"), referer = http_header(r, "referer");
    if (origin.p && !(origin.n == 4 && memcmp(origin.p, "null", 4) == 0))
        hn = site_url_host(origin, host);
    if (!hn && referer.p)
        hn = site_url_host(referer, host);
    const char *why;
    if (!hn && b.h[0] && site_host_check(b.h, strlen(b.h), host, &why) == ERR_OK)
        hn = strlen(host);
    char site[SITE_ID_MAX + 1];
    if (!hn || !sitemap_find(app->sites, host, hn, site))
        return;
    struct worker *w = worker_current();
    if (r->method != HTTP_GET && r->method != HTTP_POST)
        return;
    if (!app->clicks || !w)
        return;
    struct page_event e = {
        .ts = now_ms(),
        .width = b.w > INT32_MAX ? INT32_MAX : (int32_t)b.w,
        .site = sl(site),
        .path = sl(b.p),
        .host = b.h[0] ? sl(b.h) : (struct slice){host, hn},
        .ref = sl(b.r),
        .lang = sl(b.l),
        .tz = sl(b.tz),
        .us = sl(b.us),
        .um = sl(b.um),
        .uc = sl(b.uc),
        .ev = sl(b.ev),
        .et = sl(b.et),
    };
    e.flags = (uint8_t)((b.uv ? PAGE_UV : 0) | (b.ss ? PAGE_SS : 0) | (b.bo ? PAGE_BO : 0));
    struct slice country = {0};
    for (int i = 0; i < r->nheaders; i++) {
        struct slice name = r->headers[i].name;
        if (slice_ieq(name, "user-agent"))
            e.ua = r->headers[i].value;
        else if (slice_ieq(name, app->cfg.country_header))
            country = r->headers[i].value;
    }
    if (app->geo) {
        struct client_ip ip;
        struct sockaddr_storage sa;
        clientaddr_of(r, &ip);
        clientaddr_to_sockaddr(&ip, &sa);
        geo_country(app->geo, (const struct sockaddr *)&sa, e.country);
    } else if (country.p && clientaddr_peer_trusted(r)) {
        geo_from_header(country.p, country.n, e.country);
    }
    clicks_record_page(app->clicks, worker_index(w), &e);
}

int handle_beacon(struct request *r)
{
    struct slice v;
    bool post = r->method == HTTP_POST;
    if (payload_of(post ? r->body : r->query, &v))
        collect(r, v);
    http_add_header(r, "Cache-Control", "no-store", 8);
    if (post)
        return http_body(r, 204, NULL, "", 0);
    return http_body(r, 200, "image/gif", (const char *)gif, sizeof(gif));
}
