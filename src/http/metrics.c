/* metrics.c - per-thread counters summed at scrape time.
 *
 * DESIGN
 * A counter has exactly one writing thread, so an increment is a relaxed
 * load and store (no locked instruction); the scraper's relaxed loads see
 * a value at most one increment old. */
#include "http/metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/banned.h"

#define MAX_WORKERS 256
#define MAX_ROUTES 64

static const int statuses[] = {200, 201, 204, 301, 302, 304, 400, 401, 403, 404, 405, 408,
                               409, 410, 413, 414, 415, 417, 422, 429, 431, 500, 503};
#define NSTATUS ((int)(sizeof(statuses) / sizeof(statuses[0])) + 1) /* + "other" */

static const double bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                0.01,   0.025,   0.05,   0.1,   0.5,    1.0};
#define NBUCKET ((int)(sizeof(bounds) / sizeof(bounds[0])))

struct metrics_local {
    _Atomic uint64_t requests[MAX_ROUTES][NSTATUS];
    _Atomic uint64_t buckets[NBUCKET + 1]; /* last: +Inf */
    _Atomic uint64_t sum_ns;
    _Atomic uint64_t rejected;
    _Atomic uint64_t rejected_addr;
    _Atomic uint64_t out_queued; /* a gauge */
};

struct metrics {
    const char *const *routes;
    int nroutes;
    pthread_mutex_t mu;
    struct metrics_local *local[MAX_WORKERS];
};

static void inc(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

struct metrics *metrics_new(const char *const *routes, int nroutes)
{
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m)
        abort();
    m->routes = routes;
    m->nroutes = nroutes < MAX_ROUTES ? nroutes : MAX_ROUTES;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    for (int i = 0; i < MAX_WORKERS; i++)
        free(m->local[i]);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

struct metrics_local *metrics_local(struct metrics *m, int i)
{
    if (i < 0 || i >= MAX_WORKERS)
        abort();
    pthread_mutex_lock(&m->mu);
    if (!m->local[i]) {
        m->local[i] = calloc(1, sizeof(struct metrics_local));
        if (!m->local[i])
            abort();
    }
    struct metrics_local *l = m->local[i];
    pthread_mutex_unlock(&m->mu);
    return l;
}

static int status_index(int status)
{
    for (int i = 0; i < NSTATUS - 1; i++)
        if (statuses[i] == status)
            return i;
    return NSTATUS - 1;
}

void metrics_observe(struct metrics_local *l, int route, int status, uint64_t ns)
{
    if (route < 0 || route >= MAX_ROUTES)
        route = 0;
    inc(&l->requests[route][status_index(status)], 1);
    double s = (double)ns / 1e9;
    int b = 0;
    while (b < NBUCKET && s > bounds[b])
        b++;
    inc(&l->buckets[b], 1);
    inc(&l->sum_ns, ns);
}

void metrics_rejected(struct metrics_local *l) { inc(&l->rejected, 1); }
void metrics_rejected_addr(struct metrics_local *l) { inc(&l->rejected_addr, 1); }

void metrics_output_queued(struct metrics_local *l, uint64_t bytes)
{
    atomic_store_explicit(&l->out_queued, bytes, memory_order_relaxed);
}

void metrics_render(struct metrics *m, struct buf *out)
{
    struct metrics_local *ls[MAX_WORKERS];
    int n = 0;
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < MAX_WORKERS; i++)
        if (m->local[i])
            ls[n++] = m->local[i];
    pthread_mutex_unlock(&m->mu);

    buf_adds(out, "# HELP shortd_requests_total HTTP requests answered, by route and status.\n"
                  "# TYPE shortd_requests_total counter\n");
    for (int r = 0; r < m->nroutes; r++) {
        for (int s = 0; s < NSTATUS; s++) {
            uint64_t v = 0;
            for (int i = 0; i < n; i++)
                v += get(&ls[i]->requests[r][s]);
            if (!v)
                continue;
            buf_printf(out, "shortd_requests_total{route=\"%s\",status=\"", m->routes[r]);
            if (s == NSTATUS - 1)
                buf_adds(out, "other");
            else
                buf_add_u64(out, (uint64_t)statuses[s]);
            buf_adds(out, "\"} ");
            buf_add_u64(out, v);
            buf_addc(out, '\n');
        }
    }
    buf_adds(out, "# HELP shortd_request_duration_seconds Time from a complete request to its "
                  "answer.\n# TYPE shortd_request_duration_seconds histogram\n");
    uint64_t cum = 0, sum = 0;
    for (int b = 0; b <= NBUCKET; b++) {
        for (int i = 0; i < n; i++)
            cum += get(&ls[i]->buckets[b]);
        if (b < NBUCKET)
            buf_printf(out, "shortd_request_duration_seconds_bucket{le=\"%g\"} ", bounds[b]);
        else
            buf_adds(out, "shortd_request_duration_seconds_bucket{le=\"+Inf\"} ");
        buf_add_u64(out, cum);
        buf_addc(out, '\n');
    }
    uint64_t rejected = 0, rejected_addr = 0, queued = 0;
    for (int i = 0; i < n; i++) {
        sum += get(&ls[i]->sum_ns);
        rejected += get(&ls[i]->rejected);
        rejected_addr += get(&ls[i]->rejected_addr);
        queued += get(&ls[i]->out_queued);
    }
    buf_printf(out, "shortd_request_duration_seconds_sum %.9f\n", (double)sum / 1e9);
    buf_adds(out, "shortd_request_duration_seconds_count ");
    buf_add_u64(out, cum);
    buf_adds(out, "\n# HELP shortd_connections_rejected_total Connections closed at the cap.\n"
                  "# TYPE shortd_connections_rejected_total counter\n"
                  "shortd_connections_rejected_total ");
    buf_add_u64(out, rejected);
    buf_adds(out, "\n# HELP shortd_connections_rejected_per_address_total Connections closed at "
                  "the per-address cap.\n"
                  "# TYPE shortd_connections_rejected_per_address_total counter\n"
                  "shortd_connections_rejected_per_address_total ");
    buf_add_u64(out, rejected_addr);
    buf_adds(out, "\n# HELP shortd_http_output_queued_bytes Answer bytes queued for clients "
                  "that have not taken them (as of the last tick).\n"
                  "# TYPE shortd_http_output_queued_bytes gauge\n"
                  "shortd_http_output_queued_bytes ");
    buf_add_u64(out, queued);
    buf_addc(out, '\n');
}
