/* pageview.h - a site's page beacon as the click journal keeps it: a record
 * kind of its own beside the click (event.h), encoded by the collector on
 * the event loop into the same per-thread buffer, folded by the fold thread
 * into per-site per-day rows (dayrow.h), stored by store_sites.h's
 * site_agg_days in the same job and transaction as the link days, under
 * the same journal checkpoint: a crash loses nothing older than the
 * journal's sync window and a replay counts nothing twice.
 *
 * No address is part of it: the country is looked up before, as for a
 * click, and there is no visitor hash (the browser's flags stand for it). */
#ifndef SHORTD_PAGEVIEW_H
#define SHORTD_PAGEVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

struct classify;
struct dayrow;

#define PAGE_UV (1u << 0) /* the browser's first page view of the UTC day */
#define PAGE_SS (1u << 1) /* a new session */
#define PAGE_BO (1u << 2) /* the previous session had one page view */

/* The first byte of a page record (a click's is event.c's version, 1). */
#define PAGE_RECORD 0x50

struct page_event {
    int64_t ts; /* ms since the epoch: the one clock read of the hit */
    uint8_t flags;
    char country[3];
    int32_t width; /* innerWidth, -1 when absent */
    struct slice site;
    struct slice ua;
    struct slice path, host, ref, lang, tz, us, um, uc, ev, et;
};

/* Appends the record to 'out'; returns its length. */
size_t page_encode(const struct page_event *e, struct buf *out);
/* ERR_OK, or ERR_INVALID for a record this version cannot read. */
int page_decode(const void *rec, size_t n, struct page_event *e);
/* Whether a journal record is a page record. */
bool page_is_record(const void *rec, size_t n);

/* What a beacon writes into its site's day row 'r' (BEACON.md's table):
 * a bot by the classifier: bots + bot["ua"] + bot_kind; the probe's
 * verdicts: hi[bucket] or bot["synthetic"] alone; an event: event and
 * event_target; a page view: clicks (the page views) and its dimensions.
 * Every value clamped to DIM_MAX bytes. */
void page_fold(struct classify *cl, bool hurry, struct dayrow *r, const struct page_event *e);

#endif
