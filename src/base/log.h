/* log.h - diagnostics on stderr, one line each, with a level and a UTC time.
 * Messages are lower case, no full stop, the subject in quotes, what failed
 * first. Never log a client address or an API key. */
#ifndef SHORTD_LOG_H
#define SHORTD_LOG_H

#include <stdatomic.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };

/* Set at start-up, and again on SIGHUP (serve.c) while any thread logs. */
extern _Atomic(enum log_level) log_level;

/* Checks the level before evaluating the arguments. */
#define log_at(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((lvl) >= atomic_load_explicit(&log_level, memory_order_relaxed))                       \
            log_write((lvl), __VA_ARGS__);                                                         \
    } while (0)

void log_write(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs at LOG_ERROR and returns 'rc', for `return log_fail(ERR_X, "...")`. */
int log_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "debug", "info", "warn", "error", "off" → level; -1 when unknown. */
int log_level_parse(const char *s);

#endif
