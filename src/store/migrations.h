/* migrations.h - each backend's schema as numbered steps, and the one loop
 * that brings a database up to the last of them.
 *
 * A backend's steps are the files migrations/<backend>/NNNN_name.sql. The
 * Makefile embeds each folder as build/gen/<backend>_migrations.inc, one
 * {version, "name", "sql"} entry per file in file order, for the backend to
 * include into its own array:
 *     static const struct migration steps[] = {
 *     #include "sqlite_migrations.inc"
 *     };
 * The backend says where the version lives (SQLite's PRAGMA user_version,
 * PostgreSQL's schema_version table) and runs the loop in one transaction.
 *
 * Adding a migration: a new file with the next number in the backend's
 * folder (a change both schemas need gets one in each, and store_move.h's
 * tables the columns a move must carry); never edit one that has shipped. */
#ifndef SHORTD_MIGRATIONS_H
#define SHORTD_MIGRATIONS_H

#include <stddef.h>

struct migration {
    int version;      /* NNNN of the file name */
    const char *name; /* the file name */
    const char *sql;  /* the file's text */
};

#define MIGRATIONS_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The version a database has after every step: the last step's. */
int migrations_last(const struct migration *steps, size_t n);

/* Calls apply() for each step after 'version', in order, until one fails:
 * apply() runs the step's SQL and records its version in the database,
 * inside the caller's transaction. Returns the first failure (ERR_OK when
 * none); '*to' gets the version of the last step applied, 'version' when
 * none was. */
int migrations_run(const struct migration *steps, size_t n, int version,
                   int (*apply)(const struct migration *step, void *arg), void *arg, int *to);

#endif
