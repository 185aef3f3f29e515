/* redirect.c - GET|HEAD /<code>: the hot path, alone.
 *
 * 1. A code that cannot exist (wrong length or characters) is a 404 at once.
 * 2. The cache answers, under an RCU read lock: no lock shared by threads,
 *    no allocation (the answer is built in the connection's reused buffers).
 * 3. On a miss, the shared cache (Redis, when configured) and then the store
 *    are read by primary key on a store thread (storeq.h), never here: the
 *    request waits, the loop serves the others meanwhile. Concurrent misses
 *    of one code are one read (a flight, below); the result (or the fact
 *    that the code is unknown) is cached here.
 * 4. A live link answers 302 (301 when permanent) with Location and, for a
 *    GET, records one click in this thread's buffer; HEAD is never counted,
 *    nor a link whose tracking is off (track: false), of which nothing is
 *    recorded at all: no click, no visitor hash.
 *    Expiry is decided here, from the stored time, on every request.
 * 5. Hosts: when default short hosts are configured, the Host must be one of
 *    them or the link's own custom domain (kept in its cache entry), else
 *    404 and no click: a few string compares, nothing when none are set.
 * 6. A link with controls (password, A/B variants, max_clicks) is flagged in
 *    the cache and read whole from the store, on a store thread too, then
 *    answered by controlled.c. Plain links pay nothing for them.
 * 7. Every 404 and 410 is answered by notfound.c (a page for a browser, or
 *    a fallback redirect when one is set): a live link never reaches it.
 * The click event carries the raw headers analytics needs; classification
 * happens later, off this path. The client's address (clientaddr.h: the
 * peer, or behind a trusted proxy its X-Forwarded-For) only ever enters a
 * keyed visitor hash and a country lookup here: it is never recorded.
 * Redirects are never rate limited. */
#include <llhttp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "app/app.h"
#include "redirect/cache.h"
#include "clicks/clicks.h"
#include "links/codes.h"
#include "clicks/classify.h"
#include "http/clientaddr.h"
#include "clicks/event.h"
#include "clicks/geo.h"
#include "base/err.h"
#include "api/handlers.h"
#include "redirect/hosts.h"
#include "redirect/redirect.h"
#include "links/links.h"
#include "redirect/rcache.h"
#include "http/server.h"
#include "store/store_links.h"
#include "store/storeq.h"
#include "base/timeutil.h"
#include "base/banned.h"

void hostcheck_of(const struct request *r, struct hostcheck *h)
{
    *h = (struct hostcheck){.any = true};
    if (r->app->hosts) {
        h->n = host_of_header(r->host, h->name);
        h->any = h->n && hostlist_has(r->app->hosts, h->name, h->n);
    }
}

bool host_allows(const struct hostcheck *h, const char *domain, size_t dn)
{
    return h->any || (domain && dn == h->n && memcmp(domain, h->name, dn) == 0);
}

int redirect_text(struct request *r, int status, const char *msg)
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

/* Before any #fragment of the destination. */
void redirect_location(struct request *r, const char *url, size_t n, bool pass_query)
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
    static const char accept_ch[] = "\r\nAccept-CH: " EVENT_ACCEPT_CH "\r\n";
    buf_add(h, accept_ch, sizeof(accept_ch) - 1);
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

void redirect_record_click(struct request *r, struct slice code, int64_t now, uint8_t flags)
{
    const struct app *app = r->app;
    char utm[EVENT_QUERY_MAX];
    struct click_event e = {.ts = now, .code = code, .flags = flags};
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
        else if (slice_ieq(name, "sec-ch-ua"))
            e.ch_ua = v;
        else if (slice_ieq(name, "sec-ch-ua-mobile"))
            e.ch_mobile = v;
        else if (slice_ieq(name, "sec-ch-ua-platform"))
            e.ch_platform = v;
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
        classify_is_prefetch(sec.p, sec.n, purpose.p, purpose.n, xpurpose.p, xpurpose.n, xmoz.p,
                             xmoz.n))
        e.flags |= EVENT_PREFETCH;
    /* The client: the peer, or behind a trusted proxy its X-Forwarded-For. */
    struct client_ip ip;
    clientaddr_of(r, &ip);
    if (app->geo) {
        struct sockaddr_storage sa;
        clientaddr_to_sockaddr(&ip, &sa);
        geo_country(app->geo, (const struct sockaddr *)&sa, e.country);
    } else if (country.p && clientaddr_peer_trusted(r)) {
        geo_from_header(country.p, country.n, e.country); /* set by a trusted CDN or proxy */
    }
    e.visitor = clicks_visitor(app->clicks, day_number(now), ip.bytes, ip.n, e.ua.p, e.ua.n);
    clicks_record(app->clicks, worker_index(worker_current()), &e);
}

/* The answer for a link as cached or stored; no click is recorded here. */
static int answer(struct request *r, const struct cache_view *v, const struct hostcheck *h,
                  int64_t now)
{
    const struct config *cfg = &r->app->cfg;
    if (v->miss || !host_allows(h, v->domain, v->domain_len))
        return redirect_not_found(r);
    if (v->state != LINK_ACTIVE || !v->url || (v->expires_at && v->expires_at <= now))
        return redirect_gone(r, gone_why_of(v->state));
    if (v->controlled)
        return REDIRECT_CONTROLLED;
    redirect_location(r, v->url, v->url_len, cfg->pass_query);
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

int redirect_unavailable(struct request *r) { return http_unavailable_text(r); }

/* The answer for a link as read from the store (a miss of this cache). */
static int answer_stored(struct request *r, const struct link *l, const struct hostcheck *h,
                         int64_t now)
{
    struct cache_view v = {
        .miss = false,
        .url = l->url,
        .url_len = l->url ? (uint32_t)strlen(l->url) : 0,
        .expires_at = l->expires_at,
        .state = (uint8_t)l->state,
        .permanent = l->permanent,
        .controlled = link_controlled(l),
        .untracked = l->untracked,
        .domain = l->domain,
        .domain_len = l->domain ? (uint8_t)strlen(l->domain) : 0,
    };
    if (l->url && l->dest) {
        v.url = l->dest;
        v.url_len = (uint32_t)strlen(l->dest);
    }
    return answer(r, &v, h, now);
}

/* ---- reads off the loop: flights ----
 *
 * A request that needs the store waits (HTTP_ASYNC) for a flight: one read
 * of one code on a store thread (storeq.h), the shared cache first for a
 * plain miss. Every miss of a code that arrives while its flight is out
 * joins it, from any event loop, so a burst of requests for one unknown or
 * evicted code is one read. A controlled link (fresh) is read for each
 * request alone, from the store itself. When the read lands, each waiter's
 * answer is made on its own loop; a waiter whose deadline (store-timeout-ms)
 * comes first is answered 503 there and leaves its flight. */

#define FLIGHT_BUCKETS 1024

struct waiter;

struct flight {
    struct storeq_job job;
    struct flight *next; /* in its bucket, until it lands */
    struct app *app;
    char code[CODE_MAX + 1];
    size_t n;
    uint64_t hash;
    bool fresh;             /* a controlled link: the store, never Redis */
    bool landed;            /* guarded by flights_mu */
    struct waiter *waiters; /* ... until it lands */
    int rc;                 /* the read's result ... */
    struct link link;       /* ... and the link when ERR_OK */
    atomic_int refs;        /* waiters still to answer */
};

struct waiter {
    struct storeq_wait wait;
    struct task task;
    struct waiter *next;
    struct request *r;
    struct flight *f;
    struct hostcheck h;
    int64_t now;
};

static int redirect_stored(struct request *r, const struct flight *f, const struct hostcheck *h,
                           int64_t now);

static pthread_mutex_t flights_mu = PTHREAD_MUTEX_INITIALIZER;
static struct flight *flights[FLIGHT_BUCKETS];

static void flight_free(struct flight *f)
{
    link_release(&f->link);
    free(f);
}

static void flight_unref(struct flight *f)
{
    if (atomic_fetch_sub(&f->refs, 1) == 1)
        flight_free(f);
}

/* A store thread: the read, the cache fill, then every waiter is woken. */
static void flight_run(struct storeq_job *j, bool cancelled)
{
    struct flight *f = (struct flight *)j;
    struct app *app = f->app;
    int64_t now = now_ms();
    f->rc = ERR_STORAGE;
    if (cancelled) {
        /* At shutdown: the waiters are answered 503. */
    } else if (f->fresh) {
        f->rc = app->store->ops->link_get(app->store, f->code, &f->link);
    } else {
        f->rc = app->rcache ? rcache_get(app->rcache, f->code, f->n, &f->link) : ERR_NOTFOUND;
        if (f->rc != ERR_OK) {
            f->rc = app->store->ops->link_get(app->store, f->code, &f->link);
            if (f->rc == ERR_OK && app->rcache)
                rcache_fill(app->rcache, &f->link, now); /* ERR_BUSY while Redis is down */
        }
        if (f->rc == ERR_NOTFOUND)
            cache_fill_miss(app->cache, f->code, f->n, now);
        else if (f->rc == ERR_OK)
            cache_fill(app->cache, &f->link, now);
    }
    pthread_mutex_lock(&flights_mu);
    if (!f->fresh) {
        struct flight **pp = &flights[f->hash % FLIGHT_BUCKETS];
        while (*pp != f)
            pp = &(*pp)->next;
        *pp = f->next;
    }
    f->landed = true;
    struct waiter *w = f->waiters;
    f->waiters = NULL;
    int n = 0;
    for (struct waiter *x = w; x; x = x->next)
        n++;
    atomic_store(&f->refs, n);
    pthread_mutex_unlock(&flights_mu);
    if (!n) {
        flight_free(f);
        return;
    }
    while (w) {
        struct waiter *next = w->next;
        worker_post(request_worker(w->r), &w->task);
        w = next;
    }
}

/* The waiter's loop, once the read landed: the answer from what was read. */
static void waiter_wake(struct task *t)
{
    struct waiter *w = (struct waiter *)((char *)t - offsetof(struct waiter, task));
    struct request *r = w->r;
    struct flight *f = w->f;
    storeq_wait_end(r->app->storeq, &w->wait);
    int status;
    if (f->fresh) {
        struct link l = f->link; /* one waiter: it takes the link */
        memset(&f->link, 0, sizeof(f->link));
        status = controlled_answer(r, f->rc, &l, w->now);
    } else {
        status = redirect_stored(r, f, &w->h, w->now);
    }
    if (status != HTTP_ASYNC)
        http_resume(r, status);
    flight_unref(f);
    free(w);
}

/* The waiter's loop, at its deadline: 503, unless the read has landed (its
 * answer is then on the way). */
static void waiter_timeout(struct storeq_wait *sw)
{
    struct waiter *w = (struct waiter *)((char *)sw - offsetof(struct waiter, wait));
    struct flight *f = w->f;
    pthread_mutex_lock(&flights_mu);
    bool landed = f->landed;
    if (!landed) {
        struct waiter **pp = &f->waiters;
        while (*pp != w)
            pp = &(*pp)->next;
        *pp = w->next;
    }
    pthread_mutex_unlock(&flights_mu);
    if (landed)
        return;
    struct request *r = w->r;
    free(w);
    http_resume(r, redirect_unavailable(r));
}

/* Waits for a read of 'code' (HTTP_ASYNC), or 503 when the store threads
 * have too much queued already. 'hv' is the code's cache_hash, which picks
 * its flight's bucket too. */
static int wait_for_store(struct request *r, struct slice code, uint64_t hv,
                          const struct hostcheck *h, int64_t now, bool fresh)
{
    struct app *app = r->app;
    struct storeq *q = app->storeq;
    struct waiter *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    *w = (struct waiter){.r = r, .h = *h, .now = now};
    w->task.fn = waiter_wake;
    w->wait.on_timeout = waiter_timeout;
    pthread_mutex_lock(&flights_mu);
    struct flight *f = NULL;
    if (!fresh)
        for (f = flights[hv % FLIGHT_BUCKETS]; f; f = f->next)
            if (f->n == code.n && memcmp(f->code, code.p, code.n) == 0)
                break;
    if (!f) {
        f = calloc(1, sizeof(*f));
        if (!f)
            abort();
        f->app = app;
        memcpy(f->code, code.p, code.n);
        f->n = code.n;
        f->hash = hv;
        f->fresh = fresh;
        f->job.run = flight_run;
        f->job.low = !fresh; /* a miss: below the API (storeq.h) */
        if (!storeq_submit(q, &f->job)) {
            pthread_mutex_unlock(&flights_mu);
            free(f);
            free(w);
            return redirect_unavailable(r);
        }
        if (!fresh) {
            f->next = flights[hv % FLIGHT_BUCKETS];
            flights[hv % FLIGHT_BUCKETS] = f;
        }
    }
    w->f = f;
    w->next = f->waiters;
    f->waiters = w;
    pthread_mutex_unlock(&flights_mu);
    storeq_wait_start(q, &w->wait);
    return HTTP_ASYNC;
}

/* A plain miss, as read: the answer, and its click. */
static int redirect_stored(struct request *r, const struct flight *f, const struct hostcheck *h,
                           int64_t now)
{
    if (f->rc == ERR_NOTFOUND)
        return redirect_not_found(r);
    if (f->rc != ERR_OK)
        return redirect_unavailable(r);
    int status = answer_stored(r, &f->link, h, now);
    if (status == REDIRECT_CONTROLLED)
        return wait_for_store(r, (struct slice){f->code, f->n}, f->hash, h, now, true);
    if ((status == 301 || status == 302) && r->method == HTTP_GET && !f->link.untracked)
        redirect_record_click(r, (struct slice){f->code, f->n}, now, 0);
    return status;
}

/* The redirect's answer, once its cache lines are on their way (below). */
static int redirect_now(struct request *r, struct slice code, uint64_t hash)
{
    int64_t now = now_ms();
    struct cache_view v;
    struct hostcheck h;
    hostcheck_of(r, &h);

    cache_read_lock();
    bool hit = cache_get_hashed(r->app->cache, code.p, code.n, hash, now, &v);
    int status = hit ? answer(r, &v, &h, now) : 0;
    cache_read_unlock();
    if (!hit)
        return wait_for_store(r, code, hash, &h, now, false);
    if (status == REDIRECT_CONTROLLED)
        return wait_for_store(r, code, hash, &h, now, true); /* records its own click */

    if ((status == 301 || status == 302) && r->method == HTTP_GET && !v.untracked)
        redirect_record_click(r, code, now, 0);
    return status;
}

/* http_later's steps: the entry's loads, then the answer. */
static int redirect_step(struct request *r, int step)
{
    if (step == 0) {
        cache_read_lock();
        cache_prefetch(r->app->cache, r->code_hash, 1);
        cache_read_unlock();
        return 0;
    }
    return redirect_now(r, r->code, r->code_hash);
}

/* The hot path. The lookup is split so that the requests of one poll wait
 * for memory together: here the code's slot starts loading, then (step 0)
 * the entry it points to, then (step 1) the answer. At a million links and
 * more each of those loads misses the CPU's caches and its TLB. */
int handle_redirect(struct request *r, struct slice code)
{
    if (!code_is_plausible(code.p, code.n))
        return redirect_not_found(r);
    uint64_t hash = cache_hash(r->app->cache, code.p, code.n);
    cache_read_lock();
    cache_prefetch(r->app->cache, hash, 0);
    cache_read_unlock();
    r->code = code;
    r->code_hash = hash;
    int later = http_later(r, redirect_step);
    return later ? later : redirect_now(r, code, hash);
}
