/* form.c - form parameters (form.h): a urlencoded form is split at '&'
 * and '=' and decoded with pct_form_decode; a multipart body (RFC 7578) is
 * cut at its boundary delimiters, and a part is named by the name="..." of
 * its Content-Disposition. */
#include "http/form.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/pct.h"
#include "base/banned.h"

/* The value of 'name' in the form s (name=value&...), undecoded. */
static bool form_find(struct slice s, const char *name, struct slice *raw)
{
    if (!s.n)
        return false; /* (an empty query may have no pointer) */
    size_t nlen = strlen(name);
    const char *p = s.p, *end = s.p + s.n;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        const char *ke = eq ? eq : pe;
        char key[64];
        long kn = pct_form_decode(p, (size_t)(ke - p), key, sizeof(key));
        if (kn == (long)nlen && memcmp(key, name, nlen) == 0) {
            *raw = eq ? (struct slice){eq + 1, (size_t)(pe - eq - 1)} : (struct slice){pe, 0};
            return true;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    return false;
}

/* The boundary of a multipart/form-data Content-Type: false when it is not one. */
static bool multipart_boundary(struct slice ct, char *out, size_t cap, size_t *n)
{
    static const char mp[] = "multipart/form-data";
    if (ct.n < sizeof(mp) - 1 || strncasecmp(ct.p, mp, sizeof(mp) - 1) != 0)
        return false;
    for (size_t i = sizeof(mp) - 1; i + 9 <= ct.n; i++) {
        if (strncasecmp(ct.p + i, "boundary=", 9) != 0)
            continue;
        const char *b = ct.p + i + 9, *e = ct.p + ct.n;
        if (b < e && *b == '"') {
            b++;
            const char *q = memchr(b, '"', (size_t)(e - b));
            e = q ? q : e;
        } else {
            const char *semi = memchr(b, ';', (size_t)(e - b));
            e = semi ? semi : e;
            while (e > b && e[-1] == ' ')
                e--;
        }
        size_t len = (size_t)(e - b);
        if (!len || len + 4 > cap) /* RFC 2046: 1 to 70 characters */
            return false;
        memcpy(out, "\r\n--", 4);
        memcpy(out + 4, b, len);
        *n = len + 4;
        return true;
    }
    return false;
}

/* The name="..." of a part's headers (hdr, up to the blank line). */
static bool part_name(struct slice hdr, struct slice *name)
{
    const char *p = hdr.p, *end = hdr.p + hdr.n;
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        const char *le = eol ? eol : end;
        static const char cd[] = "content-disposition:";
        if ((size_t)(le - p) > sizeof(cd) - 1 && strncasecmp(p, cd, sizeof(cd) - 1) == 0) {
            for (const char *q = p + sizeof(cd) - 1; q + 6 <= le; q++) {
                if (strncasecmp(q, "name=\"", 6) != 0 || (q[-1] != ' ' && q[-1] != ';'))
                    continue;
                const char *v = q + 6;
                const char *ve = memchr(v, '"', (size_t)(le - v));
                if (!ve)
                    return false;
                *name = (struct slice){v, (size_t)(ve - v)};
                return true;
            }
        }
        if (!eol)
            break;
        p = eol + 2;
    }
    return false;
}

/* The value of part 'name' of a multipart body ('delim' is CRLF "--" and
 * the boundary). */
static bool multipart_find(struct slice body, const char *delim, size_t dn, const char *name,
                           struct slice *raw)
{
    /* The first delimiter opens the body, or follows a preamble and its CRLF. */
    const char *p = body.p, *end = body.p + body.n;
    if (body.n >= dn - 2 && memcmp(p, delim + 2, dn - 2) == 0)
        p += dn - 2;
    else if ((p = memmem(body.p, body.n, delim, dn)))
        p += dn;
    else
        return false;
    size_t nlen = strlen(name);
    for (;;) {
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return false; /* the closing delimiter */
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!eol)
            return false;
        /* the part's headers: none when the blank line follows at once */
        const char *he = memmem(eol, (size_t)(end - eol), "\r\n\r\n", 4);
        if (!he)
            return false;
        struct slice hdr = {eol + 2, he > eol ? (size_t)(he - eol - 2) : 0};
        const char *vs = he + 4;
        const char *ve = memmem(vs, (size_t)(end - vs), delim, dn);
        if (!ve)
            return false;
        struct slice pn;
        if (part_name(hdr, &pn) && pn.n == nlen && memcmp(pn.p, name, nlen) == 0) {
            *raw = (struct slice){vs, (size_t)(ve - vs)};
            return true;
        }
        p = ve + dn;
    }
}

char *form_value(struct slice content_type, struct slice body, struct slice query, const char *name,
                 size_t max, size_t *n)
{
    struct slice raw = {0};
    bool found = false, decode = true;
    if (body.n && content_type.p) {
        char delim[80];
        size_t dn;
        static const char urlencoded[] = "application/x-www-form-urlencoded";
        if (multipart_boundary(content_type, delim, sizeof(delim), &dn)) {
            found = multipart_find(body, delim, dn, name, &raw);
            decode = false;
        } else if (content_type.n >= sizeof(urlencoded) - 1 &&
                   strncasecmp(content_type.p, urlencoded, sizeof(urlencoded) - 1) == 0) {
            found = form_find(body, name, &raw);
        }
    }
    if (!found) {
        decode = true;
        found = form_find(query, name, &raw);
    }
    if (!found || raw.n > max)
        return NULL;
    char *out = malloc(raw.n + 1);
    if (!out)
        abort();
    long len = (long)raw.n;
    if (decode)
        len = pct_form_decode(raw.p, raw.n, out, raw.n);
    else if (raw.n)
        memcpy(out, raw.p, raw.n);
    if (len < 0) {
        free(out);
        return NULL;
    }
    out[len] = '\0';
    if (n)
        *n = (size_t)len;
    return out;
}

char *form_param(const struct request *r, const char *name, size_t max, size_t *n)
{
    return form_value(http_header(r, "content-type"), r->body, r->query, name, max, n);
}
