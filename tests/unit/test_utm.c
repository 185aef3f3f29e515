/* test_utm.c - the UTM object of the API (what is accepted, which field an
 * error names, the round trip) and its merge into destinations: a table of
 * URLs with the link's values and the URL a visitor must be sent to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "test.h"
#include "links/urlcheck.h"
#include "links/utm.h"

#include "base/banned.h"

static int from_text(const char *text, struct utm *u, const char **field)
{
    json_error_t e;
    json_t *o = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!CHECK(o != NULL))
        test_note("bad JSON in the test: %s", text);
    int rc = utm_from_json(o, u, field);
    json_decref(o);
    return rc;
}

void test_utm_json(void)
{
    struct utm u;
    const char *field = "x";
    CHECK_EQ_INT(from_text("{\"source\": \"news letter\", \"campaign\": \"spring\"}", &u, &field),
                 ERR_OK);
    CHECK(field == NULL);
    CHECK_EQ_STR(u.source, "news letter");
    CHECK_EQ_STR(u.campaign, "spring");
    CHECK_EQ_STR(u.medium, "");
    CHECK(!utm_empty(&u));
    json_t *back = utm_to_json(&u);
    char *text = json_dumps(back, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_EQ_STR(text, "{\"campaign\":\"spring\",\"source\":\"news letter\"}");
    free(text);
    json_decref(back);

    /* Every member, values at the limit, UTF-8, null as absent */
    char big[UTM_VALUE_MAX + 1];
    memset(big, 'v', UTM_VALUE_MAX);
    big[UTM_VALUE_MAX] = '\0';
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:n}", "source", big, "medium", "m", "campaign",
                          "caf\xc3\xa9", "term", "t", "content", "c", "unused");
    json_object_del(o, "unused");
    json_object_set_new(o, "term", json_null());
    CHECK_EQ_INT(utm_from_json(o, &u, &field), ERR_OK);
    CHECK_EQ_STR(u.source, big);
    CHECK_EQ_STR(u.campaign, "caf\xc3\xa9");
    CHECK_EQ_STR(u.term, "");
    CHECK_EQ_STR(u.content, "c");
    json_decref(o);

    struct utm none = {0};
    CHECK(utm_empty(&none));
    CHECK(utm_to_json(&none) == NULL);
}

void test_utm_json_errors(void)
{
    static const struct {
        const char *json;
        const char *field;
    } cases[] = {
        {"{}", "utm"},
        {"{\"source\": null}", "utm"},
        {"[\"source\"]", "utm"},
        {"\"google\"", "utm"},
        {"null", "utm"},
        {"{\"source\": \"a\", \"utm_source\": \"b\"}", "utm"},
        {"{\"Source\": \"a\"}", "utm"},
        {"{\"source\": \"\"}", "utm.source"},
        {"{\"medium\": 5}", "utm.medium"},
        {"{\"campaign\": true}", "utm.campaign"},
        {"{\"term\": [\"a\"]}", "utm.term"},
        {"{\"content\": {}}", "utm.content"},
        {"{\"source\": \"a\\nb\"}", "utm.source"},
        {"{\"source\": \"a\\u0000b\"}", "utm.source"},
        {"{\"source\": \"tab\\there\"}", "utm.source"},
        {"{\"source\": \"del\\u007f\"}", "utm.source"},
        {"{\"source\": \"ok\", \"medium\": \"\"}", "utm.medium"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct utm u;
        const char *field = NULL;
        if (!CHECK_EQ_INT(from_text(cases[i].json, &u, &field), ERR_INVALID) ||
            !CHECK_EQ_STR(field, cases[i].field))
            test_note("case %zu: %s", i, cases[i].json);
    }
    /* One byte over the limit */
    char big[UTM_VALUE_MAX + 2];
    memset(big, 'v', UTM_VALUE_MAX + 1);
    big[UTM_VALUE_MAX + 1] = '\0';
    json_t *o = json_pack("{s:s}", "term", big);
    struct utm u;
    const char *field = NULL;
    CHECK_EQ_INT(utm_from_json(o, &u, &field), ERR_INVALID);
    CHECK_EQ_STR(field, "utm.term");
    json_decref(o);
}

static const struct merge_case {
    const char *url;
    const char *source, *medium, *campaign; /* NULL: absent */
    const char *want;
} merge_cases[] = {
    /* No query */
    {"https://example.org", "nl", NULL, NULL, "https://example.org?utm_source=nl"},
    {"https://example.org/p", "nl", "email", "x",
     "https://example.org/p?utm_source=nl&utm_medium=email&utm_campaign=x"},
    {"https://example.org/?", "nl", NULL, NULL, "https://example.org/?utm_source=nl"},
    /* Other parameters untouched and in order; new ones appended */
    {"https://example.org/p?b=2&a=1", "nl", NULL, NULL,
     "https://example.org/p?b=2&a=1&utm_source=nl"},
    {"https://example.org/p?a=%20x+y&flag", NULL, "cpc", NULL,
     "https://example.org/p?a=%20x+y&flag&utm_medium=cpc"},
    /* An existing one is replaced where it stands */
    {"https://example.org/?a=1&utm_source=old&b=2", "new", NULL, NULL,
     "https://example.org/?a=1&utm_source=new&b=2"},
    {"https://example.org/?utm_source=old", "new", "m", NULL,
     "https://example.org/?utm_source=new&utm_medium=m"},
    {"https://example.org/?utm_source", "new", NULL, NULL, "https://example.org/?utm_source=new"},
    {"https://example.org/?utm_source=", "new", NULL, NULL, "https://example.org/?utm_source=new"},
    /* ... and all later copies go */
    {"https://example.org/?utm_source=a&x=1&utm_source=b&utm_source=c&y=2", "new", NULL, NULL,
     "https://example.org/?utm_source=new&x=1&y=2"},
    {"https://example.org/?utm_medium=a&utm_source=b&utm_medium=c", "s", "m", NULL,
     "https://example.org/?utm_medium=m&utm_source=s"},
    /* Only exact names: other cases, prefixes, encoded names and unset ones stay */
    {"https://example.org/?UTM_SOURCE=a&utm_sourcex=b&utm%5Fsource=c&utm_term=t", "s", NULL, NULL,
     "https://example.org/?UTM_SOURCE=a&utm_sourcex=b&utm%5Fsource=c&utm_term=t&utm_source=s"},
    {"https://example.org/?xutm_source=a", "s", NULL, NULL,
     "https://example.org/?xutm_source=a&utm_source=s"},
    /* Fragments stay last; a '?' in the fragment is not a query */
    {"https://example.org/p#top", "s", NULL, NULL, "https://example.org/p?utm_source=s#top"},
    {"https://example.org/p?a=1#top", "s", NULL, NULL,
     "https://example.org/p?a=1&utm_source=s#top"},
    {"https://example.org/p?utm_source=x#a?utm_source=y", "s", NULL, NULL,
     "https://example.org/p?utm_source=s#a?utm_source=y"},
    {"https://example.org/p#", "s", NULL, NULL, "https://example.org/p?utm_source=s#"},
    {"https://example.org/p?#f", "s", NULL, NULL, "https://example.org/p?utm_source=s#f"},
    /* Empty parameters are dropped once the query is rewritten */
    {"https://example.org/?&a=1&&b=2&", "s", NULL, NULL,
     "https://example.org/?a=1&b=2&utm_source=s"},
    /* Values are percent-encoded: spaces, &, #, =, +, %, non-ASCII */
    {"https://example.org/", "a b&c#d", "x=y+z%", "caf\xc3\xa9~-._",
     "https://example.org/"
     "?utm_source=a%20b%26c%23d&utm_medium=x%3Dy%2Bz%25&utm_campaign=caf%C3%A9~-._"},
    /* Nothing to set: the URL unchanged, even its odd query */
    {"https://example.org/?&a=1&&#f", NULL, NULL, NULL, "https://example.org/?&a=1&&#f"},
    {"https://example.org", NULL, NULL, NULL, "https://example.org"},
};

void test_utm_merge(void)
{
    struct buf out = BUF_INIT;
    for (size_t i = 0; i < sizeof(merge_cases) / sizeof(merge_cases[0]); i++) {
        const struct merge_case *c = &merge_cases[i];
        struct utm u = {0};
        snprintf(u.source, sizeof(u.source), "%s", c->source ? c->source : "");
        snprintf(u.medium, sizeof(u.medium), "%s", c->medium ? c->medium : "");
        snprintf(u.campaign, sizeof(u.campaign), "%s", c->campaign ? c->campaign : "");
        if (!CHECK_EQ_INT(utm_merge(c->url, &u, &out), ERR_OK) ||
            !CHECK_EQ_STR(buf_cstr(&out), c->want))
            test_note("case %zu: %s", i, c->url);
    }

    /* Term and content come after the others, in the struct's order */
    struct utm all = {"s", "m", "c", "t", "x"};
    CHECK_EQ_INT(utm_merge("http://e.org/?utm_content=old", &all, &out), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&out), "http://e.org/?utm_content=x&utm_source=s&utm_medium=m"
                                 "&utm_campaign=c&utm_term=t");

    /* The merged URL obeys the destination rules */
    struct buf norm = BUF_INIT, host = BUF_INIT;
    const char *why = NULL;
    struct utm odd = {"\x01\" <>\r\n", "", "", "", ""};
    CHECK_EQ_INT(utm_merge("https://example.org/x?y#z", &odd, &out), ERR_OK);
    CHECK_EQ_INT(urlcheck(out.p, out.len, NULL, &norm, &host, &why), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&norm), buf_cstr(&out));
    buf_release(&norm);
    buf_release(&host);
    buf_release(&out);
}

void test_utm_merge_limit(void)
{
    struct buf url = BUF_INIT, out = BUF_INIT;
    struct utm u = {0};
    memset(u.source, ' ', UTM_VALUE_MAX); /* 128 spaces: 384 bytes encoded */
    const size_t add = strlen("?utm_source=") + 3 * UTM_VALUE_MAX;
    buf_adds(&url, "https://example.org/");
    while (url.len + add < URL_MAX)
        buf_addc(&url, 'a');
    CHECK_EQ_INT(utm_merge(url.p, &u, &out), ERR_OK); /* exactly 8 KiB */
    CHECK_EQ_INT(out.len, URL_MAX);
    buf_addc(&url, 'a');
    buf_adds(&out, "stale");
    CHECK_EQ_INT(utm_merge(url.p, &u, &out), ERR_INVALID);
    CHECK_EQ_INT(out.len, 0);
    buf_release(&url);
    buf_release(&out);
}
