/* notify.h - the alert channels: e-mail over SMTP and a webhook
 * (Alertmanager's or Slack's body), both through libcurl. The SMTP password
 * comes from SHORTD_SMTP_PASSWORD or the file `smtp-password-file` names,
 * never a flag; it is kept here only, and never logged. Each send is bounded
 * (connect and whole transfer) and never follows a redirect. */
#ifndef SHORTD_NOTIFY_H
#define SHORTD_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/alertrules.h"
#include "ops/message.h"

struct config;
struct notify;

/* The channels the settings configure (none is fine: then alerts are only
 * logged). ERR_INVALID with 'err' naming the setting that is wrong. */
int notify_new(const struct config *cfg, struct notify **out, char *err, size_t errlen);
void notify_free(struct notify *n); /* NULL is fine */

/* How many channels are configured. */
int notify_channels(const struct notify *n);

/* Sends the message on every channel. ERR_OK when at least one accepted it
 * (or none is configured); ERR_IO when every one refused, each failure logged
 * with its channel and a fixed reason, never the server's text. Blocks for at
 * most a few seconds per channel: call it from the alert thread only. */
int notify_send(struct notify *n, const struct alert_message *m, const struct alert_decision *d,
                const char *node, int64_t now);

#endif
