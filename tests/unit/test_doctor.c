/* test_doctor.c - shortd doctor's checks on installations made broken one
 * way at a time in a temporary folder: each test reads the JSON findings and
 * checks that the right check has the right status and says why. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/doctor.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "store/store.h"
#include "test.h"

#include "base/banned.h"

struct site {
    char dir[64];
    char db[128];
    char listen[32];
};

/* A folder with a fresh store, as `shortd migrate --db` leaves it, and a
 * free port to listen on. */
static bool site_make(struct site *s)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/shortd-doctor-XXXXXX");
    if (!mkdtemp(s->dir))
        return false;
    snprintf(s->db, sizeof(s->db), "%s/s.db", s->dir);
    struct store *st = NULL;
    if (store_open(s->db, &st) != ERR_OK)
        return false;
    st->ops->close(st);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, len) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0;
    snprintf(s->listen, sizeof(s->listen), "127.0.0.1:%d", ntohs(a.sin_port));
    if (fd >= 0)
        close(fd);
    return ok;
}

static void site_remove(struct site *s)
{
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
    CHECK(system(cmd) == 0);
}

/* Runs the doctor on --db 'db' --listen 'listen' plus the given flags; returns
 * its findings as JSON (decref it) and its exit status in *rc. */
static json_t *run(const char *file, const char *db, const char *listen, int n,
                   const char *const *more, int *rc)
{
    const char *names[16] = {"db", "listen"}, *values[16] = {db, listen};
    for (int i = 0; i < n && i < 7; i++) {
        names[2 + i] = more[2 * i];
        values[2 + i] = more[2 * i + 1];
    }
    struct doctor *d = doctor_new(file, 2 + n, names, values);
    doctor_run(d);
    FILE *out = tmpfile();
    *rc = doctor_print(d, out, true);
    doctor_free(d);
    rewind(out);
    json_error_t err;
    json_t *doc = json_loadf(out, 0, &err);
    fclose(out);
    CHECK(doc != NULL);
    return doc;
}

/* The first finding of 'check' whose text holds 'text' ("" for any): its
 * status, or "none". */
static const char *status_of(json_t *doc, const char *check, const char *text)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(doc, "checks"), i, f)
    {
        const char *c = json_string_value(json_object_get(f, "check"));
        const char *what = json_string_value(json_object_get(f, "what"));
        if (c && what && !strcmp(c, check) && strstr(what, text))
            return json_string_value(json_object_get(f, "status"));
    }
    return "none";
}

static void show_on_failure(json_t *doc, bool ok)
{
    if (ok)
        return;
    char *text = json_dumps(doc, JSON_INDENT(2));
    test_note("findings: %s", text ? text : "?");
    free(text);
}

void test_doctor_healthy(void)
{
    struct site s;
    CHECK(site_make(&s));
    int rc = -1;
    json_t *doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    show_on_failure(doc, CHECK_EQ_INT(rc, 0));
    CHECK_EQ_STR(status_of(doc, "config", ""), "ok");
    CHECK_EQ_STR(status_of(doc, "store", "schema"), "ok");
    CHECK_EQ_STR(status_of(doc, "permissions", ""), "ok");
    CHECK_EQ_STR(status_of(doc, "journal", "does not exist yet"), "ok");
    CHECK_EQ_STR(status_of(doc, "listen", "is free"), "ok");
    CHECK_EQ_INT(json_integer_value(json_object_get(doc, "fail")), 0);
    json_decref(doc);
    /* New databases are their owner's alone (store_sqlite.c). */
    struct stat st;
    CHECK(stat(s.db, &st) == 0 && (st.st_mode & 077) == 0);
    site_remove(&s);
}

void test_doctor_config(void)
{
    struct site s;
    CHECK(site_make(&s));
    char file[128];
    snprintf(file, sizeof(file), "%s/shortd.conf", s.dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("threads = 2\nmax-connections = 0\n", f);
        fclose(f);
    }
    int rc = -1;
    json_t *doc = run(file, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "config", "max-connections"), "FAIL"));
    CHECK_EQ_STR(status_of(doc, "config", ":2"), "FAIL"); /* the line */
    json_decref(doc);

    f = fopen(file, "w");
    if (f) {
        fputs("no-such-setting = 1\n", f);
        fclose(f);
    }
    doc = run(file, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "config", "no-such-setting"), "FAIL"));
    json_decref(doc);

    const char *level[] = {"log-level", "loud"};
    doc = run(NULL, s.db, s.listen, 1, level, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_STR(status_of(doc, "config", "not 'loud'"), "FAIL");
    json_decref(doc);
    site_remove(&s);
}

void test_doctor_permissions(void)
{
    struct site s;
    CHECK(site_make(&s));
    CHECK(chmod(s.db, 0644) == 0);
    int rc = -1;
    json_t *doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc,
                    CHECK_EQ_STR(status_of(doc, "permissions", "readable by every user"), "FAIL"));
    json_decref(doc);
    /* Open to its group only: a warning, and the exit stays 0. */
    CHECK(chmod(s.db, 0640) == 0);
    doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    show_on_failure(doc, CHECK_EQ_INT(rc, 0));
    CHECK_EQ_STR(status_of(doc, "permissions", "open to its group"), "warn");
    json_decref(doc);
    site_remove(&s);
}

/* A store that has been served keeps a position in its journal: the folder
 * missing then is a failure; a fresh store's missing folder is not. */
void test_doctor_journal(void)
{
    struct site s;
    CHECK(site_make(&s));
    struct store *st = NULL;
    CHECK(store_open(s.db, &st) == ERR_OK);
    if (st) {
        uint8_t pos[8] = {40}; /* little-endian */
        CHECK(st->ops->begin(st) == ERR_OK);
        CHECK(st->ops->meta_put(st, "journal_pos:0123456789abcdef0123456789abcdef", pos, 8) ==
              ERR_OK);
        CHECK(st->ops->commit(st) == ERR_OK);
        st->ops->close(st);
    }
    int rc = -1;
    json_t *doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "journal", "does not exist"), "FAIL"));
    json_decref(doc);

    char dir[160], stray[200];
    snprintf(dir, sizeof(dir), "%s.clicks", s.db);
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(stray, sizeof(stray), "%s/notes.txt", dir);
    FILE *f = fopen(stray, "w");
    if (f)
        fclose(f);
    doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 0);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "journal", "notes.txt"), "warn"));
    json_decref(doc);
    CHECK(unlink(stray) == 0);

    /* A journal of 100 bytes whose id the store knows at position 40: the
     * 60 after it wait for the next start. */
    char file[200];
    snprintf(file, sizeof(file), "%s/id", dir);
    f = fopen(file, "w");
    if (f) {
        fputs("0123456789abcdef0123456789abcdef\n", f);
        fclose(f);
    }
    snprintf(file, sizeof(file), "%s/00000000000000000000.jnl", dir);
    f = fopen(file, "w");
    if (f) {
        for (int i = 0; i < 100; i++)
            fputc('x', f);
        fclose(f);
    }
    doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 0);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "journal",
                                                "60 bytes of clicks not yet "
                                                "counted"),
                                      "ok"));
    json_decref(doc);

    /* The same journal under another id: the store has no position in it. */
    snprintf(file, sizeof(file), "%s/id", dir);
    f = fopen(file, "w");
    if (f) {
        fputs("ffffffffffffffffffffffffffffffff\n", f);
        fclose(f);
    }
    doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 0);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "journal", "has no position in this store"),
                                      "warn"));
    json_decref(doc);
    site_remove(&s);
}

void test_doctor_clock_behind(void)
{
    struct site s;
    CHECK(site_make(&s));
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(s.db, &db) == SQLITE_OK);
    char sql[256];
    int64_t later = now_ms() + 3600 * 1000;
    snprintf(sql, sizeof(sql),
             "INSERT INTO links (code, owner, url, created_at, changed_at) "
             "VALUES ('future', 1, 'https://example.com/', %lld, %lld)",
             (long long)later, (long long)later);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    int rc = -1;
    json_t *doc = run(NULL, s.db, s.listen, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "clock", "the clock is behind"), "FAIL"));
    json_decref(doc);
    site_remove(&s);
}

/* The listen address held by something that is no shortd. */
void test_doctor_listen_taken(void)
{
    struct site s;
    CHECK(site_make(&s));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    CHECK(bind(fd, (struct sockaddr *)&a, len) == 0 && listen(fd, 4) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(a.sin_port));
    int rc = -1;
    json_t *doc = run(NULL, s.db, addr, 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "listen", "no shortd"), "FAIL"));
    json_decref(doc);
    close(fd);
    doc = run(NULL, s.db, "nonsense", 0, NULL, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_STR(status_of(doc, "listen", "not ADDR:PORT"), "FAIL");
    json_decref(doc);
    site_remove(&s);
}

/* PostgreSQL and Redis where nothing listens: each a failure that says so. */
void test_doctor_unreachable(void)
{
    struct site s;
    CHECK(site_make(&s));
    char journal[128];
    snprintf(journal, sizeof(journal), "%s/clicks", s.dir);
    /* Port 1 on loopback: refused at once. */
    const char *pg[] = {"store",   "postgres://shortd@127.0.0.1:1/shortd",
                        "journal", journal,
                        "cache",   "redis://127.0.0.1:1"};
    int rc = -1;
    json_t *doc = run(NULL, s.db, s.listen, 3, pg, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "store", "cannot connect"), "FAIL"));
    CHECK_EQ_STR(status_of(doc, "cache", "redis 127.0.0.1:1"), "FAIL");
    CHECK_EQ_STR(status_of(doc, "journal", "does not exist yet"), "ok");
    json_decref(doc);
    /* A PostgreSQL store without a journal folder of its own. */
    doc = run(NULL, s.db, s.listen, 1, pg, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_STR(status_of(doc, "config", "journal folder"), "FAIL");
    json_decref(doc);
    site_remove(&s);
}

/* A GeoIP database that is not there, and one that is no MaxMind file. */
void test_doctor_geoip(void)
{
    struct site s;
    CHECK(site_make(&s));
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/GeoLite2-Country.mmdb", s.dir);
    const char *geo[] = {"geoip-db", missing};
    int rc = -1;
    json_t *doc = run(NULL, s.db, s.listen, 1, geo, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "geoip", "No such file"), "FAIL"));
    json_decref(doc);
    const char *not_mmdb[] = {"geoip-db", s.db};
    doc = run(NULL, s.db, s.listen, 1, not_mmdb, &rc);
    CHECK_EQ_INT(rc, 1);
    show_on_failure(doc, CHECK_EQ_STR(status_of(doc, "geoip", "s.db"), "FAIL"));
    json_decref(doc);
    site_remove(&s);
}
