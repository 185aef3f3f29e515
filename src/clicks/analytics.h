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
    DIM__COUNT
};

/* The JSON name of each dimension in the stats ("referrers", "countries"...). */
extern const char *const dim_names[DIM__COUNT];

#define RECENT_KEEP 20 /* last human clicks kept per link */

#endif
