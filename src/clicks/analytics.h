/* analytics.h - the dimensions clicks are counted by, shared by the
 * aggregator that writes them and the stats that read them. The numbers are
 * stored: append, never renumber. */
#ifndef SHORTD_ANALYTICS_H
#define SHORTD_ANALYTICS_H

enum dim {
    DIM_REFERRER = 0,  /* referrer host */
    DIM_REF_GROUP = 1, /* search, social, email, internal, direct, referral */
    DIM_COUNTRY = 2,
    DIM_BROWSER = 3,
    DIM_OS = 4,
    DIM_DEVICE = 5,
    DIM_LANGUAGE = 6,
    DIM_UTM_SOURCE = 7,
    DIM_UTM_MEDIUM = 8,
    DIM_UTM_CAMPAIGN = 9,
    DIM_BOT_KIND = 10,  /* bot clicks only */
    DIM_HOUR = 11,      /* "00".."23", UTC */
    DIM_DOWHOUR = 12,   /* "D-HH": ISO weekday 1 (Monday)..7, hour 00..23, UTC */
    DIM_VARIANT = 13,   /* A/B: the variant's number, "1".."10", in the link's order */
    DIM_BOT_AGENT = 14, /* bot clicks only: the bot's name, "googlebot".. or "other" */
    /* A site's page views and events only (sites/pageview.h); never a link's */
    DIM_PATH = 15,         /* location.pathname */
    DIM_HOST = 16,         /* location.hostname */
    DIM_TZ = 17,           /* the browser's IANA time zone */
    DIM_VIEWPORT = 18,     /* "xs", "sm", "md", "lg", "xl" */
    DIM_UV = 19,           /* "1": the browser's first page view of the UTC day */
    DIM_SESSIONS = 20,     /* "1": a new session */
    DIM_BOUNCE = 21,       /* "1": the previous session had one page view */
    DIM_EVENT = 22,        /* an event's name (outbound, download, a custom one) */
    DIM_EVENT_TARGET = 23, /* its target */
    DIM_HI = 24,           /* the probe: "<150", "150-2000", ">2000" (ms to a first input) */
    DIM_BOT = 25,          /* "ua" (the classifier's bots), "synthetic" (the probe's) */
    DIM__COUNT
};

/* The dimensions a link's clicks have: those before DIM_PATH. */
#define DIM_LINK_COUNT DIM_PATH

/* The JSON name of each dimension in the stats ("referrers", "countries"...). */
extern const char *const dim_names[DIM__COUNT];

#define RECENT_KEEP 20 /* last human clicks kept per link */

#endif
