/* csvread.h - a CSV file as a stream of records, for the importers' readers
 * (the generic csv format, YOURLS's and Bitly's CSV exports). RFC 4180 as
 * libcsv reads it: quoted fields may hold commas, quotes ("") and newlines;
 * CRLF or LF line ends; blank lines are skipped. Each record knows the line
 * it starts on, so a bad row can be reported where an editor shows it.
 *
 * The file is read a line at a time: memory holds one record, whatever the
 * size of the file. One thread per reader. */
#ifndef SHORTD_CSVREAD_H
#define SHORTD_CSVREAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct csvread;

/* One record: fields borrowed until the next csvread_next or csvread_free,
 * each NUL-terminated (a field holding a NUL byte is cut there). */
struct csv_record {
    const char *const *field;
    const size_t *len;
    size_t n;
    int64_t line; /* 1-based line of the file the record starts on */
};

/* Opens 'path' ("-" for stdin). ERR_OK, or ERR_IO (errno kept) when the file
 * cannot be opened. */
int csvread_open(const char *path, struct csvread **out);
/* Reads an open stream, which stays the caller's (csvread_free leaves it
 * open): stdin, or fmemopen'd bytes in the tests and the fuzz target. */
struct csvread *csvread_from(FILE *f);
void csvread_free(struct csvread *r); /* NULL is fine */

/* The next record: 1 with 'rec' set, 0 at the end of the file, -1 when the
 * file could not be read (csvread_error says why). A quote left open runs
 * to the end of the file, as RFC 4180 reads it: that record then holds the
 * rest of the file, and the reader's checks refuse it with its line. */
int csvread_next(struct csvread *r, struct csv_record *rec);
const char *csvread_error(const struct csvread *r);

/* How far through the file the reader is, and the file's size (0 when not
 * a regular file), in bytes: for progress lines. */
uint64_t csvread_offset(const struct csvread *r);
uint64_t csvread_size(const struct csvread *r);

/* The index of 'name' among the header record's fields (ASCII case
 * insensitive, spaces around it ignored), or -1. */
int csv_column(const struct csv_record *header, const char *name);

#endif
