/* api_ops.c - what operators and load balancers ask: /healthz (the process
 * answers), /readyz (the store answers), /metrics (Prometheus text), and the
 * home page redirect. */
#include <string.h>

#include "app.h"
#include "cache.h"
#include "clicks.h"
#include "err.h"
#include "handlers.h"
#include "metrics.h"
#include "bus.h"
#include "rcache.h"
#include "store.h"
#include "banned.h"

int handle_home(struct request *r)
{
    const char *home = r->app->cfg.home;
    http_add_header(r, "Location", home, strlen(home));
    http_add_header(r, "Cache-Control", "no-store", 8);
    return 302;
}

int handle_healthz(struct request *r)
{
    return http_body(r, 200, "application/json", "{\"status\":\"ok\"}", 15);
}

int handle_readyz(struct request *r)
{
    struct store *st = r->app->store;
    if (atomic_load(&r->app->stopping))
        return http_body(r, 503, "application/json", "{\"status\":\"stopping\"}", 21);
    if (st->ops->ping(st) != ERR_OK)
        return http_body(r, 503, "application/json", "{\"status\":\"store unavailable\"}", 30);
    return http_body(r, 200, "application/json", "{\"status\":\"ready\"}", 18);
}

int handle_metrics(struct request *r)
{
    struct app *app = r->app;
    struct buf *b = &r->resp_body;
    buf_reset(b);
    buf_adds(b, "# HELP shortd_node_info This node's name.\n# TYPE shortd_node_info gauge\n"
                "shortd_node_info{node=\"");
    for (const char *p = app->cfg.node_id ? app->cfg.node_id : ""; *p; p++)
        if (*p != '"' && *p != '\\' && *p != '\n')
            buf_addc(b, *p);
    buf_adds(b, "\"} 1\n");
    metrics_render(app->metrics, b);
    buf_adds(b, "# HELP shortd_cache_entries Codes in the redirect cache (links and misses).\n"
                "# TYPE shortd_cache_entries gauge\nshortd_cache_entries ");
    buf_add_u64(b, cache_entries(app->cache));
    buf_adds(b, "\n# HELP shortd_cache_entry_bytes Bytes the redirect cache's entries take "
                "(not its hash buckets).\n"
                "# TYPE shortd_cache_entry_bytes gauge\nshortd_cache_entry_bytes ");
    buf_add_u64(b, cache_entry_bytes(app->cache));
    uint64_t hits = 0, misses = 0;
    cache_counts(app->cache, &hits, &misses);
    buf_adds(b, "\n# HELP shortd_cache_hits_total Redirects answered from the cache.\n"
                "# TYPE shortd_cache_hits_total counter\nshortd_cache_hits_total ");
    buf_add_u64(b, hits);
    buf_adds(b, "\n# HELP shortd_cache_misses_total Redirects that read the store.\n"
                "# TYPE shortd_cache_misses_total counter\nshortd_cache_misses_total ");
    buf_add_u64(b, misses);
    int64_t links = atomic_load(&app->links_counted);
    if (links >= 0) {
        buf_adds(b, "\n# HELP shortd_links Links in the store, tombstones included "
                    "(counted every 10 s).\n"
                    "# TYPE shortd_links gauge\nshortd_links ");
        buf_add_i64(b, links);
    }
    buf_adds(b, "\n# HELP shortd_clock_steps_total Forward steps of the wall clock the "
                "sweeper did not follow.\n"
                "# TYPE shortd_clock_steps_total counter\nshortd_clock_steps_total ");
    buf_add_i64(b, atomic_load(&app->clock_steps));
    buf_adds(b, "\n# HELP shortd_sweep_clock_behind_seconds How far the sweeper's clock runs "
                "behind the wall clock.\n"
                "# TYPE shortd_sweep_clock_behind_seconds gauge\n"
                "shortd_sweep_clock_behind_seconds ");
    buf_add_i64(b, atomic_load(&app->sweep_behind_ms) / 1000);
    buf_adds(b, "\n# HELP shortd_clicks_pending Clicks counted but not yet in the store.\n"
                "# TYPE shortd_clicks_pending gauge\nshortd_clicks_pending ");
    buf_add_u64(b, clicks_pending(app->clicks));
    buf_addc(b, '\n');
    if (app->rcache) {
        uint64_t rh = 0, rm = 0, re = 0;
        bool down = false;
        rcache_counts(app->rcache, &rh, &rm, &re, &down);
        buf_printf(b, "# HELP shortd_redis_up Whether the shared cache answers (0 while skipped).\n"
                      "# TYPE shortd_redis_up gauge\nshortd_redis_up %d\n"
                      "# HELP shortd_redis_hits_total Redirect misses answered by Redis.\n"
                      "# TYPE shortd_redis_hits_total counter\nshortd_redis_hits_total %llu\n"
                      "# HELP shortd_redis_misses_total Lookups Redis did not have.\n"
                      "# TYPE shortd_redis_misses_total counter\nshortd_redis_misses_total %llu\n"
                      "# HELP shortd_redis_errors_total Failed or timed-out Redis calls.\n"
                      "# TYPE shortd_redis_errors_total counter\nshortd_redis_errors_total %llu\n",
                   down ? 0 : 1, (unsigned long long)rh, (unsigned long long)rm,
                   (unsigned long long)re);
    }
    if (app->bus) {
        uint64_t bp = 0, br = 0, be = 0;
        bus_counts(app->bus, &bp, &br, &be);
        buf_printf(b, "# HELP shortd_invalidations_sent_total Codes announced to other nodes.\n"
                      "# TYPE shortd_invalidations_sent_total counter\n"
                      "shortd_invalidations_sent_total %llu\n"
                      "# HELP shortd_invalidations_received_total Codes other nodes announced.\n"
                      "# TYPE shortd_invalidations_received_total counter\n"
                      "shortd_invalidations_received_total %llu\n"
                      "# HELP shortd_invalidation_errors_total Failed sends, receives, connects.\n"
                      "# TYPE shortd_invalidation_errors_total counter\n"
                      "shortd_invalidation_errors_total %llu\n",
                   (unsigned long long)bp, (unsigned long long)br, (unsigned long long)be);
    }
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 200;
}
