/* test_variants.c - A/B destinations: every bad shape is refused with a
 * message naming its field, good ones round-trip through the stored form,
 * and the choice is stable per visitor, split in proportion to the weights,
 * and reshuffled by another key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "test.h"
#include "links/variants.h"

#include "base/banned.h"

static const char *const self_hosts[] = {"sho.rt", NULL};
static const char *const blocked[] = {"evil.test", NULL};
static const struct urlcheck_opts uo = {self_hosts, blocked};

static int parse_text(const char *text, struct variants *v, char *err, size_t errn)
{
    json_t *a = json_loads(text, JSON_DECODE_ANY, NULL);
    if (!CHECK(a != NULL))
        test_note("bad JSON in the test: %s", text);
    int rc = variants_parse(a, &uo, v, err, errn);
    json_decref(a);
    return rc;
}

void test_variants_parse(void)
{
    struct variants v;
    char err[200] = "";
    CHECK_EQ_INT(parse_text("[{\"url\": \"HTTPS://A.Example/x\", \"weight\": 3},"
                            " {\"url\": \"https://b.example/\"},"
                            " {\"url\": \"https://c.example/\", \"weight\": null},"
                            " {\"weight\": 1000, \"url\": \"http://d.example:8080/p?q#f\"}]",
                            &v, err, sizeof(err)),
                 ERR_OK);
    CHECK_EQ_INT(v.n, 4);
    CHECK_EQ_STR(v.v[0].url, "https://a.example/x");
    CHECK_EQ_STR(v.v[0].host, "a.example");
    CHECK_EQ_INT(v.v[0].weight, 3);
    CHECK_EQ_INT(v.v[1].weight, 1);
    CHECK_EQ_INT(v.v[2].weight, 1);
    CHECK_EQ_STR(v.v[3].url, "http://d.example:8080/p?q#f");
    CHECK_EQ_STR(v.v[3].host, "d.example");
    CHECK_EQ_INT(v.v[3].weight, 1000);

    /* The stored form and back */
    json_t *j = variants_to_json(&v);
    char *text = json_dumps(j, JSON_COMPACT);
    CHECK_EQ_STR(text, "[{\"url\":\"https://a.example/x\",\"weight\":3},"
                       "{\"url\":\"https://b.example/\",\"weight\":1},"
                       "{\"url\":\"https://c.example/\",\"weight\":1},"
                       "{\"url\":\"http://d.example:8080/p?q#f\",\"weight\":1000}]");
    struct variants back;
    CHECK_EQ_INT(variants_from_text(text, &back), ERR_OK);
    CHECK_EQ_INT(back.n, 4);
    for (int i = 0; i < back.n && i < v.n; i++) {
        CHECK_EQ_STR(back.v[i].url, v.v[i].url);
        CHECK_EQ_INT(back.v[i].weight, v.v[i].weight);
        CHECK(back.v[i].host == NULL);
    }
    free(text);
    json_decref(j);
    variants_release(&back);
    CHECK_EQ_INT(back.n, 0);

    /* Exactly the maximum */
    struct buf many = BUF_INIT;
    buf_addc(&many, '[');
    for (int i = 0; i < VARIANTS_MAX; i++)
        buf_printf(&many, "%s{\"url\": \"https://e.example/%d\"}", i ? "," : "", i);
    buf_addc(&many, ']');
    variants_release(&v);
    CHECK_EQ_INT(parse_text(many.p, &v, err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(v.n, VARIANTS_MAX);
    variants_release(&v);
    buf_release(&many);
}

void test_variants_parse_errors(void)
{
    static const char *const shape =
        "variants must be an array of 2 to 10 objects {\"url\", \"weight\"}";
    static const struct {
        const char *json;
        const char *err;
    } cases[] = {
        {"null", shape},
        {"{\"url\": \"https://a.example/\"}", shape},
        {"\"https://a.example/\"", shape},
        {"[]", shape},
        {"[{\"url\": \"https://a.example/\"}]", shape},
        {"[{\"url\":\"https://a.example/\"},{\"url\":\"https://a.example/\"},"
         "{\"url\":\"https://a.example/\"},{\"url\":\"https://a.example/\"},"
         "{\"url\":\"https://a.example/\"},{\"url\":\"https://a.example/\"},"
         "{\"url\":\"https://a.example/\"},{\"url\":\"https://a.example/\"},"
         "{\"url\":\"https://a.example/\"},{\"url\":\"https://a.example/\"},"
         "{\"url\":\"https://a.example/\"}]",
         shape},
        {"[{\"url\": \"https://a.example/\"}, \"https://b.example/\"]",
         "variants[1] must be an object {\"url\", \"weight\"}"},
        {"[[], {\"url\": \"https://b.example/\"}]",
         "variants[0] must be an object {\"url\", \"weight\"}"},
        {"[{\"url\": \"https://a.example/\"}, {\"weight\": 2}]", "variants[1].url is required"},
        {"[{\"url\": null}, {\"url\": \"https://b.example/\"}]", "variants[0].url is required"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": 7}]", "variants[1].url must be a string"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"ftp://b.example/\"}]",
         "variants[1].url must start with http:// or https://"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"\"}]", "variants[1].url is required"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\\r\\nX: y\"}]",
         "variants[1].url must not contain spaces or control characters"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://SHO.RT/abc\"}]",
         "variants[1].url points back at this shortener"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://x.evil.test/\"}]",
         "variants[1].url destination host is blocked"},
        {"[{\"url\": \"https://a.example/\", \"weight\": 0}, {\"url\": \"https://b.example/\"}]",
         "variants[0].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\", \"weight\": 1001}]",
         "variants[1].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\", \"weight\": -1}]",
         "variants[1].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\", \"weight\": 1.5}]",
         "variants[1].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\", \"weight\": 2.0}]",
         "variants[1].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\", \"weight\": "
         "\"2\"}]",
         "variants[1].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\"}, {\"url\": \"https://b.example/\", \"weight\": true}]",
         "variants[1].weight must be an integer from 1 to 1000"},
        {"[{\"url\": \"https://a.example/\", \"title\": \"A\"}, {\"url\": \"https://b.example/\"}]",
         "variants[0] has an unknown field (only url and weight)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct variants v;
        char err[200] = "";
        int rc = parse_text(cases[i].json, &v, err, sizeof(err));
        if (!CHECK_EQ_INT(rc, ERR_INVALID) || !CHECK_EQ_STR(err, cases[i].err) ||
            !CHECK_EQ_INT(v.n, 0))
            test_note("case %zu: %s", i, cases[i].json);
        if (rc == ERR_OK)
            variants_release(&v);
    }
    /* A short buffer truncates the message, never overflows */
    struct variants v;
    char small[9];
    CHECK_EQ_INT(parse_text("[]", &v, small, sizeof(small)), ERR_INVALID);
    CHECK_EQ_STR(small, "variants");

    /* The stored form: only its own shape */
    static const char *const stored_bad[] = {
        "",
        "nope",
        "{}",
        "[]",
        "[1, 2]",
        "[{\"url\": \"\"}]",
        "[{\"url\": 1}]",
        "[{\"url\": \"https://a/\", \"weight\": 0}]",
        "[{\"url\": \"https://a/\"}, null]",
    };
    for (size_t i = 0; i < sizeof(stored_bad) / sizeof(stored_bad[0]); i++) {
        memset(&v, 0xff, sizeof(v));
        if (!CHECK_EQ_INT(variants_from_text(stored_bad[i], &v), ERR_INVALID) ||
            !CHECK_EQ_INT(v.n, 0))
            test_note("stored case %zu: %s", i, stored_bad[i]);
    }
}

/* Synthetic visitor i: an IPv4 address and one of a few user agents. */
static int pick_for(const struct variants *v, const uint8_t key[32], uint32_t i)
{
    uint8_t addr[4] = {10, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
    char ua[64];
    int n = snprintf(ua, sizeof(ua), "Mozilla/5.0 (visitor %u)", i % 7);
    return variants_pick(v, key, addr, sizeof(addr), ua, (size_t)n);
}

static void fill(struct variants *v, const unsigned *weights, int n)
{
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < n; i++) {
        char url[32];
        snprintf(url, sizeof(url), "https://v%d.example/", i);
        v->v[i].url = xstrdup(url);
        v->v[i].weight = weights[i];
    }
    v->n = n;
}

void test_variants_pick(void)
{
    enum { VISITORS = 20000 };
    uint8_t key[32], key2[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)i;
        key2[i] = (uint8_t)(i * 7 + 1);
    }
    struct variants v;
    fill(&v, (const unsigned[]){1, 3}, 2);

    /* Proportions within 3 points of the weights' shares, and deterministic */
    int count[2] = {0, 0}, moved = 0;
    static int8_t first[VISITORS];
    for (uint32_t i = 0; i < VISITORS; i++) {
        int p = pick_for(&v, key, i);
        if (!CHECK(p == 0 || p == 1))
            break;
        first[i] = (int8_t)p;
        count[p]++;
    }
    double share0 = count[0] / (double)VISITORS;
    if (!CHECK(share0 > 0.22 && share0 < 0.28))
        test_note("weights 1:3 gave %d:%d", count[0], count[1]);
    for (uint32_t i = 0; i < VISITORS; i++)
        if (pick_for(&v, key, i) != first[i])
            moved++;
    CHECK_EQ_INT(moved, 0);

    /* The same visitor with the same user agent, whatever else is around */
    const uint8_t addr6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
    int a = variants_pick(&v, key, addr6, 16, "UA", 2);
    for (int k = 0; k < 10; k++)
        CHECK_EQ_INT(variants_pick(&v, key, addr6, 16, "UA", 2), a);

    /* Another key reshuffles assignments (about 3/8 of them change) yet
     * keeps the proportions */
    int count2[2] = {0, 0};
    moved = 0;
    for (uint32_t i = 0; i < VISITORS; i++) {
        int p = pick_for(&v, key2, i);
        count2[p]++;
        moved += p != first[i];
    }
    if (!CHECK(moved > VISITORS / 4 && moved < VISITORS / 2))
        test_note("%d of %d visitors moved", moved, VISITORS);
    share0 = count2[0] / (double)VISITORS;
    CHECK(share0 > 0.22 && share0 < 0.28);

    /* The address and the user agent both count, and where one ends */
    int differ_ua = 0, differ_split = 0;
    for (uint32_t i = 0; i < 200; i++) {
        uint8_t ad[4] = {192, 0, 2, (uint8_t)i};
        differ_ua += variants_pick(&v, key, ad, 4, "A", 1) != variants_pick(&v, key, ad, 4, "B", 1);
        uint8_t joined[5] = {192, 0, 2, (uint8_t)i, 'A'};
        differ_split += variants_pick(&v, key, ad, 4, "A", 1) !=
                        variants_pick(&v, key, joined, 5, "", 0);
    }
    CHECK(differ_ua > 40);
    CHECK(differ_split > 40);
    variants_release(&v);

    /* Three ways, 5:3:2 */
    fill(&v, (const unsigned[]){5, 3, 2}, 3);
    int c3[3] = {0, 0, 0};
    for (uint32_t i = 0; i < VISITORS; i++)
        c3[pick_for(&v, key, i)]++;
    CHECK(c3[0] > 0.47 * VISITORS && c3[0] < 0.53 * VISITORS);
    CHECK(c3[1] > 0.27 * VISITORS && c3[1] < 0.33 * VISITORS);
    CHECK(c3[2] > 0.17 * VISITORS && c3[2] < 0.23 * VISITORS);
    variants_release(&v);

    /* Extreme weights still reach the small one, and never overflow */
    fill(&v, (const unsigned[]){1000, 1, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 10);
    int c10[10] = {0};
    for (uint32_t i = 0; i < VISITORS * 5; i++) {
        int p = pick_for(&v, key, i);
        if (!CHECK(p >= 0 && p < 10))
            break;
        c10[p]++;
    }
    if (!CHECK(c10[1] > 0 && c10[1] < 40))
        test_note("weight 1 of 9001 got %d of %d", c10[1], VISITORS * 5);
    variants_release(&v);
}
