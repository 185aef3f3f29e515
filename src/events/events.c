/* events.c - the delivery thread of events.h.
 *
 * DESIGN
 * One thread, "shortd-events", owns every sink's state and one curl multi
 * handle: HTTP deliveries of every sink run side by side on it, each with
 * its timeout, so a sink that never answers holds only its own batches.
 * Each sink has a lane per source (this node's click journal, the link
 * outbox). A lane builds a batch from its durable position (at most
 * batch_max events; a smaller one only once it has waited batch_wait),
 * keeps its text for every retry (the same bytes), and moves the position
 * in the store through the writer once the sink acknowledged it; a lane
 * that fails waits (retry.h), and after retry_budget archives the batch in
 * the transaction that moves the position past it. Positions, the lease
 * on the outbox and the archive are written by writer jobs this thread
 * waits for; the journal is read with journal_read, never through the
 * journal thread's handle. Sinks are read from the store every second, so
 * a sink made, changed or deleted by the API, the CLI or another node is
 * followed. What /metrics and the checks read (struct esink's counters)
 * is guarded by 'mu'; so is the clicks lanes' position, which the journal
 * thread reads through events_hold. */
#include "events/events.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/coop.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "clicks/classify.h"
#include "clicks/clicks.h"
#include "clicks/event.h"
#include "clicks/journal.h"
#include "events/body.h"
#include "events/id.h"
#include "events/retry.h"
#include "events/sink.h"
#include "store/store.h"
#include "store/writer.h"
#include "base/banned.h"

enum { SRC_CLICKS, SRC_LINKS, NSRC };

#define RELOAD_MS 1000 /* sinks read from the store */
#define LAG_MS 5000    /* lag counted */
#define FILL_MS 200    /* a lane looks for new events */
#define LEASE_MS 30000 /* the outbox lease lasts */
#define SCAN_MAX 20000 /* journal records a fill reads at most */
#define UA_CACHE 4096

struct batch {
    struct buf body; /* {"events":[...]} */
    size_t n, cap;
    size_t *off, *len;
    char **ids;
    int64_t from, to; /* the position before and after it */
    int64_t oldest;   /* time of its first event, ms */
};

struct lane {
    struct delivery d; /* while busy */
    int src;
    char source[48]; /* "journal:<id>", "links" */
    int64_t pos;     /* durable position; -1: not known yet */
    struct batch b;
    bool have_batch;
    bool busy;
    int failures; /* in a row */
    int64_t attempts;
    int64_t first_fail_ms; /* wall clock of the first failure of the batch */
    int64_t next_try;      /* mono */
    int64_t next_fill;     /* mono */
    int64_t fill_since;    /* mono time a partial batch was first seen; 0: none */
    int64_t lease_until;   /* links: wall clock the lease runs to */
};

struct esink {
    struct sink rec;
    const struct sink_kind *kind;
    unsigned mask;
    struct lane lane[NSRC];
    bool gone;
    /* under ev->mu */
    uint64_t failures, deliveries, delivered, archived, unresolved, backlog, lag_events;
    int64_t lag_seconds;
    bool failing;
    struct esink *next;
};

struct events {
    struct store *st;
    struct writer *writer;
    struct clicks *clicks;
    struct events_config cfg;
    char node[64];
    struct classify *cl;
    CURLM *multi;

    pthread_mutex_t mu;
    struct esink *sinks;
    _Atomic bool loaded; /* sinks and their journal positions read */
    uint64_t unresolved;

    pthread_t thread;
    _Atomic bool started;
    _Atomic bool stop;
    int64_t next_reload, next_lag;
};

/* ---- writes through the writer, waited for ---- */

struct wcall {
    struct wjob job;
    int (*fn)(struct store *st, void *arg);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static int wcall_run(struct wjob *j, struct store *st)
{
    struct wcall *c = (struct wcall *)j;
    return c->fn(st, c->arg);
}

static void wcall_done(struct wjob *j)
{
    struct wcall *c = (struct wcall *)j;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Runs fn in a write transaction and waits for its commit. */
static int store_write(struct events *ev, int (*fn)(struct store *st, void *arg), void *arg)
{
    struct wcall c = {.job = {.run = wcall_run, .done = wcall_done}, .fn = fn, .arg = arg};
    if (!ev->writer) {
        writer_run_now(ev->st, &c.job);
        return c.job.rc;
    }
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    writer_submit(ev->writer, &c.job);
    pthread_mutex_lock(&c.mu);
    while (!c.done)
        pthread_cond_wait(&c.cv, &c.mu);
    pthread_mutex_unlock(&c.mu);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    return c.job.rc;
}

struct pos_write {
    int64_t sink;
    const char *source;
    int64_t old, pos;
    struct failed_batch *failed; /* archived in the same transaction, unless NULL */
    const char *holder;          /* a lease instead */
    int64_t now, until;
};

static int pos_write(struct store *st, void *arg)
{
    struct pos_write *w = arg;
    if (w->holder)
        return st->ops->sink_lease(st, w->sink, w->source, w->holder, w->now, w->until);
    if (w->failed) {
        int rc = st->ops->failed_add(st, w->failed);
        if (rc != ERR_OK)
            return rc;
    }
    return st->ops->sink_pos_set(st, w->sink, w->source, w->old, w->pos);
}

/* ---- batches ---- */

static void batch_reset(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->ids[i]);
    b->n = 0;
    buf_reset(&b->body);
    b->from = b->to = 0;
    b->oldest = 0;
}

static void batch_release(struct batch *b)
{
    batch_reset(b);
    buf_release(&b->body);
    free(b->off);
    free(b->len);
    free(b->ids);
    memset(b, 0, sizeof(*b));
}

/* Appends an event's text (made by 'make' into the body itself). */
static void batch_add(struct batch *b, const char *id, const char *text, size_t n, int64_t at)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->off = realloc(b->off, b->cap * sizeof(*b->off));
        b->len = realloc(b->len, b->cap * sizeof(*b->len));
        b->ids = realloc(b->ids, b->cap * sizeof(*b->ids));
        if (!b->off || !b->len || !b->ids)
            abort();
    }
    buf_adds(&b->body, b->n ? "," : "{\"events\":[");
    b->off[b->n] = b->body.len;
    b->len[b->n] = n;
    buf_add(&b->body, text, n);
    b->ids[b->n] = xstrdup(id);
    if (!b->n)
        b->oldest = at;
    b->n++;
}

static void batch_close(struct batch *b) { buf_adds(&b->body, b->n ? "]}" : "{\"events\":[]}"); }

/* ---- filters ---- */

/* Whether a link event (or a click on the link 'code', looked up) is one
 * the sink wants beyond its types: its owner and its domain. */
static bool wants_link(const struct esink *s, int64_t owner, const char *domain)
{
    if (s->rec.owner >= 0 && owner != s->rec.owner)
        return false;
    if (s->rec.domain && (!domain || strcmp(domain, s->rec.domain)))
        return false;
    return true;
}

/* ---- the clicks lane ---- */

struct fill {
    struct events *ev;
    struct esink *s;
    struct batch *b;
    const char *jid;
    int scanned;
    struct buf text;
    char code[CODE_MAX + 1]; /* the last link looked up for the filter */
    bool code_ok;
};

static bool click_wanted(struct fill *f, const struct click_event *e)
{
    if (!(f->s->mask & (1u << EVT_CLICK)))
        return false;
    if (f->s->rec.owner < 0 && !f->s->rec.domain)
        return true;
    size_t n = e->code.n < CODE_MAX ? e->code.n : CODE_MAX;
    if (strlen(f->code) != n || memcmp(f->code, e->code.p, n)) {
        memcpy(f->code, e->code.p, n);
        f->code[n] = '\0';
        struct link l;
        f->code_ok = false;
        if (f->ev->st->ops->link_get(f->ev->st, f->code, &l) == ERR_OK) {
            f->code_ok = wants_link(f->s, l.owner, l.domain);
            link_release(&l);
        }
    }
    return f->code_ok;
}

static int fill_click(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    struct fill *f = arg;
    struct click_event e;
    f->b->to = (int64_t)pos_after;
    f->scanned++;
    if (event_decode(rec, n, &e) == ERR_OK && click_wanted(f, &e)) {
        char id[EVENT_ID_SIZE];
        events_id_click(f->jid, pos_after, id);
        buf_reset(&f->text);
        events_click_body(f->ev->cl, f->ev->cfg.self_hosts, id, &e, &f->text);
        batch_add(f->b, id, f->text.p, f->text.len, e.ts);
    }
    return (int)f->b->n >= f->ev->cfg.batch_max || f->scanned >= SCAN_MAX;
}

/* Builds the clicks lane's next batch from its position. */
static int fill_clicks(struct events *ev, struct esink *s, struct lane *l)
{
    const char *dir;
    uint64_t synced;
    const char *jid = clicks_journal(ev->clicks, &dir, &synced);
    batch_reset(&l->b);
    l->b.from = l->b.to = l->pos;
    if ((uint64_t)l->pos >= synced)
        return ERR_OK;
    struct fill f = {.ev = ev, .s = s, .b = &l->b, .jid = jid};
    int rc = journal_read(dir, (uint64_t)l->pos, synced, fill_click, &f);
    buf_release(&f.text);
    return rc == 1 ? ERR_OK : rc;
}

/* ---- the links lane ---- */

struct lfill {
    struct esink *s;
    struct batch *b;
};

static int fill_link(const struct outbox_event *e, void *arg)
{
    struct lfill *f = arg;
    f->b->to = e->seq;
    enum event_type t = event_type_parse(e->type, strlen(e->type));
    if (t != EVT__COUNT && (f->s->mask & (1u << t)) && wants_link(f->s, e->owner, e->domain))
        batch_add(f->b, e->id, e->body, strlen(e->body), e->at);
    return 0;
}

static int fill_links(struct events *ev, struct esink *s, struct lane *l)
{
    struct store *st = ev->st;
    int64_t now = now_ms();
    if (l->lease_until - now < LEASE_MS / 2) {
        struct pos_write w = {.sink = s->rec.id,
                              .source = l->source,
                              .holder = ev->node,
                              .now = now,
                              .until = now + LEASE_MS};
        int rc = store_write(ev, pos_write, &w);
        if (rc != ERR_OK) {
            l->lease_until = 0;
            return rc; /* ERR_BUSY: another node delivers them */
        }
        l->lease_until = now + LEASE_MS;
    }
    /* The store's position, which another node may have moved while it
     * held the lease. */
    int64_t pos;
    int rc = st->ops->sink_pos_get(st, s->rec.id, l->source, &pos);
    if (rc != ERR_OK)
        return rc;
    l->pos = pos;
    batch_reset(&l->b);
    l->b.from = l->b.to = pos;
    struct lfill f = {s, &l->b};
    return st->ops->outbox_read(st, pos, ev->cfg.batch_max, fill_link, &f);
}

/* ---- lanes ---- */

/* Moves the lane's position to the end of its batch (archiving the batch
 * first when 'failed'). */
static int advance(struct events *ev, struct esink *s, struct lane *l, struct failed_batch *failed)
{
    struct pos_write w = {s->rec.id, l->source, l->b.from, l->b.to, failed, NULL, 0, 0};
    int rc = store_write(ev, pos_write, &w);
    if (rc == ERR_EXISTS && l->src == SRC_LINKS) {
        /* Another node moved it (its lease began after ours ran out): the
         * events went there; read the position again. */
        l->lease_until = 0;
        return rc;
    }
    if (rc != ERR_OK)
        return rc;
    pthread_mutex_lock(&ev->mu);
    l->pos = l->b.to;
    pthread_mutex_unlock(&ev->mu);
    return ERR_OK;
}

static void lane_forget_batch(struct lane *l)
{
    batch_reset(&l->b);
    l->have_batch = false;
    l->failures = 0;
    l->first_fail_ms = 0;
    l->fill_since = 0;
    l->next_fill = 0;
    l->attempts = 0;
}

static int busy_lanes(const struct esink *s)
{
    int n = 0;
    for (int i = 0; i < NSRC; i++)
        n += s->lane[i].busy;
    return n;
}

static void lane_step(struct events *ev, struct esink *s, struct lane *l, int64_t mono)
{
    if (l->busy || l->pos < 0 || mono < l->next_try || busy_lanes(s) >= ev->cfg.inflight)
        return;
    if (l->src == SRC_CLICKS && !ev->clicks)
        return;
    if (!l->have_batch) {
        if (mono < l->next_fill)
            return;
        l->next_fill = mono + FILL_MS;
        int rc = l->src == SRC_CLICKS ? fill_clicks(ev, s, l) : fill_links(ev, s, l);
        if (rc != ERR_OK)
            return;
        if (l->b.n == 0) {
            if (l->b.to > l->b.from) /* read, none wanted */
                advance(ev, s, l, NULL);
            l->fill_since = 0;
            return;
        }
        if ((int)l->b.n < ev->cfg.batch_max) {
            if (!l->fill_since)
                l->fill_since = mono;
            if (mono - l->fill_since < ev->cfg.batch_wait_ms)
                return; /* built again at the next fill, with what came since */
        }
        batch_close(&l->b);
        l->have_batch = true;
    }
    struct delivery *d = &l->d;
    memset(d, 0, sizeof(*d));
    d->sink = &s->rec;
    d->body = l->b.body.p;
    d->body_len = l->b.body.len;
    d->off = l->b.off;
    d->len = l->b.len;
    d->ids = l->b.ids;
    d->n = l->b.n;
    d->timeout_ms = ev->cfg.timeout_ms;
    d->state = DELIVERY_RUNNING;
    l->busy = true;
    l->attempts++;
    s->kind->start(d, ev->multi);
}

static void archive(struct events *ev, struct esink *s, struct lane *l)
{
    char hash[crypto_hash_sha256_BYTES * 2 + 1];
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)l->b.body.p, l->b.body.len);
    sodium_bin2hex(hash, sizeof(hash), h, sizeof(h));
    struct failed_batch f = {
        .sink = s->rec.id,
        .source = l->source,
        .first_pos = l->b.from,
        .last_pos = l->b.to,
        .events = (int64_t)l->b.n,
        .body = l->b.body.p,
        .sha256 = hash,
        .attempts = l->attempts,
        .last_error = l->d.error,
        .first_failed_at = l->first_fail_ms,
        .archived_at = now_ms(),
    };
    int rc = advance(ev, s, l, &f);
    if (rc != ERR_OK) {
        log_at(LOG_WARN, "cannot archive a failed batch of sink %" PRId64 ": it is tried again",
               s->rec.id);
        return;
    }
    log_at(LOG_ERROR,
           "sink %" PRId64 " failed %" PRId64 " times to take %zu events: batch archived as "
           "failed %" PRId64 " (shortd events failed inspect %" PRId64 "); last error: %s",
           s->rec.id, l->attempts, l->b.n, f.id, f.id, l->d.error);
    pthread_mutex_lock(&ev->mu);
    s->archived++;
    s->unresolved++;
    ev->unresolved++;
    s->backlog = 0;
    pthread_mutex_unlock(&ev->mu);
    /* The budget is of the sink's failing, not of each batch: while it
     * keeps failing, the next batch is archived at its first failure too,
     * so a sink down for days holds the journal about one budget, as a
     * queue whose messages all retry at once would. A success ends it. */
    int64_t since = l->first_fail_ms;
    int failures = l->failures;
    lane_forget_batch(l);
    l->first_fail_ms = since;
    l->failures = failures;
}

/* A delivery ended: move on, retry later, or archive. */
static void lane_ended(struct events *ev, struct esink *s, struct lane *l)
{
    struct delivery *d = &l->d;
    l->busy = false;
    if (d->state == DELIVERY_OK) {
        if (advance(ev, s, l, NULL) != ERR_OK) {
            /* Delivered, position not stored: sent again (same IDs). */
            l->next_try = mono_ms() + ev->cfg.retry_base_ms;
            delivery_release(d, ev->multi);
            return;
        }
        if (l->failures)
            log_at(LOG_INFO, "sink %" PRId64 " takes events again, after %d failed attempts",
                   s->rec.id, l->failures);
        pthread_mutex_lock(&ev->mu);
        s->deliveries++;
        s->delivered += l->b.n;
        s->failing = false;
        s->backlog = 0;
        pthread_mutex_unlock(&ev->mu);
        lane_forget_batch(l);
        delivery_release(d, ev->multi);
        return;
    }
    l->failures++;
    if (!l->first_fail_ms) {
        l->first_fail_ms = now_ms();
        log_at(LOG_WARN, "sink %" PRId64 " (%s) did not take %zu events: %s; retrying", s->rec.id,
               s->kind->name, l->b.n, d->error);
    }
    pthread_mutex_lock(&ev->mu);
    s->failures++;
    s->failing = true;
    s->backlog = l->b.n;
    pthread_mutex_unlock(&ev->mu);
    if (now_ms() - l->first_fail_ms >= ev->cfg.retry_budget_ms)
        archive(ev, s, l);
    else
        l->next_try = mono_ms() + retry_jittered(ev->cfg.retry_base_ms, ev->cfg.retry_cap_ms,
                                                 l->failures, randombytes_random());
    delivery_release(d, ev->multi);
}

/* ---- sinks ---- */

static char *dup_opt(const char *s) { return s ? xstrdup(s) : NULL; }

static void sink_copy(struct sink *to, const struct sink *from)
{
    *to = *from;
    to->kind = dup_opt(from->kind);
    to->endpoint = dup_opt(from->endpoint);
    to->types = dup_opt(from->types);
    to->domain = dup_opt(from->domain);
    to->secret = dup_opt(from->secret);
    to->secret_old = dup_opt(from->secret_old);
    to->options = dup_opt(from->options);
}

static void esink_free(struct events *ev, struct esink *s)
{
    for (int i = 0; i < NSRC; i++) {
        if (s->lane[i].busy)
            delivery_release(&s->lane[i].d, ev->multi);
        batch_release(&s->lane[i].b);
    }
    sink_release(&s->rec);
    free(s);
}

static struct esink *find(struct events *ev, int64_t id)
{
    for (struct esink *s = ev->sinks; s; s = s->next)
        if (s->rec.id == id)
            return s;
    return NULL;
}

/* This node's position in its journal for sink s; a sink it has not seen
 * yet starts at the journal's synced end. */
static int journal_pos(struct events *ev, struct esink *s, struct lane *l)
{
    int64_t pos;
    int rc = ev->st->ops->sink_pos_get(ev->st, s->rec.id, l->source, &pos);
    if (rc == ERR_NOTFOUND) {
        const char *dir;
        uint64_t synced;
        clicks_journal(ev->clicks, &dir, &synced);
        struct pos_write w = {s->rec.id, l->source, -1, (int64_t)synced, NULL, NULL, 0, 0};
        rc = store_write(ev, pos_write, &w);
        if (rc == ERR_EXISTS)
            return journal_pos(ev, s, l);
        pos = (int64_t)synced;
    }
    if (rc != ERR_OK)
        return rc;
    pthread_mutex_lock(&ev->mu);
    l->pos = pos;
    pthread_mutex_unlock(&ev->mu);
    return ERR_OK;
}

struct reload {
    struct events *ev;
    int64_t *ids;
    size_t n, cap;
};

static int reload_one(const struct sink *rec, void *arg)
{
    struct reload *r = arg;
    struct events *ev = r->ev;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->ids = realloc(r->ids, r->cap * sizeof(*r->ids));
        if (!r->ids)
            abort();
    }
    r->ids[r->n++] = rec->id;
    struct esink *s = find(ev, rec->id);
    const struct sink_kind *kind = sink_kind_find(rec->kind);
    unsigned mask;
    const char *bad;
    if (!kind || event_types_mask(rec->types, &mask, &bad) != ERR_OK)
        return 0; /* made by a newer binary: left alone */
    if (s) {
        if (busy_lanes(s))
            return 0; /* its deliveries point at its record: changes wait */
        pthread_mutex_lock(&ev->mu);
        sink_release(&s->rec);
        sink_copy(&s->rec, rec);
        s->kind = kind;
        s->mask = mask;
        pthread_mutex_unlock(&ev->mu);
        return 0;
    }
    s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    sink_copy(&s->rec, rec);
    s->kind = kind;
    s->mask = mask;
    for (int i = 0; i < NSRC; i++) {
        s->lane[i].src = i;
        s->lane[i].pos = -1;
    }
    if (ev->clicks) {
        const char *dir;
        uint64_t synced;
        snprintf(s->lane[SRC_CLICKS].source, sizeof(s->lane[SRC_CLICKS].source), "journal:%s",
                 clicks_journal(ev->clicks, &dir, &synced));
    }
    snprintf(s->lane[SRC_LINKS].source, sizeof(s->lane[SRC_LINKS].source), "links");
    s->lane[SRC_LINKS].pos = 0; /* read from the store at each fill */
    if (ev->clicks && journal_pos(ev, s, &s->lane[SRC_CLICKS]) != ERR_OK)
        log_at(LOG_WARN, "cannot read the journal position of sink %" PRId64 "; trying again",
               rec->id);
    pthread_mutex_lock(&ev->mu);
    s->next = ev->sinks;
    ev->sinks = s;
    pthread_mutex_unlock(&ev->mu);
    return 0;
}

struct unresolved {
    int64_t *sink; /* one entry per unresolved batch */
    size_t n, cap;
};

static int count_failed(const struct failed_batch *f, void *arg)
{
    struct unresolved *u = arg;
    if (u->n == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 16;
        u->sink = realloc(u->sink, u->cap * sizeof(*u->sink));
        if (!u->sink)
            abort();
    }
    u->sink[u->n++] = f->sink;
    return 0;
}

/* Reads the sinks: new ones start, changed ones change, deleted ones stop;
 * and the unresolved archive is counted. */
static int reload(struct events *ev)
{
    struct reload r = {.ev = ev};
    int rc = ev->st->ops->sink_list(ev->st, reload_one, &r);
    if (rc != ERR_OK) {
        free(r.ids);
        return rc;
    }
    pthread_mutex_lock(&ev->mu);
    for (struct esink **p = &ev->sinks; *p;) {
        struct esink *s = *p;
        bool kept = false;
        for (size_t i = 0; i < r.n && !kept; i++)
            kept = r.ids[i] == s->rec.id;
        if (!kept && !busy_lanes(s)) {
            *p = s->next;
            esink_free(ev, s);
            continue;
        }
        s->gone = !kept;
        p = &s->next;
    }
    pthread_mutex_unlock(&ev->mu);
    /* Read outside the lock: the journal thread takes it (events_hold) and
     * must never wait for the store. */
    struct unresolved u = {NULL, 0, 0};
    rc = ev->st->ops->failed_list(ev->st, false, count_failed, &u);
    pthread_mutex_lock(&ev->mu);
    if (rc == ERR_OK) {
        for (struct esink *s = ev->sinks; s; s = s->next)
            s->unresolved = 0;
        for (size_t i = 0; i < u.n; i++) {
            struct esink *s = find(ev, u.sink[i]);
            if (s)
                s->unresolved++;
        }
        ev->unresolved = u.n;
    }
    atomic_store(&ev->loaded, true);
    pthread_mutex_unlock(&ev->mu);
    free(u.sink);
    free(r.ids);
    for (struct esink *s = ev->sinks; s; s = s->next)
        if (ev->clicks && !s->gone && s->lane[SRC_CLICKS].pos < 0)
            journal_pos(ev, s, &s->lane[SRC_CLICKS]);
    return rc;
}

struct lag {
    uint64_t n;
    int64_t oldest;
};

static int count_click(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    (void)pos_after;
    struct lag *g = arg;
    if (!g->n) {
        struct click_event e;
        if (event_decode(rec, n, &e) == ERR_OK)
            g->oldest = e.ts;
    }
    return ++g->n >= EVENTS_LAG_CAP;
}

static int oldest_link(const struct outbox_event *e, void *arg)
{
    ((struct lag *)arg)->oldest = e->at;
    return 1;
}

/* Every sink's lag: the journal's records and the outbox's rows past its
 * positions (every event, before the sink's filter), and the oldest's age. */
static void measure_lag(struct events *ev)
{
    int64_t head = 0, now = now_ms();
    ev->st->ops->outbox_head(ev->st, &head);
    for (struct esink *s = ev->sinks; s; s = s->next) {
        struct lag g = {0, 0};
        if (ev->clicks && s->lane[SRC_CLICKS].pos >= 0) {
            const char *dir;
            uint64_t synced;
            clicks_journal(ev->clicks, &dir, &synced);
            journal_read(dir, (uint64_t)s->lane[SRC_CLICKS].pos, synced, count_click, &g);
        }
        int64_t lpos = 0;
        if (ev->st->ops->sink_pos_get(ev->st, s->rec.id, "links", &lpos) == ERR_OK && head > lpos) {
            struct lag k = {0, 0};
            ev->st->ops->outbox_read(ev->st, lpos, 1, oldest_link, &k);
            g.n += (uint64_t)(head - lpos);
            if (k.oldest && (!g.oldest || k.oldest < g.oldest))
                g.oldest = k.oldest;
        }
        pthread_mutex_lock(&ev->mu);
        s->lag_events = g.n < EVENTS_LAG_CAP ? g.n : EVENTS_LAG_CAP;
        s->lag_seconds = g.oldest && now > g.oldest ? (now - g.oldest) / 1000 : 0;
        pthread_mutex_unlock(&ev->mu);
    }
}

/* ---- the thread ---- */

static void take_ended(struct events *ev)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(ev->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode rc = msg->data.result;
        struct delivery *d = NULL;
        long status = 0;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&d);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(ev->multi, e);
        for (struct esink *s = ev->sinks; s && d; s = s->next)
            for (int i = 0; i < NSRC; i++)
                if (&s->lane[i].d == d && s->lane[i].busy)
                    s->kind->ended(d, ev->multi, rc, status);
    }
}

static void *events_main(void *arg)
{
    struct events *ev = arg;
    while (!atomic_load(&ev->stop)) {
        int64_t mono = mono_ms();
        if (mono >= ev->next_reload) {
            reload(ev);
            ev->next_reload = mono + RELOAD_MS;
        }
        if (mono >= ev->next_lag) {
            measure_lag(ev);
            ev->next_lag = mono + LAG_MS;
        }
        for (struct esink *s = ev->sinks; s; s = s->next)
            for (int i = 0; i < NSRC && !s->gone; i++)
                lane_step(ev, s, &s->lane[i], mono);
        int running = 0;
        curl_multi_perform(ev->multi, &running);
        take_ended(ev);
        for (struct esink *s = ev->sinks; s; s = s->next)
            for (int i = 0; i < NSRC; i++)
                if (s->lane[i].busy && s->lane[i].d.state != DELIVERY_RUNNING)
                    lane_ended(ev, s, &s->lane[i]);
        curl_multi_poll(ev->multi, NULL, 0, 50, NULL);
    }
    return NULL;
}

/* ---- the module ---- */

struct events *events_new(struct store *st, struct writer *w, struct clicks *clicks,
                          const struct events_config *cfg)
{
    struct events *ev = calloc(1, sizeof(*ev));
    if (!ev)
        abort();
    ev->st = st;
    ev->writer = w;
    ev->clicks = clicks;
    ev->cfg = *cfg;
    if (ev->cfg.batch_max < 1)
        ev->cfg.batch_max = 100;
    if (ev->cfg.inflight < 1)
        ev->cfg.inflight = 1;
    if (cfg->node && *cfg->node) {
        snprintf(ev->node, sizeof(ev->node), "%s", cfg->node);
    } else {
        unsigned char raw[8];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2hex(ev->node, sizeof(ev->node), raw, sizeof(raw));
    }
    pthread_mutex_init(&ev->mu, NULL);
    return ev;
}

uint64_t events_hold(void *arg)
{
    struct events *ev = arg;
    /* The first call (clicks_start, before our thread) reads the sinks and
     * their positions in this journal; until our thread has started, the
     * journal thread tries again if that failed. */
    if (!atomic_load(&ev->loaded) && !atomic_load(&ev->started) && reload(ev) != ERR_OK)
        return 0; /* unknown: keep everything */
    uint64_t h = UINT64_MAX;
    pthread_mutex_lock(&ev->mu);
    if (!atomic_load(&ev->loaded))
        h = 0;
    for (struct esink *s = ev->sinks; s; s = s->next) {
        int64_t p = s->lane[SRC_CLICKS].pos;
        if (p < 0)
            h = 0;
        else if ((uint64_t)p < h)
            h = (uint64_t)p;
    }
    pthread_mutex_unlock(&ev->mu);
    return h;
}

int events_start(struct events *ev)
{
    if (classify_new(UA_CACHE, &ev->cl) != ERR_OK)
        return ERR_INVALID;
    ev->multi = curl_multi_init();
    if (!ev->multi)
        return log_fail(ERR_IO, "cannot start the events thread: no curl multi handle");
    struct coop_role role = {"shortd-events", -1, 0};
    atomic_store(&ev->started, true); /* from now on only our thread reads the sinks */
    if (coop_start(&ev->thread, role, events_main, ev) != 0) {
        atomic_store(&ev->started, false);
        return log_fail(ERR_IO, "cannot start the events thread");
    }
    return ERR_OK;
}

void events_stop(struct events *ev)
{
    /* 'started' stays set: the journal thread, still running, must not
     * read the sinks itself (events_hold). */
    if (!ev || !atomic_load(&ev->started) || atomic_load(&ev->stop))
        return;
    atomic_store(&ev->stop, true);
    curl_multi_wakeup(ev->multi);
    pthread_join(ev->thread, NULL);
}

void events_free(struct events *ev)
{
    if (!ev)
        return;
    events_stop(ev);
    for (struct esink *s = ev->sinks, *next; s; s = next) {
        next = s->next;
        esink_free(ev, s);
    }
    if (ev->multi)
        curl_multi_cleanup(ev->multi);
    classify_free(ev->cl);
    pthread_mutex_destroy(&ev->mu);
    free(ev);
}

int events_status(struct events *ev, struct events_sink_status *out, int max)
{
    int n = 0;
    pthread_mutex_lock(&ev->mu);
    for (struct esink *s = ev->sinks; s; s = s->next) {
        if (s->gone)
            continue;
        if (n >= max) {
            n++;
            continue;
        }
        struct events_sink_status *o = &out[n++];
        memset(o, 0, sizeof(*o));
        o->sink = s->rec.id;
        snprintf(o->kind, sizeof(o->kind), "%s", s->rec.kind);
        o->lag_events = s->lag_events;
        o->lag_seconds = s->lag_seconds;
        o->backlog = s->backlog;
        o->failures = s->failures;
        o->deliveries = s->deliveries;
        o->delivered = s->delivered;
        o->archived = s->archived;
        o->unresolved = s->unresolved;
        o->failing = s->failing;
    }
    pthread_mutex_unlock(&ev->mu);
    return n;
}

uint64_t events_unresolved(struct events *ev)
{
    pthread_mutex_lock(&ev->mu);
    uint64_t n = ev->unresolved;
    pthread_mutex_unlock(&ev->mu);
    return n;
}

void events_metrics(struct events *ev, struct buf *b)
{
    enum { MAX = 64 };
    struct events_sink_status st[MAX];
    int n = events_status(ev, st, MAX);
    if (n > MAX)
        n = MAX;
    static const struct {
        const char *name, *type, *help;
    } m[] = {
        {"shortd_sink_lag_events", "gauge", "Events a sink has yet to take (capped)."},
        {"shortd_sink_lag_seconds", "gauge", "Age of the oldest event a sink has yet to take."},
        {"shortd_sink_backlog", "gauge", "Events in batches waiting for a retry."},
        {"shortd_sink_failures_total", "counter", "Failed deliveries to a sink."},
        {"shortd_sink_deliveries_total", "counter", "Batches a sink acknowledged."},
        {"shortd_sink_events_total", "counter", "Events a sink acknowledged."},
        {"shortd_sink_archived_total", "counter", "Batches moved to the failed archive."},
        {"shortd_sink_unresolved", "gauge", "A sink's failed batches not yet resolved."},
    };
    for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
        buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name, m[k].type);
        for (int i = 0; i < n; i++) {
            uint64_t v[] = {st[i].lag_events, (uint64_t)st[i].lag_seconds,
                            st[i].backlog,    st[i].failures,
                            st[i].deliveries, st[i].delivered,
                            st[i].archived,   st[i].unresolved};
            buf_printf(b, "%s{sink=\"%" PRId64 "\",kind=\"%s\"} %llu\n", m[k].name, st[i].sink,
                       st[i].kind, (unsigned long long)v[k]);
        }
    }
    buf_printf(b,
               "# HELP shortd_events_failed_unresolved Failed batches of events no operator has "
               "resolved.\n# TYPE shortd_events_failed_unresolved gauge\n"
               "shortd_events_failed_unresolved %llu\n",
               (unsigned long long)events_unresolved(ev));
}
