/* sqlite_coop.h - an SQLite VFS that lets a cooperating thread yield inside
 * SQLite's own I/O (coop.h).
 *
 * A commit that merges a second's clicks on a million links writes tens of
 * thousands of pages to the WAL (and a checkpoint copies them on), far longer
 * than a time slice without returning to shortd's code (bench/HISTORY.md,
 * "Figures once quoted in code comments"). This VFS ("shortd-coop") is the
 * platform's default VFS with every file read, write, truncate and sync
 * passing a coop_point() first; a connection opened with it behaves exactly
 * as with the default. Threads that never called coop_thread() do not yield.
 *
 * It also gathers the writes that follow each other in a WAL file (a commit
 * writes each frame as two calls) into one system call per 64 KiB, made
 * before any other call on that WAL or its database file: before the
 * commit's sync, and before the wal-index header publishes the frames. */
#ifndef SHORTD_SQLITE_COOP_H
#define SHORTD_SQLITE_COOP_H

#define SQLITE_COOP_VFS "shortd-coop"

/* Registers the VFS once (any thread, any number of times); ERR_OK or
 * ERR_STORAGE. */
int sqlite_coop_register(void);

#endif
