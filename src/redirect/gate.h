/* gate.h - the password gate of a protected link: a small self-contained
 * HTML page (no external assets, no script) under a strict
 * Content-Security-Policy, and the form field it posts back. Pure functions,
 * no I/O, any thread. */
#ifndef SHORTD_GATE_H
#define SHORTD_GATE_H

#include <stddef.h>

#include "base/buf.h"

/* Content-Security-Policy for the page: default-src 'none'; style-src with
 * the sha256 hash of its one style block (src/redirect/gate.css, hashed at build
 * time; no 'unsafe-inline'); form-action 'self'; frame-ancestors 'none';
 * base-uri 'none'. */
extern const char gate_csp[];

/* Appends the page to 'out': titled with the code, a form POSTing the field
 * `password` to "/<code>", and 'message' (NULL for none, e.g. "Wrong
 * password") shown above it. Code and message are HTML-escaped (the code is
 * also percent-encoded in the form's action), so any bytes are safe. */
void gate_render(struct buf *out, const char *code, const char *message);

/* The answer to a right password: a page (under the same gate_csp) that
 * sends the browser on to 'url' at once with a meta refresh, and links to it
 * for a browser that does not follow one; 'url' is HTML-escaped.
 * Why not a 302/303: Chromium applies the gate's "form-action 'self'" to the
 * redirects that follow the form's POST, so a redirect to the destination's
 * (other) origin is blocked and the visitor stays on the gate (tried with
 * Debian's chromium). A meta refresh is a new navigation, not the form's. */
void gate_render_continue(struct buf *out, const char *code, const char *url);

/* A page that only tells, under the same gate_csp: why a link opens
 * nothing (notfound.c). 'code' (any bytes) is shown in the title and in the
 * text, between 'before' and 'after'; every piece is HTML-escaped. */
void gate_render_notice(struct buf *out, struct slice code, const char *heading, const char *before,
                        const char *after);

/* Reads `password` from an application/x-www-form-urlencoded body ('+' is a
 * space, %XX a byte; other fields are ignored) into 'out', NUL-terminated,
 * its length in *len (it may be 0, and may contain any byte). ERR_INVALID
 * when the field is absent or given twice, when any field of the body has a
 * bad %-escape, or when the value is longer than 'outn' - 1 bytes. */
int gate_form_password(const char *body, size_t n, char *out, size_t outn, size_t *len);

#endif
