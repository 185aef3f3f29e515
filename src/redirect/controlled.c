/* controlled.c - the redirect of a link with controls, and the gate's POST.
 *
 * A link with a password, A/B variants or a click limit is read whole from
 * the store on every request (its cache entry only says so), on this
 * thread's own connection. A click limit is enforced by reserving a slot
 * before the answer: the reservation (store.h's link_reserve) is a write, so
 * it goes through the group commit like a create and the request waits for
 * it (HTTP_ASYNC): durable before the redirect is sent, hence exact across a
 * kill -9 restart, and in PostgreSQL a conditional UPDATE under the row's
 * lock, hence exact across nodes. Bots, prefetches and HEAD never reserve:
 * they get the redirect while slots remain, and 410 once none is left.
 * redirect.c reads such a link (its cache entry only says "controlled") and
 * hands it to controlled_answer; POST /CODE comes here from the router. */
#include <llhttp.h>
#include <pthread.h>
#include <sodium.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/classify.h"
#include "clicks/event.h"
#include "api/handlers.h"
#include "http/clientaddr.h"
#include "http/ratelimit.h"
#include "http/server.h"
#include "links/codes.h"
#include "links/links.h"
#include "links/pwhash.h"
#include "links/variants.h"
#include "redirect/gate.h"
#include "redirect/redirect.h"
#include "store/store_links.h"
#include "store/writer.h"
#include "base/banned.h"

/* Bot detection on an event-loop thread: classify_ua is single-threaded, so
 * each thread has its own (without a per-UA cache), made on first use and
 * freed at exit. */
static pthread_mutex_t bots_mu = PTHREAD_MUTEX_INITIALIZER;
static struct classify *all_bots[256];
static int nbots;
static _Thread_local struct classify *my_bots;

static void __attribute__((destructor)) free_bots(void)
{
    pthread_mutex_lock(&bots_mu);
    for (int i = 0; i < nbots; i++)
        classify_free(all_bots[i]);
    nbots = 0;
    pthread_mutex_unlock(&bots_mu);
}

static bool is_bot(const struct request *r)
{
    struct slice ua = http_header(r, "user-agent");
    struct slice sec = http_header(r, "sec-purpose"), purpose = http_header(r, "purpose");
    struct slice xpurpose = http_header(r, "x-purpose"), xmoz = http_header(r, "x-moz");
    if (classify_is_prefetch(sec.p, sec.n, purpose.p, purpose.n, xpurpose.p, xpurpose.n, xmoz.p,
                             xmoz.n))
        return true;
    if (!my_bots) {
        pthread_mutex_lock(&bots_mu);
        if (nbots < (int)(sizeof(all_bots) / sizeof(all_bots[0])) &&
            classify_new(0, &my_bots) == ERR_OK)
            all_bots[nbots++] = my_bots;
        pthread_mutex_unlock(&bots_mu);
        if (!my_bots)
            return false;
    }
    struct ua_info info;
    classify_ua(my_bots, ua.p, ua.p ? ua.n : 0, &info);
    return info.bot != BOT_NONE;
}

/* Where a controlled link sends this visitor: its A/B variant (chosen from
 * the per-link key, the address and the user agent, so a visitor keeps it),
 * or its destination. *flags gets the variant for the click event. */
static char *destination_of(const struct request *r, const struct link *l, uint8_t *flags)
{
    *flags = 0;
    struct variants vs;
    if (l->variants && variants_from_text(l->variants, &vs) == ERR_OK) {
        uint8_t key[32];
        links_variant_key(r->app->links, l->code, key);
        struct client_ip ip;
        clientaddr_of(r, &ip);
        struct slice ua = http_header(r, "user-agent");
        int i = variants_pick(&vs, key, ip.bytes, ip.n, ua.p ? ua.p : "", ua.p ? ua.n : 0);
        char *url = xstrdup(vs.v[i].url);
        variants_release(&vs);
        *flags = (uint8_t)(((unsigned)(i + 1) << EVENT_VARIANT_SHIFT) & EVENT_VARIANT_MASK);
        return url;
    }
    return xstrdup(l->dest ? l->dest : l->url);
}

/* The answer that lets the visitor through, and its click (not for HEAD).
 * After a right password a browser gets the gate's continue page (gate.h:
 * a 302 after the form's POST would be blocked by the gate's form-action
 * 'self'); other clients get the 302. */
static int deliver(struct request *r, const struct link *l, int64_t now, bool via_gate)
{
    uint8_t flags;
    char *url = destination_of(r, l, &flags);
    int status = 302;
    struct slice accept = http_header(r, "accept");
    if (via_gate && accept.p && memmem(accept.p, accept.n, "text/html", 9)) {
        struct buf page = BUF_INIT;
        gate_render_continue(&page, l->code, url);
        http_add_header(r, "Content-Security-Policy", gate_csp, strlen(gate_csp));
        http_add_header(r, "Cache-Control", "no-store", 8);
        status = http_body(r, 200, "text/html; charset=utf-8", page.p, page.len);
        buf_release(&page);
    } else {
        redirect_location(r, url, strlen(url), r->app->cfg.pass_query && !via_gate);
        buf_adds(&r->resp_headers, "Cache-Control: private, no-store\r\n");
    }
    free(url);
    if (r->method != HTTP_HEAD && !l->untracked)
        redirect_record_click(r, (struct slice){l->code, strlen(l->code)}, now, flags);
    return status;
}

struct reserve_job {
    struct wjob job;
    struct task task;
    struct request *r;
    struct worker *w;
    struct link link;
    int64_t now;
    bool via_gate;
    int result; /* ERR_OK: a slot is ours; ERR_TOOBIG: none left */
};

static int reserve_run(struct wjob *wj, struct store *st)
{
    struct reserve_job *j = (struct reserve_job *)wj;
    int64_t used = 0;
    j->result = st->ops->link_reserve(st, j->link.code, &used);
    return j->result == ERR_TOOBIG ? ERR_OK : j->result;
}

static void reserve_on_loop(struct task *t)
{
    struct reserve_job *j = (struct reserve_job *)((char *)t - offsetof(struct reserve_job, task));
    struct request *r = j->r;
    int status;
    if (j->job.rc != ERR_OK) {
        status = redirect_unavailable(r);
    } else if (j->result != ERR_OK) {
        status = redirect_gone(r, GONE_USED_UP);
    } else {
        status = deliver(r, &j->link, j->now, j->via_gate);
    }
    http_resume(r, status);
    link_release(&j->link);
    free(j);
}

static void reserve_done(struct wjob *wj)
{
    struct reserve_job *j = (struct reserve_job *)wj;
    worker_post(j->w, &j->task);
}

/* A human click of a link with max_clicks first reserves its slot (the
 * writer, then back on this thread); anything else is delivered at once.
 * Takes 'l' over. Returns the status or HTTP_ASYNC. */
static int reserve_or_deliver(struct request *r, struct link *l, int64_t now, bool via_gate)
{
    if (l->max_clicks > 0 && r->method != HTTP_HEAD && !is_bot(r)) {
        struct reserve_job *j = calloc(1, sizeof(*j));
        if (!j)
            abort();
        j->r = r;
        j->w = request_worker(r);
        j->link = *l; /* owned by the job now */
        memset(l, 0, sizeof(*l));
        j->now = now;
        j->via_gate = via_gate;
        j->job.run = reserve_run;
        j->job.done = reserve_done;
        j->job.single_write = true;
        j->task.fn = reserve_on_loop;
        writer_submit(r->app->writer, &j->job);
        return HTTP_ASYNC;
    }
    int status = deliver(r, l, now, via_gate);
    link_release(l);
    return status;
}

/* The gate of a protected link: 200 (or 'status') with the page, never cached. */
static int gate_page(struct request *r, const char *code, int status, const char *message)
{
    struct buf page = BUF_INIT;
    gate_render(&page, code, message);
    http_add_header(r, "Content-Security-Policy", gate_csp, strlen(gate_csp));
    http_add_header(r, "Cache-Control", "no-store", 8);
    status = http_body(r, status, "text/html; charset=utf-8", page.p, page.len);
    buf_release(&page);
    return status;
}


/* Whether a controlled link as read lets a visitor through: ERR_OK, or
 * the answer in *status. Releases 'l' when not. */
static int controlled_live(struct request *r, int rc, struct link *l, int64_t now, int *status)
{
    if (rc == ERR_NOTFOUND) {
        *status = redirect_not_found(r);
        return rc;
    }
    if (rc != ERR_OK) {
        *status = redirect_unavailable(r);
        return rc;
    }
    if (!link_is_live(l, now) || (l->max_clicks > 0 && l->used >= l->max_clicks)) {
        enum gone_why why = link_is_live(l, now) ? GONE_USED_UP : gone_why_of(l->state);
        link_release(l);
        *status = redirect_gone(r, why);
        return ERR_GONE;
    }
    return ERR_OK;
}

/* Reads a controlled link from the store (the gate's POST, on a store
 * thread): ERR_OK with 'l', or the answer. */
static int load_controlled(struct request *r, struct slice code, int64_t now, struct link *l,
                           int *status)
{
    struct app *app = r->app;
    char key[CODE_MAX + 1];
    memcpy(key, code.p, code.n);
    key[code.n] = '\0';
    int rc = app->store->ops->link_get(app->store, key, l);
    return controlled_live(r, rc, l, now, status);
}

/* GET or HEAD of a controlled link, as just read (redirect.h). */
int controlled_answer(struct request *r, int rc, struct link *l_in, int64_t now)
{
    struct link l = *l_in;
    memset(l_in, 0, sizeof(*l_in));
    int status;
    if (controlled_live(r, rc, &l, now, &status) != ERR_OK)
        return status;
    if (l.password) {
        status = gate_page(r, l.code, 200, NULL);
        link_release(&l);
        return status;
    }
    return reserve_or_deliver(r, &l, now, false);
}

/* ---- POST /CODE: a password for the gate ---- */

/* Password attempts are limited per client and link, and per client over
 * all links (ratelimit.h): a right password counts as an attempt too. */
static bool gate_attempt_allowed(struct request *r, const char *code, int *retry_after)
{
    struct client_ip ip;
    clientaddr_of(r, &ip);
    struct rl_info info;
    bool ok = ratelimit_take_password(r->app->ratelimit, &ip, code, strlen(code), now_ms(), &info);
    ratelimit_headers(r, &info);
    *retry_after = (int)info.retry_after;
    return ok;
}

struct gate_check {
    struct task task;
    struct request *r;
    struct link link;
    int64_t now;
    char pw[PWHASH_PW_MAX + 1]; /* wiped once handed to the hash */
    size_t n;
};

static void gate_checked(bool ok, void *arg)
{
    struct gate_check *g = arg;
    struct request *r = g->r;
    int status;
    if (ok) {
        status = reserve_or_deliver(r, &g->link, now_ms(), true);
    } else {
        status = gate_page(r, g->link.code, 401, "Wrong password");
        link_release(&g->link);
    }
    if (status != HTTP_ASYNC)
        http_resume(r, status);
    free(g);
}

/* On the request's loop: the check goes to libuv's thread pool. */
static void gate_check_start(struct task *t)
{
    struct gate_check *g = (struct gate_check *)t;
    struct request *r = g->r;
    int rc = pwhash_check_async(worker_loop(request_worker(r)), g->link.password, g->pw, g->n,
                                gate_checked, g);
    sodium_memzero(g->pw, sizeof(g->pw));
    if (rc != ERR_OK) {
        link_release(&g->link);
        free(g);
        http_resume(r, redirect_unavailable(r));
    }
}

/* On a store thread (router.c), as the API is. */
int handle_gate_post(struct request *r, struct slice code)
{
    if (!code_is_plausible(code.p, code.n))
        return redirect_not_found(r);
    int64_t now = now_ms();
    struct hostcheck h;
    hostcheck_of(r, &h);
    struct link l;
    int status;
    if (load_controlled(r, code, now, &l, &status) != ERR_OK)
        return status;
    if (!host_allows(&h, l.domain, l.domain ? strlen(l.domain) : 0)) {
        link_release(&l);
        return redirect_not_found(r);
    }
    if (!l.password) {
        link_release(&l);
        http_add_header(r, "Allow", "GET, HEAD", 9);
        return redirect_text(r, 405, "Method Not Allowed: this link has no password\n");
    }
    int retry = 0;
    if (!gate_attempt_allowed(r, l.code, &retry)) {
        char s[16];
        int n = snprintf(s, sizeof(s), "%d", retry > 0 ? retry : 1);
        http_add_header(r, "Retry-After", s, (size_t)n);
        status = gate_page(r, l.code, 429, "Too many attempts: wait a little and try again");
        link_release(&l);
        return status;
    }
    char pw[PWHASH_PW_MAX + 1];
    size_t n = 0;
    if (gate_form_password(r->body.p, r->body.n, pw, sizeof(pw), &n) != ERR_OK || !n) {
        status = gate_page(r, l.code, 400, "Please enter the password");
        link_release(&l);
        return status;
    }
    struct gate_check *g = calloc(1, sizeof(*g));
    if (!g)
        abort();
    g->r = r;
    g->link = l;
    g->now = now;
    memcpy(g->pw, pw, n);
    g->n = n;
    sodium_memzero(pw, sizeof(pw));
    g->task.fn = gate_check_start;
    worker_post(request_worker(r), &g->task);
    return HTTP_ASYNC;
}
