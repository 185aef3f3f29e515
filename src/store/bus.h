/* bus.h - the invalidation bus: tells every node to drop a code from its
 * in-process cache (or to count the blocklist again), through Redis pub/sub
 * (channel "shortd:invalidate") and PostgreSQL LISTEN/NOTIFY (channel
 * "shortd_invalidate"), either or both; each works without the other, so
 * the PostgreSQL path still delivers while Redis is down. Each transport has
 * one thread of its own that listens, publishes and reconnects by itself;
 * nothing here ever blocks the caller. */
#ifndef SHORTD_BUS_H
#define SHORTD_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bus;

/* Called on a listener thread for every code published by any node,
 * including this one (once per transport that delivered it), with
 * BUS_BLOCKLIST when a node changed the blocklist, BUS_KEYS when an API key
 * was revoked, and with (NULL, 0) when messages may have been missed: a
 * listener came back after a gap that no other transport covered, so drop
 * every cached code and key and count the blocklist again. A PostgreSQL
 * listener that comes back after a gap Redis covered still delivers BUS_KEYS:
 * revocations travel on PostgreSQL only. It must be quick and thread-safe;
 * the thread is registered with cache_thread_register (cache.h), so it may
 * call cache_remove and cache_clear directly. */
typedef void (*bus_cb)(const char *code, size_t n, void *arg);

/* The message that says the blocklist changed: published and delivered like
 * a code (bus_publish(b, BUS_BLOCKLIST, BUS_BLOCKLIST_LEN)), and never one,
 * since a code cannot hold '!'. */
#define BUS_BLOCKLIST "!blocklist"
#define BUS_BLOCKLIST_LEN (sizeof(BUS_BLOCKLIST) - 1)
bool bus_is_blocklist(const char *code, size_t n);
/* The message that says an API key was revoked: every node empties its key
 * cache (links_forget_keys). Published the same way, and by PostgreSQL's
 * key_revoke itself, with pg_notify on BUS_PG_CHANNEL inside the revoking
 * transaction, so it reaches every listening node at commit. */
#define BUS_KEYS "!keys"
#define BUS_KEYS_LEN (sizeof(BUS_KEYS) - 1)
#define BUS_PG_CHANNEL "shortd_invalidate"
bool bus_is_keys(const char *code, size_t n);
/* A node's announcement: "!node:NAME:VERSION", published by each node's
 * alert thread every check-every and delivered like a code, so every node
 * knows the others and their versions (nodes.h). NAME and VERSION are of
 * [0-9A-Za-z._-]; the whole at most BUS_MSG_MAX bytes. */
#define BUS_NODE "!node:"
#define BUS_NODE_LEN (sizeof(BUS_NODE) - 1)
#define BUS_MSG_MAX 96
bool bus_is_node(const char *msg, size_t n);

/* Starts one thread per configured transport (redis_url and/or pg_url may be
 * NULL, not both; ERR_INVALID for a bad redis URL). 'timeout_ms' bounds each
 * connect and each round trip of those threads. Returns at once: the threads
 * connect (and reconnect, with back-off) by themselves. */
int bus_new(const char *redis_url, const char *pg_url, int timeout_ms, bus_cb on_code, void *arg,
            struct bus **out);
/* Stops the threads and frees: they are woken at once, unless one is inside
 * a Redis connect or round trip, which ends within timeout_ms. NULL is fine. */
void bus_free(struct bus *b);

/* Any thread; never blocks: the code is queued for every transport's thread,
 * which sends what has queued in one round trip. Codes queued while a
 * transport is down are sent when it is back (up to 4096; beyond, dropped and
 * counted as errors). A code that cannot be one (other than BUS_BLOCKLIST
 * and BUS_KEYS) is ignored. */
void bus_publish(struct bus *b, const char *code, size_t n);

/* Counters for /metrics, summed over the transports: codes sent, codes
 * received (each transport counts its own delivery), and errors (failed
 * connects and round trips, lost connections, codes dropped). */
void bus_counts(const struct bus *b, uint64_t *published, uint64_t *received, uint64_t *errors);

#endif
