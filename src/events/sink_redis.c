/* sink_redis.c - the redis-stream sink: each event XADDed to a stream
 * (option "stream", default "shortd:events") with its ID as the field "id"
 * and its text as "event", trimmed with MAXLEN ~ (option "maxlen", default
 * 1,000,000; 0: never trimmed), for consumers that read with groups.
 *
 * Once per ID: XADD makes a new entry each time, so each event goes
 * through a small Lua script that first sets "<stream>:seen:<id>" (NX, kept
 * seven days) and adds the entry only when that key was new; a retry of a
 * batch that was half added adds only the rest. The calls are blocking,
 * bounded by the delivery's timeout (connect, then each reply). */
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "events/sink.h"
#include "redirect/rcache.h"
#include "store/store_events.h"
#include "base/banned.h"

#define SEEN_TTL "604800"

static const char script[] =
    "if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[3]) then "
    "if ARGV[4] == '0' then return redis.call('XADD', KEYS[1], '*', 'id', ARGV[1], 'event', "
    "ARGV[2]) end "
    "return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'id', ARGV[1], 'event', "
    "ARGV[2]) end return 0";

struct stream_opts {
    char stream[128];
    char maxlen[24];
};

static int options(const struct sink *s, struct stream_opts *o, char *why, size_t n)
{
    snprintf(o->stream, sizeof(o->stream), "shortd:events");
    snprintf(o->maxlen, sizeof(o->maxlen), "1000000");
    json_t *v = json_loads(s->options ? s->options : "{}", 0, NULL);
    if (!json_is_object(v)) {
        json_decref(v);
        snprintf(why, n, "options are not a JSON object");
        return ERR_INVALID;
    }
    json_t *stream = json_object_get(v, "stream"), *maxlen = json_object_get(v, "maxlen");
    int rc = ERR_OK;
    if (stream && (!json_is_string(stream) || !json_string_length(stream) ||
                   json_string_length(stream) >= sizeof(o->stream))) {
        snprintf(why, n, "option 'stream' must be a name of 1 to 127 bytes");
        rc = ERR_INVALID;
    } else if (stream) {
        snprintf(o->stream, sizeof(o->stream), "%s", json_string_value(stream));
    }
    if (rc == ERR_OK && maxlen && (!json_is_integer(maxlen) || json_integer_value(maxlen) < 0)) {
        snprintf(why, n, "option 'maxlen' must be a whole number, 0 or more");
        rc = ERR_INVALID;
    } else if (rc == ERR_OK && maxlen) {
        snprintf(o->maxlen, sizeof(o->maxlen), "%lld", (long long)json_integer_value(maxlen));
    }
    json_decref(v);
    return rc;
}

static int redis_check(const struct sink *s, char *why, size_t n)
{
    struct rcache_addr a;
    struct stream_opts o;
    if (rcache_url_parse(s->endpoint, &a) != ERR_OK) {
        snprintf(why, n, "endpoint '%s' is not a redis:// URL", s->endpoint);
        return ERR_INVALID;
    }
    return options(s, &o, why, n);
}

static void redis_start(struct delivery *d, CURLM *m)
{
    (void)m;
    struct rcache_addr a;
    struct stream_opts o;
    char why[200];
    if (rcache_url_parse(d->sink->endpoint, &a) != ERR_OK ||
        options(d->sink, &o, why, sizeof(why)) != ERR_OK) {
        delivery_fail(d, "the sink's endpoint or options are invalid");
        return;
    }
    redisContext *c = rcache_connect(&a, (int)d->timeout_ms, why, sizeof(why));
    if (!c) {
        delivery_fail(d, "redis: %s", why);
        return;
    }
    /* Pipelined: every script call sent, then every reply read. */
    struct buf seen = BUF_INIT;
    for (size_t i = 0; i < d->n; i++) {
        buf_reset(&seen);
        buf_printf(&seen, "%s:seen:%s", o.stream, d->ids[i]);
        const char *argv[] = {
            "EVAL",   script,  "2", o.stream, buf_cstr(&seen), d->ids[i], d->body + d->off[i],
            SEEN_TTL, o.maxlen};
        size_t lens[] = {4,
                         strlen(script),
                         1,
                         strlen(o.stream),
                         seen.len,
                         strlen(d->ids[i]),
                         d->len[i],
                         strlen(SEEN_TTL),
                         strlen(o.maxlen)};
        redisAppendCommandArgv(c, 9, argv, lens);
    }
    buf_release(&seen);
    d->state = DELIVERY_OK;
    for (size_t i = 0; i < d->n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            rcache_describe(c, why, sizeof(why));
            delivery_fail(d, "redis: %s", why);
            break;
        }
        if (r->type == REDIS_REPLY_ERROR)
            delivery_fail(d, "redis: %.200s", r->str);
        freeReplyObject(r);
        if (d->state != DELIVERY_OK)
            break;
    }
    redisFree(c);
}

static void redis_ended(struct delivery *d, CURLM *m, CURLcode rc, long status)
{
    (void)d, (void)m, (void)rc, (void)status; /* no HTTP requests */
}

const struct sink_kind sink_redis = {
    .name = "redis-stream",
    .check = redis_check,
    .start = redis_start,
    .ended = redis_ended,
};
