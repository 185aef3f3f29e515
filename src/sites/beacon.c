/* beacon.c - decoding a page beacon's payload into fixed buffers.
 *
 * Base64 is libsodium's (sodium_base642bin writes into the caller's buffer
 * and allocates nothing). The JSON is read by hand: jansson allocates a
 * node per value, and the beacon path must not allocate; the object is
 * flat and bounded (BEACON_PAYLOAD_MAX), so a small tokenizer does: strings
 * (with every escape, \u surrogate pairs included), numbers, true, false
 * and null; nested objects and arrays of unknown fields are skipped by
 * depth. Anything else is malformed. */
#include "sites/beacon.h"

#include <sodium.h>
#include <stddef.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* ---- the JSON tokenizer ---- */

struct rd {
    const char *p, *end;
};

static void skip_ws(struct rd *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static void put_utf8(uint32_t cp, char *out, size_t cap, size_t *n)
{
    unsigned char b[4];
    size_t k;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 4;
    }
    if (*n + k <= cap) {
        memcpy(out + *n, b, k);
        *n += k;
    } else {
        *n = cap; /* no room: the rest is cut */
    }
}

static bool hex4(struct rd *r, uint32_t *v)
{
    if (r->end - r->p < 4)
        return false;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(r->p[i]);
        if (h < 0)
            return false;
        *v = *v << 4 | (uint32_t)h;
    }
    r->p += 4;
    return true;
}

/* A string at r->p ('"'), its bytes decoded into out (at most cap, the
 * rest read and dropped; out NULL: only read). */
static bool read_string(struct rd *r, char *out, size_t cap, size_t *len)
{
    size_t n = 0;
    if (r->p >= r->end || *r->p != '"')
        return false;
    r->p++;
    while (r->p < r->end) {
        unsigned char c = (unsigned char)*r->p++;
        if (c == '"') {
            *len = n;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c != '\\') {
            if (out && n < cap)
                out[n++] = (char)c;
            continue;
        }
        if (r->p >= r->end)
            return false;
        char e = *r->p++;
        uint32_t cp;
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (!hex4(r, &cp))
                return false;
            if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its pair follows */
                uint32_t lo;
                if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u')
                    return false;
                r->p += 2;
                if (!hex4(r, &lo) || lo < 0xdc00 || lo >= 0xe000)
                    return false;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                return false;
            }
            break;
        default: return false;
        }
        if (out)
            put_utf8(cp, out, cap, &n);
    }
    return false;
}

/* A number: an integer into *v (clamped), or, with a fraction or an
 * exponent, its integer part. JSON's grammar is checked. */
static bool read_number(struct rd *r, int64_t *v)
{
    bool neg = false;
    int64_t x = 0;
    if (r->p < r->end && *r->p == '-') {
        neg = true;
        r->p++;
    }
    const char *digits = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        if (x < INT64_MAX / 10 - 10)
            x = x * 10 + (*r->p - '0');
        r->p++;
    }
    if (r->p == digits || (digits[0] == '0' && r->p - digits > 1))
        return false;
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        const char *f = r->p;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
        if (r->p == f)
            return false;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        const char *f = r->p;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
        if (r->p == f)
            return false;
    }
    *v = neg ? -x : x;
    return true;
}

static bool read_word(struct rd *r, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
        return false;
    r->p += n;
    return true;
}

#define SKIP_DEPTH 32

/* Skips any value (an unknown field's), nested ones up to SKIP_DEPTH. */
static bool skip_value(struct rd *r, int depth)
{
    size_t n;
    int64_t x;
    skip_ws(r);
    if (r->p >= r->end)
        return false;
    char c = *r->p;
    if (c == '"')
        return read_string(r, NULL, 0, &n);
    if (c == 't')
        return read_word(r, "true");
    if (c == 'f')
        return read_word(r, "false");
    if (c == 'n')
        return read_word(r, "null");
    if (c == '-' || (c >= '0' && c <= '9'))
        return read_number(r, &x);
    if ((c != '[' && c != '{') || depth >= SKIP_DEPTH)
        return false;
    char close = c == '[' ? ']' : '}';
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return true;
    }
    for (;;) {
        if (close == '}') {
            skip_ws(r);
            if (!read_string(r, NULL, 0, &n))
                return false;
            skip_ws(r);
            if (r->p >= r->end || *r->p++ != ':')
                return false;
        }
        if (!skip_value(r, depth + 1))
            return false;
        skip_ws(r);
        if (r->p >= r->end)
            return false;
        char sep = *r->p++;
        if (sep == close)
            return true;
        if (sep != ',')
            return false;
    }
}

/* ---- the fields ---- */

enum kind { K_STR, K_REF, K_INT, K_FLAG };

struct field {
    const char *name;
    enum kind kind;
    size_t off; /* in struct beacon */
};

#define STR(f)                                                                                     \
    {                                                                                              \
#f, K_STR, offsetof(struct beacon, f)                                                      \
    }
static const struct field fields[] = {
    STR(p),
    STR(h),
    {"r", K_REF, offsetof(struct beacon, r)},
    STR(l),
    STR(tz),
    STR(us),
    STR(um),
    STR(uc),
    STR(ev),
    STR(et),
    {"w", K_INT, offsetof(struct beacon, w)},
    {"uv", K_FLAG, offsetof(struct beacon, uv)},
    {"ss", K_FLAG, offsetof(struct beacon, ss)},
    {"bo", K_FLAG, offsetof(struct beacon, bo)},
};
#undef STR

/* A known field's value. A string where a number or flag belongs (or the
 * reverse) leaves the field absent rather than failing the whole beacon. */
static bool read_field(struct rd *r, const struct field *f, struct beacon *b)
{
    char raw[BEACON_REF_MAX * 2];
    size_t n;
    int64_t x;
    skip_ws(r);
    if (r->p >= r->end)
        return false;
    char c = *r->p;
    char *dst = (char *)b + f->off;
    if (f->kind == K_STR || f->kind == K_REF) {
        if (c != '"')
            return skip_value(r, 0);
        if (!read_string(r, raw, sizeof(raw), &n))
            return false;
        if (f->kind == K_STR) {
            clamp_utf8(raw, n, dst);
        } else {
            /* The referrer is cut, not cleaned: its host is read later. */
            size_t k = n < BEACON_REF_MAX ? n : BEACON_REF_MAX;
            memcpy(dst, raw, k);
            dst[k] = '\0';
            for (size_t i = 0; i < k; i++)
                if ((unsigned char)dst[i] < 0x20)
                    dst[i] = ' ';
        }
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (!read_number(r, &x))
            return false;
        if (f->kind == K_INT)
            *(int64_t *)(void *)dst = x < 0 ? -1 : x;
        else
            *(bool *)(void *)dst = x == 1;
        return true;
    }
    if (f->kind == K_FLAG && c == 't' && read_word(r, "true")) {
        *(bool *)(void *)dst = true;
        return true;
    }
    return skip_value(r, 0);
}

static int parse_object(const char *json, size_t len, struct beacon *b)
{
    struct rd r = {json, json + len};
    skip_ws(&r);
    if (r.p >= r.end || *r.p++ != '{')
        return ERR_INVALID;
    skip_ws(&r);
    if (r.p < r.end && *r.p == '}') {
        r.p++;
        skip_ws(&r);
        return r.p == r.end ? ERR_OK : ERR_INVALID;
    }
    for (;;) {
        char key[8];
        size_t kn;
        skip_ws(&r);
        if (!read_string(&r, key, sizeof(key), &kn))
            return ERR_INVALID;
        skip_ws(&r);
        if (r.p >= r.end || *r.p++ != ':')
            return ERR_INVALID;
        const struct field *f = NULL;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]) && kn < sizeof(key); i++)
            if (strlen(fields[i].name) == kn && memcmp(fields[i].name, key, kn) == 0)
                f = &fields[i];
        if (!(f ? read_field(&r, f, b) : skip_value(&r, 0)))
            return ERR_INVALID;
        skip_ws(&r);
        if (r.p >= r.end)
            return ERR_INVALID;
        char sep = *r.p++;
        if (sep == '}')
            break;
        if (sep != ',')
            return ERR_INVALID;
    }
    skip_ws(&r);
    return r.p == r.end ? ERR_OK : ERR_INVALID;
}

int beacon_decode(const char *v, size_t n, struct beacon *b)
{
    memset(b, 0, sizeof(*b));
    b->w = -1;
    if (n > BEACON_PAYLOAD_MAX)
        return ERR_TOOBIG;
    /* The standard alphabet's '+' and '/' become base64url's; '=' padding
     * and a query's percent-encoding go. */
    char text[BEACON_PAYLOAD_MAX];
    size_t t = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '%' && i + 2 < n && hexval(v[i + 1]) >= 0 && hexval(v[i + 2]) >= 0) {
            c = (char)(hexval(v[i + 1]) << 4 | hexval(v[i + 2]));
            i += 2;
        }
        if (c == '=')
            continue;
        text[t++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    unsigned char json[BEACON_PAYLOAD_MAX / 4 * 3 + 3];
    size_t len = 0;
    const char *end = NULL;
    if (sodium_base642bin(json, sizeof(json), text, t, NULL, &len, &end,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != text + t)
        return ERR_INVALID;
    int rc = parse_object((const char *)json, len, b);
    if (rc != ERR_OK) {
        memset(b, 0, sizeof(*b));
        b->w = -1;
    }
    return rc;
}

const char *beacon_viewport(int64_t w)
{
    if (w < 0)
        return NULL;
    return w < 576 ? "xs" : w < 768 ? "sm" : w < 992 ? "md" : w < 1200 ? "lg" : "xl";
}
