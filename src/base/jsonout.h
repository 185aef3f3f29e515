/* jsonout.h - a jansson value written as compact JSON text into a buf.
 *
 * The same text json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) gives, keys in
 * insertion order, but written in one pass: jansson's dumper checks every
 * object and array for a cycle by printing its address with snprintf into a
 * hash table, and calls its sink once per token. At a create that was a sixth
 * of the event loop's time. Values here are built by shortd and never cyclic. */
#ifndef SHORTD_JSONOUT_H
#define SHORTD_JSONOUT_H

#include <jansson.h>

#include "base/buf.h"

/* Appends the text of 'v' to 'b'; nothing for NULL (a json_pack that failed). */
void jsonout(struct buf *b, const json_t *v);

#endif
