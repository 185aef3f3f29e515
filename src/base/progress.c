/* progress.c - the progress line of long CLI jobs (progress.h). The rate is
 * the average since the start: jobs here run at a steady pace, and an
 * average does not jump about as the redraws come. */
#include "base/progress.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "base/banned.h"

#define REDRAW_MS 200

struct progress {
    const char *what, *unit;
    int64_t start, last; /* mono_ms */
    uint64_t done, total;
    int width; /* of the line drawn, 0: none on screen */
};

int progress_mode_parse(const char *s)
{
    if (!strcmp(s, "auto"))
        return PROGRESS_AUTO;
    if (!strcmp(s, "always"))
        return PROGRESS_ALWAYS;
    if (!strcmp(s, "never"))
        return PROGRESS_NEVER;
    return -1;
}

struct progress *progress_new(const char *what, const char *unit, int mode)
{
    if (mode == PROGRESS_NEVER || (mode == PROGRESS_AUTO && !isatty(STDERR_FILENO)))
        return NULL;
    struct progress *p = calloc(1, sizeof(*p));
    if (!p)
        abort();
    p->what = what;
    p->unit = unit;
    p->start = mono_ms();
    return p;
}

void progress_number(uint64_t v, char out[32])
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
    int o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

int progress_format(char *out, size_t n, const char *what, const char *unit, uint64_t done,
                    uint64_t total, double rate)
{
    char d[32], t[32], r[32];
    progress_number(done, d);
    int len;
    if (total) {
        progress_number(total, t);
        len = snprintf(out, n, "%s: %s of %s %s", what, d, t, unit);
    } else {
        len = snprintf(out, n, "%s: %s %s", what, d, unit);
    }
    if (rate >= 0 && len >= 0 && (size_t)len < n) {
        progress_number((uint64_t)(rate + 0.5), r);
        len += snprintf(out + len, n - (size_t)len, " \xc2\xb7 %s/s", r);
    }
    if (total && rate > 0 && done <= total && len >= 0 && (size_t)len < n) {
        uint64_t left = (uint64_t)((double)(total - done) / rate + 0.5);
        if (left >= 3600)
            len += snprintf(out + len, n - (size_t)len, " \xc2\xb7 %llu:%02llu:%02llu left",
                            (unsigned long long)(left / 3600), (unsigned long long)(left / 60 % 60),
                            (unsigned long long)(left % 60));
        else
            len += snprintf(out + len, n - (size_t)len, " \xc2\xb7 %llu:%02llu left",
                            (unsigned long long)(left / 60), (unsigned long long)(left % 60));
    }
    return len;
}

static void draw(struct progress *p, int64_t now)
{
    double secs = (double)(now - p->start) / 1000.0;
    double rate = secs >= 0.5 ? (double)p->done / secs : -1;
    char line[256];
    int n = progress_format(line, sizeof(line), p->what, p->unit, p->done, p->total, rate);
    if (n < 0)
        return;
    if (n >= (int)sizeof(line))
        n = (int)sizeof(line) - 1;
    /* Spaces over what a longer line before left */
    fprintf(stderr, "\r%s%*s", line, p->width > n ? p->width - n : 0, "");
    fflush(stderr);
    p->width = n;
    p->last = now;
}

void progress_set_what(struct progress *p, const char *what)
{
    if (p)
        p->what = what;
}

void progress_set_unit(struct progress *p, const char *unit)
{
    if (p)
        p->unit = unit;
}

void progress_update(struct progress *p, uint64_t done, uint64_t total)
{
    if (!p)
        return;
    p->done = done;
    p->total = total;
    int64_t now = mono_ms();
    if (now - p->last >= REDRAW_MS)
        draw(p, now);
}

void progress_clear(struct progress *p)
{
    if (!p || !p->width)
        return;
    fprintf(stderr, "\r%*s\r", p->width, "");
    p->width = 0;
    p->last = 0;
}

void progress_free(struct progress *p)
{
    progress_clear(p);
    free(p);
}

void progress_phase(struct progress *p, const char *what, const char *unit)
{
    if (!p)
        return;
    draw(p, mono_ms());
    fputc('\n', stderr);
    p->what = what;
    p->unit = unit;
    p->done = p->total = 0;
    p->width = 0;
    p->start = mono_ms();
}

void progress_end(struct progress *p)
{
    if (!p)
        return;
    draw(p, mono_ms());
    fputc('\n', stderr);
    free(p);
}
