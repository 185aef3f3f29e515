/* alertrules.h - when an alert is sent: a pure function of the state kept
 * from the run before, the checks' report and the time. No I/O, no clock:
 * watch.c loads and saves the state in the store and sends what it decides.
 *
 * The rules (seed 004):
 *   - a problem (a check that warns or fails) is sent only when a check at
 *     least 'confirm_ms' after it was first found still finds it: a blip
 *     shorter than that sends nothing, neither alert nor all-clear;
 *   - an unchanged set of problems is sent again at most every 'repeat_ms',
 *     saying how long it has lasted; a changed set (a problem more or fewer,
 *     a warning become a failure) is sent at once;
 *   - when every check is ok again, one all-clear names what was fixed;
 *   - a check that could not be made (CHECK_UNKNOWN) is neither healthy nor
 *     a problem: a problem it had stays as it was, and an all-clear waits;
 *   - when the saved state could not be read ('state_lost'), nothing can be
 *     timed: problems are sent at once. */
#ifndef SHORTD_ALERTRULES_H
#define SHORTD_ALERTRULES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ops/checks.h"

struct alert_item {
    char code[CHECK_CODE_MAX];
    enum check_state state; /* CHECK_WARN or CHECK_FAIL */
    int64_t first_seen;     /* when a check first found this problem (ms) */
};

struct alert_state {
    struct alert_item seen[CHECKS_MAX]; /* problems found now, confirmed or not */
    int nseen;
    struct alert_item sent[CHECKS_MAX]; /* the set last sent; none: all is well */
    int nsent;
    int64_t sent_at; /* when that set was last sent, alert or reminder */
    int64_t since;   /* when the problems sent began (the earliest first_seen) */
};

enum alert_kind {
    ALERT_NONE,     /* nothing to send */
    ALERT_NEW,      /* problems, after a time without */
    ALERT_CHANGED,  /* the set of problems changed */
    ALERT_REMINDER, /* the same set, 'repeat_ms' later */
    ALERT_CLEAR,    /* all is well again: 'fixed' names what was */
};

struct alert_decision {
    enum alert_kind kind;
    struct alert_item problems[CHECKS_MAX]; /* the set sent: outstanding problems */
    int nproblems;
    struct alert_item fixed[CHECKS_MAX]; /* in the last set sent, and no more */
    int nfixed;
    int64_t since; /* when the outstanding problems began */
};

struct alert_rules {
    int64_t confirm_ms;
    int64_t repeat_ms;
    bool state_lost; /* the saved state could not be read */
};

/* Decides what to send at 'now' after 'prev' for the report 'rep'. 'next' is
 * the state to keep once it is sent; when sending fails, keep
 * alert_state_unsent(next, prev) instead, so the next run tries again. */
void alert_decide(const struct alert_state *prev, const struct check_report *rep, int64_t now,
                  const struct alert_rules *rules, struct alert_state *next,
                  struct alert_decision *out);
void alert_state_unsent(struct alert_state *next, const struct alert_state *prev);

const char *alert_kind_name(enum alert_kind k); /* "new", "changed", ... */

/* The state as JSON (new reference), and back: ERR_OK, or ERR_INVALID with
 * 'out' emptied. */
json_t *alert_state_json(const struct alert_state *s);
int alert_state_parse(const json_t *j, struct alert_state *out);

#endif
