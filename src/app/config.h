/* config.h - every setting of `shortd serve`, in one table: name, type,
 * default, bounds. A value comes from, in rising precedence: the default, the
 * config file (`key = value` lines, keys are the long flag names), the
 * environment (SHORTD_ + the name in upper case, '-' as '_'), a flag. */
#ifndef SHORTD_CONFIG_H
#define SHORTD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A rate limit setting: "LIMIT/SECONDS" (requests per window), "0" or "off". */
struct config_rate {
    int64_t limit;  /* 0: off */
    int64_t window; /* seconds */
};

struct config {
    char *listen;               /* ADDR:PORT */
    char *db;                   /* SQLite file */
    char *store;                /* store URL; overrides db when set */
    char *base_url;             /* short URLs start with this; default http://LISTEN */
    char *home;                 /* where GET / redirects */
    char *invalid_redirect;     /* where a code that opens nothing redirects; NULL: a page */
    char *regular_404_redirect; /* where any other unknown path redirects; NULL: 404 */
    char *robots_txt;           /* file served as /robots.txt; NULL: the default */
    char *hosts;                /* default short hosts, comma-separated; NULL: any host */
    char *log_level;
    char *config;          /* the config file that was read, if any */
    char *journal;         /* click journal directory; default DB.clicks */
    char *country_header;  /* CDN header with the client's country */
    char *geoip_db;        /* MaxMind country database, optional */
    char *cache;           /* redis:// URL of the shared cache, optional */
    char *node_id;         /* this node's name in logs and metrics */
    char *trusted_proxies; /* CIDRs whose X-Forwarded-For is believed */
    char *cors_origins;    /* origins whose pages may call the API (cors.h); NULL: none */
    int64_t threads;       /* event-loop threads; 0 = one per core */
    int64_t takeover;      /* bool: share a busy listen address (SO_REUSEPORT) */
    int64_t max_connections;
    int64_t max_connections_per_addr; /* trusted proxies exempt */
    int64_t max_header_bytes;
    int64_t max_target_bytes;
    int64_t max_body_bytes;
    int64_t header_timeout; /* seconds */
    int64_t body_timeout;
    int64_t idle_timeout;
    int64_t send_timeout; /* seconds a write may make no progress */
    int64_t cache_size;   /* links kept in the redirect cache */
    int64_t miss_ttl;     /* milliseconds an unknown code is remembered as unknown */
    int64_t pass_query;   /* bool: append the request's query to the destination */
    int64_t permanent_max_age;
    int64_t idempotency_ttl;         /* seconds */
    int64_t session_idle;            /* seconds a dashboard session lasts unused */
    int64_t session_max;             /* seconds a dashboard session lasts at most */
    int64_t click_flush_ms;          /* counters to the store */
    int64_t click_lull_ms;           /* ... at once after a pause this long; live */
    int64_t journal_sync_ms;         /* clicks to the journal (the crash-loss window) */
    int64_t background_nice;         /* of the fold and writer threads (coop.h) */
    int64_t background_idle;         /* bool: ... and SCHED_IDLE for them */
    int64_t loop_slice_us;           /* of the event loops (coop.h) */
    int64_t retention_days;          /* per-day analytics rows kept */
    int64_t ua_cache;                /* classified user agents remembered */
    int64_t cache_timeout_ms;        /* bound on every call to the shared cache */
    int64_t store_threads;           /* threads that serve requests needing the store */
    int64_t store_queue;             /* requests waiting for them at most */
    int64_t store_timeout_ms;        /* what a request waits for the store at most */
    int64_t heavy_reads_per_key;     /* searches and exports of one key at once */
    int64_t search_page_rows;        /* rows a q=/tag= list page reads at most */
    int64_t yourls_timestamp_window; /* seconds a YOURLS signature's timestamp may be off */
    int64_t commit_batch;            /* most creates in one group commit */
    int64_t sweep_interval;          /* seconds between sweeps */
    int64_t sweep_grace;             /* seconds an expired link keeps its data */
    int64_t sweep_batch;
    int64_t events_retry_base_ms;  /* events out (events.h): first wait after a failure */
    int64_t events_retry_cap_ms;   /* ... the longest */
    int64_t events_retry_budget_s; /* ... how long a batch is retried, then archived */
    int64_t events_batch_wait_ms;  /* ... how long a batch waits to fill */
    int64_t events_timeout_ms;     /* ... every call to a sink */
    int64_t events_inflight;       /* ... batches in flight per sink */
    struct config_rate rate_create_addr, rate_create_key; /* ratelimit.h's classes */
    struct config_rate rate_read_addr, rate_read_key;
    struct config_rate rate_auth, rate_password, rate_password_client;
    /* Operations (src/ops/): who reads /metrics, the checks and alerts */
    char *metrics_allow;   /* CIDRs that read /metrics without a key */
    int64_t check_every;   /* seconds between checks of the alert thread */
    int64_t lag_warn;      /* seconds clicks wait to be counted before a warning */
    int64_t alert_confirm; /* seconds a problem lasts before it is sent */
    int64_t alert_repeat;  /* seconds between reminders */
    char *alert_timezone;  /* IANA zone of the times in alerts */
    char *smtp_host;       /* NULL: no e-mail */
    int64_t smtp_port;
    int64_t smtp_starttls; /* bool */
    char *smtp_from;
    char *smtp_to; /* comma separated */
    char *smtp_user;
    char *smtp_password_file;   /* else SHORTD_SMTP_PASSWORD */
    char *webhook_url;          /* NULL: no webhook */
    char *webhook_format;       /* alertmanager or slack */
    char *backup_dir;           /* scheduled backups go here */
    int64_t backup_every;       /* seconds; 0: none */
    int64_t fold_paused;        /* bool, live */
    int64_t fold_memory_mb;     /* live */
    int64_t fold_held_mb;       /* live */
    int64_t fold_compact_rows;  /* live */
    int64_t fold_compact_every; /* seconds, live */
};

/* Defaults for every setting. */
void config_init(struct config *c);
void config_release(struct config *c);

/* Sets one setting by its long name from text; ERR_NOTFOUND for an unknown
 * name, ERR_INVALID for a bad value (message in 'err'). */
int config_set(struct config *c, const char *name, const char *value, char *err, size_t errlen);

/* Reads a config file; ERR_IO, or ERR_INVALID/ERR_NOTFOUND with 'err' naming
 * the file, line and key. */
int config_load_file(struct config *c, const char *path, char *err, size_t errlen);

/* Applies SHORTD_* environment variables. */
int config_load_env(struct config *c, char *err, size_t errlen);

bool config_is_setting(const char *name);

/* The table, setting by setting (0 <= i < config_count()), for the help, the
 * man page and the shell completion. */
struct config_info {
    const char *name;
    const char *type; /* TEXT, N, BOOL or N/SECONDS */
    const char *def;  /* NULL: unset */
    const char *help;
    int64_t min, max; /* bounds of an N */
    bool live;        /* applied by a running server on SIGHUP (config_reload) */
};
size_t config_count(void);
void config_info(size_t i, struct config_info *out);

/* A deep copy; release it with config_release. */
void config_copy(struct config *dst, const struct config *src);

/* SIGHUP: 'next' is the configuration read again, 'was' the one read before.
 * Copies into 'running' each live setting whose value differs between the
 * two, and calls 'restart' with the name of every other setting that does.
 * Returns how many live settings changed. */
int config_reload(struct config *running, const struct config *was, const struct config *next,
                  void (*restart)(const char *name, void *arg), void *arg);

/* Writes "  --name VALUE   help (default: X)" lines, and the example file. */
void config_print_help(FILE *f);
void config_print_example(FILE *f);

#endif
