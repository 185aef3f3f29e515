/* hosts.c - the default short hosts and the Host header's comparison form.
 * The list is small (a few names), so a linear scan of length-prefixed
 * strings is the cheapest check: a few compares per redirect, no hashing. */
#include "redirect/hosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

struct hostlist {
    int n;
    size_t len[HOSTS_MAX];
    char name[HOSTS_MAX][HOST_NAME_MAX_LEN + 1];
};

size_t host_of_header(struct slice h, char *out)
{
    size_t n = h.n;
    if (n && h.p[0] == '[') {
        /* [v6]:port: keep the bracketed address, drop the port */
        const char *close = memchr(h.p, ']', n);
        n = close ? (size_t)(close - h.p) + 1 : n;
    } else {
        const char *colon = memchr(h.p, ':', n);
        if (colon)
            n = (size_t)(colon - h.p);
    }
    while (n && h.p[n - 1] == '.')
        n--;
    if (!n || n > HOST_NAME_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = h.p[i];
        out[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    out[n] = '\0';
    return n;
}

int hostlist_parse(const char *list, struct hostlist **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!list)
        return ERR_OK;
    struct hostlist *h = calloc(1, sizeof(*h));
    if (!h)
        abort();
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ')
            p++;
        if (p == start)
            continue;
        if (h->n == HOSTS_MAX) {
            snprintf(err, errlen, "hosts: at most %d hosts", HOSTS_MAX);
            free(h);
            return ERR_INVALID;
        }
        size_t n = host_of_header((struct slice){start, (size_t)(p - start)}, h->name[h->n]);
        if (!n) {
            snprintf(err, errlen, "hosts: '%.*s' is not a host name", (int)(p - start), start);
            free(h);
            return ERR_INVALID;
        }
        h->len[h->n++] = n;
    }
    if (!h->n) {
        free(h);
        return ERR_OK;
    }
    *out = h;
    return ERR_OK;
}

void hostlist_free(struct hostlist *h) { free(h); }

bool hostlist_has(const struct hostlist *h, const char *host, size_t n)
{
    for (int i = 0; i < h->n; i++)
        if (h->len[i] == n && memcmp(h->name[i], host, n) == 0)
            return true;
    return false;
}

int hostlist_count(const struct hostlist *h) { return h ? h->n : 0; }

const char *hostlist_name(const struct hostlist *h, int i) { return h->name[i]; }
