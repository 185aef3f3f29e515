/* test_events.c - events out: the Standard Webhooks signature (a known
 * vector), event IDs, the backoff schedule, event bodies, and the journal
 * read another thread makes. The store's events ops are in test_store.c
 * (both backends). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "clicks/classify.h"
#include "clicks/event.h"
#include "clicks/journal.h"
#include "events/body.h"
#include "events/id.h"
#include "events/retry.h"
#include "events/sign.h"
#include "store/store_links.h"
#include "test.h"
#include "base/banned.h"

void test_events_sign(void)
{
    /* The example of the Standard Webhooks specification (and of the
     * reference libraries' tests). */
    const char *secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const char *body = "{\"test\": 2432232314}";
    struct buf h = BUF_INIT;
    CHECK_EQ_INT(sign_header(secret, NULL, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                             strlen(body), &h),
                 ERR_OK);
    CHECK_EQ_STR(buf_cstr(&h), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* Without the prefix the key is the same. */
    buf_reset(&h);
    CHECK_EQ_INT(sign_header("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", NULL,
                             "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body), &h),
                 ERR_OK);
    CHECK_EQ_STR(buf_cstr(&h), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* During a rotation: both, the current one first. */
    struct buf fresh = BUF_INIT;
    sign_secret_new(&fresh);
    CHECK(!strncmp(buf_cstr(&fresh), "whsec_", 6));
    CHECK_EQ_INT(sign_secret_check(buf_cstr(&fresh)), ERR_OK);
    buf_reset(&h);
    CHECK_EQ_INT(sign_header(buf_cstr(&fresh), secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                             body, strlen(body), &h),
                 ERR_OK);
    const char *sp = strchr(buf_cstr(&h), ' ');
    CHECK(sp && !strcmp(sp + 1, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="));
    CHECK(strncmp(buf_cstr(&h), "v1,g0hM9", 8) != 0);
    /* A secret that is no base64 signs nothing. */
    buf_reset(&h);
    CHECK_EQ_INT(sign_header("whsec_***", NULL, "m", 1, "x", 1, &h), ERR_INVALID);
    CHECK_EQ_INT((int)h.len, 0);
    CHECK_EQ_INT(sign_secret_check("whsec_"), ERR_INVALID);
    CHECK_EQ_INT(sign_secret_check(NULL), ERR_INVALID);
    buf_release(&h);
    buf_release(&fresh);
}

void test_events_ids(void)
{
    char a[EVENT_ID_SIZE], b[EVENT_ID_SIZE], c[EVENT_ID_SIZE];
    const char *j = "0123456789abcdef0123456789abcdef";
    events_id_click(j, 4096, a);
    events_id_click(j, 4096, b);
    CHECK_EQ_STR(a, b); /* rebuilt after a crash: the same */
    CHECK_EQ_INT((int)strlen(a), EVENT_ID_SIZE - 1);
    CHECK(!strncmp(a, "evt_", 4));
    events_id_click(j, 4097, c);
    CHECK(strcmp(a, c) != 0);
    events_id_click("fedcba9876543210fedcba9876543210", 4096, c);
    CHECK(strcmp(a, c) != 0); /* another node's journal */
    /* Pinned: a change of the derivation would give every click a new ID. */
    CHECK_EQ_STR(a, "evt_83731b3bcf620c6bc8b1115f8c2f8ae2");
    /* link.expired: the same for one expiry on every node, another for another. */
    events_id_expired("abc", 5000, b);
    events_id_expired("abc", 5000, c);
    CHECK_EQ_STR(b, c);
    events_id_expired("abc", 5001, c);
    CHECK(strcmp(b, c) != 0);
    events_id_random(b);
    events_id_random(c);
    CHECK(strcmp(b, c) != 0);
    CHECK(!strncmp(b, "evt_", 4));
}

void test_events_backoff(void)
{
    /* 10 s doubling to an hour. */
    CHECK_EQ_INT(retry_wait(10000, 3600000, 1), 10000);
    CHECK_EQ_INT(retry_wait(10000, 3600000, 2), 20000);
    CHECK_EQ_INT(retry_wait(10000, 3600000, 3), 40000);
    CHECK_EQ_INT(retry_wait(10000, 3600000, 9), 2560000);
    CHECK_EQ_INT(retry_wait(10000, 3600000, 10), 3600000);
    CHECK_EQ_INT(retry_wait(10000, 3600000, 1000), 3600000);
    /* Jitter: between half and all of the wait. */
    CHECK_EQ_INT(retry_jittered(10000, 3600000, 1, 0), 5000);
    CHECK_EQ_INT(retry_jittered(10000, 3600000, 1, UINT32_MAX), 10000);
    int64_t w = retry_jittered(10000, 3600000, 3, UINT32_MAX / 2);
    CHECK(w >= 20000 && w <= 40000);
    CHECK_EQ_INT(retry_jittered(10000, 3600000, 50, UINT32_MAX), 3600000);
    /* The sum over 30 failures in a row, without jitter: the budget a day
     * covers with the defaults (about 22.4 hours). */
    int64_t sum = 0;
    for (int i = 1; i <= 30; i++)
        sum += retry_wait(10000, 3600000, i);
    CHECK_EQ_INT(sum, 80710000);
}

void test_events_types(void)
{
    unsigned m;
    const char *bad;
    CHECK_EQ_INT(event_types_mask("", &m, &bad), ERR_OK);
    CHECK_EQ_INT(m, (1u << EVT__COUNT) - 1);
    CHECK_EQ_INT(event_types_mask("click,link.expired", &m, &bad), ERR_OK);
    CHECK_EQ_INT(m, (1u << EVT_CLICK) | (1u << EVT_LINK_EXPIRED));
    CHECK_EQ_INT(event_types_mask("click,link.gone", &m, &bad), ERR_INVALID);
    CHECK_EQ_STR(bad, "link.gone");
    CHECK_EQ_STR(event_type_name(EVT_LINK_EXHAUSTED), "link.exhausted");
}

void test_events_bodies(void)
{
    struct classify *cl;
    CHECK_EQ_INT(classify_new(64, &cl), ERR_OK);
    static const char *const self[] = {"s.example", NULL};
    struct click_event e = {
        .ts = 1764668400123,
        .visitor = 0x0123456789abcdefULL,
        .flags = 2u << EVENT_VARIANT_SHIFT,
        .country = "DE",
        .code = SLICE_LIT("abc"),
        .ua = SLICE_LIT("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                        "Chrome/124.0.0.0 Safari/537.36"),
        .referer = SLICE_LIT("https://news.ycombinator.com/item?id=1"),
        .lang = SLICE_LIT("de-DE,de;q=0.9"),
        .query = SLICE_LIT("utm_source=hn&utm_medium=social"),
    };
    struct buf a = BUF_INIT, b = BUF_INIT;
    events_click_body(cl, self, "evt_x", &e, &a);
    events_click_body(cl, self, "evt_x", &e, &b);
    CHECK_EQ_STR(buf_cstr(&a), buf_cstr(&b)); /* the same bytes each time */
    CHECK_EQ_STR(buf_cstr(&a),
                 "{\"id\":\"evt_x\",\"idempotency_key\":\"evt_x\",\"type\":\"click\","
                 "\"time\":\"2025-12-02T09:40:00.123Z\",\"data\":{\"code\":\"abc\",\"human\":true,"
                 "\"bot_kind\":null,\"agent\":null,\"visitor\":\"0123456789abcdef\","
                 "\"variant\":2,\"country\":\"DE\",\"browser\":\"Chrome\",\"os\":\"Linux\","
                 "\"device\":\"desktop\",\"referrer\":\"news.ycombinator.com\","
                 "\"referrer_group\":\"social\",\"language\":\"de\",\"utm\":{\"source\":\"hn\","
                 "\"medium\":\"social\",\"campaign\":null}}}");
    CHECK(events_click_human(cl, &e));
    /* A bot, and a prefetch: marked, with their kind. */
    e.ua = SLICE_LIT("curl/8.5.0");
    buf_reset(&a);
    events_click_body(cl, self, "evt_y", &e, &a);
    CHECK(strstr(buf_cstr(&a), "\"human\":false,\"bot_kind\":\"http_library\",\"agent\":\"curl\""));
    CHECK(!events_click_human(cl, &e));
    e.flags |= EVENT_PREFETCH;
    buf_reset(&a);
    events_click_body(cl, self, "evt_z", &e, &a);
    CHECK(strstr(buf_cstr(&a), "\"human\":false,\"bot_kind\":\"prefetch\""));
    /* No address anywhere: the event has none to give. */
    json_t *v = json_loads(buf_cstr(&a), 0, NULL);
    CHECK(v && json_object_get(v, "data") && !json_object_get(json_object_get(v, "data"), "ip"));
    json_decref(v);

    struct link l = {.code = "abc",
                     .owner = 7,
                     .url = "https://example.com/",
                     .created_at = 1000,
                     .tags = "[\"x\"]",
                     .password = "$argon2id$...",
                     .max_clicks = 5,
                     .used = 5};
    buf_reset(&a);
    events_link_body("evt_l", EVT_LINK_EXHAUSTED, 2000, &l, &a);
    CHECK_EQ_STR(buf_cstr(&a),
                 "{\"id\":\"evt_l\",\"idempotency_key\":\"evt_l\",\"type\":\"link.exhausted\","
                 "\"time\":\"1970-01-01T00:00:02Z\",\"data\":{\"code\":\"abc\",\"owner\":7,"
                 "\"domain\":null,\"url\":\"https://example.com/\","
                 "\"destination\":\"https://example.com/\",\"title\":null,\"tags\":[\"x\"],"
                 "\"state\":\"active\",\"created_at\":\"1970-01-01T00:00:01Z\","
                 "\"expires_at\":null,\"permanent\":false,\"protected\":true,\"max_clicks\":5,"
                 "\"used\":5,\"variants\":null,\"utm\":null}}");
    CHECK(!strstr(buf_cstr(&a), "argon2"));
    buf_release(&a);
    buf_release(&b);
    classify_free(cl);
}

struct seen {
    int n;
    uint64_t last;
};

static int count_rec(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    (void)rec, (void)n;
    struct seen *s = arg;
    s->n++;
    s->last = pos_after;
    return 0;
}

void test_events_journal_read(void)
{
    char dir[] = "/tmp/shortd-evj-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct journal *j;
    uint64_t end, synced, pos[6];
    CHECK_EQ_INT(journal_open(dir, 64, &j, &end), ERR_OK);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(journal_append(j, "0123456789", 10, &pos[i]), ERR_OK);
        if (i == 2)
            CHECK_EQ_INT(journal_sync(j, &synced), ERR_OK);
        if (i == 2)
            CHECK_EQ_INT(journal_rotate(j), ERR_OK);
    }
    CHECK_EQ_INT(journal_sync(j, &synced), ERR_OK);
    /* Everything, across two segments; from a position; up to a position. */
    struct seen s = {0, 0};
    CHECK_EQ_INT(journal_read(dir, 0, synced, count_rec, &s), ERR_OK);
    CHECK_EQ_INT(s.n, 6);
    CHECK_EQ_INT(s.last, pos[5]);
    s = (struct seen){0, 0};
    CHECK_EQ_INT(journal_read(dir, pos[1], synced, count_rec, &s), ERR_OK);
    CHECK_EQ_INT(s.n, 4);
    s = (struct seen){0, 0};
    CHECK_EQ_INT(journal_read(dir, pos[1], pos[3], count_rec, &s), ERR_OK);
    CHECK_EQ_INT(s.n, 2);
    CHECK_EQ_INT(s.last, pos[3]);
    /* Released segments are gone; what is after them still reads. */
    CHECK_EQ_INT(journal_release(j, pos[2]), ERR_OK);
    s = (struct seen){0, 0};
    CHECK_EQ_INT(journal_read(dir, pos[2], synced, count_rec, &s), ERR_OK);
    CHECK_EQ_INT(s.n, 3);
    journal_close(j);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}
