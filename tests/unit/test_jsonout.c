/* test_jsonout.c - jsonout writes the text jansson's own dumper writes
 * (JSON_COMPACT | JSON_ENCODE_ANY), byte for byte: a table of edge cases,
 * then random trees of every type with strings of escapes, control bytes
 * and multi-byte UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonout.h"
#include "test.h"

#include "base/banned.h"

/* Checks one value against jansson and releases it. */
static bool same_as_jansson(json_t *v)
{
    if (!CHECK(v != NULL))
        return false;
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    struct buf got = BUF_INIT;
    buf_add(&got, "prefix", 6); /* appends, never resets */
    jsonout(&got, v);
    bool ok = CHECK(want != NULL) && CHECK(strncmp(got.p, "prefix", 6) == 0) &&
              CHECK_EQ_STR(got.p + 6, want);
    buf_release(&got);
    free(want);
    json_decref(v);
    return ok;
}

void test_jsonout_cases(void)
{
    same_as_jansson(json_object());
    same_as_jansson(json_array());
    same_as_jansson(json_string(""));
    same_as_jansson(json_string("plain"));
    same_as_jansson(json_string("\"quoted\" back\\slash /slash/"));
    same_as_jansson(json_string("\b\f\n\r\t\x01\x1f\x7f end"));
    same_as_jansson(json_stringn("nul\0inside", 10));
    same_as_jansson(json_string("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8"));
    same_as_jansson(json_integer(0));
    same_as_jansson(json_integer(-1));
    same_as_jansson(json_integer(INT64_MAX));
    same_as_jansson(json_integer(INT64_MIN));
    same_as_jansson(json_real(0.1));
    same_as_jansson(json_real(-2.5e-300));
    same_as_jansson(json_real(3.0));
    same_as_jansson(json_true());
    same_as_jansson(json_false());
    same_as_jansson(json_null());
    same_as_jansson(json_loads("{\"a\":{},\"b\":[],\"c\":[{}],"
                               "\"d\":{\"e\\n\\\"key\":[null,true,false,1,\"x\",-0.5]}}",
                               0, NULL));

    /* A value that could not be made (json_pack of invalid UTF-8) writes
     * nothing, as jansson's writer wrote nothing for it. */
    json_t *none = json_pack("{s:s}", "k", "\xff");
    CHECK(none == NULL);
    struct buf n = BUF_INIT;
    buf_add(&n, "x", 1);
    jsonout(&n, none);
    CHECK_EQ_STR(buf_cstr(&n), "x");
    buf_release(&n);

    /* Keys come out in the order they were set, as jansson's do. */
    json_t *o = json_object();
    json_object_set_new(o, "zeta", json_integer(1));
    json_object_set_new(o, "alpha", json_integer(2));
    json_object_set_new(o, "mid", json_integer(3));
    json_object_set_new(o, "alpha", json_integer(4)); /* replaced in place */
    struct buf b = BUF_INIT;
    jsonout(&b, o);
    CHECK_EQ_STR(buf_cstr(&b), "{\"zeta\":1,\"alpha\":4,\"mid\":3}");
    buf_release(&b);
    same_as_jansson(o);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned next(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A string of pieces that each need (or must not get) escaping. */
static json_t *random_string(void)
{
    /* clang-format off */
    static const char *const pieces[] = {
        "a", "Z", "9", " ", "\"", "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x01", "\x1b",
        "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xe2\x80\xa8", "<",
        "&", "'", "%", "\0"};
    /* clang-format on */
    struct buf s = BUF_INIT;
    unsigned n = next(24);
    for (unsigned i = 0; i < n; i++) {
        const char *p = pieces[next(sizeof(pieces) / sizeof(pieces[0]))];
        buf_add(&s, p, *p ? strlen(p) : 1);
    }
    json_t *v = json_stringn(s.p ? s.p : "", s.len);
    buf_release(&s);
    return v;
}

static json_t *random_value(int depth)
{
    switch (next(depth > 3 ? 6 : 8)) {
    case 0: return random_string();
    case 1: {
        unsigned shift = 1 + next(63);
        int64_t magnitude = (int64_t)(rng >> shift); /* below 2^63 */
        return json_integer(next(2) ? magnitude : -magnitude);
    }
    case 2: {
        double divisor = (double)(1 + next(1000000));
        return json_real((double)(int64_t)rng / divisor);
    }
    case 3: return json_true();
    case 4: return json_false();
    case 5: return json_null();
    case 6: {
        json_t *a = json_array();
        for (unsigned i = next(6); i > 0; i--)
            json_array_append_new(a, random_value(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (unsigned i = next(6); i > 0; i--) {
            json_t *k = random_string();
            json_object_setn_new(o, json_string_value(k), json_string_length(k),
                                 random_value(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
}

void test_jsonout_random(void)
{
    int failed = 0;
    for (int i = 0; i < 3000 && failed < 3; i++)
        if (!same_as_jansson(random_value(0))) {
            test_note("random tree %d", i);
            failed++;
        }
}
