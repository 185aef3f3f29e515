/* cache.c - the redirect cache: an open-addressed hash table read under RCU.
 *
 * DESIGN
 * The table is an array of 8-byte slots, probed linearly: a slot is empty,
 * a tombstone, or an entry's address with the top 16 bits of its code's
 * hash beside it (the tag), so a lookup reads an entry only when the tags
 * match, and its slots lie side by side, eight to a cache line. Written by
 * hand instead of liburcu's cds_lfht because a lookup here can be split in
 * steps that load memory without waiting (cache_prefetch): the event loop
 * starts the slot loads of every request a poll returned, then the entry
 * loads, then answers, so a batch of lookups waits for memory about once
 * instead of once per bucket and chain node each (with lfht, a large share
 * of an event loop's time at 1-10 M links, in misses of the cache and the
 * TLB: bench/HISTORY.md, "after commit fc7c4aa").
 *
 * Entries are immutable once published: a change is a new entry stored in
 * its slot with one atomic write. Readers only take the memb-flavour read
 * lock, which writes no shared memory. Writers take a mutex. An entry or a
 * table taken out is put on a retire list and freed by cache_reclaim after a
 * grace period, so an entry carries no rcu_head or chain pointer: it is 4
 * bytes plus its code and URL (and 8 for an expiry time, only when the link
 * has one: misses and most links do not), rounded up to 8 and carved from
 * 2 MiB blocks (no malloc header per entry). Freed entries go to a free list
 * of their size class and are reused. Blocks and large tables ask for huge
 * pages (madvise, a hint): a lookup touches a slot and an entry at random
 * places in hundreds of MiB, and with 4 KiB pages each is also a TLB miss,
 * whose page walk a prefetch must wait for too. The table doubles when three
 * quarters of its slots are used (tombstones included), so a link costs 8
 * bytes over 0.375-0.75 of a slot: 10.7-21 bytes. A small table grows at
 * once, in the writer that fills it; a large one (more than 256 Ki slots) is
 * copied by cache_reclaim, off the event loops, 4,096 slots per hold of the
 * writer lock, with writers changing both tables meanwhile; fills go on up
 * to nine tenths of its slots. The hash is SipHash under a random
 * per-process key so clients cannot aim codes at one slot. A link with a
 * custom domain keeps it after its URL (a length byte and the host); a link
 * with controls (password, A/B variants, a click limit) is only flagged: the
 * redirect reads such a link from the store. The cache is bounded by entry
 * count, and remembered misses by an eighth of it, so a scan of random codes
 * cannot crowd out real links; when full, new entries are simply not cached
 * and lookups go to the store. Misses all live for one miss_ttl, so a ring of
 * them in the order they were made (writer side only, under the writer lock)
 * tells which expired first: each new miss first takes a few expired ones
 * out, and a scan's misses make room for later ones once their time is up. */
#include "redirect/cache.h"

#include <pthread.h>
#include <stddef.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <urcu/urcu-memb.h>

#include "links/codes.h"
#include "base/banned.h"

/* ThreadSanitizer does not see liburcu's grace periods (a reader's lock and
 * unlock are plain stores that synchronize_rcu orders with membarrier), so
 * it takes a free after the grace period for a race with the reader that
 * last saw the memory. Told here what RCU guarantees: each read-side
 * section ends with a release, and the reclaimer acquires after the grace
 * period, by which time every section that could see the memory has ended. */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
static char rcu_order;
#define READER_LEAVES() __tsan_release(&rcu_order)
#define GRACE_PERIOD_ENDS() __tsan_acquire(&rcu_order)
#else
#define READER_LEAVES() ((void)0)
#define GRACE_PERIOD_ENDS() ((void)0)
#endif

#define F_STATE 0x03 /* enum link_state */
#define F_PERMANENT 0x04
#define F_MISS 0x08
#define F_EXPIRES 0x10    /* data starts with an 8-byte expiry time */
#define F_DOMAIN 0x20     /* after the URL: a length byte and the custom domain */
#define F_CONTROLLED 0x40 /* password, variants or max_clicks (link_controlled) */
#define F_UNTRACKED 0x80  /* track: false, its visits are not recorded */

struct entry {
    uint16_t url_len; /* URL_MAX is 8192 */
    uint8_t code_len;
    uint8_t flags;
    char data[]; /* [expiry (ms, 8 bytes) if F_EXPIRES], code, url,
                               [domain length (1 byte), domain if F_DOMAIN]; no terminators */
};

#define ENTRY_HEAD offsetof(struct entry, data)

#define HUGE_PAGE (2u << 20)
#define SLAB_BLOCK HUGE_PAGE
#define SLAB_GRAIN 8
#define SLAB_CLASSES ((ENTRY_HEAD + 8 + CODE_MAX + 8192 + 256 + SLAB_GRAIN) / SLAB_GRAIN + 1)

/* Zeroed memory for the slab and the table, 'align' a power of two; from
 * HUGE_PAGE on, asks for huge pages (a hint: fine if refused). */
static void *zalloc(size_t bytes, size_t align)
{
    bytes = (bytes + align - 1) / align * align;
    void *p = aligned_alloc(align, bytes);
    if (!p)
        abort();
    if (align >= HUGE_PAGE)
        madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

/* Memory for entries: bump allocation from blocks, reuse by size class.
 * Written by hand because entries are small and many; a general allocator
 * spends 8-24 bytes on each. */
struct slab {
    pthread_mutex_t mu;
    char *block; /* the block being carved */
    size_t used;
    char **blocks; /* every block, for cache_free */
    size_t nblocks, cap_blocks;
    void *free_list[SLAB_CLASSES]; /* freed entries, by size class */
};

/* A slot: 0 empty, TOMB a removed entry's, else the entry's address (below
 * 2^48, a multiple of 8) with the hash's top 16 bits above it. */
#define TOMB 1u
#define ADDR_MASK ((UINT64_C(1) << 48) - 1)
#define MIN_SLOTS 1024
#define GROW_HERE (1u << 18) /* tables this small grow in the writer */
#define COPY_CHUNK 4096      /* slots cache_reclaim copies per hold of the lock */

struct table {
    size_t mask;                          /* slots - 1; slots a power of two */
    size_t used;                          /* entries and tombstones, under the writer lock */
    _Alignas(64) _Atomic uint64_t slot[]; /* eight to a cache line */
};

/* A remembered miss, as cache_fill_miss made it: all live for one miss_ttl,
 * so the ring of them in the order they were made is in the order they
 * expire, and the expired ones are taken from its front. */
struct missq {
    int64_t expires;
    uint8_t n;
    char code[CODE_MAX];
};

#define MISS_SWEEP 64 /* expired misses cache_fill_miss takes out at most */

struct cache {
    struct slab slab;
    struct table *_Atomic table;
    struct table *next; /* while cache_reclaim copies the table: its copy */
    pthread_mutex_t mu; /* writers: the tables and the counts */
    uint8_t key[crypto_shorthash_KEYBYTES];
    size_t max_entries;
    int64_t miss_ttl;
    atomic_size_t count;
    atomic_size_t misses; /* remembered misses among count */
    atomic_size_t bytes;  /* the entries in the table, as carved */
    struct missq *mq;     /* remembered misses, oldest first: a ring, under mu */
    size_t mq_head, mq_len, mq_cap;
    pthread_mutex_t retire_mu;
    struct entry **retired; /* out of the table, waiting for a grace period */
    size_t nretired, cap_retired;
    struct table **old_tables; /* replaced tables, waiting likewise */
    size_t nold, cap_old;
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

uint64_t cache_hash(const struct cache *c, const char *code, size_t n)
{
    uint64_t h;
    crypto_shorthash((unsigned char *)&h, (const unsigned char *)code, n, c->key);
    return h;
}

static uint64_t tag_of(uint64_t hash) { return hash & ~ADDR_MASK; }
static struct entry *entry_at(uint64_t slot)
{
    return (struct entry *)(uintptr_t)(slot & ADDR_MASK);
}
static bool holds(uint64_t slot) { return slot > TOMB; }

static const char *entry_code(const struct entry *e)
{
    return e->data + (e->flags & F_EXPIRES ? 8 : 0);
}

static size_t entry_size(const struct entry *e)
{
    size_t n = ENTRY_HEAD + (e->flags & F_EXPIRES ? 8 : 0) + e->code_len + e->url_len;
    if (e->flags & F_DOMAIN)
        n += 1 + (uint8_t)entry_code(e)[e->code_len + e->url_len];
    return n;
}

static int64_t entry_expires(const struct entry *e)
{
    int64_t t = 0;
    if (e->flags & F_EXPIRES)
        memcpy(&t, e->data, 8);
    return t;
}

static bool entry_is(const struct entry *e, const char *code, size_t n)
{
    return e->code_len == n && memcmp(entry_code(e), code, n) == 0;
}

static size_t slab_class(size_t size) { return (size + SLAB_GRAIN - 1) / SLAB_GRAIN; }

/* What an entry takes of its slab block. */
static size_t entry_bytes(const struct entry *e) { return slab_class(entry_size(e)) * SLAB_GRAIN; }

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
            s->block = zalloc(SLAB_BLOCK, HUGE_PAGE);
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

static void grow_list(void *list, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return;
    size_t want = *cap ? *cap * 2 : 64;
    void *p = realloc(*(void **)list, want * size);
    if (!p)
        abort();
    *(void **)list = p;
    *cap = want;
}

/* An entry that left the table: freed after the next grace period. */
static void retire(struct cache *c, struct entry *e)
{
    atomic_fetch_sub(&c->count, 1);
    atomic_fetch_sub(&c->bytes, entry_bytes(e));
    if (e->flags & F_MISS)
        atomic_fetch_sub(&c->misses, 1);
    pthread_mutex_lock(&c->retire_mu);
    grow_list(&c->retired, &c->cap_retired, c->nretired, sizeof(*c->retired));
    c->retired[c->nretired++] = e;
    pthread_mutex_unlock(&c->retire_mu);
}

static void retire_table(struct cache *c, struct table *t)
{
    pthread_mutex_lock(&c->retire_mu);
    grow_list(&c->old_tables, &c->cap_old, c->nold, sizeof(*c->old_tables));
    c->old_tables[c->nold++] = t;
    pthread_mutex_unlock(&c->retire_mu);
}

static struct table *table_new(size_t slots)
{
    size_t bytes = sizeof(struct table) + slots * sizeof(uint64_t);
    struct table *t = zalloc(bytes, bytes < HUGE_PAGE ? 64 : HUGE_PAGE);
    t->mask = slots - 1;
    return t;
}

static struct table *table_of(const struct cache *c)
{
    return atomic_load_explicit(&((struct cache *)c)->table, memory_order_acquire);
}

/* ---- reading: inside cache_read_lock ---- */

/* The slot holding the code, or NULL. */
static const struct entry *find(const struct table *t, uint64_t hash, const char *code, size_t n)
{
    uint64_t tag = tag_of(hash);
    for (size_t i = hash & t->mask, probes = 0; probes <= t->mask;
         i = (i + 1) & t->mask, probes++) {
        uint64_t s = atomic_load_explicit(&t->slot[i], memory_order_acquire);
        if (!s)
            return NULL;
        if (holds(s) && tag_of(s) == tag && entry_is(entry_at(s), code, n))
            return entry_at(s);
    }
    return NULL;
}

void cache_prefetch(const struct cache *c, uint64_t hash, int step)
{
    const struct table *t = table_of(c);
    size_t i = hash & t->mask;
    if (step == 0) {
        __builtin_prefetch(&t->slot[i]);
        return;
    }
    /* The entries whose tags match, up to the first empty slot (almost
     * always in the line step 0 loaded; the probe stops at 8 slots). */
    uint64_t tag = tag_of(hash);
    for (int k = 0; k < 8; k++, i = (i + 1) & t->mask) {
        uint64_t s = atomic_load_explicit(&t->slot[i], memory_order_acquire);
        if (!s)
            return;
        if (holds(s) && tag_of(s) == tag) {
            const char *e = (const char *)entry_at(s);
            __builtin_prefetch(e);
            __builtin_prefetch(e + 64);
        }
    }
}

bool cache_get_hashed(struct cache *c, const char *code, size_t n, uint64_t hash, int64_t now_ms,
                      struct cache_view *out)
{
    const struct entry *e = find(table_of(c), hash, code, n);
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
    out->untracked = e->flags & F_UNTRACKED;
    out->domain = NULL;
    out->domain_len = 0;
    if (e->flags & F_DOMAIN) {
        const char *d = entry_code(e) + e->code_len + e->url_len;
        out->domain_len = (uint8_t)d[0];
        out->domain = d + 1;
    }
    return true;
}

bool cache_get(struct cache *c, const char *code, size_t n, int64_t now_ms, struct cache_view *out)
{
    return cache_get_hashed(c, code, n, cache_hash(c, code, n), now_ms, out);
}

/* ---- writing: under c->mu ---- */

/* Where the code is (*at, true) or where it would go (*at, false: the first
 * tombstone or empty slot on its probe). The table is never full. */
static bool locate(const struct table *t, uint64_t hash, const char *code, size_t n, size_t *at)
{
    uint64_t tag = tag_of(hash);
    size_t free_at = SIZE_MAX;
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
        uint64_t s = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
        if (!s) {
            *at = free_at != SIZE_MAX ? free_at : i;
            return false;
        }
        if (!holds(s)) {
            if (free_at == SIZE_MAX)
                free_at = i;
        } else if (tag_of(s) == tag && entry_is(entry_at(s), code, n)) {
            *at = i;
            return true;
        }
    }
}

static uint64_t slot_of(const struct entry *e, uint64_t hash)
{
    if ((uintptr_t)e & ~ADDR_MASK)
        abort(); /* user-space addresses are below 2^47 on x86-64, 2^48 on arm64 */
    return tag_of(hash) | (uint64_t)(uintptr_t)e;
}

/* Stores slot value 's' at 'at', counting the slot used unless it was
 * (a tombstone's, or the entry's it replaces); returns what was there. */
static uint64_t set_slot(struct table *t, size_t at, uint64_t s)
{
    uint64_t old = atomic_load_explicit(&t->slot[at], memory_order_relaxed);
    if (!old)
        t->used++;
    atomic_store_explicit(&t->slot[at], s, memory_order_release);
    return old;
}

/* Stores 'e' in its code's slot of 't': returns what it replaced, or NULL
 * (added; the caller made room). */
static struct entry *table_put(struct table *t, struct entry *e, uint64_t hash)
{
    size_t at;
    bool found = locate(t, hash, entry_code(e), e->code_len, &at);
    uint64_t old = set_slot(t, at, slot_of(e, hash));
    return found ? entry_at(old) : NULL;
}

/* Takes the code out of 't': returns its entry, or NULL. */
static struct entry *table_del(struct table *t, uint64_t hash, const char *code, size_t n)
{
    size_t at;
    if (!locate(t, hash, code, n, &at))
        return NULL;
    struct entry *e = entry_at(atomic_load_explicit(&t->slot[at], memory_order_relaxed));
    /* A tombstone keeps later entries of the probe reachable; where the next
     * slot is empty no probe goes on past this one, so it and the tombstones
     * just before it can be emptied. */
    uint64_t mark = TOMB;
    if (!atomic_load_explicit(&t->slot[(at + 1) & t->mask], memory_order_relaxed)) {
        mark = 0;
        t->used--;
        for (size_t i = (at - 1) & t->mask;
             atomic_load_explicit(&t->slot[i], memory_order_relaxed) == TOMB;
             i = (i - 1) & t->mask) {
            atomic_store_explicit(&t->slot[i], 0, memory_order_release);
            t->used--;
        }
    }
    atomic_store_explicit(&t->slot[at], mark, memory_order_release);
    return e;
}

/* Copies the entries of slots [from, to) of the table into c->next, but not
 * over a code already there (a writer put it there since, newer). */
static void migrate(struct cache *c, size_t from, size_t to)
{
    const struct table *t = table_of(c);
    struct table *nt = c->next;
    for (size_t i = from; i < to; i++) {
        uint64_t s = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
        if (!holds(s))
            continue;
        struct entry *e = entry_at(s);
        uint64_t h = cache_hash(c, entry_code(e), e->code_len);
        size_t at;
        if (!locate(nt, h, entry_code(e), e->code_len, &at))
            set_slot(nt, at, s);
    }
}

/* Whether the table needs a copy: once three quarters of its slots are used
 * (tombstones included), then with twice the slots, or as many when most
 * are tombstones. 0 for none. */
static size_t copy_size(const struct cache *c)
{
    const struct table *t = table_of(c);
    size_t slots = t->mask + 1;
    if (t->used * 4 < slots * 3)
        return 0;
    return atomic_load(&c->count) * 8 >= slots * 3 ? slots * 2 : slots;
}

/* The new table takes the old one's place; readers still in the old one
 * finish there (it is freed after a grace period). */
static void switch_tables(struct cache *c)
{
    struct table *t = table_of(c);
    atomic_store_explicit(&c->table, c->next, memory_order_release);
    c->next = NULL;
    retire_table(c, t);
}

/* Room for one more: a small table is copied here at once; a large one is
 * left to cache_reclaim, and false once it is at nine tenths. */
static bool room(struct cache *c)
{
    const struct table *t = table_of(c);
    size_t want = c->next ? 0 : copy_size(c);
    if (want && t->mask + 1 <= GROW_HERE) {
        c->next = table_new(want);
        migrate(c, 0, t->mask + 1);
        switch_tables(c);
        t = table_of(c);
    }
    return t->used * 10 < (t->mask + 1) * 9;
}

static void account(struct cache *c, const struct entry *e)
{
    atomic_fetch_add(&c->count, 1);
    atomic_fetch_add(&c->bytes, entry_bytes(e));
    if (e->flags & F_MISS)
        atomic_fetch_add(&c->misses, 1);
}

/* Under the writer lock: stores 'e' in the code's slot, replacing what is
 * there; with 'fill_only', only where nothing valid is (absent, or a miss
 * whose time is up). false when 'e' was not stored: refused, or no room.
 * While a copy is made, every change goes to both tables. */
static bool place(struct cache *c, struct entry *e, uint64_t hash, bool fill_only, int64_t now_ms)
{
    size_t at;
    const struct table *t = table_of(c);
    if (locate(t, hash, entry_code(e), e->code_len, &at)) {
        const struct entry *old =
            entry_at(atomic_load_explicit(&t->slot[at], memory_order_relaxed));
        if (fill_only && !((old->flags & F_MISS) && now_ms >= entry_expires(old)))
            return false;
    } else if (!room(c)) {
        return false;
    }
    account(c, e);
    if (c->next)
        table_put(c->next, e, hash);
    struct entry *old = table_put(table_of(c), e, hash);
    if (old)
        retire(c, old);
    return true;
}

static void drop(struct cache *c, struct entry *e) { slab_free(&c->slab, e, entry_size(e)); }

/* place() under the lock; an entry it did not store is freed at once (no
 * reader ever saw it). */
static void store(struct cache *c, struct entry *e, bool fill_only, int64_t now_ms)
{
    pthread_mutex_lock(&c->mu);
    bool stored = place(c, e, cache_hash(c, entry_code(e), e->code_len), fill_only, now_ms);
    pthread_mutex_unlock(&c->mu);
    if (!stored)
        drop(c, e);
}

static struct entry *entry_new(struct cache *c, const char *code, size_t n, const char *url,
                               size_t url_len, int64_t expires, uint8_t flags, const char *domain)
{
    size_t x = expires ? 8 : 0;
    size_t dn = domain ? strlen(domain) : 0;
    if (dn > 255)
        dn = 0; /* cannot happen (links_domain_check) */
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
        url_len = 0; /* cannot happen (URL_MAX); never serve a cut URL */
        state = LINK_DISABLED;
    }
    if (!l->url && state == LINK_ACTIVE)
        state = LINK_DELETED; /* swept: nothing to redirect to */
    return entry_new(c, l->code, n, url, url_len, l->expires_at,
                     (uint8_t)((state & F_STATE) | (l->permanent ? F_PERMANENT : 0) |
                               (link_controlled(l) ? F_CONTROLLED : 0) |
                               (l->untracked ? F_UNTRACKED : 0)),
                     l->domain);
}

static bool full(const struct cache *c) { return atomic_load(&c->count) >= c->max_entries; }

void cache_put(struct cache *c, const struct link *l)
{
    size_t n = strlen(l->code);
    if (n > CODE_MAX)
        return;
    if (full(c)) {
        cache_remove(c, l->code, n); /* never leave a stale entry behind */
        return;
    }
    /* Without room the code was not there either: nothing stale is left. */
    store(c, entry_of_link(c, l, n), false, 0);
}

void cache_fill(struct cache *c, const struct link *l, int64_t now_ms)
{
    size_t n = strlen(l->code);
    if (n > CODE_MAX || full(c))
        return;
    store(c, entry_of_link(c, l, n), true, now_ms);
}

/* Under the writer lock: takes out of the table the misses at the front of
 * the ring whose time is up (at most MISS_SWEEP), so that the bound on
 * misses counts the live ones only. A code whose miss was since replaced (by
 * a link, or a newer miss) or removed is left as it is. */
static void sweep_misses(struct cache *c, int64_t now_ms)
{
    for (int k = 0; k < MISS_SWEEP && c->mq_len; k++) {
        const struct missq *m = &c->mq[c->mq_head];
        if (m->expires > now_ms && m->expires <= now_ms + c->miss_ttl)
            return; /* live (or the clock stepped back: then it goes too) */
        uint64_t hash = cache_hash(c, m->code, m->n);
        const struct entry *e = find(table_of(c), hash, m->code, m->n);
        if (e && (e->flags & F_MISS) && entry_expires(e) == m->expires) {
            if (c->next)
                table_del(c->next, hash, m->code, m->n);
            retire(c, table_del(table_of(c), hash, m->code, m->n));
        }
        c->mq_head = (c->mq_head + 1) % c->mq_cap;
        c->mq_len--;
    }
}

/* Under the writer lock: appends a miss to the ring, which grows up to the
 * bound (an eighth of the cache) as misses come. */
static void push_miss(struct cache *c, const char *code, size_t n, int64_t expires)
{
    if (c->mq_len == c->mq_cap) {
        size_t cap = c->mq_cap ? c->mq_cap * 2 : 64;
        struct missq *q = malloc(cap * sizeof(*q));
        if (!q)
            abort();
        for (size_t i = 0; i < c->mq_len; i++)
            q[i] = c->mq[(c->mq_head + i) % c->mq_cap];
        free(c->mq);
        c->mq = q;
        c->mq_head = 0;
        c->mq_cap = cap;
    }
    struct missq *m = &c->mq[(c->mq_head + c->mq_len++) % c->mq_cap];
    m->expires = expires;
    m->n = (uint8_t)n;
    memcpy(m->code, code, n);
}

void cache_fill_miss(struct cache *c, const char *code, size_t n, int64_t now_ms)
{
    size_t bound = c->max_entries / 8;
    if (n > CODE_MAX || c->miss_ttl <= 0 || full(c) || bound == 0)
        return;
    int64_t expires = now_ms + c->miss_ttl;
    struct entry *e = entry_new(c, code, n, NULL, 0, expires, F_MISS, NULL);
    pthread_mutex_lock(&c->mu);
    sweep_misses(c, now_ms);
    /* The ring holds every miss made within one miss_ttl (some since
     * replaced), so this bounds the live misses too. */
    bool stored = c->mq_len < bound && place(c, e, cache_hash(c, code, n), true, now_ms);
    if (stored)
        push_miss(c, code, n, expires);
    pthread_mutex_unlock(&c->mu);
    if (!stored)
        drop(c, e);
}

void cache_remove(struct cache *c, const char *code, size_t n)
{
    uint64_t hash = cache_hash(c, code, n);
    pthread_mutex_lock(&c->mu);
    if (c->next)
        table_del(c->next, hash, code, n);
    struct entry *e = table_del(table_of(c), hash, code, n);
    if (e)
        retire(c, e);
    pthread_mutex_unlock(&c->mu);
}

void cache_clear(struct cache *c)
{
    pthread_mutex_lock(&c->mu);
    struct table *t = table_of(c);
    atomic_store_explicit(&c->table, table_new(MIN_SLOTS), memory_order_release);
    for (size_t i = 0; i <= t->mask; i++) {
        uint64_t s = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
        if (holds(s))
            retire(c, entry_at(s));
    }
    retire_table(c, t);
    if (c->next) {
        retire_table(c, c->next); /* a copy under way: cache_reclaim sees it gone */
        c->next = NULL;
    }
    c->mq_head = c->mq_len = 0; /* their misses are gone with the table */
    pthread_mutex_unlock(&c->mu);
}

/* Copies a large table that needs it, a chunk of slots per hold of the
 * writer lock, so writers (fills on the event loops among them) wait at
 * most for a chunk; they change both tables meanwhile. The new table is
 * zeroed before the lock is taken: at ten million links it is 128 MiB,
 * whose zeroing every fill and change of the cache would wait for
 * (bench/HISTORY.md, "A cold cache of ten million links"). */
static void copy_table(struct cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t want = c->next ? 0 : copy_size(c);
    pthread_mutex_unlock(&c->mu);
    if (!want)
        return;
    struct table *nt = table_new(want);
    pthread_mutex_lock(&c->mu);
    if (c->next || copy_size(c) != want) { /* cleared, or grown more, meanwhile */
        pthread_mutex_unlock(&c->mu);
        free(nt);
        return;
    }
    c->next = nt;
    size_t slots = table_of(c)->mask + 1;
    pthread_mutex_unlock(&c->mu);
    for (size_t from = 0; from < slots; from += COPY_CHUNK) {
        pthread_mutex_lock(&c->mu);
        if (c->next != nt) { /* cleared meanwhile */
            pthread_mutex_unlock(&c->mu);
            break;
        }
        size_t to = from + COPY_CHUNK < slots ? from + COPY_CHUNK : slots;
        migrate(c, from, to);
        if (to == slots)
            switch_tables(c);
        pthread_mutex_unlock(&c->mu);
    }
}

void cache_reclaim(struct cache *c)
{
    copy_table(c);
    pthread_mutex_lock(&c->retire_mu);
    struct entry **r = c->retired;
    size_t n = c->nretired;
    struct table **old = c->old_tables;
    size_t nold = c->nold;
    c->retired = NULL;
    c->nretired = c->cap_retired = 0;
    c->old_tables = NULL;
    c->nold = c->cap_old = 0;
    pthread_mutex_unlock(&c->retire_mu);
    if (n || nold) {
        urcu_memb_synchronize_rcu(); /* every reader that could see them has left */
        GRACE_PERIOD_ENDS();
    }
    for (size_t i = 0; i < n; i++)
        drop(c, r[i]);
    for (size_t i = 0; i < nold; i++)
        free(old[i]);
    free(r);
    free(old);
}

struct cache *cache_new(size_t max_entries, int64_t miss_ttl_ms)
{
    struct cache *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    randombytes_buf(c->key, sizeof(c->key));
    c->max_entries = max_entries;
    c->miss_ttl = miss_ttl_ms;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->retire_mu, NULL);
    pthread_mutex_init(&c->slab.mu, NULL);
    atomic_init(&c->table, table_new(MIN_SLOTS));
    return c;
}

void cache_free(struct cache *c)
{
    if (!c)
        return;
    cache_clear(c);
    cache_reclaim(c);
    free(table_of(c));
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->retire_mu);
    for (size_t i = 0; i < c->slab.nblocks; i++)
        free(c->slab.blocks[i]);
    free(c->slab.blocks);
    pthread_mutex_destroy(&c->slab.mu);
    free(c->mq);
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
void cache_read_unlock(void)
{
    READER_LEAVES();
    urcu_memb_read_unlock();
}

uint64_t cache_entries(const struct cache *c) { return atomic_load(&c->count); }
uint64_t cache_entry_bytes(const struct cache *c) { return atomic_load(&c->bytes); }
