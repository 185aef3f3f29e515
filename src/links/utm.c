/* utm.c - a link's UTM parameters and their merge into a destination.
 *
 * The merge splits the URL into what comes before the query, the query and
 * the fragment (a '?' after the '#' belongs to the fragment), walks the
 * query's '&'-separated parameters once, and copies each one unchanged
 * unless its name is exactly one of the utm_* names the link sets: the first
 * such parameter takes the link's value where it stands, any later one with
 * the same name is dropped, so a visitor never sees two utm_source values.
 * The names the query did not have are appended. Empty parameters ("a&&b")
 * are dropped while the query is being rewritten. */
#include "links/utm.h"

#include <stddef.h>
#include <string.h>

#include "base/err.h"
#include "base/pct.h"
#include "links/urlcheck.h"
#include "base/banned.h"

#define NFIELDS 5

static const char *const names[NFIELDS] = {"source", "medium", "campaign", "term", "content"};
static const char *const fields[NFIELDS] = {"utm.source", "utm.medium", "utm.campaign", "utm.term",
                                            "utm.content"};
static const char *const params[NFIELDS] = {"utm_source", "utm_medium", "utm_campaign", "utm_term",
                                            "utm_content"};

/* Where each member of 'names' lives in the struct. */
static const size_t offsets[NFIELDS] = {offsetof(struct utm, source), offsetof(struct utm, medium),
                                        offsetof(struct utm, campaign), offsetof(struct utm, term),
                                        offsetof(struct utm, content)};

static char *member(struct utm *u, int i) { return (char *)u + offsets[i]; }

static const char *cmember(const struct utm *u, int i) { return (const char *)u + offsets[i]; }

int utm_from_json(const json_t *o, struct utm *out, const char **field)
{
    memset(out, 0, sizeof(*out));
    *field = "utm";
    if (!json_is_object(o))
        return ERR_INVALID;
    const char *key;
    json_t *v;
    int present = 0;
    json_object_foreach((json_t *)o, key, v)
    {
        int i = 0;
        while (i < NFIELDS && strcmp(key, names[i]) != 0)
            i++;
        if (i == NFIELDS) {
            *field = "utm"; /* an unknown member: the object is wrong */
            return ERR_INVALID;
        }
        *field = fields[i];
        if (json_is_null(v))
            continue;
        if (!json_is_string(v))
            return ERR_INVALID;
        size_t n = json_string_length(v);
        const unsigned char *s = (const unsigned char *)json_string_value(v);
        if (n < 1 || n > UTM_VALUE_MAX)
            return ERR_INVALID;
        for (size_t k = 0; k < n; k++)
            if (s[k] < 0x20 || s[k] == 0x7f)
                return ERR_INVALID;
        memcpy(member(out, i), s, n + 1);
        present++;
    }
    *field = "utm";
    if (!present)
        return ERR_INVALID;
    *field = NULL;
    return ERR_OK;
}

json_t *utm_to_json(const struct utm *u)
{
    if (utm_empty(u))
        return NULL;
    json_t *o = json_object();
    for (int i = 0; i < NFIELDS; i++)
        if (cmember(u, i)[0])
            json_object_set_new(o, names[i], json_string(cmember(u, i)));
    return o;
}

bool utm_empty(const struct utm *u)
{
    for (int i = 0; i < NFIELDS; i++)
        if (cmember(u, i)[0])
            return false;
    return true;
}

static void add_param(struct buf *out, bool *first, int i, const struct utm *u)
{
    buf_addc(out, *first ? '?' : '&');
    *first = false;
    buf_adds(out, params[i]);
    buf_addc(out, '=');
    pct_encode(out, cmember(u, i));
}

int utm_merge(const char *url, const struct utm *u, struct buf *out)
{
    buf_reset(out);
    size_t len = strlen(url);
    const char *hash = memchr(url, '#', len);
    const char *end = hash ? hash : url + len; /* end of the part before the fragment */
    const char *q = memchr(url, '?', (size_t)(end - url));
    buf_add(out, url, (size_t)((q ? q : end) - url));
    bool first = true; /* no parameter written yet: the next one opens with '?' */
    bool done[NFIELDS] = {false};
    if (utm_empty(u)) { /* nothing to set: the URL as it is */
        buf_add(out, q ? q : end, (size_t)(end - (q ? q : end)));
        first = false;
    } else if (q) {
        const char *p = q + 1;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            const char *seg_end = amp ? amp : end;
            const char *eq = memchr(p, '=', (size_t)(seg_end - p));
            size_t name_n = (size_t)((eq ? eq : seg_end) - p);
            int i = 0;
            while (i < NFIELDS && !(cmember(u, i)[0] && strlen(params[i]) == name_n &&
                                    memcmp(p, params[i], name_n) == 0))
                i++;
            if (i < NFIELDS) {
                if (!done[i])
                    add_param(out, &first, i, u);
                done[i] = true;
            } else if (seg_end > p) {
                buf_addc(out, first ? '?' : '&');
                first = false;
                buf_add(out, p, (size_t)(seg_end - p));
            }
            p = seg_end + 1;
        }
    }
    for (int i = 0; i < NFIELDS; i++)
        if (cmember(u, i)[0] && !done[i])
            add_param(out, &first, i, u);
    if (hash)
        buf_add(out, hash, len - (size_t)(hash - url));
    if (out->len > URL_MAX) {
        buf_reset(out);
        return ERR_INVALID;
    }
    return ERR_OK;
}
