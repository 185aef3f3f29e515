/* test_store.c - the store.h contract, one suite for every backend: each
 * test runs the same checks on SQLite (a file in a temporary directory,
 * always) and on PostgreSQL (when SHORTD_TEST_PG holds a postgres:// URL;
 * tests/pg.sh starts a throwaway server and sets it). Every test gets a fresh
 * store: a new file, or a new PostgreSQL schema brought up by
 * store_pg_migrate and reached through the URL's search_path, so the tests
 * also prove the migrations. Where the backends differ on purpose (backup,
 * a claimed block outliving a rollback), the check says so.
 *
 * Times and days are small made-up numbers: the store keeps what it is given. */
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clicks/aggregate.h"
#include "clicks/analytics.h"
#include "base/buf.h"
#include "clicks/classify.h"
#include "clicks/dayrow.h"
#include "base/err.h"
#include "base/log.h"
#include "store/store.h"
#include "store/store_keys.h"
#include "store/store_links.h"
#include "store/store_move.h"
#include "store/store_stats.h"
#include "test.h"
#include "base/timeutil.h"
#include "store/writer.h"

#include "base/banned.h"

/* ---- backends ---- */

struct backend {
    const char *name; /* "sqlite", "postgres" */
    bool pg;
    char dir[64];    /* sqlite: the temporary directory */
    char schema[64]; /* postgres: the schema of this test */
    char url[1024];
    struct store *st;
};

/* Runs 'expr' with the log switched off: for failures the test expects. */
#define QUIET(expr)                                                                                \
    do {                                                                                           \
        enum log_level saved_ = log_level;                                                         \
        log_level = LOG_OFF;                                                                       \
        expr;                                                                                      \
        log_level = saved_;                                                                        \
    } while (0)

static const char *pg_base(void)
{
    static bool noted;
    const char *u = getenv("SHORTD_TEST_PG");
    if (u && *u)
        return u;
    if (!noted)
        printf("store: SHORTD_TEST_PG is unset: PostgreSQL checks skipped "
               "(tests/pg.sh runs them)\n");
    noted = true;
    return NULL;
}

static void no_notices(void *arg, const char *msg)
{
    (void)arg, (void)msg; /* "drop cascades to ...": expected */
}

/* Runs SQL on the test database itself, outside any store. */
static bool pg_admin(const char *sql)
{
    PGconn *pg = PQconnectdb(pg_base());
    bool ok = PQstatus(pg) == CONNECTION_OK;
    if (ok) {
        PQsetNoticeProcessor(pg, no_notices, NULL);
        PGresult *r = PQexec(pg, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        if (!ok)
            test_note("admin SQL '%s' failed: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
    } else {
        test_note("cannot connect to SHORTD_TEST_PG: %s", PQerrorMessage(pg));
    }
    PQfinish(pg);
    return ok;
}

/* Prepares an empty place for 'area' (a directory, or a new schema) and its URL. */
static bool place(struct backend *b, bool pg, const char *area)
{
    memset(b, 0, sizeof(*b));
    b->pg = pg;
    b->name = pg ? "postgres" : "sqlite";
    if (!pg) {
        snprintf(b->dir, sizeof(b->dir), "/tmp/shortd-store-XXXXXX");
        if (!mkdtemp(b->dir))
            return false;
        snprintf(b->url, sizeof(b->url), "sqlite:%s/db", b->dir);
        return true;
    }
    const char *base = pg_base();
    if (!base)
        return false;
    snprintf(b->schema, sizeof(b->schema), "shortd_test_%s", area);
    char sql[256];
    snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", b->schema,
             b->schema);
    if (!pg_admin(sql))
        return false;
    snprintf(b->url, sizeof(b->url), "%s%coptions=-csearch_path%%3D%s", base,
             strchr(base, '?') ? '&' : '?', b->schema);
    return true;
}

static void unplace(struct backend *b)
{
    if (b->pg) {
        char sql[256];
        snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", b->schema);
        pg_admin(sql);
        return;
    }
    static const char *const files[] = {"db", "db-wal", "db-shm", "backup", NULL};
    for (int i = 0; files[i]; i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", b->dir, files[i]);
        unlink(path);
    }
    rmdir(b->dir);
}

/* A fresh, opened store for 'area'; false when this backend is skipped. */
static bool fresh(struct backend *b, bool pg, const char *area)
{
    if (!place(b, pg, area))
        return false;
    if (pg) {
        int from = -1, to = -1, rc;
        enum log_level saved = log_level;
        log_level = LOG_WARN; /* not "applying migration" every time */
        rc = store_pg_migrate(b->url, &from, &to);
        log_level = saved;
        CHECK_EQ_INT(rc, ERR_OK);
        CHECK_EQ_INT(from, 0);
        CHECK(to > 0);
    }
    if (!CHECK_EQ_INT(store_open(b->url, &b->st), ERR_OK)) {
        unplace(b);
        return false;
    }
    return true;
}

static void finish(struct backend *b)
{
    if (b->st)
        b->st->ops->close(b->st);
    unplace(b);
}

/* Runs fn on a fresh store of each backend; a failure is followed by a note
 * naming the backend. */
static void each_backend(const char *area, void (*fn)(struct backend *b))
{
    for (int pg = 0; pg < 2; pg++) {
        struct backend b;
        if (!fresh(&b, pg, area))
            continue;
        int failed = test_checks_failed;
        fn(&b);
        if (test_checks_failed != failed)
            test_note("(the failures above are of the %s backend)", b.name);
        finish(&b);
    }
}

/* ---- helpers ---- */

static struct link mk(const char *code, int64_t owner, const char *url, int64_t created,
                      int64_t expires)
{
    struct link l;
    memset(&l, 0, sizeof(l));
    snprintf(l.code, sizeof(l.code), "%s", code);
    l.owner = owner;
    l.url = (char *)url;
    l.created_at = created;
    l.changed_at = created;
    l.expires_at = expires;
    return l;
}

static int insert(struct store *st, const char *code, int64_t owner, const char *url,
                  int64_t created, int64_t expires)
{
    struct link l = mk(code, owner, url, created, expires);
    return st->ops->link_insert(st, &l);
}

static bool exists(struct store *st, const char *code)
{
    struct link l;
    int rc = st->ops->link_get(st, code, &l);
    if (rc == ERR_OK)
        link_release(&l);
    return rc == ERR_OK;
}

/* Codes a link_list call handed over, comma-separated. */
struct collect {
    struct buf s;
    int calls;
    int stop_after; /* 0: never stop */
    char last_code[CODE_MAX + 1];
    int64_t last_created;
};

static int collect_link(const struct link *l, void *arg)
{
    struct collect *c = arg;
    if (c->s.len)
        buf_addc(&c->s, ',');
    buf_adds(&c->s, l->code);
    snprintf(c->last_code, sizeof(c->last_code), "%s", l->code);
    c->last_created = l->created_at;
    return ++c->calls == c->stop_after;
}

/* ---- meta ---- */

static void meta_checks(struct backend *b)
{
    struct store *st = b->st;
    struct buf v = BUF_INIT;
    CHECK_EQ_INT(st->ops->meta_get(st, "nothing", &v), ERR_NOTFOUND);
    const unsigned char bin[] = {0, 1, 255, '\\', 'x', 0, '\'', '"'};
    CHECK_EQ_INT(st->ops->meta_put(st, "bin", bin, sizeof(bin)), ERR_OK);
    CHECK_EQ_INT(st->ops->meta_get(st, "bin", &v), ERR_OK);
    CHECK(v.len == sizeof(bin) && memcmp(v.p, bin, sizeof(bin)) == 0);
    CHECK_EQ_INT(st->ops->meta_put(st, "bin", "new", 3), ERR_OK);
    CHECK_EQ_INT(st->ops->meta_get(st, "bin", &v), ERR_OK);
    CHECK(v.len == 3 && memcmp(v.p, "new", 3) == 0);
    CHECK_EQ_INT(st->ops->meta_put(st, "empty", "", 0), ERR_OK);
    CHECK_EQ_INT(st->ops->meta_get(st, "empty", &v), ERR_OK);
    CHECK_EQ_INT(v.len, 0);
    CHECK_EQ_INT(st->ops->meta_del(st, "bin"), ERR_OK);
    CHECK_EQ_INT(st->ops->meta_get(st, "bin", &v), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->meta_del(st, "bin"), ERR_OK); /* absent: nothing to do */

    /* The aggregator's checkpoint, as aggregate.c stores and reads it: one
     * per journal, so two journals (nodes) never see each other's. */
    struct aggregate *agg_a = aggregate_new(NULL, NULL), *agg_b = aggregate_new(NULL, NULL);
    aggregate_set_journal(agg_a, "journal-agg_a");
    aggregate_set_journal(agg_b, "journal-agg_b");
    uint64_t pos = 1, partial = 1;
    CHECK_EQ_INT(aggregate_checkpoint(agg_a, st, &pos, &partial), ERR_OK);
    CHECK_EQ_INT(pos, 0);
    CHECK_EQ_INT(partial, 0);
    const unsigned char le[8] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
    CHECK_EQ_INT(st->ops->meta_put(st, "journal_pos:journal-agg_a", le, 8), ERR_OK);
    CHECK_EQ_INT(aggregate_checkpoint(agg_a, st, &pos, &partial), ERR_OK);
    CHECK(pos == 0x1122334455667788ull);
    CHECK_EQ_INT(partial, 0);
    CHECK_EQ_INT(aggregate_checkpoint(agg_b, st, &pos, &partial), ERR_OK);
    CHECK_EQ_INT(pos, 0);
    aggregate_free(agg_a);
    aggregate_free(agg_b);
    buf_release(&v);
}

void test_store_meta(void) { each_backend("meta", meta_checks); }

/* ---- operations: backups recorded, the store's clock, leases ---- */

static void watch_checks(struct backend *b)
{
    struct store *st = b->st;
    int64_t at = -1, bytes = -1;
    CHECK_EQ_INT(st->ops->backup_last(st, &at, &bytes), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->backup_note(st, 2000, 300, "node-a"), ERR_OK);
    CHECK_EQ_INT(st->ops->backup_note(st, 5000, 700, "node-b"), ERR_OK);
    CHECK_EQ_INT(st->ops->backup_note(st, 4000, 500, "node-a"), ERR_OK); /* recorded late */
    CHECK_EQ_INT(st->ops->backup_last(st, &at, &bytes), ERR_OK);
    CHECK_EQ_INT(at, 5000); /* the newest, not the last recorded */
    CHECK_EQ_INT(bytes, 700);

    /* The store's own clock: PostgreSQL's, near ours; a file has none. */
    int64_t now = 0;
    int rc = st->ops->clock_ms(st, &now);
    if (b->pg) {
        CHECK_EQ_INT(rc, ERR_OK);
        CHECK(llabs(now - now_ms()) < 5000);
    } else {
        CHECK_EQ_INT(rc, ERR_NOTFOUND);
    }

    /* A lease: free, taken; renewed by its holder; refused to another
     * until it expires, then taken over. */
    bool held = false;
    CHECK_EQ_INT(st->ops->lease_take(st, "alerts", "a", 1000, 3000, &held), ERR_OK);
    CHECK(held);
    CHECK_EQ_INT(st->ops->lease_take(st, "alerts", "b", 2000, 3000, &held), ERR_OK);
    CHECK(!held);
    CHECK_EQ_INT(st->ops->lease_take(st, "alerts", "a", 3500, 3000, &held), ERR_OK);
    CHECK(held); /* renewed until 6500 */
    CHECK_EQ_INT(st->ops->lease_take(st, "alerts", "b", 6000, 3000, &held), ERR_OK);
    CHECK(!held);
    CHECK_EQ_INT(st->ops->lease_take(st, "other", "b", 6000, 3000, &held), ERR_OK);
    CHECK(held); /* leases by name */
    CHECK_EQ_INT(st->ops->lease_take(st, "alerts", "b", 6500, 3000, &held), ERR_OK);
    CHECK(held); /* a expired: b takes over */
    CHECK_EQ_INT(st->ops->lease_take(st, "alerts", "a", 7000, 3000, &held), ERR_OK);
    CHECK(!held);
}

void test_store_watch(void) { each_backend("watch", watch_checks); }

/* ---- transactions and savepoints ---- */

struct reader {
    struct store *st;
    const char *code;
    bool seen;
};

static void *read_other(void *arg)
{
    struct reader *r = arg;
    r->seen = exists(r->st, r->code);
    return NULL;
}

/* Whether another thread (another connection) sees 'code' now. */
static bool seen_by_other(struct store *st, const char *code)
{
    struct reader r = {st, code, false};
    pthread_t t;
    pthread_create(&t, NULL, read_other, &r);
    pthread_join(t, NULL);
    return r.seen;
}

static int64_t day_clicks(struct store *st, const char *code, int64_t day);

/* A link's day as the aggregator hands it over: one delta through agg_days. */
static int add_row(struct store *st, const char *code, int64_t day, struct dayrow *r)
{
    struct day_delta d = {code, day, r, false};
    int rc = st->ops->agg_days(st, &d, 1);
    dayrow_release(r);
    dayrow_init(r);
    return rc;
}

static int add_clicks(struct store *st, const char *code, int64_t day, int64_t clicks, int64_t bots)
{
    struct dayrow r;
    dayrow_init(&r);
    r.clicks = clicks;
    r.bots = bots;
    return add_row(st, code, day, &r);
}

static int64_t day_clicks(struct store *st, const char *code, int64_t day);

static void tx_checks(struct backend *b)
{
    struct store *st = b->st;
    /* A rolled-back savepoint leaves no row; a kept one does. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "gone", 1, "https://a.example/", 10, 0), ERR_OK);
    CHECK(exists(st, "gone"));
    st->ops->savepoint_end(st, false);
    CHECK(!exists(st, "gone"));
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "kept", 1, "https://a.example/", 10, 0), ERR_OK);
    st->ops->savepoint_end(st, true);
    CHECK(!seen_by_other(st, "kept")); /* not committed yet */
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(exists(st, "kept"));
    CHECK(!exists(st, "gone"));
    CHECK(seen_by_other(st, "kept"));

    /* A rolled-back transaction leaves nothing. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "undone", 1, "https://a.example/", 10, 0), ERR_OK);
    st->ops->rollback(st);
    CHECK(!exists(st, "undone"));
    st->ops->rollback(st); /* without a transaction: harmless */

    /* Counters in a rolled-back savepoint are dropped with it; the ones in a
     * kept savepoint are read back inside the transaction and committed. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    CHECK_EQ_INT(add_clicks(st, "kept", 5, 100, 0), ERR_OK);
    st->ops->savepoint_end(st, false);
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    CHECK_EQ_INT(add_clicks(st, "kept", 5, 7, 0), ERR_OK);
    CHECK_EQ_INT(day_clicks(st, "kept", 5), 7);
    CHECK_EQ_INT(add_clicks(st, "kept", 5, 1, 0), ERR_OK);
    st->ops->savepoint_end(st, true);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(day_clicks(st, "kept", 5), 8);
    struct link l;
    CHECK_EQ_INT(st->ops->link_get(st, "kept", &l), ERR_OK);
    CHECK_EQ_INT(l.clicks, 8);
    link_release(&l);

    /* Counters written and then rolled back with the whole transaction. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(add_clicks(st, "kept", 5, 50, 0), ERR_OK);
    st->ops->rollback(st);
    CHECK_EQ_INT(day_clicks(st, "kept", 5), 8);

    /* A commit without a transaction is an error, and so is a transaction
     * inside another; the store carries on. */
    int rc;
    QUIET(rc = st->ops->commit(st));
    CHECK(rc != ERR_OK);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    QUIET(rc = st->ops->begin(st));
    CHECK(rc != ERR_OK);
    CHECK_EQ_INT(insert(st, "inner", 1, "https://a.example/", 10, 0), ERR_OK);
    st->ops->rollback(st);
    CHECK(!exists(st, "inner"));
    CHECK(exists(st, "kept"));
    CHECK_EQ_INT(st->ops->ping(st), ERR_OK);
}

void test_store_transactions(void) { each_backend("tx", tx_checks); }

/* ---- links ---- */

static void links_checks(struct backend *b)
{
    struct store *st = b->st;
    struct link in = mk("abc1", 7, "https://example.com/a?q=\"1\"&b=\\x", 1000, 5000);
    in.title = "Ünïcode title";
    in.note = "a note, with 'quotes'";
    in.tags = "[\"x\",\"y\"]";
    in.permanent = true;
    in.changed_at = 1001;
    in.clicks = 3;
    in.bot_clicks = 4;
    CHECK_EQ_INT(st->ops->link_insert(st, &in), ERR_OK);
    CHECK_EQ_INT(st->ops->link_insert(st, &in), ERR_EXISTS);
    struct link l;
    CHECK_EQ_INT(st->ops->link_get(st, "nope", &l), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->link_get(st, "abc1", &l), ERR_OK)) {
        CHECK_EQ_STR(l.code, "abc1");
        CHECK_EQ_INT(l.owner, 7);
        CHECK_EQ_STR(l.url, in.url);
        CHECK_EQ_STR(l.title, in.title);
        CHECK_EQ_STR(l.note, in.note);
        CHECK_EQ_STR(l.tags, in.tags);
        CHECK_EQ_INT(l.created_at, 1000);
        CHECK_EQ_INT(l.expires_at, 5000);
        CHECK_EQ_INT(l.changed_at, 1001);
        CHECK_EQ_INT(l.state, LINK_ACTIVE);
        CHECK(l.permanent);
        CHECK_EQ_INT(l.clicks, 3);
        CHECK_EQ_INT(l.bot_clicks, 4);
        link_release(&l);
    }
    CHECK_EQ_INT(insert(st, "bare", 7, "https://example.com/b", 1000, 0), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "bare", &l), ERR_OK)) {
        CHECK(!l.title && !l.note && !l.tags && !l.permanent);
        link_release(&l);
    }

    /* A taken code inside a transaction is ERR_EXISTS and the transaction
     * goes on: the creator tries the next candidate. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "abc1", 1, "https://example.com/c", 1100, 0), ERR_EXISTS);
    CHECK_EQ_INT(insert(st, "abc2", 1, "https://example.com/c", 1100, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(exists(st, "abc2"));

    /* The longest URL a link may have (more than a btree entry holds). */
    static char longurl[8193];
    memset(longurl, 'u', sizeof(longurl) - 1);
    memcpy(longurl, "https://long.example/", 21);
    CHECK_EQ_INT(insert(st, "long", 7, longurl, 1200, 0), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "long", &l), ERR_OK)) {
        CHECK_EQ_INT(strlen(l.url), 8192);
        link_release(&l);
    }

    /* find_live: the newest live link of that owner with that URL. */
    const char *u = "https://example.com/same";
    CHECK_EQ_INT(insert(st, "old1", 7, u, 1000, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "new1", 7, u, 2000, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "exp1", 7, u, 3000, 3500), ERR_OK); /* expired at 4000 */
    CHECK_EQ_INT(insert(st, "oth1", 8, u, 4000, 0), ERR_OK);    /* another owner */
    if (CHECK_EQ_INT(st->ops->link_find_live(st, 7, u, 4000, &l), ERR_OK)) {
        CHECK_EQ_STR(l.code, "new1");
        link_release(&l);
    }
    if (CHECK_EQ_INT(st->ops->link_find_live(st, 7, u, 3400, &l), ERR_OK)) {
        CHECK_EQ_STR(l.code, "exp1"); /* not expired yet */
        link_release(&l);
    }
    if (CHECK_EQ_INT(st->ops->link_find_live(st, 7, longurl, 4000, &l), ERR_OK)) {
        CHECK_EQ_STR(l.code, "long");
        link_release(&l);
    }
    CHECK_EQ_INT(st->ops->link_find_live(st, 9, u, 4000, &l), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->link_find_live(st, 7, "https://example.com/other", 4000, &l),
                 ERR_NOTFOUND);

    /* set_state: disable and enable keep the data; delete clears it. */
    CHECK_EQ_INT(st->ops->link_set_state(st, "new1", LINK_DISABLED, 5000), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "new1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.state, LINK_DISABLED);
        CHECK_EQ_INT(l.changed_at, 5000);
        CHECK_EQ_STR(l.url, u);
        link_release(&l);
    }
    if (CHECK_EQ_INT(st->ops->link_find_live(st, 7, u, 4000, &l), ERR_OK)) {
        CHECK_EQ_STR(l.code, "old1"); /* the disabled one is not live */
        link_release(&l);
    }
    CHECK_EQ_INT(st->ops->link_set_state(st, "new1", LINK_ACTIVE, 5100), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "new1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.state, LINK_ACTIVE);
        CHECK_EQ_INT(l.changed_at, 5100);
        link_release(&l);
    }
    CHECK_EQ_INT(st->ops->link_set_state(st, "abc1", LINK_DELETED, 6000), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "abc1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.state, LINK_DELETED);
        CHECK_EQ_INT(l.changed_at, 6000);
        CHECK(!l.url && !l.title && !l.note && !l.tags);
        CHECK_EQ_INT(l.clicks, 3); /* the totals stay */
        link_release(&l);
    }
    CHECK_EQ_INT(insert(st, "abc1", 7, "https://example.com/again", 7000, 0), ERR_EXISTS);

    /* link_imported: kept totals brought by an import, marked as imported;
     * a negative count takes some back (their days were stored). */
    CHECK_EQ_INT(st->ops->link_imported(st, "old1", 40, 2), ERR_OK);
    CHECK_EQ_INT(st->ops->link_imported(st, "old1", -15, 0), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "old1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks, 25);
        CHECK_EQ_INT(l.bot_clicks, 2);
        CHECK_EQ_INT(l.imported, 27);
        link_release(&l);
    }
    CHECK_EQ_INT(st->ops->link_imported(st, "nope", 1, 0), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->link_set_state(st, "nope", LINK_DISABLED, 1), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->link_set_state(st, "nope", LINK_DELETED, 1), ERR_NOTFOUND);
    int64_t n = -1;
    CHECK_EQ_INT(st->ops->link_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 8);
}

void test_store_links(void) { each_backend("links", links_checks); }

/* ---- listing ---- */

static const char *list(struct store *st, struct link_query q, struct collect *c)
{
    buf_reset(&c->s);
    buf_adds(&c->s, "");
    c->calls = 0;
    if (st->ops->link_list(st, &q, collect_link, c) != ERR_OK)
        return "(error)";
    return buf_cstr(&c->s);
}

static void list_checks(struct backend *b)
{
    struct store *st = b->st;
    /* Owner 1: live a1..a4 (a2 and a3 created in the same millisecond),
     * expiring e1 (later), expired x1, deleted d1, disabled s1; owner 2: b1. */
    CHECK_EQ_INT(insert(st, "a1", 1, "https://e.example/1", 100, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "a2", 1, "https://e.example/2", 200, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "a3", 1, "https://e.example/3", 200, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "a4", 1, "https://e.example/4", 300, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "e1", 1, "https://e.example/5", 400, 9000), ERR_OK);
    CHECK_EQ_INT(insert(st, "x1", 1, "https://e.example/6", 500, 600), ERR_OK);
    CHECK_EQ_INT(insert(st, "d1", 1, "https://e.example/7", 600, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "s1", 1, "https://e.example/8", 700, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "b1", 2, "https://e.example/9", 800, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->link_set_state(st, "d1", LINK_DELETED, 900), ERR_OK);
    CHECK_EQ_INT(st->ops->link_set_state(st, "s1", LINK_DISABLED, 900), ERR_OK);

    struct collect c = {BUF_INIT, 0, 0, "", 0};
    const struct link_query all = {.owner = -1, .now = 1000, .limit = 100};
    struct link_query q = all;
    q.want_live = true;
    CHECK_EQ_STR(list(st, q, &c), "b1,e1,a4,a3,a2,a1");
    q = all;
    q.want_expired = true;
    CHECK_EQ_STR(list(st, q, &c), "x1");
    q = all;
    q.states = 1u << LINK_DELETED;
    CHECK_EQ_STR(list(st, q, &c), "d1");
    q = all;
    q.states = 1u << LINK_DISABLED;
    CHECK_EQ_STR(list(st, q, &c), "s1");
    q = all;
    q.states = (1u << LINK_DELETED) | (1u << LINK_DISABLED);
    q.want_live = q.want_expired = true;
    CHECK_EQ_STR(list(st, q, &c), "b1,s1,d1,x1,e1,a4,a3,a2,a1");
    q.owner = 2;
    CHECK_EQ_STR(list(st, q, &c), "b1");
    q.owner = 3;
    CHECK_EQ_STR(list(st, q, &c), "");
    q = all;
    CHECK_EQ_STR(list(st, q, &c), ""); /* nothing wanted */
    q = all;
    q.want_live = true;
    q.now = 9500; /* e1 has expired by now */
    CHECK_EQ_STR(list(st, q, &c), "b1,a4,a3,a2,a1");
    q.want_live = false;
    q.want_expired = true;
    CHECK_EQ_STR(list(st, q, &c), "x1,e1");

    /* Pages through the cursor; pages of five split the tie at 200. */
    static const struct {
        int limit;
        const char *pages;
    } paging[] = {{2, "s1,x1|e1,a4|a3,a2|a1"}, {5, "s1,x1,e1,a4,a3|a2,a1"}};
    for (int i = 0; i < 2; i++) {
        q = all;
        q.owner = 1;
        q.want_live = q.want_expired = true;
        q.states = 1u << LINK_DISABLED;
        q.limit = paging[i].limit;
        struct buf pages = BUF_INIT;
        char after[CODE_MAX + 1] = "";
        for (int page = 0; page < 10; page++) {
            q.after_code = after;
            const char *got = list(st, q, &c);
            if (!c.calls)
                break;
            buf_printf(&pages, "%s%s", pages.len ? "|" : "", got);
            snprintf(after, sizeof(after), "%s", c.last_code);
            q.after_created = c.last_created;
        }
        CHECK_EQ_STR(buf_cstr(&pages), paging[i].pages);
        buf_release(&pages);
    }

    /* A search's floor: the Nth row of the owner after the cursor, in the
     * list's order, every state counted (d1 and s1 too), other filters not. */
    q = all;
    q.owner = 1;
    q.want_live = true;
    q.q = "e.example/3";
    int64_t fc = 0;
    char fcode[CODE_MAX + 1] = "";
    CHECK_EQ_INT(st->ops->link_list_floor(st, &q, 3, &fc, fcode), ERR_OK);
    CHECK_EQ_STR(fcode, "x1"); /* s1, d1, x1 */
    CHECK_EQ_INT(fc, 500);
    q.after_created = 200; /* after a3: a2, a1, then no third */
    q.after_code = "a3";
    CHECK_EQ_INT(st->ops->link_list_floor(st, &q, 2, &fc, fcode), ERR_OK);
    CHECK_EQ_STR(fcode, "a1");
    CHECK_EQ_INT(st->ops->link_list_floor(st, &q, 3, &fc, fcode), ERR_NOTFOUND);
    q.owner = -1; /* every owner: b1 first */
    q.after_code = NULL;
    CHECK_EQ_INT(st->ops->link_list_floor(st, &q, 1, &fc, fcode), ERR_OK);
    CHECK_EQ_STR(fcode, "b1");
    /* Pages of a search down to their floors: a match beyond the first
     * floor is found on a later page, none is found twice. */
    q = all;
    q.owner = 1;
    q.want_live = q.want_expired = true;
    q.q = "E.EXAMPLE/"; /* live and expired: all but d1 and s1 */
    struct buf pages = BUF_INIT;
    char after[CODE_MAX + 1] = "";
    for (int page = 0; page < 10; page++) {
        q.after_code = after;
        int frc = st->ops->link_list_floor(st, &q, 3, &fc, fcode);
        q.floor_code = frc == ERR_OK ? fcode : NULL;
        q.floor_created = fc;
        buf_printf(&pages, "%s%s", page ? "|" : "", list(st, q, &c));
        if (frc != ERR_OK)
            break;
        snprintf(after, sizeof(after), "%s", fcode);
        q.after_created = fc;
    }
    CHECK_EQ_STR(buf_cstr(&pages), "x1|e1,a4,a3|a2,a1");
    buf_release(&pages);

    /* A callback that stops ends the listing. */
    q = all;
    q.want_live = true;
    c.stop_after = 2;
    CHECK_EQ_STR(list(st, q, &c), "b1,e1");
    CHECK_EQ_INT(c.calls, 2);
    buf_release(&c.s);
}

void test_store_list(void) { each_backend("list", list_checks); }

/* ---- sweeping expired links ---- */

static void sweep_checks(struct backend *b)
{
    struct store *st = b->st;
    CHECK_EQ_INT(insert(st, "ex1", 1, "https://e.example/1", 10, 100), ERR_OK);
    CHECK_EQ_INT(insert(st, "ex2", 1, "https://e.example/2", 10, 200), ERR_OK);
    CHECK_EQ_INT(insert(st, "ex3", 1, "https://e.example/3", 10, 300), ERR_OK);
    CHECK_EQ_INT(insert(st, "fut", 1, "https://e.example/4", 10, 5000), ERR_OK);
    CHECK_EQ_INT(insert(st, "never", 1, "https://e.example/5", 10, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "del", 1, "https://e.example/6", 10, 150), ERR_OK);
    CHECK_EQ_INT(st->ops->link_set_state(st, "del", LINK_DELETED, 20), ERR_OK);
    int swept = -1;
    CHECK_EQ_INT(st->ops->link_sweep(st, 1000, 2, &swept), ERR_OK);
    CHECK_EQ_INT(swept, 2);
    CHECK_EQ_INT(st->ops->link_sweep(st, 1000, 2, &swept), ERR_OK);
    CHECK_EQ_INT(swept, 1);
    CHECK_EQ_INT(st->ops->link_sweep(st, 1000, 2, &swept), ERR_OK);
    CHECK_EQ_INT(swept, 0);
    const char *gone[] = {"ex1", "ex2", "ex3"};
    for (int i = 0; i < 3; i++) {
        struct link l;
        if (CHECK_EQ_INT(st->ops->link_get(st, gone[i], &l), ERR_OK)) {
            CHECK(!l.url);
            CHECK_EQ_INT(l.state, LINK_ACTIVE); /* still a link, answering 410 */
            link_release(&l);
        }
    }
    const char *kept[] = {"fut", "never"};
    for (int i = 0; i < 2; i++) {
        struct link l;
        if (CHECK_EQ_INT(st->ops->link_get(st, kept[i], &l), ERR_OK)) {
            CHECK(l.url != NULL);
            link_release(&l);
        }
    }
}

void test_store_sweep(void) { each_backend("sweep", sweep_checks); }

/* ---- claiming blocks of the code counter ---- */

#define CLAIMS 150
#define BLOCK 7

struct claimer {
    struct store *st;
    uint64_t start[CLAIMS];
    int failures;
};

static void *claim_many(void *arg)
{
    struct claimer *c = arg;
    for (int i = 0; i < CLAIMS; i++)
        if (c->st->ops->claim_block(c->st, BLOCK, &c->start[i]) != ERR_OK)
            c->failures++;
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void claim_checks(struct backend *b)
{
    struct store *st = b->st;
    uint64_t s1 = 99, s2 = 99;
    CHECK_EQ_INT(st->ops->claim_block(st, 1000, &s1), ERR_OK);
    CHECK_EQ_INT(s1, 0);
    CHECK_EQ_INT(st->ops->claim_block(st, 1000, &s2), ERR_OK);
    CHECK_EQ_INT(s2, 1000);

    /* SQLite's claim is part of the writer's transaction and rolls back
     * with it (one process: it claims again); PostgreSQL's runs on its own
     * connection, so a claimed block stays claimed whatever happens to the
     * transaction, and no other node can be handed it again. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->claim_block(st, 1000, &s1), ERR_OK);
    CHECK_EQ_INT(s1, 2000);
    st->ops->rollback(st);
    CHECK_EQ_INT(st->ops->claim_block(st, 1000, &s2), ERR_OK);
    CHECK_EQ_INT(s2, b->pg ? 3000 : 2000);
    uint64_t next = s2 + 1000;

    /* Two nodes (two stores, each with its own connections) claiming at
     * once never get the same block, and together leave no gap. */
    struct store *other = NULL;
    if (!CHECK_EQ_INT(store_open(b->url, &other), ERR_OK))
        return;
    static struct claimer c[2];
    memset(c, 0, sizeof(c));
    c[0].st = st;
    c[1].st = other;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, claim_many, &c[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(c[0].failures + c[1].failures, 0);
    static uint64_t all[2 * CLAIMS];
    memcpy(all, c[0].start, sizeof(c[0].start));
    memcpy(all + CLAIMS, c[1].start, sizeof(c[1].start));
    qsort(all, 2 * CLAIMS, sizeof(all[0]), cmp_u64);
    int bad = 0;
    for (int i = 0; i < 2 * CLAIMS; i++)
        bad += all[i] != next + (uint64_t)i * BLOCK;
    CHECK_EQ_INT(bad, 0);
    other->ops->close(other);
}

void test_store_claim(void) { each_backend("claim", claim_checks); }

/* ---- API keys ---- */

static int count_key(const struct apikey *k, void *arg)
{
    struct collect *c = arg;
    buf_printf(&c->s, "%s%s:%d:%lld", c->s.len ? "," : "", k->name, k->admin,
               (long long)k->revoked_at);
    return ++c->calls == c->stop_after;
}

/* key_insert of a key with the full set of scopes and no user or domain. */
static int insert_key(struct store *st, const char *name, const uint8_t hash[32], bool admin,
                      int64_t now, int64_t *id)
{
    struct apikey k = {.admin = admin, .created_at = now, .scopes = KEY_SCOPES_ALL};
    snprintf(k.name, sizeof(k.name), "%s", name);
    return st->ops->key_insert(st, &k, hash, id);
}

static void keys_checks(struct backend *b)
{
    struct store *st = b->st;
    uint8_t h1[32], h2[32], h3[32];
    for (int i = 0; i < 32; i++) {
        h1[i] = (uint8_t)i; /* starts with a zero byte */
        h2[i] = (uint8_t)(255 - i);
        h3[i] = (uint8_t)(i * 7 + 92);
    }
    int64_t id1 = 0, id2 = 0, id3 = 0, n = -1;
    CHECK_EQ_INT(st->ops->key_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(insert_key(st, "admin", h1, true, 100, &id1), ERR_OK);
    CHECK_EQ_INT(insert_key(st, "alice", h2, false, 200, &id2), ERR_OK);
    CHECK(id1 > 0 && id2 > id1);
    int64_t dup = 0;
    CHECK_EQ_INT(insert_key(st, "again", h1, false, 300, &dup), ERR_EXISTS);
    /* Inside a transaction, a taken hash leaves the transaction usable. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(insert_key(st, "again", h2, false, 300, &dup), ERR_EXISTS);
    CHECK_EQ_INT(insert_key(st, "bob", h3, false, 300, &id3), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(id3 > id2);

    struct apikey k;
    if (CHECK_EQ_INT(st->ops->key_by_hash(st, h1, &k), ERR_OK)) {
        CHECK_EQ_INT(k.id, id1);
        CHECK_EQ_STR(k.name, "admin");
        CHECK(k.admin);
        CHECK_EQ_INT(k.created_at, 100);
        CHECK_EQ_INT(k.revoked_at, 0);
        /* No scopes stored: the full set; no user, no domain, never used. */
        CHECK_EQ_INT(k.scopes, KEY_SCOPES_ALL);
        CHECK_EQ_INT(k.user_id, 0);
        CHECK_EQ_STR(k.domain, "");
        CHECK_EQ_INT(k.last_used_at, 0);
    }
    /* A key with fewer scopes, a user and a domain keeps them. */
    uint8_t h4[32];
    for (int i = 0; i < 32; i++)
        h4[i] = (uint8_t)(i * 3 + 1);
    struct apikey spec = {.created_at = 700, .user_id = 42, .scopes = KEY_SCOPE_LINKS_READ};
    snprintf(spec.name, sizeof(spec.name), "reader");
    snprintf(spec.domain, sizeof(spec.domain), "go.example.com");
    int64_t id4 = 0;
    CHECK_EQ_INT(st->ops->key_insert(st, &spec, h4, &id4), ERR_OK);
    if (CHECK_EQ_INT(st->ops->key_by_hash(st, h4, &k), ERR_OK)) {
        CHECK_EQ_INT(k.id, id4);
        CHECK_EQ_INT(k.scopes, KEY_SCOPE_LINKS_READ);
        CHECK_EQ_INT(k.user_id, 42);
        CHECK_EQ_STR(k.domain, "go.example.com");
        CHECK(!k.admin);
    }
    /* key_touch moves last_used_at forward only. */
    CHECK_EQ_INT(st->ops->key_touch(st, id4, 5000), ERR_OK);
    CHECK_EQ_INT(st->ops->key_touch(st, id4, 4000), ERR_OK);
    if (CHECK_EQ_INT(st->ops->key_by_hash(st, h4, &k), ERR_OK))
        CHECK_EQ_INT(k.last_used_at, 5000);
    CHECK_EQ_INT(k.role, KEY_NO_USER); /* user 42 does not exist: its own links */
    CHECK_EQ_INT(k.owner, id4);
    /* A user's key reads its user's role, links' owner and state. */
    struct user u = {.role = USER_VIEWER, .key_id = id1, .created_at = 1};
    snprintf(u.name, sizeof(u.name), "keyed");
    snprintf(u.pwhash, sizeof(u.pwhash), "$argon2id$x");
    int64_t uid = 0;
    CHECK_EQ_INT(st->ops->user_insert(st, &u, &uid), ERR_OK);
    uint8_t h5[32];
    for (int i = 0; i < 32; i++)
        h5[i] = (uint8_t)(i * 5 + 2);
    spec.user_id = uid;
    spec.domain[0] = '\0';
    int64_t id5 = 0;
    CHECK_EQ_INT(st->ops->key_insert(st, &spec, h5, &id5), ERR_OK);
    if (CHECK_EQ_INT(st->ops->key_by_hash(st, h5, &k), ERR_OK)) {
        CHECK_EQ_INT(k.role, KEY_ROLE(USER_VIEWER));
        CHECK_EQ_INT(k.owner, id1);
        CHECK(!k.user_disabled);
    }
    CHECK_EQ_INT(st->ops->user_disable(st, uid, 900), ERR_OK);
    if (CHECK_EQ_INT(st->ops->key_by_hash(st, h5, &k), ERR_OK))
        CHECK(k.user_disabled);
    CHECK_EQ_INT(st->ops->key_revoke(st, id5, 800), ERR_OK);
    CHECK_EQ_INT(st->ops->key_revoke(st, id4, 800), ERR_OK);
    uint8_t none[32] = {0};
    CHECK_EQ_INT(st->ops->key_by_hash(st, none, &k), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->key_revoke(st, id2, 500), ERR_OK);
    CHECK_EQ_INT(st->ops->key_revoke(st, id2, 600), ERR_NOTFOUND); /* already revoked */
    CHECK_EQ_INT(st->ops->key_revoke(st, id3 + 100, 600), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->key_by_hash(st, h2, &k), ERR_OK))
        CHECK_EQ_INT(k.revoked_at, 500);
    struct collect c = {BUF_INIT, 0, 0, "", 0};
    CHECK_EQ_INT(st->ops->key_list(st, count_key, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "admin:1:0,alice:0:500,bob:0:0,reader:0:800,reader:0:800");
    buf_reset(&c.s);
    c.calls = 0;
    c.stop_after = 1;
    CHECK_EQ_INT(st->ops->key_list(st, count_key, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "admin:1:0");
    CHECK_EQ_INT(st->ops->key_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 5);
    buf_release(&c.s);
}

void test_store_keys(void) { each_backend("keys", keys_checks); }

/* ---- users and sessions ---- */

static int collect_user(const struct user *u, void *arg)
{
    struct collect *c = arg;
    buf_printf(&c->s, "%s%s:%s:%lld:%lld", c->s.len ? "," : "", u->name, user_role_name(u->role),
               (long long)u->key_id, (long long)u->disabled_at);
    return ++c->calls == c->stop_after;
}

static void users_checks(struct backend *b)
{
    struct store *st = b->st;
    int64_t n = -1, ann = 0, bob = 0, dup = 0;
    CHECK_EQ_INT(st->ops->user_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 0);
    struct user u = {.role = USER_ADMIN, .key_id = 3, .created_at = 100};
    snprintf(u.name, sizeof(u.name), "ann");
    snprintf(u.pwhash, sizeof(u.pwhash), "$argon2id$v=19$m=19456,t=2,p=1$aaaa$bbbb");
    CHECK_EQ_INT(st->ops->user_insert(st, &u, &ann), ERR_OK);
    u.role = USER_VIEWER;
    u.key_id = 4;
    snprintf(u.name, sizeof(u.name), "bob");
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->user_insert(st, &u, &bob), ERR_OK);
    /* A taken name leaves the transaction usable. */
    CHECK_EQ_INT(st->ops->user_insert(st, &u, &dup), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(ann > 0 && bob > ann);

    struct user g;
    if (CHECK_EQ_INT(st->ops->user_by_name(st, "ann", &g), ERR_OK)) {
        CHECK_EQ_INT(g.id, ann);
        CHECK_EQ_INT(g.role, USER_ADMIN);
        CHECK_EQ_INT(g.key_id, 3);
        CHECK_EQ_INT(g.created_at, 100);
        CHECK_EQ_STR(g.pwhash, "$argon2id$v=19$m=19456,t=2,p=1$aaaa$bbbb");
    }
    CHECK_EQ_INT(st->ops->user_by_name(st, "Ann", &g), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->user_get(st, bob + 100, &g), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->user_set_password(st, bob, "$argon2id$new"), ERR_OK);
    CHECK_EQ_INT(st->ops->user_set_password(st, bob + 100, "$argon2id$new"), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->user_get(st, bob, &g), ERR_OK)) {
        CHECK_EQ_STR(g.name, "bob");
        CHECK_EQ_STR(g.pwhash, "$argon2id$new");
        CHECK_EQ_INT(g.role, USER_VIEWER);
    }
    CHECK_EQ_INT(st->ops->user_disable(st, bob, 500), ERR_OK);
    CHECK_EQ_INT(st->ops->user_disable(st, bob, 600), ERR_NOTFOUND); /* already */
    struct collect c = {BUF_INIT, 0, 0, "", 0};
    CHECK_EQ_INT(st->ops->user_list(st, collect_user, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "ann:admin:3:0,bob:viewer:4:500");
    CHECK_EQ_INT(st->ops->user_count(st, &n), ERR_OK);
    CHECK_EQ_INT(n, 2);

    /* Role, enabling, the last sign-in. */
    CHECK_EQ_INT(st->ops->user_set_role(st, bob, USER_MEMBER), ERR_OK);
    CHECK_EQ_INT(st->ops->user_set_role(st, bob + 100, USER_MEMBER), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->user_enable(st, ann), ERR_NOTFOUND); /* not disabled */
    CHECK_EQ_INT(st->ops->user_enable(st, bob), ERR_OK);
    CHECK_EQ_INT(st->ops->user_signed_in(st, bob, 777), ERR_OK);
    CHECK_EQ_INT(st->ops->user_signed_in(st, bob + 100, 777), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->user_get(st, bob, &g), ERR_OK)) {
        CHECK_EQ_INT(g.role, USER_MEMBER);
        CHECK_EQ_INT(g.disabled_at, 0);
        CHECK_EQ_INT(g.last_signin_at, 777);
    }
    if (CHECK_EQ_INT(st->ops->user_get(st, ann, &g), ERR_OK))
        CHECK_EQ_INT(g.last_signin_at, 0);
    CHECK_EQ_INT(st->ops->user_disable(st, bob, 500), ERR_OK);
    CHECK_EQ_INT(st->ops->user_set_role(st, bob, USER_VIEWER), ERR_OK);

    /* The setup token: one at a time, until its expiry, gone when ended. */
    uint8_t t1[32], t2[32];
    memset(t1, 1, sizeof(t1));
    memset(t2, 2, sizeof(t2));
    CHECK_EQ_INT(st->ops->setup_check(st, t1, 0), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->setup_end(st), ERR_OK); /* none: fine */
    CHECK_EQ_INT(st->ops->setup_put(st, t1, 5000), ERR_OK);
    CHECK_EQ_INT(st->ops->setup_check(st, t1, 4999), ERR_OK);
    CHECK_EQ_INT(st->ops->setup_check(st, t1, 5000), ERR_NOTFOUND); /* expired */
    CHECK_EQ_INT(st->ops->setup_check(st, t2, 100), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->setup_put(st, t2, 6000), ERR_OK); /* replaces t1 */
    CHECK_EQ_INT(st->ops->setup_check(st, t1, 100), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->setup_check(st, t2, 100), ERR_OK);
    CHECK_EQ_INT(st->ops->setup_end(st), ERR_OK);
    CHECK_EQ_INT(st->ops->setup_check(st, t2, 100), ERR_NOTFOUND);

    /* Sessions: found until expires_at, touched, ended one by one or per user. */
    uint8_t h1[32], h2[32], h3[32];
    for (int i = 0; i < 32; i++) {
        h1[i] = (uint8_t)i;
        h2[i] = (uint8_t)(255 - i);
        h3[i] = (uint8_t)(i * 7 + 92);
    }
    struct session s1 = {.user_id = ann, .created_at = 1000, .seen_at = 1000, .expires_at = 9000};
    struct session s2 = {.user_id = ann, .created_at = 1100, .seen_at = 1100, .expires_at = 9100};
    struct session s3 = {.user_id = bob, .created_at = 1200, .seen_at = 1200, .expires_at = 2000};
    CHECK_EQ_INT(st->ops->session_insert(st, h1, &s1), ERR_OK);
    CHECK_EQ_INT(st->ops->session_insert(st, h2, &s2), ERR_OK);
    CHECK_EQ_INT(st->ops->session_insert(st, h3, &s3), ERR_OK);
    CHECK_EQ_INT(st->ops->session_insert(st, h3, &s1), ERR_EXISTS);
    struct session got;
    if (CHECK_EQ_INT(st->ops->session_get(st, h1, 1500, &got), ERR_OK)) {
        CHECK_EQ_INT(got.user_id, ann);
        CHECK_EQ_INT(got.created_at, 1000);
        CHECK_EQ_INT(got.seen_at, 1000);
        CHECK_EQ_INT(got.expires_at, 9000);
    }
    CHECK_EQ_INT(st->ops->session_touch(st, h1, 1700), ERR_OK);
    if (CHECK_EQ_INT(st->ops->session_get(st, h1, 1800, &got), ERR_OK))
        CHECK_EQ_INT(got.seen_at, 1700);
    CHECK_EQ_INT(st->ops->session_get(st, h3, 1999, &got), ERR_OK);
    CHECK_EQ_INT(st->ops->session_get(st, h3, 2000, &got), ERR_NOTFOUND); /* past its cap */
    uint8_t none[32] = {0};
    CHECK_EQ_INT(st->ops->session_get(st, none, 1000, &got), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->session_touch(st, none, 1000), ERR_NOTFOUND);

    /* The sweep takes those past their cap (h3) and those idle since before
     * 1500 (h2, seen at 1100); h1 was seen at 1700. */
    int64_t swept = -1;
    CHECK_EQ_INT(st->ops->session_sweep(st, 2500, 1500, &swept), ERR_OK);
    CHECK_EQ_INT(swept, 2);
    CHECK_EQ_INT(st->ops->session_get(st, h2, 1000, &got), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->session_get(st, h1, 2500, &got), ERR_OK);
    CHECK_EQ_INT(st->ops->session_end(st, h1), ERR_OK);
    CHECK_EQ_INT(st->ops->session_end(st, h1), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->session_insert(st, h1, &s1), ERR_OK);
    CHECK_EQ_INT(st->ops->session_insert(st, h2, &s2), ERR_OK);
    CHECK_EQ_INT(st->ops->session_insert(st, h3, &s3), ERR_OK);
    CHECK_EQ_INT(st->ops->session_end_user(st, ann), ERR_OK);
    CHECK_EQ_INT(st->ops->session_get(st, h1, 1000, &got), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->session_get(st, h2, 1000, &got), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->session_get(st, h3, 1000, &got), ERR_OK);
    buf_release(&c.s);
}

void test_store_users(void) { each_backend("users", users_checks); }

/* ---- idempotency ---- */

static void idem_checks(struct backend *b)
{
    struct store *st = b->st;
    struct idem_rec rec = {.status = 201, .body = "{\"code\":\"x\\\"y\"}", .created_at = 1000};
    for (int i = 0; i < 32; i++)
        rec.fingerprint[i] = (uint8_t)(i * 13);
    CHECK_EQ_INT(st->ops->idem_put(st, 5, "key-1", &rec), ERR_OK);
    struct idem_rec out;
    if (CHECK_EQ_INT(st->ops->idem_get(st, 5, "key-1", 1000, &out), ERR_OK)) {
        CHECK(memcmp(out.fingerprint, rec.fingerprint, 32) == 0);
        CHECK_EQ_INT(out.status, 201);
        CHECK_EQ_STR(out.body, rec.body);
        CHECK_EQ_INT(out.created_at, 1000);
        free(out.body);
    }
    CHECK_EQ_INT(st->ops->idem_get(st, 5, "key-1", 1001, &out), ERR_NOTFOUND); /* too old */
    CHECK_EQ_INT(st->ops->idem_get(st, 6, "key-1", 0, &out), ERR_NOTFOUND);    /* other key */
    CHECK_EQ_INT(st->ops->idem_get(st, 5, "key-2", 0, &out), ERR_NOTFOUND);
    /* A second put replaces the answer; a NULL body is stored empty. */
    struct idem_rec rec2 = {.status = 422, .body = NULL, .created_at = 2000};
    CHECK_EQ_INT(st->ops->idem_put(st, 5, "key-1", &rec2), ERR_OK);
    if (CHECK_EQ_INT(st->ops->idem_get(st, 5, "key-1", 0, &out), ERR_OK)) {
        CHECK_EQ_INT(out.status, 422);
        CHECK_EQ_STR(out.body, "");
        CHECK_EQ_INT(out.created_at, 2000);
        CHECK_EQ_INT(out.fingerprint[1], 0);
        free(out.body);
    }
    CHECK_EQ_INT(st->ops->idem_put(st, 6, "key-1", &rec), ERR_OK); /* created 1000 */
    CHECK_EQ_INT(st->ops->idem_sweep(st, 1500), ERR_OK);
    CHECK_EQ_INT(st->ops->idem_get(st, 6, "key-1", 0, &out), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->idem_get(st, 5, "key-1", 0, &out), ERR_OK))
        free(out.body);
}

void test_store_idempotency(void) { each_backend("idem", idem_checks); }

/* ---- blocklist ---- */

static int collect_host(const char *host, int64_t created_at, void *arg)
{
    struct collect *c = arg;
    buf_printf(&c->s, "%s%s@%lld", c->s.len ? "," : "", host, (long long)created_at);
    return ++c->calls == c->stop_after;
}

static void block_checks(struct backend *b)
{
    struct store *st = b->st;
    bool yes = true;
    CHECK_EQ_INT(st->ops->block_has(st, "evil.example", &yes), ERR_OK);
    CHECK(!yes);
    CHECK_EQ_INT(st->ops->block_add(st, "evil.example", 10), ERR_OK);
    CHECK_EQ_INT(st->ops->block_add(st, "evil.example", 11), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->block_add(st, "evil.example", 12), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->block_add(st, "Bad.example", 13), ERR_OK);
    CHECK_EQ_INT(st->ops->block_add(st, "aaa.example", 14), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(st->ops->block_has(st, "evil.example", &yes), ERR_OK);
    CHECK(yes);
    CHECK_EQ_INT(st->ops->block_has(st, "good.example", &yes), ERR_OK);
    CHECK(!yes);
    struct collect c = {BUF_INIT, 0, 0, "", 0};
    CHECK_EQ_INT(st->ops->block_list(st, collect_host, &c), ERR_OK);
    /* Byte order, as SQLite sorts: upper case first. */
    CHECK_EQ_STR(buf_cstr(&c.s), "Bad.example@13,aaa.example@14,evil.example@10");
    CHECK_EQ_INT(st->ops->block_del(st, "evil.example"), ERR_OK);
    CHECK_EQ_INT(st->ops->block_del(st, "evil.example"), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->block_has(st, "evil.example", &yes), ERR_OK);
    CHECK(!yes);
    buf_reset(&c.s);
    c.calls = 0;
    c.stop_after = 1;
    CHECK_EQ_INT(st->ops->block_list(st, collect_host, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "Bad.example@13");
    buf_release(&c.s);
}

void test_store_blocklist(void) { each_backend("block", block_checks); }

/* ---- click analytics ---- */

struct days {
    struct buf s;
};

static int collect_day(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%lld:%lld/%lld/%lld", s->len ? "," : "", (long long)day, (long long)clicks,
               (long long)uniques, (long long)bots);
    return 0;
}

static int sum_day(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    (void)day, (void)uniques, (void)bots;
    *(int64_t *)arg += clicks;
    return 0;
}

static int64_t day_clicks(struct store *st, const char *code, int64_t day)
{
    int64_t n = 0;
    if (st->ops->stats_days(st, code, day, day, sum_day, &n) != ERR_OK)
        return -1;
    return n;
}

static int collect_dim(int dim, const char *value, int64_t n, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%d:%s=%lld", s->len ? "," : "", dim, value, (long long)n);
    return 0;
}

static int collect_recent(const struct recent_click *r, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%lld:%s/%s/%s/%s", s->len ? "," : "", (long long)r->ts, r->referrer,
               r->country, r->device, r->browser);
    return 0;
}

static int collect_top(const char *code, int64_t clicks, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%s=%lld", s->len ? "," : "", code, (long long)clicks);
    return 0;
}

static const char *days_of(struct store *st, const char *code, int64_t from, int64_t to,
                           struct buf *s)
{
    buf_reset(s);
    buf_adds(s, "");
    if (st->ops->stats_days(st, code, from, to, collect_day, s) != ERR_OK)
        return "(error)";
    return buf_cstr(s);
}

static const char *dims_of(struct store *st, const char *code, int64_t from, int64_t to,
                           struct buf *s)
{
    buf_reset(s);
    buf_adds(s, "");
    if (st->ops->stats_dims(st, code, from, to, collect_dim, s) != ERR_OK)
        return "(error)";
    return buf_cstr(s);
}

static const char *recent_of(struct store *st, const char *code, int limit, struct buf *s)
{
    buf_reset(s);
    buf_adds(s, "");
    if (st->ops->stats_recent(st, code, limit, collect_recent, s) != ERR_OK)
        return "(error)";
    return buf_cstr(s);
}

static const char *all_days_of(struct store *st, int64_t owner, int64_t from, int64_t to,
                               struct buf *s)
{
    buf_reset(s);
    buf_adds(s, "");
    if (st->ops->stats_all_days(st, owner, from, to, collect_day, s) != ERR_OK)
        return "(error)";
    return buf_cstr(s);
}

static const char *all_dims_of(struct store *st, int64_t owner, int64_t from, int64_t to,
                               struct buf *s)
{
    buf_reset(s);
    buf_adds(s, "");
    if (st->ops->stats_all_dims(st, owner, from, to, collect_dim, s) != ERR_OK)
        return "(error)";
    return buf_cstr(s);
}

static const char *top_of(struct store *st, int64_t owner, int64_t day, int limit, struct buf *s)
{
    buf_reset(s);
    buf_adds(s, "");
    if (st->ops->stats_top(st, owner, day, limit, collect_top, s) != ERR_OK)
        return "(error)";
    return buf_cstr(s);
}

static void remember(struct dayrow *r, int64_t ts, const char *ref)
{
    const char *text[4] = {ref, "NL", "desktop", "Firefox"};
    dayrow_remember(r, ts, text);
}

static void tally(struct dayrow *r, int dim, const char *v, int64_t n)
{
    dayrow_tally(r, dim, v, strlen(v), n);
}

static void agg_checks(struct backend *b)
{
    struct store *st = b->st;
    struct buf s = BUF_INIT;
    struct dayrow r;
    dayrow_init(&r);
    CHECK_EQ_INT(insert(st, "agg1", 1, "https://e.example/1", 10, 0), ERR_OK);
    CHECK_EQ_INT(insert(st, "agg2", 2, "https://e.example/2", 10, 0), ERR_OK);

    /* One transaction of link days, as the aggregator writes them, with
     * values that need quoting (and bytes that are not UTF-8). */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    r.clicks = 5;
    r.bots = 2;
    dayrow_visitor(&r, UINT64_MAX);
    dayrow_visitor(&r, 1);
    tally(&r, DIM_COUNTRY, "NL", 4);
    tally(&r, DIM_COUNTRY, "DE", 2);
    tally(&r, DIM_REFERRER, "a \"b\" \\c, {d} NULL", 1);
    CHECK_EQ_INT(add_row(st, "agg1", 100, &r), ERR_OK);
    r.clicks = 3;
    dayrow_visitor(&r, UINT64_MAX);
    tally(&r, DIM_COUNTRY, "NL", 1);
    tally(&r, DIM_REFERRER, "zürich.example", 2);
    tally(&r, DIM_REFERRER, "", 1);
    tally(&r, DIM_LANGUAGE, "bad \xff", 1);
    for (int i = 1; i <= 3; i++)
        remember(&r, 1000 + i, i == 3 ? "last \"one\"" : "r");
    CHECK_EQ_INT(add_row(st, "agg1", 101, &r), ERR_OK);
    /* The same day again: merged into the stored row. */
    r.clicks = 1;
    r.bots = 1;
    dayrow_visitor(&r, UINT64_MAX); /* seen that day: not a new visitor */
    tally(&r, DIM_COUNTRY, "DE", 1);
    CHECK_EQ_INT(add_row(st, "agg1", 100, &r), ERR_OK);
    const unsigned char pos[8] = {42};
    CHECK_EQ_INT(st->ops->meta_put(st, "journal_pos", pos, 8), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);

    CHECK_EQ_STR(days_of(st, "agg1", 100, 101, &s), "100:6/2/3,101:3/1/0");
    CHECK_EQ_STR(days_of(st, "agg1", 101, 200, &s), "101:3/1/0");
    CHECK_EQ_STR(days_of(st, "agg1", 0, 99, &s), "");
    CHECK_EQ_STR(dims_of(st, "agg1", 100, 101, &s),
                 "0:zürich.example=2,0:=1,0:a \"b\" \\c, {d} NULL=1,2:NL=5,2:DE=3,6:bad \xff=1");
    CHECK_EQ_STR(dims_of(st, "agg1", 101, 101, &s), "0:zürich.example=2,0:=1,2:NL=1,6:bad \xff=1");
    CHECK_EQ_STR(recent_of(st, "agg1", 10, &s),
                 "1003:last \"one\"/NL/desktop/Firefox,1002:r/NL/desktop/Firefox,"
                 "1001:r/NL/desktop/Firefox");
    CHECK_EQ_STR(recent_of(st, "agg1", 1, &s), "1003:last \"one\"/NL/desktop/Firefox");
    struct link l;
    if (CHECK_EQ_INT(st->ops->link_get(st, "agg1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks, 9);
        CHECK_EQ_INT(l.bot_clicks, 3);
        link_release(&l);
    }

    /* Newer clicks on a later day come first; the ring keeps RECENT_KEEP. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    for (int i = 0; i < RECENT_KEEP + 2; i++)
        remember(&r, 2001 + i, "n");
    CHECK_EQ_INT(add_row(st, "agg1", 102, &r), ERR_OK);
    remember(&r, 2003, "n");
    CHECK_EQ_INT(add_row(st, "agg2", 102, &r), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_STR(recent_of(st, "agg1", 2, &s),
                 "2022:n/NL/desktop/Firefox,2021:n/NL/desktop/Firefox");
    recent_of(st, "agg1", 100, &s);
    /* The newest RECENT_KEEP clicks over all days: the older day drops out. */
    CHECK(strstr(s.p, "2003:n") && !strstr(s.p, "2002:n") && !strstr(s.p, "1003:last"));
    CHECK_EQ_STR(recent_of(st, "agg2", 10, &s), "2003:n/NL/desktop/Firefox");

    /* Outside a transaction a link day is written at once. */
    r.clicks = 10;
    dayrow_visitor(&r, 5);
    tally(&r, DIM_BROWSER, "Firefox", 10);
    CHECK_EQ_INT(add_row(st, "agg2", 100, &r), ERR_OK);
    CHECK_EQ_STR(days_of(st, "agg2", 100, 100, &s), "100:10/1/0");
    CHECK_EQ_STR(dims_of(st, "agg2", 100, 100, &s), "3:Firefox=10");
    /* A day of a code without a link row is kept, and touches no link. */
    CHECK_EQ_INT(add_clicks(st, "ghost", 100, 1, 0), ERR_OK);
    CHECK_EQ_STR(days_of(st, "ghost", 100, 100, &s), "100:1/0/0");

    /* Totals and top links. */
    struct totals t = {-1, -1, -1};
    CHECK_EQ_INT(st->ops->stats_totals(st, -1, &t), ERR_OK);
    CHECK(t.links == 2 && t.clicks == 20 && t.bot_clicks == 3);
    CHECK_EQ_INT(st->ops->stats_totals(st, 2, &t), ERR_OK);
    CHECK(t.links == 1 && t.clicks == 10 && t.bot_clicks == 0);
    CHECK_EQ_INT(st->ops->stats_totals(st, 9, &t), ERR_OK);
    CHECK(t.links == 0 && t.clicks == 0 && t.bot_clicks == 0);
    CHECK_EQ_STR(top_of(st, -1, 100, 10, &s), "agg2=10,agg1=6");
    CHECK_EQ_STR(top_of(st, -1, 100, 1, &s), "agg2=10");
    CHECK_EQ_STR(top_of(st, 1, 100, 10, &s), "agg1=6");
    CHECK_EQ_STR(top_of(st, -1, 103, 10, &s), "");
    /* Every link of an owner together (-1: every day row, as the totals). */
    CHECK_EQ_STR(all_days_of(st, 1, 0, 1000, &s), "100:6/2/3,101:3/1/0,102:0/0/0");
    CHECK_EQ_STR(all_days_of(st, 2, 100, 101, &s), "100:10/1/0");
    CHECK_EQ_STR(all_days_of(st, -1, 100, 101, &s), "100:17/3/3,101:3/1/0");
    CHECK_EQ_STR(all_days_of(st, 9, 0, 1000, &s), "");
    CHECK_EQ_STR(all_dims_of(st, 2, 100, 101, &s), "3:Firefox=10");
    CHECK_EQ_STR(all_dims_of(st, -1, 100, 100, &s),
                 "0:a \"b\" \\c, {d} NULL=1,2:NL=4,2:DE=3,3:Firefox=10");
    CHECK_EQ_STR(all_dims_of(st, 9, 0, 1000, &s), "");

    /* More link days in one call than one round of statements takes, in
     * (code, day) order, half of them already stored. All are marked fresh
     * (the hint an import gives): the two rows that exist all the same are
     * merged into, not replaced or refused. */
    enum { MANY = 5000 };
    struct dayrow *rows = calloc(MANY, sizeof(*rows));
    struct day_delta *d = calloc(MANY, sizeof(*d));
    char(*codes)[16] = calloc(MANY, sizeof(*codes));
    for (int i = 0; i < MANY; i++) {
        snprintf(codes[i], sizeof(codes[i]), "m%05d", i / 2);
        dayrow_init(&rows[i]);
        rows[i].clicks = 1;
        tally(&rows[i], DIM_LANGUAGE, i % 2 ? "de" : "nl", 1);
        d[i] = (struct day_delta){codes[i], 200 + i % 2, &rows[i], true};
    }
    CHECK_EQ_INT(add_clicks(st, "m00000", 200, 1, 0), ERR_OK);
    CHECK_EQ_INT(add_clicks(st, "m02499", 201, 1, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->agg_days(st, d, MANY), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_STR(days_of(st, "m00000", 0, 300, &s), "200:2/0/0,201:1/0/0");
    CHECK_EQ_STR(days_of(st, "m01234", 0, 300, &s), "200:1/0/0,201:1/0/0");
    CHECK_EQ_STR(days_of(st, "m02499", 0, 300, &s), "200:1/0/0,201:2/0/0");
    CHECK_EQ_STR(dims_of(st, "m01234", 0, 300, &s), "6:de=1,6:nl=1");
    for (int i = 0; i < MANY; i++)
        dayrow_release(&rows[i]);
    free(rows);
    free(d);
    free(codes);
    dayrow_release(&r);
    buf_release(&s);
}

void test_store_analytics(void) { each_backend("agg", agg_checks); }

/* ---- appended link days (store_stats.h, "Appending") ---- */

/* One store's every read of the stats, as text. */
static void all_reads(struct store *st, struct buf *out)
{
    static const char *const codes[] = {"ap1", "ap2", "ap3"};
    struct buf s = BUF_INIT;
    buf_reset(out);
    for (int i = 0; i < 3; i++) {
        buf_printf(out, "[%s] days %s", codes[i], days_of(st, codes[i], 0, 400, &s));
        buf_printf(out, " / 301 %s", days_of(st, codes[i], 301, 301, &s));
        buf_printf(out, " dims %s", dims_of(st, codes[i], 0, 400, &s));
        buf_printf(out, " recent %s", recent_of(st, codes[i], 50, &s));
        struct link l;
        if (st->ops->link_get(st, codes[i], &l) == ERR_OK) {
            buf_printf(out, " link %lld/%lld", (long long)l.clicks, (long long)l.bot_clicks);
            link_release(&l);
        }
        buf_adds(out, "\n");
    }
    for (int64_t owner = -1; owner <= 2; owner++) {
        buf_printf(out, "[owner %lld] days %s", (long long)owner,
                   all_days_of(st, owner, 0, 400, &s));
        buf_printf(out, " dims %s", all_dims_of(st, owner, 0, 400, &s));
        for (int64_t day = 300; day <= 302; day++)
            buf_printf(out, " top%lld %s", (long long)day, top_of(st, owner, day, 10, &s));
        struct totals t;
        if (st->ops->stats_totals(st, owner, &t) == ERR_OK)
            buf_printf(out, " totals %lld/%lld/%lld", (long long)t.links, (long long)t.clicks,
                       (long long)t.bot_clicks);
        buf_adds(out, "\n");
    }
    buf_release(&s);
}

/* Batch k's link days: some of each link's three days, with counts,
 * tallies, newest clicks and visitors that overlap other batches'. */
static size_t batch_rows(int k, struct dayrow *rows, struct day_delta *d)
{
    static const char *const codes[] = {"ap1", "ap2", "ap3"};
    size_t n = 0;
    for (int c = 0; c < 3; c++) {
        for (int day = 300; day <= 302; day++) {
            if ((k + c + day) % 3 == 0)
                continue; /* not every link day in every batch */
            struct dayrow *r = &rows[n];
            dayrow_init(r);
            r->clicks = 2 + k + c;
            r->bots = k % 2;
            tally(r, DIM_COUNTRY, k % 2 ? "NL" : "DE", r->clicks);
            tally(r, DIM_BROWSER, "Firefox", 1 + c);
            for (int v = 0; v < 3; v++)
                dayrow_visitor(r, (uint64_t)(k * 2 + v) * 0x9e3779b97f4a7c15ull);
            for (int t = 0; t < 2; t++)
                remember(r, day * MS_PER_DAY + k * 1000 + t * 100 + c,
                         k % 2 ? "a.example" : "b.example");
            d[n] = (struct day_delta){codes[c], day, r, false};
            n++;
        }
    }
    return n;
}

static void append_checks(struct backend *b)
{
    struct backend m; /* the same link days merged by agg_days */
    if (!fresh(&m, false, "append-merged"))
        return;
    struct store *sts[2] = {b->st, m.st};
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(insert(sts[i], "ap1", 1, "https://e.example/1", 10, 0), ERR_OK);
        CHECK_EQ_INT(insert(sts[i], "ap2", 1, "https://e.example/2", 10, 0), ERR_OK);
        CHECK_EQ_INT(insert(sts[i], "ap3", 2, "https://e.example/3", 10, 0), ERR_OK);
        CHECK_EQ_INT(add_clicks(sts[i], "ap1", 301, 4, 1), ERR_OK); /* a stored row first */
    }
    struct store *st = b->st;
    CHECK(st->ops->days_append != NULL);
    struct dayrow rows[9];
    struct day_delta d[9];
    int64_t appended = 0;
    for (int k = 0; k < 5; k++) {
        size_t n = batch_rows(k, rows, d);
        int64_t batch = 0;
        CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
        CHECK_EQ_INT(st->ops->days_batch(st, 0, &batch), ERR_OK);
        CHECK_EQ_INT(batch, k + 1);
        CHECK_EQ_INT(st->ops->days_append(st, batch, d, n), ERR_OK);
        CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
        CHECK_EQ_INT(m.st->ops->begin(m.st), ERR_OK);
        CHECK_EQ_INT(m.st->ops->agg_days(m.st, d, n), ERR_OK);
        CHECK_EQ_INT(m.st->ops->commit(m.st), ERR_OK);
        appended += (int64_t)n;
        for (size_t i = 0; i < n; i++)
            dayrow_release(&rows[i]);
    }
    int64_t pending = -1, newest = 0;
    CHECK_EQ_INT(st->ops->days_pending(st, &pending, &newest), ERR_OK);
    CHECK_EQ_INT(pending, appended);
    CHECK_EQ_INT(newest, 5);

    /* Every read the same, before compacting, part way and after */
    struct buf want = BUF_INIT, got = BUF_INIT;
    all_reads(m.st, &want);
    all_reads(st, &got);
    CHECK_EQ_STR(buf_cstr(&got), buf_cstr(&want));
    CHECK(strstr(buf_cstr(&want), "(error)") == NULL);
    size_t rows_taken = 0, total = 0;
    int steps = 0;
    do {
        CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
        /* batches up to 3 first, as a round started then would */
        CHECK_EQ_INT(st->ops->days_compact(st, steps < 4 ? 3 : INT64_MAX, 1, NULL, NULL,
                                           &rows_taken),
                     ERR_OK);
        CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
        total += rows_taken;
        all_reads(st, &got);
        if (!CHECK_EQ_STR(buf_cstr(&got), buf_cstr(&want)))
            break;
    } while ((rows_taken || steps < 4) && ++steps < 100);
    CHECK_EQ_INT((int64_t)total, appended);
    CHECK_EQ_INT(st->ops->days_pending(st, &pending, &newest), ERR_OK);
    CHECK_EQ_INT(pending, 0);
    CHECK_EQ_INT(newest, 0);
    /* Numbers never go back below what the caller has taken */
    int64_t next = 0;
    CHECK_EQ_INT(st->ops->days_batch(st, 7, &next), ERR_OK);
    CHECK_EQ_INT(next, 8);
    buf_release(&want);
    buf_release(&got);
    finish(&m);
}

void test_store_appended_days(void) { each_backend("append", append_checks); }

static bool stop_now(void *arg)
{
    (*(int *)arg)++;
    return true;
}

/* A pass that may stop (for a create, aggregate.c) ends part way when told,
 * with what it took merged and deleted and the rest left for later passes:
 * no click counted twice or missed. SQLite asks every 16 link days;
 * PostgreSQL's pass is one statement and never asks. */
static void stop_checks(struct backend *b)
{
    struct store *st = b->st;
    enum { N = 400 };
    static struct dayrow rows[N];
    static struct day_delta d[N];
    static char codes[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(codes[i], sizeof(codes[i]), "sp%03d", i);
        CHECK_EQ_INT(insert(st, codes[i], 1, "https://e.example/s", 10, 0), ERR_OK);
        dayrow_init(&rows[i]);
        rows[i].clicks = 1 + i % 7;
        d[i] = (struct day_delta){codes[i], 300, &rows[i], false};
    }
    int64_t batch = 0;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->days_batch(st, 0, &batch), ERR_OK);
    CHECK_EQ_INT(st->ops->days_append(st, batch, d, N), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    for (int i = 0; i < N; i++)
        dayrow_release(&rows[i]);

    int asked = 0;
    size_t taken = 0, more = 0;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->days_compact(st, INT64_MAX, 1024, stop_now, &asked, &taken), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    if (b->pg) {
        CHECK_EQ_INT(asked, 0); /* one statement: it cannot stop */
        CHECK_EQ_INT(taken, N);
    } else {
        CHECK_EQ_INT(asked, 1);
        if (!CHECK(taken > 0 && taken < N))
            test_note("a pass told to stop took %zu of %d rows", taken, N);
    }
    int64_t pending = -1, newest = 0;
    CHECK_EQ_INT(st->ops->days_pending(st, &pending, &newest), ERR_OK);
    CHECK_EQ_INT(pending, N - (int64_t)taken);
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += day_clicks(st, codes[i], 300) != 1 + i % 7;
    CHECK_EQ_INT(wrong, 0);

    do {
        CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
        CHECK_EQ_INT(st->ops->days_compact(st, INT64_MAX, 1024, NULL, NULL, &more), ERR_OK);
        CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
        taken += more;
    } while (more);
    CHECK_EQ_INT(taken, N);
    CHECK_EQ_INT(st->ops->days_pending(st, &pending, &newest), ERR_OK);
    CHECK_EQ_INT(pending, 0);
    wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += day_clicks(st, codes[i], 300) != 1 + i % 7;
    CHECK_EQ_INT(wrong, 0);
}

void test_store_compact_stops(void) { each_backend("compact_stop", stop_checks); }

/* A second node merging into the same new day row (agg_days and
 * compacting share the code): it finds no row to lock, its insert meets the
 * first node's uncommitted one and waits, then merges into it once that is
 * committed. */
struct merger {
    struct store *st;
    int rc;
};

static void *merge_late(void *arg)
{
    struct merger *m = arg;
    struct dayrow r;
    dayrow_init(&r);
    r.clicks = 5;
    dayrow_visitor(&r, 2);
    m->rc = m->st->ops->begin(m->st);
    if (m->rc == ERR_OK)
        m->rc = add_row(m->st, "race1", 400, &r);
    if (m->rc == ERR_OK)
        m->rc = m->st->ops->commit(m->st);
    else
        m->st->ops->rollback(m->st);
    dayrow_release(&r);
    return NULL;
}

static void day_race_checks(struct backend *b)
{
    struct store *st = b->st, *other = NULL;
    if (!b->pg || !CHECK_EQ_INT(store_open(b->url, &other), ERR_OK))
        return;
    CHECK_EQ_INT(insert(st, "race1", 1, "https://e.example/r", 10, 0), ERR_OK);
    struct dayrow r;
    dayrow_init(&r);
    r.clicks = 3;
    dayrow_visitor(&r, 1);
    dayrow_visitor(&r, 2);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(add_row(st, "race1", 400, &r), ERR_OK); /* inserted, not committed */
    struct merger m = {other, -1};
    pthread_t t;
    pthread_create(&t, NULL, merge_late, &m);
    usleep(300 * 1000); /* the other node's insert is waiting on this one's */
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    pthread_join(t, NULL);
    CHECK_EQ_INT(m.rc, ERR_OK);
    struct buf s = BUF_INIT;
    CHECK_EQ_STR(days_of(st, "race1", 400, 400, &s), "400:8/2/0");
    buf_release(&s);
    dayrow_release(&r);
    other->ops->close(other);
}

void test_store_day_race(void) { each_backend("dayrace", day_race_checks); }

/* ---- site analytics (store_sites.h) ---- */

static int collect_site(const struct site_info *x, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%s/%lld/%d/%lld", s->len ? "," : "", x->id, (long long)x->owner, x->badge,
               (long long)x->pv_total);
    return 0;
}

static int collect_site_host(const char *host, const char *site, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%s=%s", s->len ? "," : "", host, site);
    return 0;
}

static int collect_site_day(int64_t day, int64_t pv, int64_t uniques, int64_t bots, void *arg)
{
    struct buf *s = arg;
    buf_printf(s, "%s%lld:%lld/%lld/%lld", s->len ? "," : "", (long long)day, (long long)pv,
               (long long)uniques, (long long)bots);
    return 0;
}

static int count_token(int64_t id, int64_t created_at, void *arg)
{
    (void)id, (void)created_at;
    (*(int *)arg)++;
    return 0;
}

static void sites_checks(struct backend *b)
{
    struct store *st = b->st;
    struct site_info a = {.id = "alpha", .owner = 7, .badge = true, .created_at = 100};
    struct site_info z = {.id = "zeta", .owner = 8, .created_at = 200};
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_insert(st, &a), ERR_OK);
    CHECK_EQ_INT(st->ops->site_insert(st, &z), ERR_OK);
    CHECK_EQ_INT(st->ops->site_host_add(st, "a.example", "alpha"), ERR_OK);
    CHECK_EQ_INT(st->ops->site_host_add(st, "z.example", "zeta"), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_insert(st, &a), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->site_host_add(st, "a.example", "zeta"), ERR_EXISTS);
    struct site_info got;
    CHECK_EQ_INT(st->ops->site_get(st, "alpha", &got), ERR_OK);
    CHECK_EQ_STR(got.id, "alpha");
    CHECK(got.badge && got.owner == 7 && got.created_at == 100 && got.pv_total == 0);
    CHECK_EQ_INT(st->ops->site_get(st, "nope", &got), ERR_NOTFOUND);
    struct buf s = BUF_INIT;
    CHECK_EQ_INT(st->ops->site_list(st, -1, collect_site, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "alpha/7/1/0,zeta/8/0/0");
    buf_reset(&s);
    CHECK_EQ_INT(st->ops->site_list(st, 8, collect_site, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "zeta/8/0/0");
    buf_reset(&s);
    CHECK_EQ_INT(st->ops->site_hosts_list(st, NULL, collect_site_host, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "a.example=alpha,z.example=zeta");
    CHECK_EQ_INT(st->ops->site_set_badge(st, "nope", true), ERR_NOTFOUND);

    /* Tokens: found by hash, removed by id. */
    uint8_t h1[32], h2[32];
    memset(h1, 1, sizeof(h1));
    memset(h2, 2, sizeof(h2));
    int64_t t1 = 0, t2 = 0;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_token_add(st, "alpha", h1, 5, &t1), ERR_OK);
    CHECK_EQ_INT(st->ops->site_token_add(st, "zeta", h2, 6, &t2), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(t1 > 0 && t2 > 0 && t1 != t2);
    char site[SITE_ID_MAX + 1];
    CHECK_EQ_INT(st->ops->site_token_find(st, h1, site), ERR_OK);
    CHECK_EQ_STR(site, "alpha");
    CHECK_EQ_INT(st->ops->site_token_del(st, "zeta", t1), ERR_NOTFOUND);
    int tokens = 0;
    CHECK_EQ_INT(st->ops->site_token_list(st, "alpha", count_token, &tokens), ERR_OK);
    CHECK_EQ_INT(tokens, 1);

    /* Days: merged twice (a second batch adds), the badge total follows
     * page views of badge sites only. */
    struct dayrow r1, r2;
    dayrow_init(&r1);
    dayrow_init(&r2);
    r1.clicks = 3;
    r1.bots = 1;
    dayrow_tally(&r1, DIM_PATH, "/a", 2, 3);
    dayrow_tally(&r1, DIM_BOT, "ua", 2, 1);
    r2.clicks = 2;
    dayrow_tally(&r2, DIM_PATH, "/b", 2, 2);
    struct day_delta d[] = {{"alpha", 19000, &r1, false},
                            {"alpha", 19001, &r2, false},
                            {"zeta", 19000, &r2, false}};
    for (int round = 0; round < 2; round++) {
        CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
        CHECK_EQ_INT(st->ops->site_agg_days(st, d, 3), ERR_OK);
        CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    }
    buf_reset(&s);
    CHECK_EQ_INT(st->ops->site_stats_days(st, "alpha", 18000, 20000, collect_site_day, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "19000:6/0/2,19001:4/0/0");
    buf_reset(&s);
    CHECK_EQ_INT(st->ops->site_stats_dims(st, "alpha", 19000, 19001, collect_dim, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "15:/a=6,15:/b=4,25:ua=2");
    buf_reset(&s);
    CHECK_EQ_INT(st->ops->site_stats_dims(st, "alpha", 19001, 19001, collect_dim, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "15:/b=4");
    CHECK_EQ_INT(st->ops->site_get(st, "alpha", &got), ERR_OK);
    CHECK_EQ_INT(got.pv_total, 10);
    CHECK_EQ_INT(st->ops->site_get(st, "zeta", &got), ERR_OK);
    CHECK_EQ_INT(got.pv_total, 0); /* no badge */
    struct site_size sz;
    CHECK_EQ_INT(st->ops->site_size(st, "alpha", &sz), ERR_OK);
    CHECK_EQ_INT(sz.rows, 2);
    CHECK(sz.bytes > 0);

    /* A link's day beside them, then alpha deleted: every row of alpha
     * goes, zeta's and the link's stay; alpha's late beacons store nothing. */
    CHECK_EQ_INT(insert(st, "lnk1", 7, "https://x.example/", 1, 0), ERR_OK);
    struct day_delta ld = {"lnk1", 19000, &r1, false};
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->agg_days(st, &ld, 1), ERR_OK);
    CHECK_EQ_INT(st->ops->site_delete(st, "alpha"), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_delete(st, "alpha"), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->site_get(st, "alpha", &got), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->site_token_find(st, h1, site), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->site_size(st, "alpha", &sz), ERR_OK);
    CHECK_EQ_INT(sz.rows, 0);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_agg_days(st, d, 1), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_size(st, "alpha", &sz), ERR_OK);
    CHECK_EQ_INT(sz.rows, 0);
    CHECK_EQ_INT(st->ops->site_size(st, "zeta", &sz), ERR_OK);
    CHECK_EQ_INT(sz.rows, 1);
    CHECK_EQ_INT(day_clicks(st, "lnk1", 19000), 3);
    buf_reset(&s);
    CHECK_EQ_INT(st->ops->site_hosts_list(st, NULL, collect_site_host, &s), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&s), "z.example=zeta");
    CHECK_EQ_INT(st->ops->site_token_find(st, h2, site), ERR_OK);

    /* Pruned with the link days' retention. */
    int pruned = -1;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->site_prune_days(st, 19001, 100, &pruned), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(pruned, 1);
    CHECK_EQ_INT(st->ops->site_size(st, "zeta", &sz), ERR_OK);
    CHECK_EQ_INT(sz.rows, 0);
    dayrow_release(&r1);
    dayrow_release(&r2);
    buf_release(&s);
}

void test_store_sites(void) { each_backend("sites", sites_checks); }

/* ---- click jobs, a chunk at a time ---- */

/* Folds one human click on each of 'codes' (a comma-separated list) today
 * into 'a', submits the job (or resumes it) with 'pos' and waits for the
 * writer to finish it. */
static void fold_codes(struct aggregate *a, const char *codes)
{
    const char *ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                     "Chrome/120.0 Safari/537.36";
    for (const char *p = codes; *p;) {
        size_t n = strcspn(p, ",");
        struct click_event e = {.ts = now_ms(), .visitor = 7, .country = "NL"};
        e.code = (struct slice){p, n};
        e.ua = (struct slice){ua, strlen(ua)};
        aggregate_add(a, &e);
        p += n + (p[n] == ',');
    }
}

static void run_job(struct aggregate *a, struct writer *w, const char *codes, uint64_t pos,
                    bool resume)
{
    fold_codes(a, codes);
    if (resume)
        aggregate_resume(a, w, pos, NULL, NULL);
    else
        aggregate_submit(a, w, pos, NULL, NULL);
    writer_drain(w);
}

/* A job of 9 clicks on 7 links, 2 link days a transaction (4 of them): every
 * click counted once, the checkpoint set, no partial record left. Then a
 * job that a crash stopped after its first chunk (its 2 link days stored,
 * and the partial record that chunk wrote, made here as aggregate.c makes
 * it): resumed with the same clicks, it stores the other link days only. */
static void chunk_checks(struct backend *b)
{
    struct store *st = b->st;
    struct classify *cl = NULL;
    if (!CHECK_EQ_INT(classify_new(16, &cl), ERR_OK))
        return;
    struct writer *w = writer_new(st, 100);
    if (!CHECK_EQ_INT(writer_start(w, 0), ERR_OK)) {
        writer_free(w);
        classify_free(cl);
        return;
    }
    const char *const codes[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6",
                                 "d0", "d1", "d2", "d3", "d4", "d5", "d6"};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        CHECK_EQ_INT(insert(st, codes[i], 1, "https://e.example/c", 10, 0), ERR_OK);
    int64_t today = day_number(now_ms());

    struct aggregate *a = aggregate_new(cl, NULL);
    aggregate_set_journal(a, "chunks-a");
    aggregate_set_chunk(a, 2);
    run_job(a, w, "c6,c3,c0,c1,c3,c2,c5,c4,c3", 100, false);
    const int64_t want_c[] = {1, 1, 1, 3, 1, 1, 1};
    for (int i = 0; i < 7; i++)
        if (!CHECK_EQ_INT(day_clicks(st, codes[i], today), want_c[i]))
            test_note("link %s", codes[i]);
    uint64_t pos = 0, partial = 1;
    CHECK_EQ_INT(aggregate_checkpoint(a, st, &pos, &partial), ERR_OK);
    CHECK_EQ_INT(pos, 100);
    CHECK_EQ_INT(partial, 0);

    /* What the crashed job's first chunk committed: d0 (3 clicks) and d1 */
    struct aggregate *first = aggregate_new(cl, NULL);
    aggregate_set_journal(first, "chunks-scratch");
    run_job(first, w, "d0,d1,d0,d0", 1, false);
    unsigned char rec[16 + 2] = {200}; /* [u64 job position][i64 day][code] */
    for (int i = 0; i < 8; i++)
        rec[8 + i] = (unsigned char)((uint64_t)today >> (8 * i));
    memcpy(rec + 16, "d1", 2);
    CHECK_EQ_INT(st->ops->meta_put(st, "journal_pos:chunks-b:partial", rec, sizeof(rec)), ERR_OK);

    struct aggregate *again = aggregate_new(cl, NULL);
    aggregate_set_journal(again, "chunks-b");
    aggregate_set_chunk(again, 2);
    CHECK_EQ_INT(aggregate_checkpoint(again, st, &pos, &partial), ERR_OK);
    CHECK_EQ_INT(pos, 0);
    CHECK_EQ_INT(partial, 200);
    run_job(again, w, "d5,d0,d2,d1,d0,d6,d3,d4,d0", 200, true);
    const int64_t want_d[] = {3, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 7; i++)
        if (!CHECK_EQ_INT(day_clicks(st, codes[7 + i], today), want_d[i]))
            test_note("link %s", codes[7 + i]);
    CHECK_EQ_INT(aggregate_checkpoint(again, st, &pos, &partial), ERR_OK);
    CHECK_EQ_INT(pos, 200);
    CHECK_EQ_INT(partial, 0);

    /* Codes that share their first 8 bytes sort as strcmp sorts them: the
     * resumed job skips exactly those up to "prefix00a". */
    const char *const px[] = {"prefix0", "prefix00", "prefix00a", "prefix00b", "prefix01"};
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(insert(st, px[i], 1, "https://e.example/p", 10, 0), ERR_OK);
    run_job(first, w, "prefix00a,prefix0,prefix00", 2, false);
    memcpy(rec, (unsigned char[8]){44, 1}, 8);
    unsigned char prec[16 + 9];
    memcpy(prec, rec, 16);
    memcpy(prec + 16, "prefix00a", 9);
    CHECK_EQ_INT(st->ops->meta_put(st, "journal_pos:chunks-c:partial", prec, sizeof(prec)), ERR_OK);
    struct aggregate *third = aggregate_new(cl, NULL);
    aggregate_set_journal(third, "chunks-c");
    aggregate_set_chunk(third, 2);
    run_job(third, w, "prefix01,prefix00b,prefix0,prefix00a,prefix00", 300, true);
    for (int i = 0; i < 5; i++)
        if (!CHECK_EQ_INT(day_clicks(st, px[i], today), 1))
            test_note("link %s", px[i]);
    aggregate_free(third);

    writer_free(w);
    aggregate_free(a);
    aggregate_free(first);
    aggregate_free(again);
    classify_free(cl);
}

void test_store_chunked_jobs(void) { each_backend("chunks", chunk_checks); }

/* ---- folding in a hurry ---- */

static void fold_ua(struct aggregate *a, const char *code, const char *ua)
{
    struct click_event e = {.ts = now_ms(), .visitor = 7, .country = "NL"};
    e.code = (struct slice){code, strlen(code)};
    e.ua = (struct slice){ua, strlen(ua)};
    aggregate_add(a, &e);
}

/* A job folded in a hurry (clicks.c, when the fold is far behind): a
 * person's click is still a click, with browser, OS and device unknown; a
 * bot is still a bot of its kind; nothing is counted twice. Out of the
 * hurry the same person's next click has its browser again. */
static void hurry_checks(struct backend *b)
{
    struct store *st = b->st;
    struct classify *cl = NULL;
    if (!CHECK_EQ_INT(classify_new(16, &cl), ERR_OK))
        return;
    struct writer *w = writer_new(st, 100);
    if (!CHECK_EQ_INT(writer_start(w, 0), ERR_OK)) {
        writer_free(w);
        classify_free(cl);
        return;
    }
    CHECK_EQ_INT(insert(st, "h0", 1, "https://e.example/h", 10, 0), ERR_OK);
    int64_t today = day_number(now_ms());
    const char *chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                         "Chrome/120.0 Safari/537.36";
    struct aggregate *a = aggregate_new(cl, NULL);
    aggregate_set_journal(a, "hurry");
    aggregate_set_hurry(a, true);
    fold_ua(a, "h0", chrome);
    fold_ua(a, "h0", "curl/8.5.0");
    aggregate_submit(a, w, 10, NULL, NULL);
    writer_drain(w);
    struct buf s = BUF_INIT;
    char want[256];
    snprintf(want, sizeof(want), "%lld:1/1/1", (long long)today);
    CHECK_EQ_STR(days_of(st, "h0", today, today, &s), want);
    const char *dims = dims_of(st, "h0", today, today, &s);
    snprintf(want, sizeof(want), "%d:Unknown=1", DIM_BROWSER);
    if (!CHECK(strstr(dims, want) != NULL))
        test_note("dims %s", dims);
    snprintf(want, sizeof(want), "%d:Unknown=1", DIM_OS);
    CHECK(strstr(dims, want) != NULL);
    snprintf(want, sizeof(want), "%d:unknown=1", DIM_DEVICE);
    CHECK(strstr(dims, want) != NULL);
    snprintf(want, sizeof(want), "%d:http_library=1", DIM_BOT_KIND);
    CHECK(strstr(dims, want) != NULL);

    aggregate_set_hurry(a, false);
    fold_ua(a, "h0", chrome);
    aggregate_submit(a, w, 20, NULL, NULL);
    writer_drain(w);
    snprintf(want, sizeof(want), "%lld:2/1/1", (long long)today);
    CHECK_EQ_STR(days_of(st, "h0", today, today, &s), want);
    dims = dims_of(st, "h0", today, today, &s);
    snprintf(want, sizeof(want), "%d:Chrome=1", DIM_BROWSER);
    if (!CHECK(strstr(dims, want) != NULL))
        test_note("dims %s", dims);
    snprintf(want, sizeof(want), "%d:Unknown=1", DIM_BROWSER);
    CHECK(strstr(dims, want) != NULL);

    buf_release(&s);
    writer_free(w);
    aggregate_free(a);
    classify_free(cl);
}

void test_store_hurried_fold(void) { each_backend("hurry", hurry_checks); }

/* ---- the writer's two lanes take turns ---- */

/* A background job that runs until a foreground batch waits for its turn
 * (at most 5 s), and a foreground one; each notes its run in the order of
 * 'log' (the background one). */
struct turn_job {
    struct wjob job;
    struct writer *w;
    struct turn_job *log;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, saw_waiting;
    char order[8];
};

static void note_run(struct turn_job *j, char c)
{
    struct turn_job *t = j->log;
    pthread_mutex_lock(&t->mu);
    size_t n = strlen(t->order);
    if (n + 1 < sizeof(t->order))
        t->order[n] = c;
    pthread_mutex_unlock(&t->mu);
}

static int bg_run(struct wjob *j, struct store *st)
{
    (void)st;
    struct turn_job *t = (struct turn_job *)j;
    pthread_mutex_lock(&t->mu);
    t->started = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < 5000 && !t->saw_waiting; i++) {
        t->saw_waiting = writer_waiting(t->w);
        if (!t->saw_waiting)
            usleep(1000);
    }
    note_run(t, 'B');
    return ERR_OK;
}

static int fg_run(struct wjob *j, struct store *st)
{
    (void)st;
    note_run((struct turn_job *)j, 'F');
    return ERR_OK;
}

static void no_done(struct wjob *j) { (void)j; }

/* Creates through the writer, one a batch, until 'left' is 0, noting how
 * many ran before the click job was done. */
struct pest {
    struct wjob job;
    struct writer *w;
    int left, before_done;
    _Atomic bool *clicks_done;
};

static int pest_run(struct wjob *j, struct store *st)
{
    (void)st;
    struct pest *p = (struct pest *)j;
    if (!*p->clicks_done)
        p->before_done++;
    return ERR_OK;
}

static void pest_done(struct wjob *j)
{
    struct pest *p = (struct pest *)j;
    if (--p->left > 0)
        writer_submit(p->w, j);
}

static void clicks_stored(uint64_t pos, uint64_t events, void *arg)
{
    (void)pos;
    (void)events;
    *(_Atomic bool *)arg = true;
}

/* A background batch sees writer_waiting() once a foreground batch waits,
 * and that one runs next. A click job of 300 link days (5 steps of 64, one
 * chunk) while writes keep coming ends its batch early each time and takes
 * turns with them: every click stored once, the checkpoint set, no partial
 * record left, and writes ran before it was done. */
static void turn_checks(struct backend *b)
{
    struct store *st = b->st;
    struct writer *w = writer_new(st, 100);
    if (!CHECK_EQ_INT(writer_start(w, 0), ERR_OK)) {
        writer_free(w);
        return;
    }
    struct turn_job bg = {.job = {.run = bg_run, .done = no_done, .background = true},
                          .w = w,
                          .log = &bg};
    struct turn_job fg = {.job = {.run = fg_run, .done = no_done}, .log = &bg};
    pthread_mutex_init(&bg.mu, NULL);
    pthread_cond_init(&bg.cv, NULL);
    writer_submit(w, &bg.job);
    pthread_mutex_lock(&bg.mu);
    while (!bg.started)
        pthread_cond_wait(&bg.cv, &bg.mu);
    pthread_mutex_unlock(&bg.mu);
    writer_submit(w, &fg.job);
    writer_drain(w);
    CHECK(bg.saw_waiting);
    CHECK_EQ_STR(bg.order, "BF");
    pthread_cond_destroy(&bg.cv);
    pthread_mutex_destroy(&bg.mu);

    struct classify *cl = NULL;
    if (!CHECK_EQ_INT(classify_new(16, &cl), ERR_OK)) {
        writer_free(w);
        return;
    }
    struct buf codes = BUF_INIT;
    for (int i = 0; i < 300; i++) {
        char code[16];
        snprintf(code, sizeof(code), "t%03d", i);
        CHECK_EQ_INT(insert(st, code, 1, "https://e.example/t", 10, 0), ERR_OK);
        buf_printf(&codes, "%s%s", i ? "," : "", code);
    }
    struct aggregate *a = aggregate_new(cl, NULL);
    aggregate_set_journal(a, "turns");
    fold_codes(a, buf_cstr(&codes));
    _Atomic bool done = false;
    struct pest p = {.job = {.run = pest_run, .done = pest_done},
                     .w = w,
                     .left = 100,
                     .clicks_done = &done};
    aggregate_submit(a, w, 500, clicks_stored, &done);
    writer_submit(w, &p.job);
    writer_drain(w);
    CHECK(done);
    CHECK_EQ_INT(p.left, 0);
    if (!CHECK(p.before_done >= 2))
        test_note("writes before the click job was done: %d", p.before_done);
    int64_t today = day_number(now_ms());
    int wrong = 0;
    for (int i = 0; i < 300; i++) {
        char code[16];
        snprintf(code, sizeof(code), "t%03d", i);
        wrong += day_clicks(st, code, today) != 1;
    }
    CHECK_EQ_INT(wrong, 0);
    uint64_t pos = 0, partial = 1;
    CHECK_EQ_INT(aggregate_checkpoint(a, st, &pos, &partial), ERR_OK);
    CHECK_EQ_INT(pos, 500);
    CHECK_EQ_INT(partial, 0);

    writer_free(w);
    aggregate_free(a);
    buf_release(&codes);
    classify_free(cl);
}

void test_store_writer_turns(void) { each_backend("turns", turn_checks); }

/* A job that writes its key and, when 'fail', a second key, then fails. */
struct meta_job {
    struct wjob job;
    const char *key;
    bool fail;
    int done_rc;
};

static int meta_job_run(struct wjob *j, struct store *st)
{
    struct meta_job *m = (struct meta_job *)j;
    int rc = st->ops->meta_put(st, m->key, "1", 1);
    if (rc != ERR_OK || !m->fail)
        return rc;
    rc = st->ops->meta_put(st, "second write", "2", 1);
    return rc == ERR_OK ? ERR_INVALID : rc;
}

static void meta_job_done(struct wjob *j) { ((struct meta_job *)j)->done_rc = j->rc; }

static bool meta_has(struct store *st, const char *key)
{
    struct buf v = BUF_INIT;
    int rc = st->ops->meta_get(st, key, &v);
    buf_release(&v);
    return rc == ERR_OK;
}

/* A job that fails leaves none of its writes, whether it shares its batch
 * (its savepoint is rolled back, the others commit) or is alone in it (the
 * transaction is rolled back, and the next batch starts clean). */
static void fail_checks(struct backend *b)
{
    struct store *st = b->st;
    struct writer *w = writer_new(st, 100);
    struct meta_job jobs[3] = {
        {.job = {.run = meta_job_run, .done = meta_job_done}, .key = "shared ok 1"},
        {.job = {.run = meta_job_run, .done = meta_job_done}, .key = "shared fails", .fail = true},
        {.job = {.run = meta_job_run, .done = meta_job_done}, .key = "shared ok 2"},
    };
    for (int i = 0; i < 3; i++) /* before the start: one batch */
        writer_submit(w, &jobs[i].job);
    if (!CHECK_EQ_INT(writer_start(w, 0), ERR_OK)) {
        writer_free(w);
        return;
    }
    writer_drain(w);
    CHECK_EQ_INT(jobs[0].done_rc, ERR_OK);
    CHECK_EQ_INT(jobs[1].done_rc, ERR_INVALID);
    CHECK_EQ_INT(jobs[2].done_rc, ERR_OK);
    CHECK(meta_has(st, "shared ok 1"));
    CHECK(!meta_has(st, "shared fails"));
    CHECK(meta_has(st, "shared ok 2"));
    CHECK(!meta_has(st, "second write"));

    struct meta_job alone = {.job = {.run = meta_job_run, .done = meta_job_done},
                             .key = "alone fails",
                             .fail = true};
    struct meta_job next = {.job = {.run = meta_job_run, .done = meta_job_done}, .key = "alone ok"};
    writer_submit(w, &alone.job);
    writer_drain(w);
    writer_submit(w, &next.job);
    writer_drain(w);
    CHECK_EQ_INT(alone.done_rc, ERR_INVALID);
    CHECK_EQ_INT(next.done_rc, ERR_OK);
    CHECK(!meta_has(st, "alone fails"));
    CHECK(!meta_has(st, "second write"));
    CHECK(meta_has(st, "alone ok"));

    /* The same without writer threads (the CLI's way) */
    struct meta_job now = {.job = {.run = meta_job_run, .done = meta_job_done},
                           .key = "now fails",
                           .fail = true};
    writer_run_now(st, &now.job);
    CHECK_EQ_INT(now.done_rc, ERR_INVALID);
    CHECK(!meta_has(st, "now fails"));
    CHECK(!meta_has(st, "second write"));
    writer_free(w);
}

void test_store_writer_failures(void) { each_backend("failures", fail_checks); }

/* Four nodes, each with its own store, adding to the same links and day at
 * once, in transactions of their own: every click is counted once, and no
 * transaction fails (no deadlock, no lost update between nodes). */
#define NODES 4
#define ROUNDS 25
#define HOT 20

struct counter_node {
    struct store *st;
    unsigned seed;
    int failures;
};

static int cmp_delta(const void *x, const void *y)
{
    return strcmp(((const struct day_delta *)x)->code, ((const struct day_delta *)y)->code);
}

static void *count_clicks(void *arg)
{
    struct counter_node *n = arg;
    struct store *st = n->st;
    for (int round = 0; round < ROUNDS; round++) {
        int order[HOT];
        for (int i = 0; i < HOT; i++)
            order[i] = i;
        for (int i = HOT - 1; i > 0; i--) {
            int j = (int)(rand_r(&n->seed) % (unsigned)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        /* The aggregator hands a batch over sorted by (code, day), as the
         * store's contract asks, however its clicks came in. */
        char codes[HOT][16];
        struct dayrow rows[HOT];
        struct day_delta d[HOT];
        for (int i = 0; i < HOT; i++) {
            snprintf(codes[i], sizeof(codes[i]), "hot%02d", order[i]);
            dayrow_init(&rows[i]);
            rows[i].clicks = 1;
            tally(&rows[i], DIM_COUNTRY, "NL", 1);
            d[i] = (struct day_delta){codes[i], 100, &rows[i], false};
        }
        qsort(d, HOT, sizeof(d[0]), cmp_delta);
        int rc = st->ops->begin(st);
        if (rc == ERR_OK)
            rc = st->ops->agg_days(st, d, HOT);
        for (int i = 0; i < HOT; i++)
            dayrow_release(&rows[i]);
        unsigned char pos[8] = {(unsigned char)round};
        if (rc == ERR_OK)
            rc = st->ops->meta_put(st, "journal_pos", pos, 8);
        if (rc == ERR_OK)
            rc = st->ops->commit(st);
        if (rc != ERR_OK) {
            st->ops->rollback(st);
            n->failures++;
        }
    }
    return NULL;
}

static void concurrent_checks(struct backend *b)
{
    struct counter_node n[NODES];
    for (int i = 0; i < NODES; i++) {
        n[i] = (struct counter_node){b->st, (unsigned)i + 1, 0};
        if (i && !CHECK_EQ_INT(store_open(b->url, &n[i].st), ERR_OK))
            n[i].st = NULL;
    }
    for (int i = 0; i < HOT; i++) {
        char code[16];
        snprintf(code, sizeof(code), "hot%02d", i);
        CHECK_EQ_INT(insert(b->st, code, 1, "https://e.example/hot", 10, 0), ERR_OK);
    }
    pthread_t t[NODES];
    for (int i = 0; i < NODES; i++)
        if (n[i].st)
            pthread_create(&t[i], NULL, count_clicks, &n[i]);
    for (int i = 0; i < NODES; i++)
        if (n[i].st)
            pthread_join(t[i], NULL);
    int failures = 0, bad = 0;
    for (int i = 0; i < NODES; i++)
        failures += n[i].failures;
    CHECK_EQ_INT(failures, 0);
    struct buf s = BUF_INIT;
    for (int i = 0; i < HOT; i++) {
        char code[16];
        snprintf(code, sizeof(code), "hot%02d", i);
        struct link l;
        bad += day_clicks(b->st, code, 100) != NODES * ROUNDS;
        if (CHECK_EQ_INT(b->st->ops->link_get(b->st, code, &l), ERR_OK)) {
            bad += l.clicks != NODES * ROUNDS;
            link_release(&l);
        }
        bad += strcmp(dims_of(b->st, code, 100, 100, &s), "2:NL=100") != 0;
    }
    CHECK_EQ_INT(bad, 0);
    buf_release(&s);
    for (int i = 1; i < NODES; i++)
        if (n[i].st)
            n[i].st->ops->close(n[i].st);
}

void test_store_concurrent_counts(void) { each_backend("concurrent", concurrent_checks); }

/* ---- pruning ---- */

/* Adds one visitor (and nothing else) to a link day. */
static int add_visitor(struct store *st, const char *code, int64_t day, uint64_t visitor)
{
    struct dayrow r;
    dayrow_init(&r);
    dayrow_visitor(&r, visitor);
    int rc = add_row(st, code, day, &r);
    dayrow_release(&r);
    return rc;
}

/* SQLite: the store file's link days that still hold a visitor set. */
static int sqlite_visitor_sets(const struct backend *b)
{
    char path[160];
    snprintf(path, sizeof(path), "%s/db", b->dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int n = -1;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM link_days WHERE visitors IS NOT NULL", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

static void prune_checks(struct backend *b)
{
    struct store *st = b->st;
    struct buf s = BUF_INIT;
    CHECK_EQ_INT(insert(st, "p1", 1, "https://e.example/1", 10, 0), ERR_OK);
    struct dayrow r;
    dayrow_init(&r);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    for (int64_t day = 10; day <= 12; day++) {
        r.clicks = 1;
        r.bots = day == 10;
        dayrow_visitor(&r, 77);
        tally(&r, DIM_COUNTRY, "NL", 1);
        tally(&r, DIM_BROWSER, "Firefox", 1);
        CHECK_EQ_INT(add_row(st, "p1", day, &r), ERR_OK);
    }
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    int pruned = -1;
    CHECK_EQ_INT(st->ops->prune_days(st, 12, 1, &pruned), ERR_OK);
    CHECK_EQ_INT(pruned, 1);
    CHECK_EQ_INT(st->ops->prune_days(st, 12, 5, &pruned), ERR_OK);
    CHECK_EQ_INT(pruned, 1);
    CHECK_EQ_INT(st->ops->prune_days(st, 12, 5, &pruned), ERR_OK);
    CHECK_EQ_INT(pruned, 0);
    CHECK_EQ_STR(days_of(st, "p1", 0, 100, &s), "12:1/1/0");
    CHECK_EQ_STR(dims_of(st, "p1", 0, 100, &s), "2:NL=1,3:Firefox=1");
    struct link l;
    if (CHECK_EQ_INT(st->ops->link_get(st, "p1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks, 3); /* all-time totals stay */
        CHECK_EQ_INT(l.bot_clicks, 1);
        link_release(&l);
    }
    /* A day still knows its visitors until they are forgotten; then its
     * count stays, and a visitor seen again counts anew. */
    CHECK_EQ_INT(add_visitor(st, "p1", 12, 77), ERR_OK);
    CHECK_EQ_STR(days_of(st, "p1", 0, 100, &s), "12:1/1/0");
    CHECK_EQ_INT(st->ops->prune_visitors(st, 12), ERR_OK);
    CHECK_EQ_INT(add_visitor(st, "p1", 12, 77), ERR_OK);
    CHECK_EQ_STR(days_of(st, "p1", 0, 100, &s), "12:1/1/0");
    CHECK_EQ_INT(st->ops->prune_visitors(st, 13), ERR_OK);
    CHECK_EQ_INT(add_visitor(st, "p1", 12, 77), ERR_OK);
    CHECK_EQ_STR(days_of(st, "p1", 0, 100, &s), "12:1/2/0");
    /* SQLite: clicks merged into a pruned day (a late replay) leave no set
     * behind, since the next prune only looks at the days after it */
    if (!b->pg)
        CHECK_EQ_INT(sqlite_visitor_sets(b), 0);
    /* each prune reaches the days since the one before */
    CHECK_EQ_INT(add_visitor(st, "p1", 14, 78), ERR_OK);
    CHECK_EQ_INT(add_visitor(st, "p1", 15, 79), ERR_OK);
    if (!b->pg)
        CHECK_EQ_INT(sqlite_visitor_sets(b), 2);
    CHECK_EQ_INT(st->ops->prune_visitors(st, 15), ERR_OK);
    if (!b->pg)
        CHECK_EQ_INT(sqlite_visitor_sets(b), 1);
    CHECK_EQ_INT(add_visitor(st, "p1", 15, 79), ERR_OK);
    CHECK_EQ_INT(add_visitor(st, "p1", 14, 78), ERR_OK);
    CHECK_EQ_STR(days_of(st, "p1", 0, 100, &s), "12:1/2/0,14:0/2/0,15:0/1/0");
    dayrow_release(&r);
    buf_release(&s);
}

void test_store_prune(void) { each_backend("prune", prune_checks); }

/* ---- upgrading the analytics of version 1 ---- */

/* A store as versions 1 and 2 left it: per-day, per-dimension, per-visitor
 * and per-click rows, and links whose totals include every kept day. */
static const char *const v1_tables =
    "DROP TABLE link_days;"
    "CREATE TABLE daily (code TEXT NOT NULL, day INTEGER NOT NULL, clicks INTEGER NOT NULL,"
    "  bots INTEGER NOT NULL, uniques INTEGER NOT NULL, PRIMARY KEY (code, day));"
    "CREATE TABLE dims (code TEXT NOT NULL, day INTEGER NOT NULL, dim INTEGER NOT NULL,"
    "  value TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (code, day, dim, value));"
    "CREATE TABLE visitors (day INTEGER NOT NULL, code TEXT NOT NULL, v INTEGER NOT NULL,"
    "  PRIMARY KEY (day, code, v));"
    "CREATE TABLE recent (id INTEGER PRIMARY KEY, code TEXT NOT NULL, ts INTEGER NOT NULL,"
    "  referrer TEXT NOT NULL, country TEXT NOT NULL, device TEXT NOT NULL,"
    "  browser TEXT NOT NULL);"
    "INSERT INTO daily VALUES ('up1', 10, 3, 1, 2), ('up1', 11, 2, 1, 1), ('up2', 11, 4, 0, 4);"
    "INSERT INTO dims VALUES ('up1', 10, 2, 'NL', 2), ('up1', 10, 2, 'DE', 1),"
    "  ('up1', 11, 0, 'ex.com', 2), ('up2', 11, 0, 'a \"b\" \\c', 4);"
    "INSERT INTO visitors VALUES (10, 'up1', 5);"
    "INSERT INTO recent VALUES (1, 'up1', 100, 'a', 'NL', 'desktop', 'Firefox'),"
    "  (2, 'up2', 150, 'x', 'DE', 'mobile', 'Safari'),"
    "  (3, 'up1', 200, 'b', 'NL', 'desktop', 'Firefox'),"
    "  (4, 'up1', 300, 'c', '', 'tablet', 'Chrome');"
    "UPDATE links SET clicks = 7, bot_clicks = 2 WHERE code = 'up1';"
    "UPDATE links SET clicks = 4 WHERE code = 'up2';";

static bool sqlite_admin(const struct backend *b, const char *sql)
{
    char path[160];
    snprintf(path, sizeof(path), "%s/db", b->dir);
    sqlite3 *db = NULL;
    char *msg = NULL;
    bool ok = sqlite3_open(path, &db) == SQLITE_OK &&
              sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK;
    if (!ok)
        test_note("sqlite admin SQL failed: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_close(db);
    return ok;
}

/* The columns of 0007_key_scopes.sql (pg: 0006), gone from a schema rewound. */
#define KEY_SCOPES_DROP                                                                            \
    "ALTER TABLE api_keys DROP COLUMN user_id; ALTER TABLE api_keys DROP COLUMN scopes; "          \
    "ALTER TABLE api_keys DROP COLUMN domain; ALTER TABLE api_keys DROP COLUMN last_used_at; "
/* The tables of 0011_sites.sql (pg: 0010), gone from a schema rewound. */
#define SITES_DROP                                                                                 \
    "DROP TABLE sites; DROP TABLE site_hosts; DROP TABLE site_tokens; DROP TABLE site_days; "

/* Appended link days (sqlite 0014, pg 0013) */
#define PENDING_DROP "DROP TABLE link_days_pending; DROP TABLE day_batches; "
#define PG_PENDING_DROP "DROP TABLE link_days_pending; DROP SEQUENCE day_batches; "

/* Events out (sqlite 0013, pg 0012) */
#define EVENTS_DROP                                                                                \
    "DROP TABLE sinks; DROP TABLE sink_positions; DROP TABLE event_outbox; "                       \
    "DROP TABLE event_failed; "

static void upgrade_checks(struct backend *b)
{
    CHECK_EQ_INT(insert(b->st, "up1", 1, "https://e.example/1", 10, 0), ERR_OK);
    CHECK_EQ_INT(insert(b->st, "up2", 1, "https://e.example/2", 10, 0), ERR_OK);
    b->st->ops->close(b->st);
    b->st = NULL;
    char sql[4096];
    if (b->pg) {
        snprintf(sql, sizeof(sql),
                 "SET search_path = %s; %s ALTER TABLE links DROP COLUMN imported_clicks, "
                 "DROP COLUMN track; "
                 "ALTER TABLE domains DROP COLUMN base_url_redirect, "
                 "DROP COLUMN regular_404_redirect, DROP COLUMN invalid_short_url_redirect; "
                 "DROP TABLE users; DROP TABLE sessions; DROP TABLE setup_token; " KEY_SCOPES_DROP
                     SITES_DROP EVENTS_DROP PG_PENDING_DROP "DROP TABLE ops_backups; "
                 "DROP TABLE ops_leases; DELETE FROM schema_version WHERE version >= 3",
                 b->schema, v1_tables);
        if (!CHECK(pg_admin(sql)))
            return;
        int from = 0, to = 0;
        QUIET(CHECK_EQ_INT(store_pg_migrate(b->url, &from, &to), ERR_OK));
        CHECK(from < 3 && to >= 3);
    } else {
        snprintf(sql, sizeof(sql),
                 "%s ALTER TABLE links DROP COLUMN imported_clicks; "
                 "ALTER TABLE links DROP COLUMN track; DROP TABLE users; "
                 "DROP TABLE sessions; DROP TABLE setup_token; " KEY_SCOPES_DROP SITES_DROP
                 "DROP TABLE ops_backups; DROP TABLE ops_leases; " EVENTS_DROP PENDING_DROP
                 "ALTER TABLE domains DROP COLUMN base_url_redirect; "
                 "ALTER TABLE domains DROP COLUMN regular_404_redirect; "
                 "ALTER TABLE domains DROP COLUMN invalid_short_url_redirect; "
                 "PRAGMA user_version = 2;",
                 v1_tables);
        if (!CHECK(sqlite_admin(b, sql)))
            return;
    }
    if (!CHECK_EQ_INT(store_open(b->url, &b->st), ERR_OK))
        return;
    struct store *st = b->st;
    struct buf s = BUF_INIT;
    CHECK_EQ_STR(days_of(st, "up1", 0, 100, &s), "10:3/2/1,11:2/1/1");
    CHECK_EQ_STR(dims_of(st, "up1", 0, 100, &s), "0:ex.com=2,2:NL=2,2:DE=1");
    CHECK_EQ_STR(dims_of(st, "up2", 0, 100, &s), "0:a \"b\" \\c=4");
    CHECK_EQ_STR(recent_of(st, "up1", 10, &s),
                 "300:c//tablet/Chrome,200:b/NL/desktop/Firefox,100:a/NL/desktop/Firefox");
    CHECK_EQ_STR(recent_of(st, "up2", 10, &s), "150:x/DE/mobile/Safari");
    struct link l;
    if (CHECK_EQ_INT(st->ops->link_get(st, "up1", &l), ERR_OK)) {
        CHECK_EQ_INT(l.clicks, 7);
        CHECK_EQ_INT(l.bot_clicks, 2);
        CHECK(!l.untracked); /* a link made before 'track' is tracked */
        /* ... and 'track' is written and read like the other columns. */
        l.untracked = true;
        CHECK_EQ_INT(st->ops->link_update(st, &l), ERR_OK);
        link_release(&l);
        if (CHECK_EQ_INT(st->ops->link_get(st, "up1", &l), ERR_OK)) {
            CHECK(l.untracked);
            link_release(&l);
        }
    }
    /* A converted row takes new clicks like any other. */
    struct dayrow r;
    dayrow_init(&r);
    r.clicks = 1;
    dayrow_visitor(&r, 9);
    tally(&r, DIM_REFERRER, "ex.com", 1);
    CHECK_EQ_INT(add_row(st, "up1", 11, &r), ERR_OK);
    CHECK_EQ_STR(days_of(st, "up1", 11, 11, &s), "11:3/2/1");
    CHECK_EQ_STR(dims_of(st, "up1", 11, 11, &s), "0:ex.com=3");
    struct totals t;
    CHECK_EQ_INT(st->ops->stats_totals(st, -1, &t), ERR_OK);
    CHECK(t.links == 2 && t.clicks == 12 && t.bot_clicks == 2);
    dayrow_release(&r);
    buf_release(&s);
}

void test_store_upgrade(void) { each_backend("upgrade", upgrade_checks); }

/* ---- lifecycle ---- */

static void lifecycle_checks(struct backend *b)
{
    struct store *st = b->st;
    CHECK_EQ_INT(st->ops->ping(st), ERR_OK);
    CHECK_EQ_STR(st->ops->name, b->pg ? "postgres" : "sqlite");
    /* SQLite copies itself; a PostgreSQL store is pg_dump's job. */
    char to[128];
    snprintf(to, sizeof(to), "%s/backup", b->pg ? "/tmp" : b->dir);
    int rc;
    QUIET(rc = st->ops->backup(st, to));
    CHECK_EQ_INT(rc, b->pg ? ERR_INVALID : ERR_OK);
    /* Reopening finds what was there. */
    CHECK_EQ_INT(insert(st, "stay", 1, "https://e.example/", 10, 0), ERR_OK);
    st->ops->close(st);
    b->st = NULL;
    if (CHECK_EQ_INT(store_open(b->url, &b->st), ERR_OK))
        CHECK(exists(b->st, "stay"));
}

void test_store_lifecycle(void) { each_backend("life", lifecycle_checks); }

/* ---- SQLite only: the checkpoint thread ---- */

/* Whether this process has a thread of that name. */
static bool has_thread(const char *name) { return test_threads_named(name, NULL) > 0; }

static long long file_size(const char *dir, const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

#define CK_TXNS 80
#define CK_PER_TXN 25
#define CK_NOTE 3000

/* A serving SQLite store copies its WAL into the database file in a thread
 * of its own, and the commits start the WAL again from its beginning once it
 * is long: its file stays far smaller than all that was written. The
 * thresholds are lowered (50 and 200 pages) so a few megabytes show it. */
static void checkpoint_checks(struct backend *b)
{
    struct store *st = b->st;
    if (b->pg) {
        CHECK(st->ops->background == NULL); /* PostgreSQL checkpoints itself */
        return;
    }
    store_sqlite_checkpoint_at(st, 50, 200);
    CHECK(!has_thread("shortd-ckpt"));
    CHECK_EQ_INT(st->ops->background(st, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->background(st, 0), ERR_OK); /* once is enough */
    for (int i = 0; i < 100 && !has_thread("shortd-ckpt"); i++)
        usleep(10000);
    CHECK(has_thread("shortd-ckpt"));

    long long db_before = file_size(b->dir, "db"), wal_max = 0;
    char note[CK_NOTE + 1];
    memset(note, 'n', CK_NOTE);
    note[CK_NOTE] = '\0';
    for (int t = 0; t < CK_TXNS; t++) {
        CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
        for (int i = 0; i < CK_PER_TXN; i++) {
            char code[16];
            snprintf(code, sizeof(code), "ck%d", t * CK_PER_TXN + i);
            struct link l = mk(code, 1, "https://example.com/checkpoint", 1000 + t, 0);
            l.note = note;
            CHECK_EQ_INT(st->ops->link_insert(st, &l), ERR_OK);
        }
        CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
        long long wal = file_size(b->dir, "db-wal");
        if (wal > wal_max)
            wal_max = wal;
    }
    long long written = (long long)CK_TXNS * CK_PER_TXN * CK_NOTE;
    /* the copies reach the database file without a checkpoint of ours */
    for (int i = 0; i < 200 && file_size(b->dir, "db") < db_before + written; i++)
        usleep(10000);
    CHECK(file_size(b->dir, "db") >= db_before + written);
    /* without the restarts the WAL would hold all of it (commits back to
     * back leave the thread no pause in which to catch up on its own) */
    if (!CHECK(wal_max < written / 2))
        test_note("WAL grew to %lld bytes for %lld written", wal_max, written);

    st->ops->close(st);
    b->st = NULL;
    CHECK(!has_thread("shortd-ckpt"));
    if (CHECK_EQ_INT(store_open(b->url, &b->st), ERR_OK)) {
        int64_t n = 0;
        CHECK_EQ_INT(b->st->ops->link_count(b->st, &n), ERR_OK);
        CHECK_EQ_INT(n, CK_TXNS * CK_PER_TXN);
    }
}

void test_store_checkpoints(void) { each_backend("ckpt", checkpoint_checks); }

/* ---- PostgreSQL only: schema versions, failed batches, lost connections ---- */

struct migrator {
    const char *url;
    int rc, from, to;
};

static void *migrate_one(void *arg)
{
    struct migrator *m = arg;
    m->rc = store_pg_migrate(m->url, &m->from, &m->to);
    return NULL;
}

static void pg_batch_checks(struct backend *b);
static void pg_lost_checks(struct backend *b);

void test_store_pg(void)
{
    /* Store URLs that cannot work, whether or not a server is at hand. */
    struct store *st = NULL;
    int rc;
    QUIET(rc = store_open("postgres://nobody@127.0.0.1:1/none?connect_timeout=2", &st));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    CHECK(st == NULL);
    QUIET(rc = store_open("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", &st));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(rc = store_open("mysql://nobody@127.0.0.1/none", &st));
    CHECK_EQ_INT(rc, ERR_INVALID);
    int from = -1, to = -1;
    QUIET(rc = store_pg_migrate("postgres://nobody@127.0.0.1:1/none", &from, &to));
    CHECK_EQ_INT(rc, ERR_STORAGE);

    struct backend b;
    if (!place(&b, true, "schema"))
        return;
    /* An empty database is refused until it is migrated. */
    QUIET(rc = store_open(b.url, &st));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    /* Two migrators at once: one applies, the other waits and finds it done. */
    struct migrator m[2] = {{b.url, -1, -1, -1}, {b.url, -1, -1, -1}};
    pthread_t t[2];
    enum log_level saved = log_level;
    log_level = LOG_WARN;
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, migrate_one, &m[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    log_level = saved;
    CHECK_EQ_INT(m[0].rc, ERR_OK);
    CHECK_EQ_INT(m[1].rc, ERR_OK);
    int version = m[0].to;
    CHECK(version > 0 && m[1].to == version);
    CHECK_EQ_INT((m[0].from == 0) + (m[1].from == 0), 1);
    CHECK_EQ_INT(store_pg_migrate(b.url, &from, &to), ERR_OK);
    CHECK(from == version && to == version);
    if (CHECK_EQ_INT(store_open(b.url, &st), ERR_OK))
        st->ops->close(st);
    /* A schema newer than this binary is refused by both. */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO %s.schema_version (version, name) "
             "VALUES (%d, 'future')",
             b.schema, version + 1);
    CHECK(pg_admin(sql));
    QUIET(rc = store_open(b.url, &st));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(rc = store_pg_migrate(b.url, &from, &to));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    snprintf(sql, sizeof(sql), "DELETE FROM %s.schema_version WHERE name = 'future'", b.schema);
    CHECK(pg_admin(sql));
    if (CHECK_EQ_INT(store_open(b.url, &st), ERR_OK))
        st->ops->close(st);
    unplace(&b);

    if (fresh(&b, true, "batch")) {
        pg_batch_checks(&b);
        finish(&b);
    }
    if (fresh(&b, true, "lost")) {
        pg_lost_checks(&b);
        finish(&b);
    }
}

/* Link days that PostgreSQL refuses (a code that is not UTF-8) fail
 * agg_days itself: the unit rolls back alone and the transaction carries on;
 * in a kept savepoint the error fails the commit, and nothing of the
 * transaction stays. */
static void pg_batch_checks(struct backend *b)
{
    struct store *st = b->st;
    struct buf s = BUF_INIT;
    int rc;
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    QUIET(rc = add_clicks(st, "bad \xff", 1, 1, 0));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(st->ops->savepoint_end(st, false));
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    CHECK_EQ_INT(add_clicks(st, "c1", 1, 1, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->meta_put(st, "journal_pos", "87654321", 8), ERR_OK);
    st->ops->savepoint_end(st, true);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_STR(days_of(st, "c1", 1, 1, &s), "1:1/0/0");

    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    CHECK_EQ_INT(add_clicks(st, "c1", 1, 5, 0), ERR_OK);
    st->ops->savepoint_end(st, true);
    CHECK_EQ_INT(st->ops->savepoint(st), ERR_OK);
    QUIET(rc = add_clicks(st, "bad \xff", 1, 1, 0));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(st->ops->savepoint_end(st, true));
    QUIET(rc = st->ops->commit(st));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    st->ops->rollback(st);
    CHECK_EQ_STR(days_of(st, "c1", 1, 1, &s), "1:1/0/0");
    struct buf v = BUF_INIT;
    CHECK_EQ_INT(st->ops->meta_get(st, "journal_pos", &v), ERR_OK);
    CHECK(v.len == 8 && !memcmp(v.p, "87654321", 8));
    buf_release(&v);
    buf_release(&s);
}

/* Ends every connection the stores of this process have to the server. */
static bool kill_connections(void)
{
    return pg_admin("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                    "WHERE application_name = 'shortd' AND datname = current_database() "
                    "AND pid <> pg_backend_pid()");
}

/* A connection lost outside a transaction is reopened for the next
 * statement; inside one, the rest of the transaction fails instead of
 * running on a new connection outside it. */
static void pg_lost_checks(struct backend *b)
{
    struct store *st = b->st;
    CHECK_EQ_INT(insert(st, "l1", 1, "https://e.example/", 10, 0), ERR_OK);
    CHECK(kill_connections());
    int rc;
    QUIET(rc = st->ops->ping(st)); /* the break shows here */
    CHECK_EQ_INT(rc, ERR_STORAGE);
    bool there = false;
    QUIET(there = exists(st, "l1")); /* on a new connection */
    CHECK(there);

    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "l2", 1, "https://e.example/", 10, 0), ERR_OK);
    CHECK(kill_connections());
    QUIET(rc = insert(st, "l3", 1, "https://e.example/", 10, 0));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(rc = insert(st, "l4", 1, "https://e.example/", 10, 0));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(rc = st->ops->commit(st));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    st->ops->rollback(st);
    QUIET(rc = st->ops->begin(st));
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(insert(st, "l5", 1, "https://e.example/", 10, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(!exists(st, "l2") && !exists(st, "l3") && !exists(st, "l4"));
    CHECK(exists(st, "l5"));

    /* claim_block's own connection recovers the same way. */
    uint64_t start = 0;
    CHECK_EQ_INT(st->ops->claim_block(st, 10, &start), ERR_OK);
    CHECK(kill_connections());
    QUIET(rc = st->ops->claim_block(st, 10, &start));
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(rc = st->ops->claim_block(st, 10, &start));
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(start, 10);
    QUIET(rc = st->ops->ping(st)); /* this thread's connection was ended too */
    CHECK_EQ_INT(rc, ERR_STORAGE);
    QUIET(rc = st->ops->ping(st));
    CHECK_EQ_INT(rc, ERR_OK);
}

/* ---- link controls: update, reservations, history, domains ---- */

static int collect_change(const struct link_change *ch, void *arg)
{
    struct collect *c = arg;
    buf_printf(&c->s, "%s%lld:%s>%s@%lld/%lld", c->s.len ? "," : "", (long long)ch->seq,
               ch->old_url ? ch->old_url : "-", ch->new_url ? ch->new_url : "-",
               (long long)ch->changed_at, (long long)ch->by_key);
    return ++c->calls == c->stop_after;
}

static int collect_redirects(const char *host, int64_t owner, const struct domain_redirects *d,
                             void *arg)
{
    struct collect *c = arg;
    buf_printf(&c->s, "%s%s:%lld[%s|%s|%s]", c->s.len ? "," : "", host, (long long)owner,
               d->base_url ? d->base_url : "-", d->regular_404 ? d->regular_404 : "-",
               d->invalid ? d->invalid : "-");
    return 0;
}

static int collect_domain(const char *host, int64_t owner, int64_t created_at, void *arg)
{
    struct collect *c = arg;
    buf_printf(&c->s, "%s%s:%lld@%lld", c->s.len ? "," : "", host, (long long)owner,
               (long long)created_at);
    return ++c->calls == c->stop_after;
}

static void controls_checks(struct backend *b)
{
    struct store *st = b->st;
    struct link l = mk("ctl1", 7, "https://a.example/", 100, 0);
    l.password = "$argon2id$fake";
    l.domain = "go.example";
    l.variants = "[{\"url\":\"https://v.example/\",\"weight\":1}]";
    l.utm = "{\"source\":\"x\"}";
    l.dest = "https://a.example/?utm_source=x";
    l.max_clicks = 2;
    CHECK_EQ_INT(st->ops->link_insert(st, &l), ERR_OK);
    struct link g;
    if (CHECK_EQ_INT(st->ops->link_get(st, "ctl1", &g), ERR_OK)) {
        CHECK_EQ_STR(g.password, "$argon2id$fake");
        CHECK_EQ_STR(g.domain, "go.example");
        CHECK_EQ_STR(g.variants, l.variants);
        CHECK_EQ_STR(g.utm, l.utm);
        CHECK_EQ_STR(g.dest, l.dest);
        CHECK_EQ_INT(g.max_clicks, 2);
        CHECK_EQ_INT(g.used, 0);
        CHECK(link_controlled(&g));
        link_release(&g);
    }
    /* Two slots, then none; a link without a limit has none either. */
    int64_t used = 0;
    CHECK_EQ_INT(st->ops->link_reserve(st, "ctl1", &used), ERR_OK);
    CHECK_EQ_INT(used, 1);
    CHECK_EQ_INT(st->ops->link_reserve(st, "ctl1", &used), ERR_OK);
    CHECK_EQ_INT(used, 2);
    CHECK_EQ_INT(st->ops->link_reserve(st, "ctl1", &used), ERR_TOOBIG);
    CHECK_EQ_INT(insert(st, "plain1", 7, "https://p.example/", 100, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->link_reserve(st, "plain1", &used), ERR_TOOBIG);

    /* Update: every changeable field; a NULL removes it. */
    struct link u = mk("ctl1", 7, "https://b.example/", 100, 5000);
    u.changed_at = 200;
    u.title = "T";
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->link_update(st, &u), ERR_OK);
    CHECK_EQ_INT(st->ops->history_add(st, "ctl1", "https://a.example/", "https://b.example/", 200,
                                      7),
                 ERR_OK);
    CHECK_EQ_INT(st->ops->history_add(st, "ctl1", "https://b.example/", "https://c.example/", 300,
                                      1),
                 ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    struct link none = mk("nope", 7, "https://b.example/", 100, 0);
    CHECK_EQ_INT(st->ops->link_update(st, &none), ERR_NOTFOUND);
    if (CHECK_EQ_INT(st->ops->link_get(st, "ctl1", &g), ERR_OK)) {
        CHECK_EQ_STR(g.url, "https://b.example/");
        CHECK_EQ_STR(g.title, "T");
        CHECK(!g.password && !g.variants && !g.utm && !g.dest);
        CHECK_EQ_STR(g.domain, "go.example"); /* not changeable */
        CHECK_EQ_INT(g.expires_at, 5000);
        CHECK_EQ_INT(g.changed_at, 200);
        CHECK_EQ_INT(g.used, 2);
        link_release(&g);
    }
    struct collect c = {BUF_INIT, 0, 0, "", 0};
    CHECK_EQ_INT(st->ops->history_list(st, "ctl1", 10, collect_change, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "2:https://b.example/>https://c.example/@300/1,"
                                 "1:https://a.example/>https://b.example/@200/7");
    buf_reset(&c.s);
    CHECK_EQ_INT(st->ops->history_list(st, "plain1", 10, collect_change, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "");

    /* Domains: one owner each. */
    CHECK_EQ_INT(st->ops->domain_add(st, "go.example", 7, 10), ERR_OK);
    CHECK_EQ_INT(st->ops->domain_add(st, "go.example", 8, 11), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->domain_add(st, "b.example", 8, 12), ERR_OK);
    int64_t owner = 0;
    CHECK_EQ_INT(st->ops->domain_get(st, "go.example", &owner), ERR_OK);
    CHECK_EQ_INT(owner, 7);
    CHECK_EQ_INT(st->ops->domain_get(st, "x.example", &owner), ERR_NOTFOUND);
    buf_reset(&c.s);
    CHECK_EQ_INT(st->ops->domain_list(st, -1, collect_domain, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "b.example:8@12,go.example:7@10");
    buf_reset(&c.s);
    CHECK_EQ_INT(st->ops->domain_list(st, 7, collect_domain, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "go.example:7@10");
    /* Their not-found redirects: NULL until set, set by the owner only. */
    buf_reset(&c.s);
    CHECK_EQ_INT(st->ops->domain_redirects_list(st, -1, collect_redirects, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "b.example:8[-|-|-],go.example:7[-|-|-]");
    struct domain_redirects dr = {"https://home.example/", NULL, "https://gone.example/?a=1"};
    CHECK_EQ_INT(st->ops->domain_redirects_set(st, "go.example", 8, &dr), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->domain_redirects_set(st, "x.example", 7, &dr), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->domain_redirects_set(st, "go.example", 7, &dr), ERR_OK);
    buf_reset(&c.s);
    CHECK_EQ_INT(st->ops->domain_redirects_list(st, 7, collect_redirects, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "go.example:7[https://home.example/|-|https://gone.example/?a=1]");
    dr = (struct domain_redirects){NULL, "https://404.example/", NULL};
    CHECK_EQ_INT(st->ops->domain_redirects_set(st, "go.example", 7, &dr), ERR_OK);
    buf_reset(&c.s);
    CHECK_EQ_INT(st->ops->domain_redirects_list(st, -1, collect_redirects, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "b.example:8[-|-|-],go.example:7[-|https://404.example/|-]");
    CHECK_EQ_INT(st->ops->domain_del(st, "go.example", 8), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->domain_del(st, "go.example", 7), ERR_OK);
    CHECK_EQ_INT(st->ops->domain_get(st, "go.example", &owner), ERR_NOTFOUND);

    /* A delete drops the controls with the rest of the data. */
    CHECK_EQ_INT(st->ops->link_insert(st, &l), ERR_EXISTS);
    l.code[3] = '2';
    CHECK_EQ_INT(st->ops->link_insert(st, &l), ERR_OK);
    CHECK_EQ_INT(st->ops->link_set_state(st, "ctl2", LINK_DELETED, 400), ERR_OK);
    if (CHECK_EQ_INT(st->ops->link_get(st, "ctl2", &g), ERR_OK)) {
        CHECK(!g.url && !g.password && !g.variants && !g.utm && !g.dest);
        link_release(&g);
    }
    buf_release(&c.s);
}

void test_store_controls(void) { each_backend("controls", controls_checks); }

/* ---- events out: sinks, positions, the outbox, the failed archive ---- */

struct outbox_seen {
    struct buf s;
    int64_t last;
};

static int collect_outbox(const struct outbox_event *e, void *arg)
{
    struct outbox_seen *o = arg;
    buf_printf(&o->s, "%s%s:%s", o->s.len ? "," : "", e->type, e->code);
    o->last = e->seq;
    return 0;
}

static int count_sinks(const struct sink *s, void *arg)
{
    (void)s;
    (*(int *)arg)++;
    return 0;
}

static int count_failed_rows(const struct failed_batch *f, void *arg)
{
    CHECK(f->body == NULL); /* listed without bodies */
    (*(int *)arg)++;
    return 0;
}

static void events_checks(struct backend *b)
{
    struct store *st = b->st;
    /* No sink: link writes make no event. */
    CHECK_EQ_INT(insert(st, "ev0", 1, "https://example.com/0", 100, 0), ERR_OK);
    int64_t head = -1;
    CHECK_EQ_INT(st->ops->outbox_head(st, &head), ERR_OK);
    CHECK_EQ_INT(head, 0);

    struct sink s = {.kind = "webhook",
                     .endpoint = "http://127.0.0.1:9/",
                     .types = "",
                     .owner = -1,
                     .secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                     .options = "{}",
                     .created_at = 5};
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_add(st, &s), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK(s.id > 0);
    struct sink got;
    if (CHECK_EQ_INT(st->ops->sink_get(st, s.id, &got), ERR_OK)) {
        CHECK_EQ_STR(got.kind, "webhook");
        CHECK_EQ_STR(got.endpoint, "http://127.0.0.1:9/");
        CHECK_EQ_INT(got.owner, -1);
        CHECK(got.domain == NULL && got.secret_old == NULL);
        CHECK_EQ_INT(got.created_at, 5);
        sink_release(&got);
    }
    CHECK_EQ_INT(st->ops->sink_secret(st, s.id, "whsec_bmV3", s.secret), ERR_OK);
    if (CHECK_EQ_INT(st->ops->sink_get(st, s.id, &got), ERR_OK)) {
        CHECK_EQ_STR(got.secret, "whsec_bmV3");
        CHECK_EQ_STR(got.secret_old, s.secret);
        sink_release(&got);
    }

    /* Link writes now make events, in their transaction. */
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "ev1", 1, "https://example.com/1", 200, 0), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(insert(st, "ev2", 1, "https://example.com/2", 300, 0), ERR_OK);
    st->ops->rollback(st); /* no link, no event */
    CHECK_EQ_INT(st->ops->link_set_state(st, "ev1", LINK_DISABLED, 400), ERR_OK);
    CHECK_EQ_INT(st->ops->link_set_state(st, "ev1", LINK_DELETED, 500), ERR_OK);
    struct outbox_seen o = {BUF_INIT, 0};
    CHECK_EQ_INT(st->ops->outbox_read(st, 0, 10, collect_outbox, &o), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&o.s), "link.created:ev1,link.disabled:ev1,link.deleted:ev1");
    CHECK_EQ_INT(st->ops->outbox_head(st, &head), ERR_OK);
    CHECK_EQ_INT(head, o.last);
    buf_reset(&o.s);
    CHECK_EQ_INT(st->ops->outbox_read(st, 0, 1, collect_outbox, &o), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&o.s), "link.created:ev1");
    /* An ID already there is kept as it is (two nodes' sweeps). */
    struct outbox_event dup = {.id = "evt_same",
                               .type = "link.expired",
                               .at = 600,
                               .code = "ev1",
                               .owner = 1,
                               .body = "{\"first\":1}"};
    CHECK_EQ_INT(st->ops->begin(st), ERR_OK);
    CHECK_EQ_INT(st->ops->outbox_add(st, &dup), ERR_OK);
    dup.body = "{\"second\":1}";
    CHECK_EQ_INT(st->ops->outbox_add(st, &dup), ERR_OK);
    CHECK_EQ_INT(st->ops->commit(st), ERR_OK);
    buf_reset(&o.s);
    CHECK_EQ_INT(st->ops->outbox_read(st, head, 10, collect_outbox, &o), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&o.s), "link.expired:ev1"); /* once */
    buf_release(&o.s);

    /* Pruned: only what every live sink has taken (position "links"),
     * and only what is older than asked. */
    int pruned = -1;
    CHECK_EQ_INT(st->ops->outbox_prune(st, 1000000, 100, &pruned), ERR_OK);
    CHECK_EQ_INT(pruned, 0); /* no position yet: nothing taken */
    int64_t first = 0;
    {
        struct outbox_seen one = {BUF_INIT, 0};
        CHECK_EQ_INT(st->ops->outbox_read(st, 0, 1, collect_outbox, &one), ERR_OK);
        first = one.last;
        buf_release(&one.s);
    }
    CHECK_EQ_INT(st->ops->sink_pos_set(st, s.id, "links", -1, first), ERR_OK);
    CHECK_EQ_INT(st->ops->outbox_prune(st, 150, 100, &pruned), ERR_OK);
    CHECK_EQ_INT(pruned, 0); /* taken, not old enough (at 200) */
    CHECK_EQ_INT(st->ops->outbox_prune(st, 1000000, 100, &pruned), ERR_OK);
    CHECK_EQ_INT(pruned, 1);
    buf_reset(&o.s);
    CHECK_EQ_INT(st->ops->outbox_read(st, 0, 10, collect_outbox, &o), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&o.s), "link.disabled:ev1,link.deleted:ev1,link.expired:ev1");
    buf_release(&o.s);

    /* Positions: made once, then moved only from where they are. */
    int64_t pos = -1;
    CHECK_EQ_INT(st->ops->sink_pos_get(st, s.id, "journal:x", &pos), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->sink_pos_set(st, s.id, "journal:x", -1, 40), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_pos_set(st, s.id, "journal:x", 39, 80), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->sink_pos_set(st, s.id, "journal:x", 40, 80), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_pos_get(st, s.id, "journal:x", &pos), ERR_OK);
    CHECK_EQ_INT(pos, 80);
    /* The lease: one holder at a time, until it runs out. */
    CHECK_EQ_INT(st->ops->sink_lease(st, s.id, "links", "a", 1000, 2000), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_lease(st, s.id, "links", "b", 1500, 2500), ERR_BUSY);
    CHECK_EQ_INT(st->ops->sink_lease(st, s.id, "links", "a", 1500, 2500), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_lease(st, s.id, "links", "b", 2500, 3500), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_pos_get(st, s.id, "links", &pos), ERR_OK);
    CHECK_EQ_INT(pos, first); /* a lease leaves the position as it was */

    /* Expiring links, by expiry. */
    CHECK_EQ_INT(insert(st, "ex1", 1, "https://example.com/e1", 10, 3000), ERR_OK);
    CHECK_EQ_INT(insert(st, "ex2", 1, "https://example.com/e2", 10, 2000), ERR_OK);
    CHECK_EQ_INT(insert(st, "ex3", 1, "https://example.com/e3", 10, 9000), ERR_OK);
    struct collect c = {BUF_INIT, 0, 0, "", 0};
    CHECK_EQ_INT(st->ops->link_expiring(st, 1000, 5000, 10, collect_link, &c), ERR_OK);
    CHECK_EQ_STR(buf_cstr(&c.s), "ex2,ex1");
    buf_release(&c.s);

    /* The archive: kept whole, resolved once, never deleted. */
    struct failed_batch f = {.sink = s.id,
                             .source = "links",
                             .first_pos = 0,
                             .last_pos = 3,
                             .events = 3,
                             .body = "{\"events\":[]}",
                             .sha256 = "ab",
                             .attempts = 30,
                             .last_error = "answered HTTP 500",
                             .first_failed_at = 10,
                             .archived_at = 20};
    CHECK_EQ_INT(st->ops->failed_add(st, &f), ERR_OK);
    CHECK(f.id > 0);
    int n = 0;
    CHECK_EQ_INT(st->ops->failed_list(st, false, count_failed_rows, &n), ERR_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(st->ops->failed_replayed(st, f.id, 30, "failed: refused"), ERR_OK);
    CHECK_EQ_INT(st->ops->failed_resolve(st, f.id, 40, "ann", "receiver has them all"), ERR_OK);
    CHECK_EQ_INT(st->ops->failed_resolve(st, f.id, 41, "bob", "again"), ERR_EXISTS);
    CHECK_EQ_INT(st->ops->failed_resolve(st, 999, 41, "bob", "none"), ERR_NOTFOUND);
    struct failed_batch g;
    if (CHECK_EQ_INT(st->ops->failed_get(st, f.id, &g), ERR_OK)) {
        CHECK_EQ_STR(g.body, "{\"events\":[]}");
        CHECK_EQ_STR(g.sha256, "ab");
        CHECK_EQ_INT(g.attempts, 30);
        CHECK_EQ_STR(g.last_error, "answered HTTP 500");
        CHECK_EQ_INT(g.replays, 1);
        CHECK_EQ_STR(g.last_replay_result, "failed: refused");
        CHECK_EQ_INT(g.resolved_at, 40);
        CHECK_EQ_STR(g.resolved_by, "ann");
        CHECK_EQ_STR(g.resolved_reason, "receiver has them all");
        failed_release(&g);
    }
    n = 0;
    CHECK_EQ_INT(st->ops->failed_list(st, false, count_failed_rows, &n), ERR_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(st->ops->failed_list(st, true, count_failed_rows, &n), ERR_OK);
    CHECK_EQ_INT(n, 1);

    /* A deleted sink is no longer listed nor changed. */
    CHECK_EQ_INT(st->ops->sink_del(st, s.id, 50), ERR_OK);
    CHECK_EQ_INT(st->ops->sink_del(st, s.id, 51), ERR_NOTFOUND);
    CHECK_EQ_INT(st->ops->sink_get(st, s.id, &got), ERR_NOTFOUND);
    n = 0;
    CHECK_EQ_INT(st->ops->sink_list(st, count_sinks, &n), ERR_OK);
    CHECK_EQ_INT(n, 0);
}

void test_store_events(void) { each_backend("events", events_checks); }
