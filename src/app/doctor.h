/* doctor.h - `shortd doctor`: looks at an installation the way `shortd serve`
 * would find it (the config, the store, the shared cache, the click journal,
 * free disk, the clock, file permissions, the listen address, the GeoIP
 * database) and says of each what is wrong and how to fix it. It only reads:
 * it never creates, migrates or changes anything. */
#ifndef SHORTD_DOCTOR_H
#define SHORTD_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

enum doctor_status { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL };

struct doctor;

/* The settings as `shortd serve` reads them: 'config_file' (NULL: none),
 * then SHORTD_* in the environment, then each flag name = value in order.
 * Whatever of that is wrong becomes the config check's finding. */
struct doctor *doctor_new(const char *config_file, int nflags, const char *const *names,
                          const char *const *values);
void doctor_free(struct doctor *d); /* NULL is fine */

/* Runs every check, in order; their findings stay in 'd'. */
void doctor_run(struct doctor *d);

/* Writes the findings, one "ok|warn|FAIL  CHECK  what" line each with a
 * "fix:" line under those that are not ok, or as one JSON object. Returns the
 * exit status: 1 when any check FAILs, 0 otherwise (warnings keep 0). */
int doctor_print(const struct doctor *d, FILE *out, bool json);

/* How many findings have 'status'. */
int doctor_count(const struct doctor *d, enum doctor_status status);

#endif
