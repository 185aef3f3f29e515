/* store_move.h - the moving area of the store (store.h): whole tables as
 * rows of values, for copying one store into another (`shortd
 * migrate-store`, migrate_store.h). STORE_OPS_MOVE is this area's part of
 * struct store_ops.
 *
 * The tables every backend keeps, column by column, are listed below. Both
 * schemas (migrations/sqlite/, migrations/pg/) have these tables with these
 * column names; a column added to both schemas that must survive a move
 * between backends is added here too.
 *
 * A row is an array of 'ncols' values in the column order below. The first
 * 'nkeys' columns are the table's unique key: rows travel in key order, which
 * is the same in both backends (integers by value, text by bytes: SQLite's
 * BINARY collation, PostgreSQL's "C"). The list is small and constant, so
 * each file that includes this header gets its own copy. */
#ifndef SHORTD_STORE_MOVE_H
#define SHORTD_STORE_MOVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

enum col_type {
    COL_INT,  /* int64 */
    COL_BOOL, /* int64 0 or 1: boolean in PostgreSQL, integer in SQLite */
    COL_TEXT, /* UTF-8 */
    COL_BLOB, /* bytes: bytea in PostgreSQL */
};

enum val_type { VAL_NULL, VAL_INT, VAL_TEXT, VAL_BLOB };

/* One column of one row. Bytes are borrowed from whoever made the row; text
 * has p[n] == '\0'. A COL_BOOL column travels as VAL_INT. */
struct store_value {
    enum val_type type;
    int64_t i;     /* VAL_INT */
    const char *p; /* VAL_TEXT, VAL_BLOB */
    size_t n;
};

/* PostgreSQL binds a parameter per column (an upsert) or three per key
 * column (a range delete): both stay within store_pg.c's MAX_PARAMS. */
#define TABLE_COLS_MAX 22
#define TABLE_KEYS_MAX 4

struct store_table {
    const char *name;
    int ncols;
    int nkeys;          /* the first nkeys columns are the unique key */
    bool mirror;        /* an import removes target rows the source does not have */
    const char *serial; /* column the store numbers new rows by, or NULL */
    const char *sum[2]; /* columns whose sums check a copy, or NULL */
    struct {
        const char *name;
        enum col_type type;
    } cols[TABLE_COLS_MAX];
};

enum table_id {
    TABLE_META, /* first: a copy brings the secrets before the rows made with them */
    TABLE_API_KEYS,
    TABLE_LINKS,
    TABLE_BLOCKLIST,
    TABLE_IDEMPOTENCY,
    TABLE_LINK_DAYS,
    TABLE_DOMAINS,
    TABLE_LINK_HISTORY,
    TABLE_USERS,
    TABLE_SESSIONS,
    TABLE_SITES, /* site analytics (store_sites.h) */
    TABLE_SITE_HOSTS,
    TABLE_SITE_TOKENS,
    TABLE_SITE_DAYS,
    TABLE_SINKS, /* events out (store_events.h) */
    TABLE_SINK_POSITIONS,
    TABLE_EVENT_OUTBOX,
    TABLE_EVENT_FAILED,
    TABLE__COUNT
};

/* Links, keys and users are never removed (a tombstone keeps its code for
 * ever, a user is disabled), so a copy never removes them either; the other
 * tables hold windows that the source trims (salts, pruned days, swept
 * idempotency records, an unblocked host, ended sessions) and a copy
 * follows. A link's clicks and bot_clicks are the totals of
 * its pruned days and of an import (imported_clicks of them); link_days
 * holds the others. In meta, 'counter' is the next code
 * number: an import keeps the larger of the two, so codes never repeat.
 * Sites can be deleted, their tokens revoked and their days pruned: a copy
 * follows them all. Sinks are deleted by a mark and the failed archive is
 * never emptied, so a copy keeps both; sink positions and the outbox (pruned
 * once every sink took an event) follow the source, so each sink goes on
 * from where it was. */
/* clang-format off */
static const struct store_table store_tables[TABLE__COUNT] = {
    [TABLE_META] = {
        "meta", 2, 1, true, NULL, {NULL, NULL},
        {{"k", COL_TEXT}, {"v", COL_BLOB}}},
    [TABLE_API_KEYS] = {
        "api_keys", 10, 1, false, "id", {NULL, NULL},
        {{"id", COL_INT}, {"hash", COL_BLOB}, {"name", COL_TEXT}, {"admin", COL_BOOL},
         {"created_at", COL_INT}, {"revoked_at", COL_INT}, {"user_id", COL_INT},
         {"scopes", COL_INT}, {"domain", COL_TEXT}, {"last_used_at", COL_INT}}},
    [TABLE_LINKS] = {
        "links", 22, 1, false, NULL, {"clicks", "bot_clicks"},
        {{"code", COL_TEXT}, {"owner", COL_INT}, {"url", COL_TEXT}, {"title", COL_TEXT},
         {"note", COL_TEXT}, {"tags", COL_TEXT}, {"created_at", COL_INT},
         {"expires_at", COL_INT}, {"changed_at", COL_INT}, {"state", COL_INT},
         {"permanent", COL_BOOL}, {"clicks", COL_INT}, {"bot_clicks", COL_INT},
         {"password", COL_TEXT}, {"domain", COL_TEXT}, {"variants", COL_TEXT},
         {"utm", COL_TEXT}, {"dest", COL_TEXT}, {"max_clicks", COL_INT}, {"used", COL_INT},
         {"imported_clicks", COL_INT}, {"track", COL_BOOL}}},
    [TABLE_BLOCKLIST] = {
        "blocklist", 2, 1, true, NULL, {NULL, NULL},
        {{"host", COL_TEXT}, {"created_at", COL_INT}}},
    [TABLE_IDEMPOTENCY] = {
        "idempotency", 6, 2, true, NULL, {NULL, NULL},
        {{"key_id", COL_INT}, {"idem", COL_TEXT}, {"fingerprint", COL_BLOB},
         {"status", COL_INT}, {"body", COL_TEXT}, {"created_at", COL_INT}}},
    [TABLE_LINK_DAYS] = {
        "link_days", 8, 2, true, NULL, {"clicks", "bots"},
        {{"code", COL_TEXT}, {"day", COL_INT}, {"clicks", COL_INT}, {"bots", COL_INT},
         {"uniques", COL_INT}, {"dims", COL_BLOB}, {"visitors", COL_BLOB},
         {"recent", COL_BLOB}}},
    [TABLE_DOMAINS] = {
        "domains", 6, 1, true, NULL, {NULL, NULL},
        {{"host", COL_TEXT}, {"owner", COL_INT}, {"created_at", COL_INT},
         {"base_url_redirect", COL_TEXT}, {"regular_404_redirect", COL_TEXT},
         {"invalid_short_url_redirect", COL_TEXT}}},
    [TABLE_LINK_HISTORY] = {
        "link_history", 6, 2, false, NULL, {NULL, NULL},
        {{"code", COL_TEXT}, {"seq", COL_INT}, {"old_url", COL_TEXT}, {"new_url", COL_TEXT},
         {"changed_at", COL_INT}, {"by_key", COL_INT}}},
    [TABLE_USERS] = {
        "users", 7, 1, false, "id", {NULL, NULL},
        {{"id", COL_INT}, {"name", COL_TEXT}, {"pwhash", COL_TEXT}, {"role", COL_TEXT},
         {"key_id", COL_INT}, {"created_at", COL_INT}, {"disabled_at", COL_INT}}},
    [TABLE_SESSIONS] = {
        "sessions", 5, 1, true, NULL, {NULL, NULL},
        {{"hash", COL_BLOB}, {"user_id", COL_INT}, {"created_at", COL_INT},
         {"seen_at", COL_INT}, {"expires_at", COL_INT}}},
    [TABLE_SITES] = {
        "sites", 5, 1, true, NULL, {"pv_total", NULL},
        {{"id", COL_TEXT}, {"owner", COL_INT}, {"badge", COL_BOOL}, {"created_at", COL_INT},
         {"pv_total", COL_INT}}},
    [TABLE_SITE_HOSTS] = {
        "site_hosts", 2, 1, true, NULL, {NULL, NULL},
        {{"host", COL_TEXT}, {"site", COL_TEXT}}},
    [TABLE_SITE_TOKENS] = {
        "site_tokens", 4, 1, true, "id", {NULL, NULL},
        {{"id", COL_INT}, {"site", COL_TEXT}, {"hash", COL_BLOB}, {"created_at", COL_INT}}},
    [TABLE_SITE_DAYS] = {
        "site_days", 5, 2, true, NULL, {"pv", "bots"},
        {{"site", COL_TEXT}, {"day", COL_INT}, {"pv", COL_INT}, {"bots", COL_INT},
         {"dims", COL_BLOB}}},
    [TABLE_SINKS] = {
        "sinks", 11, 1, false, "id", {NULL, NULL},
        {{"id", COL_INT}, {"kind", COL_TEXT}, {"endpoint", COL_TEXT}, {"types", COL_TEXT},
         {"owner", COL_INT}, {"domain", COL_TEXT}, {"secret", COL_TEXT},
         {"secret_old", COL_TEXT}, {"options", COL_TEXT}, {"created_at", COL_INT},
         {"deleted_at", COL_INT}}},
    [TABLE_SINK_POSITIONS] = {
        "sink_positions", 5, 2, true, NULL, {NULL, NULL},
        {{"sink", COL_INT}, {"source", COL_TEXT}, {"pos", COL_INT}, {"holder", COL_TEXT},
         {"lease_until", COL_INT}}},
    [TABLE_EVENT_OUTBOX] = {
        "event_outbox", 8, 1, true, "seq", {NULL, NULL},
        {{"seq", COL_INT}, {"id", COL_TEXT}, {"type", COL_TEXT}, {"at", COL_INT},
         {"code", COL_TEXT}, {"owner", COL_INT}, {"domain", COL_TEXT}, {"body", COL_TEXT}}},
    [TABLE_EVENT_FAILED] = {
        "event_failed", 18, 1, false, "id", {NULL, NULL},
        {{"id", COL_INT}, {"sink", COL_INT}, {"source", COL_TEXT}, {"first_pos", COL_INT},
         {"last_pos", COL_INT}, {"events", COL_INT}, {"body", COL_TEXT}, {"sha256", COL_TEXT},
         {"attempts", COL_INT}, {"last_error", COL_TEXT}, {"first_failed_at", COL_INT},
         {"archived_at", COL_INT}, {"replays", COL_INT}, {"last_replay_at", COL_INT},
         {"last_replay_result", COL_TEXT}, {"resolved_at", COL_INT}, {"resolved_by", COL_TEXT},
         {"resolved_reason", COL_TEXT}}},
};
/* clang-format on */

/* What table_count reports: the rows, and the sums of the 'sum' columns. */
struct table_count {
    int64_t rows;
    int64_t sum[2];
};

/* Each row is 'ncols' values; a non-zero return stops the export. */
typedef int (*row_cb)(const struct store_value *row, void *arg);

#define STORE_OPS_MOVE                                                                               \
    /* Rows of a table of enum table_id, in key order. */                                            \
    int (*export_rows)(struct store * st, int table, row_cb cb, void *arg);                          \
    /* Inside begin/commit: 'n' rows in key order, all after the key 'after'                       \
     * (the previous batch's last row; NULL for the first batch). A row is                         \
     * inserted, or replaces the row with its key (meta's 'counter' keeps the                      \
     * larger number). For a mirror table, rows from after 'after' up to the                       \
     * last row's key (to the end of the table when 'to_end') that are not in                      \
     * the batch are removed, so one pass makes the table the source's.                            \
     * '*changed' gets the rows added, changed or removed. */ \
    int (*import_rows)(struct store * st, int table, const struct store_value *rows, size_t n,       \
                       const struct store_value *after, bool to_end, int64_t *changed);              \
    int (*table_count)(struct store * st, int table, struct table_count *out);

#endif

/* The ops table: store.h, which includes every area's header. */
#include "store/store.h"
