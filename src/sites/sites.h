/* sites.h - the rules of sites and the host → site table the collector
 * reads.
 *
 * A site's id is 1..SITE_ID_MAX of [a-z0-9-]; a host is a lowercase name
 * or address without port (each host belongs to one site). The page's host
 * decides a beacon's site: its Origin's host, else its Referer's, else the
 * payload's 'h' (sites_page_host).
 *
 * The table lives in memory, so a beacon costs no store call: an immutable
 * sorted snapshot published under RCU (liburcu's memb flavour, as the link
 * cache: cache.h), read by the event loops without a lock. It is loaded
 * whole at start, after this node commits a change to sites (the writer
 * thread), and when another node's change is heard (marked stale, loaded
 * by the main thread). A replaced snapshot is freed by sitemap_reclaim
 * after a grace period. */
#ifndef SHORTD_SITES_H
#define SHORTD_SITES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "redirect/hosts.h"
#include "store/store_sites.h"

struct store;
struct sitemap;

/* Rules. Pure. */
/* ERR_OK, or ERR_INVALID with 'why' (a phrase after "id ..."). */
int site_id_check(const char *id, size_t n, const char **why);
/* A host as the API and CLI take it, normalised into 'out' (lowercase, no
 * port, no trailing dot): ERR_OK, or ERR_INVALID with 'why'. */
int site_host_check(const char *host, size_t n, char out[HOST_NAME_MAX_LEN + 1], const char **why);
/* The host of an Origin or Referer value ("https://a.example:8080/x"),
 * normalised into 'out': its length, 0 when it has none. */
size_t site_url_host(struct slice url, char out[HOST_NAME_MAX_LEN + 1]);

/* The table */
struct sitemap *sitemap_new(void);
void sitemap_free(struct sitemap *m); /* NULL is fine; no readers left */

/* Replaces the table with the store's hosts (a store read: never on an
 * event loop). Any other thread; loads are serialised. */
int sitemap_load(struct sitemap *m, struct store *st);
/* Another node changed sites: sitemap_take_stale says so once. */
void sitemap_mark_stale(struct sitemap *m);
bool sitemap_take_stale(struct sitemap *m);
/* Frees replaced snapshots once no reader can hold them. Main thread (not
 * an RCU reader). */
void sitemap_reclaim(struct sitemap *m);

/* The site of 'host' (normalised) into 'site': false when no site has it.
 * Any registered RCU reader thread (cache_thread_register), outside a read
 * section of its own; no lock, no allocation. */
bool sitemap_find(struct sitemap *m, const char *host, size_t n, char site[SITE_ID_MAX + 1]);
/* Hosts in the table (for tests and /metrics). */
size_t sitemap_count(struct sitemap *m);

#endif
