/* test_import.c - the importer's pieces: CSV records and the lines they
 * start on (csvread.h), the progress line's text (progress.h), and the
 * sink's decisions through import_run with a reader made here (import.h)
 * against a real SQLite store: totals equal the source's, visits are
 * re-counted with bots apart, a second run changes nothing, and a run that
 * stops half way counts no visit twice when run again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/router.h"
#include "base/err.h"
#include "base/log.h"
#include "base/progress.h"
#include "import/csvread.h"
#include "import/import.h"
#include "links/links.h"
#include "store/store.h"
#include "test.h"

#include "base/banned.h"

/* ---- csvread ---- */

void test_csvread_records(void)
{
    char path[] = "/tmp/shortd-csv-XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0))
        return;
    static const char text[] = "code,url,title\r\n"
                               "a,\"https://x.example/?a=1,2\",\"multi\nline\"\r\n"
                               "\r\n"
                               "b,https://y.example,\"say \"\"hi\"\"\"\n"
                               "c,https://z.example";
    CHECK(write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1));
    close(fd);
    struct csvread *r;
    if (!CHECK_EQ_INT(csvread_open(path, &r), ERR_OK))
        return;
    struct csv_record rec;
    if (CHECK_EQ_INT(csvread_next(r, &rec), 1)) {
        CHECK_EQ_INT(rec.n, 3);
        CHECK_EQ_INT(rec.line, 1);
        CHECK_EQ_INT(csv_column(&rec, "title"), 2);
        CHECK_EQ_INT(csv_column(&rec, "URL"), 1);
        CHECK_EQ_INT(csv_column(&rec, "clicks"), -1);
    }
    if (CHECK_EQ_INT(csvread_next(r, &rec), 1)) {
        CHECK_EQ_INT(rec.line, 2);
        CHECK_EQ_STR(rec.field[1], "https://x.example/?a=1,2");
        CHECK_EQ_STR(rec.field[2], "multi\nline");
    }
    if (CHECK_EQ_INT(csvread_next(r, &rec), 1)) {
        CHECK_EQ_INT(rec.line, 5); /* the blank line 4 is no record */
        CHECK_EQ_STR(rec.field[0], "b");
        CHECK_EQ_STR(rec.field[2], "say \"hi\"");
    }
    if (CHECK_EQ_INT(csvread_next(r, &rec), 1)) {
        CHECK_EQ_INT(rec.line, 6); /* no line end after the last */
        CHECK_EQ_INT(rec.n, 2);
        CHECK_EQ_STR(rec.field[1], "https://z.example");
    }
    CHECK_EQ_INT(csvread_next(r, &rec), 0);
    CHECK_EQ_INT(csvread_offset(r), sizeof(text) - 1);
    CHECK_EQ_INT(csvread_size(r), sizeof(text) - 1);
    csvread_free(r);
    unlink(path);
    CHECK_EQ_INT(csvread_open("/nonexistent/x.csv", &r), ERR_IO);
}

/* ---- progress ---- */

void test_progress_format(void)
{
    char n[32], line[160];
    progress_number(0, n);
    CHECK_EQ_STR(n, "0");
    progress_number(999, n);
    CHECK_EQ_STR(n, "999");
    progress_number(1000, n);
    CHECK_EQ_STR(n, "1,000");
    progress_number(1234567, n);
    CHECK_EQ_STR(n, "1,234,567");

    progress_format(line, sizeof(line), "import", "rows", 41210, 1000000, 18300);
    CHECK_EQ_STR(line, "import: 41,210 of 1,000,000 rows \xc2\xb7 18,300/s \xc2\xb7 0:52 left");
    progress_format(line, sizeof(line), "export", "links", 1234, 0, 10);
    CHECK_EQ_STR(line, "export: 1,234 links \xc2\xb7 10/s");
    progress_format(line, sizeof(line), "prune", "rows", 5, 10, -1);
    CHECK_EQ_STR(line, "prune: 5 of 10 rows");
    progress_format(line, sizeof(line), "backup", "pages", 0, 7200, 1);
    CHECK_EQ_STR(line, "backup: 0 of 7,200 pages \xc2\xb7 1/s \xc2\xb7 2:00:00 left");
    /* A line cut by a small buffer stays a string */
    char small[12];
    progress_format(small, sizeof(small), "import", "rows", 41210, 1000000, 18300);
    CHECK_EQ_STR(small, "import: 41,");

    CHECK_EQ_INT(progress_mode_parse("auto"), PROGRESS_AUTO);
    CHECK_EQ_INT(progress_mode_parse("always"), PROGRESS_ALWAYS);
    CHECK_EQ_INT(progress_mode_parse("never"), PROGRESS_NEVER);
    CHECK_EQ_INT(progress_mode_parse("sometimes"), -1);
    CHECK(progress_new("x", "rows", PROGRESS_NEVER) == NULL);
}

/* ---- the sink ---- */

/* A made-up source: links L1 (20 clicks in the source, 3 visits of which
 * one a bot), L2 (5 clicks, no visits), l-3 (a legacy code, a tally of 4
 * clicks), a row with a reserved code, a visit of a code the source lacks,
 * then L4 on a custom domain.
 * With 'stop_after' > 0, the reader fails after that many records, as a
 * killed import would stop. */
static int stop_after;

static int fake_read(const char *source, struct import_sink *s)
{
    (void)source;
    int n = 0, rc = ERR_OK;
#define STEP(call)                                                                                 \
    do {                                                                                           \
        if (stop_after && n++ == stop_after)                                                       \
            return ERR_IO;                                                                         \
        if ((rc = (call)) != ERR_OK)                                                               \
            return rc;                                                                             \
    } while (0)
    struct import_link l1 = {.code = "L1",
                             .url = "https://one.example/",
                             .clicks = 20,
                             .created_at = 1700000000,
                             .where = {NULL, 2}};
    struct import_link l2 = {.code = "L2",
                             .url = "https://two.example/",
                             .clicks = 5,
                             .where = {NULL, 3}};
    struct import_link l3 = {.code = "l-3",
                             .url = "https://three.example/",
                             .clicks = 4,
                             .where = {NULL, 4}};
    struct import_link bad = {.code = "api", .url = "https://x.example/", .where = {NULL, 5}};
    STEP(import_link(s, &l1));
    STEP(import_link(s, &l2));
    STEP(import_link(s, &l3));
    STEP(import_link(s, &bad));
    const char *firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";
    struct import_visit v = {.code = "L1",
                             .at = 1700000000,
                             .user_agent = firefox,
                             .referrer = "https://www.google.com/",
                             .country = "de",
                             .where = {"log", 1}};
    STEP(import_visit(s, &v));
    v.at += 86400;
    v.where.n = 2;
    STEP(import_visit(s, &v));
    v.user_agent = "Googlebot/2.1 (+http://www.google.com/bot.html)";
    v.where.n = 3;
    STEP(import_visit(s, &v));
    v.code = "nope";
    v.where.n = 4;
    STEP(import_visit(s, &v));
    struct import_tally_value tv[] = {{DIM_BROWSER, "Chrome", 4}, {DIM_COUNTRY, "FR", 4}};
    struct import_tally t = {.code = "l-3",
                             .at = 1700003600,
                             .clicks = 4,
                             .values = tv,
                             .nvalues = 2,
                             .where = {"visits", 1}};
    STEP(import_tally(s, &t));
    /* A custom domain as a source may spell it, and a title longer than the
     * API takes (cut on a character boundary, the link kept) */
    static char title[400];
    memset(title, 'a', 255);
    memcpy(title + 255, "\xc3\xa9 and more", 11);
    struct import_link l4 = {.code = "L4",
                             .url = "https://four.example/",
                             .domain = "Go.Example.COM",
                             .title = title,
                             .where = {NULL, 9}};
    STEP(import_link(s, &l4));
#undef STEP
    return ERR_OK;
}

static const struct import_format fake = {"fake", "made up", fake_read};

static int64_t total(struct store *st, const char *code, int64_t *imported)
{
    struct link l;
    if (st->ops->link_get(st, code, &l) != ERR_OK)
        return -1;
    int64_t t = l.clicks + l.bot_clicks;
    *imported = l.imported;
    link_release(&l);
    return t;
}

static int count_dim(int dim, const char *value, int64_t n, void *arg)
{
    if (dim == DIM_COUNTRY && !strcmp(value, "DE"))
        *(int64_t *)arg += n;
    return 0;
}

/* Days as "day:clicks/bots," appended to the string 'arg' points at */
static int day_text(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    (void)uniques;
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 128 - n, "%lld:%lld/%lld,", (long long)day, (long long)clicks,
             (long long)bots);
    return 0;
}

void test_import_sink(void)
{
    char dir[] = "/tmp/shortd-import-XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL))
        return;
    char url[64];
    snprintf(url, sizeof(url), "sqlite:%s/db", dir);
    struct store *st;
    struct links *l;
    static const char *const no_hosts[] = {NULL};
    if (!CHECK_EQ_INT(store_open(url, &st), ERR_OK))
        return;
    if (!CHECK_EQ_INT(links_new(st, router_reserved(), no_hosts, &l), ERR_OK))
        return;
    /* Days written as a run at every commit, so that the end merges a link
     * day's parts from several runs (import.c, DESIGN) */
    struct import_opts o = {.owner = 1,
                            .batch_rows = 2,
                            .days_held = 1,
                            .progress = PROGRESS_NEVER,
                            .quiet = true};
    struct import_summary sum;

    /* A dry run: the same report, nothing written */
    o.dry_run = true;
    stop_after = 0;
    CHECK_EQ_INT(import_run(st, l, &fake, "-", &o, &sum), ERR_OK);
    CHECK_EQ_INT(sum.links_imported, 4);
    CHECK_EQ_INT(sum.visits, 3);
    int64_t imported;
    CHECK_EQ_INT(total(st, "L1", &imported), -1);
    o.dry_run = false;

    /* A run stopped after the first visit, then a whole run */
    stop_after = 5;
    enum log_level saved = log_level;
    log_level = LOG_OFF;
    CHECK_EQ_INT(import_run(st, l, &fake, "-", &o, &sum), ERR_IO);
    log_level = saved;
    CHECK_EQ_INT(total(st, "L1", &imported), 20);
    stop_after = 0;
    CHECK_EQ_INT(import_run(st, l, &fake, "-", &o, &sum), ERR_OK);
    CHECK_EQ_INT(sum.links_imported, 1); /* L4 came after the stop */
    CHECK_EQ_INT(sum.links_there, 3);
    CHECK_EQ_INT(sum.visits, 0);
    CHECK_EQ_INT(sum.visits_dropped, 3 + 4);
    CHECK_EQ_INT(sum.refused, 2); /* the reserved code, the visit of a code not given */
    /* Not one visit counted twice: the source's total, whatever got stored */
    CHECK_EQ_INT(total(st, "L1", &imported), 20);
    CHECK_EQ_INT(total(st, "L2", &imported), 5);
    CHECK_EQ_INT(imported, 5);

    /* A fresh store, the whole source at once */
    links_free(l);
    st->ops->close(st);
    snprintf(url, sizeof(url), "sqlite:%s/db2", dir);
    if (!CHECK_EQ_INT(store_open(url, &st), ERR_OK))
        return;
    if (!CHECK_EQ_INT(links_new(st, router_reserved(), no_hosts, &l), ERR_OK))
        return;
    CHECK_EQ_INT(import_run(st, l, &fake, "-", &o, &sum), ERR_OK);
    CHECK_EQ_INT(sum.links_imported, 4);
    CHECK_EQ_INT(sum.domains_added, 1);
    CHECK_EQ_INT(sum.visits, 3);
    CHECK_EQ_INT(sum.visit_bots, 1);
    CHECK_EQ_INT(sum.tallies, 1);
    CHECK_EQ_INT(sum.refused, 2);
    CHECK_EQ_INT(sum.imported_clicks, (20 - 3) + 5 + 0);
    CHECK_EQ_INT(total(st, "L1", &imported), 20);
    CHECK_EQ_INT(imported, 17);
    CHECK_EQ_INT(total(st, "l-3", &imported), 4);
    CHECK_EQ_INT(imported, 0);
    struct link k;
    if (CHECK_EQ_INT(st->ops->link_get(st, "L1", &k), ERR_OK)) {
        CHECK_EQ_INT(k.bot_clicks, 1); /* the Googlebot visit */
        CHECK_EQ_INT(k.created_at, 1700000000000LL);
        CHECK_EQ_INT(k.owner, 1);
        link_release(&k);
    }
    int64_t de = 0;
    CHECK_EQ_INT(st->ops->stats_dims(st, "L1", 0, 100000, count_dim, &de), ERR_OK);
    CHECK_EQ_INT(de, 2); /* two human visits from DE; the bot has no dimensions */
    /* The second day's human and bot visits came in two runs: one row */
    char days[128] = "";
    CHECK_EQ_INT(st->ops->stats_days(st, "L1", 0, 100000, day_text, days), ERR_OK);
    CHECK_EQ_STR(days, "19675:1/0,19676:1/1,");
    CHECK_EQ_INT(st->ops->link_get(st, "api", &k), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->link_get(st, "L4", &k), ERR_OK)) {
        CHECK_EQ_STR(k.domain, "go.example.com");
        CHECK_EQ_INT(strlen(k.title), 255); /* the two-byte character at 255 would pass 256 */
        link_release(&k);
    }
    int64_t domain_owner = 0;
    CHECK_EQ_INT(st->ops->domain_get(st, "go.example.com", &domain_owner), ERR_OK);
    CHECK_EQ_INT(domain_owner, 1);

    links_free(l);
    st->ops->close(st);
    static const char *const files[] = {"db",      "db-wal",  "db-shm", "db2",
                                        "db2-wal", "db2-shm", NULL};
    for (int i = 0; files[i]; i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}
