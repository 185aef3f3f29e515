/* app.h - the running service: every module's state in one place, handed to
 * handlers through their request. Built by `shortd serve` (cli.c), read by
 * everything else; after start-up only the modules' own state changes. */
#ifndef SHORTD_APP_H
#define SHORTD_APP_H

#include <stdatomic.h>
#include <stdint.h>

#include "app/config.h"

struct cache;
struct aggregate;
struct checks;
struct bus;
struct classify;
struct clientaddr;
struct clicks;
struct events;
struct fallbacks;
struct geo;
struct hostlist;
struct links;
struct metrics;
struct ops_nodes;
struct ratelimit;
struct rcache;
struct server;
struct store;
struct storeq;
struct watch;
struct writer;

struct app {
    struct config cfg;
    struct store *store;
    struct links *links;       /* link rules, codes, API keys */
    struct writer *writer;     /* group commit */
    struct storeq *storeq;     /* store threads: every read a request waits for */
    struct cache *cache;       /* code -> destination for the redirect */
    struct clicks *clicks;     /* the click pipeline: journal, aggregation */
    struct classify *classify; /* user agents, referrers: off the hot path */
    struct aggregate *aggregate;
    struct events *events;         /* events out: sinks, the delivery thread */
    struct geo *geo;               /* NULL unless geoip-db is set */
    struct rcache *rcache;         /* the shared Redis cache, NULL unless --cache */
    struct bus *bus;               /* invalidations between nodes, NULL on one node */
    struct clientaddr *clientaddr; /* trusted proxies: who the client is */
    struct ratelimit *ratelimit;   /* request limits per client and key */
    struct hostlist *hosts;        /* default short hosts; NULL: every host is one */
    struct metrics *metrics;
    struct server *server;
    struct fallbacks *fallbacks;      /* custom domains' not-found redirects (notfound.h) */
    struct checks *checks;            /* the operations checks (checks.h) */
    struct watch *watch;              /* the alert thread (watch.h) */
    struct ops_nodes *nodes;          /* nodes heard on the bus (nodes.h); NULL without a bus */
    struct clientaddr *metrics_allow; /* who reads /metrics without a key; NULL: nobody */
    bool metrics_open;                /* /metrics needs no key: a loopback listen address */
    struct sitemap *sites;            /* host → site, for the page beacon (sites.h) */
    char *robots; /* /robots.txt as read from `robots-txt` at start; NULL: the default */
    size_t robots_len;
    atomic_bool stopping;
    int64_t started_ms; /* wall clock at start, for /metrics */
    /* Links in the store (tombstones included), counted by the main thread
     * every LINKS_COUNT_MS for /metrics: a count over ten million rows is
     * far too long for an event loop (bench/HISTORY.md, "Figures once
     * quoted in code comments"). -1 until first counted. */
    _Atomic int64_t links_counted;
    /* The sweeper's clock (serve.c), for /metrics: forward steps of the wall
     * clock it did not believe, and how far it now runs behind the wall. */
    _Atomic int64_t clock_steps;
    _Atomic int64_t sweep_behind_ms;
};

#define LINKS_COUNT_MS 10000

#endif
