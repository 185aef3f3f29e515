/* import_shlink.c - the `shlink` reader: Shlink's PostgreSQL database by a
 * postgres:// URL, or the CSV of short URLs that Shlink's web client
 * exports.
 *
 * The database: tables and columns of Shlink v5.1.5 (github.com/shlinkio/
 * shlink, commit c201760cccb84c61f70d16baca26e1e548eb1157), from the
 * Doctrine mappings in module/Core/config/entities-mappings/ (the same in
 * 4.x): short_urls (short_code, original_url, title, date_created,
 * valid_since, valid_until, max_visits, domain_id), domains (authority),
 * tags and short_urls_in_tags, and visits one row a visit (referer, "date",
 * user_agent, potential_bot, visited_url, visit_location_id →
 * visit_locations.country_code), handed over as import_visit records to be
 * re-counted. remote_addr is never selected. Visits of no short URL (Shlink's
 * orphan visits: base URL, 404s, invalid codes) are counted and dropped.
 * Shlink writes its dates as TIMESTAMP WITHOUT TIME ZONE in UTC.
 *
 * shortd has no start time, so a short URL whose valid_since is still to
 * come is refused (it would open too early); one whose valid_since is past is
 * imported as it opens today.
 *
 * The CSV: what shlink-web-component v0.19.2 (github.com/shlinkio/
 * shlink-web-component, commit 5ea0166530d17f43968c26b16b4a2b73299e0d7b; the
 * web client's short URL list) exports: src/short-urls/helpers/
 * ExportShortUrlsBtn.tsx writes the columns createdAt (ISO 8601 with an
 * offset), domain, shortCode (the short URL's path, percent-encoded),
 * shortUrl, longUrl, title, tags (joined with '|') and visits (the total,
 * kept as imported clicks: the export has no visits) through
 * @json2csv/plainjs; shlink-web-client's own exporter wrote the same
 * columns since 3.x. Its domain column names the host of every short URL,
 * Shlink's default domain included, and becomes the link's domain. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "base/pct.h"
#include "import/csvread.h"
#include "import/dbsrc.h"
#include "import/import.h"

#include "base/banned.h"

#define EPOCH(c) "floor(extract(epoch FROM " c "))::bigint"

/* clang-format off */
static const char links_sql[] =
    "SELECT s.id, s.short_code, s.original_url, s.title, d.authority, "
    EPOCH("s.date_created") ", " EPOCH("s.valid_since") ", " EPOCH("s.valid_until") ", "
    "s.max_visits, "
    "(SELECT json_agg(t.name ORDER BY t.name)::text FROM short_urls_in_tags st "
    " JOIN tags t ON t.id = st.tag_id WHERE st.short_url_id = s.id), "
    "(SELECT count(*) FROM visits v WHERE v.short_url_id = s.id) "
    "FROM short_urls s LEFT JOIN domains d ON d.id = s.domain_id ORDER BY s.id";
/* clang-format on */

enum {
    L_ID,
    L_CODE,
    L_URL,
    L_TITLE,
    L_DOMAIN,
    L_CREATED,
    L_SINCE,
    L_UNTIL,
    L_MAX,
    L_TAGS,
    L_VISITS
};

/* clang-format off */
static const char visits_sql[] =
    "SELECT v.id, s.short_code, d.authority, " EPOCH("v.\"date\"") ", v.user_agent, v.referer, "
    "v.potential_bot, vl.country_code, v.visited_url, "
    "(CASE WHEN s.id = (SELECT min(s2.id) FROM short_urls s2 WHERE s2.short_code = s.short_code) "
    " THEN 0 ELSE 1 END) "
    "FROM visits v JOIN short_urls s ON s.id = v.short_url_id "
    "LEFT JOIN domains d ON d.id = s.domain_id "
    "LEFT JOIN visit_locations vl ON vl.id = v.visit_location_id ORDER BY v.id";
/* clang-format on */

/* V_SHADOWED: 1 when the visit's short URL is not the first with its code:
 * Shlink keeps a code once a domain, shortd once, so the sink takes the
 * first and refuses the others, whose visits must not count for the first. */
enum { V_ID, V_CODE, V_DOMAIN, V_DATE, V_UA, V_REFERER, V_BOT, V_COUNTRY, V_VISITED, V_SHADOWED };

static const char count_sql[] =
    "SELECT (SELECT count(*) FROM short_urls), (SELECT count(*) FROM visits), "
    "(SELECT count(*) FROM visits WHERE short_url_id IS NULL)";

struct shlink {
    struct import_sink *sink;
    int64_t now; /* unix seconds, for valid_since */
    uint64_t rows, total;
    int64_t orphans;
    int64_t shadowed; /* visits of short URLs with an earlier one's code */
};

static const char *text_col(const char *v) { return v && *v ? v : NULL; }

static void progress(struct shlink *sh)
{
    sh->rows++;
    if (sh->rows % 1024 == 0)
        import_progress(sh->sink, sh->rows, sh->total);
}

static int count_row(void *arg, const char *const *c, int n)
{
    struct shlink *sh = arg;
    int64_t links = 0, visits = 0;
    if (n >= 3 && dbsrc_int(c[0], &links) && dbsrc_int(c[1], &visits) &&
        dbsrc_int(c[2], &sh->orphans))
        sh->total = (uint64_t)(links + visits - sh->orphans);
    return ERR_OK;
}

static int link_row(void *arg, const char *const *c, int n)
{
    struct shlink *sh = arg;
    (void)n;
    progress(sh);
    struct import_link l = {0};
    int64_t id = 0, since = 0;
    (void)dbsrc_int(c[L_ID], &id);
    l.where = (struct import_where){"short_urls", id};
    l.code = text_col(c[L_CODE]);
    l.url = text_col(c[L_URL]);
    if (!l.code) {
        import_refuse(sh->sink, l.where, "the short URL has no short_code");
        return ERR_OK;
    }
    if (!l.url) {
        import_refuse(sh->sink, l.where, "short URL '%s' has no original_url", l.code);
        return ERR_OK;
    }
    if (dbsrc_int(c[L_SINCE], &since) && since > sh->now) {
        char when[RFC3339_MAX];
        rfc3339_format(since * 1000, when);
        import_refuse(sh->sink, l.where,
                      "short URL '%s' is valid only from %s: shortd has no start time, "
                      "so it would open too early",
                      l.code, when);
        return ERR_OK;
    }
    l.title = text_col(c[L_TITLE]);
    l.domain = text_col(c[L_DOMAIN]);
    l.tags = text_col(c[L_TAGS]);
    (void)dbsrc_int(c[L_CREATED], &l.created_at);
    (void)dbsrc_int(c[L_UNTIL], &l.expires_at);
    (void)dbsrc_int(c[L_MAX], &l.max_clicks);
    if (l.max_clicks < 0)
        l.max_clicks = 0;
    /* Every visit of it is in the visits that follow. */
    (void)dbsrc_int(c[L_VISITS], &l.clicks);
    return import_link(sh->sink, &l);
}

static int visit_row(void *arg, const char *const *c, int n)
{
    struct shlink *sh = arg;
    (void)n;
    progress(sh);
    struct import_visit v = {0};
    int64_t id = 0;
    (void)dbsrc_int(c[V_ID], &id);
    v.where = (struct import_where){"visits", id};
    if (dbsrc_bool(c[V_SHADOWED])) {
        sh->shadowed++;
        return ERR_OK;
    }
    if (!dbsrc_int(c[V_DATE], &v.at)) {
        import_refuse(sh->sink, v.where, "the visit has no date");
        return ERR_OK;
    }
    v.code = c[V_CODE];
    v.domain = text_col(c[V_DOMAIN]);
    v.user_agent = text_col(c[V_UA]);
    v.referrer = text_col(c[V_REFERER]);
    v.source_bot = dbsrc_bool(c[V_BOT]);
    /* An empty location (is_empty) has "" for a country. */
    const char *cc = c[V_COUNTRY];
    char country[3];
    if (cc && strlen(cc) == 2) {
        country[0] = (char)(cc[0] & ~0x20);
        country[1] = (char)(cc[1] & ~0x20);
        country[2] = '\0';
        v.country = country;
    }
    const char *q = c[V_VISITED] ? strchr(c[V_VISITED], '?') : NULL;
    char *query = NULL;
    if (q) {
        size_t qn = strcspn(q + 1, "#");
        query = strndup(q + 1, qn);
        if (!query)
            abort();
        v.query = query;
    }
    int rc = import_visit(sh->sink, &v);
    free(query);
    return rc;
}

static int read_db(const char *source, struct import_sink *s)
{
    struct dbsrc *db = NULL;
    int rc = dbsrc_open(source, &db);
    if (rc != ERR_OK)
        return rc;
    struct shlink sh = {.sink = s, .now = now_ms() / 1000};
    rc = dbsrc_query(db, "short_urls", count_sql, count_row, &sh);
    if (rc == ERR_OK)
        rc = dbsrc_query(db, "short_urls", links_sql, link_row, &sh);
    if (rc == ERR_OK)
        rc = dbsrc_query(db, "visits", visits_sql, visit_row, &sh);
    if (rc == ERR_OK) {
        import_progress(s, sh.rows, sh.total);
        /* The sink's summary has no line for them (it knows only codes). */
        if (sh.orphans)
            log_at(LOG_INFO,
                   "import: %lld orphan visits (of no short URL: base URL, 404s, invalid "
                   "codes) dropped",
                   (long long)sh.orphans);
        if (sh.shadowed)
            log_at(LOG_INFO,
                   "import: %lld visits dropped: their short URLs were refused, their code being "
                   "an earlier one's (on another domain)",
                   (long long)sh.shadowed);
    }
    dbsrc_close(db);
    return rc;
}

/* ---- the web client's CSV ---- */

enum csv_col {
    C_CREATED,
    C_DOMAIN,
    C_CODE,
    C_SHORT_URL,
    C_LONG_URL,
    C_TITLE,
    C_TAGS,
    C_VISITS,
    C__COUNT
};
static const char *const csv_names[C__COUNT] = {"createdAt", "domain", "shortCode", "shortUrl",
                                                "longUrl",   "title",  "tags",      "visits"};

/* The code from shortCode, or failing that from shortUrl's path, with its
 * percent escapes decoded (the exporter takes it from a URL's pathname).
 * NULL when there is none or an escape is bad. The result is malloc'd. */
static char *csv_code(const char *code, const char *short_url)
{
    if (!*code && *short_url) {
        const char *p = strstr(short_url, "://");
        p = p ? strchr(p + 3, '/') : NULL;
        code = p ? p + 1 : "";
    }
    size_t n = strcspn(code, "?#");
    if (!n)
        return NULL;
    char *out = malloc(n + 1);
    if (!out)
        abort();
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (code[i] != '%') {
            out[o++] = code[i];
            continue;
        }
        int hi = i + 2 < n ? pct_hex_value((unsigned char)code[i + 1]) : -1;
        int lo = hi >= 0 ? pct_hex_value((unsigned char)code[i + 2]) : -1;
        if (lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return NULL;
        }
        out[o++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[o] = '\0';
    return out;
}

/* Tags joined with '|' → a JSON array text (NULL for none), malloc'd. */
static char *csv_tags(const char *s)
{
    json_t *a = json_array();
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "|");
        if (n)
            json_array_append_new(a, json_stringn(p, n));
        p += n + (p[n] == '|');
    }
    char *out = json_array_size(a) ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return out;
}

/* ERR_OK (a bad row refused), or the sink's error that stops the import. */
static int csv_row(struct import_sink *s, const struct csv_record *rec, const int *col)
{
    struct import_where w = {NULL, rec->line};
    const char *f[C__COUNT];
    for (int i = 0; i < C__COUNT; i++)
        f[i] = col[i] >= 0 ? rec->field[col[i]] : "";
    struct import_link l = {.url = f[C_LONG_URL], .where = w};
    int64_t ms = 0;
    if (*f[C_CREATED] && rfc3339_parse(f[C_CREATED], strlen(f[C_CREATED]), &ms) != ERR_OK) {
        import_refuse(s, w, "createdAt '%s' is not a date (ISO 8601, as the export writes it)",
                      f[C_CREATED]);
        return ERR_OK;
    }
    l.created_at = ms / 1000;
    if (*f[C_VISITS]) {
        char *end;
        long long v = strtoll(f[C_VISITS], &end, 10);
        if (*end || v < 0) {
            import_refuse(s, w, "visits '%s' is not a whole number", f[C_VISITS]);
            return ERR_OK;
        }
        l.clicks = v;
    }
    if (!*l.url) {
        import_refuse(s, w, "the row has no longUrl");
        return ERR_OK;
    }
    char *code = csv_code(f[C_CODE], f[C_SHORT_URL]);
    if (!code) {
        import_refuse(s, w, "the row has no short code (shortCode '%s', shortUrl '%s')", f[C_CODE],
                      f[C_SHORT_URL]);
        return ERR_OK;
    }
    char *tags = csv_tags(f[C_TAGS]);
    l.code = code;
    l.title = *f[C_TITLE] ? f[C_TITLE] : NULL;
    l.domain = *f[C_DOMAIN] ? f[C_DOMAIN] : NULL;
    l.tags = tags;
    int rc = import_link(s, &l);
    free(tags);
    free(code);
    return rc;
}

static int read_csv(const char *source, struct import_sink *s)
{
    struct csvread *r = NULL;
    if (csvread_open(source, &r) != ERR_OK)
        return log_fail(ERR_IO, "cannot open '%s': %s", source, strerror(errno));
    import_progress_unit(s, "bytes");
    int rc = ERR_OK;
    struct csv_record h;
    int got = csvread_next(r, &h);
    if (got <= 0) {
        rc = log_fail(ERR_INVALID, "'%s': %s", source,
                      got < 0 ? csvread_error(r) : "the file is empty: no header");
        goto out;
    }
    int col[C__COUNT];
    for (int i = 0; i < C__COUNT; i++)
        col[i] = csv_column(&h, csv_names[i]);
    if (col[C_LONG_URL] < 0 || (col[C_CODE] < 0 && col[C_SHORT_URL] < 0)) {
        rc = log_fail(ERR_INVALID,
                      "'%s' is not Shlink's export: its header must name longUrl and shortCode "
                      "or shortUrl (of createdAt,domain,shortCode,shortUrl,longUrl,title,tags,"
                      "visits)",
                      source);
        goto out;
    }
    size_t nhead = h.n;
    struct csv_record rec;
    uint64_t n = 0;
    while (rc == ERR_OK && (got = csvread_next(r, &rec)) > 0) {
        if (++n % 1024 == 0)
            import_progress(s, csvread_offset(r), csvread_size(r));
        if (rec.n != nhead) {
            import_refuse(s, (struct import_where){NULL, rec.line},
                          "%zu fields where the header has %zu", rec.n, nhead);
            continue;
        }
        rc = csv_row(s, &rec, col);
    }
    if (rc != ERR_OK)
        ;
    else if (got < 0)
        rc = log_fail(ERR_IO, "cannot read '%s': %s", source, csvread_error(r));
    else
        import_progress(s, csvread_offset(r), csvread_size(r));
out:
    csvread_free(r);
    return rc;
}

int import_read_shlink(const char *source, struct import_sink *s)
{
    if (strncmp(source, "postgres://", 11) == 0 || strncmp(source, "postgresql://", 13) == 0)
        return read_db(source, s);
    return read_csv(source, s);
}
