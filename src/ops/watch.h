/* watch.h - the alert thread: every `check-every` it runs the checks
 * (checks.h), applies the alert rules (alertrules.h) to the state kept in
 * the store, and sends what they decide (notify.h); every `backup-every` it
 * also backs up a SQLite store into `backup-dir` and records the backup.
 *
 * In a cluster one node sends: the one holding the store's "alerts" lease,
 * renewed at each run and free once three runs are missed; the others run
 * their checks and stand by. The state (what was sent, when each problem was
 * first found) is saved in the store whenever a run changes it, so a restart or a new
 * sender neither repeats nor forgets an alert. */
#ifndef SHORTD_WATCH_H
#define SHORTD_WATCH_H

struct app;
struct checks;
struct notify;
struct watch;

/* Starts the thread; it owns 'n' from then on. ERR_OK or ERR_IO. */
int watch_start(struct app *app, struct checks *checks, struct notify *n, struct watch **out);
/* Stops the thread (waking it at once; a send under way ends within its
 * timeout) and frees. NULL is fine. */
void watch_stop(struct watch *w);

#endif
