/* store_sqlite.c - the embedded backend: the whole state of a node in one
 * SQLite file. Every SQL statement shortd runs on SQLite is in this file,
 * in migrations/sqlite/ (the schema, embedded at build time) or in sqlgen.c
 * (the text both backends share, in SQLite's dialect).
 *
 * DESIGN
 * WAL mode with synchronous=FULL: a commit is on disk when it returns, and
 * readers never wait for the writer. Each thread gets its own connection
 * (found through a pthread key) with its prepared statements cached by
 * number, so a lookup costs one sqlite3_step on a reset statement. The
 * schema version lives in PRAGMA user_version; open() migrates forward and
 * refuses a file newer than this binary. */
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/coop.h"
#include "events/outbox.h"
#include "clicks/dayrow.h"
#include "links/codes.h"
#include "base/err.h"
#include "base/log.h"
#include "store/migrations.h"
#include "store/sqlgen.h"
#include "store/sqlite_coop.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/store_move.h"
#include "store/store_stats.h"
#include "base/timeutil.h"
#include "base/banned.h"

/* The schema: migrations/sqlite/NNNN_name.sql, embedded by the Makefile
 * (migrations.h). A new database runs them all, an older one those after
 * its PRAGMA user_version, in one transaction. */
static const struct migration steps[] = {
#include "sqlite_migrations.inc"
};
#define NSTEPS MIGRATIONS_COUNT(steps)
#define SCHEMA_VERSION migrations_last(steps, NSTEPS)

/* Data conversions no SQL can make, each run after its step's file in the
 * step's transaction. */
static int convert_v3(sqlite3 *db);

static const struct {
    int version;
    int (*run)(sqlite3 *db);
} hooks[] = {
    {3, convert_v3},
};

/* Prepared statements, by number; prepared on first use per connection. */
enum stmt {
    S_META_GET,
    S_META_PUT,
    S_CLAIM,
    S_LINK_GET,
    S_LINK_INSERT,
    S_LINK_FIND_LIVE,
    S_LINK_DELETE,
    S_LINK_SET_STATE,
    S_LINK_IMPORTED,
    S_LINK_COUNT,
    S_LINK_SWEEP,
    S_META_DEL,
    S_META_ADD,
    S_IDEM_CLAIM,
    S_DAY_GET,
    S_DAY_INSERT,
    S_DAY_INSERT_NEW,
    S_DAY_UPDATE,
    S_PRUNE_CARRY,
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
    S_BATCH_LIST,
    S_BATCH_DEL,
    S_PEND_ADD,
    S_PEND_COUNT,
    S_PEND_DEL_UPTO,
    S_PEND_DAYS,
    S_PEND_DIMS,
    S_PEND_RECENT,
    S_PEND_ALL_DAYS,
    S_PEND_ALL_DIMS,
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
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
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
    S_SITE_DAY_GET,
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
    S_LEASE_TAKE,
    S__COUNT
};

/* A link's columns as SQLite reads them (sqlgen.h). */
/* A key's columns with its user's role, links' owner and state. */
#define KEY_COLS                                                                                   \
    "k.id, k.name, k.admin, k.created_at, k.revoked_at, k.user_id, k.scopes, k.domain, "           \
    "k.last_used_at, u.role, u.key_id, u.disabled_at"
#define KEY_FROM " FROM api_keys k LEFT JOIN users u ON u.id = k.user_id"
#define LINK_READ SQL_LINK_READ_SQLITE
#define DAYS_AND_PENDING SQL_DAYS_AND_PENDING /* 0014_pending_days.sql */
#define PENDING_BATCHES "(SELECT batch FROM day_batches)"

#define USER_READ "id, name, pwhash, role, key_id, created_at, disabled_at, last_signin_at"

static const char *const sql[S__COUNT] = {
    [S_META_GET] = "SELECT v FROM meta WHERE k = ?1",
    [S_META_PUT] = "INSERT INTO meta(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = ?2",
    [S_CLAIM] = "UPDATE meta SET v = v + ?1 WHERE k = 'counter' RETURNING v - ?1",
    [S_LINK_GET] = "SELECT " LINK_READ " FROM links WHERE code = ?1",
    [S_LINK_INSERT] =
        "INSERT INTO links(" SQL_LINK_COLS ") "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
        "?17, ?18, ?19, ?20, ?21)",
    [S_LINK_FIND_LIVE] = "SELECT " LINK_READ " FROM links WHERE owner = ?1 AND url = ?2 "
                         "AND state = 0 AND (expires_at = 0 OR expires_at > ?3) "
                         "ORDER BY created_at DESC LIMIT 1",
    [S_LINK_DELETE] = "UPDATE links SET state = 1, changed_at = ?2, " SQL_LINK_DATA_NULL
                      " WHERE code = ?1",
    [S_LINK_SET_STATE] = "UPDATE links SET state = ?2, changed_at = ?3 WHERE code = ?1",
    [S_LINK_IMPORTED] = "UPDATE links SET clicks = clicks + ?2, bot_clicks = bot_clicks + ?3, "
                        "imported_clicks = imported_clicks + ?2 + ?3 WHERE code = ?1",
    /* Rows of links are never deleted (a deleted link stays as a tombstone)
     * and never inserted with an id, so SQLite gives each new row the largest
     * id plus one (a rolled-back insert hands its id on), and the ids are 1..N.
     * The largest is one B-tree descent; count(*) read every page of an
     * index, every 10 s (bench/HISTORY.md, "Up to commit 69fe67d"). */
    [S_LINK_COUNT] = "SELECT coalesce(max(id), 0) FROM links",
    [S_LINK_SWEEP] = "UPDATE links SET " SQL_LINK_DATA_NULL " WHERE id IN (SELECT id FROM links "
                     "WHERE expires_at > 0 AND url IS NOT NULL AND expires_at < ?1 LIMIT ?2)",
    [S_META_DEL] = "DELETE FROM meta WHERE k = ?1",
    [S_META_ADD] = "INSERT INTO meta(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO NOTHING",
    [S_IDEM_CLAIM] = "INSERT INTO idempotency(key_id, idem, fingerprint, status, body, created_at) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(key_id, idem) DO NOTHING",
    [S_DAY_GET] = "SELECT id, clicks, bots, uniques, dims, visitors, recent FROM link_days "
                  "WHERE code = ?1 AND day = ?2",
    [S_DAY_INSERT] = "INSERT INTO link_days(code, day, clicks, bots, uniques, dims, visitors, "
                     "recent) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_DAY_INSERT_NEW] = "INSERT INTO link_days(code, day, clicks, bots, uniques, dims, visitors, "
                         "recent) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                         "ON CONFLICT(code, day) DO NOTHING",
    [S_DAY_UPDATE] = "UPDATE link_days SET clicks = ?3, bots = ?4, uniques = ?5, dims = ?6, "
                     "visitors = ?7, recent = ?8 WHERE id = ?2",
    /* A pruned day's counts move into its link's totals, in one statement
     * over the same rows the next one deletes. */
    [S_PRUNE_CARRY] = "UPDATE links SET clicks = links.clicks + p.c, "
                      "bot_clicks = links.bot_clicks + p.b FROM (SELECT code, sum(clicks) AS c, "
                      "sum(bots) AS b FROM link_days WHERE id IN (SELECT id FROM link_days "
                      "WHERE day < ?1 ORDER BY day, id LIMIT ?2) GROUP BY code) AS p "
                      "WHERE links.code = p.code",
    [S_PRUNE_DAYS] = "DELETE FROM link_days WHERE id IN (SELECT id FROM link_days "
                     "WHERE day < ?1 ORDER BY day, id LIMIT ?2)",
    [S_PRUNE_VISITORS] = "UPDATE link_days SET visitors = NULL "
                         "WHERE day >= ?2 AND day < ?1 AND visitors IS NOT NULL",
    [S_STATS_DAYS] = "SELECT day, clicks, uniques, bots FROM link_days "
                     "WHERE code = ?1 AND day BETWEEN ?2 AND ?3 ORDER BY day",
    [S_STATS_DIMS] = "SELECT dims FROM link_days WHERE code = ?1 AND day BETWEEN ?2 AND ?3",
    [S_STATS_RECENT] = "SELECT recent, day FROM link_days WHERE code = ?1 AND recent IS NOT NULL "
                       "ORDER BY day DESC",
    [S_STATS_TOTALS] =
        "SELECT count(*), coalesce(sum(clicks), 0) + (SELECT coalesce(sum(d.clicks), 0) "
        "FROM " DAYS_AND_PENDING " d WHERE ?1 < 0 OR d.code IN (SELECT code FROM links "
        "WHERE owner = ?1)), coalesce(sum(bot_clicks), 0) + (SELECT "
        "coalesce(sum(d.bots), 0) FROM " DAYS_AND_PENDING " d WHERE ?1 < 0 OR d.code IN "
        "(SELECT code FROM links WHERE owner = ?1)) FROM links WHERE ?1 < 0 OR owner = ?1",
    [S_STATS_TOP] = "SELECT d.code, sum(d.clicks) AS c FROM " DAYS_AND_PENDING " d JOIN links l "
                    "ON l.code = d.code WHERE d.day = ?1 AND (?2 < 0 OR l.owner = ?2) "
                    "GROUP BY d.code HAVING c > 0 ORDER BY c DESC, d.code LIMIT ?3",
    [S_STATS_ALL_DAYS] = "SELECT day, sum(clicks), sum(uniques), sum(bots) FROM link_days "
                         "WHERE day BETWEEN ?2 AND ?3 AND (?1 < 0 OR code IN "
                         "(SELECT code FROM links WHERE owner = ?1)) GROUP BY day ORDER BY day",
    [S_STATS_ALL_DIMS] = "SELECT dims FROM link_days WHERE day BETWEEN ?2 AND ?3 AND "
                         "(?1 < 0 OR code IN (SELECT code FROM links WHERE owner = ?1))",
    /* Appended link days (0014_pending_days.sql). A read of one link seeks
     * once per batch: the batch is the key's first column. */
    [S_BATCH_NEW] = "INSERT INTO day_batches(batch) SELECT max(coalesce(max(batch), 0), ?1) + 1 "
                    "FROM day_batches RETURNING batch",
    [S_BATCH_LIST] = "SELECT batch FROM day_batches WHERE batch <= ?2 ORDER BY batch LIMIT ?1",
    [S_BATCH_DEL] = "DELETE FROM day_batches WHERE batch = ?1",
    [S_PEND_ADD] = "INSERT INTO link_days_pending(batch, code, day, clicks, bots, uniques, dims, "
                   "visitors, recent) VALUES (?9, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_PEND_COUNT] = "SELECT (SELECT count(*) FROM link_days_pending), "
                     "(SELECT coalesce(max(batch), 0) FROM day_batches)",
    [S_PEND_DEL_UPTO] =
        "DELETE FROM link_days_pending WHERE batch = ?1 AND (code, day) <= (?2, ?3)",
    [S_PEND_DAYS] = "SELECT day, clicks, bots, uniques, visitors FROM link_days_pending "
                    "WHERE batch IN " PENDING_BATCHES " AND code = ?1 AND day BETWEEN ?2 AND ?3 "
                    "ORDER BY day",
    [S_PEND_DIMS] = "SELECT dims FROM link_days_pending WHERE batch IN " PENDING_BATCHES
                    " AND code = ?1 AND day BETWEEN ?2 AND ?3",
    [S_PEND_RECENT] = "SELECT recent FROM link_days_pending WHERE batch IN " PENDING_BATCHES
                      " AND code = ?1 AND recent IS NOT NULL",
    [S_PEND_ALL_DAYS] = "SELECT code, day, clicks, bots, uniques, visitors FROM link_days_pending "
                        "WHERE day BETWEEN ?2 AND ?3 AND (?1 < 0 OR code IN (SELECT code FROM "
                        "links WHERE owner = ?1)) ORDER BY code, day",
    [S_PEND_ALL_DIMS] = "SELECT dims FROM link_days_pending WHERE day BETWEEN ?2 AND ?3 AND "
                        "(?1 < 0 OR code IN (SELECT code FROM links WHERE owner = ?1))",
    [S_KEY_INSERT] = "INSERT INTO api_keys(name, hash, admin, created_at, user_id, scopes, domain) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [S_KEY_BY_HASH] = "SELECT " KEY_COLS KEY_FROM " WHERE k.hash = ?1",
    [S_KEY_LIST] = "SELECT " KEY_COLS KEY_FROM " ORDER BY k.id",
    [S_KEY_TOUCH] = "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1 "
                    "AND (last_used_at IS NULL OR last_used_at < ?2)",
    [S_KEY_REVOKE] = "UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at = 0",
    [S_KEY_COUNT] = "SELECT count(*) FROM api_keys",
    [S_USER_INSERT] = "INSERT INTO users(name, pwhash, role, key_id, created_at, disabled_at) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [S_USER_GET] = "SELECT " USER_READ " FROM users WHERE id = ?1",
    [S_USER_BY_NAME] = "SELECT " USER_READ " FROM users WHERE name = ?1",
    [S_USER_LIST] = "SELECT " USER_READ " FROM users ORDER BY id",
    [S_USER_PASSWORD] = "UPDATE users SET pwhash = ?2 WHERE id = ?1",
    [S_USER_DISABLE] = "UPDATE users SET disabled_at = ?2 WHERE id = ?1 AND disabled_at = 0",
    [S_USER_COUNT] = "SELECT count(*) FROM users",
    [S_USER_ROLE] = "UPDATE users SET role = ?2 WHERE id = ?1",
    [S_USER_ENABLE] = "UPDATE users SET disabled_at = 0 WHERE id = ?1 AND disabled_at != 0",
    [S_USER_SIGNED_IN] = "UPDATE users SET last_signin_at = ?2 WHERE id = ?1",
    [S_SETUP_PUT] = "INSERT INTO setup_token(id, hash, expires_at) VALUES (1, ?1, ?2) "
                    "ON CONFLICT(id) DO UPDATE SET hash = ?1, expires_at = ?2",
    [S_SETUP_CHECK] = "SELECT 1 FROM setup_token WHERE hash = ?1 AND expires_at > ?2",
    [S_SETUP_END] = "DELETE FROM setup_token",
    [S_SESSION_INSERT] = "INSERT INTO sessions(hash, user_id, created_at, seen_at, expires_at) "
                         "VALUES (?1, ?2, ?3, ?4, ?5)",
    [S_SESSION_GET] = "SELECT user_id, created_at, seen_at, expires_at FROM sessions "
                      "WHERE hash = ?1 AND expires_at > ?2",
    [S_SESSION_TOUCH] = "UPDATE sessions SET seen_at = ?2 WHERE hash = ?1",
    [S_SESSION_END] = "DELETE FROM sessions WHERE hash = ?1",
    [S_SESSION_END_USER] = "DELETE FROM sessions WHERE user_id = ?1",
    [S_SESSION_SWEEP] = "DELETE FROM sessions WHERE expires_at <= ?1 OR seen_at < ?2",
    [S_IDEM_GET] = "SELECT fingerprint, status, body, created_at FROM idempotency "
                   "WHERE key_id = ?1 AND idem = ?2 AND created_at >= ?3",
    [S_IDEM_PUT] = "INSERT INTO idempotency(key_id, idem, fingerprint, status, body, created_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(key_id, idem) DO UPDATE SET "
                   "fingerprint = ?3, status = ?4, body = ?5, created_at = ?6",
    [S_IDEM_SWEEP] = "DELETE FROM idempotency WHERE created_at < ?1",
    [S_BLOCK_ADD] = "INSERT INTO blocklist(host, created_at) VALUES (?1, ?2)",
    [S_BLOCK_DEL] = "DELETE FROM blocklist WHERE host = ?1",
    [S_BLOCK_HAS] = "SELECT 1 FROM blocklist WHERE host = ?1",
    [S_BLOCK_LIST] = "SELECT host, created_at FROM blocklist ORDER BY host",
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT unit",
    [S_RELEASE] = "RELEASE unit",
    [S_ROLLBACK_TO] = "ROLLBACK TO unit",
    [S_LINK_UPDATE] = "UPDATE links SET url = ?2, title = ?3, note = ?4, tags = ?5, "
                      "expires_at = ?6, changed_at = ?7, password = ?8, variants = ?9, "
                      "utm = ?10, dest = ?11, track = ?12 WHERE code = ?1",
    [S_LINK_RESERVE] = "UPDATE links SET used = used + 1 WHERE code = ?1 AND max_clicks > 0 "
                       "AND used < max_clicks RETURNING used",
    [S_HISTORY_ADD] = "INSERT INTO link_history(code, seq, old_url, new_url, changed_at, by_key) "
                      "VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM link_history "
                      "WHERE code = ?1), ?2, ?3, ?4, ?5)",
    [S_HISTORY_LIST] = "SELECT seq, old_url, new_url, changed_at, by_key FROM link_history "
                       "WHERE code = ?1 ORDER BY seq DESC LIMIT ?2",
    [S_DOMAIN_ADD] = "INSERT INTO domains(host, owner, created_at) VALUES (?1, ?2, ?3)",
    [S_DOMAIN_GET] = "SELECT owner FROM domains WHERE host = ?1",
    [S_DOMAIN_DEL] = "DELETE FROM domains WHERE host = ?1 AND owner = ?2",
    [S_DOMAIN_LIST] = "SELECT host, owner, created_at FROM domains "
                      "WHERE ?1 < 0 OR owner = ?1 ORDER BY host",
    [S_DOMAIN_REDIRECTS_SET] = "UPDATE domains SET base_url_redirect = ?3, "
                               "regular_404_redirect = ?4, invalid_short_url_redirect = ?5 "
                               "WHERE host = ?1 AND owner = ?2",
    [S_DOMAIN_REDIRECTS_LIST] = "SELECT host, owner, base_url_redirect, regular_404_redirect, "
                                "invalid_short_url_redirect FROM domains "
                                "WHERE ?1 < 0 OR owner = ?1 ORDER BY host",
    [S_SITE_INSERT] = "INSERT INTO sites(id, owner, badge, created_at) VALUES (?1, ?2, ?3, ?4)",
    [S_SITE_GET] = "SELECT id, owner, badge, created_at, pv_total FROM sites WHERE id = ?1",
    [S_SITE_BADGE] = "UPDATE sites SET badge = ?2 WHERE id = ?1",
    [S_SITE_LIST] = "SELECT id, owner, badge, created_at, pv_total FROM sites "
                    "WHERE ?1 < 0 OR owner = ?1 ORDER BY id",
    [S_SITE_DEL] = "DELETE FROM sites WHERE id = ?1",
    [S_SITE_DEL_HOSTS] = "DELETE FROM site_hosts WHERE site = ?1",
    [S_SITE_DEL_TOKENS] = "DELETE FROM site_tokens WHERE site = ?1",
    [S_SITE_DEL_DAYS] = "DELETE FROM site_days WHERE site = ?1",
    [S_SITE_HOST_ADD] = "INSERT INTO site_hosts(host, site) VALUES (?1, ?2)",
    [S_SITE_HOSTS_LIST] = "SELECT host, site FROM site_hosts WHERE ?1 IS NULL OR site = ?1 "
                          "ORDER BY host",
    [S_SITE_TOKEN_ADD] = "INSERT INTO site_tokens(site, hash, created_at) VALUES (?1, ?2, ?3)",
    [S_SITE_TOKEN_FIND] = "SELECT site FROM site_tokens WHERE hash = ?1",
    [S_SITE_TOKEN_DEL] = "DELETE FROM site_tokens WHERE site = ?1 AND id = ?2",
    [S_SITE_TOKEN_LIST] = "SELECT id, created_at FROM site_tokens WHERE site = ?1 ORDER BY id",
    [S_SITE_DAY_GET] = "SELECT pv, bots, dims FROM site_days WHERE site = ?1 AND day = ?2",
    /* A deleted site's beacons, still in the journal, store nothing. */
    [S_SITE_DAY_PUT] = "INSERT INTO site_days(site, day, pv, bots, dims) SELECT ?1, ?2, ?3, ?4, "
                       "?5 WHERE EXISTS (SELECT 1 FROM sites WHERE id = ?1) "
                       "ON CONFLICT(site, day) DO UPDATE SET pv = ?3, bots = ?4, dims = ?5",
    [S_SITE_PV_TOTAL] = "UPDATE sites SET pv_total = pv_total + ?2 WHERE id = ?1 AND badge",
    [S_SITE_PRUNE] = "DELETE FROM site_days WHERE rowid IN (SELECT rowid FROM site_days "
                     "WHERE day < ?1 ORDER BY day LIMIT ?2)",
    [S_SITE_STATS_DAYS] = "SELECT day, pv, 0, bots FROM site_days "
                          "WHERE site = ?1 AND day BETWEEN ?2 AND ?3 ORDER BY day",
    [S_SITE_STATS_DIMS] = "SELECT dims FROM site_days WHERE site = ?1 AND day BETWEEN ?2 AND ?3",
    [S_SITE_SIZE] = "SELECT count(*), coalesce(sum(length(dims)), 0) FROM site_days "
                    "WHERE site = ?1",
#define SINK_COLS                                                                                  \
    "id, kind, endpoint, types, owner, domain, secret, secret_old, options, created_at"
    [S_SINK_ADD] = "INSERT INTO sinks(kind, endpoint, types, owner, domain, secret, secret_old, "
                   "options, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
    [S_SINK_GET] = "SELECT " SINK_COLS " FROM sinks WHERE id = ?1 AND deleted_at = 0",
    [S_SINK_LIST] = "SELECT " SINK_COLS " FROM sinks WHERE deleted_at = 0 ORDER BY id",
    [S_SINK_DEL] = "UPDATE sinks SET deleted_at = ?2 WHERE id = ?1 AND deleted_at = 0",
    [S_SINK_SECRET] = "UPDATE sinks SET secret = ?2, secret_old = ?3 "
                      "WHERE id = ?1 AND deleted_at = 0",
    [S_SINK_UPDATE] = "UPDATE sinks SET types = ?2, owner = ?3, domain = ?4, options = ?5 "
                      "WHERE id = ?1 AND deleted_at = 0",
    [S_POS_GET] = "SELECT pos FROM sink_positions WHERE sink = ?1 AND source = ?2",
    [S_POS_INSERT] = "INSERT INTO sink_positions(sink, source, pos) VALUES (?1, ?2, ?3) "
                     "ON CONFLICT DO NOTHING",
    [S_POS_UPDATE] = "UPDATE sink_positions SET pos = ?4 "
                     "WHERE sink = ?1 AND source = ?2 AND pos = ?3",
    [S_POS_LEASE] = "INSERT INTO sink_positions(sink, source, pos, holder, lease_until) "
                    "VALUES (?1, ?2, 0, ?3, ?5) ON CONFLICT(sink, source) DO UPDATE "
                    "SET holder = ?3, lease_until = ?5 "
                    "WHERE holder = ?3 OR lease_until <= ?4",
    [S_OUTBOX_ADD] = "INSERT INTO event_outbox(id, type, at, code, owner, domain, body) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id) DO NOTHING",
    [S_OUTBOX_READ] = "SELECT seq, id, type, at, code, owner, domain, body FROM event_outbox "
                      "WHERE seq > ?1 ORDER BY seq LIMIT ?2",
    [S_OUTBOX_HEAD] = "SELECT coalesce(max(seq), 0) FROM event_outbox",
    [S_OUTBOX_PRUNE] = "DELETE FROM event_outbox WHERE seq IN (SELECT seq FROM event_outbox "
                       "WHERE at < ?1 AND seq <= (SELECT min(p.pos) FROM sink_positions p "
                       "JOIN sinks s ON s.id = p.sink WHERE s.deleted_at = 0 "
                       "AND p.source = 'links') ORDER BY seq LIMIT ?2)",
    [S_LINK_EXPIRING] = "SELECT " LINK_READ " FROM links WHERE expires_at > ?1 "
                        "AND expires_at <= ?2 AND state = 0 AND url IS NOT NULL "
                        "ORDER BY expires_at, code LIMIT ?3",
#define FAILED_COLS                                                                                \
    "id, sink, source, first_pos, last_pos, events, sha256, attempts, last_error, "                \
    "first_failed_at, archived_at, replays, last_replay_at, last_replay_result, resolved_at, "     \
    "resolved_by, resolved_reason"
    [S_FAILED_ADD] = "INSERT INTO event_failed(sink, source, first_pos, last_pos, events, body, "
                     "sha256, attempts, last_error, first_failed_at, archived_at) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) RETURNING id",
    [S_FAILED_GET] = "SELECT " FAILED_COLS ", body FROM event_failed WHERE id = ?1",
    [S_FAILED_LIST] = "SELECT " FAILED_COLS " FROM event_failed "
                      "WHERE ?1 OR resolved_at = 0 ORDER BY id DESC",
    [S_FAILED_REPLAYED] = "UPDATE event_failed SET replays = replays + 1, last_replay_at = ?2, "
                          "last_replay_result = ?3 WHERE id = ?1",
    [S_FAILED_RESOLVE] = "UPDATE event_failed SET resolved_at = ?2, resolved_by = ?3, "
                         "resolved_reason = ?4 WHERE id = ?1 AND resolved_at = 0",
    [S_BACKUP_NOTE] = "INSERT INTO ops_backups (ended_at, bytes, node) VALUES (?1, ?2, ?3)",
    [S_BACKUP_LAST] = "SELECT ended_at, bytes FROM ops_backups ORDER BY ended_at DESC LIMIT 1",
    /* Taken when free, expired or already the holder's; else nothing changes. */
    [S_LEASE_TAKE] = "INSERT INTO ops_leases (name, holder, expires_at) VALUES (?1, ?2, ?4) "
                     "ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, "
                     "expires_at = excluded.expires_at "
                     "WHERE ops_leases.holder = excluded.holder OR ops_leases.expires_at <= ?3",
};

#define COMPACT_BATCHES 128   /* batches merged in one pass of compacting */
#define COMPACT_STOP_EVERY 16 /* link days between a pass's looks at its stop */

struct conn {
    sqlite3 *db;
    sqlite3_stmt *stmt[S__COUNT];
    sqlite3_stmt *cursor[COMPACT_BATCHES]; /* compacting's, one a batch */
    int cache_kib; /* the page cache its write transactions asked for; 0: none yet */
    struct conn *next;
};

/* The connection that stores clicks (the writer's background lane, a
 * coop.h thread) merges them into link days all over the file, so it keeps
 * a large page cache. The others that write (creating links, a CLI
 * command) touch a few pages a transaction, and SQLite walks the whole hash
 * table of a connection's page cache at each commit, which with 128 MiB cost
 * the create lane dearly (bench/HISTORY.md, "Up to commit 69fe67d"), so
 * they keep 8 MiB.
 * Readers keep SQLite's default (2 MiB), so reading links to warm the
 * redirect cache does not copy the file into memory. */
#define CLICKS_CACHE_KIB 131072
#define CREATES_CACHE_KIB 8192
/* A bulk writer (store_bulk: an import) merges link days all over the file
 * in few, large transactions, so the page cache's walk at each commit
 * matters less than reading pages back: it keeps a cache the size of a
 * large store's hot part, and maps the file so that pages missing from the
 * cache are read without a copy. */
#define BULK_CACHE_KIB 1048576
#define BULK_MMAP_BYTES 4294967296LL

/* Copying the WAL back into the database file (a checkpoint) is SQLite's
 * own work, by default done inside the commit that takes the WAL past 1,000
 * pages: in the writer thread, with the creates of the next batch waiting
 * behind it. So a store that serves starts a thread for it (sq_background)
 * at background priority, and the WAL hook of a foreground commit wakes it.
 * A commit that stores clicks (a coop.h thread, background already) copies
 * inline, as SQLite's default does, and so does every commit without the
 * thread (CLI commands): nobody waits for those, and a copy made between
 * two commits of one thread catches up, so the WAL starts again from its
 * beginning and stays short (a long one costs every page lookup more).
 *
 * The thread's copies are passive: they never make the writer wait. But
 * under a steady stream of commits a copy never quite catches up, and SQLite
 * starts the WAL again from its beginning only after one that did. So once
 * the WAL holds CKPT_RESTART_PAGES, the next commit's hook, in the writing
 * thread, makes the copy that restarts it: the writer waits while it copies
 * what came in since the thread's last copy and syncs the file, at the
 * writer's priority, not behind a background thread holding the writer's
 * lock. What the thread did for creates: bench/HISTORY.md, "Figures once
 * quoted in code comments". */
#define CKPT_PAGES 1000          /* SQLite's default threshold */
#define CKPT_RESTART_PAGES 16384 /* 64 MiB of WAL */

struct ckpt {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t thread;
    bool started;                  /* to be joined */
    bool running, stop;            /* running: the commits leave the copies to it */
    int copy_pages, restart_pages; /* CKPT_PAGES, CKPT_RESTART_PAGES */
    int pages;                     /* WAL pages after the last commit */
    int copied;                    /* ... of them copied by the last checkpoint */
    bool restart;                  /* the next commit restarts the WAL */
};

struct sqlite_store {
    struct store base;
    char *path;
    pthread_key_t key;  /* this thread's struct conn */
    pthread_mutex_t mu; /* guards 'conns' */
    struct conn *conns; /* every connection, closed by close() */
    struct ckpt ckpt;
};

/* Every few thousand virtual machine steps of a statement: a background
 * thread's yield (coop.h), and the end of a statement that has run past
 * its thread's deadline (store_set_deadline): a long search on a store
 * thread shares its core and stops at the bound. */
static int on_progress(void *arg)
{
    (void)arg;
    coop_point();
    int64_t d = store_deadline();
    return d && mono_ms() > d;
}

static int open_db(const char *path, sqlite3 **out)
{
    sqlite3 *db = NULL;
    if (sqlite_coop_register() != ERR_OK)
        return ERR_STORAGE;
    int rc = sqlite3_open_v2(path, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             SQLITE_COOP_VFS);
    if (rc != SQLITE_OK) {
        log_at(LOG_ERROR, "cannot open database '%s': %s", path,
               db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return ERR_STORAGE;
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_progress_handler(db, 4000, on_progress, NULL);
    char *msg = NULL;
    rc = sqlite3_exec(db,
                      "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                      "PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;"
                      "PRAGMA journal_size_limit = 67108864;",
                      NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        log_at(LOG_ERROR, "cannot set up database '%s': %s", path, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_close(db);
        return ERR_STORAGE;
    }
    *out = db;
    return ERR_OK;
}

/* ---- the checkpointer ---- */

/* After every commit, in the committing thread, with the pages now in the
 * WAL: copies them itself (without the thread, or in a background thread)
 * or leaves that to the checkpoint thread. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct ckpt *k = &((struct sqlite_store *)arg)->ckpt;
    if (pages < k->copy_pages)
        return SQLITE_OK;
    pthread_mutex_lock(&k->mu);
    bool threaded = k->running && !coop_background(), restart = k->restart;
    if (threaded) {
        k->pages = pages;
        pthread_cond_signal(&k->wake);
    }
    pthread_mutex_unlock(&k->mu);
    if (!threaded) {
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    } else if (restart) {
        /* SQLITE_BUSY while the thread is copying: the next commit tries again */
        if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_RESTART, NULL, NULL) ==
            SQLITE_OK) {
            pthread_mutex_lock(&k->mu);
            k->restart = false;
            k->pages = k->copied = 0;
            pthread_mutex_unlock(&k->mu);
        }
    }
    return SQLITE_OK;
}

/* Due once CKPT_PAGES pages have come since the last copy (a WAL that has
 * started again from its beginning holds fewer pages than were copied), and
 * not while a commit is to restart it. */
static bool ckpt_due(const struct ckpt *k)
{
    return !k->restart && k->pages >= k->copy_pages &&
           (k->pages < k->copied || k->pages - k->copied >= k->copy_pages);
}

static struct conn *conn_get(struct store *base);

static void *ckpt_main(void *arg)
{
    struct sqlite_store *s = arg;
    struct ckpt *k = &s->ckpt;
    struct conn *c = conn_get(&s->base);
    pthread_mutex_lock(&k->mu);
    if (!c) /* the commits checkpoint, as without the thread */
        k->running = false;
    while (!k->stop && c) {
        if (!ckpt_due(k)) {
            pthread_cond_wait(&k->wake, &k->mu);
            continue;
        }
        pthread_mutex_unlock(&k->mu);
        int pages = 0, copied = 0;
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &pages, &copied);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            log_at(LOG_WARN, "WAL checkpoint failed: %s", sqlite3_errmsg(c->db));
        coop_rest();
        pthread_mutex_lock(&k->mu);
        if (rc == SQLITE_OK) {
            k->copied = copied;
            k->restart = pages >= k->restart_pages;
        } else {
            k->pages = 0; /* try again after the next commit */
        }
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

static int sq_background(struct store *st, int nice)
{
    struct ckpt *k = &((struct sqlite_store *)st)->ckpt;
    pthread_mutex_lock(&k->mu);
    if (k->started) {
        pthread_mutex_unlock(&k->mu);
        return ERR_OK;
    }
    k->stop = false;
    struct coop_role role = {"shortd-ckpt", nice, 0};
    int rc = coop_start(&k->thread, role, ckpt_main, st);
    k->running = k->started = rc == 0;
    pthread_mutex_unlock(&k->mu);
    return rc == 0 ? ERR_OK : log_fail(ERR_STORAGE, "cannot start the checkpoint thread");
}

void store_sqlite_checkpoint_at(struct store *st, int copy_pages, int restart_pages)
{
    struct ckpt *k = &((struct sqlite_store *)st)->ckpt;
    pthread_mutex_lock(&k->mu);
    k->copy_pages = copy_pages;
    k->restart_pages = restart_pages;
    pthread_mutex_unlock(&k->mu);
}

static void ckpt_stop(struct ckpt *k)
{
    pthread_mutex_lock(&k->mu);
    bool started = k->started;
    k->stop = true;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->mu);
    if (started)
        pthread_join(k->thread, NULL);
    k->running = k->started = false;
}

/* This thread's connection, opened on first use. NULL when it cannot open. */
static struct conn *conn_get(struct store *base)
{
    struct sqlite_store *s = (struct sqlite_store *)base;
    struct conn *c = pthread_getspecific(s->key);
    if (c)
        return c;
    c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    if (open_db(s->path, &c->db) != ERR_OK) {
        free(c);
        return NULL;
    }
    sqlite3_wal_hook(c->db, wal_hook, s);
    pthread_mutex_lock(&s->mu);
    c->next = s->conns;
    s->conns = c;
    pthread_mutex_unlock(&s->mu);
    pthread_setspecific(s->key, c);
    return c;
}

/* A reset statement of this thread's connection, ready for binding. */
static sqlite3_stmt *stmt_get(struct store *st, enum stmt id)
{
    struct conn *c = conn_get(st);
    if (!c)
        return NULL;
    if (!c->stmt[id]) {
        if (sqlite3_prepare_v3(c->db, sql[id], -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[id], NULL) !=
            SQLITE_OK) {
            log_at(LOG_ERROR, "cannot prepare statement %d: %s", (int)id, sqlite3_errmsg(c->db));
            return NULL;
        }
    }
    return c->stmt[id];
}

static int fail(sqlite3_stmt *q, const char *what)
{
    sqlite3 *db = sqlite3_db_handle(q);
    int code = sqlite3_extended_errcode(db);
    sqlite3_reset(q);
    if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY)
        return ERR_EXISTS;
    return log_fail(ERR_STORAGE, "sqlite %s failed: %s", what, sqlite3_errmsg(db));
}

/* Runs a statement that returns no rows we need. */
static int run_done(sqlite3_stmt *q, const char *what)
{
    int rc = sqlite3_step(q);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return fail(q, what);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return ERR_OK;
}

static void finish(sqlite3_stmt *q)
{
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
}

static char *col_dup(sqlite3_stmt *q, int i)
{
    if (sqlite3_column_type(q, i) == SQLITE_NULL)
        return NULL;
    const unsigned char *t = sqlite3_column_text(q, i);
    int n = sqlite3_column_bytes(q, i);
    return slice_dup((struct slice){(const char *)t, (size_t)n});
}

static void bind_opt_text(sqlite3_stmt *q, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, i);
}

static void row_to_link(sqlite3_stmt *q, struct link *l)
{
    memset(l, 0, sizeof(*l));
    const unsigned char *code = sqlite3_column_text(q, 0);
    size_t n = (size_t)sqlite3_column_bytes(q, 0);
    if (n > CODE_MAX)
        n = CODE_MAX;
    memcpy(l->code, code, n);
    l->code[n] = '\0';
    l->owner = sqlite3_column_int64(q, 1);
    l->url = col_dup(q, 2);
    l->title = col_dup(q, 3);
    l->note = col_dup(q, 4);
    l->tags = col_dup(q, 5);
    l->created_at = sqlite3_column_int64(q, 6);
    l->expires_at = sqlite3_column_int64(q, 7);
    l->changed_at = sqlite3_column_int64(q, 8);
    l->state = sqlite3_column_int(q, 9);
    l->permanent = sqlite3_column_int(q, 10) != 0;
    l->clicks = sqlite3_column_int64(q, 11);
    l->bot_clicks = sqlite3_column_int64(q, 12);
    l->password = col_dup(q, 13);
    l->domain = col_dup(q, 14);
    l->variants = col_dup(q, 15);
    l->utm = col_dup(q, 16);
    l->dest = col_dup(q, 17);
    l->max_clicks = sqlite3_column_int64(q, 18);
    l->used = sqlite3_column_int64(q, 19);
    l->imported = sqlite3_column_int64(q, 20);
    l->untracked = sqlite3_column_int(q, 21) == 0;
}

static void bind_blob(sqlite3_stmt *q, int i, const void *p, size_t n)
{
    if (p)
        sqlite3_bind_blob(q, i, p, (int)n, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

/* ---- lifecycle ---- */

/* Version 1's rows of a link's day (daily, dims, and recent for its newest
 * day) become its link_days row; visitor hashes are not carried over (the
 * unique counts are). Then links keep only the totals of pruned days. */
static int convert_v3(sqlite3 *db)
{
    static const char *const text[] = {
        "SELECT d.code, d.day, d.clicks, d.bots, d.uniques, "
        "d.day = (SELECT max(day) FROM daily m WHERE m.code = d.code) FROM daily d",
        "SELECT dim, value, n FROM dims WHERE code = ?1 AND day = ?2",
        "SELECT ts, referrer, country, device, browser FROM recent WHERE code = ?1 ORDER BY id",
        "INSERT INTO link_days(code, day, clicks, bots, uniques, dims, recent) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    };
    sqlite3_stmt *q[4] = {NULL, NULL, NULL, NULL};
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    int rc = ERR_OK;
    for (int i = 0; i < 4 && rc == ERR_OK; i++)
        if (sqlite3_prepare_v2(db, text[i], -1, &q[i], NULL) != SQLITE_OK)
            rc = log_fail(ERR_STORAGE, "cannot convert the clicks: %s", sqlite3_errmsg(db));
    while (rc == ERR_OK && sqlite3_step(q[0]) == SQLITE_ROW) {
        struct dayrow r;
        dayrow_init(&r);
        r.clicks = sqlite3_column_int64(q[0], 2);
        r.bots = sqlite3_column_int64(q[0], 3);
        r.uniques_base = sqlite3_column_int64(q[0], 4);
        for (int k = 1; k <= 2; k++) {
            if (k == 2 && !sqlite3_column_int(q[0], 5))
                break;
            sqlite3_reset(q[k]);
            sqlite3_bind_value(q[k], 1, sqlite3_column_value(q[0], 0));
            if (k == 1)
                sqlite3_bind_value(q[k], 2, sqlite3_column_value(q[0], 1));
            while (sqlite3_step(q[k]) == SQLITE_ROW) {
                if (k == 1) {
                    dayrow_tally(&r, sqlite3_column_int(q[1], 0),
                                 (const char *)sqlite3_column_text(q[1], 1),
                                 (size_t)sqlite3_column_bytes(q[1], 1),
                                 sqlite3_column_int64(q[1], 2));
                } else {
                    const char *t[4];
                    for (int f = 0; f < 4; f++)
                        t[f] = (const char *)sqlite3_column_text(q[2], f + 1);
                    dayrow_remember(&r, sqlite3_column_int64(q[2], 0), t);
                }
            }
        }
        struct day_blobs b;
        dayrow_encode(&r, &bufs[0], &bufs[1], &bufs[2], &b);
        dayrow_release(&r);
        sqlite3_reset(q[3]);
        sqlite3_bind_value(q[3], 1, sqlite3_column_value(q[0], 0));
        sqlite3_bind_value(q[3], 2, sqlite3_column_value(q[0], 1));
        sqlite3_bind_int64(q[3], 3, b.clicks);
        sqlite3_bind_int64(q[3], 4, b.bots);
        sqlite3_bind_int64(q[3], 5, b.uniques);
        bind_blob(q[3], 6, b.dims, b.ndims);
        bind_blob(q[3], 7, b.recent, b.nrecent);
        if (sqlite3_step(q[3]) != SQLITE_DONE)
            rc = log_fail(ERR_STORAGE, "cannot convert the clicks: %s", sqlite3_errmsg(db));
    }
    for (int i = 0; i < 4; i++)
        sqlite3_finalize(q[i]);
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    char *msg = NULL;
    if (rc == ERR_OK &&
        sqlite3_exec(db,
                     "UPDATE links SET clicks = clicks - s.c, bot_clicks = bot_clicks - s.b "
                     "FROM (SELECT code, sum(clicks) AS c, sum(bots) AS b FROM daily "
                     "GROUP BY code) AS s WHERE links.code = s.code;"
                     "DROP TABLE daily; DROP TABLE dims; DROP TABLE visitors; "
                     "DROP TABLE recent;",
                     NULL, NULL, &msg) != SQLITE_OK) {
        rc = log_fail(ERR_STORAGE, "cannot convert the clicks: %s", msg);
        sqlite3_free(msg);
    }
    return rc;
}

/* One step of migrations_run: its SQL, its hook, then its version. SQLite's
 * message of a failed statement goes to 'msg' (sqlite3_free). */
struct migrating {
    sqlite3 *db;
    char *msg;
};

static int apply_step(const struct migration *m, void *arg)
{
    struct migrating *g = arg;
    if (sqlite3_exec(g->db, m->sql, NULL, NULL, &g->msg) != SQLITE_OK)
        return ERR_STORAGE;
    for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
        if (hooks[i].version == m->version && hooks[i].run(g->db) != ERR_OK)
            return ERR_STORAGE;
    char set[64];
    snprintf(set, sizeof(set), "PRAGMA user_version = %d", m->version);
    if (sqlite3_exec(g->db, set, NULL, NULL, &g->msg) != SQLITE_OK)
        return ERR_STORAGE;
    return ERR_OK;
}

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    int version = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return version;
}

static int migrate(sqlite3 *db, const char *path)
{
    int version = user_version(db);
    if (version == SCHEMA_VERSION)
        return ERR_OK;
    if (version > SCHEMA_VERSION)
        return log_fail(ERR_STORAGE, "database '%s' has schema %d, newer than this shortd (%d)",
                        path, version, SCHEMA_VERSION);
    struct migrating g = {db, NULL};
    int to;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &g.msg) != SQLITE_OK)
        goto fail;
    /* Re-read under the write lock: another process may have migrated. */
    if (migrations_run(steps, NSTEPS, user_version(db), apply_step, &g, &to) != ERR_OK)
        goto fail;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, &g.msg) != SQLITE_OK)
        goto fail;
    return ERR_OK;
fail:
    log_at(LOG_ERROR, "cannot migrate database '%s': %s", path, g.msg ? g.msg : "?");
    sqlite3_free(g.msg);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return ERR_STORAGE;
}

static void sq_close(struct store *st);

/* SQLite keeps memory statistics under a global mutex that every allocation
 * of every connection takes; shortd never reads them. Must run before SQLite
 * is initialised, so once, before the first connection. */
static void sqlite_setup(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

static int sq_open(const char *path, struct store **out)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_setup);
    if (!*path)
        return log_fail(ERR_INVALID, "empty database path");
    /* A new database is made readable by its owner alone: its meta table
     * holds the keys that hash API keys and visitors, and SQLite gives the
     * -wal and -shm files the database's own mode. An empty file is an
     * empty database. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0)
        close(fd);
    struct sqlite_store *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->base.ops = &store_sqlite_ops;
    s->path = xstrdup(path);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->ckpt.mu, NULL);
    pthread_cond_init(&s->ckpt.wake, NULL);
    s->ckpt.copy_pages = CKPT_PAGES;
    s->ckpt.restart_pages = CKPT_RESTART_PAGES;
    pthread_key_create(&s->key, NULL);
    struct conn *c = conn_get(&s->base);
    if (!c || migrate(c->db, path) != ERR_OK) {
        sq_close(&s->base);
        return ERR_STORAGE;
    }
    *out = &s->base;
    return ERR_OK;
}

/* Only after every thread that used the store has stopped using it. */
static void sq_close(struct store *st)
{
    struct sqlite_store *s = (struct sqlite_store *)st;
    if (!s)
        return;
    ckpt_stop(&s->ckpt);
    struct conn *c = s->conns;
    while (c) {
        struct conn *next = c->next;
        for (int i = 0; i < S__COUNT; i++)
            sqlite3_finalize(c->stmt[i]);
        for (int i = 0; i < COMPACT_BATCHES; i++)
            sqlite3_finalize(c->cursor[i]);
        sqlite3_close(c->db);
        free(c);
        c = next;
    }
    pthread_key_delete(s->key);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->ckpt.mu);
    pthread_cond_destroy(&s->ckpt.wake);
    free(s->path);
    free(s);
}

static int sq_ping(struct store *st)
{
    sqlite3_stmt *q = stmt_get(st, S_KEY_COUNT);
    if (!q)
        return ERR_STORAGE;
    int rc = sqlite3_step(q);
    finish(q);
    return rc == SQLITE_ROW ? ERR_OK : ERR_STORAGE;
}

/* SQLite's online backup: copies a consistent snapshot while others write. */
static int sq_backup(struct store *st, const char *to_path)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    sqlite3 *dst = NULL;
    if (sqlite3_open(to_path, &dst) != SQLITE_OK) {
        sqlite3_close(dst);
        return log_fail(ERR_IO, "cannot create backup '%s'", to_path);
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", c->db, "main");
    int rc = SQLITE_ERROR;
    if (b) {
        do {
            rc = sqlite3_backup_step(b, 1024);
            int total = sqlite3_backup_pagecount(b);
            store_backup_progress(total - sqlite3_backup_remaining(b), total);
            if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
                sqlite3_sleep(20);
        } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
        sqlite3_backup_finish(b);
    }
    int err = sqlite3_errcode(dst);
    sqlite3_close(dst);
    if (rc != SQLITE_DONE || err != SQLITE_OK)
        return log_fail(ERR_IO, "backup to '%s' failed", to_path);
    return ERR_OK;
}

/* ---- transactions ---- */

static int simple(struct store *st, enum stmt id, const char *what)
{
    sqlite3_stmt *q = stmt_get(st, id);
    if (!q)
        return ERR_STORAGE;
    return run_done(q, what);
}

static int sq_begin(struct store *st)
{
    struct conn *c = conn_get(st);
    int kib = store_bulk()        ? BULK_CACHE_KIB
              : coop_background() ? CLICKS_CACHE_KIB
                                  : CREATES_CACHE_KIB;
    if (c && c->cache_kib != kib) {
        char pragma[96];
        snprintf(pragma, sizeof(pragma), "PRAGMA cache_size = -%d; PRAGMA mmap_size = %lld", kib,
                 kib == BULK_CACHE_KIB ? BULK_MMAP_BYTES : 0LL);
        if (sqlite3_exec(c->db, pragma, NULL, NULL, NULL) == SQLITE_OK)
            c->cache_kib = kib;
    }
    return simple(st, S_BEGIN, "begin");
}
static int sq_commit(struct store *st) { return simple(st, S_COMMIT, "commit"); }

static void sq_rollback(struct store *st)
{
    struct conn *c = conn_get(st);
    if (c && !sqlite3_get_autocommit(c->db))
        simple(st, S_ROLLBACK, "rollback");
}

static int sq_savepoint(struct store *st) { return simple(st, S_SAVEPOINT, "savepoint"); }

static void sq_savepoint_end(struct store *st, bool keep)
{
    if (!keep)
        simple(st, S_ROLLBACK_TO, "rollback to savepoint");
    simple(st, S_RELEASE, "release savepoint");
}

/* ---- meta ---- */

static int sq_meta_get(struct store *st, const char *key, struct buf *val)
{
    sqlite3_stmt *q = stmt_get(st, S_META_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "meta get");
    buf_reset(val);
    buf_add(val, sqlite3_column_blob(q, 0), (size_t)sqlite3_column_bytes(q, 0));
    finish(q);
    return ERR_OK;
}

static int sq_meta_put(struct store *st, const char *key, const void *val, size_t n)
{
    sqlite3_stmt *q = stmt_get(st, S_META_PUT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_blob(q, 2, val, (int)n, SQLITE_TRANSIENT);
    return run_done(q, "meta put");
}

static int sq_claim_block(struct store *st, uint64_t size, uint64_t *start)
{
    sqlite3_stmt *q = stmt_get(st, S_CLAIM);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)size);
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "claim block");
    *start = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_step(q);
    finish(q);
    return ERR_OK;
}

/* ---- links ---- */

static int one_link(sqlite3_stmt *q, struct link *out, const char *what)
{
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, what);
    row_to_link(q, out);
    finish(q);
    return ERR_OK;
}

static int sq_link_get(struct store *st, const char *code, struct link *out)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    return one_link(q, out, "link get");
}

static int sq_link_insert(struct store *st, const struct link *l)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_INSERT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, l->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, l->owner);
    bind_opt_text(q, 3, l->url);
    bind_opt_text(q, 4, l->title);
    bind_opt_text(q, 5, l->note);
    bind_opt_text(q, 6, l->tags);
    sqlite3_bind_int64(q, 7, l->created_at);
    sqlite3_bind_int64(q, 8, l->expires_at);
    sqlite3_bind_int64(q, 9, l->changed_at);
    sqlite3_bind_int(q, 10, l->state);
    sqlite3_bind_int(q, 11, l->permanent);
    sqlite3_bind_int64(q, 12, l->clicks);
    sqlite3_bind_int64(q, 13, l->bot_clicks);
    bind_opt_text(q, 14, l->password);
    bind_opt_text(q, 15, l->domain);
    bind_opt_text(q, 16, l->variants);
    bind_opt_text(q, 17, l->utm);
    bind_opt_text(q, 18, l->dest);
    sqlite3_bind_int64(q, 19, l->max_clicks);
    sqlite3_bind_int64(q, 20, l->used);
    sqlite3_bind_int(q, 21, !l->untracked);
    int rc = run_done(q, "link insert");
    if (rc != ERR_OK)
        return rc;
    return events_link(st, EVT_LINK_CREATED, l->code, l->created_at);
}

static int sq_link_update(struct store *st, const struct link *l)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_UPDATE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, l->code, -1, SQLITE_STATIC);
    bind_opt_text(q, 2, l->url);
    bind_opt_text(q, 3, l->title);
    bind_opt_text(q, 4, l->note);
    bind_opt_text(q, 5, l->tags);
    sqlite3_bind_int64(q, 6, l->expires_at);
    sqlite3_bind_int64(q, 7, l->changed_at);
    bind_opt_text(q, 8, l->password);
    bind_opt_text(q, 9, l->variants);
    bind_opt_text(q, 10, l->utm);
    bind_opt_text(q, 11, l->dest);
    sqlite3_bind_int(q, 12, !l->untracked);
    int rc = run_done(q, "link update");
    if (rc != ERR_OK)
        return rc;
    if (!sqlite3_changes(sqlite3_db_handle(q)))
        return ERR_NOTFOUND;
    return events_link(st, EVT_LINK_UPDATED, l->code, l->changed_at);
}

static int sq_link_reserve(struct store *st, const char *code, int64_t *used)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_RESERVE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_TOOBIG;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "link reserve");
    *used = sqlite3_column_int64(q, 0);
    sqlite3_step(q);
    finish(q);
    return events_link_reserved(st, code, *used, now_ms());
}

static int sq_history_add(struct store *st, const char *code, const char *old_url,
                          const char *new_url, int64_t at, int64_t by_key)
{
    sqlite3_stmt *q = stmt_get(st, S_HISTORY_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    bind_opt_text(q, 2, old_url);
    bind_opt_text(q, 3, new_url);
    sqlite3_bind_int64(q, 4, at);
    sqlite3_bind_int64(q, 5, by_key);
    return run_done(q, "history add");
}

static int sq_history_list(struct store *st, const char *code, int limit, change_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_HISTORY_LIST);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 2, limit);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct link_change c = {
            .seq = sqlite3_column_int64(q, 0),
            .old_url = (const char *)sqlite3_column_text(q, 1),
            .new_url = (const char *)sqlite3_column_text(q, 2),
            .changed_at = sqlite3_column_int64(q, 3),
            .by_key = sqlite3_column_int64(q, 4),
        };
        if (cb(&c, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "history list");
    finish(q);
    return ERR_OK;
}

static int sq_domain_add(struct store *st, const char *host, int64_t owner, int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_DOMAIN_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, owner);
    sqlite3_bind_int64(q, 3, now);
    return run_done(q, "domain add");
}

static int sq_domain_get(struct store *st, const char *host, int64_t *owner)
{
    sqlite3_stmt *q = stmt_get(st, S_DOMAIN_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "domain get");
    *owner = sqlite3_column_int64(q, 0);
    finish(q);
    return ERR_OK;
}

static int sq_domain_del(struct store *st, const char *host, int64_t owner)
{
    sqlite3_stmt *q = stmt_get(st, S_DOMAIN_DEL);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, owner);
    int rc = run_done(q, "domain delete");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

static int sq_domain_list(struct store *st, int64_t owner, domain_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_DOMAIN_LIST);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, owner);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (cb((const char *)sqlite3_column_text(q, 0), sqlite3_column_int64(q, 1),
               sqlite3_column_int64(q, 2), arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "domain list");
    finish(q);
    return ERR_OK;
}

static int sq_domain_redirects_set(struct store *st, const char *host, int64_t owner,
                                   const struct domain_redirects *d)
{
    sqlite3_stmt *q = stmt_get(st, S_DOMAIN_REDIRECTS_SET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, owner);
    const char *v[3] = {d->base_url, d->regular_404, d->invalid};
    for (int i = 0; i < 3; i++) {
        if (v[i])
            sqlite3_bind_text(q, 3 + i, v[i], -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(q, 3 + i);
    }
    int rc = run_done(q, "domain redirects set");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

static int sq_domain_redirects_list(struct store *st, int64_t owner, redirects_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_DOMAIN_REDIRECTS_LIST);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, owner);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct domain_redirects d = {
            .base_url = (const char *)sqlite3_column_text(q, 2),
            .regular_404 = (const char *)sqlite3_column_text(q, 3),
            .invalid = (const char *)sqlite3_column_text(q, 4),
        };
        if (cb((const char *)sqlite3_column_text(q, 0), sqlite3_column_int64(q, 1), &d, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "domain redirects list");
    finish(q);
    return ERR_OK;
}

static int sq_link_find_live(struct store *st, int64_t owner, const char *url, int64_t now,
                             struct link *out)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_FIND_LIVE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, owner);
    sqlite3_bind_text(q, 2, url, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, now);
    return one_link(q, out, "link find");
}

/* The event of a link moved to 'state' (enabled again: updated). */
static enum event_type link_state_event(int state)
{
    return state == LINK_DELETED    ? EVT_LINK_DELETED
           : state == LINK_DISABLED ? EVT_LINK_DISABLED
                                    : EVT_LINK_UPDATED;
}

static int sq_link_set_state(struct store *st, const char *code, int state, int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, state == LINK_DELETED ? S_LINK_DELETE : S_LINK_SET_STATE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    if (state == LINK_DELETED) {
        sqlite3_bind_int64(q, 2, now);
    } else {
        sqlite3_bind_int(q, 2, state);
        sqlite3_bind_int64(q, 3, now);
    }
    int rc = run_done(q, "link state");
    if (rc != ERR_OK)
        return rc;
    if (!sqlite3_changes(sqlite3_db_handle(q)))
        return ERR_NOTFOUND;
    return events_link(st, link_state_event(state), code, now);
}

static int sq_link_imported(struct store *st, const char *code, int64_t clicks, int64_t bots)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_IMPORTED);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, clicks);
    sqlite3_bind_int64(q, 3, bots);
    int rc = run_done(q, "link imported");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

/* Binds parameter i (from 1) to a value that outlives the statement. */
static void bind_param(sqlite3_stmt *q, int i, const struct store_value *v)
{
    if (v->type == VAL_INT)
        sqlite3_bind_int64(q, i, v->i);
    else if (v->type == VAL_TEXT)
        sqlite3_bind_text(q, i, v->p ? v->p : "", (int)v->n, SQLITE_STATIC);
    else if (v->type == VAL_BLOB)
        sqlite3_bind_blob(q, i, v->p ? v->p : "", (int)v->n, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

/* The query comes from sqlgen.c; prepared for each call. */
static int sq_link_list(struct store *st, const struct link_query *lq, link_cb cb, void *arg)
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    struct sql_stmt s;
    sql_stmt_init(&s);
    sqlgen_list(&s, &sql_sqlite, lq);
    sqlite3_stmt *q = NULL;
    int rc = ERR_STORAGE;
    if (sqlite3_prepare_v2(c->db, s.text.p, -1, &q, NULL) != SQLITE_OK) {
        log_at(LOG_ERROR, "cannot prepare link list: %s", sqlite3_errmsg(c->db));
        goto out;
    }
    for (int i = 0; i < s.nparams; i++)
        bind_param(q, i + 1, &s.param[i]);
    int step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct link l;
        row_to_link(q, &l);
        int stop = cb(&l, arg);
        link_release(&l);
        if (stop)
            break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        log_at(LOG_ERROR, "link list failed: %s", sqlite3_errmsg(c->db));
        goto out;
    }
    rc = ERR_OK;
out:
    sqlite3_finalize(q);
    sql_stmt_release(&s);
    return rc;
}

static int sq_link_list_floor(struct store *st, const struct link_query *lq, int rows,
                              int64_t *created, char code[CODE_MAX + 1])
{
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    struct sql_stmt s;
    sql_stmt_init(&s);
    sqlgen_list_floor(&s, &sql_sqlite, lq, rows);
    sqlite3_stmt *q = NULL;
    int rc = ERR_STORAGE;
    if (sqlite3_prepare_v2(c->db, s.text.p, -1, &q, NULL) != SQLITE_OK) {
        log_at(LOG_ERROR, "cannot prepare link list floor: %s", sqlite3_errmsg(c->db));
        goto out;
    }
    for (int i = 0; i < s.nparams; i++)
        bind_param(q, i + 1, &s.param[i]);
    int step = sqlite3_step(q);
    if (step == SQLITE_ROW && sqlite3_column_bytes(q, 1) <= CODE_MAX) {
        *created = sqlite3_column_int64(q, 0);
        memcpy(code, sqlite3_column_text(q, 1), (size_t)sqlite3_column_bytes(q, 1) + 1);
        rc = ERR_OK;
    } else if (step == SQLITE_DONE) {
        rc = ERR_NOTFOUND;
    } else {
        log_at(LOG_ERROR, "link list floor failed: %s", sqlite3_errmsg(c->db));
    }
out:
    sqlite3_finalize(q);
    sql_stmt_release(&s);
    return rc;
}

static int count(struct store *st, enum stmt id, int64_t *n)
{
    sqlite3_stmt *q = stmt_get(st, id);
    if (!q)
        return ERR_STORAGE;
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "count");
    *n = sqlite3_column_int64(q, 0);
    finish(q);
    return ERR_OK;
}

static int sq_link_count(struct store *st, int64_t *n) { return count(st, S_LINK_COUNT, n); }

static int sq_link_sweep(struct store *st, int64_t before, int limit, int *swept)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_SWEEP);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, before);
    sqlite3_bind_int(q, 2, limit);
    int rc = run_done(q, "link sweep");
    *swept = rc == ERR_OK ? sqlite3_changes(sqlite3_db_handle(q)) : 0;
    return rc;
}

/* ---- click analytics ---- */

static int sq_meta_del(struct store *st, const char *key)
{
    sqlite3_stmt *q = stmt_get(st, S_META_DEL);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    return run_done(q, "meta delete");
}

static int sq_meta_add(struct store *st, const char *key, const void *val, size_t n)
{
    sqlite3_stmt *q = stmt_get(st, S_META_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_blob(q, 2, val, (int)n, SQLITE_TRANSIENT);
    int rc = run_done(q, "meta add");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_EXISTS;
}

static void bind_idem(sqlite3_stmt *q, int64_t key_id, const char *idem, const struct idem_rec *rec)
{
    sqlite3_bind_int64(q, 1, key_id);
    sqlite3_bind_text(q, 2, idem, -1, SQLITE_STATIC);
    sqlite3_bind_blob(q, 3, rec->fingerprint, 32, SQLITE_STATIC);
    sqlite3_bind_int(q, 4, rec->status);
    sqlite3_bind_text(q, 5, rec->body ? rec->body : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, rec->created_at);
}

static int sq_idem_claim(struct store *st, int64_t key_id, const char *idem,
                         const struct idem_rec *rec)
{
    sqlite3_stmt *q = stmt_get(st, S_IDEM_CLAIM);
    if (!q)
        return ERR_STORAGE;
    bind_idem(q, key_id, idem, rec);
    int rc = run_done(q, "idempotency claim");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_EXISTS;
}

/* ---- analytics: one row per link and day (dayrow.h) ---- */

static const void *col_blob(sqlite3_stmt *q, int i, size_t *n)
{
    *n = (size_t)sqlite3_column_bytes(q, i);
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NULL : sqlite3_column_blob(q, i);
}


static void bind_day(sqlite3_stmt *q, const struct day_blobs *b)
{
    sqlite3_bind_int64(q, 3, b->clicks);
    sqlite3_bind_int64(q, 4, b->bots);
    sqlite3_bind_int64(q, 5, b->uniques);
    bind_blob(q, 6, b->dims, b->ndims);
    bind_blob(q, 7, b->visitors, b->nvisitors);
    bind_blob(q, 8, b->recent, b->nrecent);
}

/* The first day that may still hold visitors (schema 4): days before it
 * were pruned, and a merge into one of them stores no visitor set. */
#define VISITORS_FROM "visitors_from"

static int visitors_from(struct store *st, int64_t *day)
{
    struct buf v = BUF_INIT;
    *day = 0;
    int rc = sq_meta_get(st, VISITORS_FROM, &v);
    if (rc == ERR_NOTFOUND) {
        rc = ERR_OK;
    } else if (rc == ERR_OK) {
        const char *text = buf_cstr(&v);
        char *end;
        *day = strtoll(text, &end, 10);
        if (!*text || *end)
            rc = log_fail(ERR_STORAGE, "meta '%s' is damaged", VISITORS_FROM);
    }
    buf_release(&v);
    return rc;
}

/* Clicks of a day whose visitors were pruned (a journal replayed late):
 * they count as new visitors, and the day keeps no set (uniques stay). */
static void forget_visitors(const struct day_delta *d, int64_t visitors_from,
                            struct day_blobs *merged)
{
    if (d->day < visitors_from) {
        merged->visitors = NULL;
        merged->nvisitors = 0;
    }
}

/* A fresh link day (day_delta.fresh) inserted without a read first: 'done'
 * false when a row was there after all (a server counted a click of the
 * new link meanwhile), which the caller then merges. */
static int day_insert_new(struct store *st, const struct day_delta *d, int64_t visitors_from,
                          struct buf bufs[3], bool *done)
{
    struct day_blobs row;
    *done = false;
    if (dayrow_merge(NULL, d->row, &bufs[0], &bufs[1], &bufs[2], &row) != ERR_OK)
        return log_fail(ERR_STORAGE, "the clicks of '%s' on day %lld cannot be stored", d->code,
                        (long long)d->day);
    forget_visitors(d, visitors_from, &row);
    sqlite3_stmt *q = stmt_get(st, S_DAY_INSERT_NEW);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, d->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, d->day);
    bind_day(q, &row);
    int rc = run_done(q, "day insert");
    *done = rc == ERR_OK && sqlite3_changes(sqlite3_db_handle(q)) > 0;
    return rc;
}

/* The stored row, if there is one, is read, the delta merged in, and the
 * row written back; a new link day is the delta, inserted as it is. */
static int day_merge(struct store *st, const struct day_delta *d, int64_t visitors_from,
                     struct buf bufs[3])
{
    if (d->fresh) {
        bool done;
        int rc = day_insert_new(st, d, visitors_from, bufs, &done);
        if (rc != ERR_OK || done)
            return rc;
    }
    struct day_blobs merged;
    sqlite3_stmt *q = stmt_get(st, S_DAY_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, d->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, d->day);
    int step = sqlite3_step(q);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return fail(q, "day read");
    bool stored = step == SQLITE_ROW;
    int64_t id = 0;
    struct day_blobs old = {0};
    if (stored) {
        id = sqlite3_column_int64(q, 0);
        old.clicks = sqlite3_column_int64(q, 1);
        old.bots = sqlite3_column_int64(q, 2);
        old.uniques = sqlite3_column_int64(q, 3);
        old.dims = col_blob(q, 4, &old.ndims);
        old.visitors = col_blob(q, 5, &old.nvisitors);
        old.recent = col_blob(q, 6, &old.nrecent);
    }
    int rc = dayrow_merge(stored ? &old : NULL, d->row, &bufs[0], &bufs[1], &bufs[2], &merged);
    finish(q); /* after the merge: 'old' points into the row read */
    if (rc != ERR_OK)
        return log_fail(ERR_STORAGE, "the stored clicks of '%s' on day %lld are damaged", d->code,
                        (long long)d->day);
    forget_visitors(d, visitors_from, &merged);
    q = stmt_get(st, stored ? S_DAY_UPDATE : S_DAY_INSERT);
    if (!q)
        return ERR_STORAGE;
    if (stored) {
        sqlite3_bind_int64(q, 2, id);
    } else {
        sqlite3_bind_text(q, 1, d->code, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, d->day);
    }
    bind_day(q, &merged);
    return run_done(q, stored ? "day write" : "day insert");
}

static int sq_agg_days(struct store *st, const struct day_delta *d, size_t n)
{
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    int64_t from;
    int rc = visitors_from(st, &from);
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        rc = day_merge(st, &d[i], from, bufs);
        coop_point();
    }
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    return rc;
}

static int sq_prune_days(struct store *st, int64_t before_day, int limit, int *pruned)
{
    *pruned = 0;
    const enum stmt ids[] = {S_PRUNE_CARRY, S_PRUNE_DAYS};
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *q = stmt_get(st, ids[i]);
        if (!q)
            return ERR_STORAGE;
        sqlite3_bind_int64(q, 1, before_day);
        sqlite3_bind_int(q, 2, limit);
        int rc = run_done(q, "prune");
        if (rc != ERR_OK)
            return rc;
        if (ids[i] == S_PRUNE_DAYS)
            *pruned = sqlite3_changes(sqlite3_db_handle(q));
    }
    return ERR_OK;
}

static int sq_prune_visitors(struct store *st, int64_t before_day)
{
    int64_t from;
    int rc = visitors_from(st, &from);
    if (rc != ERR_OK || before_day <= from)
        return rc;
    sqlite3_stmt *q = stmt_get(st, S_PRUNE_VISITORS);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, before_day);
    sqlite3_bind_int64(q, 2, from);
    rc = run_done(q, "prune visitors");
    if (rc == ERR_OK) {
        char text[24];
        int n = snprintf(text, sizeof(text), "%lld", (long long)before_day);
        rc = sq_meta_put(st, VISITORS_FROM, text, (size_t)n);
    }
    return rc;
}

/* Binds code, from, to and steps through the rows, handing each to 'row'. */
/* Runs statement 'id' with ?1 = code (or, without one, owner), ?2 = a, ?3 = b. */
static int each_row_of(struct store *st, enum stmt id, const char *code, int64_t owner, int64_t a,
                       int64_t b, int (*row)(sqlite3_stmt *q, void *cb, void *arg), void *cb,
                       void *arg)
{
    sqlite3_stmt *q = stmt_get(st, id);
    if (!q)
        return ERR_STORAGE;
    if (code)
        sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(q, 1, owner);
    sqlite3_bind_int64(q, 2, a);
    sqlite3_bind_int64(q, 3, b);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (row(q, cb, arg))
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "stats");
    finish(q);
    return ERR_OK;
}

static int each_row(struct store *st, enum stmt id, const char *code, int64_t a, int64_t b,
                    int (*row)(sqlite3_stmt *q, void *cb, void *arg), void *cb, void *arg)
{
    return each_row_of(st, id, code, 0, a, b, row, cb, arg);
}

static const char *col_text(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? (const char *)t : "";
}

static int day_row(sqlite3_stmt *q, void *cb, void *arg)
{
    return ((day_cb)cb)(sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
                        sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 3), arg);
}

struct blobs_read {
    struct dayrow acc;
    bool bad;
};

/* Adds a row's dims or recent blob (column 0) to the accumulator. */
static int blob_row(sqlite3_stmt *q, void *which, void *arg)
{
    struct blobs_read *br = arg;
    struct day_blobs b = {0};
    if (which == (void *)S_STATS_DIMS || which == (void *)S_PEND_DIMS)
        b.dims = col_blob(q, 0, &b.ndims);
    else
        b.recent = col_blob(q, 0, &b.nrecent);
    if (dayrow_add_blobs(&br->acc, &b) != ERR_OK)
        br->bad = true;
    /* Recent clicks: the newest days' rows come first, and the rest are of
     * earlier days: enough once none of those could be kept. */
    return which == (void *)S_STATS_RECENT &&
           dayrow_recent_full_since(&br->acc, sqlite3_column_int64(q, 1) * MS_PER_DAY);
}

/* Statement 'id''s blobs of one link, after those of its appended days
 * (the newest, most often). */
static int stats_blobs(struct store *st, enum stmt id, const char *code, int64_t from, int64_t to,
                       struct blobs_read *br)
{
    dayrow_init(&br->acc);
    br->bad = false;
    enum stmt pend = id == S_STATS_DIMS ? S_PEND_DIMS : S_PEND_RECENT;
    int rc = each_row(st, pend, code, from, to, blob_row, (void *)(intptr_t)pend, br);
    if (rc == ERR_OK)
        rc = each_row(st, id, code, from, to, blob_row, (void *)(intptr_t)id, br);
    if (rc == ERR_OK && br->bad)
        log_at(LOG_WARN, "some stored clicks of '%s' are damaged and were skipped", code);
    return rc;
}

/* ---- appended link days in the reads of days ---- */

static int sum_row(sqlite3_stmt *q, void *unused, void *arg)
{
    (void)unused;
    struct day_sum *d = store_day_sum(arg, sqlite3_column_int64(q, 0));
    d->clicks += sqlite3_column_int64(q, 1);
    d->uniques += sqlite3_column_int64(q, 2);
    d->bots += sqlite3_column_int64(q, 3);
    return 0;
}

/* What one link day's appended rows 'acc' add to its stored row: their
 * clicks, and the visitors the stored row has not seen. */
static int add_link_day(struct store *st, const char *code, int64_t day, struct dayrow *acc,
                        struct day_sums *out)
{
    int64_t clicks = acc->clicks, bots = acc->bots, before = 0;
    sqlite3_stmt *q = stmt_get(st, S_DAY_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, day);
    int step = sqlite3_step(q);
    if (step == SQLITE_ROW) {
        struct day_blobs b = {.clicks = 0, .bots = 0};
        before = sqlite3_column_int64(q, 3);
        b.uniques = before;
        b.visitors = col_blob(q, 5, &b.nvisitors);
        if (dayrow_add_blobs(acc, &b) != ERR_OK)
            log_at(LOG_WARN, "the stored visitors of '%s' on day %lld are damaged", code,
                   (long long)day);
    } else if (step != SQLITE_DONE) {
        return fail(q, "day read");
    }
    finish(q);
    struct day_sum *d = store_day_sum(out, day);
    d->clicks += clicks;
    d->bots += bots;
    d->uniques += dayrow_uniques(acc) - before;
    return ERR_OK;
}

/* The appended rows of statement 'id' as what they add to each day: its
 * columns are [code,] day, clicks, bots, uniques, visitors, in (code, day)
 * order; without 'code' the statement has the code column and ?1 is
 * 'owner'. */
static int pending_sums(struct store *st, enum stmt id, const char *code, int64_t owner,
                        int64_t from, int64_t to, struct day_sums *out)
{
    sqlite3_stmt *q = stmt_get(st, id);
    if (!q)
        return ERR_STORAGE;
    int c = code ? 0 : 1; /* the day's column */
    if (code)
        sqlite3_bind_text(q, 1, code, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(q, 1, owner);
    sqlite3_bind_int64(q, 2, from);
    sqlite3_bind_int64(q, 3, to);
    struct buf key = BUF_INIT; /* the link day being summed: its code ... */
    int64_t day = 0;           /* ... and day */
    bool open = false;
    struct dayrow acc;
    dayrow_init(&acc);
    int rc = ERR_OK, step;
    while (rc == ERR_OK && (step = sqlite3_step(q)) == SQLITE_ROW) {
        const char *k = code ? code : col_text(q, 0);
        int64_t d = sqlite3_column_int64(q, c);
        if (open && (d != day || strcmp(k, buf_cstr(&key)) != 0)) {
            rc = add_link_day(st, buf_cstr(&key), day, &acc, out);
            dayrow_release(&acc);
            dayrow_init(&acc);
            open = false;
        }
        if (!open) {
            buf_reset(&key);
            buf_add(&key, k, strlen(k));
            day = d;
            open = true;
        }
        struct day_blobs b = {
            .clicks = sqlite3_column_int64(q, c + 1),
            .bots = sqlite3_column_int64(q, c + 2),
            .uniques = sqlite3_column_int64(q, c + 3),
        };
        b.visitors = col_blob(q, c + 4, &b.nvisitors);
        if (dayrow_add_blobs(&acc, &b) != ERR_OK)
            log_at(LOG_WARN, "some appended clicks of '%s' are damaged and were skipped", k);
    }
    if (rc == ERR_OK && step != SQLITE_DONE)
        rc = fail(q, "appended days");
    else
        finish(q);
    if (rc == ERR_OK && open)
        rc = add_link_day(st, buf_cstr(&key), day, &acc, out);
    dayrow_release(&acc);
    buf_release(&key);
    return rc;
}

/* The stored days (statement 'id': day, clicks, uniques, bots in day
 * order) with what the appended rows add, to 'cb' in day order. */
static int days_with_pending(struct store *st, enum stmt id, enum stmt pend, const char *code,
                             int64_t owner, int64_t from, int64_t to, day_cb cb, void *arg)
{
    struct day_sums add = {0};
    int rc = pending_sums(st, pend, code, owner, from, to, &add);
    if (rc == ERR_OK && !add.n) {
        free(add.v);
        return each_row_of(st, id, code, owner, from, to, day_row, (void *)cb, arg);
    }
    struct day_sums all = {0};
    if (rc == ERR_OK)
        rc = each_row_of(st, id, code, owner, from, to, sum_row, NULL, &all);
    for (size_t i = 0; rc == ERR_OK && i < add.n; i++) {
        struct day_sum *d = store_day_sum(&all, add.v[i].day);
        d->clicks += add.v[i].clicks;
        d->uniques += add.v[i].uniques;
        d->bots += add.v[i].bots;
    }
    if (rc == ERR_OK)
        store_day_sums_each(&all, cb, arg);
    free(add.v);
    free(all.v);
    return rc;
}

static int sq_stats_days(struct store *st, const char *code, int64_t from, int64_t to, day_cb cb,
                         void *arg)
{
    return days_with_pending(st, S_STATS_DAYS, S_PEND_DAYS, code, 0, from, to, cb, arg);
}

static int sq_stats_all_days(struct store *st, int64_t owner, int64_t from, int64_t to, day_cb cb,
                             void *arg)
{
    return days_with_pending(st, S_STATS_ALL_DAYS, S_PEND_ALL_DAYS, NULL, owner, from, to, cb, arg);
}


static int sq_stats_all_dims(struct store *st, int64_t owner, int64_t from, int64_t to, dim_cb cb,
                             void *arg)
{
    struct blobs_read br = {.bad = false};
    dayrow_init(&br.acc);
    int rc = each_row_of(st, S_STATS_ALL_DIMS, NULL, owner, from, to, blob_row,
                         (void *)(intptr_t)S_STATS_DIMS, &br);
    if (rc == ERR_OK)
        rc = each_row_of(st, S_PEND_ALL_DIMS, NULL, owner, from, to, blob_row,
                         (void *)(intptr_t)S_STATS_DIMS, &br);
    if (rc == ERR_OK && br.bad)
        log_at(LOG_WARN, "some stored clicks are damaged and were skipped");
    if (rc == ERR_OK)
        dayrow_each_tally(&br.acc, cb, arg);
    dayrow_release(&br.acc);
    return rc;
}

static int sq_stats_dims(struct store *st, const char *code, int64_t from, int64_t to, dim_cb cb,
                         void *arg)
{
    struct blobs_read br;
    int rc = stats_blobs(st, S_STATS_DIMS, code, from, to, &br);
    if (rc == ERR_OK)
        dayrow_each_tally(&br.acc, cb, arg);
    dayrow_release(&br.acc);
    return rc;
}

static int sq_stats_recent(struct store *st, const char *code, int limit, recent_cb cb, void *arg)
{
    struct blobs_read br;
    int rc = stats_blobs(st, S_STATS_RECENT, code, 0, 0, &br);
    if (rc == ERR_OK)
        store_each_recent(&br.acc, limit, cb, arg);
    dayrow_release(&br.acc);
    return rc;
}

static int sq_stats_totals(struct store *st, int64_t owner, struct totals *out)
{
    sqlite3_stmt *q = stmt_get(st, S_STATS_TOTALS);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, owner);
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "totals");
    out->links = sqlite3_column_int64(q, 0);
    out->clicks = sqlite3_column_int64(q, 1);
    out->bot_clicks = sqlite3_column_int64(q, 2);
    finish(q);
    return ERR_OK;
}

static int sq_stats_top(struct store *st, int64_t owner, int64_t day, int limit, top_cb cb,
                        void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_STATS_TOP);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, day);
    sqlite3_bind_int64(q, 2, owner);
    sqlite3_bind_int(q, 3, limit);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (cb(col_text(q, 0), sqlite3_column_int64(q, 1), arg))
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "top links");
    finish(q);
    return ERR_OK;
}

/* ---- appending and compacting link days (store_stats.h, "Appending") ---- */

static int sq_days_batch(struct store *st, int64_t after, int64_t *batch)
{
    sqlite3_stmt *q = stmt_get(st, S_BATCH_NEW);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, after);
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "new batch");
    *batch = sqlite3_column_int64(q, 0);
    finish(q);
    return ERR_OK;
}

static int sq_days_append(struct store *st, int64_t batch, const struct day_delta *d, size_t n)
{
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    int rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        struct day_blobs b;
        dayrow_encode(d[i].row, &bufs[0], &bufs[1], &bufs[2], &b);
        sqlite3_stmt *q = stmt_get(st, S_PEND_ADD);
        if (!q) {
            rc = ERR_STORAGE;
            break;
        }
        sqlite3_bind_text(q, 1, d[i].code, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, d[i].day);
        bind_day(q, &b);
        sqlite3_bind_int64(q, 9, batch);
        rc = run_done(q, "day append");
        coop_point();
    }
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    return rc;
}

static int sq_days_pending(struct store *st, int64_t *rows, int64_t *newest)
{
    sqlite3_stmt *q = stmt_get(st, S_PEND_COUNT);
    if (!q)
        return ERR_STORAGE;
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "appended days");
    *rows = sqlite3_column_int64(q, 0);
    *newest = sqlite3_column_int64(q, 1);
    finish(q);
    return ERR_OK;
}

/* Compacting reads every batch from its start (what earlier compactions
 * took is deleted) through a cursor of its own (struct conn's), and merges
 * the cursors in (code, day) order with a binary heap, so that the stored
 * rows are read and written in key order: a page of link_days is rewritten
 * once for all the link days on it. A batch is a store job's link days. */

struct pend_cursor {
    sqlite3_stmt *q; /* on its current row while 'more' */
    int64_t batch;
    bool more, took;
    char last[CODE_MAX + 1]; /* the last link day taken: code ... */
    int64_t last_day;        /* ... and day */
};

static int cursor_cmp(const struct pend_cursor *a, const struct pend_cursor *b)
{
    int c = strcmp(col_text(a->q, 0), col_text(b->q, 0));
    if (c)
        return c;
    int64_t x = sqlite3_column_int64(a->q, 1), y = sqlite3_column_int64(b->q, 1);
    return (x > y) - (x < y);
}

static void heap_down(struct pend_cursor *c, int *heap, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, least = i;
        if (l < n && cursor_cmp(&c[heap[l]], &c[heap[least]]) < 0)
            least = l;
        if (l + 1 < n && cursor_cmp(&c[heap[l + 1]], &c[heap[least]]) < 0)
            least = l + 1;
        if (least == i)
            return;
        int t = heap[i];
        heap[i] = heap[least];
        heap[least] = t;
        i = least;
    }
}

/* Ends a pass: the rows taken are deleted, and batches with none left
 * are forgotten. */
static int cursors_end(struct store *st, struct pend_cursor *c, int n, int rc)
{
    for (int i = 0; i < n; i++)
        if (c[i].q)
            finish(c[i].q);
    for (int i = 0; i < n && rc == ERR_OK; i++) {
        if (c[i].took) {
            sqlite3_stmt *q = stmt_get(st, S_PEND_DEL_UPTO);
            if (!q)
                return ERR_STORAGE;
            sqlite3_bind_int64(q, 1, c[i].batch);
            sqlite3_bind_text(q, 2, c[i].last, -1, SQLITE_STATIC);
            sqlite3_bind_int64(q, 3, c[i].last_day);
            rc = run_done(q, "compacted days");
        }
        if (rc == ERR_OK && !c[i].more) {
            sqlite3_stmt *q = stmt_get(st, S_BATCH_DEL);
            if (!q)
                return ERR_STORAGE;
            sqlite3_bind_int64(q, 1, c[i].batch);
            rc = run_done(q, "compacted batch");
        }
    }
    return rc;
}

static int sq_days_compact(struct store *st, int64_t upto, size_t limit, bool (*stop)(void *),
                           void *stop_arg, size_t *rows)
{
    *rows = 0;
    sqlite3_stmt *list = stmt_get(st, S_BATCH_LIST);
    if (!list)
        return ERR_STORAGE;
    sqlite3 *db = sqlite3_db_handle(list);
    struct pend_cursor c[COMPACT_BATCHES];
    int heap[COMPACT_BATCHES];
    int n = 0, nh = 0, rc = ERR_OK, step;
    sqlite3_bind_int(list, 1, COMPACT_BATCHES);
    sqlite3_bind_int64(list, 2, upto);
    while ((step = sqlite3_step(list)) == SQLITE_ROW)
        c[n++] = (struct pend_cursor){.batch = sqlite3_column_int64(list, 0)};
    if (step != SQLITE_DONE)
        return fail(list, "batches");
    finish(list);
    struct conn *cn = conn_get(st);
    for (int i = 0; i < n && rc == ERR_OK; i++) {
        if (!cn->cursor[i] &&
            sqlite3_prepare_v3(db,
                               "SELECT code, day, clicks, bots, uniques, dims, visitors, recent "
                               "FROM link_days_pending WHERE batch = ?1 ORDER BY code, day",
                               -1, SQLITE_PREPARE_PERSISTENT, &cn->cursor[i], NULL) != SQLITE_OK) {
            rc = log_fail(ERR_STORAGE, "sqlite compaction failed: %s", sqlite3_errmsg(db));
            break;
        }
        c[i].q = cn->cursor[i];
        sqlite3_bind_int64(c[i].q, 1, c[i].batch);
        step = sqlite3_step(c[i].q);
        if (step == SQLITE_ROW)
            c[i].more = true, heap[nh++] = i;
        else if (step != SQLITE_DONE)
            rc = log_fail(ERR_STORAGE, "sqlite compaction failed: %s", sqlite3_errmsg(db));
    }
    for (int i = nh / 2 - 1; i >= 0; i--)
        heap_down(c, heap, nh, i);

    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    int64_t vfrom = 0;
    if (rc == ERR_OK)
        rc = visitors_from(st, &vfrom);
    for (size_t keys = 0; rc == ERR_OK && nh > 0 && keys < limit; keys++) {
        if (stop && keys && keys % COMPACT_STOP_EVERY == 0 && stop(stop_arg))
            break;
        struct pend_cursor *top = &c[heap[0]];
        char code[CODE_MAX + 1];
        snprintf(code, sizeof(code), "%s", col_text(top->q, 0));
        int64_t day = sqlite3_column_int64(top->q, 1);
        struct dayrow acc;
        dayrow_init(&acc);
        bool first = true;
        /* Every batch's row of this link day, each cursor then on to its next */
        while (rc == ERR_OK && nh > 0 && sqlite3_column_int64(c[heap[0]].q, 1) == day &&
               strcmp(col_text(c[heap[0]].q, 0), code) == 0) {
            struct pend_cursor *p = &c[heap[0]];
            struct day_blobs b = {
                .clicks = sqlite3_column_int64(p->q, 2),
                .bots = sqlite3_column_int64(p->q, 3),
                .uniques = sqlite3_column_int64(p->q, 4),
            };
            b.dims = col_blob(p->q, 5, &b.ndims);
            b.visitors = col_blob(p->q, 6, &b.nvisitors);
            b.recent = col_blob(p->q, 7, &b.nrecent);
            /* The first straight into the empty row: most link days have one */
            if ((first ? dayrow_load(&acc, &b) : dayrow_add_blobs(&acc, &b)) != ERR_OK)
                log_at(LOG_WARN,
                       "some appended clicks of '%s' on day %lld are damaged and were "
                       "skipped",
                       code, (long long)day);
            first = false;
            p->took = true;
            memcpy(p->last, code, sizeof(code));
            p->last_day = day;
            (*rows)++;
            step = sqlite3_step(p->q);
            if (step == SQLITE_DONE) {
                p->more = false;
                heap[0] = heap[--nh];
            } else if (step != SQLITE_ROW) {
                rc = log_fail(ERR_STORAGE, "sqlite compaction failed: %s", sqlite3_errmsg(db));
            }
            heap_down(c, heap, nh, 0);
        }
        struct day_delta d = {code, day, &acc, false};
        if (rc == ERR_OK)
            rc = day_merge(st, &d, vfrom, bufs);
        dayrow_release(&acc);
        coop_point();
    }
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    return cursors_end(st, c, n, rc);
}

/* ---- API keys ---- */

/* KEY_COLS's columns; a NULL scopes is the full set (0007_key_scopes.sql). */
static void row_to_key(sqlite3_stmt *q, struct apikey *k)
{
    memset(k, 0, sizeof(*k));
    k->id = sqlite3_column_int64(q, 0);
    const unsigned char *name = sqlite3_column_text(q, 1);
    snprintf(k->name, sizeof(k->name), "%s", name ? (const char *)name : "");
    k->admin = sqlite3_column_int(q, 2) != 0;
    k->created_at = sqlite3_column_int64(q, 3);
    k->revoked_at = sqlite3_column_int64(q, 4);
    k->user_id = sqlite3_column_int64(q, 5);
    k->scopes = sqlite3_column_type(q, 6) == SQLITE_NULL ? KEY_SCOPES_ALL
                                                         : (unsigned)sqlite3_column_int(q, 6);
    const unsigned char *domain = sqlite3_column_text(q, 7);
    snprintf(k->domain, sizeof(k->domain), "%s", domain ? (const char *)domain : "");
    k->last_used_at = sqlite3_column_int64(q, 8);
    enum user_role role;
    const unsigned char *rn = sqlite3_column_text(q, 9);
    k->role = rn && user_role_parse((const char *)rn, &role) == ERR_OK ? KEY_ROLE(role)
                                                                       : KEY_NO_USER;
    k->owner = sqlite3_column_type(q, 10) == SQLITE_NULL ? k->id : sqlite3_column_int64(q, 10);
    k->user_disabled = sqlite3_column_int64(q, 11) != 0;
}

static int sq_key_insert(struct store *st, const struct apikey *k, const uint8_t hash[32],
                         int64_t *id)
{
    sqlite3_stmt *q = stmt_get(st, S_KEY_INSERT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, k->name, -1, SQLITE_STATIC);
    sqlite3_bind_blob(q, 2, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, k->admin);
    sqlite3_bind_int64(q, 4, k->created_at);
    if (k->user_id)
        sqlite3_bind_int64(q, 5, k->user_id);
    if (k->scopes != KEY_SCOPES_ALL)
        sqlite3_bind_int(q, 6, (int)k->scopes);
    if (k->domain[0])
        sqlite3_bind_text(q, 7, k->domain, -1, SQLITE_STATIC);
    int rc = run_done(q, "key insert");
    if (rc == ERR_OK)
        *id = sqlite3_last_insert_rowid(sqlite3_db_handle(q));
    return rc;
}

static int sq_key_by_hash(struct store *st, const uint8_t hash[32], struct apikey *out)
{
    sqlite3_stmt *q = stmt_get(st, S_KEY_BY_HASH);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "key get");
    row_to_key(q, out);
    finish(q);
    return ERR_OK;
}

static int sq_key_list(struct store *st, key_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_KEY_LIST);
    if (!q)
        return ERR_STORAGE;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct apikey k;
        row_to_key(q, &k);
        if (cb(&k, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "key list");
    finish(q);
    return ERR_OK;
}

static int sq_key_revoke(struct store *st, int64_t id, int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_KEY_REVOKE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, now);
    int rc = run_done(q, "key revoke");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

static int sq_key_count(struct store *st, int64_t *n) { return count(st, S_KEY_COUNT, n); }

/* ---- users and sessions ---- */

static int row_to_user(sqlite3_stmt *q, struct user *u)
{
    memset(u, 0, sizeof(*u));
    u->id = sqlite3_column_int64(q, 0);
    const unsigned char *name = sqlite3_column_text(q, 1);
    const unsigned char *hash = sqlite3_column_text(q, 2);
    const unsigned char *role = sqlite3_column_text(q, 3);
    snprintf(u->name, sizeof(u->name), "%s", name ? (const char *)name : "");
    snprintf(u->pwhash, sizeof(u->pwhash), "%s", hash ? (const char *)hash : "");
    u->key_id = sqlite3_column_int64(q, 4);
    u->created_at = sqlite3_column_int64(q, 5);
    u->disabled_at = sqlite3_column_int64(q, 6);
    u->last_signin_at = sqlite3_column_int64(q, 7);
    if (user_role_parse((const char *)role, &u->role) != ERR_OK)
        return log_fail(ERR_STORAGE, "user '%s' has an unknown role", u->name);
    return ERR_OK;
}

static int sq_user_insert(struct store *st, const struct user *u, int64_t *id)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_INSERT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, u->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, u->pwhash, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, user_role_name(u->role), -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, u->key_id);
    sqlite3_bind_int64(q, 5, u->created_at);
    sqlite3_bind_int64(q, 6, u->disabled_at);
    int rc = run_done(q, "user insert");
    if (rc == ERR_OK)
        *id = sqlite3_last_insert_rowid(sqlite3_db_handle(q));
    return rc;
}

/* One user from a prepared and bound statement. */
static int user_one(sqlite3_stmt *q, struct user *out)
{
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "user get");
    rc = row_to_user(q, out);
    finish(q);
    return rc;
}

static int sq_user_get(struct store *st, int64_t id, struct user *out)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    return user_one(q, out);
}

static int sq_user_by_name(struct store *st, const char *name, struct user *out)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_BY_NAME);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    return user_one(q, out);
}

static int sq_user_list(struct store *st, user_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_LIST);
    if (!q)
        return ERR_STORAGE;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct user u;
        if (row_to_user(q, &u) != ERR_OK) {
            finish(q);
            return ERR_STORAGE;
        }
        if (cb(&u, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "user list");
    finish(q);
    return ERR_OK;
}

/* Runs a bound write; ERR_NOTFOUND when it changed no row. */
static int run_changed(sqlite3_stmt *q, const char *what)
{
    int rc = run_done(q, what);
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

static int sq_user_set_password(struct store *st, int64_t id, const char *pwhash)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_PASSWORD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_text(q, 2, pwhash, -1, SQLITE_STATIC);
    return run_changed(q, "user password");
}

static int sq_user_disable(struct store *st, int64_t id, int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_DISABLE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, now);
    return run_changed(q, "user disable");
}

static int sq_user_count(struct store *st, int64_t *n) { return count(st, S_USER_COUNT, n); }

static int sq_user_set_role(struct store *st, int64_t id, enum user_role role)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_ROLE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_text(q, 2, user_role_name(role), -1, SQLITE_STATIC);
    return run_changed(q, "user role");
}

static int sq_user_enable(struct store *st, int64_t id)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_ENABLE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    return run_changed(q, "user enable");
}

static int sq_user_signed_in(struct store *st, int64_t id, int64_t at)
{
    sqlite3_stmt *q = stmt_get(st, S_USER_SIGNED_IN);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, at);
    return run_changed(q, "user signed in");
}

static int sq_setup_put(struct store *st, const uint8_t hash[32], int64_t expires_at)
{
    sqlite3_stmt *q = stmt_get(st, S_SETUP_PUT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, expires_at);
    return run_done(q, "setup token put");
}

static int sq_setup_check(struct store *st, const uint8_t hash[32], int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_SETUP_CHECK);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "setup token check");
    finish(q);
    return rc == SQLITE_ROW ? ERR_OK : ERR_NOTFOUND;
}

static int sq_setup_end(struct store *st)
{
    sqlite3_stmt *q = stmt_get(st, S_SETUP_END);
    if (!q)
        return ERR_STORAGE;
    return run_done(q, "setup token end");
}

static int sq_session_insert(struct store *st, const uint8_t hash[32], const struct session *s)
{
    sqlite3_stmt *q = stmt_get(st, S_SESSION_INSERT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, s->user_id);
    sqlite3_bind_int64(q, 3, s->created_at);
    sqlite3_bind_int64(q, 4, s->seen_at);
    sqlite3_bind_int64(q, 5, s->expires_at);
    return run_done(q, "session insert");
}

static int sq_session_get(struct store *st, const uint8_t hash[32], int64_t now,
                          struct session *out)
{
    sqlite3_stmt *q = stmt_get(st, S_SESSION_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "session get");
    out->user_id = sqlite3_column_int64(q, 0);
    out->created_at = sqlite3_column_int64(q, 1);
    out->seen_at = sqlite3_column_int64(q, 2);
    out->expires_at = sqlite3_column_int64(q, 3);
    finish(q);
    return ERR_OK;
}

static int sq_session_touch(struct store *st, const uint8_t hash[32], int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_SESSION_TOUCH);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now);
    return run_changed(q, "session touch");
}

static int sq_session_end(struct store *st, const uint8_t hash[32])
{
    sqlite3_stmt *q = stmt_get(st, S_SESSION_END);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    return run_changed(q, "session end");
}

static int sq_session_end_user(struct store *st, int64_t user_id)
{
    sqlite3_stmt *q = stmt_get(st, S_SESSION_END_USER);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, user_id);
    return run_done(q, "session end user");
}

static int sq_session_sweep(struct store *st, int64_t now, int64_t idle_before, int64_t *n)
{
    sqlite3_stmt *q = stmt_get(st, S_SESSION_SWEEP);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, now);
    sqlite3_bind_int64(q, 2, idle_before);
    int rc = run_done(q, "session sweep");
    *n = rc == ERR_OK ? sqlite3_changes(sqlite3_db_handle(q)) : 0;
    return rc;
}

static int sq_key_touch(struct store *st, int64_t id, int64_t at)
{
    sqlite3_stmt *q = stmt_get(st, S_KEY_TOUCH);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, at);
    return run_done(q, "key touch");
}

/* ---- idempotency ---- */

static int sq_idem_get(struct store *st, int64_t key_id, const char *idem, int64_t since,
                       struct idem_rec *out)
{
    sqlite3_stmt *q = stmt_get(st, S_IDEM_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, key_id);
    sqlite3_bind_text(q, 2, idem, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, since);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "idempotency get");
    memset(out, 0, sizeof(*out));
    if (sqlite3_column_bytes(q, 0) == 32)
        memcpy(out->fingerprint, sqlite3_column_blob(q, 0), 32);
    out->status = sqlite3_column_int(q, 1);
    out->body = col_dup(q, 2);
    out->created_at = sqlite3_column_int64(q, 3);
    finish(q);
    return ERR_OK;
}

static int sq_idem_put(struct store *st, int64_t key_id, const char *idem,
                       const struct idem_rec *rec)
{
    sqlite3_stmt *q = stmt_get(st, S_IDEM_PUT);
    if (!q)
        return ERR_STORAGE;
    bind_idem(q, key_id, idem, rec);
    return run_done(q, "idempotency put");
}

static int sq_idem_sweep(struct store *st, int64_t before)
{
    sqlite3_stmt *q = stmt_get(st, S_IDEM_SWEEP);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, before);
    return run_done(q, "idempotency sweep");
}

/* ---- blocklist ---- */

static int sq_block_add(struct store *st, const char *host, int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_BLOCK_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now);
    return run_done(q, "block add");
}

static int sq_block_del(struct store *st, const char *host)
{
    sqlite3_stmt *q = stmt_get(st, S_BLOCK_DEL);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    int rc = run_done(q, "block delete");
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

static int sq_block_has(struct store *st, const char *host, bool *yes)
{
    sqlite3_stmt *q = stmt_get(st, S_BLOCK_HAS);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "block check");
    *yes = rc == SQLITE_ROW;
    finish(q);
    return ERR_OK;
}

static int sq_block_list(struct store *st, host_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_BLOCK_LIST);
    if (!q)
        return ERR_STORAGE;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (cb((const char *)sqlite3_column_text(q, 0), sqlite3_column_int64(q, 1), arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "block list");
    finish(q);
    return ERR_OK;
}

/* ---- operations (store_watch.h) ---- */

static int sq_backup_note(struct store *st, int64_t ended_at, int64_t bytes, const char *node)
{
    sqlite3_stmt *q = stmt_get(st, S_BACKUP_NOTE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, ended_at);
    sqlite3_bind_int64(q, 2, bytes);
    sqlite3_bind_text(q, 3, node, -1, SQLITE_STATIC);
    return run_done(q, "backup note");
}

static int sq_backup_last(struct store *st, int64_t *ended_at, int64_t *bytes)
{
    sqlite3_stmt *q = stmt_get(st, S_BACKUP_LAST);
    if (!q)
        return ERR_STORAGE;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "backup last");
    *ended_at = sqlite3_column_int64(q, 0);
    *bytes = sqlite3_column_int64(q, 1);
    finish(q);
    return ERR_OK;
}

/* One file on one machine: the store's clock is this machine's. */
static int sq_clock_ms(struct store *st, int64_t *now)
{
    (void)st;
    (void)now;
    return ERR_NOTFOUND;
}

static int sq_lease_take(struct store *st, const char *name, const char *holder, int64_t now,
                         int64_t ttl_ms, bool *held)
{
    *held = false;
    sqlite3_stmt *q = stmt_get(st, S_LEASE_TAKE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, holder, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, now);
    sqlite3_bind_int64(q, 4, now + ttl_ms);
    int rc = run_changed(q, "lease take");
    if (rc == ERR_NOTFOUND)
        return ERR_OK;
    *held = rc == ERR_OK;
    return rc;
}

/* Moving a store: defined in the last section of this file. */

/* ---- sites (store_sites.h) ---- */

static void row_to_site(sqlite3_stmt *q, struct site_info *s)
{
    memset(s, 0, sizeof(*s));
    const char *id = col_text(q, 0);
    size_t n = strlen(id);
    memcpy(s->id, id, n < SITE_ID_MAX ? n : SITE_ID_MAX);
    s->owner = sqlite3_column_int64(q, 1);
    s->badge = sqlite3_column_int(q, 2) != 0;
    s->created_at = sqlite3_column_int64(q, 3);
    s->pv_total = sqlite3_column_int64(q, 4);
}

static int sq_site_insert(struct store *st, const struct site_info *s)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_INSERT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, s->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, s->owner);
    sqlite3_bind_int(q, 3, s->badge);
    sqlite3_bind_int64(q, 4, s->created_at);
    return run_done(q, "site insert");
}

static int sq_site_get(struct store *st, const char *id, struct site_info *out)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "site get");
    row_to_site(q, out);
    finish(q);
    return ERR_OK;
}

/* Runs statement 'id' with ?1 = text and, when 'two', ?2 = v; ERR_NOTFOUND
 * when it changed no row. */
static int change_of(struct store *st, enum stmt id, const char *text, bool two, int64_t v,
                     const char *what)
{
    sqlite3_stmt *q = stmt_get(st, id);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, text, -1, SQLITE_STATIC);
    if (two)
        sqlite3_bind_int64(q, 2, v);
    int rc = run_done(q, what);
    if (rc != ERR_OK)
        return rc;
    return sqlite3_changes(sqlite3_db_handle(q)) ? ERR_OK : ERR_NOTFOUND;
}

static int sq_site_set_badge(struct store *st, const char *id, bool badge)
{
    return change_of(st, S_SITE_BADGE, id, true, badge, "site badge");
}

static int sq_site_list(struct store *st, int64_t owner, site_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_LIST);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, owner);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct site_info s;
        row_to_site(q, &s);
        if (cb(&s, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "site list");
    finish(q);
    return ERR_OK;
}

static int sq_site_delete(struct store *st, const char *id)
{
    const enum stmt parts[] = {S_SITE_DEL_HOSTS, S_SITE_DEL_TOKENS, S_SITE_DEL_DAYS};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        int rc = change_of(st, parts[i], id, false, 0, "site delete");
        if (rc != ERR_OK && rc != ERR_NOTFOUND)
            return rc;
    }
    return change_of(st, S_SITE_DEL, id, false, 0, "site delete");
}

static int sq_site_host_add(struct store *st, const char *host, const char *site)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_HOST_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, site, -1, SQLITE_STATIC);
    return run_done(q, "site host add");
}

static int sq_site_hosts_clear(struct store *st, const char *site)
{
    int rc = change_of(st, S_SITE_DEL_HOSTS, site, false, 0, "site hosts clear");
    return rc == ERR_NOTFOUND ? ERR_OK : rc;
}

static int sq_site_hosts_list(struct store *st, const char *site, site_host_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_HOSTS_LIST);
    if (!q)
        return ERR_STORAGE;
    bind_opt_text(q, 1, site);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (cb(col_text(q, 0), col_text(q, 1), arg))
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "site hosts list");
    finish(q);
    return ERR_OK;
}

static int sq_site_token_add(struct store *st, const char *site, const uint8_t hash[32],
                             int64_t now, int64_t *id)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_TOKEN_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, site, -1, SQLITE_STATIC);
    sqlite3_bind_blob(q, 2, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, now);
    int rc = run_done(q, "site token add");
    if (rc == ERR_OK)
        *id = sqlite3_last_insert_rowid(sqlite3_db_handle(q));
    return rc;
}

static int sq_site_token_find(struct store *st, const uint8_t hash[32], char site[SITE_ID_MAX + 1])
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_TOKEN_FIND);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "site token find");
    const char *t = col_text(q, 0);
    size_t n = strlen(t) < SITE_ID_MAX ? strlen(t) : SITE_ID_MAX;
    memcpy(site, t, n);
    site[n] = '\0';
    finish(q);
    return ERR_OK;
}

static int sq_site_token_del(struct store *st, const char *site, int64_t id)
{
    return change_of(st, S_SITE_TOKEN_DEL, site, true, id, "site token delete");
}

static int sq_site_token_list(struct store *st, const char *site, site_token_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_TOKEN_LIST);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, site, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (cb(sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), arg))
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "site token list");
    finish(q);
    return ERR_OK;
}

/* One site day: the stored row read, the delta merged in, written back;
 * its page views added to the site's badge total in the same transaction. */
static int site_day_merge(struct store *st, const struct day_delta *d, struct buf bufs[3])
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_DAY_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, d->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, d->day);
    int step = sqlite3_step(q);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return fail(q, "site day read");
    bool stored = step == SQLITE_ROW;
    struct day_blobs old = {0}, merged;
    if (stored) {
        old.clicks = sqlite3_column_int64(q, 0);
        old.bots = sqlite3_column_int64(q, 1);
        old.dims = col_blob(q, 2, &old.ndims);
    }
    int rc = dayrow_merge(stored ? &old : NULL, d->row, &bufs[0], &bufs[1], &bufs[2], &merged);
    finish(q);
    if (rc != ERR_OK)
        return log_fail(ERR_STORAGE, "the stored page views of site '%s' on day %lld are damaged",
                        d->code, (long long)d->day);
    q = stmt_get(st, S_SITE_DAY_PUT);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, d->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, d->day);
    sqlite3_bind_int64(q, 3, merged.clicks);
    sqlite3_bind_int64(q, 4, merged.bots);
    bind_blob(q, 5, merged.dims, merged.ndims);
    rc = run_done(q, "site day write");
    if (rc != ERR_OK || !d->row->clicks)
        return rc;
    q = stmt_get(st, S_SITE_PV_TOTAL);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, d->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, d->row->clicks);
    return run_done(q, "site total");
}

static int sq_site_agg_days(struct store *st, const struct day_delta *d, size_t n)
{
    struct buf bufs[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    int rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        rc = site_day_merge(st, &d[i], bufs);
        coop_point();
    }
    for (int i = 0; i < 3; i++)
        buf_release(&bufs[i]);
    return rc;
}

static int sq_site_prune_days(struct store *st, int64_t before_day, int limit, int *pruned)
{
    *pruned = 0;
    sqlite3_stmt *q = stmt_get(st, S_SITE_PRUNE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, before_day);
    sqlite3_bind_int(q, 2, limit);
    int rc = run_done(q, "site prune");
    if (rc == ERR_OK)
        *pruned = sqlite3_changes(sqlite3_db_handle(q));
    return rc;
}

static int sq_site_stats_days(struct store *st, const char *site, int64_t from, int64_t to,
                              day_cb cb, void *arg)
{
    return each_row(st, S_SITE_STATS_DAYS, site, from, to, day_row, (void *)cb, arg);
}

static int sq_site_stats_dims(struct store *st, const char *site, int64_t from, int64_t to,
                              dim_cb cb, void *arg)
{
    struct blobs_read br = {.bad = false};
    dayrow_init(&br.acc);
    int rc = each_row(st, S_SITE_STATS_DIMS, site, from, to, blob_row,
                      (void *)(intptr_t)S_STATS_DIMS, &br); /* its dims, as a link's */
    if (rc == ERR_OK && br.bad)
        log_at(LOG_WARN, "some stored page views of site '%s' are damaged and were skipped", site);
    if (rc == ERR_OK)
        dayrow_each_tally(&br.acc, cb, arg);
    dayrow_release(&br.acc);
    return rc;
}

static int sq_site_size(struct store *st, const char *site, struct site_size *out)
{
    sqlite3_stmt *q = stmt_get(st, S_SITE_SIZE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, site, -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "site size");
    out->rows = sqlite3_column_int64(q, 0);
    out->bytes = sqlite3_column_int64(q, 1);
    finish(q);
    return ERR_OK;
}

static int sq_export_rows(struct store *st, int table, row_cb cb, void *arg);
static int sq_import_rows(struct store *st, int table, const struct store_value *rows, size_t n,
                          const struct store_value *after, bool to_end, int64_t *changed);
static int sq_table_count(struct store *st, int table, struct table_count *out);

/* ---- events: sinks, positions, the outbox, the failed archive ---- */

static void row_to_sink(sqlite3_stmt *q, struct sink *s)
{
    memset(s, 0, sizeof(*s));
    s->id = sqlite3_column_int64(q, 0);
    s->kind = col_dup(q, 1);
    s->endpoint = col_dup(q, 2);
    s->types = col_dup(q, 3);
    s->owner = sqlite3_column_int64(q, 4);
    s->domain = col_dup(q, 5);
    s->secret = col_dup(q, 6);
    s->secret_old = col_dup(q, 7);
    s->options = col_dup(q, 8);
    s->created_at = sqlite3_column_int64(q, 9);
}

static int sq_sink_add(struct store *st, struct sink *s)
{
    sqlite3_stmt *q = stmt_get(st, S_SINK_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, s->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, s->endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, s->types ? s->types : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, s->owner);
    bind_opt_text(q, 5, s->domain);
    sqlite3_bind_text(q, 6, s->secret, -1, SQLITE_STATIC);
    bind_opt_text(q, 7, s->secret_old);
    sqlite3_bind_text(q, 8, s->options ? s->options : "{}", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 9, s->created_at);
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "sink add");
    s->id = sqlite3_column_int64(q, 0);
    sqlite3_step(q);
    finish(q);
    return ERR_OK;
}

static int sq_sink_get(struct store *st, int64_t id, struct sink *out)
{
    sqlite3_stmt *q = stmt_get(st, S_SINK_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "sink get");
    row_to_sink(q, out);
    finish(q);
    return ERR_OK;
}

static int sq_sink_list(struct store *st, sink_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_SINK_LIST);
    if (!q)
        return ERR_STORAGE;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct sink s;
        row_to_sink(q, &s);
        int stop = cb(&s, arg);
        sink_release(&s);
        if (stop)
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "sink list");
    finish(q);
    return ERR_OK;
}

static int sq_sink_del(struct store *st, int64_t id, int64_t now)
{
    sqlite3_stmt *q = stmt_get(st, S_SINK_DEL);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, now);
    return run_changed(q, "sink delete");
}

static int sq_sink_secret(struct store *st, int64_t id, const char *secret, const char *old)
{
    sqlite3_stmt *q = stmt_get(st, S_SINK_SECRET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_text(q, 2, secret, -1, SQLITE_STATIC);
    bind_opt_text(q, 3, old);
    return run_changed(q, "sink secret");
}

static int sq_sink_update(struct store *st, const struct sink *s)
{
    sqlite3_stmt *q = stmt_get(st, S_SINK_UPDATE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, s->id);
    sqlite3_bind_text(q, 2, s->types ? s->types : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, s->owner);
    bind_opt_text(q, 4, s->domain);
    sqlite3_bind_text(q, 5, s->options ? s->options : "{}", -1, SQLITE_STATIC);
    return run_changed(q, "sink update");
}

static int sq_sink_pos_get(struct store *st, int64_t sink, const char *source, int64_t *pos)
{
    sqlite3_stmt *q = stmt_get(st, S_POS_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, sink);
    sqlite3_bind_text(q, 2, source, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "sink position get");
    *pos = sqlite3_column_int64(q, 0);
    finish(q);
    return ERR_OK;
}

static int sq_sink_pos_set(struct store *st, int64_t sink, const char *source, int64_t old,
                           int64_t pos)
{
    sqlite3_stmt *q = stmt_get(st, old < 0 ? S_POS_INSERT : S_POS_UPDATE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, sink);
    sqlite3_bind_text(q, 2, source, -1, SQLITE_STATIC);
    if (old < 0) {
        sqlite3_bind_int64(q, 3, pos);
    } else {
        sqlite3_bind_int64(q, 3, old);
        sqlite3_bind_int64(q, 4, pos);
    }
    int rc = run_changed(q, "sink position set");
    return rc == ERR_NOTFOUND ? ERR_EXISTS : rc;
}

static int sq_sink_lease(struct store *st, int64_t sink, const char *source, const char *holder,
                         int64_t now, int64_t until)
{
    sqlite3_stmt *q = stmt_get(st, S_POS_LEASE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, sink);
    sqlite3_bind_text(q, 2, source, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, holder, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, now);
    sqlite3_bind_int64(q, 5, until);
    int rc = run_changed(q, "sink lease");
    return rc == ERR_NOTFOUND ? ERR_BUSY : rc;
}

static int sq_outbox_add(struct store *st, const struct outbox_event *e)
{
    sqlite3_stmt *q = stmt_get(st, S_OUTBOX_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_text(q, 1, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, e->type, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, e->at);
    sqlite3_bind_text(q, 4, e->code, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, e->owner);
    bind_opt_text(q, 6, e->domain);
    sqlite3_bind_text(q, 7, e->body, -1, SQLITE_STATIC);
    return run_done(q, "outbox add");
}

static int sq_outbox_read(struct store *st, int64_t after, int limit, outbox_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_OUTBOX_READ);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, after);
    sqlite3_bind_int(q, 2, limit);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct outbox_event e = {
            .seq = sqlite3_column_int64(q, 0),
            .id = (const char *)sqlite3_column_text(q, 1),
            .type = (const char *)sqlite3_column_text(q, 2),
            .at = sqlite3_column_int64(q, 3),
            .code = (const char *)sqlite3_column_text(q, 4),
            .owner = sqlite3_column_int64(q, 5),
            .domain = (const char *)sqlite3_column_text(q, 6),
            .body = (const char *)sqlite3_column_text(q, 7),
        };
        if (cb(&e, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "outbox read");
    finish(q);
    return ERR_OK;
}

static int sq_outbox_head(struct store *st, int64_t *seq) { return count(st, S_OUTBOX_HEAD, seq); }

static int sq_outbox_prune(struct store *st, int64_t before, int limit, int *n)
{
    sqlite3_stmt *q = stmt_get(st, S_OUTBOX_PRUNE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, before);
    sqlite3_bind_int(q, 2, limit);
    int rc = run_done(q, "outbox prune");
    *n = rc == ERR_OK ? sqlite3_changes(sqlite3_db_handle(q)) : 0;
    return rc;
}

static int sq_link_expiring(struct store *st, int64_t from, int64_t to, int limit, link_cb cb,
                            void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_LINK_EXPIRING);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, from);
    sqlite3_bind_int64(q, 2, to);
    sqlite3_bind_int(q, 3, limit);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct link l;
        row_to_link(q, &l);
        int stop = cb(&l, arg);
        link_release(&l);
        if (stop)
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "link expiring");
    finish(q);
    return ERR_OK;
}

static void row_to_failed(sqlite3_stmt *q, struct failed_batch *f)
{
    memset(f, 0, sizeof(*f));
    f->id = sqlite3_column_int64(q, 0);
    f->sink = sqlite3_column_int64(q, 1);
    f->source = col_dup(q, 2);
    f->first_pos = sqlite3_column_int64(q, 3);
    f->last_pos = sqlite3_column_int64(q, 4);
    f->events = sqlite3_column_int64(q, 5);
    f->sha256 = col_dup(q, 6);
    f->attempts = sqlite3_column_int64(q, 7);
    f->last_error = col_dup(q, 8);
    f->first_failed_at = sqlite3_column_int64(q, 9);
    f->archived_at = sqlite3_column_int64(q, 10);
    f->replays = sqlite3_column_int64(q, 11);
    f->last_replay_at = sqlite3_column_int64(q, 12);
    f->last_replay_result = col_dup(q, 13);
    f->resolved_at = sqlite3_column_int64(q, 14);
    f->resolved_by = col_dup(q, 15);
    f->resolved_reason = col_dup(q, 16);
}

static int sq_failed_add(struct store *st, struct failed_batch *f)
{
    sqlite3_stmt *q = stmt_get(st, S_FAILED_ADD);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, f->sink);
    sqlite3_bind_text(q, 2, f->source, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, f->first_pos);
    sqlite3_bind_int64(q, 4, f->last_pos);
    sqlite3_bind_int64(q, 5, f->events);
    sqlite3_bind_text(q, 6, f->body, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, f->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 8, f->attempts);
    sqlite3_bind_text(q, 9, f->last_error ? f->last_error : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 10, f->first_failed_at);
    sqlite3_bind_int64(q, 11, f->archived_at);
    if (sqlite3_step(q) != SQLITE_ROW)
        return fail(q, "failed add");
    f->id = sqlite3_column_int64(q, 0);
    sqlite3_step(q);
    finish(q);
    return ERR_OK;
}

static int sq_failed_get(struct store *st, int64_t id, struct failed_batch *out)
{
    sqlite3_stmt *q = stmt_get(st, S_FAILED_GET);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        finish(q);
        return ERR_NOTFOUND;
    }
    if (rc != SQLITE_ROW)
        return fail(q, "failed get");
    row_to_failed(q, out);
    out->body = col_dup(q, 17);
    finish(q);
    return ERR_OK;
}

static int sq_failed_list(struct store *st, bool all, failed_cb cb, void *arg)
{
    sqlite3_stmt *q = stmt_get(st, S_FAILED_LIST);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int(q, 1, all);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct failed_batch f;
        row_to_failed(q, &f);
        int stop = cb(&f, arg);
        failed_release(&f);
        if (stop)
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(q, "failed list");
    finish(q);
    return ERR_OK;
}

static int sq_failed_replayed(struct store *st, int64_t id, int64_t at, const char *result)
{
    sqlite3_stmt *q = stmt_get(st, S_FAILED_REPLAYED);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, at);
    sqlite3_bind_text(q, 3, result, -1, SQLITE_STATIC);
    return run_changed(q, "failed replayed");
}

static int sq_failed_resolve(struct store *st, int64_t id, int64_t at, const char *by,
                             const char *reason)
{
    sqlite3_stmt *q = stmt_get(st, S_FAILED_RESOLVE);
    if (!q)
        return ERR_STORAGE;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, at);
    sqlite3_bind_text(q, 3, by, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, reason, -1, SQLITE_STATIC);
    int rc = run_changed(q, "failed resolve");
    if (rc != ERR_NOTFOUND)
        return rc;
    struct failed_batch f;
    rc = sq_failed_get(st, id, &f);
    if (rc == ERR_OK) {
        failed_release(&f);
        rc = ERR_EXISTS; /* there, and resolved before */
    }
    return rc;
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .site_insert = sq_site_insert,
    .site_get = sq_site_get,
    .site_set_badge = sq_site_set_badge,
    .site_list = sq_site_list,
    .site_delete = sq_site_delete,
    .site_host_add = sq_site_host_add,
    .site_hosts_clear = sq_site_hosts_clear,
    .site_hosts_list = sq_site_hosts_list,
    .site_token_add = sq_site_token_add,
    .site_token_find = sq_site_token_find,
    .site_token_del = sq_site_token_del,
    .site_token_list = sq_site_token_list,
    .site_agg_days = sq_site_agg_days,
    .site_prune_days = sq_site_prune_days,
    .site_stats_days = sq_site_stats_days,
    .site_stats_dims = sq_site_stats_dims,
    .site_size = sq_site_size,
    .open = sq_open,
    .background = sq_background,
    .close = sq_close,
    .ping = sq_ping,
    .backup = sq_backup,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .savepoint = sq_savepoint,
    .savepoint_end = sq_savepoint_end,
    .meta_get = sq_meta_get,
    .meta_put = sq_meta_put,
    .claim_block = sq_claim_block,
    .link_get = sq_link_get,
    .link_insert = sq_link_insert,
    .link_find_live = sq_link_find_live,
    .link_set_state = sq_link_set_state,
    .link_imported = sq_link_imported,
    .link_list = sq_link_list,
    .link_list_floor = sq_link_list_floor,
    .link_count = sq_link_count,
    .link_sweep = sq_link_sweep,
    .link_update = sq_link_update,
    .link_reserve = sq_link_reserve,
    .history_add = sq_history_add,
    .history_list = sq_history_list,
    .domain_add = sq_domain_add,
    .domain_get = sq_domain_get,
    .domain_del = sq_domain_del,
    .domain_list = sq_domain_list,
    .domain_redirects_set = sq_domain_redirects_set,
    .domain_redirects_list = sq_domain_redirects_list,
    .backup_note = sq_backup_note,
    .backup_last = sq_backup_last,
    .clock_ms = sq_clock_ms,
    .lease_take = sq_lease_take,
    .meta_del = sq_meta_del,
    .meta_add = sq_meta_add,
    .idem_claim = sq_idem_claim,
    .agg_days = sq_agg_days,
    .days_batch = sq_days_batch,
    .days_append = sq_days_append,
    .days_compact = sq_days_compact,
    .days_pending = sq_days_pending,
    .prune_days = sq_prune_days,
    .prune_visitors = sq_prune_visitors,
    .stats_days = sq_stats_days,
    .stats_dims = sq_stats_dims,
    .stats_recent = sq_stats_recent,
    .stats_totals = sq_stats_totals,
    .stats_all_days = sq_stats_all_days,
    .stats_all_dims = sq_stats_all_dims,
    .stats_top = sq_stats_top,
    .key_insert = sq_key_insert,
    .key_by_hash = sq_key_by_hash,
    .key_list = sq_key_list,
    .key_revoke = sq_key_revoke,
    .key_count = sq_key_count,
    .user_insert = sq_user_insert,
    .user_get = sq_user_get,
    .user_by_name = sq_user_by_name,
    .user_list = sq_user_list,
    .user_set_password = sq_user_set_password,
    .user_disable = sq_user_disable,
    .user_count = sq_user_count,
    .user_set_role = sq_user_set_role,
    .user_enable = sq_user_enable,
    .user_signed_in = sq_user_signed_in,
    .setup_put = sq_setup_put,
    .setup_check = sq_setup_check,
    .setup_end = sq_setup_end,
    .session_insert = sq_session_insert,
    .session_get = sq_session_get,
    .session_touch = sq_session_touch,
    .session_end = sq_session_end,
    .session_end_user = sq_session_end_user,
    .session_sweep = sq_session_sweep,
    .key_touch = sq_key_touch,
    .idem_get = sq_idem_get,
    .idem_put = sq_idem_put,
    .idem_sweep = sq_idem_sweep,
    .block_add = sq_block_add,
    .block_del = sq_block_del,
    .block_has = sq_block_has,
    .block_list = sq_block_list,
    .export_rows = sq_export_rows,
    .import_rows = sq_import_rows,
    .table_count = sq_table_count,
    .sink_add = sq_sink_add,
    .sink_get = sq_sink_get,
    .sink_list = sq_sink_list,
    .sink_del = sq_sink_del,
    .sink_secret = sq_sink_secret,
    .sink_update = sq_sink_update,
    .sink_pos_get = sq_sink_pos_get,
    .sink_pos_set = sq_sink_pos_set,
    .sink_lease = sq_sink_lease,
    .outbox_add = sq_outbox_add,
    .outbox_read = sq_outbox_read,
    .outbox_head = sq_outbox_head,
    .outbox_prune = sq_outbox_prune,
    .link_expiring = sq_link_expiring,
    .failed_add = sq_failed_add,
    .failed_get = sq_failed_get,
    .failed_list = sq_failed_list,
    .failed_replayed = sq_failed_replayed,
    .failed_resolve = sq_failed_resolve,
};

/* ---- moving a store: whole tables of store_move.h (shortd migrate-store) ----
 *
 * The statements are made from the table descriptions, mostly by sqlgen.c:
 * names come from store_move.h only, values are always bound. Each is
 * prepared for one call (one export, one batch), which is nothing next to
 * the rows it moves. */

static int move_prepare(struct conn *c, const struct buf *s, sqlite3_stmt **q)
{
    if (sqlite3_prepare_v2(c->db, s->p, -1, q, NULL) != SQLITE_OK)
        return log_fail(ERR_STORAGE, "cannot prepare '%.60s...': %s", s->p, sqlite3_errmsg(c->db));
    return ERR_OK;
}

static void move_get(sqlite3_stmt *q, int i, enum col_type type, struct store_value *v)
{
    memset(v, 0, sizeof(*v));
    if (sqlite3_column_type(q, i) == SQLITE_NULL) {
        v->type = VAL_NULL;
    } else if (type == COL_INT || type == COL_BOOL) {
        v->type = VAL_INT;
        v->i = sqlite3_column_int64(q, i);
    } else {
        /* A blob column may hold an integer (meta's counter): its digits. */
        v->type = type == COL_TEXT ? VAL_TEXT : VAL_BLOB;
        v->p = type == COL_TEXT ? (const char *)sqlite3_column_text(q, i)
                                : (const char *)sqlite3_column_blob(q, i);
        v->n = (size_t)sqlite3_column_bytes(q, i);
        if (!v->p)
            v->p = "";
    }
}

static int sq_export_rows(struct store *st, int table, row_cb cb, void *arg)
{
    const struct store_table *t = &store_tables[table];
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    struct buf s = BUF_INIT;
    sqlgen_export(&s, t);
    sqlite3_stmt *q = NULL;
    int rc = move_prepare(c, &s, &q);
    if (rc != ERR_OK)
        goto out;
    int step;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        struct store_value v[TABLE_COLS_MAX];
        for (int i = 0; i < t->ncols; i++)
            move_get(q, i, t->cols[i].type, &v[i]);
        if (cb(v, arg))
            break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = log_fail(ERR_STORAGE, "sqlite export of '%s' failed: %s", t->name,
                      sqlite3_errmsg(c->db));
out:
    sqlite3_finalize(q);
    buf_release(&s);
    return rc;
}

/* Removes the rows of a mirror table whose keys lie strictly between two
 * keys (NULL: no bound). Neither bound is removed; meta's counter stays. */
static int move_delete_between(struct conn *c, const struct store_table *t, sqlite3_stmt *del[2][2],
                               const struct store_value *lo, const struct store_value *hi,
                               int64_t *changed)
{
    sqlite3_stmt **q = &del[lo != NULL][hi != NULL];
    if (!*q) {
        struct buf s = BUF_INIT;
        buf_printf(&s, "DELETE FROM %s WHERE true", t->name);
        if (lo)
            sqlgen_key_bound(&s, &sql_sqlite, t, "", ">", 1);
        if (hi)
            sqlgen_key_bound(&s, &sql_sqlite, t, "", "<", t->nkeys + 1);
        if (t == &store_tables[TABLE_META])
            buf_adds(&s, " AND k <> 'counter'");
        int rc = move_prepare(c, &s, q);
        buf_release(&s);
        if (rc != ERR_OK)
            return rc;
    }
    for (int i = 0; i < t->nkeys; i++) {
        if (lo)
            bind_param(*q, i + 1, &lo[i]);
        if (hi)
            bind_param(*q, t->nkeys + i + 1, &hi[i]);
    }
    int rc = run_done(*q, "mirror delete");
    if (rc == ERR_OK)
        *changed += sqlite3_changes(c->db);
    return rc;
}

/* INSERT ... ON CONFLICT DO UPDATE of every column that is not the key, and
 * only when one differs, so a row that is already there counts no change. */
static void move_upsert_sql(struct buf *s, const struct store_table *t)
{
    if (t == &store_tables[TABLE_META]) {
        buf_adds(s, "INSERT INTO meta (k, v) VALUES (?1, CASE WHEN ?1 = 'counter' "
                    "THEN CAST(?2 AS INTEGER) ELSE ?2 END) ON CONFLICT (k) DO UPDATE "
                    "SET v = excluded.v WHERE v IS NOT excluded.v "
                    "AND (k <> 'counter' OR excluded.v > v)");
        return;
    }
    buf_printf(s, "INSERT INTO %s (", t->name);
    sqlgen_cols(s, t, 0, t->ncols, "");
    buf_adds(s, ") VALUES (");
    for (int i = 0; i < t->ncols; i++)
        buf_printf(s, "%s?%d", i ? ", " : "", i + 1);
    buf_adds(s, ")");
    sqlgen_upsert(s, &sql_sqlite, t);
}

/* The rows not in a batch are removed range by range between the batch's
 * own keys: one index probe each, whatever the size of the table. */
static int sq_import_rows(struct store *st, int table, const struct store_value *rows, size_t n,
                          const struct store_value *after, bool to_end, int64_t *changed)
{
    const struct store_table *t = &store_tables[table];
    *changed = 0;
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    sqlite3_stmt *del[2][2] = {{NULL, NULL}, {NULL, NULL}};
    sqlite3_stmt *up = NULL;
    struct buf s = BUF_INIT;
    move_upsert_sql(&s, t);
    int rc = move_prepare(c, &s, &up);
    const struct store_value *prev = after;
    for (size_t r = 0; rc == ERR_OK && r < n; r++) {
        const struct store_value *row = rows + r * (size_t)t->ncols;
        if (t->mirror)
            rc = move_delete_between(c, t, del, prev, row, changed);
        for (int i = 0; rc == ERR_OK && i < t->ncols; i++)
            bind_param(up, i + 1, &row[i]);
        if (rc == ERR_OK)
            rc = run_done(up, "import");
        if (rc == ERR_OK)
            *changed += sqlite3_changes(c->db);
        prev = row;
    }
    if (rc == ERR_OK && t->mirror && to_end)
        rc = move_delete_between(c, t, del, prev, NULL, changed);
    if (rc == ERR_EXISTS)
        rc = log_fail(ERR_STORAGE,
                      "sqlite import of '%s': a row collides with a different "
                      "one on a unique column",
                      t->name);
    for (int i = 0; i < 4; i++)
        sqlite3_finalize(del[i / 2][i % 2]);
    sqlite3_finalize(up);
    buf_release(&s);
    return rc;
}

static int sq_table_count(struct store *st, int table, struct table_count *out)
{
    const struct store_table *t = &store_tables[table];
    memset(out, 0, sizeof(*out));
    struct conn *c = conn_get(st);
    if (!c)
        return ERR_STORAGE;
    struct buf s = BUF_INIT;
    sqlgen_count(&s, &sql_sqlite, t);
    sqlite3_stmt *q = NULL;
    int rc = move_prepare(c, &s, &q);
    if (rc == ERR_OK && sqlite3_step(q) != SQLITE_ROW)
        rc = log_fail(ERR_STORAGE, "sqlite count of '%s' failed: %s", t->name,
                      sqlite3_errmsg(c->db));
    if (rc == ERR_OK) {
        out->rows = sqlite3_column_int64(q, 0);
        out->sum[0] = sqlite3_column_int64(q, 1);
        out->sum[1] = sqlite3_column_int64(q, 2);
    }
    sqlite3_finalize(q);
    buf_release(&s);
    return rc;
}

/* ---- inspection (store.h, for shortd doctor) ---- */

/* The first column of the first row of 'query' as an integer (-1 for NULL);
 * false when the statement fails ('why' gets SQLite's message). */
static bool inspect_one(sqlite3 *db, const char *query, int64_t *num, struct store_health *h)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, query, -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    bool ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
    if (!ok)
        snprintf(h->why, sizeof(h->why), "'%s' failed: %s", query, sqlite3_errmsg(db));
    if (rc == SQLITE_ROW && num)
        *num = sqlite3_column_type(q, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return ok;
}

/* The journal positions, as aggregate.c stores them: 8 bytes, little-endian. */
static bool inspect_marks(sqlite3 *db, struct store_health *h)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT substr(k, 13), v FROM meta WHERE k GLOB 'journal_pos:*' "
                                "AND k NOT GLOB '*:partial' AND length(v) = 8 ORDER BY k LIMIT ?",
                                -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(q, 1, STORE_HEALTH_MARKS);
    while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const unsigned char *id = sqlite3_column_text(q, 0);
        const unsigned char *v = sqlite3_column_blob(q, 1);
        rc = SQLITE_OK;
        if (!id || !v || sqlite3_column_bytes(q, 1) != 8)
            continue;
        uint64_t pos = 0;
        for (int i = 7; i >= 0; i--)
            pos = pos << 8 | v[i];
        snprintf(h->marks[h->nmarks].id, sizeof(h->marks[0].id), "%s", (const char *)id);
        h->marks[h->nmarks++].pos = (int64_t)pos;
    }
    bool ok = rc == SQLITE_DONE;
    if (!ok)
        snprintf(h->why, sizeof(h->why), "cannot read the journal positions: %s",
                 sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return ok;
}

int store_sqlite_inspect(const char *path, struct store_health *h)
{
    h->schema_wanted = SCHEMA_VERSION;
    /* The journal mode from the file's header (bytes 18 and 19 are 2 in WAL
     * mode): a connection that must not write cannot ask for it. */
    unsigned char head[100];
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, sizeof(head), f) : 0;
    if (f)
        fclose(f);
    snprintf(h->journal_mode, sizeof(h->journal_mode), "%s",
             got < sizeof(head)               ? "none"
             : head[18] == 2 && head[19] == 2 ? "wal"
                                              : "rollback");
    /* Read only, and without SQLITE_OPEN_CREATE: a missing file stays missing.
     * A read-only connection to a WAL database still makes its -shm file
     * when there is none; with no -wal file either, no server has the
     * database open and the file alone holds everything, so it is read as
     * immutable, which makes nothing. */
    char wal[1100];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    struct stat st;
    bool idle = stat(wal, &st) != 0;
    char uri[3400] = "file:";
    size_t n = 5;
    for (const char *p = path; *p && n + 4 < sizeof(uri); p++) {
        if (*p == '?' || *p == '#' || *p == '%' || (unsigned char)*p < 0x20)
            n += (size_t)snprintf(uri + n, sizeof(uri) - n, "%%%02X", (unsigned char)*p);
        else
            uri[n++] = *p;
    }
    snprintf(uri + n, sizeof(uri) - n, "%s", idle ? "?immutable=1" : "?mode=ro");
    sqlite3 *db = NULL;
    int64_t t0 = mono_us();
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    if (rc != SQLITE_OK) {
        snprintf(h->why, sizeof(h->why), "cannot open '%s': %s", path,
                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return ERR_STORAGE;
    }
    sqlite3_busy_timeout(db, 2000);
    int64_t one = 0, version = 0;
    int64_t t1 = mono_us();
    bool ok = inspect_one(db, "SELECT 1", &one, h);
    h->query_us = mono_us() - t1;
    h->connect_us = t1 - t0;
    h->reached = ok;
    ok = ok && inspect_one(db, "PRAGMA user_version", &version, h);
    h->schema = (int)version;
    if (ok && h->schema == h->schema_wanted) {
        ok = inspect_one(db, "SELECT max(created_at) FROM links", &h->newest_link_ms, h) &&
             inspect_one(db,
                         "SELECT max(d) FROM (SELECT max(day) AS d FROM link_days UNION ALL "
                         "SELECT max(day) FROM link_days_pending)",
                         &h->newest_day, h) &&
             inspect_one(db,
                         "SELECT count(*) FROM meta WHERE k = 'journal_pos' OR "
                         "(k GLOB 'journal_pos:*' AND k NOT GLOB '*:partial')",
                         &h->journal_marks, h) &&
             inspect_marks(db, h);
        if (h->newest_link_ms < 0)
            h->newest_link_ms = 0;
    }
    sqlite3_close(db);
    return ok ? ERR_OK : ERR_STORAGE;
}
