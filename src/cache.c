/* cache.c - the redirect cache on liburcu's lock-free RCU hash table.
 *
 * DESIGN
 * Entries are immutable once published: a change is a new entry swapped in
 * with cds_lfht_add_replace and the old one freed by call_rcu after every
 * reader has left. Readers (the redirect) only take the memb-flavour read
 * lock, which writes no shared memory. The hash is SipHash under a random
 * per-process key so clients cannot aim codes at one bucket. The table is
 * bounded by entry count; when full, new entries are simply not cached and
 * lookups fall through to the store. */
#include "cache.h"

#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/rculfhash.h>
#include <urcu/urcu-memb.h>

#include "banned.h"

struct entry {
    struct cds_lfht_node node;
    struct rcu_head rcu;
    int64_t expires_at;     /* the link's expiry, or when a cached miss is forgotten */
    uint32_t url_len;
    uint8_t code_len;
    uint8_t state;
    bool permanent;
    bool miss;
    char data[];            /* code, NUL, url, NUL */
};

struct cache {
    struct cds_lfht *ht;
    uint8_t key[crypto_shorthash_KEYBYTES];
    size_t max_entries;
    int64_t miss_ttl;
    atomic_size_t count;
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

static int match(struct cds_lfht_node *node, const void *key)
{
    const struct entry *e = caa_container_of(node, struct entry, node);
    const struct lookup_key *k = key;
    return e->code_len == k->n && memcmp(e->data, k->code, k->n) == 0;
}

static void free_entry(struct rcu_head *h)
{
    free(caa_container_of(h, struct entry, rcu));
}

struct cache *cache_new(size_t max_entries, int64_t miss_ttl_ms)
{
    struct cache *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    randombytes_buf(c->key, sizeof(c->key));
    c->max_entries = max_entries;
    c->miss_ttl = miss_ttl_ms;
    c->ht = cds_lfht_new_flavor(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                                &urcu_memb_flavor, NULL);
    if (!c->ht)
        abort();
    return c;
}

void cache_free(struct cache *c)
{
    if (!c)
        return;
    struct cds_lfht_iter it;
    struct cds_lfht_node *node;
    urcu_memb_read_lock();
    cds_lfht_for_each(c->ht, &it, node) {
        if (cds_lfht_del(c->ht, node) == 0)
            urcu_memb_call_rcu(&caa_container_of(node, struct entry, node)->rcu, free_entry);
    }
    urcu_memb_read_unlock();
    urcu_memb_barrier();
    cds_lfht_destroy(c->ht, NULL);
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
    if (!node) {
        if (my_counters)
            count(&my_counters->misses);
        return false;
    }
    const struct entry *e = caa_container_of(node, struct entry, node);
    if (e->miss && now_ms >= e->expires_at) {
        if (my_counters)
            count(&my_counters->misses);
        return false;
    }
    if (my_counters)
        count(&my_counters->hits);
    if (e->miss) {
        out->miss = true;
        out->url = NULL;
        out->url_len = 0;
        return true;
    }
    out->miss = false;
    out->url = e->url_len ? e->data + e->code_len + 1 : NULL;
    out->url_len = e->url_len;
    out->expires_at = e->expires_at;
    out->state = e->state;
    out->permanent = e->permanent;
    return true;
}

/* Replaces whatever is cached under the entry's code. */
static void publish(struct cache *c, struct entry *e)
{
    struct lookup_key k = {e->data, e->code_len};
    urcu_memb_read_lock();
    struct cds_lfht_node *old =
        cds_lfht_add_replace(c->ht, hash_code(c, e->data, e->code_len), match, &k, &e->node);
    urcu_memb_read_unlock();
    if (old)
        urcu_memb_call_rcu(&caa_container_of(old, struct entry, node)->rcu, free_entry);
    else
        atomic_fetch_add(&c->count, 1);
}

/* Adds the entry only where nothing valid is cached: absent, or a miss whose
 * time is up (swapped with cds_lfht_replace, which fails if that very node
 * was changed meanwhile). Otherwise the entry is dropped. */
static void fill(struct cache *c, struct entry *e, int64_t now_ms)
{
    struct lookup_key k = {e->data, e->code_len};
    unsigned long hash = hash_code(c, e->data, e->code_len);
    bool used = false;
    urcu_memb_read_lock();
    struct cds_lfht_iter it;
    cds_lfht_lookup(c->ht, hash, match, &k, &it);
    struct cds_lfht_node *old = cds_lfht_iter_get_node(&it);
    if (!old) {
        used = cds_lfht_add_unique(c->ht, hash, match, &k, &e->node) == &e->node;
        if (used)
            atomic_fetch_add(&c->count, 1);
    } else {
        struct entry *oe = caa_container_of(old, struct entry, node);
        if (oe->miss && now_ms >= oe->expires_at &&
            cds_lfht_replace(c->ht, &it, hash, match, &k, &e->node) == 0) {
            used = true;
            urcu_memb_call_rcu(&oe->rcu, free_entry);
        }
    }
    urcu_memb_read_unlock();
    if (!used)
        free(e);
}

static struct entry *entry_new(const char *code, size_t n, const char *url, size_t url_len)
{
    struct entry *e = calloc(1, sizeof(*e) + n + 1 + url_len + 1);
    if (!e)
        abort();
    memcpy(e->data, code, n);
    if (url_len)
        memcpy(e->data + n + 1, url, url_len);
    e->code_len = (uint8_t)n;
    e->url_len = (uint32_t)url_len;
    return e;
}

static struct entry *entry_of_link(const struct link *l, size_t n)
{
    size_t url_len = l->url ? strlen(l->url) : 0;
    struct entry *e = entry_new(l->code, n, l->url, url_len);
    e->expires_at = l->expires_at;
    e->state = (uint8_t)l->state;
    e->permanent = l->permanent;
    e->miss = false;
    if (!l->url && l->state == LINK_ACTIVE)
        e->state = LINK_DELETED;  /* swept: nothing to redirect to */
    return e;
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
    publish(c, entry_of_link(l, n));
}

void cache_fill(struct cache *c, const struct link *l, int64_t now_ms)
{
    size_t n = strlen(l->code);
    if (n > CODE_MAX || full(c))
        return;
    fill(c, entry_of_link(l, n), now_ms);
}

void cache_fill_miss(struct cache *c, const char *code, size_t n, int64_t now_ms)
{
    if (n > CODE_MAX || c->miss_ttl <= 0 || full(c))
        return;
    struct entry *e = entry_new(code, n, NULL, 0);
    e->miss = true;
    e->expires_at = now_ms + c->miss_ttl;
    fill(c, e, now_ms);
}

void cache_remove(struct cache *c, const char *code, size_t n)
{
    struct lookup_key k = {code, n};
    struct cds_lfht_iter it;
    urcu_memb_read_lock();
    cds_lfht_lookup(c->ht, hash_code(c, code, n), match, &k, &it);
    struct cds_lfht_node *node = cds_lfht_iter_get_node(&it);
    if (node && cds_lfht_del(c->ht, node) == 0) {
        atomic_fetch_sub(&c->count, 1);
        urcu_memb_call_rcu(&caa_container_of(node, struct entry, node)->rcu, free_entry);
    }
    urcu_memb_read_unlock();
}

void cache_clear(struct cache *c)
{
    struct cds_lfht_iter it;
    struct cds_lfht_node *node;
    urcu_memb_read_lock();
    cds_lfht_for_each(c->ht, &it, node) {
        if (cds_lfht_del(c->ht, node) == 0) {
            atomic_fetch_sub(&c->count, 1);
            urcu_memb_call_rcu(&caa_container_of(node, struct entry, node)->rcu, free_entry);
        }
    }
    urcu_memb_read_unlock();
}

uint64_t cache_entries(const struct cache *c) { return atomic_load(&c->count); }
