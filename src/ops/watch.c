/* watch.c - the alert thread (watch.h).
 *
 * DESIGN
 * One thread, waking every check-every on the monotonic clock, so a step of
 * the wall clock neither skips nor doubles a run. Each run: the scheduled
 * backup when due, the checks, the lease, then, for the sender only, the
 * rules and the channels. The sender reads the state from the store (meta
 * "ops_alerts") at each run and saves it when the run changed it. When the
 * store does not answer, the node that last held the lease goes on sending
 * from the state in memory (a store that is down is itself worth an alert,
 * and no node could take the lease then), and saves it once it can, handing
 * it over if another node took the lease meanwhile. */
#include "ops/watch.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "ops/alertrules.h"
#include "ops/checks.h"
#include "ops/message.h"
#include "ops/nodes.h"
#include "ops/notify.h"
#include "store/bus.h"
#include "store/store.h"
#include "base/banned.h"

#define STATE_KEY "ops_alerts"
#define LEASE_NAME "alerts"
/* Runs a lease outlives its last renewal: a sender that missed this many is
 * gone, and another node takes over. */
#define LEASE_RUNS 3
/* What the store calls of one run may take in all: a store that does not
 * answer ends them there (store_set_deadline), and the run goes on with
 * what it knows, so the alert about it is not held up. */
#define RUN_STORE_MS 5000

struct watch {
    struct app *app;
    struct checks *checks;
    struct notify *notify;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on the monotonic clock */
    bool stop;
    bool leader;     /* held the lease at the last answer of the store */
    bool have_state; /* 'state' is current (read, or kept since) */
    bool state_lost; /* it could not be read: nothing can be timed */
    struct alert_state state;
    char *saved;         /* the state as last saved (JSON), NULL: not saved yet */
    int64_t next_backup; /* mono ms */
};

/* ---- the scheduled backup ---- */

static void scheduled_backup(struct watch *w, int64_t now)
{
    struct app *app = w->app;
    struct store *st = app->store;
    if (strcmp(st->ops->name, "sqlite") != 0) {
        log_at(LOG_WARN, "backup-every: a PostgreSQL store is backed up with pg_dump, not by "
                         "shortd; record those with `shortd backup`");
        return;
    }
    char stamp[32];
    time_t t = (time_t)(now / 1000);
    struct tm u;
    gmtime_r(&t, &u);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &u);
    struct buf path = BUF_INIT, tmp = BUF_INIT;
    buf_printf(&path, "%s/shortd-%s.db", app->cfg.backup_dir, stamp);
    buf_printf(&tmp, "%s.partial", path.p);
    int rc = st->ops->backup(st, tmp.p);
    struct stat sb;
    if (rc == ERR_OK && rename(tmp.p, path.p) != 0)
        rc = ERR_IO;
    if (rc == ERR_OK && stat(path.p, &sb) == 0)
        rc = st->ops->backup_note(st, now_ms(), (int64_t)sb.st_size, app->cfg.node_id);
    else
        remove(tmp.p);
    if (rc == ERR_OK)
        log_at(LOG_INFO, "backed up the store to '%s'", path.p);
    else
        log_at(LOG_ERROR, "scheduled backup into '%s' failed", app->cfg.backup_dir);
    buf_release(&path);
    buf_release(&tmp);
}

/* ---- the state ---- */

/* The state as saved: JSON text (free it). */
static char *state_text(const struct alert_state *st)
{
    json_t *j = alert_state_json(st);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

/* Whether 'state' holds what the store does not (a run while it was down). */
static bool state_dirty(const struct watch *w)
{
    char *text = state_text(&w->state);
    bool dirty = !w->saved || strcmp(w->saved, text) != 0;
    free(text);
    return dirty;
}

/* Reads the store's state into 'out'; ERR_NOTFOUND, ERR_INVALID (damaged),
 * or the store's error. 'text' gets its text on ERR_OK (free it). */
static int read_state(struct watch *w, struct alert_state *out, char **text)
{
    struct store *st = w->app->store;
    struct buf v = BUF_INIT;
    memset(out, 0, sizeof(*out));
    *text = NULL;
    int rc = st->ops->meta_get(st, STATE_KEY, &v);
    if (rc == ERR_OK) {
        json_t *j = json_loadb(v.p, v.len, 0, NULL);
        rc = j && alert_state_parse(j, out) == ERR_OK ? ERR_OK : ERR_INVALID;
        json_decref(j);
        if (rc == ERR_OK)
            *text = buf_detach(&v, NULL);
    }
    buf_release(&v);
    return rc;
}

/* The sender's state from the store, which another node may have written
 * since (the last sender, handing over). A store that does not answer
 * leaves the state in memory as it is; with none in memory either, nothing
 * can be timed. */
static void load_state(struct watch *w)
{
    struct alert_state got;
    char *text = NULL;
    int rc = read_state(w, &got, &text);
    if (rc == ERR_OK || rc == ERR_NOTFOUND) {
        w->state = got;
        free(w->saved);
        w->saved = text;
        w->state_lost = false;
        w->have_state = true;
        return;
    }
    if (w->have_state)
        return;
    memset(&w->state, 0, sizeof(w->state));
    w->have_state = true;
    w->state_lost = true;
    log_at(LOG_WARN, "cannot read the saved alert state: problems are sent without waiting for "
                     "their confirmation");
}

static void save_state(struct watch *w)
{
    struct store *st = w->app->store;
    char *text = state_text(&w->state);
    if (w->saved && !strcmp(w->saved, text)) { /* unchanged: no write */
        free(text);
        return;
    }
    if (st->ops->meta_put(st, STATE_KEY, text, strlen(text)) != ERR_OK) {
        log_at(LOG_WARN, "cannot save the alert state; it is kept in memory meanwhile");
        free(text);
        return;
    }
    free(w->saved);
    w->saved = text;
}

/* A sender that lost the lease while the store was down hands over what it
 * sent meanwhile (the new sender reads the store at each run), unless the
 * store's state has sent something later: the latest message wins. */
static void hand_over(struct watch *w)
{
    struct alert_state theirs;
    char *text = NULL;
    int rc = read_state(w, &theirs, &text);
    free(text);
    if ((rc == ERR_OK && theirs.sent_at >= w->state.sent_at) ||
        (rc != ERR_OK && rc != ERR_NOTFOUND && rc != ERR_INVALID))
        return;
    save_state(w);
}

/* ---- one run ---- */

static void run_once(struct watch *w)
{
    struct app *app = w->app;
    struct store *st = app->store;
    if (app->bus && app->nodes) { /* heard by every node, this one too */
        char msg[BUS_MSG_MAX + 1];
        bus_publish(app->bus, msg, ops_nodes_message(app->nodes, msg));
    }
    int64_t now = now_ms();
    store_set_deadline(mono_ms() + RUN_STORE_MS);
    struct check_report rep;
    checks_run(w->checks, now, &rep);

    bool held = false;
    int64_t ttl = LEASE_RUNS * app->cfg.check_every * 1000;
    if (st->ops->lease_take(st, LEASE_NAME, app->cfg.node_id, now, ttl, &held) == ERR_OK) {
        if (held && !w->leader)
            log_at(LOG_INFO, "this node sends the alerts now");
        else if (!held && w->leader)
            log_at(LOG_INFO, "another node sends the alerts now; this one stands by");
        w->leader = held;
    }
    if (!w->leader) {
        if (w->have_state && state_dirty(w))
            hand_over(w);
        w->have_state = false; /* read again when this node leads */
        free(w->saved);
        w->saved = NULL;
        store_set_deadline(0);
        return;
    }
    /* What the store has, unless this node knows more (it sent while the
     * store was down, and could not save it yet). */
    if (!w->have_state || !state_dirty(w))
        load_state(w);

    struct alert_rules rules = {.confirm_ms = app->cfg.alert_confirm * 1000,
                                .repeat_ms = app->cfg.alert_repeat * 1000,
                                .state_lost = w->state_lost};
    struct alert_state next;
    struct alert_decision d;
    alert_decide(&w->state, &rep, now, &rules, &next, &d);
    if (d.kind != ALERT_NONE) {
        struct alert_message m;
        alert_message_make(&m, &d, &rep, app->cfg.node_id, app->cfg.alert_timezone, now);
        log_at(d.kind == ALERT_CLEAR ? LOG_INFO : LOG_WARN, "alert (%s): %s",
               alert_kind_name(d.kind), m.subject.p);
        if (notify_send(w->notify, &m, &d, app->cfg.node_id, now) != ERR_OK)
            alert_state_unsent(&next, &w->state);
        alert_message_release(&m);
    }
    w->state = next;
    w->state_lost = false; /* timed from memory from now on */
    save_state(w);
    store_set_deadline(0);
}

static void *watch_main(void *arg)
{
    struct watch *w = arg;
    struct app *app = w->app;
    int64_t next = mono_ms();
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        int64_t mono = mono_ms();
        if (mono < next) {
            int64_t at = next;
            struct timespec ts = {at / 1000, (long)(at % 1000) * 1000000L};
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&w->mu);
        if (app->cfg.backup_every && app->cfg.backup_dir && mono >= w->next_backup) {
            scheduled_backup(w, now_ms());
            w->next_backup = mono_ms() + app->cfg.backup_every * 1000;
        }
        run_once(w);
        next = mono + app->cfg.check_every * 1000;
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int watch_start(struct app *app, struct checks *checks, struct notify *n, struct watch **out)
{
    struct watch *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    w->app = app;
    w->checks = checks;
    w->notify = n;
    /* The first scheduled backup waits a period: a restart loop must not
     * write a backup at each start. */
    w->next_backup = mono_ms() + app->cfg.backup_every * 1000;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return log_fail(ERR_IO, "cannot start the alert thread");
    }
    *out = w;
    return ERR_OK;
}

void watch_stop(struct watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    notify_free(w->notify);
    free(w->saved);
    free(w);
}
