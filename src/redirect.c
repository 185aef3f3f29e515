/* redirect.c - GET|HEAD /<code>: the hot path, alone.
 *
 * 1. A code that cannot exist (wrong length or characters) is a 404 at once.
 * 2. The cache answers, under an RCU read lock: no lock shared by threads,
 *    no allocation (the answer is built in the connection's reused buffers).
 * 3. On a miss, the store is read by primary key on this thread's own
 *    connection and the result (or the fact that the code is unknown) cached.
 * 4. A live link answers 302 (301 when permanent) with Location and, for a
 *    GET, records one click in this thread's buffer; HEAD is never counted.
 *    Expiry is decided here, from the stored time, on every request. */
#include <llhttp.h>
#include <string.h>

#include "app.h"
#include "cache.h"
#include "clicks.h"
#include "codes.h"
#include "config.h"
#include "err.h"
#include "handlers.h"
#include "server.h"
#include "store.h"
#include "timeutil.h"
#include "banned.h"

static int text(struct request *r, int status, const char *msg)
{
    http_add_header(r, "Cache-Control", "no-store", 8);
    return http_body(r, status, "text/plain; charset=utf-8", msg, strlen(msg));
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
        buf_add(h, r->query.p, r->query.n);
        buf_add(h, url + before, n - before);
    }
    buf_add(h, "\r\n", 2);
}

static int answer(struct request *r, struct slice code, const struct cache_view *v, int64_t now)
{
    const struct config *cfg = &r->app->cfg;
    if (v->miss)
        return text(r, 404, "Not Found: no link has this code\n");
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
    if (r->method == HTTP_GET)
        clicks_record(r->app->clicks, worker_index(worker_current()), code.p, code.n, now);
    return status;
}

int handle_redirect(struct request *r, struct slice code)
{
    struct app *app = r->app;
    if (!code_is_plausible(code.p, code.n))
        return text(r, 404, "Not Found: no link has this code\n");
    int64_t now = now_ms();
    struct cache_view v;

    cache_read_lock();
    bool hit = cache_get(app->cache, code.p, code.n, now, &v);
    int status = hit ? answer(r, code, &v, now) : 0;
    cache_read_unlock();
    if (hit)
        return status;

    char key[CODE_MAX + 1];
    memcpy(key, code.p, code.n);
    key[code.n] = '\0';
    struct link l;
    int rc = app->store->ops->link_get(app->store, key, &l);
    if (rc == ERR_NOTFOUND) {
        cache_fill_miss(app->cache, code.p, code.n, now);
        return text(r, 404, "Not Found: no link has this code\n");
    }
    if (rc != ERR_OK) {
        http_add_header(r, "Retry-After", "1", 1);
        return text(r, 503, "Service Unavailable: try again\n");
    }
    cache_fill(app->cache, &l, now);
    v = (struct cache_view){
        .miss = false,
        .url = l.url,
        .url_len = l.url ? (uint32_t)strlen(l.url) : 0,
        .expires_at = l.expires_at,
        .state = (uint8_t)l.state,
        .permanent = l.permanent,
    };
    status = answer(r, code, &v, now);
    link_release(&l);
    return status;
}
