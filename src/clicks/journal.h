/* journal.h - the durable click journal: an append-only log of opaque records
 * (1..65535 bytes each) in a directory of segment files, so that clicks
 * survive a crash between the redirect and the store.
 *
 * Every record has a position: the logical byte offset just after it. It only
 * grows, across rotations, releases and reopenings, and stays below 2^63 so it
 * fits a signed 64-bit SQL integer. A reader that remembers the position of the
 * last record it folded into the store replays from there after a restart.
 *
 * Records become durable in groups: journal_append only buffers them, and one
 * journal_sync writes and fdatasync()s all of them. Only the synced part is
 * ever replayed.
 *
 * Threads: no locking inside. One thread uses a journal at a time (another
 * may take over if the caller orders the hand-over with a lock). Processes:
 * an flock on DIR/lock admits one open journal per directory, so a second
 * journal_open, even in the same process, gets ERR_BUSY.
 *
 * Errors: ERR_IO with one log line naming the file and the system's reason.
 * A failing disk (full, read-only, an I/O error) takes the journal down: the
 * first failed sync is logged, the next ones only counted (journal_health),
 * and the records stay buffered. Every later sync tries again, in a new
 * segment after a failed fsync or a write it could not cut off (the kernel
 * may have dropped what it could not write, so the old file no longer says
 * what is on disk), and the first that succeeds brings the journal back up,
 * with one log line. */
#ifndef SHORTD_JOURNAL_H
#define SHORTD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct journal;

/* Opening and closing */

/* Opens (creating) directory 'dir', takes an exclusive lock on DIR/lock (flock
 * LOCK_EX|LOCK_NB; ERR_BUSY with a log line "journal 'DIR' is in use by another
 * process" if held), scans the segment files and positions for appending at the
 * end. A torn or corrupt tail of the last segment (short header, short payload,
 * CRC mismatch, absurd length) is truncated away with ONE log_at(LOG_WARN, ...)
 * line saying how many bytes were dropped at which position - never a crash.
 * *end receives the logical end position. On failure *out is NULL. */
int journal_open(const char *dir, uint64_t segment_max_bytes, struct journal **out, uint64_t *end);
void journal_close(struct journal *j); /* NULL is fine; syncs what is buffered first */

/* Writing */

/* Appends one record (1..65535 bytes) to an in-memory buffer; returns its end
 * position (logical offset after it). Not durable until journal_sync. ERR_INVALID
 * for an empty record, ERR_TOOBIG past 65535 bytes; neither is logged. The
 * buffer grows until the next sync: how often to sync is the caller's choice. */
int journal_append(struct journal *j, const void *rec, size_t n, uint64_t *pos_after);

/* The position after the last record appended, synced or not. */
uint64_t journal_end(const struct journal *j);
/* Writes the buffer and fdatasync()s it; *synced = logical position now on
 * disk. Rotates to a new segment first when the current one is over
 * segment_max_bytes. With nothing buffered it does no I/O, unless the
 * journal is down: it then writes one byte past the end, syncs and cuts it
 * off, to tell whether the disk writes again. After a failed write the
 * records stay buffered and the next sync tries them again. */
int journal_sync(struct journal *j, uint64_t *synced);

/* Whether the journal writes, for /readyz and /metrics. */
struct journal_health {
    bool down;               /* the last sync failed: records wait in memory */
    int64_t down_since_ms;   /* wall clock of the first failed sync of this run */
    uint64_t failures;       /* failed syncs since open */
    uint64_t recoveries;     /* times it came back up */
    uint64_t unsynced_bytes; /* buffered, not on disk */
    char error[128];         /* the system's reason for the last failure (the log names the file) */
};
void journal_health(const struct journal *j, struct journal_health *out);

/* Reading */

/* Calls cb for every intact record from logical position 'from' (a record
 * boundary previously returned, or 0 / the start of the oldest segment) to the
 * synced end, in order, with pos_after = the logical position just after that
 * record. cb returning non-zero stops the replay (returned as-is). A position
 * before the oldest segment starts at the oldest segment. 'rec' is valid only
 * during the call, and cb must not call into the journal. A damaged record in
 * an older segment is logged and the rest of that segment skipped; a position
 * past the end is ERR_INVALID. Replaying changes nothing. */
typedef int (*journal_cb)(const void *rec, size_t n, uint64_t pos_after, void *arg);
int journal_replay(struct journal *j, uint64_t from, journal_cb cb, void *arg);

/* Reads the journal in directory 'dir' without opening it (no lock, no
 * struct journal), for another thread than the one writing it: calls cb
 * for every intact record from 'from' (a record boundary) up to 'upto' (a
 * synced position the writer published), as journal_replay does. The
 * caller keeps the segments it reads from being released (journal_release
 * deletes only what lies wholly before its 'upto'). ERR_IO when a file
 * cannot be read; the rest of a segment after a damaged record is skipped
 * (logged), as journal_replay does. cb's non-zero ends the read (returned). */
int journal_read(const char *dir, uint64_t from, uint64_t upto, journal_cb cb, void *arg);

/* Everything before 'upto' has been folded into the store: delete segment
 * files that lie wholly before it. The segment being written is always kept,
 * which is what carries the position across a reopen. */
int journal_release(struct journal *j, uint64_t upto);

/* Starts a new segment at the synced end, unless the one written holds
 * nothing synced: the records so far can then be released as a whole,
 * long before the segment would have reached segment_max_bytes. */
int journal_rotate(struct journal *j);

/* The store holds every record before 'pos' (a record boundary, or past the
 * end), which lies past the synced end: it took them while the journal was
 * down, or the journal lost its tail. The buffered records before 'pos' are
 * dropped, and the journal carries on from 'pos', in a new segment at the
 * next sync. A no-op at or before the synced end; ERR_INVALID past 2^63. */
int journal_skip_to(struct journal *j, uint64_t pos);

#endif
