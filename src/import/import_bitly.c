/* import_bitly.c - reader `bitly`: the CSV of links that Bitly's web app
 * exports (Links, Export).
 *
 * Bitly publishes no schema of that file, so the columns are found by name,
 * in any order and any case, under each name they are known by: Bitly's API
 * fields (link, long_url, title, created_at, tags, custom_bitlinks: the v4
 * Bitlink object), and the web export's headings as migration guides quote
 * them ("Link", "Custom Link", "Destination URL": URLR's Bitly migration
 * guide), with "Bitlink", "Long URL", "Created", "Clicks", "Engagements".
 * Only a short link column and a destination column are needed.
 *
 * The code is the path of the bitlink (bit.ly/3xYzAbC → 3xYzAbC, case kept);
 * its host becomes the link's domain unless it is one of Bitly's own
 * (bit.ly, j.mp, bitly.is, bitly.com). Custom bitlinks (a back-half on a
 * branded domain, several separated by commas or spaces) become links of
 * their own to the same destination, without clicks: the row's clicks are
 * the first link's. Tags are separated by commas, semicolons or '|'. Bitly
 * exports no per-visit rows, so only totals come across. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/err.h"
#include "import/csvread.h"
#include "import/import.h"
#include "import/when.h"
#include "base/banned.h"

enum col { C_LINK, C_CUSTOM, C_URL, C_TITLE, C_CREATED, C_TAGS, C_CLICKS, C__COUNT };

/* Each column's names, most likely first. */
static const char *const col_names[C__COUNT][8] = {
    [C_LINK] = {"bitlink", "link", "short link", "short url", "short_url", "shortlink"},
    [C_CUSTOM] = {"custom bitlinks", "custom_bitlinks", "custom link", "custom links",
                  "custom bitlink"},
    [C_URL] = {"long url", "long_url", "destination url", "destination", "original url", "url"},
    [C_TITLE] = {"title"},
    [C_CREATED] = {"created", "created_at", "created at", "date created", "creation date"},
    [C_TAGS] = {"tags", "tag"},
    [C_CLICKS] = {"clicks", "engagements", "total clicks", "total engagements", "click count"},
};

static const char *const bitly_hosts[] = {"bit.ly", "j.mp", "bitly.is", "bitly.com"};

/* A bitlink "[https://]host/back-half" into its domain (NULL for Bitly's own
 * hosts) and code, both malloc'd. ERR_INVALID without a back-half. */
static int split_bitlink(const char *s, size_t n, char **domain, char **code)
{
    *domain = *code = NULL;
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n >= 8 && !strncasecmp(s, "https://", 8))
        s += 8, n -= 8;
    else if (n >= 7 && !strncasecmp(s, "http://", 7))
        s += 7, n -= 7;
    const char *slash = memchr(s, '/', n);
    if (!slash || slash == s)
        return ERR_INVALID;
    size_t hn = (size_t)(slash - s);
    const char *path = slash + 1;
    size_t pn = n - hn - 1;
    while (pn && path[pn - 1] == '/')
        pn--;
    if (!pn)
        return ERR_INVALID;
    char *host = slice_dup((struct slice){s, hn});
    for (char *p = host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    bool own = false;
    for (size_t i = 0; i < sizeof(bitly_hosts) / sizeof(bitly_hosts[0]); i++)
        own = own || !strcmp(host, bitly_hosts[i]);
    if (own)
        free(host);
    else
        *domain = host;
    *code = slice_dup((struct slice){path, pn});
    return ERR_OK;
}

/* Tags separated by , ; or | as a JSON array text (NULL: none); malloc'd. */
static char *tags_json(const char *s)
{
    json_t *a = json_array();
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, ",;|");
        const char *b = p, *e = p + n;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > b)
            json_array_append_new(a, json_stringn(b, (size_t)(e - b)));
        p += n + (p[n] != '\0');
    }
    char *out = json_array_size(a) ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return out;
}

/* A click count, with thousands separators allowed ("1,234"). */
static int parse_count(const char *s, int64_t *out)
{
    int64_t v = 0;
    bool any = false;
    for (; *s; s++) {
        if (*s == ',' || *s == ' ')
            continue;
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
            return ERR_INVALID;
        v = v * 10 + (*s - '0');
        any = true;
    }
    *out = any ? v : 0;
    return ERR_OK;
}

/* One row: its link, then its custom bitlinks. */
static int put_row(struct import_sink *s, const struct csv_record *rec, const int idx[C__COUNT])
{
    const char *f[C__COUNT];
    size_t n[C__COUNT];
    for (int c = 0; c < C__COUNT; c++) {
        bool has = idx[c] >= 0 && (size_t)idx[c] < rec->n;
        f[c] = has ? rec->field[idx[c]] : "";
        n[c] = has ? rec->len[idx[c]] : 0;
    }
    struct import_where w = {NULL, rec->line};
    struct import_link l = {.where = w};
    char *domain = NULL, *code = NULL, *tags = NULL;
    int rc = ERR_OK;
    if (split_bitlink(f[C_LINK], n[C_LINK], &domain, &code) != ERR_OK) {
        import_refuse(s, w, "'%s' is no bitlink (host/back-half)", f[C_LINK]);
        goto out;
    }
    if (!*f[C_URL]) {
        import_refuse(s, w, "bitlink '%s' has no long URL", f[C_LINK]);
        goto out;
    }
    if (when_parse(f[C_CREATED], n[C_CREATED], &l.created_at) != ERR_OK) {
        import_refuse(s, w, "bitlink '%s': created '%s' is no date and time", f[C_LINK],
                      f[C_CREATED]);
        goto out;
    }
    if (parse_count(f[C_CLICKS], &l.clicks) != ERR_OK) {
        import_refuse(s, w, "bitlink '%s': clicks '%s' is no count", f[C_LINK], f[C_CLICKS]);
        goto out;
    }
    tags = tags_json(f[C_TAGS]);
    l.code = code;
    l.domain = domain;
    l.url = f[C_URL];
    l.title = *f[C_TITLE] ? f[C_TITLE] : NULL;
    l.tags = tags;
    rc = import_link(s, &l);
    /* custom bitlinks: more codes to the same destination */
    for (const char *p = f[C_CUSTOM]; rc == ERR_OK && *p;) {
        size_t k = strcspn(p, ", \t\n|");
        if (k) {
            char *cd = NULL, *cc = NULL;
            if (split_bitlink(p, k, &cd, &cc) != ERR_OK) {
                import_refuse(s, w, "custom bitlink '%.*s' of '%s' is no host/back-half", (int)k, p,
                              f[C_LINK]);
            } else if (strcmp(cc, code) != 0 || (cd && (!domain || strcmp(cd, domain) != 0)) ||
                       (!cd && domain)) {
                struct import_link alias = l;
                alias.code = cc;
                alias.domain = cd;
                alias.clicks = 0;
                rc = import_link(s, &alias);
            }
            free(cd);
            free(cc);
        }
        p += k + (p[k] != '\0');
    }
out:
    free(domain);
    free(code);
    free(tags);
    return rc;
}

int import_read_bitly(const char *source, struct import_sink *s)
{
    struct csvread *r = NULL;
    if (csvread_open(source, &r) != ERR_OK) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot open '%s': %s", source,
                      strerror(errno));
        return ERR_IO;
    }
    struct csv_record rec;
    int got = csvread_next(r, &rec);
    int idx[C__COUNT];
    for (int c = 0; c < C__COUNT; c++) {
        idx[c] = -1;
        for (int k = 0; got == 1 && idx[c] < 0 && k < 8 && col_names[c][k]; k++)
            idx[c] = csv_column(&rec, col_names[c][k]);
    }
    if (got != 1 || idx[C_LINK] < 0 || idx[C_URL] < 0) {
        import_refuse(s, (struct import_where){NULL, 1},
                      "'%s' has no header row naming a short link column (Bitlink, Link) and "
                      "a destination column (Long URL, Destination URL)",
                      source);
        csvread_free(r);
        return ERR_INVALID;
    }
    int rc = ERR_OK;
    while (rc == ERR_OK && (got = csvread_next(r, &rec)) == 1) {
        rc = put_row(s, &rec, idx);
        import_progress(s, csvread_offset(r), csvread_size(r));
    }
    if (got < 0) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot read '%s': %s", source,
                      csvread_error(r));
        rc = ERR_IO;
    }
    csvread_free(r);
    return rc;
}
