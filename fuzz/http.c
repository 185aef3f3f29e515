/* http.c (fuzz) - the HTTP request path of a real server: bytes over a
 * loopback socket into server.c's parser, callbacks, limits and router,
 * split into reads, pipelined, chunked, with trailers.
 *
 * LLVMFuzzerInitialize starts `shortd serve` (serve_run, the code main.c
 * runs) on a thread, on a free loopback port, with a SQLite file in a
 * scratch directory and one event loop. Each input is one connection: the
 * first byte says how it is written (below 0x80: in one write; else in
 * writes of (byte & 63) + 1 bytes, so requests, chunk framing and CRLFs
 * straddle reads), the rest is what is written. The client then shuts its
 * side and reads until the server closes. A crash or sanitizer report in
 * the server aborts this process; what comes back must be HTTP/1.1
 * answers: anything else (or no close within the timeouts) aborts too. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app/config.h"
#include "app/serve.h"
#include "base/banned.h"

#define READ_WAIT_MS 10000 /* header, body and send timeouts are 1 s */

static struct sockaddr_in addr;

static void *serve_thread(void *arg)
{
    serve_run(arg, NULL); /* no reload: SIGHUP is not among the inputs */
    return NULL;
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        abort();
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void set(struct config *cfg, const char *name, const char *value)
{
    char err[256];
    if (config_set(cfg, name, value, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz/http: %s\n", err);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char dir[] = "/tmp/shortd-fuzz-http-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    /* A free port: bound, read, released (the server's own check then
     * finds it free). */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, len) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
        abort();
    close(fd);

    static struct config cfg;
    config_init(&cfg);
    char listen[64], db[sizeof(dir) + 16];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", ntohs(addr.sin_port));
    snprintf(db, sizeof(db), "%s/fuzz.db", dir);
    set(&cfg, "listen", listen);
    set(&cfg, "db", db);
    set(&cfg, "threads", "1");
    set(&cfg, "log-level", "off");
    set(&cfg, "header-timeout", "1");
    set(&cfg, "body-timeout", "1");
    set(&cfg, "idle-timeout", "1");
    set(&cfg, "send-timeout", "1");
    set(&cfg, "rate-auth", "off");
    pthread_t t;
    if (pthread_create(&t, NULL, serve_thread, &cfg) != 0)
        abort();
    pthread_detach(t);
    for (int i = 0; i < 3000; i++) { /* up to 30 s for the first start */
        int c = connect_server();
        if (c >= 0) {
            close(c);
            return 0;
        }
        usleep(10000);
    }
    fprintf(stderr, "fuzz/http: the server did not start on %s\n", listen);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = data[0] < 0x80 ? size : (size_t)(data[0] & 63) + 1;
    data++;
    size--;
    int fd = connect_server();
    if (fd < 0)
        abort(); /* the server is gone */
    for (size_t off = 0; off < size;) {
        size_t n = size - off < piece ? size - off : piece;
        ssize_t w = send(fd, data + off, n, MSG_NOSIGNAL);
        if (w <= 0)
            break; /* the server answered and closed: the rest is moot */
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);

    char got[16];
    size_t have = 0;
    char buf[65536];
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, READ_WAIT_MS) != 1) {
            fprintf(stderr, "fuzz/http: the server neither answered nor closed\n");
            abort();
        }
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r < 0 && errno == ECONNRESET)
            break;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r && have < sizeof(got); i++)
            got[have++] = buf[i];
    }
    close(fd);
    /* Whatever came back starts as an HTTP/1.1 answer. */
    if (have && memcmp(got, "HTTP/1.1 ", have < 9 ? have : 9) != 0) {
        fprintf(stderr, "fuzz/http: not an HTTP answer: %.*s\n", (int)have, got);
        abort();
    }
    return 0;
}
