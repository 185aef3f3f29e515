/* checks.h - the operations checks: one report of named checks, each with a
 * fixed code, a state, what was measured against which thresholds, and since
 * when it has been in that state (kept across runs by the struct checks).
 * GET /api/ops/health, `shortd ops check` and the alert thread (watch.h) all
 * read this one report.
 *
 * The checks are one table of named functions (checks.c); a check that does
 * not apply to this node (no shared cache, a PostgreSQL store has no file
 * here) leaves the report. A check that could not be made is
 * CHECK_UNKNOWN: never healthy, never a problem by itself either. */
#ifndef SHORTD_CHECKS_H
#define SHORTD_CHECKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct clicks;
struct ops_nodes;
struct rcache;
struct store;

enum check_state { CHECK_OK, CHECK_WARN, CHECK_FAIL, CHECK_UNKNOWN };

#define CHECKS_MAX 16
#define CHECK_CODE_MAX 32
#define CHECK_TEXT_MAX 320

struct check_result {
    char code[CHECK_CODE_MAX]; /* fixed: "store", "journal-age", ... */
    enum check_state state;
    char measured[CHECK_TEXT_MAX]; /* what was measured, for a person: counts and ages */
    double value;                  /* the figure judged against the thresholds */
    bool has_value;                /* false: nothing could be measured */
    const char *unit;              /* "ms", "s", "clicks", "bytes", "versions"... (static) */
    double warn_at, fail_at;       /* thresholds on value; 0 when there is none */
    bool low_is_bad;               /* the thresholds are floors (free disk) */
    int64_t since_ms;              /* wall clock when it entered this state */
};

struct check_report {
    struct check_result r[CHECKS_MAX];
    int n;
    int64_t at_ms;          /* when the checks ran */
    enum check_state worst; /* CHECK_UNKNOWN ranks worst: see check_rank */
};

/* What the checks look at; a NULL member is not configured here. Borrowed:
 * it must outlive the struct checks. */
struct checks_env {
    struct store *store;
    struct rcache *rcache;
    struct clicks *clicks;
    const char *db_path;     /* the SQLite file; NULL for PostgreSQL */
    const char *journal_dir; /* the click journal directory */
    struct ops_nodes *nodes; /* the nodes heard on the bus (nodes.h); NULL: one node */
    struct events *events;   /* the event sinks (events.h); NULL: none */
    int64_t nodes_window_ms; /* a node not heard this long is no more listed */
    int64_t lag_warn_s;      /* clicks waiting this long to be counted warn (six times: fail) */
    int64_t backup_every_s;  /* scheduled backups; 0: none (then 26 h warn, 48 h fail) */
};

struct checks;

struct checks *checks_new(const struct checks_env *env);
void checks_free(struct checks *c); /* NULL is fine */

/* Runs every check that applies, in table order, at wall clock 'now';
 * since_ms of each result is when its code last changed state. Any thread;
 * runs are serialised. */
void checks_run(struct checks *c, int64_t now, struct check_report *out);

/* The report of the last checks_run, for /metrics (which must not wait for
 * the store): false when there was none yet. Any thread. */
bool checks_last(struct checks *c, struct check_report *out);

/* "ok", "warn", "fail", "unknown"; check_state_parse: false when none. */
const char *check_state_name(enum check_state s);
bool check_state_parse(const char *s, enum check_state *out);
/* Severity order for the worst of a report: ok < warn < fail < unknown
 * (a report with an unknown check is not healthy, and says so). */
int check_rank(enum check_state s);

/* The report as GET /api/ops/health answers it (new reference). */
json_t *checks_report_json(const struct check_report *rep, const char *node);
/* The exit status of `shortd ops check`: 0 all ok, 1 a warning, 2 a failure
 * or a check that could not be made. */
int checks_exit_status(enum check_state worst);

#endif
