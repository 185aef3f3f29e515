/* import_shortd.c - shortd's own JSON export (`shortd export --format json`,
 * api/report.c): an array of links, each with its per-day counts, read one
 * link at a time (jansson stops at the end of each object), so an export
 * larger than memory streams. Each day becomes a tally of that day; the
 * link's totals beyond its days (pruned days, imported clicks) stay
 * imported totals. Deleted links (no destination) are refused: their codes
 * are not taken over. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/timeutil.h"
#include "import/import.h"
#include "base/banned.h"

static int skip_space(FILE *f)
{
    int c;
    do
        c = getc(f);
    while (c != EOF && isspace(c));
    return c;
}

static int64_t int_of(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static const char *str_of(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* An RFC 3339 field as unix seconds (0: absent); false when malformed. */
static bool time_of(json_t *o, const char *k, int64_t *out)
{
    const char *s = str_of(o, k);
    int64_t ms = 0;
    *out = 0;
    if (!s)
        return true;
    if (rfc3339_parse(s, strlen(s), &ms) != ERR_OK)
        return false;
    *out = ms / 1000;
    return true;
}

/* One link of the export and its days. */
static int one_link(struct import_sink *s, json_t *o, struct import_where w)
{
    if (!json_is_object(o)) {
        import_refuse(s, w, "not a link object");
        return ERR_OK;
    }
    const char *code = str_of(o, "code");
    struct import_link l = {.code = code,
                            .url = str_of(o, "url"),
                            .title = str_of(o, "title"),
                            .domain = str_of(o, "domain"),
                            .permanent = json_is_true(json_object_get(o, "permanent")),
                            .max_clicks = int_of(o, "max_clicks"),
                            .clicks = int_of(o, "clicks"),
                            .bot_clicks = int_of(o, "bot_clicks"),
                            .where = w};
    json_t *track = json_object_get(o, "track");
    if (track && !json_is_boolean(track) && !json_is_null(track)) {
        import_refuse(s, w, "code '%.40s': track is not true or false", code ? code : "");
        return ERR_OK;
    }
    l.untracked = json_is_false(track);
    if (l.untracked && l.max_clicks > 0) {
        import_refuse(s, w,
                      "code '%.40s': track false cannot go with max_clicks (a click "
                      "limit counts the visits)",
                      code ? code : "");
        return ERR_OK;
    }
    const char *state = str_of(o, "state");
    l.disabled = state && !strcmp(state, "disabled");
    if (state && !strcmp(state, "deleted")) {
        import_refuse(s, w, "code '%.40s' was deleted in the source: not taken over",
                      code ? code : "");
        return ERR_OK;
    }
    if (!time_of(o, "created_at", &l.created_at) || !time_of(o, "expires_at", &l.expires_at)) {
        import_refuse(s, w, "code '%.40s': created_at or expires_at is not an RFC 3339 time",
                      code ? code : "");
        return ERR_OK;
    }
    json_t *tags = json_object_get(o, "tags");
    char *tags_text = json_is_array(tags) ? json_dumps(tags, JSON_COMPACT) : NULL;
    l.tags = tags_text;
    int rc = import_link(s, &l);
    free(tags_text);
    json_t *days = json_object_get(o, "days"), *d;
    size_t i;
    json_array_foreach(days, i, d)
    {
        if (rc != ERR_OK)
            break;
        const char *day = str_of(d, "day");
        int64_t n;
        if (!day || day_parse(day, strlen(day), &n) != ERR_OK) {
            import_refuse(s, w, "code '%.40s': day %zu has no YYYY-MM-DD day", code ? code : "",
                          i + 1);
            continue;
        }
        int64_t clicks = int_of(d, "clicks"), bots = int_of(d, "bot_clicks");
        if (!clicks && !bots)
            continue;
        struct import_tally t = {.code = code,
                                 .domain = l.domain,
                                 .at = n * 86400,
                                 .clicks = clicks,
                                 .where = w,
                                 .bots = bots,
                                 .uniques = int_of(d, "unique_visitors")};
        rc = import_tally(s, &t);
    }
    return rc;
}

int import_read_shortd(const char *source, struct import_sink *s)
{
    FILE *f = strcmp(source, "-") ? fopen(source, "rb") : stdin;
    if (!f) {
        import_refuse(s, (struct import_where){NULL, 0}, "cannot open '%s': %s", source,
                      strerror(errno));
        return ERR_IO;
    }
    struct stat sb;
    uint64_t size = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
    import_progress_unit(s, "bytes");
    int rc = ERR_OK;
    int c = skip_space(f);
    if (c != '[') {
        import_refuse(s, (struct import_where){NULL, 1},
                      "not a shortd JSON export: it must start with '['");
        rc = ERR_INVALID;
        goto out;
    }
    for (int64_t n = 1; rc == ERR_OK; n++) {
        c = skip_space(f);
        if (c == ']')
            break;
        if (n > 1) {
            if (c != ',') {
                import_refuse(s, (struct import_where){"link", n},
                              "expected ',' or ']' after link %lld", (long long)n - 1);
                rc = ERR_INVALID;
                break;
            }
            c = skip_space(f);
        }
        if (c == EOF) {
            import_refuse(s, (struct import_where){"link", n}, "the file ends inside the array");
            rc = ERR_INVALID;
            break;
        }
        ungetc(c, f);
        json_error_t err;
        json_t *o = json_loadf(f, JSON_DISABLE_EOF_CHECK, &err);
        if (!o) {
            import_refuse(s, (struct import_where){"link", n}, "not JSON: %s", err.text);
            rc = ERR_INVALID;
            break;
        }
        rc = one_link(s, o, (struct import_where){"link", n});
        json_decref(o);
        if (n % 256 == 0) {
            long off = ftell(f);
            import_progress(s, off > 0 ? (uint64_t)off : 0, size);
        }
    }
out:
    if (f != stdin)
        fclose(f);
    return rc;
}
