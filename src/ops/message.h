/* message.h - an alert written for a person: for each problem what was
 * measured, what it means for visitors and for data, whether anything is
 * lost, the steps and commands to fix it, and how to tell it is fixed; times
 * in the configured zone and in UTC. Made only of the checks' own words and
 * figures (counts, ages, sizes): never a secret, a client address or the raw
 * text of a library's error. */
#ifndef SHORTD_MESSAGE_H
#define SHORTD_MESSAGE_H

#include <jansson.h>
#include <stdint.h>

#include "base/buf.h"
#include "ops/alertrules.h"
#include "ops/checks.h"

struct alert_message {
    struct buf subject; /* one line */
    struct buf text;    /* plain text, a paragraph a line */
};

/* Writes the message of decision 'd' (not ALERT_NONE) about report 'rep' on
 * node 'node' at 'now', times also in 'tz' (an IANA name; NULL or "UTC":
 * UTC only). Release with alert_message_release. */
void alert_message_make(struct alert_message *m, const struct alert_decision *d,
                        const struct check_report *rep, const char *node, const char *tz,
                        int64_t now);
void alert_message_release(struct alert_message *m);

/* Webhook bodies (new references): Alertmanager's webhook shape
 * (version "4": status firing|resolved, one alert per problem, labels
 * alertname/code/severity/node) and Slack's incoming-webhook shape. */
json_t *alert_message_alertmanager(const struct alert_message *m, const struct alert_decision *d,
                                   const char *node, int64_t now);
json_t *alert_message_slack(const struct alert_message *m);

/* What the playbook says of a check's code (NULL fields for an unknown
 * code): for tests and the docs. */
struct playbook_entry {
    const char *code;
    const char *title;   /* "the store does not answer" */
    const char *meaning; /* what it means for visitors and data */
    const char *loss;    /* whether anything is lost */
    const char *steps;   /* numbered steps, with commands */
    const char *fixed_when;
};
const struct playbook_entry *playbook_find(const char *code);

#endif
