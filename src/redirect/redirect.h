/* redirect.h - what the plain redirect (redirect.c) and the controlled path
 * (controlled.c: password gates, A/B variants, click limits, the gate's
 * POST) share. Only these two files use it; the router reaches both through
 * handlers.h. Event-loop or store thread, as each function says. */
#ifndef SHORTD_REDIRECT_H
#define SHORTD_REDIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"
#include "redirect/hosts.h"

struct link;

/* answer()'s "not yet": the link has controls, so it is read whole from the
 * store and answered by controlled_answer. No HTTP status or HTTP_* code. */
#define REDIRECT_CONTROLLED (-100)

/* The Host of the request as the host check sees it. */
struct hostcheck {
    bool any; /* no default hosts, or the Host is one of them */
    size_t n;
    char name[HOST_NAME_MAX_LEN + 1];
};

void hostcheck_of(const struct request *r, struct hostcheck *h);
/* Whether a link on custom domain 'domain' (NULL: none) answers this Host. */
bool host_allows(const struct hostcheck *h, const char *domain, size_t dn);

/* Why a code opens nothing: what its answer says (notfound.c). */
enum gone_why {
    GONE_UNKNOWN, /* 404: no link has this code (or not on this host) */
    GONE_EXPIRED, /* 410 from here on */
    GONE_DELETED,
    GONE_DISABLED,
    GONE_USED_UP, /* its click limit is reached */
};
/* The 410 reason of a stored state (enum link_state): deleted, disabled,
 * else expired. */
enum gone_why gone_why_of(int state);

/* The short plain-text answers, never cached; each returns its status. */
int redirect_text(struct request *r, int status, const char *msg);
int redirect_unavailable(struct request *r); /* 503 with Retry-After */
/* notfound.c: the answer for a code that opens nothing, never cached: a
 * redirect to the invalid-link fallback when one is set, else for a browser
 * (Accept names text/html) a page saying why, else the plain text. */
int redirect_not_found(struct request *r);               /* 404 */
int redirect_gone(struct request *r, enum gone_why why); /* 410 */

/* Location: the destination, with the request's query string appended to
 * the destination's own when 'pass_query'; then Accept-CH, which asks a
 * browser for the client hints the classifier reads (classify.h) on its
 * next requests. Never Critical-CH: Chromium would repeat the visit to send
 * them, and the link would count it twice. */
void redirect_location(struct request *r, const char *url, size_t n, bool pass_query);
/* One click of 'code' into this event loop's buffer (clicks.h); 'flags' are
 * the event's (its A/B variant). */
void redirect_record_click(struct request *r, struct slice code, int64_t now, uint8_t flags);

/* controlled.c: GET or HEAD of a controlled link as just read from the store
 * ('rc', and 'l' when ERR_OK): the gate, or the way through, with its click.
 * Takes 'l' over. Event-loop thread. Returns the status or HTTP_ASYNC. */
int controlled_answer(struct request *r, int rc, struct link *l, int64_t now);

#endif
