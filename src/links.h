/* links.h - the rules of links and API keys, above the store and below the
 * HTTP handlers and the CLI (both use these, so both obey the same rules):
 * checking what a caller asks for, handing out codes, creating, deleting,
 * authenticating. */
#ifndef SHORTD_LINKS_H
#define SHORTD_LINKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "store.h"

#define KEY_TOKEN_LEN 43        /* "sk_" + 40 base62 characters */
#define TITLE_MAX 256
#define NOTE_MAX 4096
#define TAGS_MAX 20
#define TAG_MAX 64

struct links;

/* What a caller asks for; built by links_parse from JSON (API) or flags (CLI). */
struct link_input {
    char *url;              /* as checked and normalised */
    char *host;             /* its host, lowercase */
    char *alias;            /* NULL: generate a code */
    char *title, *note;
    char *tags;             /* JSON array text or NULL */
    int64_t expires_at;     /* 0: never */
    bool permanent;
    bool reuse;
};

void link_input_release(struct link_input *in);

/* Loads (or on first use creates) the per-install secrets. 'reserved' is a
 * NULL-terminated list of words aliases may not be; 'self_hosts' the hosts
 * that are shortd itself. Both must outlive the struct. */
int links_new(struct store *st, const char *const *reserved, const char *const *self_hosts,
              struct links **out);
void links_free(struct links *l);

/* Checks a create request (a JSON object) against every rule that needs no
 * store. ERR_OK, or ERR_INVALID with the offending field and a reason. */
int links_parse(struct links *l, json_t *body, int64_t now, struct link_input *in,
                const char **field, char *why, size_t whylen);

/* Inside a write transaction (writer thread or CLI). On ERR_OK 'out' is the
 * new link, or with in->reuse the caller's existing live link to the same URL
 * (*reused true). ERR_EXISTS: alias taken (or a tombstone); ERR_FORBIDDEN:
 * destination blocked. */
int links_create(struct links *l, struct store *st, const struct link_input *in, int64_t owner,
                 int64_t now, struct link *out, bool *reused);
/* After a failed transaction: forget the code block it may have claimed. */
void links_forget_block(struct links *l);
/* After the blocklist changed: recount it (while it is empty, creates skip it). */
void links_blocklist_changed(struct links *l);

/* The state a caller sees ("active", "expired"...) and whether it redirects. */
const char *link_state_name(const struct link *l, int64_t now);
bool link_is_live(const struct link *l, int64_t now);
/* Whole days to expiry rounded up; -1 without expiry; 0 once expired. */
int64_t link_days_remaining(const struct link *l, int64_t now);

/* API keys: tokens are shown once; only their keyed BLAKE2b hash is stored. */
int links_key_create(struct links *l, struct store *st, const char *name, bool admin,
                     char token[KEY_TOKEN_LEN + 1], int64_t *id);
/* ERR_NOTFOUND for an unknown or revoked key. Any thread. */
int links_authenticate(struct links *l, struct slice token, struct apikey *out);

#endif
