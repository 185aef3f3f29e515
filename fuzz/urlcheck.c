/* urlcheck.c (fuzz) - the destination rules (urlcheck.h) on any bytes.
 *
 * The input is a URL as a create or PATCH body carries it. Besides surviving
 * it, urlcheck must keep its promises: an accepted URL is at most URL_MAX
 * bytes with no byte below 0x21 or 0x7f (nothing that could split a Location
 * header), its host is lowercase and non-empty, and checking the stored form
 * again accepts it unchanged with the same host. host_normalise and
 * host_matches get the same bytes: a host matches itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "links/urlcheck.h"
#include "base/banned.h"

static const char *const self_hosts[] = {"sho.rt", "localhost", NULL};
static const char *const blocked[] = {"evil.example", "10.0.0.1", NULL};

static void check(int cond)
{
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct urlcheck_opts o = {.self_hosts = self_hosts, .blocked = blocked};
    struct buf out = BUF_INIT, host = BUF_INIT, out2 = BUF_INIT, host2 = BUF_INIT;
    const char *why = NULL;
    int rc = urlcheck((const char *)data, size, &o, &out, &host, &why);
    if (rc == ERR_OK) {
        check(out.len > 0 && out.len <= URL_MAX && strlen(buf_cstr(&out)) == out.len);
        for (size_t i = 0; i < out.len; i++)
            check((unsigned char)out.p[i] > 0x20 && (unsigned char)out.p[i] != 0x7f);
        check(host.len > 0);
        for (size_t i = 0; i < host.len; i++)
            check(!(host.p[i] >= 'A' && host.p[i] <= 'Z'));
        check(!host_matches(buf_cstr(&host), "evil.example"));
        const char *why2 = NULL;
        check(urlcheck(out.p, out.len, &o, &out2, &host2, &why2) == ERR_OK);
        check(out2.len == out.len && memcmp(out2.p, out.p, out.len) == 0);
        check(host2.len == host.len && memcmp(host2.p, host.p, host.len) == 0);
    } else {
        check(why != NULL);
    }

    if (host_normalise((const char *)data, size, &host) == ERR_OK &&
        strlen(buf_cstr(&host)) == host.len) {
        char *h = xstrdup(buf_cstr(&host));
        check(host.len == 0 || host_matches(h, h));
        (void)host_matches(h, "example.com");
        free(h);
    }
    buf_release(&out);
    buf_release(&host);
    buf_release(&out2);
    buf_release(&host2);
    return 0;
}
