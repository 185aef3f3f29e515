/* test_coop.c - coop.h and sqlite_coop.h: a background thread lowers its own
 * priority and yields once it has run a slice (or, at its own priority,
 * pauses), other threads never do, an event loop gets the short time slice
 * it asks for and keeps its priority, a thread started with a role has
 * it before its starter goes on, and a
 * database written through the cooperative VFS (yielding as it writes) is an
 * ordinary SQLite file that the default VFS reads back whole. The VFS gathers
 * a commit's WAL writes into a few system calls, and readers and a
 * checkpointer working meanwhile only ever see whole commits. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/coop.h"
#include "base/err.h"
#include "store/sqlite_coop.h"
#include "test.h"

#include "base/banned.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Calls coop_point() in a busy loop until this thread has computed for 'us'
 * microseconds: CPU time, so a loaded machine taking the core away does not
 * shorten the work (a slice ends by wall time, which then only grows).
 * Returns the wall time it took, in microseconds. */
static int64_t busy(int us)
{
    int64_t start = now_ns(), end = cpu_ns() + (int64_t)us * 1000;
    while (cpu_ns() < end)
        coop_point();
    return (now_ns() - start) / 1000;
}

struct probe {
    bool join;
    int nice;
    int nice_before, nice_after;
    unsigned long busy_yields, sleep_yields;
    int64_t busy_wall_us; /* how long the 10 slices of computing took */
};

static void *probe_main(void *arg)
{
    struct probe *p = arg;
    errno = 0;
    p->nice_before = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (p->join)
        coop_thread(p->nice);
    p->nice_after = getpriority(PRIO_PROCESS, (id_t)gettid());
    p->busy_wall_us = busy(10 * COOP_SLICE_US);
    p->busy_yields = coop_yields();
    usleep(4 * COOP_SLICE_US); /* asleep longer than a slice, then ... */
    coop_point();              /* ... the first point yields: wall time */
    p->sleep_yields = coop_yields() - p->busy_yields;
    return NULL;
}

/* Runs fn(arg) in a thread of its own and waits for it. */
static void in_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (CHECK_EQ_INT(pthread_create(&t, NULL, fn, arg), 0))
        pthread_join(t, NULL);
}

static struct probe run_probe(bool join, int nice)
{
    struct probe p = {.join = join, .nice = nice};
    in_thread(probe_main, &p);
    return p;
}

void test_coop_thread(void)
{
    int main_nice = getpriority(PRIO_PROCESS, (id_t)gettid());
    struct probe bg = run_probe(true, 7);
    CHECK_EQ_INT(bg.nice_after, bg.nice_before + 7);
    /* 10 slices of computing: a yield a slice or so, and never more than a
     * yield a slice of wall time (more slices when the core was taken away) */
    CHECK(bg.busy_yields >= 5);
    CHECK(bg.busy_yields <= (unsigned long)(bg.busy_wall_us / COOP_SLICE_US) + 1);
    CHECK_EQ_INT(bg.sleep_yields, 1);
    /* other threads keep their priority and never yield */
    CHECK_EQ_INT(getpriority(PRIO_PROCESS, (id_t)gettid()), main_nice);
    struct probe fg = run_probe(false, 0);
    CHECK_EQ_INT(fg.nice_after, fg.nice_before);
    CHECK_EQ_INT(fg.busy_yields, 0);
    CHECK_EQ_INT(fg.sleep_yields, 0);
    /* at its own priority: pauses instead, as often */
    struct probe same = run_probe(true, 0);
    CHECK_EQ_INT(same.nice_after, same.nice_before);
    CHECK(same.busy_yields >= 5);
    CHECK(same.busy_yields <= (unsigned long)(same.busy_wall_us / COOP_SLICE_US) + 1);
    CHECK_EQ_INT(same.sleep_yields, 1);
    coop_point();
    coop_rest();
    CHECK_EQ_INT(coop_yields(), 0);
}

/* The number after the ':' of the line of 'path' that starts with 'key'
 * (/proc's "key: value" files), or -1. */
static long long proc_number(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    long long n = -1;
    size_t k = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, key, k) && strchr(line, ':')) {
            n = atoll(strchr(line, ':') + 1);
            break;
        }
    fclose(f);
    return n;
}

/* se.slice of the calling thread in ns (-1: not shown, as on kernels
 * before EEVDF). */
static long long own_slice(void) { return proc_number("/proc/thread-self/sched", "se.slice"); }

/* Whether the kernel takes a fair thread's slice from sched_setattr (6.12). */
static bool custom_slices(void)
{
    struct utsname u;
    int major = 0, minor = 0;
    return uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
           (major > 6 || (major == 6 && minor >= 12));
}

struct slice_probe {
    int us;
    bool batch; /* SCHED_BATCH before it asks */
    int policy_after;
    int nice_before, nice_after;
    long long slice_before, slice_after;
};

static void *slice_main(void *arg)
{
    struct slice_probe *p = arg;
    setpriority(PRIO_PROCESS, (id_t)gettid(), getpriority(PRIO_PROCESS, (id_t)gettid()) + 3);
    if (p->batch)
        sched_setscheduler(0, SCHED_BATCH, &(struct sched_param){0});
    p->nice_before = getpriority(PRIO_PROCESS, (id_t)gettid());
    p->slice_before = own_slice();
    coop_loop_slice(p->us);
    p->nice_after = getpriority(PRIO_PROCESS, (id_t)gettid());
    p->policy_after = sched_getscheduler(0);
    p->slice_after = own_slice();
    return NULL;
}

static struct slice_probe run_slice(int us, bool batch)
{
    struct slice_probe p = {.us = us, .batch = batch};
    in_thread(slice_main, &p);
    return p;
}

void test_coop_loop_slice(void)
{
    struct slice_probe set = run_slice(100, false), low = run_slice(20, false),
                       none = run_slice(0, false), batch = run_slice(100, true);
    /* the thread's policy and priority are kept (a process started with
     * nice or chrt --batch keeps them) */
    CHECK_EQ_INT(set.policy_after, SCHED_OTHER);
    CHECK_EQ_INT(batch.policy_after, SCHED_BATCH);
    CHECK_EQ_INT(set.nice_after, set.nice_before);
    CHECK_EQ_INT(batch.nice_after, batch.nice_before);
    CHECK_EQ_INT(low.nice_after, low.nice_before);
    CHECK_EQ_INT(none.nice_after, none.nice_before);
    CHECK_EQ_INT(none.slice_after, none.slice_before);
    if (!custom_slices() || set.slice_before < 0) {
        test_note("this kernel keeps its own slices: only the priority was checked");
        return;
    }
    CHECK(set.slice_before > 100000);
    CHECK_EQ_INT(set.slice_after, 100000);
    CHECK_EQ_INT(low.slice_after, 100000); /* the kernel's least */
    CHECK_EQ_INT(batch.slice_after, 100000);
}

/* A thread that waits until it is let go. */
struct held {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool go;
    int runs;
};

static void *held_main(void *arg)
{
    struct held *h = arg;
    pthread_mutex_lock(&h->mu);
    h->runs++;
    while (!h->go)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* A thread of this process as /proc shows it, found by its name. */
struct task_view {
    int found;         /* threads of that name */
    long nice, policy; /* fields 19 and 41 of its stat */
    long long slice;   /* se.slice, ns; -1 when not shown */
};

static struct task_view task_named(const char *name)
{
    struct task_view v = {.nice = -100, .policy = -1, .slice = -1};
    long tid = 0;
    v.found = test_threads_named(name, &tid);
    if (!v.found)
        return v;
    char path[64], stat[1024] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
    FILE *f = fopen(path, "r");
    if (f && fgets(stat, sizeof(stat), f) && strrchr(stat, ')')) {
        /* fields from 3 on follow the last ')' */
        char *p = strrchr(stat, ')') + 2;
        for (int field = 3; field <= 41 && p; field++) {
            if (field == 19)
                v.nice = atol(p);
            if (field == 41)
                v.policy = atol(p);
            p = strchr(p, ' ');
            p = p ? p + 1 : NULL;
        }
    }
    if (f)
        fclose(f);
    snprintf(path, sizeof(path), "/proc/self/task/%ld/sched", tid);
    v.slice = proc_number(path, "se.slice");
    return v;
}

void test_coop_start(void)
{
    int nice = getpriority(PRIO_PROCESS, (id_t)gettid());
    struct held h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t t[3];
    /* As soon as coop_start returns, before the threads do anything of
     * their own: each has its name, priority and policy. */
    coop_set_idle(true);
    CHECK_EQ_INT(coop_start(&t[0], (struct coop_role){"coop-bg", 7, 0}, held_main, &h), 0);
    struct task_view bg = task_named("coop-bg");
    coop_set_idle(false);
    CHECK_EQ_INT(coop_start(&t[1], (struct coop_role){"coop-fg", -1, 0}, held_main, &h), 0);
    struct task_view fg = task_named("coop-fg");
    CHECK_EQ_INT(coop_start(&t[2], (struct coop_role){"coop-loop", -1, 100}, held_main, &h), 0);
    struct task_view loop = task_named("coop-loop");

    CHECK_EQ_INT(bg.found, 1);
    CHECK_EQ_INT(bg.nice, nice + 7);
    CHECK_EQ_INT(bg.policy, SCHED_IDLE);
    CHECK_EQ_INT(fg.found, 1);
    CHECK_EQ_INT(fg.nice, nice);
    CHECK_EQ_INT(fg.policy, SCHED_OTHER);
    CHECK_EQ_INT(loop.found, 1);
    CHECK_EQ_INT(loop.nice, nice);
    CHECK_EQ_INT(loop.policy, SCHED_OTHER);
    if (custom_slices() && loop.slice >= 0) {
        CHECK_EQ_INT(loop.slice, 100000);
        CHECK(fg.slice > 100000);
    }

    pthread_mutex_lock(&h.mu);
    h.go = true;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(h.runs, 3); /* each ran fn with its argument */
    CHECK_EQ_INT(getpriority(PRIO_PROCESS, (id_t)gettid()), nice);
}

#define ROWS 20000

struct vfs_run {
    const char *path;
    int rc;
    unsigned long yields;
};

/* Writes ROWS rows of 1 KiB through the cooperative VFS with a small page
 * cache, so the commit and the checkpoint do real I/O, from a coop thread. */
static void *vfs_writer(void *arg)
{
    struct vfs_run *r = arg;
    coop_thread(0);
    sqlite3 *db = NULL;
    r->rc =
        sqlite3_open_v2(r->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLITE_COOP_VFS);
    if (r->rc == SQLITE_OK)
        r->rc = sqlite3_exec(db,
                             "PRAGMA journal_mode = WAL; PRAGMA cache_size = 50;"
                             "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);"
                             "BEGIN;"
                             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                             "WHERE i < 20000) INSERT INTO t SELECT i, zeroblob(1024) FROM n;"
                             "COMMIT; PRAGMA wal_checkpoint(TRUNCATE);",
                             NULL, NULL, NULL);
    sqlite3_close(db);
    r->yields = coop_yields();
    return NULL;
}

void test_sqlite_coop_vfs(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/shortd-coop-%d.db", (int)getpid());
    unlink(path);
    CHECK_EQ_INT(sqlite_coop_register(), ERR_OK);
    CHECK_EQ_INT(sqlite_coop_register(), ERR_OK); /* once is enough; again is harmless */
    CHECK(sqlite3_vfs_find(SQLITE_COOP_VFS) != NULL);
    CHECK(sqlite3_vfs_find(NULL) != sqlite3_vfs_find(SQLITE_COOP_VFS)); /* not the default */

    struct vfs_run r = {.path = path};
    in_thread(vfs_writer, &r);
    CHECK_EQ_INT(r.rc, SQLITE_OK);
    CHECK(r.yields > 0); /* 20 MiB written and checkpointed: many slices */

    /* The default VFS reads it back whole */
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK_EQ_INT(sqlite3_prepare_v2(db,
                                    "SELECT count(*), sum(length(v)), "
                                    "(SELECT * FROM pragma_integrity_check) FROM t",
                                    -1, &q, NULL),
                 SQLITE_OK);
    if (CHECK_EQ_INT(sqlite3_step(q), SQLITE_ROW)) {
        CHECK_EQ_INT(sqlite3_column_int64(q, 0), ROWS);
        CHECK_EQ_INT(sqlite3_column_int64(q, 1), (long long)ROWS * 1024);
        CHECK_EQ_STR((const char *)sqlite3_column_text(q, 2), "ok");
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    char side[80];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

/* Write system calls of this process so far, or -1. */
static long long write_calls(void) { return proc_number("/proc/self/io", "syscw"); }

struct wal_run {
    const char *path;
    int commits; /* the writer's; rollbacks do not count */
    _Atomic bool done;
    int rc;
    long long reads, torn; /* the reader's: snapshots, inconsistent ones */
    long long checkpoints;
};

static sqlite3 *open_coop(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SQLITE_COOP_VFS) !=
            SQLITE_OK ||
        sqlite3_busy_timeout(db, 10000) != SQLITE_OK || /* before the first statement */
        sqlite3_exec(db,
                     "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                     "PRAGMA cache_size = 20;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* Commits of 40 rows of 2 KiB each (spilling the small page cache into the
 * WAL before the commit), every fifth one rolled back instead, and a total
 * kept in another table in the same transaction. */
static void *wal_writer(void *arg)
{
    struct wal_run *r = arg;
    sqlite3 *db = open_coop(r->path);
    r->rc = db ? SQLITE_OK : SQLITE_CANTOPEN;
    for (int i = 0; r->rc == SQLITE_OK && i < 150; i++) {
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "BEGIN;"
                 "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n "
                 "WHERE k < 40) "
                 "INSERT INTO t(v, tag) SELECT randomblob(2048), %d FROM n;"
                 "UPDATE c SET total = total + 40;%s",
                 i, i % 5 == 4 ? "ROLLBACK;" : "COMMIT;");
        r->rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if (r->rc == SQLITE_OK && i % 5 != 4)
            r->commits++;
    }
    sqlite3_close(db);
    r->done = true;
    return NULL;
}

/* Reads snapshots until the writer is done: the rows and the total agree. */
static void *wal_reader(void *arg)
{
    struct wal_run *r = arg;
    sqlite3 *db = open_coop(r->path);
    sqlite3_stmt *q = NULL;
    if (!db || sqlite3_prepare_v2(db,
                                  "SELECT (SELECT count(*) FROM t), (SELECT total FROM c), "
                                  "(SELECT count(*) FROM t WHERE length(v) != 2048)",
                                  -1, &q, NULL) != SQLITE_OK)
        r->torn = -1;
    while (q && !r->done) {
        if (sqlite3_step(q) == SQLITE_ROW) {
            r->reads++;
            if (sqlite3_column_int64(q, 0) != sqlite3_column_int64(q, 1) ||
                sqlite3_column_int64(q, 2) != 0)
                r->torn++;
        } else {
            r->torn++;
        }
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return NULL;
}

/* Checkpoints until the writer is done, so the WAL restarts from its start
 * under the writer (a write that does not follow the gathered ones). */
static void *wal_checkpointer(void *arg)
{
    struct wal_run *r = arg;
    sqlite3 *db = open_coop(r->path);
    while (db && !r->done) {
        if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) == SQLITE_OK)
            r->checkpoints++;
        usleep(2000);
    }
    sqlite3_close(db);
    return NULL;
}

void test_sqlite_coop_gathered_wal(void)
{
    char path[64], side[80];
    snprintf(path, sizeof(path), "/tmp/shortd-coop-wal-%d.db", (int)getpid());
    unlink(path);
    CHECK_EQ_INT(sqlite_coop_register(), ERR_OK);
    sqlite3 *db = open_coop(path);
    if (!CHECK(db != NULL))
        return;
    CHECK_EQ_INT(sqlite3_exec(db,
                              "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB, tag INTEGER);"
                              "CREATE INDEX t_tag ON t(tag);"
                              "CREATE TABLE c(total INTEGER); INSERT INTO c VALUES (0);"
                              "PRAGMA wal_autocheckpoint = 0;",
                              NULL, NULL, NULL),
                 SQLITE_OK);

    /* Alone: a commit of 10 rows of 2 KiB writes 6 or 7 frames (a header
     * and a page each: two writes without gathering) in one call. When the
     * commit returns, its frames are in the file: a connection through the
     * default VFS (which the gathering thread's buffer never sees) copies
     * them all into the database. The second ten at synchronous=NORMAL,
     * where no xSync writes them, but the barrier before the wal-index
     * header that publishes them does. */
    sqlite3 *plain = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &plain, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(plain, "SELECT total FROM c", NULL, NULL, NULL), SQLITE_OK);
    long long writes = 0;
    for (int i = 0; i < 20; i++) {
        if (i == 10)
            CHECK_EQ_INT(sqlite3_exec(db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL),
                         SQLITE_OK);
        long long w0 = write_calls();
        CHECK_EQ_INT(sqlite3_exec(db,
                                  "BEGIN; WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 "
                                  "FROM n WHERE k < 10) INSERT INTO t(v, tag) "
                                  "SELECT randomblob(2048), -1 FROM n;"
                                  "UPDATE c SET total = total + 10; COMMIT;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
        writes += write_calls() - w0;
        int frames = -1, copied = -2;
        CHECK_EQ_INT(sqlite3_wal_checkpoint_v2(plain, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames,
                                               &copied),
                     SQLITE_OK);
        CHECK(frames > 0 && copied == frames);
    }
    CHECK(writes >= 20 && writes <= 20 * 2); /* >= 20 * 12 without gathering */

    /* Two writers taking turns on one thread: the first spills frames into
     * the WAL and rolls back; the second then commits frames at the same
     * offsets. The first's spilled frames must reach the file before its
     * write lock is released, not later, over the second's. */
    sqlite3 *other = open_coop(path);
    for (int i = 0; other && i < 10; i++) {
        CHECK_EQ_INT(sqlite3_exec(db,
                                  "BEGIN; WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 "
                                  "FROM n WHERE k < 60) INSERT INTO t(v, tag) "
                                  "SELECT randomblob(2048), -2 FROM n; ROLLBACK;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
        CHECK_EQ_INT(sqlite3_exec(other,
                                  "BEGIN; INSERT INTO t(v, tag) VALUES (randomblob(2048), -3);"
                                  "UPDATE c SET total = total + 1; COMMIT;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
        CHECK_EQ_INT(sqlite3_exec(db, "SELECT count(*) FROM t", NULL, NULL, NULL), SQLITE_OK);
    }
    sqlite3_close(other);
    CHECK_EQ_INT(sqlite3_exec(plain, "SELECT total FROM c", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(plain);
    sqlite3_close(db);

    /* With a reader and a checkpointer at work */
    struct wal_run r = {.path = path};
    pthread_t t[3];
    void *(*fn[3])(void *) = {wal_writer, wal_reader, wal_checkpointer};
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(pthread_create(&t[i], NULL, fn[i], &r), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_INT(r.rc, SQLITE_OK);
    CHECK_EQ_INT(r.commits, 120);
    CHECK(r.reads > 0);
    CHECK_EQ_INT(r.torn, 0);
    CHECK(r.checkpoints > 0);

    /* The default VFS reads it back whole */
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK_EQ_INT(sqlite3_prepare_v2(db,
                                    "SELECT count(*), (SELECT total FROM c), "
                                    "(SELECT * FROM pragma_integrity_check) FROM t",
                                    -1, &q, NULL),
                 SQLITE_OK);
    if (CHECK_EQ_INT(sqlite3_step(q), SQLITE_ROW)) {
        CHECK_EQ_INT(sqlite3_column_int64(q, 0), 20 * 10 + 10 + 120 * 40);
        CHECK_EQ_INT(sqlite3_column_int64(q, 1), 20 * 10 + 10 + 120 * 40);
        CHECK_EQ_STR((const char *)sqlite3_column_text(q, 2), "ok");
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}
