/* checks.c - the table of operations checks (checks.h), each a small
 * function that measures one thing and judges it against its thresholds.
 *
 * DESIGN
 * Every check reads what the node already keeps (the click pipeline's
 * counters, the store, statvfs) or asks one cheap question (a PING, a
 * timed trivial query); none of them scans a table. A check that cannot
 * ask its question (the store does not answer) says CHECK_UNKNOWN, never ok.
 * The struct checks remembers each code's last state and since when, under
 * a mutex, so the report says how long a state has lasted whoever asks. */
#include "ops/checks.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "clicks/clicks.h"
#include "clicks/journal.h"
#include "events/events.h"
#include "ops/nodes.h"
#include "redirect/rcache.h"
#include "store/store.h"
#include "base/banned.h"

/* A round trip to the store slower than this delays every redirect miss;
 * past the second, requests time out waiting for it. */
#define STORE_WARN_MS 100
#define STORE_FAIL_MS 1000
#define CACHE_WARN_MS 20
/* Free space: below FAIL the store or the journal soon stop writing; below
 * WARN it is time to act. */
#define MIB (1024.0 * 1024.0)
#define FREE_FAIL_BYTES (100.0 * MIB)
#define FREE_WARN_BYTES (1024.0 * MIB)
/* Without a schedule, a daily backup is expected (a little slack for a cron
 * job's own time); with one, two missed runs warn. */
#define BACKUP_WARN_S (26 * 3600)
#define BACKUP_FAIL_S (48 * 3600)
/* The clock against the store's: nodes that disagree move expiry and the day
 * a click counts on. */
#define CLOCK_WARN_MS 2000
#define CLOCK_FAIL_MS 30000

struct checks {
    struct checks_env env;
    pthread_mutex_t mu;
    struct {
        char code[CHECK_CODE_MAX];
        enum check_state state;
        int64_t since;
    } last[CHECKS_MAX];
    int nlast;
    pthread_mutex_t report_mu;  /* guards these two alone: never held across a check */
    struct check_report report; /* the last run's */
    bool have_report;
};

/* ---- helpers ---- */

static void say(struct check_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct check_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->measured, sizeof(r->measured), fmt, ap);
    va_end(ap);
}

/* Sets value and judges it: at or past fail_at fails, warn_at warns (below,
 * for floors). A threshold of 0 is none. */
static void judge(struct check_result *r, double value, const char *unit, double warn_at,
                  double fail_at, bool low_is_bad)
{
    r->value = value;
    r->has_value = true;
    r->unit = unit;
    r->warn_at = warn_at;
    r->fail_at = fail_at;
    r->low_is_bad = low_is_bad;
    bool fail = fail_at != 0 && (low_is_bad ? value < fail_at : value >= fail_at);
    bool warn = warn_at != 0 && (low_is_bad ? value < warn_at : value >= warn_at);
    r->state = fail ? CHECK_FAIL : warn ? CHECK_WARN : CHECK_OK;
}

/* "3 h 20 min", "45 s": an age for a person. */
static void age_text(int64_t ms, char *out, size_t n)
{
    int64_t s = ms / 1000;
    if (s < 120)
        snprintf(out, n, "%lld s", (long long)s);
    else if (s < 7200)
        snprintf(out, n, "%lld min", (long long)(s / 60));
    else if (s < 172800)
        snprintf(out, n, "%lld h %lld min", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(out, n, "%lld days %lld h", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

/* ---- the checks: each returns false when it does not apply here ---- */

static bool check_store(const struct checks_env *e, int64_t now, struct check_result *r)
{
    (void)now;
    int64_t t0 = mono_us();
    int rc = e->store->ops->ping(e->store);
    double ms = (double)(mono_us() - t0) / 1000.0;
    if (rc != ERR_OK) {
        r->state = CHECK_FAIL;
        r->unit = "ms";
        say(r, "the store did not answer a trivial query (gave up after %.0f ms)", ms);
        return true;
    }
    judge(r, ms, "ms", STORE_WARN_MS, STORE_FAIL_MS, false);
    say(r, "the store answered a trivial query in %.1f ms", ms);
    return true;
}

static bool check_cache(const struct checks_env *e, int64_t now, struct check_result *r)
{
    (void)now;
    if (!e->rcache)
        return false;
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    struct redisReply *reply = NULL;
    int64_t t0 = mono_us();
    int rc = rcache_command(e->rcache, 1, argv, lens, &reply);
    double ms = (double)(mono_us() - t0) / 1000.0;
    if (reply)
        freeReplyObject(reply);
    if (rc != ERR_OK) {
        r->state = CHECK_FAIL;
        r->unit = "ms";
        say(r, "the shared cache (Redis) did not answer PING, or is skipped after failures");
        return true;
    }
    judge(r, ms, "ms", CACHE_WARN_MS, 0, false);
    say(r, "the shared cache (Redis) answered PING in %.1f ms", ms);
    return true;
}

static bool check_journal(const struct checks_env *e, int64_t now, struct check_result *r)
{
    (void)now;
    if (!e->clicks)
        return false;
    struct journal_health h;
    clicks_health(e->clicks, &h);
    struct clicks_backlog bl;
    clicks_backlog(e->clicks, &bl);
    /* How many clicks wait is said, not judged: a node that keeps up holds
     * many during a flood (bench/HISTORY.md, "long floods at 1 M and 10 M
     * links"), and memory bounds them (fold-memory-mb); how long the
     * oldest has waited is what journal-age and fold judge. */
    judge(r, (double)bl.unfolded, "clicks", 0, 0, false);
    if (h.down) {
        r->state = CHECK_FAIL;
        say(r,
            "the click journal cannot write (%llu failed syncs); %llu bytes of clicks wait in "
            "memory, %llu clicks wait to be counted",
            (unsigned long long)h.failures, (unsigned long long)h.unsynced_bytes,
            (unsigned long long)bl.unfolded);
        return true;
    }
    say(r, "%llu clicks journaled and not yet counted", (unsigned long long)bl.unfolded);
    return true;
}

static bool check_journal_age(const struct checks_env *e, int64_t now, struct check_result *r)
{
    if (!e->clicks)
        return false;
    struct clicks_backlog bl;
    clicks_backlog(e->clicks, &bl);
    (void)now;
    int64_t age = bl.oldest_age_ms;
    judge(r, (double)age / 1000.0, "s", (double)e->lag_warn_s, 6.0 * (double)e->lag_warn_s, false);
    char t[64];
    age_text(age, t, sizeof(t));
    if (bl.unfolded)
        say(r, "the oldest click not yet counted was journaled %s ago (%llu wait)", t,
            (unsigned long long)bl.unfolded);
    else
        say(r, "no click waits to be counted");
    return true;
}

static bool check_fold(const struct checks_env *e, int64_t now, struct check_result *r)
{
    if (!e->clicks)
        return false;
    (void)now;
    /* Lag: how long the oldest click not yet in the store has waited
     * (clicks_lag, the freshness of the stats). Nothing waiting is no lag. */
    struct clicks_lag l;
    clicks_lag(e->clicks, mono_ms(), &l);
    judge(r, (double)l.lag_ms / 1000.0, "s", (double)e->lag_warn_s, 6.0 * (double)e->lag_warn_s,
          false);
    char t[64];
    age_text(l.lag_ms, t, sizeof(t));
    say(r, "%llu clicks are not yet in the store; the oldest has waited %s%s",
        (unsigned long long)l.pending, t,
        l.behind ? " (past the stats' freshness bound: the node is not keeping up)" : "");
    return true;
}

static void check_disk(const char *dir, const char *what, struct check_result *r)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0) {
        r->state = CHECK_UNKNOWN;
        r->unit = "bytes";
        say(r, "cannot read the free space of the %s directory (%s)", what,
            errno == ENOENT ? "it does not exist" : "statvfs failed");
        return;
    }
    double avail = (double)sv.f_bavail * (double)sv.f_frsize;
    double total = (double)sv.f_blocks * (double)sv.f_frsize;
    judge(r, avail, "bytes", FREE_WARN_BYTES, FREE_FAIL_BYTES, true);
    say(r, "%.0f MiB free of %.0f MiB on the file system of the %s", avail / MIB, total / MIB,
        what);
}

/* The directory of a file path, into 'out'. */
static void dir_of(const char *path, char *out, size_t n)
{
    if (!strncmp(path, "sqlite:", 7))
        path += 7;
    snprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
}

static bool check_disk_db(const struct checks_env *e, int64_t now, struct check_result *r)
{
    (void)now;
    if (!e->db_path)
        return false;
    char dir[1024];
    dir_of(e->db_path, dir, sizeof(dir));
    check_disk(dir, "database", r);
    return true;
}

static bool check_disk_journal(const struct checks_env *e, int64_t now, struct check_result *r)
{
    (void)now;
    if (!e->journal_dir)
        return false;
    check_disk(e->journal_dir, "click journal", r);
    return true;
}

static bool check_backup(const struct checks_env *e, int64_t now, struct check_result *r)
{
    int64_t at = 0, bytes = 0;
    int rc = e->store->ops->backup_last(e->store, &at, &bytes);
    double warn = e->backup_every_s ? 2.0 * (double)e->backup_every_s + 60 : BACKUP_WARN_S;
    double fail = e->backup_every_s ? 4.0 * (double)e->backup_every_s + 60 : BACKUP_FAIL_S;
    if (rc == ERR_NOTFOUND) {
        r->state = CHECK_FAIL;
        r->unit = "s";
        r->warn_at = warn;
        r->fail_at = fail;
        say(r, "no backup has been recorded");
        return true;
    }
    if (rc != ERR_OK) {
        r->state = CHECK_UNKNOWN;
        r->unit = "s";
        say(r, "cannot read the backups made: the store did not answer");
        return true;
    }
    int64_t age = now > at ? now - at : 0;
    judge(r, (double)age / 1000.0, "s", warn, fail, false);
    char t[64];
    age_text(age, t, sizeof(t));
    say(r, "the last backup (%.1f MiB) ended %s ago", (double)bytes / MIB, t);
    return true;
}

static bool check_clock(const struct checks_env *e, int64_t now, struct check_result *r)
{
    int64_t t0 = mono_ms();
    int64_t theirs = 0;
    int rc = e->store->ops->clock_ms(e->store, &theirs);
    if (rc == ERR_NOTFOUND) {
        judge(r, 0, "ms", CLOCK_WARN_MS, CLOCK_FAIL_MS, false);
        say(r, "one machine: the store is a file here, so there is no other clock to disagree");
        return true;
    }
    if (rc != ERR_OK) {
        r->state = CHECK_UNKNOWN;
        r->unit = "ms";
        say(r, "cannot compare the clock with the store's: the store did not answer");
        return true;
    }
    /* The store read its clock somewhere within the round trip: compare
     * with our clock at its middle. */
    int64_t ours = now + (mono_ms() - t0) / 2;
    double off = (double)(ours - theirs);
    judge(r, fabs(off), "ms", CLOCK_WARN_MS, CLOCK_FAIL_MS, false);
    say(r, "this node's clock is %.0f ms %s the store's", fabs(off),
        off >= 0 ? "ahead of" : "behind");
    return true;
}

static bool check_nodes(const struct checks_env *e, int64_t now, struct check_result *r)
{
    if (!e->nodes)
        return false;
    ops_nodes_judge(e->nodes, now, e->nodes_window_ms, r);
    return true;
}

/* The event sinks (events.h): an archived batch not yet resolved fails (an
 * operator must look); a sink whose oldest undelivered event waits past
 * lag-warn, or whose last attempt failed, warns. No sink: not a check. */
#define SINKS_MAX 64
static bool check_sinks(const struct checks_env *e, int64_t now, struct check_result *r)
{
    (void)now;
    if (!e->events)
        return false;
    struct events_sink_status s[SINKS_MAX];
    int n = events_status(e->events, s, SINKS_MAX);
    if (n <= 0)
        return false;
    int shown = n < SINKS_MAX ? n : SINKS_MAX, worst = 0, failing = 0;
    uint64_t unresolved = 0;
    for (int i = 0; i < shown; i++) {
        unresolved += s[i].unresolved;
        failing += s[i].failing;
        if (s[i].lag_seconds > s[worst].lag_seconds)
            worst = i;
    }
    judge(r, (double)s[worst].lag_seconds, "s", (double)e->lag_warn_s, 0, false);
    if (failing && r->state == CHECK_OK)
        r->state = CHECK_WARN;
    if (unresolved)
        r->state = CHECK_FAIL;
    char t[64];
    age_text(s[worst].lag_seconds * 1000, t, sizeof(t));
    say(r,
        "%d sink(s), %d failing; the furthest behind (sink %lld, %s) has %llu event(s) to "
        "deliver, the oldest waiting %s; %llu failed batch(es) archived and not resolved",
        n, failing, (long long)s[worst].sink, s[worst].kind,
        (unsigned long long)s[worst].lag_events, t, (unsigned long long)unresolved);
    return true;
}

/* The table. A check added here is in every report and every alert; its code
 * also needs its entry in playbook.c (what it means and what to do). */
static const struct check_def {
    const char *code;
    bool (*run)(const struct checks_env *e, int64_t now, struct check_result *r);
    bool needs_store; /* unknown at once when the store check failed */
} table[] = {
    {"store", check_store, false},
    {"cache", check_cache, false},
    {"journal", check_journal, false},
    {"journal-age", check_journal_age, false},
    {"fold", check_fold, false},
    {"disk-db", check_disk_db, false},
    {"disk-journal", check_disk_journal, false},
    {"backup", check_backup, true},
    {"clock", check_clock, true},
    {"nodes", check_nodes, false},
    {"sinks", check_sinks, false},
};
#define NTABLE ((int)(sizeof(table) / sizeof(table[0])))

struct checks *checks_new(const struct checks_env *env)
{
    struct checks *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->env = *env;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->report_mu, NULL);
    return c;
}

void checks_free(struct checks *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->report_mu);
    free(c);
}

static int64_t since(struct checks *c, const char *code, enum check_state s, int64_t now)
{
    for (int i = 0; i < c->nlast; i++) {
        if (strcmp(c->last[i].code, code) != 0)
            continue;
        if (c->last[i].state != s) {
            c->last[i].state = s;
            c->last[i].since = now;
        }
        return c->last[i].since;
    }
    if (c->nlast < CHECKS_MAX) {
        snprintf(c->last[c->nlast].code, CHECK_CODE_MAX, "%s", code);
        c->last[c->nlast].state = s;
        c->last[c->nlast].since = now;
        c->nlast++;
    }
    return now;
}

void checks_run(struct checks *c, int64_t now, struct check_report *out)
{
    memset(out, 0, sizeof(*out));
    out->at_ms = now;
    out->worst = CHECK_OK;
    pthread_mutex_lock(&c->mu);
    bool store_down = false;
    for (int i = 0; i < NTABLE && out->n < CHECKS_MAX; i++) {
        struct check_result *r = &out->r[out->n];
        memset(r, 0, sizeof(*r));
        snprintf(r->code, sizeof(r->code), "%s", table[i].code);
        r->unit = "";
        if (table[i].needs_store && store_down) {
            r->state = CHECK_UNKNOWN;
            say(r, "not checked: the store does not answer");
        } else if (!table[i].run(&c->env, now, r)) {
            continue;
        }
        if (i == 0)
            store_down = r->state == CHECK_FAIL && !r->has_value;
        r->since_ms = since(c, r->code, r->state, now);
        if (check_rank(r->state) > check_rank(out->worst))
            out->worst = r->state;
        out->n++;
    }
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_lock(&c->report_mu);
    c->report = *out;
    c->have_report = true;
    pthread_mutex_unlock(&c->report_mu);
}

bool checks_last(struct checks *c, struct check_report *out)
{
    pthread_mutex_lock(&c->report_mu);
    bool have = c->have_report;
    if (have)
        *out = c->report;
    pthread_mutex_unlock(&c->report_mu);
    return have;
}

static const char *const state_names[] = {"ok", "warn", "fail", "unknown"};

const char *check_state_name(enum check_state s) { return state_names[s]; }

bool check_state_parse(const char *s, enum check_state *out)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, state_names[i])) {
            *out = (enum check_state)i;
            return true;
        }
    return false;
}

int check_rank(enum check_state s) { return (int)s; }

json_t *checks_report_json(const struct check_report *rep, const char *node)
{
    char at[RFC3339_MAX];
    rfc3339_format(rep->at_ms, at);
    json_t *checks = json_array();
    for (int i = 0; i < rep->n; i++) {
        const struct check_result *r = &rep->r[i];
        char since_s[RFC3339_MAX];
        rfc3339_format(r->since_ms, since_s);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "code", r->code, "state",
                              check_state_name(r->state), "measured", r->measured, "since", since_s,
                              "unit", r->unit ? r->unit : "");
        json_object_set_new(o, "value", r->has_value ? json_real(r->value) : json_null());
        if (r->warn_at != 0 || r->fail_at != 0) {
            json_t *t = json_object();
            if (r->warn_at != 0)
                json_object_set_new(t, "warn", json_real(r->warn_at));
            if (r->fail_at != 0)
                json_object_set_new(t, "fail", json_real(r->fail_at));
            json_object_set_new(t, "direction", json_string(r->low_is_bad ? "below" : "above"));
            json_object_set_new(o, "thresholds", t);
        }
        json_array_append_new(checks, o);
    }
    return json_pack("{s:s, s:s, s:s, s:o}", "status", check_state_name(rep->worst), "node",
                     node ? node : "", "checked_at", at, "checks", checks);
}

int checks_exit_status(enum check_state worst)
{
    switch (worst) {
    case CHECK_OK: return 0;
    case CHECK_WARN: return 1;
    default: return 2;
    }
}
