/* redirect.c - GET|HEAD /<code>: the hot path, alone.
 *
 * 1. A code that cannot exist (wrong length or characters) is a 404 at once.
 * 2. The cache answers, under an RCU read lock: no lock shared by threads,
 *    no allocation (the answer is built in the connection's reused buffers).
 * 3. On a miss, the shared cache (Redis, when configured) and then the store
 *    are read by primary key, on this thread's own connections, and the
 *    result (or the fact that the code is unknown) cached here.
 * 4. A live link answers 302 (301 when permanent) with Location and, for a
 *    GET, records one click in this thread's buffer; HEAD is never counted.
 *    Expiry is decided here, from the stored time, on every request.
 * The click event carries the raw headers analytics needs; classification
 * happens later, off this path. The client's address (clientaddr.h: the
 * peer, or behind a trusted proxy its X-Forwarded-For) only ever enters a
 * keyed visitor hash and a country lookup here: it is never recorded.
 * Redirects are never rate limited. */
#include <llhttp.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "app.h"
#include "cache.h"
#include "clicks.h"
#include "codes.h"
#include "classify.h"
#include "clientaddr.h"
#include "config.h"
#include "event.h"
#include "geo.h"
#include "err.h"
#include "handlers.h"
#include "rcache.h"
#include "server.h"
#include "store.h"
#include "timeutil.h"
#include "banned.h"

static int text(struct request *r, int status, const char *msg)
{
    http_add_header(r, "Cache-Control", "no-store", 8);
    return http_body(r, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* The request's query as it may stand in a Location header: bytes a URL may
 * not hold raw (non-ASCII, quotes, angle brackets...) percent-encoded. */
static void add_query(struct buf *h, struct slice q)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < q.n; i++) {
        unsigned char ch = (unsigned char)q.p[i];
        if (ch >= 0x80 || strchr("\"<>\\^`{|}#", ch)) {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            buf_add(h, e, 3);
        } else {
            buf_addc(h, (char)ch);
        }
    }
}

/* Location: the destination, with the request's query string appended to
 * the destination's own (before any #fragment). */
static void add_location(struct request *r, const char *url, size_t n, bool pass_query)
{
    struct buf *h = &r->resp_headers;
    buf_add(h, "Location: ", 10);
    if (!pass_query || !r->query.n) {
        buf_add(h, url, n);
    } else {
        const char *hash = memchr(url, '#', n);
        size_t before = hash ? (size_t)(hash - url) : n;
        buf_add(h, url, before);
        buf_addc(h, memchr(url, '?', before) ? '&' : '?');
        add_query(h, r->query);
        buf_add(h, url + before, n - before);
    }
    buf_add(h, "\r\n", 2);
}

/* The utm_* parameters of the query, copied into 'out' as "k=v&k=v": only
 * they are journaled, so a long click id before them cannot push them out. */
static struct slice utm_only(struct slice q, char *out, size_t cap)
{
    size_t n = 0;
    const char *p = q.p, *end = q.p + q.n;
    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        size_t len = (size_t)((amp ? amp : end) - p);
        if (len > 4 && memcmp(p, "utm_", 4) == 0 && n + len + 1 <= cap) {
            if (n)
                out[n++] = '&';
            memcpy(out + n, p, len);
            n += len;
        }
        p = amp ? amp + 1 : NULL;
    }
    return (struct slice){out, n};
}

static void record_click(struct request *r, struct slice code, int64_t now)
{
    const struct app *app = r->app;
    char utm[EVENT_QUERY_MAX];
    struct click_event e = {.ts = now, .code = code};
    if (r->query.n)
        e.query = utm_only(r->query, utm, sizeof(utm));
    struct slice sec = {0}, purpose = {0}, xpurpose = {0}, xmoz = {0}, country = {0};
    for (int i = 0; i < r->nheaders; i++) {
        struct slice name = r->headers[i].name, v = r->headers[i].value;
        if (slice_ieq(name, "user-agent"))
            e.ua = v;
        else if (slice_ieq(name, "referer"))
            e.referer = v;
        else if (slice_ieq(name, "accept-language"))
            e.lang = v;
        else if (slice_ieq(name, "sec-purpose"))
            sec = v;
        else if (slice_ieq(name, "purpose"))
            purpose = v;
        else if (slice_ieq(name, "x-purpose"))
            xpurpose = v;
        else if (slice_ieq(name, "x-moz"))
            xmoz = v;
        else if (slice_ieq(name, app->cfg.country_header))
            country = v;
    }
    if ((sec.p || purpose.p || xpurpose.p || xmoz.p) &&
        classify_is_prefetch(sec.p, sec.n, purpose.p, purpose.n, xpurpose.p, xpurpose.n,
                             xmoz.p, xmoz.n))
        e.flags |= EVENT_PREFETCH;
    /* The client: the peer, or behind a trusted proxy its X-Forwarded-For. */
    struct client_ip ip;
    clientaddr_of(r, &ip);
    if (app->geo) {
        struct sockaddr_storage sa;
        clientaddr_to_sockaddr(&ip, &sa);
        geo_country(app->geo, (const struct sockaddr *)&sa, e.country);
    } else if (country.p) {
        geo_from_header(country.p, country.n, e.country);
    }
    e.visitor = clicks_visitor(app->clicks, day_number(now), ip.bytes, ip.n, e.ua.p, e.ua.n);
    clicks_record(app->clicks, worker_index(worker_current()), &e);
}

static int not_found(struct request *r)
{
    return text(r, 404, "Not Found: no link has this code\n");
}

/* The answer for a link as cached or stored; no click is recorded here. */
static int answer(struct request *r, const struct cache_view *v, int64_t now)
{
    const struct config *cfg = &r->app->cfg;
    if (v->miss)
        return not_found(r);
    if (v->state != LINK_ACTIVE || !v->url || (v->expires_at && v->expires_at <= now))
        return text(r, 410, "Gone: this link has expired or was removed\n");
    add_location(r, v->url, v->url_len, cfg->pass_query);
    int status = 302;
    if (v->permanent) {
        status = 301;
        buf_printf(&r->resp_headers, "Cache-Control: public, max-age=%lld\r\n",
                   (long long)cfg->permanent_max_age);
    } else {
        buf_adds(&r->resp_headers, "Cache-Control: private, no-store\r\n");
    }
    return status;
}

/* A miss of this node's cache: the shared cache, then the store, by key. */
static int answer_uncached(struct request *r, struct slice code, int64_t now)
{
    struct app *app = r->app;
    char key[CODE_MAX + 1];
    memcpy(key, code.p, code.n);
    key[code.n] = '\0';
    struct link l;
    int rc = app->rcache ? rcache_get(app->rcache, key, code.n, &l) : ERR_NOTFOUND;
    if (rc != ERR_OK) {
        rc = app->store->ops->link_get(app->store, key, &l);
        if (rc == ERR_OK && app->rcache)
            rcache_fill(app->rcache, &l, now);  /* ERR_BUSY while Redis is down: fine */
    }
    if (rc == ERR_NOTFOUND) {
        cache_fill_miss(app->cache, code.p, code.n, now);
        return not_found(r);
    }
    if (rc != ERR_OK) {
        http_add_header(r, "Retry-After", "1", 1);
        return text(r, 503, "Service Unavailable: try again\n");
    }
    cache_fill(app->cache, &l, now);
    struct cache_view v = {
        .miss = false,
        .url = l.url,
        .url_len = l.url ? (uint32_t)strlen(l.url) : 0,
        .expires_at = l.expires_at,
        .state = (uint8_t)l.state,
        .permanent = l.permanent,
    };
    int status = answer(r, &v, now);
    link_release(&l);
    return status;
}

int handle_redirect(struct request *r, struct slice code)
{
    if (!code_is_plausible(code.p, code.n))
        return not_found(r);
    int64_t now = now_ms();
    struct cache_view v;

    cache_read_lock();
    bool hit = cache_get(r->app->cache, code.p, code.n, now, &v);
    int status = hit ? answer(r, &v, now) : 0;
    cache_read_unlock();
    if (!hit)
        status = answer_uncached(r, code, now);

    if ((status == 301 || status == 302) && r->method == HTTP_GET)
        record_click(r, code, now);
    return status;
}
