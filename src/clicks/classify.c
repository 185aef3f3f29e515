/* classify.c - turns a click's request headers into the dimension values the
 * aggregator counts. Whether a user agent is a bot is decided by the npm
 * isbot package's pattern list (maintained upstream, generated into
 * build/gen/isbot_patterns.inc by scripts/gen-isbot.mjs and compiled once
 * with PCRE2: the list needs look-behind; "The fast path" below says how it
 * is tried without trying every pattern), plus the rules below for
 * what it misses: an empty user agent, mail and office link scanners, a few
 * clients it does not know. A person's click in an in-app browser (Instagram,
 * Facebook, TikTok...) is not a bot, whatever a pattern says, unless a bot's
 * own name is in it too. Which kind of bot, and which agent, is read from
 * one ordered table of markers; browser, OS and device from ordered token
 * checks, because the order is the whole trick (Edge and Opera
 * also say "Chrome", Chrome also says "Safari", Android also says "Linux").
 * Results are cached per distinct user agent in an open-addressing table
 * keyed by SipHash under a random key, so crafted user agents cannot force
 * collisions; the table is cleared when full. Referrer, language, UTM and
 * prefetch classification are pure functions. */
#include "clicks/classify.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/pct.h"

#include "isbot_patterns.inc"

#include "base/banned.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define UA_CACHE_KEY_MAX 1024     /* longer user agents are classified but not cached */
#define UA_CACHE_MAX 10000000     /* entries; beyond this the caller has made a mistake */
#define UA_STACK 1024             /* lowercased copy of the user agent on the stack */
#define ISBOT_MATCH_LIMIT 1000000 /* PCRE2 steps; a user agent that needs more is a bot */

/* Names */

const char *device_name(enum device d)
{
    switch (d) {
    case DEV_DESKTOP: return "desktop";
    case DEV_MOBILE: return "mobile";
    case DEV_TABLET: return "tablet";
    case DEV_BOT: return "bot";
    case DEV_UNKNOWN: return "unknown";
    case DEV_OTHER: break;
    }
    return "other";
}

const char *bot_kind_name(enum bot_kind k)
{
    switch (k) {
    case BOT_NONE: return NULL;
    case BOT_CRAWLER: return "crawler";
    case BOT_AI_CRAWLER: return "ai_crawler";
    case BOT_HTTP_LIBRARY: return "http_library";
    case BOT_PREVIEWER: return "previewer";
    case BOT_MAIL_SCANNER: return "mail_scanner";
    case BOT_HEADLESS: return "headless";
    case BOT_MONITOR: return "monitor";
    case BOT_EMPTY_UA: return "empty_ua";
    case BOT_OTHER: break;
    }
    return "other";
}

const char *ref_group_name(enum ref_group g)
{
    switch (g) {
    case REF_DIRECT: return "direct";
    case REF_INTERNAL: return "internal";
    case REF_SEARCH: return "search";
    case REF_SOCIAL: return "social";
    case REF_EMAIL: return "email";
    case REF_REFERRAL: break;
    }
    return "referral";
}

/* Byte helpers */

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static bool is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

static bool is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Case-sensitive: user agent tokens are written one way by their browsers.
 * As memmem, but memmem sets up tables first, which for a user agent's few
 * hundred bytes costs more than the search: the token's first byte is rare
 * enough in a user agent for memchr to find its places. */
static bool has(const char *s, size_t n, const char *tok)
{
    size_t m = strlen(tok);
    if (!m)
        return true;
    for (const char *p = s, *end = s + n; (size_t)(end - p) >= m; p++) {
        p = memchr(p, tok[0], (size_t)(end - p) - m + 1);
        if (!p)
            return false;
        if (m == 1 || (p[1] == tok[1] && memcmp(p + 2, tok + 2, m - 2) == 0))
            return true;
    }
    return false;
}

/* True when s[0..n) contains 'needle' (lowercase), ignoring ASCII case. */
static bool has_nocase(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    if (m > n)
        return false;
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && lower((unsigned char)s[i + j]) == (unsigned char)needle[j])
            j++;
        if (j == m)
            return true;
    }
    return false;
}

static bool starts_with(const char *s, size_t n, const char *prefix)
{
    size_t m = strlen(prefix);
    return n >= m && memcmp(s, prefix, m) == 0;
}

/* UTF-8 clamping
 *
 * A streaming validator, so that a decoder (classify_utm) can feed it bytes
 * as it produces them and stop as soon as the output is full. Invalid input
 * follows the W3C/WHATWG practice: each maximal ill-formed subpart becomes one
 * U+FFFD, and the byte that broke a sequence starts a new one. */

struct u8clamp {
    char *out;
    size_t len;
    bool full;            /* nothing more may be written */
    unsigned char seq[4]; /* the sequence being read */
    unsigned nseq;
    unsigned need;        /* continuation bytes still expected */
    unsigned char lo, hi; /* range of the next continuation byte */
};

static void u8_init(struct u8clamp *u, char *out)
{
    memset(u, 0, sizeof(*u));
    u->out = out;
}

static void u8_emit(struct u8clamp *u, const void *p, size_t n)
{
    if (u->full)
        return;
    if (u->len + n > DIM_MAX) {
        u->full = true; /* a character that does not fit ends the copy */
        return;
    }
    memcpy(u->out + u->len, p, n);
    u->len += n;
}

static void u8_bad(struct u8clamp *u)
{
    u->nseq = 0;
    u->need = 0;
    u8_emit(u, "\xEF\xBF\xBD", 3);
}

static void u8_feed(struct u8clamp *u, unsigned char b)
{
    if (u->full)
        return;
    if (u->need) {
        if (b >= u->lo && b <= u->hi) {
            u->seq[u->nseq++] = b;
            u->lo = 0x80;
            u->hi = 0xBF;
            if (--u->need == 0) {
                u8_emit(u, u->seq, u->nseq);
                u->nseq = 0;
            }
            return;
        }
        u8_bad(u);
        if (u->full)
            return;
    }
    if (b < 0x80) {
        if (b >= 0x20 && b != 0x7f)
            u8_emit(u, &b, 1);
        return;
    }
    u->seq[0] = b;
    u->nseq = 1;
    u->lo = 0x80;
    u->hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
        u->need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        u->need = 2;
        if (b == 0xE0)
            u->lo = 0xA0; /* no overlong forms */
        else if (b == 0xED)
            u->hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        u->need = 3;
        if (b == 0xF0)
            u->lo = 0x90;
        else if (b == 0xF4)
            u->hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        u8_bad(u); /* a stray continuation byte, C0, C1, F5..FF */
    }
}

static size_t u8_finish(struct u8clamp *u)
{
    if (u->need)
        u8_bad(u); /* the input ended inside a sequence */
    u->out[u->len] = '\0';
    return u->len;
}

size_t clamp_utf8(const char *s, size_t n, char out[DIM_MAX + 1])
{
    struct u8clamp u;
    u8_init(&u, out);
    for (size_t i = 0; i < n && !u.full; i++)
        u8_feed(&u, (unsigned char)s[i]);
    return u8_finish(&u);
}

/* Bot kinds
 *
 * Checked in order against the lowercased user agent; the first marker found
 * gives the kind. A 'sure' marker makes the user agent a bot on its own (the
 * rules isbot lacks, and product names no browser sends); the others only
 * name the kind once isbot has said "bot". Order matters where one marker
 * contains another or a bot names a library it is built on: Applebot-Extended
 * before Applebot, LinkedInBot ("Apache-HttpClient") and Mastodon ("http.rb")
 * before the HTTP libraries, monitors built on headless Chrome before
 * "headless", named crawlers before the libraries' short words ("php" is in
 * MJ12bot's URL). Markers are lowercase.
 *
 * A rule that names one agent also gives the name its bot clicks are tallied
 * under (AGENT_NAME_MAX bytes at most, lowercase; several markers of one
 * agent share it); a generic word ("spider", "monitor") names none, and the
 * first naming rule further on, if any, gives the name. */

static const struct kind_rule {
    const char *marker;
    enum bot_kind kind;
    bool sure;
    const char *agent; /* NULL: a word of many agents */
} kind_rules[] = {
    /* Bots that wear an in-app browser's user agent and carry an app's
     * token in their own name ("TikTokSpider"): before the apps' markers. */
    {"tiktokspider", BOT_CRAWLER, true, "tiktokspider"},
    {"snapchatads", BOT_CRAWLER, true, "snapchatads"},
    {"brandverity", BOT_CRAWLER, true, "brandverity"},

    /* Mail and office link scanners, mail image proxies: isbot misses most. */
    {"mail.ru_bot", BOT_CRAWLER, true, "mail.ru_bot"}, /* Mail.ru's search crawler, not its mail */
    {"microsoft office existence discovery", BOT_MAIL_SCANNER, true, "ms-office"},
    {"ms-office", BOT_MAIL_SCANNER, true, "ms-office"},
    {"msoffice", BOT_MAIL_SCANNER, true, "ms-office"},
    {"microsoft outlook", BOT_MAIL_SCANNER, true, "outlook"},
    {"microsoft office/", BOT_MAIL_SCANNER, true, "ms-office"},
    {"googleimageproxy", BOT_MAIL_SCANNER, true, "googleimageproxy"},
    {"google-safety", BOT_MAIL_SCANNER, true, "google-safety"},
    {"yahoomailproxy", BOT_MAIL_SCANNER, true, "yahoomailproxy"},
    {"emailproxy", BOT_MAIL_SCANNER, true, NULL},
    {"imageproxy", BOT_MAIL_SCANNER, true, NULL},
    {"mail.ukr.net", BOT_MAIL_SCANNER, true, "mail.ukr.net"},
    {"mail.ru", BOT_MAIL_SCANNER, true, "mail.ru"},
    {"barracuda", BOT_MAIL_SCANNER, true, "barracuda"},
    {"proofpoint", BOT_MAIL_SCANNER, true, "proofpoint"},
    {"mimecast", BOT_MAIL_SCANNER, true, "mimecast"},
    {"messagelabs", BOT_MAIL_SCANNER, true, "messagelabs"},
    {"symantec", BOT_MAIL_SCANNER, true, "symantec"},
    {"trend micro", BOT_MAIL_SCANNER, true, "trendmicro"},
    {"trendmicro", BOT_MAIL_SCANNER, true, "trendmicro"},
    {"kaspersky", BOT_MAIL_SCANNER, true, "kaspersky"},
    {"forcepoint", BOT_MAIL_SCANNER, true, "forcepoint"},
    {"sophos", BOT_MAIL_SCANNER, true, "sophos"},
    {"fireeye", BOT_MAIL_SCANNER, true, "fireeye"},
    {"ironport", BOT_MAIL_SCANNER, true, "ironport"},

    /* AI crawlers and assistants */
    {"gptbot", BOT_AI_CRAWLER, true, "gptbot"},
    {"chatgpt-user", BOT_AI_CRAWLER, true, "chatgpt-user"},
    {"oai-searchbot", BOT_AI_CRAWLER, true, "oai-searchbot"},
    {"claudebot", BOT_AI_CRAWLER, true, "claudebot"},
    {"claude-web", BOT_AI_CRAWLER, true, "claude-web"},
    {"claude-user", BOT_AI_CRAWLER, true, "claude-user"},
    {"claude-searchbot", BOT_AI_CRAWLER, true, "claude-searchbot"},
    {"anthropic-ai", BOT_AI_CRAWLER, true, "anthropic-ai"},
    {"perplexitybot", BOT_AI_CRAWLER, true, "perplexitybot"},
    {"perplexity-user", BOT_AI_CRAWLER, true, "perplexity-user"},
    {"ccbot", BOT_AI_CRAWLER, true, "ccbot"},
    {"google-extended", BOT_AI_CRAWLER, true, "google-extended"},
    {"applebot-extended", BOT_AI_CRAWLER, true, "applebot-extended"},
    {"bytespider", BOT_AI_CRAWLER, true, "bytespider"},
    {"amazonbot", BOT_AI_CRAWLER, true, "amazonbot"},
    {"cohere-ai", BOT_AI_CRAWLER, true, "cohere-ai"},
    {"cohere-training", BOT_AI_CRAWLER, true, "cohere-training"},
    {"meta-externalagent", BOT_AI_CRAWLER, true, "meta-externalagent"},
    {"meta-externalfetcher", BOT_AI_CRAWLER, true, "meta-externalfetcher"},
    {"facebookbot", BOT_AI_CRAWLER, true, "facebookbot"},
    {"diffbot", BOT_AI_CRAWLER, true, "diffbot"},
    {"youbot", BOT_AI_CRAWLER, true, "youbot"},
    {"ai2bot", BOT_AI_CRAWLER, true, "ai2bot"},
    {"omgili", BOT_AI_CRAWLER, true, "omgili"},
    {"timpibot", BOT_AI_CRAWLER, true, "timpibot"},
    {"imagesiftbot", BOT_AI_CRAWLER, true, "imagesiftbot"},
    {"mistralai-user", BOT_AI_CRAWLER, true, "mistralai-user"},
    {"duckassistbot", BOT_AI_CRAWLER, true, "duckassistbot"},
    {"pangubot", BOT_AI_CRAWLER, true, "pangubot"},
    {"amzn-searchbot", BOT_AI_CRAWLER, true, "amzn-searchbot"},
    {"amzn-user", BOT_AI_CRAWLER, true, "amzn-user"},
    {"novaact", BOT_AI_CRAWLER, true, "novaact"},
    {"deepseekbot", BOT_AI_CRAWLER, true, "deepseekbot"},
    {"google-cloudvertexbot", BOT_AI_CRAWLER, true, "google-cloudvertexbot"},
    {"gemini-deep-research", BOT_AI_CRAWLER, true, "gemini-deep-research"},
    {"meta-webindexer", BOT_AI_CRAWLER, true, "meta-webindexer"},
    {"firecrawlagent", BOT_AI_CRAWLER, true, "firecrawlagent"},
    {"webzio-extended", BOT_AI_CRAWLER, true, "webzio-extended"},
    {"kangaroo bot", BOT_AI_CRAWLER, true, "kangaroobot"},
    {"icc-crawler", BOT_AI_CRAWLER, true, "icc-crawler"},
    {"img2dataset", BOT_AI_CRAWLER, true, "img2dataset"},
    {"cotoyogi", BOT_AI_CRAWLER, true, "cotoyogi"},
    {"andibot", BOT_AI_CRAWLER, true, "andibot"},
    {"iaskspider", BOT_AI_CRAWLER, true, "iaskspider"},
    {"manus-user", BOT_AI_CRAWLER, true, "manus-user"},
    {"claude-code", BOT_AI_CRAWLER, true, "claude-code"},
    {"openai", BOT_AI_CRAWLER, false, "openai"},

    /* Uptime and synthetic monitoring */
    {"uptimerobot", BOT_MONITOR, true, "uptimerobot"},
    {"pingdom", BOT_MONITOR, true, "pingdom"},
    {"statuscake", BOT_MONITOR, true, "statuscake"},
    {"site24x7", BOT_MONITOR, true, "site24x7"},
    {"better uptime", BOT_MONITOR, true, "betteruptime"},
    {"betteruptime", BOT_MONITOR, true, "betteruptime"},
    {"betterstack", BOT_MONITOR, true, "betterstack"},
    {"datadogsynthetics", BOT_MONITOR, true, "datadog"},
    {"datadog agent", BOT_MONITOR, true, "datadog"},
    {"newrelicpinger", BOT_MONITOR, true, "newrelicpinger"},
    {"checkly", BOT_MONITOR, true, "checkly"},
    {"uptime-kuma", BOT_MONITOR, true, "uptime-kuma"},
    {"uptimebot", BOT_MONITOR, true, "uptimebot"},
    {"uptime.com", BOT_MONITOR, true, "uptime.com"},
    {"freshping", BOT_MONITOR, true, "freshping"},
    {"hetrixtools", BOT_MONITOR, true, "hetrixtools"},
    {"updown.io", BOT_MONITOR, true, "updown.io"},
    {"nagios", BOT_MONITOR, true, "nagios"},
    {"check_http", BOT_MONITOR, true, "nagios"},
    {"monitoring-plugins", BOT_MONITOR, true, "nagios"},
    {"zabbix", BOT_MONITOR, true, "zabbix"},
    {"blackbox exporter", BOT_MONITOR, true, "blackbox-exporter"},
    {"prometheus", BOT_MONITOR, false, "prometheus"},
    {"route53-health-check", BOT_MONITOR, true, "route53"},
    {"elb-healthchecker", BOT_MONITOR, true, "elb-healthchecker"},
    {"googlestackdrivermonitoring", BOT_MONITOR, true, "stackdriver"},
    {"kube-probe", BOT_MONITOR, true, "kube-probe"},
    {"healthcheck", BOT_MONITOR, false, NULL},
    {"health-check", BOT_MONITOR, false, NULL},
    {"ruxitsynthetic", BOT_MONITOR, true, "ruxitsynthetic"},
    {"catchpoint", BOT_MONITOR, true, "catchpoint"},
    {"dejaclick", BOT_MONITOR, true, "dejaclick"},
    {"phpservermon", BOT_MONITOR, true, "phpservermon"},
    {"hyperping", BOT_MONITOR, true, "hyperping"},
    {"cronitor", BOT_MONITOR, true, "cronitor"},
    {"ohdear", BOT_MONITOR, true, "ohdear"},
    {"nodeping", BOT_MONITOR, true, "nodeping"},
    {"host-tracker", BOT_MONITOR, true, "host-tracker"},
    {"uptimia", BOT_MONITOR, true, "uptimia"},
    {"montastic", BOT_MONITOR, true, "montastic"},
    {"jetmon", BOT_MONITOR, true, "jetmon"},
    {"gatus/", BOT_MONITOR, true, "gatus"},
    {"pulsetic", BOT_MONITOR, true, "pulsetic"},
    {"sematext", BOT_MONITOR, true, "sematext"},
    {"panopta", BOT_MONITOR, true, "panopta"},
    {"monitis", BOT_MONITOR, true, "monitis"},
    {"monit/", BOT_MONITOR, false, "monit"},
    {"synthetic", BOT_MONITOR, false, NULL},
    {"monitor", BOT_MONITOR, false, NULL},

    /* Link previews of chat and social apps */
    {"facebookexternalhit", BOT_PREVIEWER, true, "facebookexternalhit"},
    {"facebot", BOT_PREVIEWER, true, "facebot"},
    {"facebookcatalog", BOT_PREVIEWER, true, "facebookcatalog"},
    {"twitterbot", BOT_PREVIEWER, true, "twitterbot"},
    {"slackbot", BOT_PREVIEWER, true, "slackbot"},
    {"slack-imgproxy", BOT_PREVIEWER, true, "slack-imgproxy"},
    {"discordbot", BOT_PREVIEWER, true, "discordbot"},
    {"telegrambot", BOT_PREVIEWER, true, "telegrambot"},
    {"whatsapp", BOT_PREVIEWER, false, "whatsapp"},
    {"linkedinbot", BOT_PREVIEWER, true, "linkedinbot"},
    {"skypeuripreview", BOT_PREVIEWER, true, "skypeuripreview"},
    {"iframely", BOT_PREVIEWER, true, "iframely"},
    {"embedly", BOT_PREVIEWER, true, "embedly"},
    {"redditbot", BOT_PREVIEWER, true, "redditbot"},
    {"pinterestbot", BOT_PREVIEWER, true, "pinterestbot"},
    {"pinterest/0.", BOT_PREVIEWER, true, "pinterestbot"},
    {"mastodon", BOT_PREVIEWER, false, "mastodon"},
    {"bluesky", BOT_PREVIEWER, false, "bluesky"},
    {"cardyb", BOT_PREVIEWER, true, "cardyb"},
    {"vkshare", BOT_PREVIEWER, true, "vkshare"},
    {"viber", BOT_PREVIEWER, false, "viber"},
    {"line-poker", BOT_PREVIEWER, true, "line"},
    {"kakaotalk-scrap", BOT_PREVIEWER, true, "kakaotalk"},
    {"snapchat", BOT_PREVIEWER, false, "snapchat"},
    {"quora link preview", BOT_PREVIEWER, true, "quora"},
    {"bitrix link preview", BOT_PREVIEWER, true, "bitrix24"},
    {"yahoo:linkexpander", BOT_PREVIEWER, true, "yahoo"},
    {"bingpreview", BOT_PREVIEWER, true, "bingpreview"},
    {"google web preview", BOT_PREVIEWER, true, "google-web-preview"},
    {"applenewsbot", BOT_PREVIEWER, true, "applenewsbot"},
    {"flipboardproxy", BOT_PREVIEWER, true, "flipboardproxy"},
    {"tumblr", BOT_PREVIEWER, false, "tumblr"},
    {"nuzzel", BOT_PREVIEWER, false, "nuzzel"},
    {"synapse", BOT_PREVIEWER, false, "synapse"}, /* Matrix */
    {"mattermost", BOT_PREVIEWER, false, "mattermost"},
    {"rocket.chat", BOT_PREVIEWER, false, "rocket.chat"},
    {"zulip", BOT_PREVIEWER, false, "zulip"},
    {"keybase", BOT_PREVIEWER, false, "keybase"},
    {"preview", BOT_PREVIEWER, false, NULL},

    /* Headless and automated browsers */
    {"headlesschrome", BOT_HEADLESS, true, "headlesschrome"},
    {"phantomjs", BOT_HEADLESS, true, "phantomjs"},
    {"puppeteer", BOT_HEADLESS, true, "puppeteer"},
    {"playwright", BOT_HEADLESS, true, "playwright"},
    {"selenium", BOT_HEADLESS, true, "selenium"},
    {"webdriver", BOT_HEADLESS, true, "webdriver"},
    {"cypress/", BOT_HEADLESS, false, "cypress"},
    {"lighthouse", BOT_HEADLESS, false, "lighthouse"},
    {"prerender", BOT_HEADLESS, false, "prerender"},
    {"wkhtmlto", BOT_HEADLESS, false, "wkhtmltopdf"},
    {"webkit2png", BOT_HEADLESS, false, "webkit2png"},
    {"splash", BOT_HEADLESS, false, "splash"},
    {"headless", BOT_HEADLESS, false, NULL},

    /* Search, SEO and archive crawlers */
    {"googlebot", BOT_CRAWLER, true, "googlebot"},
    {"google-inspectiontool", BOT_CRAWLER, true, "google-inspectiontool"},
    {"googleother", BOT_CRAWLER, true, "googleother"},
    {"adsbot-google", BOT_CRAWLER, true, "adsbot-google"},
    {"mediapartners-google", BOT_CRAWLER, true, "mediapartners-google"},
    {"apis-google", BOT_CRAWLER, true, "apis-google"},
    {"feedfetcher-google", BOT_CRAWLER, true, "feedfetcher-google"},
    {"storebot-google", BOT_CRAWLER, true, "storebot-google"},
    {"bingbot", BOT_CRAWLER, true, "bingbot"},
    {"msnbot", BOT_CRAWLER, true, "msnbot"},
    {"adidxbot", BOT_CRAWLER, true, "adidxbot"},
    {"baiduspider", BOT_CRAWLER, true, "baiduspider"},
    {"yandex", BOT_CRAWLER, false, "yandex"},
    {"duckduckbot", BOT_CRAWLER, true, "duckduckbot"},
    {"duckduckgo-favicons-bot", BOT_CRAWLER, true, "duckduckgo-favicons-bot"},
    {"applebot", BOT_CRAWLER, true, "applebot"},
    {"ahrefsbot", BOT_CRAWLER, true, "ahrefsbot"},
    {"semrushbot", BOT_CRAWLER, true, "semrushbot"},
    {"mj12bot", BOT_CRAWLER, true, "mj12bot"},
    {"dotbot", BOT_CRAWLER, true, "dotbot"},
    {"petalbot", BOT_CRAWLER, true, "petalbot"},
    {"sogou", BOT_CRAWLER, false, "sogou"},
    {"slurp", BOT_CRAWLER, false, "slurp"},
    {"exabot", BOT_CRAWLER, true, "exabot"},
    {"seznambot", BOT_CRAWLER, true, "seznambot"},
    {"yeti/", BOT_CRAWLER, false, "yeti"},
    {"coccocbot", BOT_CRAWLER, true, "coccocbot"},
    {"qwantify", BOT_CRAWLER, true, "qwantify"},
    {"mojeekbot", BOT_CRAWLER, true, "mojeekbot"},
    {"ia_archiver", BOT_CRAWLER, true, "ia_archiver"},
    {"archive.org_bot", BOT_CRAWLER, true, "archive.org_bot"},
    {"blexbot", BOT_CRAWLER, true, "blexbot"},
    {"dataforseobot", BOT_CRAWLER, true, "dataforseobot"},
    {"barkrowler", BOT_CRAWLER, true, "barkrowler"},
    {"linespider", BOT_CRAWLER, true, "linespider"},

    /* HTTP libraries and command-line tools */
    {"curl", BOT_HTTP_LIBRARY, false, "curl"},
    {"wget", BOT_HTTP_LIBRARY, false, "wget"},
    {"python-requests", BOT_HTTP_LIBRARY, false, "python-requests"},
    {"python-urllib", BOT_HTTP_LIBRARY, false, "python-urllib"},
    {"python-httpx", BOT_HTTP_LIBRARY, false, "python-httpx"},
    {"aiohttp", BOT_HTTP_LIBRARY, false, "aiohttp"},
    {"httpx", BOT_HTTP_LIBRARY, false, "httpx"},
    {"urllib", BOT_HTTP_LIBRARY, false, "urllib"},
    {"python", BOT_HTTP_LIBRARY, false, "python"},
    {"go-http-client", BOT_HTTP_LIBRARY, false, "go-http-client"},
    {"go 1.1 package http", BOT_HTTP_LIBRARY, false, "go-http-client"},
    {"go-resty", BOT_HTTP_LIBRARY, false, "go-resty"},
    {"okhttp", BOT_HTTP_LIBRARY, false, "okhttp"},
    {"axios", BOT_HTTP_LIBRARY, false, "axios"},
    {"node-fetch", BOT_HTTP_LIBRARY, false, "node-fetch"},
    {"undici", BOT_HTTP_LIBRARY, false, "undici"},
    {"got (", BOT_HTTP_LIBRARY, false, "got"},
    {"node.js", BOT_HTTP_LIBRARY, false, "node.js"},
    {"java", BOT_HTTP_LIBRARY, false, "java"}, /* Java/, Java-http-client, (java 1.5) */
    {"apache-httpclient", BOT_HTTP_LIBRARY, false, "apache-httpclient"},
    {"httpclient", BOT_HTTP_LIBRARY, false, NULL},
    {"libwww-perl", BOT_HTTP_LIBRARY, false, "libwww-perl"},
    {"lwp", BOT_HTTP_LIBRARY, false, "libwww-perl"},
    {"perl", BOT_HTTP_LIBRARY, false, "perl"},
    {"postmanruntime", BOT_HTTP_LIBRARY, false, "postmanruntime"},
    {"httpie", BOT_HTTP_LIBRARY, false, "httpie"},
    {"insomnia", BOT_HTTP_LIBRARY, false, "insomnia"},
    {"http.rb", BOT_HTTP_LIBRARY, false, "http.rb"},
    {"faraday", BOT_HTTP_LIBRARY, false, "faraday"},
    {"rest-client", BOT_HTTP_LIBRARY, false, "rest-client"},
    {"ruby", BOT_HTTP_LIBRARY, false, "ruby"},
    {"guzzle", BOT_HTTP_LIBRARY, false, "guzzle"},
    {"php", BOT_HTTP_LIBRARY, false, "php"},
    {"(dart:io)", BOT_HTTP_LIBRARY, true, "dart"}, /* isbot misses Dart's default */
    {"dart/", BOT_HTTP_LIBRARY, false, "dart"},
    {"reqwest", BOT_HTTP_LIBRARY, false, "reqwest"},
    {"deno/", BOT_HTTP_LIBRARY, false, "deno"},
    {"bun/", BOT_HTTP_LIBRARY, false, "bun"},
    {"restsharp", BOT_HTTP_LIBRARY, false, "restsharp"},
    {"winhttp", BOT_HTTP_LIBRARY, false, "winhttp"},
    {"grpc-", BOT_HTTP_LIBRARY, false, "grpc"},
    {"alamofire", BOT_HTTP_LIBRARY, false, "alamofire"},
    {"apachebench", BOT_HTTP_LIBRARY, false, "apachebench"},

    /* Crawler words, last: they are parts of many names above. */
    {"scrapy", BOT_CRAWLER, false, "scrapy"},
    {"screaming frog", BOT_CRAWLER, false, "screamingfrog"},
    {"spider", BOT_CRAWLER, false, NULL},
    {"crawl", BOT_CRAWLER, false, NULL},
};

/* In-app browsers: a person's click inside an app, whatever isbot says,
 * unless a bot's marker is found outside these tokens (classify_uncached).
 * Only a user agent that starts like a browser's ("Mozilla/5.0 (") counts,
 * so an app's own server-side fetcher ("Snapchat/..." alone) stays a bot. */
static const struct in_app {
    const char *token; /* case-sensitive, as the apps write it */
    const char *browser;
} in_apps[] = {
    {"Instagram", "Instagram"},
    {"FBAN/", "Facebook"},
    {"FBAV/", "Facebook"},
    {"FB_IAB/", "Facebook"},
    {"[FBAN", "Facebook"},
    {"LinkedInApp", "LinkedIn"},
    {"musical_ly", "TikTok"},
    {"BytedanceWebview", "TikTok"},
    {"TikTok", "TikTok"},
    {"Snapchat", "Snapchat"},
    {"[Pinterest/", "Pinterest"},
    {"Twitter for iPhone", "Twitter"},
    {"Twitter for iPad", "Twitter"},
    {"TwitterAndroid", "Twitter"},
    {"MicroMessenger", "WeChat"},
    {" Line/", "Line"},
};

static const char *in_app_browser(const char *ua, size_t n)
{
    for (size_t i = 0; i < ARRAY_LEN(in_apps); i++) {
        if (has(ua, n, in_apps[i].token))
            return in_apps[i].browser;
    }
    return NULL;
}

/* Browser, OS, device of a person's user agent */

static const char *browser_of(const char *ua, size_t n)
{
    const char *app = in_app_browser(ua, n);
    if (app)
        return app;
    if (has(ua, n, "Edg/") || has(ua, n, "EdgA/") || has(ua, n, "EdgiOS/") || has(ua, n, "Edge/"))
        return "Edge";
    if (has(ua, n, "OPR/") || has(ua, n, "OPT/") || has(ua, n, "OPiOS/") ||
        has(ua, n, "Opera Mini") || starts_with(ua, n, "Opera/"))
        return "Opera";
    if (has(ua, n, "SamsungBrowser/"))
        return "Samsung Internet";
    if (has(ua, n, "MSIE ") || has(ua, n, "Trident/"))
        return "Internet Explorer";
    if (has(ua, n, "Chrome/") || has(ua, n, "CriOS/") || has(ua, n, "Chromium/"))
        return "Chrome";
    if (has(ua, n, "Firefox/") || has(ua, n, "FxiOS/"))
        return "Firefox";
    if (has(ua, n, "Safari/"))
        return "Safari";
    return "Other";
}

static const char *os_of(const char *ua, size_t n)
{
    if (has(ua, n, "Windows Phone"))
        return "Windows";
    if (has(ua, n, "iPad"))
        return "iPadOS";
    if (has(ua, n, "iPhone") || has(ua, n, "iPod"))
        return "iOS";
    if (has(ua, n, "CrOS"))
        return "ChromeOS";
    if (has(ua, n, "Android"))
        return "Android";
    if (has(ua, n, "Windows"))
        return "Windows";
    if (has(ua, n, "Macintosh") || has(ua, n, "Mac OS X"))
        return "macOS";
    if (has(ua, n, "Linux") || has(ua, n, "Ubuntu") || has(ua, n, "Fedora"))
        return "Linux";
    return "Other";
}

static const char *const tv_tokens[] = {
    "SMART-TV", "SmartTV",  "Smart TV",    "SmartHub",   "Web0S",    "HbbTV",
    "CrKey",    "BRAVIA",   "PlayStation", "Xbox",       "Nintendo", "Roku",
    "AppleTV",  "Apple TV", "GoogleTV",    "Android TV",
};

static enum device device_of(const char *ua, size_t n)
{
    for (size_t i = 0; i < ARRAY_LEN(tv_tokens); i++) {
        if (has(ua, n, tv_tokens[i]))
            return DEV_OTHER; /* televisions and consoles */
    }
    if (has(ua, n, "iPad"))
        return DEV_TABLET;
    if (has(ua, n, "iPhone") || has(ua, n, "iPod") || has(ua, n, "Windows Phone"))
        return DEV_MOBILE;
    if (has(ua, n, "Kindle") || has(ua, n, "Silk/") || has(ua, n, "Tablet;"))
        return DEV_TABLET;
    if (has(ua, n, "Android"))
        return has(ua, n, "Mobile") ? DEV_MOBILE : DEV_TABLET;
    if (has(ua, n, "Mobile") || has(ua, n, "Opera Mini") || has(ua, n, "BlackBerry") ||
        has(ua, n, "BB10"))
        return DEV_MOBILE;
    if (has(ua, n, "Windows") || has(ua, n, "Macintosh") || has(ua, n, "Mac OS X") ||
        has(ua, n, "CrOS") || has(ua, n, "Linux") || has(ua, n, "X11"))
        return DEV_DESKTOP;
    return DEV_OTHER;
}

/* The fast path
 *
 * A user agent not in the cache used to cost two scans: every kind marker
 * looked for with memmem, one after the other, and isbot's whole alternation
 * tried at every position of the user agent (its patterns share no start
 * that would rule a position out). Both now rest on one pass over the
 * lowercased user agent that finds every "needle" in it (struct scanner): the
 * kind markers, and for each isbot pattern not anchored at the start, a
 * literal that every match of the pattern contains (literal_of reads it off
 * the pattern; one it cannot read has none). isbot's list matches when the
 * anchored patterns, as one regex tried at the start only, match; or one of
 * the patterns without a literal, as one regex, does; or a pattern whose
 * literal was found does, on its own: exactly when the whole alternation
 * matches. A user agent longer than UA_FAST_MAX takes the old way: on a
 * long one the whole alternation could run out of steps (ISBOT_MATCH_LIMIT:
 * a bot) where none of its parts does. A click carries at most
 * EVENT_UA_MAX (event.h) bytes of it, well below. So do all user agents
 * with classify_set_reference(), which the tests compare against. */

#define ISBOT_COUNT ARRAY_LEN(isbot_patterns)
#define NEEDLES_MAX 1024    /* kind markers, then one literal per isbot pattern */
#define NEEDLE_BUCKETS 4096 /* needles by a hash of their first two bytes */
#define LITERAL_MAX 32
#define UA_FAST_MAX 1024

#define KIND_COUNT ARRAY_LEN(kind_rules)
_Static_assert(KIND_COUNT + ISBOT_COUNT <= NEEDLES_MAX, "raise NEEDLES_MAX");

struct needle {
    const char *s; /* lowercase */
    unsigned char len;
    unsigned short id; /* a kind rule's index, or KIND_COUNT + a pattern's */
};

struct scanner {
    struct needle *multi;                     /* two bytes or more, grouped by bucket */
    unsigned short start[NEEDLE_BUCKETS + 1]; /* bucket b is multi[start[b] .. start[b + 1]) */
    struct needle single[8];                  /* one byte */
    size_t nsingle;
};

/* The needles found in a user agent: bit 'id' set. */
struct found {
    uint64_t bits[NEEDLES_MAX / 64];
};

static bool found_has(const struct found *f, size_t id)
{
    return f->bits[id / 64] >> (id % 64) & 1;
}

/* Whether any of the needles 0 .. n-1 was found. */
static bool found_any(const struct found *f, size_t n)
{
    for (size_t w = 0; w < n / 64; w++)
        if (f->bits[w])
            return true;
    return n % 64 && f->bits[n / 64] & ((1ull << (n % 64)) - 1);
}

static size_t bucket_of(unsigned char a, unsigned char b)
{
    return ((size_t)a * 31 + b) & (NEEDLE_BUCKETS - 1);
}

static int cmp_needle_bucket(const void *x, const void *y)
{
    const struct needle *a = x, *b = y;
    size_t ka = bucket_of((unsigned char)a->s[0], (unsigned char)a->s[1]);
    size_t kb = bucket_of((unsigned char)b->s[0], (unsigned char)b->s[1]);
    return (ka > kb) - (ka < kb);
}

/* Builds the scanner from 'n' needles (it keeps them, sorted). False when
 * there are more one-byte needles than it has room for. */
static bool scanner_init(struct scanner *sc, struct needle *v, size_t n)
{
    size_t multi = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].len >= 2) {
            v[multi++] = v[i];
        } else {
            if (sc->nsingle == ARRAY_LEN(sc->single))
                return false;
            sc->single[sc->nsingle++] = v[i];
        }
    }
    qsort(v, multi, sizeof(*v), cmp_needle_bucket);
    sc->multi = v;
    size_t k = 0;
    for (size_t b = 0; b <= NEEDLE_BUCKETS; b++) {
        sc->start[b] = (unsigned short)k;
        while (k < multi && bucket_of((unsigned char)v[k].s[0], (unsigned char)v[k].s[1]) == b)
            k++;
    }
    return true;
}

/* Every needle in 'low' (n bytes, lowercased). */
static void scanner_find(const struct scanner *sc, const char *low, size_t n, struct found *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < sc->nsingle; i++) {
        if (memchr(low, sc->single[i].s[0], n))
            out->bits[sc->single[i].id / 64] |= 1ull << (sc->single[i].id % 64);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        size_t b = bucket_of((unsigned char)low[i], (unsigned char)low[i + 1]);
        for (size_t k = sc->start[b]; k < sc->start[b + 1]; k++) {
            const struct needle *d = &sc->multi[k];
            if (d->len <= n - i && d->s[0] == low[i] && d->s[1] == low[i + 1] &&
                memcmp(low + i + 2, d->s + 2, d->len - 2u) == 0)
                out->bits[d->id / 64] |= 1ull << (d->id % 64);
        }
    }
}

/* The ']' of the class that opens at p[i] ('['), its index; 0 when it
 * does not close. A ']' first in the class (after any '^') is a member. */
static size_t class_end(const char *p, size_t i)
{
    size_t j = i + 1;
    if (p[j] == '^')
        j++;
    if (p[j] == ']')
        j++;
    for (; p[j] && p[j] != ']'; j++)
        if (p[j] == '\\' && p[j + 1])
            j++;
    return p[j] ? j : 0;
}

/* The end of the group that opens at p[i] ('('), one past its ')'; 0 when
 * it does not close. */
static size_t group_end(const char *p, size_t i)
{
    int depth = 0;
    for (size_t j = i; p[j]; j++) {
        if (p[j] == '\\') {
            if (!p[++j])
                return 0;
        } else if (p[j] == '[') {
            j = class_end(p, j);
            if (!j)
                return 0;
        } else if (p[j] == '(') {
            depth++;
        } else if (p[j] == ')' && --depth == 0) {
            return j + 1;
        }
    }
    return 0;
}

/* The length of the quantifier at p (0: none); '*min' is its minimum count.
 * -1 for a '{' that is not one (then PCRE2 reads it as a character, which
 * literal_of does not try to follow). */
static int quantifier_at(const char *p, unsigned long *min)
{
    size_t k = 0;
    if (*p == '?' || *p == '*' || *p == '+') {
        *min = *p == '+';
        k = 1;
    } else if (*p == '{') {
        char *end;
        k = 1;
        *min = is_digit((unsigned char)p[1]) ? strtoul(p + 1, &end, 10) : 0;
        if (is_digit((unsigned char)p[1]))
            k = (size_t)(end - p);
        else if (p[1] != ',')
            return -1;
        while (is_digit((unsigned char)p[k]) || p[k] == ',')
            k++;
        if (p[k] != '}')
            return -1;
        k++;
    } else {
        return 0;
    }
    if (p[k] == '?' || p[k] == '+') /* lazy, possessive */
        k++;
    return (int)k;
}

/* A literal that every match of isbot pattern 'p' contains, lowercased into
 * 'out': the longest run of plain characters at the pattern's top level
 * (outside groups, lookarounds and classes), none of them made optional by
 * a quantifier, cut to LITERAL_MAX bytes (a part of it is in every match
 * too). Its length; 0 when there is no such run, or the pattern has a
 * top-level '|' or syntax this does not read (options, back references,
 * escapes that name characters...): such a pattern is always tried.
 * '*anchored' says whether p starts with '^' (and has no top-level '|'). */
static size_t literal_of(const char *p, char out[LITERAL_MAX + 1], bool *anchored)
{
    char run[LITERAL_MAX + 1];
    size_t rn = 0, best = 0;
    *anchored = false;
    out[0] = '\0';
    for (size_t i = 0; p[i];) {
        int lit = -1; /* the character this atom matches, if it is a plain one */
        size_t step = 1;
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\\') {
            unsigned char e = (unsigned char)p[i + 1];
            if (is_alpha(e) || is_digit(e)) {
                if (!strchr("bBdDwWsShHvVAzZG", e))
                    return 0;
            } else if (e) {
                lit = e;
            } else {
                return 0;
            }
            step = 2;
        } else if (ch == '[') {
            size_t j = class_end(p, i);
            if (!j)
                return 0;
            step = j + 1 - i;
        } else if (ch == '(') {
            const char *q = p + i + 1;
            bool known = *q != '*' && (*q != '?' || q[1] == ':' || q[1] == '=' || q[1] == '!' ||
                                       (q[1] == '<' && (q[2] == '=' || q[2] == '!')));
            size_t end = known ? group_end(p, i) : 0;
            if (!end)
                return 0;
            step = end - i;
        } else if (ch == '|' || ch == ')' || ch == '?' || ch == '*' || ch == '+' || ch == '{') {
            return 0; /* a top-level alternative, or a quantifier of nothing */
        } else if (ch != '.' && ch != '^' && ch != '$') {
            lit = ch;
        }
        if (lit >= 0x80)
            return 0;
        unsigned long min = 1;
        int q = quantifier_at(p + i + step, &min);
        if (q < 0)
            return 0;
        if (lit >= 0 && min > 0 && rn < LITERAL_MAX)
            run[rn++] = (char)lower((unsigned char)lit);
        if (lit < 0 || q > 0) { /* the run ends here */
            if (rn > best) {
                memcpy(out, run, rn);
                out[rn] = '\0';
                best = rn;
            }
            rn = 0;
        }
        i += step + (size_t)q;
    }
    if (rn > best) {
        memcpy(out, run, rn);
        out[rn] = '\0';
        best = rn;
    }
    *anchored = p[0] == '^';
    return best;
}

/* The cache */

struct ua_slot {
    char *ua; /* malloc'd copy; NULL: free slot */
    size_t n;
    uint64_t hash;
    struct ua_info info;
};

struct classify {
    pcre2_code *isbot; /* isbot's list as one regex */
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    struct scanner sc;             /* the fast path (below) */
    pcre2_code *anchored;          /* isbot's patterns that start with '^' */
    pcre2_code *loose;             /* ... those with no literal; NULL: none */
    pcre2_code *each[ISBOT_COUNT]; /* ... those with one, each alone; else NULL */
    char literal[ISBOT_COUNT][LITERAL_MAX + 1];
    size_t literals;         /* how many patterns have one */
    bool reference;          /* the fast path is off (classify_set_reference) */
    _Atomic uint64_t misses; /* classify_counts; written by the one thread */
    _Atomic uint64_t hurried;
    struct ua_slot *slots; /* open addressing, linear probing */
    size_t nslots;         /* a power of two, at least twice max_entries */
    size_t used;
    size_t max_entries; /* 0: no cache */
    unsigned char key[crypto_shorthash_KEYBYTES];
};

static uint64_t ua_hash(const struct classify *c, const char *ua, size_t n)
{
    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, (const unsigned char *)ua, n, c->key);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)h[i] << (8 * i);
    return v;
}

static void cache_clear(struct classify *c)
{
    for (size_t i = 0; i < c->nslots; i++) {
        free(c->slots[i].ua);
        c->slots[i].ua = NULL;
    }
    c->used = 0;
}

/* The slot holding 'ua', or the free slot where it would go. */
static struct ua_slot *cache_find(struct classify *c, const char *ua, size_t n, uint64_t h)
{
    size_t mask = c->nslots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct ua_slot *s = &c->slots[i];
        if (!s->ua)
            return s;
        if (s->hash == h && s->n == n && memcmp(s->ua, ua, n) == 0)
            return s;
    }
}

/* Setup */

/* isbot's patterns in 'pat', as one alternation, each in its own group so
 * that none can reach into its neighbours, compiled (and JIT-compiled), or
 * NULL, logged. */
static pcre2_code *compile_isbot(const struct buf *pat)
{
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)buf_cstr(pat), pat->len,
                                   PCRE2_CASELESS | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_UTF,
                                   &errcode, &erroff, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        log_fail(ERR_INVALID, "cannot compile the isbot %s patterns: %s at '%.40s'", ISBOT_VERSION,
                 (const char *)msg, buf_cstr(pat) + erroff);
        return NULL;
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* without JIT it is slower, not wrong */
    return re;
}

static void add_alternative(struct buf *pat, const char *p)
{
    buf_adds(pat, pat->len ? "|(?:" : "(?:");
    buf_adds(pat, p);
    buf_addc(pat, ')');
}

/* The regexes and the needles of the fast path. */
static int fast_path_init(struct classify *c)
{
    int rc = ERR_INVALID;
    struct buf anchored = BUF_INIT, loose = BUF_INIT, one = BUF_INIT;
    struct needle *v = calloc(NEEDLES_MAX, sizeof(*v));
    if (!v)
        abort();
    size_t n = 0;
    for (size_t i = 0; i < KIND_COUNT; i++)
        v[n++] = (struct needle){kind_rules[i].marker, (unsigned char)strlen(kind_rules[i].marker),
                                 (unsigned short)i};
    for (size_t i = 0; i < ISBOT_COUNT; i++) {
        bool at_start;
        size_t len = literal_of(isbot_patterns[i], c->literal[i], &at_start);
        if (at_start) {
            add_alternative(&anchored, isbot_patterns[i]);
        } else if (len) {
            buf_reset(&one);
            add_alternative(&one, isbot_patterns[i]);
            if (!(c->each[i] = compile_isbot(&one)))
                goto out;
            v[n++] = (struct needle){c->literal[i], (unsigned char)len,
                                     (unsigned short)(KIND_COUNT + i)};
            c->literals++;
        } else {
            add_alternative(&loose, isbot_patterns[i]);
        }
    }
    if (!scanner_init(&c->sc, v, n)) {
        rc = log_fail(ERR_INVALID, "too many one-byte literals in the isbot patterns");
        goto out;
    }
    v = NULL; /* the scanner's */
    if (!anchored.len)
        add_alternative(&anchored, "(*FAIL)");
    if (!(c->anchored = compile_isbot(&anchored)))
        goto out;
    if (loose.len && !(c->loose = compile_isbot(&loose)))
        goto out;
    rc = ERR_OK;
out:
    free(v);
    buf_release(&anchored);
    buf_release(&loose);
    buf_release(&one);
    return rc;
}

int classify_new(size_t cache_entries, struct classify **out)
{
    *out = NULL;
    if (cache_entries > UA_CACHE_MAX)
        return log_fail(ERR_TOOBIG, "user agent cache of %zu entries is too big", cache_entries);
    if (sodium_init() < 0)
        abort();

    struct classify *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    int rc = ERR_INVALID;

    /* One alternation, as isbot itself builds it. */
    struct buf pat = BUF_INIT;
    for (size_t i = 0; i < ARRAY_LEN(isbot_patterns); i++)
        add_alternative(&pat, isbot_patterns[i]);
    if (!(c->isbot = compile_isbot(&pat)))
        goto out;
    if (fast_path_init(c) != ERR_OK)
        goto out;
    c->md = pcre2_match_data_create_from_pattern(c->isbot, NULL);
    c->mctx = pcre2_match_context_create(NULL);
    if (!c->md || !c->mctx)
        abort();
    pcre2_set_match_limit(c->mctx, ISBOT_MATCH_LIMIT);

    if (cache_entries) {
        size_t nslots = 8;
        while (nslots < 2 * cache_entries)
            nslots *= 2;
        c->slots = calloc(nslots, sizeof(*c->slots));
        if (!c->slots)
            abort();
        c->nslots = nslots;
        c->max_entries = cache_entries;
        crypto_shorthash_keygen(c->key);
    }
    rc = ERR_OK;
    *out = c;
    c = NULL;
out:
    buf_release(&pat);
    classify_free(c);
    return rc;
}

void classify_free(struct classify *c)
{
    if (!c)
        return;
    if (c->slots)
        cache_clear(c);
    free(c->slots);
    pcre2_match_context_free(c->mctx);
    pcre2_match_data_free(c->md);
    pcre2_code_free(c->isbot);
    pcre2_code_free(c->anchored);
    pcre2_code_free(c->loose);
    for (size_t i = 0; i < ISBOT_COUNT; i++)
        pcre2_code_free(c->each[i]);
    free(c->sc.multi);
    free(c);
}

/* User agents */

/* True when isbot's list matches. A match that fails (the step limit) is
 * taken as a bot: no browser sends a user agent that costs that much. */
static bool matches(struct classify *c, const pcre2_code *re, const char *ua, size_t n,
                    uint32_t options)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)ua, n, 0, options, c->md, c->mctx);
    return rc != PCRE2_ERROR_NOMATCH;
}

/* The same answer, the fast way: 'f' holds the needles found in 'ua'. */
static bool isbot_matches(struct classify *c, const char *ua, size_t n, const struct found *f)
{
    if (!f)
        return matches(c, c->isbot, ua, n, 0);
    if (matches(c, c->anchored, ua, n, PCRE2_ANCHORED))
        return true;
    if (c->loose && matches(c, c->loose, ua, n, 0))
        return true;
    for (size_t i = 0; i < ISBOT_COUNT; i++) {
        if (c->each[i] && found_has(f, KIND_COUNT + i) && matches(c, c->each[i], ua, n, 0))
            return true;
    }
    return false;
}

/* The first kind rule whose marker is in 'low' (the user agent lowercased),
 * or NULL; '*agent' is the name of the first rule found that names one, or
 * NULL. The scan goes on past the first hit only while no name is found.
 * 'f', unless NULL, holds the needles found in 'low'. */
static const struct kind_rule *kind_rule_of(const char *low, size_t n, const struct found *f,
                                            const char **agent)
{
    const struct kind_rule *hit = NULL;
    *agent = NULL;
    if (f && !found_any(f, KIND_COUNT))
        return NULL;
    for (size_t i = 0; i < ARRAY_LEN(kind_rules) && !*agent; i++) {
        if (f ? found_has(f, i)
              : memmem(low, n, kind_rules[i].marker, strlen(kind_rules[i].marker)) != NULL) {
            if (!hit)
                hit = &kind_rules[i];
            *agent = kind_rules[i].agent;
        }
    }
    return hit;
}

/* Blanks every in-app token of 'ua' in its lowercased copy 'low'. */
static void mask_in_apps(const char *ua, char *low, size_t n)
{
    for (size_t i = 0; i < ARRAY_LEN(in_apps); i++) {
        size_t m = strlen(in_apps[i].token);
        for (const char *p = ua; (p = memmem(p, n - (size_t)(p - ua), in_apps[i].token, m)); p += m)
            memset(low + (p - ua), ' ', m);
    }
}

static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_ows((unsigned char)s[i]) && s[i] != '\r' && s[i] != '\n')
            return false;
    }
    return true;
}

static void set_bot(struct ua_info *out, enum bot_kind kind, const char *agent)
{
    out->bot = kind;
    out->agent = agent ? agent : "other";
}

/* The decision, in order: empty; a sure marker (our own rules win over
 * everything); an in-app browser (a person, whatever isbot says), unless a
 * bot's marker is found outside the apps' own tokens: then, as for any
 * other user agent, isbot. */
static void classify_uncached(struct classify *c, const char *ua, size_t n, bool hurry,
                              struct ua_info *out)
{
    *out = (struct ua_info){"Other", "Other", DEV_BOT, BOT_OTHER, "other"};
    if (is_blank(ua, n)) {
        out->bot = BOT_EMPTY_UA;
        return;
    }
    char stack[UA_STACK] = ""; /* all written below; GCC cannot tell */
    char *low = n <= sizeof(stack) ? stack : malloc(n);
    if (!low)
        abort();
    for (size_t i = 0; i < n; i++)
        low[i] = (char)lower((unsigned char)ua[i]);
    struct found found, masked;
    bool fast = !c->reference && n <= UA_FAST_MAX;
    if (fast)
        scanner_find(&c->sc, low, n, &found);
    const char *agent;
    const struct kind_rule *hit = kind_rule_of(low, n, fast ? &found : NULL, &agent);
    if (hit && hit->sure) {
        set_bot(out, hit->kind, agent);
        goto out;
    }
    bool in_app = starts_with(ua, n, "Mozilla/5.0 (") && in_app_browser(ua, n);
    if (in_app && hit) {
        /* "Snapchat" is the marker of Snapchat's fetcher and the token of its
         * in-app browser: only a marker elsewhere names a bot. */
        mask_in_apps(ua, low, n);
        if (fast)
            scanner_find(&c->sc, low, n, &masked);
        hit = kind_rule_of(low, n, fast ? &masked : NULL, &agent);
        in_app = !hit;
    }
    if (!in_app && isbot_matches(c, ua, n, fast ? &found : NULL)) {
        set_bot(out, hit ? hit->kind : BOT_OTHER, agent);
        goto out;
    }
    out->bot = BOT_NONE;
    out->agent = NULL;
    if (hurry) {
        out->browser = out->os = "Unknown";
        out->device = DEV_UNKNOWN;
        goto out;
    }
    out->browser = browser_of(ua, n);
    out->os = os_of(ua, n);
    out->device = device_of(ua, n);
out:
    if (low != stack)
        free(low);
}

static void count(_Atomic uint64_t *v)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* classify_ua, and classify_ua_hurried with 'hurry'. */
static bool classify_ua_as(struct classify *c, const char *ua, size_t n, bool hurry,
                           struct ua_info *out)
{
    if (!ua) {
        ua = "";
        n = 0;
    }
    if (!c->max_entries || n > UA_CACHE_KEY_MAX) {
        count(&c->misses);
        classify_uncached(c, ua, n, hurry, out);
        if (hurry && out->bot == BOT_NONE)
            count(&c->hurried);
        return hurry && out->bot == BOT_NONE;
    }
    uint64_t h = ua_hash(c, ua, n);
    struct ua_slot *s = cache_find(c, ua, n, h);
    if (s->ua) {
        *out = s->info;
        return false;
    }
    count(&c->misses);
    if (hurry) {
        classify_uncached(c, ua, n, true, out);
        if (out->bot != BOT_NONE)
            return false;
        count(&c->hurried);
        return true;
    }
    classify_uncached(c, ua, n, false, out);
    if (c->used == c->max_entries) {
        cache_clear(c);
        s = cache_find(c, ua, n, h);
    }
    s->ua = malloc(n ? n : 1);
    if (!s->ua)
        abort();
    if (n)
        memcpy(s->ua, ua, n);
    s->n = n;
    s->hash = h;
    s->info = *out;
    c->used++;
    return false;
}

void classify_ua(struct classify *c, const char *ua, size_t n, struct ua_info *out)
{
    (void)classify_ua_as(c, ua, n, false, out);
}

bool classify_ua_hurried(struct classify *c, const char *ua, size_t n, struct ua_info *out)
{
    return classify_ua_as(c, ua, n, true, out);
}

void classify_counts(const struct classify *c, uint64_t *misses, uint64_t *hurried)
{
    *misses = atomic_load_explicit(&c->misses, memory_order_relaxed);
    *hurried = atomic_load_explicit(&c->hurried, memory_order_relaxed);
}

void classify_set_reference(struct classify *c, bool on) { c->reference = on; }

size_t classify_literals(const struct classify *c) { return c->literals; }

const char *classify_agent_name(size_t i)
{
    for (size_t k = 0; k < ARRAY_LEN(kind_rules); k++) {
        const char *name = kind_rules[k].agent;
        bool seen = !name;
        for (size_t j = 0; j < k && !seen; j++)
            seen = kind_rules[j].agent && strcmp(kind_rules[j].agent, name) == 0;
        if (!seen && i-- == 0)
            return name;
    }
    return i == 0 ? "other" : NULL;
}

/* Prefetch */

bool classify_is_prefetch(const char *sec_purpose, size_t n1, const char *purpose, size_t n2,
                          const char *x_purpose, size_t n3, const char *x_moz, size_t n4)
{
    if (sec_purpose &&
        (has_nocase(sec_purpose, n1, "prefetch") || has_nocase(sec_purpose, n1, "prerender")))
        return true;
    if (purpose && has_nocase(purpose, n2, "prefetch"))
        return true;
    if (x_purpose &&
        (has_nocase(x_purpose, n3, "preview") || has_nocase(x_purpose, n3, "prefetch")))
        return true;
    return x_moz && has_nocase(x_moz, n4, "prefetch");
}

/* Client hints
 *
 * Sec-CH-UA is a structured-field list of strings with parameters
 * ('"Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"') and
 * Sec-CH-UA-Platform one string. Read by hand: only the strings are wanted,
 * a few lines do it, and no packaged C library parses structured fields. */

static const struct {
    const char *brand; /* exactly as browsers send it */
    const char *browser;
} hint_brands[] = {
    {"Google Chrome", "Chrome"},
    {"Microsoft Edge", "Edge"},
    {"Opera", "Opera"},
    {"Opera GX", "Opera"},
    {"Samsung Internet", "Samsung Internet"},
};

static const struct {
    const char *platform;
    const char *os;
} hint_platforms[] = {
    {"Windows", "Windows"}, {"macOS", "macOS"},        {"iOS", "iOS"},
    {"Android", "Android"}, {"Chrome OS", "ChromeOS"}, {"Chromium OS", "ChromeOS"},
    {"Linux", "Linux"},
};

/* The next sf-string of a list at *p (its parameters and the comma after
 * it skipped): its bytes between the quotes, escapes left in (no brand has
 * one). false at the end, or when what follows is not a string. */
static bool next_sf_string(const char **p, const char *end, const char **s, size_t *n)
{
    const char *q = *p;
    while (q < end && (*q == ' ' || *q == '\t' || *q == ','))
        q++;
    if (q >= end || *q != '"')
        return false;
    *s = ++q;
    while (q < end && *q != '"')
        q += *q == '\\' && end - q > 1 ? 2 : 1;
    if (q >= end)
        return false;
    *n = (size_t)(q - *s);
    q++;
    bool quoted = false; /* a parameter's value may be a string with a comma */
    while (q < end && (quoted || *q != ',')) {
        if (*q == '\\' && quoted && end - q > 1)
            q++;
        else if (*q == '"')
            quoted = !quoted;
        q++;
    }
    *p = q;
    return true;
}

static bool sf_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

void classify_hints(const char *ch_ua, size_t n1, const char *ch_mobile, size_t n2,
                    const char *ch_platform, size_t n3, struct ua_info *io)
{
    if (io->bot != BOT_NONE)
        return;
    const char *s, *p = ch_ua, *end = ch_ua ? ch_ua + n1 : NULL;
    size_t n;
    const char *browser = NULL;
    bool chromium = false;
    /* Chromium's GREASE brands ("Not A(Brand", "Not;A=Brand"...), made up to
     * keep servers from trusting the list's order or names, match no name
     * here: only the table's brands and "Chromium" are read. */
    while (p && next_sf_string(&p, end, &s, &n)) {
        chromium |= sf_is(s, n, "Chromium");
        for (size_t i = 0; !browser && i < ARRAY_LEN(hint_brands); i++)
            if (sf_is(s, n, hint_brands[i].brand))
                browser = hint_brands[i].browser;
    }
    if (browser)
        io->browser = browser;
    else if (chromium && (!strcmp(io->browser, "Other") || !strcmp(io->browser, "Unknown")))
        io->browser = "Chrome"; /* Chromium alone; an in-app browser's name is kept */

    const char *os = NULL, *q = ch_platform;
    if (q && next_sf_string(&q, ch_platform + n3, &s, &n))
        for (size_t i = 0; !os && i < ARRAY_LEN(hint_platforms); i++)
            if (sf_is(s, n, hint_platforms[i].platform))
                os = hint_platforms[i].os;
    if (os && !(!strcmp(os, "iOS") && !strcmp(io->os, "iPadOS")))
        io->os = os;

    bool android = os && !strcmp(os, "Android");
    if (ch_mobile && sf_is(ch_mobile, n2, "?1")) {
        io->device = DEV_MOBILE;
    } else if (ch_mobile && sf_is(ch_mobile, n2, "?0") &&
               (io->device == DEV_MOBILE || io->device == DEV_UNKNOWN)) {
        if (android)
            io->device = DEV_TABLET;
        else if (os)
            io->device = DEV_DESKTOP;
    }
}

/* Referrers
 *
 * Host rules, checked in order after the self hosts: the first match gives
 * the group. Email comes before search and social because webmail lives on
 * their domains (mail.google.com, mail.yahoo.com); a few Google and Yahoo
 * hosts that are not search are named as plain referrals before the brands. */

enum host_match {
    HM_DOMAIN, /* the host or any subdomain of it */
    HM_BRAND,  /* [sub.]brand.<tld> or [sub.]brand.<co|com|...>.<cc>: "google" */
    HM_PREFIX, /* the host starts with it: "mail." */
    HM_LABEL,  /* one of the host's labels is it: "mastodon" */
};

static const struct host_rule {
    enum host_match how;
    const char *s;
    enum ref_group group;
} host_rules[] = {
    {HM_DOMAIN, "mail.google.com", REF_EMAIL},
    {HM_DOMAIN, "inbox.google.com", REF_EMAIL},
    {HM_DOMAIN, "outlook.live.com", REF_EMAIL},
    {HM_DOMAIN, "outlook.office.com", REF_EMAIL},
    {HM_DOMAIN, "outlook.office365.com", REF_EMAIL},
    {HM_DOMAIN, "outlook.com", REF_EMAIL}, /* and Safe Links: *.safelinks.protection.outlook.com */
    {HM_DOMAIN, "mail.yahoo.com", REF_EMAIL},
    {HM_DOMAIN, "mail.yahoo.co.jp", REF_EMAIL},
    {HM_DOMAIN, "mail.aol.com", REF_EMAIL},
    {HM_DOMAIN, "mail.proton.me", REF_EMAIL},
    {HM_DOMAIN, "mail.protonmail.com", REF_EMAIL},
    {HM_DOMAIN, "fastmail.com", REF_EMAIL},
    {HM_DOMAIN, "mail.ru", REF_EMAIL},
    {HM_DOMAIN, "deref-gmx.net", REF_EMAIL},
    {HM_DOMAIN, "deref-web.de", REF_EMAIL},
    {HM_DOMAIN, "deref-mail.com", REF_EMAIL},
    {HM_PREFIX, "mail.", REF_EMAIL},
    {HM_PREFIX, "webmail.", REF_EMAIL},
    {HM_PREFIX, "email.", REF_EMAIL},
    {HM_LABEL, "webmail", REF_EMAIL},

    {HM_DOMAIN, "accounts.google.com", REF_REFERRAL},
    {HM_DOMAIN, "docs.google.com", REF_REFERRAL},
    {HM_DOMAIN, "drive.google.com", REF_REFERRAL},
    {HM_DOMAIN, "sites.google.com", REF_REFERRAL},
    {HM_DOMAIN, "groups.google.com", REF_REFERRAL},
    {HM_DOMAIN, "play.google.com", REF_REFERRAL},
    {HM_DOMAIN, "translate.google.com", REF_REFERRAL},
    {HM_DOMAIN, "finance.yahoo.com", REF_REFERRAL},

    {HM_BRAND, "google", REF_SEARCH},
    {HM_DOMAIN, "bing.com", REF_SEARCH},
    {HM_DOMAIN, "duckduckgo.com", REF_SEARCH},
    {HM_BRAND, "yahoo", REF_SEARCH},
    {HM_BRAND, "yandex", REF_SEARCH},
    {HM_DOMAIN, "ya.ru", REF_SEARCH},
    {HM_BRAND, "baidu", REF_SEARCH},
    {HM_DOMAIN, "ecosia.org", REF_SEARCH},
    {HM_DOMAIN, "search.brave.com", REF_SEARCH},
    {HM_DOMAIN, "startpage.com", REF_SEARCH},
    {HM_DOMAIN, "qwant.com", REF_SEARCH},
    {HM_DOMAIN, "naver.com", REF_SEARCH},
    {HM_DOMAIN, "seznam.cz", REF_SEARCH},
    {HM_DOMAIN, "ask.com", REF_SEARCH},
    {HM_DOMAIN, "search.aol.com", REF_SEARCH},
    {HM_DOMAIN, "sogou.com", REF_SEARCH},
    {HM_DOMAIN, "so.com", REF_SEARCH},
    {HM_DOMAIN, "daum.net", REF_SEARCH},
    {HM_DOMAIN, "coccoc.com", REF_SEARCH},
    {HM_DOMAIN, "kagi.com", REF_SEARCH},
    {HM_DOMAIN, "you.com", REF_SEARCH},
    {HM_DOMAIN, "mojeek.com", REF_SEARCH},
    {HM_DOMAIN, "yep.com", REF_SEARCH},
    {HM_DOMAIN, "perplexity.ai", REF_SEARCH},
    {HM_DOMAIN, "petalsearch.com", REF_SEARCH},
    {HM_DOMAIN, "search.lycos.com", REF_SEARCH},
    {HM_DOMAIN, "dogpile.com", REF_SEARCH},
    {HM_DOMAIN, "metager.org", REF_SEARCH},
    {HM_DOMAIN, "swisscows.com", REF_SEARCH},

    {HM_DOMAIN, "facebook.com", REF_SOCIAL},
    {HM_DOMAIN, "fb.com", REF_SOCIAL},
    {HM_DOMAIN, "fb.me", REF_SOCIAL},
    {HM_DOMAIN, "messenger.com", REF_SOCIAL},
    {HM_DOMAIN, "instagram.com", REF_SOCIAL},
    {HM_DOMAIN, "t.co", REF_SOCIAL},
    {HM_DOMAIN, "twitter.com", REF_SOCIAL},
    {HM_DOMAIN, "x.com", REF_SOCIAL},
    {HM_DOMAIN, "linkedin.com", REF_SOCIAL},
    {HM_DOMAIN, "lnkd.in", REF_SOCIAL},
    {HM_DOMAIN, "reddit.com", REF_SOCIAL},
    {HM_DOMAIN, "redd.it", REF_SOCIAL},
    {HM_DOMAIN, "tiktok.com", REF_SOCIAL},
    {HM_DOMAIN, "youtube.com", REF_SOCIAL},
    {HM_DOMAIN, "youtu.be", REF_SOCIAL},
    {HM_BRAND, "pinterest", REF_SOCIAL},
    {HM_DOMAIN, "pin.it", REF_SOCIAL},
    {HM_DOMAIN, "threads.net", REF_SOCIAL},
    {HM_DOMAIN, "threads.com", REF_SOCIAL},
    {HM_DOMAIN, "bsky.app", REF_SOCIAL},
    {HM_DOMAIN, "bsky.social", REF_SOCIAL},
    {HM_LABEL, "mastodon", REF_SOCIAL},
    {HM_LABEL, "mstdn", REF_SOCIAL},
    {HM_DOMAIN, "mas.to", REF_SOCIAL},
    {HM_DOMAIN, "fosstodon.org", REF_SOCIAL},
    {HM_DOMAIN, "hachyderm.io", REF_SOCIAL},
    {HM_DOMAIN, "infosec.exchange", REF_SOCIAL},
    {HM_DOMAIN, "whatsapp.com", REF_SOCIAL},
    {HM_DOMAIN, "wa.me", REF_SOCIAL},
    {HM_DOMAIN, "telegram.org", REF_SOCIAL},
    {HM_DOMAIN, "t.me", REF_SOCIAL},
    {HM_DOMAIN, "discord.com", REF_SOCIAL},
    {HM_DOMAIN, "discord.gg", REF_SOCIAL},
    {HM_DOMAIN, "discordapp.com", REF_SOCIAL},
    {HM_DOMAIN, "slack.com", REF_SOCIAL},
    {HM_DOMAIN, "teams.microsoft.com", REF_SOCIAL},
    {HM_DOMAIN, "teams.live.com", REF_SOCIAL},
    {HM_DOMAIN, "vk.com", REF_SOCIAL},
    {HM_DOMAIN, "ok.ru", REF_SOCIAL},
    {HM_DOMAIN, "weibo.com", REF_SOCIAL},
    {HM_DOMAIN, "tumblr.com", REF_SOCIAL},
    {HM_DOMAIN, "quora.com", REF_SOCIAL},
    {HM_DOMAIN, "snapchat.com", REF_SOCIAL},
    {HM_DOMAIN, "news.ycombinator.com", REF_SOCIAL},
    {HM_DOMAIN, "line.me", REF_SOCIAL},
    {HM_DOMAIN, "twitch.tv", REF_SOCIAL},
};

/* Android apps (android-app://PACKAGE/) by package name. */
static const struct {
    const char *package;
    enum ref_group group;
} android_apps[] = {
    {"com.google.android.gm", REF_EMAIL},
    {"com.microsoft.office.outlook", REF_EMAIL},
    {"com.yahoo.mobile.client.android.mail", REF_EMAIL},
    {"ch.protonmail.android", REF_EMAIL},
    {"com.google.android.googlequicksearchbox", REF_SEARCH},
    {"com.facebook.katana", REF_SOCIAL},
    {"com.facebook.orca", REF_SOCIAL},
    {"com.instagram.android", REF_SOCIAL},
    {"com.twitter.android", REF_SOCIAL},
    {"com.linkedin.android", REF_SOCIAL},
    {"com.reddit.frontpage", REF_SOCIAL},
    {"com.zhiliaoapp.musically", REF_SOCIAL},
    {"com.ss.android.ugc.trill", REF_SOCIAL},
    {"com.snapchat.android", REF_SOCIAL},
    {"com.pinterest", REF_SOCIAL},
    {"com.whatsapp", REF_SOCIAL},
    {"org.telegram.messenger", REF_SOCIAL},
    {"com.discord", REF_SOCIAL},
    {"com.slack", REF_SOCIAL},
    {"org.joinmastodon.android", REF_SOCIAL},
    {"com.google.android.youtube", REF_SOCIAL},
    {"xyz.blueskyweb.app", REF_SOCIAL},
    {"jp.naver.line.android", REF_SOCIAL},
};

static bool ends_with_label(const char *h, size_t n, const char *dom)
{
    size_t m = strlen(dom);
    if (n == m)
        return memcmp(h, dom, m) == 0;
    return n > m && h[n - m - 1] == '.' && memcmp(h + n - m, dom, m) == 0;
}

/* The tail after "brand.": "com", "de", "co.uk", "com.br" - not "evil.com". */
static bool is_public_suffix_like(const char *t, size_t n)
{
    static const char *const second_levels[] = {"co",  "com", "org", "net", "ac", "gov",
                                                "edu", "ne",  "or",  "go",  "gob"};
    const char *dot = memchr(t, '.', n);
    if (!dot)
        return n >= 2;
    size_t first = (size_t)(dot - t);
    size_t rest = n - first - 1;
    if (rest != 2 || memchr(dot + 1, '.', rest))
        return false;
    for (size_t i = 0; i < ARRAY_LEN(second_levels); i++) {
        if (strlen(second_levels[i]) == first && memcmp(t, second_levels[i], first) == 0)
            return true;
    }
    return false;
}

static bool brand_matches(const char *h, size_t n, const char *brand)
{
    size_t m = strlen(brand);
    for (size_t i = 0; i + m < n; i++) {
        if ((i == 0 || h[i - 1] == '.') && memcmp(h + i, brand, m) == 0 && h[i + m] == '.' &&
            is_public_suffix_like(h + i + m + 1, n - i - m - 1))
            return true;
    }
    return false;
}

static bool label_matches(const char *h, size_t n, const char *label)
{
    size_t m = strlen(label);
    for (size_t i = 0; i + m <= n; i++) {
        if ((i == 0 || h[i - 1] == '.') && memcmp(h + i, label, m) == 0 &&
            (i + m == n || h[i + m] == '.'))
            return true;
    }
    return false;
}

static bool host_rule_matches(const struct host_rule *r, const char *h, size_t n)
{
    switch (r->how) {
    case HM_DOMAIN: return ends_with_label(h, n, r->s);
    case HM_BRAND: return brand_matches(h, n, r->s);
    case HM_PREFIX: return starts_with(h, n, r->s) && n > strlen(r->s);
    case HM_LABEL: return label_matches(h, n, r->s);
    }
    return false;
}

/* True when the lowercase host h equals self host 'self' once the latter's
 * case, port, brackets and trailing dot are set aside. */
static bool is_self_host(const char *h, size_t n, const char *self)
{
    size_t m = strlen(self);
    const char *p = self;
    if (m && p[0] == '[') {
        const char *close = memchr(p, ']', m);
        if (!close)
            return false;
        p++;
        m = (size_t)(close - p);
    } else {
        const char *colon = memchr(p, ':', m);
        if (colon && !memchr(colon + 1, ':', m - (size_t)(colon - p) - 1))
            m = (size_t)(colon - p); /* host:port; more than one ':' is bare IPv6 */
    }
    if (m && p[m - 1] == '.')
        m--;
    if (m != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (lower((unsigned char)p[i]) != (unsigned char)h[i])
            return false;
    }
    return true;
}

static bool is_host_char(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_';
}

#define HOST_MAX 253 /* the longest DNS name */

/* Parses 'scheme://[userinfo@]host[:port]...' into a lowercase host and
 * whether the scheme is android-app. False when it is not that shape. */
static bool parse_referrer(const char *r, size_t n, char h[HOST_MAX + 1], size_t *hn, bool *android)
{
    size_t i = 0;
    while (i < n && (is_alpha((unsigned char)r[i]) ||
                     (i > 0 && (is_digit((unsigned char)r[i]) || r[i] == '+' || r[i] == '-' ||
                                r[i] == '.'))))
        i++;
    if (i == 0 || n - i < 3 || memcmp(r + i, "://", 3) != 0)
        return false;
    *android = i == 11 && has_nocase(r, i, "android-app");

    size_t a = i + 3, end = a;
    while (end < n && r[end] != '/' && r[end] != '?' && r[end] != '#' && r[end] != '\\')
        end++;
    for (size_t k = end; k > a; k--) {
        if (r[k - 1] == '@') {
            a = k; /* userinfo is never part of the host */
            break;
        }
    }

    size_t hb, he, port;
    if (a < end && r[a] == '[') {
        const char *close = memchr(r + a, ']', end - a);
        if (!close)
            return false;
        hb = a + 1;
        he = (size_t)(close - r);
        port = he + 1;
        for (size_t k = hb; k < he; k++) {
            unsigned char c = (unsigned char)r[k];
            if (!is_digit(c) && !(lower(c) >= 'a' && lower(c) <= 'f') && c != ':' && c != '.')
                return false;
        }
    } else {
        hb = a;
        he = a;
        while (he < end && r[he] != ':')
            he++;
        port = he;
        for (size_t k = hb; k < he; k++) {
            if (!is_host_char((unsigned char)r[k]))
                return false;
        }
    }
    if (port < end) {
        if (r[port] != ':')
            return false;
        for (size_t k = port + 1; k < end; k++) {
            if (!is_digit((unsigned char)r[k]))
                return false;
        }
    }
    if (he > hb && r[he - 1] == '.')
        he--;
    if (he == hb || he - hb > HOST_MAX)
        return false;
    for (size_t k = hb; k < he; k++)
        h[k - hb] = (char)lower((unsigned char)r[k]);
    *hn = he - hb;
    h[*hn] = '\0';
    return true;
}

void classify_referrer(const char *ref, size_t n, const char *const *self_hosts,
                       char host[DIM_MAX + 1], enum ref_group *group)
{
    host[0] = '\0';
    *group = REF_DIRECT;
    if (!ref)
        return;
    while (n > 0 && is_ows((unsigned char)ref[0])) {
        ref++;
        n--;
    }
    while (n > 0 && is_ows((unsigned char)ref[n - 1]))
        n--;

    char h[HOST_MAX + 1];
    size_t hn;
    bool android;
    if (!parse_referrer(ref, n, h, &hn, &android))
        return;

    enum ref_group g = REF_REFERRAL;
    if (android) {
        for (size_t i = 0; i < ARRAY_LEN(android_apps); i++) {
            if (strcmp(h, android_apps[i].package) == 0) {
                g = android_apps[i].group;
                break;
            }
        }
        goto done;
    }
    for (size_t i = 0; self_hosts && self_hosts[i]; i++) {
        if (is_self_host(h, hn, self_hosts[i])) {
            g = REF_INTERNAL;
            goto done;
        }
    }
    for (size_t i = 0; i < ARRAY_LEN(host_rules); i++) {
        if (host_rule_matches(&host_rules[i], h, hn)) {
            g = host_rules[i].group;
            break;
        }
    }
done:
    clamp_utf8(h, hn, host);
    *group = g;
}

/* Accept-Language */

/* Parses "q=0.8" style weights into thousandths; false when malformed. */
static bool parse_q(const char *s, size_t n, int *q)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1'))
        return false;
    int v = (s[0] - '0') * 1000;
    size_t i = 1;
    if (i < n && s[i] == '.') {
        i++;
        int scale = 100;
        for (size_t digits = 0; i < n && is_digit((unsigned char)s[i]); i++, digits++) {
            if (digits == 3)
                return false;
            v += (s[i] - '0') * scale;
            scale /= 10;
        }
    }
    if (i != n || v > 1000)
        return false;
    *q = v;
    return true;
}

void classify_language(const char *al, size_t n, char out[16])
{
    out[0] = '\0';
    if (!al)
        return;
    int best_q = 0;
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && al[e] != ',')
            e++;
        /* One entry al[i..e): "tag *( OWS ';' OWS param )". */
        size_t p = i;
        while (p < e && is_ows((unsigned char)al[p]))
            p++;
        size_t tb = p;
        while (p < e && al[p] != ';' && !is_ows((unsigned char)al[p]))
            p++;
        size_t te = p;
        int q = 1000;
        bool ok = te > tb;
        while (ok && p < e) {
            while (p < e && is_ows((unsigned char)al[p]))
                p++;
            if (p == e)
                break;
            if (al[p] != ';') {
                ok = false;
                break;
            }
            p++;
            while (p < e && is_ows((unsigned char)al[p]))
                p++;
            size_t pb = p;
            while (p < e && al[p] != ';' && !is_ows((unsigned char)al[p]))
                p++;
            if (p - pb >= 2 && lower((unsigned char)al[pb]) == 'q' && al[pb + 1] == '=')
                ok = parse_q(al + pb + 2, p - pb - 2, &q);
        }
        /* The primary subtag: 1-8 letters, then '-', '_' or the end. */
        size_t sb = tb, se = tb;
        while (se < te && is_alpha((unsigned char)al[se]))
            se++;
        bool star = te - tb == 1 && al[tb] == '*';
        if (!star && (se - sb < 2 || se - sb > 8 || (se < te && al[se] != '-' && al[se] != '_')))
            ok = false;
        if (ok && q > best_q) {
            best_q = q;
            size_t len = star ? 0 : se - sb;
            for (size_t k = 0; k < len; k++)
                out[k] = (char)lower((unsigned char)al[sb + k]);
            out[len] = '\0';
        }
        i = e + 1;
    }
}

/* UTM */

/* Percent-decodes v[0..n) into out ('+' is a space; a '%' not followed by two
 * hex digits stays as it is), clamped as clamp_utf8 does. */
static void decode_value(const char *v, size_t n, char out[DIM_MAX + 1])
{
    struct u8clamp u;
    u8_init(&u, out);
    for (size_t i = 0; i < n && !u.full; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < n) {
            int hi = pct_hex_value((unsigned char)v[i + 1]);
            int lo = pct_hex_value((unsigned char)v[i + 2]);
            if (hi >= 0 && lo >= 0) {
                c = (unsigned char)(hi * 16 + lo);
                i += 2;
            }
        }
        u8_feed(&u, c);
    }
    u8_finish(&u);
}

static bool name_is(const char *s, size_t n, const char *name)
{
    if (strlen(name) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (lower((unsigned char)s[i]) != (unsigned char)name[i])
            return false;
    }
    return true;
}

void classify_utm(const char *query, size_t n, char source[DIM_MAX + 1], char medium[DIM_MAX + 1],
                  char campaign[DIM_MAX + 1])
{
    struct {
        const char *name;
        char *out;
        bool seen;
    } params[] = {
        {"utm_source", source, false},
        {"utm_medium", medium, false},
        {"utm_campaign", campaign, false},
    };
    for (size_t k = 0; k < ARRAY_LEN(params); k++)
        params[k].out[0] = '\0';
    if (!query)
        return;
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && query[e] != '&')
            e++;
        const char *eq = memchr(query + i, '=', e - i);
        size_t name_end = eq ? (size_t)(eq - query) : e;
        for (size_t k = 0; k < ARRAY_LEN(params); k++) {
            if (!params[k].seen && name_is(query + i, name_end - i, params[k].name)) {
                params[k].seen = true;
                if (eq)
                    decode_value(eq + 1, e - name_end - 1, params[k].out);
            }
        }
        i = e + 1;
    }
}
