/* api_ops.c - what operators and load balancers ask: /healthz (the process
 * answers), /readyz (the store answers and the click journal writes),
 * /metrics (Prometheus text), /api/ops/health (the operations checks,
 * checks.h) and /robots.txt. */
#include <dirent.h>
#include <jansson.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "app/app.h"
#include "redirect/cache.h"
#include "clicks/classify.h"
#include "clicks/clicks.h"
#include "base/err.h"
#include "api/handlers.h"
#include "clicks/journal.h"
#include "events/events.h"
#include "links/links.h"
#include "http/metrics.h"
#include "store/bus.h"
#include "redirect/rcache.h"
#include "store/store.h"
#include "store/storeq.h"
#include "base/timeutil.h"
#include "clicks/aggregate.h"
#include "ops/checks.h"
#include "version.h" /* SHORTD_VERSION, SHORTD_COMMIT: made by the Makefile */
#include "base/banned.h"

/* Short links stay crawlable (link previews fetch them); the API and the
 * dashboard are no pages to index. */
static const char robots_default[] = "User-agent: *\nDisallow: /api/\nDisallow: /dashboard\n";

int handle_robots(struct request *r)
{
    const struct app *app = r->app;
    http_add_header(r, "Cache-Control", "public, max-age=3600", 20);
    if (app->robots)
        return http_body(r, 200, "text/plain; charset=utf-8", app->robots, app->robots_len);
    return http_body(r, 200, "text/plain; charset=utf-8", robots_default,
                     sizeof(robots_default) - 1);
}

int handle_healthz(struct request *r)
{
    return http_body(r, 200, "application/json", "{\"status\":\"ok\"}", 15);
}

/* The journal's part of /readyz: while it is down, when that began, why, and
 * how much waits in memory (the store keeps those clicks meanwhile). */
static json_t *journal_detail(const struct journal_health *h)
{
    json_t *o = json_pack("{s:s, s:I, s:I}", "state", h->down ? "down" : "ok", "failures",
                          (json_int_t)h->failures, "recoveries", (json_int_t)h->recoveries);
    if (h->down) {
        char since[RFC3339_MAX];
        rfc3339_format(h->down_since_ms, since);
        json_object_set_new(o, "since", json_string(since));
        json_object_set_new(o, "error", json_string(h->error));
        json_object_set_new(o, "unsynced_bytes", json_integer((json_int_t)h->unsynced_bytes));
    }
    return o;
}

int handle_readyz(struct request *r)
{
    struct store *st = r->app->store;
    if (atomic_load(&r->app->stopping))
        return http_body(r, 503, "application/json", "{\"status\":\"stopping\"}", 21);
    struct journal_health h;
    clicks_health(r->app->clicks, &h);
    const char *status = "ready";
    if (st->ops->ping(st) != ERR_OK)
        status = "store unavailable";
    else if (h.down)
        status = "journal unavailable";
    json_t *body = json_pack("{s:s, s:o}", "status", status, "journal", journal_detail(&h));
    /* Failed batches of events wait for an operator: said, still ready. */
    if (r->app->events)
        json_object_set_new(body, "events",
                            json_pack("{s:I}", "unresolved_failed",
                                      (json_int_t)events_unresolved(r->app->events)));
    return http_json(r, strcmp(status, "ready") ? 503 : 200, body);
}

/* GET /api/ops/health: every check, run now (on a store thread). */
int handle_ops_health(struct request *r)
{
    struct check_report rep;
    checks_run(r->app->checks, now_ms(), &rep);
    return http_json(r, 200, checks_report_json(&rep, r->app->cfg.node_id));
}

/* The process's own figures, under the names Prometheus's client libraries
 * give them, so the usual dashboards and rules apply. */
static void process_metrics(const struct app *app, struct buf *b)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        for (struct dirent *e = readdir(d); e; e = readdir(d))
            fds += e->d_name[0] != '.';
        closedir(d);
        fds--; /* the one opendir holds */
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    buf_printf(b,
               "# HELP process_cpu_seconds_total User and system CPU time spent, in seconds.\n"
               "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
               "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
               "# TYPE process_resident_memory_bytes gauge\n"
               "process_resident_memory_bytes %lld\n"
               "# HELP process_open_fds Number of open file descriptors.\n"
               "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n"
               "# HELP process_max_fds Maximum number of open file descriptors.\n"
               "# TYPE process_max_fds gauge\nprocess_max_fds %lld\n"
               "# HELP process_start_time_seconds Start time of the process since the epoch, "
               "in seconds.\n"
               "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n",
               cpu, (long long)resident * sysconf(_SC_PAGESIZE), fds, (long long)rl.rlim_cur,
               (double)app->started_ms / 1000.0);
    buf_printf(b,
               "# HELP shortd_build_info The version and commit of this binary.\n"
               "# TYPE shortd_build_info gauge\n"
               "shortd_build_info{version=\"%s\",commit=\"%s\"} 1\n",
               SHORTD_VERSION, SHORTD_COMMIT);
}

/* The last run of the operations checks (the alert thread runs them every
 * check-every; /metrics never waits for the store): a state per check, and
 * the figure each judged. */
static void check_metrics(struct app *app, struct buf *b)
{
    struct check_report rep;
    if (!app->checks || !checks_last(app->checks, &rep))
        return;
    buf_adds(b, "# HELP shortd_check_state The operations check's state at its last run: "
                "0 ok, 1 warn, 2 fail, 3 unknown (could not be made).\n"
                "# TYPE shortd_check_state gauge\n");
    for (int i = 0; i < rep.n; i++)
        buf_printf(b, "shortd_check_state{code=\"%s\"} %d\n", rep.r[i].code, (int)rep.r[i].state);
    buf_adds(b, "# HELP shortd_check_value The figure the operations check judged at its last "
                "run, in its unit (ms, s, clicks, bytes).\n"
                "# TYPE shortd_check_value gauge\n");
    for (int i = 0; i < rep.n; i++)
        if (rep.r[i].has_value)
            buf_printf(b, "shortd_check_value{code=\"%s\",unit=\"%s\"} %.3f\n", rep.r[i].code,
                       rep.r[i].unit, rep.r[i].value);
    buf_printf(b,
               "# HELP shortd_checks_run_timestamp_seconds When the operations checks last "
               "ran.\n# TYPE shortd_checks_run_timestamp_seconds gauge\n"
               "shortd_checks_run_timestamp_seconds %.3f\n",
               (double)rep.at_ms / 1000.0);
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
    uint64_t khits = 0, kmisses = 0, kentries = 0;
    size_t kbytes = 0;
    links_key_counts(app->links, &khits, &kmisses, &kentries, &kbytes);
    buf_printf(b,
               "\n# HELP shortd_key_cache_hits_total API keys found in this node's key cache.\n"
               "# TYPE shortd_key_cache_hits_total counter\nshortd_key_cache_hits_total %llu\n"
               "# HELP shortd_key_cache_misses_total API keys looked for there and not found.\n"
               "# TYPE shortd_key_cache_misses_total counter\n"
               "shortd_key_cache_misses_total %llu\n"
               "# HELP shortd_key_cache_entries API keys held in this node's key cache.\n"
               "# TYPE shortd_key_cache_entries gauge\nshortd_key_cache_entries %llu\n"
               "# HELP shortd_key_cache_bytes Bytes the key cache's table takes, full or not.\n"
               "# TYPE shortd_key_cache_bytes gauge\nshortd_key_cache_bytes %zu",
               (unsigned long long)khits, (unsigned long long)kmisses, (unsigned long long)kentries,
               kbytes);
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
    struct clicks_lag lag;
    clicks_lag(app->clicks, mono_ms(), &lag);
    buf_add_u64(b, lag.pending);
    buf_printf(b,
               "\n# HELP shortd_clicks_lag_seconds How long the oldest click not yet in the "
               "store has waited.\n"
               "# TYPE shortd_clicks_lag_seconds gauge\nshortd_clicks_lag_seconds %.3f\n"
               "# HELP shortd_clicks_lag_bound_seconds The lag past which the node is behind.\n"
               "# TYPE shortd_clicks_lag_bound_seconds gauge\n"
               "shortd_clicks_lag_bound_seconds %d\n"
               "# HELP shortd_clicks_keeping_up Whether clicks reach the store within the "
               "bound (0: behind; the journal keeps them).\n"
               "# TYPE shortd_clicks_keeping_up gauge\nshortd_clicks_keeping_up %d\n",
               (double)lag.lag_ms / 1000, CLICKS_LAG_BOUND_MS / 1000, lag.behind ? 0 : 1);
    struct clicks_backlog bl;
    clicks_backlog(app->clicks, &bl);
    uint64_t ua_misses, ua_hurried;
    classify_counts(app->classify, &ua_misses, &ua_hurried);
    buf_printf(b,
               "# HELP shortd_clicks_unfolded Clicks journaled but not yet classified and "
               "counted.\n"
               "# TYPE shortd_clicks_unfolded gauge\nshortd_clicks_unfolded %llu\n"
               "# HELP shortd_clicks_unfolded_max The most clicks there have been to fold "
               "at once since the start.\n"
               "# TYPE shortd_clicks_unfolded_max gauge\nshortd_clicks_unfolded_max %llu\n"
               "# HELP shortd_clicks_unfolded_disk_bytes Journal bytes of the clicks to fold "
               "that wait on disk only, past fold-memory-mb.\n"
               "# TYPE shortd_clicks_unfolded_disk_bytes gauge\n"
               "shortd_clicks_unfolded_disk_bytes %llu\n"
               "# HELP shortd_clicks_backpressure_total Pauses of an event loop because the "
               "clicks to fold were past their bound.\n"
               "# TYPE shortd_clicks_backpressure_total counter\n"
               "shortd_clicks_backpressure_total %llu\n"
               "# HELP shortd_classify_misses_total User agents classified afresh, not found "
               "in the cache.\n"
               "# TYPE shortd_classify_misses_total counter\n"
               "shortd_classify_misses_total %llu\n"
               "# HELP shortd_classify_hurried_total Clicks of people whose browser, OS and "
               "device were left unknown because the fold was behind.\n"
               "# TYPE shortd_classify_hurried_total counter\n"
               "shortd_classify_hurried_total %llu\n",
               (unsigned long long)bl.unfolded, (unsigned long long)bl.unfolded_max,
               (unsigned long long)bl.on_disk_bytes, (unsigned long long)bl.pauses,
               (unsigned long long)ua_misses, (unsigned long long)ua_hurried);
    /* NaN for a moment after a start, until the rows a previous run left
     * are counted: not a 0 that would say none wait */
    int64_t uncompacted = aggregate_pending(app->aggregate);
    char rows[24] = "NaN";
    if (uncompacted >= 0)
        snprintf(rows, sizeof(rows), "%lld", (long long)uncompacted);
    buf_printf(b,
               "# HELP shortd_clicks_uncompacted Link days stored as they came and read "
               "with the day rows, not yet merged into them (compacting).\n"
               "# TYPE shortd_clicks_uncompacted gauge\nshortd_clicks_uncompacted %s\n",
               rows);
    uint64_t humans = 0, bots = 0;
    aggregate_counts(app->aggregate, &humans, &bots);
    double oldest = (double)bl.oldest_age_ms / 1000;
    buf_printf(b,
               "# HELP shortd_clicks_counted_total Clicks of people counted (folded) since the "
               "start.\n"
               "# TYPE shortd_clicks_counted_total counter\nshortd_clicks_counted_total %llu\n"
               "# HELP shortd_bot_clicks_counted_total Clicks of bots and prefetches counted "
               "since the start.\n"
               "# TYPE shortd_bot_clicks_counted_total counter\n"
               "shortd_bot_clicks_counted_total %llu\n"
               "# HELP shortd_journal_oldest_age_seconds How long the oldest click not yet "
               "counted has waited (0: none waits).\n"
               "# TYPE shortd_journal_oldest_age_seconds gauge\n"
               "shortd_journal_oldest_age_seconds %.3f\n",
               (unsigned long long)humans, (unsigned long long)bots, oldest);
    struct journal_health jh;
    clicks_health(app->clicks, &jh);
    buf_printf(b,
               "# HELP shortd_journal_up Whether the click journal writes (0: its last sync "
               "failed; clicks then go to the store every sync interval).\n"
               "# TYPE shortd_journal_up gauge\nshortd_journal_up %d\n"
               "# HELP shortd_journal_sync_failures_total Failed syncs of the click journal.\n"
               "# TYPE shortd_journal_sync_failures_total counter\n"
               "shortd_journal_sync_failures_total %llu\n"
               "# HELP shortd_journal_recoveries_total Times the click journal came back.\n"
               "# TYPE shortd_journal_recoveries_total counter\n"
               "shortd_journal_recoveries_total %llu\n"
               "# HELP shortd_journal_unsynced_bytes Journal records waiting in memory.\n"
               "# TYPE shortd_journal_unsynced_bytes gauge\n"
               "shortd_journal_unsynced_bytes %llu\n",
               jh.down ? 0 : 1, (unsigned long long)jh.failures, (unsigned long long)jh.recoveries,
               (unsigned long long)jh.unsynced_bytes);
    if (app->storeq) {
        struct storeq_counts sq;
        storeq_counts(app->storeq, &sq);
        buf_printf(b,
                   "# HELP shortd_store_queue_depth Requests waiting for a store thread.\n"
                   "# TYPE shortd_store_queue_depth gauge\nshortd_store_queue_depth %lld\n"
                   "# HELP shortd_store_jobs_total Store reads and API calls handed to the "
                   "store threads.\n"
                   "# TYPE shortd_store_jobs_total counter\nshortd_store_jobs_total %lld\n"
                   "# HELP shortd_store_rejected_total Requests answered 503 at once: the "
                   "store threads' queue was full.\n"
                   "# TYPE shortd_store_rejected_total counter\n"
                   "shortd_store_rejected_total %lld\n"
                   "# HELP shortd_store_timeouts_total Requests that waited store-timeout-ms "
                   "for the store.\n"
                   "# TYPE shortd_store_timeouts_total counter\n"
                   "shortd_store_timeouts_total %lld\n"
                   "# HELP shortd_heavy_reads_refused_total Searches and exports refused "
                   "(429): their key ran heavy-reads-per-key already.\n"
                   "# TYPE shortd_heavy_reads_refused_total counter\n"
                   "shortd_heavy_reads_refused_total %lld\n",
                   (long long)sq.queued, (long long)sq.jobs, (long long)sq.rejected,
                   (long long)sq.timeouts, (long long)sq.heavy_refused);
    }
    if (app->rcache) {
        uint64_t rh = 0, rm = 0, re = 0;
        bool down = false;
        rcache_counts(app->rcache, &rh, &rm, &re, &down);
        buf_printf(b,
                   "# HELP shortd_redis_up Whether the shared cache answers (0 while skipped).\n"
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
        buf_printf(b,
                   "# HELP shortd_invalidations_sent_total Codes announced to other nodes.\n"
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
    if (app->events)
        events_metrics(app->events, b);
    process_metrics(app, b);
    check_metrics(app, b);
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 200;
}
