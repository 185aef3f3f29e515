/* cache.c - the redirect cache on liburcu's lock-free RCU hash table.
 *
 * DESIGN
 * Entries are immutable once published: a change is a new entry swapped in
 * with cds_lfht_add_replace. Readers (the redirect) only take the
 * memb-flavour read lock, which writes no shared memory. An entry taken out
 * of the table is put on a retire list (under a mutex: retiring is rare, a
 * change of a link) and freed by cache_reclaim after a grace period, so an
 * entry carries no rcu_head: it is 20 bytes plus its code and URL (and 8
 * for an expiry time, only when the link has one: misses and most links do
 * not), rounded up to 8 and carved from 1 MiB blocks (no malloc header per
 * entry). The table has 16-byte buckets, at most two entries to one (sized
 * by cache_reclaim), so a cached link with a 7-character code and no
 * expiry costs about 31 bytes beyond its URL, plus 8 to 16 for its share
 * of the buckets. Freed entries go to a free list of their size class and
 * are reused. The hash is
 * SipHash under a random per-process key so clients cannot aim codes at one
 * bucket. A link with a custom domain keeps it after its URL (a length
 * byte and the host); a link with controls (password, A/B variants, a click
 * limit) is only flagged: the redirect reads such a link from the store.
 * The table is bounded by entry count, and remembered misses by an
 * eighth of it, so a scan of random codes cannot crowd out real links; when
 * full, new entries are simply not cached and lookups go to the store. */
#include "cache.h"

#include <pthread.h>
#include <stddef.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/rculfhash.h>
#include <urcu/urcu-memb.h>

#include "codes.h"
#include "banned.h"

#define F_STATE 0x03        /* enum link_state */
#define F_PERMANENT 0x04
#define F_MISS 0x08
#define F_EXPIRES 0x10      /* data starts with an 8-byte expiry time */
#define F_DOMAIN 0x20       /* after the URL: a length byte and the custom domain */
#define F_CONTROLLED 0x40   /* password, variants or max_clicks (link_controlled) */

struct entry {
    struct cds_lfht_node node;
    uint16_t url_len;       /* URL_MAX is 8192 */
    uint8_t code_len;
    uint8_t flags;
    char data[];            /* [expiry (ms, 8 bytes) if F_EXPIRES], code, url,
                               [domain length (1 byte), domain if F_DOMAIN]; no terminators */
};

/* An entry's bytes: its header up to 'data' (20), not sizeof (24, padded
 * to the node's alignment), then what 'data' holds. */
#define ENTRY_HEAD offsetof(struct entry, data)

#define SLAB_BLOCK (1u << 20)
#define SLAB_GRAIN 8
#define SLAB_CLASSES \
    ((sizeof(struct entry) + 8 + CODE_MAX + 8192 + 256 + SLAB_GRAIN) / SLAB_GRAIN + 1)

/* Memory for entries: bump allocation from blocks, reuse by size class.
 * Written by hand because entries are small and many; a general allocator
 * spends 8-24 bytes on each. */
struct slab {
    pthread_mutex_t mu;
    char *block;                    /* the block being carved */
    size_t used;
    char **blocks;                  /* every block, for cache_free */
    size_t nblocks, cap_blocks;
    void *free_list[SLAB_CLASSES];  /* freed entries, by size class */
};

struct cache {
    struct slab slab;
    struct cds_lfht *ht;
    uint8_t key[crypto_shorthash_KEYBYTES];
    size_t max_entries;
    int64_t miss_ttl;
    atomic_size_t count;
    atomic_size_t misses;           /* remembered misses among count */
    atomic_size_t bytes;            /* the entries in the table, as carved */
    pthread_mutex_t retire_mu;
    struct entry **retired;         /* out of the table, waiting for a grace period */
    size_t nretired, cap_retired;
    unsigned long buckets;          /* the size cache_reclaim last resized the table to */
};

/* Hit and miss counters, one block per registered thread, each written by
 * its own thread only; blocks live until exit so a scrape may read them. */
struct counters {
    _Atomic uint64_t hits, misses;
    struct counters *next;
};

static pthread_mutex_t counters_mu = PTHREAD_MUTEX_INITIALIZER;
static struct counters *all_counters;
static _Thread_local struct counters *my_counters;

static void count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

struct lookup_key {
    const char *code;
    size_t n;
};

static unsigned long hash_code(const struct cache *c, const char *code, size_t n)
{
    uint64_t h;
    crypto_shorthash((unsigned char *)&h, (const unsigned char *)code, n, c->key);
    return (unsigned long)h;
}

static const char *entry_code(const struct entry *e);

static size_t entry_size(const struct entry *e)
{
    size_t n = ENTRY_HEAD + (e->flags & F_EXPIRES ? 8 : 0) + e->code_len + e->url_len;
    if (e->flags & F_DOMAIN)
        n += 1 + (uint8_t)entry_code(e)[e->code_len + e->url_len];
    return n;
}

static const char *entry_code(const struct entry *e)
{
    return e->data + (e->flags & F_EXPIRES ? 8 : 0);
}

static int64_t entry_expires(const struct entry *e)
{
    int64_t t = 0;
    if (e->flags & F_EXPIRES)
        memcpy(&t, e->data, 8);
    return t;
}

static int match(struct cds_lfht_node *node, const void *key)
{
    const struct entry *e = caa_container_of(node, struct entry, node);
    const struct lookup_key *k = key;
    return e->code_len == k->n && memcmp(entry_code(e), k->code, k->n) == 0;
}

static size_t slab_class(size_t size)
{
    return (size + SLAB_GRAIN - 1) / SLAB_GRAIN;
}

/* What an entry takes of its slab block. */
static size_t entry_bytes(const struct entry *e)
{
    return slab_class(entry_size(e)) * SLAB_GRAIN;
}

static void *slab_alloc(struct slab *s, size_t size)
{
    size_t cls = slab_class(size);
    size_t bytes = cls * SLAB_GRAIN;
    pthread_mutex_lock(&s->mu);
    void *p = s->free_list[cls];
    if (p) {
        memcpy(&s->free_list[cls], p, sizeof(void *));
    } else {
        if (!s->block || s->used + bytes > SLAB_BLOCK) {
            if (s->nblocks == s->cap_blocks) {
                size_t cap = s->cap_blocks ? s->cap_blocks * 2 : 16;
                char **b = realloc(s->blocks, cap * sizeof(*b));
                if (!b)
                    abort();
                s->blocks = b;
                s->cap_blocks = cap;
            }
            s->block = aligned_alloc(SLAB_GRAIN, SLAB_BLOCK);
            if (!s->block)
                abort();
            s->blocks[s->nblocks++] = s->block;
            s->used = 0;
        }
        p = s->block + s->used;
        s->used += bytes;
    }
    pthread_mutex_unlock(&s->mu);
    return p;
}

/* Only once no reader can see 'p'. */
static void slab_free(struct slab *s, void *p, size_t size)
{
    size_t cls = slab_class(size);
    pthread_mutex_lock(&s->mu);
    memcpy(p, &s->free_list[cls], sizeof(void *));
    s->free_list[cls] = p;
    pthread_mutex_unlock(&s->mu);
}

static struct entry *entry_of(struct cds_lfht_node *node)
{
    return caa_container_of(node, struct entry, node);
}

/* An entry that left the table: freed after the next grace period. */
static void retire(struct cache *c, struct entry *e)
{
    atomic_fetch_sub(&c->count, 1);
    atomic_fetch_sub(&c->bytes, entry_bytes(e));
    if (e->flags & F_MISS)
        atomic_fetch_sub(&c->misses, 1);
    pthread_mutex_lock(&c->retire_mu);
    if (c->nretired == c->cap_retired) {
        size_t cap = c->cap_retired ? c->cap_retired * 2 : 64;
        struct entry **r = realloc(c->retired, cap * sizeof(*r));
        if (!r)
            abort();
        c->retired = r;
        c->cap_retired = cap;
    }
    c->retired[c->nretired++] = e;
    pthread_mutex_unlock(&c->retire_mu);
}

/* The table is sized here, by the housekeeping, not by liburcu's automatic
 * resizing: that runs lazily (a background thread, a grace period per
 * doubling) and lagged far behind a cache filled at 100,000 links a second,
 * leaving lookups to walk chains of hundreds (measured: 57 % of a redirect's
 * CPU at 1 M links); and it aims at a bucket per entry, where a bucket per
 * two entries costs 8 bytes less per link and a lookup barely more (the
 * chain is compared by hash before any key is). It only grows. */
#define ENTRIES_PER_BUCKET 2

static void size_buckets(struct cache *c)
{
    size_t n = atomic_load_explicit(&c->count, memory_order_relaxed);
    unsigned long want = c->buckets ? c->buckets : 1024;
    while (want * ENTRIES_PER_BUCKET < n)
        want *= 2;
    if (want > c->buckets) {
        cds_lfht_resize(c->ht, want);
        c->buckets = want;
    }
}

void cache_reclaim(struct cache *c)
{
    size_buckets(c);
    pthread_mutex_lock(&c->retire_mu);
    struct entry **r = c->retired;
    size_t n = c->nretired;
    c->retired = NULL;
    c->nretired = c->cap_retired = 0;
    pthread_mutex_unlock(&c->retire_mu);
    if (!n) {
        free(r);
        return;
    }
    urcu_memb_synchronize_rcu();    /* every reader that could see them has left */
    for (size_t i = 0; i < n; i++)
        slab_free(&c->slab, r[i], entry_size(r[i]));
    free(r);
}

struct cache *cache_new(size_t max_entries, int64_t miss_ttl_ms)
{
    struct cache *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    randombytes_buf(c->key, sizeof(c->key));
    c->max_entries = max_entries;
    c->miss_ttl = miss_ttl_ms;
    pthread_mutex_init(&c->retire_mu, NULL);
    pthread_mutex_init(&c->slab.mu, NULL);
    c->ht = cds_lfht_new_flavor(1024, 1024, 0, 0, &urcu_memb_flavor, NULL);
    if (!c->ht)
        abort();
    return c;
}

void cache_free(struct cache *c)
{
    if (!c)
        return;
    cache_clear(c);
    cache_reclaim(c);
    cds_lfht_destroy(c->ht, NULL);
    pthread_mutex_destroy(&c->retire_mu);
    for (size_t i = 0; i < c->slab.nblocks; i++)
        free(c->slab.blocks[i]);
    free(c->slab.blocks);
    pthread_mutex_destroy(&c->slab.mu);
    free(c);
}

void cache_thread_register(void)
{
    urcu_memb_register_thread();
    if (my_counters)
        return;
    pthread_mutex_lock(&counters_mu);
    my_counters = calloc(1, sizeof(*my_counters));
    if (!my_counters)
        abort();
    my_counters->next = all_counters;
    all_counters = my_counters;
    pthread_mutex_unlock(&counters_mu);
}

void cache_counts(const struct cache *c, uint64_t *hits, uint64_t *misses)
{
    (void)c;
    *hits = *misses = 0;
    pthread_mutex_lock(&counters_mu);
    for (struct counters *k = all_counters; k; k = k->next) {
        *hits += atomic_load_explicit(&k->hits, memory_order_relaxed);
        *misses += atomic_load_explicit(&k->misses, memory_order_relaxed);
    }
    pthread_mutex_unlock(&counters_mu);
}

/* At exit: the counter blocks of threads that have ended. */
static void __attribute__((destructor)) free_counters(void)
{
    pthread_mutex_lock(&counters_mu);
    while (all_counters) {
        struct counters *next = all_counters->next;
        free(all_counters);
        all_counters = next;
    }
    pthread_mutex_unlock(&counters_mu);
}

void cache_thread_unregister(void) { urcu_memb_unregister_thread(); }
void cache_read_lock(void) { urcu_memb_read_lock(); }
void cache_read_unlock(void) { urcu_memb_read_unlock(); }

bool cache_get(struct cache *c, const char *code, size_t n, int64_t now_ms,
               struct cache_view *out)
{
    struct lookup_key k = {code, n};
    struct cds_lfht_iter it;
    cds_lfht_lookup(c->ht, hash_code(c, code, n), match, &k, &it);
    struct cds_lfht_node *node = cds_lfht_iter_get_node(&it);
    const struct entry *e = node ? entry_of(node) : NULL;
    int64_t expires = e ? entry_expires(e) : 0;
    if (!e || ((e->flags & F_MISS) && now_ms >= expires)) {
        if (my_counters)
            count(&my_counters->misses);
        return false;
    }
    if (my_counters)
        count(&my_counters->hits);
    out->miss = e->flags & F_MISS;
    out->url = e->url_len ? entry_code(e) + e->code_len : NULL;
    out->url_len = e->url_len;
    out->expires_at = expires;
    out->state = e->flags & F_STATE;
    out->permanent = e->flags & F_PERMANENT;
    out->controlled = e->flags & F_CONTROLLED;
    out->domain = NULL;
    out->domain_len = 0;
    if (e->flags & F_DOMAIN) {
        const char *d = entry_code(e) + e->code_len + e->url_len;
        out->domain_len = (uint8_t)d[0];
        out->domain = d + 1;
    }
    return true;
}

/* Replaces whatever is cached under the entry's code. */
static void publish(struct cache *c, struct entry *e)
{
    struct lookup_key k = {entry_code(e), e->code_len};
    atomic_fetch_add(&c->count, 1);
    atomic_fetch_add(&c->bytes, entry_bytes(e));
    if (e->flags & F_MISS)
        atomic_fetch_add(&c->misses, 1);
    urcu_memb_read_lock();
    struct cds_lfht_node *old =
        cds_lfht_add_replace(c->ht, hash_code(c, k.code, k.n), match, &k, &e->node);
    urcu_memb_read_unlock();
    if (old)
        retire(c, entry_of(old));
}

/* Adds the entry only where nothing valid is cached: absent, or a miss whose
 * time is up (swapped with cds_lfht_replace, which fails if that very node
 * was changed meanwhile). Otherwise the entry is dropped. */
static void fill(struct cache *c, struct entry *e, int64_t now_ms)
{
    struct lookup_key k = {entry_code(e), e->code_len};
    unsigned long hash = hash_code(c, k.code, k.n);
    struct entry *old_entry = NULL;
    bool used = false;
    urcu_memb_read_lock();
    struct cds_lfht_iter it;
    cds_lfht_lookup(c->ht, hash, match, &k, &it);
    struct cds_lfht_node *old = cds_lfht_iter_get_node(&it);
    if (!old) {
        used = cds_lfht_add_unique(c->ht, hash, match, &k, &e->node) == &e->node;
    } else {
        struct entry *oe = entry_of(old);
        if ((oe->flags & F_MISS) && now_ms >= entry_expires(oe) &&
            cds_lfht_replace(c->ht, &it, hash, match, &k, &e->node) == 0) {
            used = true;
            old_entry = oe;
        }
    }
    urcu_memb_read_unlock();
    if (!used) {
        slab_free(&c->slab, e, entry_size(e));
        return;
    }
    atomic_fetch_add(&c->count, 1);
    atomic_fetch_add(&c->bytes, entry_bytes(e));
    if (e->flags & F_MISS)
        atomic_fetch_add(&c->misses, 1);
    if (old_entry)
        retire(c, old_entry);
}

static struct entry *entry_new(struct cache *c, const char *code, size_t n, const char *url,
                               size_t url_len, int64_t expires, uint8_t flags, const char *domain)
{
    size_t x = expires ? 8 : 0;
    size_t dn = domain ? strlen(domain) : 0;
    if (dn > 255)
        dn = 0;     /* cannot happen (links_domain_check) */
    struct entry *e = slab_alloc(&c->slab, ENTRY_HEAD + x + n + url_len + (dn ? 1 + dn : 0));
    e->flags = (uint8_t)(flags | (expires ? F_EXPIRES : 0) | (dn ? F_DOMAIN : 0));
    if (dn) {
        e->data[x + n + url_len] = (char)(uint8_t)dn;
        memcpy(e->data + x + n + url_len + 1, domain, dn);
    }
    e->code_len = (uint8_t)n;
    e->url_len = (uint16_t)url_len;
    if (expires)
        memcpy(e->data, &expires, 8);
    memcpy(e->data + x, code, n);
    if (url_len)
        memcpy(e->data + x + n, url, url_len);
    return e;
}

static struct entry *entry_of_link(struct cache *c, const struct link *l, size_t n)
{
    /* What the redirect sends: the destination with its UTM merged, if any. */
    const char *url = l->url && l->dest ? l->dest : l->url;
    size_t url_len = url ? strlen(url) : 0;
    int state = l->state;
    if (url_len > UINT16_MAX) {
        url_len = 0;    /* cannot happen (URL_MAX); never serve a cut URL */
        state = LINK_DISABLED;
    }
    if (!l->url && state == LINK_ACTIVE)
        state = LINK_DELETED;   /* swept: nothing to redirect to */
    return entry_new(c, l->code, n, url, url_len, l->expires_at,
                     (uint8_t)((state & F_STATE) | (l->permanent ? F_PERMANENT : 0) |
                               (link_controlled(l) ? F_CONTROLLED : 0)),
                     l->domain);
}

static bool full(const struct cache *c)
{
    return atomic_load(&c->count) >= c->max_entries;
}

void cache_put(struct cache *c, const struct link *l)
{
    size_t n = strlen(l->code);
    if (n > CODE_MAX)
        return;
    if (full(c)) {
        cache_remove(c, l->code, n);    /* never leave a stale entry behind */
        return;
    }
    publish(c, entry_of_link(c, l, n));
}

void cache_fill(struct cache *c, const struct link *l, int64_t now_ms)
{
    size_t n = strlen(l->code);
    if (n > CODE_MAX || full(c))
        return;
    fill(c, entry_of_link(c, l, n), now_ms);
}

void cache_fill_miss(struct cache *c, const char *code, size_t n, int64_t now_ms)
{
    if (n > CODE_MAX || c->miss_ttl <= 0 || full(c) ||
        atomic_load(&c->misses) >= c->max_entries / 8)
        return;
    fill(c, entry_new(c, code, n, NULL, 0, now_ms + c->miss_ttl, F_MISS, NULL), now_ms);
}

void cache_remove(struct cache *c, const char *code, size_t n)
{
    struct lookup_key k = {code, n};
    struct cds_lfht_iter it;
    urcu_memb_read_lock();
    cds_lfht_lookup(c->ht, hash_code(c, code, n), match, &k, &it);
    struct cds_lfht_node *node = cds_lfht_iter_get_node(&it);
    bool gone = node && cds_lfht_del(c->ht, node) == 0;
    urcu_memb_read_unlock();
    if (gone)
        retire(c, entry_of(node));
}

void cache_clear(struct cache *c)
{
    struct cds_lfht_iter it;
    struct cds_lfht_node *node;
    urcu_memb_read_lock();
    cds_lfht_for_each(c->ht, &it, node) {
        if (cds_lfht_del(c->ht, node) == 0)
            retire(c, entry_of(node));
    }
    urcu_memb_read_unlock();
}

uint64_t cache_entries(const struct cache *c) { return atomic_load(&c->count); }
uint64_t cache_entry_bytes(const struct cache *c) { return atomic_load(&c->bytes); }
