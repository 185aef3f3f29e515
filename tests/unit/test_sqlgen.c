/* test_sqlgen.c - the SQL both backends share (sqlgen.h): the link list's
 * query and the statements that move tables, as text and parameters in each
 * dialect; every shape of the list prepared by SQLite, and by PostgreSQL
 * when SHORTD_TEST_PG is set (tests/pg.sh). */
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "store/migrations.h"
#include "store/sqlgen.h"
#include "store/store.h"
#include "test.h"

#include "base/banned.h"

#define SQ_READ "SELECT " SQL_LINK_READ_SQLITE " FROM links"
#define PG_READ "SELECT " SQL_LINK_READ_PG " FROM links"
#define PG_FOLD " COLLATE \"C\")"

static const struct migration sqlite_steps[] = {
#include "sqlite_migrations.inc"
};

/* Parameter i as text: "i:123" or "t:abc". */
static const char *param_str(const struct sql_stmt *s, int i, char *out, size_t n)
{
    const struct store_value *v = &s->param[i];
    if (v->type == VAL_INT)
        snprintf(out, n, "i:%lld", (long long)v->i);
    else if (v->type == VAL_TEXT)
        snprintf(out, n, "t:%.*s", (int)v->n, v->p);
    else
        snprintf(out, n, "?");
    return out;
}

/* Builds q's list in 'd' and checks its text and its parameters, written
 * "i:1,t:x,...". */
static void check_list(const struct sql_dialect *d, const struct link_query *q, const char *text,
                       const char *params)
{
    struct sql_stmt s;
    sql_stmt_init(&s);
    sqlgen_list(&s, d, q);
    struct buf got = BUF_INIT;
    for (int i = 0; i < s.nparams; i++) {
        char one[64];
        buf_printf(&got, "%s%s", i ? "," : "", param_str(&s, i, one, sizeof(one)));
    }
    bool ok = CHECK_EQ_STR(buf_cstr(&s.text), text);
    ok = CHECK_EQ_STR(buf_cstr(&got), params) && ok;
    if (!ok)
        test_note("dialect %s", d->name);
    buf_release(&got);
    sql_stmt_release(&s);
}

void test_sqlgen_list(void)
{
    /* What GET /api/links asks by default: one owner's live links. */
    struct link_query q = {.owner = 7, .want_live = true, .now = 1000, .limit = 50};
    check_list(&sql_sqlite, &q,
               SQ_READ " WHERE (0 OR (state = 0 AND (expires_at = 0 OR expires_at > ?1)"
                       " AND (max_clicks = 0 OR used < max_clicks))) AND owner = ?2"
                       " ORDER BY created_at DESC, code DESC LIMIT ?3",
               "i:1000,i:7,i:50");
    check_list(&sql_pg, &q,
               PG_READ " WHERE (false OR (state = 0 AND (expires_at = 0 OR expires_at > $1)"
                       " AND (max_clicks = 0 OR used < max_clicks))) AND owner = $2"
                       " ORDER BY created_at DESC, code DESC LIMIT $3",
               "i:1000,i:7,i:50");

    /* Every owner, nothing wanted: no link, and no parameter but the limit. */
    q = (struct link_query){.owner = -1, .limit = 10};
    check_list(&sql_sqlite, &q, SQ_READ " WHERE (0) ORDER BY created_at DESC, code DESC LIMIT ?1",
               "i:10");
    check_list(&sql_pg, &q, PG_READ " WHERE (false) ORDER BY created_at DESC, code DESC LIMIT $1",
               "i:10");

    /* Everything at once: 'now' and q are one parameter each, however often
     * the text names them; the cursor comes last, before the order. */
    q = (struct link_query){.owner = 3,
                            .states = (1u << LINK_DELETED) | (1u << LINK_DISABLED),
                            .want_live = true,
                            .want_expired = true,
                            .want_exhausted = true,
                            .now = 5,
                            .after_created = 99,
                            .after_code = "abc",
                            .limit = 2,
                            .tag = "red",
                            .q = "Ex%_"};
    check_list(&sql_sqlite, &q,
               SQ_READ
               " WHERE (0 OR state = 1 OR state = 2"
               " OR (state = 0 AND (expires_at = 0 OR expires_at > ?1)"
               " AND (max_clicks = 0 OR used < max_clicks))"
               " OR (state = 0 AND expires_at > 0 AND expires_at <= ?1)"
               " OR (state = 0 AND (expires_at = 0 OR expires_at > ?1)"
               " AND max_clicks > 0 AND used >= max_clicks))"
               " AND owner = ?2"
               " AND EXISTS (SELECT 1 FROM json_each(links.tags) WHERE value = ?3)"
               " AND (instr(lower(code), lower(?4)) > 0 OR instr(lower(url), lower(?4)) > 0"
               " OR instr(lower(title), lower(?4)) > 0 OR instr(lower(note), lower(?4)) > 0)"
               " AND (created_at, code) < (?5, ?6)"
               " ORDER BY created_at DESC, code DESC LIMIT ?7",
               "i:5,i:3,t:red,t:Ex%_,i:99,t:abc,i:2");
    check_list(&sql_pg, &q,
               PG_READ " WHERE (false OR state = 1 OR state = 2"
                       " OR (state = 0 AND (expires_at = 0 OR expires_at > $1)"
                       " AND (max_clicks = 0 OR used < max_clicks))"
                       " OR (state = 0 AND expires_at > 0 AND expires_at <= $1)"
                       " OR (state = 0 AND (expires_at = 0 OR expires_at > $1)"
                       " AND max_clicks > 0 AND used >= max_clicks))"
                       " AND owner = $2"
                       " AND EXISTS (SELECT 1 FROM json_array_elements_text(tags::json) t"
                       " WHERE t = $3)"
                       " AND (strpos(lower(code" PG_FOLD ", lower($4" PG_FOLD ") > 0"
                       " OR strpos(lower(url" PG_FOLD ", lower($4" PG_FOLD ") > 0"
                       " OR strpos(lower(title" PG_FOLD ", lower($4" PG_FOLD ") > 0"
                       " OR strpos(lower(note" PG_FOLD ", lower($4" PG_FOLD ") > 0)"
                       " AND (created_at, code) < ($5, $6)"
                       " ORDER BY created_at DESC, code DESC LIMIT $7",
               "i:5,i:3,t:red,t:Ex%_,i:99,t:abc,i:2");

    /* A search's page between the cursor and its floor (link_list_floor). */
    q = (struct link_query){.owner = 4,
                            .want_live = true,
                            .now = 6,
                            .after_created = 90,
                            .after_code = "abc",
                            .limit = 3,
                            .q = "x",
                            .floor_created = 20,
                            .floor_code = "xyz"};
    check_list(&sql_sqlite, &q,
               SQ_READ
               " WHERE (0 OR (state = 0 AND (expires_at = 0 OR expires_at > ?1)"
               " AND (max_clicks = 0 OR used < max_clicks))) AND owner = ?2"
               " AND (instr(lower(code), lower(?3)) > 0 OR instr(lower(url), lower(?3)) > 0"
               " OR instr(lower(title), lower(?3)) > 0 OR instr(lower(note), lower(?3)) > 0)"
               " AND (created_at, code) < (?4, ?5) AND (created_at, code) >= (?6, ?7)"
               " ORDER BY created_at DESC, code DESC LIMIT ?8",
               "i:6,i:4,t:x,i:90,t:abc,i:20,t:xyz,i:3");

    /* An empty cursor is the first page. */
    q = (struct link_query){.owner = -1,
                            .want_expired = true,
                            .now = 8,
                            .after_code = "",
                            .limit = 1};
    check_list(&sql_sqlite, &q,
               SQ_READ " WHERE (0 OR (state = 0 AND expires_at > 0 AND expires_at <= ?1))"
                       " ORDER BY created_at DESC, code DESC LIMIT ?2",
               "i:8,i:1");
}

/* The query of shape 'shape' (its bits as sqlgen.c numbers them), with
 * values that depend on 'salt'. */
static struct link_query shaped(unsigned shape, int salt)
{
    static const char *const codes[] = {"c0", "c1"};
    static const char *const texts[] = {"t0", "t1"};
    return (struct link_query){
        .states = (shape & 1 ? 1u << LINK_DELETED : 0) | (shape & 2 ? 1u << LINK_DISABLED : 0),
        .want_live = shape & 4,
        .want_expired = shape & 8,
        .owner = shape & 16 ? salt + 1 : -1,
        .after_created = salt,
        .after_code = shape & 32 ? codes[salt] : NULL,
        .tag = shape & 64 ? texts[salt] : NULL,
        .q = shape & 128 ? texts[salt] : NULL,
        .want_exhausted = shape & 256,
        .floor_created = shape & 512 ? 50 + salt : 0,
        .floor_code = shape & 512 ? codes[salt] : NULL,
        .now = 100 + salt,
        .limit = 10 + salt,
    };
}

/* A connection to a new schema migrated to this binary's version, or NULL
 * (PostgreSQL not configured: skipped, or the setup failed: a failed check). */
static PGconn *pg_schema(const char *schema, char *url, size_t n)
{
    const char *base = getenv("SHORTD_TEST_PG");
    if (!base || !*base)
        return NULL;
    PGconn *pg = PQconnectdb(base);
    if (!CHECK(PQstatus(pg) == CONNECTION_OK)) {
        PQfinish(pg);
        return NULL;
    }
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SET client_min_messages = warning; DROP SCHEMA IF EXISTS %s "
             "CASCADE; CREATE SCHEMA %s; SET search_path = %s",
             schema, schema, schema);
    PQclear(PQexec(pg, sql));
    snprintf(url, n, "%s%coptions=-csearch_path%%3D%s", base, strchr(base, '?') ? '&' : '?',
             schema);
    int from, to;
    int saved = log_level;
    log_level = LOG_WARN;
    int rc = store_pg_migrate(url, &from, &to);
    log_level = saved;
    if (!CHECK_EQ_INT(rc, ERR_OK)) {
        PQfinish(pg);
        return NULL;
    }
    return pg;
}

void test_sqlgen_list_shapes(void)
{
    sqlite3 *db = NULL;
    if (!CHECK_EQ_INT(sqlite3_open(":memory:", &db), SQLITE_OK))
        return;
    for (size_t i = 0; i < MIGRATIONS_COUNT(sqlite_steps); i++)
        CHECK_EQ_INT(sqlite3_exec(db, sqlite_steps[i].sql, NULL, NULL, NULL), SQLITE_OK);
    char url[512];
    PGconn *pg = pg_schema("shortd_test_sqlgen", url, sizeof(url));

    struct buf seen = BUF_INIT; /* every shape's SQLite text, to tell them apart */
    size_t *start = calloc(SQL_LIST_SHAPES, sizeof(*start));
    if (!start)
        abort();
    int shapes = 0;
    for (unsigned shape = 0; shape < SQL_LIST_SHAPES; shape++) {
        struct link_query a = shaped(shape, 0), b = shaped(shape, 1);
        if (!CHECK_EQ_INT(sqlgen_list_shape(&a), shape))
            continue;
        CHECK_EQ_INT(sqlgen_list_shape(&b), shape);
        const struct sql_dialect *dialects[] = {&sql_sqlite, &sql_pg};
        for (int k = 0; k < 2; k++) {
            /* One shape, one text: only the values differ. */
            struct sql_stmt sa, sb;
            sql_stmt_init(&sa);
            sql_stmt_init(&sb);
            sqlgen_list(&sa, dialects[k], &a);
            sqlgen_list(&sb, dialects[k], &b);
            bool ok = CHECK_EQ_STR(buf_cstr(&sa.text), buf_cstr(&sb.text)) &&
                      CHECK_EQ_INT(sa.nparams, sb.nparams);
            for (int i = 0; ok && i < sa.nparams; i++)
                ok = CHECK_EQ_INT(sa.param[i].type, sb.param[i].type);
            if (k == 0) {
                /* It prepares, and takes exactly the parameters it has. */
                sqlite3_stmt *q = NULL;
                ok = CHECK_EQ_INT(sqlite3_prepare_v2(db, sa.text.p, -1, &q, NULL), SQLITE_OK) &&
                     CHECK_EQ_INT(sqlite3_bind_parameter_count(q), sa.nparams) && ok;
                sqlite3_finalize(q);
                start[shape] = seen.len;
                buf_add(&seen, sa.text.p, sa.text.len + 1);
            } else if (pg) {
                Oid types[SQL_PARAMS_MAX];
                for (int i = 0; i < sa.nparams; i++)
                    types[i] = sa.param[i].type == VAL_INT ? 20 : 25;
                char name[16];
                snprintf(name, sizeof(name), "list%u", shape);
                PGresult *r = PQprepare(pg, name, sa.text.p, sa.nparams, types);
                if (!CHECK(PQresultStatus(r) == PGRES_COMMAND_OK))
                    test_note("%s", PQresultErrorMessage(r));
                PQclear(r);
                r = PQdescribePrepared(pg, name);
                ok = CHECK_EQ_INT(PQnparams(r), sa.nparams) && ok;
                PQclear(r);
            }
            if (!ok)
                test_note("shape %u, dialect %s: %s", shape, dialects[k]->name, sa.text.p);
            sql_stmt_release(&sa);
            sql_stmt_release(&sb);
        }
        shapes++;
    }
    CHECK_EQ_INT(shapes, SQL_LIST_SHAPES);
    /* Two shapes never share a text: each prepared statement is its shape's. */
    int same = 0;
    unsigned first[2] = {0, 0};
    for (unsigned i = 1; i < SQL_LIST_SHAPES; i++)
        for (unsigned j = 0; j < i; j++)
            if (strcmp(seen.p + start[i], seen.p + start[j]) == 0 && same++ == 0)
                first[0] = i, first[1] = j;
    if (!CHECK_EQ_INT(same, 0))
        test_note("shapes %u and %u, among others, have one text", first[0], first[1]);
    free(start);
    buf_release(&seen);
    sqlite3_close(db);
    if (pg) {
        PQclear(PQexec(pg, "SET client_min_messages = warning; "
                           "DROP SCHEMA IF EXISTS shortd_test_sqlgen CASCADE"));
        PQfinish(pg);
    }
}

/* The floor's four shapes: their exact text, one text per shape, and each
 * prepares (SQLite; PostgreSQL under tests/pg.sh) with its parameters. */
void test_sqlgen_floor(void)
{
    struct link_query q = {.owner = 7, .after_created = 90, .after_code = "abc"};
    struct sql_stmt s;
    sql_stmt_init(&s);
    sqlgen_list_floor(&s, &sql_pg, &q, 500);
    CHECK_EQ_STR(buf_cstr(&s.text), "SELECT created_at, code FROM links WHERE owner = $1"
                                    " AND (created_at, code) < ($2, $3)"
                                    " ORDER BY created_at DESC, code DESC LIMIT 1 OFFSET $4");
    CHECK_EQ_INT(s.nparams, 4);
    CHECK_EQ_INT(s.param[3].i, 499);
    sql_stmt_release(&s);
    q = (struct link_query){.owner = -1};
    sql_stmt_init(&s);
    sqlgen_list_floor(&s, &sql_sqlite, &q, 1);
    CHECK_EQ_STR(buf_cstr(&s.text), "SELECT created_at, code FROM links"
                                    " ORDER BY created_at DESC, code DESC LIMIT 1 OFFSET ?1");
    CHECK_EQ_INT(s.param[0].i, 0);
    sql_stmt_release(&s);

    sqlite3 *db = NULL;
    if (!CHECK_EQ_INT(sqlite3_open(":memory:", &db), SQLITE_OK))
        return;
    for (size_t i = 0; i < MIGRATIONS_COUNT(sqlite_steps); i++)
        CHECK_EQ_INT(sqlite3_exec(db, sqlite_steps[i].sql, NULL, NULL, NULL), SQLITE_OK);
    char url[512];
    PGconn *pg = pg_schema("shortd_test_sqlfloor", url, sizeof(url));
    char texts[SQL_FLOOR_SHAPES][256];
    for (unsigned shape = 0; shape < SQL_FLOOR_SHAPES; shape++) {
        q = (struct link_query){.owner = shape & 1 ? 3 : -1,
                                .after_created = 5,
                                .after_code = shape & 2 ? "c" : NULL};
        CHECK_EQ_INT(sqlgen_floor_shape(&q), shape);
        sql_stmt_init(&s);
        sqlgen_list_floor(&s, &sql_sqlite, &q, 10);
        snprintf(texts[shape], sizeof(texts[shape]), "%s", s.text.p);
        for (unsigned j = 0; j < shape; j++)
            CHECK(strcmp(texts[j], texts[shape]) != 0);
        sqlite3_stmt *st = NULL;
        CHECK_EQ_INT(sqlite3_prepare_v2(db, s.text.p, -1, &st, NULL), SQLITE_OK);
        CHECK_EQ_INT(sqlite3_bind_parameter_count(st), s.nparams);
        sqlite3_finalize(st);
        sql_stmt_release(&s);
        if (pg) {
            sql_stmt_init(&s);
            sqlgen_list_floor(&s, &sql_pg, &q, 10);
            Oid types[SQL_PARAMS_MAX];
            for (int i = 0; i < s.nparams; i++)
                types[i] = s.param[i].type == VAL_INT ? 20 : 25;
            char name[16];
            snprintf(name, sizeof(name), "floor%u", shape);
            PGresult *r = PQprepare(pg, name, s.text.p, s.nparams, types);
            if (!CHECK(PQresultStatus(r) == PGRES_COMMAND_OK))
                test_note("%s", PQresultErrorMessage(r));
            PQclear(r);
            sql_stmt_release(&s);
        }
    }
    sqlite3_close(db);
    if (pg) {
        PQclear(PQexec(pg, "SET client_min_messages = warning; "
                           "DROP SCHEMA IF EXISTS shortd_test_sqlfloor CASCADE"));
        PQfinish(pg);
    }
}

void test_sqlgen_move(void)
{
    const struct store_table *days = &store_tables[TABLE_LINK_DAYS];
    const struct store_table *block = &store_tables[TABLE_BLOCKLIST];
    struct buf b = BUF_INIT;

    sqlgen_export(&b, days);
    CHECK_EQ_STR(buf_cstr(&b), "SELECT code, day, clicks, bots, uniques, dims, visitors, recent "
                               "FROM link_days ORDER BY code, day");

    buf_reset(&b);
    sqlgen_count(&b, &sql_sqlite, days);
    CHECK_EQ_STR(buf_cstr(&b), "SELECT count(*), coalesce(sum(clicks), 0), "
                               "coalesce(sum(bots), 0) FROM link_days");
    buf_reset(&b);
    sqlgen_count(&b, &sql_pg, block);
    CHECK_EQ_STR(buf_cstr(&b), "SELECT count(*), coalesce(sum(0), 0)::bigint, "
                               "coalesce(sum(0), 0)::bigint FROM blocklist");

    buf_reset(&b);
    sqlgen_key_bound(&b, &sql_sqlite, days, "", "<", 3);
    CHECK_EQ_STR(buf_cstr(&b), " AND (code, day) < (?3, ?4)");
    buf_reset(&b);
    sqlgen_key_bound(&b, &sql_pg, days, "x.", "<=", 1);
    CHECK_EQ_STR(buf_cstr(&b), " AND (x.code, x.day) <= ($1::text, $2::bigint)");

    buf_reset(&b);
    sqlgen_upsert(&b, &sql_sqlite, block);
    CHECK_EQ_STR(buf_cstr(&b), " ON CONFLICT (host) DO UPDATE SET created_at = "
                               "excluded.created_at WHERE (created_at) IS NOT "
                               "(excluded.created_at)");
    buf_reset(&b);
    sqlgen_upsert(&b, &sql_pg, days);
    CHECK_EQ_STR(buf_cstr(&b),
                 " ON CONFLICT (code, day) DO UPDATE SET clicks = excluded.clicks, "
                 "bots = excluded.bots, uniques = excluded.uniques, dims = excluded.dims, "
                 "visitors = excluded.visitors, recent = excluded.recent WHERE (x.clicks, "
                 "x.bots, x.uniques, x.dims, x.visitors, x.recent) IS DISTINCT FROM "
                 "(excluded.clicks, excluded.bots, excluded.uniques, excluded.dims, "
                 "excluded.visitors, excluded.recent)");

    /* A table that is all key has nothing to update. */
    struct store_table keys_only = *block;
    keys_only.ncols = 1;
    buf_reset(&b);
    sqlgen_upsert(&b, &sql_pg, &keys_only);
    CHECK_EQ_STR(buf_cstr(&b), " ON CONFLICT (host) DO NOTHING");
    buf_release(&b);
}
