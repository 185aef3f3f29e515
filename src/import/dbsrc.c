/* dbsrc.c - reading a peer's SQLite file or PostgreSQL database, row by row.
 *
 * SQLite: the file is opened read-only (it is never created or changed) and
 * one read transaction spans every query, so links and their visits come
 * from the same moment while the peer may still be running. PostgreSQL: one
 * connection in a REPEATABLE READ, READ ONLY transaction for the same
 * reason, each query's rows streamed in single-row mode. */
#include "import/dbsrc.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/log.h"

#include "base/banned.h"

#define DBSRC_COLS_MAX 32

struct dbsrc {
    sqlite3 *db; /* one of the two */
    PGconn *pg;
};

static bool is_pg_url(const char *s)
{
    return strncmp(s, "postgres://", 11) == 0 || strncmp(s, "postgresql://", 13) == 0;
}

/* The first line of libpq's message, for a one-line log. */
static int pg_msg_len(const char *msg) { return (int)strcspn(msg, "\n"); }

static int open_pg(const char *url, struct dbsrc *d)
{
    static const char *const keys[] = {"fallback_application_name", "client_encoding",
                                       "connect_timeout", "dbname", NULL};
    const char *values[] = {"shortd-import", "UTF8", "10", url, NULL};
    d->pg = PQconnectdbParams(keys, values, 1);
    if (!d->pg)
        abort();
    if (PQstatus(d->pg) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(d->pg);
        return log_fail(ERR_IO, "cannot connect to the source database: %.*s", pg_msg_len(msg),
                        msg);
    }
    PGresult *r = PQexec(d->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? ERR_OK : ERR_IO;
    if (rc != ERR_OK) {
        const char *msg = PQerrorMessage(d->pg);
        log_at(LOG_ERROR, "cannot begin a read of the source database: %.*s", pg_msg_len(msg), msg);
    }
    PQclear(r);
    return rc;
}

static int open_sqlite(const char *path, struct dbsrc *d)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return log_fail(ERR_IO, "cannot open '%s': no such file", path);
    int rc = sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK)
        return log_fail(ERR_IO, "cannot open '%s': %s", path,
                        d->db ? sqlite3_errmsg(d->db) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(d->db, 5000);
    char *err = NULL;
    if (sqlite3_exec(d->db, "BEGIN", NULL, NULL, &err) != SQLITE_OK) {
        log_at(LOG_ERROR, "cannot read '%s': %s", path, err ? err : "unknown error");
        sqlite3_free(err);
        return ERR_IO;
    }
    return ERR_OK;
}

int dbsrc_open(const char *source, struct dbsrc **out)
{
    struct dbsrc *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    int rc = is_pg_url(source) ? open_pg(source, d) : open_sqlite(source, d);
    if (rc != ERR_OK) {
        dbsrc_close(d);
        return rc;
    }
    *out = d;
    return ERR_OK;
}

void dbsrc_close(struct dbsrc *d)
{
    if (!d)
        return;
    if (d->db) {
        sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(d->db);
    }
    if (d->pg)
        PQfinish(d->pg); /* ends the read-only transaction */
    free(d);
}

bool dbsrc_is_pg(const struct dbsrc *d) { return d->pg != NULL; }

bool dbsrc_int(const char *v, int64_t *out)
{
    if (!v || !*v)
        return false;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end)
        return false;
    *out = n;
    return true;
}

bool dbsrc_bool(const char *v)
{
    return v && (strcmp(v, "t") == 0 || strcmp(v, "true") == 0 || (v[0] >= '1' && v[0] <= '9'));
}

static int query_sqlite(struct dbsrc *d, const char *what, const char *sql,
                        int (*row)(void *, const char *const *, int), void *arg)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
        return log_fail(ERR_IO, "cannot read the source's '%s': %s", what, sqlite3_errmsg(d->db));
    int n = sqlite3_column_count(st);
    if (n > DBSRC_COLS_MAX)
        n = DBSRC_COLS_MAX;
    int rc = ERR_OK;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *cols[DBSRC_COLS_MAX];
        for (int i = 0; i < n; i++)
            cols[i] = (const char *)sqlite3_column_text(st, i);
        rc = row(arg, cols, n);
        if (rc != ERR_OK)
            break;
    }
    if (rc == ERR_OK && s != SQLITE_DONE)
        rc = log_fail(ERR_IO, "cannot read the source's '%s': %s", what, sqlite3_errmsg(d->db));
    sqlite3_finalize(st);
    return rc;
}

static int query_pg(struct dbsrc *d, const char *what, const char *sql,
                    int (*row)(void *, const char *const *, int), void *arg)
{
    if (!PQsendQuery(d->pg, sql) || !PQsetSingleRowMode(d->pg)) {
        const char *msg = PQerrorMessage(d->pg);
        /* Whatever was sent is read and thrown away. */
        PGresult *r;
        while ((r = PQgetResult(d->pg)))
            PQclear(r);
        return log_fail(ERR_IO, "cannot read the source's '%s': %.*s", what, pg_msg_len(msg), msg);
    }
    int rc = ERR_OK;
    PGresult *r;
    while ((r = PQgetResult(d->pg))) {
        ExecStatusType rs = PQresultStatus(r);
        if (rs == PGRES_SINGLE_TUPLE && rc == ERR_OK) {
            int n = PQnfields(r);
            if (n > DBSRC_COLS_MAX)
                n = DBSRC_COLS_MAX;
            const char *cols[DBSRC_COLS_MAX];
            for (int i = 0; i < n; i++)
                cols[i] = PQgetisnull(r, 0, i) ? NULL : PQgetvalue(r, 0, i);
            rc = row(arg, cols, n);
            if (rc != ERR_OK) {
                /* The rows still coming are not wanted: stop sending them. */
                PGcancel *k = PQgetCancel(d->pg);
                char err[256];
                if (k)
                    PQcancel(k, err, sizeof(err));
                PQfreeCancel(k);
            }
        } else if (rs != PGRES_SINGLE_TUPLE && rs != PGRES_TUPLES_OK && rc == ERR_OK) {
            const char *msg = PQresultErrorMessage(r);
            rc =
                log_fail(ERR_IO, "cannot read the source's '%s': %.*s", what, pg_msg_len(msg), msg);
        }
        PQclear(r);
    }
    return rc;
}

int dbsrc_query(struct dbsrc *d, const char *what, const char *sql,
                int (*row)(void *arg, const char *const *cols, int ncols), void *arg)
{
    return d->pg ? query_pg(d, what, sql, row, arg) : query_sqlite(d, what, sql, row, arg);
}
