/* import_yourls.c - reader `yourls`: a YOURLS installation's links and its
 * click log.
 *
 * The tables, as YOURLS 1.10.4 creates them (includes/functions-install.php),
 * with any table prefix (YOURLS_DB_PREFIX, "yourls_" by default):
 *   <prefix>url (keyword, url, title, timestamp, ip, clicks)
 *   <prefix>log (click_id, click_time, shorturl, referrer, user_agent,
 *                ip_address, country_code)
 * SOURCE is one of:
 *   - a mysqldump file, plain or gzip-compressed. mysqldump writes tables in
 *     name order, the log before the links, and the sink needs a link before
 *     its visits: the file is read twice, links first (from the first table
 *     named <prefix>url), then the visits of <prefix>log.
 *   - CSV of the tables as phpMyAdmin exports them, with a header row: a
 *     folder holding <prefix>url.csv (and <prefix>log.csv, if the log is to
 *     come too), or the paths "URL.csv[,LOG.csv]".
 * What is kept: the keyword exactly (case, hyphens), url, title, timestamp,
 * clicks (the source's total), and each log row as a visit with its user
 * agent, referrer ("direct", YOURLS's word for none, is none) and country.
 * The ip and ip_address columns are read past and never handed on.
 * Times: YOURLS writes its times in UTC (it sets PHP's zone to UTC,
 * includes/Config/Init.php) and mysqldump dumps TIMESTAMP columns in UTC
 * (--tz-utc, its default), so times without a zone are read as UTC. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "import/csvread.h"
#include "import/import.h"
#include "import/mysqldump.h"
#include "import/when.h"
#include "base/banned.h"

/* The columns read, in YOURLS's order (a dump without column lists has
 * every column, in this order). */
enum url_col { U_KEYWORD, U_URL, U_TITLE, U_TIMESTAMP, U_IP, U_CLICKS, U__COUNT };
static const char *const url_cols[U__COUNT] = {"keyword",   "url", "title",
                                               "timestamp", "ip",  "clicks"};
enum log_col {
    L_CLICK_ID,
    L_CLICK_TIME,
    L_SHORTURL,
    L_REFERRER,
    L_USER_AGENT,
    L_IP_ADDRESS,
    L_COUNTRY_CODE,
    L__COUNT
};
static const char *const log_cols[L__COUNT] = {"click_id",    "click_time", "shorturl",
                                               "referrer",    "user_agent", "ip_address",
                                               "country_code"};

#define FIELDS_MAX 7 /* the longer of the two */
_Static_assert(FIELDS_MAX >= (int)L__COUNT && FIELDS_MAX >= (int)U__COUNT, "FIELDS_MAX");

/* One row, whatever its source: each column's text, NULL when absent or
 * NULL, and its length. */
struct fields {
    const char *v[FIELDS_MAX];
    size_t n[FIELDS_MAX];
};

/* The row as a link; refused (with the reason) when it cannot be one. */
static int put_link(struct import_sink *s, const struct fields *f, struct import_where w,
                    const char *place)
{
    const char *kw = f->v[U_KEYWORD], *url = f->v[U_URL];
    if (!kw || !*kw) {
        import_refuse(s, w, "%sno keyword", place);
        return ERR_OK;
    }
    if (strlen(kw) != f->n[U_KEYWORD] || (url && strlen(url) != f->n[U_URL])) {
        import_refuse(s, w, "%skeyword '%s': a NUL byte in the keyword or url", place, kw);
        return ERR_OK;
    }
    if (!url || !*url) {
        import_refuse(s, w, "%skeyword '%s' has no url", place, kw);
        return ERR_OK;
    }
    struct import_link l = {.code = kw, .url = url, .where = w};
    const char *title = f->v[U_TITLE];
    if (title && *title && strlen(title) == f->n[U_TITLE])
        l.title = title;
    if (f->v[U_TIMESTAMP] &&
        when_parse(f->v[U_TIMESTAMP], f->n[U_TIMESTAMP], &l.created_at) != ERR_OK) {
        import_refuse(s, w, "%skeyword '%s': timestamp '%s' is no date and time", place, kw,
                      f->v[U_TIMESTAMP]);
        return ERR_OK;
    }
    const char *clicks = f->v[U_CLICKS];
    if (clicks && *clicks) {
        char *end = NULL;
        errno = 0;
        long long c = strtoll(clicks, &end, 10);
        if (*end || errno || c < 0) {
            import_refuse(s, w, "%skeyword '%s': clicks '%s' is no count", place, kw, clicks);
            return ERR_OK;
        }
        l.clicks = c;
    }
    return import_link(s, &l);
}

/* The row as a visit. */
static int put_visit(struct import_sink *s, const struct fields *f, struct import_where w,
                     const char *place)
{
    const char *kw = f->v[L_SHORTURL];
    if (!kw || !*kw) {
        import_refuse(s, w, "%sa log row without a shorturl", place);
        return ERR_OK;
    }
    struct import_visit v = {.code = kw, .where = w};
    const char *t = f->v[L_CLICK_TIME];
    if (!t || when_parse(t, f->n[L_CLICK_TIME], &v.at) != ERR_OK || v.at <= 0) {
        import_refuse(s, w, "%sa log row of '%s': click_time '%s' is no date and time", place, kw,
                      t ? t : "NULL");
        return ERR_OK;
    }
    const char *ref = f->v[L_REFERRER];
    if (ref && *ref && strcmp(ref, "direct") != 0) /* YOURLS writes 'direct' for none */
        v.referrer = ref;
    v.user_agent = f->v[L_USER_AGENT];
    const char *cc = f->v[L_COUNTRY_CODE];
    if (cc && strlen(cc) == 2)
        v.country = cc;
    /* f->v[L_IP_ADDRESS] is never read: addresses are not kept */
    return import_visit(s, &v);
}

/* ---- mysqldump ---- */

enum pass { PASS_LINKS, PASS_VISITS };

struct dump {
    struct import_sink *s;
    enum pass pass;
    struct buf prefix; /* of the url table found first */
    bool have_prefix;
    int64_t rows;         /* rows of the pass's table */
    uint64_t done, total; /* bytes, for progress: both passes */
};

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

/* Is 'table' <prefix><name>, with the prefix found (or, before one is, any)? */
static bool is_table(const struct dump *d, const char *table, const char *name)
{
    if (!ends_with(table, name))
        return false;
    size_t n = strlen(table) - strlen(name);
    return !d->have_prefix || (n == d->prefix.len && !memcmp(table, d->prefix.p, n));
}

static bool dump_want(void *ctx, const char *table)
{
    struct dump *d = ctx;
    return is_table(d, table, d->pass == PASS_LINKS ? "url" : "log");
}

/* A row of YOURLS's url table: its six columns, or a column list naming
 * keyword and url. */
static bool yourls_shaped(const struct mysql_row *row)
{
    if (!row->columns)
        return row->nvalues == U__COUNT;
    bool kw = false, url = false;
    for (size_t i = 0; i < row->ncolumns; i++) {
        kw = kw || !strcmp(row->columns[i], "keyword");
        url = url || !strcmp(row->columns[i], "url");
    }
    return kw && url;
}

static int dump_row(void *ctx, const struct mysql_row *row)
{
    struct dump *d = ctx;
    size_t ncols = d->pass == PASS_LINKS ? U__COUNT : L__COUNT;
    const char *const *names = d->pass == PASS_LINKS ? url_cols : log_cols;
    if (!d->have_prefix) {
        /* the first table named *url whose rows have YOURLS's shape fixes
         * the prefix; another application's *url table is passed over */
        if (!yourls_shaped(row))
            return ERR_OK;
        buf_add(&d->prefix, row->table, strlen(row->table) - 3);
        d->have_prefix = true;
    }
    d->rows++;
    char place[64];
    snprintf(place, sizeof(place), "%s row %lld of the INSERT: ", row->table,
             (long long)row->index);
    struct import_where w = {NULL, row->line};
    struct fields f = {0};
    if (row->columns) { /* mysqldump --complete-insert */
        if (row->ncolumns != row->nvalues) {
            import_refuse(d->s, w, "%s%zu values for %zu columns", place, row->nvalues,
                          row->ncolumns);
            return ERR_OK;
        }
        for (size_t i = 0; i < row->ncolumns; i++)
            for (size_t c = 0; c < ncols; c++)
                if (!strcmp(row->columns[i], names[c]) && !row->values[i].null) {
                    f.v[c] = row->values[i].p;
                    f.n[c] = row->values[i].n;
                }
    } else {
        if (row->nvalues != ncols) {
            import_refuse(d->s, w, "%s%zu values, where %s has %zu columns", place, row->nvalues,
                          row->table, ncols);
            return ERR_OK;
        }
        for (size_t c = 0; c < ncols; c++)
            if (!row->values[c].null) {
                f.v[c] = row->values[c].p;
                f.n[c] = row->values[c].n;
            }
    }
    return d->pass == PASS_LINKS ? put_link(d->s, &f, w, place) : put_visit(d->s, &f, w, place);
}

static void dump_bad(void *ctx, int64_t line, const char *why)
{
    struct dump *d = ctx;
    import_refuse(d->s, (struct import_where){NULL, line},
                  "cannot read this INSERT statement (%s): the rest of its line is skipped", why);
}

/* One pass over the file. */
static int dump_pass(struct dump *d, const char *path)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        import_refuse(d->s, (struct import_where){NULL, 0}, "cannot open '%s': %s", path,
                      strerror(errno));
        return ERR_IO;
    }
    gzbuffer(gz, 1 << 18);
    struct mysqldump_calls calls = {.want = dump_want, .row = dump_row, .bad = dump_bad, .ctx = d};
    struct mysqldump *p = mysqldump_new(&calls);
    char *chunk = malloc(1 << 18);
    if (!chunk)
        abort();
    int rc = ERR_OK;
    uint64_t base = d->done;
    for (;;) {
        int n = gzread(gz, chunk, 1 << 18);
        if (n < 0) {
            int zerr = 0;
            const char *msg = gzerror(gz, &zerr);
            import_refuse(d->s, (struct import_where){NULL, mysqldump_line(p)},
                          "cannot read '%s': %s", path, zerr == Z_ERRNO ? strerror(errno) : msg);
            rc = ERR_IO;
            break;
        }
        if (n == 0)
            break;
        rc = mysqldump_feed(p, chunk, (size_t)n);
        if (rc != ERR_OK)
            break;
        d->done = base + (uint64_t)gzoffset(gz);
        import_progress(d->s, d->done, d->total);
    }
    if (rc == ERR_OK)
        mysqldump_finish(p);
    free(chunk);
    mysqldump_free(p);
    gzclose(gz);
    return rc;
}

static int read_dump(const char *path, struct import_sink *s)
{
    struct stat st;
    struct dump d = {.s = s, .prefix = BUF_INIT};
    if (stat(path, &st) == 0)
        d.total = 2 * (uint64_t)st.st_size;
    import_progress_unit(s, "bytes");
    int rc = dump_pass(&d, path);
    if (rc == ERR_OK && !d.have_prefix) {
        import_refuse(s, (struct import_where){NULL, 0},
                      "'%s' holds no INSERT INTO a YOURLS url table (yourls_url, or another "
                      "prefix): is it a mysqldump of a YOURLS database?",
                      path);
        rc = ERR_INVALID;
    }
    if (rc == ERR_OK) {
        d.pass = PASS_VISITS;
        d.rows = 0;
        rc = dump_pass(&d, path);
    }
    buf_release(&d.prefix);
    return rc;
}

/* ---- CSV ---- */

/* One table's CSV file, with a header naming its columns. */
static int read_csv(const char *path, struct import_sink *s, enum pass pass)
{
    size_t ncols = pass == PASS_LINKS ? U__COUNT : L__COUNT;
    const char *const *names = pass == PASS_LINKS ? url_cols : log_cols;
    struct csvread *r = NULL;
    if (csvread_open(path, &r) != ERR_OK) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot open '%s': %s", path,
                      strerror(errno));
        return ERR_IO;
    }
    struct csv_record rec;
    int got = csvread_next(r, &rec);
    int idx[FIELDS_MAX];
    int rc = ERR_OK;
    if (got == 1) {
        for (size_t c = 0; c < ncols; c++)
            idx[c] = csv_column(&rec, names[c]);
    }
    int key = pass == PASS_LINKS ? U_KEYWORD : L_SHORTURL;
    int need = pass == PASS_LINKS ? U_URL : L_CLICK_TIME;
    if (got != 1 || idx[key] < 0 || idx[need] < 0) {
        import_refuse(s, (struct import_where){NULL, 1},
                      "'%s' has no header row naming the columns of YOURLS's %s table (%s)", path,
                      pass == PASS_LINKS ? "url" : "log",
                      pass == PASS_LINKS ? "keyword, url, title, timestamp, clicks"
                                         : "click_time, shorturl, referrer, user_agent, "
                                           "country_code");
        csvread_free(r);
        return ERR_INVALID;
    }
    char place[96];
    snprintf(place, sizeof(place), "%s: ", path);
    while ((got = csvread_next(r, &rec)) == 1) {
        struct fields f = {0};
        for (size_t c = 0; c < ncols; c++) {
            if (idx[c] < 0 || (size_t)idx[c] >= rec.n)
                continue;
            const char *v = rec.field[idx[c]];
            if (!strcmp(v, "NULL")) /* phpMyAdmin's NULL */
                continue;
            f.v[c] = v;
            f.n[c] = rec.len[idx[c]];
        }
        struct import_where w = {NULL, rec.line};
        rc = pass == PASS_LINKS ? put_link(s, &f, w, place) : put_visit(s, &f, w, place);
        if (rc != ERR_OK)
            break;
        import_progress(s, csvread_offset(r), csvread_size(r));
    }
    if (got < 0) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot read '%s': %s", path,
                      csvread_error(r));
        rc = ERR_IO;
    }
    csvread_free(r);
    return rc;
}

/* The folder's <prefix>url.csv and <prefix>log.csv (NULL: none). */
static int find_csvs(const char *dir, struct import_sink *s, char **url, char **log)
{
    *url = *log = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot open '%s': %s", dir,
                      strerror(errno));
        return ERR_IO;
    }
    struct buf prefix = BUF_INIT;
    int found = 0;
    const struct dirent *e;
    while ((e = readdir(d))) {
        if (ends_with(e->d_name, "url.csv")) {
            found++;
            buf_reset(&prefix);
            buf_add(&prefix, e->d_name, strlen(e->d_name) - 7);
        }
    }
    closedir(d);
    int rc = ERR_OK;
    if (found != 1) {
        import_refuse(s, (struct import_where){NULL, 0},
                      found ? "'%s' holds more than one *url.csv: name the files instead "
                              "(URL.csv,LOG.csv)"
                            : "'%s' holds no YOURLS url table's CSV (yourls_url.csv)",
                      dir);
        rc = ERR_INVALID;
    } else {
        struct buf p = BUF_INIT;
        buf_printf(&p, "%s/%surl.csv", dir, buf_cstr(&prefix));
        *url = buf_detach(&p, NULL);
        buf_printf(&p, "%s/%slog.csv", dir, buf_cstr(&prefix));
        struct stat st;
        if (stat(buf_cstr(&p), &st) == 0)
            *log = buf_detach(&p, NULL);
        buf_release(&p);
    }
    buf_release(&prefix);
    return rc;
}

int import_read_yourls(const char *source, struct import_sink *s)
{
    struct stat st;
    char *url = NULL, *log = NULL;
    int rc = ERR_OK;
    if (stat(source, &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = find_csvs(source, s, &url, &log);
    } else if (stat(source, &st) == 0) {
        size_t n = strlen(source);
        if (n < 4 || strcasecmp(source + n - 4, ".csv") != 0)
            return read_dump(source, s);
        url = xstrdup(source);
    } else {
        const char *comma = strrchr(source, ',');
        if (!comma) {
            import_refuse(s, (struct import_where){NULL, 0}, "cannot open '%s': %s", source,
                          strerror(errno));
            return ERR_IO;
        }
        url = slice_dup((struct slice){source, (size_t)(comma - source)});
        log = xstrdup(comma + 1);
    }
    if (rc == ERR_OK)
        rc = read_csv(url, s, PASS_LINKS);
    if (rc == ERR_OK && log)
        rc = read_csv(log, s, PASS_VISITS);
    free(url);
    free(log);
    return rc;
}
