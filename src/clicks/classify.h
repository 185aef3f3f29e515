/* classify.h - a click's request headers → the dimension values stored for it:
 * user agent → browser, OS, device and bot kind; prefetch headers; referrer →
 * host and group; Accept-Language → language; query → UTM values. Every
 * string written is valid UTF-8, NUL-terminated and at most DIM_MAX bytes. */
#ifndef SHORTD_CLASSIFY_H
#define SHORTD_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIM_MAX 128 /* stored dimension values are clamped to this many bytes */

enum device { DEV_DESKTOP, DEV_MOBILE, DEV_TABLET, DEV_BOT, DEV_OTHER, DEV_UNKNOWN };

enum bot_kind {
    BOT_NONE,         /* a person */
    BOT_CRAWLER,      /* search engines, SEO and archive crawlers */
    BOT_AI_CRAWLER,   /* AI training crawlers and AI assistants fetching for a user */
    BOT_HTTP_LIBRARY, /* curl, python-requests, Go, Java, ... */
    BOT_PREVIEWER,    /* link previews of chat and social apps */
    BOT_MAIL_SCANNER, /* mail and office link checkers, mail image proxies */
    BOT_HEADLESS,     /* headless and automated browsers */
    BOT_MONITOR,      /* uptime and synthetic monitoring */
    BOT_EMPTY_UA,     /* no user agent, or only whitespace */
    BOT_OTHER,
};

const char *device_name(enum device d); /* "desktop","mobile","tablet","bot","other","unknown" */
/* "crawler","ai_crawler","http_library","previewer","mail_scanner","headless",
 * "monitor","empty_ua","other"; NULL for BOT_NONE. */
const char *bot_kind_name(enum bot_kind k);

/* User agents */

/* browser: "Chrome", "Firefox", "Safari", "Edge", "Opera", "Samsung Internet",
 * "Internet Explorer", the in-app browsers "Instagram", "Facebook",
 * "LinkedIn", "TikTok", "Snapchat", "Pinterest", "Twitter", "WeChat", "Line",
 * or "Other". os: "Windows", "macOS", "iOS", "iPadOS", "Android", "Linux",
 * "ChromeOS" or "Other". Both are static strings. A bot has device DEV_BOT
 * and browser and os "Other": what a bot claims to run is not a visitor's. */
struct ua_info {
    const char *browser;
    const char *os;
    enum device device;
    enum bot_kind bot; /* BOT_NONE for a person */
    /* A bot's name from the bounded table of agents shortd knows
     * ("googlebot", "facebookexternalhit", "uptimerobot"...: lowercase, at
     * most AGENT_NAME_MAX bytes), "other" for any other bot; NULL for a
     * person. A static string. */
    const char *agent;
};

#define AGENT_NAME_MAX 24

struct classify;

/* Compiles the bot patterns once. 'cache_entries' bounds the per-UA cache (0
 * disables it). ERR_OK, or ERR_INVALID (logged) if the patterns do not
 * compile, ERR_TOOBIG for an absurd cache size. */
int classify_new(size_t cache_entries, struct classify **out);
void classify_free(struct classify *c); /* NULL is fine */

/* One thread at a time (the aggregator's). Results are cached per distinct
 * user agent; the cache is cleared when full. 'ua' may be NULL when n is 0. */
void classify_ua(struct classify *c, const char *ua, size_t n, struct ua_info *out);
/* The same in a hurry (the clicks' fold is behind: clicks.h): a user agent
 * not in the cache gets the bot check alone, and a person's browser and os
 * are then "Unknown" and device DEV_UNKNOWN; that answer is not cached.
 * Whether it was such a person. */
bool classify_ua_hurried(struct classify *c, const char *ua, size_t n, struct ua_info *out);
/* User agents classified afresh (not found in the cache), and of those,
 * people classified in a hurry. Any thread. */
void classify_counts(const struct classify *c, uint64_t *misses, uint64_t *hurried);

/* For the tests: 'on' makes classify_ua() take the reference way, each kind
 * marker looked for on its own and isbot's list tried as one regex, rather
 * than the fast path (classify.c), which must give the same answers. */
void classify_set_reference(struct classify *c, bool on);
/* How many of isbot's patterns the fast path looks for by a literal. */
size_t classify_literals(const struct classify *c);

/* The i-th name classify_ua() can give a bot's 'agent' (each once, "other"
 * last), NULL past the last: how many values the tally can have. Pure. */
const char *classify_agent_name(size_t i);

/* The user-agent client hints of a person's click (NULL/0 for an absent
 * header) over what classify_ua said: the browser from Sec-CH-UA's brand
 * list ("Google Chrome", "Microsoft Edge", "Opera", "Samsung Internet";
 * GREASE brands skipped; "Chromium" alone gives "Chrome" only where the user
 * agent named no browser, so an in-app browser keeps its name), the OS from
 * Sec-CH-UA-Platform, the device mobile from Sec-CH-UA-Mobile "?1" ("?0"
 * makes a phone of the user agent a tablet on Android, else a desktop).
 * Anything it does not know leaves the user agent's answer. A bot (io->bot)
 * is left alone: that is the user agent's to say. Pure, any thread. */
void classify_hints(const char *ch_ua, size_t n1, const char *ch_mobile, size_t n2,
                    const char *ch_platform, size_t n3, struct ua_info *io);

/* Prefetch and prerender: true when Sec-Purpose contains "prefetch" or
 * "prerender", Purpose or X-Moz contains "prefetch", or X-Purpose contains
 * "preview" or "prefetch" (ASCII case-insensitive). NULL/0 for an absent
 * header. Pure, any thread. */
bool classify_is_prefetch(const char *sec_purpose, size_t n1, const char *purpose, size_t n2,
                          const char *x_purpose, size_t n3, const char *x_moz, size_t n4);

/* Referrers */

enum ref_group { REF_DIRECT, REF_INTERNAL, REF_SEARCH, REF_SOCIAL, REF_EMAIL, REF_REFERRAL };

/* "direct","internal","search","social","email","referral" */
const char *ref_group_name(enum ref_group g);

/* Referer → its host (lowercase, no port, no userinfo, no IPv6 brackets, no
 * trailing dot; "www." kept) and group. 'self_hosts' is the NULL-terminated
 * list of shortd's own hosts (a port in them is ignored): those are
 * REF_INTERNAL. An Android app referrer (android-app://com.example.app/) gives
 * the package name as host. An absent, empty or unparseable referer (no
 * "scheme://host", a host with characters no host has) gives "" and
 * REF_DIRECT: it names no origin, so it is counted as no referer at all.
 * Pure, any thread. */
void classify_referrer(const char *ref, size_t n, const char *const *self_hosts,
                       char host[DIM_MAX + 1], enum ref_group *group);

/* Other dimensions. Pure, any thread. */

/* Accept-Language → the primary subtag (lowercase) of the entry with the
 * highest q (the first one on a tie): "en-US,en;q=0.9" → "en". "" when absent,
 * when nothing is acceptable, or when the best entry is "*". */
void classify_language(const char *al, size_t n, char out[16]);

/* Query string (without '?') → the values of utm_source, utm_medium and
 * utm_campaign (names matched ASCII case-insensitively; the first occurrence
 * wins), percent-decoded with '+' as space, then clamped as clamp_utf8 does;
 * "" when absent. */
void classify_utm(const char *query, size_t n, char source[DIM_MAX + 1], char medium[DIM_MAX + 1],
                  char campaign[DIM_MAX + 1]);

/* Copies at most DIM_MAX bytes of s into out: cut on a character boundary,
 * each invalid UTF-8 sequence replaced by U+FFFD (if that would pass the cap,
 * the copy stops before it), control characters (< 0x20, 0x7f) dropped;
 * NUL-terminated. Returns the length. */
size_t clamp_utf8(const char *s, size_t n, char out[DIM_MAX + 1]);

#endif
