/* test_clientaddr.c - who the client is: parsing X-Forwarded-For entries and
 * CIDR lists, and the right-to-left walk behind trusted proxies (forged
 * entries on the left, malformed ones, several header lines, IPv6 and
 * IPv4-mapped peers). Pure: no request, no network. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "base/buf.h"
#include "http/clientaddr.h"
#include "base/err.h"
#include "test.h"

#include "base/banned.h"

static const char *fmt(const struct client_ip *ip)
{
    static char out[CLIENTADDR_TEXT_MAX];
    clientaddr_format(ip, out);
    return out;
}

static const char *parsed(const char *s)
{
    struct client_ip ip;
    if (!clientaddr_parse(s, strlen(s), &ip))
        return "bad";
    return fmt(&ip);
}

void test_clientaddr_parse(void)
{
    CHECK_EQ_STR(parsed("1.2.3.4"), "1.2.3.4");
    CHECK_EQ_STR(parsed("  1.2.3.4\t"), "1.2.3.4");
    CHECK_EQ_STR(parsed("1.2.3.4:8080"), "1.2.3.4");
    CHECK_EQ_STR(parsed("2001:db8::1"), "2001:db8::1");
    CHECK_EQ_STR(parsed("[2001:db8::1]"), "2001:db8::1");
    CHECK_EQ_STR(parsed("[2001:db8::1]:443"), "2001:db8::1");
    CHECK_EQ_STR(parsed("::ffff:10.1.2.3"), "10.1.2.3"); /* mapped: one client */
    CHECK_EQ_STR(parsed(""), "bad");
    CHECK_EQ_STR(parsed("unknown"), "bad");
    CHECK_EQ_STR(parsed("1.2.3"), "bad");
    CHECK_EQ_STR(parsed("1.2.3.4:"), "bad");
    CHECK_EQ_STR(parsed("1.2.3.4:80x"), "bad");
    CHECK_EQ_STR(parsed("[1.2.3.4]:80"), "bad");
    CHECK_EQ_STR(parsed("[2001:db8::1"), "bad");
    CHECK_EQ_STR(parsed("256.1.1.1"), "bad");
    CHECK_EQ_STR(parsed("_hidden"), "bad");
}

static struct clientaddr *make(const char *cidrs)
{
    struct clientaddr *ca = NULL;
    char err[200] = "";
    int rc = clientaddr_new(cidrs, &ca, err, sizeof(err));
    if (!CHECK_EQ_INT(rc, ERR_OK))
        test_note("clientaddr_new(\"%s\"): %s", cidrs, err);
    return ca;
}

static bool trusted(const struct clientaddr *ca, const char *addr)
{
    struct client_ip ip;
    return clientaddr_parse(addr, strlen(addr), &ip) && clientaddr_trusted(ca, &ip);
}

void test_clientaddr_cidrs(void)
{
    struct clientaddr *ca = make("10.0.0.0/8, 192.168.1.7 2001:db8:ab00::/40,::1,172.16.0.0/12");
    CHECK(trusted(ca, "10.255.1.2"));
    CHECK(!trusted(ca, "11.0.0.1"));
    CHECK(trusted(ca, "192.168.1.7"));
    CHECK(!trusted(ca, "192.168.1.8"));
    CHECK(trusted(ca, "2001:db8:abff::9"));
    CHECK(!trusted(ca, "2001:db8:ac00::9"));
    CHECK(trusted(ca, "::1"));
    CHECK(!trusted(ca, "::2"));
    CHECK(trusted(ca, "172.31.255.255"));
    CHECK(!trusted(ca, "172.32.0.0"));
    CHECK(trusted(ca, "::ffff:10.0.0.1")); /* a mapped peer is its IPv4 self */
    clientaddr_free(ca);

    ca = make("0.0.0.0/0");
    CHECK(trusted(ca, "8.8.8.8"));
    CHECK(!trusted(ca, "2001:db8::1")); /* families never mix */
    clientaddr_free(ca);

    ca = make("::ffff:10.0.0.0/104"); /* mapped CIDR: 10.0.0.0/8 */
    CHECK(trusted(ca, "10.9.9.9"));
    CHECK(!trusted(ca, "11.9.9.9"));
    clientaddr_free(ca);

    ca = make("");
    CHECK(!trusted(ca, "127.0.0.1"));
    clientaddr_free(ca);
    ca = make(NULL);
    CHECK(!trusted(ca, "127.0.0.1"));
    clientaddr_free(ca);

    const char *bad[] = {"10.0.0.0/33", "10.0.0.0/",       "host.example",      "::1/129",
                         "1.2.3.4/8x",  "10.0.0.0/8,nope", "::ffff:10.0.0.0/90"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct clientaddr *x = NULL;
        char err[200] = "";
        if (!CHECK_EQ_INT(clientaddr_new(bad[i], &x, err, sizeof(err)), ERR_INVALID))
            test_note("accepted '%s'", bad[i]);
        CHECK(x == NULL);
        CHECK(strstr(err, "trusted-proxies") != NULL);
    }
}

static struct sockaddr_storage peer4(const char *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    inet_pton(AF_INET, a, &in->sin_addr);
    return ss;
}

static struct sockaddr_storage peer6(const char *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    in6->sin6_family = AF_INET6;
    inet_pton(AF_INET6, a, &in6->sin6_addr);
    return ss;
}

/* The client for a peer and up to three X-Forwarded-For lines (NULL: none). */
static const char *client(const struct clientaddr *ca, struct sockaddr_storage peer, const char *x1,
                          const char *x2, const char *x3)
{
    const char *lines[3] = {x1, x2, x3};
    struct slice xff[3];
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (lines[i])
            xff[n++] = (struct slice){lines[i], strlen(lines[i])};
    struct client_ip ip;
    clientaddr_resolve(ca, (const struct sockaddr *)&peer, xff, n, &ip);
    return fmt(&ip);
}

void test_clientaddr_resolve(void)
{
    struct sockaddr_storage proxy = peer4("10.0.0.5"), direct = peer4("198.51.100.9");

    /* Nothing trusted: the header is never read. */
    CHECK_EQ_STR(client(NULL, proxy, "203.0.113.1", NULL, NULL), "10.0.0.5");
    struct clientaddr *none = make("");
    CHECK_EQ_STR(client(none, proxy, "203.0.113.1", NULL, NULL), "10.0.0.5");
    clientaddr_free(none);

    struct clientaddr *ca = make("10.0.0.0/8, fd00::/8");
    /* An untrusted peer: its forged header is ignored. */
    CHECK_EQ_STR(client(ca, direct, "203.0.113.1", NULL, NULL), "198.51.100.9");
    /* A trusted peer: the rightmost untrusted hop. */
    CHECK_EQ_STR(client(ca, proxy, "203.0.113.1", NULL, NULL), "203.0.113.1");
    CHECK_EQ_STR(client(ca, proxy, "1.1.1.1, 203.0.113.1", NULL, NULL), "203.0.113.1");
    CHECK_EQ_STR(client(ca, proxy, "1.1.1.1, 203.0.113.1, 10.0.0.7", NULL, NULL), "203.0.113.1");
    /* Whatever the client wrote on the left stays there. */
    CHECK_EQ_STR(client(ca, proxy, "10.0.0.1, 203.0.113.1", NULL, NULL), "203.0.113.1");
    /* Every hop trusted: the leftmost. */
    CHECK_EQ_STR(client(ca, proxy, "10.0.0.1, 10.0.0.2", NULL, NULL), "10.0.0.1");
    /* No header behind a trusted proxy: the proxy. */
    CHECK_EQ_STR(client(ca, proxy, NULL, NULL, NULL), "10.0.0.5");
    /* Malformed: stop, the last good hop stands. */
    CHECK_EQ_STR(client(ca, proxy, "203.0.113.1, garbage", NULL, NULL), "10.0.0.5");
    CHECK_EQ_STR(client(ca, proxy, "garbage, 10.0.0.8", NULL, NULL), "10.0.0.8");
    CHECK_EQ_STR(client(ca, proxy, "203.0.113.1,", NULL, NULL), "10.0.0.5");
    CHECK_EQ_STR(client(ca, proxy, "", NULL, NULL), "10.0.0.5");
    /* Ports and brackets as some proxies write them. */
    CHECK_EQ_STR(client(ca, proxy, "203.0.113.1:5555", NULL, NULL), "203.0.113.1");
    CHECK_EQ_STR(client(ca, proxy, "[2001:db8::7]:443", NULL, NULL), "2001:db8::7");
    /* Several lines are one list, in order: the last line is the rightmost. */
    CHECK_EQ_STR(client(ca, proxy, "203.0.113.1", "10.0.0.9", NULL), "203.0.113.1");
    CHECK_EQ_STR(client(ca, proxy, "10.0.0.9", "203.0.113.2", NULL), "203.0.113.2");
    CHECK_EQ_STR(client(ca, proxy, "203.0.113.3", "10.1.0.1, 10.2.0.1", "10.3.0.1"), "203.0.113.3");
    /* IPv6 proxies, and an IPv4 peer on a dual-stack socket. */
    CHECK_EQ_STR(client(ca, peer6("fd00::1"), "2001:db8::1", NULL, NULL), "2001:db8::1");
    CHECK_EQ_STR(client(ca, peer6("::ffff:10.0.0.5"), "203.0.113.4", NULL, NULL), "203.0.113.4");
    CHECK_EQ_STR(client(ca, peer6("2001:db8::99"), "203.0.113.4", NULL, NULL), "2001:db8::99");
    clientaddr_free(ca);

    /* Round trip through a sockaddr (what the country lookup takes). */
    struct client_ip ip, back;
    CHECK(clientaddr_parse("2001:db8::5", 11, &ip));
    struct sockaddr_storage ss;
    clientaddr_to_sockaddr(&ip, &ss);
    CHECK(clientaddr_from_sockaddr((const struct sockaddr *)&ss, &back));
    CHECK_EQ_STR(fmt(&back), "2001:db8::5");
    CHECK_EQ_INT(back.n, 16);
}
