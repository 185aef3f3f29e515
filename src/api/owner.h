/* owner.h - the owner rule of the API, in one place: a key sees its own
 * links, an admin key every link; another owner's link is answered 404,
 * exactly as a code no link has, so that no key learns which codes others
 * hold. Every route that reads or changes one link (/api/links/:code and
 * what is under it) finds that link through owner_link (a read) or
 * owner_link_get (a write, inside its transaction), never by link_get. */
#ifndef SHORTD_OWNER_H
#define SHORTD_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"
#include "links/codes.h"
#include "store/store_links.h"

#define OWNER_ANY (-1) /* an admin key's scope: every owner */

/* The scope of the request's key: its own id, or OWNER_ANY for an admin
 * key. The owner a link list, the top links and the export take too. */
int64_t owner_scope(const struct request *r);

/* The path's first parameter as a code into 'code': 0, or the 404 written
 * into r when it cannot be one. */
int owner_code(struct request *r, char code[CODE_MAX + 1]);

/* Inside a write's transaction (any thread that may use 'st'): the link of
 * 'code' into 'l' (link_release it) when it is within 'scope'. ERR_OK;
 * ERR_NOTFOUND for no such link and for another owner's alike; or the
 * store's error. */
int owner_link_get(struct store *st, const char *code, int64_t scope, struct link *l);

/* For a read, on a store thread: owner_code, then owner_link_get within the
 * request key's scope. 0 with 'code' and 'l' filled (link_release it), or
 * the status of the answer written into r: 404 as owner_not_found, 503 when
 * the store fails. */
int owner_link(struct request *r, char code[CODE_MAX + 1], struct link *l);

/* A key limited to one custom domain (its apikey.domain) makes links on
 * that domain alone: a link input's 'domain' (NULL for none) becomes the
 * key's when NULL. ERR_OK; ERR_FORBIDDEN when it names another domain (each
 * API answers that as it answers a domain that is not the caller's). The
 * key's domain is granted: it was its maker's when the key was made
 * (api_keys.c), so a create does not ask whose it is. Any thread. The links
 * a limited key sees and edits are those it made (owner_scope; its owner is
 * itself, even for a user's key: router.c), so all on its domain. */
int owner_key_domain(const struct apikey *k, char **domain);

/* The 404 of a link the key may not see, in the words of one that does not
 * exist; OWNER_NOT_FOUND is the message, for an answer built elsewhere (a
 * write's, apijob.h). */
#define OWNER_NOT_FOUND "no link with this code"
int owner_not_found(struct request *r);

#endif
