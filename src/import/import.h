/* import.h - taking over another shortener's links and history (`shortd
 * import FORMAT SOURCE`).
 *
 * A reader (one file per source format: import_yourls.c, import_kutt.c...)
 * turns its source into records and hands them to the sink; the sink
 * (import.c) checks each record, applies the conflict rule, re-counts visits
 * through shortd's own classifier and writes through the store interface in
 * large transactions, so an import works on SQLite and PostgreSQL alike and
 * while a server runs. Readers do no store I/O and know nothing of
 * conflicts; the sink knows nothing of source formats.
 *
 * Order: a link's record comes before any visit or tally of it (a reader
 * whose source has them the other way round, as mysqldump does, reads its
 * source twice). A visit or tally of a code the source never gave is a bad
 * row; one of a link this run did not take (it existed already) is counted
 * and dropped, which is what makes a second run change nothing.
 *
 * Strings in records are borrowed for the call only. Visitor addresses are
 * never handed to the sink: a reader that meets one drops it. */
#ifndef SHORTD_IMPORT_H
#define SHORTD_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clicks/analytics.h"

struct import_sink;

/* Where a record came from, for reports: "line 812" of a text source, or a
 * table's row id ("links id 93") of a database. */
struct import_where {
    const char *table; /* NULL for a text source */
    int64_t n;         /* line (1-based) or row id */
};

/* One link, with what the source knows of it. */
struct import_link {
    const char *code;     /* exactly as the source has it (case kept) */
    const char *url;      /* destination */
    const char *title;    /* NULL: none */
    const char *tags;     /* JSON array text, NULL: none */
    const char *domain;   /* custom short host, NULL: the default hosts */
    const char *password; /* a password hash the source keeps ("$2a$..."), NULL */
    int64_t created_at;   /* unix seconds; 0: unknown (the import's time) */
    int64_t expires_at;   /* 0: never */
    int64_t max_clicks;   /* 0: no limit */
    bool permanent;       /* 301 */
    bool disabled;        /* kept, but answers as a disabled link */
    bool untracked;       /* track: false (shortd's own format); never with max_clicks */
    /* The source's all-time totals: stored as imported totals, marked as
     * such, for the clicks no visit or tally of this run accounts for. */
    int64_t clicks;
    int64_t bot_clicks;
    struct import_where where;
};

/* One visit, as a row of a per-visit log (YOURLS's yourls_log, Shlink's
 * visits): re-counted through classify.h as if it were a click now. */
struct import_visit {
    const char *code;
    const char *domain; /* the link's custom host, NULL: default */
    int64_t at;         /* unix seconds */
    const char *user_agent;
    const char *referrer;
    const char *country;  /* ISO 3166-1 alpha-2, NULL: unknown */
    const char *language; /* Accept-Language as sent, NULL: unknown */
    const char *query;    /* the visited URL's query (UTM), NULL: none */
    bool source_bot;      /* the source called it a bot (reported, not trusted) */
    struct import_where where;
};

/* Clicks a source keeps already counted (Kutt's visits, one row a link and
 * hour with tallies by browser, OS, country and referrer). */
struct import_tally_value {
    enum dim dim;
    const char *value;
    int64_t n;
};

struct import_tally {
    const char *code;
    const char *domain;
    int64_t at; /* the start of the period counted */
    int64_t clicks;
    const struct import_tally_value *values;
    size_t nvalues;
    struct import_where where;
    /* Added for sources that keep them (shortd's own export): bot clicks of
     * the period, and its unique visitors (kept as the day's count, since
     * no visitor hash comes with them). 0: none, or unknown. */
    int64_t bots;
    int64_t uniques;
};

/* Handing records over. Each returns ERR_OK, or an error that stops the
 * import (the store failed); a bad record is not an error but a refusal,
 * which the sink reports and counts. */
int import_link(struct import_sink *s, const struct import_link *l);
int import_visit(struct import_sink *s, const struct import_visit *v);
int import_tally(struct import_sink *s, const struct import_tally *t);

/* A row the reader could not make a record of: reported with its place and
 * reason; the import goes on. */
void import_refuse(struct import_sink *s, struct import_where where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Progress: the reader says how far through its source it is, in units of
 * its choice ('total' 0 when it cannot know). */
void import_progress(struct import_sink *s, uint64_t done, uint64_t total);
/* The unit of import_progress's counts, for the progress line ("rows" unless
 * set; a static string). */
void import_progress_unit(struct import_sink *s, const char *unit);

/* Readers */

/* Reads 'source' (a path, or a URL for database sources) into the sink.
 * ERR_OK when the source was read to its end, refused rows included; an
 * error (reported through import_refuse or the log) when it could not be. */
typedef int (*import_reader)(const char *source, struct import_sink *s);

struct import_format {
    const char *name; /* "yourls", "kutt", "shlink", "bitly", "csv", "shortd" */
    const char *what; /* one line for --help: what SOURCE may be */
    import_reader read;
};

/* The formats, ending with a NULL name. */
extern const struct import_format import_formats[];
/* The format named 'name', NULL when there is none. */
const struct import_format *import_format_find(const char *name);

/* The readers of formats.c's table (one file each). */
int import_read_yourls(const char *source, struct import_sink *s);
int import_read_kutt(const char *source, struct import_sink *s);
int import_read_shlink(const char *source, struct import_sink *s);
int import_read_bitly(const char *source, struct import_sink *s);
int import_read_csv(const char *source, struct import_sink *s);
int import_read_shortd(const char *source, struct import_sink *s);

/* Running an import (the CLI's `shortd import`) */

/* What to do with a code the store has with another destination. */
enum import_conflict {
    IMPORT_SKIP, /* keep the store's link, report the row */
    IMPORT_KEEP, /* the source's destination replaces it (with a history row) */
    IMPORT_FAIL, /* write nothing at all: a dry pass first, then stop if any */
};

struct links;
struct store;

struct import_opts {
    int64_t owner; /* API key id the new links get */
    enum import_conflict conflict;
    bool dry_run;      /* everything but the writes */
    size_t batch_rows; /* records a transaction (IMPORT_BATCH_ROWS when 0) */
    int progress;      /* enum progress_mode (base/progress.h) */
    bool quiet;        /* no line per refused row or conflict on stderr */
    size_t days_held;  /* link days folded before they are stored (0: the
                        * sink's default; tests make it small) */
    /* Called after the commit that replaced a link's destination
     * (IMPORT_KEEP), to tell the copies outside the store (tiers.h); NULL:
     * none to tell. */
    void (*replaced)(const char *code, void *arg);
    void *replaced_arg;
};

#define IMPORT_BATCH_ROWS 5000

/* What an import did (or with dry_run would do). */
struct import_summary {
    int64_t links_imported;  /* new links */
    int64_t links_there;     /* the store had them with the same destination */
    int64_t conflicts;       /* the store had them with another destination... */
    int64_t replaced;        /* ... and of those, replaced (--on-conflict keep) */
    int64_t refused;         /* rows refused, links, visits or tallies alike */
    int64_t visits;          /* visits counted into the history ... */
    int64_t visit_bots;      /* ... of them bots */
    int64_t visits_dropped;  /* visits of links that were there already, or refused
                             * (and the clicks of such tallies) */
    int64_t tallies;         /* tally rows counted */
    int64_t tally_clicks;    /* clicks they held */
    int64_t imported_clicks; /* source totals no visit or tally accounted for */
    int64_t domains_added;   /* custom domains the store lacked */
    bool failed_on_conflict; /* IMPORT_FAIL found conflicts: nothing written */
};

/* Reads 'source' with format 'f' into 'st' through 'l' (links.h: the
 * store's secrets and rules). Refused rows and conflicts are reported on
 * stderr as they come (unless quiet) and counted in 'out'. ERR_OK when the
 * source was read to its end (refused rows and conflicts included; with
 * IMPORT_FAIL and conflicts, nothing is written and out->failed_on_conflict
 * is set); an error when the source could not be read or the store failed,
 * after which what was committed stays and a rerun carries on. */
int import_run(struct store *st, struct links *l, const struct import_format *f, const char *source,
               const struct import_opts *o, struct import_summary *out);

#endif
