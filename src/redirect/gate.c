/* gate.c - the password gate's page and the form field it posts.
 *
 * The page carries no script and loads nothing: its one style block comes
 * from src/redirect/gate.css, compiled in together with its SHA-256 (generated at
 * build time by scripts/gen-gate-style.mjs), so the CSP can allow exactly
 * that block and nothing else. The only outside text on the page, the code
 * and the message, is HTML-escaped; the code in the form's action is also
 * percent-encoded, so a hostile code could neither leave the attribute nor
 * point the form at another path. */
#include "redirect/gate.h"

#include <stdbool.h>
#include <string.h>

#include "base/err.h"
#include "base/pct.h"
#include "base/banned.h"

#include "gate_style.inc"

const char gate_csp[] = "default-src 'none'; style-src 'sha256-" GATE_STYLE_SHA256 "'; "
                        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

static void add_html_n(struct buf *out, const char *s, size_t n)
{
    for (const char *end = s + n; s < end; s++) {
        switch (*s) {
        case '&': buf_adds(out, "&amp;"); break;
        case '<': buf_adds(out, "&lt;"); break;
        case '>': buf_adds(out, "&gt;"); break;
        case '"': buf_adds(out, "&quot;"); break;
        case '\'': buf_adds(out, "&#39;"); break;
        default: buf_addc(out, *s);
        }
    }
}

static void add_html(struct buf *out, const char *s) { add_html_n(out, s, strlen(s)); }

void gate_render(struct buf *out, const char *code, const char *message)
{
    buf_adds(out, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta name=\"robots\" content=\"noindex, nofollow\">"
                  "<meta name=\"referrer\" content=\"no-referrer\">\n<title>");
    add_html(out, code);
    buf_adds(out, " \xc2\xb7 password required</title>\n<style>" GATE_STYLE "</style></head>\n"
                  "<body><main>\n<h1>This link is protected</h1>\n"
                  "<p>Enter the password to open <code>/");
    add_html(out, code);
    buf_adds(out, "</code>.</p>\n");
    if (message) {
        buf_adds(out, "<p class=\"msg\" role=\"alert\">");
        add_html(out, message);
        buf_adds(out, "</p>\n");
    }
    buf_adds(out, "<form method=\"post\" action=\"/");
    pct_encode(out, code);
    buf_adds(out, "\">\n<label for=\"password\">Password</label>\n"
                  "<input id=\"password\" name=\"password\" type=\"password\" required autofocus "
                  "autocomplete=\"current-password\">\n"
                  "<button type=\"submit\">Open link</button>\n</form>\n</main></body></html>\n");
}

void gate_render_continue(struct buf *out, const char *code, const char *url)
{
    buf_adds(out, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta name=\"robots\" content=\"noindex, nofollow\">"
                  "<meta name=\"referrer\" content=\"no-referrer\">\n"
                  "<meta http-equiv=\"refresh\" content=\"0;url=");
    add_html(out, url);
    buf_adds(out, "\">\n<title>");
    add_html(out, code);
    buf_adds(out, "</title>\n<style>" GATE_STYLE "</style></head>\n"
                  "<body><main>\n<h1>Opening the link</h1>\n<p><a rel=\"noreferrer\" href=\"");
    add_html(out, url);
    buf_adds(out, "\">Continue</a></p>\n</main></body></html>\n");
}

void gate_render_notice(struct buf *out, struct slice code, const char *heading, const char *before,
                        const char *after)
{
    buf_adds(out, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta name=\"robots\" content=\"noindex, nofollow\">"
                  "<meta name=\"referrer\" content=\"no-referrer\">\n<title>");
    add_html_n(out, code.p, code.n);
    buf_adds(out, " \xc2\xb7 ");
    add_html(out, heading);
    buf_adds(out, "</title>\n<style>" GATE_STYLE "</style></head>\n<body><main>\n<h1>");
    add_html(out, heading);
    buf_adds(out, "</h1>\n<p>");
    add_html(out, before);
    buf_adds(out, "<code>/");
    add_html_n(out, code.p, code.n);
    buf_adds(out, "</code>");
    add_html(out, after);
    buf_adds(out, "</p>\n</main></body></html>\n");
}

int gate_form_password(const char *body, size_t n, char *out, size_t outn, size_t *len)
{
    *len = 0;
    bool found = false;
    const char *p = body, *end = body + n;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *seg_end = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(seg_end - p));
        const char *name_end = eq ? eq : seg_end;
        const char *val = eq ? eq + 1 : seg_end;
        char name[sizeof("password") - 1];
        long nn = pct_form_decode(p, (size_t)(name_end - p), NULL, 0);
        long vn = pct_form_decode(val, (size_t)(seg_end - val), NULL, 0);
        if (nn < 0 || vn < 0)
            goto bad;
        if (nn == (long)sizeof(name)) {
            pct_form_decode(p, (size_t)(name_end - p), name, sizeof(name));
            if (memcmp(name, "password", sizeof(name)) == 0) {
                if (found || !outn || (size_t)vn > outn - 1)
                    goto bad;
                pct_form_decode(val, (size_t)(seg_end - val), out, outn - 1);
                out[vn] = '\0';
                *len = (size_t)vn;
                found = true;
            }
        }
        p = seg_end + 1;
    }
    if (found)
        return ERR_OK;
bad:
    if (outn)
        memset(out, 0, found ? *len + 1 : 1); /* no half-read password left behind */
    *len = 0;
    return ERR_INVALID;
}
