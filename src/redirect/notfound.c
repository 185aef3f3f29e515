/* notfound.c - what a visitor gets when a code opens nothing: unknown,
 * expired, deleted, disabled or used up.
 *
 * Only the paths that answered 404 or 410 before come here (redirect.c,
 * controlled.c, the router's last resort), so a live link's answer never
 * pays for any of it. In order:
 *   1. a fallback URL (Shlink's "not-found redirects"): the setting
 *      `invalid-short-url-redirect` for a code, `regular-404-redirect` for
 *      any other path nothing serves: a 302 for every client, as Shlink
 *      does, since the operator asked for it;
 *   2. a browser (its Accept names text/html) gets a small page saying
 *      which, with the status as before, in the gate's style and under its
 *      Content-Security-Policy (gate.h: no script, one hashed style block);
 *   3. anyone else gets the plain text of before, byte for byte.
 * None of these answers is cached by anyone (Cache-Control: no-store): the
 * code may be taken, or the link enabled, a moment later. */
#include <llhttp.h>
#include <string.h>

#include "api/handlers.h"
#include "app/app.h"
#include "redirect/gate.h"
#include "redirect/redirect.h"
#include "store/store_links.h"
#include "base/banned.h"

enum gone_why gone_why_of(int state)
{
    if (state == LINK_DELETED)
        return GONE_DELETED;
    if (state == LINK_DISABLED)
        return GONE_DISABLED;
    return GONE_EXPIRED;
}

static bool wants_html(const struct request *r)
{
    struct slice accept = http_header(r, "accept");
    return accept.p && memmem(accept.p, accept.n, "text/html", 9);
}

/* 302 to 'url', never cached. */
static int fallback(struct request *r, const char *url)
{
    http_add_header(r, "Location", url, strlen(url));
    http_add_header(r, "Cache-Control", "no-store", 8);
    return 302;
}

/* What the page says for each reason: heading, then the text around the
 * code; the plain text other clients get. */
static const struct {
    const char *heading, *before, *after, *text;
} says[] = {
    [GONE_UNKNOWN] = {"Link not found", "No link has the address ",
                      ". Check it for a typo, or ask whoever shared it.",
                      "Not Found: no link has this code\n"},
    [GONE_EXPIRED] = {"This link has expired", "The link ",
                      " was set to work for a limited time, and that time is over.",
                      "Gone: this link has expired or was removed\n"},
    [GONE_DELETED] = {"This link was deleted", "The link ",
                      " was deleted by its owner and leads nowhere now.",
                      "Gone: this link has expired or was removed\n"},
    [GONE_DISABLED] = {"This link was disabled", "The link ",
                       " was switched off by this service's administrators.",
                       "Gone: this link has expired or was removed\n"},
    [GONE_USED_UP] = {"This link is used up", "The link ",
                      " could be opened a limited number of times, and all of them are used.",
                      "Gone: this link has expired or was removed\n"},
};

static int answer(struct request *r, int status, enum gone_why why)
{
    const char *to = r->app->cfg.invalid_redirect;
    if (to && *to)
        return fallback(r, to);
    if (!wants_html(r))
        return redirect_text(r, status, says[why].text);
    /* The code as the visitor typed it: the path's one segment. */
    struct slice code = {r->path.p + 1, r->path.n ? r->path.n - 1 : 0};
    struct buf page = BUF_INIT;
    gate_render_notice(&page, code, says[why].heading, says[why].before, says[why].after);
    http_add_header(r, "Content-Security-Policy", gate_csp, strlen(gate_csp));
    http_add_header(r, "Cache-Control", "no-store", 8);
    status = http_body(r, status, "text/html; charset=utf-8", page.p, page.len);
    buf_release(&page);
    return status;
}

int redirect_not_found(struct request *r) { return answer(r, 404, GONE_UNKNOWN); }

int redirect_gone(struct request *r, enum gone_why why)
{
    return answer(r, 410, why == GONE_UNKNOWN ? GONE_EXPIRED : why);
}

/* Not under /api/: an API client is told what is wrong, not sent away. */
int handle_no_route(struct request *r)
{
    const char *to = r->app->cfg.regular_404_redirect;
    bool api = r->path.n >= 5 && memcmp(r->path.p, "/api/", 5) == 0;
    if (to && *to && !api && (r->method == HTTP_GET || r->method == HTTP_HEAD))
        return fallback(r, to);
    return http_error(r, 404, "not_found", NULL, "no such path");
}
