/* test_codes.c - base62 known values and round trips; the scramble checked
 * to be a bijection exhaustively on whole small domains and by sampling on
 * the real code space; that keys matter and consecutive counters do not give
 * look-alike codes; pinned outputs, so a change to the mapping (which would
 * make new links collide with stored ones) cannot pass unnoticed; the shapes
 * and the alias rules. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "links/codes.h"
#include "base/err.h"
#include "test.h"

#include "base/banned.h"

static const uint8_t key_a[SCRAMBLE_KEY_BYTES] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                  8, 9, 10, 11, 12, 13, 14, 15};

/* base62_encode7 into a NUL-terminated string. */
static const char *enc(uint64_t v, char out[CODE_LEN + 1])
{
    base62_encode7(v, out);
    out[CODE_LEN] = '\0';
    return out;
}

static const char *code_str(const struct scramble *s, uint64_t n, char out[CODE_LEN + 1])
{
    code_from_counter(s, n, out);
    out[CODE_LEN] = '\0';
    return out;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A small deterministic generator for sample values. */
static uint64_t next_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 11;
}

void test_base62_known(void)
{
    char s[CODE_LEN + 1];
    CHECK_EQ_STR(enc(0, s), "0000000");
    CHECK_EQ_STR(enc(9, s), "0000009");
    CHECK_EQ_STR(enc(10, s), "000000A");
    CHECK_EQ_STR(enc(36, s), "000000a");
    CHECK_EQ_STR(enc(61, s), "000000z");
    CHECK_EQ_STR(enc(62, s), "0000010");
    CHECK_EQ_STR(enc(62 * 62 * 62, s), "0001000");
    CHECK_EQ_STR(enc(1234567890, s), "01LY7VK");
    CHECK_EQ_STR(enc(CODE_SPACE - 1, s), "zzzzzzz");
}

void test_base62_decode(void)
{
    uint64_t v = 12345;
    CHECK_EQ_INT(base62_decode("0", 1, &v), ERR_OK);
    CHECK_EQ_INT(v, 0);
    CHECK_EQ_INT(base62_decode("z", 1, &v), ERR_OK);
    CHECK_EQ_INT(v, 61);
    CHECK_EQ_INT(base62_decode("10", 2, &v), ERR_OK);
    CHECK_EQ_INT(v, 62);
    CHECK_EQ_INT(base62_decode("01LY7VK", 7, &v), ERR_OK);
    CHECK_EQ_INT(v, 1234567890);
    CHECK_EQ_INT(base62_decode("zzzzzzz", 7, &v), ERR_OK);
    CHECK(v == CODE_SPACE - 1);
    CHECK_EQ_INT(base62_decode("12xyz", 2, &v), ERR_OK); /* only n bytes count */
    CHECK_EQ_INT(v, 64);
    CHECK_EQ_INT(base62_decode("0000000000000000000001", 22, &v), ERR_OK);
    CHECK_EQ_INT(v, 1);

    /* The largest 64-bit value, and one past it. */
    CHECK_EQ_INT(base62_decode("LygHa16AHYF", 11, &v), ERR_OK);
    CHECK(v == UINT64_MAX);
    v = 7;
    CHECK_EQ_INT(base62_decode("LygHa16AHYG", 11, &v), ERR_INVALID);
    CHECK_EQ_INT(base62_decode("100000000000", 12, &v), ERR_INVALID);
    CHECK_EQ_INT(v, 7); /* untouched on failure */

    CHECK_EQ_INT(base62_decode("", 0, &v), ERR_INVALID);
    CHECK_EQ_INT(base62_decode("ab-c", 4, &v), ERR_INVALID);
    CHECK_EQ_INT(base62_decode("ab_c", 4, &v), ERR_INVALID);
    CHECK_EQ_INT(base62_decode("ab c", 4, &v), ERR_INVALID);
    CHECK_EQ_INT(base62_decode("a\0b", 3, &v), ERR_INVALID);
    CHECK_EQ_INT(base62_decode("\xc3\xa9", 2, &v), ERR_INVALID);
}

void test_base62_round_trip(void)
{
    char s[CODE_LEN + 1];
    uint64_t state = 1;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t v = i < 100000 ? (uint64_t)i : next_rand(&state) % CODE_SPACE;
        uint64_t back = 0;
        enc(v, s);
        if (base62_decode(s, CODE_LEN, &back) != ERR_OK || back != v ||
            !code_is_generated_shape(s, CODE_LEN))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

void test_scramble_half_bits(void)
{
    static const struct {
        uint64_t domain;
        unsigned half_bits;
    } cases[] = {
        {1, 1},
        {2, 1},
        {4, 1},
        {5, 2},
        {16, 2},
        {17, 3},
        {1000, 5},
        {1024, 5},
        {1025, 6},
        {4097, 7},
        {238328, 9},
        {1ULL << 32, 16},
        {(1ULL << 32) + 1, 17},
        {CODE_SPACE, 21},
        {UINT64_MAX, 32},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct scramble s;
        scramble_init(&s, key_a, cases[i].domain);
        CHECK_EQ_INT(s.half_bits, cases[i].half_bits);
        CHECK(s.domain == cases[i].domain);
        CHECK(memcmp(s.key, key_a, SCRAMBLE_KEY_BYTES) == 0);
    }
}

/* fwd over every x in [0, domain): all outputs in range and distinct, inv
 * undoes it, and it is not close to the identity. Returns true when all held. */
static bool check_bijection(uint64_t domain)
{
    struct scramble s;
    scramble_init(&s, key_a, domain);
    unsigned char *seen = calloc(domain, 1);
    if (!CHECK(seen))
        return false;
    uint64_t out_of_range = 0, repeated = 0, not_inverted = 0, fixed = 0;
    for (uint64_t x = 0; x < domain; x++) {
        uint64_t y = scramble_fwd(&s, x);
        if (y >= domain) {
            out_of_range++;
            continue;
        }
        if (seen[y])
            repeated++;
        seen[y] = 1;
        if (scramble_inv(&s, y) != x)
            not_inverted++;
        if (y == x)
            fixed++;
    }
    free(seen);
    bool ok = CHECK_EQ_INT(out_of_range, 0);
    ok = CHECK_EQ_INT(repeated, 0) && ok;
    ok = CHECK_EQ_INT(not_inverted, 0) && ok;
    /* A random permutation has one fixed point on average. */
    if (domain >= 1000)
        ok = CHECK(fixed < 20) && ok;
    return ok;
}

void test_scramble_small_domains(void)
{
    static const uint64_t domains[] = {1,   2,    3,    5,    16,    17,    61,    62,
                                       100, 1000, 1024, 4097, 65535, 65536, 65537, 62 * 62 * 62};
    for (size_t i = 0; i < sizeof(domains) / sizeof(domains[0]); i++) {
        if (!check_bijection(domains[i]))
            test_note("domain %llu", (unsigned long long)domains[i]);
    }
}

void test_scramble_out_of_domain(void)
{
    struct scramble s;
    scramble_init(&s, key_a, 1000);
    CHECK_EQ_INT(scramble_fwd(&s, 1000), 1000);
    CHECK_EQ_INT(scramble_inv(&s, 1000), 1000);
    CHECK(scramble_fwd(&s, UINT64_MAX) == UINT64_MAX);
    CHECK(scramble_inv(&s, UINT64_MAX) == UINT64_MAX);
}

/* 'count' consecutive counters from 'first' on the real code space. */
static void check_code_space_run(const struct scramble *s, uint64_t first, size_t count)
{
    uint64_t *vals = malloc(count * sizeof(*vals));
    if (!CHECK(vals))
        return;
    size_t bad_range = 0, bad_inv = 0, bad_code = 0, dup = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t n = first + i;
        uint64_t v = scramble_fwd(s, n);
        vals[i] = v;
        if (v >= CODE_SPACE)
            bad_range++;
        if (scramble_inv(s, v) != n)
            bad_inv++;
        char code[CODE_LEN + 1], expect[CODE_LEN + 1];
        code_str(s, n, code);
        uint64_t back = 0;
        if (strcmp(code, enc(v, expect)) != 0 || base62_decode(code, CODE_LEN, &back) != ERR_OK ||
            back != v)
            bad_code++;
    }
    qsort(vals, count, sizeof(*vals), cmp_u64);
    for (size_t i = 1; i < count; i++)
        dup += vals[i] == vals[i - 1];
    free(vals);
    CHECK_EQ_INT(bad_range, 0);
    CHECK_EQ_INT(bad_inv, 0);
    CHECK_EQ_INT(bad_code, 0);
    CHECK_EQ_INT(dup, 0);
}

void test_scramble_code_space(void)
{
    struct scramble s;
    scramble_init(&s, key_a, CODE_SPACE);
    check_code_space_run(&s, 0, 100000);
    check_code_space_run(&s, 987654321, 20000);
    check_code_space_run(&s, CODE_SPACE - 20000, 20000);
}

void test_scramble_keys_differ(void)
{
    uint8_t key_b[SCRAMBLE_KEY_BYTES];
    memcpy(key_b, key_a, sizeof(key_b));
    key_b[15] ^= 1; /* one bit */
    struct scramble a, b;
    scramble_init(&a, key_a, CODE_SPACE);
    scramble_init(&b, key_b, CODE_SPACE);
    int same = 0;
    for (uint64_t n = 0; n < 10000; n++)
        same += scramble_fwd(&a, n) == scramble_fwd(&b, n);
    CHECK(same < 3);
}

/* Consecutive counters must not give codes that look consecutive. */
void test_scramble_spread(void)
{
    struct scramble s;
    scramble_init(&s, key_a, CODE_SPACE);
    enum { N = 100000 };
    char prev[CODE_LEN + 1], code[CODE_LEN + 1], first[CODE_LEN + 1];
    bool first_chars[256] = {false};
    int same_prefix4_as_first = 0, same_prefix6_as_prev = 0, same_last_as_prev = 0;
    code_str(&s, 0, first);
    memcpy(prev, first, sizeof(prev));
    for (uint64_t n = 1; n < N; n++) {
        code_str(&s, n, code);
        first_chars[(unsigned char)code[0]] = true;
        same_prefix4_as_first += memcmp(code, first, 4) == 0;
        same_prefix6_as_prev += memcmp(code, prev, 6) == 0;
        same_last_as_prev += code[6] == prev[6];
        memcpy(prev, code, sizeof(prev));
    }
    int distinct_first = 0;
    for (int c = 0; c < 256; c++)
        distinct_first += first_chars[c];
    CHECK(distinct_first >= 60);           /* 62 expected */
    CHECK(same_prefix4_as_first < 10);     /* ~0.007 expected */
    CHECK(same_prefix6_as_prev < 10);      /* ~0 expected */
    CHECK(same_last_as_prev < N / 62 * 2); /* ~1613 expected */
}

/* These values are what the algorithm gives today. They are pinned because
 * the mapping is part of the stored data: if this fails, the change would
 * hand out codes that already exist. */
void test_scramble_pinned(void)
{
    struct scramble s;
    char code[CODE_LEN + 1];
    scramble_init(&s, key_a, CODE_SPACE);
    CHECK_EQ_STR(code_str(&s, 0, code), "KYxUriE");
    CHECK_EQ_STR(code_str(&s, 1, code), "b3W9S7M");
    CHECK_EQ_STR(code_str(&s, 2, code), "WqNF06G");
    CHECK_EQ_STR(code_str(&s, 1000000, code), "YxluUj1");
    CHECK_EQ_STR(code_str(&s, CODE_SPACE - 1, code), "AW9q2tZ");
    scramble_init(&s, key_a, 1000);
    CHECK_EQ_INT(scramble_fwd(&s, 0), 685);
    CHECK_EQ_INT(scramble_fwd(&s, 999), 846);
}

void test_code_shapes(void)
{
    CHECK(code_is_generated_shape("aB3dE9z", 7));
    CHECK(code_is_generated_shape("0000000", 7));
    CHECK(!code_is_generated_shape("aB3dE9", 6));
    CHECK(!code_is_generated_shape("aB3dE9zz", 8));
    CHECK(!code_is_generated_shape("aB3-E9z", 7));
    CHECK(!code_is_generated_shape("aB3_E9z", 7));
    CHECK(!code_is_generated_shape("aB3\0E9z", 7));
    CHECK(!code_is_generated_shape("", 0));

    CHECK(code_is_plausible("a", 1));
    CHECK(code_is_plausible("my-link_2", 9));
    CHECK(code_is_plausible("aB3dE9z", 7));
    CHECK(code_is_plausible("abcdefghijklmnopqrstuvwxyz0123", 30));
    CHECK(!code_is_plausible("abcdefghijklmnopqrstuvwxyz01234", 31));
    CHECK(!code_is_plausible("", 0));
    CHECK(!code_is_plausible("a.b", 3));
    CHECK(!code_is_plausible("a/b", 3));
    CHECK(!code_is_plausible("a%20b", 5));
    CHECK(!code_is_plausible("caf\xc3\xa9", 5));
}

void test_alias_rules(void)
{
    static const char *const reserved[] = {"api", "healthz", "static", "dashboard", NULL};
    static const char *const len_why = "must be 4 to 30 characters";
    static const char *const chars_why = "may contain only letters, digits, '_' and '-'";
    static const char *const reserved_why = "is a reserved word";
    static const char *const shape_why =
        "looks like a generated code (7 letters and digits); add '-' or '_' or change its length";
    static const struct {
        const char *alias;
        const char *why; /* NULL: accepted */
    } cases[] = {
        {"summer-sale", NULL},
        {"abcd", NULL},
        {"a_b-", NULL},
        {"----", NULL},
        {"abcdefghijklmnopqrstuvwxyz0123", NULL}, /* 30 */
        {"abc", len_why},
        {"", len_why},
        {"abcdefghijklmnopqrstuvwxyz01234", len_why}, /* 31 */
        {"summer sale", chars_why},
        {"summer.sale", chars_why},
        {"summer/sale", chars_why},
        {"caf\xc3\xa9s", chars_why},
        {"ab%20", chars_why},
        {"healthz", reserved_why},
        {"HealthZ", reserved_why},
        {"DASHBOARD", reserved_why},
        {"healthzz", NULL}, /* whole-word only */
        {"dashboard-x", NULL},
        {"aB3dE9z", shape_why},
        {"Promo24", shape_why},
        {"1234567", shape_why},
        {"Promo-4", NULL},
        {"Promo_4", NULL},
        {"Promo2", NULL},   /* 6 base62 */
        {"Promo245", NULL}, /* 8 base62 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *why = "unset";
        int rc = alias_check(cases[i].alias, strlen(cases[i].alias), reserved, &why);
        bool ok = cases[i].why ? rc == ERR_INVALID && why && strcmp(why, cases[i].why) == 0
                               : rc == ERR_OK;
        if (!CHECK(ok))
            test_note("alias \"%s\": rc %d, why \"%s\"", cases[i].alias, rc, why ? why : "(null)");
    }

    /* An embedded NUL is a bad character, not the end of the alias. */
    const char *why = NULL;
    CHECK_EQ_INT(alias_check("ab\0cd", 5, reserved, &why), ERR_INVALID);
    CHECK_EQ_STR(why, chars_why);
    /* No reserved list, and no interest in the reason, are both fine. */
    CHECK_EQ_INT(alias_check("dashboard", 9, NULL, NULL), ERR_OK);
    CHECK_EQ_INT(alias_check("abc", 3, NULL, NULL), ERR_INVALID);
}
