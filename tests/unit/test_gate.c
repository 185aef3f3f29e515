/* test_gate.c - the password gate: the page escapes whatever code and
 * message it is given, carries a form that posts `password` to the code, no
 * script and nothing external; its CSP allows exactly its one style block
 * (the hash recomputed here from the page); and the form body parser. */
#include <sodium.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "redirect/gate.h"
#include "test.h"

#include "base/banned.h"

static const char *find(const struct buf *b, const char *s)
{
    return b->p ? strstr(b->p, s) : NULL;
}

void test_gate_page(void)
{
    struct buf page = BUF_INIT;
    gate_render(&page, "Promo_2024", NULL);
    CHECK(strncmp(page.p, "<!doctype html>", 15) == 0);
    CHECK(find(&page, "<title>Promo_2024 "));
    CHECK(find(&page, "<form method=\"post\" action=\"/Promo_2024\">"));
    CHECK(find(&page, "name=\"password\" type=\"password\""));
    CHECK(!find(&page, "class=\"msg\""));
    /* Self-contained: no script, no external anything */
    CHECK(!find(&page, "<script"));
    CHECK(!find(&page, "src="));
    CHECK(!find(&page, "href="));
    CHECK(!find(&page, "http:"));
    CHECK(!find(&page, "https:"));
    CHECK(!find(&page, "url("));
    CHECK(!find(&page, "@import"));

    buf_reset(&page);
    gate_render(&page, "abcd", "Wrong password");
    CHECK(find(&page, "<p class=\"msg\" role=\"alert\">Wrong password</p>"));
    buf_release(&page);
}

void test_gate_escaping(void)
{
    struct buf page = BUF_INIT;
    const char *code = "x\"><script>alert(1)</script>&'/../api?a=b#c";
    const char *msg = "</p><img src=x onerror=alert(1)> & \"quoted\" 'single' \xc3\xa9";
    gate_render(&page, code, msg);
    CHECK(!find(&page, "<script"));
    CHECK(!find(&page, "<img"));
    CHECK(!find(&page, "x\">"));
    CHECK(find(&page,
               "<title>x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#39;/../api?a=b#c"));
    CHECK(find(&page, "&lt;/p&gt;&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quoted&quot; "
                      "&#39;single&#39; \xc3\xa9</p>"));
    /* In the action the code is one percent-encoded path segment */
    CHECK(find(&page, "action=\"/x%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E%26%27%2F..%2F"
                      "api%3Fa%3Db%23c\""));
    /* Exactly one of each element that matters, whatever the input */
    const char *tags[] = {"<form", "<style>", "</style>", "<title>", "<input", "class=\"msg\""};
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        const char *first = find(&page, tags[i]);
        if (!CHECK(first && !strstr(first + 1, tags[i])))
            test_note("%s", tags[i]);
    }
    buf_release(&page);
}

void test_gate_continue(void)
{
    struct buf page = BUF_INIT;
    gate_render_continue(&page, "abcd", "https://example.org/a?b=1&c='2'#\"x\"><script>");
    CHECK(find(&page, "<meta http-equiv=\"refresh\" content=\"0;url=https://example.org/a?b=1&amp;"
                      "c=&#39;2&#39;#&quot;x&quot;&gt;&lt;script&gt;\">"));
    CHECK(find(&page, "href=\"https://example.org/a?b=1&amp;c=&#39;2&#39;#&quot;x&quot;&gt;&lt;"
                      "script&gt;\">Continue</a>"));
    CHECK(!find(&page, "<script"));
    CHECK(!find(&page, "<form"));
    CHECK(find(&page, "<title>abcd</title>"));
    /* The same style block, so the same CSP serves it */
    struct buf gate = BUF_INIT;
    gate_render(&gate, "abcd", NULL);
    const char *a = strstr(page.p, "<style>"), *b = strstr(gate.p, "<style>");
    CHECK(a && b && strncmp(a, b, (size_t)(strstr(b, "</style>") - b)) == 0);
    buf_release(&gate);
    buf_release(&page);
}

void test_gate_csp(void)
{
    CHECK(strncmp(gate_csp, "default-src 'none'; ", 20) == 0);
    CHECK(strstr(gate_csp, "form-action 'self'"));
    CHECK(strstr(gate_csp, "frame-ancestors 'none'"));
    CHECK(strstr(gate_csp, "base-uri 'none'"));
    CHECK(!strstr(gate_csp, "unsafe"));
    CHECK(!strchr(gate_csp, '\n') && !strchr(gate_csp, '\r'));

    /* The hash of the bytes between <style> and </style>, as a browser sees them */
    struct buf page = BUF_INIT;
    gate_render(&page, "abcd", "m");
    const char *open = strstr(page.p, "<style>");
    const char *close = strstr(page.p, "</style>");
    if (!CHECK(open && close && close > open))
        return;
    open += strlen("<style>");
    CHECK(close - open > 100);
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)open, (unsigned long long)(close - open));
    char b64[sodium_base64_ENCODED_LEN(sizeof(h), sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(b64, sizeof(b64), h, sizeof(h), sodium_base64_VARIANT_ORIGINAL);
    struct buf want = BUF_INIT;
    buf_printf(&want, "; style-src 'sha256-%s'; ", b64);
    if (!CHECK(strstr(gate_csp, want.p)))
        test_note("csp %s, style hashes to %s", gate_csp, b64);
    buf_release(&want);
    buf_release(&page);
}

static const struct form_case {
    const char *body;
    int rc;
    const char *pw; /* ERR_OK: the value */
    size_t len;
} form_cases[] = {
    {"password=hunter2", ERR_OK, "hunter2", 7},
    {"password=a+b", ERR_OK, "a b", 3},
    {"password=a%2Bb", ERR_OK, "a+b", 3},
    {"password=a%2bb%20c", ERR_OK, "a+b c", 5},
    {"password=%C3%A9t%C3%A9", ERR_OK, "\xc3\xa9t\xc3\xa9", 5},
    {"password=%26%3D%25", ERR_OK, "&=%", 3},
    {"password=a=b", ERR_OK, "a=b", 3},
    {"password=", ERR_OK, "", 0},
    {"password", ERR_OK, "", 0},
    {"password=x%00y", ERR_OK, "x\0y", 3},
    {"csrf=1&password=pw&remember=on", ERR_OK, "pw", 2},
    {"&&password=pw&", ERR_OK, "pw", 2},
    {"pass%77ord=pw", ERR_OK, "pw", 2},
    {"x=%41&password=pw", ERR_OK, "pw", 2},
    /* Absent */
    {"", ERR_INVALID, NULL, 0},
    {"passwd=pw", ERR_INVALID, NULL, 0},
    {"Password=pw", ERR_INVALID, NULL, 0},
    {"password2=pw", ERR_INVALID, NULL, 0},
    {"xpassword=pw", ERR_INVALID, NULL, 0},
    {"password+=pw", ERR_INVALID, NULL, 0},
    /* Given twice */
    {"password=a&password=b", ERR_INVALID, NULL, 0},
    /* Bad escapes, in the value or anywhere else */
    {"password=%", ERR_INVALID, NULL, 0},
    {"password=%4", ERR_INVALID, NULL, 0},
    {"password=%G1", ERR_INVALID, NULL, 0},
    {"password=%%41", ERR_INVALID, NULL, 0},
    {"password=ok&x=%zz", ERR_INVALID, NULL, 0},
    {"x%=1&password=ok", ERR_INVALID, NULL, 0},
};

void test_gate_form(void)
{
    for (size_t i = 0; i < sizeof(form_cases) / sizeof(form_cases[0]); i++) {
        const struct form_case *c = &form_cases[i];
        char out[64];
        memset(out, 'Z', sizeof(out));
        size_t len = 99;
        int rc = gate_form_password(c->body, strlen(c->body), out, sizeof(out), &len);
        bool ok = CHECK_EQ_INT(rc, c->rc);
        if (ok && rc == ERR_OK) {
            ok = CHECK_EQ_INT(len, c->len) && CHECK(memcmp(out, c->pw, len) == 0) &&
                 CHECK(out[len] == '\0');
        } else if (ok) {
            ok = CHECK_EQ_INT(len, 0) && CHECK(out[0] == '\0');
        }
        if (!ok)
            test_note("case %zu: %s", i, c->body);
    }

    /* Only the body's n bytes count, not what follows */
    char out[16];
    size_t len;
    CHECK_EQ_INT(gate_form_password("password=abc&password=x", 12, out, sizeof(out), &len), ERR_OK);
    CHECK_EQ_STR(out, "abc");

    /* The limit is outn - 1 bytes, decoded */
    CHECK_EQ_INT(gate_form_password("password=%41%42%43", 18, out, 4, &len), ERR_OK);
    CHECK_EQ_STR(out, "ABC");
    CHECK_EQ_INT(gate_form_password("password=ABCD", 13, out, 4, &len), ERR_INVALID);
    CHECK_EQ_INT(gate_form_password("password=", 9, out, 0, &len), ERR_INVALID);
    /* A value read before a later error is wiped */
    char keep[16];
    memset(keep, 'Z', sizeof(keep));
    CHECK_EQ_INT(gate_form_password("password=secret&y=%", 19, keep, sizeof(keep), &len),
                 ERR_INVALID);
    CHECK(memchr(keep, 's', sizeof(keep)) == NULL);
}
