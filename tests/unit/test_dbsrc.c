/* test_dbsrc.c - a peer's database as an import source: an SQLite file
 * read row by row as text (NULLs, numbers, booleans), never changed; a
 * missing file or table is ERR_IO; a row callback stops the query with its
 * code; and, with SHORTD_TEST_PG (tests/pg.sh), the same on PostgreSQL. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "import/dbsrc.h"
#include "test.h"

#include "base/banned.h"

struct seen {
    int rows;
    char text[256]; /* the rows as "a|b|NULL;" */
    int stop_at;    /* return ERR_INVALID at this row (1-based), 0: never */
};

static int seen_row(void *arg, const char *const *c, int n)
{
    struct seen *s = arg;
    s->rows++;
    size_t len = strlen(s->text);
    for (int i = 0; i < n; i++) {
        int w = snprintf(s->text + len, sizeof(s->text) - len, "%s%s", i ? "|" : "",
                         c[i] ? c[i] : "NULL");
        len += w > 0 ? (size_t)w : 0;
        if (len >= sizeof(s->text))
            return ERR_TOOBIG;
    }
    snprintf(s->text + len, sizeof(s->text) - len, ";");
    return s->stop_at && s->rows == s->stop_at ? ERR_INVALID : ERR_OK;
}

static void check_queries(struct dbsrc *d)
{
    struct seen s = {0};
    CHECK_EQ_INT(dbsrc_query(d, "t", "SELECT id, name, flag, note FROM t ORDER BY id", seen_row,
                             &s),
                 ERR_OK);
    CHECK_EQ_INT(s.rows, 3);
    CHECK(strstr(s.text, "1|Abc-1|") == s.text);
    CHECK(strstr(s.text, "|NULL;3|") != NULL); /* row 2's note */
    CHECK(strstr(s.text, "|with, comma;") != NULL);
    s = (struct seen){.stop_at = 2};
    CHECK_EQ_INT(dbsrc_query(d, "t", "SELECT id FROM t ORDER BY id", seen_row, &s), ERR_INVALID);
    CHECK_EQ_INT(s.rows, 2);
    s = (struct seen){0};
    CHECK_EQ_INT(dbsrc_query(d, "missing", "SELECT x FROM missing", seen_row, &s), ERR_IO);
    CHECK_EQ_INT(s.rows, 0);
}

void test_dbsrc_sqlite(void)
{
    char path[] = "/tmp/shortd-dbsrc-XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0))
        return;
    close(fd);
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(db,
                              "CREATE TABLE t (id integer primary key, name text, flag boolean, "
                              "note text); INSERT INTO t VALUES (1, 'Abc-1', 1, 'x'), "
                              "(2, 'two', 0, NULL), (3, 'three', 1, 'with, comma');",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    struct stat before, after;
    CHECK_EQ_INT(stat(path, &before), 0);

    struct dbsrc *d = NULL;
    if (CHECK_EQ_INT(dbsrc_open(path, &d), ERR_OK)) {
        CHECK(!dbsrc_is_pg(d));
        check_queries(d);
        /* Read-only: a write is refused */
        struct seen s = {0};
        CHECK_EQ_INT(dbsrc_query(d, "t", "DELETE FROM t", seen_row, &s), ERR_IO);
        dbsrc_close(d);
    }
    CHECK_EQ_INT(stat(path, &after), 0);
    CHECK_EQ_INT(after.st_size, before.st_size);
    CHECK(after.st_mtime == before.st_mtime);
    unlink(path);

    d = NULL;
    CHECK_EQ_INT(dbsrc_open("/tmp/shortd-dbsrc-no-such-file", &d), ERR_IO);
    CHECK(d == NULL);
    CHECK(dbsrc_bool("1") && dbsrc_bool("t") && dbsrc_bool("true"));
    CHECK(!dbsrc_bool("0") && !dbsrc_bool("f") && !dbsrc_bool(NULL));
}

void test_dbsrc_pg(void)
{
    const char *url = getenv("SHORTD_TEST_PG");
    if (!url) {
        printf(
            "dbsrc: SHORTD_TEST_PG is unset: PostgreSQL checks skipped (run under tests/pg.sh)\n");
        return;
    }
    struct dbsrc *d = NULL;
    if (!CHECK_EQ_INT(dbsrc_open(url, &d), ERR_OK))
        return;
    CHECK(dbsrc_is_pg(d));
    /* The snapshot is read-only: rows come from a VALUES list */
    struct seen s = {0};
    CHECK_EQ_INT(
        dbsrc_query(d, "t",
                    "SELECT * FROM (VALUES (1, 'Abc-1', true, 'x'), (2, 'two', false, NULL), "
                    "(3, 'three', true, 'with, comma')) AS t (id, name, flag, note) "
                    "ORDER BY id",
                    seen_row, &s),
        ERR_OK);
    CHECK_EQ_INT(s.rows, 3);
    CHECK(strstr(s.text, "1|Abc-1|t|x;2|two|f|NULL;") == s.text);
    s = (struct seen){0};
    CHECK_EQ_INT(dbsrc_query(d, "t", "CREATE TABLE dbsrc_nope (x int)", seen_row, &s), ERR_IO);
    dbsrc_close(d);

    d = NULL;
    CHECK_EQ_INT(dbsrc_open("postgres://nobody@127.0.0.1:1/none", &d), ERR_IO);
    CHECK(d == NULL);
}
