/* urlcheck.c - decides whether a URL may be a short link's destination and
 * puts it in the form it is stored and redirected to. Hand-written, because
 * no Debian library validates URLs to these rules (libcurl's URL API and
 * uriparser accept far more than a redirect should carry). The rules: http
 * or https, an authority with a host, no credentials, no byte below 0x21 or
 * 0x7f anywhere (nothing can split the Location header), at most URL_MAX
 * bytes, not shortd itself and not a blocked host. The host is checked the
 * way browsers will read it, so that what the blocklist sees is where the
 * user lands: percent-escapes in it are decoded, numeric hosts must be plain
 * dotted-quad IPv4 (browsers read "0x7f.1" or "2130706433" as 127.0.0.1) and
 * IPv6 addresses are put in canonical form; the rules compare the host as
 * host_normalise gives it, where an IPv4-mapped IPv6 address is its IPv4
 * address, so no spelling of an address escapes them. The stored URL has
 * its scheme and host lowercased and non-ASCII bytes and the characters never
 * valid in a URL percent-encoded; the path, query and fragment are otherwise
 * untouched.
 * Pure: no I/O, no global state, safe from any thread. */
#include "links/urlcheck.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/pct.h"
#include "base/banned.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define HOST_MAX 253 /* the longest DNS name, without its trailing dot */

static const char hex_upper[] = "0123456789ABCDEF";

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static bool is_alpha(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

static unsigned char ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* RFC 3986 reg-name characters other than '%': unreserved and sub-delims. */
static bool is_host_char(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || (c != '\0' && strchr("-._~!$&'()*+,;=", c));
}

/* Characters that are never valid in a URL but that browsers send anyway,
 * percent-encoded; we store them the same way. */
static bool needs_escape(unsigned char c)
{
    return c >= 0x80 || (c != '\0' && strchr("<>\"\\^`{|}", c));
}

/* True when s[0..n) starts with the lowercase 'prefix', in any case. */
static bool has_prefix_nocase(const char *s, size_t n, const char *prefix)
{
    size_t pn = strlen(prefix);
    if (n < pn)
        return false;
    for (size_t i = 0; i < pn; i++) {
        if (ascii_lower((unsigned char)s[i]) != (unsigned char)prefix[i])
            return false;
    }
    return true;
}

/* IPv4 spellings */

/* WHATWG's "ends in a number": a host whose last label is all digits or
 * 0x-hex is an IPv4 address to a browser, in any of its odd spellings. */
static bool ends_in_number(const char *h, size_t n)
{
    if (n > 0 && h[n - 1] == '.')
        n--;
    size_t start = n;
    while (start > 0 && h[start - 1] != '.')
        start--;
    const char *label = h + start;
    size_t len = n - start;
    if (len == 0)
        return false;
    size_t i = 0;
    bool hex = len >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X');
    if (hex)
        i = 2;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)label[i];
        if (hex ? pct_hex_value(c) < 0 : !is_digit(c))
            return false;
    }
    return true;
}

/* Exactly four decimal parts of 0..255, no leading zeros, no trailing dot. */
static bool is_dotted_quad(const char *h, size_t n)
{
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        if (part > 0) {
            if (i >= n || h[i] != '.')
                return false;
            i++;
        }
        size_t start = i;
        unsigned v = 0;
        while (i < n && is_digit((unsigned char)h[i]) && i - start < 3) {
            v = v * 10 + (unsigned)(h[i] - '0');
            i++;
        }
        size_t digits = i - start;
        if (digits == 0 || v > 255 || (digits > 1 && h[start] == '0'))
            return false;
    }
    return i == n;
}

/* WHATWG's IPv4 parser: one to four parts split by dots (one trailing dot
 * allowed), each decimal, 0x-hex or 0-octal, the last filling the bytes the
 * others leave. True with the address in 'out' when h[0..n) is one. */
static bool ipv4_parse(const char *h, size_t n, unsigned char out[4])
{
    if (n > 0 && h[n - 1] == '.')
        n--;
    uint64_t part[4];
    int parts = 0;
    size_t i = 0;
    for (;;) {
        if (parts == 4)
            return false;
        size_t start = i;
        unsigned base = 10;
        if (n - i >= 2 && h[i] == '0' && (h[i + 1] == 'x' || h[i + 1] == 'X')) {
            base = 16;
            i += 2;
            start = i;
        } else if (n - i >= 2 && h[i] == '0' && h[i + 1] != '.') {
            base = 8;
            i++;
            start = i;
        }
        uint64_t v = 0;
        for (; i < n && h[i] != '.'; i++) {
            int d = pct_hex_value((unsigned char)h[i]);
            if (d < 0 || (unsigned)d >= base)
                return false;
            v = v * base + (unsigned)d;
            if (v > UINT32_MAX)
                return false;
        }
        if (i == start && base == 10)
            return false; /* an empty part */
        part[parts++] = v;
        if (i == n)
            break;
        i++; /* the dot */
        if (i == n)
            return false;
    }
    uint64_t ip = 0;
    for (int k = 0; k < parts - 1; k++) {
        if (part[k] > 255)
            return false;
        ip |= part[k] << (8 * (3 - k));
    }
    uint64_t last = part[parts - 1];
    if (last >= (UINT64_C(1) << (8 * (5 - parts))))
        return false;
    ip |= last;
    for (int k = 0; k < 4; k++)
        out[k] = (unsigned char)(ip >> (8 * (3 - k)));
    return true;
}

/* Host normalisation */

/* The bytes of h[0..n) that name the host: without a :port, without IPv6
 * brackets and without one trailing dot. False when the brackets are
 * unbalanced or anything but a port follows them. */
static bool host_span(const char *h, size_t n, size_t *start, size_t *len)
{
    if (n > 0 && h[0] == '[') {
        const char *close = memchr(h, ']', n);
        if (!close)
            return false;
        size_t end = (size_t)(close - h);
        if (end + 1 < n && h[end + 1] != ':')
            return false;
        *start = 1;
        *len = end - 1;
        return true;
    }
    /* One colon separates a port; more than one is a bare IPv6 address. */
    const char *colon = memchr(h, ':', n);
    if (colon && !memchr(colon + 1, ':', n - (size_t)(colon - h) - 1))
        n = (size_t)(colon - h);
    if (n > 0 && h[n - 1] == '.')
        n--;
    *start = 0;
    *len = n;
    return true;
}

int host_normalise(const char *h, size_t n, struct buf *out)
{
    buf_reset(out);
    size_t start, len;
    if (!host_span(h, n, &start, &len) || len == 0)
        return ERR_INVALID;
    for (size_t i = 0; i < len; i++)
        buf_addc(out, (char)ascii_lower((unsigned char)h[start + i]));

    /* An IP address has many spellings; compare the canonical one: IPv6
     * compressed, IPv4-mapped IPv6 and the numeric forms a browser reads as
     * IPv4 ("2130706433", "0x7f.1", "0177.0.0.1") as a dotted quad. */
    unsigned char addr[16];
    char text[INET6_ADDRSTRLEN];
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memchr(out->p, ':', out->len) && out->len < INET6_ADDRSTRLEN) {
        if (inet_pton(AF_INET6, out->p, addr) == 1) {
            bool v4 = memcmp(addr, mapped, 12) == 0;
            if (inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? addr + 12 : addr, text, sizeof(text))) {
                buf_reset(out);
                buf_adds(out, text);
            }
        }
    } else if (ends_in_number(out->p, out->len) && ipv4_parse(out->p, out->len, addr) &&
               inet_ntop(AF_INET, addr, text, sizeof(text))) {
        buf_reset(out);
        buf_adds(out, text);
    }
    return ERR_OK;
}

bool host_is_ip(const char *host)
{
    return strchr(host, ':') || is_dotted_quad(host, strlen(host));
}

bool host_matches(const char *host, const char *rule)
{
    size_t hn = strlen(host);
    size_t rn = strlen(rule);
    if (rn == 0 || hn < rn)
        return false;
    if (host_is_ip(host))
        return strcmp(host, rule) == 0; /* "0.1" is no parent of "10.0.0.1" */
    const char *tail = host + hn - rn;
    for (size_t i = 0; i < rn; i++) {
        if (ascii_lower((unsigned char)tail[i]) != ascii_lower((unsigned char)rule[i]))
            return false;
    }
    return hn == rn || tail[-1] == '.';
}

/* Host checks */

/* A reg-name host as browsers will resolve it: escapes decoded, lowercase.
 * Appends it to 'out' (trailing dot kept); NULL or the reason it is bad. */
static const char *host_decode(const char *h, size_t n, struct buf *out)
{
    const char *bad = "has an invalid host";
    size_t start = out->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c == '%') {
            if (n - i < 3)
                return bad;
            int hi = pct_hex_value((unsigned char)h[i + 1]);
            int lo = pct_hex_value((unsigned char)h[i + 2]);
            if (hi < 0 || lo < 0)
                return bad;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
            if (c >= 0x80)
                return "host must be ASCII; use its punycode (xn--) form";
            if (!is_host_char(c))
                return bad;
        } else if (c >= 0x80) {
            return "host must be ASCII; use its punycode (xn--) form";
        } else if (!is_host_char(c)) {
            return bad;
        }
        buf_addc(out, (char)ascii_lower(c));
    }

    const char *d = out->p + start;
    size_t len = out->len - start;
    if (len > 0 && d[len - 1] == '.')
        len--;
    if (len == 0)
        return "is missing a host";
    if (len > HOST_MAX)
        return "host is too long";
    /* Empty labels ("a..b", ".a") name nothing DNS can resolve. */
    if (d[0] == '.' || memmem(d, len, "..", 2))
        return bad;
    if (ends_in_number(d, len) && !is_dotted_quad(d, len))
        return bad;
    return NULL;
}

/* A bracketed IPv6 literal's inside, appended to 'out' in canonical form
 * with its brackets. Zone identifiers and IPvFuture are refused. */
static const char *host_ipv6(const char *h, size_t n, struct buf *out)
{
    char text[INET6_ADDRSTRLEN];
    if (n == 0 || n >= sizeof(text))
        return "has an invalid IPv6 address";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (pct_hex_value(c) < 0 && c != ':' && c != '.')
            return "has an invalid IPv6 address";
    }
    memcpy(text, h, n);
    text[n] = '\0';
    unsigned char addr[16];
    if (inet_pton(AF_INET6, text, addr) != 1 || !inet_ntop(AF_INET6, addr, text, sizeof(text)))
        return "has an invalid IPv6 address";
    buf_addc(out, '[');
    buf_adds(out, text);
    buf_addc(out, ']');
    return NULL;
}

/* ":port" (the colon already consumed): digits, 1..65535. Appended to 'out'
 * without leading zeros. */
static const char *port_check(const char *p, size_t n, struct buf *out)
{
    const char *bad = "port must be a number from 1 to 65535";
    if (n == 0)
        return bad;
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)p[i]))
            return bad;
        v = v * 10 + (unsigned long)(p[i] - '0');
        if (v > 65535)
            return bad;
    }
    if (v == 0)
        return bad;
    buf_addc(out, ':');
    buf_add_u64(out, v);
    return NULL;
}

/* The authority (between "//" and the path): refuses credentials, checks
 * host and port, and appends their stored form to 'out'; *host_len is the
 * length of the host part of what was appended. */
static const char *authority_check(const char *a, size_t n, struct buf *out, size_t *host_len)
{
    /* Any '@' here introduces userinfo, which is how phishing links make
     * "http://bank.com@evil.example/" look like the bank. */
    if (memchr(a, '@', n))
        return "must not contain credentials (user:password@)";

    size_t start = out->len;
    size_t host_end;
    const char *why;
    if (n > 0 && a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (!close)
            return "has an invalid IPv6 address";
        host_end = (size_t)(close - a) + 1;
        why = host_ipv6(a + 1, host_end - 2, out);
    } else {
        const char *colon = memchr(a, ':', n);
        host_end = colon ? (size_t)(colon - a) : n;
        why = host_decode(a, host_end, out);
    }
    if (why)
        return why;
    *host_len = out->len - start;

    if (host_end == n)
        return NULL;
    if (a[host_end] != ':')
        return "has an invalid host";
    return port_check(a + host_end + 1, n - host_end - 1, out);
}

/* Whole URL */

bool host_is_loopback(const char *host)
{
    return host_matches(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1") ||
           !strcmp(host, "0.0.0.0") || !strcmp(host, "::");
}

/* shortd's own names with their subdomains (www. and the like), its own
 * addresses, and when one of those is this machine (loopback), every
 * spelling of this machine: 127.0.0.2 and localhost reach the same place. */
static bool self_host(const char *host, const char *const *self_hosts, struct buf *scratch)
{
    bool loopback = false;
    for (size_t i = 0; self_hosts && self_hosts[i]; i++) {
        const char *h = self_hosts[i];
        if (host_normalise(h, strlen(h), scratch) != ERR_OK)
            continue;
        if (host_matches(host, scratch->p))
            return true;
        loopback = loopback || host_is_loopback(scratch->p);
    }
    return loopback && host_is_loopback(host);
}

static bool blocked_host(const char *host, const char *const *blocked)
{
    for (size_t i = 0; blocked && blocked[i]; i++) {
        if (host_matches(host, blocked[i]))
            return true;
    }
    return false;
}

int urlcheck(const char *url, size_t n, const struct urlcheck_opts *o, struct buf *out,
             struct buf *host, const char **why)
{
    int rc = ERR_INVALID;
    const char *reason = NULL;
    struct buf scratch = BUF_INIT;

    buf_reset(out);
    buf_reset(host);

    if (n == 0) {
        reason = "is required";
        goto out;
    }
    if (n > URL_MAX) {
        rc = ERR_TOOBIG;
        reason = "must be at most " STR(URL_MAX) " bytes";
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)url[i];
        if (c < 0x21 || c == 0x7f) {
            reason = "must not contain spaces or control characters";
            goto out;
        }
    }

    size_t i = 0;
    if (has_prefix_nocase(url, n, "http://")) {
        buf_adds(out, "http://");
        i = 7;
    } else if (has_prefix_nocase(url, n, "https://")) {
        buf_adds(out, "https://");
        i = 8;
    } else {
        reason = "must start with http:// or https://";
        goto out;
    }

    size_t auth = i;
    while (i < n && url[i] != '/' && url[i] != '?' && url[i] != '#')
        i++;
    if (i == auth) {
        reason = "is missing a host";
        goto out;
    }
    size_t host_at = out->len;
    size_t host_len = 0;
    reason = authority_check(url + auth, i - auth, out, &host_len);
    if (reason)
        goto out;
    /* The rules compare the host as stored, so they see what browsers see. */
    if (host_normalise(out->p + host_at, host_len, host) != ERR_OK) {
        reason = "is missing a host";
        goto out;
    }

    for (; i < n; i++) {
        unsigned char c = (unsigned char)url[i];
        if (needs_escape(c)) {
            buf_addc(out, '%');
            buf_addc(out, hex_upper[c >> 4]);
            buf_addc(out, hex_upper[c & 15]);
        } else {
            buf_addc(out, (char)c);
        }
    }
    if (out->len > URL_MAX) {
        rc = ERR_TOOBIG;
        reason = "must be at most " STR(URL_MAX) " bytes once percent-encoded";
        goto out;
    }

    if (self_host(host->p, o ? o->self_hosts : NULL, &scratch)) {
        rc = ERR_FORBIDDEN;
        reason = "points back at this shortener";
        goto out;
    }
    if (blocked_host(host->p, o ? o->blocked : NULL)) {
        rc = ERR_FORBIDDEN;
        reason = "destination host is blocked";
        goto out;
    }
    rc = ERR_OK;
out:
    if (rc != ERR_OK) {
        buf_reset(out);
        buf_reset(host);
    }
    buf_release(&scratch);
    if (why)
        *why = reason;
    return rc;
}
