/* import_csv.c - the generic CSV format: a header naming the columns
 * code, url (both needed), title, tags, created_at, expires_at and clicks,
 * in any order (other columns are ignored); one link a row. tags: names
 * separated by '|', or a JSON array; times: RFC 3339 or unix seconds;
 * clicks: the link's all-time total, kept as imported clicks; an empty
 * field is an absent value. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "import/csvread.h"
#include "import/import.h"
#include "base/banned.h"

enum col { C_CODE, C_URL, C_TITLE, C_TAGS, C_CREATED, C_EXPIRES, C_CLICKS, C__COUNT };
static const char *const col_names[C__COUNT] = {"code",       "url",        "title", "tags",
                                                "created_at", "expires_at", "clicks"};

static const char *const must_be[C__COUNT] = {
    [C_TAGS] = "a JSON array of strings, or names separated by |",
    [C_CREATED] = "a time (RFC 3339 or unix seconds)",
    [C_EXPIRES] = "a time (RFC 3339 or unix seconds)",
    [C_CLICKS] = "a whole number of clicks",
};

/* A time field: RFC 3339 or whole unix seconds; 0 for an empty one. */
static int parse_time(const char *s, int64_t *out)
{
    *out = 0;
    if (!*s)
        return ERR_OK;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*end && !errno && v >= 0 && v < 253402300800LL) {
        *out = v;
        return ERR_OK;
    }
    int64_t ms;
    if (rfc3339_parse(s, strlen(s), &ms) != ERR_OK)
        return ERR_INVALID;
    *out = ms / 1000;
    return ERR_OK;
}

/* tags as a JSON array text into 'out' (NULL for none). */
static int parse_tags(const char *s, char **out)
{
    *out = NULL;
    while (*s == ' ')
        s++;
    if (!*s)
        return ERR_OK;
    json_t *a;
    if (*s == '[') {
        a = json_loads(s, 0, NULL);
        size_t i;
        json_t *v;
        bool ok = json_is_array(a);
        json_array_foreach(a, i, v) ok = ok && json_is_string(v);
        if (!ok) {
            json_decref(a);
            return ERR_INVALID;
        }
    } else {
        a = json_array();
        for (const char *p = s; *p;) {
            size_t n = strcspn(p, "|");
            const char *b = p, *e = p + n;
            while (b < e && *b == ' ')
                b++;
            while (e > b && e[-1] == ' ')
                e--;
            if (e > b)
                json_array_append_new(a, json_stringn(b, (size_t)(e - b)));
            p += n + (p[n] == '|');
        }
    }
    if (json_array_size(a))
        *out = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return ERR_OK;
}

int import_read_csv(const char *source, struct import_sink *s)
{
    struct csvread *r;
    if (csvread_open(source, &r) != ERR_OK) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot open '%s': %s", source,
                      strerror(errno));
        return ERR_IO;
    }
    import_progress_unit(s, "bytes");
    struct csv_record h;
    int got = csvread_next(r, &h);
    int rc = ERR_OK;
    int col[C__COUNT];
    size_t nhead = 0;
    if (got <= 0) {
        import_refuse(s, (struct import_where){NULL, 1}, "%s",
                      got < 0 ? csvread_error(r) : "the file is empty: no header");
        rc = ERR_INVALID;
        goto out;
    }
    nhead = h.n;
    for (int i = 0; i < C__COUNT; i++)
        col[i] = csv_column(&h, col_names[i]);
    if (col[C_CODE] < 0 || col[C_URL] < 0) {
        import_refuse(s, (struct import_where){NULL, h.line},
                      "the header must name the columns code and url (of code,url,title,tags,"
                      "created_at,expires_at,clicks)");
        rc = ERR_INVALID;
        goto out;
    }
    struct csv_record rec;
    uint64_t n = 0;
    while (rc == ERR_OK && (got = csvread_next(r, &rec)) > 0) {
        struct import_where w = {NULL, rec.line};
        if (++n % 1024 == 0)
            import_progress(s, csvread_offset(r), csvread_size(r));
        if (rec.n != nhead) {
            import_refuse(s, w, "%zu fields where the header has %zu", rec.n, nhead);
            continue;
        }
        const char *f[C__COUNT];
        for (int i = 0; i < C__COUNT; i++)
            f[i] = col[i] >= 0 ? rec.field[col[i]] : "";
        struct import_link l = {.code = f[C_CODE],
                                .url = f[C_URL],
                                .title = *f[C_TITLE] ? f[C_TITLE] : NULL,
                                .where = w};
        char *tags = NULL;
        int bad = -1;
        if (parse_time(f[C_CREATED], &l.created_at) != ERR_OK)
            bad = C_CREATED;
        else if (parse_time(f[C_EXPIRES], &l.expires_at) != ERR_OK)
            bad = C_EXPIRES;
        else if (parse_tags(f[C_TAGS], &tags) != ERR_OK)
            bad = C_TAGS;
        if (bad < 0 && *f[C_CLICKS]) {
            char *end = NULL;
            errno = 0;
            long long c = strtoll(f[C_CLICKS], &end, 10);
            if (*end || errno || c < 0)
                bad = C_CLICKS;
            l.clicks = c;
        }
        if (bad >= 0) {
            import_refuse(s, w, "code '%.40s': %s '%.60s' is not %s", f[C_CODE], col_names[bad],
                          f[bad], must_be[bad]);
            continue;
        }
        l.tags = tags;
        rc = import_link(s, &l);
        free(tags);
    }
    if (got < 0) {
        import_refuse(s, (struct import_where){NULL, 0}, "%s", csvread_error(r));
        rc = ERR_IO;
    }
    import_progress(s, csvread_offset(r), csvread_size(r));
out:
    csvread_free(r);
    return rc;
}
