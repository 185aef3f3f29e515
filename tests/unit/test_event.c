/* test_event.c - the click record: what event_encode writes, event_decode
 * reads back whole, client hints included; a version 1 record (as journals
 * written before the hints hold it, bytes spelled out here) still decodes,
 * its hints empty; a damaged or unknown record is refused. */
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "clicks/event.h"
#include "test.h"

#include "base/banned.h"

static bool same(struct slice a, const char *b)
{
    return a.n == strlen(b) && memcmp(a.p, b, a.n) == 0;
}

static struct slice sl(const char *s) { return (struct slice){s, strlen(s)}; }

void test_event_round_trip(void)
{
    struct click_event e = {.ts = 1764669600123,
                            .visitor = 0x0102030405060708ull,
                            .flags = 3,
                            .country = "DE",
                            .code = sl("abc123"),
                            .ua = sl("Mozilla/5.0"),
                            .referer = sl("https://ref.example/"),
                            .lang = sl("de-DE"),
                            .query = sl("utm_source=x"),
                            .ch_ua = sl("\"Google Chrome\";v=\"124\""),
                            .ch_mobile = sl("?1"),
                            .ch_platform = sl("\"Android\"")};
    struct buf b = BUF_INIT;
    size_t n = event_encode(&e, &b);
    CHECK_EQ_INT(n, b.len);
    CHECK(n <= EVENT_MAX);
    struct click_event d;
    CHECK_EQ_INT(event_decode(b.p, b.len, &d), ERR_OK);
    CHECK_EQ_INT(d.ts, e.ts);
    CHECK(d.visitor == e.visitor);
    CHECK_EQ_INT(d.flags, 3);
    CHECK_EQ_STR(d.country, "DE");
    CHECK(same(d.code, "abc123") && same(d.ua, "Mozilla/5.0") &&
          same(d.referer, "https://ref.example/") && same(d.lang, "de-DE") &&
          same(d.query, "utm_source=x"));
    CHECK(same(d.ch_ua, "\"Google Chrome\";v=\"124\"") && same(d.ch_mobile, "?1") &&
          same(d.ch_platform, "\"Android\""));
    /* Cut short anywhere, or one byte too long: refused. */
    for (size_t cut = 0; cut < b.len; cut++)
        if (!CHECK_EQ_INT(event_decode(b.p, cut, &d), ERR_INVALID))
            test_note("cut at %zu", cut);
    buf_addc(&b, 'x');
    CHECK_EQ_INT(event_decode(b.p, b.len, &d), ERR_INVALID);
    /* A version this one does not know: refused. */
    b.p[0] = 3;
    CHECK_EQ_INT(event_decode(b.p, b.len - 1, &d), ERR_INVALID);
    /* Every string at its maximum. */
    char big[4096];
    memset(big, 'a', sizeof(big));
    struct slice s = {big, sizeof(big)};
    struct click_event m = {.code = s,
                            .ua = s,
                            .referer = s,
                            .lang = s,
                            .query = s,
                            .ch_ua = s,
                            .ch_mobile = s,
                            .ch_platform = s};
    buf_reset(&b);
    CHECK(event_encode(&m, &b) <= EVENT_MAX);
    CHECK_EQ_INT(event_decode(b.p, b.len, &d), ERR_OK);
    CHECK_EQ_INT(d.ch_ua.n, EVENT_CH_UA_MAX);
    CHECK_EQ_INT(d.ch_mobile.n, 2);
    CHECK_EQ_INT(d.ch_platform.n, EVENT_CH_PLATFORM_MAX);
    buf_release(&b);
}

/* A record as version 1 wrote it: version, ts, visitor, flags, country,
 * then code, ua, referer, lang and query, each with a 2-byte length. */
void test_event_version_1(void)
{
    static const unsigned char v1[] = {
        1,                                        /* version */
        0x7b, 0x31, 0x81, 0xde, 0x9a, 0x01, 0, 0, /* ts 1764669600123 */
        8,    7,    6,    5,    4,    3,    2, 1, /* visitor */
        2,                                        /* flags: variant 1 */
        'F',  'R',                                /* country */
        3,    0,    'a',  'b',  'c',              /* code */
        2,    0,    'U',  'A',                    /* ua */
        0,    0,                                  /* referer */
        2,    0,    'f',  'r',                    /* lang */
        0,    0,                                  /* query */
    };
    struct click_event d;
    CHECK_EQ_INT(event_decode(v1, sizeof(v1), &d), ERR_OK);
    CHECK_EQ_INT(d.ts, 1764669600123);
    CHECK(d.visitor == 0x0102030405060708ull);
    CHECK_EQ_INT(d.flags, 2);
    CHECK_EQ_STR(d.country, "FR");
    CHECK(same(d.code, "abc") && same(d.ua, "UA") && same(d.lang, "fr"));
    CHECK(d.referer.n == 0 && d.query.n == 0);
    CHECK(d.ch_ua.n == 0 && d.ch_mobile.n == 0 && d.ch_platform.n == 0);
    /* Version 1 has nothing after its query. */
    unsigned char longer[sizeof(v1) + 2];
    memcpy(longer, v1, sizeof(v1));
    longer[sizeof(v1)] = longer[sizeof(v1) + 1] = 0;
    CHECK_EQ_INT(event_decode(longer, sizeof(longer), &d), ERR_INVALID);
}
