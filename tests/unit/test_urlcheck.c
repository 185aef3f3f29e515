/* test_urlcheck.c - the destination rules, one table of URLs with what each
 * must give: the stored form and host when accepted, the error code and
 * reason when refused. Then the length limits, and the host helpers. */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "test.h"
#include "links/urlcheck.h"

#include "base/banned.h"

#define U(s) s, sizeof(s) - 1 /* a literal with its length, embedded NULs included */

static const char *const self_hosts[] = {"sho.rt", "go.sho.rt:8443", NULL};
static const char *const blocked[] = {"example.com", "evil.test", "10.0.0.1", NULL};
static const struct urlcheck_opts opts = {self_hosts, blocked};

static const char *const ctl_why = "must not contain spaces or control characters";
static const char *const scheme_why = "must start with http:// or https://";
static const char *const nohost_why = "is missing a host";
static const char *const host_why = "has an invalid host";
static const char *const ipv6_why = "has an invalid IPv6 address";
static const char *const port_why = "port must be a number from 1 to 65535";
static const char *const cred_why = "must not contain credentials (user:password@)";
static const char *const ascii_why = "host must be ASCII; use its punycode (xn--) form";
static const char *const self_why = "points back at this shortener";
static const char *const block_why = "destination host is blocked";

static const struct url_case {
    const char *in;
    size_t n;
    int rc;
    const char *out;  /* ERR_OK: the stored URL */
    const char *host; /* ERR_OK: the host */
    const char *why;  /* otherwise: the reason */
} url_cases[] = {
    /* Accepted, and how they are stored */
    {U("https://example.org/"), ERR_OK, "https://example.org/", "example.org", NULL},
    {U("http://example.org"), ERR_OK, "http://example.org", "example.org", NULL},
    {U("HTTP://Example.ORG/Path/To?Q=A#Frag"), ERR_OK, "http://example.org/Path/To?Q=A#Frag",
     "example.org", NULL},
    {U("HtTpS://WWW.EXAMPLE.ORG"), ERR_OK, "https://www.example.org", "www.example.org", NULL},
    {U("http://example.org?q=1"), ERR_OK, "http://example.org?q=1", "example.org", NULL},
    {U("http://example.org#top"), ERR_OK, "http://example.org#top", "example.org", NULL},
    {U("http://example.org:8080/x"), ERR_OK, "http://example.org:8080/x", "example.org", NULL},
    {U("http://example.org:65535/"), ERR_OK, "http://example.org:65535/", "example.org", NULL},
    {U("http://example.org:1"), ERR_OK, "http://example.org:1", "example.org", NULL},
    {U("http://example.org:0080/"), ERR_OK, "http://example.org:80/", "example.org", NULL},
    {U("http://example.org./x"), ERR_OK, "http://example.org./x", "example.org", NULL},
    {U("http://exa_mple.org/"), ERR_OK, "http://exa_mple.org/", "exa_mple.org", NULL},
    {U("http://xn--bcher-kva.example/"), ERR_OK, "http://xn--bcher-kva.example/",
     "xn--bcher-kva.example", NULL},
    {U("http://localhost/"), ERR_OK, "http://localhost/", "localhost", NULL},
    {U("http://192.168.0.1/"), ERR_OK, "http://192.168.0.1/", "192.168.0.1", NULL},
    {U("http://[::1]/"), ERR_OK, "http://[::1]/", "::1", NULL},
    {U("http://[2001:DB8:0:0::1]:8080/p"), ERR_OK, "http://[2001:db8::1]:8080/p", "2001:db8::1",
     NULL},
    {U("http://[::ffff:192.0.2.1]"), ERR_OK, "http://[::ffff:192.0.2.1]", "192.0.2.1", NULL},
    {U("http://example.org/a@b/c:d"), ERR_OK, "http://example.org/a@b/c:d", "example.org", NULL},
    {U("http://example.org/%7Euser/100%"), ERR_OK, "http://example.org/%7Euser/100%", "example.org",
     NULL},
    {U("http://example.org/caf\xc3\xa9?q=\xe2\x82\xac#\xff"), ERR_OK,
     "http://example.org/caf%C3%A9?q=%E2%82%AC#%FF", "example.org", NULL},
    {U("http://example.org/a<b>\"{|}\\^`"), ERR_OK,
     "http://example.org/a%3Cb%3E%22%7B%7C%7D%5C%5E%60", "example.org", NULL},
    {U("http://example.org/[x]!$&'()*+,;=~"), ERR_OK, "http://example.org/[x]!$&'()*+,;=~",
     "example.org", NULL},
    {U("http://%45xample.org/"), ERR_OK, "http://example.org/", "example.org", NULL},
    {U("http://notexample.com/"), ERR_OK, "http://notexample.com/", "notexample.com", NULL},
    {U("http://example.com.evil.org/"), ERR_OK, "http://example.com.evil.org/",
     "example.com.evil.org", NULL},
    {U("http://sho.rt.evil.org/"), ERR_OK, "http://sho.rt.evil.org/", "sho.rt.evil.org", NULL},
    {U("http://10.0.0.10/"), ERR_OK, "http://10.0.0.10/", "10.0.0.10", NULL},

    /* Nothing that could split a header or hide in one */
    {U(""), ERR_INVALID, NULL, NULL, "is required"},
    {U("http://example.org/\r\nSet-Cookie: a=b"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org/a\nb"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org/a\rb"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org/a\0b"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org/a b"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org/a\tb"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org/\x7f"), ERR_INVALID, NULL, NULL, ctl_why},
    {U(" http://example.org/"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://exa mple.org/"), ERR_INVALID, NULL, NULL, ctl_why},
    {U("http://example.org\0.evil.test/"), ERR_INVALID, NULL, NULL, ctl_why},

    /* Schemes */
    {U("javascript:alert(1)"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("JavaScript://example.org/%0aalert(1)"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("ftp://example.org/"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("data:text/html,<b>hi</b>"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("file:///etc/passwd"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("httpx://example.org/"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("http:example.org"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("http:/example.org"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("http:\\\\example.org"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("//example.org/"), ERR_INVALID, NULL, NULL, scheme_why},
    {U("example.org"), ERR_INVALID, NULL, NULL, scheme_why},

    /* Hosts */
    {U("http://"), ERR_INVALID, NULL, NULL, nohost_why},
    {U("http:///x"), ERR_INVALID, NULL, NULL, nohost_why},
    {U("http://?q"), ERR_INVALID, NULL, NULL, nohost_why},
    {U("http://:80/"), ERR_INVALID, NULL, NULL, nohost_why},
    {U("http://./"), ERR_INVALID, NULL, NULL, nohost_why},
    {U("http://a..b/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://.a/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://exa<mple.org/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://example.org\\x/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://ex%2Fample.org/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://ex%zzample.org/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://example.org%/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://ex\xc3\xa4mple.org/"), ERR_INVALID, NULL, NULL, ascii_why},
    {U("http://ex%C3%A4mple.org/"), ERR_INVALID, NULL, NULL, ascii_why},
    {U("http://0x7f.1/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://2130706433/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://127.1/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://10.0.0.01/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://256.1.1.1/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://1.2.3.4.5/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://[::1/"), ERR_INVALID, NULL, NULL, ipv6_why},
    {U("http://[]/"), ERR_INVALID, NULL, NULL, ipv6_why},
    {U("http://[::g]/"), ERR_INVALID, NULL, NULL, ipv6_why},
    {U("http://[1:2:3:4:5:6:7:8:9]/"), ERR_INVALID, NULL, NULL, ipv6_why},
    {U("http://[fe80::1%25eth0]/"), ERR_INVALID, NULL, NULL, ipv6_why},
    {U("http://[v1.fe]/"), ERR_INVALID, NULL, NULL, ipv6_why},
    {U("http://[::1]x/"), ERR_INVALID, NULL, NULL, host_why},
    {U("http://::1/"), ERR_INVALID, NULL, NULL, nohost_why},

    /* Ports */
    {U("http://example.org:0/"), ERR_INVALID, NULL, NULL, port_why},
    {U("http://example.org:65536/"), ERR_INVALID, NULL, NULL, port_why},
    {U("http://example.org:99999999999999999999/"), ERR_INVALID, NULL, NULL, port_why},
    {U("http://example.org:/"), ERR_INVALID, NULL, NULL, port_why},
    {U("http://example.org:8a/"), ERR_INVALID, NULL, NULL, port_why},
    {U("http://example.org:-1/"), ERR_INVALID, NULL, NULL, port_why},
    {U("http://example.org:80:80/"), ERR_INVALID, NULL, NULL, port_why},

    /* Credentials: "http://bank@evil/" reads as the bank */
    {U("http://user:pass@example.org/"), ERR_INVALID, NULL, NULL, cred_why},
    {U("http://example.org@evil.org/"), ERR_INVALID, NULL, NULL, cred_why},
    {U("http://@example.org/"), ERR_INVALID, NULL, NULL, cred_why},
    {U("http://example.org\\@evil.org/"), ERR_INVALID, NULL, NULL, cred_why},

    /* Ourselves, on any port and in any spelling */
    {U("http://sho.rt/abc1234"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("https://SHO.RT:8443/abc1234"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("http://sho.rt./x"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("http://%73ho.rt/x"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("http://go.sho.rt/x"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("http://www.sho.rt/x"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("http://a.b.sho.rt:1/x"), ERR_FORBIDDEN, NULL, NULL, self_why},
    {U("http://notsho.rt/x"), ERR_OK, "http://notsho.rt/x", "notsho.rt", NULL},
    {U("http://[::ffff:10.0.0.1]/"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("http://[::ffff:a00:1]/"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("http://110.0.0.1/"), ERR_OK, "http://110.0.0.1/", "110.0.0.1", NULL},

    /* Blocked hosts and their subdomains, not lookalikes */
    {U("http://example.com/"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("http://Example.COM./"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("https://www.example.com:444/login"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("http://a.b.evil.test/"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("http://%65vil.test/"), ERR_FORBIDDEN, NULL, NULL, block_why},
    {U("http://10.0.0.1:8080/"), ERR_FORBIDDEN, NULL, NULL, block_why},
};

void test_url_table(void)
{
    struct buf out = BUF_INIT, host = BUF_INIT;
    for (size_t i = 0; i < sizeof(url_cases) / sizeof(url_cases[0]); i++) {
        const struct url_case *c = &url_cases[i];
        const char *why = "unset";
        int rc = urlcheck(c->in, c->n, &opts, &out, &host, &why);
        bool ok;
        if (c->rc == ERR_OK) {
            ok = rc == ERR_OK && !why && strcmp(buf_cstr(&out), c->out) == 0 &&
                 strcmp(buf_cstr(&host), c->host) == 0;
        } else {
            ok = rc == c->rc && why && strcmp(why, c->why) == 0 && out.len == 0 && host.len == 0;
        }
        if (!CHECK(ok))
            test_note("\"%.*s\": rc %d, why \"%s\", out \"%s\", host \"%s\"", (int)c->n, c->in, rc,
                      why ? why : "(null)", buf_cstr(&out), buf_cstr(&host));
    }
    buf_release(&out);
    buf_release(&host);
}

void test_url_length(void)
{
    struct buf out = BUF_INIT, host = BUF_INIT;
    const char *why = NULL;
    const char prefix[] = "http://example.org/";
    size_t plen = sizeof(prefix) - 1;
    char *url = malloc(URL_MAX + 2);
    if (!CHECK(url))
        return;
    memcpy(url, prefix, plen);
    memset(url + plen, 'a', URL_MAX + 1 - plen);
    url[URL_MAX + 1] = '\0';

    /* Exactly URL_MAX bytes is fine, one more is not. */
    CHECK_EQ_INT(urlcheck(url, URL_MAX, &opts, &out, &host, &why), ERR_OK);
    CHECK_EQ_INT(out.len, URL_MAX);
    CHECK_EQ_INT(urlcheck(url, URL_MAX + 1, &opts, &out, &host, &why), ERR_TOOBIG);
    CHECK_EQ_STR(why, "must be at most 8192 bytes");
    CHECK_EQ_INT(out.len, 0);

    /* Within the limit as sent, over it once percent-encoded. */
    url[URL_MAX - 1] = (char)0xe9;
    CHECK_EQ_INT(urlcheck(url, URL_MAX, &opts, &out, &host, &why), ERR_TOOBIG);
    CHECK(why && strncmp(why, "must be at most 8192 bytes", 26) == 0);
    CHECK_EQ_INT(out.len, 0);
    /* Two bytes shorter, it encodes to exactly URL_MAX. */
    memmove(url + 2, url, plen);
    CHECK_EQ_INT(urlcheck(url + 2, URL_MAX - 2, &opts, &out, &host, &why), ERR_OK);
    CHECK_EQ_INT(out.len, URL_MAX);
    CHECK(out.len >= 3 && memcmp(out.p + out.len - 3, "%E9", 3) == 0);
    free(url);

    /* A host longer than DNS allows. */
    struct buf longhost = BUF_INIT;
    buf_adds(&longhost, "http://");
    for (int i = 0; i < 26; i++)
        buf_adds(&longhost, "abcdefghi.");
    buf_adds(&longhost, "org/");
    CHECK_EQ_INT(urlcheck(longhost.p, longhost.len, &opts, &out, &host, &why), ERR_INVALID);
    CHECK_EQ_STR(why, "host is too long");
    buf_release(&longhost);

    buf_release(&out);
    buf_release(&host);
}

void test_url_resets_outputs(void)
{
    struct buf out = BUF_INIT, host = BUF_INIT;
    buf_adds(&out, "stale");
    buf_adds(&host, "stale");
    const char *why = "unset";
    CHECK_EQ_INT(urlcheck(U("https://example.org/x"), &opts, &out, &host, &why), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&out), "https://example.org/x");
    CHECK_EQ_STR(buf_cstr(&host), "example.org");
    CHECK(why == NULL);

    CHECK_EQ_INT(urlcheck(U("ftp://x/"), &opts, &out, &host, &why), ERR_INVALID);
    CHECK_EQ_INT(out.len, 0);
    CHECK_EQ_INT(host.len, 0);
    CHECK_EQ_STR(buf_cstr(&out), "");

    /* shortd on a loopback address: every spelling of this machine is self,
     * and an address blocked in one spelling is blocked in every other. */
    static const char *const loop_self[] = {"127.0.0.1:8080", NULL};
    static const char *const loop_blocked[] = {"192.0.2.7", NULL};
    const struct urlcheck_opts loop = {loop_self, loop_blocked};
    static const char *const self_urls[] = {
        "http://127.0.0.1/",
        "http://127.0.0.2:8080/x",
        "http://127.255.255.254/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::FFFF:7f00:1]:8080/",
        "http://[::1]/",
        "http://localhost:8080/",
        "http://LocalHost./",
        "http://a.localhost/",
        "http://0.0.0.0:8080/",
        "http://[::]/",
        "http://%6cocalhost/",
    };
    for (size_t i = 0; i < sizeof(self_urls) / sizeof(self_urls[0]); i++) {
        int rc = urlcheck(self_urls[i], strlen(self_urls[i]), &loop, &out, &host, &why);
        if (!CHECK(rc == ERR_FORBIDDEN && why && strcmp(why, self_why) == 0))
            test_note("%s: rc %d, host \"%s\"", self_urls[i], rc, buf_cstr(&host));
    }
    CHECK_EQ_INT(urlcheck(U("http://[::ffff:192.0.2.7]/"), &loop, &out, &host, &why),
                 ERR_FORBIDDEN);
    CHECK_EQ_STR(why, block_why);
    CHECK_EQ_INT(urlcheck(U("http://128.0.0.1/"), &loop, &out, &host, &why), ERR_OK);
    CHECK_EQ_INT(urlcheck(U("http://localhost.example/"), &loop, &out, &host, &why), ERR_OK);
    /* ... but on a public name, localhost is someone else's machine. */
    CHECK_EQ_INT(urlcheck(U("http://localhost/"), &opts, &out, &host, &why), ERR_OK);
    CHECK_EQ_INT(urlcheck(U("http://127.0.0.2/"), &opts, &out, &host, &why), ERR_OK);

    /* No options: nothing is self or blocked; no interest in the reason. */
    CHECK_EQ_INT(urlcheck(U("http://sho.rt/"), NULL, &out, &host, NULL), ERR_OK);
    struct urlcheck_opts none = {NULL, NULL};
    CHECK_EQ_INT(urlcheck(U("http://example.com/"), &none, &out, &host, NULL), ERR_OK);
    CHECK_EQ_INT(urlcheck(U("http://"), &none, &out, &host, NULL), ERR_INVALID);
    buf_release(&out);
    buf_release(&host);
}

void test_host_normalise(void)
{
    static const struct {
        const char *in;
        const char *out; /* NULL: ERR_INVALID */
    } cases[] = {
        {"example.com", "example.com"},
        {"Example.COM", "example.com"},
        {"example.com.", "example.com"},
        {"example.com:8080", "example.com"},
        {"Example.com.:8080", "example.com"},
        {"127.0.0.1:80", "127.0.0.1"},
        {"[::1]", "::1"},
        {"[::1]:80", "::1"},
        {"::1", "::1"},
        {"[2001:DB8:0:0::1]:443", "2001:db8::1"},
        {"2001:db8::1", "2001:db8::1"},
        {"[::ffff:127.0.0.1]", "127.0.0.1"},
        {"::FFFF:7f00:1", "127.0.0.1"},
        {"[::ffff:7f00:1]:80", "127.0.0.1"},
        {"::ffff:1:7f00:1", "::ffff:1:7f00:1"},
        {"2130706433", "127.0.0.1"},
        {"0x7f000001", "127.0.0.1"},
        {"0x7F.1", "127.0.0.1"},
        {"0177.0.0.1", "127.0.0.1"},
        {"127.1", "127.0.0.1"},
        {"127.0.1", "127.0.0.1"},
        {"10.0.0.1.", "10.0.0.1"},
        {"0x", "0.0.0.0"},
        {"4294967295", "255.255.255.255"},
        {"4294967296", "4294967296"},
        {"1.2.3.4.5", "1.2.3.4.5"},
        {"256.1.1.1", "256.1.1.1"},
        {"1.256", "1.0.1.0"},
        {"08.1.1.1", "08.1.1.1"},
        {"1..1", "1..1"},
        {"a.0x10", "a.0x10"},
        {"", NULL},
        {".", NULL},
        {":80", NULL},
        {"[]", NULL},
        {"[::1", NULL},
        {"[::1]x", NULL},
    };
    struct buf out = BUF_INIT;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = host_normalise(cases[i].in, strlen(cases[i].in), &out);
        bool ok = cases[i].out ? rc == ERR_OK && strcmp(buf_cstr(&out), cases[i].out) == 0
                               : rc == ERR_INVALID;
        if (!CHECK(ok))
            test_note("\"%s\": rc %d, out \"%s\"", cases[i].in, rc, buf_cstr(&out));
    }
    /* Only n bytes count. */
    CHECK_EQ_INT(host_normalise("Sho.RT/path", 6, &out), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&out), "sho.rt");
    buf_release(&out);
}

void test_host_matches(void)
{
    CHECK(host_matches("example.com", "example.com"));
    CHECK(host_matches("www.example.com", "example.com"));
    CHECK(host_matches("a.b.example.com", "example.com"));
    CHECK(host_matches("WWW.Example.com", "example.com"));
    CHECK(!host_matches("notexample.com", "example.com"));
    CHECK(!host_matches("example.com.evil", "example.com"));
    CHECK(!host_matches("example.co", "example.com"));
    CHECK(!host_matches("com", "example.com"));
    CHECK(!host_matches("example.com", "www.example.com"));
    CHECK(!host_matches("example.com", ""));
    CHECK(!host_matches("", "example.com"));
    CHECK(host_matches("::1", "::1"));
    /* An address has no parents: blocking "0.1" blocks no 10.0.0.1. */
    CHECK(!host_matches("10.0.0.1", "0.1"));
    CHECK(!host_matches("10.0.0.1", "0.0.1"));
    CHECK(host_matches("10.0.0.1", "10.0.0.1"));
    CHECK(!host_matches("2001:db8::1", "db8::1"));
    CHECK(host_is_ip("10.0.0.1") && host_is_ip("::1") && !host_is_ip("10.0.0.1.example"));
    CHECK(host_is_loopback("127.0.0.9") && host_is_loopback("localhost") &&
          host_is_loopback("x.localhost") && !host_is_loopback("localhost.example") &&
          !host_is_loopback("128.0.0.1"));
}
