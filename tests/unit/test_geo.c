/* test_geo.c - country lookups against a tiny GeoIP2-Country-shaped database
 * that tests/data/make-geo-mmdb.pl writes into a temporary directory (built
 * once, on first use, and removed at exit; the Perl writer comes with
 * scripts/setup.sh, so its absence is a failure, not a skip): IPv4, IPv6 and
 * IPv4-mapped IPv6 hits, misses, families and arguments that give "", threads
 * looking up at once, opening files that are missing or not a database; and
 * the CDN header's values. Run from the repository root, as make does. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "clicks/geo.h"
#include "test.h"

#include "base/banned.h"

#define GEO_SCRIPT "tests/data/make-geo-mmdb.pl"

extern char **environ;

static struct buf fixture_dir = BUF_INIT;  /* the mkdtemp directory; empty until made */
static struct buf fixture_path = BUF_INIT; /* the database in it */

static const char *tmp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

static void fixture_remove(void)
{
    if (fixture_path.len)
        unlink(buf_cstr(&fixture_path));
    if (fixture_dir.len)
        rmdir(buf_cstr(&fixture_dir));
    buf_release(&fixture_path);
    buf_release(&fixture_dir);
}

/* The test database's path, written on the first call; NULL (with the reason
 * reported as a failed check) when it could not be made. */
static const char *fixture(void)
{
    static int state; /* 0 not tried, 1 made, -1 failed */
    if (state)
        return state > 0 ? buf_cstr(&fixture_path) : NULL;
    state = -1;

    buf_printf(&fixture_dir, "%s/shortd-geo-XXXXXX", tmp_dir());
    if (!CHECK(mkdtemp(fixture_dir.p) != NULL)) {
        buf_reset(&fixture_dir);
        return NULL;
    }
    atexit(fixture_remove);
    buf_printf(&fixture_path, "%s/test.mmdb", buf_cstr(&fixture_dir));

    char *argv[] = {"perl", GEO_SCRIPT, fixture_path.p, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "perl", NULL, NULL, argv, environ);
    if (!CHECK_EQ_INT(rc, 0)) {
        test_note("cannot run perl: %s", strerror(rc));
        return NULL;
    }
    int status = 0;
    if (!CHECK(waitpid(pid, &status, 0) == pid) ||
        !CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        test_note("%s failed: it needs libmaxmind-db-writer-perl (scripts/setup.sh) and the "
                  "repository root as the working directory",
                  GEO_SCRIPT);
        return NULL;
    }
    state = 1;
    return buf_cstr(&fixture_path);
}

/* The fixture opened, or NULL after a failed check. */
static struct geo *open_fixture(void)
{
    const char *path = fixture();
    if (!CHECK(path != NULL))
        return NULL;
    struct geo *g = NULL;
    if (!CHECK_EQ_INT(geo_open(path, &g), ERR_OK))
        return NULL;
    CHECK(g != NULL);
    return g;
}

/* Looks up a textual address and returns the code, for tables. */
static const char *lookup(const struct geo *g, const char *addr, char cc[3])
{
    struct sockaddr_in6 s6;
    struct sockaddr_in s4;
    memset(&s6, 0, sizeof(s6));
    memset(&s4, 0, sizeof(s4));
    cc[0] = '?'; /* proves that a miss writes "" */
    cc[1] = '\0';
    if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
        s4.sin_family = AF_INET;
        geo_country(g, (const struct sockaddr *)&s4, cc);
    } else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
        s6.sin6_family = AF_INET6;
        geo_country(g, (const struct sockaddr *)&s6, cc);
    } else {
        test_note("bad address in the test table: '%s'", addr);
        CHECK(!"address parses");
    }
    return cc;
}

static const struct {
    const char *addr;
    const char *cc;
} lookups[] = {
    /* IPv4 */
    {"203.0.113.5", "DE"},
    {"203.0.113.0", "DE"},
    {"203.0.113.255", "DE"},
    {"198.51.100.77", "JP"},
    {"192.0.2.1", "US"},
    {"127.0.0.1", "NL"},
    {"127.255.255.254", "NL"},
    /* IPv6 */
    {"2001:db8:1::1", "FR"},
    {"2001:db8:1:ffff:ffff:ffff:ffff:ffff", "FR"},
    /* IPv4-mapped IPv6, as a dual-stack listener sees IPv4 clients */
    {"::ffff:203.0.113.5", "DE"},
    {"::ffff:198.51.100.1", "JP"},
    {"::ffff:127.0.0.1", "NL"},
    /* misses */
    {"8.8.8.8", ""},
    {"203.0.114.1", ""},
    {"10.0.0.1", ""},
    {"0.0.0.0", ""},
    {"255.255.255.255", ""},
    {"2001:db8:2::1", ""},
    {"2001:db8::1", ""},
    {"2606:4700::1111", ""},
    {"::1", ""},
    {"::ffff:8.8.8.8", ""},
};

void test_geo_lookups(void)
{
    struct geo *g = open_fixture();
    if (!g)
        return;
    for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++) {
        char cc[3];
        if (!CHECK_EQ_STR(lookup(g, lookups[i].addr, cc), lookups[i].cc))
            test_note("address %s", lookups[i].addr);
    }
    geo_close(g);
}

void test_geo_unknown_inputs(void)
{
    struct geo *g = open_fixture();
    if (!g)
        return;
    char cc[3] = "?";

    /* A family libmaxminddb would misread as IPv4 */
    struct sockaddr_un su;
    memset(&su, 0, sizeof(su));
    su.sun_family = AF_UNIX;
    /* 203.0.113.5 where a sockaddr_in keeps sin_addr (after the 2-byte port) */
    memcpy(su.sun_path, "\0\0\xcb\x00\x71\x05", 6);
    geo_country(g, (const struct sockaddr *)&su, cc);
    CHECK_EQ_STR(cc, "");

    struct sockaddr_in s4;
    memset(&s4, 0, sizeof(s4));
    s4.sin_family = AF_INET;
    inet_pton(AF_INET, "203.0.113.5", &s4.sin_addr);
    cc[0] = '?';
    geo_country(NULL, (const struct sockaddr *)&s4, cc);
    CHECK_EQ_STR(cc, "");
    cc[0] = '?';
    geo_country(g, NULL, cc);
    CHECK_EQ_STR(cc, "");

    /* The same address after those, to show nothing stuck */
    geo_country(g, (const struct sockaddr *)&s4, cc);
    CHECK_EQ_STR(cc, "DE");
    geo_close(g);
    geo_close(NULL);
}

#define GEO_THREADS 4
#define GEO_ROUNDS 20000

struct geo_worker {
    const struct geo *g;
    int wrong; /* lookups that gave the wrong answer */
};

static void *geo_worker_run(void *arg)
{
    struct geo_worker *w = arg;
    struct sockaddr_in s4;
    struct sockaddr_in6 s6;
    memset(&s4, 0, sizeof(s4));
    memset(&s6, 0, sizeof(s6));
    s4.sin_family = AF_INET;
    s6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "2001:db8:1::42", &s6.sin6_addr);
    for (int i = 0; i < GEO_ROUNDS; i++) {
        char cc[3];
        s4.sin_addr.s_addr = htonl(i % 2 ? 0xCB007100u | (uint32_t)(i & 0xff)   /* 203.0.113.x */
                                         : 0xC6336400u | (uint32_t)(i & 0xff)); /* 198.51.100.x */
        geo_country(w->g, (const struct sockaddr *)&s4, cc);
        if (strcmp(cc, i % 2 ? "DE" : "JP") != 0)
            w->wrong++;
        geo_country(w->g, (const struct sockaddr *)&s6, cc);
        if (strcmp(cc, "FR") != 0)
            w->wrong++;
    }
    return NULL;
}

void test_geo_threads(void)
{
    struct geo *g = open_fixture();
    if (!g)
        return;
    pthread_t th[GEO_THREADS];
    struct geo_worker w[GEO_THREADS];
    for (int i = 0; i < GEO_THREADS; i++) {
        w[i] = (struct geo_worker){g, 0};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, geo_worker_run, &w[i]), 0);
    }
    for (int i = 0; i < GEO_THREADS; i++) {
        CHECK_EQ_INT(pthread_join(th[i], NULL), 0);
        CHECK_EQ_INT(w[i].wrong, 0);
    }
    geo_close(g);
}

/* Creates a new file in the temporary directory, its name in 'path'; returns
 * the open descriptor or -1. The caller closes and unlinks it. */
static int temp_file(struct buf *path, const char *stem)
{
    buf_reset(path);
    buf_printf(path, "%s/shortd-geo-%s-XXXXXX", tmp_dir(), stem);
    return mkstemp(path->p);
}

/* geo_open with stderr (the log) diverted into 'logged'. */
static int open_logged(const char *path, struct geo **out, struct buf *logged)
{
    struct buf cap = BUF_INIT;
    int fd = temp_file(&cap, "log");
    if (!CHECK(fd >= 0)) {
        buf_release(&cap);
        return geo_open(path, out);
    }
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    int rc = geo_open(path, out);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);

    buf_reset(logged);
    char chunk[512];
    ssize_t got;
    lseek(fd, 0, SEEK_SET);
    while ((got = read(fd, chunk, sizeof(chunk))) > 0)
        buf_add(logged, chunk, (size_t)got);
    close(fd);
    unlink(cap.p);
    buf_release(&cap);
    return rc;
}

void test_geo_open_errors(void)
{
    struct buf logged = BUF_INIT;
    struct buf path = BUF_INIT;
    struct geo *g = (struct geo *)&g; /* any non-NULL value */

    /* Missing: ERR_IO, *out NULL, one log line naming the path and the cause */
    const char *missing = "/nonexistent/shortd/GeoLite2-Country.mmdb";
    CHECK_EQ_INT(open_logged(missing, &g, &logged), ERR_IO);
    CHECK(g == NULL);
    CHECK(strstr(buf_cstr(&logged), "'/nonexistent/shortd/GeoLite2-Country.mmdb'") != NULL);
    CHECK(strstr(buf_cstr(&logged), "No such file or directory") != NULL);
    CHECK(strchr(buf_cstr(&logged), '\n') == buf_cstr(&logged) + logged.len - 1);

    /* A file that is not a MaxMind DB */
    int fd = temp_file(&path, "bad");
    if (CHECK(fd >= 0)) {
        static const char junk[] = "this is not a MaxMind database\n";
        CHECK_EQ_INT(write(fd, junk, sizeof(junk) - 1), (long long)(sizeof(junk) - 1));
        close(fd);
        g = (struct geo *)&g;
        CHECK_EQ_INT(open_logged(path.p, &g, &logged), ERR_IO);
        CHECK(g == NULL);
        CHECK(strstr(buf_cstr(&logged), path.p) != NULL);
        unlink(path.p);
    }

    /* An empty file */
    fd = temp_file(&path, "empty");
    if (CHECK(fd >= 0)) {
        close(fd);
        g = (struct geo *)&g;
        CHECK_EQ_INT(open_logged(path.p, &g, &logged), ERR_IO);
        CHECK(g == NULL);
        unlink(path.p);
    }

    /* A directory */
    g = (struct geo *)&g;
    CHECK_EQ_INT(open_logged("tests", &g, &logged), ERR_IO);
    CHECK(g == NULL);

    buf_release(&path);
    buf_release(&logged);
}

static const struct {
    const char *v;
    const char *cc;
} headers[] = {
    {"DE", "DE"},     {"de", "DE"}, {"dE", "DE"}, {"jp", "JP"}, {" US ", "US"},
    {"\tfr\t", "FR"}, {"XX", ""},   {"xx", ""},   {"T1", ""},   {"", ""},
    {"   ", ""},      {"D", ""},    {"DEU", ""},  {"1A", ""},   {"A1", ""},
    {"D-", ""},       {"D E", ""},  {"@[", ""}, /* the bytes just outside 'A'..'Z' */
    {"`{", ""},                                 /* and 'a'..'z' */
    {"\xc3\x84", ""},                           /* 'Ä' in UTF-8: two bytes, neither a letter */
};

void test_geo_from_header(void)
{
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
        char cc[3] = "?";
        geo_from_header(headers[i].v, strlen(headers[i].v), cc);
        if (!CHECK_EQ_STR(cc, headers[i].cc))
            test_note("header value '%s'", headers[i].v);
    }

    /* Only n bytes count, and no NUL is needed after them */
    char cc[3] = "?";
    geo_from_header("DEU", 2, cc);
    CHECK_EQ_STR(cc, "DE");
    const char raw[2] = {'n', 'l'};
    geo_from_header(raw, sizeof(raw), cc);
    CHECK_EQ_STR(cc, "NL");
    cc[0] = '?';
    geo_from_header(NULL, 0, cc);
    CHECK_EQ_STR(cc, "");
    /* A NUL inside the value is not a letter */
    geo_from_header("D\0", 2, cc);
    CHECK_EQ_STR(cc, "");
}
