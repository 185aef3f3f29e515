/* test_alertrules.c - the alert rules (alertrules.h) walked through time,
 * and the message they make (message.h): confirmation, reminders, changes,
 * one all-clear, unknown checks, the state's JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "ops/alertrules.h"
#include "ops/message.h"
#include "ops/nodes.h"
#include "store/bus.h"
#include "test.h"

#include "base/banned.h"

#define MIN 60000LL
#define RULES                                                                                      \
    {                                                                                              \
        .confirm_ms = 4 * MIN, .repeat_ms = 60 * MIN                                               \
    }

/* A report of the codes given as "code=state" strings, NULL-terminated. */
static void report(struct check_report *rep, const char *const *checks)
{
    memset(rep, 0, sizeof(*rep));
    for (; *checks; checks++) {
        struct check_result *r = &rep->r[rep->n++];
        const char *eq = strchr(*checks, '=');
        snprintf(r->code, sizeof(r->code), "%.*s", (int)(eq - *checks), *checks);
        check_state_parse(eq + 1, &r->state);
        snprintf(r->measured, sizeof(r->measured), "measured %.*s", (int)(eq - *checks), *checks);
        r->unit = "";
    }
}

/* One run at 'now': the decision's kind; 'st' moves on as if it was sent. */
static enum alert_kind step(struct alert_state *st, const struct alert_rules *rules, int64_t now,
                            const char *const *checks, struct alert_decision *d)
{
    struct check_report rep;
    report(&rep, checks);
    struct alert_state next;
    alert_decide(st, &rep, now, rules, &next, d);
    *st = next;
    return d->kind;
}

void test_alert_rules_confirm(void)
{
    struct alert_rules rules = RULES;
    struct alert_state st = {0};
    struct alert_decision d;
    const char *ok[] = {"store=ok", "backup=ok", NULL};
    const char *bad[] = {"store=ok", "backup=fail", NULL};
    /* A blip shorter than the confirmation: nothing, then no all-clear. */
    CHECK_EQ_INT(step(&st, &rules, 0, bad, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 1 * MIN, bad, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 2 * MIN, ok, &d), ALERT_NONE);
    CHECK_EQ_INT(st.nseen, 0);
    CHECK_EQ_INT(step(&st, &rules, 3 * MIN, ok, &d), ALERT_NONE);
    /* A problem that lasts: sent once a check 4 minutes later finds it. */
    CHECK_EQ_INT(step(&st, &rules, 10 * MIN, bad, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 13 * MIN, bad, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 14 * MIN, bad, &d), ALERT_NEW);
    CHECK_EQ_INT(d.nproblems, 1);
    CHECK_EQ_STR(d.problems[0].code, "backup");
    CHECK_EQ_INT(d.problems[0].first_seen, 10 * MIN);
    CHECK_EQ_INT(d.since, 10 * MIN);
    /* Once. */
    CHECK_EQ_INT(step(&st, &rules, 15 * MIN, bad, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 16 * MIN, bad, &d), ALERT_NONE);
    /* Fixed: one all-clear naming it, then nothing. */
    CHECK_EQ_INT(step(&st, &rules, 17 * MIN, ok, &d), ALERT_CLEAR);
    CHECK_EQ_INT(d.nfixed, 1);
    CHECK_EQ_STR(d.fixed[0].code, "backup");
    CHECK_EQ_INT(step(&st, &rules, 18 * MIN, ok, &d), ALERT_NONE);
    /* The state was lost (unreadable): nothing can be timed, sent at once. */
    struct alert_rules lost = rules;
    lost.state_lost = true;
    struct alert_state fresh = {0};
    CHECK_EQ_INT(step(&fresh, &lost, 20 * MIN, bad, &d), ALERT_NEW);
}

void test_alert_rules_repeat_and_change(void)
{
    struct alert_rules rules = RULES;
    struct alert_state st = {0};
    struct alert_decision d;
    const char *one[] = {"store=ok", "disk-db=warn", "backup=ok", NULL};
    const char *worse[] = {"store=ok", "disk-db=fail", "backup=ok", NULL};
    const char *two[] = {"store=ok", "disk-db=fail", "backup=fail", NULL};
    const char *ok[] = {"store=ok", "disk-db=ok", "backup=ok", NULL};
    step(&st, &rules, 0, one, &d);
    CHECK_EQ_INT(step(&st, &rules, 5 * MIN, one, &d), ALERT_NEW);
    /* Unchanged: a reminder an hour after the last message, not before. */
    CHECK_EQ_INT(step(&st, &rules, 64 * MIN, one, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 65 * MIN, one, &d), ALERT_REMINDER);
    CHECK_EQ_INT(d.since, 0);
    CHECK_EQ_INT(step(&st, &rules, 66 * MIN, one, &d), ALERT_NONE);
    /* A warning become a failure: a changed set, sent at once. */
    CHECK_EQ_INT(step(&st, &rules, 67 * MIN, worse, &d), ALERT_CHANGED);
    CHECK_EQ_INT(d.problems[0].state, CHECK_FAIL);
    CHECK_EQ_INT(d.problems[0].first_seen, 0); /* the same problem, still since 0 */
    /* A new problem joins: it waits for its own confirmation... */
    CHECK_EQ_INT(step(&st, &rules, 68 * MIN, two, &d), ALERT_NONE);
    /* ... then the changed set goes at once, not an hour after the last. */
    CHECK_EQ_INT(step(&st, &rules, 72 * MIN, two, &d), ALERT_CHANGED);
    CHECK_EQ_INT(d.nproblems, 2);
    /* One fixed: changed, naming it fixed. */
    CHECK_EQ_INT(step(&st, &rules, 73 * MIN, worse, &d), ALERT_CHANGED);
    CHECK_EQ_INT(d.nfixed, 1);
    CHECK_EQ_STR(d.fixed[0].code, "backup");
    CHECK_EQ_INT(step(&st, &rules, 74 * MIN, ok, &d), ALERT_CLEAR);
    CHECK_EQ_INT(d.nfixed, 1);
    CHECK_EQ_STR(d.fixed[0].code, "disk-db");
    CHECK_EQ_INT(d.since, 0);
}

void test_alert_rules_unknown(void)
{
    struct alert_rules rules = RULES;
    struct alert_state st = {0};
    struct alert_decision d;
    const char *down[] = {"store=fail", "backup=unknown", NULL};
    const char *unk[] = {"store=ok", "backup=unknown", NULL};
    const char *ok[] = {"store=ok", "backup=ok", NULL};
    /* Unknown alone is no problem: nothing is sent for it, however long. */
    CHECK_EQ_INT(step(&st, &rules, 0, unk, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 30 * MIN, unk, &d), ALERT_NONE);
    /* The store fails: sent after confirmation; the unknown stays unknown. */
    step(&st, &rules, 31 * MIN, down, &d);
    CHECK_EQ_INT(step(&st, &rules, 35 * MIN, down, &d), ALERT_NEW);
    CHECK_EQ_INT(d.nproblems, 1);
    /* The store is back but a check still cannot be made: no all-clear yet. */
    CHECK_EQ_INT(step(&st, &rules, 36 * MIN, unk, &d), ALERT_NONE);
    CHECK_EQ_INT(st.nsent, 1);
    CHECK_EQ_INT(step(&st, &rules, 37 * MIN, ok, &d), ALERT_CLEAR);
    /* A problem sent, then unknown: kept as it was, not fixed, not new. */
    const char *bad[] = {"store=ok", "backup=fail", NULL};
    step(&st, &rules, 40 * MIN, bad, &d);
    CHECK_EQ_INT(step(&st, &rules, 45 * MIN, bad, &d), ALERT_NEW);
    CHECK_EQ_INT(step(&st, &rules, 46 * MIN, unk, &d), ALERT_NONE);
    CHECK_EQ_INT(step(&st, &rules, 47 * MIN, bad, &d), ALERT_NONE);
    /* A send that failed is tried again at the next run. */
    struct check_report rep;
    report(&rep, ok);
    struct alert_state next;
    alert_decide(&st, &rep, 48 * MIN, &rules, &next, &d);
    CHECK_EQ_INT(d.kind, ALERT_CLEAR);
    alert_state_unsent(&next, &st);
    st = next;
    CHECK_EQ_INT(step(&st, &rules, 49 * MIN, ok, &d), ALERT_CLEAR);
}

void test_alert_rules_state_json(void)
{
    struct alert_rules rules = RULES;
    struct alert_state st = {0};
    struct alert_decision d;
    const char *bad[] = {"store=ok", "backup=fail", "journal-age=warn", NULL};
    step(&st, &rules, 1000, bad, &d);
    step(&st, &rules, 1000 + 5 * MIN, bad, &d);
    CHECK_EQ_INT(d.kind, ALERT_NEW);
    /* A restart reads the state back: nothing is repeated. */
    json_t *j = alert_state_json(&st);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    json_t *back = json_loads(text, 0, NULL);
    free(text);
    struct alert_state again;
    CHECK_EQ_INT(alert_state_parse(back, &again), ERR_OK);
    json_decref(back);
    CHECK_EQ_INT(again.nsent, 2);
    CHECK_EQ_INT(again.sent_at, 1000 + 5 * MIN);
    CHECK_EQ_INT(again.since, 1000);
    CHECK_EQ_INT(step(&again, &rules, 1000 + 6 * MIN, bad, &d), ALERT_NONE);
    /* Damaged state: refused whole, never half read. */
    json_t *bad_json = json_pack("{s:i, s:[{s:s, s:s, s:i}], s:[], s:i, s:i}", "version", 1, "seen",
                                 "code", "backup", "state", "ok", "first_seen", 1, "sent",
                                 "sent_at", 0, "since", 0);
    CHECK_EQ_INT(alert_state_parse(bad_json, &again), ERR_INVALID);
    CHECK_EQ_INT(again.nseen, 0);
    json_decref(bad_json);
}

void test_alert_message_content(void)
{
    struct alert_rules rules = RULES;
    struct alert_state st = {0};
    struct alert_decision d;
    struct check_report rep;
    const char *bad[] = {"store=ok", "disk-journal=fail", "backup=unknown", NULL};
    report(&rep, bad);
    snprintf(rep.r[1].measured, sizeof(rep.r[1].measured),
             "52 MiB free of 256 MiB on the file system of the click journal");
    struct alert_state next;
    alert_decide(&st, &rep, 0, &rules, &next, &d);
    st = next;
    alert_decide(&st, &rep, 5 * MIN, &rules, &next, &d);
    CHECK_EQ_INT(d.kind, ALERT_NEW);
    struct alert_message m;
    /* 2026-12-02 09:05 UTC is 14:35 in India. */
    int64_t now = 1796202300000LL;
    alert_message_make(&m, &d, &rep, "node-a", "Asia/Kolkata", now);
    CHECK(strstr(m.subject.p, "node-a") && strstr(m.subject.p, "disk-journal fails"));
    const char *t = m.text.p;
    CHECK(strstr(t, "Measured: 52 MiB free of 256 MiB") != NULL);
    CHECK(strstr(t, "What it means:") && strstr(t, "Is anything lost:") &&
          strstr(t, "What to do:") && strstr(t, "Fixed when:"));
    CHECK(strstr(t, "2026-12-02 14:35 IST (09:05 UTC)") != NULL);
    CHECK(strstr(t, "Not checked now") && strstr(t, "- backup:"));
    json_t *am = alert_message_alertmanager(&m, &d, "node-a", now);
    CHECK_EQ_STR(json_string_value(json_object_get(am, "status")), "firing");
    json_t *a0 = json_array_get(json_object_get(am, "alerts"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(a0, "labels"), "code")),
                 "disk-journal");
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(a0, "labels"), "severity")),
                 "critical");
    json_decref(am);
    json_t *slack = alert_message_slack(&m);
    const char *text = json_string_value(json_object_get(slack, "text"));
    CHECK(text && !strncmp(text, "*[shortd node-a]", 16) && strstr(text, "What to do:"));
    json_decref(slack);
    alert_message_release(&m);
    /* Every check code of the table has its playbook entry. */
    static const char *const codes[] = {"store", "cache",   "journal",      "journal-age",
                                        "fold",  "disk-db", "disk-journal", "backup",
                                        "clock", "nodes",   "sinks"};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (!CHECK(playbook_find(codes[i]) != NULL))
            test_note("no playbook entry for '%s'", codes[i]);
}

/* The nodes heard on the bus (nodes.h): announcements, versions, itself. */
void test_ops_nodes(void)
{
    struct ops_nodes *n = ops_nodes_new("web 1", "0.4.0", 0);
    char msg[BUS_MSG_MAX + 1];
    size_t len = ops_nodes_message(n, msg);
    CHECK_EQ_STR(msg, "!node:web_1:0.4.0"); /* made bus-safe */
    CHECK(bus_is_node(msg, len));
    CHECK(!bus_is_node("!node:a b:1", 11)); /* a space: no node's message */
    CHECK(!bus_is_node("!node:a:1:2", 11)); /* NAME:VERSION, once */
    CHECK(!bus_is_node("abc", 3));
    struct check_result r = {0};
    /* Just started: not having heard itself yet is no warning. */
    ops_nodes_judge(n, 1000, 5000, &r);
    CHECK_EQ_INT(r.state, CHECK_OK);
    /* Later, still unheard: the bus does not carry its messages. */
    ops_nodes_judge(n, 9000, 5000, &r);
    CHECK_EQ_INT(r.state, CHECK_WARN);
    CHECK(strstr(r.measured, "did not hear its own announcement") != NULL);
    ops_nodes_heard(n, msg, len, 9000);
    ops_nodes_heard(n, "!node:web_2:0.4.0", 17, 9500);
    ops_nodes_judge(n, 10000, 5000, &r);
    CHECK_EQ_INT(r.state, CHECK_OK);
    CHECK_EQ_INT((int)r.value, 2);
    CHECK(strstr(r.measured, "web_1 (0.4.0)") && strstr(r.measured, "web_2 (0.4.0)"));
    /* An upgrade half done: two versions. */
    ops_nodes_heard(n, "!node:web_2:0.5.0", 17, 10500);
    ops_nodes_judge(n, 11000, 5000, &r);
    CHECK_EQ_INT(r.state, CHECK_WARN);
    CHECK(strstr(r.measured, "different versions") != NULL);
    /* A node not heard within the window is no more listed. */
    ops_nodes_heard(n, msg, len, 20000);
    ops_nodes_judge(n, 20000, 5000, &r);
    CHECK_EQ_INT((int)r.value, 1);
    CHECK_EQ_INT(r.state, CHECK_OK);
    ops_nodes_free(n);
}
