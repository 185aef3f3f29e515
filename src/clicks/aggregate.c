/* aggregate.c - classification and counting of click events, off the hot
 * path, and the batched store job.
 *
 * DESIGN
 * Events are folded into a hash table of link days keyed by (code, day),
 * each a struct dayrow (dayrow.h): the day's counts, its dimension tallies,
 * its newest clicks and its visitors. A take hands the whole table to a
 * writer job and starts an empty one, so the pipeline keeps folding while
 * the job commits. The job merges each link day into its stored row, one
 * row write per link and day however many clicks and dimensions it holds,
 * in (code, day) order, AGG_CHUNK link days a transaction: a second's clicks
 * on a million links would otherwise be one commit of 100,000 rows, which
 * keeps creates waiting (writer.h) and runs SQLite's commit for
 * milliseconds without a pause (coop.h). Each chunk's transaction also
 * records how far the job got: the journal position it ends at and its last
 * link day ("partial"), and the last one writes the journal checkpoint
 * instead. The job never changes its own rows, so a retried chunk counts
 * nothing twice. After a crash between two chunks, the replay folds the
 * job's clicks again (the same events give the same link days, in the same
 * order) and skips those up to the partial record's link day. Human and bot
 * clicks are kept apart: a bot or a prefetch only counts as a bot click of
 * its kind (and a bot under its agent's name too). */
#include "clicks/aggregate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clicks/analytics.h"
#include "base/bump.h"
#include "clicks/classify.h"
#include "links/codes.h"
#include "base/coop.h"
#include "clicks/dayrow.h"
#include "clicks/pageview.h"
#include "base/err.h"
#include "base/log.h"
#include "store/store.h"
#include "store/store_sites.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "store/writer.h"
#include "base/banned.h"

const char *const dim_names[DIM__COUNT] = {
    [DIM_REFERRER] = "referrers",
    [DIM_REF_GROUP] = "ref_groups",
    [DIM_COUNTRY] = "countries",
    [DIM_BROWSER] = "browsers",
    [DIM_OS] = "os",
    [DIM_DEVICE] = "devices",
    [DIM_LANGUAGE] = "languages",
    [DIM_UTM_SOURCE] = "utm_source",
    [DIM_UTM_MEDIUM] = "utm_medium",
    [DIM_UTM_CAMPAIGN] = "utm_campaign",
    [DIM_BOT_KIND] = "bot_kinds",
    [DIM_HOUR] = "hours",
    [DIM_DOWHOUR] = "dowhour",
    [DIM_VARIANT] = "variants",
    [DIM_BOT_AGENT] = "bot_agents",
    [DIM_PATH] = "paths",
    [DIM_HOST] = "hosts",
    [DIM_TZ] = "timezones",
    [DIM_VIEWPORT] = "viewports",
    [DIM_UV] = "uv",
    [DIM_SESSIONS] = "sessions",
    [DIM_BOUNCE] = "bounce",
    [DIM_EVENT] = "events",
    [DIM_EVENT_TARGET] = "event_targets",
    [DIM_HI] = "hi",
    [DIM_BOT] = "bot",
};

#define RETRY_PAUSE_US 200000
#define AGG_CHUNK 4000         /* link days per transaction */
#define AGG_STEP 64            /* ... stored between looks at writer_waiting */
#define COMPACT_STEP 1024      /* link days a pass of days_compact */
#define COMPACT_ROWS 2000000   /* the default of aggregate_set_compact */
#define COMPACT_EVERY_MS 30000 /* a round at least this often */

/* A day's key: a link's code, or a site's id after SITE_KEY_MARK, which no
 * code holds (codes.h): site days share the table, the job, its chunks and
 * its checkpoint with link days, and go to site_agg_days when stored. */
#define SITE_KEY_MARK '@'
#define KEY_MAX (1 + SITE_ID_MAX)

struct lday {
    int64_t day;
    char code[KEY_MAX + 1];
    struct dayrow row;
};

/* Open addressing, with each link day's hash beside its pointer: a lookup
 * reads a link day only when the hash matches. Chained, with the hash in
 * the link day, each step along a chain was a cache miss, and the lookups
 * a large share of folding with a million links (most of them for a link
 * day not there yet; bench/HISTORY.md, "Up to commit 69fe67d"). */
struct slot {
    uint64_t hash;
    struct lday *c; /* NULL: free */
};

struct table {
    struct slot *slots;
    size_t nslots, count; /* count <= nslots / 2 */
    uint64_t events;
    struct bump *mem; /* the link days and their rows' arrays */
};

struct agg_job;

/* Compacting appended link days (store_stats.h, "Appending"): one job,
 * submitted again after each transaction until its round is done. */
struct compact_job {
    struct wjob job;
    struct aggregate *agg;
    struct writer *w;
    size_t rows;       /* appended rows the transaction took */
    size_t round_rows; /* ... and the round's transactions so far */
    int64_t recount;   /* -1, or the rows the store holds (the round took none) */
    bool more;
    bool count;       /* not a round: counts the rows appended before this start */
    int64_t start_us; /* when the transaction started (mono_us) */
};

struct aggregate {
    char ckpt_key[64];    /* meta key of this journal's checkpoint */
    char partial_key[72]; /* ... and of a job stopped between chunks */
    size_t chunk;
    struct classify *cl;
    bool hurry;                    /* aggregate_set_hurry */
    _Atomic uint64_t humans, bots; /* clicks folded since the start (aggregate_counts) */
    const char *const *self_hosts;
    struct table t;
    struct bump *spare_mem; /* a stored table's, cleared, for the next one */
    pthread_mutex_t spent_mu;
    struct agg_job *spent; /* stored jobs, for the folding thread to free */
    /* Appending, when the store can (days_append): */
    _Atomic int64_t pending;      /* appended rows not compacted; -1: not known yet */
    _Atomic int64_t last_batch;   /* the newest complete batch */
    int64_t batch_hw;             /* the highest batch number taken (writer thread) */
    _Atomic int64_t round_upto;   /* the round of compacting takes batches up to this */
    _Atomic int64_t round_end_ms; /* when the last round ended (mono_ms) */
    _Atomic bool compacting, stopping;
    _Atomic size_t compact_rows;   /* appended rows that start a round */
    _Atomic int64_t compact_every; /* ms: a round at least this often while rows wait */
    int compact_failures;          /* writer thread */
    struct compact_job cj;
};

/* ---- the table of link days ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#define SLOTS_MIN 2048
#define SLOTS_MAX (1u << 23)

/* A table starts with room for as many link days as the last one ended
 * with ('hint'), so a busy second does not rehash its way up (measured:
 * bench/HISTORY.md, "Figures once quoted in code comments"). Its link days
 * live in 'mem' (NULL: a new one), and die with it: malloc and free cost
 * folding dearly (bump.h). */
static void table_init(struct table *t, size_t hint, struct bump *mem)
{
    memset(t, 0, sizeof(*t));
    t->mem = mem ? mem : bump_new();
    t->nslots = SLOTS_MIN;
    while (t->nslots < 2 * hint && t->nslots < SLOTS_MAX)
        t->nslots *= 2;
    t->slots = calloc(t->nslots, sizeof(*t->slots));
    if (!t->slots)
        abort();
}

/* Frees the table but its memory for link days, which it hands back
 * cleared, for the next table. */
static struct bump *table_release(struct table *t)
{
    struct bump *mem = t->mem;
    bump_clear(mem);
    free(t->slots);
    memset(t, 0, sizeof(*t));
    return mem;
}

/* The first free slot from where hash 'h' lands (linear probing). */
static size_t free_slot(const struct slot *slots, size_t nslots, uint64_t h)
{
    size_t k = h & (nslots - 1);
    while (slots[k].c)
        k = (k + 1) & (nslots - 1);
    return k;
}

static void table_grow(struct table *t)
{
    size_t n = t->nslots * 2;
    struct slot *to = calloc(n, sizeof(*to));
    if (!to)
        abort();
    for (size_t i = 0; i < t->nslots; i++)
        if (t->slots[i].c)
            to[free_slot(to, n, t->slots[i].hash)] = t->slots[i];
    free(t->slots);
    t->slots = to;
    t->nslots = n;
}

static struct lday *lday_get(struct table *t, const char *code, size_t n, int64_t day)
{
    uint64_t h = fnv(fnv(14695981039346656037ULL, code, n), &day, sizeof(day));
    h ^= h >> 33; /* FNV's low bits, which pick the slot, mix poorly */
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    size_t k = h & (t->nslots - 1);
    for (; t->slots[k].c; k = (k + 1) & (t->nslots - 1)) {
        struct lday *c = t->slots[k].c;
        if (t->slots[k].hash == h && c->day == day && !strncmp(c->code, code, n) && !c->code[n])
            return c;
    }
    if (2 * (t->count + 1) > t->nslots) {
        table_grow(t);
        k = free_slot(t->slots, t->nslots, h);
    }
    struct lday *c = bump_alloc(t->mem, sizeof(*c));
    memset(c, 0, sizeof(*c));
    memcpy(c->code, code, n);
    c->day = day;
    dayrow_init_bump(&c->row, t->mem);
    t->slots[k] = (struct slot){h, c};
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
    table_init(&a->t, 0, NULL);
    pthread_mutex_init(&a->spent_mu, NULL);
    aggregate_set_journal(a, NULL);
    a->chunk = AGG_CHUNK;
    atomic_init(&a->pending, -1);
    atomic_init(&a->round_end_ms, mono_ms());
    atomic_init(&a->compact_rows, COMPACT_ROWS);
    atomic_init(&a->compact_every, COMPACT_EVERY_MS);
    return a;
}

static void release_spent(struct aggregate *a);

void aggregate_free(struct aggregate *a)
{
    if (!a)
        return;
    release_spent(a);
    pthread_mutex_destroy(&a->spent_mu);
    bump_free(table_release(&a->t));
    bump_free(a->spare_mem);
    free(a);
}

static void count_dim(struct dayrow *r, int dim, const char *v)
{
    if (v && *v)
        dayrow_tally(r, dim, v, strlen(v), 1);
}

void aggregate_fold(struct classify *cl, const char *const *self_hosts, bool hurry,
                    struct dayrow *r, const struct click_event *e)
{
    struct ua_info ua;
    if (hurry)
        (void)classify_ua_hurried(cl, e->ua.p, e->ua.n, &ua);
    else
        classify_ua(cl, e->ua.p, e->ua.n, &ua);
    if (e->flags & EVENT_PREFETCH) {
        r->bots++;
        count_dim(r, DIM_BOT_KIND, "prefetch");
        return;
    }
    if (ua.bot != BOT_NONE) {
        r->bots++;
        count_dim(r, DIM_BOT_KIND, bot_kind_name(ua.bot));
        count_dim(r, DIM_BOT_AGENT, ua.agent);
        return;
    }
    if (e->ch_ua.n || e->ch_mobile.n || e->ch_platform.n)
        classify_hints(e->ch_ua.p, e->ch_ua.n, e->ch_mobile.p, e->ch_mobile.n, e->ch_platform.p,
                       e->ch_platform.n, &ua);
    r->clicks++;
    if (e->visitor)
        dayrow_visitor(r, e->visitor);
    char host[DIM_MAX + 1], lang[16], src[DIM_MAX + 1], med[DIM_MAX + 1], camp[DIM_MAX + 1];
    enum ref_group group;
    classify_referrer(e->referer.p, e->referer.n, self_hosts, host, &group);
    classify_language(e->lang.p, e->lang.n, lang);
    classify_utm(e->query.p, e->query.n, src, med, camp);
    int64_t day = day_number(e->ts);
    int64_t secs = e->ts / 1000;
    int hour = (int)((secs % 86400 + 86400) % 86400 / 3600);
    int dow = (int)((day % 7 + 7 + 3) % 7) + 1; /* 1970-01-01 was a Thursday (4) */
    char hh[3] = {(char)('0' + hour / 10), (char)('0' + hour % 10), '\0'};
    char dh[5] = {(char)('0' + dow), '-', hh[0], hh[1], '\0'};

    count_dim(r, DIM_REFERRER, host);
    count_dim(r, DIM_REF_GROUP, ref_group_name(group));
    count_dim(r, DIM_COUNTRY, e->country);
    count_dim(r, DIM_BROWSER, ua.browser);
    count_dim(r, DIM_OS, ua.os);
    count_dim(r, DIM_DEVICE, device_name(ua.device));
    count_dim(r, DIM_LANGUAGE, lang);
    count_dim(r, DIM_UTM_SOURCE, src);
    count_dim(r, DIM_UTM_MEDIUM, med);
    count_dim(r, DIM_UTM_CAMPAIGN, camp);
    count_dim(r, DIM_HOUR, hh);
    count_dim(r, DIM_DOWHOUR, dh);
    unsigned variant = (e->flags & EVENT_VARIANT_MASK) >> EVENT_VARIANT_SHIFT;
    if (variant) {
        char vn[4];
        snprintf(vn, sizeof(vn), "%u", variant);
        count_dim(r, DIM_VARIANT, vn);
    }
    const char *text[4] = {host, e->country, device_name(ua.device), ua.browser};
    dayrow_remember(r, e->ts, text);
}

void aggregate_add(struct aggregate *a, const struct click_event *e)
{
    struct table *t = &a->t;
    size_t n = e->code.n < CODE_MAX ? e->code.n : CODE_MAX;
    int64_t day = day_number(e->ts);
    struct dayrow *r = &lday_get(t, e->code.p, n, day)->row;
    t->events++;
    int64_t bots = r->bots;
    aggregate_fold(a->cl, a->self_hosts, a->hurry, r, e);
    atomic_fetch_add_explicit(r->bots != bots ? &a->bots : &a->humans, 1, memory_order_relaxed);
}

void aggregate_counts(const struct aggregate *a, uint64_t *clicks, uint64_t *bots)
{
    *clicks = atomic_load_explicit(&a->humans, memory_order_relaxed);
    *bots = atomic_load_explicit(&a->bots, memory_order_relaxed);
}

void aggregate_add_page(struct aggregate *a, const struct page_event *e)
{
    char key[KEY_MAX];
    size_t n = e->site.n < SITE_ID_MAX ? e->site.n : SITE_ID_MAX;
    key[0] = SITE_KEY_MARK;
    memcpy(key + 1, e->site.p, n);
    struct table *t = &a->t;
    struct dayrow *r = &lday_get(t, key, n + 1, day_number(e->ts))->row;
    t->events++;
    page_fold(a->cl, a->hurry, r, e);
}

bool aggregate_add_record(struct aggregate *a, const void *rec, size_t n)
{
    if (page_is_record(rec, n)) {
        struct page_event pe;
        if (page_decode(rec, n, &pe) != ERR_OK)
            return false;
        aggregate_add_page(a, &pe);
        return true;
    }
    struct click_event e;
    if (event_decode(rec, n, &e) != ERR_OK)
        return false;
    aggregate_add(a, &e);
    return true;
}

void aggregate_set_hurry(struct aggregate *a, bool on) { a->hurry = on; }
bool aggregate_empty(const struct aggregate *a) { return a->t.count == 0; }
uint64_t aggregate_events(const struct aggregate *a) { return a->t.events; }
size_t aggregate_bytes(const struct aggregate *a)
{
    return bump_used(a->t.mem) + a->t.nslots * sizeof(struct slot);
}

/* ---- the store job ---- */

struct agg_job {
    struct wjob job;
    struct aggregate *agg;
    struct agg_job *next_spent;
    const char *ckpt_key;
    const char *partial_key;
    struct table t;
    struct day_delta *deltas; /* the table's link days in (code, day) order */
    size_t next;              /* deltas[0 .. next) are stored */
    size_t upto;              /* ... and [next .. upto) by the chunk running */
    size_t chunk;
    bool resume;     /* replayed after a crash: skip what is stored */
    int64_t batch;   /* appending: the batch number its link days are stored under ... */
    bool batch_kept; /* ... committed with a chunk (else a chunk takes a new one) */
    size_t appended; /* link days the chunk running appended */
    uint64_t pos;
    struct writer *writer;
    int failures;
    void (*done)(uint64_t pos, uint64_t events, void *arg);
    void *arg;
};

static int cmp_delta(const struct day_delta *a, const struct day_delta *b)
{
    int c = strcmp(a->code, b->code);
    return c ? c : (a->day > b->day) - (a->day < b->day);
}

/* A link day to sort, with the first 8 bytes of its code as a big-endian
 * number (zero-padded, so it orders as strcmp does): most comparisons are
 * decided by it, without reading the code through its pointer (a cache
 * miss each, with a million link days; bench/HISTORY.md, "Figures once
 * quoted in code comments"). */
struct sort_item {
    uint64_t prefix;
    struct day_delta d;
};

static uint64_t code_prefix(const char *code)
{
    uint64_t k = 0;
    for (int i = 0; i < 8; i++) {
        unsigned char c = (unsigned char)code[i];
        k = k << 8 | c;
        if (!c)
            return k << 8 * (7 - i);
    }
    return k;
}

static bool item_before(const struct sort_item *a, const struct sort_item *b)
{
    if (a->prefix != b->prefix)
        return a->prefix < b->prefix;
    return cmp_delta(&a->d, &b->d) < 0;
}

/* The table's link days into d[0..count), sorted by (code, day): a
 * bottom-up merge sort, written out rather than qsort() so that it can
 * yield (coop.h) between runs; a second's clicks on a million links are
 * 100,000 link days. They are gathered from the slots, whose loads are
 * independent (a list in insertion order made each wait for the last;
 * bench/HISTORY.md, "Figures once quoted in code comments"). */
static void sorted_deltas(const struct table *t, struct day_delta *d)
{
    size_t n = t->count;
    struct sort_item *a = malloc((n ? n : 1) * sizeof(*a));
    struct sort_item *b = malloc((n ? n : 1) * sizeof(*b));
    if (!a || !b)
        abort();
    size_t got = 0;
    for (size_t i = 0; i < t->nslots; i++) {
        struct lday *c = t->slots[i].c;
        if (c)
            a[got++] = (struct sort_item){code_prefix(c->code), {c->code, c->day, &c->row, false}};
        if (i % 4096 == 4095)
            coop_point();
    }
    struct sort_item *from = a, *to = b;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                to[k++] = item_before(&from[j], &from[i]) ? from[j++] : from[i++];
            while (i < mid)
                to[k++] = from[i++];
            while (j < hi)
                to[k++] = from[j++];
            if (hi - lo >= 64 || hi == n)
                coop_point();
        }
        struct sort_item *swap = from;
        from = to;
        to = swap;
    }
    for (size_t i = 0; i < n; i++)
        d[i] = from[i].d;
    free(a);
    free(b);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | (unsigned char)p[i];
    return v;
}

/* The partial record: [u64 job position][i64 day][code] of the last link day
 * a stopped job stored. */
static int put_partial(struct store *st, const struct agg_job *a, const struct day_delta *last)
{
    unsigned char rec[16 + KEY_MAX];
    size_t n = strlen(last->code);
    put_u64(rec, a->pos);
    put_u64(rec + 8, (uint64_t)last->day);
    memcpy(rec + 16, last->code, n);
    return st->ops->meta_put(st, a->partial_key, rec, 16 + n);
}

/* Where a replayed job carries on: past the link day of its partial record
 * when that record is this job's (same journal position), else at 0. */
static int resume_at(struct store *st, const struct agg_job *a, size_t *at)
{
    struct buf v = BUF_INIT;
    *at = 0;
    int rc = st->ops->meta_get(st, a->partial_key, &v);
    if (rc == ERR_NOTFOUND) {
        rc = ERR_OK;
    } else if (rc == ERR_OK && (v.len < 17 || v.len > 16 + KEY_MAX)) {
        rc = log_fail(ERR_STORAGE, "the stored click job record is damaged");
    } else if (rc == ERR_OK && get_u64(v.p) == a->pos) {
        char code[KEY_MAX + 1];
        memcpy(code, v.p + 16, v.len - 16);
        code[v.len - 16] = '\0';
        struct day_delta last = {code, (int64_t)get_u64(v.p + 8), NULL, false};
        size_t lo = 0, hi = a->t.count; /* first delta after 'last' */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_delta(&a->deltas[mid], &last) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        *at = lo;
    }
    buf_release(&v);
    return rc;
}

/* Stores d[0..n) (n <= AGG_STEP): runs of link days through days_append
 * (or agg_days), of site days (their key's mark taken off) through
 * site_agg_days. */
static int store_days(struct store *st, struct agg_job *a, const struct day_delta *d, size_t n)
{
    size_t i = 0;
    int rc = ERR_OK;
    while (i < n && rc == ERR_OK) {
        bool site = d[i].code[0] == SITE_KEY_MARK;
        size_t j = i;
        while (j < n && (d[j].code[0] == SITE_KEY_MARK) == site)
            j++;
        if (!site && st->ops->days_append) {
            rc = st->ops->days_append(st, a->batch, d + i, j - i);
            a->appended += j - i;
        } else if (!site) {
            rc = st->ops->agg_days(st, d + i, j - i);
        } else {
            struct day_delta sd[AGG_STEP];
            for (size_t k = i; k < j; k++) {
                sd[k - i] = d[k];
                sd[k - i].code = d[k].code + 1;
            }
            rc = st->ops->site_agg_days(st, sd, j - i);
        }
        i = j;
    }
    return rc;
}

/* On the writer's background thread, the first time after a start: the
 * rows appended before it. Batches stored before this start are complete:
 * a job stopped part way carries on under a new batch number. */
static int count_pending(struct aggregate *agg, struct store *st)
{
    int64_t rows, newest;
    int rc = st->ops->days_pending(st, &rows, &newest);
    if (rc == ERR_OK) {
        atomic_store(&agg->pending, rows);
        atomic_store(&agg->last_batch, newest);
        agg->batch_hw = newest;
    }
    return rc;
}

/* One chunk: its link days, then either the partial record or, for the
 * last chunk, the checkpoint (and no partial record). */
static int agg_run(struct wjob *j, struct store *st)
{
    struct agg_job *a = (struct agg_job *)j;
    size_t from = a->next;
    if (a->resume) {
        int rc = resume_at(st, a, &from);
        if (rc != ERR_OK)
            return rc;
    }
    size_t n = a->t.count - from < a->chunk ? a->t.count - from : a->chunk;
    int rc = ERR_OK;
    a->appended = 0;
    if (st->ops->days_append) {
        if (atomic_load(&a->agg->pending) < 0)
            rc = count_pending(a->agg, st);
        /* Past every number taken, compacted or not: a round takes the
         * complete batches up to last_batch, and must not meet a new one */
        if (rc == ERR_OK && !a->batch_kept && n) {
            rc = st->ops->days_batch(st, a->agg->batch_hw, &a->batch);
            if (rc == ERR_OK && a->batch > a->agg->batch_hw)
                a->agg->batch_hw = a->batch;
        }
    }
    /* A step at a time: the batch ends early, with what is stored so far,
     * when a foreground one (creates) waits for its turn (writer.h). */
    size_t done = 0;
    while (done < n && rc == ERR_OK) {
        size_t step = n - done < AGG_STEP ? n - done : AGG_STEP;
        rc = store_days(st, a, a->deltas + from + done, step);
        done += step;
        if (writer_waiting(a->writer))
            break;
    }
    a->upto = from + done;
    if (rc == ERR_OK && a->upto < a->t.count)
        return put_partial(st, a, &a->deltas[a->upto - 1]);
    if (rc == ERR_OK) {
        unsigned char le[8];
        put_u64(le, a->pos);
        rc = st->ops->meta_put(st, a->ckpt_key, le, sizeof(le));
    }
    if (rc == ERR_OK)
        rc = st->ops->meta_del(st, a->partial_key);
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
    a->resume = false;
    a->next = a->upto;
    if (a->appended) {
        a->batch_kept = true;
        atomic_fetch_add(&a->agg->pending, (int64_t)a->appended);
    }
    if (a->next < a->t.count) {
        writer_submit(a->writer, j); /* behind whatever came meanwhile */
        return;
    }
    /* Complete: a round of compacting may take its batch now, not before
     * (a round that took a batch whose later chunks were still to come
     * would forget it once through it, with rows still to be added). */
    if (a->batch_kept)
        atomic_store(&a->agg->last_batch, a->batch);
    /* Freed by the thread that folded it (release_spent), which reuses its
     * memory for link days; so it is handed back before done() can let
     * that thread submit the next job. */
    void (*done)(uint64_t pos, uint64_t events, void *arg) = a->done;
    uint64_t pos = a->pos, events = a->t.events;
    void *arg = a->arg;
    struct aggregate *agg = a->agg;
    pthread_mutex_lock(&agg->spent_mu);
    a->next_spent = agg->spent;
    agg->spent = a;
    pthread_mutex_unlock(&agg->spent_mu);
    if (done)
        done(pos, events, arg);
}

static void release_spent(struct aggregate *a)
{
    pthread_mutex_lock(&a->spent_mu);
    struct agg_job *j = a->spent;
    a->spent = NULL;
    pthread_mutex_unlock(&a->spent_mu);
    while (j) {
        struct agg_job *next = j->next_spent;
        bump_free(a->spare_mem);
        a->spare_mem = table_release(&j->t);
        free(j->deltas);
        free(j);
        j = next;
    }
}

static void aggregate_submit_job(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                                 bool resume,
                                 void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg)
{
    release_spent(a);
    struct agg_job *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    j->agg = a;
    j->job.run = agg_run;
    j->job.done = agg_done;
    j->job.background = true;
    j->t = a->t;
    j->deltas = calloc(j->t.count ? j->t.count : 1, sizeof(*j->deltas));
    if (!j->deltas)
        abort();
    sorted_deltas(&j->t, j->deltas);
    j->pos = journal_pos;
    j->resume = resume;
    j->chunk = a->chunk;
    j->ckpt_key = a->ckpt_key;
    j->partial_key = a->partial_key;
    j->writer = w;
    j->done = done;
    j->arg = arg;
    table_init(&a->t, j->t.count, a->spare_mem);
    a->spare_mem = NULL;
    writer_submit(w, &j->job);
}

void aggregate_submit(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                      void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg)
{
    aggregate_submit_job(a, w, journal_pos, false, done, arg);
}

void aggregate_resume(struct aggregate *a, struct writer *w, uint64_t journal_pos,
                      void (*done)(uint64_t pos, uint64_t events, void *arg), void *arg)
{
    aggregate_submit_job(a, w, journal_pos, true, done, arg);
}

/* ---- compacting ---- */

/* A pass ends early for a create, once the transaction has had its
 * slice: the create's batch would otherwise wait out the whole pass, at
 * this thread's low priority, and a pass stopped at once would spend its
 * turn opening its cursors (bench/HISTORY.md, "Creates during a round of
 * compacting"). */
static bool create_waits(void *arg)
{
    struct compact_job *c = arg;
    return mono_us() - c->start_us >= WRITER_SLICE_US && writer_waiting(c->w);
}

static int compact_run(struct wjob *j, struct store *st)
{
    struct compact_job *c = (struct compact_job *)j;
    struct aggregate *a = c->agg;
    size_t got = 0;
    int rc;
    c->rows = 0;
    c->recount = -1;
    if (c->count) {
        /* A job storing clicks may have counted them first */
        if (atomic_load(&a->pending) >= 0)
            return ERR_OK;
        if (st->ops->days_pending)
            return count_pending(a, st);
        atomic_store(&a->pending, 0);
        return ERR_OK;
    }
    /* Passes until this transaction holds a chunk, or a create waits */
    c->start_us = mono_us();
    do {
        rc = st->ops->days_compact(st, atomic_load(&a->round_upto), COMPACT_STEP, create_waits, c,
                                   &got);
        c->rows += got;
    } while (rc == ERR_OK && got && c->rows < a->chunk && !create_waits(c));
    c->more = got > 0;
    c->round_rows += c->rows;
    /* A round that found nothing to take while rows were counted: another
     * node's rounds took them (a store several nodes share) */
    if (rc == ERR_OK && !c->round_rows && atomic_load(&a->pending) > 0) {
        int64_t newest;
        rc = st->ops->days_pending(st, &c->recount, &newest);
    }
    return rc;
}

static void compact_done(struct wjob *j)
{
    struct compact_job *c = (struct compact_job *)j;
    struct aggregate *a = c->agg;
    if (j->rc != ERR_OK) {
        if (a->compact_failures++ % 50 == 0)
            log_at(LOG_ERROR, "compacting stored clicks failed (%s); retrying", err_str(j->rc));
        if (!atomic_load(&a->stopping)) {
            usleep(RETRY_PAUSE_US);
            writer_submit(c->w, j);
            return;
        }
    } else {
        /* Rounds take complete batches only, whose rows are all counted */
        if (c->recount >= 0)
            atomic_store(&a->pending, c->recount);
        else
            atomic_fetch_sub(&a->pending, (int64_t)c->rows);
        if (c->more && !atomic_load(&a->stopping)) {
            writer_submit(c->w, j); /* behind whatever came meanwhile */
            return;
        }
    }
    if (!c->count)
        atomic_store(&a->round_end_ms, mono_ms());
    atomic_store(&a->compacting, false);
}

void aggregate_tick(struct aggregate *a, struct writer *w)
{
    int64_t rows = atomic_load(&a->pending);
    if (!w || rows == 0 || atomic_load(&a->compacting) || atomic_load(&a->stopping))
        return;
    /* Not known yet (no clicks stored since the start): a job counts them,
     * so that rows a previous run left are compacted and shown in /metrics
     * without waiting for a click */
    bool count = rows < 0;
    if (!count && (size_t)rows < atomic_load(&a->compact_rows) &&
        mono_ms() - atomic_load(&a->round_end_ms) < atomic_load(&a->compact_every))
        return;
    /* A round takes the batches stored so far, in one sweep of the keys;
     * later ones wait for the next round. */
    atomic_store(&a->round_upto, atomic_load(&a->last_batch));
    atomic_store(&a->compacting, true);
    a->cj = (struct compact_job){.agg = a, .w = w, .count = count};
    a->cj.job.run = compact_run;
    a->cj.job.done = compact_done;
    a->cj.job.background = true;
    writer_submit(w, &a->cj.job);
}

void aggregate_stop_compacting(struct aggregate *a) { atomic_store(&a->stopping, true); }

void aggregate_set_compact(struct aggregate *a, size_t rows, int64_t every_ms)
{
    atomic_store(&a->compact_rows, rows ? rows : COMPACT_ROWS);
    atomic_store(&a->compact_every, every_ms > 0 ? every_ms : COMPACT_EVERY_MS);
}

int64_t aggregate_pending(const struct aggregate *a) { return atomic_load(&a->pending); }

void aggregate_set_journal(struct aggregate *a, const char *journal_id)
{
    if (journal_id)
        snprintf(a->ckpt_key, sizeof(a->ckpt_key), "journal_pos:%s", journal_id);
    else
        snprintf(a->ckpt_key, sizeof(a->ckpt_key), "journal_pos");
    snprintf(a->partial_key, sizeof(a->partial_key), "%s:partial", a->ckpt_key);
}

void aggregate_set_chunk(struct aggregate *a, size_t link_days)
{
    a->chunk = link_days ? link_days : AGG_CHUNK;
}

int aggregate_checkpoint(struct aggregate *a, struct store *st, uint64_t *pos, uint64_t *partial)
{
    struct buf v = BUF_INIT;
    *pos = *partial = 0;
    int rc = st->ops->meta_get(st, a->ckpt_key, &v);
    if (rc == ERR_NOTFOUND)
        rc = ERR_OK;
    else if (rc == ERR_OK && v.len == 8)
        *pos = get_u64(v.p);
    else if (rc == ERR_OK)
        rc = log_fail(ERR_STORAGE, "the stored journal position is damaged");
    if (rc == ERR_OK) {
        rc = st->ops->meta_get(st, a->partial_key, &v);
        if (rc == ERR_NOTFOUND)
            rc = ERR_OK;
        else if (rc == ERR_OK && v.len > 16)
            *partial = get_u64(v.p);
        else if (rc == ERR_OK)
            rc = log_fail(ERR_STORAGE, "the stored click job record is damaged");
    }
    buf_release(&v);
    return rc;
}
