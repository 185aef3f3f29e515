/* keyuse.h - when each API key was last used, noted on the request path and
 * written to the store later, in batches: a key's use is marked for writing
 * at most once per KEYUSE_EVERY_MS, so a busy key costs one store write a
 * minute, never one a request. Bounded: a fixed table, allocated once,
 * where a new key takes the place of the one noted longest ago in its
 * bucket (whose pending mark, if any, is then lost: a last use shown a
 * minute late). Any thread: sharded mutexes. */
#ifndef SHORTD_KEYUSE_H
#define SHORTD_KEYUSE_H

#include <stddef.h>
#include <stdint.h>

#define KEYUSE_EVERY_MS 60000

struct keyuse;

/* Tracks up to 'max_keys' keys (rounded up to a whole number of buckets). */
struct keyuse *keyuse_new(size_t max_keys);
void keyuse_free(struct keyuse *u); /* NULL is fine */

/* Key 'id' was used at 'now' (wall ms): marked for the next drain unless it
 * was marked less than KEYUSE_EVERY_MS before. */
void keyuse_note(struct keyuse *u, int64_t id, int64_t now);

/* Moves up to 'cap' marked uses into ids[] and ats[] (the time of each
 * key's mark) and unmarks them; returns how many. */
size_t keyuse_drain(struct keyuse *u, int64_t *ids, int64_t *ats, size_t cap);

#endif
