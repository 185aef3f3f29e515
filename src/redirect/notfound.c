/* notfound.c - what a visitor gets when a code opens nothing: unknown,
 * expired, deleted, disabled or used up.
 *
 * Only the paths that answered 404 or 410 before come here (redirect.c,
 * controlled.c, the router's last resort), so a live link's answer never
 * pays for any of it. In order:
 *   1. a fallback URL (Shlink's "not-found redirects"): the request's
 *      custom domain's own (the table below), else the setting:
 *      `invalid-short-url-redirect` for a code, `regular-404-redirect` for
 *      any other path nothing serves (and `home` for GET /). A 302 for
 *      every client, as Shlink does, since the operator asked for it;
 *   2. a browser (its Accept names text/html) gets a small page saying
 *      which, with the status as before, in the gate's style and under its
 *      Content-Security-Policy (gate.h: no script, one hashed style block);
 *   3. anyone else gets the plain text of before, byte for byte.
 * None of these answers is cached by anyone (Cache-Control: no-store): the
 * code may be taken, or the link enabled, a moment later. */
#include "redirect/notfound.h"

#include <llhttp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "app/app.h"
#include "redirect/gate.h"
#include "redirect/hosts.h"
#include "redirect/redirect.h"
#include "store/store_links.h"
#include "base/err.h"
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

/* ---- the table: a plain array, replaced or edited under one mutex; it
 * holds only the domains that set a redirect, and only answers that were
 * 404, 410 or the home page's read it ---- */

struct fallback_row {
    char *host;
    char *url[3]; /* by enum fallback_kind; NULL: unset */
};

struct fallbacks {
    pthread_mutex_t mu;
    struct fallback_row *rows;
    size_t n, cap;
    atomic_size_t rows_n; /* n, for a lookup that finds none without the lock */
    atomic_bool stale;
};

struct fallbacks *fallbacks_new(void)
{
    struct fallbacks *f = calloc(1, sizeof(*f));
    if (!f)
        abort();
    pthread_mutex_init(&f->mu, NULL);
    return f;
}

static void row_release(struct fallback_row *row)
{
    free(row->host);
    for (int k = 0; k < 3; k++)
        free(row->url[k]);
}

static void rows_free(struct fallback_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        row_release(&rows[i]);
    free(rows);
}

void fallbacks_free(struct fallbacks *f)
{
    if (!f)
        return;
    rows_free(f->rows, f->n);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static char *dup_set(const char *s) { return s && *s ? xstrdup(s) : NULL; }

/* Appends host's row, unless it sets nothing. */
static void rows_add(struct fallback_row **rows, size_t *n, size_t *cap, const char *host,
                     const struct domain_redirects *d)
{
    struct fallback_row row = {
        .url = {dup_set(d->base_url), dup_set(d->regular_404), dup_set(d->invalid)}};
    if (!row.url[0] && !row.url[1] && !row.url[2])
        return;
    row.host = xstrdup(host);
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *rows = realloc(*rows, *cap * sizeof(**rows));
        if (!*rows)
            abort();
    }
    (*rows)[(*n)++] = row;
}

struct loading {
    struct fallback_row *rows;
    size_t n, cap;
};

static int load_cb(const char *host, int64_t owner, const struct domain_redirects *d, void *arg)
{
    (void)owner;
    struct loading *l = arg;
    rows_add(&l->rows, &l->n, &l->cap, host, d);
    return 0;
}

int fallbacks_load(struct fallbacks *f, struct store *st)
{
    struct loading l = {0};
    int rc = st->ops->domain_redirects_list(st, -1, load_cb, &l);
    if (rc != ERR_OK) {
        rows_free(l.rows, l.n);
        return rc;
    }
    pthread_mutex_lock(&f->mu);
    struct fallback_row *old = f->rows;
    size_t oldn = f->n;
    f->rows = l.rows;
    f->n = l.n;
    f->cap = l.cap;
    atomic_store(&f->rows_n, f->n);
    pthread_mutex_unlock(&f->mu);
    rows_free(old, oldn);
    return ERR_OK;
}

void fallbacks_set(struct fallbacks *f, const char *host, const struct domain_redirects *d)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->rows[i].host, host) == 0) {
            row_release(&f->rows[i]);
            f->rows[i] = f->rows[--f->n];
            break;
        }
    }
    if (d)
        rows_add(&f->rows, &f->n, &f->cap, host, d);
    atomic_store(&f->rows_n, f->n);
    pthread_mutex_unlock(&f->mu);
}

void fallbacks_mark_stale(struct fallbacks *f)
{
    if (f)
        atomic_store(&f->stale, true);
}

bool fallbacks_take_stale(struct fallbacks *f) { return f && atomic_exchange(&f->stale, false); }

bool fallbacks_get(struct fallbacks *f, const char *host, size_t n, enum fallback_kind kind,
                   struct buf *out)
{
    buf_reset(out);
    if (!f || !n || !atomic_load(&f->rows_n))
        return false; /* the usual case: no domain sets any */
    bool found = false;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n && !found; i++) {
        const struct fallback_row *row = &f->rows[i];
        if (strlen(row->host) == n && memcmp(row->host, host, n) == 0 && row->url[kind]) {
            buf_adds(out, row->url[kind]);
            found = true;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return found;
}

/* ---- the answers ---- */

/* 302 to the request's domain's 'kind' fallback, else to 'setting': false
 * when neither is set. */
static bool fallback(struct request *r, enum fallback_kind kind, const char *setting, int *status)
{
    char host[HOST_NAME_MAX_LEN + 1];
    size_t n = host_of_header(r->host, host);
    struct buf url = BUF_INIT;
    if (!fallbacks_get(r->app->fallbacks, host, n, kind, &url)) {
        if (!setting || !*setting) {
            buf_release(&url);
            return false;
        }
        buf_adds(&url, setting);
    }
    http_add_header(r, "Location", url.p, url.len);
    http_add_header(r, "Cache-Control", "no-store", 8);
    buf_release(&url);
    *status = 302;
    return true;
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
    if (fallback(r, FALLBACK_INVALID, r->app->cfg.invalid_redirect, &status))
        return status;
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
    bool api = r->path.n >= 5 && memcmp(r->path.p, "/api/", 5) == 0;
    int status;
    if (!api && (r->method == HTTP_GET || r->method == HTTP_HEAD) &&
        fallback(r, FALLBACK_REGULAR_404, r->app->cfg.regular_404_redirect, &status))
        return status;
    return http_error(r, 404, "not_found", NULL, "no such path");
}

int handle_home(struct request *r)
{
    int status;
    if (fallback(r, FALLBACK_BASE_URL, r->app->cfg.home, &status))
        return status;
    return http_error(r, 404, "not_found", NULL, "no such path");
}
