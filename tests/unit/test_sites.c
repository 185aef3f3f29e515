/* test_sites.c - site analytics' pure parts: the beacon payload decoder
 * (beacon.h), the rules of ids and hosts and the host → site table
 * (sites.h), the page record and the dimension writer (pageview.h). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu/urcu-memb.h>

#include "test.h"

#include "base/buf.h"
#include "base/err.h"
#include "clicks/analytics.h"
#include "clicks/classify.h"
#include "clicks/dayrow.h"
#include "clicks/pageview.h"
#include "sites/beacon.h"
#include "sites/sites.h"
#include "store/store.h"
#include "base/banned.h"

/* 'json' as base64url without padding (what the script sends). */
static void b64(const char *json, char *out, size_t cap, int variant)
{
    sodium_bin2base64(out, cap, (const unsigned char *)json, strlen(json), variant);
}

static int decode(const char *json, int variant, struct beacon *b)
{
    char v[BEACON_PAYLOAD_MAX * 2];
    b64(json, v, sizeof(v), variant);
    return beacon_decode(v, strlen(v), b);
}

void test_sites_beacon_decode(void)
{
    struct beacon b;
    const char *pv = "{\"p\":\"/docs/a\",\"h\":\"example.com\",\"r\":\"https://www.google.com/x\","
                     "\"l\":\"en-US\",\"tz\":\"Europe/Paris\",\"w\":1280,\"us\":\"news\","
                     "\"um\":\"mail\",\"uc\":\"spring\",\"uv\":1,\"ss\":1,\"bo\":0,"
                     "\"z\":\"a1b2c3\"}";
    /* Every base64 shape the wire format tolerates reads the same. */
    const int variants[] = {sodium_base64_VARIANT_URLSAFE_NO_PADDING, sodium_base64_VARIANT_URLSAFE,
                            sodium_base64_VARIANT_ORIGINAL,
                            sodium_base64_VARIANT_ORIGINAL_NO_PADDING};
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        if (!CHECK_EQ_INT(decode(pv, variants[i], &b), ERR_OK))
            test_note("variant %d", variants[i]);
        CHECK_EQ_STR(b.p, "/docs/a");
        CHECK_EQ_STR(b.h, "example.com");
        CHECK_EQ_STR(b.r, "https://www.google.com/x");
        CHECK_EQ_STR(b.l, "en-US");
        CHECK_EQ_STR(b.tz, "Europe/Paris");
        CHECK_EQ_INT(b.w, 1280);
        CHECK_EQ_STR(b.us, "news");
        CHECK_EQ_STR(b.um, "mail");
        CHECK_EQ_STR(b.uc, "spring");
        CHECK(b.uv && b.ss && !b.bo);
        CHECK_EQ_STR(b.ev, "");
    }
    /* '+' '/' percent-encoded in a query, and padding as %3D. */
    char v[256];
    b64("{\"p\":\"/?~>>\"}", v, sizeof(v), sodium_base64_VARIANT_ORIGINAL);
    struct buf q = BUF_INIT;
    for (const char *s = v; *s; s++) {
        if (*s == '+' || *s == '/' || *s == '=')
            buf_printf(&q, "%%%02X", (unsigned char)*s);
        else
            buf_addc(&q, *s);
    }
    CHECK(strchr(v, '/') || strchr(v, '+')); /* the case is really tested */
    CHECK_EQ_INT(beacon_decode(q.p, q.len, &b), ERR_OK);
    CHECK_EQ_STR(b.p, "/?~>>");
    buf_release(&q);

    /* Unknown fields of every kind are skipped, escapes decoded. */
    CHECK_EQ_INT(decode("{\"x\":{\"a\":[1,2,{\"b\":null}],\"c\":true},\"y\":-1.5e3,"
                        "\"ev\":\"download\",\"et\":\"/f\\u00e9\\ud83d\\ude00.pdf\",\"q\":[]}",
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING, &b),
                 ERR_OK);
    CHECK_EQ_STR(b.ev, "download");
    CHECK_EQ_STR(b.et, "/f\xc3\xa9\xf0\x9f\x98\x80.pdf");
    CHECK_EQ_INT(b.w, -1);
    /* A wrong type leaves the field absent; the beacon still counts. */
    CHECK_EQ_INT(decode("{\"w\":\"wide\",\"p\":7,\"uv\":true}",
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING, &b),
                 ERR_OK);
    CHECK_EQ_INT(b.w, -1);
    CHECK_EQ_STR(b.p, "");
    CHECK(b.uv);

    /* Malformed: none of these decodes. */
    static const char *const bad_json[] = {
        "",
        "[]",
        "\"p\"",
        "{\"p\":}",
        "{\"p\":\"a\",}",
        "{\"p\" \"a\"}",
        "{p:\"a\"}",
        "{\"p\":\"a\"} x",
        "{\"p\":01}",
        "{\"p\":\"\\x\"}",
        "{\"p\":\"\\ud800\"}",
        "{\"p\":tru}",
        "{\"p\":\"a",
        "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
    };
    for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
        if (!CHECK_EQ_INT(decode(bad_json[i], sodium_base64_VARIANT_URLSAFE_NO_PADDING, &b),
                          ERR_INVALID))
            test_note("json %s", bad_json[i]);
        CHECK_EQ_STR(b.p, "");
    }
    CHECK_EQ_INT(beacon_decode("e30*", 4, &b), ERR_INVALID); /* not base64 */
    CHECK_EQ_INT(beacon_decode("e3", 2, &b), ERR_INVALID);   /* "{" cut */
    CHECK_EQ_INT(beacon_decode("e30", 3, &b), ERR_OK);       /* {} */

    /* Oversized: past 4 KiB of payload, whatever it holds. */
    struct buf big = BUF_INIT;
    buf_adds(&big, "{\"p\":\"");
    for (int i = 0; i < 3100; i++)
        buf_addc(&big, 'a');
    buf_adds(&big, "\"}");
    char *enc = malloc(8192);
    b64(buf_cstr(&big), enc, 8192, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    CHECK(strlen(enc) > BEACON_PAYLOAD_MAX);
    CHECK_EQ_INT(beacon_decode(enc, strlen(enc), &b), ERR_TOOBIG);
    free(enc);
    buf_release(&big);

    /* The clamp: 128 bytes, cut on a character, control characters gone. */
    struct buf lng = BUF_INIT;
    buf_adds(&lng, "{\"p\":\"/\\t");
    for (int i = 0; i < 200; i++)
        buf_adds(&lng, "\xc3\xa9");
    buf_adds(&lng, "\"}");
    CHECK_EQ_INT(decode(buf_cstr(&lng), sodium_base64_VARIANT_URLSAFE_NO_PADDING, &b), ERR_OK);
    CHECK_EQ_INT(strlen(b.p), 127); /* "/" and 63 two-byte characters */
    CHECK(b.p[0] == '/' && (unsigned char)b.p[1] == 0xc3);
    buf_release(&lng);

    CHECK_EQ_STR(beacon_viewport(575), "xs");
    CHECK_EQ_STR(beacon_viewport(576), "sm");
    CHECK_EQ_STR(beacon_viewport(991), "md");
    CHECK_EQ_STR(beacon_viewport(1199), "lg");
    CHECK_EQ_STR(beacon_viewport(1200), "xl");
    CHECK(beacon_viewport(-1) == NULL);
}

void test_sites_rules(void)
{
    const char *why;
    CHECK_EQ_INT(site_id_check("blog-2", 6, &why), ERR_OK);
    CHECK_EQ_INT(site_id_check("", 0, &why), ERR_INVALID);
    CHECK_EQ_INT(site_id_check("Blog", 4, &why), ERR_INVALID);
    CHECK_EQ_INT(site_id_check("a_b", 3, &why), ERR_INVALID);
    char id[70];
    memset(id, 'a', sizeof(id));
    CHECK_EQ_INT(site_id_check(id, 64, &why), ERR_OK);
    CHECK_EQ_INT(site_id_check(id, 65, &why), ERR_INVALID);

    char host[HOST_NAME_MAX_LEN + 1];
    CHECK_EQ_INT(site_host_check("WWW.Example.com.", 16, host, &why), ERR_OK);
    CHECK_EQ_STR(host, "www.example.com");
    CHECK_EQ_INT(site_host_check("a.example:8080", 14, host, &why), ERR_OK);
    CHECK_EQ_STR(host, "a.example");
    CHECK_EQ_INT(site_host_check("https://a.example", 17, host, &why), ERR_INVALID);
    CHECK_EQ_INT(site_host_check("a b", 3, host, &why), ERR_INVALID);
    CHECK_EQ_INT(site_host_check("", 0, host, &why), ERR_INVALID);

    static const struct {
        const char *url, *host;
    } urls[] = {
        {"https://Blog.Example:8443/a/b?c#d", "blog.example"},
        {"http://127.0.0.1:9000", "127.0.0.1"},
        {"https://user:pw@example.org/", "example.org"},
        {"null", ""},
        {"example.org", ""},
        {"https:///x", ""},
    };
    for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        size_t n = site_url_host((struct slice){urls[i].url, strlen(urls[i].url)}, host);
        if (!CHECK_EQ_STR(n ? host : "", urls[i].host))
            test_note("url %s", urls[i].url);
    }
}

/* The table against a real store: only hosts of sites, exact match. */
void test_sites_map(void)
{
    char dir[] = "/tmp/shortd-sites-XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL))
        return;
    char path[64];
    snprintf(path, sizeof(path), "%s/s.db", dir);
    struct store *st;
    if (!CHECK_EQ_INT(store_open(path, &st), ERR_OK))
        return;
    urcu_memb_register_thread();
    struct sitemap *m = sitemap_new();
    char site[SITE_ID_MAX + 1];
    CHECK(!sitemap_find(m, "a.example", 9, site)); /* nothing loaded yet */
    struct site_info a = {.id = "alpha", .owner = 1, .created_at = 1},
                     b = {.id = "beta", .owner = 2};
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_insert(st, &a), ERR_OK);
    CHECK_EQ_INT(st->ops->site_insert(st, &b), ERR_OK);
    CHECK_EQ_INT(st->ops->site_host_add(st, "a.example", "alpha"), ERR_OK);
    CHECK_EQ_INT(st->ops->site_host_add(st, "www.a.example", "alpha"), ERR_OK);
    CHECK_EQ_INT(st->ops->site_host_add(st, "b.example", "beta"), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(sitemap_load(m, st), ERR_OK);
    CHECK_EQ_INT(sitemap_count(m), 3);
    CHECK(sitemap_find(m, "a.example", 9, site) && !strcmp(site, "alpha"));
    CHECK(sitemap_find(m, "www.a.example", 13, site) && !strcmp(site, "alpha"));
    CHECK(sitemap_find(m, "b.example", 9, site) && !strcmp(site, "beta"));
    CHECK(!sitemap_find(m, "a.exampl", 8, site));
    CHECK(!sitemap_find(m, "c.example", 9, site));
    CHECK(!sitemap_find(m, "sub.b.example", 13, site));
    /* A change: read again, the old snapshot freed after a grace period. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_delete(st, "alpha"), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(sitemap_load(m, st), ERR_OK);
    CHECK(!sitemap_find(m, "a.example", 9, site));
    CHECK(sitemap_find(m, "b.example", 9, site));
    CHECK(!sitemap_take_stale(m));
    sitemap_mark_stale(m);
    CHECK(sitemap_take_stale(m));
    CHECK(!sitemap_take_stale(m));
    sitemap_reclaim(m);
    sitemap_free(m);
    urcu_memb_unregister_thread();
    st->ops->close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

struct tallies {
    struct buf s;
};

static int collect(int dim, const char *value, int64_t n, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s[%s]=%lld ", dim_names[dim], value, (long long)n);
    return 0;
}

static void fold_one(struct classify *cl, struct dayrow *r, const struct page_event *e)
{
    /* Through the journal's record and back, as the fold sees it. */
    struct buf rec = BUF_INIT;
    size_t n = page_encode(e, &rec);
    CHECK(page_is_record(rec.p, n));
    struct page_event back;
    if (CHECK_EQ_INT(page_decode(rec.p, n, &back), ERR_OK))
        page_fold(cl, false, r, &back);
    CHECK_EQ_INT(page_decode(rec.p, n - 1, &back), ERR_INVALID);
    buf_release(&rec);
}

static struct slice S(const char *s) {
    return (struct slice){s, strlen(s)};
}

#define CHROME                                                                                     \
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "                      \
    "Chrome/120.0.0.0 Safari/537.36"

void test_sites_fold(void)
{
    struct classify *cl;
    if (!CHECK_EQ_INT(classify_new(100, &cl), ERR_OK))
        return;
    /* 2024-01-01 was a Monday: 13:05 UTC is hour 13, dowhour 1-13. */
    int64_t ts = 1704114300000LL;
    struct page_event pv = {.ts = ts,
                            .width = 800,
                            .flags = PAGE_UV | PAGE_SS,
                            .site = S("blog"),
                            .ua = S(CHROME),
                            .path = S("/a"),
                            .host = S("blog.example"),
                            .ref = S("https://blog.example/b"),
                            .lang = S("fr-FR"),
                            .tz = S("Europe/Paris"),
                            .us = S("nl")};
    memcpy(pv.country, "FR", 3);
    struct dayrow r;
    dayrow_init(&r);
    fold_one(cl, &r, &pv);
    struct buf s = BUF_INIT;
    dayrow_each_tally(&r, collect, &s);
    CHECK_EQ_INT(r.clicks, 1);
    CHECK_EQ_INT(r.bots, 0);
    CHECK_EQ_STR(buf_cstr(&s),
                 "referrers[blog.example]=1 ref_groups[internal]=1 countries[FR]=1 "
                 "browsers[Chrome]=1 os[Linux]=1 devices[desktop]=1 languages[fr-FR]=1 "
                 "utm_source[nl]=1 hours[13]=1 dowhour[1-13]=1 paths[/a]=1 "
                 "hosts[blog.example]=1 timezones[Europe/Paris]=1 viewports[md]=1 uv[1]=1 "
                 "sessions[1]=1 ");
    dayrow_release(&r);

    /* A direct visit: "" referrer is direct; no width, no country. */
    struct page_event direct = {.ts = ts,
                                .width = -1,
                                .site = S("blog"),
                                .ua = S(CHROME),
                                .host = S("blog.example")};
    dayrow_init(&r);
    fold_one(cl, &r, &direct);
    buf_reset(&s);
    dayrow_each_tally(&r, collect, &s);
    CHECK(strstr(buf_cstr(&s), "ref_groups[direct]=1") != NULL);
    CHECK(strstr(buf_cstr(&s), "paths[/]=1") != NULL);
    CHECK(strstr(buf_cstr(&s), "viewports") == NULL);
    CHECK(strstr(buf_cstr(&s), "referrers") == NULL);
    dayrow_release(&r);

    /* An event, the probe's two verdicts (and a bucket it never sends), a
     * bot by its user agent whatever its payload says. */
    struct page_event ev = {.ts = ts,
                            .width = 1300,
                            .site = S("blog"),
                            .ua = S(CHROME),
                            .path = S("/a"),
                            .ev = S("download"),
                            .et = S("/f.pdf")};
    struct page_event hi = ev, odd = ev, syn = ev, bot = pv;
    hi.ev = S("hi");
    hi.et = S("<150");
    odd.ev = S("hi");
    odd.et = S("7");
    syn.ev = S("bot");
    syn.et = S("synthetic");
    bot.ua = S("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
    dayrow_init(&r);
    fold_one(cl, &r, &ev);
    fold_one(cl, &r, &hi);
    fold_one(cl, &r, &odd);
    fold_one(cl, &r, &syn);
    fold_one(cl, &r, &bot);
    buf_reset(&s);
    dayrow_each_tally(&r, collect, &s);
    CHECK_EQ_INT(r.clicks, 0);
    CHECK_EQ_INT(r.bots, 1);
    CHECK_EQ_STR(buf_cstr(&s), "bot_kinds[crawler]=1 events[download]=1 "
                               "event_targets[/f.pdf]=1 hi[<150]=1 bot[synthetic]=1 bot[ua]=1 ");
    dayrow_release(&r);
    buf_release(&s);
    classify_free(cl);
}
