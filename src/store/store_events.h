/* store_events.h - the events area of the store (store.h): the sinks events
 * go to, each sink's durable position in each source, the outbox of link
 * events and the archive of batches no retry delivered (src/events/).
 * STORE_OPS_EVENTS is this area's part of struct store_ops.
 *
 * Sources: "links" is the outbox, delivered once in all across a cluster
 * (a node holds a sink's lease on it while it delivers); "journal:<id>" is
 * one node's click journal (clicks/journal.h), delivered by that node. */
#ifndef SHORTD_STORE_EVENTS_H
#define SHORTD_STORE_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct store;
struct link;
/* As store_links.h has it (C11 allows the same typedef twice). */
typedef int (*link_cb)(const struct link *l, void *arg);

/* A sink as stored. Strings are owned by the struct (sink_release frees). */
struct sink {
    int64_t id;
    char *kind;       /* "webhook", "ingest", "redis-stream" */
    char *endpoint;   /* URL (http, https, redis) */
    char *types;      /* event types wanted, comma separated; "" for all */
    int64_t owner;    /* only this owner's links; -1: any */
    char *domain;     /* only links of this short host; NULL: any */
    char *secret;     /* whsec_<base64> */
    char *secret_old; /* still valid during a rotation; NULL: none */
    char *options;    /* JSON object of the kind's own settings */
    int64_t created_at;
};
void sink_release(struct sink *s);

/* A link event in the outbox. Borrowed strings (valid during the callback). */
struct outbox_event {
    int64_t seq; /* 1, 2, ... in commit order on one node; ascending in any case */
    const char *id;
    const char *type;
    int64_t at;
    const char *code;
    int64_t owner;
    const char *domain; /* NULL: the default hosts */
    const char *body;   /* the event's JSON text */
};

/* A batch in the failed archive. Strings owned (failed_release frees);
 * when listed (failed_cb), body is NULL. */
struct failed_batch {
    int64_t id;
    int64_t sink;
    char *source;
    int64_t first_pos, last_pos; /* the source's positions it covers */
    int64_t events;
    char *body;   /* exactly as sent */
    char *sha256; /* hex, of body */
    int64_t attempts;
    char *last_error;
    int64_t first_failed_at, archived_at;
    int64_t replays, last_replay_at;
    char *last_replay_result;
    int64_t resolved_at; /* 0: unresolved */
    char *resolved_by, *resolved_reason;
};
void failed_release(struct failed_batch *f);

typedef int (*sink_cb)(const struct sink *s, void *arg);
typedef int (*outbox_cb)(const struct outbox_event *e, void *arg);
typedef int (*failed_cb)(const struct failed_batch *f, void *arg);

#define STORE_OPS_EVENTS                                                                            \
    /* Sinks: add sets s->id; get, del and secret ERR_NOTFOUND for no live                        \
     * sink; del keeps the row (its archive names it) and stops delivery. */ \
    int (*sink_add)(struct store * st, struct sink * s);                                            \
    int (*sink_get)(struct store * st, int64_t id, struct sink * out);                              \
    int (*sink_list)(struct store * st, sink_cb cb, void *arg);                                     \
    int (*sink_del)(struct store * st, int64_t id, int64_t now);                                    \
    int (*sink_secret)(struct store * st, int64_t id, const char *secret, const char *old);         \
    /* Updates the filters (types, owner, domain) and options of a sink. */                         \
    int (*sink_update)(struct store * st, const struct sink *s);                                    \
                                                                                                    \
    /* Positions: get is ERR_NOTFOUND before the first set. set moves it from                     \
     * 'old' (-1: no row yet) to 'pos' and fails ERR_EXISTS when it is no                         \
     * longer at 'old' (another node moved it). */ \
    int (*sink_pos_get)(struct store * st, int64_t sink, const char *source, int64_t *pos);         \
    int (*sink_pos_set)(struct store * st, int64_t sink, const char *source, int64_t old,           \
                        int64_t pos);                                                               \
    /* Takes or renews the lease of 'holder' on (sink, source) until                              \
     * 'until': ERR_OK, or ERR_BUSY while another holder's lease runs. */ \
    int (*sink_lease)(struct store * st, int64_t sink, const char *source, const char *holder,      \
                      int64_t now, int64_t until);                                                  \
                                                                                                    \
    /* The outbox: add inside the change's transaction (an ID already there                       \
     * is kept as it is); read those after                                                        \
     * 'after' in seq order, at most 'limit'; head is the largest seq (0). */ \
    int (*outbox_add)(struct store * st, const struct outbox_event *e);                             \
    int (*outbox_read)(struct store * st, int64_t after, int limit, outbox_cb cb, void *arg);       \
    int (*outbox_head)(struct store * st, int64_t * seq);                                           \
    /* Deletes at most 'limit' events every live sink has taken, of before                        \
     * 'before' (none while no sink is live); *n how many. */ \
    int (*outbox_prune)(struct store * st, int64_t before, int limit, int *n);                      \
    /* Links of state active whose expiry lies in (from, to], at most                             \
     * 'limit', by expiry: those a sweep reports as expired once. */ \
    int (*link_expiring)(struct store * st, int64_t from, int64_t to, int limit, link_cb cb,        \
                         void *arg);                                                                \
                                                                                                    \
    /* The failed archive: add sets f->id; list newest first (unresolved                          \
     * only unless 'all'); replayed records a replay's outcome; resolve                           \
     * ERR_NOTFOUND for no such batch, ERR_EXISTS when already resolved. */ \
    int (*failed_add)(struct store * st, struct failed_batch * f);                                  \
    int (*failed_get)(struct store * st, int64_t id, struct failed_batch * out);                    \
    int (*failed_list)(struct store * st, bool all, failed_cb cb, void *arg);                       \
    int (*failed_replayed)(struct store * st, int64_t id, int64_t at, const char *result);          \
    int (*failed_resolve)(struct store * st, int64_t id, int64_t at, const char *by,                \
                          const char *reason);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
