/* test_api_qr.c - GET /api/links/CODE/qr (api_qr.c) in-process (harness.h):
 * the SVG's modules are those libqrencode gives for the short URL, the PNG's
 * size follows the scale; bad parameters name their field; only the owner
 * or an admin gets it (anyone else the 404 of an unknown code); a failing
 * store answers 503. (tests/e2e/qr.test.mjs decodes both with zbarimg.) */
#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "test.h"

#include "base/banned.h"

/* Compares the SVG's side and dark modules with libqrencode's symbol of
 * 'url' (level M, four modules of quiet zone); *side gets the SVG's. */
static bool svg_encodes(const char *svg, const char *url, int *side)
{
    QRcode *qr = QRcode_encodeString(url, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    if (!CHECK(qr != NULL))
        return false;
    int w = qr->width, s = 0, s2 = 0;
    const char *vb = strstr(svg, "viewBox=\"0 0 ");
    bool ok = CHECK(vb && sscanf(vb, "viewBox=\"0 0 %d %d\"", &s, &s2) == 2) &&
              CHECK_EQ_INT(s, w + 8) && CHECK_EQ_INT(s2, s);
    *side = s;
    unsigned char *drawn = calloc((size_t)w * (size_t)w, 1);
    if (!drawn)
        abort();
    const char *p = strstr(svg, " d=\"");
    ok = CHECK(p != NULL) && ok;
    for (p = p ? p + 4 : ""; ok && *p == 'M';) {
        int x, y, n, back, used = 0;
        ok = CHECK_EQ_INT(sscanf(p, "M%d %dh%dv1h-%dz%n", &x, &y, &n, &back, &used), 4) &&
             CHECK_EQ_INT(n, back) && CHECK(x >= 4 && y >= 4 && x + n <= w + 4 && y < w + 4);
        for (int i = 0; ok && i < n; i++)
            drawn[(size_t)(y - 4) * (size_t)w + (size_t)(x - 4 + i)] = 1;
        p += used;
    }
    ok = CHECK(!strncmp(p, "\"/>", 3)) && ok; /* nothing but runs */
    int wrong = 0;
    for (size_t i = 0; ok && i < (size_t)w * (size_t)w; i++)
        wrong += drawn[i] != (qr->data[i] & 1);
    ok = CHECK_EQ_INT(wrong, 0) && ok;
    free(drawn);
    QRcode_free(qr);
    return ok;
}

static unsigned be32(const unsigned char *p)
{
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

void test_api_qr_svg(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *mine[] = {hx_auth(h, false, auth), NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/qr\",\"alias\":\"qr-code\"}",
                           code),
                 201);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/qr-code/qr", mine, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "image/svg+xml");
    CHECK_EQ_STR(hx_header(&resp, "X-Content-Type-Options"), "nosniff");
    CHECK_EQ_STR(hx_header(&resp, "Content-Security-Policy"), "default-src 'none'");
    CHECK_EQ_STR(hx_header(&resp, "Content-Disposition"), "inline; filename=\"qr-code-qr.svg\"");
    CHECK_EQ_STR(hx_header(&resp, "Cache-Control"), "private, no-cache");
    CHECK(!strncmp(resp.body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44));
    CHECK(!strstr(resp.body, "<script"));
    int side = 0;
    CHECK(svg_encodes(resp.body, "http://sho.rt/qr-code", &side));
    char size[64];
    snprintf(size, sizeof(size), "width=\"%d\" height=\"%d\"", side * 8, side * 8);
    CHECK(strstr(resp.body, size) != NULL); /* 8 pixels a module by default */
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/qr-code/qr?format=svg&scale=2", mine, NULL,
                            &resp),
                 200);
    snprintf(size, sizeof(size), "width=\"%d\" height=\"%d\"", side * 2, side * 2);
    CHECK(strstr(resp.body, size) != NULL);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_qr_png(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *mine[] = {hx_auth(h, false, auth), NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/qr\"}", code), 201);
    char url[96];
    snprintf(url, sizeof(url), "http://sho.rt/%s", code);
    QRcode *qr = QRcode_encodeString(url, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    int side = qr ? qr->width + 8 : 0;
    QRcode_free(qr);
    static const int scales[] = {1, 3, 8, 40};
    for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
        char target[128];
        snprintf(target, sizeof(target), "/api/links/%s/qr?format=png&scale=%d", code, scales[i]);
        struct hx_resp resp;
        CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 200);
        CHECK_EQ_STR(resp.content_type, "image/png");
        const unsigned char *b = (const unsigned char *)resp.body;
        if (CHECK(resp.body_len > 33) &&
            CHECK(!memcmp(b, "\x89PNG\r\n\x1a\n", 8) && !memcmp(b + 12, "IHDR", 4))) {
            CHECK_EQ_INT(be32(b + 16), side * scales[i]);
            CHECK_EQ_INT(be32(b + 20), side * scales[i]);
            CHECK_EQ_INT(b[24], 1); /* 1 bit ... */
            CHECK_EQ_INT(b[25], 0); /* ... greyscale */
        }
        CHECK(!hx_header(&resp, "Content-Security-Policy"));
        hx_resp_release(&resp);
    }
    /* HEAD: the head only. */
    char target[128];
    snprintf(target, sizeof(target), "/api/links/%s/qr?format=png", code);
    struct hx_resp resp;
    CHECK_EQ_INT(hx_request(h, "HEAD", target, mine, NULL, &resp), 200);
    CHECK_EQ_STR(resp.content_type, "image/png");
    CHECK_EQ_INT(resp.body_len, 0);
    hx_resp_release(&resp);
    hx_free(h);
}

void test_api_qr_errors(void)
{
    struct hx *h = hx_new();
    if (!h)
        return;
    char auth[HX_AUTH_MAX], other[HX_AUTH_MAX], admin[HX_AUTH_MAX], code[HX_CODE_MAX];
    const char *mine[] = {hx_auth(h, false, auth), NULL};
    const char *theirs[] = {hx_auth(h, false, other), NULL};
    const char *admins[] = {hx_auth(h, true, admin), NULL};
    CHECK_EQ_INT(hx_create(h, auth, "{\"url\":\"https://example.com/qr\"}", code), 201);
    char target[128];
    struct hx_resp resp;

    static const char *const formats[] = {"gif", "PNG", "", "svg%20"};
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        snprintf(target, sizeof(target), "/api/links/%s/qr?format=%s", code, formats[i]);
        if (!CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "invalid_field") |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "format"))
            test_note("format=%s: %s", formats[i], resp.body);
        hx_resp_release(&resp);
    }
    static const char *const scales[] = {"0", "41", "-1", "1.5", "abc", "", "100", "8x", "%38"};
    for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
        snprintf(target, sizeof(target), "/api/links/%s/qr?format=png&scale=%s", code, scales[i]);
        if (!CHECK_EQ_INT(hx_request(h, "GET", target, mine, NULL, &resp), 400) |
            !CHECK_EQ_STR(hx_json_str(&resp, "error.field"), "scale") |
            !CHECK(hx_json_str(&resp, "error.message") &&
                   strstr(hx_json_str(&resp, "error.message"), "1 to 40")))
            test_note("scale=%s: %s", scales[i], resp.body);
        hx_resp_release(&resp);
    }

    /* Another key gets exactly the answer of a code that does not exist. */
    snprintf(target, sizeof(target), "/api/links/%s/qr", code);
    CHECK_EQ_INT(hx_request(h, "GET", target, theirs, NULL, &resp), 404);
    CHECK_EQ_STR(hx_json_str(&resp, "error.code"), "not_found");
    char *theirs_body = resp.json ? json_dumps(resp.json, JSON_SORT_KEYS) : NULL;
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/nosuchcode/qr", mine, NULL, &resp), 404);
    char *unknown_body = resp.json ? json_dumps(resp.json, JSON_SORT_KEYS) : NULL;
    hx_resp_release(&resp);
    CHECK_EQ_STR(theirs_body, unknown_body);
    free(theirs_body);
    free(unknown_body);
    CHECK_EQ_INT(hx_request(h, "GET", "/api/links/bad!code/qr", mine, NULL, &resp), 404);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, admins, NULL, &resp), 200);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "GET", target, NULL, NULL, &resp), 401);
    hx_resp_release(&resp);
    CHECK_EQ_INT(hx_request(h, "POST", target, mine, "{}", &resp), 405);
    CHECK_EQ_STR(hx_header(&resp, "Allow"), "GET");
    hx_resp_release(&resp);
    /* The link cannot be read: 503. */
    hx_unavailable(h, "link_get", 0, "GET", target, mine, NULL);
    hx_free(h);
}
