/* clientaddr.c - the client's address: the peer, or behind trusted proxies the
 * first untrusted hop of X-Forwarded-For, read from the right.
 *
 * The trusted list is a small array of (family, prefix bytes, prefix length),
 * scanned linearly: deployments trust a handful of proxy ranges, and the
 * scan only happens when the peer itself is checked, once per request that
 * needs the client. With nothing trusted the answer is the peer, without
 * looking at any header. */
#include "http/clientaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/err.h"
#include "http/http.h"
#include "base/banned.h"

struct cidr {
    int family;
    uint8_t bytes[16];
    unsigned bits;
};

struct clientaddr {
    int n;
    struct cidr nets[];
};

/* ---- conversions ---- */

/* Folds ::ffff:a.b.c.d into a.b.c.d, so both spellings are one client. */
static void unmap(struct client_ip *ip)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (ip->family == AF_INET6 && memcmp(ip->bytes, prefix, 12) == 0) {
        memmove(ip->bytes, ip->bytes + 12, 4);
        memset(ip->bytes + 4, 0, 12);
        ip->family = AF_INET;
        ip->n = 4;
    }
}

static bool parse_plain(const char *s, size_t n, struct client_ip *out)
{
    char tmp[CLIENTADDR_TEXT_MAX];
    if (n == 0 || n >= sizeof(tmp))
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, tmp, out->bytes) == 1) {
        out->family = AF_INET;
        out->n = 4;
        return true;
    }
    if (inet_pton(AF_INET6, tmp, out->bytes) == 1) {
        out->family = AF_INET6;
        out->n = 16;
        unmap(out);
        return true;
    }
    memset(out, 0, sizeof(*out));
    return false;
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

bool clientaddr_parse(const char *s, size_t n, struct client_ip *out)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n && s[0] == '[') { /* [v6] or [v6]:port */
        const char *close = memchr(s, ']', n);
        if (!close)
            return false;
        size_t rest = n - (size_t)(close + 1 - s);
        if (rest && (close[1] != ':' || !all_digits(close + 2, rest - 1)))
            return false;
        return parse_plain(s + 1, (size_t)(close - s - 1), out) && out->family == AF_INET6;
    }
    const char *colon = memchr(s, ':', n);
    if (colon && !memchr(colon + 1, ':', n - (size_t)(colon + 1 - s))) { /* v4:port */
        if (!all_digits(colon + 1, n - (size_t)(colon + 1 - s)))
            return false;
        return parse_plain(s, (size_t)(colon - s), out) && out->family == AF_INET;
    }
    return parse_plain(s, n, out);
}

bool clientaddr_from_sockaddr(const struct sockaddr *sa, struct client_ip *out)
{
    memset(out, 0, sizeof(*out));
    if (sa && sa->sa_family == AF_INET) {
        out->family = AF_INET;
        out->n = 4;
        memcpy(out->bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return true;
    }
    if (sa && sa->sa_family == AF_INET6) {
        out->family = AF_INET6;
        out->n = 16;
        memcpy(out->bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        unmap(out);
        return true;
    }
    return false;
}

void clientaddr_to_sockaddr(const struct client_ip *ip, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (ip->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)out;
        in->sin_family = AF_INET;
        memcpy(&in->sin_addr, ip->bytes, 4);
    } else if (ip->family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
        in6->sin6_family = AF_INET6;
        memcpy(&in6->sin6_addr, ip->bytes, 16);
    }
}

void clientaddr_format(const struct client_ip *ip, char out[CLIENTADDR_TEXT_MAX])
{
    out[0] = '\0';
    if ((ip->family == AF_INET || ip->family == AF_INET6) &&
        !inet_ntop(ip->family, ip->bytes, out, CLIENTADDR_TEXT_MAX))
        out[0] = '\0';
}

/* ---- the trusted list ---- */

static bool parse_cidr(const char *s, size_t n, struct cidr *out)
{
    const char *slash = memchr(s, '/', n);
    struct client_ip ip;
    size_t an = slash ? (size_t)(slash - s) : n;
    if (!parse_plain(s, an, &ip))
        return false;
    /* A mapped address folds to IPv4; a prefix written for IPv6 then loses 96. */
    bool mapped = ip.family == AF_INET && memchr(s, ':', an);
    unsigned max = ip.family == AF_INET ? 32 : 128, bits = max;
    if (slash) {
        const char *d = slash + 1;
        size_t dn = n - an - 1;
        if (dn == 0 || dn > 3)
            return false;
        bits = 0;
        for (size_t i = 0; i < dn; i++) {
            if (d[i] < '0' || d[i] > '9')
                return false;
            bits = bits * 10 + (unsigned)(d[i] - '0');
        }
        if (mapped) {
            if (bits < 96)
                return false;
            bits -= 96;
        }
        if (bits > max)
            return false;
    }
    out->family = ip.family;
    out->bits = bits;
    memset(out->bytes, 0, sizeof(out->bytes));
    for (unsigned i = 0; i < bits; i++) /* keeps the prefix only */
        if (ip.bytes[i / 8] & (0x80u >> (i % 8)))
            out->bytes[i / 8] |= (uint8_t)(0x80u >> (i % 8));
    return true;
}

int clientaddr_new(const char *cidrs, struct clientaddr **out, char *err, size_t errlen)
{
    *out = NULL;
    size_t len = cidrs ? strlen(cidrs) : 0, max = len / 2 + 1;
    struct clientaddr *ca = calloc(1, sizeof(*ca) + max * sizeof(ca->nets[0]));
    if (!ca)
        abort();
    const char *p = cidrs, *end = cidrs ? cidrs + len : NULL; /* NULL + 0 is UB */
    while (p && p < end) {
        size_t skip = strspn(p, ", \t");
        p += skip;
        if (p >= end)
            break;
        size_t n = strcspn(p, ", \t");
        if (!parse_cidr(p, n, &ca->nets[ca->n])) {
            snprintf(err, errlen, "'trusted-proxies': '%.*s' is not an address or CIDR range",
                     (int)(n > 64 ? 64 : n), p);
            free(ca);
            return ERR_INVALID;
        }
        ca->n++;
        p += n;
    }
    *out = ca;
    return ERR_OK;
}

void clientaddr_free(struct clientaddr *ca) { free(ca); }

static bool in_cidr(const struct cidr *c, const struct client_ip *ip)
{
    if (c->family != ip->family)
        return false;
    unsigned whole = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->bytes, ip->bytes, whole) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (ip->bytes[whole] & mask) == c->bytes[whole];
}

bool clientaddr_trusted(const struct clientaddr *ca, const struct client_ip *ip)
{
    if (!ca)
        return false;
    for (int i = 0; i < ca->n; i++)
        if (in_cidr(&ca->nets[i], ip))
            return true;
    return false;
}

/* ---- resolving ---- */

void clientaddr_resolve(const struct clientaddr *ca, const struct sockaddr *peer,
                        const struct slice *xff, int nxff, struct client_ip *out)
{
    clientaddr_from_sockaddr(peer, out);
    if (!ca || !ca->n || !clientaddr_trusted(ca, out))
        return;
    /* Right to left over every line, each line right to left. */
    for (int h = nxff - 1; h >= 0; h--) {
        const char *start = xff[h].p, *end = xff[h].p + xff[h].n;
        while (end > start) {
            const char *comma = end;
            while (comma > start && comma[-1] != ',')
                comma--;
            struct client_ip hop;
            if (!clientaddr_parse(comma, (size_t)(end - comma), &hop))
                return; /* the last good hop stands */
            *out = hop;
            if (!clientaddr_trusted(ca, &hop))
                return;
            end = comma > start ? comma - 1 : start;
        }
    }
}

void clientaddr_of(const struct request *r, struct client_ip *out)
{
    const struct clientaddr *ca = r->app ? r->app->clientaddr : NULL;
    if (!ca || !ca->n) {
        clientaddr_from_sockaddr((const struct sockaddr *)r->peer, out);
        return;
    }
    struct slice xff[8];
    int n = 0;
    for (int i = 0; i < r->nheaders; i++) {
        if (!slice_ieq(r->headers[i].name, "x-forwarded-for"))
            continue;
        if (n == (int)(sizeof(xff) / sizeof(xff[0]))) {
            memmove(xff, xff + 1, sizeof(xff) - sizeof(xff[0])); /* keep the rightmost */
            n--;
        }
        xff[n++] = r->headers[i].value;
    }
    clientaddr_resolve(ca, (const struct sockaddr *)r->peer, xff, n, out);
}

bool clientaddr_peer_trusted(const struct request *r)
{
    const struct clientaddr *ca = r->app ? r->app->clientaddr : NULL;
    struct client_ip peer;
    if (!ca || !ca->n || !clientaddr_from_sockaddr((const struct sockaddr *)r->peer, &peer))
        return false;
    return clientaddr_trusted(ca, &peer);
}
