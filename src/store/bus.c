/* bus.c - the invalidation bus: a code published on any node reaches the
 * on_code callback of every node, through Redis pub/sub, PostgreSQL
 * LISTEN/NOTIFY, or both (then each delivers it once).
 *
 * DESIGN
 * One thread per transport owns that transport's connections: it listens,
 * publishes what bus_publish queued for it, and reconnects by itself after a
 * failure (back-off from 250 ms, doubling to 5 s; reset once connected).
 * bus_publish only appends the code to each transport's queue (a mutex-
 * guarded ring) and, when the queue was empty, wakes the thread through a
 * pipe; so it never blocks, whatever the servers do. That choice over a
 * connection per calling thread: the callers are the writer thread (after a
 * commit, where waiting for a stalled Redis would hold every write of the
 * node) and creates happen hundreds of times a second, so one thread that
 * sends everything queued meanwhile in one round trip (a pipeline of PUBLISH,
 * one SELECT pg_notify(...) FROM unnest($1)) costs the callers nothing and
 * the servers one connection per node and transport. Codes stay queued
 * until a transport has taken them, so a transport that was down sends them
 * when it is back.
 * Every wait is a poll() on the connection's socket and the wake pipe with a
 * deadline, so bus_free stops a thread at once, and every round trip is
 * bounded by 'timeout_ms': Redis through socket timeouts on blocking hiredis
 * connections (a subscriber, read with redisGetReply once poll() says it is
 * readable, and a publisher, since a subscribed connection cannot PUBLISH),
 * PostgreSQL through libpq's non-blocking API (PQconnectStartParams,
 * PQsendQueryParams, PQconsumeInput, PQnotifies) on one connection that both
 * LISTENs and NOTIFYs. A connection idle for 5 s is pinged, so one that died
 * silently is noticed.
 * A listener that reconnects may have missed codes. If another transport was
 * up for the whole gap, it carried them; if not, on_code(NULL, 0) tells the
 * node to drop its whole cache. The gap of a transport that has never been
 * up starts at bus_new, so this also happens once at start, harmlessly.
 * Revoked keys are the exception: PostgreSQL's key_revoke announces them by
 * its own NOTIFY, which Redis never carries, so a PostgreSQL listener that
 * comes back always delivers BUS_KEYS, covered or not.
 * A change of the blocklist travels the same way, as the one message that
 * cannot be a code (BUS_BLOCKLIST): each node keeps the blocklist's size to
 * skip the lookups while it is empty, and must count it again. So does a
 * revoked API key (BUS_KEYS): each node empties its cache of known keys.
 * The threads are registered with cache_thread_register for their whole
 * life, so on_code may call cache_remove and cache_clear directly. */
#include "store/bus.h"

#include <ctype.h>

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "redirect/cache.h"
#include "links/codes.h"
#include "base/err.h"
#include "base/log.h"
#include "redirect/rcache.h"
#include "store/store.h"
#include "base/timeutil.h"
#include "base/banned.h"

#define REDIS_CHANNEL "shortd:invalidate"
#define PG_CHANNEL BUS_PG_CHANNEL
#define QUEUE_MAX 4096 /* codes waiting for one transport */
#define BATCH_MAX 256  /* codes sent in one round trip */
#define IDLE_PING_MS 5000
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 5000

enum kind { T_REDIS, T_PG };

struct qcode {
    uint8_t n;
    char code[BUS_MSG_MAX]; /* a code, or a longer message (a node's announcement) */
};

struct transport {
    struct bus *b;
    enum kind kind;
    const char *name; /* for messages */
    char where[512];  /* the server, without any password */
    pthread_t thread;
    bool started;
    int wake[2];        /* a pipe: bus_publish and bus_free wake the thread */
    pthread_mutex_t mu; /* guards the queue */
    struct qcode *q;    /* a ring of QUEUE_MAX */
    size_t qhead, qlen;
    bool dropping;                /* the overflow of this outage is logged */
    bool up;                      /* these three: under b->mu */
    int64_t up_since, down_since; /* mono ms */
    bool failing;                 /* the thread's own: this outage is logged */
    _Atomic uint64_t published, received, errors;
};

struct bus {
    bus_cb on_code;
    void *arg;
    int timeout_ms;
    atomic_bool stop;
    pthread_mutex_t mu; /* guards up, up_since, down_since */
    struct rcache_addr raddr;
    char *pg_url;
    struct transport t[2];
    int nt;
};

static bool stopping(const struct bus *b)
{
    return atomic_load_explicit(&b->stop, memory_order_acquire);
}

/* ---- waiting ---- */

enum { IO_READY = 1, IO_WAKE = 2 };

/* Waits until 'fd' (-1: none) is ready for 'events', the thread is woken, or
 * 'deadline' (mono ms) passes: a mask of IO_*, 0 at the deadline, -1 when
 * poll fails. An error or hang-up on 'fd' counts as ready: reading tells. */
static int wait_io(struct transport *t, int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd p[2] = {{t->wake[0], POLLIN, 0}, {fd, events, 0}};
        int n = poll(p, fd >= 0 ? 2 : 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno != EINTR)
            return -1;
        if (n <= 0)
            continue;
        return (p[0].revents ? IO_WAKE : 0) | (fd >= 0 && p[1].revents ? IO_READY : 0);
    }
}

static void drain_wake(struct transport *t)
{
    char sink[64];
    while (read(t->wake[0], sink, sizeof(sink)) > 0)
        ;
}

static void wake(struct transport *t)
{
    ssize_t w = write(t->wake[1], "", 1); /* a full pipe already wakes it */
    (void)w;
}

/* Sleeps 'ms', or less when bus_free says stop. */
static void pause_for(struct transport *t, int64_t ms)
{
    int64_t until = mono_ms() + ms;
    while (!stopping(t->b)) {
        if (wait_io(t, -1, 0, until) <= 0)
            return;
        drain_wake(t);
    }
}

/* ---- the queue ---- */

static bool queue_empty(struct transport *t)
{
    pthread_mutex_lock(&t->mu);
    bool empty = t->qlen == 0;
    pthread_mutex_unlock(&t->mu);
    return empty;
}

/* Copies up to BATCH_MAX codes from the head; they stay queued until
 * queue_done says they were sent. */
static size_t queue_peek(struct transport *t, struct qcode *out)
{
    pthread_mutex_lock(&t->mu);
    size_t k = t->qlen < BATCH_MAX ? t->qlen : BATCH_MAX;
    for (size_t i = 0; i < k; i++)
        out[i] = t->q[(t->qhead + i) % QUEUE_MAX];
    pthread_mutex_unlock(&t->mu);
    return k;
}

static void queue_done(struct transport *t, size_t k)
{
    pthread_mutex_lock(&t->mu);
    t->qhead = (t->qhead + k) % QUEUE_MAX;
    t->qlen -= k;
    if (t->qlen == 0)
        t->dropping = false;
    pthread_mutex_unlock(&t->mu);
    atomic_fetch_add_explicit(&t->published, k, memory_order_relaxed);
}

/* ---- up, down, delivery ---- */

static void transport_up(struct transport *t)
{
    struct bus *b = t->b;
    bool covered = false;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < b->nt; i++) {
        const struct transport *u = &b->t[i];
        if (u != t && u->up && u->up_since <= t->down_since)
            covered = true;
    }
    t->up = true;
    t->up_since = mono_ms();
    pthread_mutex_unlock(&b->mu);
    if (t->failing)
        log_at(LOG_INFO, "%s at '%s' is back for the invalidation bus", t->name, t->where);
    t->failing = false;
    if (!covered)
        b->on_code(NULL, 0, b->arg);
    else if (t->kind == T_PG)
        b->on_code(BUS_KEYS, BUS_KEYS_LEN, b->arg);
}

static void transport_down(struct transport *t, const char *why)
{
    struct bus *b = t->b;
    pthread_mutex_lock(&b->mu);
    if (t->up) {
        t->up = false;
        t->down_since = mono_ms();
    }
    pthread_mutex_unlock(&b->mu);
    atomic_fetch_add_explicit(&t->errors, 1, memory_order_relaxed);
    if (!t->failing)
        log_at(LOG_WARN, "%s at '%s' failed for the invalidation bus: %s (retrying by itself)",
               t->name, t->where, why);
    else
        log_at(LOG_DEBUG, "%s at '%s' still failing for the invalidation bus: %s", t->name,
               t->where, why);
    t->failing = true;
}

bool bus_is_blocklist(const char *code, size_t n)
{
    return n == BUS_BLOCKLIST_LEN && memcmp(code, BUS_BLOCKLIST, n) == 0;
}

bool bus_is_keys(const char *code, size_t n)
{
    return n == BUS_KEYS_LEN && memcmp(code, BUS_KEYS, n) == 0;
}

bool bus_is_node(const char *msg, size_t n)
{
    if (n <= BUS_NODE_LEN || n > BUS_MSG_MAX || memcmp(msg, BUS_NODE, BUS_NODE_LEN) != 0)
        return false;
    int colons = 0;
    for (size_t i = BUS_NODE_LEN; i < n; i++) {
        char c = msg[i];
        if (c == ':')
            colons++;
        else if (!isalnum((unsigned char)c) && c != '.' && c != '_' && c != '-')
            return false;
    }
    return colons == 1; /* NAME:VERSION; nothing a text[] literal must escape */
}

/* What the bus carries: codes, and the blocklist's, the keys' and the
 * nodes' messages. */
static bool is_message(const char *code, size_t n)
{
    return code_is_plausible(code, n) || bus_is_blocklist(code, n) || bus_is_keys(code, n) ||
           bus_is_node(code, n);
}

static void deliver(struct transport *t, const char *code, size_t n)
{
    if (!is_message(code, n))
        return; /* not from a shortd node */
    atomic_fetch_add_explicit(&t->received, 1, memory_order_relaxed);
    t->b->on_code(code, n, t->b->arg);
}

/* ---- Redis ---- */

/* A message of the subscription: ["message", channel, code]; the rest (the
 * subscribe confirmation, PONG) only shows the connection is alive. */
static void redis_message(struct transport *t, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return;
    const redisReply *kind = r->element[0], *chan = r->element[1], *data = r->element[2];
    if (kind->type == REDIS_REPLY_STRING && kind->len == 7 && !memcmp(kind->str, "message", 7) &&
        chan->type == REDIS_REPLY_STRING && data->type == REDIS_REPLY_STRING)
        deliver(t, data->str, data->len);
}

/* Sends what is queued as one pipeline of PUBLISH. */
static bool redis_publish(struct transport *t, redisContext *pub, char *why, size_t wn)
{
    struct qcode batch[BATCH_MAX];
    size_t k = queue_peek(t, batch);
    for (size_t i = 0; i < k; i++)
        if (redisAppendCommand(pub, "PUBLISH %s %b", REDIS_CHANNEL, batch[i].code,
                               (size_t)batch[i].n) != REDIS_OK)
            abort(); /* only out of memory */
    for (size_t i = 0; i < k; i++) {
        void *v = NULL;
        if (redisGetReply(pub, &v) != REDIS_OK) {
            rcache_describe(pub, why, wn);
            return false;
        }
        const redisReply *r = v;
        bool ok = r->type == REDIS_REPLY_INTEGER;
        if (!ok)
            snprintf(why, wn, "PUBLISH refused: %.*s", r->str ? (int)strcspn(r->str, "\r\n") : 0,
                     r->str ? r->str : "");
        freeReplyObject(v);
        if (!ok)
            return false;
    }
    queue_done(t, k);
    return true;
}

/* One connection's life: connect and subscribe, then listen and publish
 * until something fails or bus_free. '*was_up' once it was subscribed. */
static void redis_session(struct transport *t, bool *was_up, char *why, size_t wn)
{
    struct bus *b = t->b;
    redisContext *pub = NULL;
    redisContext *sub = rcache_connect(&b->raddr, b->timeout_ms, why, wn);
    if (!sub || !rcache_set_timeout(sub, b->timeout_ms))
        goto out;
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", REDIS_CHANNEL);
    if (!r) {
        rcache_describe(sub, why, wn);
        goto out;
    }
    bool ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
              r->element[0]->type == REDIS_REPLY_STRING && !strcmp(r->element[0]->str, "subscribe");
    freeReplyObject(r);
    if (!ok) {
        snprintf(why, wn, "unexpected answer to SUBSCRIBE");
        goto out;
    }
    pub = rcache_connect(&b->raddr, b->timeout_ms, why, wn);
    if (!pub || !rcache_set_timeout(pub, b->timeout_ms))
        goto out;
    *was_up = true;
    transport_up(t);

    int64_t last_rx = mono_ms(), ping_at = 0;
    while (!stopping(b)) {
        if (!queue_empty(t) && !redis_publish(t, pub, why, wn))
            goto out;
        int64_t now = mono_ms();
        if (ping_at && now - ping_at >= b->timeout_ms) {
            snprintf(why, wn, "no answer to PING");
            goto out;
        }
        if (!ping_at && now - last_rx >= IDLE_PING_MS) {
            /* A subscribed connection may PING; the answer is ["pong", ""]. */
            int done = 0;
            if (redisAppendCommand(sub, "PING") != REDIS_OK)
                abort();
            while (!done)
                if (redisBufferWrite(sub, &done) != REDIS_OK) {
                    rcache_describe(sub, why, wn);
                    goto out;
                }
            ping_at = now;
        }
        int w =
            wait_io(t, sub->fd, POLLIN, ping_at ? ping_at + b->timeout_ms : last_rx + IDLE_PING_MS);
        if (w < 0) {
            snprintf(why, wn, "poll: %s", strerror(errno));
            goto out;
        }
        if (w & IO_WAKE)
            drain_wake(t);
        if (!(w & IO_READY))
            continue;
        /* Readable: one whole reply (the rest of a partial one comes within
         * the socket timeout), then whatever else that read brought. */
        void *v = NULL;
        if (redisGetReply(sub, &v) != REDIS_OK) {
            rcache_describe(sub, why, wn);
            goto out;
        }
        while (v) {
            redis_message(t, v);
            freeReplyObject(v);
            v = NULL;
            if (redisGetReplyFromReader(sub, &v) != REDIS_OK) {
                rcache_describe(sub, why, wn);
                goto out;
            }
        }
        last_rx = mono_ms();
        ping_at = 0;
    }
out:
    if (sub)
        redisFree(sub);
    if (pub)
        redisFree(pub);
}

/* ---- PostgreSQL ---- */

static void pg_why(PGconn *pg, const char *msg, char *why, size_t wn)
{
    if (!msg)
        msg = pg ? PQerrorMessage(pg) : "";
    snprintf(why, wn, "%.*s", (int)strcspn(msg, "\n"), *msg ? msg : "connection lost");
}

/* Connects without blocking the thread past the timeout or bus_free. */
static PGconn *pg_connect(struct transport *t, char *why, size_t wn)
{
    struct bus *b = t->b;
    /* Keepalives notice a dead peer even when no ping is due. */
    static const char *const keys[] = {
        "fallback_application_name", "client_encoding",  "keepalives", "keepalives_idle",
        "keepalives_interval",       "keepalives_count", "dbname",     NULL};
    const char *values[] = {"shortd-bus", "UTF8", "1", "5", "2", "3", b->pg_url, NULL};
    PGconn *pg = PQconnectStartParams(keys, values, 1);
    if (!pg)
        abort();
    int64_t deadline = mono_ms() + b->timeout_ms;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (PQstatus(pg) != CONNECTION_BAD && st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int w = wait_io(t, PQsocket(pg), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (w <= 0 || stopping(b)) {
            snprintf(why, wn, w == 0 ? "connect timed out" : "connect interrupted");
            PQfinish(pg);
            return NULL;
        }
        if (w & IO_WAKE)
            drain_wake(t);
        if (w & IO_READY)
            st = PQconnectPoll(pg);
    }
    if (PQstatus(pg) != CONNECTION_OK || PQsetnonblocking(pg, 1) != 0) {
        pg_why(pg, NULL, why, wn);
        PQfinish(pg);
        return NULL;
    }
    return pg;
}

/* Runs one statement (with one text parameter, or none) within the timeout.
 * Notifications that arrive meanwhile stay for PQnotifies. */
static bool pg_exec(struct transport *t, PGconn *pg, const char *sql, const char *param, char *why,
                    size_t wn)
{
    int64_t deadline = mono_ms() + t->b->timeout_ms;
    if (!PQsendQueryParams(pg, sql, param ? 1 : 0, NULL, param ? &param : NULL, NULL, NULL, 0)) {
        pg_why(pg, NULL, why, wn);
        return false;
    }
    bool ok = true;
    for (;;) {
        int f = PQflush(pg);
        if (f < 0 || !PQconsumeInput(pg)) {
            pg_why(pg, NULL, why, wn);
            return false;
        }
        while (f == 0 && !PQisBusy(pg)) {
            PGresult *r = PQgetResult(pg);
            if (!r)
                return ok;
            ExecStatusType st = PQresultStatus(r);
            if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
                pg_why(pg, PQresultErrorMessage(r), why, wn);
                ok = false;
            }
            PQclear(r);
        }
        int w = wait_io(t, PQsocket(pg), f ? POLLIN | POLLOUT : POLLIN, deadline);
        if (w <= 0) {
            snprintf(why, wn, w == 0 ? "timed out" : "poll failed");
            return false;
        }
        if (w & IO_WAKE)
            drain_wake(t); /* the session loop looks at the queue after this */
    }
}

static void pg_deliver(struct transport *t, PGconn *pg)
{
    PGnotify *n;
    while ((n = PQnotifies(pg)) != NULL) {
        if (!strcmp(n->relname, PG_CHANNEL) && n->extra)
            deliver(t, n->extra, strlen(n->extra));
        PQfreemem(n);
    }
}

/* Sends what is queued as one statement: a text[] literal of plausible codes
 * (and BUS_BLOCKLIST, BUS_KEYS) needs no escaping beyond the quotes. */
static bool pg_publish(struct transport *t, PGconn *pg, char *why, size_t wn)
{
    struct qcode batch[BATCH_MAX];
    size_t k = queue_peek(t, batch);
    struct buf arr = BUF_INIT;
    buf_addc(&arr, '{');
    for (size_t i = 0; i < k; i++) {
        if (i)
            buf_addc(&arr, ',');
        buf_addc(&arr, '"');
        buf_add(&arr, batch[i].code, batch[i].n);
        buf_addc(&arr, '"');
    }
    buf_addc(&arr, '}');
    bool ok = pg_exec(t, pg,
                      "SELECT pg_notify('" PG_CHANNEL "', c) FROM unnest($1::text[]) AS u (c)",
                      buf_cstr(&arr), why, wn);
    buf_release(&arr);
    if (ok)
        queue_done(t, k);
    return ok;
}

static void pg_session(struct transport *t, bool *was_up, char *why, size_t wn)
{
    struct bus *b = t->b;
    PGconn *pg = pg_connect(t, why, wn);
    if (!pg || !pg_exec(t, pg, "LISTEN " PG_CHANNEL, NULL, why, wn))
        goto out;
    *was_up = true;
    transport_up(t);

    int64_t last_io = mono_ms();
    while (!stopping(b)) {
        pg_deliver(t, pg);
        if (!queue_empty(t)) {
            if (!pg_publish(t, pg, why, wn))
                goto out;
            last_io = mono_ms();
            continue;
        }
        if (mono_ms() - last_io >= IDLE_PING_MS) {
            if (!pg_exec(t, pg, "SELECT 1", NULL, why, wn))
                goto out;
            last_io = mono_ms();
            continue;
        }
        int w = wait_io(t, PQsocket(pg), POLLIN, last_io + IDLE_PING_MS);
        if (w < 0) {
            snprintf(why, wn, "poll: %s", strerror(errno));
            goto out;
        }
        if (w & IO_WAKE)
            drain_wake(t);
        if (w & IO_READY) {
            if (!PQconsumeInput(pg) || PQstatus(pg) != CONNECTION_OK) {
                pg_why(pg, NULL, why, wn);
                goto out;
            }
            last_io = mono_ms();
        }
    }
out:
    if (pg)
        PQfinish(pg);
}

/* ---- threads and lifecycle ---- */

static void *transport_main(void *arg)
{
    struct transport *t = arg;
    cache_thread_register(); /* on_code may touch the in-process cache */
    int64_t backoff = BACKOFF_MIN_MS;
    while (!stopping(t->b)) {
        char why[256] = "";
        bool was_up = false;
        if (t->kind == T_REDIS)
            redis_session(t, &was_up, why, sizeof(why));
        else
            pg_session(t, &was_up, why, sizeof(why));
        if (stopping(t->b))
            break;
        transport_down(t, why);
        if (was_up)
            backoff = BACKOFF_MIN_MS;
        pause_for(t, backoff);
        if (!was_up)
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    cache_thread_unregister();
    return NULL;
}

static void transport_init(struct bus *b, enum kind kind, int64_t now)
{
    struct transport *t = &b->t[b->nt++];
    t->b = b;
    t->kind = kind;
    t->name = kind == T_REDIS ? "redis" : "postgres";
    if (kind == T_REDIS) {
        bool v6 = strchr(b->raddr.host, ':') != NULL;
        snprintf(t->where, sizeof(t->where), "%s%s%s:%d", v6 ? "[" : "", b->raddr.host,
                 v6 ? "]" : "", b->raddr.port);
    } else {
        store_redact(b->pg_url, t->where, sizeof(t->where));
    }
    if (pipe2(t->wake, O_NONBLOCK | O_CLOEXEC) != 0)
        abort();
    pthread_mutex_init(&t->mu, NULL);
    t->q = calloc(QUEUE_MAX, sizeof(*t->q));
    if (!t->q)
        abort();
    t->down_since = now; /* the first gap starts here */
    atomic_init(&t->published, 0);
    atomic_init(&t->received, 0);
    atomic_init(&t->errors, 0);
}

int bus_new(const char *redis_url, const char *pg_url, int timeout_ms, bus_cb on_code, void *arg,
            struct bus **out)
{
    *out = NULL;
    if ((!redis_url && !pg_url) || !on_code || timeout_ms < 1)
        return ERR_INVALID;
    if (pg_url && !store_is_shared(pg_url))
        return log_fail(ERR_INVALID, "the invalidation bus needs a postgres:// URL");
    struct bus *b = calloc(1, sizeof(*b));
    if (!b)
        abort();
    if (redis_url && rcache_url_parse(redis_url, &b->raddr) != ERR_OK) {
        free(b);
        return ERR_INVALID;
    }
    b->on_code = on_code;
    b->arg = arg;
    b->timeout_ms = timeout_ms;
    atomic_init(&b->stop, false);
    pthread_mutex_init(&b->mu, NULL);
    if (pg_url)
        b->pg_url = xstrdup(pg_url);
    int64_t now = mono_ms();
    if (redis_url)
        transport_init(b, T_REDIS, now);
    if (pg_url)
        transport_init(b, T_PG, now);
    for (int i = 0; i < b->nt; i++) {
        if (pthread_create(&b->t[i].thread, NULL, transport_main, &b->t[i]) != 0) {
            bus_free(b);
            return log_fail(ERR_NOMEM, "cannot start the invalidation bus thread");
        }
        b->t[i].started = true;
    }
    *out = b;
    return ERR_OK;
}

void bus_free(struct bus *b)
{
    if (!b)
        return;
    atomic_store_explicit(&b->stop, true, memory_order_release);
    for (int i = 0; i < b->nt; i++)
        wake(&b->t[i]);
    for (int i = 0; i < b->nt; i++) {
        struct transport *t = &b->t[i];
        if (t->started)
            pthread_join(t->thread, NULL);
        close(t->wake[0]);
        close(t->wake[1]);
        pthread_mutex_destroy(&t->mu);
        free(t->q);
    }
    pthread_mutex_destroy(&b->mu);
    free(b->pg_url);
    explicit_bzero(b->raddr.pass, sizeof(b->raddr.pass));
    free(b);
}

void bus_publish(struct bus *b, const char *code, size_t n)
{
    if (!is_message(code, n))
        return;
    for (int i = 0; i < b->nt; i++) {
        struct transport *t = &b->t[i];
        bool first = false, dropped = false, log_drop = false;
        pthread_mutex_lock(&t->mu);
        if (t->qlen == QUEUE_MAX) {
            dropped = true;
            log_drop = !t->dropping;
            t->dropping = true;
        } else {
            struct qcode *q = &t->q[(t->qhead + t->qlen++) % QUEUE_MAX];
            q->n = (uint8_t)n;
            memcpy(q->code, code, n);
            first = t->qlen == 1;
        }
        pthread_mutex_unlock(&t->mu);
        if (first)
            wake(t);
        if (dropped)
            atomic_fetch_add_explicit(&t->errors, 1, memory_order_relaxed);
        if (log_drop)
            log_at(LOG_WARN,
                   "invalidation queue for %s at '%s' is full: dropping codes until "
                   "it drains",
                   t->name, t->where);
    }
}

void bus_counts(const struct bus *b, uint64_t *published, uint64_t *received, uint64_t *errors)
{
    *published = *received = *errors = 0;
    for (int i = 0; i < b->nt; i++) {
        *published += atomic_load_explicit(&b->t[i].published, memory_order_relaxed);
        *received += atomic_load_explicit(&b->t[i].received, memory_order_relaxed);
        *errors += atomic_load_explicit(&b->t[i].errors, memory_order_relaxed);
    }
}
