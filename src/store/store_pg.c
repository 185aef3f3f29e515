/* store_pg.c - the scale-out backend: the state of every node in one
 * PostgreSQL database, through libpq. Every SQL statement shortd runs on
 * PostgreSQL is in this file, in migrations/pg/ (the schema, embedded at
 * build time) or in sqlgen.c (the text both backends share, in PostgreSQL's
 * dialect); the semantics are store_sqlite.c's, op for op.
 *
 * DESIGN
 * Each thread gets its own connection (found through a pthread key), with its
 * statements prepared by name on first use, so an op costs one round trip.
 * The writer's transactions are plain BEGIN ... COMMIT at READ COMMITTED;
 * races between nodes are settled by unique keys: inserts that may collide
 * use ON CONFLICT DO NOTHING and report ERR_EXISTS when they added no row, so
 * a lost race never aborts the writer's transaction; any other unique
 * violation (23505) is ERR_EXISTS as well. A COMMIT that PostgreSQL turns
 * into a rollback (an earlier statement failed) is an error, and a
 * connection lost inside a transaction is never silently reopened: the rest
 * of that transaction fails until rollback.
 * Click counters: a store batch's link days are appended as they are
 * (days_append, one INSERT over unnest() of array parameters) and merged
 * into their day rows later by days_compact, every batch's rows of a link
 * day at once, through what agg_days does with a batch: over unnest(),
 * DAY_CHUNK days at a time, read and lock the rows there (FOR UPDATE, in
 * (code, day) order, so nodes merging the same days queue behind each other
 * instead of losing an update), merge in C and write them back with one
 * UPDATE, and insert the missing ones whole (ON CONFLICT DO NOTHING: one
 * another node inserted first is merged in a second round).
 * claim_block runs alone on a connection of its own, outside the writer's
 * transaction: a block once handed out stays claimed even if that
 * transaction rolls back, so no two nodes (or two runs of one) ever get the
 * same block.
 * open() checks the schema version and refuses any but this binary's; only
 * store_pg_migrate (`shortd migrate`) changes the schema. */
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "store/bus.h"
#include "clicks/dayrow.h"
#include "base/err.h"
#include "base/log.h"
#include "events/outbox.h"
#include "store/migrations.h"
#include "store/sqlgen.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/store_move.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "base/banned.h"

/* The schema: migrations/pg/NNNN_name.sql, embedded by the Makefile
 * (migrations.h); applied by store_pg_migrate only. */
static const struct migration steps[] = {
#include "pg_migrations.inc"
};
#define NSTEPS MIGRATIONS_COUNT(steps)
#define SCHEMA_VERSION migrations_last(steps, NSTEPS)

/* pg_advisory_xact_lock key of `shortd migrate`: "shortd" in ASCII. */
#define MIGRATE_LOCK "116100114116111104"

#define DAY_CHUNK 2000 /* link days merged per round of statements */
#define MAX_PARAMS 24

/* Prepared statements, by number; prepared on first use per connection. */
enum stmt {
    S_PING,
    S_HAS_VERSION,
    S_VERSION,
    S_META_GET,
    S_META_PUT,
    S_META_DEL,
    S_META_ADD,
    S_IDEM_CLAIM,
    S_CLAIM,
    S_LINK_GET,
    S_LINK_INSERT,
    S_LINK_FIND_LIVE,
    S_LINK_DELETE,
    S_LINK_SET_STATE,
    S_LINK_IMPORTED,
    S_LINK_COUNT,
    S_LINK_SWEEP,
    S_DAYS_LOCK,
    S_DAYS_NEW,
    S_DAYS_PUT,
    S_PRUNE_DAYS,
    S_PRUNE_VISITORS,
    S_STATS_DAYS,
    S_STATS_DIMS,
    S_STATS_RECENT,
    S_STATS_TOTALS,
    S_STATS_TOP,
    S_STATS_ALL_DAYS,
    S_STATS_ALL_DIMS,
    S_BATCH_NEW,
    S_PEND_ADD,
    S_PEND_COUNT,
    S_PEND_TAKE,
    S_KEY_INSERT,
    S_KEY_BY_HASH,
    S_KEY_LIST,
    S_KEY_REVOKE,
    S_KEY_COUNT,
    S_USER_INSERT,
    S_USER_GET,
    S_USER_BY_NAME,
    S_USER_LIST,
    S_USER_PASSWORD,
    S_USER_DISABLE,
    S_USER_COUNT,
    S_USER_ROLE,
    S_USER_ENABLE,
    S_USER_SIGNED_IN,
    S_SETUP_PUT,
    S_SETUP_CHECK,
    S_SETUP_END,
    S_SESSION_INSERT,
    S_SESSION_GET,
    S_SESSION_TOUCH,
    S_SESSION_END,
    S_SESSION_END_USER,
    S_SESSION_SWEEP,
    S_KEY_TOUCH,
    S_IDEM_GET,
    S_IDEM_PUT,
    S_IDEM_SWEEP,
    S_BLOCK_ADD,
    S_BLOCK_DEL,
    S_BLOCK_HAS,
    S_BLOCK_LIST,
    S_LINK_UPDATE,
    S_LINK_RESERVE,
    S_HISTORY_ADD,
    S_HISTORY_LIST,
    S_DOMAIN_ADD,
    S_DOMAIN_GET,
    S_DOMAIN_DEL,
    S_DOMAIN_LIST,
    S_DOMAIN_REDIRECTS_SET,
    S_DOMAIN_REDIRECTS_LIST,
    S_SITE_INSERT,
    S_SITE_GET,
    S_SITE_BADGE,
    S_SITE_LIST,
    S_SITE_DEL,
    S_SITE_DEL_HOSTS,
    S_SITE_DEL_TOKENS,
    S_SITE_DEL_DAYS,
    S_SITE_HOST_ADD,
    S_SITE_HOSTS_LIST,
    S_SITE_TOKEN_ADD,
    S_SITE_TOKEN_FIND,
    S_SITE_TOKEN_DEL,
    S_SITE_TOKEN_LIST,
    S_SITE_DAY_ADD,
    S_SITE_DAY_LOCK,
    S_SITE_DAY_PUT,
    S_SITE_PV_TOTAL,
    S_SITE_PRUNE,
    S_SITE_STATS_DAYS,
    S_SITE_STATS_DIMS,
    S_SITE_SIZE,
    S_SINK_ADD,
    S_SINK_GET,
    S_SINK_LIST,
    S_SINK_DEL,
    S_SINK_SECRET,
    S_SINK_UPDATE,
    S_POS_GET,
    S_POS_INSERT,
    S_POS_UPDATE,
    S_POS_LEASE,
    S_OUTBOX_ADD,
    S_OUTBOX_READ,
    S_OUTBOX_HEAD,
    S_OUTBOX_PRUNE,
    S_LINK_EXPIRING,
    S_FAILED_ADD,
    S_FAILED_GET,
    S_FAILED_LIST,
    S_FAILED_REPLAYED,
    S_FAILED_RESOLVE,
    S_BACKUP_NOTE,
    S_BACKUP_LAST,
    S_CLOCK,
    S_LEASE_TAKE,
    S__COUNT
};

/* A link's columns as PostgreSQL reads them (sqlgen.h). */
/* A key's columns with its user's role, links' owner and state. */
#define KEY_COLS                                                                                   \
    "k.id, k.name, k.admin, k.created_at, k.revoked_at, k.user_id, k.scopes, k.domain, "           \
    "k.last_used_at, u.role, u.key_id, u.disabled_at"
#define KEY_FROM " FROM api_keys k LEFT JOIN users u ON u.id = k.user_id"
#define LINK_READ SQL_LINK_READ_PG
/* The rows of links of owner $1 (-1: every link). */
#define OWNED "($1::bigint < 0 OR code IN (SELECT code FROM links WHERE owner = $1::bigint))"

#define USER_READ "id, name, pwhash, role, key_id, created_at, disabled_at, last_signin_at"

static const char *const sql[S__COUNT] = {
    [S_PING] = "SELECT 1",
    [S_HAS_VERSION] = "SELECT to_regclass('schema_version') IS NOT NULL",
    [S_VERSION] = "SELECT coalesce(max(version), 0) FROM schema_version",
    [S_META_GET] = "SELECT v FROM meta WHERE k = $1",
    [S_META_PUT] = "INSERT INTO meta (k, v) VALUES ($1, $2) "
                   "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
    [S_META_DEL] = "DELETE FROM meta WHERE k = $1",
    [S_META_ADD] = "INSERT INTO meta (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING",
    [S_IDEM_CLAIM] =
        "INSERT INTO idempotency (key_id, idem, fingerprint, status, body, created_at) "
        "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key_id, idem) DO NOTHING",
    /* The counter is ASCII digits in a bytea, as SQLite shows it. */
    [S_CLAIM] = "UPDATE meta SET v = convert_to((convert_from(v, 'UTF8')::bigint "
                "+ $1::bigint)::text, 'UTF8') WHERE k = 'counter' "
                "RETURNING convert_from(v, 'UTF8')::bigint - $1::bigint",
    [S_LINK_GET] = "SELECT " LINK_READ " FROM links WHERE code = $1",
    [S_LINK_INSERT] = "INSERT INTO links (" SQL_LINK_COLS ") "
                      "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
                      "$16, $17, $18, $19, $20, $21) "
                      "ON CONFLICT DO NOTHING",
    [S_LINK_FIND_LIVE] = "SELECT " LINK_READ " FROM links WHERE owner = $1 "
                         "AND md5(url) = md5($2::text) AND url = $2 "
                         "AND state = 0 AND (expires_at = 0 OR expires_at > $3) "
                         "ORDER BY created_at DESC LIMIT 1",
    [S_LINK_DELETE] = "UPDATE links SET state = 1, changed_at = $2, " SQL_LINK_DATA_NULL
                      " WHERE code = $1",
    [S_LINK_SET_STATE] = "UPDATE links SET state = $2, changed_at = $3 WHERE code = $1",
    [S_LINK_IMPORTED] = "UPDATE links SET clicks = clicks + $2, bot_clicks = bot_clicks + $3, "
                        "imported_clicks = imported_clicks + $2 + $3 WHERE code = $1",
    [S_LINK_COUNT] = "SELECT count(*) FROM links",
    /* SKIP LOCKED: two nodes sweeping at once take different rows. */
    [S_LINK_SWEEP] = "UPDATE links SET " SQL_LINK_DATA_NULL " WHERE code IN (SELECT code "
                     "FROM links WHERE expires_at > 0 AND url IS NOT NULL AND expires_at < $1 "
                     "LIMIT $2 FOR UPDATE SKIP LOCKED)",
    /* A chunk of link days (days_chunk): the rows there locked, in key
     * order; the missing ones inserted whole (a row another node inserted
     * first is not returned, and is merged as one that was there). */
    [S_DAYS_LOCK] = "SELECT t.code, t.day, t.clicks, t.bots, t.uniques, t.dims, t.visitors, "
                    "t.recent FROM link_days t JOIN unnest($1::text[], $2::bigint[]) "
                    "AS u (code, day) ON t.code = u.code AND t.day = u.day "
                    "ORDER BY t.code, t.day FOR UPDATE OF t",
    [S_DAYS_NEW] = "INSERT INTO link_days (code, day, clicks, bots, uniques, dims, visitors, "
                   "recent) SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], "
                   "$4::bigint[], $5::bigint[], $6::bytea[], $7::bytea[], $8::bytea[]) "
                   "AS u (code, day) ORDER BY code, day ON CONFLICT DO NOTHING "
                   "RETURNING code, day",
    [S_DAYS_PUT] = "UPDATE link_days AS t SET clicks = u.clicks, bots = u.bots, "
                   "uniques = u.uniques, dims = u.dims, visitors = u.visitors, recent = u.recent "
                   "FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], "
                   "$5::bigint[], $6::bytea[], $7::bytea[], $8::bytea[]) "
                   "AS u (code, day, clicks, bots, uniques, dims, visitors, recent) "
                   "WHERE t.code = u.code AND t.day = u.day",
    /* A pruned day's counts move into its link's totals in the statement
     * that deletes it; SKIP LOCKED: two nodes pruning take different rows. */
    [S_PRUNE_DAYS] = "WITH gone AS (DELETE FROM link_days WHERE (code, day) IN "
                     "(SELECT code, day FROM link_days WHERE day < $1 ORDER BY day, code "
                     "LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING code, clicks, bots), "
                     "carry AS (UPDATE links AS l SET clicks = l.clicks + g.c, "
                     "bot_clicks = l.bot_clicks + g.b FROM (SELECT code, sum(clicks)::bigint AS c, "
                     "sum(bots)::bigint AS b FROM gone GROUP BY code) AS g WHERE l.code = g.code) "
                     "SELECT count(*) FROM gone",
    [S_PRUNE_VISITORS] = "UPDATE link_days SET visitors = NULL "
                         "WHERE day < $1 AND visitors IS NOT NULL",
    /* The reads add the appended link days (0013_pending_days.sql) in the
     * same statement, so that a round of compacting committed meanwhile
     * can neither hide a click nor show it twice. The reads of days
     * (days_read) have three kinds of rows: 0, the stored figures of a
     * day; 1, the unique count and visitors of a stored link day that has
     * appended rows; 2, the appended rows. */
    [S_STATS_DAYS] =
        "SELECT 0, NULL, day, clicks, uniques, bots, NULL::bytea FROM link_days "
        "WHERE code = $1 AND day BETWEEN $2 AND $3 "
        "UNION ALL SELECT 1, code, day, 0, uniques, 0, visitors FROM link_days d "
        "WHERE code = $1 AND day BETWEEN $2 AND $3 AND EXISTS (SELECT 1 FROM "
        "link_days_pending p WHERE p.code = d.code AND p.day = d.day) "
        "UNION ALL SELECT 2, code, day, clicks, uniques, bots, visitors FROM link_days_pending "
        "WHERE code = $1 AND day BETWEEN $2 AND $3 ORDER BY 2, 3, 1",
    [S_STATS_DIMS] = "SELECT dims FROM link_days WHERE code = $1 AND day BETWEEN $2 AND $3 "
                     "AND dims IS NOT NULL UNION ALL SELECT dims FROM link_days_pending "
                     "WHERE code = $1 AND day BETWEEN $2 AND $3 AND dims IS NOT NULL",
    [S_STATS_RECENT] = "(SELECT recent FROM link_days WHERE code = $1 AND recent IS NOT NULL "
                       "ORDER BY day DESC LIMIT $2) UNION ALL (SELECT recent "
                       "FROM link_days_pending WHERE code = $1 AND recent IS NOT NULL)",
    [S_STATS_TOTALS] =
        "SELECT count(*), (coalesce(sum(clicks), 0) + (SELECT coalesce(sum(d.clicks), 0) "
        "FROM " SQL_DAYS_AND_PENDING " d WHERE $1::bigint < 0 OR d.code IN (SELECT code "
        "FROM links WHERE owner = $1::bigint)))::bigint, (coalesce(sum(bot_clicks), 0) + "
        "(SELECT coalesce(sum(d.bots), 0) FROM " SQL_DAYS_AND_PENDING " d WHERE "
        "$1::bigint < 0 OR d.code IN (SELECT code FROM links WHERE owner = $1::bigint)))::bigint "
        "FROM links WHERE $1::bigint < 0 OR owner = $1::bigint",
    [S_STATS_TOP] = "SELECT d.code, sum(d.clicks)::bigint AS c FROM " SQL_DAYS_AND_PENDING
                    " d JOIN links l ON l.code = d.code WHERE d.day = $1 "
                    "AND ($2::bigint < 0 OR l.owner = $2::bigint) GROUP BY d.code "
                    "HAVING sum(d.clicks) > 0 ORDER BY c DESC, d.code LIMIT $3",
    [S_STATS_ALL_DAYS] =
        "SELECT 0, NULL, day, sum(clicks)::bigint, sum(uniques)::bigint, sum(bots)::bigint, "
        "NULL::bytea FROM link_days WHERE day BETWEEN $2 AND $3 AND " OWNED " GROUP BY day "
        "UNION ALL SELECT 1, code, day, 0, uniques, 0, visitors FROM link_days d "
        "WHERE day BETWEEN $2 AND $3 AND " OWNED " AND EXISTS (SELECT 1 FROM "
        "link_days_pending p WHERE p.code = d.code AND p.day = d.day) "
        "UNION ALL SELECT 2, code, day, clicks, uniques, bots, visitors FROM link_days_pending "
        "WHERE day BETWEEN $2 AND $3 AND " OWNED " ORDER BY 2, 3, 1",
    [S_STATS_ALL_DIMS] = "SELECT dims FROM link_days WHERE day BETWEEN $2 AND $3 "
                         "AND dims IS NOT NULL AND " OWNED " UNION ALL SELECT dims "
                         "FROM link_days_pending WHERE day BETWEEN $2 AND $3 "
                         "AND dims IS NOT NULL AND " OWNED,
    /* Appending: batch numbers from a sequence all nodes share; a pass of
     * compacting takes the link days after the last one it took (a
     * connection's cursor), every batch's rows of each at once, in key
     * order; SKIP LOCKED: two nodes compacting take different link days. */
    [S_BATCH_NEW] = "SELECT greatest(nextval('day_batches'), $1::bigint + 1)",
    [S_PEND_ADD] = "INSERT INTO link_days_pending (batch, code, day, clicks, bots, uniques, "
                   "dims, visitors, recent) SELECT $1::bigint, * FROM unnest($2::text[], "
                   "$3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[], "
                   "$8::bytea[], $9::bytea[])",
    [S_PEND_COUNT] = "SELECT count(*), coalesce(max(batch), 0) FROM link_days_pending",
    [S_PEND_TAKE] = "WITH k AS (SELECT code, day FROM link_days_pending "
                    "WHERE (code, day) > ($2::text, $3::bigint) AND batch <= $1::bigint "
                    "ORDER BY code, day LIMIT $4 FOR UPDATE SKIP LOCKED) "
                    "DELETE FROM link_days_pending p USING (SELECT DISTINCT code, day FROM k) t "
                    "WHERE p.code = t.code AND p.day = t.day AND p.batch <= $1::bigint "
                    "RETURNING p.code, p.day, p.clicks, p.bots, p.uniques, p.dims, p.visitors, "
                    "p.recent",
    [S_KEY_INSERT] =
        "INSERT INTO api_keys (name, hash, admin, created_at, user_id, scopes, domain) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING id",
    [S_KEY_BY_HASH] = "SELECT " KEY_COLS KEY_FROM " WHERE k.hash = $1",
    [S_KEY_LIST] = "SELECT " KEY_COLS KEY_FROM " ORDER BY k.id",
    [S_KEY_TOUCH] = "UPDATE api_keys SET last_used_at = $2 WHERE id = $1 "
                    "AND (last_used_at IS NULL OR last_used_at < $2)",
    /* Every node listening on the bus empties its key cache when this commits. */
    [S_KEY_REVOKE] = "WITH r AS (UPDATE api_keys SET revoked_at = $2 "
                     "WHERE id = $1 AND revoked_at = 0 RETURNING id) "
                     "SELECT pg_notify('" BUS_PG_CHANNEL "', '" BUS_KEYS "') FROM r",
    [S_KEY_COUNT] = "SELECT count(*) FROM api_keys",
    [S_USER_INSERT] = "INSERT INTO users (name, pwhash, role, key_id, created_at, disabled_at) "
                      "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING id",
    [S_USER_GET] = "SELECT " USER_READ " FROM users WHERE id = $1",
    [S_USER_BY_NAME] = "SELECT " USER_READ " FROM users WHERE name = $1",
    [S_USER_LIST] = "SELECT " USER_READ " FROM users ORDER BY id",
    [S_USER_PASSWORD] = "UPDATE users SET pwhash = $2 WHERE id = $1",
    /* The user's API keys are refused from now on: every node empties its
     * key cache when this commits, as for a revoked key. */
    [S_USER_DISABLE] = "WITH r AS (UPDATE users SET disabled_at = $2 "
                       "WHERE id = $1 AND disabled_at = 0 RETURNING id) "
                       "SELECT pg_notify('" BUS_PG_CHANNEL "', '" BUS_KEYS "') FROM r",
    [S_USER_COUNT] = "SELECT count(*) FROM users",
    /* A user's keys act with its role: every node empties its key cache. */
    [S_USER_ROLE] = "WITH r AS (UPDATE users SET role = $2 WHERE id = $1 RETURNING id) "
                    "SELECT pg_notify('" BUS_PG_CHANNEL "', '" BUS_KEYS "') FROM r",
    [S_USER_ENABLE] = "WITH r AS (UPDATE users SET disabled_at = 0 "
                      "WHERE id = $1 AND disabled_at != 0 RETURNING id) "
                      "SELECT pg_notify('" BUS_PG_CHANNEL "', '" BUS_KEYS "') FROM r",
    [S_USER_SIGNED_IN] = "UPDATE users SET last_signin_at = $2 WHERE id = $1",
    [S_SETUP_PUT] = "INSERT INTO setup_token (id, hash, expires_at) VALUES (1, $1, $2) "
                    "ON CONFLICT (id) DO UPDATE SET hash = $1, expires_at = $2",
    [S_SETUP_CHECK] = "SELECT 1 FROM setup_token WHERE hash = $1 AND expires_at > $2",
    [S_SETUP_END] = "DELETE FROM setup_token",
    [S_SESSION_INSERT] = "INSERT INTO sessions (hash, user_id, created_at, seen_at, expires_at) "
                         "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
    [S_SESSION_GET] = "SELECT user_id, created_at, seen_at, expires_at FROM sessions "
                      "WHERE hash = $1 AND expires_at > $2",
    [S_SESSION_TOUCH] = "UPDATE sessions SET seen_at = $2 WHERE hash = $1",
    [S_SESSION_END] = "DELETE FROM sessions WHERE hash = $1",
    [S_SESSION_END_USER] = "DELETE FROM sessions WHERE user_id = $1",
    [S_SESSION_SWEEP] = "DELETE FROM sessions WHERE expires_at <= $1 OR seen_at < $2",
    [S_IDEM_GET] = "SELECT fingerprint, status, body, created_at FROM idempotency "
                   "WHERE key_id = $1 AND idem = $2 AND created_at >= $3",
    [S_IDEM_PUT] = "INSERT INTO idempotency (key_id, idem, fingerprint, status, body, created_at) "
                   "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key_id, idem) DO UPDATE SET "
                   "fingerprint = excluded.fingerprint, status = excluded.status, "
                   "body = excluded.body, created_at = excluded.created_at",
    [S_IDEM_SWEEP] = "DELETE FROM idempotency WHERE created_at < $1",
    [S_BLOCK_ADD] = "INSERT INTO blocklist (host, created_at) VALUES ($1, $2) "
                    "ON CONFLICT DO NOTHING",
    [S_BLOCK_DEL] = "DELETE FROM blocklist WHERE host = $1",
    [S_BLOCK_HAS] = "SELECT 1 FROM blocklist WHERE host = $1",
    [S_BLOCK_LIST] = "SELECT host, created_at FROM blocklist ORDER BY host",
    [S_LINK_UPDATE] = "UPDATE links SET url = $2, title = $3, note = $4, tags = $5, "
                      "expires_at = $6, changed_at = $7, password = $8, variants = $9, "
                      "utm = $10, dest = $11, track = $12 WHERE code = $1",
    /* The row lock makes concurrent reservations on every node queue here:
     * exactly max_clicks of them see a row. */
    [S_LINK_RESERVE] = "UPDATE links SET used = used + 1 WHERE code = $1 AND max_clicks > 0 "
                       "AND used < max_clicks RETURNING used",
    [S_HISTORY_ADD] = "INSERT INTO link_history (code, seq, old_url, new_url, changed_at, by_key) "
                      "SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5 FROM link_history "
                      "WHERE code = $1",
    [S_HISTORY_LIST] = "SELECT seq, old_url, new_url, changed_at, by_key FROM link_history "
                       "WHERE code = $1 ORDER BY seq DESC LIMIT $2",
    [S_DOMAIN_ADD] = "INSERT INTO domains (host, owner, created_at) VALUES ($1, $2, $3) "
                     "ON CONFLICT DO NOTHING",
    [S_DOMAIN_GET] = "SELECT owner FROM domains WHERE host = $1",
    [S_DOMAIN_DEL] = "DELETE FROM domains WHERE host = $1 AND owner = $2",
    [S_DOMAIN_LIST] = "SELECT host, owner, created_at FROM domains "
                      "WHERE $1::bigint < 0 OR owner = $1::bigint ORDER BY host",
    [S_DOMAIN_REDIRECTS_SET] = "UPDATE domains SET base_url_redirect = $3, "
                               "regular_404_redirect = $4, invalid_short_url_redirect = $5 "
                               "WHERE host = $1 AND owner = $2",
    [S_DOMAIN_REDIRECTS_LIST] = "SELECT host, owner, base_url_redirect, regular_404_redirect, "
                                "invalid_short_url_redirect FROM domains "
                                "WHERE $1::bigint < 0 OR owner = $1::bigint ORDER BY host",
    [S_SITE_INSERT] = "INSERT INTO sites(id, owner, badge, created_at) VALUES ($1, $2, $3, $4) "
                      "ON CONFLICT DO NOTHING",
    [S_SITE_GET] = "SELECT id, owner, badge, created_at, pv_total FROM sites WHERE id = $1",
    [S_SITE_BADGE] = "UPDATE sites SET badge = $2 WHERE id = $1",
    [S_SITE_LIST] = "SELECT id, owner, badge, created_at, pv_total FROM sites "
                    "WHERE $1::bigint < 0 OR owner = $1::bigint ORDER BY id",
    [S_SITE_DEL] = "DELETE FROM sites WHERE id = $1",
    [S_SITE_DEL_HOSTS] = "DELETE FROM site_hosts WHERE site = $1",
    [S_SITE_DEL_TOKENS] = "DELETE FROM site_tokens WHERE site = $1",
    [S_SITE_DEL_DAYS] = "DELETE FROM site_days WHERE site = $1",
    [S_SITE_HOST_ADD] = "INSERT INTO site_hosts(host, site) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    [S_SITE_HOSTS_LIST] = "SELECT host, site FROM site_hosts WHERE $1::text IS NULL OR site = $1 "
                          "ORDER BY host",
    [S_SITE_TOKEN_ADD] = "INSERT INTO site_tokens(site, hash, created_at) VALUES ($1, $2, $3) "
                         "RETURNING id",
    [S_SITE_TOKEN_FIND] = "SELECT site FROM site_tokens WHERE hash = $1",
    [S_SITE_TOKEN_DEL] = "DELETE FROM site_tokens WHERE site = $1 AND id = $2",
    [S_SITE_TOKEN_LIST] = "SELECT id, created_at FROM site_tokens WHERE site = $1 ORDER BY id",
    /* A site day is made empty if absent, then locked and read: nodes
     * merging the same day wait for each other in (site, day) order. */
    [S_SITE_DAY_ADD] =
        "INSERT INTO site_days(site, day, pv, bots) SELECT $1::text, $2::bigint, 0, 0 "
        "WHERE EXISTS (SELECT 1 FROM sites WHERE id = $1::text) ON CONFLICT DO NOTHING",
    [S_SITE_DAY_LOCK] = "SELECT pv, bots, dims FROM site_days WHERE site = $1 AND day = $2 "
                        "FOR UPDATE",
    [S_SITE_DAY_PUT] = "UPDATE site_days SET pv = $3, bots = $4, dims = $5 "
                       "WHERE site = $1 AND day = $2",
    [S_SITE_PV_TOTAL] = "UPDATE sites SET pv_total = pv_total + $2 WHERE id = $1 AND badge",
    [S_SITE_PRUNE] = "WITH gone AS (DELETE FROM site_days WHERE (site, day) IN (SELECT site, day "
                     "FROM site_days WHERE day < $1 ORDER BY day LIMIT $2) RETURNING 1) "
                     "SELECT count(*) FROM gone",
    [S_SITE_STATS_DAYS] = "SELECT day, pv, 0, bots FROM site_days "
                          "WHERE site = $1 AND day BETWEEN $2 AND $3 ORDER BY day",
    [S_SITE_STATS_DIMS] = "SELECT dims FROM site_days WHERE site = $1 AND day BETWEEN $2 AND $3 "
                          "AND dims IS NOT NULL",
    [S_SITE_SIZE] = "SELECT count(*), coalesce(sum(octet_length(dims)), 0) FROM site_days "
                    "WHERE site = $1",
#define SINK_COLS                                                                                  \
    "id, kind, endpoint, types, owner, domain, secret, secret_old, options, created_at"
    [S_SINK_ADD] = "INSERT INTO sinks (kind, endpoint, types, owner, domain, secret, secret_old, "
                   "options, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    [S_SINK_GET] = "SELECT " SINK_COLS " FROM sinks WHERE id = $1 AND deleted_at = 0",
    [S_SINK_LIST] = "SELECT " SINK_COLS " FROM sinks WHERE deleted_at = 0 ORDER BY id",
    [S_SINK_DEL] = "UPDATE sinks SET deleted_at = $2 WHERE id = $1 AND deleted_at = 0",
    [S_SINK_SECRET] = "UPDATE sinks SET secret = $2, secret_old = $3 "
                      "WHERE id = $1 AND deleted_at = 0",
    [S_SINK_UPDATE] = "UPDATE sinks SET types = $2, owner = $3, domain = $4, options = $5 "
                      "WHERE id = $1 AND deleted_at = 0",
    [S_POS_GET] = "SELECT pos FROM sink_positions WHERE sink = $1 AND source = $2",
    [S_POS_INSERT] = "INSERT INTO sink_positions (sink, source, pos) VALUES ($1, $2, $3) "
                     "ON CONFLICT DO NOTHING",
    [S_POS_UPDATE] = "UPDATE sink_positions SET pos = $4 "
                     "WHERE sink = $1 AND source = $2 AND pos = $3",
    [S_POS_LEASE] = "INSERT INTO sink_positions AS p (sink, source, pos, holder, lease_until) "
                    "VALUES ($1, $2, 0, $3, $5) ON CONFLICT (sink, source) DO UPDATE "
                    "SET holder = $3, lease_until = $5 "
                    "WHERE p.holder = $3 OR p.lease_until <= $4",
    [S_OUTBOX_ADD] = "INSERT INTO event_outbox (id, type, at, code, owner, domain, body) "
                     "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
    [S_OUTBOX_READ] = "SELECT seq, id, type, at, code, owner, domain, body FROM event_outbox "
                      "WHERE seq > $1 ORDER BY seq LIMIT $2",
    [S_OUTBOX_HEAD] = "SELECT coalesce(max(seq), 0) FROM event_outbox",
    [S_OUTBOX_PRUNE] = "DELETE FROM event_outbox WHERE seq IN (SELECT seq FROM event_outbox "
                       "WHERE at < $1 AND seq <= (SELECT min(p.pos) FROM sink_positions p "
                       "JOIN sinks s ON s.id = p.sink WHERE s.deleted_at = 0 "
                       "AND p.source = 'links') ORDER BY seq LIMIT $2)",
    [S_LINK_EXPIRING] = "SELECT " LINK_READ " FROM links WHERE expires_at > $1 "
                        "AND expires_at <= $2 AND state = 0 AND url IS NOT NULL "
                        "ORDER BY expires_at, code LIMIT $3",
#define FAILED_COLS                                                                                \
    "id, sink, source, first_pos, last_pos, events, sha256, attempts, last_error, "                \
    "first_failed_at, archived_at, replays, last_replay_at, last_replay_result, resolved_at, "     \
    "resolved_by, resolved_reason"
    [S_FAILED_ADD] = "INSERT INTO event_failed (sink, source, first_pos, last_pos, events, body, "
                     "sha256, attempts, last_error, first_failed_at, archived_at) "
                     "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
    [S_FAILED_GET] = "SELECT " FAILED_COLS ", body FROM event_failed WHERE id = $1",
    [S_FAILED_LIST] = "SELECT " FAILED_COLS " FROM event_failed "
                      "WHERE $1::boolean OR resolved_at = 0 ORDER BY id DESC",
    [S_FAILED_REPLAYED] = "UPDATE event_failed SET replays = replays + 1, last_replay_at = $2, "
                          "last_replay_result = $3 WHERE id = $1",
    [S_FAILED_RESOLVE] = "UPDATE event_failed SET resolved_at = $2, resolved_by = $3, "
                         "resolved_reason = $4 WHERE id = $1 AND resolved_at = 0",
    [S_BACKUP_NOTE] = "INSERT INTO ops_backups (ended_at, bytes, node) VALUES ($1, $2, $3)",
    [S_BACKUP_LAST] = "SELECT ended_at, bytes FROM ops_backups ORDER BY ended_at DESC LIMIT 1",
    /* clock_timestamp(): the time now, not the transaction's start */
    [S_CLOCK] = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    /* Taken when free, expired or already the holder's; else nothing changes. */
    [S_LEASE_TAKE] = "INSERT INTO ops_leases (name, holder, expires_at) VALUES ($1, $2, $4) "
                     "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                     "expires_at = excluded.expires_at "
                     "WHERE ops_leases.holder = excluded.holder "
                     "OR ops_leases.expires_at <= $3::bigint",
};

struct conn {
    PGconn *pg;
    bool broken;        /* a call timed out: reconnect before the next */
    bool checks_client; /* client_connection_check_interval set (conn_check) */
    bool prepared[S__COUNT];
    /* sqlgen.c's statements prepared: one bit per link_list shape, then
     * per link_list_floor shape */
    uint64_t lists_prepared[(SQL_LIST_SHAPES + SQL_FLOOR_SHAPES + 63) / 64];
    bool in_tx; /* between begin and commit/rollback */
    /* days_compact's cursor: the last link day it took */
    char compact_code[CODE_MAX + 1];
    int64_t compact_day;
    struct conn *next;
};

struct pg_store {
    struct store base;
    char *url;
    pthread_key_t key;        /* this thread's struct conn */
    pthread_mutex_t mu;       /* guards 'conns' */
    struct conn *conns;       /* every thread's connection, closed by close() */
    pthread_mutex_t claim_mu; /* guards 'claim' */
    struct conn *claim;       /* claim_block's own connection, never in a transaction */
};

/* Parameters of one statement: text, except bytea, sent as binary. */
struct params {
    int n;
    const char *v[MAX_PARAMS];
    int len[MAX_PARAMS];
    int fmt[MAX_PARAMS];
    char num[MAX_PARAMS][24];
};

static void p_i64(struct params *p, int64_t x)
{
    snprintf(p->num[p->n], sizeof(p->num[p->n]), "%lld", (long long)x);
    p->v[p->n] = p->num[p->n];
    p->len[p->n] = 0;
    p->fmt[p->n++] = 0;
}

/* NULL is SQL NULL. */
static void p_text(struct params *p, const char *s)
{
    p->v[p->n] = s;
    p->len[p->n] = 0;
    p->fmt[p->n++] = 0;
}

static void p_bool(struct params *p, bool b) { p_text(p, b ? "t" : "f"); }

static void p_bytes(struct params *p, const void *b, size_t n)
{
    p->v[p->n] = n ? b : "";
    p->len[p->n] = (int)n;
    p->fmt[p->n++] = 1;
}

/* A value of store_move.h or sqlgen.h: NULL, an integer, text or bytes. */
static void p_value(struct params *p, const struct store_value *v)
{
    if (v->type == VAL_INT)
        p_i64(p, v->i);
    else if (v->type == VAL_BLOB)
        p_bytes(p, v->p, v->n);
    else
        p_text(p, v->type == VAL_TEXT ? v->p : NULL);
}

/* ---- connections ---- */

/* The server's notices and warnings go to the log, one line each. */
static void notice_log(void *arg, const PGresult *r)
{
    (void)arg;
    const char *msg = PQresultErrorMessage(r);
    log_at(LOG_WARN, "postgres says: %.*s", (int)strcspn(msg, "\n"), msg);
}

/* Connects with the URL as libpq's connection string; settings in the URL
 * override the defaults given here. NULL when it cannot connect. */
static PGconn *connect_url(const char *url)
{
    static const char *const keys[] = {"fallback_application_name",
                                       "client_encoding",
                                       "connect_timeout",
                                       "keepalives",
                                       "keepalives_idle",
                                       "keepalives_interval",
                                       "keepalives_count",
                                       "tcp_user_timeout",
                                       "dbname",
                                       NULL};
    const char *values[] = {"shortd", "UTF8", "3", "1", "5", "2", "2", "5000", url, NULL};
    PGconn *pg = PQconnectdbParams(keys, values, 1);
    if (!pg)
        abort();
    if (PQstatus(pg) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(pg);
        log_at(LOG_ERROR, "cannot connect to postgres: %.*s", (int)strcspn(msg, "\n"), msg);
        PQfinish(pg);
        return NULL;
    }
    PQsetNoticeReceiver(pg, notice_log, NULL);
    return pg;
}

static struct conn *conn_new(const char *url)
{
    PGconn *pg = connect_url(url);
    if (!pg)
        return NULL;
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->pg = pg;
    return c;
}

static void conn_free(struct conn *c)
{
    PQfinish(c->pg);
    free(c);
}

/* This thread's connection, opened on first use. NULL when it cannot open. */
static struct conn *conn_get(struct store *base)
{
    struct pg_store *s = (struct pg_store *)base;
    struct conn *c = pthread_getspecific(s->key);
    if (c)
        return c;
    c = conn_new(s->url);
    if (!c)
        return NULL;
    pthread_mutex_lock(&s->mu);
    c->next = s->conns;
    s->conns = c;
    pthread_mutex_unlock(&s->mu);
    pthread_setspecific(s->key, c);
    return c;
}

/* A broken connection is reopened, but never inside a transaction: the
 * statements after the break would run outside it. */
/* ---- bounded calls ----
 * libpq's synchronous calls wait for ever on a server that has stopped
 * answering (a frozen process still has the kernel acknowledge its TCP).
 * Every call of the serving path is therefore sent asynchronously and
 * waited for with poll() up to PG_CALL_MS; past it the connection is dropped
 * (it is reopened on the next call) and, for PG_PAUSE_MS, calls fail at once
 * instead of each waiting again: an uncached redirect answers 503 quickly. */
#define PG_CALL_MS 5000
#define PG_PAUSE_MS 1000

static _Atomic int64_t pg_paused_until; /* mono ms */

static PGresult *wait_result(struct conn *c, int sent, const char *what)
{
    if (!sent) {
        c->broken = true;
        return NULL;
    }
    int64_t deadline = mono_ms() + PG_CALL_MS;
    int64_t mine = store_deadline(); /* a store thread's job's bound */
    bool own = mine && mine < deadline;
    if (own)
        deadline = mine;
    PGresult *last = NULL;
    for (;;) {
        while (!PQisBusy(c->pg)) {
            PGresult *r = PQgetResult(c->pg);
            if (!r)
                return last;
            PQclear(last);
            last = r;
        }
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = {.fd = PQsocket(c->pg), .events = POLLIN};
        int n = poll(&pfd, 1, (int)left);
        if ((n < 0 && errno != EINTR) || (n > 0 && !PQconsumeInput(c->pg))) {
            /* The connection itself failed: reopened on the next call. */
            PQclear(last);
            c->broken = true;
            return NULL;
        }
    }
    PQclear(last);
    c->broken = true;
    if (own) {
        /* The job's own bound, shorter than the server's: a slow query, not
         * yet a server that stopped answering; the other threads go on. The
         * connection is closed now, not at its next use: the server, which
         * checks its clients every second (conn_check), then ends the
         * statement, where each retry would otherwise leave one more running.
         * Not PQcancel(): it waits for the server, which may be frozen. */
        (void)shutdown(PQsocket(c->pg), SHUT_RDWR);
        log_at(LOG_WARN, "postgres %s: past the request's deadline; the connection is dropped",
               what);
        return NULL;
    }
    atomic_store(&pg_paused_until, mono_ms() + PG_PAUSE_MS);
    log_at(LOG_ERROR, "postgres %s: no answer within %d ms; the connection is dropped", what,
           PG_CALL_MS);
    return NULL;
}

static PGresult *bx_exec(struct conn *c, const char *text)
{
    return wait_result(c, PQsendQuery(c->pg, text), "query");
}

static PGresult *bx_prepare(struct conn *c, const char *name, const char *text, int n,
                            const Oid *types)
{
    return wait_result(c, PQsendPrepare(c->pg, name, text, n, types), "prepare");
}

static PGresult *bx_exec_prepared(struct conn *c, const char *name, int n, const char *const *v,
                                  const int *len, const int *fmt, int result_fmt)
{
    return wait_result(c, PQsendQueryPrepared(c->pg, name, n, v, len, fmt, result_fmt),
                       "statement");
}

/* Reopens the connection: nothing of the old session is left (its prepared
 * statements, its settings). */
static bool conn_reset(struct conn *c)
{
    c->checks_client = false;
    PQreset(c->pg);
    memset(c->prepared, 0, sizeof(c->prepared));
    memset(c->lists_prepared, 0, sizeof(c->lists_prepared));
    return PQstatus(c->pg) == CONNECTION_OK;
}

static int conn_open(struct conn *c)
{
    if (atomic_load(&pg_paused_until) > mono_ms())
        return ERR_STORAGE;
    if (c->broken) {
        if (c->in_tx)
            return log_fail(ERR_STORAGE, "postgres connection lost inside a transaction");
        /* Drop the connection that timed out (its server may be frozen) and
         * open a new one; connect_timeout bounds this. */
        c->broken = false;
        if (!conn_reset(c)) {
            atomic_store(&pg_paused_until, mono_ms() + PG_PAUSE_MS);
            return log_fail(ERR_STORAGE, "cannot reconnect to postgres");
        }
        return ERR_OK;
    }
    if (PQstatus(c->pg) == CONNECTION_OK)
        return ERR_OK;
    if (c->in_tx)
        return log_fail(ERR_STORAGE, "postgres connection lost inside a transaction");
    if (!conn_reset(c)) {
        const char *msg = PQerrorMessage(c->pg);
        return log_fail(ERR_STORAGE, "cannot reconnect to postgres: %.*s", (int)strcspn(msg, "\n"),
                        msg);
    }
    log_at(LOG_INFO, "reconnected to postgres");
    return ERR_OK;
}

/* The connection open, and the server told to check every second, while
 * a statement runs, that the client is still there (PostgreSQL 14 and
 * later; an older server refuses the setting, and goes without): a
 * statement whose connection was dropped past its deadline then ends. */
static int conn_check(struct conn *c)
{
    int rc = conn_open(c);
    if (rc != ERR_OK || c->checks_client || c->in_tx)
        return rc;
    c->checks_client = true;
    PQclear(bx_exec(c, "SET client_connection_check_interval = 1000"));
    return c->broken ? ERR_STORAGE : ERR_OK;
}

/* ERR_EXISTS for a unique violation, else ERR_STORAGE logged once. Clears 'r'. */
static int result_fail(PGresult *r, PGconn *pg, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(pg);
    int rc;
    if (state && !strcmp(state, "23505"))
        rc = ERR_EXISTS;
    else
        rc = log_fail(ERR_STORAGE, "postgres %s failed: %.*s%s%s%s", what, (int)strcspn(msg, "\n"),
                      msg, state ? " (" : "", state ? state : "", state ? ")" : "");
    PQclear(r);
    return rc;
}

static int check_result(PGresult *r, PGconn *pg, const char *what, PGresult **out)
{
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return result_fail(r, pg, what);
    if (out)
        *out = r;
    else
        PQclear(r);
    return ERR_OK;
}

/* The statements whose results come in binary form: the rows of link days
 * that compacting reads, whose blobs would otherwise travel as hex text
 * (bench/HISTORY.md, "Binary arrays for PostgreSQL"). The val_ readers
 * below take either form. */
static const bool binary_results[S__COUNT] = {[S_PEND_TAKE] = true, [S_DAYS_LOCK] = true};

/* Runs a statement on 'c' as it is, preparing it first if needed. 'out' (may
 * be NULL) gets the result on success, for the caller to PQclear. */
static int exec_on(struct conn *c, enum stmt id, const struct params *p, const char *what,
                   PGresult **out)
{
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    char name[16];
    snprintf(name, sizeof(name), "s%d", (int)id);
    if (!c->prepared[id]) {
        PGresult *r = bx_prepare(c, name, sql[id], 0, NULL);
        rc = check_result(r, c->pg, "prepare", NULL);
        if (rc != ERR_OK)
            return rc == ERR_EXISTS ? ERR_STORAGE : rc;
        c->prepared[id] = true;
    }
    PGresult *r = bx_exec_prepared(c, name, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL,
                                   p ? p->fmt : NULL, binary_results[id]);
    return check_result(r, c->pg, what, out);
}

/* Runs a statement without parameters or result (transaction control). */
static int exec_simple(struct conn *c, const char *text, const char *what)
{
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    return check_result(bx_exec(c, text), c->pg, what, NULL);
}

/* Runs a statement on this thread's connection. */
static int run(struct store *st, enum stmt id, const struct params *p, const char *what,
               PGresult **out)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    return exec_on(c, id, p, what, out);
}

static int changed(PGresult *r) { return atoi(PQcmdTuples(r)); }

/* Runs a write; *n gets the number of rows it changed. */
static int run_count(struct store *st, enum stmt id, const struct params *p, const char *what,
                     int *n)
{
    PGresult *r = NULL;
    int rc = run(st, id, p, what, &r);
    *n = rc == ERR_OK ? changed(r) : 0;
    PQclear(r);
    return rc;
}

static int64_t val_i64(const PGresult *r, int row, int col)
{
    if (PQfformat(r, col) == 0)
        return strtoll(PQgetvalue(r, row, col), NULL, 10);
    /* int2, int4 or int8, big-endian */
    const unsigned char *x = (const unsigned char *)PQgetvalue(r, row, col);
    int n = PQgetlength(r, row, col);
    uint64_t u = n > 0 && x[0] & 0x80 ? UINT64_MAX : 0;
    for (int i = 0; i < n && i < 8; i++)
        u = u << 8 | x[i];
    return (int64_t)u;
}

static bool val_bool(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col)[0] == 't';
}

static char *val_dup(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return NULL;
    return slice_dup((struct slice){PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col)});
}

/* A bytea column (text format, hex, or binary) into 'out'. */
static int val_bytes(const PGresult *r, int row, int col, struct buf *out)
{
    if (PQfformat(r, col) == 1) {
        buf_reset(out);
        buf_add(out, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
        return ERR_OK;
    }
    size_t n = 0;
    unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n);
    if (!b)
        return log_fail(ERR_STORAGE, "postgres returned a damaged bytea value");
    buf_reset(out);
    buf_add(out, b, n);
    PQfreemem(b);
    return ERR_OK;
}

static void row_to_link(const PGresult *r, int row, struct link *l)
{
    memset(l, 0, sizeof(*l));
    size_t n = (size_t)PQgetlength(r, row, 0);
    if (n > CODE_MAX)
        n = CODE_MAX;
    memcpy(l->code, PQgetvalue(r, row, 0), n);
    l->code[n] = '\0';
    l->owner = val_i64(r, row, 1);
    l->url = val_dup(r, row, 2);
    l->title = val_dup(r, row, 3);
    l->note = val_dup(r, row, 4);
    l->tags = val_dup(r, row, 5);
    l->created_at = val_i64(r, row, 6);
    l->expires_at = val_i64(r, row, 7);
    l->changed_at = val_i64(r, row, 8);
    l->state = (int)val_i64(r, row, 9);
    l->permanent = val_bool(r, row, 10);
    l->clicks = val_i64(r, row, 11);
    l->bot_clicks = val_i64(r, row, 12);
    l->password = val_dup(r, row, 13);
    l->domain = val_dup(r, row, 14);
    l->variants = val_dup(r, row, 15);
    l->utm = val_dup(r, row, 16);
    l->dest = val_dup(r, row, 17);
    l->max_clicks = val_i64(r, row, 18);
    l->used = val_i64(r, row, 19);
    l->imported = val_i64(r, row, 20);
    l->untracked = !val_bool(r, row, 21);
}

/* ---- lifecycle ---- */

static int schema_version(struct conn *c, int *version)
{
    PGresult *r = NULL;
    *version = 0;
    int rc = exec_on(c, S_HAS_VERSION, NULL, "schema check", &r);
    if (rc != ERR_OK)
        return rc;
    bool has = PQntuples(r) == 1 && val_bool(r, 0, 0);
    PQclear(r);
    if (!has)
        return ERR_OK;
    rc = exec_on(c, S_VERSION, NULL, "schema version", &r);
    if (rc != ERR_OK)
        return rc;
    *version = PQntuples(r) == 1 ? (int)val_i64(r, 0, 0) : 0;
    PQclear(r);
    return ERR_OK;
}

static void pg_close(struct store *st);

static int pg_open(const char *url, struct store **out)
{
    struct pg_store *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->base.ops = &store_pg_ops;
    s->url = xstrdup(url);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->claim_mu, NULL);
    pthread_key_create(&s->key, NULL);
    struct conn *c = conn_get(&s->base);
    int version = 0;
    int rc = c ? schema_version(c, &version) : ERR_STORAGE;
    if (rc == ERR_OK && version != SCHEMA_VERSION) {
        if (version < SCHEMA_VERSION)
            log_at(LOG_ERROR,
                   "database schema %d is not the one this shortd knows (%d): "
                   "run shortd migrate",
                   version, SCHEMA_VERSION);
        else
            log_at(LOG_ERROR,
                   "database schema %d is not the one this shortd knows (%d): "
                   "it is newer; run a newer shortd",
                   version, SCHEMA_VERSION);
        rc = ERR_STORAGE;
    }
    if (rc != ERR_OK) {
        pg_close(&s->base);
        return ERR_STORAGE;
    }
    *out = &s->base;
    return ERR_OK;
}

/* Only after every thread that used the store has stopped using it. */
static void pg_close(struct store *st)
{
    struct pg_store *s = (struct pg_store *)st;
    if (!s)
        return;
    struct conn *c = s->conns;
    while (c) {
        struct conn *next = c->next;
        conn_free(c);
        c = next;
    }
    if (s->claim)
        conn_free(s->claim);
    pthread_key_delete(s->key);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->claim_mu);
    free(s->url);
    free(s);
}

static int pg_ping(struct store *st) { return run(st, S_PING, NULL, "ping", NULL); }

static int pg_backup(struct store *st, const char *to_path)
{
    (void)st;
    return log_fail(ERR_INVALID,
                    "cannot back up to '%s': a postgres store is backed up with "
                    "pg_dump or pg_basebackup",
                    to_path);
}

/* ---- migrations ---- */

/* One step of migrations_run: its SQL, then its row in schema_version. */
static int apply_step(const struct migration *m, void *arg)
{
    struct conn *c = arg;
    log_at(LOG_INFO, "applying migration '%s'", m->name);
    int rc = check_result(PQexec(c->pg, m->sql), c->pg, m->name, NULL);
    if (rc != ERR_OK)
        return rc;
    const char *values[2];
    char num[16];
    snprintf(num, sizeof(num), "%d", m->version);
    values[0] = num;
    values[1] = m->name;
    return check_result(PQexecParams(c->pg,
                                     "INSERT INTO schema_version (version, name) "
                                     "VALUES ($1, $2)",
                                     2, NULL, values, NULL, NULL, 0),
                        c->pg, "schema version update", NULL);
}

int store_pg_migrate(const char *url, int *from, int *to)
{
    *from = *to = 0;
    struct conn *c = conn_new(url);
    if (!c)
        return ERR_STORAGE;
    int rc = exec_simple(c, "BEGIN", "begin");
    if (rc == ERR_OK) {
        c->in_tx = true;
        /* Held until the transaction ends: a second migrator waits here,
         * then finds the work done. */
        rc = exec_simple(c, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", "migration lock");
    }
    int version = 0;
    if (rc == ERR_OK)
        rc = schema_version(c, &version);
    *from = *to = version;
    if (rc == ERR_OK && version > SCHEMA_VERSION)
        rc = log_fail(ERR_STORAGE, "database schema %d is newer than this shortd knows (%d)",
                      version, SCHEMA_VERSION);
    if (rc == ERR_OK)
        rc = migrations_run(steps, NSTEPS, version, apply_step, c, to);
    if (rc == ERR_OK) {
        PGresult *r = PQexec(c->pg, "COMMIT");
        rc = check_result(r, c->pg, "commit", &r);
        if (rc == ERR_OK && strcmp(PQcmdStatus(r), "COMMIT") != 0)
            rc = log_fail(ERR_STORAGE, "the migration was rolled back");
        if (rc == ERR_OK)
            PQclear(r);
    }
    if (rc != ERR_OK) {
        PQclear(PQexec(c->pg, "ROLLBACK"));
        *to = *from;
        rc = rc == ERR_EXISTS ? ERR_STORAGE : rc;
    }
    conn_free(c);
    return rc;
}

/* ---- transactions ---- */

static int pg_begin(struct store *st)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    if (c->in_tx)
        return log_fail(ERR_STORAGE, "postgres begin inside a transaction");
    int rc = exec_simple(c, "BEGIN", "begin");
    if (rc == ERR_OK)
        c->in_tx = true;
    return rc;
}

/* PostgreSQL answers COMMIT of a failed transaction with a rollback, not an
 * error: that is an error here. */
static int pg_commit(struct store *st)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    if (!c->in_tx)
        return log_fail(ERR_STORAGE, "postgres commit without a transaction");
    int rc = conn_check(c);
    PGresult *r = rc == ERR_OK ? bx_exec(c, "COMMIT") : NULL;
    if (rc == ERR_OK)
        rc = check_result(r, c->pg, "commit", &r);
    if (rc == ERR_OK) {
        if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
            rc = log_fail(ERR_STORAGE, "postgres rolled back the transaction: a statement "
                                       "in it failed");
        PQclear(r);
    }
    if (rc == ERR_EXISTS)
        rc = ERR_STORAGE;
    if (rc != ERR_OK && !c->broken && PQstatus(c->pg) == CONNECTION_OK &&
        PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        PQclear(bx_exec(c, "ROLLBACK"));
    c->in_tx = false;
    return rc;
}

static void pg_rollback(struct store *st)
{
    struct conn *c = conn_get(st);
    if (!c)
        return;
    if (!c->broken && PQstatus(c->pg) == CONNECTION_OK &&
        PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        PQclear(bx_exec(c, "ROLLBACK"));
    c->in_tx = false;
}

static int pg_savepoint(struct store *st)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    return exec_simple(c, "SAVEPOINT unit", "savepoint");
}

static void pg_savepoint_end(struct store *st, bool keep)
{
    struct conn *c = conn_get(st);
    if (!c)
        return;
    if (!keep)
        exec_simple(c, "ROLLBACK TO unit", "rollback to savepoint");
    exec_simple(c, "RELEASE unit", "release savepoint");
}

/* ---- meta ---- */

static int pg_meta_get(struct store *st, const char *key, struct buf *val)
{
    struct params p = {0};
    p_text(&p, key);
    PGresult *r = NULL;
    int rc = run(st, S_META_GET, &p, "meta get", &r);
    if (rc != ERR_OK)
        return rc;
    rc = PQntuples(r) ? val_bytes(r, 0, 0, val) : ERR_NOTFOUND;
    PQclear(r);
    return rc;
}

static int pg_meta_put(struct store *st, const char *key, const void *val, size_t n)
{
    struct params p = {0};
    p_text(&p, key);
    p_bytes(&p, val, n);
    return run(st, S_META_PUT, &p, "meta put", NULL);
}

static int pg_meta_del(struct store *st, const char *key)
{
    struct params p = {0};
    p_text(&p, key);
    return run(st, S_META_DEL, &p, "meta delete", NULL);
}

static int pg_claim_block(struct store *st, uint64_t size, uint64_t *start)
{
    struct pg_store *s = (struct pg_store *)st;
    struct params p = {0};
    p_i64(&p, (int64_t)size);
    PGresult *r = NULL;
    int rc = ERR_STORAGE;
    pthread_mutex_lock(&s->claim_mu);
    if (!s->claim)
        s->claim = conn_new(s->url);
    if (s->claim)
        rc = exec_on(s->claim, S_CLAIM, &p, "claim block", &r);
    pthread_mutex_unlock(&s->claim_mu);
    if (rc != ERR_OK)
        return rc == ERR_EXISTS ? ERR_STORAGE : rc;
    if (PQntuples(r) == 1)
        *start = (uint64_t)val_i64(r, 0, 0);
    else
        rc = log_fail(ERR_STORAGE, "the code counter is missing from the database");
    PQclear(r);
    return rc;
}

/* ---- links ---- */

static int one_link(struct store *st, enum stmt id, const struct params *p, const char *what,
                    struct link *out)
{
    PGresult *r = NULL;
    int rc = run(st, id, p, what, &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_NOTFOUND;
    else
        row_to_link(r, 0, out);
    PQclear(r);
    return rc;
}

static int pg_link_get(struct store *st, const char *code, struct link *out)
{
    struct params p = {0};
    p_text(&p, code);
    return one_link(st, S_LINK_GET, &p, "link get", out);
}

static int pg_link_insert(struct store *st, const struct link *l)
{
    struct params p = {0};
    p_text(&p, l->code);
    p_i64(&p, l->owner);
    p_text(&p, l->url);
    p_text(&p, l->title);
    p_text(&p, l->note);
    p_text(&p, l->tags);
    p_i64(&p, l->created_at);
    p_i64(&p, l->expires_at);
    p_i64(&p, l->changed_at);
    p_i64(&p, l->state);
    p_bool(&p, l->permanent);
    p_i64(&p, l->clicks);
    p_i64(&p, l->bot_clicks);
    p_text(&p, l->password);
    p_text(&p, l->domain);
    p_text(&p, l->variants);
    p_text(&p, l->utm);
    p_text(&p, l->dest);
    p_i64(&p, l->max_clicks);
    p_i64(&p, l->used);
    p_bool(&p, !l->untracked);
    int n = 0;
    int rc = run_count(st, S_LINK_INSERT, &p, "link insert", &n);
    if (rc == ERR_OK && n == 0)
        return ERR_EXISTS;
    if (rc != ERR_OK)
        return rc;
    return events_link(st, EVT_LINK_CREATED, l->code, l->created_at);
}

static int pg_link_update(struct store *st, const struct link *l)
{
    struct params p = {0};
    p_text(&p, l->code);
    p_text(&p, l->url);
    p_text(&p, l->title);
    p_text(&p, l->note);
    p_text(&p, l->tags);
    p_i64(&p, l->expires_at);
    p_i64(&p, l->changed_at);
    p_text(&p, l->password);
    p_text(&p, l->variants);
    p_text(&p, l->utm);
    p_text(&p, l->dest);
    p_bool(&p, !l->untracked);
    int n = 0;
    int rc = run_count(st, S_LINK_UPDATE, &p, "link update", &n);
    if (rc == ERR_OK && n == 0)
        return ERR_NOTFOUND;
    if (rc != ERR_OK)
        return rc;
    return events_link(st, EVT_LINK_UPDATED, l->code, l->changed_at);
}

static int pg_link_reserve(struct store *st, const char *code, int64_t *used)
{
    struct params p = {0};
    p_text(&p, code);
    PGresult *r = NULL;
    int rc = run(st, S_LINK_RESERVE, &p, "link reserve", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_TOOBIG;
    else
        *used = val_i64(r, 0, 0);
    PQclear(r);
    if (rc != ERR_OK)
        return rc;
    return events_link_reserved(st, code, *used, now_ms());
}

static int pg_history_add(struct store *st, const char *code, const char *old_url,
                          const char *new_url, int64_t at, int64_t by_key)
{
    struct params p = {0};
    p_text(&p, code);
    p_text(&p, old_url);
    p_text(&p, new_url);
    p_i64(&p, at);
    p_i64(&p, by_key);
    int n = 0;
    return run_count(st, S_HISTORY_ADD, &p, "history add", &n);
}

static int pg_history_list(struct store *st, const char *code, int limit, change_cb cb, void *arg)
{
    struct params p = {0};
    p_text(&p, code);
    p_i64(&p, limit);
    PGresult *r = NULL;
    int rc = run(st, S_HISTORY_LIST, &p, "history list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct link_change c = {
            .seq = val_i64(r, i, 0),
            .old_url = PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1),
            .new_url = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2),
            .changed_at = val_i64(r, i, 3),
            .by_key = val_i64(r, i, 4),
        };
        if (cb(&c, arg))
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_domain_add(struct store *st, const char *host, int64_t owner, int64_t now)
{
    struct params p = {0};
    p_text(&p, host);
    p_i64(&p, owner);
    p_i64(&p, now);
    int n = 0;
    int rc = run_count(st, S_DOMAIN_ADD, &p, "domain add", &n);
    return rc == ERR_OK && n == 0 ? ERR_EXISTS : rc;
}

static int pg_domain_get(struct store *st, const char *host, int64_t *owner)
{
    struct params p = {0};
    p_text(&p, host);
    PGresult *r = NULL;
    int rc = run(st, S_DOMAIN_GET, &p, "domain get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_NOTFOUND;
    else
        *owner = val_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int pg_domain_del(struct store *st, const char *host, int64_t owner)
{
    struct params p = {0};
    p_text(&p, host);
    p_i64(&p, owner);
    int n = 0;
    int rc = run_count(st, S_DOMAIN_DEL, &p, "domain delete", &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

static int pg_domain_list(struct store *st, int64_t owner, domain_cb cb, void *arg)
{
    struct params p = {0};
    p_i64(&p, owner);
    PGresult *r = NULL;
    int rc = run(st, S_DOMAIN_LIST, &p, "domain list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++)
        if (cb(PQgetvalue(r, i, 0), val_i64(r, i, 1), val_i64(r, i, 2), arg))
            break;
    PQclear(r);
    return ERR_OK;
}

static int pg_domain_redirects_set(struct store *st, const char *host, int64_t owner,
                                   const struct domain_redirects *d)
{
    struct params p = {0};
    p_text(&p, host);
    p_i64(&p, owner);
    p_text(&p, d->base_url);
    p_text(&p, d->regular_404);
    p_text(&p, d->invalid);
    int n = 0;
    int rc = run_count(st, S_DOMAIN_REDIRECTS_SET, &p, "domain redirects set", &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

static int pg_domain_redirects_list(struct store *st, int64_t owner, redirects_cb cb, void *arg)
{
    struct params p = {0};
    p_i64(&p, owner);
    PGresult *r = NULL;
    int rc = run(st, S_DOMAIN_REDIRECTS_LIST, &p, "domain redirects list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct domain_redirects d = {
            .base_url = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2),
            .regular_404 = PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3),
            .invalid = PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4),
        };
        if (cb(PQgetvalue(r, i, 0), val_i64(r, i, 1), &d, arg))
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_link_find_live(struct store *st, int64_t owner, const char *url, int64_t now,
                             struct link *out)
{
    struct params p = {0};
    p_i64(&p, owner);
    p_text(&p, url);
    p_i64(&p, now);
    return one_link(st, S_LINK_FIND_LIVE, &p, "link find", out);
}

static int pg_link_set_state(struct store *st, const char *code, int state, int64_t now)
{
    struct params p = {0};
    p_text(&p, code);
    if (state != LINK_DELETED)
        p_i64(&p, state);
    p_i64(&p, now);
    int n = 0;
    int rc = run_count(st, state == LINK_DELETED ? S_LINK_DELETE : S_LINK_SET_STATE, &p,
                       "link state", &n);
    if (rc == ERR_OK && n == 0)
        return ERR_NOTFOUND;
    if (rc != ERR_OK)
        return rc;
    /* Enabled again: an update. */
    return events_link(st,
                       state == LINK_DELETED    ? EVT_LINK_DELETED
                       : state == LINK_DISABLED ? EVT_LINK_DISABLED
                                                : EVT_LINK_UPDATED,
                       code, now);
}

static int pg_link_imported(struct store *st, const char *code, int64_t clicks, int64_t bots)
{
    struct params p = {0};
    p_text(&p, code);
    p_i64(&p, clicks);
    p_i64(&p, bots);
    int n = 0;
    int rc = run_count(st, S_LINK_IMPORTED, &p, "link imported", &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

/* Parameters of a statement made by sqlgen.c. */
static void stmt_params(const struct sql_stmt *s, struct params *p)
{
    for (int i = 0; i < s->nparams; i++)
        p_value(p, &s->param[i]);
}

/* A statement from sqlgen.c, prepared once per connection as 'name' (bit
 * 'bit' of lists_prepared), then run: ERR_OK with its result in *out. */
static int run_generated(struct conn *c, const char *name, unsigned bit, struct sql_stmt *s,
                         const char *what, PGresult **out)
{
    int rc;
    if (!(c->lists_prepared[bit / 64] & (1ull << (bit % 64)))) {
        Oid types[SQL_PARAMS_MAX];
        for (int i = 0; i < s->nparams; i++)
            types[i] = s->param[i].type == VAL_INT ? 20 : 25; /* int8, text */
        rc = check_result(bx_prepare(c, name, s->text.p, s->nparams, types), c->pg, what, NULL);
        if (rc != ERR_OK)
            return ERR_STORAGE;
        c->lists_prepared[bit / 64] |= 1ull << (bit % 64);
    }
    struct params p = {0};
    stmt_params(s, &p);
    rc = check_result(bx_exec_prepared(c, name, p.n, p.v, p.len, p.fmt, 0), c->pg, what, out);
    return rc == ERR_EXISTS ? ERR_STORAGE : rc;
}

/* The query comes from sqlgen.c; each of its shapes is prepared once per
 * connection, named by its number. */
static int pg_link_list(struct store *st, const struct link_query *lq, link_cb cb, void *arg)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    unsigned shape = sqlgen_list_shape(lq);
    char name[16];
    snprintf(name, sizeof(name), "list%u", shape);
    struct sql_stmt s;
    sql_stmt_init(&s);
    sqlgen_list(&s, &sql_pg, lq);
    PGresult *r = NULL;
    rc = run_generated(c, name, shape, &s, "link list", &r);
    sql_stmt_release(&s);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct link l;
        row_to_link(r, i, &l);
        int stop = cb(&l, arg);
        link_release(&l);
        if (stop)
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_link_list_floor(struct store *st, const struct link_query *lq, int rows,
                              int64_t *created, char code[CODE_MAX + 1])
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    unsigned shape = sqlgen_floor_shape(lq);
    char name[16];
    snprintf(name, sizeof(name), "floor%u", shape);
    struct sql_stmt s;
    sql_stmt_init(&s);
    sqlgen_list_floor(&s, &sql_pg, lq, rows);
    PGresult *r = NULL;
    rc = run_generated(c, name, SQL_LIST_SHAPES + shape, &s, "link list floor", &r);
    sql_stmt_release(&s);
    if (rc != ERR_OK)
        return rc;
    rc = ERR_NOTFOUND;
    if (PQntuples(r) == 1 && (size_t)PQgetlength(r, 0, 1) <= CODE_MAX) {
        *created = val_i64(r, 0, 0);
        memcpy(code, PQgetvalue(r, 0, 1), (size_t)PQgetlength(r, 0, 1) + 1);
        rc = ERR_OK;
    }
    PQclear(r);
    return rc;
}

static int count(struct store *st, enum stmt id, int64_t *n)
{
    PGresult *r = NULL;
    int rc = run(st, id, NULL, "count", &r);
    if (rc != ERR_OK)
        return rc;
    *n = val_i64(r, 0, 0);
    PQclear(r);
    return ERR_OK;
}

static int pg_link_count(struct store *st, int64_t *n) { return count(st, S_LINK_COUNT, n); }

static int pg_link_sweep(struct store *st, int64_t before, int limit, int *swept)
{
    struct params p = {0};
    p_i64(&p, before);
    p_i64(&p, limit);
    return run_count(st, S_LINK_SWEEP, &p, "link sweep", swept);
}

/* ---- click analytics ---- */

/* Array parameters of one chunk of link days: codes, days, then (for the
 * write) the merged counts and blobs, in PostgreSQL's binary array form
 * (array_recv), so that the server copies each element instead of parsing
 * a text literal and decoding every bytea from hex (bench/HISTORY.md,
 * "Binary arrays for PostgreSQL"). libpq writes no arrays; the form is
 * five 4-byte words (dimensions, has-nulls, element type, length, lower
 * bound), then each element's length (-1 for NULL) and bytes, big-endian. */
enum { OID_BYTEA = 17, OID_INT8 = 20, OID_TEXT = 25 };

static const uint32_t day_array_types[8] = {OID_TEXT, OID_INT8,  OID_INT8,  OID_INT8,
                                            OID_INT8, OID_BYTEA, OID_BYTEA, OID_BYTEA};

struct day_arrays {
    struct buf col[8];
    uint32_t count; /* elements in each column */
    bool nulls[8];
};

static void be32(unsigned char *x, uint32_t v)
{
    x[0] = (unsigned char)(v >> 24);
    x[1] = (unsigned char)(v >> 16);
    x[2] = (unsigned char)(v >> 8);
    x[3] = (unsigned char)v;
}

static void put_u32(struct buf *b, uint32_t v)
{
    unsigned char x[4];
    be32(x, v);
    buf_add(b, x, sizeof(x));
}

static void arrays_open(struct day_arrays *a, int ncols)
{
    a->count = 0;
    for (int i = 0; i < ncols; i++) {
        buf_reset(&a->col[i]);
        a->nulls[i] = false;
        put_u32(&a->col[i], 1); /* dimensions */
        put_u32(&a->col[i], 0); /* has nulls: set by arrays_close */
        put_u32(&a->col[i], day_array_types[i]);
        put_u32(&a->col[i], 0); /* length: set by arrays_close */
        put_u32(&a->col[i], 1); /* lower bound */
    }
}

static void array_put(struct day_arrays *a, int col, const void *p, size_t n)
{
    if (!p) {
        put_u32(&a->col[col], UINT32_MAX);
        a->nulls[col] = true;
        return;
    }
    put_u32(&a->col[col], (uint32_t)n);
    buf_add(&a->col[col], p, n);
}

static void array_put_i64(struct day_arrays *a, int col, int64_t v)
{
    uint64_t u = (uint64_t)v;
    put_u32(&a->col[col], 8);
    put_u32(&a->col[col], (uint32_t)(u >> 32));
    put_u32(&a->col[col], (uint32_t)u);
}

/* Sets the header words that were not known when the arrays opened. */
static void arrays_close(struct day_arrays *a, int ncols)
{
    for (int i = 0; i < ncols; i++) {
        be32((unsigned char *)a->col[i].p + 4, a->nulls[i]);
        be32((unsigned char *)a->col[i].p + 12, a->count);
    }
}

/* One element of an array literal: NULL, a number, or a quoted string (a
 * bytea in hex, its backslash escaped for the array parser). */
static void array_elem(struct buf *o, const struct store_value *v)
{
    static const char hex[] = "0123456789abcdef";
    if (v->type == VAL_NULL) {
        buf_adds(o, "NULL");
        return;
    }
    if (v->type == VAL_INT) {
        buf_add_i64(o, v->i);
        return;
    }
    buf_addc(o, '"');
    if (v->type == VAL_BLOB) {
        buf_adds(o, "\\\\x");
        for (size_t i = 0; i < v->n; i++) {
            buf_addc(o, hex[(unsigned char)v->p[i] >> 4]);
            buf_addc(o, hex[(unsigned char)v->p[i] & 15]);
        }
    } else {
        for (size_t i = 0; i < v->n; i++) {
            if (v->p[i] == '"' || v->p[i] == '\\')
                buf_addc(o, '\\');
            buf_addc(o, v->p[i]);
        }
    }
    buf_addc(o, '"');
}

/* (code, day) against row 'row' of a result whose first two columns are those. */
static int key_cmp(const char *code, int64_t day, const PGresult *r, int row)
{
    int c = strcmp(code, PQgetvalue(r, row, 0));
    if (c)
        return c;
    int64_t x = val_i64(r, row, 1);
    return (day > x) - (day < x);
}

/* Rows of a result whose first two columns are code and day, to sort. */
struct taken {
    const PGresult *r;
    int row;
};

static int taken_cmp(const void *a, const void *b)
{
    const struct taken *x = a, *y = b;
    return key_cmp(PQgetvalue(x->r, x->row, 0), val_i64(x->r, x->row, 1), y->r, y->row);
}

/* A row of the eight arrays of whole day rows (S_DAYS_NEW, S_DAYS_PUT,
 * S_PEND_ADD): code, day, counts and blobs. */
static void arrays_row(struct day_arrays *w, const char *code, int64_t day,
                       const struct day_blobs *b)
{
    array_put(w, 0, code, strlen(code));
    array_put_i64(w, 1, day);
    array_put_i64(w, 2, b->clicks);
    array_put_i64(w, 3, b->bots);
    array_put_i64(w, 4, b->uniques);
    array_put(w, 5, b->dims, b->ndims);
    array_put(w, 6, b->visitors, b->nvisitors);
    array_put(w, 7, b->recent, b->nrecent);
    w->count++;
}

/* Closes the arrays and runs statement 'id' with them (after 'first', when
 * given, as $1). */
static int arrays_run(struct conn *c, enum stmt id, struct day_arrays *w, const char *first,
                      const char *what, PGresult **out)
{
    struct params p = {0};
    if (first)
        p_text(&p, first);
    arrays_close(w, 8);
    for (int i = 0; i < 8; i++)
        p_bytes(&p, w->col[i].p, w->col[i].len);
    return exec_on(c, id, &p, what, out);
}

/* Merges d[0..n) (sorted by code, day) into their day rows: the rows there
 * are locked in key order (S_DAYS_LOCK), merged in C and written back with
 * one UPDATE; the missing ones are inserted whole. One another node
 * inserted meanwhile is merged in a second round ('depth'). */
static int days_chunk(struct conn *c, const struct day_delta *d, size_t n, struct day_arrays *a,
                      struct buf bufs[3], struct buf raw[3], int depth)
{
    arrays_open(a, 2);
    for (size_t i = 0; i < n; i++) {
        array_put(a, 0, d[i].code, strlen(d[i].code));
        array_put_i64(a, 1, d[i].day);
        a->count++;
    }
    arrays_close(a, 2);
    struct params k = {0};
    p_bytes(&k, a->col[0].p, a->col[0].len);
    p_bytes(&k, a->col[1].p, a->col[1].len);
    PGresult *r = NULL;
    int rc = exec_on(c, S_DAYS_LOCK, &k, "day lock", &r);
    if (rc != ERR_OK)
        return rc == ERR_EXISTS ? ERR_STORAGE : rc;
    /* Both in (code, day) order: walked together */
    struct day_arrays w, fresh;
    memset(&w, 0, sizeof(w));
    memset(&fresh, 0, sizeof(fresh));
    arrays_open(&w, 8);
    arrays_open(&fresh, 8);
    size_t *fresh_at = calloc(n, sizeof(*fresh_at)); /* which deltas are missing */
    if (!fresh_at)
        abort();
    int row = 0, rows = PQntuples(r);
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        struct day_blobs m;
        if (row >= rows || key_cmp(d[i].code, d[i].day, r, row) != 0) {
            dayrow_encode(d[i].row, &bufs[0], &bufs[1], &bufs[2], &m);
            fresh_at[fresh.count] = i;
            arrays_row(&fresh, d[i].code, d[i].day, &m);
            continue;
        }
        struct day_blobs old = {
            val_i64(r, row, 2), val_i64(r, row, 3), val_i64(r, row, 4), NULL, NULL, NULL, 0, 0, 0};
        const void **ptr[3] = {&old.dims, &old.visitors, &old.recent};
        size_t *len[3] = {&old.ndims, &old.nvisitors, &old.nrecent};
        for (int k2 = 0; k2 < 3 && rc == ERR_OK; k2++) {
            if (PQgetisnull(r, row, 5 + k2))
                continue;
            rc = val_bytes(r, row, 5 + k2, &raw[k2]);
            *ptr[k2] = raw[k2].p ? raw[k2].p : "";
            *len[k2] = raw[k2].len;
        }
        row++;
        if (rc == ERR_OK &&
            dayrow_merge(&old, d[i].row, &bufs[0], &bufs[1], &bufs[2], &m) != ERR_OK)
            rc = log_fail(ERR_STORAGE, "the stored clicks of '%s' on day %lld are damaged",
                          d[i].code, (long long)d[i].day);
        if (rc == ERR_OK)
            arrays_row(&w, d[i].code, d[i].day, &m);
    }
    if (rc == ERR_OK && row != rows)
        rc = log_fail(ERR_STORAGE, "postgres: %d day rows locked, %d of them asked for", rows, row);
    PQclear(r);
    if (rc == ERR_OK && w.count)
        rc = arrays_run(c, S_DAYS_PUT, &w, NULL, "day write", NULL);
    /* The missing ones, inserted whole; one another node inserted first is
     * not returned, and is merged in a second round. */
    struct day_delta *late = NULL;
    size_t nlate = 0;
    if (rc == ERR_OK && fresh.count) {
        PGresult *ins = NULL;
        rc = arrays_run(c, S_DAYS_NEW, &fresh, NULL, "day insert", &ins);
        int got = rc == ERR_OK ? PQntuples(ins) : 0;
        if (rc == ERR_OK && (size_t)got < fresh.count) {
            struct taken *t = calloc((size_t)got + 1, sizeof(*t));
            late = calloc(fresh.count - (size_t)got, sizeof(*late));
            if (!t || !late)
                abort();
            for (int i = 0; i < got; i++)
                t[i] = (struct taken){ins, i};
            qsort(t, (size_t)got, sizeof(*t), taken_cmp);
            int at = 0;
            for (size_t f = 0; f < fresh.count; f++) {
                const struct day_delta *x = &d[fresh_at[f]];
                if (at < got && key_cmp(x->code, x->day, ins, t[at].row) == 0)
                    at++;
                else
                    late[nlate++] = *x;
            }
            free(t);
        }
        PQclear(ins);
    }
    for (int i = 0; i < 8; i++) {
        buf_release(&w.col[i]);
        buf_release(&fresh.col[i]);
    }
    free(fresh_at);
    if (rc == ERR_OK && nlate)
        rc = depth < 2 ? days_chunk(c, late, nlate, a, bufs, raw, depth + 1)
                       : log_fail(ERR_STORAGE, "postgres: %zu day rows neither there nor inserted",
                                  nlate);
    free(late);
    return rc == ERR_EXISTS ? ERR_STORAGE : rc;
}

static int pg_agg_days(struct store *st, const struct day_delta *d, size_t n)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    struct day_arrays a;
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT}, raw[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    memset(&a, 0, sizeof(a));
    int rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i += DAY_CHUNK)
        rc = days_chunk(c, d + i, n - i < DAY_CHUNK ? n - i : DAY_CHUNK, &a, bufs, raw, 0);
    for (int i = 0; i < 8; i++)
        buf_release(&a.col[i]);
    for (int i = 0; i < 3; i++) {
        buf_release(&bufs[i]);
        buf_release(&raw[i]);
    }
    return rc;
}

static int pg_prune_days(struct store *st, int64_t before_day, int limit, int *pruned)
{
    struct params p = {0};
    p_i64(&p, before_day);
    p_i64(&p, limit);
    PGresult *r = NULL;
    *pruned = 0;
    int rc = run(st, S_PRUNE_DAYS, &p, "prune", &r);
    if (rc == ERR_OK)
        *pruned = (int)val_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int pg_prune_visitors(struct store *st, int64_t before_day)
{
    struct params p = {0};
    p_i64(&p, before_day);
    return run(st, S_PRUNE_VISITORS, &p, "prune visitors", NULL);
}

/* A read of days (S_STATS_DAYS, S_STATS_ALL_DAYS: kind, code, day, clicks,
 * uniques, bots, visitors, in (code, day, kind) order; the kinds are
 * named above them) to 'cb' in day order: the stored figures, and what
 * each appended link day adds to them, as a merged row would count it
 * (its clicks, and the visitors its stored row has not seen). */
static int days_read(struct store *st, enum stmt id, const struct params *p, const char *whose,
                     day_cb cb, void *arg)
{
    PGresult *r = NULL;
    int rc = run(st, id, p, "stats", &r);
    if (rc != ERR_OK)
        return rc;
    struct day_sums sums = {0};
    struct buf raw = BUF_INIT;
    struct dayrow acc;
    dayrow_init(&acc);
    int64_t before = 0; /* the stored row's unique count of the link day in 'acc' */
    bool bad = false;
    int n = PQntuples(r);
    for (int i = 0; i < n && rc == ERR_OK; i++) {
        int64_t kind = val_i64(r, i, 0), day = val_i64(r, i, 2);
        struct day_blobs b = {.clicks = val_i64(r, i, 3),
                              .bots = val_i64(r, i, 5),
                              .uniques = val_i64(r, i, 4)};
        if (kind == 0) {
            struct day_sum *d = store_day_sum(&sums, day);
            d->clicks += b.clicks;
            d->uniques += b.uniques;
            d->bots += b.bots;
            continue;
        }
        if (!PQgetisnull(r, i, 6)) {
            rc = val_bytes(r, i, 6, &raw);
            b.visitors = raw.p ? raw.p : "";
            b.nvisitors = raw.len;
        }
        if (kind == 1)
            before = b.uniques;
        if (rc == ERR_OK && dayrow_add_blobs(&acc, &b) != ERR_OK)
            bad = true;
        /* The link day ends where the next row is of another (or kind 0) */
        if (i + 1 == n || val_i64(r, i + 1, 0) == 0 || val_i64(r, i + 1, 2) != day ||
            strcmp(PQgetvalue(r, i + 1, 1), PQgetvalue(r, i, 1)) != 0) {
            struct day_sum *d = store_day_sum(&sums, day);
            d->clicks += acc.clicks;
            d->bots += acc.bots;
            d->uniques += dayrow_uniques(&acc) - before;
            dayrow_release(&acc);
            dayrow_init(&acc);
            before = 0;
        }
    }
    if (bad)
        log_at(LOG_WARN, "some appended clicks of %s are damaged and were skipped", whose);
    if (rc == ERR_OK)
        store_day_sums_each(&sums, cb, arg);
    dayrow_release(&acc);
    buf_release(&raw);
    free(sums.v);
    PQclear(r);
    return rc;
}

static int pg_stats_days(struct store *st, const char *code, int64_t from, int64_t to, day_cb cb,
                         void *arg)
{
    struct params p = {0};
    p_text(&p, code);
    p_i64(&p, from);
    p_i64(&p, to);
    return days_read(st, S_STATS_DAYS, &p, code, cb, arg);
}

/* Folds the blob column of every row of a stats query into 'acc'. */
static int stats_blobs(struct store *st, enum stmt id, const struct params *p, bool dims,
                       const char *code, struct dayrow *acc)
{
    PGresult *r = NULL;
    dayrow_init(acc);
    int rc = run(st, id, p, "stats", &r);
    if (rc != ERR_OK)
        return rc;
    struct buf raw = BUF_INIT;
    bool bad = false;
    for (int i = 0; i < PQntuples(r) && rc == ERR_OK; i++) {
        rc = val_bytes(r, i, 0, &raw);
        struct day_blobs b = {0};
        if (dims) {
            b.dims = raw.p;
            b.ndims = raw.len;
        } else {
            b.recent = raw.p;
            b.nrecent = raw.len;
        }
        if (rc == ERR_OK && dayrow_add_blobs(acc, &b) != ERR_OK)
            bad = true;
    }
    if (bad)
        log_at(LOG_WARN, "some stored clicks of '%s' are damaged and were skipped", code);
    buf_release(&raw);
    PQclear(r);
    return rc;
}

static int pg_stats_dims(struct store *st, const char *code, int64_t from, int64_t to, dim_cb cb,
                         void *arg)
{
    struct params p = {0};
    p_text(&p, code);
    p_i64(&p, from);
    p_i64(&p, to);
    struct dayrow acc;
    int rc = stats_blobs(st, S_STATS_DIMS, &p, true, code, &acc);
    if (rc == ERR_OK)
        dayrow_each_tally(&acc, cb, arg);
    dayrow_release(&acc);
    return rc;
}

static int pg_stats_all_days(struct store *st, int64_t owner, int64_t from, int64_t to, day_cb cb,
                             void *arg)
{
    struct params p = {0};
    p_i64(&p, owner);
    p_i64(&p, from);
    p_i64(&p, to);
    return days_read(st, S_STATS_ALL_DAYS, &p, "every link", cb, arg);
}

static int pg_stats_all_dims(struct store *st, int64_t owner, int64_t from, int64_t to, dim_cb cb,
                             void *arg)
{
    struct params p = {0};
    p_i64(&p, owner);
    p_i64(&p, from);
    p_i64(&p, to);
    struct dayrow acc;
    int rc = stats_blobs(st, S_STATS_ALL_DIMS, &p, true, "(every link)", &acc);
    if (rc == ERR_OK)
        dayrow_each_tally(&acc, cb, arg);
    dayrow_release(&acc);
    return rc;
}

static int pg_stats_recent(struct store *st, const char *code, int limit, recent_cb cb, void *arg)
{
    /* Each day keeps its newest RECENT_KEEP: so many days are always enough. */
    struct params p = {0};
    p_text(&p, code);
    p_i64(&p, limit < 1 ? 1 : limit);
    struct dayrow acc;
    int rc = stats_blobs(st, S_STATS_RECENT, &p, false, code, &acc);
    if (rc == ERR_OK)
        store_each_recent(&acc, limit, cb, arg);
    dayrow_release(&acc);
    return rc;
}

static int pg_stats_totals(struct store *st, int64_t owner, struct totals *out)
{
    struct params p = {0};
    p_i64(&p, owner);
    PGresult *r = NULL;
    int rc = run(st, S_STATS_TOTALS, &p, "totals", &r);
    if (rc != ERR_OK)
        return rc;
    out->links = val_i64(r, 0, 0);
    out->clicks = val_i64(r, 0, 1);
    out->bot_clicks = val_i64(r, 0, 2);
    PQclear(r);
    return ERR_OK;
}

static int pg_stats_top(struct store *st, int64_t owner, int64_t day, int limit, top_cb cb,
                        void *arg)
{
    struct params p = {0};
    p_i64(&p, day);
    p_i64(&p, owner);
    p_i64(&p, limit);
    PGresult *r = NULL;
    int rc = run(st, S_STATS_TOP, &p, "top links", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++)
        if (cb(PQgetvalue(r, i, 0), val_i64(r, i, 1), arg))
            break;
    PQclear(r);
    return ERR_OK;
}

/* ---- appending and compacting link days (store_stats.h, "Appending") ---- */

static int pg_days_batch(struct store *st, int64_t after, int64_t *batch)
{
    struct params p = {0};
    p_i64(&p, after);
    PGresult *r = NULL;
    int rc = run(st, S_BATCH_NEW, &p, "new batch", &r);
    if (rc == ERR_OK)
        *batch = val_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int pg_days_append(struct store *st, int64_t batch, const struct day_delta *d, size_t n)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    struct day_arrays w;
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    memset(&w, 0, sizeof(w));
    arrays_open(&w, 8);
    for (size_t i = 0; i < n; i++) {
        struct day_blobs b;
        dayrow_encode(d[i].row, &bufs[0], &bufs[1], &bufs[2], &b);
        arrays_row(&w, d[i].code, d[i].day, &b);
    }
    char no[24];
    snprintf(no, sizeof(no), "%lld", (long long)batch);
    int rc = arrays_run(c, S_PEND_ADD, &w, no, "day append", NULL);
    for (int i = 0; i < 8; i++)
        buf_release(&w.col[i]);
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    return rc;
}

static int pg_days_pending(struct store *st, int64_t *rows, int64_t *newest)
{
    PGresult *r = NULL;
    int rc = run(st, S_PEND_COUNT, NULL, "appended days", &r);
    if (rc == ERR_OK) {
        *rows = val_i64(r, 0, 0);
        *newest = val_i64(r, 0, 1);
    }
    PQclear(r);
    return rc;
}

/* Deletes the rows of the next link days after this connection's cursor
 * (S_PEND_TAKE) and merges each link day's into its stored row at once
 * (days_chunk, as agg_days). A pass that finds none after the cursor
 * starts again from the first key before it says none were left. */
static int take_pending(struct conn *c, int64_t upto, size_t limit, PGresult **out)
{
    for (int again = 0; again < 2; again++) {
        struct params p = {0};
        p_i64(&p, upto);
        p_text(&p, c->compact_code);
        p_i64(&p, c->compact_day);
        p_i64(&p, (int64_t)limit);
        int rc = exec_on(c, S_PEND_TAKE, &p, "compacting", out);
        if (rc != ERR_OK || PQntuples(*out) > 0 || !c->compact_code[0])
            return rc;
        PQclear(*out);
        *out = NULL;
        c->compact_code[0] = '\0';
        c->compact_day = 0;
    }
    return ERR_OK;
}

/* A pass is one statement, which cannot stop part way, so 'stop' is not
 * asked: taken in slices of 128 link days a statement, compacting cost the
 * server up to 2.4 times as much a row (bench/HISTORY.md, "Creates during a
 * round of compacting"). */
static int pg_days_compact(struct store *st, int64_t upto, size_t limit, bool (*stop)(void *),
                           void *stop_arg, size_t *rows)
{
    (void)stop;
    (void)stop_arg;
    *rows = 0;
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    PGresult *r = NULL;
    int rc = take_pending(c, upto, limit, &r);
    int n = r ? PQntuples(r) : 0;
    if (rc != ERR_OK || n == 0) {
        PQclear(r);
        return rc;
    }
    struct taken *t = calloc((size_t)n, sizeof(*t));
    struct dayrow *acc = calloc((size_t)n, sizeof(*acc));
    struct day_delta *d = calloc((size_t)n, sizeof(*d));
    if (!t || !acc || !d)
        abort();
    for (int i = 0; i < n; i++)
        t[i] = (struct taken){r, i};
    qsort(t, (size_t)n, sizeof(*t), taken_cmp);
    struct buf raw[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    size_t nd = 0;
    for (int i = 0; i < n && rc == ERR_OK; i++) {
        int row = t[i].row;
        const char *code = PQgetvalue(r, row, 0);
        int64_t day = val_i64(r, row, 1);
        bool first = nd == 0 || d[nd - 1].day != day || strcmp(d[nd - 1].code, code) != 0;
        if (first) {
            dayrow_init(&acc[nd]);
            d[nd] = (struct day_delta){code, day, &acc[nd], false};
            nd++;
        }
        struct day_blobs b = {.clicks = val_i64(r, row, 2),
                              .bots = val_i64(r, row, 3),
                              .uniques = val_i64(r, row, 4)};
        const void **ptr[3] = {&b.dims, &b.visitors, &b.recent};
        size_t *len[3] = {&b.ndims, &b.nvisitors, &b.nrecent};
        for (int k = 0; k < 3 && rc == ERR_OK; k++) {
            if (PQgetisnull(r, row, 5 + k))
                continue;
            rc = val_bytes(r, row, 5 + k, &raw[k]);
            *ptr[k] = raw[k].p ? raw[k].p : "";
            *len[k] = raw[k].len;
        }
        /* The first straight into the empty row: most link days have one */
        if (rc == ERR_OK &&
            (first ? dayrow_load(&acc[nd - 1], &b) : dayrow_add_blobs(&acc[nd - 1], &b)) != ERR_OK)
            log_at(LOG_WARN,
                   "some appended clicks of '%s' on day %lld are damaged and were skipped", code,
                   (long long)day);
    }
    struct day_arrays a;
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT}, old[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    memset(&a, 0, sizeof(a));
    for (size_t i = 0; i < nd && rc == ERR_OK; i += DAY_CHUNK)
        rc = days_chunk(c, d + i, nd - i < DAY_CHUNK ? nd - i : DAY_CHUNK, &a, bufs, old, 0);
    if (rc == ERR_OK) {
        snprintf(c->compact_code, sizeof(c->compact_code), "%s", d[nd - 1].code);
        c->compact_day = d[nd - 1].day;
        *rows = (size_t)n;
    }
    for (size_t i = 0; i < nd; i++)
        dayrow_release(&acc[i]);
    for (int i = 0; i < 8; i++)
        buf_release(&a.col[i]);
    for (int i = 0; i < 3; i++) {
        buf_release(&raw[i]);
        buf_release(&bufs[i]);
        buf_release(&old[i]);
    }
    free(t);
    free(acc);
    free(d);
    PQclear(r);
    return rc;
}

/* ---- API keys ---- */

/* KEY_COLS's columns; a NULL scopes is the full set (0006_key_scopes.sql). */
static void row_to_key(const PGresult *r, int row, struct apikey *k)
{
    memset(k, 0, sizeof(*k));
    k->id = val_i64(r, row, 0);
    snprintf(k->name, sizeof(k->name), "%s", PQgetvalue(r, row, 1));
    k->admin = val_bool(r, row, 2);
    k->created_at = val_i64(r, row, 3);
    k->revoked_at = val_i64(r, row, 4);
    k->user_id = PQgetisnull(r, row, 5) ? 0 : val_i64(r, row, 5);
    k->scopes = PQgetisnull(r, row, 6) ? KEY_SCOPES_ALL : (unsigned)val_i64(r, row, 6);
    snprintf(k->domain, sizeof(k->domain), "%s", PQgetvalue(r, row, 7));
    k->last_used_at = PQgetisnull(r, row, 8) ? 0 : val_i64(r, row, 8);
    enum user_role role;
    k->role = !PQgetisnull(r, row, 9) && user_role_parse(PQgetvalue(r, row, 9), &role) == ERR_OK
                  ? KEY_ROLE(role)
                  : KEY_NO_USER;
    k->owner = PQgetisnull(r, row, 10) ? k->id : val_i64(r, row, 10);
    k->user_disabled = !PQgetisnull(r, row, 11) && val_i64(r, row, 11) != 0;
}

static int pg_key_insert(struct store *st, const struct apikey *k, const uint8_t hash[32],
                         int64_t *id)
{
    struct params p = {0};
    p_text(&p, k->name);
    p_bytes(&p, hash, 32);
    p_bool(&p, k->admin);
    p_i64(&p, k->created_at);
    if (k->user_id)
        p_i64(&p, k->user_id);
    else
        p_text(&p, NULL);
    if (k->scopes != KEY_SCOPES_ALL)
        p_i64(&p, k->scopes);
    else
        p_text(&p, NULL);
    p_text(&p, k->domain[0] ? k->domain : NULL);
    PGresult *r = NULL;
    int rc = run(st, S_KEY_INSERT, &p, "key insert", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 1)
        *id = val_i64(r, 0, 0);
    else
        rc = ERR_EXISTS;
    PQclear(r);
    return rc;
}

static int pg_key_by_hash(struct store *st, const uint8_t hash[32], struct apikey *out)
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    PGresult *r = NULL;
    int rc = run(st, S_KEY_BY_HASH, &p, "key get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_NOTFOUND;
    else
        row_to_key(r, 0, out);
    PQclear(r);
    return rc;
}

static int pg_key_list(struct store *st, key_cb cb, void *arg)
{
    PGresult *r = NULL;
    int rc = run(st, S_KEY_LIST, NULL, "key list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct apikey k;
        row_to_key(r, i, &k);
        if (cb(&k, arg))
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_key_revoke(struct store *st, int64_t id, int64_t now)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, now);
    int n = 0;
    int rc = run_count(st, S_KEY_REVOKE, &p, "key revoke", &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

static int pg_key_count(struct store *st, int64_t *n) { return count(st, S_KEY_COUNT, n); }

/* ---- users and sessions ---- */

static int row_to_user(const PGresult *r, int row, struct user *u)
{
    memset(u, 0, sizeof(*u));
    u->id = val_i64(r, row, 0);
    snprintf(u->name, sizeof(u->name), "%s", PQgetvalue(r, row, 1));
    snprintf(u->pwhash, sizeof(u->pwhash), "%s", PQgetvalue(r, row, 2));
    u->key_id = val_i64(r, row, 4);
    u->created_at = val_i64(r, row, 5);
    u->disabled_at = val_i64(r, row, 6);
    u->last_signin_at = val_i64(r, row, 7);
    if (user_role_parse(PQgetvalue(r, row, 3), &u->role) != ERR_OK)
        return log_fail(ERR_STORAGE, "user '%s' has an unknown role", u->name);
    return ERR_OK;
}

static int pg_user_insert(struct store *st, const struct user *u, int64_t *id)
{
    struct params p = {0};
    p_text(&p, u->name);
    p_text(&p, u->pwhash);
    p_text(&p, user_role_name(u->role));
    p_i64(&p, u->key_id);
    p_i64(&p, u->created_at);
    p_i64(&p, u->disabled_at);
    PGresult *r = NULL;
    int rc = run(st, S_USER_INSERT, &p, "user insert", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 1)
        *id = val_i64(r, 0, 0);
    else
        rc = ERR_EXISTS;
    PQclear(r);
    return rc;
}

static int user_one(struct store *st, enum stmt id, const struct params *p, struct user *out)
{
    PGresult *r = NULL;
    int rc = run(st, id, p, "user get", &r);
    if (rc != ERR_OK)
        return rc;
    rc = PQntuples(r) == 0 ? ERR_NOTFOUND : row_to_user(r, 0, out);
    PQclear(r);
    return rc;
}

static int pg_user_get(struct store *st, int64_t id, struct user *out)
{
    struct params p = {0};
    p_i64(&p, id);
    return user_one(st, S_USER_GET, &p, out);
}

static int pg_user_by_name(struct store *st, const char *name, struct user *out)
{
    struct params p = {0};
    p_text(&p, name);
    return user_one(st, S_USER_BY_NAME, &p, out);
}

static int pg_user_list(struct store *st, user_cb cb, void *arg)
{
    PGresult *r = NULL;
    int rc = run(st, S_USER_LIST, NULL, "user list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct user u;
        rc = row_to_user(r, i, &u);
        if (rc != ERR_OK || cb(&u, arg))
            break;
    }
    PQclear(r);
    return rc;
}

/* A write that must change a row: ERR_NOTFOUND when it changed none. */
static int run_changed(struct store *st, enum stmt id, const struct params *p, const char *what)
{
    int n = 0;
    int rc = run_count(st, id, p, what, &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

static int pg_user_set_password(struct store *st, int64_t id, const char *pwhash)
{
    struct params p = {0};
    p_i64(&p, id);
    p_text(&p, pwhash);
    return run_changed(st, S_USER_PASSWORD, &p, "user password");
}

static int pg_user_disable(struct store *st, int64_t id, int64_t now)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, now);
    return run_changed(st, S_USER_DISABLE, &p, "user disable");
}

static int pg_user_count(struct store *st, int64_t *n) { return count(st, S_USER_COUNT, n); }

static int pg_user_set_role(struct store *st, int64_t id, enum user_role role)
{
    struct params p = {0};
    p_i64(&p, id);
    p_text(&p, user_role_name(role));
    return run_changed(st, S_USER_ROLE, &p, "user role");
}

static int pg_user_enable(struct store *st, int64_t id)
{
    struct params p = {0};
    p_i64(&p, id);
    return run_changed(st, S_USER_ENABLE, &p, "user enable");
}

static int pg_user_signed_in(struct store *st, int64_t id, int64_t at)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, at);
    return run_changed(st, S_USER_SIGNED_IN, &p, "user signed in");
}

static int pg_setup_put(struct store *st, const uint8_t hash[32], int64_t expires_at)
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    p_i64(&p, expires_at);
    int n = 0;
    return run_count(st, S_SETUP_PUT, &p, "setup token put", &n);
}

static int pg_setup_check(struct store *st, const uint8_t hash[32], int64_t now)
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    p_i64(&p, now);
    PGresult *r = NULL;
    int rc = run(st, S_SETUP_CHECK, &p, "setup token check", &r);
    if (rc != ERR_OK)
        return rc;
    rc = PQntuples(r) == 1 ? ERR_OK : ERR_NOTFOUND;
    PQclear(r);
    return rc;
}

static int pg_setup_end(struct store *st)
{
    int n = 0;
    return run_count(st, S_SETUP_END, NULL, "setup token end", &n);
}

static int pg_session_insert(struct store *st, const uint8_t hash[32], const struct session *s)
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    p_i64(&p, s->user_id);
    p_i64(&p, s->created_at);
    p_i64(&p, s->seen_at);
    p_i64(&p, s->expires_at);
    int rc = run_changed(st, S_SESSION_INSERT, &p, "session insert");
    return rc == ERR_NOTFOUND ? ERR_EXISTS : rc;
}

static int pg_session_get(struct store *st, const uint8_t hash[32], int64_t now,
                          struct session *out)
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    p_i64(&p, now);
    PGresult *r = NULL;
    int rc = run(st, S_SESSION_GET, &p, "session get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0) {
        rc = ERR_NOTFOUND;
    } else {
        out->user_id = val_i64(r, 0, 0);
        out->created_at = val_i64(r, 0, 1);
        out->seen_at = val_i64(r, 0, 2);
        out->expires_at = val_i64(r, 0, 3);
    }
    PQclear(r);
    return rc;
}

static int pg_session_touch(struct store *st, const uint8_t hash[32], int64_t now)
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    p_i64(&p, now);
    return run_changed(st, S_SESSION_TOUCH, &p, "session touch");
}

static int pg_session_end(struct store *st, const uint8_t hash[32])
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    return run_changed(st, S_SESSION_END, &p, "session end");
}

static int pg_session_end_user(struct store *st, int64_t user_id)
{
    struct params p = {0};
    p_i64(&p, user_id);
    int n = 0;
    return run_count(st, S_SESSION_END_USER, &p, "session end user", &n);
}

static int pg_session_sweep(struct store *st, int64_t now, int64_t idle_before, int64_t *n)
{
    struct params p = {0};
    p_i64(&p, now);
    p_i64(&p, idle_before);
    int k = 0;
    int rc = run_count(st, S_SESSION_SWEEP, &p, "session sweep", &k);
    *n = k;
    return rc;
}

static int pg_key_touch(struct store *st, int64_t id, int64_t at)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, at);
    int n = 0;
    return run_count(st, S_KEY_TOUCH, &p, "key touch", &n);
}

/* ---- idempotency ---- */

static int pg_idem_get(struct store *st, int64_t key_id, const char *idem, int64_t since,
                       struct idem_rec *out)
{
    struct params p = {0};
    p_i64(&p, key_id);
    p_text(&p, idem);
    p_i64(&p, since);
    PGresult *r = NULL;
    int rc = run(st, S_IDEM_GET, &p, "idempotency get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return ERR_NOTFOUND;
    }
    memset(out, 0, sizeof(*out));
    struct buf fp = BUF_INIT;
    rc = val_bytes(r, 0, 0, &fp);
    if (rc == ERR_OK && fp.len == 32)
        memcpy(out->fingerprint, fp.p, 32);
    buf_release(&fp);
    if (rc == ERR_OK) {
        out->status = (int)val_i64(r, 0, 1);
        out->body = val_dup(r, 0, 2);
        out->created_at = val_i64(r, 0, 3);
    }
    PQclear(r);
    return rc;
}

static int pg_meta_add(struct store *st, const char *key, const void *val, size_t n)
{
    struct params p = {0};
    p_text(&p, key);
    p_bytes(&p, val, n);
    int changes = 0;
    int rc = run_count(st, S_META_ADD, &p, "meta add", &changes);
    if (rc != ERR_OK)
        return rc;
    return changes ? ERR_OK : ERR_EXISTS;
}

/* The columns of an idempotency record, in statement order. */
static void idem_params(struct params *p, int64_t key_id, const char *idem,
                        const struct idem_rec *rec)
{
    p_i64(p, key_id);
    p_text(p, idem);
    p_bytes(p, rec->fingerprint, 32);
    p_i64(p, rec->status);
    p_text(p, rec->body ? rec->body : "");
    p_i64(p, rec->created_at);
}

static int pg_idem_claim(struct store *st, int64_t key_id, const char *idem,
                         const struct idem_rec *rec)
{
    struct params p = {0};
    idem_params(&p, key_id, idem, rec);
    int changes = 0;
    int rc = run_count(st, S_IDEM_CLAIM, &p, "idempotency claim", &changes);
    if (rc != ERR_OK)
        return rc;
    return changes ? ERR_OK : ERR_EXISTS;
}

static int pg_idem_put(struct store *st, int64_t key_id, const char *idem,
                       const struct idem_rec *rec)
{
    struct params p = {0};
    idem_params(&p, key_id, idem, rec);
    return run(st, S_IDEM_PUT, &p, "idempotency put", NULL);
}

static int pg_idem_sweep(struct store *st, int64_t before)
{
    struct params p = {0};
    p_i64(&p, before);
    return run(st, S_IDEM_SWEEP, &p, "idempotency sweep", NULL);
}

/* ---- blocklist ---- */

static int pg_block_add(struct store *st, const char *host, int64_t now)
{
    struct params p = {0};
    p_text(&p, host);
    p_i64(&p, now);
    int n = 0;
    int rc = run_count(st, S_BLOCK_ADD, &p, "block add", &n);
    return rc == ERR_OK && n == 0 ? ERR_EXISTS : rc;
}

static int pg_block_del(struct store *st, const char *host)
{
    struct params p = {0};
    p_text(&p, host);
    int n = 0;
    int rc = run_count(st, S_BLOCK_DEL, &p, "block delete", &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

static int pg_block_has(struct store *st, const char *host, bool *yes)
{
    struct params p = {0};
    p_text(&p, host);
    PGresult *r = NULL;
    int rc = run(st, S_BLOCK_HAS, &p, "block check", &r);
    if (rc != ERR_OK)
        return rc;
    *yes = PQntuples(r) > 0;
    PQclear(r);
    return ERR_OK;
}

static int pg_block_list(struct store *st, host_cb cb, void *arg)
{
    PGresult *r = NULL;
    int rc = run(st, S_BLOCK_LIST, NULL, "block list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++)
        if (cb(PQgetvalue(r, i, 0), val_i64(r, i, 1), arg))
            break;
    PQclear(r);
    return ERR_OK;
}

/* ---- operations (store_watch.h) ---- */

static int pg_backup_note(struct store *st, int64_t ended_at, int64_t bytes, const char *node)
{
    struct params p = {0};
    p_i64(&p, ended_at);
    p_i64(&p, bytes);
    p_text(&p, node);
    return run(st, S_BACKUP_NOTE, &p, "backup note", NULL);
}

static int pg_backup_last(struct store *st, int64_t *ended_at, int64_t *bytes)
{
    struct params p = {0};
    PGresult *r = NULL;
    int rc = run(st, S_BACKUP_LAST, &p, "backup last", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r)) {
        *ended_at = val_i64(r, 0, 0);
        *bytes = val_i64(r, 0, 1);
    } else {
        rc = ERR_NOTFOUND;
    }
    PQclear(r);
    return rc;
}

static int pg_clock_ms(struct store *st, int64_t *now)
{
    struct params p = {0};
    PGresult *r = NULL;
    int rc = run(st, S_CLOCK, &p, "clock", &r);
    if (rc != ERR_OK)
        return rc;
    *now = val_i64(r, 0, 0);
    PQclear(r);
    return ERR_OK;
}

static int pg_lease_take(struct store *st, const char *name, const char *holder, int64_t now,
                         int64_t ttl_ms, bool *held)
{
    struct params p = {0};
    p_text(&p, name);
    p_text(&p, holder);
    p_i64(&p, now);
    p_i64(&p, now + ttl_ms);
    int n = 0;
    int rc = run_count(st, S_LEASE_TAKE, &p, "lease take", &n);
    *held = rc == ERR_OK && n > 0;
    return rc;
}

/* Moving a store: defined in the last section of this file. */
static int pg_export_rows(struct store *st, int table, row_cb cb, void *arg);
static int pg_import_rows(struct store *st, int table, const struct store_value *rows, size_t n,
                          const struct store_value *after, bool to_end, int64_t *nchanged);
static int pg_table_count(struct store *st, int table, struct table_count *out);


/* ---- sites (store_sites.h) ---- */

static void row_to_site(const PGresult *r, int i, struct site_info *s)
{
    memset(s, 0, sizeof(*s));
    const char *id = PQgetvalue(r, i, 0);
    size_t n = strlen(id);
    memcpy(s->id, id, n < SITE_ID_MAX ? n : SITE_ID_MAX);
    s->owner = val_i64(r, i, 1);
    s->badge = val_bool(r, i, 2);
    s->created_at = val_i64(r, i, 3);
    s->pv_total = val_i64(r, i, 4);
}

static int pg_site_insert(struct store *st, const struct site_info *s)
{
    struct params p = {0};
    p_text(&p, s->id);
    p_i64(&p, s->owner);
    p_bool(&p, s->badge);
    p_i64(&p, s->created_at);
    int n = 0;
    int rc = run_count(st, S_SITE_INSERT, &p, "site insert", &n);
    return rc == ERR_OK && n == 0 ? ERR_EXISTS : rc;
}

static int pg_site_get(struct store *st, const char *id, struct site_info *out)
{
    struct params p = {0};
    p_text(&p, id);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_GET, &p, "site get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_NOTFOUND;
    else
        row_to_site(r, 0, out);
    PQclear(r);
    return rc;
}

static int pg_site_set_badge(struct store *st, const char *id, bool badge)
{
    struct params p = {0};
    p_text(&p, id);
    p_bool(&p, badge);
    return run_changed(st, S_SITE_BADGE, &p, "site badge");
}

static int pg_site_list(struct store *st, int64_t owner, site_cb cb, void *arg)
{
    struct params p = {0};
    p_i64(&p, owner);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_LIST, &p, "site list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct site_info s;
        row_to_site(r, i, &s);
        if (cb(&s, arg))
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_site_delete(struct store *st, const char *id)
{
    struct params p = {0};
    p_text(&p, id);
    const enum stmt parts[] = {S_SITE_DEL_HOSTS, S_SITE_DEL_TOKENS, S_SITE_DEL_DAYS};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        int rc = run(st, parts[i], &p, "site delete", NULL);
        if (rc != ERR_OK)
            return rc;
    }
    return run_changed(st, S_SITE_DEL, &p, "site delete");
}

static int pg_site_host_add(struct store *st, const char *host, const char *site)
{
    struct params p = {0};
    p_text(&p, host);
    p_text(&p, site);
    int n = 0;
    int rc = run_count(st, S_SITE_HOST_ADD, &p, "site host add", &n);
    return rc == ERR_OK && n == 0 ? ERR_EXISTS : rc;
}

static int pg_site_hosts_clear(struct store *st, const char *site)
{
    struct params p = {0};
    p_text(&p, site);
    return run(st, S_SITE_DEL_HOSTS, &p, "site hosts clear", NULL);
}

static int pg_site_hosts_list(struct store *st, const char *site, site_host_cb cb, void *arg)
{
    struct params p = {0};
    p_text(&p, site);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_HOSTS_LIST, &p, "site hosts list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++)
        if (cb(PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), arg))
            break;
    PQclear(r);
    return ERR_OK;
}

static int pg_site_token_add(struct store *st, const char *site, const uint8_t hash[32],
                             int64_t now, int64_t *id)
{
    struct params p = {0};
    p_text(&p, site);
    p_bytes(&p, hash, 32);
    p_i64(&p, now);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_TOKEN_ADD, &p, "site token add", &r);
    if (rc == ERR_OK)
        *id = val_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int pg_site_token_find(struct store *st, const uint8_t hash[32], char site[SITE_ID_MAX + 1])
{
    struct params p = {0};
    p_bytes(&p, hash, 32);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_TOKEN_FIND, &p, "site token find", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0) {
        rc = ERR_NOTFOUND;
    } else {
        const char *t = PQgetvalue(r, 0, 0);
        size_t n = strlen(t) < SITE_ID_MAX ? strlen(t) : SITE_ID_MAX;
        memcpy(site, t, n);
        site[n] = '\0';
    }
    PQclear(r);
    return rc;
}

static int pg_site_token_del(struct store *st, const char *site, int64_t id)
{
    struct params p = {0};
    p_text(&p, site);
    p_i64(&p, id);
    return run_changed(st, S_SITE_TOKEN_DEL, &p, "site token delete");
}

static int pg_site_token_list(struct store *st, const char *site, site_token_cb cb, void *arg)
{
    struct params p = {0};
    p_text(&p, site);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_TOKEN_LIST, &p, "site token list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++)
        if (cb(val_i64(r, i, 0), val_i64(r, i, 1), arg))
            break;
    PQclear(r);
    return ERR_OK;
}

/* One site day: made if absent, locked, merged and written back, with its
 * page views added to the site's badge total in the same transaction. */
static int site_day_merge(struct store *st, const struct day_delta *d, struct buf bufs[3],
                          struct buf *raw)
{
    struct params k = {0};
    p_text(&k, d->code);
    p_i64(&k, d->day);
    int rc = run(st, S_SITE_DAY_ADD, &k, "site day insert", NULL);
    PGresult *r = NULL;
    if (rc == ERR_OK)
        rc = run(st, S_SITE_DAY_LOCK, &k, "site day lock", &r);
    if (rc != ERR_OK)
        return rc == ERR_EXISTS ? ERR_STORAGE : rc;
    if (PQntuples(r) != 1) { /* a deleted site's beacons, still in the journal */
        PQclear(r);
        return ERR_OK;
    }
    struct day_blobs old = {0}, m;
    old.clicks = val_i64(r, 0, 0);
    old.bots = val_i64(r, 0, 1);
    if (!PQgetisnull(r, 0, 2)) {
        rc = val_bytes(r, 0, 2, raw);
        old.dims = raw->p ? raw->p : "";
        old.ndims = raw->len;
    }
    PQclear(r);
    if (rc == ERR_OK && dayrow_merge(&old, d->row, &bufs[0], &bufs[1], &bufs[2], &m) != ERR_OK)
        rc = log_fail(ERR_STORAGE, "the stored page views of site '%s' on day %lld are damaged",
                      d->code, (long long)d->day);
    if (rc != ERR_OK)
        return rc;
    struct params p = {0};
    p_text(&p, d->code);
    p_i64(&p, d->day);
    p_i64(&p, m.clicks);
    p_i64(&p, m.bots);
    if (m.dims)
        p_bytes(&p, m.dims, m.ndims);
    else
        p_text(&p, NULL);
    rc = run(st, S_SITE_DAY_PUT, &p, "site day write", NULL);
    if (rc != ERR_OK || !d->row->clicks)
        return rc;
    struct params t = {0};
    p_text(&t, d->code);
    p_i64(&t, d->row->clicks);
    return run(st, S_SITE_PV_TOTAL, &t, "site total", NULL);
}

static int pg_site_agg_days(struct store *st, const struct day_delta *d, size_t n)
{
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT}, raw = BUF_INIT;
    int rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i++)
        rc = site_day_merge(st, &d[i], bufs, &raw);
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    buf_release(&raw);
    return rc;
}

static int pg_site_prune_days(struct store *st, int64_t before_day, int limit, int *pruned)
{
    struct params p = {0};
    p_i64(&p, before_day);
    p_i64(&p, limit);
    PGresult *r = NULL;
    *pruned = 0;
    int rc = run(st, S_SITE_PRUNE, &p, "site prune", &r);
    if (rc == ERR_OK)
        *pruned = (int)val_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int pg_site_stats_days(struct store *st, const char *site, int64_t from, int64_t to,
                              day_cb cb, void *arg)
{
    struct params p = {0};
    p_text(&p, site);
    p_i64(&p, from);
    p_i64(&p, to);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_STATS_DAYS, &p, "site stats", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++)
        if (cb(val_i64(r, i, 0), val_i64(r, i, 1), val_i64(r, i, 2), val_i64(r, i, 3), arg))
            break;
    PQclear(r);
    return ERR_OK;
}

static int pg_site_stats_dims(struct store *st, const char *site, int64_t from, int64_t to,
                              dim_cb cb, void *arg)
{
    struct params p = {0};
    p_text(&p, site);
    p_i64(&p, from);
    p_i64(&p, to);
    struct dayrow acc;
    int rc = stats_blobs(st, S_SITE_STATS_DIMS, &p, true, site, &acc);
    if (rc == ERR_OK)
        dayrow_each_tally(&acc, cb, arg);
    dayrow_release(&acc);
    return rc;
}

static int pg_site_size(struct store *st, const char *site, struct site_size *out)
{
    struct params p = {0};
    p_text(&p, site);
    PGresult *r = NULL;
    int rc = run(st, S_SITE_SIZE, &p, "site size", &r);
    if (rc == ERR_OK) {
        out->rows = val_i64(r, 0, 0);
        out->bytes = val_i64(r, 0, 1);
    }
    PQclear(r);
    return rc;
}

/* ---- events: sinks, positions, the outbox, the failed archive ---- */

static void row_to_sink(const PGresult *r, int i, struct sink *s)
{
    memset(s, 0, sizeof(*s));
    s->id = val_i64(r, i, 0);
    s->kind = val_dup(r, i, 1);
    s->endpoint = val_dup(r, i, 2);
    s->types = val_dup(r, i, 3);
    s->owner = val_i64(r, i, 4);
    s->domain = val_dup(r, i, 5);
    s->secret = val_dup(r, i, 6);
    s->secret_old = val_dup(r, i, 7);
    s->options = val_dup(r, i, 8);
    s->created_at = val_i64(r, i, 9);
}

static int pg_sink_add(struct store *st, struct sink *s)
{
    struct params p = {0};
    p_text(&p, s->kind);
    p_text(&p, s->endpoint);
    p_text(&p, s->types ? s->types : "");
    p_i64(&p, s->owner);
    p_text(&p, s->domain);
    p_text(&p, s->secret);
    p_text(&p, s->secret_old);
    p_text(&p, s->options ? s->options : "{}");
    p_i64(&p, s->created_at);
    PGresult *r = NULL;
    int rc = run(st, S_SINK_ADD, &p, "sink add", &r);
    if (rc != ERR_OK)
        return rc;
    s->id = val_i64(r, 0, 0);
    PQclear(r);
    return ERR_OK;
}

static int pg_sink_get(struct store *st, int64_t id, struct sink *out)
{
    struct params p = {0};
    p_i64(&p, id);
    PGresult *r = NULL;
    int rc = run(st, S_SINK_GET, &p, "sink get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_NOTFOUND;
    else
        row_to_sink(r, 0, out);
    PQclear(r);
    return rc;
}

static int pg_sink_list(struct store *st, sink_cb cb, void *arg)
{
    PGresult *r = NULL;
    int rc = run(st, S_SINK_LIST, NULL, "sink list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct sink s;
        row_to_sink(r, i, &s);
        int stop = cb(&s, arg);
        sink_release(&s);
        if (stop)
            break;
    }
    PQclear(r);
    return ERR_OK;
}

/* A write that must change a row: ERR_NOTFOUND when it changed none. */
static int run_one(struct store *st, enum stmt id, const struct params *p, const char *what)
{
    int n = 0;
    int rc = run_count(st, id, p, what, &n);
    return rc == ERR_OK && n == 0 ? ERR_NOTFOUND : rc;
}

static int pg_sink_del(struct store *st, int64_t id, int64_t now)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, now);
    return run_one(st, S_SINK_DEL, &p, "sink delete");
}

static int pg_sink_secret(struct store *st, int64_t id, const char *secret, const char *old)
{
    struct params p = {0};
    p_i64(&p, id);
    p_text(&p, secret);
    p_text(&p, old);
    return run_one(st, S_SINK_SECRET, &p, "sink secret");
}

static int pg_sink_update(struct store *st, const struct sink *s)
{
    struct params p = {0};
    p_i64(&p, s->id);
    p_text(&p, s->types ? s->types : "");
    p_i64(&p, s->owner);
    p_text(&p, s->domain);
    p_text(&p, s->options ? s->options : "{}");
    return run_one(st, S_SINK_UPDATE, &p, "sink update");
}

static int pg_sink_pos_get(struct store *st, int64_t sink, const char *source, int64_t *pos)
{
    struct params p = {0};
    p_i64(&p, sink);
    p_text(&p, source);
    PGresult *r = NULL;
    int rc = run(st, S_POS_GET, &p, "sink position get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0)
        rc = ERR_NOTFOUND;
    else
        *pos = val_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int pg_sink_pos_set(struct store *st, int64_t sink, const char *source, int64_t old,
                           int64_t pos)
{
    struct params p = {0};
    p_i64(&p, sink);
    p_text(&p, source);
    if (old >= 0)
        p_i64(&p, old);
    p_i64(&p, pos);
    int rc = run_one(st, old < 0 ? S_POS_INSERT : S_POS_UPDATE, &p, "sink position set");
    return rc == ERR_NOTFOUND ? ERR_EXISTS : rc;
}

static int pg_sink_lease(struct store *st, int64_t sink, const char *source, const char *holder,
                         int64_t now, int64_t until)
{
    struct params p = {0};
    p_i64(&p, sink);
    p_text(&p, source);
    p_text(&p, holder);
    p_i64(&p, now);
    p_i64(&p, until);
    int rc = run_one(st, S_POS_LEASE, &p, "sink lease");
    return rc == ERR_NOTFOUND ? ERR_BUSY : rc;
}

static int pg_outbox_add(struct store *st, const struct outbox_event *e)
{
    struct params p = {0};
    p_text(&p, e->id);
    p_text(&p, e->type);
    p_i64(&p, e->at);
    p_text(&p, e->code);
    p_i64(&p, e->owner);
    p_text(&p, e->domain);
    p_text(&p, e->body);
    int n = 0;
    return run_count(st, S_OUTBOX_ADD, &p, "outbox add", &n);
}

static int pg_outbox_read(struct store *st, int64_t after, int limit, outbox_cb cb, void *arg)
{
    struct params p = {0};
    p_i64(&p, after);
    p_i64(&p, limit);
    PGresult *r = NULL;
    int rc = run(st, S_OUTBOX_READ, &p, "outbox read", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct outbox_event e = {
            .seq = val_i64(r, i, 0),
            .id = PQgetvalue(r, i, 1),
            .type = PQgetvalue(r, i, 2),
            .at = val_i64(r, i, 3),
            .code = PQgetvalue(r, i, 4),
            .owner = val_i64(r, i, 5),
            .domain = PQgetisnull(r, i, 6) ? NULL : PQgetvalue(r, i, 6),
            .body = PQgetvalue(r, i, 7),
        };
        if (cb(&e, arg))
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_outbox_head(struct store *st, int64_t *seq) { return count(st, S_OUTBOX_HEAD, seq); }

static int pg_outbox_prune(struct store *st, int64_t before, int limit, int *n)
{
    struct params p = {0};
    p_i64(&p, before);
    p_i64(&p, limit);
    return run_count(st, S_OUTBOX_PRUNE, &p, "outbox prune", n);
}

static int pg_link_expiring(struct store *st, int64_t from, int64_t to, int limit, link_cb cb,
                            void *arg)
{
    struct params p = {0};
    p_i64(&p, from);
    p_i64(&p, to);
    p_i64(&p, limit);
    PGresult *r = NULL;
    int rc = run(st, S_LINK_EXPIRING, &p, "link expiring", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct link l;
        row_to_link(r, i, &l);
        int stop = cb(&l, arg);
        link_release(&l);
        if (stop)
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static void row_to_failed(const PGresult *r, int i, struct failed_batch *f)
{
    memset(f, 0, sizeof(*f));
    f->id = val_i64(r, i, 0);
    f->sink = val_i64(r, i, 1);
    f->source = val_dup(r, i, 2);
    f->first_pos = val_i64(r, i, 3);
    f->last_pos = val_i64(r, i, 4);
    f->events = val_i64(r, i, 5);
    f->sha256 = val_dup(r, i, 6);
    f->attempts = val_i64(r, i, 7);
    f->last_error = val_dup(r, i, 8);
    f->first_failed_at = val_i64(r, i, 9);
    f->archived_at = val_i64(r, i, 10);
    f->replays = val_i64(r, i, 11);
    f->last_replay_at = val_i64(r, i, 12);
    f->last_replay_result = val_dup(r, i, 13);
    f->resolved_at = val_i64(r, i, 14);
    f->resolved_by = val_dup(r, i, 15);
    f->resolved_reason = val_dup(r, i, 16);
}

static int pg_failed_add(struct store *st, struct failed_batch *f)
{
    struct params p = {0};
    p_i64(&p, f->sink);
    p_text(&p, f->source);
    p_i64(&p, f->first_pos);
    p_i64(&p, f->last_pos);
    p_i64(&p, f->events);
    p_text(&p, f->body);
    p_text(&p, f->sha256);
    p_i64(&p, f->attempts);
    p_text(&p, f->last_error ? f->last_error : "");
    p_i64(&p, f->first_failed_at);
    p_i64(&p, f->archived_at);
    PGresult *r = NULL;
    int rc = run(st, S_FAILED_ADD, &p, "failed add", &r);
    if (rc != ERR_OK)
        return rc;
    f->id = val_i64(r, 0, 0);
    PQclear(r);
    return ERR_OK;
}

static int pg_failed_get(struct store *st, int64_t id, struct failed_batch *out)
{
    struct params p = {0};
    p_i64(&p, id);
    PGresult *r = NULL;
    int rc = run(st, S_FAILED_GET, &p, "failed get", &r);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(r) == 0) {
        rc = ERR_NOTFOUND;
    } else {
        row_to_failed(r, 0, out);
        out->body = val_dup(r, 0, 17);
    }
    PQclear(r);
    return rc;
}

static int pg_failed_list(struct store *st, bool all, failed_cb cb, void *arg)
{
    struct params p = {0};
    p_bool(&p, all);
    PGresult *r = NULL;
    int rc = run(st, S_FAILED_LIST, &p, "failed list", &r);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; i < PQntuples(r); i++) {
        struct failed_batch f;
        row_to_failed(r, i, &f);
        int stop = cb(&f, arg);
        failed_release(&f);
        if (stop)
            break;
    }
    PQclear(r);
    return ERR_OK;
}

static int pg_failed_replayed(struct store *st, int64_t id, int64_t at, const char *result)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, at);
    p_text(&p, result);
    return run_one(st, S_FAILED_REPLAYED, &p, "failed replayed");
}

static int pg_failed_resolve(struct store *st, int64_t id, int64_t at, const char *by,
                             const char *reason)
{
    struct params p = {0};
    p_i64(&p, id);
    p_i64(&p, at);
    p_text(&p, by);
    p_text(&p, reason);
    int rc = run_one(st, S_FAILED_RESOLVE, &p, "failed resolve");
    if (rc != ERR_NOTFOUND)
        return rc;
    struct failed_batch f;
    rc = pg_failed_get(st, id, &f);
    if (rc == ERR_OK) {
        failed_release(&f);
        rc = ERR_EXISTS; /* there, and resolved before */
    }
    return rc;
}

const struct store_ops store_pg_ops = {
    .name = "postgres",
    .site_insert = pg_site_insert,
    .site_get = pg_site_get,
    .site_set_badge = pg_site_set_badge,
    .site_list = pg_site_list,
    .site_delete = pg_site_delete,
    .site_host_add = pg_site_host_add,
    .site_hosts_clear = pg_site_hosts_clear,
    .site_hosts_list = pg_site_hosts_list,
    .site_token_add = pg_site_token_add,
    .site_token_find = pg_site_token_find,
    .site_token_del = pg_site_token_del,
    .site_token_list = pg_site_token_list,
    .site_agg_days = pg_site_agg_days,
    .site_prune_days = pg_site_prune_days,
    .site_stats_days = pg_site_stats_days,
    .site_stats_dims = pg_site_stats_dims,
    .site_size = pg_site_size,
    .open = pg_open,
    .close = pg_close,
    .ping = pg_ping,
    .backup = pg_backup,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .savepoint = pg_savepoint,
    .savepoint_end = pg_savepoint_end,
    .meta_get = pg_meta_get,
    .meta_put = pg_meta_put,
    .meta_del = pg_meta_del,
    .meta_add = pg_meta_add,
    .idem_claim = pg_idem_claim,
    .claim_block = pg_claim_block,
    .link_get = pg_link_get,
    .link_insert = pg_link_insert,
    .link_find_live = pg_link_find_live,
    .link_set_state = pg_link_set_state,
    .link_imported = pg_link_imported,
    .link_list = pg_link_list,
    .link_list_floor = pg_link_list_floor,
    .link_count = pg_link_count,
    .link_sweep = pg_link_sweep,
    .link_update = pg_link_update,
    .link_reserve = pg_link_reserve,
    .history_add = pg_history_add,
    .history_list = pg_history_list,
    .domain_add = pg_domain_add,
    .domain_get = pg_domain_get,
    .domain_del = pg_domain_del,
    .domain_list = pg_domain_list,
    .domain_redirects_set = pg_domain_redirects_set,
    .domain_redirects_list = pg_domain_redirects_list,
    .backup_note = pg_backup_note,
    .backup_last = pg_backup_last,
    .clock_ms = pg_clock_ms,
    .lease_take = pg_lease_take,
    .agg_days = pg_agg_days,
    .days_batch = pg_days_batch,
    .days_append = pg_days_append,
    .days_compact = pg_days_compact,
    .days_pending = pg_days_pending,
    .prune_days = pg_prune_days,
    .prune_visitors = pg_prune_visitors,
    .stats_days = pg_stats_days,
    .stats_dims = pg_stats_dims,
    .stats_recent = pg_stats_recent,
    .stats_totals = pg_stats_totals,
    .stats_all_days = pg_stats_all_days,
    .stats_all_dims = pg_stats_all_dims,
    .stats_top = pg_stats_top,
    .key_insert = pg_key_insert,
    .key_by_hash = pg_key_by_hash,
    .key_list = pg_key_list,
    .key_revoke = pg_key_revoke,
    .key_count = pg_key_count,
    .user_insert = pg_user_insert,
    .user_get = pg_user_get,
    .user_by_name = pg_user_by_name,
    .user_list = pg_user_list,
    .user_set_password = pg_user_set_password,
    .user_disable = pg_user_disable,
    .user_count = pg_user_count,
    .user_set_role = pg_user_set_role,
    .user_enable = pg_user_enable,
    .user_signed_in = pg_user_signed_in,
    .setup_put = pg_setup_put,
    .setup_check = pg_setup_check,
    .setup_end = pg_setup_end,
    .session_insert = pg_session_insert,
    .session_get = pg_session_get,
    .session_touch = pg_session_touch,
    .session_end = pg_session_end,
    .session_end_user = pg_session_end_user,
    .session_sweep = pg_session_sweep,
    .key_touch = pg_key_touch,
    .idem_get = pg_idem_get,
    .idem_put = pg_idem_put,
    .idem_sweep = pg_idem_sweep,
    .block_add = pg_block_add,
    .block_del = pg_block_del,
    .block_has = pg_block_has,
    .block_list = pg_block_list,
    .export_rows = pg_export_rows,
    .import_rows = pg_import_rows,
    .table_count = pg_table_count,
    .sink_add = pg_sink_add,
    .sink_get = pg_sink_get,
    .sink_list = pg_sink_list,
    .sink_del = pg_sink_del,
    .sink_secret = pg_sink_secret,
    .sink_update = pg_sink_update,
    .sink_pos_get = pg_sink_pos_get,
    .sink_pos_set = pg_sink_pos_set,
    .sink_lease = pg_sink_lease,
    .outbox_add = pg_outbox_add,
    .outbox_read = pg_outbox_read,
    .outbox_head = pg_outbox_head,
    .outbox_prune = pg_outbox_prune,
    .link_expiring = pg_link_expiring,
    .failed_add = pg_failed_add,
    .failed_get = pg_failed_get,
    .failed_list = pg_failed_list,
    .failed_replayed = pg_failed_replayed,
    .failed_resolve = pg_failed_resolve,
};

/* ---- moving a store: whole tables of store_move.h (shortd migrate-store) ----
 *
 * A batch is written as one upsert over unnest() of one array parameter per
 * column, as the counter batches are, updating only rows that differ; a
 * mirror table first loses, in one DELETE by index range, the rows of the
 * batch's key range that the batch does not hold. A column the store
 * numbers (an identity) has its sequence moved past the copied numbers, so
 * new rows never take one. The statements are made from the table
 * descriptions, mostly by sqlgen.c (names from store_move.h only, values
 * bound), and run unprepared, one per batch. An export streams in
 * single-row mode: a table is never held in memory whole. */

/* " AND (x.k1, x.k2) OP ($n::type, ...)" with the key of 'row' bound. */
static void move_key_bound(struct buf *s, struct params *p, const struct store_table *t,
                           const struct store_value *row, const char *op)
{
    sqlgen_key_bound(s, &sql_pg, t, "x.", op, p->n + 1);
    for (int i = 0; i < t->nkeys; i++)
        p_value(p, &row[i]);
}

/* "unnest($a::type[], ...)" over columns [0, to), the arrays bound. */
static void move_unnest(struct buf *s, struct params *p, const struct store_table *t, int to,
                        struct buf *col)
{
    buf_adds(s, "unnest(");
    for (int i = 0; i < to; i++) {
        p_text(p, col[i].p);
        buf_printf(s, "%s$%d::%s[]", i ? ", " : "", p->n, sql_pg.param_type[t->cols[i].type]);
    }
    buf_adds(s, ")");
}

static int move_exec(struct conn *c, const struct buf *s, const struct params *p, const char *what,
                     int64_t *nchanged)
{
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    PGresult *r = PQexecParams(c->pg, s->p, p->n, NULL, p->v, p->len, p->fmt, 0);
    rc = check_result(r, c->pg, what, &r);
    if (rc == ERR_OK) {
        if (nchanged)
            *nchanged += changed(r);
        PQclear(r);
    }
    return rc;
}

static void move_upsert_sql(struct buf *s, struct params *p, const struct store_table *t,
                            struct buf *col)
{
    buf_printf(s, "INSERT INTO %s AS x (", t->name);
    sqlgen_cols(s, t, 0, t->ncols, "");
    buf_adds(s, ") SELECT * FROM ");
    move_unnest(s, p, t, t->ncols, col);
    if (t == &store_tables[TABLE_META]) {
        /* The counter (ASCII digits) only moves up; CASE keeps the secrets'
         * bytes away from convert_from. */
        buf_adds(s, " ON CONFLICT (k) DO UPDATE SET v = excluded.v "
                    "WHERE x.v IS DISTINCT FROM excluded.v "
                    "AND CASE WHEN x.k = 'counter' THEN convert_from(excluded.v, 'UTF8')::bigint "
                    "> convert_from(x.v, 'UTF8')::bigint ELSE true END");
        return;
    }
    sqlgen_upsert(s, &sql_pg, t);
}

static int pg_import_rows(struct store *st, int table, const struct store_value *rows, size_t n,
                          const struct store_value *after, bool to_end, int64_t *nchanged)
{
    const struct store_table *t = &store_tables[table];
    *nchanged = 0;
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    int rc = ERR_OK;
    struct buf col[TABLE_COLS_MAX];
    for (int i = 0; i < t->ncols; i++) {
        buf_init(&col[i]);
        buf_addc(&col[i], '{');
        for (size_t r = 0; r < n; r++) {
            if (r)
                buf_addc(&col[i], ',');
            array_elem(&col[i], &rows[r * (size_t)t->ncols + (size_t)i]);
        }
        buf_addc(&col[i], '}');
    }
    struct buf s = BUF_INIT;
    if (t->mirror && (n || to_end)) {
        struct params p = {0};
        buf_printf(&s, "DELETE FROM %s AS x WHERE true", t->name);
        if (after)
            move_key_bound(&s, &p, t, after, ">");
        if (n && !to_end)
            move_key_bound(&s, &p, t, rows + (n - 1) * (size_t)t->ncols, "<=");
        if (n) {
            buf_adds(&s, " AND (");
            sqlgen_cols(&s, t, 0, t->nkeys, "x.");
            buf_adds(&s, ") NOT IN (SELECT * FROM ");
            move_unnest(&s, &p, t, t->nkeys, col);
            buf_adds(&s, ")");
        }
        if (t == &store_tables[TABLE_META])
            buf_adds(&s, " AND x.k <> 'counter'");
        rc = move_exec(c, &s, &p, "mirror delete", nchanged);
    }
    if (rc == ERR_OK && n) {
        struct params p = {0};
        buf_reset(&s);
        move_upsert_sql(&s, &p, t, col);
        rc = move_exec(c, &s, &p, "import", nchanged);
    }
    if (rc == ERR_OK && n && t->serial) {
        struct params p = {0};
        buf_reset(&s);
        buf_printf(&s,
                   "SELECT setval(pg_get_serial_sequence('%s', '%s'), greatest(max(%s), "
                   "coalesce(pg_sequence_last_value(pg_get_serial_sequence('%s', '%s')::regclass), "
                   "0))) FROM %s HAVING max(%s) IS NOT NULL",
                   t->name, t->serial, t->serial, t->name, t->serial, t->name, t->serial);
        rc = move_exec(c, &s, &p, "sequence update", NULL);
    }
    if (rc == ERR_EXISTS)
        rc = log_fail(ERR_STORAGE,
                      "postgres import of '%s': a row collides with a different "
                      "one on a unique column",
                      t->name);
    for (int i = 0; i < t->ncols; i++)
        buf_release(&col[i]);
    buf_release(&s);
    return rc;
}

/* One row of a single-row result as values; bytea is decoded into 'bytes'. */
static int move_row(const PGresult *r, const struct store_table *t, struct store_value *v,
                    struct buf *bytes)
{
    for (int i = 0; i < t->ncols; i++) {
        memset(&v[i], 0, sizeof(v[i]));
        if (PQgetisnull(r, 0, i)) {
            v[i].type = VAL_NULL;
        } else if (t->cols[i].type == COL_INT) {
            v[i].type = VAL_INT;
            v[i].i = val_i64(r, 0, i);
        } else if (t->cols[i].type == COL_BOOL) {
            v[i].type = VAL_INT;
            v[i].i = val_bool(r, 0, i);
        } else if (t->cols[i].type == COL_TEXT) {
            v[i].type = VAL_TEXT;
            v[i].p = PQgetvalue(r, 0, i);
            v[i].n = (size_t)PQgetlength(r, 0, i);
        } else {
            int rc = val_bytes(r, 0, i, &bytes[i]);
            if (rc != ERR_OK)
                return rc;
            v[i].type = VAL_BLOB;
            v[i].p = bytes[i].p ? bytes[i].p : "";
            v[i].n = bytes[i].len;
        }
    }
    return ERR_OK;
}

static int pg_export_rows(struct store *st, int table, row_cb cb, void *arg)
{
    const struct store_table *t = &store_tables[table];
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    struct buf s = BUF_INIT;
    sqlgen_export(&s, t);
    int sent = PQsendQuery(c->pg, s.p);
    buf_release(&s);
    if (!sent) {
        const char *msg = PQerrorMessage(c->pg);
        return log_fail(ERR_STORAGE, "postgres export of '%s' failed: %.*s", t->name,
                        (int)strcspn(msg, "\n"), msg);
    }
    /* Cannot fail right after the send; if it did, the result is read and
     * thrown away below. */
    if (!PQsetSingleRowMode(c->pg))
        rc = log_fail(ERR_STORAGE, "postgres export of '%s': cannot stream its rows", t->name);
    struct buf bytes[TABLE_COLS_MAX];
    for (int i = 0; i < TABLE_COLS_MAX; i++)
        buf_init(&bytes[i]);
    bool stop = false;
    PGresult *r;
    while ((r = PQgetResult(c->pg))) {
        ExecStatusType rs = PQresultStatus(r);
        if (rs == PGRES_SINGLE_TUPLE && !stop && rc == ERR_OK) {
            struct store_value v[TABLE_COLS_MAX];
            rc = move_row(r, t, v, bytes);
            if (rc == ERR_OK && cb(v, arg))
                stop = true;
            if (stop || rc != ERR_OK) {
                /* The rows still coming are not wanted: stop sending them. */
                PGcancel *k = PQgetCancel(c->pg);
                char err[256];
                if (k)
                    PQcancel(k, err, sizeof(err));
                PQfreeCancel(k);
            }
        } else if (rs != PGRES_SINGLE_TUPLE && rs != PGRES_TUPLES_OK && !stop && rc == ERR_OK) {
            rc = result_fail(r, c->pg, "export");
            rc = rc == ERR_EXISTS ? ERR_STORAGE : rc;
            continue; /* result_fail cleared 'r' */
        }
        PQclear(r);
    }
    for (int i = 0; i < TABLE_COLS_MAX; i++)
        buf_release(&bytes[i]);
    return rc;
}

static int pg_table_count(struct store *st, int table, struct table_count *out)
{
    const struct store_table *t = &store_tables[table];
    memset(out, 0, sizeof(*out));
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    int rc = conn_check(c);
    if (rc != ERR_OK)
        return rc;
    struct buf s = BUF_INIT;
    sqlgen_count(&s, &sql_pg, t);
    PGresult *r = PQexec(c->pg, s.p);
    buf_release(&s);
    rc = check_result(r, c->pg, "count", &r);
    if (rc != ERR_OK)
        return rc == ERR_EXISTS ? ERR_STORAGE : rc;
    out->rows = val_i64(r, 0, 0);
    out->sum[0] = val_i64(r, 0, 1);
    out->sum[1] = val_i64(r, 0, 2);
    PQclear(r);
    return ERR_OK;
}

/* ---- inspection (store.h, for shortd doctor) ---- */

/* The first column of the first row of 'query' as an integer; -1 for NULL.
 * False when it fails ('why' gets the server's first line). */
static bool inspect_one(PGconn *pg, const char *query, int64_t *num, struct store_health *h)
{
    PGresult *r = PQexec(pg, query);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        const char *msg = PQresultErrorMessage(r);
        snprintf(h->why, sizeof(h->why), "'%s' failed: %.*s", query, (int)strcspn(msg, "\n"), msg);
    } else if (num) {
        *num = PQntuples(r) < 1 || PQgetisnull(r, 0, 0) ? -1
                                                        : strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    }
    PQclear(r);
    return ok;
}

/* The journal positions, as aggregate.c stores them: 8 bytes, little-endian. */
static bool inspect_marks(PGconn *pg, struct store_health *h)
{
    char query[256];
    snprintf(query, sizeof(query),
             "SELECT substr(k, 13), v FROM meta WHERE k LIKE 'journal\\_pos:%%' "
             "AND k NOT LIKE '%%:partial' AND length(v) = 8 ORDER BY k LIMIT %d",
             STORE_HEALTH_MARKS);
    /* Binary results: v arrives as its 8 bytes. */
    PGresult *r = PQexecParams(pg, query, 0, NULL, NULL, NULL, NULL, 1);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) {
        const char *msg = PQresultErrorMessage(r);
        snprintf(h->why, sizeof(h->why), "cannot read the journal positions: %.*s",
                 (int)strcspn(msg, "\n"), msg);
    }
    for (int row = 0; ok && row < PQntuples(r) && h->nmarks < STORE_HEALTH_MARKS; row++) {
        const unsigned char *v = (const unsigned char *)PQgetvalue(r, row, 1);
        if (PQgetlength(r, row, 1) != 8)
            continue;
        uint64_t pos = 0;
        for (int i = 7; i >= 0; i--)
            pos = pos << 8 | v[i];
        snprintf(h->marks[h->nmarks].id, sizeof(h->marks[0].id), "%.*s", PQgetlength(r, row, 0),
                 PQgetvalue(r, row, 0));
        h->marks[h->nmarks++].pos = (int64_t)pos;
    }
    PQclear(r);
    return ok;
}

int store_pg_inspect(const char *url, int timeout_s, struct store_health *h)
{
    h->schema_wanted = SCHEMA_VERSION;
    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%d", timeout_s > 0 ? timeout_s : 3);
    static const char *const keys[] = {"fallback_application_name", "connect_timeout", "dbname",
                                       NULL};
    const char *values[] = {"shortd-doctor", timeout, url, NULL};
    int64_t t0 = mono_us();
    PGconn *pg = PQconnectdbParams(keys, values, 1);
    if (!pg)
        abort();
    h->connect_us = mono_us() - t0;
    if (PQstatus(pg) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(pg);
        snprintf(h->why, sizeof(h->why), "cannot connect: %.*s", (int)strcspn(msg, "\n"), msg);
        PQfinish(pg);
        return ERR_STORAGE;
    }
    /* The fastest of a few round trips: the database's distance, not a
     * moment when this process or the server waited for a core. */
    int64_t one = 0, has = 0, version = 0;
    bool ok = true;
    h->query_us = INT64_MAX;
    for (int i = 0; i < STORE_HEALTH_PINGS && ok; i++) {
        int64_t t1 = mono_us();
        ok = inspect_one(pg, "SELECT 1", &one, h);
        int64_t took = mono_us() - t1;
        h->query_us = took < h->query_us ? took : h->query_us;
    }
    h->reached = ok;
    ok = ok &&
         inspect_one(pg, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                     &h->server_now_ms, h) &&
         inspect_one(pg, "SELECT (to_regclass('schema_version') IS NOT NULL)::int", &has, h);
    if (ok && has == 1)
        ok = inspect_one(pg, "SELECT coalesce(max(version), 0) FROM schema_version", &version, h);
    h->schema = (int)version;
    if (ok && h->schema == h->schema_wanted) {
        ok = inspect_one(pg, "SELECT max(created_at) FROM links", &h->newest_link_ms, h) &&
             inspect_one(pg,
                         "SELECT greatest((SELECT max(day) FROM link_days), "
                         "(SELECT max(day) FROM link_days_pending))",
                         &h->newest_day, h) &&
             inspect_one(pg,
                         "SELECT count(*) FROM meta WHERE k = 'journal_pos' OR "
                         "(k LIKE 'journal\\_pos:%' AND k NOT LIKE '%:partial')",
                         &h->journal_marks, h) &&
             inspect_marks(pg, h);
        if (h->newest_link_ms < 0)
            h->newest_link_ms = 0;
    }
    PQfinish(pg);
    return ok ? ERR_OK : ERR_STORAGE;
}
