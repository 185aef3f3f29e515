/* variants.h - A/B destinations of a link: several URLs with weights, and the
 * deterministic choice of one for a visitor. Pure functions, no I/O, any
 * thread. */
#ifndef SHORTD_VARIANTS_H
#define SHORTD_VARIANTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "links/urlcheck.h"

#define VARIANTS_MAX 10
#define VARIANT_WEIGHT_MAX 1000

struct variant {
    char *url;       /* owned; as urlcheck stores it */
    unsigned weight; /* 1..VARIANT_WEIGHT_MAX */
    char *host;      /* owned; the url's host (lowercase) from variants_parse, for the
                         * blocklist; NULL after variants_from_text */
};

struct variants {
    struct variant v[VARIANTS_MAX];
    int n;
};

/* Parses [{"url": "...", "weight": N}, ...]: 2..VARIANTS_MAX items, each url
 * checked by urlcheck() with 'uo' (the same rules, self hosts included, that
 * a link's url gets; NULL for none), weight an integer 1..1000 (1 when absent
 * or null); no other members. On error: ERR_INVALID, 'out' empty, and in
 * 'err' a message that starts with the field, items counted from 0, e.g.
 * "variants[2].weight must be an integer from 1 to 1000". On success the
 * caller owns 'out' (variants_release). */
int variants_parse(const json_t *arr, const struct urlcheck_opts *uo, struct variants *out,
                   char *err, size_t errn);

/* The stored and API form: [{"url": ..., "weight": ...}, ...]. */
json_t *variants_to_json(const struct variants *v);

/* Reads the stored form (variants_to_json's text) back without rechecking
 * the URLs; ERR_INVALID if it is not that shape. Caller releases. */
int variants_from_text(const char *json_text, struct variants *out);

void variants_release(struct variants *v); /* frees the URLs; n = 0 */

/* The index of the visitor's variant, in proportion to the weights and the
 * same for every request of that visitor: BLAKE2b (crypto_generichash)
 * keyed with the per-link 'key' over (addr bytes, a 0 byte, user agent),
 * reduced to [0, total weight). 'v' must hold at least one variant. */
int variants_pick(const struct variants *v, const uint8_t key[32], const void *addr, size_t an,
                  const char *ua, size_t un);

#endif
