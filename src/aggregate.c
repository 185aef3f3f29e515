/* aggregate.c - classification and counting of click events, off the hot
 * path, and the batched store job.
 *
 * DESIGN
 * Events are folded into a hash table of cells keyed by (code, day, kind,
 * value): a per-day total, a dimension value, a visitor hash, or the ring of
 * a link's newest clicks. A take hands the whole table to a writer job and
 * starts an empty one, so the pipeline keeps folding while the job commits.
 * The job writes visitors first (learning which are new that day), then the
 * daily totals with their new-visitor counts, then dimensions and recent
 * clicks, and last the journal checkpoint, all in the writer's transaction.
 * Human and bot clicks are kept apart: a bot or a prefetch only counts as a
 * bot click of its kind. */
#include "aggregate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analytics.h"
#include "classify.h"
#include "err.h"
#include "log.h"
#include "store.h"
#include "timeutil.h"
#include "writer.h"
#include "banned.h"

const char *const dim_names[DIM__COUNT] = {
    [DIM_REFERRER] = "referrers",       [DIM_REF_GROUP] = "ref_groups",
    [DIM_COUNTRY] = "countries",        [DIM_BROWSER] = "browsers",
    [DIM_OS] = "os",                    [DIM_DEVICE] = "devices",
    [DIM_LANGUAGE] = "languages",       [DIM_UTM_SOURCE] = "utm_source",
    [DIM_UTM_MEDIUM] = "utm_medium",    [DIM_UTM_CAMPAIGN] = "utm_campaign",
    [DIM_BOT_KIND] = "bot_kinds",       [DIM_HOUR] = "hours",
    [DIM_DOWHOUR] = "dowhour",
};

/* Cell kinds beyond the dimensions */
#define RETRY_PAUSE_US 200000

#define K_DAILY (-1)        /* n = human clicks, n2 = bot clicks */
#define K_VISITOR (-2)      /* value = the hash in hex */
#define K_RECENT (-3)       /* ring of the newest human clicks of a code */

struct recent_ring {
    struct recent_click r[RECENT_KEEP];
    char text[RECENT_KEEP][4][DIM_MAX + 1];     /* referrer, country, device, browser */
    int next, count;
};

struct cell {
    char *code;
    int64_t day;
    int kind;
    char *value;
    int64_t n, n2, n3;     /* daily: human clicks, bot clicks, new visitors */
    struct recent_ring *ring;
    uint64_t hash;
    struct cell *chain;     /* same bucket */
    struct cell *order;     /* insertion order */
};

struct table {
    struct cell **buckets;
    size_t nbuckets, count;
    struct cell *first, *last;
    uint64_t events;
};

struct aggregate {
    char ckpt_key[64];      /* meta key of this journal's checkpoint */
    struct classify *cl;
    const char *const *self_hosts;
    struct table t;
};

/* ---- the cell table ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void table_init(struct table *t)
{
    memset(t, 0, sizeof(*t));
    t->nbuckets = 1024;
    t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
    if (!t->buckets)
        abort();
}

static void table_release(struct table *t)
{
    struct cell *c = t->first;
    while (c) {
        struct cell *next = c->order;
        free(c->code);
        free(c->value);
        free(c->ring);
        free(c);
        c = next;
    }
    free(t->buckets);
    memset(t, 0, sizeof(*t));
}

static void table_grow(struct table *t)
{
    size_t n = t->nbuckets * 2;
    struct cell **b = calloc(n, sizeof(*b));
    if (!b)
        abort();
    for (struct cell *c = t->first; c; c = c->order) {
        c->chain = b[c->hash & (n - 1)];
        b[c->hash & (n - 1)] = c;
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

static struct cell *cell_get(struct table *t, const char *code, int64_t day, int kind,
                             const char *value)
{
    uint64_t h = fnv(14695981039346656037ULL, code, strlen(code) + 1);
    h = fnv(h, &day, sizeof(day));
    h = fnv(h, &kind, sizeof(kind));
    if (value)
        h = fnv(h, value, strlen(value));
    for (struct cell *c = t->buckets[h & (t->nbuckets - 1)]; c; c = c->chain)
        if (c->hash == h && c->day == day && c->kind == kind && !strcmp(c->code, code) &&
            (!value ? !c->value : c->value && !strcmp(c->value, value)))
            return c;
    if (t->count + 1 > t->nbuckets)
        table_grow(t);
    struct cell *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->code = xstrdup(code);
    c->day = day;
    c->kind = kind;
    c->value = value ? xstrdup(value) : NULL;
    c->hash = h;
    c->chain = t->buckets[h & (t->nbuckets - 1)];
    t->buckets[h & (t->nbuckets - 1)] = c;
    if (t->last)
        t->last->order = c;
    else
        t->first = c;
    t->last = c;
    t->count++;
    return c;
}

/* ---- folding ---- */

struct aggregate *aggregate_new(struct classify *cl, const char *const *self_hosts)
{
    struct aggregate *a = calloc(1, sizeof(*a));
    if (!a)
        abort();
    a->cl = cl;
    a->self_hosts = self_hosts;
    table_init(&a->t);
    snprintf(a->ckpt_key, sizeof(a->ckpt_key), "journal_pos");
    return a;
}

void aggregate_free(struct aggregate *a)
{
    if (!a)
        return;
    table_release(&a->t);
    free(a);
}

static void count_dim(struct table *t, const char *code, int64_t day, int dim, const char *v)
{
    if (v && *v)
        cell_get(t, code, day, dim, v)->n++;
}

static void remember(struct table *t, const char *code, int64_t ts, const char *ref,
                     const char *country, const char *device, const char *browser)
{
    struct cell *c = cell_get(t, code, 0, K_RECENT, NULL);
    if (!c->ring) {
        c->ring = calloc(1, sizeof(*c->ring));
        if (!c->ring)
            abort();
    }
    struct recent_ring *g = c->ring;
    int i = g->next;
    const char *src[4] = {ref, country, device, browser};
    for (int k = 0; k < 4; k++)
        snprintf(g->text[i][k], sizeof(g->text[i][k]), "%s", src[k]);
    g->r[i] = (struct recent_click){ts, g->text[i][0], g->text[i][1], g->text[i][2], g->text[i][3]};
    g->next = (i + 1) % RECENT_KEEP;
    if (g->count < RECENT_KEEP)
        g->count++;
}

void aggregate_add(struct aggregate *a, const struct click_event *e)
{
    struct table *t = &a->t;
    char code[DIM_MAX + 1];
    size_t n = e->code.n < DIM_MAX ? e->code.n : DIM_MAX;
    memcpy(code, e->code.p, n);
    code[n] = '\0';
    int64_t day = day_number(e->ts);
    struct cell *daily = cell_get(t, code, day, K_DAILY, NULL);
    t->events++;

    struct ua_info ua;
    classify_ua(a->cl, e->ua.p, e->ua.n, &ua);
    if (e->flags & EVENT_PREFETCH) {
        daily->n2++;
        count_dim(t, code, day, DIM_BOT_KIND, "prefetch");
        return;
    }
    if (ua.bot != BOT_NONE) {
        daily->n2++;
        count_dim(t, code, day, DIM_BOT_KIND, bot_kind_name(ua.bot));
        return;
    }
    daily->n++;
    if (e->visitor) {
        static const char digits[] = "0123456789abcdef";
        char hex[17];
        for (int i = 0; i < 16; i++)
            hex[i] = digits[(e->visitor >> (60 - 4 * i)) & 15];
        hex[16] = '\0';
        cell_get(t, code, day, K_VISITOR, hex);
    }
    char host[DIM_MAX + 1], lang[16], src[DIM_MAX + 1], med[DIM_MAX + 1], camp[DIM_MAX + 1];
    enum ref_group group;
    classify_referrer(e->referer.p, e->referer.n, a->self_hosts, host, &group);
    classify_language(e->lang.p, e->lang.n, lang);
    classify_utm(e->query.p, e->query.n, src, med, camp);
    int64_t secs = e->ts / 1000;
    int hour = (int)((secs % 86400 + 86400) % 86400 / 3600);
    int dow = (int)((day % 7 + 7 + 3) % 7) + 1;     /* 1970-01-01 was a Thursday (4) */
    char hh[3] = {(char)('0' + hour / 10), (char)('0' + hour % 10), '\0'};
    char dh[5] = {(char)('0' + dow), '-', hh[0], hh[1], '\0'};

    count_dim(t, code, day, DIM_REFERRER, host);
    count_dim(t, code, day, DIM_REF_GROUP, ref_group_name(group));
    count_dim(t, code, day, DIM_COUNTRY, e->country);
    count_dim(t, code, day, DIM_BROWSER, ua.browser);
    count_dim(t, code, day, DIM_OS, ua.os);
    count_dim(t, code, day, DIM_DEVICE, device_name(ua.device));
    count_dim(t, code, day, DIM_LANGUAGE, lang);
    count_dim(t, code, day, DIM_UTM_SOURCE, src);
    count_dim(t, code, day, DIM_UTM_MEDIUM, med);
    count_dim(t, code, day, DIM_UTM_CAMPAIGN, camp);
    count_dim(t, code, day, DIM_HOUR, hh);
    count_dim(t, code, day, DIM_DOWHOUR, dh);
    remember(t, code, e->ts, host, e->country, device_name(ua.device), ua.browser);
}

bool aggregate_empty(const struct aggregate *a) { return a->t.count == 0; }
uint64_t aggregate_events(const struct aggregate *a) { return a->t.events; }

/* ---- the store job ---- */

struct agg_job {
    struct wjob job;
    const char *ckpt_key;
    struct table t;
    uint64_t pos;
    struct writer *writer;
    int failures;
    void (*done)(uint64_t pos, uint64_t events, void *arg);
    void *arg;
};

static int store_ring(struct store *st, const struct cell *c)
{
    const struct recent_ring *g = c->ring;
    int first = (g->next - g->count + RECENT_KEEP) % RECENT_KEEP;
    for (int k = 0; k < g->count; k++) {
        int rc = st->ops->agg_recent(st, c->code, &g->r[(first + k) % RECENT_KEEP], RECENT_KEEP);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

static int cmp_visitor(const void *x, const void *y)
{
    const struct cell *a = *(const struct cell *const *)x, *b = *(const struct cell *const *)y;
    if (a->day != b->day)
        return a->day < b->day ? -1 : 1;
    int c = strcmp(a->code, b->code);
    return c ? c : strcmp(a->value, b->value);
}

static int agg_run(struct wjob *j, struct store *st)
{
    struct agg_job *a = (struct agg_job *)j;
    int rc = ERR_OK;
    /* Visitors first: each one new that day adds to the day's unique count.
     * They are written in one global order (day, code, visitor) so that two
     * nodes' batches can never deadlock on each other's rows, and the counts
     * start from zero on every try, so a retried job counts nothing twice. */
    size_t nv = 0;
    for (struct cell *c = a->t.first; c; c = c->order) {
        if (c->kind == K_DAILY)
            c->n3 = 0;
        else if (c->kind == K_VISITOR)
            nv++;
    }
    struct cell **vs = nv ? calloc(nv, sizeof(*vs)) : NULL;
    if (nv && !vs)
        abort();
    size_t k = 0;
    for (struct cell *c = a->t.first; c; c = c->order)
        if (c->kind == K_VISITOR)
            vs[k++] = c;
    if (nv)
        qsort(vs, nv, sizeof(*vs), cmp_visitor);
    for (size_t i = 0; i < nv && rc == ERR_OK; i++) {
        struct cell *c = vs[i];
        bool is_new = false;
        rc = st->ops->agg_visitor(st, c->code, c->day, strtoull(c->value, NULL, 16), &is_new);
        if (rc == ERR_OK && is_new)
            cell_get(&a->t, c->code, c->day, K_DAILY, NULL)->n3++;
    }
    free(vs);
    for (struct cell *c = a->t.first; c && rc == ERR_OK; c = c->order) {
        if (c->kind == K_DAILY)
            rc = st->ops->agg_daily(st, c->code, c->day, c->n, c->n2, c->n3);
        else if (c->kind == K_RECENT)
            rc = store_ring(st, c);
        else if (c->kind >= 0)
            rc = st->ops->agg_dim(st, c->code, c->day, c->kind, c->value, c->n);
    }
    if (rc == ERR_OK) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)(a->pos >> (8 * i));
        rc = st->ops->meta_put(st, a->ckpt_key, le, sizeof(le));
    }
    return rc;
}

static void agg_done(struct wjob *j)
{
    struct agg_job *a = (struct agg_job *)j;
    if (j->rc != ERR_OK) {
        /* The counters stay in this job; nothing is lost or counted twice. */
        if (a->failures++ % 50 == 0)
            log_at(LOG_ERROR, "storing %llu clicks failed (%s); retrying",
                   (unsigned long long)a->t.events, err_str(j->rc));
        usleep(RETRY_PAUSE_US);
        writer_submit(a->writer, j);
        return;
    }
    a->done(a->pos, a->t.events, a->arg);
    table_release(&a->t);
    free(a);
}

void aggregate_submit(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                      void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg)
{
    struct agg_job *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    j->job.run = agg_run;
    j->job.done = agg_done;
    j->t = a->t;
    j->pos = journal_pos;
    j->ckpt_key = a->ckpt_key;
    j->writer = w;
    j->done = done;
    j->arg = arg;
    table_init(&a->t);
    writer_submit(w, &j->job);
}

void aggregate_set_journal(struct aggregate *a, const char *journal_id)
{
    snprintf(a->ckpt_key, sizeof(a->ckpt_key), "journal_pos:%s", journal_id);
}

int aggregate_checkpoint(struct aggregate *a, struct store *st, uint64_t *pos)
{
    struct buf v = BUF_INIT;
    *pos = 0;
    int rc = st->ops->meta_get(st, a->ckpt_key, &v);
    if (rc == ERR_NOTFOUND) {
        rc = ERR_OK;
    } else if (rc == ERR_OK && v.len == 8) {
        for (int i = 7; i >= 0; i--)
            *pos = *pos << 8 | (unsigned char)v.p[i];
    } else if (rc == ERR_OK) {
        rc = log_fail(ERR_STORAGE, "the stored journal position is damaged");
    }
    buf_release(&v);
    return rc;
}
