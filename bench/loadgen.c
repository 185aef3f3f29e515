/* loadgen.c - the benchmark's own small HTTP/1.1 load generator and data
 * generator (wrk does the peak-throughput runs; this does what wrk 4.1 cannot).
 *
 *   loadgen gen N SEED CODES CSV MAP   N distinct 7-char base62 codes (distinct
 *                                      also when lowercased, as nginx's map
 *                                      compares them), one per fixed-width
 *                                      line in CODES; "code,url" rows in CSV
 *                                      (sqlite3 .import); "/code url;" in MAP
 *   loadgen rate   -p PORT -r RATE -d SEC -c CONN --codes F --uas F
 *                  open-loop constant-rate GETs of random codes with random
 *                  user agents; latency measured from each request's
 *                  *intended* send time (no coordinated omission)
 *   loadgen warm   -p PORT -c CONN --codes F [--method HEAD] [--depth K]
 *                  every code once (closed loop, K requests pipelined per
 *                  connection): fills a server's cache
 *   loadgen create -p PORT -d SEC -c CONN --key KEY
 *                  closed-loop POST /api/links with a bearer key
 *   loadgen loop   -p PORT -d SEC -c CONN (--code CODE | --unknown | --codes F | --path P)
 *                  [--key KEY]
 *                  closed-loop GETs for SEC seconds: of one code, of a code
 *                  never asked for before on every request (distinct unknown
 *                  codes: each a store lookup on the server), of random
 *                  codes of a file, or of one path (an API read: with --key,
 *                  sent as a bearer key)
 *
 * Results are printed as key=value lines. One thread, epoll, one request in
 * flight per connection (no pipelining); requests that are due while every
 * connection is busy wait in a queue and their wait counts as latency. The
 * open-loop schedule is kept by busy-polling the clock (the generator uses
 * its whole core; --spin 0 sleeps on a timerfd with 1 us slack instead, which
 * on this VM costs more than it saves), so requests leave when due or a few
 * microseconds late, several at once when due together. The generator reports
 * how late it sent (send_lag_*: any cause; wake_late_*: with a connection
 * free, i.e. its own lateness) so an overloaded generator is visible. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static void die(const char *msg)
{
    fprintf(stderr, "loadgen: %s%s%s\n", msg, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(2);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: deterministic for a seed */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static const char B62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* ---------- gen ---------- */

static uint64_t lower_key(const char *c)
{
    uint64_t k = 1;   /* never 0: 0 marks an empty slot */
    for (int i = 0; i < 7; i++) {
        int ch = c[i];
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 10 : ch - 'A' + 10;
        k = k * 36 + (uint64_t)v;
    }
    return k;
}

static int cmd_gen(int argc, char **argv)
{
    if (argc != 7)
        die("usage: loadgen gen N SEED CODES CSV MAP");
    uint64_t n = strtoull(argv[2], NULL, 10);
    rng_state = strtoull(argv[3], NULL, 10) * 0x2545f4914f6cdd1du + 1;
    FILE *codes = fopen(argv[4], "w"), *csv = fopen(argv[5], "w"), *map = fopen(argv[6], "w");
    if (!codes || !csv || !map)
        die("cannot open an output file");
    size_t cap = 1024;
    while (cap < n * 2)
        cap <<= 1;
    uint64_t *set = calloc(cap, sizeof(*set));
    if (!set)
        die("out of memory");
    /* every 7-character first path segment of shortd's routes: never a code */
    static const char *const reserved[] = {"metrics", "healthz", "favicon", "sitemap", NULL};
    uint64_t made = 0, skipped = 0, url_bytes = 0;
    char code[8], url[160];
    while (made < n) {
        for (int i = 0; i < 7; i++)
            code[i] = B62[rng() % 62];
        code[7] = '\0';
        bool bad = false;
        for (int i = 0; reserved[i]; i++)
            if (strcasecmp(code, reserved[i]) == 0)
                bad = true;
        uint64_t k = lower_key(code);
        size_t h = (size_t)((k * 0x9e3779b97f4a7c15u) >> 20) & (cap - 1);
        while (set[h] && set[h] != k)
            h = (h + 1) & (cap - 1);
        if (bad || set[h] == k) {
            skipped++;
            continue;
        }
        set[h] = k;
        /* a realistic destination, 60-80 bytes */
        int ulen = snprintf(url, sizeof(url), "https://example.com/bench/%" PRIu64 "?x=", made);
        int extra = 30 + (int)(rng() % 16);
        for (int i = 0; i < extra; i++)
            url[ulen++] = B62[rng() % 62];
        url[ulen] = '\0';
        url_bytes += (uint64_t)ulen;
        fprintf(codes, "%s\n", code);
        fprintf(csv, "%s,%s\n", code, url);
        fprintf(map, "/%s %s;\n", code, url);
        made++;
    }
    if (fclose(codes) || fclose(csv) || fclose(map))
        die("write failed");
    free(set);
    printf("links=%" PRIu64 "\nskipped_collisions=%" PRIu64 "\navg_url_bytes=%.2f\n", made, skipped,
           (double)url_bytes / (double)made);
    return 0;
}

/* ---------- input files ---------- */

struct lines {
    char *blob;
    char **v;
    size_t n;
};

static void load_lines(const char *path, struct lines *l)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        die(path);
    l->blob = malloc((size_t)st.st_size + 1);
    if (!l->blob || fread(l->blob, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        die(path);
    fclose(f);
    l->blob[st.st_size] = '\0';
    size_t cap = 1024;
    l->v = malloc(cap * sizeof(char *));
    l->n = 0;
    for (char *p = l->blob; *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (*p) {
            if (l->n == cap)
                l->v = realloc(l->v, (cap *= 2) * sizeof(char *));
            l->v[l->n++] = p;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    if (!l->n)
        die("an input file has no lines");
}

/* ---------- connections ---------- */

enum mode { M_RATE, M_WARM, M_CREATE, M_LOOP };

struct conn {
    int fd;
    bool busy;              /* requests in flight */
    int inflight;           /* how many (warm pipelines --depth of them) */
    bool head;              /* the requests in flight are HEADs: no body follows */
    uint64_t t_start;       /* intended (rate) or actual (closed loop) send time */
    char *rbuf;
    size_t rlen, rcap;
    char wbuf[32768];
    size_t wlen, woff;
};

static struct {
    enum mode mode;
    int port;
    double rate, duration;
    int nconn;
    const char *method;
    const char *key;
    struct lines codes, uas;
    struct conn *c;
    int ep, tfd;
    /* results */
    uint64_t *lat;
    size_t nlat, latcap;
    uint64_t sent, completed, errors, reconnects, status[6], status_201, status_other;
    uint64_t lag_max, lag_sum;     /* due -> sent, any cause */
    uint64_t wake_max, wake_sum, wake_n; /* due -> sent when a connection was free */
    uint64_t queued;                /* passes that left due requests waiting for a connection */
    bool queued_pass;
    bool spin;              /* rate: busy-poll instead of sleeping */
    int depth;              /* warm: requests pipelined per connection */
    size_t next_code;       /* warm */
    uint64_t seq;           /* create; loop --unknown */
    const char *code;       /* loop: --code */
    const char *path;       /* loop: --path */
    bool unknown;           /* loop: a distinct unknown code per request */
} G;

static int connect_one(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)G.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void conn_open(int i)
{
    struct conn *c = &G.c[i];
    c->fd = connect_one();
    c->busy = false;
    c->inflight = 0;
    c->rlen = 0;
    c->wlen = c->woff = 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(G.ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        die("epoll_ctl");
}

static void conn_reopen(int i)
{
    close(G.c[i].fd);
    G.reconnects++;
    conn_open(i);
}

static void flush_write(int i)
{
    struct conn *c = &G.c[i];
    while (c->woff < c->wlen) {
        ssize_t w = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)i};
            epoll_ctl(G.ep, EPOLL_CTL_MOD, c->fd, &ev);
            return;
        }
        if (w <= 0) {
            G.errors += (uint64_t)c->inflight;
            c->busy = false;
            c->inflight = 0;
            conn_reopen(i);
            return;
        }
        c->woff += (size_t)w;
    }
    c->wlen = c->woff = 0;
}

/* Appends one request to c->wbuf; false when it does not fit. */
static bool build_request(struct conn *c)
{
    int n;
    char *w = c->wbuf + c->wlen;
    size_t room = sizeof(c->wbuf) - c->wlen;
    if (G.mode == M_CREATE) {
        char body[200];
        int bl = snprintf(body, sizeof(body), "{\"url\":\"https://example.com/created/%" PRIu64 "?x=", G.seq++);
        for (int i = 0; i < 36; i++)
            body[bl++] = B62[rng() % 62];
        bl += snprintf(body + bl, sizeof(body) - (size_t)bl, "\"}");
        n = snprintf(w, room,
                     "POST /api/links HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%.*s",
                     G.port, G.key, bl, bl, body);
        c->head = false;
    } else {
        char fresh[8];
        const char *code;
        if (G.mode == M_WARM)
            code = G.codes.v[G.next_code];
        else if (G.code || G.path)
            code = G.code;
        else if (G.unknown) {
            /* 'Z' and six base62 digits of a counter that starts at random:
             * distinct within a run, and as likely as a random code to be a
             * real one (62^-7 a link) */
            uint64_t v = G.seq++;
            fresh[0] = 'Z';
            for (int i = 6; i >= 1; i--, v /= 62)
                fresh[i] = B62[v % 62];
            fresh[7] = '\0';
            code = fresh;
        } else
            code = G.codes.v[rng() % G.codes.n];
        const char *ua = G.uas.n ? G.uas.v[rng() % G.uas.n] : "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
        /* the same request shape as bench/redirect.lua (loop --path: with
         * the key, if any) */
        n = snprintf(w, room,
                     "%s %s%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s%s%sUser-Agent: %s\r\n"
                     "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
                     "Accept-Language: en-US,en;q=0.9\r\n\r\n",
                     G.method, G.path ? "" : "/", G.path ? G.path : code, G.port,
                     G.key ? "Authorization: Bearer " : "", G.key ? G.key : "", G.key ? "\r\n" : "", ua);
        c->head = strcmp(G.method, "HEAD") == 0;
    }
    if (n < 0 || (size_t)n >= room)
        return false;
    c->wlen += (size_t)n;
    if (G.mode == M_WARM)
        G.next_code++;
    return true;
}

static void send_on(int i, uint64_t t_start)
{
    struct conn *c = &G.c[i];
    int depth = G.mode == M_WARM ? G.depth : 1;
    c->wlen = c->woff = 0;
    for (int k = 0; k < depth; k++) {
        if (G.mode == M_WARM && G.next_code >= G.codes.n)
            break;
        if (!build_request(c)) {
            if (k == 0)
                die("request too long");
            break;
        }
        c->inflight++;
        G.sent++;
    }
    c->busy = true;
    c->t_start = t_start;
    flush_write(i);
}

/* A complete response at the start of c->rbuf: its length, 0 when incomplete,
 * -1 when malformed. */
static long response_len(struct conn *c, int *status)
{
    char *p = c->rbuf, *end = c->rbuf + c->rlen;
    char *hend = memmem(p, c->rlen, "\r\n\r\n", 4);
    if (!hend)
        return c->rlen > 65536 ? -1 : 0;
    if (c->rlen < 12 || memcmp(p, "HTTP/1.", 7) != 0)
        return -1;
    *status = atoi(p + 9);
    size_t hlen = (size_t)(hend - p) + 4;
    long clen = -1;
    bool chunked = false;
    for (char *line = memchr(p, '\n', hlen) + 1; line < hend; line = memchr(line, '\n', (size_t)(hend + 2 - line)) + 1) {
        if (strncasecmp(line, "content-length:", 15) == 0)
            clen = atol(line + 15);
        else if (strncasecmp(line, "transfer-encoding:", 18) == 0 && memmem(line, (size_t)(hend - line), "chunked", 7))
            chunked = true;
    }
    if (c->head || *status == 204 || *status == 304)
        return (long)hlen;
    if (!chunked) {
        if (clen < 0)
            return -1;   /* read-to-close bodies are not expected from either server */
        return (size_t)(end - p) >= hlen + (size_t)clen ? (long)(hlen + (size_t)clen) : 0;
    }
    char *q = p + hlen;
    for (;;) {
        char *nl = memmem(q, (size_t)(end - q), "\r\n", 2);
        if (!nl)
            return 0;
        long sz = strtol(q, NULL, 16);
        if (sz < 0)
            return -1;
        q = nl + 2;
        if (sz == 0) {   /* no trailers expected */
            if (end - q < 2)
                return 0;
            return (long)(q + 2 - p);
        }
        if (end - q < sz + 2)
            return 0;
        q += sz + 2;
    }
}

static void record(uint64_t lat)
{
    if (G.nlat == G.latcap) {
        G.latcap = G.latcap ? G.latcap * 2 : 1 << 16;
        G.lat = realloc(G.lat, G.latcap * sizeof(*G.lat));
        if (!G.lat)
            die("out of memory");
    }
    G.lat[G.nlat++] = lat;
}

/* Reads what is there; returns true when a response completed. */
static bool on_readable(int i, uint64_t *t_done)
{
    struct conn *c = &G.c[i];
    for (;;) {
        if (c->rcap - c->rlen < 16384) {
            c->rcap = c->rcap ? c->rcap * 2 : 65536;
            c->rbuf = realloc(c->rbuf, c->rcap);
            if (!c->rbuf)
                die("out of memory");
        }
        ssize_t r = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;
        if (r <= 0) {   /* closed by the server */
            G.errors += (uint64_t)c->inflight;
            conn_reopen(i);
            return false;
        }
        c->rlen += (size_t)r;
        if ((size_t)r < c->rcap - c->rlen + (size_t)r)
            break;
    }
    for (;;) {
        int status = 0;
        long len = response_len(c, &status);
        if (len == 0)
            return false;
        uint64_t t = now_ns();
        if (len < 0 || !c->busy) {
            G.errors += (uint64_t)(c->inflight ? c->inflight : 1);
            c->busy = false;
            conn_reopen(i);
            return false;
        }
        memmove(c->rbuf, c->rbuf + len, c->rlen - (size_t)len);
        c->rlen -= (size_t)len;
        G.completed++;
        if (status >= 100 && status < 600)
            G.status[status / 100]++;
        if (status == 201)
            G.status_201++;
        record(t - c->t_start);
        *t_done = t;
        if (--c->inflight == 0) {
            c->busy = false;
            if (c->rlen) {   /* more than was asked for */
                G.errors++;
                conn_reopen(i);
            }
            return true;
        }
    }
}

static void arm_timer(uint64_t at)
{
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(at / 1000000000u);
    its.it_value.tv_nsec = (long)(at % 1000000000u);
    if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
        its.it_value.tv_nsec = 1;
    timerfd_settime(G.tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(double p)
{
    if (!G.nlat)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)G.nlat);
    if (k >= G.nlat)
        k = G.nlat - 1;
    return (double)G.lat[k] / 1000.0;   /* microseconds */
}

static int run(void)
{
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    G.ep = epoll_create1(0);
    G.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    if (G.ep < 0 || G.tfd < 0)
        die("epoll/timerfd");
    struct epoll_event tev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(G.ep, EPOLL_CTL_ADD, G.tfd, &tev);
    G.c = calloc((size_t)G.nconn, sizeof(*G.c));
    int *idle = malloc((size_t)G.nconn * sizeof(int));
    int nidle = 0;
    for (int i = 0; i < G.nconn; i++) {
        conn_open(i);
        idle[nidle++] = i;
    }

    uint64_t t0 = now_ns();
    uint64_t end = t0 + (uint64_t)(G.duration * 1e9);
    uint64_t total = G.mode == M_RATE ? (uint64_t)(G.rate * G.duration) : UINT64_MAX;
    double period = G.mode == M_RATE ? 1e9 / G.rate : 0;
    uint64_t next = 0;          /* rate: index of the next request to send */
    bool stopping = false;
    uint64_t drain_until = 0;
    struct epoll_event evs[256];

    for (;;) {
        uint64_t now = now_ns();
        /* give work to idle connections */
        if (!stopping) {
            if (G.mode == M_RATE) {
                uint64_t due = (uint64_t)((double)(now - t0) / period) + 1;
                if (due > total)
                    due = total;
                bool first = true;
                while (next < due && nidle > 0) {
                    uint64_t intended = t0 + (uint64_t)((double)next * period);
                    uint64_t lag = now - intended;
                    if (lag > G.lag_max)
                        G.lag_max = lag;
                    G.lag_sum += lag;
                    /* the first request sent in a pass that had a free
                     * connection all along: its lateness is the generator's
                     * own (a late wake-up), not the server's */
                    if (first && !G.queued_pass) {
                        if (lag > G.wake_max)
                            G.wake_max = lag;
                        G.wake_sum += lag;
                        G.wake_n++;
                    }
                    first = false;
                    int i = idle[--nidle];
                    send_on(i, intended);
                    if (!G.c[i].busy)
                        idle[nidle++] = i;   /* the write failed: counted, reconnected */
                    next++;
                }
                if (next < due)
                    G.queued++;
                /* a connection stays free until the next pass */
                G.queued_pass = next < due || nidle == 0;
                if (next >= total)
                    stopping = true;
                else if (next < due)
                    ;   /* queued: a completion will pick it up */
                else
                    arm_timer(t0 + (uint64_t)((double)next * period));
            } else if (G.mode == M_WARM) {
                while (nidle > 0 && G.next_code < G.codes.n) {
                    int i = idle[--nidle];
                    send_on(i, now);
                    if (!G.c[i].busy)
                        idle[nidle++] = i;
                }
                if (G.next_code >= G.codes.n)
                    stopping = true;
            } else {
                if (now >= end)
                    stopping = true;
                else
                    for (int k = nidle; k > 0; k--) {
                        int i = idle[--nidle];
                        send_on(i, now);
                        if (!G.c[i].busy)
                            idle[nidle++] = i;
                    }
            }
            if (stopping)
                drain_until = now + 3000000000u;   /* wait up to 3 s for what is in flight */
        }
        if (stopping && (nidle == G.nconn || now >= drain_until))
            break;

        /* open loop: by default busy-poll (timeout 0) rather than sleep
         * until the timerfd fires: on this KVM guest re-arming a timer costs
         * tens of microseconds (perf: do_timerfd_settime), which made the
         * generator itself the bottleneck. The generator then takes its core
         * whole (core 1 in the pin1 layout). --spin 0 sleeps on the timerfd. */
        bool closed_loop = G.mode == M_CREATE || G.mode == M_LOOP;
        int timeout = stopping ? 10 : closed_loop ? (int)((end - now) / 1000000u) + 1 : G.spin ? 0 : 100;
        int n = epoll_wait(G.ep, evs, 256, timeout);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int k = 0; k < n; k++) {
            uint32_t i = evs[k].data.u32;
            if (i == UINT32_MAX) {
                uint64_t x;
                while (read(G.tfd, &x, sizeof(x)) > 0)
                    ;
                continue;
            }
            bool was_busy = G.c[i].busy;
            int fd = G.c[i].fd;
            if (evs[k].events & EPOLLOUT) {
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
                epoll_ctl(G.ep, EPOLL_CTL_MOD, G.c[i].fd, &ev);
                flush_write((int)i);
            }
            if ((evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && G.c[i].fd == fd) {
                uint64_t td;
                on_readable((int)i, &td);
            }
            if (was_busy && !G.c[i].busy)
                idle[nidle++] = (int)i;
        }
    }
    uint64_t t1 = now_ns();
    double secs = (double)(t1 - t0) / 1e9;
    if (G.mode == M_RATE)
        secs = G.duration;   /* the schedule's length; the drain is not load */

    qsort(G.lat, G.nlat, sizeof(*G.lat), cmp_u64);
    uint64_t in_flight = 0;
    for (int i = 0; i < G.nconn; i++)
        in_flight += (uint64_t)G.c[i].inflight;
    printf("sent=%" PRIu64 "\ncompleted=%" PRIu64 "\nin_flight_at_stop=%" PRIu64 "\nerrors=%" PRIu64
           "\nreconnects=%" PRIu64 "\n",
           G.sent, G.completed, in_flight, G.errors, G.reconnects);
    printf("status_2xx=%" PRIu64 "\nstatus_3xx=%" PRIu64 "\nstatus_4xx=%" PRIu64 "\nstatus_5xx=%" PRIu64
           "\nstatus_201=%" PRIu64 "\n",
           G.status[2], G.status[3], G.status[4], G.status[5], G.status_201);
    printf("seconds=%.3f\nrate=%.1f\n", secs, (double)G.completed / secs);
    if (G.mode == M_CREATE)
        printf("created_per_s=%.1f\n", (double)G.status_201 / secs);
    printf("p50_us=%.1f\np90_us=%.1f\np99_us=%.1f\np999_us=%.1f\nmax_us=%.1f\n", pct(50), pct(90),
           pct(99), pct(99.9), G.nlat ? (double)G.lat[G.nlat - 1] / 1000.0 : 0.0);
    if (G.mode == M_RATE)
        printf("target_rate=%.1f\nsend_lag_avg_us=%.1f\nsend_lag_max_us=%.1f\n"
               "wake_late_avg_us=%.1f\nwake_late_max_us=%.1f\nwaits_for_connection=%" PRIu64 "\n",
               G.rate, G.sent ? (double)G.lag_sum / (double)G.sent / 1000.0 : 0.0,
               (double)G.lag_max / 1000.0,
               G.wake_n ? (double)G.wake_sum / (double)G.wake_n / 1000.0 : 0.0,
               (double)G.wake_max / 1000.0, G.queued);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: loadgen gen N SEED CODES CSV MAP\n"
            "       loadgen rate   -p PORT -r RATE -d SEC [-c CONN] --codes F [--uas F] [--seed S] [--spin 0|1]\n"
            "       loadgen warm   -p PORT [-c CONN] --codes F [--method HEAD|GET] [--depth K]\n"
            "       loadgen create -p PORT -d SEC [-c CONN] --key KEY [--seed S]\n"
            "       loadgen loop   -p PORT -d SEC [-c CONN] (--code CODE | --unknown | --codes F | --path P)\n"
            "                      [--key KEY] [--uas F] [--seed S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "gen") == 0)
        return cmd_gen(argc, argv);
    if (strcmp(argv[1], "rate") == 0)
        G.mode = M_RATE;
    else if (strcmp(argv[1], "warm") == 0)
        G.mode = M_WARM;
    else if (strcmp(argv[1], "create") == 0)
        G.mode = M_CREATE;
    else if (strcmp(argv[1], "loop") == 0)
        G.mode = M_LOOP;
    else
        usage();
    G.nconn = 64;
    G.spin = true;
    G.depth = 1;
    G.method = G.mode == M_WARM ? "HEAD" : "GET";
    const char *codes = NULL, *uas = NULL;
    rng_state = (uint64_t)now_ns();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--unknown")) {
            G.unknown = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "-p"))
            G.port = atoi(v);
        else if (!strcmp(a, "-r"))
            G.rate = atof(v);
        else if (!strcmp(a, "-d"))
            G.duration = atof(v);
        else if (!strcmp(a, "-c"))
            G.nconn = atoi(v);
        else if (!strcmp(a, "--codes"))
            codes = v;
        else if (!strcmp(a, "--uas"))
            uas = v;
        else if (!strcmp(a, "--method"))
            G.method = v;
        else if (!strcmp(a, "--key"))
            G.key = v;
        else if (!strcmp(a, "--code"))
            G.code = v;
        else if (!strcmp(a, "--path"))
            G.path = v;
        else if (!strcmp(a, "--depth"))
            G.depth = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(a, "--spin"))
            G.spin = atoi(v) != 0;
        else if (!strcmp(a, "--seed"))
            rng_state = strtoull(v, NULL, 10);
        else
            usage();
    }
    if (G.port <= 0 || G.nconn <= 0)
        usage();
    if (G.mode == M_RATE && (G.rate <= 0 || G.duration <= 0 || !codes))
        usage();
    if (G.mode == M_WARM && !codes)
        usage();
    if (G.mode == M_CREATE && (G.duration <= 0 || !G.key))
        usage();
    if (G.mode == M_LOOP && (G.duration <= 0 || (!!G.code + G.unknown + !!codes + !!G.path) != 1))
        usage();
    if (G.unknown)
        G.seq = rng() % 28400000000u;   /* about half of 62^6: room for a run's codes after it */
    if (codes)
        load_lines(codes, &G.codes);
    if (uas)
        load_lines(uas, &G.uas);
    if (G.mode == M_WARM && (size_t)G.nconn > G.codes.n)
        G.nconn = (int)G.codes.n;
    return run();
}
