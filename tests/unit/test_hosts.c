/* test_hosts.c - the Host header's comparison form and the default hosts. */
#include <string.h>

#include "base/err.h"
#include "redirect/hosts.h"
#include "test.h"

static const char *norm(const char *h, char out[HOST_NAME_MAX_LEN + 1])
{
    size_t n = host_of_header((struct slice){h, strlen(h)}, out);
    return n ? out : "";
}

void test_hosts_header(void)
{
    char b[HOST_NAME_MAX_LEN + 1];
    CHECK_EQ_STR(norm("Sho.RT", b), "sho.rt");
    CHECK_EQ_STR(norm("sho.rt:8080", b), "sho.rt");
    CHECK_EQ_STR(norm("sho.rt.", b), "sho.rt");
    CHECK_EQ_STR(norm("sho.rt.:443", b), "sho.rt");
    CHECK_EQ_STR(norm("[::1]:80", b), "[::1]");
    CHECK_EQ_STR(norm("", b), "");
    CHECK_EQ_STR(norm(":80", b), "");
    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_EQ_STR(norm(big, b), "");
}

void test_hosts_list(void)
{
    struct hostlist *h = NULL;
    char err[128];
    CHECK_EQ_INT(hostlist_parse(NULL, &h, err, sizeof(err)), ERR_OK);
    CHECK(h == NULL);
    CHECK_EQ_INT(hostlist_parse(" , ", &h, err, sizeof(err)), ERR_OK);
    CHECK(h == NULL);
    CHECK_EQ_INT(hostlist_parse("Sho.rt, www.sho.rt.,127.0.0.1:8080", &h, err, sizeof(err)),
                 ERR_OK);
    if (CHECK(h != NULL)) {
        CHECK(hostlist_has(h, "sho.rt", 6));
        CHECK(hostlist_has(h, "www.sho.rt", 10));
        CHECK(hostlist_has(h, "127.0.0.1", 9));
        CHECK(!hostlist_has(h, "sho.r", 5));
        CHECK(!hostlist_has(h, "evil.sho.rt", 11));
    }
    hostlist_free(h);
    CHECK_EQ_INT(hostlist_parse("a.example,:80", &h, err, sizeof(err)), ERR_INVALID);
}
