/* test_migrations.c - the schema steps both backends embed (migrations/pg/,
 * migrations/sqlite/) and the loop that applies them (migrations.h). */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "store/migrations.h"
#include "test.h"

#include "base/banned.h"

static const struct migration pg_steps[] = {
#include "pg_migrations.inc"
};

static const struct migration sqlite_steps[] = {
#include "sqlite_migrations.inc"
};

/* Numbered as their files are, in increasing order from 1, each with its
 * text. A number may be left free for another branch's step (the loop
 * needs no gapless sequence: migrations.h). */
static void check_steps(const char *backend, const struct migration *m, size_t n)
{
    if (!CHECK(n > 0))
        return;
    for (size_t i = 0; i < n; i++) {
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "%04d_", m[i].version);
        size_t len = strlen(m[i].name);
        bool ok = CHECK(i ? m[i].version > m[i - 1].version : m[i].version == 1) &&
                  CHECK(strncmp(m[i].name, prefix, 5) == 0) &&
                  CHECK(len > 9 && strcmp(m[i].name + len - 4, ".sql") == 0) &&
                  CHECK(strstr(m[i].sql, ";") != NULL);
        if (!ok)
            test_note("%s step %zu: '%s'", backend, i, m[i].name);
    }
    CHECK_EQ_INT(migrations_last(m, n), m[n - 1].version);
}

void test_migrations_embedded(void)
{
    check_steps("pg", pg_steps, MIGRATIONS_COUNT(pg_steps));
    check_steps("sqlite", sqlite_steps, MIGRATIONS_COUNT(sqlite_steps));
    CHECK_EQ_INT(migrations_last(NULL, 0), 0);

    /* SQLite's files run, in order, on an empty database (without the C
     * hooks, which convert rows these tables do not have). */
    sqlite3 *db = NULL;
    if (!CHECK_EQ_INT(sqlite3_open(":memory:", &db), SQLITE_OK))
        return;
    for (size_t i = 0; i < MIGRATIONS_COUNT(sqlite_steps); i++) {
        char *msg = NULL;
        if (!CHECK_EQ_INT(sqlite3_exec(db, sqlite_steps[i].sql, NULL, NULL, &msg), SQLITE_OK))
            test_note("%s: %s", sqlite_steps[i].name, msg ? msg : "?");
        sqlite3_free(msg);
    }
    sqlite3_close(db);
}

/* apply() of the loop: records the versions it is given, fails at one. */
struct applied {
    int version[8];
    int n;
    int fail_at;
};

static int record(const struct migration *m, void *arg)
{
    struct applied *a = arg;
    if (m->version == a->fail_at)
        return ERR_STORAGE;
    if (a->n < 8)
        a->version[a->n] = m->version;
    a->n++;
    return ERR_OK;
}

void test_migrations_run(void)
{
    static const struct migration steps[] = {{1, "0001_a.sql", "A;"},
                                             {2, "0002_b.sql", "B;"},
                                             {3, "0003_c.sql", "C;"},
                                             {5, "0005_e.sql", "E;"}};
    size_t n = MIGRATIONS_COUNT(steps);
    CHECK_EQ_INT(migrations_last(steps, n), 5);

    /* A new database takes every step, in order. */
    struct applied a = {.fail_at = -1};
    int to = -1;
    CHECK_EQ_INT(migrations_run(steps, n, 0, record, &a, &to), ERR_OK);
    CHECK(a.n == 4 && a.version[0] == 1 && a.version[1] == 2 && a.version[2] == 3 &&
          a.version[3] == 5);
    CHECK_EQ_INT(to, 5);

    /* An older one, those after its version. */
    a = (struct applied){.fail_at = -1};
    CHECK_EQ_INT(migrations_run(steps, n, 2, record, &a, &to), ERR_OK);
    CHECK(a.n == 2 && a.version[0] == 3 && a.version[1] == 5);
    CHECK_EQ_INT(to, 5);

    /* One at the last version, none. */
    a = (struct applied){.fail_at = -1};
    CHECK_EQ_INT(migrations_run(steps, n, 5, record, &a, &to), ERR_OK);
    CHECK_EQ_INT(a.n, 0);
    CHECK_EQ_INT(to, 5);

    /* A failed step ends the run: 'to' is the last that went through. */
    a = (struct applied){.fail_at = 3};
    CHECK_EQ_INT(migrations_run(steps, n, 1, record, &a, &to), ERR_STORAGE);
    CHECK(a.n == 1 && a.version[0] == 2);
    CHECK_EQ_INT(to, 2);
}
