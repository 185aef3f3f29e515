/* event.h - one click as the redirect records it and the journal keeps it.
 *
 * The redirect fills the event from the request (borrowed slices), having
 * already turned the client's address into a keyed visitor hash and a
 * country: no address is ever part of an event. event_encode clamps every
 * string and appends one self-contained record; event_decode reads it back
 * with slices into the record. Records of every earlier version decode (the
 * journal keeps them across an upgrade); fields they lack are empty. */
#ifndef SHORTD_EVENT_H
#define SHORTD_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

#define EVENT_PREFETCH (1u << 0) /* Sec-Purpose/Purpose/X-Purpose/X-Moz said so */
/* A link with A/B variants: the chosen variant's index + 1 in bits 1-4 of
 * flags (0: the link has none). Journaled as part of flags, as it is. */
#define EVENT_VARIANT_SHIFT 1
#define EVENT_VARIANT_MASK (0x0fu << EVENT_VARIANT_SHIFT)

#define EVENT_UA_MAX 512
#define EVENT_REFERER_MAX 512
#define EVENT_LANG_MAX 64
#define EVENT_QUERY_MAX 1536 /* three utm_* values of 128 bytes, %-encoded */
#define EVENT_CH_UA_MAX 256  /* Sec-CH-UA: a few brands and their versions */
#define EVENT_CH_PLATFORM_MAX 32
#define EVENT_MAX 3072 /* an encoded event is at most this long */

/* The user-agent client hints a redirect asks for (Accept-CH) and records:
 * the ones classify_hints reads. */
#define EVENT_ACCEPT_CH "Sec-CH-UA, Sec-CH-UA-Mobile, Sec-CH-UA-Platform"

struct click_event {
    int64_t ts;       /* ms since the epoch, UTC: the one clock read of the click */
    uint64_t visitor; /* keyed hash of (address, user agent) under the day's salt */
    uint8_t flags;
    char country[3]; /* ISO 3166 alpha-2 or "" */
    struct slice code;
    struct slice ua;
    struct slice referer;
    struct slice lang;  /* Accept-Language */
    struct slice query; /* the utm_* parameters of the request's query */
    /* The client hints as sent, empty when absent (and in version 1 records) */
    struct slice ch_ua;       /* Sec-CH-UA: the brand list */
    struct slice ch_mobile;   /* Sec-CH-UA-Mobile: "?1" or "?0" */
    struct slice ch_platform; /* Sec-CH-UA-Platform: "\"Android\"" */
};

/* Appends the record to 'out'; returns its length. */
size_t event_encode(const struct click_event *e, struct buf *out);
/* ERR_OK, or ERR_INVALID for a record this version cannot read. */
int event_decode(const void *rec, size_t n, struct click_event *e);

#endif
