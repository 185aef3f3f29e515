/* test_mysqldump.c - the mysqldump INSERT reader (import/mysqldump.h): the
 * statements mysqldump and phpMyAdmin write, MySQL's string escapes, column
 * lists, skipped tables, damaged statements, and input cut anywhere. */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "import/mysqldump.h"
#include "test.h"

#include "base/banned.h"

/* Every row and report as text: "t@line#index[cols]{v|v|NULL}" a row,
 * "!line: why" a report, one a line. Strings are written as they are, with
 * a NUL byte as "\0"; bare words in <angle brackets>. */
struct seen {
    struct buf out;
    const char *skip; /* a table not wanted */
    int stop_after;   /* rows before the callback says stop; 0: never */
    int rows;
};

static bool want(void *ctx, const char *table)
{
    struct seen *s = ctx;
    return !s->skip || strcmp(table, s->skip) != 0;
}

static int row(void *ctx, const struct mysql_row *r)
{
    struct seen *s = ctx;
    buf_printf(&s->out, "%s@%lld#%lld", r->table, (long long)r->line, (long long)r->index);
    if (r->columns) {
        buf_addc(&s->out, '[');
        for (size_t i = 0; i < r->ncolumns; i++)
            buf_printf(&s->out, "%s%s", i ? "," : "", r->columns[i]);
        buf_addc(&s->out, ']');
    }
    buf_addc(&s->out, '{');
    for (size_t i = 0; i < r->nvalues; i++) {
        const struct mysql_value *v = &r->values[i];
        if (i)
            buf_addc(&s->out, '|');
        CHECK(v->p[v->n] == '\0');
        if (v->null) {
            buf_adds(&s->out, "NULL");
            continue;
        }
        if (!v->string)
            buf_addc(&s->out, '<');
        for (size_t k = 0; k < v->n; k++) {
            if (v->p[k] == '\0')
                buf_adds(&s->out, "\\0");
            else
                buf_addc(&s->out, v->p[k]);
        }
        if (!v->string)
            buf_addc(&s->out, '>');
    }
    buf_adds(&s->out, "}\n");
    if (s->stop_after && ++s->rows == s->stop_after)
        return ERR_STORAGE;
    return ERR_OK;
}

static void bad(void *ctx, int64_t line, const char *why)
{
    struct seen *s = ctx;
    buf_printf(&s->out, "!%lld: %s\n", (long long)line, why);
}

/* Parses 'dump' in pieces of 'piece' bytes; the transcript, in static storage. */
static const char *parse_in(const char *dump, size_t piece, const char *skip)
{
    static struct buf last = BUF_INIT;
    struct seen s = {.out = BUF_INIT, .skip = skip};
    struct mysqldump_calls calls = {.want = want, .row = row, .bad = bad, .ctx = &s};
    struct mysqldump *d = mysqldump_new(&calls);
    size_t n = strlen(dump);
    for (size_t off = 0; off < n; off += piece)
        CHECK_EQ_INT(mysqldump_feed(d, dump + off, n - off < piece ? n - off : piece), ERR_OK);
    mysqldump_finish(d);
    mysqldump_free(d);
    buf_release(&last);
    last = s.out;
    return buf_cstr(&last);
}

static const char *parse(const char *dump) { return parse_in(dump, strlen(dump) + 1, NULL); }

void test_mysqldump_statements(void)
{
    /* the shape mysqldump 10.x writes, trimmed */
    const char *dump =
        "-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)\n"
        "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"
        "DROP TABLE IF EXISTS `yourls_url`;\n"
        "CREATE TABLE `yourls_url` (\n"
        "  `keyword` varchar(100) NOT NULL DEFAULT '',\n"
        "  `title` text COMMENT 'INSERT INTO x VALUES (1);'\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n"
        "LOCK TABLES `yourls_url` WRITE;\n"
        "/*!40000 ALTER TABLE `yourls_url` DISABLE KEYS */;\n"
        "INSERT INTO `yourls_url` VALUES ('a','https://e.com/?a=1;b=2','t),(x','2024-01-02 "
        "03:04:05','1.2.3.4',7),('B-c','u',NULL,'2024-01-02 03:04:05','',0);\n"
        "INSERT INTO `yourls_url` VALUES ('d','v','',0,'',-1);\n"
        "/*!40000 ALTER TABLE `yourls_url` ENABLE KEYS */;\n"
        "UNLOCK TABLES;\n";
    CHECK_EQ_STR(parse(dump), "yourls_url@10#1{a|https://e.com/?a=1;b=2|t),(x|2024-01-02 "
                              "03:04:05|1.2.3.4|<7>}\n"
                              "yourls_url@10#2{B-c|u|NULL|2024-01-02 03:04:05||<0>}\n"
                              "yourls_url@11#1{d|v||<0>||<-1>}\n");
}

void test_mysqldump_escapes(void)
{
    CHECK_EQ_STR(parse("INSERT INTO t VALUES ('a\\\\b\\'c\\\"d','\\n\\r\\t|\\0|\\Z|\\b','it''s',"
                       "\"dq\"\"x\",'\\%\\_\\q');\n"),
                 "t@1#1{a\\b'c\"d|\n\r\t|\\0|\032|\b|it's|dq\"x|\\%\\_q}\n");
    /* hex, introducers, an empty row, a raw newline inside a string */
    CHECK_EQ_STR(parse("INSERT INTO t VALUES (0x414243,X'6465',_binary 'bin',_utf8mb4'u',''),"
                       "(),('two\nlines',1.5e3);\n"),
                 "t@1#1{ABC|de|bin|u|}\nt@1#2{}\nt@1#3{two\nlines|<1.5e3>}\n");
}

void test_mysqldump_forms(void)
{
    /* --complete-insert, INSERT IGNORE, REPLACE, a database prefix,
     * phpMyAdmin's rows on lines of their own, ON DUPLICATE KEY UPDATE */
    CHECK_EQ_STR(parse("INSERT IGNORE INTO `db`.`t` (`a`, `b``c`) VALUES (1,'x');\n"
                       "REPLACE INTO t (a) VALUES (2);\n"
                       "insert into `t` (`a`) values\n(3),\n(4)\n"
                       "  ON DUPLICATE KEY UPDATE a = VALUES(a), b = ';';\n"
                       "INSERT INTO t VALUES (5);\n"),
                 "t@1#1[a,b`c]{<1>|x}\nt@2#1[a]{<2>}\nt@4#1[a]{<3>}\nt@5#2[a]{<4>}\n"
                 "t@7#1{<5>}\n");
    /* a table not wanted: its rows are not seen, the others are */
    CHECK_EQ_STR(parse_in("INSERT INTO `log` VALUES ('x\\');','y');\n"
                          "INSERT INTO `url` VALUES ('k');\n",
                          7, "log"),
                 "url@2#1{k}\n");
}

void test_mysqldump_damage(void)
{
    /* a damaged row: reported with its line, the rows before it kept, the
     * rest of its line skipped, the next statement read */
    CHECK_EQ_STR(parse("INSERT INTO t VALUES (1),(2 3),(4);\nINSERT INTO t VALUES (5);\n"),
                 "t@1#1{<1>}\n!1: expected ',' or ')' after a value, found a word\n"
                 "t@2#1{<5>}\n");
    CHECK_EQ_STR(parse("INSERT INTO t SET a=1;\nINSERT INTO t VALUES (1) garbage;\n"),
                 "!1: expected a column list or VALUES, found a word\nt@2#1{<1>}\n"
                 "!2: expected ',' or ';' after a row, found a word\n");
    CHECK_EQ_STR(parse("INSERT INTO t VALUES (0x4);\nINSERT INTO t VALUES (x'zz');\n"),
                 "!1: a hex literal with an odd number of digits\n"
                 "!2: a hex literal with a character that is no hex digit\n");
    CHECK_EQ_STR(parse("INSERT INTO t VALUES ('cut"), "!1: the file ends inside a quoted string\n");
    CHECK_EQ_STR(parse("INSERT INTO t VALUES (1)\n"),
                 "t@1#1{<1>}\n!2: the file ends inside an INSERT statement (no ';')\n");
    /* a stop asked by the callback stops the parse at once */
    struct seen s = {.out = BUF_INIT, .stop_after = 1};
    struct mysqldump_calls calls = {.row = row, .bad = bad, .ctx = &s};
    struct mysqldump *d = mysqldump_new(&calls);
    const char *two = "INSERT INTO t VALUES (1),(2);\n";
    CHECK_EQ_INT(mysqldump_feed(d, two, strlen(two)), ERR_STORAGE);
    CHECK_EQ_INT(mysqldump_feed(d, two, strlen(two)), ERR_INVALID);
    mysqldump_finish(d);
    CHECK_EQ_STR(buf_cstr(&s.out), "t@1#1{<1>}\n");
    mysqldump_free(d);
    buf_release(&s.out);
}

/* The same transcript whatever the pieces the input comes in. */
void test_mysqldump_pieces(void)
{
    const char *dump = "-- c\nINSERT INTO `t` (`a`,`b`) VALUES ('x\\'y','it''s\\\\'),"
                       "(0x4142,_binary 'z'),(NULL,-2.5);\nSELECT 1;\n"
                       "INSERT INTO t VALUES ('bad' 'x');\nINSERT INTO t VALUES ('end');\n";
    char *whole = xstrdup(parse(dump));
    CHECK(strstr(whole, "t@2#1[a,b]{x'y|it's\\}") != NULL);
    for (size_t piece = 1; piece < 12; piece++) {
        if (!CHECK_EQ_STR(parse_in(dump, piece, NULL), whole))
            test_note("pieces of %zu bytes", piece);
    }
    free(whole);
}
