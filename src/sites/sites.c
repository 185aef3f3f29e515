/* sites.c - site ids and hosts, and the in-memory host → site table.
 *
 * DESIGN
 * The table is a snapshot: a sorted array of (host, site) built whole by
 * sitemap_load and published by an atomic store (release); readers take the
 * RCU read lock (the link cache's flavour, so the event loops are already
 * registered) and binary-search it. A load keeps the snapshot it replaced
 * on a retire list; sitemap_reclaim waits for a grace period and frees
 * them. Sites are few and change rarely, so a whole rebuild per change is
 * simpler than editing in place and costs nothing that matters. */
#include "sites/sites.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-memb.h>

#include "base/err.h"
#include "base/log.h"
#include "store/store.h"
#include "base/banned.h"

/* ThreadSanitizer does not see liburcu's grace periods: told here what RCU
 * guarantees, as the link cache tells it (cache.c). */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
static char rcu_order;
#define READER_LEAVES() __tsan_release(&rcu_order)
#define GRACE_PERIOD_ENDS() __tsan_acquire(&rcu_order)
#else
#define READER_LEAVES() ((void)0)
#define GRACE_PERIOD_ENDS() ((void)0)
#endif

int site_id_check(const char *id, size_t n, const char **why)
{
    if (!n || n > SITE_ID_MAX) {
        *why = "must be 1 to 64 characters";
        return ERR_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
            *why = "may only hold a-z, 0-9 and '-'";
            return ERR_INVALID;
        }
    }
    return ERR_OK;
}

int site_host_check(const char *host, size_t n, char out[HOST_NAME_MAX_LEN + 1], const char **why)
{
    if (memchr(host, '/', n) || memchr(host, '@', n)) {
        *why = "must be a bare host name (no scheme, path or user)";
        return ERR_INVALID;
    }
    size_t k = host_of_header((struct slice){host, n}, out);
    if (!k) {
        *why = "must be a host name of 1 to 253 characters";
        return ERR_INVALID;
    }
    for (size_t i = 0; i < k; i++) {
        char c = out[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == '_')) {
            *why = "may only hold letters, digits, '-', '_' and '.'";
            return ERR_INVALID;
        }
    }
    return ERR_OK;
}

size_t site_url_host(struct slice url, char out[HOST_NAME_MAX_LEN + 1])
{
    const char *p = url.p, *end = url.p + url.n;
    const char *scheme = NULL;
    for (const char *s = p; s + 2 < end; s++) {
        if (s[0] == ':' && s[1] == '/' && s[2] == '/') {
            scheme = s;
            break;
        }
        if (*s == '/' || *s == '?' || *s == '#')
            break;
    }
    if (!scheme)
        return 0;
    p = scheme + 3;
    const char *stop = p;
    while (stop < end && *stop != '/' && *stop != '?' && *stop != '#')
        stop++;
    const char *at = memchr(p, '@', (size_t)(stop - p));
    if (at)
        p = at + 1;
    const char *why;
    if (stop == p || site_host_check(p, (size_t)(stop - p), out, &why) != ERR_OK)
        return 0;
    return strlen(out);
}

/* ---- the table ---- */

struct entry {
    char host[HOST_NAME_MAX_LEN + 1];
    char site[SITE_ID_MAX + 1];
};

struct snapshot {
    size_t n;
    struct snapshot *retired_next;
    struct entry e[]; /* sorted by host */
};

struct sitemap {
    _Atomic(struct snapshot *) cur; /* published with release, read with acquire */
    pthread_mutex_t mu;             /* loads, and the retire list */
    struct snapshot *retired;
    atomic_bool stale;
};

struct sitemap *sitemap_new(void)
{
    struct sitemap *m = calloc(1, sizeof(*m));
    if (!m)
        abort();
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void sitemap_free(struct sitemap *m)
{
    if (!m)
        return;
    struct snapshot *s = m->retired;
    while (s) {
        struct snapshot *next = s->retired_next;
        free(s);
        s = next;
    }
    free(atomic_load(&m->cur));
    pthread_mutex_destroy(&m->mu);
    free(m);
}

struct gather {
    struct entry *e;
    size_t n, cap;
};

static int gather_host(const char *host, const char *site, void *arg)
{
    struct gather *g = arg;
    if (strlen(host) > HOST_NAME_MAX_LEN || strlen(site) > SITE_ID_MAX)
        return 0;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 16;
        g->e = realloc(g->e, g->cap * sizeof(*g->e));
        if (!g->e)
            abort();
    }
    struct entry *x = &g->e[g->n++];
    memset(x, 0, sizeof(*x));
    memcpy(x->host, host, strlen(host));
    memcpy(x->site, site, strlen(site));
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->host, ((const struct entry *)b)->host);
}

int sitemap_load(struct sitemap *m, struct store *st)
{
    struct gather g = {0};
    pthread_mutex_lock(&m->mu);
    int rc = st->ops->site_hosts_list(st, NULL, gather_host, &g);
    if (rc == ERR_OK) {
        /* The store lists them by host, in its collation: sorted again in
         * strcmp's order, which the search uses. */
        if (g.n)
            qsort(g.e, g.n, sizeof(*g.e), cmp_entry);
        struct snapshot *s = malloc(sizeof(*s) + (g.n ? g.n : 1) * sizeof(struct entry));
        if (!s)
            abort();
        s->n = g.n;
        s->retired_next = NULL;
        if (g.n)
            memcpy(s->e, g.e, g.n * sizeof(*g.e));
        struct snapshot *old = atomic_load_explicit(&m->cur, memory_order_relaxed);
        atomic_store_explicit(&m->cur, s, memory_order_release);
        if (old) {
            old->retired_next = m->retired;
            m->retired = old;
        }
    }
    pthread_mutex_unlock(&m->mu);
    free(g.e);
    return rc;
}

void sitemap_mark_stale(struct sitemap *m)
{
    if (m)
        atomic_store(&m->stale, true);
}

bool sitemap_take_stale(struct sitemap *m) { return m && atomic_exchange(&m->stale, false); }

void sitemap_reclaim(struct sitemap *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    struct snapshot *s = m->retired;
    m->retired = NULL;
    pthread_mutex_unlock(&m->mu);
    if (!s)
        return;
    urcu_memb_synchronize_rcu(); /* no reader can still hold them */
    GRACE_PERIOD_ENDS();
    while (s) {
        struct snapshot *next = s->retired_next;
        free(s);
        s = next;
    }
}

bool sitemap_find(struct sitemap *m, const char *host, size_t n, char site[SITE_ID_MAX + 1])
{
    if (!m || !n || n > HOST_NAME_MAX_LEN)
        return false;
    bool found = false;
    urcu_memb_read_lock();
    const struct snapshot *s = atomic_load_explicit(&m->cur, memory_order_acquire);
    size_t lo = 0, hi = s ? s->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *h = s->e[mid].host;
        int c = strncmp(h, host, n);
        if (c == 0 && h[n])
            c = 1; /* longer than 'host': after it */
        if (c == 0) {
            size_t k = strlen(s->e[mid].site);
            memcpy(site, s->e[mid].site, k + 1);
            found = true;
            break;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    READER_LEAVES();
    urcu_memb_read_unlock();
    return found;
}

size_t sitemap_count(struct sitemap *m)
{
    if (!m)
        return 0;
    urcu_memb_read_lock();
    const struct snapshot *s = atomic_load_explicit(&m->cur, memory_order_acquire);
    size_t n = s ? s->n : 0;
    READER_LEAVES();
    urcu_memb_read_unlock();
    return n;
}
