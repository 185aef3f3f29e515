/* utm.h - a link's UTM parameters: read from the API's JSON, written back,
 * and merged into a destination's query string at redirect time. Pure
 * functions, no I/O, any thread. */
#ifndef SHORTD_UTM_H
#define SHORTD_UTM_H

#include <jansson.h>
#include <stdbool.h>

#include "base/buf.h"

#define UTM_VALUE_MAX 128

/* Each member is a NUL-terminated value; "" = absent. */
struct utm {
    char source[UTM_VALUE_MAX + 1], medium[UTM_VALUE_MAX + 1], campaign[UTM_VALUE_MAX + 1],
        term[UTM_VALUE_MAX + 1], content[UTM_VALUE_MAX + 1];
};

/* Reads a JSON object {"source","medium","campaign","term","content"}: all
 * optional strings (null = absent), at least one present, each 1..128 bytes
 * without control characters; unknown members are rejected. On error returns
 * ERR_INVALID and sets *field to the offending one, e.g. "utm.source", or
 * "utm" for the object itself (a static string). 'out' is zeroed first. */
int utm_from_json(const json_t *o, struct utm *out, const char **field);

/* The object again, only the members present; NULL when all are absent. */
json_t *utm_to_json(const struct utm *u);

bool utm_empty(const struct utm *u);

/* Writes into 'out' (reset first) 'url' with utm_source .. utm_content set
 * to the link's values: a parameter already in the query (exact name match)
 * is replaced in place, and a second copy of it removed, never duplicated;
 * new ones are appended in the order source, medium, campaign, term,
 * content; other parameters and the fragment are kept as they are (the
 * fragment stays last). Values are percent-encoded (all but A-Z a-z 0-9
 * - . _ ~). ERR_INVALID if the result would exceed URL_MAX (8 KiB). */
int utm_merge(const char *url, const struct utm *u, struct buf *out);

#endif
