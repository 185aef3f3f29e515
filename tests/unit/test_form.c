/* test_form.c - form parameters (form.h): urlencoded and multipart bodies,
 * the query, which wins, decoding, limits, and malformed forms. */
#include <stdlib.h>
#include <string.h>

#include "http/form.h"
#include "test.h"

#include "base/banned.h"

static const struct slice none = {NULL, 0};

static struct slice s(const char *p) { return (struct slice){p, strlen(p)}; }

/* The value as a string ("(none)" when there is none), in static storage. */
static const char *value(struct slice ct, const char *body, const char *query, const char *name,
                         size_t max)
{
    static char out[256];
    size_t n = 0;
    char *v = form_value(ct, body ? s(body) : none, query ? s(query) : none, name, max, &n);
    if (!v)
        return "(none)";
    CHECK(n < sizeof(out) && v[n] == '\0');
    memcpy(out, v, n + 1);
    free(v);
    return out;
}

void test_form_urlencoded(void)
{
    struct slice ct = s("application/x-www-form-urlencoded; charset=UTF-8");
    const char *body = "url=https%3A%2F%2Fexample.com%2F%3Fa%3D1&title=a+b&empty=&bare&k%65y=v";
    CHECK_EQ_STR(value(ct, body, NULL, "url", 100), "https://example.com/?a=1");
    CHECK_EQ_STR(value(ct, body, NULL, "title", 100), "a b");
    CHECK_EQ_STR(value(ct, body, NULL, "empty", 100), "");
    CHECK_EQ_STR(value(ct, body, NULL, "bare", 100), "");
    CHECK_EQ_STR(value(ct, body, NULL, "key", 100), "v"); /* names are decoded too */
    CHECK_EQ_STR(value(ct, body, NULL, "nosuch", 100), "(none)");
    CHECK_EQ_STR(value(ct, "a=%ZZ", NULL, "a", 100), "(none)"); /* a bad escape */
    CHECK_EQ_STR(value(ct, "a=123456789", NULL, "a", 8), "(none)");
    CHECK_EQ_STR(value(ct, "a=1&a=2", NULL, "a", 8), "1"); /* the first */
    /* the body before the query; the query when the body has none */
    CHECK_EQ_STR(value(ct, "a=body", "a=query&b=q", "a", 100), "body");
    CHECK_EQ_STR(value(ct, "a=body", "a=query&b=q", "b", 100), "q");
    /* a body that is no form is not read; an empty query has no pointer */
    CHECK_EQ_STR(value(s("application/json"), "a=1", NULL, "a", 100), "(none)");
    CHECK_EQ_STR(value(none, "a=1", NULL, "a", 100), "(none)");
    CHECK_EQ_STR(value(none, NULL, NULL, "a", 100), "(none)");
    size_t n = 0;
    char *v = form_value(ct, s("a=x%00y"), none, "a", 100, &n);
    CHECK(v && n == 3 && v[1] == '\0');
    free(v);
}

void test_form_multipart(void)
{
    struct slice ct = s("multipart/form-data; boundary=----XyZ");
    const char *body = "------XyZ\r\n"
                       "Content-Disposition: form-data; name=\"action\"\r\n\r\n"
                       "shorturl\r\n"
                       "------XyZ\r\n"
                       "Content-Disposition: form-data; name=\"url\"\r\n"
                       "Content-Type: text/plain\r\n\r\n"
                       "https://example.com/?a=%41&b=1\r\n"
                       "------XyZ\r\n"
                       "Content-Disposition: form-data; name=\"empty\"\r\n\r\n"
                       "\r\n"
                       "------XyZ--\r\n";
    CHECK_EQ_STR(value(ct, body, NULL, "action", 100), "shorturl");
    CHECK_EQ_STR(value(ct, body, NULL, "url", 100), "https://example.com/?a=%41&b=1"); /* as sent */
    CHECK_EQ_STR(value(ct, body, NULL, "empty", 100), "");
    CHECK_EQ_STR(value(ct, body, NULL, "nosuch", 100), "(none)");
    CHECK_EQ_STR(value(ct, body, "nosuch=q", "nosuch", 100), "q");
    CHECK_EQ_STR(value(ct, body, NULL, "url", 10), "(none)");
    /* a quoted boundary, a preamble, a part without headers */
    CHECK_EQ_STR(value(s("Multipart/Form-Data; boundary=\"b 1\"; x=y"),
                       "preamble\r\n--b 1\r\n\r\nno name\r\n--b 1\r\n"
                       "content-disposition: form-data; name=\"k\"\r\n\r\nv\r\n--b 1--",
                       NULL, "k", 100),
                 "v");
    /* cut short: a part without its closing delimiter is no value */
    CHECK_EQ_STR(value(ct, "------XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv", NULL,
                       "a", 100),
                 "(none)");
    /* no boundary, an empty one */
    CHECK_EQ_STR(value(s("multipart/form-data"), body, NULL, "action", 100), "(none)");
    CHECK_EQ_STR(value(s("multipart/form-data; boundary="), body, NULL, "action", 100), "(none)");
}
