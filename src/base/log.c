/* log.c - diagnostics on stderr: "2026-11-30T09:00:00.123Z warn message".
 * One write(2) per line so lines from different threads never interleave. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "base/banned.h"

_Atomic(enum log_level) log_level = LOG_INFO;

static const char *const names[] = {"debug", "info", "warn", "error", "off"};

static void log_vwrite(enum log_level lvl, const char *fmt, va_list ap)
{
    char line[2048];
    char ts[RFC3339_MAX];
    rfc3339_format(now_ms(), ts);
    int n = snprintf(line, sizeof(line), "%s %s ", ts, names[lvl]);
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void log_write(enum log_level lvl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(lvl, fmt, ap);
    va_end(ap);
}

int log_fail(int rc, const char *fmt, ...)
{
    if (LOG_ERROR >= log_level) {
        va_list ap;
        va_start(ap, fmt);
        log_vwrite(LOG_ERROR, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int log_level_parse(const char *s)
{
    for (int i = 0; i <= LOG_OFF; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    return -1;
}
