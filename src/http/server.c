/* server.c - the HTTP layer: libuv event loops and llhttp parsing.
 *
 * DESIGN
 * Each worker thread runs its own uv loop with its own SO_REUSEPORT listening
 * socket, so the kernel spreads connections and no lock is shared between
 * workers. A connection's bytes go through llhttp; request line and headers
 * are copied into one per-connection buffer (bounded by max-header-bytes),
 * the body into another (bounded by max-body-bytes). Every answer produced
 * while handling one read is appended to the connection's output and sent
 * with one write, so pipelined requests cost one syscall; once OUT_HIGH_WATER
 * of answers waits unsent, parsing and reading stop until the client has
 * taken them below it, so a client that does not read holds a bounded
 * amount. Trailer fields are checked and counted but never stored (the
 * request's slices point into the header buffer). A handler that goes
 * asynchronous pauses the parser; the unparsed rest waits in 'pending' until
 * http_resume(). Timeouts are checked by a per-worker tick over its
 * connection list rather than a timer per connection, so the hot path never
 * touches a timer heap. An error answer is followed by a half-close and a
 * short linger that drains the client, so the answer is never lost to a
 * reset. What llhttp does not check (Host rules, obs-fold, whitespace before
 * the colon, size limits, chunk CRLFs, Transfer-Encoding and Host as nginx
 * has them) is checked here. Connections are counted per client address in
 * one table for all workers (max-connections-per-addr), and a listen
 * address another process holds is refused unless a takeover is asked for.
 * A handler may also ask to answer a moment later (http_later): every
 * request that the reads of one poll completed is then answered together,
 * after those reads, from a check handle; the redirect uses it to start the
 * cache loads of all of them before it waits for any (cache.h). */
#include "http/server.h"

#include <dirent.h>
#include <errno.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "app/app.h"
#include "redirect/cache.h"
#include "http/clientaddr.h"
#include "clicks/clicks.h"
#include "base/coop.h"
#include "base/err.h"
#include "http/http.h"
#include "base/log.h"
#include "http/metrics.h"
#include "http/wake.h"
#include "store/storeq.h"
#include "base/banned.h"

#define TICK_MS 250
#define LINGER_MS 2000
#define READ_BUF 65536
#define OUT_HIGH_WATER (1u << 20) /* stop reading while this much is unsent */
#define LATER_MAX 128             /* requests answered together (http_later) */

enum conn_state {
    C_IDLE,    /* between requests: idle timeout */
    C_HEADERS, /* request begun: header timeout */
    C_BODY,    /* headers done: body timeout */
    C_BUSY,    /* a handler is working on it */
    C_LINGER,  /* answer sent, write side shut, draining until EOF */
};

struct hdr_off {
    uint32_t name_off, name_len, value_off, value_len;
};

struct conn {
    uv_tcp_t tcp;
    llhttp_t parser;
    struct worker *w;
    struct conn *prev, *next; /* the worker's list */
    enum conn_state state;
    uint64_t deadline;  /* uv_now() ms */
    uint64_t wdeadline; /* the write in flight must finish by then */
    struct buf hdr;     /* target, header names and values */
    uint32_t url_len;
    struct hdr_off hoff[HTTP_MAX_HEADERS];
    int nh;
    bool in_field, in_value;
    bool trailers;            /* headers complete: fields now are trailers */
    uint32_t trailer_bytes;   /* trailer fields seen, counted, never kept */
    int host_count, host_idx; /* Host headers, the last one's index */
    int auth_count;           /* Authorization headers */
    int te_count, te_idx;     /* Transfer-Encoding headers, the last one's index */
    uint32_t field_len;       /* of the field name being read */
    bool value_tab;           /* the value being read follows a tab */
    bool te_tab;              /* ... and it is Transfer-Encoding's */
    uint64_t chunk_left;      /* bytes of the chunk being read */
    int crlf_need;            /* bytes of the CRLF after chunk data still unseen */
    const char *chunk_end;    /* end of the read being parsed */
    char prev_tail[2];        /* last two bytes of the previous read */
    const char *chunk;        /* the read being parsed */
    int err_status;           /* set by a callback that failed the request */
    const char *err_message;
    struct buf body;
    struct buf out;     /* answers not yet handed to a write */
    struct buf wbuf;    /* answers being written */
    struct buf pending; /* unparsed input while paused */
    bool writing, paused, closing, close_after, reading, shut, streaming;
    bool later;                /* paused for http_later: still reading */
    bool pumping;              /* a stream's next piece is made on a store thread */
    int stream_status;         /* a stream begun off the loop (HTTP_STREAM) */
    bool blocked;              /* paused: OUT_HIGH_WATER of answers unsent */
    struct http_stream stream; /* while streaming */
    uv_write_t wr;
    uv_shutdown_t sd;
    struct request req;
    struct sockaddr_storage peer; /* read once at accept; never logged */
    uint8_t addr_key[16];         /* its per-address count's key... */
    bool addr_counted;            /* ... when counted */
};

struct worker {
    struct server *srv;
    const struct server_dispatch *dispatch;
    int index;
    pthread_t thread;
    uv_loop_t loop;
    uv_tcp_t listener;
    struct wake wake;   /* tasks and commands from other threads */
    uv_timer_t tick;    /* timeouts and the Date header */
    uv_timer_t handoff; /* clicks to the journal */
    uv_check_t check;   /* after each poll: the requests of http_later */
    struct request *later[LATER_MAX];
    http_later_fn later_fn[LATER_MAX];
    int nlater;
    pthread_mutex_t mu; /* guards tasks */
    struct task *tasks, *tasks_tail;
    atomic_int cmd; /* 1: stop accepting, 2: stop */
    bool listening;
    struct conn *conns;
    char date[64]; /* "Date: ...\r\n" */
    size_t date_len;
    struct metrics_local *m;
    bool inproc_done; /* server_inproc_run: the answer came */
    int inproc_status;
    struct http_stream inproc_stream; /* begun on a store thread (HTTP_STREAM) */
    int inproc_stream_status;
    char rbuf[READ_BUF];
};

/* Open connections per client address (an IPv6 client by its /64), for
 * max-connections-per-addr: open addressing with linear probing and
 * backward-shift deletion, at least twice as many slots as connections
 * can be open, so a probe is short; slots by a keyed hash, so a client
 * cannot choose where its addresses land. Taken once per accept and close. */
struct addr_slot {
    uint8_t key[16];
    uint32_t n; /* 0: free */
};

struct addr_table {
    pthread_mutex_t mu;
    struct addr_slot *slots;
    size_t mask;
    uint8_t hash_key[crypto_shorthash_KEYBYTES];
};

struct server {
    struct app *app;
    const struct server_dispatch *dispatch;
    int nworkers;
    struct worker *workers;
    atomic_int nconns;
    llhttp_settings_t settings;
    struct addr_table addrs;
};

static _Thread_local struct worker *current_worker;
static struct worker *inproc_worker; /* server_inproc_new's, for every thread */

static void conn_close(struct conn *c);
static void read_start(struct conn *c);
static void stream_end(struct conn *c, bool ok);
static void stream_pump(struct conn *c);
static void conn_flush(struct conn *c);
static void conn_feed(struct conn *c, const char *data, size_t n);
static void conn_fail(struct conn *c, int status, const char *message);
static void conn_send(struct conn *c);
static void read_stop(struct conn *c);
static void continue_after(struct conn *c);
static bool host_valid(struct slice h);
static int split_target(struct request *r);
static const char *headers_accepted(struct conn *c);
static int inproc_stream(struct request *r, int status, const struct http_stream *s);

/* ---- small helpers ---- */

static uint64_t loop_now(struct conn *c) { return uv_now(&c->w->loop); }

/* Answers queued but not taken by the client: past the mark, no request is
 * parsed (so none is answered) until a write drains it. */
static bool out_full(const struct conn *c) { return c->out.len + c->wbuf.len > OUT_HIGH_WATER; }

/* After an answer: when too much is queued, writes what the socket takes
 * and, if that is not enough, stops the parser and reading until on_write
 * has drained it below the mark. True when stopped. */
static bool out_block(struct conn *c)
{
    if (!out_full(c))
        return false;
    conn_send(c);
    if (!out_full(c) && !c->closing)
        return false;
    c->blocked = true;
    c->paused = true;
    read_stop(c);
    return true;
}

static void set_state(struct conn *c, enum conn_state st, int64_t seconds)
{
    c->state = st;
    c->deadline = loop_now(c) + (uint64_t)seconds * 1000;
}

static void update_date(struct worker *w)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    w->date_len = strftime(w->date, sizeof(w->date), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
}

/* ---- llhttp callbacks ---- */

static struct conn *conn_of(llhttp_t *p) { return p->data; }

static int fail_cb(struct conn *c, int status, const char *message)
{
    c->err_status = status;
    c->err_message = message;
    return -1;
}

static int on_message_begin(llhttp_t *p)
{
    struct conn *c = conn_of(p);
    const struct config *cfg = &c->w->srv->app->cfg;
    buf_reset(&c->hdr);
    buf_reset(&c->body);
    c->url_len = 0;
    c->nh = 0;
    c->in_field = c->in_value = false;
    c->trailers = false;
    c->trailer_bytes = 0;
    c->host_count = c->auth_count = c->te_count = 0;
    c->te_tab = false;
    c->chunk_left = 0;
    c->crlf_need = 0;
    set_state(c, C_HEADERS, cfg->header_timeout);
    return 0;
}

static int check_header_size(struct conn *c)
{
    if (c->hdr.len > (size_t)c->w->srv->app->cfg.max_header_bytes)
        return fail_cb(c, 431, "request header fields too large");
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = conn_of(p);
    if (c->url_len + n > (size_t)c->w->srv->app->cfg.max_target_bytes)
        return fail_cb(c, 414, "request target too long");
    /* llhttp lets a tab or form feed through; nginx and RFC 9112 do not. */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)at[i] < 0x21 || at[i] == 0x7f)
            return fail_cb(c, 400, "control character in the request target");
    buf_add(&c->hdr, at, n);
    c->url_len += (uint32_t)n;
    return check_header_size(c);
}

/* True when 'at' directly follows a CRLF: a continuation line (obs-fold). */
static bool after_crlf(struct conn *c, const char *at)
{
    size_t back = (size_t)(at - c->chunk);
    char b1 = back >= 1 ? at[-1] : c->prev_tail[1];
    char b2 = back >= 2 ? at[-2] : back == 1 ? c->prev_tail[1] : c->prev_tail[0];
    return b1 == '\n' && b2 == '\r';
}

/* Trailer fields (after a chunked body) are checked like headers and counted
 * against max-header-bytes, but never stored: the request's header slices
 * point into c->hdr, which must not grow once they are taken. */
static int on_trailer_bytes(struct conn *c, size_t n)
{
    c->trailer_bytes += (uint32_t)n;
    if (c->hdr.len + c->trailer_bytes > (size_t)c->w->srv->app->cfg.max_header_bytes)
        return fail_cb(c, 431, "request header fields too large");
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = conn_of(p);
    if (!c->in_field)
        c->field_len = 0;
    c->field_len += (uint32_t)n;
    if (c->trailers) {
        if (!c->in_field && !after_crlf(c, at))
            return fail_cb(c, 400, "bare LF line ending");
        c->in_field = true;
        if (memchr(at, ' ', n) || memchr(at, '\t', n))
            return fail_cb(c, 400, "whitespace in a header field name");
        return on_trailer_bytes(c, n);
    }
    if (!c->in_field) {
        if (c->nh == HTTP_MAX_HEADERS)
            return fail_cb(c, 431, "too many header fields");
        c->in_field = true;
        /* llhttp tolerates a bare LF after the request line; RFC 9112 wants CRLF. */
        if (!after_crlf(c, at))
            return fail_cb(c, 400, "bare LF line ending");
        c->hoff[c->nh].name_off = (uint32_t)c->hdr.len;
        c->hoff[c->nh].name_len = 0;
    }
    /* RFC 9112 5.1: no whitespace between the field name and the colon. */
    if (memchr(at, ' ', n) || memchr(at, '\t', n))
        return fail_cb(c, 400, "whitespace in a header field name");
    buf_add(&c->hdr, at, n);
    c->hoff[c->nh].name_len += (uint32_t)n;
    return check_header_size(c);
}

static int on_header_field_complete(llhttp_t *p)
{
    struct conn *c = conn_of(p);
    if (!c->in_field || !c->field_len) /* a line that starts with the colon */
        return fail_cb(c, 400, "empty header field name");
    c->in_field = false;
    if (c->trailers)
        return 0;
    c->hoff[c->nh].value_off = (uint32_t)c->hdr.len;
    c->hoff[c->nh].value_len = 0;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = conn_of(p);
    if (c->in_value && n && (at[0] == ' ' || at[0] == '\t') && after_crlf(c, at))
        return fail_cb(c, 400, "obsolete line folding in a header");
    if (!c->in_value && n) {
        /* llhttp skips a tab before a value as whitespace; nginx does not (for
         * Transfer-Encoding it then answers 501). */
        char before = at > c->chunk ? at[-1] : c->prev_tail[1];
        c->value_tab = before == '\t';
    }
    c->in_value = true;
    if (c->trailers)
        return on_trailer_bytes(c, n);
    buf_add(&c->hdr, at, n);
    c->hoff[c->nh].value_len += (uint32_t)n;
    return check_header_size(c);
}

static int on_header_value_complete(llhttp_t *p)
{
    struct conn *c = conn_of(p);
    c->in_value = false;
    if (c->trailers)
        return 0;
    struct hdr_off *h = &c->hoff[c->nh];
    const char *name = c->hdr.p + h->name_off;
    /* The names that may appear once, told apart by length first. */
    if (h->name_len == 4 && strncasecmp(name, "host", 4) == 0) {
        c->host_count++;
        c->host_idx = c->nh;
    } else if (h->name_len == 13 && strncasecmp(name, "authorization", 13) == 0) {
        c->auth_count++;
    } else if (h->name_len == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) {
        c->te_count++;
        c->te_idx = c->nh;
        c->te_tab = c->value_tab && h->value_len;
    }
    c->value_tab = false;
    c->nh++;
    return 0;
}

static struct slice off_slice(struct conn *c, uint32_t off, uint32_t len)
{
    return (struct slice){c->hdr.p ? c->hdr.p + off : "", len};
}

static int on_headers_complete(llhttp_t *p)
{
    struct conn *c = conn_of(p);
    const struct config *cfg = &c->w->srv->app->cfg;
    if (p->http_major != 1) /* llhttp parses "HTTP/2.0"; nginx answers 505 */
        return p->http_major > 1 ? fail_cb(c, 505, "only HTTP/1.0 and HTTP/1.1 are served")
                                 : fail_cb(c, 400, "unsupported HTTP version");
    if (c->host_count > 1)
        return fail_cb(c, 400, "more than one Host header");
    if (c->host_count == 0 && p->http_minor >= 1)
        return fail_cb(c, 400, "missing Host header");
    if (c->auth_count > 1)
        return fail_cb(c, 400, "more than one Authorization header");

    struct request *r = &c->req;
    r->method = p->method;
    r->target = off_slice(c, 0, c->url_len);
    r->nheaders = c->nh;
    for (int i = 0; i < c->nh; i++) {
        r->headers[i].name = off_slice(c, c->hoff[i].name_off, c->hoff[i].name_len);
        r->headers[i].value = off_slice(c, c->hoff[i].value_off, c->hoff[i].value_len);
    }
    r->host = c->host_count ? r->headers[c->host_idx].value : (struct slice){NULL, 0};
    if (c->te_count) {
        /* As nginx: only HTTP/1.1, only one, only "chunked" (llhttp takes
         * any list that ends in chunked). */
        if (p->http_minor < 1)
            return fail_cb(c, 400, "Transfer-Encoding in an HTTP/1.0 request");
        if (c->te_count > 1)
            return fail_cb(c, 400, "more than one Transfer-Encoding header");
        struct slice te = r->headers[c->te_idx].value;
        while (te.n && te.p[te.n - 1] == ' ')
            te.n--;
        if (c->te_tab || !slice_ieq(te, "chunked"))
            return fail_cb(c, 501, "the only transfer coding served is chunked");
    }
    if (split_target(r) != 0)
        return fail_cb(c, 400, "invalid host in the request target");
    if (r->host.p && !host_valid(r->host))
        return fail_cb(c, 400, "invalid Host header");
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > (uint64_t)cfg->max_body_bytes)
        return fail_cb(c, 413, "request body too large");
    r->authed = false;
    if ((p->flags & F_CHUNKED) || ((p->flags & F_CONTENT_LENGTH) && p->content_length)) {
        /* A body is coming: a request that needs a key is refused before it is read. */
        r->json = NULL;
        r->route_id = 0;
        int status = c->w->dispatch->precheck(r);
        if (status == HTTP_WAIT) {
            /* The key is checked on a store thread: nothing more is read
             * until http_precheck_resume. */
            c->state = C_BUSY;
            c->paused = true;
            return HPE_PAUSED;
        }
        if (status)
            return fail_cb(c, status, NULL); /* NULL: the answer is in c->req */
    }
    const char *why = headers_accepted(c);
    return why ? fail_cb(c, 417, why) : 0;
}

/* The headers of a request are good: its body may come. NULL, or why not. */
static const char *headers_accepted(struct conn *c)
{
    struct request *r = &c->req;
    struct slice expect = http_header(r, "expect");
    /* RFC 9110 10.1.1: an HTTP/1.0 client's expectation is ignored. */
    if (expect.p && c->parser.http_minor >= 1) {
        if (!slice_ieq(expect, "100-continue"))
            return "only 'Expect: 100-continue' is supported";
        buf_adds(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
        conn_flush(c);
    }
    c->trailers = true;
    set_state(c, C_BODY, c->w->srv->app->cfg.body_timeout);
    return NULL;
}

/* Checks the CRLF after a chunk's data: 'at' is where it starts; what is
 * not in this read is checked at the start of the next (conn_feed). llhttp
 * 8 skips those two bytes whatever they are. */
static int check_crlf(struct conn *c, const char *at, int need)
{
    const char *want = "\r\n" + (2 - need);
    size_t have = (size_t)(c->chunk_end - at);
    size_t k = have < (size_t)need ? have : (size_t)need;
    if (memcmp(at, want, k) != 0)
        return -1;
    c->crlf_need = need - (int)k;
    return 0;
}

static int on_chunk_header(llhttp_t *p)
{
    conn_of(p)->chunk_left = p->content_length;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = conn_of(p);
    if (c->body.len + n > (size_t)c->w->srv->app->cfg.max_body_bytes)
        return fail_cb(c, 413, "request body too large");
    buf_add(&c->body, at, n);
    if (c->chunk_left) {
        c->chunk_left -= n;
        if (!c->chunk_left && check_crlf(c, at + n, 2) != 0)
            return fail_cb(c, 400, "chunk data not followed by CRLF");
    }
    return 0;
}

/* nginx's rules for a host (ngx_http_validate_host): no control character,
 * space or '/', no empty label between dots, not empty once a port and a
 * trailing dot are taken off. */
static bool host_valid(struct slice h)
{
    size_t host_len = h.n, dot = SIZE_MAX;
    bool literal = false, rest = false;
    for (size_t i = 0; i < h.n; i++) {
        unsigned char ch = (unsigned char)h.p[i];
        if (ch == '.') {
            if (dot != SIZE_MAX && dot + 1 == i)
                return false;
            dot = i;
        } else if (ch == ':') {
            if (!rest && !literal) {
                host_len = i;
                rest = true;
            }
        } else if (ch == '[') {
            literal = literal || i == 0;
        } else if (ch == ']') {
            if (literal && !rest) {
                host_len = i + 1;
                rest = true;
            }
        } else if (ch == '/' || ch <= 0x20 || ch == 0x7f) {
            return false;
        }
    }
    if (host_len && dot == host_len - 1)
        host_len--;
    return host_len > 0;
}

/* Path and query from the target. An absolute-form target (RFC 9112 3.2.2,
 * "http://host/path") gives the host too, which then replaces Host's.
 * Returns 1 for an absolute-form target with an invalid host, else 0. */
static int split_target(struct request *r)
{
    struct slice t = r->target;
    if (t.n && t.p[0] != '/') {
        size_t skip = t.n > 7 && strncasecmp(t.p, "http://", 7) == 0    ? 7
                      : t.n > 8 && strncasecmp(t.p, "https://", 8) == 0 ? 8
                                                                        : 0;
        if (skip) {
            const char *a = t.p + skip, *end = t.p + t.n, *e = a;
            while (e < end && *e != '/' && *e != '?')
                e++;
            r->host = (struct slice){a, (size_t)(e - a)};
            if (!r->host.n || !host_valid(r->host))
                return 1;
            if (e == end || *e == '?') {
                /* "http://host?q": the path is "/", the query follows */
                r->path = SLICE_LIT("/");
                r->query = e == end ? (struct slice){NULL, 0}
                                    : (struct slice){e + 1, (size_t)(end - e - 1)};
                return 0;
            }
            t = (struct slice){e, (size_t)(end - e)};
        }
    }
    const char *q = memchr(t.p, '?', t.n);
    if (q) {
        r->path = (struct slice){t.p, (size_t)(q - t.p)};
        r->query = (struct slice){q + 1, t.n - r->path.n - 1};
    } else {
        r->path = t;
        r->query = (struct slice){q, 0};
    }
    return 0;
}

/* Serialises the answer of c->req into c->out and resets it for the next. */
/* The status line and headers of c->req's answer; a negative length means
 * a chunked (streamed) body. */
static void write_head(struct conn *c, int status, int64_t length)
{
    struct request *r = &c->req;
    bool keep = !c->close_after && llhttp_should_keep_alive(&c->parser);
    if (!keep)
        c->close_after = true;
    r->status = status;
    struct buf *o = &c->out;
    buf_adds(o, "HTTP/1.1 ");
    buf_add_u64(o, (uint64_t)status);
    buf_addc(o, ' ');
    buf_adds(o, http_reason(status));
    buf_adds(o, "\r\n");
    buf_add(o, c->w->date, c->w->date_len);
    if (r->content_type) {
        buf_adds(o, "Content-Type: ");
        buf_adds(o, r->content_type);
        buf_adds(o, "\r\n");
    }
    if (status == 204 || status == 304 || status < 200) {
        /* RFC 9110 8.6: no Content-Length on these */
    } else if (length >= 0) {
        buf_adds(o, "Content-Length: ");
        buf_add_u64(o, (uint64_t)length);
        buf_adds(o, "\r\n");
    } else {
        buf_adds(o, "Transfer-Encoding: chunked\r\n");
    }
    buf_add(o, r->resp_headers.p, r->resp_headers.len);
    if (!keep)
        buf_adds(o, "Connection: close\r\n");
    buf_adds(o, "\r\n");
}

/* The answer is complete: count it and make the request ready for the next. */
static void end_answer(struct conn *c)
{
    struct request *r = &c->req;
    metrics_observe(c->w->m, r->route_id, r->status, uv_hrtime() - r->start_ns);
    if (r->json) {
        json_decref(r->json);
        r->json = NULL;
    }
    r->content_type = NULL;
    r->route = NULL;
    buf_reset(&r->resp_headers);
    buf_reset(&r->resp_body);
    set_state(c, C_IDLE, c->w->srv->app->cfg.idle_timeout);
}

/* Serialises the answer of c->req into c->out and resets it for the next. */
static void finish_answer(struct conn *c, int status)
{
    struct request *r = &c->req;
    write_head(c, status, (int64_t)r->resp_body.len);
    if (r->method != HTTP_HEAD)
        buf_add(&c->out, r->resp_body.p, r->resp_body.len);
    end_answer(c);
}

static int on_message_complete(llhttp_t *p)
{
    struct conn *c = conn_of(p);
    struct request *r = &c->req;
    r->body = (struct slice){c->body.p ? c->body.p : "", c->body.len};
    r->start_ns = uv_hrtime();
    r->route_id = 0;
    c->state = C_BUSY;
    int status = c->w->dispatch->route(r);
    if (status == HTTP_ASYNC || status == HTTP_LATER) {
        c->paused = true;
        c->later = status == HTTP_LATER;
        return HPE_PAUSED;
    }
    if (status != HTTP_ASYNC_DONE)
        finish_answer(c, status);
    if (c->close_after)
        return HPE_PAUSED; /* parse nothing after a closing answer */
    if (out_block(c))
        return HPE_PAUSED; /* the rest waits in 'pending' */
    return 0;
}

/* ---- connections per address ---- */

static void addr_table_init(struct addr_table *t, int64_t max_connections)
{
    size_t n = 16;
    while (n < (size_t)max_connections * 2 + 2)
        n *= 2;
    t->slots = calloc(n, sizeof(*t->slots));
    if (!t->slots)
        abort();
    t->mask = n - 1;
    randombytes_buf(t->hash_key, sizeof(t->hash_key));
    pthread_mutex_init(&t->mu, NULL);
}

static void addr_table_release(struct addr_table *t)
{
    if (!t->slots)
        return;
    free(t->slots);
    pthread_mutex_destroy(&t->mu);
}

static size_t addr_home(const struct addr_table *t, const uint8_t key[16])
{
    uint64_t h;
    crypto_shorthash((unsigned char *)&h, key, 16, t->hash_key);
    return (size_t)h & t->mask;
}

/* The slot of 'key', or the free slot where it would go. Lock held. */
static size_t addr_find(const struct addr_table *t, const uint8_t key[16])
{
    size_t i = addr_home(t, key);
    while (t->slots[i].n && memcmp(t->slots[i].key, key, 16) != 0)
        i = (i + 1) & t->mask;
    return i;
}

/* Counts one more connection of 'key' unless it has 'cap' already. */
static bool addr_take(struct addr_table *t, const uint8_t key[16], int64_t cap)
{
    pthread_mutex_lock(&t->mu);
    size_t i = addr_find(t, key);
    bool ok = t->slots[i].n < (uint64_t)cap;
    if (ok) {
        memcpy(t->slots[i].key, key, 16);
        t->slots[i].n++;
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

static void addr_give(struct addr_table *t, const uint8_t key[16])
{
    pthread_mutex_lock(&t->mu);
    size_t i = addr_find(t, key);
    if (t->slots[i].n && --t->slots[i].n == 0) {
        /* Backward shift: move up every later entry of the run that may
         * sit in the freed slot, so no probe stops short of its key. */
        size_t j = i;
        for (;;) {
            j = (j + 1) & t->mask;
            if (!t->slots[j].n)
                break;
            size_t home = addr_home(t, t->slots[j].key);
            /* j's entry stays unless its home lies cyclically in (i, j]. */
            bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
            if (stays)
                continue;
            t->slots[i] = t->slots[j];
            t->slots[j].n = 0;
            i = j;
        }
    }
    pthread_mutex_unlock(&t->mu);
}

/* The key of a client: an IPv4 address, or an IPv6 address's /64 (one
 * host usually holds a whole /64). */
static void addr_key_of(const struct client_ip *ip, uint8_t key[16])
{
    memset(key, 0, 16);
    if (ip->family == AF_INET) {
        memcpy(key, ip->bytes, 4);
        key[15] = 4;
    } else {
        memcpy(key, ip->bytes, 8);
        key[15] = 6;
    }
}

/* ---- connections ---- */

static void on_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct worker *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    atomic_fetch_sub(&w->srv->nconns, 1);
    if (c->addr_counted)
        addr_give(&w->srv->addrs, c->addr_key);
    if (c->req.json)
        json_decref(c->req.json);
    buf_release(&c->hdr);
    buf_release(&c->body);
    buf_release(&c->out);
    buf_release(&c->wbuf);
    buf_release(&c->pending);
    buf_release(&c->req.resp_headers);
    buf_release(&c->req.resp_body);
    free(c);
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->pumping)
        return; /* ended when the piece comes back (pump_done) */
    if (c->streaming) {
        /* Ended here, or by on_write once the write in flight is cancelled. */
        if (!c->writing)
            stream_end(c, false);
        else
            uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    if (c->state == C_BUSY)
        return; /* the handler's http_resume closes it */
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status;
}

/* The answer is out: half-close and drain the peer until EOF or LINGER_MS. */
static void conn_linger(struct conn *c)
{
    c->shut = true;
    c->state = C_LINGER;
    read_start(c);
    c->deadline = loop_now(c) + LINGER_MS;
    if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)suggested;
    struct conn *c = h->data;
    b->base = c->w->rbuf;
    b->len = sizeof(c->w->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);

static void read_start(struct conn *c)
{
    if (!c->reading && !c->closing) {
        c->reading = true;
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
}

static void read_stop(struct conn *c)
{
    if (c->reading) {
        c->reading = false;
        uv_read_stop((uv_stream_t *)&c->tcp);
    }
}

static void on_write(uv_write_t *wr, int status)
{
    struct conn *c = wr->data;
    c->writing = false;
    buf_reset(&c->wbuf);
    if (status < 0)
        conn_close(c); /* a peer gone: a stream ends here */
    if (c->closing) {
        if (c->streaming)
            stream_end(c, false);
        return;
    }
    if (c->blocked && !out_full(c)) {
        c->blocked = false;
        continue_after(c); /* parses what waited; flushes what it answers */
        return;
    }
    if (c->out.len) {
        conn_flush(c);
        return;
    }
    if (c->streaming) {
        stream_pump(c);
        return;
    }
    if (c->close_after && !c->shut && !c->paused) {
        conn_linger(c);
        return;
    }
    if (!c->paused)
        read_start(c);
}

/* Hands everything in c->out to one write, unless a write is in flight. */
static void conn_flush(struct conn *c)
{
    if (c->writing || !c->out.len || c->closing)
        return;
    struct buf t = c->wbuf;
    c->wbuf = c->out;
    c->out = t;
    buf_reset(&c->out);
    uv_buf_t b = uv_buf_init(c->wbuf.p, (unsigned)c->wbuf.len);
    c->wr.data = c;
    c->writing = true;
    c->wdeadline = loop_now(c) + (uint64_t)c->w->srv->app->cfg.send_timeout * 1000;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        c->writing = false;
        conn_close(c);
    }
}

/* conn_flush for answers made while parsing (a cached redirect, an error,
 * pipelined answers): most fit the socket at once, so they are written
 * here with uv_try_write(). A write through uv_write() makes libuv 1.44
 * re-arm the socket in epoll once it completes, an epoll_ctl() per answer
 * (measured: bench/HISTORY.md, "Figures once quoted in code comments"); the
 * socket is still watched for
 * reading, which is all a connection between requests needs. What does not
 * fit, a closing connection and a stream take the uv_write() path. */
static void conn_send(struct conn *c)
{
    if (!c->writing && c->out.len && !c->closing && !c->streaming && !c->close_after) {
        uv_buf_t b = uv_buf_init(c->out.p, (unsigned)c->out.len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (n == (int)c->out.len) {
            buf_reset(&c->out);
            return;
        }
        if (n > 0) {
            memmove(c->out.p, c->out.p + n, c->out.len - (size_t)n);
            c->out.len -= (size_t)n;
            c->out.p[c->out.len] = '\0';
        } else if (n != UV_EAGAIN) {
            conn_close(c);
            return;
        }
    }
    conn_flush(c);
}

static void error_body(struct buf *b, int status, const char *message)
{
    buf_reset(b);
    buf_adds(b, "{\"error\":{\"code\":\"");
    buf_adds(b, status == 413   ? "too_large"
                : status == 408 ? "timeout"
                : status == 503 ? "unavailable"
                : status == 414 ? "target_too_long"
                : status == 431 ? "headers_too_large"
                : status == 501 ? "not_implemented"
                : status == 505 ? "version_not_supported"
                                : "bad_request");
    buf_adds(b, "\",\"message\":\"");
    buf_adds(b, message); /* a fixed string of this file, nothing to escape */
    buf_adds(b, "\",\"field\":null}}");
}

/* Sends the answer already in c->req, then closes gracefully (the rest of
 * the request is drained, not read). */
static void conn_refuse(struct conn *c, int status)
{
    struct request *r = &c->req;
    c->close_after = true;
    c->state = C_BUSY;
    r->method = HTTP_GET;
    r->start_ns = uv_hrtime();
    finish_answer(c, status);
    read_stop(c);
    conn_flush(c);
    if (!c->writing && !c->closing)
        conn_linger(c);
}

/* Answers an error the request itself caused, then closes gracefully. */
static void conn_fail(struct conn *c, int status, const char *message)
{
    struct request *r = &c->req;
    r->route_id = 0;
    buf_reset(&r->resp_headers);
    error_body(&r->resp_body, status, message);
    r->content_type = "application/json";
    conn_refuse(c, status);
}

static void conn_feed(struct conn *c, const char *data, size_t n)
{
    c->chunk = data;
    c->chunk_end = data + n;
    c->err_status = 0;
    if (c->crlf_need && n && check_crlf(c, data, c->crlf_need) != 0) {
        conn_fail(c, 400, "chunk data not followed by CRLF");
        return;
    }
    llhttp_errno_t e = llhttp_execute(&c->parser, data, n);
    /* An Upgrade we do not speak is ignored (RFC 9110 7.8): go on parsing
     * HTTP/1.1 after the answer. A CONNECT tunnel is never opened. */
    while (e == HPE_PAUSED_UPGRADE && !c->paused && !c->close_after) {
        if (c->parser.method == HTTP_CONNECT) {
            c->close_after = true;
            break;
        }
        const char *pos = llhttp_get_error_pos(&c->parser);
        llhttp_resume_after_upgrade(&c->parser);
        size_t used = pos ? (size_t)(pos - data) : n;
        e = used < n ? llhttp_execute(&c->parser, data + used, n - used) : HPE_OK;
    }
    if (n >= 2) {
        c->prev_tail[0] = data[n - 2];
        c->prev_tail[1] = data[n - 1];
    } else if (n == 1) {
        c->prev_tail[0] = c->prev_tail[1];
        c->prev_tail[1] = data[0];
    }
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
        const char *pos = llhttp_get_error_pos(&c->parser);
        size_t used = pos ? (size_t)(pos - data) : n;
        if (c->close_after) {
            read_stop(c);
        } else if (used < n) {
            buf_add(&c->pending, data + used, n - used);
        }
        if (c->paused && !c->later)
            read_stop(c); /* what comes meanwhile waits in the socket */
    } else if (e != HPE_OK) {
        int status = c->err_status ? c->err_status : 400;
        if (c->err_status && !c->err_message) {
            conn_refuse(c, status); /* the precheck's answer */
            return;
        }
        const char *msg = c->err_status ? c->err_message : llhttp_get_error_reason(&c->parser);
        /* llhttp's reasons are fixed strings without quotes or backslashes */
        conn_fail(c, status, msg ? msg : "malformed request");
        return;
    }
    conn_send(c);
    if (c->out.len + c->wbuf.len > OUT_HIGH_WATER)
        read_stop(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = s->data;
    if (nread < 0) {
        if (c->state == C_HEADERS && nread == UV_EOF && !c->closing) {
            conn_close(c);
            return;
        }
        conn_close(c);
        return;
    }
    if (nread == 0 || c->state == C_LINGER)
        return;
    if (c->paused || c->close_after) {
        buf_add(&c->pending, b->base, (size_t)nread);
        if (c->pending.len >= READ_BUF)
            read_stop(c); /* more waits in the socket */
        return;
    }
    conn_feed(c, b->base, (size_t)nread);
}

/* After a paused request's answer: parse what arrived meanwhile. */
static void continue_after(struct conn *c)
{
    c->paused = false;
    if (c->closing) {
        if (!uv_is_closing((uv_handle_t *)&c->tcp)) /* not by a shutdown meanwhile */
            uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    if (c->close_after) {
        conn_flush(c);
        if (!c->writing)
            conn_linger(c);
        return;
    }
    if (out_block(c))
        return;
    llhttp_resume(&c->parser);
    if (c->pending.len) {
        struct buf tmp = c->pending;
        buf_init(&c->pending);
        conn_feed(c, tmp.p, tmp.len);
        buf_release(&tmp);
    } else {
        conn_send(c);
    }
    if (!c->paused && !c->close_after && !c->closing && c->out.len + c->wbuf.len <= OUT_HIGH_WATER)
        read_start(c);
}

void http_resume(struct request *r, int status)
{
    struct conn *c = r->conn;
    if (!c) { /* an in-process request (server_inproc_run): nothing to send */
        struct worker *w = current_worker;
        if (status == HTTP_STREAM)
            status = inproc_stream(r, w->inproc_stream_status, &w->inproc_stream);
        w->inproc_status = status;
        w->inproc_done = true;
        return;
    }
    if (status == HTTP_STREAM) {
        status = http_stream(r, c->stream_status, r->content_type, &c->stream);
        if (status == HTTP_ASYNC_DONE)
            continue_after(c);
        return;
    }
    finish_answer(c, status);
    continue_after(c);
}

void http_precheck_resume(struct request *r, int status)
{
    struct conn *c = r->conn;
    if (c->closing) {
        continue_after(c); /* closes it */
        return;
    }
    const char *why = status ? NULL : headers_accepted(c);
    if (why) {
        conn_fail(c, 417, why);
        return;
    }
    if (status) {
        conn_refuse(c, status);
        return;
    }
    continue_after(c); /* the body, read and parsed */
}

/* Every caller runs in the poll phase (a read's parse, or http_resume from a
 * task or a work completion), so on_check, which follows it in the same turn
 * of the loop, never leaves a request waiting for the next poll. */
int http_later(struct request *r, http_later_fn fn)
{
    struct worker *w = r->conn ? r->conn->w : inproc_worker;
    if (w->nlater == LATER_MAX)
        return 0;
    w->later[w->nlater] = r;
    w->later_fn[w->nlater++] = fn;
    return HTTP_LATER;
}

/* After the poll's reads: the requests that asked to be answered later, each
 * step for all of them before the next (a request parsed from what an answer
 * let through joins the next round). */
static void on_check(uv_check_t *h)
{
    struct worker *w = h->data;
    while (w->nlater) {
        struct request *batch[LATER_MAX];
        http_later_fn fns[LATER_MAX];
        int n = w->nlater;
        memcpy(batch, w->later, sizeof(batch[0]) * (size_t)n);
        memcpy(fns, w->later_fn, sizeof(fns[0]) * (size_t)n);
        w->nlater = 0;
        for (int i = 0; i < n; i++)
            fns[i](batch[i], 0);
        for (int i = 0; i < n; i++) {
            struct conn *c = batch[i]->conn;
            int status = fns[i](batch[i], 1);
            c->later = false;
            if (status == HTTP_ASYNC) {
                read_stop(c); /* as for any handler that waits */
                continue;
            }
            if (status != HTTP_ASYNC_DONE)
                finish_answer(c, status);
            continue_after(c);
        }
    }
}

/* ---- streamed answers ---- */

static void stream_end(struct conn *c, bool ok)
{
    struct http_stream st = c->stream;
    c->streaming = false;
    memset(&c->stream, 0, sizeof(c->stream));
    if (st.done)
        st.done(st.state);
    if (!ok) {
        c->close_after = true;
        c->req.status = 500;
    } else {
        buf_adds(&c->out, "0\r\n\r\n");
    }
    end_answer(c);
    continue_after(c);
}

static void stream_piece(struct conn *c, struct buf piece, int more);

/* A piece made on a store thread (http_stream's 'offload'). */
struct pump_job {
    struct storeq_job job;
    struct task task;
    struct conn *c;
    struct buf piece;
    int more;
};

static void pump_done(struct task *t)
{
    struct pump_job *p = (struct pump_job *)((char *)t - offsetof(struct pump_job, task));
    struct conn *c = p->c;
    c->pumping = false;
    stream_piece(c, p->piece, p->more);
    free(p);
}

static void pump_run(struct storeq_job *j, bool cancelled)
{
    struct pump_job *p = (struct pump_job *)j;
    struct conn *c = p->c;
    p->more = cancelled ? -1 : c->stream.next(&c->req, &p->piece, c->stream.state);
    worker_post(c->w, &p->task);
}

/* Asks the producer for the next piece and queues it as one chunk. */
static void stream_pump(struct conn *c)
{
    if (c->stream.offload) {
        struct pump_job *p = calloc(1, sizeof(*p));
        if (!p)
            abort();
        p->c = c;
        p->job.run = pump_run;
        p->task.fn = pump_done;
        c->pumping = true;
        if (!storeq_submit(c->w->srv->app->storeq, &p->job)) {
            c->pumping = false;
            free(p);
            stream_end(c, false); /* the client sees a truncated body */
        }
        return;
    }
    struct buf piece = BUF_INIT;
    int more = c->stream.next(&c->req, &piece, c->stream.state);
    stream_piece(c, piece, more);
}

static void stream_piece(struct conn *c, struct buf piece, int more)
{
    if (more < 0 || c->closing) {
        buf_release(&piece);
        stream_end(c, false);
        return;
    }
    if (piece.len) {
        buf_printf(&c->out, "%zx\r\n", piece.len);
        buf_add(&c->out, piece.p, piece.len);
        buf_adds(&c->out, "\r\n");
    }
    buf_release(&piece);
    if (!more) {
        stream_end(c, true);
        return;
    }
    conn_flush(c);
    if (!c->writing)
        stream_pump(c); /* nothing to wait for (empty piece) */
}

int http_stream(struct request *r, int status, const char *content_type,
                const struct http_stream *s)
{
    struct conn *c = r->conn;
    r->content_type = content_type;
    if (!c)
        return inproc_stream(r, status, s);
    if (current_worker != c->w) {
        /* A store thread's handler: the loop begins it (http_resume). */
        c->stream = *s;
        c->stream_status = status;
        return HTTP_STREAM;
    }
    write_head(c, status, -1);
    if (r->method == HTTP_HEAD) {
        if (s->done)
            s->done(s->state);
        buf_adds(&c->out, "0\r\n\r\n");
        end_answer(c);
        return HTTP_ASYNC_DONE;
    }
    c->stream = *s;
    c->streaming = true;
    c->paused = true;
    conn_flush(c);
    if (!c->writing)
        stream_pump(c);
    return HTTP_ASYNC;
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct worker *w = listener->data;
    if (status < 0)
        return;
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->w = w;
    uv_tcp_init(&w->loop, &c->tcp);
    c->tcp.data = c;
    atomic_fetch_add(&w->srv->nconns, 1);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    if (atomic_load(&w->srv->nconns) > w->srv->app->cfg.max_connections) {
        metrics_rejected(w->m);
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    int plen = sizeof(c->peer);
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&c->peer, &plen);
    c->req.peer = &c->peer;
    struct client_ip ip;
    if (clientaddr_from_sockaddr((struct sockaddr *)&c->peer, &ip) &&
        !clientaddr_trusted(w->srv->app->clientaddr, &ip)) {
        addr_key_of(&ip, c->addr_key);
        if (!addr_take(&w->srv->addrs, c->addr_key, w->srv->app->cfg.max_connections_per_addr)) {
            metrics_rejected_addr(w->m);
            conn_close(c);
            return;
        }
        c->addr_counted = true;
    }
    llhttp_init(&c->parser, HTTP_REQUEST, &w->srv->settings);
    c->parser.data = c;
    c->req.conn = c;
    c->req.app = w->srv->app;
    set_state(c, C_IDLE, w->srv->app->cfg.idle_timeout);
    read_start(c);
}

/* ---- worker threads ---- */

static void on_tick(uv_timer_t *t)
{
    struct worker *w = t->data;
    update_date(w);
    uint64_t now = uv_now(&w->loop);
    uint64_t queued = 0;
    struct conn *c = w->conns;
    while (c) {
        struct conn *next = c->next;
        queued += c->out.len + c->wbuf.len;
        if (!c->closing && c->writing && now >= c->wdeadline) {
            /* The client took nothing for send-timeout: a handler at work
             * closes it when done, anything else (a stream too) now. */
            conn_close(c);
        } else if (!c->closing && c->state != C_BUSY && !(c->writing && c->state == C_IDLE) &&
                   now >= c->deadline) {
            if (c->state == C_HEADERS || c->state == C_BODY)
                conn_fail(c, 408, "request timeout");
            else
                conn_close(c);
        }
        c = next;
    }
    metrics_output_queued(w->m, queued);
}

static void on_handoff(uv_timer_t *t)
{
    struct worker *w = t->data;
    clicks_flush(w->srv->app->clicks, w->index);
}

static void run_tasks(struct worker *w)
{
    pthread_mutex_lock(&w->mu);
    struct task *t = w->tasks;
    w->tasks = w->tasks_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    while (t) {
        struct task *next = t->next;
        t->fn(t);
        t = next;
    }
}

/* At shutdown: every handle of the loop, connections included. */
static void close_handle(uv_handle_t *h, void *arg)
{
    struct worker *w = arg;
    if (uv_is_closing(h))
        return;
    bool own = h == (uv_handle_t *)&w->listener || h == wake_handle(&w->wake) ||
               h == (uv_handle_t *)&w->tick || h == (uv_handle_t *)&w->handoff ||
               h == (uv_handle_t *)&w->check;
    if (!own && h->type == UV_TCP) {
        ((struct conn *)h->data)->closing = true;
        uv_close(h, on_closed);
        return;
    }
    uv_close(h, NULL);
}

static void on_wake(struct wake *k)
{
    struct worker *w = k->data;
    run_tasks(w);
    int cmd = atomic_load(&w->cmd);
    if (cmd >= 1 && w->listening) {
        w->listening = false;
        uv_close((uv_handle_t *)&w->listener, NULL);
    }
    if (cmd >= 2)
        uv_walk(&w->loop, close_handle, w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    current_worker = w;
    cache_thread_register();
    update_date(w);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    run_tasks(w);
    clicks_flush(w->srv->app->clicks, w->index);
    cache_thread_unregister();
    return NULL;
}

void worker_post(struct worker *w, struct task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tasks_tail)
        w->tasks_tail->next = t;
    else
        w->tasks = t;
    w->tasks_tail = t;
    pthread_mutex_unlock(&w->mu);
    wake_send(&w->wake);
}

struct worker *worker_current(void) { return current_worker; }

struct worker *request_worker(const struct request *r)
{
    return r->conn ? r->conn->w : inproc_worker;
}

/* ---- in-process requests (server.h; the unit tests' harness) ---- */

struct worker *server_inproc_new(const struct server_dispatch *d)
{
    struct worker *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    if (uv_loop_init(&w->loop) != 0)
        abort();
    if (wake_init(&w->loop, &w->wake, on_wake) != 0)
        abort();
    w->wake.data = w;
    pthread_mutex_init(&w->mu, NULL);
    w->dispatch = d;
    current_worker = w;
    inproc_worker = w;
    return w;
}

/* As on_check, for the one request in flight: its steps, then its answer
 * (a status, or HTTP_ASYNC). */
static int inproc_later(struct worker *w)
{
    struct request *r = w->later[0];
    http_later_fn fn = w->later_fn[0];
    w->nlater = 0;
    fn(r, 0);
    return fn(r, 1);
}

/* A streamed answer, made whole into r->resp_body at once on the loop (an
 * 'offload' producer too: nothing else waits for this loop). Begun on a
 * store thread, it is left for http_resume. 0 when the producer failed: a
 * client would see its connection closed after what was made. */
static int inproc_stream(struct request *r, int status, const struct http_stream *s)
{
    struct worker *w = inproc_worker;
    if (current_worker != w) {
        w->inproc_stream = *s;
        w->inproc_stream_status = status;
        return HTTP_STREAM;
    }
    int more = 0;
    buf_reset(&r->resp_body);
    if (r->method != HTTP_HEAD) {
        do {
            more = s->next(r, &r->resp_body, s->state);
        } while (more > 0);
    }
    if (s->done)
        s->done(s->state);
    return more < 0 ? 0 : status;
}

int server_inproc_run(struct worker *w, struct request *r)
{
    r->conn = NULL;
    r->start_ns = uv_hrtime();
    r->route_id = 0;
    w->inproc_done = false;
    int status = w->dispatch->route(r);
    if (status == HTTP_LATER)
        status = inproc_later(w);
    if (status != HTTP_ASYNC)
        return status;
    while (!w->inproc_done)
        uv_run(&w->loop, UV_RUN_ONCE);
    return w->inproc_status;
}

void server_inproc_free(struct worker *w)
{
    if (!w)
        return;
    run_tasks(w);
    uv_close(wake_handle(&w->wake), NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->loop);
    wake_release(&w->wake);
    pthread_mutex_destroy(&w->mu);
    if (current_worker == w)
        current_worker = NULL;
    if (inproc_worker == w)
        inproc_worker = NULL;
    free(w);
}
int worker_index(const struct worker *w) { return w->index; }

/* ---- listeners ---- */

static int parse_listen(const char *listen, struct sockaddr_storage *ss)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host))
        return ERR_INVALID;
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return ERR_INVALID;
    size_t hn = (size_t)(colon - listen);
    memcpy(host, listen, hn);
    host[hn] = '\0';
    if (host[0] == '[' && hn > 2 && host[hn - 1] == ']') {
        host[hn - 1] = '\0';
        if (uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)ss) != 0)
            return ERR_INVALID;
        return ERR_OK;
    }
    if (strcmp(host, "localhost") == 0)
        memcpy(host, "127.0.0.1", 10);
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) != 0)
        return ERR_INVALID;
    return ERR_OK;
}

struct uv_loop_s *worker_loop(struct worker *w) { return &w->loop; }

static int open_listener(struct sockaddr_storage *ss, int *fd_out)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ERR_IO;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in);
    if (bind(fd, (struct sockaddr *)ss, len) != 0 || listen(fd, 4096) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return ERR_IO;
    }
    /* Port 0: every later listener binds the port the kernel chose. */
    getsockname(fd, (struct sockaddr *)ss, &len);
    *fd_out = fd;
    return ERR_OK;
}

/* The inode of a listening TCP socket on 'port' (any local address), from
 * /proc/net/tcp and tcp6; 0 when none is visible. */
static unsigned long listener_inode(int port)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        unsigned long inode = 0;
        while (!inode && fgets(line, sizeof(line), f)) {
            char local[64];
            unsigned st = 0;
            unsigned long ino = 0;
            /* "sl local rem st tx:rx tr:when retrnsmt uid timeout inode" */
            if (sscanf(line, " %*s %63s %*s %x %*s %*s %*s %*s %*s %lu", local, &st, &ino) != 3)
                continue;
            const char *colon = strrchr(local, ':');
            if (colon && st == 0x0A && strtol(colon + 1, NULL, 16) == port)
                inode = ino;
        }
        fclose(f);
        if (inode)
            return inode;
    }
    return 0;
}

/* Who holds the listening socket 'inode': "pid 123 (shortd)", from the
 * /proc/PID/fd links this user may read; "" when none says. */
static void socket_holder(unsigned long inode, char *out, size_t cap)
{
    out[0] = '\0';
    char want[64];
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc)
        return;
    struct dirent *pe;
    while (!out[0] && (pe = readdir(proc))) {
        char *end = NULL;
        long pid = strtol(pe->d_name, &end, 10);
        if (pid <= 0 || *end || pid == (long)getpid())
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
        DIR *fds = opendir(path);
        if (!fds)
            continue;
        struct dirent *fe;
        while (!out[0] && (fe = readdir(fds))) {
            char link[300], target[64];
            snprintf(link, sizeof(link), "/proc/%ld/fd/%s", pid, fe->d_name);
            ssize_t n = readlink(link, target, sizeof(target) - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if (strcmp(target, want) != 0)
                continue;
            char comm[64] = "?";
            snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
            FILE *f = fopen(path, "r");
            if (f) {
                if (fgets(comm, sizeof(comm), f))
                    comm[strcspn(comm, "\n")] = '\0';
                fclose(f);
            }
            snprintf(out, cap, "pid %ld (%s)", pid, comm);
        }
        closedir(fds);
    }
    closedir(proc);
}

/* SO_REUSEPORT lets any process of this user bind a port shortd listens on
 * and take half its connections; so, unless a takeover is asked for, the
 * address must be free first: a probe without SO_REUSEPORT must bind it. */
static int check_free(const struct config *cfg, struct sockaddr_storage *ss)
{
    int port = ntohs(ss->ss_family == AF_INET6 ? ((struct sockaddr_in6 *)ss)->sin6_port
                                               : ((struct sockaddr_in *)ss)->sin_port);
    if (cfg->takeover || port == 0)
        return ERR_OK;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ERR_OK; /* open_listener will say why */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* TIME_WAIT is no holder */
    socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in);
    int rc = bind(fd, (struct sockaddr *)ss, len);
    int e = errno;
    close(fd);
    if (rc == 0 || e != EADDRINUSE)
        return ERR_OK;
    char who[128] = "";
    unsigned long inode = listener_inode(port);
    if (inode)
        socket_holder(inode, who, sizeof(who));
    return log_fail(ERR_IO,
                    "cannot listen on '%s': the address is in use by %s; stop it first, "
                    "or start with --takeover to serve beside it (a restart without downtime)",
                    cfg->listen, who[0] ? who : "another process (/proc does not say which)");
}

/* The listen address, parsed, and free unless a takeover was asked for. */
static int listen_address(const struct config *cfg, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (parse_listen(cfg->listen, ss) != ERR_OK)
        return log_fail(ERR_INVALID, "invalid listen address '%s' (want ADDR:PORT)", cfg->listen);
    return check_free(cfg, ss) != ERR_OK ? ERR_IO : ERR_OK;
}

int server_probe_listen(const char *listen, char *who, size_t cap)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    who[0] = '\0';
    if (parse_listen(listen, &ss) != ERR_OK)
        return ERR_INVALID;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(who, cap, "%s", strerror(errno));
        return ERR_IO;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* TIME_WAIT is no holder */
    socklen_t len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                             : sizeof(struct sockaddr_in);
    int rc = bind(fd, (struct sockaddr *)&ss, len);
    int e = errno;
    close(fd);
    if (rc == 0)
        return ERR_OK;
    if (e != EADDRINUSE) {
        snprintf(who, cap, "%s", strerror(e));
        return ERR_IO;
    }
    int port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    unsigned long inode = listener_inode(port);
    if (inode)
        socket_holder(inode, who, cap);
    return ERR_EXISTS;
}

int server_check_listen(const struct config *cfg)
{
    struct sockaddr_storage ss;
    return listen_address(cfg, &ss);
}

int server_new(struct app *app, const struct server_dispatch *d, struct server **out)
{
    struct sockaddr_storage ss;
    int rc = listen_address(&app->cfg, &ss);
    if (rc != ERR_OK)
        return rc;
    struct server *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->app = app;
    s->dispatch = d;
    int n = (int)app->cfg.threads;
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    s->nworkers = n;
    s->workers = calloc((size_t)n, sizeof(*s->workers));
    if (!s->workers)
        abort();
    addr_table_init(&s->addrs, app->cfg.max_connections + n);
    llhttp_settings_init(&s->settings);
    s->settings.on_message_begin = on_message_begin;
    s->settings.on_url = on_url;
    s->settings.on_header_field = on_header_field;
    s->settings.on_header_field_complete = on_header_field_complete;
    s->settings.on_header_value = on_header_value;
    s->settings.on_header_value_complete = on_header_value_complete;
    s->settings.on_headers_complete = on_headers_complete;
    s->settings.on_body = on_body;
    s->settings.on_chunk_header = on_chunk_header;
    s->settings.on_message_complete = on_message_complete;

    for (int i = 0; i < n; i++) {
        struct worker *w = &s->workers[i];
        w->srv = s;
        w->dispatch = d;
        w->index = i;
        w->m = metrics_local(app->metrics, i);
        uv_loop_init(&w->loop);
        pthread_mutex_init(&w->mu, NULL);
        int wrc = wake_init(&w->loop, &w->wake, on_wake);
        if (wrc != 0) {
            log_at(LOG_ERROR, "cannot make event loop %d's wake-up: %s", i, uv_strerror(wrc));
            s->nworkers = i + 1;
            server_free(s);
            return ERR_IO;
        }
        w->wake.data = w;
        uv_timer_init(&w->loop, &w->tick);
        w->tick.data = w;
        uv_timer_init(&w->loop, &w->handoff);
        w->handoff.data = w;
        uv_check_init(&w->loop, &w->check);
        w->check.data = w;
        int fd = -1;
        if (open_listener(&ss, &fd) != ERR_OK) {
            log_at(LOG_ERROR, "cannot listen on '%s': %s", app->cfg.listen, strerror(errno));
            s->nworkers = i + 1;
            server_free(s);
            return ERR_IO;
        }
        uv_tcp_init(&w->loop, &w->listener);
        w->listener.data = w;
        uv_tcp_open(&w->listener, fd);
        if (uv_listen((uv_stream_t *)&w->listener, 4096, on_connection) != 0) {
            s->nworkers = i + 1;
            server_free(s);
            return log_fail(ERR_IO, "cannot listen on '%s'", app->cfg.listen);
        }
        w->listening = true;
    }
    char addr[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&ss, addr, sizeof(addr));
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&ss, addr, sizeof(addr));
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    log_at(LOG_INFO, "listening on '%s:%d' with %d threads", addr, port, n);
    *out = s;
    return ERR_OK;
}

int server_start(struct server *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        uint64_t handoff = (uint64_t)s->app->cfg.journal_sync_ms;
        uv_timer_start(&w->tick, on_tick, TICK_MS, TICK_MS);
        uv_timer_start(&w->handoff, on_handoff, handoff, handoff);
        uv_check_start(&w->check, on_check);
        struct coop_role loop = {"shortd-http", -1, (int)s->app->cfg.loop_slice_us};
        if (coop_start(&w->thread, loop, worker_main, w) != 0)
            return log_fail(ERR_IO, "cannot start worker thread %d", i);
    }
    return ERR_OK;
}

void server_stop_accepting(struct server *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        atomic_store(&s->workers[i].cmd, 1);
        wake_send(&s->workers[i].wake);
    }
}

void server_stop(struct server *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        atomic_store(&s->workers[i].cmd, 2);
        wake_send(&s->workers[i].wake);
    }
}

void server_join(struct server *s)
{
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i].thread, NULL);
}

void server_free(struct server *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        run_tasks(w); /* posted to a worker that never ran: still owned here */
        uv_walk(&w->loop, close_handle, w);
        uv_run(&w->loop, UV_RUN_DEFAULT);
        uv_loop_close(&w->loop);
        wake_release(&w->wake);
        pthread_mutex_destroy(&w->mu);
    }
    free(s->workers);
    addr_table_release(&s->addrs);
    free(s);
}

int server_nworkers(const struct server *s) { return s->nworkers; }
struct worker *server_worker(struct server *s, int i) { return &s->workers[i]; }
