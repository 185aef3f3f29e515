/* message.c - alerts written for a person (message.h): the playbook, one
 * entry per check code, and the text made of it and of the checks' own
 * measurements. Times go through localtime_r under the configured TZ, set
 * and restored under a lock: libc has no per-call time zone. */
#include "ops/message.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timeutil.h"
#include "base/banned.h"

static const struct playbook_entry playbook[] = {
    {"store", "the store does not answer, or answers slowly",
     "Redirects of links not in this node's cache wait for the store or fail with 503; creating, "
     "changing and reading links through the API fails. Links already cached still redirect.",
     "Clicks are not lost: they stay in the click journal on this node's disk and reach the "
     "store when it answers again. Links created while it is down were refused, not lost.",
     "1. Check the database server: `systemctl status postgresql` (or the SQLite file's disk).\n"
     "2. Check that this node reaches it: `shortd doctor --config /etc/shortd/shortd.conf`.\n"
     "3. Read the node's log: `journalctl -u shortd --since -1h`.",
     "`shortd ops check` shows store ok, and GET /readyz answers 200."},
    {"cache", "the shared cache (Redis) does not answer, or slowly",
     "Redirects still work: each node reads the store instead, which is slower under load. "
     "Rate limits shared between nodes count on each node alone meanwhile.",
     "Nothing is lost: the cache holds copies only.",
     "1. Check Redis: `redis-cli -u redis://HOST:PORT ping` should print PONG.\n"
     "2. Check its memory and log: `redis-cli info memory`, `journalctl -u redis-server`.",
     "`shortd ops check` shows cache ok."},
    {"journal", "clicks are waiting to be counted, or the click journal cannot write",
     "Visitors are redirected as usual. Click statistics lag behind the visits.",
     "While the journal writes, nothing is lost: clicks wait in it. If it cannot write, the "
     "clicks of the last seconds are held in memory and sent to the store every sync interval; "
     "a crash meanwhile loses those.",
     "1. Check the journal directory's disk: `df -h` on the journal directory.\n"
     "2. Check that counting is not paused: `fold-paused` must be false in the config "
     "(then `systemctl reload shortd`).\n"
     "3. Read the log: `journalctl -u shortd --since -1h`.",
     "`shortd ops check` shows journal ok and the count of clicks waiting falls."},
    {"journal-age", "the oldest click not yet counted is old",
     "Visitors are redirected as usual. Statistics miss the clicks since then.",
     "Nothing is lost while the journal's disk holds: the clicks are journaled and will be "
     "counted.",
     "1. Check that counting is not paused: `fold-paused` must be false (then `systemctl reload "
     "shortd`).\n"
     "2. Check the node's load: `top`; a saturated node counts last, by design.\n"
     "3. Check the store (see the store check) and the log: `journalctl -u shortd --since -1h`.",
     "`shortd ops check` shows journal-age ok: the oldest waiting click is recent."},
    {"fold", "counters have not reached the store for a while",
     "Visitors are redirected as usual. Statistics in the API and dashboard stand still.",
     "Nothing is lost while the journal writes: counting resumes where the store stopped.",
     "1. Check the store check and `shortd doctor`.\n"
     "2. Check that counting is not paused (`fold-paused`).\n"
     "3. Read the log: `journalctl -u shortd --since -1h`.",
     "`shortd ops check` shows fold ok."},
    {"disk-db", "little free disk for the database",
     "When the disk is full, the store stops writing: new links and click counts fail, "
     "redirects of existing links go on.",
     "Nothing is lost yet. Once the disk is full, clicks wait in the journal (if its disk has "
     "room) and links cannot be created.",
     "1. See what takes the space: `du -xh --max-depth=2 DIR | sort -h | tail` on the "
     "database's directory.\n"
     "2. Remove old backups or logs, or grow the file system.\n"
     "3. Old per-day analytics can go: `shortd prune --retention-days N`.",
     "`shortd ops check` shows disk-db ok."},
    {"disk-journal", "little free disk for the click journal",
     "When it is full the journal cannot write; clicks then go to the store every sync "
     "interval instead, and a crash loses those of the last seconds.",
     "Nothing is lost yet.",
     "1. See what takes the space: `du -xh --max-depth=2 DIR | sort -h | tail` on the "
     "journal's directory.\n"
     "2. Free space or grow the file system; the journal itself shrinks once its clicks are "
     "stored.",
     "`shortd ops check` shows disk-journal ok."},
    {"backup", "no recent backup",
     "Visitors see nothing of it. If the database were lost now, links and statistics since "
     "the last backup would be lost with it.",
     "Nothing is lost now; the risk is what a disk failure would take.",
     "1. Make a backup now: `shortd backup --db /var/lib/shortd/shortd.db --to FILE`.\n"
     "2. Schedule them: set `backup-dir` and `backup-every` (e.g. 86400), or a cron job "
     "running `shortd backup`.\n"
     "3. On PostgreSQL, back up with pg_dump, then record it: `shortd backup --store URL --to "
     "FILE --record-only`.",
     "`shortd ops check` shows backup ok with the new backup's age."},
    {"clock", "this node's clock disagrees with the store's",
     "Links may expire early or late on this node, and clicks near midnight may count on the "
     "wrong day.",
     "Nothing is lost; some clicks may be counted on a neighbouring day.",
     "1. Check time synchronisation: `timedatectl status` (\"System clock synchronized: "
     "yes\").\n"
     "2. Start or fix it: `systemctl restart systemd-timesyncd` (or chrony), on this node and "
     "on the database server.",
     "`shortd ops check` shows clock ok."},
    {"nodes", "the cluster's nodes run different versions, or this node is not heard on the bus",
     "A node that does not hear the bus misses invalidations: after a link is edited or deleted "
     "it may redirect to the old destination until its cache forgets it. Nodes of different "
     "versions may answer differently during an upgrade.",
     "Nothing is lost.",
     "1. See the versions: `shortd ops check` on each node, or `shortd version`.\n"
     "2. Finish the upgrade: install the same version everywhere, `systemctl restart shortd`.\n"
     "3. If this node does not hear itself: check Redis (`redis-cli ping`) and PostgreSQL, and "
     "the log's \"invalidation bus\" lines: `journalctl -u shortd --since -1h`.",
     "`shortd ops check` shows nodes ok, every node with one version."},
    {"sinks", "events are not reaching a sink, or a batch of them was archived as failed",
     "Visitors are redirected as usual and shortd's own statistics are current. The system "
     "behind the sink (a webhook, an ingest service, a Redis stream) sees clicks and link "
     "changes late, or is missing a failed batch.",
     "Nothing is lost: undelivered events wait in the journal and the store, and a batch that "
     "used up its retries is kept in the failed archive, body and all.",
     "1. See each sink's lag and last error: `curl -s localhost:8080/metrics | grep "
     "shortd_sink_` and `shortd sink list --db PATH`.\n"
     "2. Fix the receiver (is it up? does it answer 2xx in time?); delivery resumes by itself "
     "with backoff.\n"
     "3. For archived batches: `shortd events failed list --db PATH`, then `shortd events "
     "failed replay --db PATH ID` once the receiver works, and `shortd events failed resolve "
     "--db PATH ID --operator NAME --reason TEXT`.",
     "`shortd ops check` shows sinks ok: no sink failing, none behind, no unresolved batch."},
};
#define NPLAYBOOK (sizeof(playbook) / sizeof(playbook[0]))

const struct playbook_entry *playbook_find(const char *code)
{
    for (size_t i = 0; i < NPLAYBOOK; i++)
        if (!strcmp(playbook[i].code, code))
            return &playbook[i];
    return NULL;
}

static pthread_mutex_t tz_mu = PTHREAD_MUTEX_INITIALIZER;

/* "2026-12-02 14:35 IST (09:05 UTC)": a time for a person. */
static void when_text(int64_t ms, const char *tz, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm u;
    gmtime_r(&t, &u);
    char utc[32];
    strftime(utc, sizeof(utc), "%Y-%m-%d %H:%M UTC", &u);
    if (!tz || !*tz || !strcmp(tz, "UTC")) {
        snprintf(out, n, "%s", utc);
        return;
    }
    pthread_mutex_lock(&tz_mu);
    const char *was = getenv("TZ");
    char saved[128] = "";
    if (was)
        snprintf(saved, sizeof(saved), "%s", was);
    setenv("TZ", tz, 1);
    tzset();
    struct tm l;
    localtime_r(&t, &l);
    char local[48];
    strftime(local, sizeof(local), "%Y-%m-%d %H:%M %Z", &l);
    if (was)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    pthread_mutex_unlock(&tz_mu);
    snprintf(out, n, "%s (%s)", local, utc + 11);
}

static void duration_text(int64_t ms, char *out, size_t n)
{
    int64_t m = ms / 60000;
    if (m < 1)
        snprintf(out, n, "less than a minute");
    else if (m < 120)
        snprintf(out, n, "%lld minute%s", (long long)m, m == 1 ? "" : "s");
    else
        snprintf(out, n, "%lld h %lld min", (long long)(m / 60), (long long)(m % 60));
}

static const struct check_result *result_of(const struct check_report *rep, const char *code)
{
    for (int i = 0; i < rep->n; i++)
        if (!strcmp(rep->r[i].code, code))
            return &rep->r[i];
    return NULL;
}

static void problem_text(struct buf *b, const struct alert_item *it, const struct check_report *rep,
                         const char *tz)
{
    const struct playbook_entry *p = playbook_find(it->code);
    const struct check_result *r = result_of(rep, it->code);
    char first[96];
    when_text(it->first_seen, tz, first, sizeof(first));
    buf_printf(b, "\n== %s: %s (%s) ==\n\n", it->code, p ? p->title : it->code,
               it->state == CHECK_FAIL ? "FAIL" : "warning");
    if (r && r->state == CHECK_UNKNOWN)
        buf_printf(b, "Measured: could not be checked now (%s); as last found, a %s.\n",
                   r->measured, it->state == CHECK_FAIL ? "failure" : "warning");
    else if (r)
        buf_printf(b, "Measured: %s.\n", r->measured);
    buf_printf(b, "First found: %s.\n", first);
    if (p)
        buf_printf(b,
                   "\nWhat it means: %s\nIs anything lost: %s\n\nWhat to do:\n%s\n\n"
                   "Fixed when: %s\n",
                   p->meaning, p->loss, p->steps, p->fixed_when);
}

void alert_message_make(struct alert_message *m, const struct alert_decision *d,
                        const struct check_report *rep, const char *node, const char *tz,
                        int64_t now)
{
    buf_init(&m->subject);
    buf_init(&m->text);
    char at[96], since[96], lasted[48];
    when_text(now, tz, at, sizeof(at));
    when_text(d->since ? d->since : now, tz, since, sizeof(since));
    duration_text(now - d->since, lasted, sizeof(lasted));
    struct buf *b = &m->text;
    int nfail = 0;
    for (int i = 0; i < d->nproblems; i++)
        nfail += d->problems[i].state == CHECK_FAIL;
    switch (d->kind) {
    case ALERT_CLEAR:
        buf_printf(&m->subject, "[shortd %s] all clear: ", node);
        for (int i = 0; i < d->nfixed; i++)
            buf_printf(&m->subject, "%s%s", i ? ", " : "", d->fixed[i].code);
        buf_adds(&m->subject, " fixed");
        buf_printf(b, "All checks on node %s pass again, as of %s.\n\nFixed:\n", node, at);
        for (int i = 0; i < d->nfixed; i++) {
            const struct playbook_entry *p = playbook_find(d->fixed[i].code);
            buf_printf(b, "- %s: %s\n", d->fixed[i].code, p ? p->title : "");
        }
        buf_printf(b, "\nThe problems began %s and lasted %s.\n", since, lasted);
        return;
    case ALERT_REMINDER:
        buf_printf(&m->subject, "[shortd %s] still %d problem%s for %s: ", node, d->nproblems,
                   d->nproblems == 1 ? "" : "s", lasted);
        break;
    case ALERT_CHANGED:
        buf_printf(&m->subject, "[shortd %s] problems changed, %d now: ", node, d->nproblems);
        break;
    default:
        buf_printf(&m->subject, "[shortd %s] %d problem%s: ", node, d->nproblems,
                   d->nproblems == 1 ? "" : "s");
    }
    for (int i = 0; i < d->nproblems; i++)
        buf_printf(&m->subject, "%s%s %s", i ? ", " : "", d->problems[i].code,
                   d->problems[i].state == CHECK_FAIL ? "fails" : "warns");
    buf_printf(b, "Node %s, checked %s.\n", node, at);
    if (d->kind == ALERT_REMINDER)
        buf_printf(b, "A reminder: these problems began %s and have lasted %s.\n", since, lasted);
    buf_printf(b, "%d failure%s, %d warning%s.\n", nfail, nfail == 1 ? "" : "s",
               d->nproblems - nfail, d->nproblems - nfail == 1 ? "" : "s");
    if (d->nfixed) {
        buf_adds(b, "\nFixed since the last message:\n");
        for (int i = 0; i < d->nfixed; i++) {
            const struct playbook_entry *p = playbook_find(d->fixed[i].code);
            buf_printf(b, "- %s: %s\n", d->fixed[i].code, p ? p->title : "");
        }
    }
    for (int i = 0; i < d->nproblems; i++)
        problem_text(b, &d->problems[i], rep, tz);
    bool unknown = false;
    for (int i = 0; i < rep->n; i++)
        unknown = unknown || rep->r[i].state == CHECK_UNKNOWN;
    if (unknown) {
        buf_adds(b, "\nNot checked now (these say nothing is broken, and nothing is healthy "
                    "until they can be made):\n");
        for (int i = 0; i < rep->n; i++)
            if (rep->r[i].state == CHECK_UNKNOWN)
                buf_printf(b, "- %s: %s\n", rep->r[i].code, rep->r[i].measured);
    }
    buf_adds(b, "\nSee every check: `shortd ops check` on the node, or GET /api/ops/health "
                "with a key of the ops scope.\n");
}

void alert_message_release(struct alert_message *m)
{
    buf_release(&m->subject);
    buf_release(&m->text);
}

json_t *alert_message_alertmanager(const struct alert_message *m, const struct alert_decision *d,
                                   const char *node, int64_t now)
{
    char at[RFC3339_MAX];
    rfc3339_format(now, at);
    bool resolved = d->kind == ALERT_CLEAR;
    const struct alert_item *items = resolved ? d->fixed : d->problems;
    int n = resolved ? d->nfixed : d->nproblems;
    json_t *alerts = json_array();
    for (int i = 0; i < n; i++) {
        const struct playbook_entry *p = playbook_find(items[i].code);
        char start[RFC3339_MAX];
        rfc3339_format(items[i].first_seen, start);
        json_t *a = json_pack("{s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s}, s:s, s:s}", "status",
                              resolved ? "resolved" : "firing", "labels", "alertname",
                              "ShortdCheck", "code", items[i].code, "severity",
                              items[i].state == CHECK_FAIL ? "critical" : "warning", "node", node,
                              "annotations", "summary", p ? p->title : items[i].code, "description",
                              m->text.p ? m->text.p : "", "startsAt", start, "endsAt",
                              resolved ? at : "0001-01-01T00:00:00Z");
        json_array_append_new(alerts, a);
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:s}, s:{s:s}, s:{s:s}, s:s}", "version", "4",
                     "receiver", "shortd", "status", resolved ? "resolved" : "firing", "groupKey",
                     "shortd", "alerts", alerts, "groupLabels", "alertname", "ShortdCheck",
                     "commonLabels", "node", node, "commonAnnotations", "summary",
                     m->subject.p ? m->subject.p : "", "externalURL", "");
}

json_t *alert_message_slack(const struct alert_message *m)
{
    struct buf t = BUF_INIT;
    buf_printf(&t, "*%s*\n%s", m->subject.p ? m->subject.p : "", m->text.p ? m->text.p : "");
    json_t *j = json_pack("{s:s}", "text", t.p);
    buf_release(&t);
    return j;
}
