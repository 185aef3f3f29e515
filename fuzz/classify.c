/* classify.c (fuzz) - the click classifier (classify.h) on any header bytes.
 *
 * The input is split at its first two NUL bytes into a user agent, a
 * Referer and the rest, which serves as Accept-Language, as a query string
 * and as the four prefetch headers. Every dimension value written must be
 * valid UTF-8 without control characters, NUL-terminated, at most DIM_MAX
 * bytes (the language at most 15), and the user agent's names must be
 * among the documented ones. The per-UA cache is small so that it fills and
 * clears while fuzzing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clicks/classify.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

static struct classify *cls;
static const char *const self_hosts[] = {"sho.rt", "localhost:8080", NULL};

static void check(int cond)
{
    if (!cond)
        abort();
}

/* Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF), no
 * byte below 0x20 and no 0x7f. */
static void check_text(const char *s, size_t max)
{
    size_t n = strlen(s);
    check(n <= max);
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t len = 0;
        if (c < 0x80)
            len = 1;
        else if ((c & 0xe0) == 0xc0)
            len = 2;
        else if ((c & 0xf0) == 0xe0)
            len = 3;
        else if ((c & 0xf8) == 0xf0)
            len = 4;
        check(len > 0 && i + len <= n);
        check(c >= 0x20 && c != 0x7f);
        unsigned cp = len == 1 ? c : c & (0x7fu >> len);
        for (size_t k = 1; k < len; k++) {
            check((p[i + k] & 0xc0) == 0x80);
            cp = cp << 6 | (p[i + k] & 0x3fu);
        }
        static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
        check(cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff));
        i += len;
    }
}

static void check_name(const char *s, const char *const *names)
{
    check(s != NULL);
    for (; *names; names++) {
        if (strcmp(s, *names) == 0)
            return;
    }
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_level = LOG_OFF;
    if (classify_new(64, &cls) != ERR_OK)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* clang-format off */
    static const char *const browsers[] = {
        "Chrome",   "Firefox",   "Safari",  "Edge",   "Opera", "Samsung Internet",
        "Internet Explorer",     "Instagram", "Facebook", "LinkedIn", "TikTok",
        "Snapchat", "Pinterest", "Twitter", "WeChat", "Line",  "Other", NULL};
    /* clang-format on */
    static const char *const oses[] = {"Windows", "macOS",    "iOS",   "iPadOS", "Android",
                                       "Linux",   "ChromeOS", "Other", NULL};
    const char *p = (const char *)data;
    const char *z1 = memchr(p, '\0', size);
    size_t n_ua = z1 ? (size_t)(z1 - p) : size;
    const char *ref = z1 ? z1 + 1 : p + size;
    size_t left = size - (size_t)(ref - p);
    const char *z2 = memchr(ref, '\0', left);
    size_t n_ref = z2 ? (size_t)(z2 - ref) : left;
    const char *rest = z2 ? z2 + 1 : ref + n_ref;
    size_t n_rest = size - (size_t)(rest - p);

    struct ua_info ui;
    classify_ua(cls, n_ua ? p : NULL, n_ua, &ui);
    check_name(ui.browser, browsers);
    check_name(ui.os, oses);
    check(device_name(ui.device) != NULL);
    if (ui.bot != BOT_NONE) {
        check(ui.device == DEV_BOT && bot_kind_name(ui.bot) != NULL);
        check(strcmp(ui.browser, "Other") == 0 && strcmp(ui.os, "Other") == 0);
    }

    char host[DIM_MAX + 1];
    enum ref_group g;
    classify_referrer(ref, n_ref, self_hosts, host, &g);
    check_text(host, DIM_MAX);
    check(ref_group_name(g) != NULL);
    if (!host[0])
        check(g == REF_DIRECT);
    for (const char *h = host; *h; h++)
        check(!(*h >= 'A' && *h <= 'Z'));

    char lang[16];
    classify_language(rest, n_rest, lang);
    check_text(lang, sizeof(lang) - 1);

    char src[DIM_MAX + 1], med[DIM_MAX + 1], camp[DIM_MAX + 1];
    classify_utm(rest, n_rest, src, med, camp);
    check_text(src, DIM_MAX);
    check_text(med, DIM_MAX);
    check_text(camp, DIM_MAX);

    char out[DIM_MAX + 1];
    size_t n = clamp_utf8(p, size, out);
    check(n == strlen(out));
    check_text(out, DIM_MAX);

    size_t q = n_rest / 4;
    (void)classify_is_prefetch(rest, q, rest + q, q, rest + 2 * q, q, rest + 3 * q, n_rest - 3 * q);
    return 0;
}
