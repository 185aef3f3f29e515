/* id.h - event IDs: "evt_" and 32 lowercase hex digits, fixed when the
 * event happens and sent unchanged by every retry and replay, so a receiver
 * deduplicates on it.
 *
 * A click's ID is derived from where the click journal keeps it (the
 * journal's id and the record's position): rebuilt after a crash from the
 * same record, it is the same ID, and no two records of any journal share
 * one. A link event's ID is random, made once and stored with the event in
 * the outbox, but for link.expired, which every node's sweep may find.
 * Pure apart from events_id_random; any thread. */
#ifndef SHORTD_EVENTS_ID_H
#define SHORTD_EVENTS_ID_H

#include <stdint.h>

#define EVENT_ID_SIZE 37 /* "evt_" + 32 hex digits + NUL */

/* BLAKE2b-128 of "click", the journal id and the position after the record. */
void events_id_click(const char *journal_id, uint64_t pos_after, char out[EVENT_ID_SIZE]);
void events_id_random(char out[EVENT_ID_SIZE]);
/* BLAKE2b-128 of "expired", the code and its expiry: every node's sweep
 * finds the same ID for one expiry, and the outbox keeps it once. */
void events_id_expired(const char *code, int64_t expires_at, char out[EVENT_ID_SIZE]);

#endif
