/* links.h - the rules of links and API keys, above the store and below the
 * HTTP handlers and the CLI (both use these, so both obey the same rules):
 * checking what a caller asks for, handing out codes, creating, deleting,
 * authenticating. */
#ifndef SHORTD_LINKS_H
#define SHORTD_LINKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "store/store_keys.h"
#include "store/store_links.h"

#define KEY_TOKEN_LEN 43         /* "sk_" + 40 base62 characters */
#define YOURLS_TOKEN_LEN 32      /* lowercase hex: a key's YOURLS signature token */
#define LINKS_KEY_CACHE_MAX 4096 /* API keys one node holds without a store read */
#define LINKS_KEY_TTL_MS 60000   /* ... each for at most this long */
#define TITLE_MAX 256
#define NOTE_MAX 4096
#define TAGS_MAX 20
#define TAG_MAX 64

struct links;

/* What a caller asks for; built by links_parse from JSON (API) or flags (CLI). */
struct link_input {
    char *url;   /* as checked and normalised */
    char *host;  /* its host, lowercase */
    char *alias; /* NULL: generate a code */
    char *title, *note;
    char *tags;         /* JSON array text or NULL */
    int64_t expires_at; /* 0: never */
    bool permanent;
    bool reuse;
    bool untracked;     /* "track": false */
    char *domain;       /* custom short host (lowercase), NULL: none */
    int64_t max_clicks; /* 0: no limit */
    char *password;     /* Argon2id string, set by the caller after hashing */
    char *variants;     /* JSON text, NULL: none */
    char *utm;          /* JSON text, NULL: none */
    char *dest;         /* url with utm merged, NULL when no utm */
};

void link_input_release(struct link_input *in);

/* What a PATCH changes: the fields given (PATCH_* bits) and their new values
 * (NULL or 0 for a field that is removed). */
#define PATCH_URL (1u << 0)
#define PATCH_TITLE (1u << 1)
#define PATCH_NOTE (1u << 2)
#define PATCH_TAGS (1u << 3)
#define PATCH_EXPIRES (1u << 4)
#define PATCH_PASSWORD (1u << 5)
#define PATCH_VARIANTS (1u << 6)
#define PATCH_UTM (1u << 7)
#define PATCH_TRACK (1u << 8)

struct link_patch {
    unsigned fields;
    char *url, *host;
    char *title, *note, *tags;
    int64_t expires_at;
    char *password; /* Argon2id string, set by the caller after hashing */
    char *variants, *utm;
    bool untracked; /* "track": false */
};

void link_patch_release(struct link_patch *p);

/* A custom short host as the API takes it: lowercase, no port, no trailing
 * dot, a DNS name of at least two labels that is not an IP address.
 * ERR_INVALID with a reason. */
int links_domain_check(const char *host, size_t n, const char **why);

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

/* The destination a redirect sends: 'url' with the 'utm' object (JSON text)
 * merged into its query, into *dest (freed first); NULL when utm is NULL.
 * ERR_INVALID when the result would be too long. */
int links_dest(const char *url, const char *utm, char **dest);

/* The A/B key of a link: BLAKE2b keyed with the install's variant secret
 * over the code (variants.h's variants_pick takes it). Any thread. */
void links_variant_key(const struct links *l, const char *code, uint8_t out[32]);

/* Checks a PATCH body: the fields of link_patch, null removing one (not url).
 * ERR_INVALID with the offending field and a reason. */
int links_parse_patch(struct links *l, json_t *body, int64_t now, struct link_patch *p,
                      const char **field, char *why, size_t whylen);

/* Applies a parsed patch to 'lk' (as read in the write transaction), and
 * recomputes its dest. *url_changed tells whether the destination moved.
 * ERR_INVALID: the dest would be too long; ERR_MISMATCH: utm and variants
 * would both be set. The caller refuses "track": false on a link with
 * max_clicks before (a limit counts the visits). */
int links_apply_patch(struct link *lk, const struct link_patch *p, int64_t now, bool *url_changed);

/* Inside a write transaction (writer thread or CLI). On ERR_OK 'out' is the
 * new link, or with in->reuse the caller's existing live link to the same URL
 * (*reused true). ERR_EXISTS: alias taken (or a tombstone); ERR_FORBIDDEN:
 * destination blocked, or one of the registered custom domains. */
int links_create(struct links *l, struct store *st, const struct link_input *in, int64_t owner,
                 int64_t now, struct link *out, bool *reused);
/* Inside a write transaction: ERR_FORBIDDEN when 'url' or one of the
 * 'variants' (stored JSON text; either may be NULL) points at a blocked host
 * or a registered custom domain,
 * *field naming which ("url", "variants"). */
int links_check_blocked(struct links *l, struct store *st, const char *url, const char *variants,
                        const char **field);
/* Inside a write transaction: a PATCH of the link 'lk' as read. Applies 'p'
 * (links_apply_patch), checks a new url or variants against the blocklist,
 * writes the link and, when its destination moved, its history (by key
 * 'by_key'). ERR_OK; ERR_INVALID or ERR_MISMATCH from links_apply_patch;
 * ERR_FORBIDDEN with *field naming what is blocked; or the store's error.
 * Every API that edits a link (its own and the compatible ones) edits
 * through this, and maps the errors to its own answers. */
int links_edit(struct links *l, struct store *st, struct link *lk, const struct link_patch *p,
               int64_t now, int64_t by_key, const char **field);
/* After a failed transaction: forget the code block it may have claimed. */
void links_forget_block(struct links *l);
/* After the blocklist or the registered custom domains changed, on this node
 * or (heard on the bus) another: recount them (while one is empty, creates
 * skip its lookups). Any thread. */
void links_blocklist_changed(struct links *l);

/* The state a caller sees ("active", "expired", "exhausted": its click limit
 * is used up, "deleted", "disabled") and whether it redirects. */
const char *link_state_name(const struct link *l, int64_t now);
bool link_is_live(const struct link *l, int64_t now);
/* Whole days to expiry rounded up; -1 without expiry; 0 once expired. */
int64_t link_days_remaining(const struct link *l, int64_t now);
/* Appends the short URL of 'code' to 'out': on its custom domain 'domain'
 * (NULL: none) with the scheme of 'base_url', else under 'base_url'. */
void link_short_url(struct buf *out, const char *base_url, const char *code, const char *domain);

/* API keys: tokens are shown once; only their keyed BLAKE2b hash is stored. */
int links_key_create(struct links *l, struct store *st, const char *name, bool admin,
                     char token[KEY_TOKEN_LEN + 1], int64_t *id);
/* The same for a key of 'spec''s name, admin, user_id, scopes and domain
 * (created now): its token into 'token', its id into *id. */
int links_key_make(struct links *l, struct store *st, const struct apikey *spec,
                   char token[KEY_TOKEN_LEN + 1], int64_t *id);
/* links_key_make's insert alone, inside the caller's transaction. */
int links_key_insert(struct links *l, struct store *st, const struct apikey *spec,
                     char token[KEY_TOKEN_LEN + 1], int64_t *id);
/* The most a key may do, whatever its scopes (KEY_SCOPE_*): its user's
 * role's (admin: all; member: no admin; viewer: links:read and stats:read),
 * or for a key of no user its own admin flag's (all, or no admin). */
unsigned links_key_cap(const struct apikey *k);
/* What key 'k' may do: its scopes within links_key_cap. */
unsigned links_key_rights(const struct apikey *k);
/* A scope's name ("links:read") to its bit: ERR_OK, or ERR_INVALID for no
 * such scope; and back (NULL for no single scope's bit). */
int links_scope_parse(struct slice name, unsigned *bit);
const char *links_scope_name(unsigned bit);
/* Key 'key_id' was used now: noted for the store at most once a minute
 * (keyuse.h). Any thread; never touches the store. */
void links_key_used(struct links *l, int64_t key_id);
/* Up to 'cap' uses noted since the last call, for key_touch: their ids and
 * times; returns how many. */
size_t links_key_uses(struct links *l, int64_t *ids, int64_t *ats, size_t cap);
/* Reads the store: ERR_NOTFOUND for an unknown or revoked key. On ERR_OK the
 * key is held in this node's key cache (unless links_forget_keys ran during
 * the read). Any thread that may read the store. */
int links_authenticate(struct links *l, struct slice token, struct apikey *out);
/* Never touches the store (an event loop may call it): ERR_OK for a key held
 * in the cache (a valid key, as of its last store read at most
 * LINKS_KEY_TTL_MS ago and since the last links_forget_keys); ERR_NOTFOUND
 * when the token cannot be a key; ERR_AGAIN when the key is not held, so the
 * caller must ask links_authenticate on a thread that may read the store. */
int links_authenticate_cached(struct links *l, struct slice token, struct apikey *out);
/* Empties the key cache: a key was revoked here, or on another node (heard
 * on the bus or through the change generation), or that may have been
 * missed. Any thread. */
void links_forget_keys(struct links *l);
/* The YOURLS signature token of key 'key_id' (what YOURLS calls a user's
 * signature): derived, never stored, so it needs no migration and dies with
 * its key. Hex of BLAKE2b keyed with a key derived from the install's key
 * secret, over a fixed label and the id. A secret: never logged. Any thread. */
/* The key session tokens are hashed with (users.h): derived from the
 * install's key secret, so every node of a shared store has the same. */
void links_session_key(const struct links *l, uint8_t out[32]);
void links_yourls_token(const struct links *l, int64_t key_id, char out[YOURLS_TOKEN_LEN + 1]);
/* For /metrics: the key cache's hits, misses, keys held and bytes taken. */
void links_key_counts(struct links *l, uint64_t *hits, uint64_t *misses, uint64_t *entries,
                      size_t *bytes);

#endif
