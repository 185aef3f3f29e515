/* geo.c - country lookup for click analytics. The MaxMind database is mapped
 * read-only by libmaxminddb and never changes while open, so lookups share no
 * mutable state and any thread may run geo_country without a lock. A lookup
 * walks the search tree to the record and decodes country.iso_code in place;
 * it goes through MMDB_aget_value with a static path because MMDB_get_value
 * mallocs a copy of its variadic path on every call. Nothing here logs an
 * address. geo_from_header serves deployments behind a CDN that has already
 * resolved the country, with its placeholders for unknown ("XX") and Tor
 * ("T1") turned into unknown, so both sources give the same vocabulary. */
#include "clicks/geo.h"

#include <errno.h>
#include <maxminddb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"

#include "base/banned.h"

struct geo {
    MMDB_s mmdb; /* read-only once opened */
};

static const char *const country_path[] = {"country", "iso_code", NULL};

static bool is_ascii_letter(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

/* cc = p[0..n) upper-cased when it is two ASCII letters other than the "XX"
 * placeholder for unknown; "" otherwise. */
static void set_code(const char *p, size_t n, char cc[3])
{
    cc[0] = '\0';
    if (n != 2 || !is_ascii_letter((unsigned char)p[0]) || !is_ascii_letter((unsigned char)p[1]))
        return;
    char a = ascii_upper(p[0]);
    char b = ascii_upper(p[1]);
    if (a == 'X' && b == 'X')
        return;
    cc[0] = a;
    cc[1] = b;
    cc[2] = '\0';
}

/* Opening */

int geo_open(const char *path, struct geo **out)
{
    *out = NULL;
    struct geo *g = calloc(1, sizeof(*g));
    if (!g)
        abort();
    int status = MMDB_open(path, MMDB_MODE_MMAP, &g->mmdb);
    int saved_errno = errno;
    if (status != MMDB_SUCCESS) {
        free(g); /* MMDB_open has released what it took */
        if (status == MMDB_FILE_OPEN_ERROR || status == MMDB_IO_ERROR)
            return log_fail(ERR_IO, "cannot open geo database '%s': %s: %s", path,
                            MMDB_strerror(status), strerror(saved_errno));
        return log_fail(ERR_IO, "cannot open geo database '%s': %s", path, MMDB_strerror(status));
    }
    *out = g;
    return ERR_OK;
}

void geo_close(struct geo *g)
{
    if (!g)
        return;
    MMDB_close(&g->mmdb);
    free(g);
}

/* Lookups */

void geo_country(const struct geo *g, const struct sockaddr *sa, char cc[3])
{
    cc[0] = '\0';
    /* libmaxminddb reads any family but AF_INET6 as IPv4: keep others out. */
    if (!g || !sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
        return;

    int mmdb_error = MMDB_SUCCESS;
    MMDB_lookup_result_s res = MMDB_lookup_sockaddr(&g->mmdb, sa, &mmdb_error);
    /* An IPv6 address in an IPv4-only database is an error, not a miss;
     * either way the country is unknown. */
    if (mmdb_error != MMDB_SUCCESS || !res.found_entry)
        return;

    MMDB_entry_data_s data;
    if (MMDB_aget_value(&res.entry, &data, country_path) != MMDB_SUCCESS || !data.has_data ||
        data.type != MMDB_DATA_TYPE_UTF8_STRING)
        return;
    set_code(data.utf8_string, data.data_size, cc);
}

void geo_from_header(const char *v, size_t n, char cc[3])
{
    /* A field value excludes the optional whitespace around it (RFC 9110). */
    while (n > 0 && (v[0] == ' ' || v[0] == '\t')) {
        v++;
        n--;
    }
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    set_code(v, n, cc);
}
