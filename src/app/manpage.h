/* manpage.h - shortd.1, the manual page, written as roff from the command
 * table (cli.c) and the settings table (config.c): the same text that
 * `shortd --help` and `shortd serve --help` print, so it cannot drift. The
 * build runs `shortd man` to make build/shortd.1. */
#ifndef SHORTD_MANPAGE_H
#define SHORTD_MANPAGE_H

#include <stddef.h>
#include <stdio.h>

struct man_command {
    const char *name;  /* "key create" */
    const char *usage; /* cli.c's usage: synopsis lines, then "  Description" lines */
};

void manpage_write(FILE *f, const char *version, const struct man_command *cmds, size_t n);

#endif
