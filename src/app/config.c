/* config.c - the table of every `shortd serve` setting, and the three places
 * a value can come from (file, environment, flag). shortd.conf.example is
 * generated from this table (`shortd config example`) and a unit test checks
 * that the committed file agrees with it. */
#include "app/config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

enum ctype { C_STR, C_INT, C_BOOL, C_RATE };

struct setting {
    const char *name;
    enum ctype type;
    size_t off;
    const char *def; /* NULL: unset */
    int64_t min, max;
    const char *help;
    unsigned flags;
};

/* Read again on SIGHUP and applied while serving (serve.c); every other
 * setting takes effect at the next start. */
#define S_LIVE (1u << 0)

#define F(f) offsetof(struct config, f)

static const struct setting settings[] = {
    /* name              type    field                  default       min  max        help  flags */
    {"listen", C_STR, F(listen), "127.0.0.1:8080", 0, 0, "address and port to serve on", 0},
    {"db", C_STR, F(db), "data/shortd.db", 0, 0, "SQLite database file", 0},
    {"store", C_STR, F(store), NULL, 0, 0, "store URL (sqlite:PATH); overrides db", 0},
    {"base-url", C_STR, F(base_url), NULL, 0, 0, "start of every short URL (default http://LISTEN)",
     0},
    {"hosts", C_STR, F(hosts), NULL, 0, 0,
     "default short hosts, comma-separated; when set, any other host (apart from a link's own "
     "domain) answers 404 (default: every host)",
     0},
    {"home", C_STR, F(home), "/dashboard", 0, 0, "where GET / redirects", 0},
    {"invalid-short-url-redirect", C_STR, F(invalid_redirect), NULL, 0, 0,
     "URL a code that opens nothing (unknown, expired, deleted, disabled, used up) redirects to, "
     "unless its custom domain sets its own (default: a page for browsers, 404/410 text else)",
     0},
    {"regular-404-redirect", C_STR, F(regular_404_redirect), NULL, 0, 0,
     "URL any other path nothing serves (outside /api/) redirects to (default: 404)", 0},
    {"robots-txt", C_STR, F(robots_txt), NULL, 0, 0,
     "file served as /robots.txt (default: crawlers kept out of /api/ and /dashboard only)", 0},
    {"log-level", C_STR, F(log_level), "info", 0, 0, "debug, info, warn, error or off", S_LIVE},
    {"config", C_STR, F(config), NULL, 0, 0, "a file of key = value lines", 0},
    {"cache", C_STR, F(cache), NULL, 0, 0,
     "redis://HOST:PORT of a shared cache in front of a postgres:// store", 0},
    {"node-id", C_STR, F(node_id), NULL, 0, 0,
     "this node's name in logs and metrics (default: host name)", 0},
    {"cache-timeout-ms", C_INT, F(cache_timeout_ms), "50", 1, 10000,
     "milliseconds any call to the shared cache may take before it is skipped", 0},
    {"journal", C_STR, F(journal), NULL, 0, 0,
     "click journal directory (default: the database path + .clicks)", 0},
    {"country-header", C_STR, F(country_header), "CF-IPCountry", 0, 0,
     "request header a CDN puts the client's country in (believed from trusted-proxies only)", 0},
    {"geoip-db", C_STR, F(geoip_db), NULL, 0, 0,
     "MaxMind country database; when set, it decides the country instead of the header", 0},
    {"threads", C_INT, F(threads), "0", 0, 256, "event-loop threads (0: one per core)", 0},
    {"store-threads", C_INT, F(store_threads), "4", 1, 256,
     "threads that serve requests needing the store, and half as many for a redirect's misses", 0},
    {"store-queue", C_INT, F(store_queue), "1024", 1, 1000000,
     "requests waiting for store threads at most, per pool; beyond, 503 at once", 0},
    {"store-timeout-ms", C_INT, F(store_timeout_ms), "1000", 10, 60000,
     "milliseconds a request waits for the store before it is answered 503", 0},
    {"heavy-reads-per-key", C_INT, F(heavy_reads_per_key), "2", 1, 1000,
     "searches (q=) and exports one API key may run at once; beyond, 429", 0},
    {"search-page-rows", C_INT, F(search_page_rows), "10000", 100, 10000000,
     "links a filtered list (q= or tag=) reads for one page at most; the Link header goes on", 0},
    {"yourls-timestamp-window", C_INT, F(yourls_timestamp_window), "43200", 1, 31536000,
     "seconds a YOURLS timestamped signature's timestamp may be from now, either way "
     "(YOURLS_NONCE_LIFE)",
     0},
    {"takeover", C_BOOL, F(takeover), "false", 0, 1,
     "listen beside a server already on the address instead of refusing to start "
     "(a restart without downtime)",
     0},
    {"max-connections", C_INT, F(max_connections), "10000", 1, 1000000, "open connections at most",
     0},
    {"max-connections-per-addr", C_INT, F(max_connections_per_addr), "1000", 1, 1000000,
     "open connections from one client address (an IPv6 /64) at most; trusted proxies are exempt",
     0},
    {"max-header-bytes", C_INT, F(max_header_bytes), "16384", 1024, 1048576,
     "request line and headers at most (431)", 0},
    {"max-target-bytes", C_INT, F(max_target_bytes), "4096", 64, 1048576,
     "request target at most (414)", 0},
    {"max-body-bytes", C_INT, F(max_body_bytes), "1048576", 1024, 1073741824,
     "request body at most (413)", 0},
    {"header-timeout", C_INT, F(header_timeout), "10", 1, 3600, "seconds to receive the headers",
     0},
    {"body-timeout", C_INT, F(body_timeout), "30", 1, 3600, "seconds to receive the body", 0},
    {"idle-timeout", C_INT, F(idle_timeout), "60", 1, 86400, "seconds an idle keep-alive lasts", 0},
    {"send-timeout", C_INT, F(send_timeout), "60", 1, 3600,
     "seconds a write may wait for the client to take data (then the connection is closed)", 0},
    {"cache-size", C_INT, F(cache_size), "10000000", 0, 1000000000,
     "links kept in the redirect cache", 0},
    {"miss-ttl", C_INT, F(miss_ttl), "1000", 0, 3600000,
     "milliseconds an unknown code is cached as unknown", 0},
    {"pass-query", C_BOOL, F(pass_query), "true", 0, 1,
     "append the request's query string to the destination", 0},
    {"permanent-max-age", C_INT, F(permanent_max_age), "86400", 0, 31536000,
     "Cache-Control max-age of a 301 for permanent links", 0},
    {"idempotency-ttl", C_INT, F(idempotency_ttl), "86400", 60, 31536000,
     "seconds an Idempotency-Key is remembered", 0},
    {"session-idle", C_INT, F(session_idle), "43200", 1, 2592000,
     "seconds a dashboard sign-in lasts unused", 0},
    {"session-max", C_INT, F(session_max), "604800", 1, 31536000,
     "seconds a dashboard sign-in lasts at most, used or not", 0},
    {"click-flush-ms", C_INT, F(click_flush_ms), "1000", 10, 60000,
     "milliseconds between writes of click counters to the store while clicks keep coming", 0},
    {"click-lull-ms", C_INT, F(click_lull_ms), "100", 0, 60000,
     "milliseconds without a new click after which the counters are written at once, "
     "not at the next click-flush-ms (0: never)",
     S_LIVE},
    {"journal-sync-ms", C_INT, F(journal_sync_ms), "20", 1, 1000,
     "milliseconds between syncs of the click journal: what a crash can lose", 0},
    {"background-nice", C_INT, F(background_nice), "19", 0, 19,
     "how much lower the priority of folding clicks is than serving", 0},
    {"background-idle", C_BOOL, F(background_idle), "false", 0, 1,
     "fold and store clicks only on a core nothing else wants (SCHED_IDLE); "
     "a busy neighbour then stalls them",
     0},
    {"loop-slice-us", C_INT, F(loop_slice_us), "100", 0, 100000,
     "time slice the event loops ask the kernel for, in microseconds; 0: the kernel's", 0},
    {"retention-days", C_INT, F(retention_days), "400", 1, 36500,
     "days per-day analytics are kept (all-time totals are kept for ever)", S_LIVE},
    {"ua-cache", C_INT, F(ua_cache), "10000", 16, 10000000, "classified user agents remembered", 0},
    {"commit-batch", C_INT, F(commit_batch), "2000", 1, 100000, "most writes in one group commit",
     0},
    {"sweep-interval", C_INT, F(sweep_interval), "60", 1, 86400,
     "seconds between sweeps of expired data", S_LIVE},
    {"sweep-grace", C_INT, F(sweep_grace), "604800", 0, 315360000,
     "seconds an expired link keeps its URL and title before the sweeper removes them", S_LIVE},
    {"sweep-batch", C_INT, F(sweep_batch), "1000", 1, 100000, "links swept per transaction",
     S_LIVE},
    {"events-retry-base-ms", C_INT, F(events_retry_base_ms), "10000", 1, 3600000,
     "milliseconds before a sink that failed is tried again; doubled at each failure", 0},
    {"events-retry-cap-ms", C_INT, F(events_retry_cap_ms), "3600000", 1, 86400000,
     "longest wait between two tries of a sink, in milliseconds", 0},
    {"events-retry-budget", C_INT, F(events_retry_budget_s), "86400", 1, 31536000,
     "seconds a batch of events is retried before it moves to the failed archive", 0},
    {"events-batch-wait-ms", C_INT, F(events_batch_wait_ms), "5000", 0, 600000,
     "milliseconds a batch of fewer than 100 events waits to fill before it is sent", 0},
    {"events-timeout-ms", C_INT, F(events_timeout_ms), "10000", 100, 600000,
     "milliseconds every call to a sink may take", 0},
    {"events-inflight", C_INT, F(events_inflight), "2", 1, 2,
     "batches in flight per sink at once (one of clicks, one of link events)", 0},
    {"trusted-proxies", C_STR, F(trusted_proxies), NULL, 0, 0,
     "CIDRs of proxies whose X-Forwarded-For is believed, comma separated (default: none)", 0},
    {"cors-origins", C_STR, F(cors_origins), NULL, 0, 0,
     "origins (SCHEME://HOST[:PORT]) whose web pages may call the API, comma separated, or * "
     "for any (default: none)",
     0},
    {"rate-auth", C_RATE, F(rate_auth), "20/60", 0, 0,
     "API requests without a valid key per client address: LIMIT/SECONDS, or off", S_LIVE},
    {"rate-password", C_RATE, F(rate_password), "5/60", 0, 0,
     "password attempts per client address and link", S_LIVE},
    {"rate-password-client", C_RATE, F(rate_password_client), "30/60", 0, 0,
     "password attempts per client address over all links", S_LIVE},
    {"rate-create-addr", C_RATE, F(rate_create_addr), "off", 0, 0,
     "creates (POST /api/links, bulk) per client address", S_LIVE},
    {"rate-create-key", C_RATE, F(rate_create_key), "off", 0, 0, "creates per API key", S_LIVE},
    {"rate-read-addr", C_RATE, F(rate_read_addr), "off", 0, 0,
     "other authenticated API requests per client address", S_LIVE},
    {"rate-read-key", C_RATE, F(rate_read_key), "off", 0, 0,
     "other authenticated API requests per API key", S_LIVE},
    {"metrics-allow", C_STR, F(metrics_allow), NULL, 0, 0,
     "CIDRs that may read /metrics without a key, comma separated (default: any client when "
     "listen is a loopback address, else none: a key with the ops scope)",
     0},
    {"check-every", C_INT, F(check_every), "60", 1, 86400,
     "seconds between two runs of the operations checks that alerts are made of", 0},
    {"lag-warn", C_INT, F(lag_warn), "60", 1, 86400,
     "seconds clicks may wait to be counted before the checks warn (they fail at six times "
     "that)",
     0},
    {"alert-confirm", C_INT, F(alert_confirm), "240", 0, 86400,
     "seconds a problem must last (a check at least this much later still finds it) before "
     "an alert is sent",
     0},
    {"alert-repeat", C_INT, F(alert_repeat), "3600", 1, 604800,
     "seconds between two reminders of an unchanged set of problems", 0},
    {"alert-timezone", C_STR, F(alert_timezone), "UTC", 0, 0,
     "time zone of the times in alerts (an IANA name such as Asia/Kolkata; UTC is given too)", 0},
    {"smtp-host", C_STR, F(smtp_host), NULL, 0, 0,
     "mail server alerts are sent through (default: no e-mail)", 0},
    {"smtp-port", C_INT, F(smtp_port), "587", 1, 65535, "its port", 0},
    {"smtp-starttls", C_BOOL, F(smtp_starttls), "true", 0, 1,
     "require STARTTLS before the password and the message are sent", 0},
    {"smtp-from", C_STR, F(smtp_from), NULL, 0, 0, "sender address of alerts", 0},
    {"smtp-to", C_STR, F(smtp_to), NULL, 0, 0, "recipients of alerts, comma separated", 0},
    {"smtp-user", C_STR, F(smtp_user), NULL, 0, 0,
     "user name for the mail server; its password comes from SHORTD_SMTP_PASSWORD or "
     "smtp-password-file, never a flag",
     0},
    {"smtp-password-file", C_STR, F(smtp_password_file), NULL, 0, 0,
     "file holding the mail server's password (one line)", 0},
    {"webhook-url", C_STR, F(webhook_url), NULL, 0, 0, "URL alerts are POSTed to (default: none)",
     0},
    {"webhook-format", C_STR, F(webhook_format), "alertmanager", 0, 0,
     "body of a webhook alert: alertmanager or slack", 0},
    {"backup-dir", C_STR, F(backup_dir), NULL, 0, 0,
     "directory the server writes a backup of a SQLite store into every backup-every", 0},
    {"backup-every", C_INT, F(backup_every), "0", 0, 2592000,
     "seconds between two backups into backup-dir (0: none)", 0},
    {"fold-paused", C_BOOL, F(fold_paused), "false", 0, 1,
     "stop counting clicks: they wait in the journal (maintenance, tests)", S_LIVE},
    {"fold-held-mb", C_INT, F(fold_held_mb), "512", 1, 65536,
     "MiB of counted clicks held while the store writes the last ones; past it counting waits",
     S_LIVE},
    {"fold-memory-mb", C_INT, F(fold_memory_mb), "128", 1, 65536,
     "MiB of journaled clicks kept in memory for counting; past it they wait in the journal "
     "on disk only",
     S_LIVE},
    {"fold-compact-rows", C_INT, F(fold_compact_rows), "2000000", 1, 1000000000,
     "link days stored as they came that start merging them into the day rows", S_LIVE},
    {"fold-compact-every", C_INT, F(fold_compact_every), "30", 1, 86400,
     "seconds: link days stored as they came are merged at least this often", S_LIVE},
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

static const struct setting *find(const char *name)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strcmp(settings[i].name, name) == 0)
            return &settings[i];
    return NULL;
}

bool config_is_setting(const char *name) { return find(name) != NULL; }

/* "LIMIT/SECONDS" (1..10^9 per 1..86400 s), or "0"/"off" for no limit. */
static int set_rate(struct config_rate *r, const char *name, const char *value, char *err,
                    size_t errlen)
{
    if (!strcmp(value, "off") || !strcmp(value, "0")) {
        r->limit = 0;
        r->window = 60;
        return ERR_OK;
    }
    char *end = NULL;
    errno = 0;
    long long limit = strtoll(value, &end, 10), window = 0;
    bool ok = !errno && end != value && *end == '/' && limit >= 1 && limit <= 1000000000;
    if (ok) {
        const char *w = end + 1;
        window = strtoll(w, &end, 10);
        ok = !errno && end != w && !*end && window >= 1 && window <= 86400;
    }
    if (!ok) {
        snprintf(err, errlen,
                 "'%s' must be LIMIT/SECONDS (e.g. 20/60: 1 to 1000000000 requests per 1 to "
                 "86400 seconds) or off, not '%s'",
                 name, value);
        return ERR_INVALID;
    }
    r->limit = limit;
    r->window = window;
    return ERR_OK;
}

static int set(struct config *c, const struct setting *s, const char *value, char *err,
               size_t errlen)
{
    char *base = (char *)c;
    if (s->type == C_STR) {
        if (value && !strcmp(s->name, "log-level") && log_level_parse(value) < 0) {
            snprintf(err, errlen, "'log-level' must be debug, info, warn, error or off, not '%s'",
                     value);
            return ERR_INVALID;
        }
        char **field = (char **)(base + s->off);
        free(*field);
        *field = value ? xstrdup(value) : NULL;
        return ERR_OK;
    }
    if (s->type == C_RATE)
        return set_rate((struct config_rate *)(base + s->off), s->name, value, err, errlen);
    int64_t v;
    if (s->type == C_BOOL) {
        if (!strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "yes") ||
            !strcmp(value, "on"))
            v = 1;
        else if (!strcmp(value, "false") || !strcmp(value, "0") || !strcmp(value, "no") ||
                 !strcmp(value, "off"))
            v = 0;
        else {
            snprintf(err, errlen, "'%s' must be true or false, not '%s'", s->name, value);
            return ERR_INVALID;
        }
    } else {
        char *end = NULL;
        errno = 0;
        long long ll = strtoll(value, &end, 10);
        if (errno || end == value || *end || ll < s->min || ll > s->max) {
            snprintf(err, errlen, "'%s' must be a whole number from %lld to %lld, not '%s'",
                     s->name, (long long)s->min, (long long)s->max, value);
            return ERR_INVALID;
        }
        v = ll;
    }
    *(int64_t *)(base + s->off) = v;
    return ERR_OK;
}

void config_init(struct config *c)
{
    memset(c, 0, sizeof(*c));
    char err[16];
    for (size_t i = 0; i < NSETTINGS; i++)
        if (settings[i].def)
            set(c, &settings[i], settings[i].def, err, sizeof(err));
}

void config_release(struct config *c)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (settings[i].type == C_STR)
            free(*(char **)((char *)c + settings[i].off));
    memset(c, 0, sizeof(*c));
}

int config_set(struct config *c, const char *name, const char *value, char *err, size_t errlen)
{
    const struct setting *s = find(name);
    if (!s) {
        snprintf(err, errlen, "unknown setting '%s'", name);
        return ERR_NOTFOUND;
    }
    return set(c, s, value, err, errlen);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int config_load_file(struct config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read config file '%s': %s", path, strerror(errno));
        return ERR_IO;
    }
    /* Whole lines, however long: a fixed buffer would read the rest of a
     * long one as a line of its own (a setting, in a long comment). */
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    int rc = ERR_OK;
    while (getline(&line, &cap, f) != -1) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            rc = ERR_INVALID;
            break;
        }
        *eq = '\0';
        char *key = trim(s);
        char *value = trim(eq + 1);
        size_t vn = strlen(value);
        if (vn >= 2 && value[0] == '"' && value[vn - 1] == '"') {
            value[vn - 1] = '\0';
            value++;
        }
        char why[256];
        rc = config_set(c, key, value, why, sizeof(why));
        if (rc != ERR_OK) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            break;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

int config_load_env(struct config *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        char var[64] = "SHORTD_";
        size_t n = 7;
        for (const char *p = settings[i].name; *p && n < sizeof(var) - 1; p++)
            var[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        var[n] = '\0';
        const char *v = getenv(var);
        if (!v || !strcmp(settings[i].name, "config"))
            continue;
        char why[256];
        if (set(c, &settings[i], v, why, sizeof(why)) != ERR_OK) {
            snprintf(err, errlen, "environment %s: %s", var, why);
            return ERR_INVALID;
        }
    }
    return ERR_OK;
}

static const char *type_name(enum ctype t)
{
    return t == C_STR ? "TEXT" : t == C_BOOL ? "BOOL" : t == C_RATE ? "N/SECONDS" : "N";
}

size_t config_count(void) { return NSETTINGS; }

void config_info(size_t i, struct config_info *out)
{
    const struct setting *s = &settings[i];
    *out = (struct config_info){.name = s->name,
                                .type = type_name(s->type),
                                .def = s->def,
                                .help = s->help,
                                .min = s->min,
                                .max = s->max,
                                .live = (s->flags & S_LIVE) != 0};
}

void config_copy(struct config *dst, const struct config *src)
{
    *dst = *src;
    for (size_t i = 0; i < NSETTINGS; i++) {
        if (settings[i].type != C_STR)
            continue;
        char **field = (char **)((char *)dst + settings[i].off);
        if (*field)
            *field = xstrdup(*field);
    }
}

static bool same(const struct config *a, const struct config *b, const struct setting *s)
{
    const char *pa = (const char *)a + s->off, *pb = (const char *)b + s->off;
    if (s->type == C_STR) {
        const char *x = *(char *const *)pa, *y = *(char *const *)pb;
        return x == y || (x && y && !strcmp(x, y));
    }
    if (s->type == C_RATE) {
        const struct config_rate *x = (const void *)pa, *y = (const void *)pb;
        return x->limit == y->limit && x->window == y->window;
    }
    return *(const int64_t *)pa == *(const int64_t *)pb;
}

int config_reload(struct config *running, const struct config *was, const struct config *next,
                  void (*restart)(const char *name, void *arg), void *arg)
{
    int changed = 0;
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (!strcmp(s->name, "config") || same(was, next, s))
            continue;
        if (!(s->flags & S_LIVE)) {
            restart(s->name, arg);
            continue;
        }
        char *to = (char *)running + s->off;
        const char *from = (const char *)next + s->off;
        if (s->type == C_STR) {
            char **field = (char **)to;
            const char *v = *(char *const *)from;
            free(*field);
            *field = v ? xstrdup(v) : NULL;
        } else if (s->type == C_RATE) {
            memcpy(to, from, sizeof(struct config_rate));
        } else {
            memcpy(to, from, sizeof(int64_t));
        }
        changed++;
    }
    return changed;
}

#define LIVE_NOTE "; changes on SIGHUP"

void config_print_help(FILE *f)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *s = &settings[i];
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s %s", s->name, type_name(s->type));
        fprintf(f, "  %-26s %s", flag, s->help);
        if (s->def)
            fprintf(f, " (default: %s%s)", s->def, s->flags & S_LIVE ? LIVE_NOTE : "");
        else if (s->flags & S_LIVE)
            fprintf(f, " (changes on SIGHUP)");
        fputc('\n', f);
    }
}

void config_print_example(FILE *f)
{
    fputs("# shortd.conf.example - every setting of `shortd serve` with its default.\n"
          "# Lines are `key = value`; keys are the long flag names. Precedence, highest\n"
          "# first: a flag, the environment (SHORTD_ + KEY with '-' as '_'), this file.\n"
          "# SIGHUP makes a running server read this file again: the settings marked\n"
          "# (live) change at once, the others at the next start.\n"
          "# Generated by `shortd config example`; a unit test keeps it in step.\n",
          f);
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *s = &settings[i];
        if (!strcmp(s->name, "config"))
            continue;
        fprintf(f, "\n# %s%s\n", s->help, s->flags & S_LIVE ? " (live)" : "");
        if (s->def)
            fprintf(f, "%s = %s\n", s->name, s->def);
        else
            fprintf(f, "# %s =\n", s->name);
    }
}
