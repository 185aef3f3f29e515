/* store_links.h - the links area of the store (store.h): links, their
 * destination history, custom short domains and idempotency records.
 * STORE_OPS_LINKS is this area's part of struct store_ops. */
#ifndef SHORTD_STORE_LINKS_H
#define SHORTD_STORE_LINKS_H

#include <stdbool.h>
#include <stdint.h>

#include "links/codes.h"

struct store;

enum link_state {
    LINK_ACTIVE = 0,   /* live unless expires_at has passed */
    LINK_DELETED = 1,  /* tombstone: code kept for ever, data removed */
    LINK_DISABLED = 2, /* switched off by an admin, data kept */
};

/* A link as stored. Strings are owned by the struct (link_release frees). */
struct link {
    char code[CODE_MAX + 1];
    int64_t owner; /* API key id */
    char *url;     /* NULL once removed (deleted, or swept after expiry) */
    char *title;   /* NULL when absent */
    char *note;
    char *tags; /* JSON array text, NULL for none */
    int64_t created_at;
    int64_t expires_at; /* 0: never */
    int64_t changed_at; /* last change of state */
    int state;          /* enum link_state */
    bool permanent;     /* 301 instead of 302 */
    int64_t clicks;     /* all-time human clicks */
    int64_t bot_clicks; /* all-time bot and prefetch clicks */
    /* Link controls (schema 2) */
    char *password;     /* Argon2id string (pwhash.h), NULL: not protected */
    char *domain;       /* lowercase custom short host, NULL: the default hosts only */
    char *variants;     /* A/B destinations, JSON text, NULL for none */
    char *utm;          /* UTM object, JSON text, NULL for none */
    char *dest;         /* url with utm merged (what the redirect sends), NULL: url */
    int64_t max_clicks; /* 0: no limit */
    int64_t used;       /* click slots reserved (max_clicks) */
    /* Of the kept totals (clicks + bot_clicks), those `shortd import`
     * brought without their days (import.h) */
    int64_t imported;
    /* Stored as 'track' (default true): its visits are not recorded at all
     * (no click, no counter, no visitor), so zero is the usual link */
    bool untracked;
};

/* True when a redirect of the link needs more than its destination: a
 * password, A/B variants or a click limit (the redirect's controlled path). */
bool link_controlled(const struct link *l);

void link_release(struct link *l);

/* Listing: newest first; 'after_*' is the cursor (0/"" for the first page). */
struct link_query {
    int64_t owner;       /* -1: every owner */
    unsigned states;     /* bit (1 << state) per wanted stored state ... */
    bool want_live;      /* ... and of LINK_ACTIVE, whether live ones ... */
    bool want_expired;   /* ... expired ones ... */
    bool want_exhausted; /* ... and unexpired ones whose click limit is used up
                          * (max_clicks > 0, used >= max_clicks) are wanted */
    int64_t now;
    int64_t after_created;
    const char *after_code;
    int limit;
    const char *tag; /* NULL, or only links whose tags array holds exactly this */
    const char *q;   /* NULL, or only links with this in code, url, title or note
                         * (a plain substring, ASCII letters in any case) */
    /* With floor_code: only links at or after this row of the list's order
     * (a search page's bound, from link_list_floor). */
    int64_t floor_created;
    const char *floor_code;
};

/* One change of a link's destination (PATCH), newest first when listed. */
struct link_change {
    int64_t seq; /* 1, 2, ... per code */
    const char *old_url;
    const char *new_url;
    int64_t changed_at;
    int64_t by_key; /* API key id that made the change */
};

/* A remembered idempotent answer. 'body' is owned (free()). */
struct idem_rec {
    uint8_t fingerprint[32];
    int status;
    char *body;
    int64_t created_at;
};

/* Each callback's non-zero return stops the listing. */
typedef int (*link_cb)(const struct link *l, void *arg);
typedef int (*change_cb)(const struct link_change *c, void *arg);
typedef int (*domain_cb)(const char *host, int64_t owner, int64_t created_at, void *arg);
/* A custom domain's not-found redirects (Shlink's), NULL where unset: the
 * settings' then apply (notfound.h). */
struct domain_redirects {
    const char *base_url;    /* GET / on the domain */
    const char *regular_404; /* any other path nothing serves */
    const char *invalid;     /* a code that opens nothing */
};
typedef int (*redirects_cb)(const char *host, int64_t owner, const struct domain_redirects *d,
                            void *arg);

#define STORE_OPS_LINKS                                                                              \
    /* Links */                                                                                      \
    int (*link_get)(struct store * st, const char *code, struct link *out); /* any state */          \
    int (*link_insert)(struct store * st, const struct link *l);            /* ERR_EXISTS */         \
    int (*link_find_live)(struct store * st, int64_t owner, const char *url, int64_t now,            \
                          struct link *out);                                                         \
    int (*link_set_state)(struct store * st, const char *code, int state, int64_t now);              \
    /* Adds to a link's kept all-time totals (negative: takes away) the                            \
     * clicks an import brings without their days (import.h). ERR_NOTFOUND. */ \
    int (*link_imported)(struct store * st, const char *code, int64_t clicks, int64_t bots);         \
    int (*link_list)(struct store * st, const struct link_query *q, link_cb cb, void *arg);          \
    /* Where a page of a search stops: the rows-th link of q's owner after                         \
     * q's cursor, in the list's order and whatever its state (no other                            \
     * filter of q: it bounds the rows one page reads). ERR_OK with its                            \
     * created_at and code; ERR_NOTFOUND when fewer are left. */ \
    int (*link_list_floor)(struct store * st, const struct link_query *q, int rows,                  \
                           int64_t *created, char code[CODE_MAX + 1]);                               \
    int (*link_count)(struct store * st, int64_t * n);                                               \
    /* Removes the data of links expired before 'before', at most 'limit'. */                        \
    int (*link_sweep)(struct store * st, int64_t before, int limit, int *swept);                     \
    /* Writes the changeable fields of an existing link (url, title, note,                         \
     * tags, expires_at, changed_at, password, variants, utm, dest);                               \
     * ERR_NOTFOUND when there is no such code. */ \
    int (*link_update)(struct store * st, const struct link *l);                                     \
    /* Takes one click slot of a link with max_clicks: ERR_OK with the slots                       \
     * now used, ERR_TOOBIG when none is left (or the link has no limit). In                       \
     * PostgreSQL one conditional UPDATE, exact across nodes. */ \
    int (*link_reserve)(struct store * st, const char *code, int64_t *used);                         \
                                                                                                     \
    /* Destination history (link_history), appended in the change's transaction */                   \
    int (*history_add)(struct store * st, const char *code, const char *old_url,                     \
                       const char *new_url, int64_t at, int64_t by_key);                             \
    int (*history_list)(struct store * st, const char *code, int limit, change_cb cb, void *arg);    \
                                                                                                     \
    /* Custom short domains, one owner each (add: ERR_EXISTS) */                                     \
    int (*domain_add)(struct store * st, const char *host, int64_t owner, int64_t now);              \
    int (*domain_get)(struct store * st, const char *host, int64_t *owner); /* ERR_NOTFOUND */       \
    int (*domain_del)(struct store * st, const char *host, int64_t owner);  /* ERR_NOTFOUND */       \
    int (*domain_list)(struct store * st, int64_t owner, domain_cb cb, void *arg); /* -1: all */     \
    /* Their not-found redirects: set (all three; ERR_NOTFOUND when the owner                      \
     * has no such domain) and listed (every domain of 'owner', -1: all). */ \
    int (*domain_redirects_set)(struct store * st, const char *host, int64_t owner,                  \
                                const struct domain_redirects *d);                                   \
    int (*domain_redirects_list)(struct store * st, int64_t owner, redirects_cb cb, void *arg);      \
                                                                                                     \
    /* Idempotency keys, scoped to an API key */                                                     \
    int (*idem_get)(struct store * st, int64_t key_id, const char *idem, int64_t since,              \
                    struct idem_rec *out);                                                           \
    int (*idem_put)(struct store * st, int64_t key_id, const char *idem,                             \
                    const struct idem_rec *rec);                                                     \
    /* Claims a key for this transaction (a record without an answer yet):                         \
     * ERR_OK when claimed, ERR_EXISTS when a record is there; a concurrent                        \
     * claimer in another transaction waits for this one to finish. */ \
    int (*idem_claim)(struct store * st, int64_t key_id, const char *idem,                           \
                      const struct idem_rec *rec);                                                   \
    int (*idem_sweep)(struct store * st, int64_t before);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
