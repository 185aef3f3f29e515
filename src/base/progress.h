/* progress.h - the progress line of a long CLI job (import, export,
 * migrate-store, prune, backup) on stderr: "import: 41,210 of 1,000,000 rows
 * · 18,300/s · 0:53 left", redrawn in place with \r at most five times a
 * second. Shown on a terminal (--progress auto), always, or never; nothing
 * at all when off. One thread. */
#ifndef SHORTD_PROGRESS_H
#define SHORTD_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

enum progress_mode { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER };

/* "auto", "always", "never" → the mode; -1 for anything else. */
int progress_mode_parse(const char *s);

struct progress;

/* A progress line for job 'what' counting 'unit' ("rows", "links"), or NULL
 * when the mode says not to show one (every function takes NULL). */
struct progress *progress_new(const char *what, const char *unit, int mode);
/* Changes what the line is of ('what' outlives the line or the next change). */
void progress_set_what(struct progress *p, const char *what);
/* Changes the unit ("bytes" for a reader that only knows its offset). */
void progress_set_unit(struct progress *p, const char *unit);
/* 'done' of 'total' units (total 0: unknown). The line is redrawn when
 * 200 ms have passed since the last. */
void progress_update(struct progress *p, uint64_t done, uint64_t total);
/* Erases the line, so that other output can follow on stderr; the next
 * update draws it again. */
void progress_clear(struct progress *p);
/* Ends the line (drawn in its last state) and starts another, of 'what'
 * counting 'unit', whose rate counts from now: the next step of a job. */
void progress_phase(struct progress *p, const char *what, const char *unit);
/* Draws the last state, ends the line and frees. */
void progress_end(struct progress *p);
/* Erases the line and frees (the job said what it did in lines of its own). */
void progress_free(struct progress *p);

/* The line's text (no \r) for 'done' of 'total' (0: unknown) at 'rate'
 * units a second (< 0: not known yet); the time left is shown when total
 * and rate are known. Pure. Returns the length (as snprintf). */
int progress_format(char *out, size_t n, const char *what, const char *unit, uint64_t done,
                    uint64_t total, double rate);
/* 'v' with a comma every three digits ("1,000,000"). Pure. */
void progress_number(uint64_t v, char out[32]);

#endif
