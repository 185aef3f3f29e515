/* serve.c - `shortd serve`: builds the app, runs it until SIGTERM or SIGINT,
 * then shuts down in the order that loses nothing: stop accepting, let every
 * acknowledged write commit, close connections, flush every click, close the
 * store.
 *
 * DESIGN
 * The main thread owns signals (blocked in every other thread, taken with
 * sigtimedwait: SIGTERM and SIGINT stop, SIGHUP reloads the configuration)
 * and housekeeping, once a second: the sweeper of expired data
 * and old idempotency keys; and every GENERATION_CHECK_MS a check of the
 * store's change generation, which CLI commands bump so that a link they
 * change or a key they revoke is not served from a cache for longer.
 * Intervals are measured on the monotonic clock; the sweeper's idea of now
 * (what it removes data by) is the wall clock, believed only as far as the
 * monotonic clock moved (sweep_now). */
#include "app/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "ops/checks.h"
#include "ops/nodes.h"
#include "ops/notify.h"
#include "ops/watch.h"
#include "clicks/aggregate.h"
#include "store/bus.h"
#include "redirect/cache.h"
#include "clicks/classify.h"
#include "clicks/clicks.h"
#include "http/clientaddr.h"
#include "http/cors.h"
#include "base/coop.h"
#include "base/err.h"
#include "clicks/geo.h"
#include "redirect/hosts.h"
#include "redirect/notfound.h"
#include "links/links.h"
#include "links/users.h"
#include "base/log.h"
#include "http/metrics.h"
#include "events/events.h"
#include "events/outbox.h"
#include "http/ratelimit.h"
#include "store/storeq.h"
#include "redirect/rcache.h"
#include "api/router.h"
#include "http/server.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "links/urlcheck.h"
#include "version.h" /* SHORTD_VERSION: made by the Makefile */
#include "store/writer.h"
#include "sites/sites.h"
#include "base/banned.h"

struct sweep_job {
    struct wjob job;
    int64_t before, idem_before, prune_before_day;
    int64_t now, idle_before; /* sessions over at now, or unused since idle_before */
    int limit;
    int swept, pruned, expired;
    int64_t sessions;
};

/* Expired links' data, old idempotency keys, per-day analytics past the
 * retention, ended sessions: each in bounded batches (sessions are few),
 * so a sweep never holds the writer long. */
static int sweep_run(struct wjob *j, struct store *st)
{
    struct sweep_job *s = (struct sweep_job *)j;
    int rc = st->ops->link_sweep(st, s->before, s->limit, &s->swept);
    if (rc == ERR_OK)
        rc = st->ops->idem_sweep(st, s->idem_before);
    if (rc == ERR_OK)
        rc = st->ops->prune_days(st, s->prune_before_day, s->limit, &s->pruned);
    int site_days = 0;
    if (rc == ERR_OK)
        rc = st->ops->site_prune_days(st, s->prune_before_day, s->limit, &site_days);
    s->pruned += site_days;
    if (rc == ERR_OK)
        rc = st->ops->session_sweep(st, s->now, s->idle_before, &s->sessions);
    if (rc == ERR_OK)
        rc = events_expiries(st, s->now, s->limit, &s->expired);
    /* Link events every sink has taken, a day on: the archive keeps what
     * a sink could not take. */
    int gone = 0;
    if (rc == ERR_OK)
        rc = st->ops->outbox_prune(st, s->now - MS_PER_DAY, s->limit, &gone);
    return rc;
}

static void sweep_done(struct wjob *j)
{
    struct sweep_job *s = (struct sweep_job *)j;
    if (j->rc == ERR_OK && s->swept)
        log_at(LOG_INFO, "swept the data of %d expired links", s->swept);
    if (j->rc == ERR_OK && s->pruned)
        log_at(LOG_INFO, "pruned %d per-day analytics rows past the retention", s->pruned);
    free(s);
}

static void sweep(struct app *app, int64_t now)
{
    struct sweep_job *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->job.run = sweep_run;
    s->job.done = sweep_done;
    s->before = now - app->cfg.sweep_grace * 1000;
    s->idem_before = now - app->cfg.idempotency_ttl * 1000;
    s->now = now;
    s->idle_before = now - app->cfg.session_idle * 1000;
    s->limit = (int)app->cfg.sweep_batch;
    s->prune_before_day = day_number(now) - app->cfg.retention_days;
    writer_submit(app->writer, &s->job);
}

/* API keys' last uses (links_key_uses), written in one batch by the writer:
 * at most one write a minute per key, none on any request's path. */
#define TOUCH_BATCH 256
struct touch_job {
    struct wjob job;
    size_t n;
    int64_t ids[TOUCH_BATCH], ats[TOUCH_BATCH];
};

static int touch_run(struct wjob *j, struct store *st)
{
    struct touch_job *t = (struct touch_job *)j;
    int rc = ERR_OK;
    for (size_t i = 0; i < t->n && rc == ERR_OK; i++)
        rc = st->ops->key_touch(st, t->ids[i], t->ats[i]);
    return rc;
}

static void touch_done(struct wjob *j)
{
    if (j->rc != ERR_OK)
        log_at(LOG_WARN, "cannot note when API keys were last used: %s", err_str(j->rc));
    free(j);
}

static void touch_keys(struct app *app)
{
    for (;;) {
        struct touch_job *t = calloc(1, sizeof(*t));
        if (!t)
            abort();
        t->n = links_key_uses(app->links, t->ids, t->ats, TOUCH_BATCH);
        if (!t->n) {
            free(t);
            return;
        }
        size_t n = t->n; /* once submitted, t may be done and freed at any time */
        t->job.run = touch_run;
        t->job.done = touch_done;
        writer_submit(app->writer, &t->job);
        if (n < TOUCH_BATCH)
            return;
    }
}

/* A step of the wall clock (a bad NTP answer, an operator, a restored VM) must
 * not make the sweeper erase live links' data or forget idempotency keys: its
 * now runs ahead of the last sweep's by at most the monotonic time elapsed
 * plus CLOCK_STEP_MAX_MS. Past that it keeps to the monotonic clock, behind
 * the wall one, until the wall clock comes back within the bound (a step
 * back, or a restart); deleting later is always safe, deleting early is not. */
#define CLOCK_STEP_MAX_MS 60000
#define STOREQ_NICE 5 /* of the store threads people wait on, below the event loops */

struct sweep_clock {
    int64_t wall; /* the last sweep's now (at first: the start's) */
    int64_t mono; /* mono_ms() then */
};

static int64_t sweep_now(struct app *app, struct sweep_clock *c)
{
    int64_t wall = now_ms(), mono = mono_ms();
    int64_t now = wall, bound = c->wall + (mono - c->mono);
    if (wall > bound + CLOCK_STEP_MAX_MS)
        now = bound;
    int64_t behind = wall - now, was = atomic_load(&app->sweep_behind_ms);
    if (behind > was + CLOCK_STEP_MAX_MS) {
        atomic_fetch_add(&app->clock_steps, 1);
        log_at(LOG_WARN,
               "the wall clock stepped %lld s ahead of the monotonic clock; the "
               "sweeper keeps to the monotonic one",
               (long long)((behind - was) / 1000));
    } else if (behind == 0 && was > 0) {
        log_at(LOG_INFO,
               "the wall clock is back within %d s of the sweeper's; it follows it "
               "again",
               CLOCK_STEP_MAX_MS / 1000);
    }
    atomic_store(&app->sweep_behind_ms, behind);
    c->wall = now;
    c->mono = mono;
    return now;
}

/* The store's change generation, bumped by CLI commands that change links
 * or revoke a key (on SQLite, where no bus tells), read every
 * GENERATION_CHECK_MS: one point read on this thread. */
#define GENERATION_CHECK_MS 100
static int64_t generation(struct store *st)
{
    int64_t g;
    return store_generation(st, &g) == ERR_OK ? g : -1; /* -1: the store did not answer */
}

/* An invalidation from any node (this one too): the code leaves this node's
 * cache, on an event-loop thread (they are the registered cache users). */
struct invalidation {
    struct task task;
    struct app *app;
    size_t n; /* 0: drop everything */
    char code[CODE_MAX + 1];
};

static void invalidate_run(struct task *t)
{
    struct invalidation *iv = (struct invalidation *)t;
    if (iv->n)
        cache_remove(iv->app->cache, iv->code, iv->n);
    else
        cache_clear(iv->app->cache);
    free(iv);
}

static void on_invalidate(const char *code, size_t n, void *arg)
{
    struct app *app = arg;
    if (atomic_load(&app->stopping))
        return; /* the loops may be gone: nothing is posted to them */
    if (code && bus_is_blocklist(code, n)) {
        links_blocklist_changed(app->links);
        fallbacks_mark_stale(app->fallbacks); /* the domains too (tiers.h) */
        sitemap_mark_stale(app->sites);       /* and the sites (sites.h) */
        return;
    }
    if (code && bus_is_keys(code, n)) {
        links_forget_keys(app->links);
        return;
    }
    if (code && bus_is_node(code, n)) { /* a node's announcement: no invalidation */
        if (app->nodes)
            ops_nodes_heard(app->nodes, code, n, now_ms());
        return;
    }
    if (!code) { /* a change may have been missed too */
        links_blocklist_changed(app->links);
        fallbacks_mark_stale(app->fallbacks);
        sitemap_mark_stale(app->sites);
        links_forget_keys(app->links);
    }
    if (n > CODE_MAX)
        return;
    struct invalidation *iv = calloc(1, sizeof(*iv));
    if (!iv)
        abort();
    iv->task.fn = invalidate_run;
    iv->app = app;
    iv->n = code ? n : 0;
    if (iv->n)
        memcpy(iv->code, code, n);
    worker_post(server_worker(app->server, 0), &iv->task);
}

/* Where the first start leaves the setup URL when stdout is no terminal:
 * beside the SQLite file, or on a shared store beside this node's journal. */
static void setup_url_path(const struct config *cfg, struct buf *out)
{
    const char *db = cfg->store ? cfg->store : cfg->db;
    if (store_is_shared(db)) {
        buf_printf(out, "%s.setup-url", cfg->journal);
        return;
    }
    if (!strncmp(db, "sqlite:", 7))
        db += 7;
    buf_printf(out, "%s.setup-url", db);
}

/* The first start of an empty store (no API key, so no user either) makes a
 * one-time setup token (users.h) and shows the URL that opens it once:
 * printed on a terminal; otherwise (a service manager, a pipe into a log
 * collector) written to a file only this user can read, whose path is
 * logged: the token itself never reaches a log. Each such start makes a new
 * token, which replaces the last. A start of a store that is not empty
 * removes a file an earlier start left (its token is used or replaced). */
static void first_setup(struct app *app)
{
    int64_t n = 0;
    struct buf path = BUF_INIT;
    setup_url_path(&app->cfg, &path);
    if (app->store->ops->key_count(app->store, &n) != ERR_OK) {
        buf_release(&path);
        return;
    }
    if (n > 0) {
        unlink(path.p);
        buf_release(&path);
        return;
    }
    char token[SETUP_TOKEN_LEN + 1];
    struct buf url = BUF_INIT;
    int fd = -1;
    if (users_setup_start(app->store, now_ms(), token) != ERR_OK) {
        log_at(LOG_ERROR, "cannot store a setup token; make the first admin with shortd user "
                          "create NAME --role admin");
        goto out;
    }
    buf_printf(&url, "%s/setup?token=%s\n", app->cfg.base_url, token);
    sodium_memzero(token, sizeof(token));
    if (isatty(STDOUT_FILENO)) {
        printf("shortd: first start; make the first admin account at (one use, within an hour):\n"
               "  %s",
               url.p);
        fflush(stdout);
        goto out;
    }
    /* Not through a symlink; an older file (of a store since removed) is replaced. */
    fd = open(path.p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0 && fchmod(fd, 0600) == 0 &&
                   write(fd, url.p, url.len) == (ssize_t)url.len && fsync(fd) == 0;
    if (written)
        log_at(LOG_INFO,
               "first start; the setup URL that makes the first admin account is in '%s' "
               "(one use, within an hour; read it, then delete the file)",
               path.p);
    else
        log_at(LOG_ERROR,
               "cannot write the setup URL to '%s': %s; make the first admin with shortd user "
               "create NAME --role admin, or restart for a new setup URL",
               path.p, strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    if (url.p)
        sodium_memzero(url.p, url.len);
    buf_release(&url);
    buf_release(&path);
}

/* Fills the self hosts from base-url and listen: a URL to these would loop. */
static void self_hosts(const struct config *cfg, struct buf hosts[2], const char *out[3])
{
    int n = 0;
    const char *b = strstr(cfg->base_url, "://");
    if (b) {
        b += 3;
        size_t len = strcspn(b, "/?#");
        if (host_normalise(b, len, &hosts[0]) == ERR_OK)
            out[n++] = hosts[0].p;
    }
    const char *colon = strrchr(cfg->listen, ':');
    if (colon && host_normalise(cfg->listen, (size_t)(colon - cfg->listen), &hosts[1]) == ERR_OK &&
        strcmp(hosts[1].p, "0.0.0.0") != 0 && strcmp(hosts[1].p, "::") != 0)
        out[n++] = hosts[1].p;
    out[n] = NULL;
}

static void log_restart(const char *name, void *arg)
{
    (void)arg;
    log_at(LOG_WARN, "setting '%s' changed; it takes effect at the next start", name);
}

/* SIGHUP: the configuration read again. Live settings are applied here, on
 * the main thread: the log level and the rate limits (atomics that every
 * thread reads), and the sweeper's and retention's settings (this thread's
 * alone). A bad file changes nothing. 'was' is the configuration as last
 * read (before serve_run filled in its defaults), to tell what changed. */
static void reload(struct app *app, const struct serve_reload *rl, struct config *was)
{
    struct config next;
    char err[512];
    if (!rl) {
        log_at(LOG_WARN, "SIGHUP: nothing to reload");
        return;
    }
    if (rl->load(rl->arg, &next, err, sizeof(err)) != ERR_OK) {
        log_at(LOG_ERROR, "cannot reload the configuration: %s; nothing changed", err);
        return;
    }
    int live = config_reload(&app->cfg, was, &next, log_restart, NULL);
    config_release(was);
    *was = next;
    int level = log_level_parse(app->cfg.log_level); /* checked by load */
    if (level >= 0)
        atomic_store(&log_level, (enum log_level)level);
    struct config_rate limits[RL_NCLASSES];
    ratelimit_limits(&app->cfg, limits);
    ratelimit_set_limits(app->ratelimit, limits);
    clicks_pause_fold(app->clicks, app->cfg.fold_paused != 0);
    clicks_set_backlog_max(app->clicks, (size_t)app->cfg.fold_memory_mb << 20);
    clicks_set_held_max(app->clicks, (size_t)app->cfg.fold_held_mb << 20);
    clicks_set_lull(app->clicks, app->cfg.click_lull_ms);
    aggregate_set_compact(app->aggregate, (size_t)app->cfg.fold_compact_rows,
                          app->cfg.fold_compact_every * 1000);
    log_at(LOG_INFO, "reloaded the configuration%s%s%s: %d live setting%s changed",
           app->cfg.config ? " from '" : "", app->cfg.config ? app->cfg.config : "",
           app->cfg.config ? "'" : "", live, live == 1 ? "" : "s");
}

/* The visitor settings (notfound.c, /robots.txt): each fallback must be an
 * http(s) URL that can stand in a Location header, and the robots-txt file
 * is read once, here. ERR_OK, or the reason in 'err'. */
#define ROBOTS_MAX (500 * 1024) /* what Google reads of a robots.txt at most */

static int visitor_settings(struct app *app, char *err, size_t errlen)
{
    const struct config *cfg = &app->cfg;
    const char *names[] = {"invalid-short-url-redirect", "regular-404-redirect"};
    const char *urls[] = {cfg->invalid_redirect, cfg->regular_404_redirect};
    for (int i = 0; i < 2; i++) {
        if (!urls[i] || !*urls[i])
            continue;
        struct urlcheck_opts o = {0};
        struct buf out = BUF_INIT, host = BUF_INIT;
        const char *why = NULL;
        int rc = urlcheck(urls[i], strlen(urls[i]), &o, &out, &host, &why);
        buf_release(&out);
        buf_release(&host);
        if (rc != ERR_OK) {
            snprintf(err, errlen, "setting '%s': '%s' %s", names[i], urls[i], why);
            return ERR_INVALID;
        }
    }
    if (!cfg->robots_txt)
        return ERR_OK;
    FILE *f = fopen(cfg->robots_txt, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read robots-txt '%s': %s", cfg->robots_txt, strerror(errno));
        return ERR_IO;
    }
    char *text = malloc(ROBOTS_MAX + 1);
    if (!text)
        abort();
    size_t n = fread(text, 1, ROBOTS_MAX + 1, f);
    bool failed = ferror(f);
    fclose(f);
    if (failed || n > ROBOTS_MAX) {
        free(text);
        snprintf(err, errlen, "cannot read robots-txt '%s': %s", cfg->robots_txt,
                 failed ? "read error" : "larger than 500 KiB");
        return ERR_IO;
    }
    app->robots = text;
    app->robots_len = n;
    return ERR_OK;
}

/* For /metrics (app.h). */
/* Whether 'listen' (ADDR:PORT) is a loopback address: then only this
 * machine reaches /metrics, and it needs no key. */
static bool listen_is_loopback(const char *listen)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    size_t n = colon ? (size_t)(colon - listen) : strlen(listen);
    if (n >= sizeof(host))
        return false;
    memcpy(host, listen, n);
    host[n] = '\0';
    if (host[0] == '[' && n > 1 && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    return !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost");
}

/* The operations checks and the alert thread (src/ops/). ERR_OK, or the
 * setting that is wrong logged. */
static int ops_start(struct app *app)
{
    char err[300];
    if (app->cfg.metrics_allow &&
        clientaddr_new(app->cfg.metrics_allow, &app->metrics_allow, err, sizeof(err)) != ERR_OK) {
        log_at(LOG_ERROR, "metrics-allow: %s", err);
        return ERR_INVALID;
    }
    app->metrics_open = !app->cfg.metrics_allow && listen_is_loopback(app->cfg.listen);
    if (app->cfg.backup_every && !app->cfg.backup_dir) {
        log_at(LOG_ERROR, "backup-every is set: backup-dir must name where backups go");
        return ERR_INVALID;
    }
    struct notify *n = NULL;
    if (notify_new(&app->cfg, &n, err, sizeof(err)) != ERR_OK) {
        log_at(LOG_ERROR, "%s", err);
        return ERR_INVALID;
    }
    const char *url = app->cfg.store ? app->cfg.store : app->cfg.db;
    if (app->bus)
        app->nodes = ops_nodes_new(app->cfg.node_id, SHORTD_VERSION, now_ms());
    struct checks_env env = {
        .store = app->store,
        .rcache = app->rcache,
        .clicks = app->clicks,
        .db_path = store_is_shared(url) ? NULL : url,
        .journal_dir = app->cfg.journal,
        .nodes = app->nodes,
        .events = app->events,
        .nodes_window_ms = 3 * app->cfg.check_every * 1000 + 2000,
        .lag_warn_s = app->cfg.lag_warn,
        .backup_every_s = app->cfg.backup_every,
    };
    app->checks = checks_new(&env);
    if (watch_start(app, app->checks, n, &app->watch) != ERR_OK) {
        notify_free(n);
        return ERR_IO;
    }
    return ERR_OK;
}

static void count_links(struct app *app)
{
    int64_t links = 0;
    if (app->store->ops->link_count(app->store, &links) == ERR_OK)
        atomic_store(&app->links_counted, links);
}

int serve_run(struct config *cfg, const struct serve_reload *reloader)
{
    struct app app;
    memset(&app, 0, sizeof(app));
    atomic_store(&app.links_counted, -1);
    app.started_ms = now_ms();
    struct config was; /* as read: what a reload compares with */
    config_copy(&was, cfg);
    app.cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg)); /* app owns the strings now */
    int rc = ERR_IO;

    if (!app.cfg.base_url) {
        struct buf b = BUF_INIT;
        buf_printf(&b, "http://%s", app.cfg.listen);
        app.cfg.base_url = buf_detach(&b, NULL);
    }
    if (!app.cfg.node_id) {
        char host[256] = "node";
        gethostname(host, sizeof(host) - 1);
        app.cfg.node_id = xstrdup(host);
    }
    size_t bl = strlen(app.cfg.base_url);
    while (bl > 0 && app.cfg.base_url[bl - 1] == '/')
        app.cfg.base_url[--bl] = '\0';

    /* Signals go to this thread only: block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct buf hostbufs[2] = {BUF_INIT, BUF_INIT};
    const char *hosts[3];
    self_hosts(&app.cfg, hostbufs, hosts);
    char herr[256];
    if (hostlist_parse(app.cfg.hosts, &app.hosts, herr, sizeof(herr)) != ERR_OK) {
        log_at(LOG_ERROR, "%s", herr);
        goto out;
    }
    if (cors_check(app.cfg.cors_origins, herr, sizeof(herr)) != ERR_OK) {
        log_at(LOG_ERROR, "%s", herr);
        goto out;
    }
    if (visitor_settings(&app, herr, sizeof(herr)) != ERR_OK) {
        log_at(LOG_ERROR, "%s", herr);
        goto out;
    }
    /* A link may not point at any host shortd answers on: those two, and
     * the default short hosts (custom domains are looked up at create). */
    const char *self[3 + HOSTS_MAX];
    int nself = 0;
    for (; hosts[nself]; nself++)
        self[nself] = hosts[nself];
    for (int i = 0; i < hostlist_count(app.hosts); i++)
        self[nself++] = hostlist_name(app.hosts, i);
    self[nself] = NULL;

    /* A busy address is refused before the store is opened: a mistyped
     * second start leaves no new empty database behind. */
    if (server_check_listen(&app.cfg) != ERR_OK)
        goto out;
    if (store_open(app.cfg.store ? app.cfg.store : app.cfg.db, &app.store) != ERR_OK)
        goto out;
    if (links_new(app.store, router_reserved(), self, &app.links) != ERR_OK)
        goto out;
    app.fallbacks = fallbacks_new();
    if (fallbacks_load(app.fallbacks, app.store) != ERR_OK) {
        log_at(LOG_ERROR, "cannot read the custom domains' not-found redirects");
        goto out;
    }
    app.sites = sitemap_new();
    if (sitemap_load(app.sites, app.store) != ERR_OK) {
        log_at(LOG_ERROR, "cannot read the sites' hosts");
        goto out;
    }
    if (app.cfg.geoip_db && geo_open(app.cfg.geoip_db, &app.geo) != ERR_OK)
        goto out;
    if (classify_new((size_t)app.cfg.ua_cache, &app.classify) != ERR_OK)
        goto out;
    app.aggregate = aggregate_new(app.classify, hosts);

    int nroutes = 0;
    const char *const *names = router_route_names(&nroutes);
    app.metrics = metrics_new(names, nroutes);
    app.cache = cache_new((size_t)app.cfg.cache_size, app.cfg.miss_ttl);
    app.writer = writer_new(app.store, (int)app.cfg.commit_batch);
    cache_thread_register();
    coop_set_idle(app.cfg.background_idle != 0);
    if (writer_start(app.writer, (int)app.cfg.background_nice) != ERR_OK)
        goto out;
    if (app.store->ops->background &&
        app.store->ops->background(app.store, (int)app.cfg.background_nice) != ERR_OK)
        goto out;
    if (server_new(&app, &router_entry, &app.server) != ERR_OK)
        goto out;
    /* Store threads serve people waiting (API calls, controlled links) a
     * little below the event loops' priority; a redirect's misses, which a
     * flood of unknown codes sends at any rate, at the click pipeline's. */
    if (storeq_new(&app, (int)app.cfg.store_threads, (int)app.cfg.store_queue,
                   app.cfg.store_timeout_ms, (int)app.cfg.heavy_reads_per_key, STOREQ_NICE,
                   (int)app.cfg.background_nice, &app.storeq) != ERR_OK)
        goto out;
    const char *store_url = app.cfg.store ? app.cfg.store : app.cfg.db;
    if (app.cfg.cache &&
        rcache_new(app.cfg.cache, (int)app.cfg.cache_timeout_ms, &app.rcache) != ERR_OK)
        goto out;
    char why[200];
    if (clientaddr_new(app.cfg.trusted_proxies, &app.clientaddr, why, sizeof(why)) != ERR_OK) {
        log_at(LOG_ERROR, "%s", why);
        goto out;
    }
    uint8_t rl_secret[RL_SECRET_BYTES];
    if (ratelimit_secret(app.store, rl_secret) != ERR_OK)
        goto out;
    struct config_rate limits[RL_NCLASSES];
    ratelimit_limits(&app.cfg, limits);
    /* Limits are shared through Redis between nodes on PostgreSQL. */
    app.ratelimit =
        ratelimit_new(limits, rl_secret, store_is_shared(store_url) ? app.rcache : NULL);
    sodium_memzero(rl_secret, sizeof(rl_secret));
    if (app.cfg.cache || store_is_shared(store_url)) {
        if (bus_new(app.cfg.cache, store_is_shared(store_url) ? store_url : NULL,
                    (int)app.cfg.cache_timeout_ms * 20, on_invalidate, &app, &app.bus) != ERR_OK)
            goto out;
    }
    app.clicks = clicks_new(app.store, app.writer, app.aggregate, server_nworkers(app.server));
    if (clicks_rotate_salts(app.clicks, now_ms()) != ERR_OK)
        goto out;
    if (!app.cfg.journal && store_is_shared(app.cfg.store ? app.cfg.store : app.cfg.db)) {
        log_at(LOG_ERROR, "a shared store needs --journal DIR: each node keeps its own journal");
        goto out;
    }
    if (!app.cfg.journal) {
        struct buf j = BUF_INIT;
        const char *db = app.cfg.store ? app.cfg.store : app.cfg.db;
        if (!strncmp(db, "sqlite:", 7))
            db += 7;
        buf_printf(&j, "%s.clicks", db);
        app.cfg.journal = buf_detach(&j, NULL);
    }
    struct events_config ecfg = {
        .retry_base_ms = app.cfg.events_retry_base_ms,
        .retry_cap_ms = app.cfg.events_retry_cap_ms,
        .retry_budget_ms = app.cfg.events_retry_budget_s * 1000,
        .batch_wait_ms = app.cfg.events_batch_wait_ms,
        .timeout_ms = app.cfg.events_timeout_ms,
        .batch_max = 100,
        .inflight = (int)app.cfg.events_inflight,
        .node = app.cfg.node_id,
        .self_hosts = hosts,
    };
    app.events = events_new(app.store, app.writer, app.clicks, &ecfg);
    clicks_set_hold(app.clicks, events_hold, app.events);
    first_setup(&app);
    clicks_pause_fold(app.clicks, app.cfg.fold_paused != 0);
    clicks_set_backlog_max(app.clicks, (size_t)app.cfg.fold_memory_mb << 20);
    clicks_set_held_max(app.clicks, (size_t)app.cfg.fold_held_mb << 20);
    clicks_set_lull(app.clicks, app.cfg.click_lull_ms);
    aggregate_set_compact(app.aggregate, (size_t)app.cfg.fold_compact_rows,
                          app.cfg.fold_compact_every * 1000);
    if (clicks_start(app.clicks, app.cfg.journal, app.cfg.click_flush_ms, app.cfg.journal_sync_ms,
                     (int)app.cfg.background_nice) != ERR_OK)
        goto out;
    if (events_start(app.events) != ERR_OK)
        goto out;
    if (ops_start(&app) != ERR_OK)
        goto out;
    if (server_start(app.server) != ERR_OK)
        goto out;
    log_at(LOG_INFO, "node '%s' serving (store %s%s)", app.cfg.node_id,
           store_is_shared(store_url) ? "postgres" : "sqlite", app.rcache ? ", redis cache" : "");

    int64_t gen = generation(app.store);
    /* Due times on the monotonic clock: a wall clock step moves none of them. */
    int64_t next_sweep = 0, next_count = mono_ms() + LINKS_COUNT_MS;
    struct sweep_clock sclock = {now_ms(), mono_ms()}; /* the first sweep is bounded too */
    count_links(&app);
    struct timespec tick = {0, GENERATION_CHECK_MS * 1000000L};
    int64_t next_second = 0;
    for (;;) {
        int sig = sigtimedwait(&sigs, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            log_at(LOG_INFO, "stopping on signal %d", sig);
            break;
        }
        if (sig == SIGHUP)
            reload(&app, reloader, &was);
        int64_t now = now_ms(), mono = mono_ms();
        /* A store that does not answer changes nothing: clearing the cache
         * then would send every cached link to the store that is down. */
        int64_t g = generation(app.store);
        if (g >= 0 && g != gen) {
            gen = g;
            cache_clear(app.cache);
            links_forget_keys(app.links);
            fallbacks_mark_stale(app.fallbacks);
            sitemap_mark_stale(app.sites);
        }
        /* Another node (or the command line) changed sites: read again. */
        if (sitemap_take_stale(app.sites) && sitemap_load(app.sites, app.store) != ERR_OK) {
            log_at(LOG_WARN, "cannot read the sites' hosts; trying again");
            sitemap_mark_stale(app.sites);
        }
        /* Another node changed a domain: its redirects are read again. */
        if (fallbacks_take_stale(app.fallbacks) &&
            fallbacks_load(app.fallbacks, app.store) != ERR_OK) {
            log_at(LOG_WARN, "cannot read the custom domains' not-found redirects; trying again");
            fallbacks_mark_stale(app.fallbacks);
        }
        if (mono < next_second)
            continue;
        next_second = mono + 1000;
        cache_reclaim(app.cache);
        sitemap_reclaim(app.sites);
        touch_keys(&app);
        if (mono >= next_count) {
            count_links(&app);
            next_count = mono + LINKS_COUNT_MS;
        }
        if (clicks_rotate_salts(app.clicks, now) != ERR_OK)
            log_at(LOG_WARN, "cannot rotate the visitor salts");
        if (mono >= next_sweep) {
            sweep(&app, sweep_now(&app, &sclock));
            next_sweep = mono + app.cfg.sweep_interval * 1000;
        }
    }
    rc = ERR_OK;

out:
    atomic_store(&app.stopping, true); /* invalidations are dropped from now on */
    if (app.server) {
        server_stop_accepting(app.server);
        storeq_drain(app.storeq); /* every read answered; later ones get 503 */
        if (app.writer)
            writer_drain(app.writer); /* every acknowledged write, answered */
        server_stop(app.server);
        server_join(app.server); /* each worker hands over its clicks */
        if (app.writer)
            touch_keys(&app); /* the last minute's uses */
    }
    watch_stop(app.watch); /* before what its checks read */
    app.watch = NULL;
    bus_free(app.bus); /* after the loops: /metrics reads its counts */
    app.bus = NULL;
    storeq_free(app.storeq);
    events_stop(app.events); /* before the writer; its positions are stored */
    clicks_stop(app.clicks); /* journaled, folded and stored */
    if (app.writer) {
        writer_drain(app.writer);
        writer_free(app.writer);
    }
    if (app.clicks && clicks_pending(app.clicks))
        log_at(LOG_ERROR, "%llu clicks were not saved",
               (unsigned long long)clicks_pending(app.clicks));
    server_free(app.server);
    clicks_free(app.clicks);
    events_free(app.events); /* after the journal thread, which asks it how far to release */
    ratelimit_free(app.ratelimit);
    clientaddr_free(app.clientaddr);
    clientaddr_free(app.metrics_allow);
    ops_nodes_free(app.nodes);
    checks_free(app.checks);
    rcache_free(app.rcache);
    aggregate_free(app.aggregate);
    classify_free(app.classify);
    geo_close(app.geo);
    hostlist_free(app.hosts);
    cache_free(app.cache);
    if (app.cache) /* registered right after it was made */
        cache_thread_unregister();
    metrics_free(app.metrics);
    links_free(app.links);
    fallbacks_free(app.fallbacks);
    sitemap_free(app.sites);
    if (app.store)
        app.store->ops->close(app.store);
    buf_release(&hostbufs[0]);
    buf_release(&hostbufs[1]);
    free(app.robots);
    config_release(&app.cfg);
    config_release(&was);
    if (rc == ERR_OK)
        log_at(LOG_INFO, "stopped");
    return rc;
}
