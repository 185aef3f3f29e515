/* mysqldump.h - the rows of the INSERT statements of a mysqldump file.
 *
 * A push parser: feed it the file's bytes in pieces of any size and it calls
 * back once per row of each `INSERT [IGNORE] INTO t [(cols)] VALUES (...),
 * (...);` (and REPLACE INTO), one row a line or thousands (extended inserts),
 * with the values unescaped as MySQL reads them. Every other statement
 * (CREATE TABLE, LOCK TABLES, SET, versioned comments, -- comments) is
 * skipped line by line, as mysqldump starts each statement on a line of
 * its own.
 * Memory is one row's worth, however long the lines are. */
#ifndef SHORTD_MYSQLDUMP_H
#define SHORTD_MYSQLDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest value and the most values a row may have; past them the
 * statement is bad (reported, skipped), never a huge allocation. */
#define MYSQLDUMP_VALUE_MAX (16u << 20)
#define MYSQLDUMP_VALUES_MAX 4096

struct mysql_value {
    const char *p; /* NUL-terminated; a \0 escape puts a NUL byte within n */
    size_t n;
    bool null;   /* NULL (p is "") */
    bool string; /* quoted or hex in the dump; false: a number or word as written */
};

struct mysql_row {
    const char *table;          /* unquoted, without a database prefix */
    const char *const *columns; /* the statement's column list; NULL without one */
    size_t ncolumns;
    const struct mysql_value *values;
    size_t nvalues;
    int64_t line;  /* line of the row's '(' (1-based) */
    int64_t index; /* the row's place in its statement, from 1 */
};

/* Callbacks; everything they are given is borrowed for the call. */
struct mysqldump_calls {
    /* Asked at each INSERT: false skips its rows without copying them. NULL:
     * every table is wanted. */
    bool (*want)(void *ctx, const char *table);
    /* ERR_OK goes on; anything else stops the parse: feed returns it. */
    int (*row)(void *ctx, const struct mysql_row *row);
    /* A statement that could not be read from 'line' on: its rows up to
     * there were delivered, the rest of its line is skipped. */
    void (*bad)(void *ctx, int64_t line, const char *why);
    void *ctx;
};

struct mysqldump;

struct mysqldump *mysqldump_new(const struct mysqldump_calls *calls);
void mysqldump_free(struct mysqldump *d); /* NULL is fine */

/* Parses the next 'n' bytes. ERR_OK, or what a row callback returned. */
int mysqldump_feed(struct mysqldump *d, const char *p, size_t n);
/* The end of the input: an unfinished INSERT is reported as bad. */
void mysqldump_finish(struct mysqldump *d);

/* Lines seen so far (for progress and reports). */
int64_t mysqldump_line(const struct mysqldump *d);

#endif
