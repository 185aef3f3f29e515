/* doctor.c - the checks of `shortd doctor`, each a small function that adds
 * findings: what it saw, and for a warning or a failure how to fix it. The
 * store is read through store_inspect (read only, never migrated); Redis gets
 * one PING; the listen address one bind, and when it is taken one GET
 * /healthz to tell a running shortd from a stranger. Nothing is created or
 * changed: a missing file stays missing. */
#include "app/doctor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <maxminddb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "app/config.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "http/server.h"
#include "redirect/rcache.h"
#include "store/store.h"
#include "base/banned.h"

#define MAX_FINDINGS 64
#define MIB (1024.0 * 1024.0)

/* Free space: below FAIL_BYTES the store and the journal soon stop writing;
 * below WARN_BYTES, or WARN_PERCENT of the file system, it is time to act. */
#define FREE_FAIL_BYTES (100LL * 1024 * 1024)
#define FREE_WARN_BYTES (1024LL * 1024 * 1024)
#define FREE_WARN_PERCENT 5

/* The clock against PostgreSQL's: nodes that disagree move expiry and the
 * day a click counts on. */
#define CLOCK_WARN_MS 2000
#define CLOCK_FAIL_MS 30000
/* A link created this far after our "now" means our clock is behind. */
#define CLOCK_AHEAD_SLACK_MS 60000

/* A round trip to PostgreSQL slower than this delays every redirect miss. */
#define PG_SLOW_US 20000

#define PROBE_TIMEOUT_MS 2000

struct finding {
    enum doctor_status status;
    const char *check; /* static */
    char what[512];
    char fix[512]; /* "" when nothing is to be done */
};

struct doctor {
    struct config cfg;
    const char *store_url; /* cfg.store or cfg.db */
    bool shared;           /* PostgreSQL */
    char db_path[1024];    /* the SQLite file, "" for PostgreSQL */
    char journal[1100];    /* the click journal folder serve would use; "" if none */
    struct store_health health;
    bool store_read; /* 'health' holds a successful inspection */
    struct finding f[MAX_FINDINGS];
    int n;
};

static const char *const status_names[] = {"ok", "warn", "FAIL"};

/* ---- findings ---- */

static struct finding *found(struct doctor *d, enum doctor_status s, const char *check,
                             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static struct finding *found(struct doctor *d, enum doctor_status s, const char *check,
                             const char *fmt, ...)
{
    static struct finding overflow;
    struct finding *f = d->n < MAX_FINDINGS ? &d->f[d->n++] : &overflow;
    memset(f, 0, sizeof(*f));
    f->status = s;
    f->check = check;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof(f->what), fmt, ap);
    va_end(ap);
    return f;
}

static void fix(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fix(struct finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->fix, sizeof(f->fix), fmt, ap);
    va_end(ap);
}

/* ---- helpers ---- */

static void user_name(uid_t uid, char *out, size_t n)
{
    struct passwd *pw = getpwuid(uid);
    if (pw)
        snprintf(out, n, "%s", pw->pw_name);
    else
        snprintf(out, n, "uid %u", (unsigned)uid);
}

/* The folder holding 'path' ("." for a bare name). */
static void parent_of(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
}

/* The nearest folder of 'path' (itself included) that exists. */
static void nearest_existing(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    struct stat st;
    while (stat(out, &st) != 0) {
        char up[1024];
        parent_of(out, up, sizeof(up));
        if (!strcmp(up, out))
            break;
        snprintf(out, n, "%s", up);
    }
}

/* ---- config ---- */

/* One source of settings that did not read: a finding, and false. */
static bool config_read(struct doctor *d, int rc, const char *err, const char *from)
{
    if (rc == ERR_OK)
        return true;
    struct finding *f = found(d, DOCTOR_FAIL, "config",
                              "%s (in %s): shortd serve would refuse to start; the checks below "
                              "go on without it",
                              err, from);
    if (rc == ERR_IO)
        fix(f, "check --config (or SHORTD_CONFIG): the file must exist and this user read it");
    else if (rc == ERR_NOTFOUND)
        fix(f, "remove or correct the setting: 'shortd serve --help' lists every one");
    else
        fix(f, "give a value within the bounds 'shortd serve --help' lists");
    return false;
}

static void check_config(struct doctor *d, const char *file, int nflags, const char *const *names,
                         const char *const *values)
{
    /* Each source is read even when one before it failed, so that the
     * other checks look at the store and address the flags name. */
    char err[512] = "";
    bool ok = true;
    if (file)
        ok = config_read(d, config_load_file(&d->cfg, file, err, sizeof(err)), err,
                         "the config file");
    ok = config_read(d, config_load_env(&d->cfg, err, sizeof(err)), err,
                     "the environment (SHORTD_*)") &&
         ok;
    for (int i = 0; i < nflags; i++)
        ok = config_read(d, config_set(&d->cfg, names[i], values[i], err, sizeof(err)), err,
                         "the command line") &&
             ok;
    if (!ok)
        return;
    const char *url = d->cfg.store ? d->cfg.store : d->cfg.db;
    if (strstr(url, "://") && !store_is_shared(url)) {
        struct finding *f = found(d, DOCTOR_FAIL, "config",
                                  "store '%.*s://...' is no scheme this "
                                  "shortd knows",
                                  (int)(strstr(url, "://") - url), url);
        fix(f, "use --store postgres://USER@HOST:PORT/DB, or --db PATH for a SQLite file");
        return;
    }
    if (store_is_shared(url) && !d->cfg.journal) {
        struct finding *f = found(d, DOCTOR_FAIL, "config",
                                  "a PostgreSQL store needs a journal folder of this node's own, "
                                  "and none is set");
        fix(f, "set journal = /var/lib/shortd/clicks (or --journal DIR) on every node");
        return;
    }
    if (file)
        found(d, DOCTOR_OK, "config", "'%s' and the environment parse; every value is in bounds",
              file);
    else
        found(d, DOCTOR_OK, "config",
              "no config file; the environment and flags parse, every value in bounds");
}

/* ---- the store ---- */

static void check_sqlite(struct doctor *d)
{
    struct store_health *h = &d->health;
    struct stat st;
    if (stat(d->db_path, &st) != 0) {
        char dir[1024];
        parent_of(d->db_path, dir, sizeof(dir));
        bool dir_ok = access(dir, W_OK | X_OK) == 0;
        struct finding *f = found(d, dir_ok ? DOCTOR_WARN : DOCTOR_FAIL, "store",
                                  "no database at '%s'%s", d->db_path,
                                  dir_ok ? ": the first shortd serve creates an empty one"
                                         : ", and its folder cannot be written to make one");
        if (dir_ok)
            fix(f, "if a database should be there, --db (or db = in the config) is wrong");
        else
            fix(f, "create the folder '%s' for the user shortd runs as, or correct --db", dir);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        found(d, DOCTOR_FAIL, "store", "'%s' is not a file", d->db_path);
        return;
    }
    if (store_sqlite_inspect(d->db_path, h) != ERR_OK) {
        struct finding *f = found(d, DOCTOR_FAIL, "store", "%s", h->why);
        fix(f,
            "check that '%s' is a shortd database and readable by this user; restore it from "
            "a backup (shortd backup) if it is damaged",
            d->db_path);
        return;
    }
    d->store_read = true;
    if (h->schema > h->schema_wanted) {
        struct finding *f = found(d, DOCTOR_FAIL, "store",
                                  "'%s' has schema %d, newer than this shortd knows (%d)",
                                  d->db_path, h->schema, h->schema_wanted);
        fix(f, "run the newer shortd that wrote it");
        return;
    }
    if (h->schema < h->schema_wanted) {
        struct finding *f = found(d, DOCTOR_WARN, "store",
                                  "'%s' has schema %d; this shortd migrates it to %d when it "
                                  "opens it",
                                  d->db_path, h->schema, h->schema_wanted);
        fix(f, "back it up first: shortd backup --db %s --to FILE", d->db_path);
        return;
    }
    if (strcmp(h->journal_mode, "wal") != 0) {
        struct finding *f = found(d, DOCTOR_WARN, "store", "'%s' is in journal mode '%s', not wal",
                                  d->db_path, h->journal_mode);
        fix(f,
            "shortd sets WAL whenever it opens the file; if it stays '%s', the file system "
            "may not support WAL (a network file system): keep the database on a local disk",
            h->journal_mode);
        return;
    }
    found(d, DOCTOR_OK, "store",
          "sqlite '%s': schema %d (current), journal mode wal, read in %.1f ms", d->db_path,
          h->schema, (double)h->query_us / 1000.0);
}

static void check_pg(struct doctor *d)
{
    struct store_health *h = &d->health;
    char shown[512];
    store_redact(d->store_url, shown, sizeof(shown));
    if (store_pg_inspect(d->store_url, 3, h) != ERR_OK) {
        struct finding *f = found(d, DOCTOR_FAIL, "store", "postgres '%s': %s", shown, h->why);
        if (!h->reached)
            fix(f, "start PostgreSQL, or correct --store (host, port, user, password, database); "
                   "psql with the same URL says the same");
        else
            fix(f, "check that this user may read the database");
        return;
    }
    d->store_read = true;
    if (h->schema != h->schema_wanted) {
        struct finding *f = found(d, DOCTOR_FAIL, "store",
                                  "postgres '%s' has schema %d; this shortd needs %d", shown,
                                  h->schema, h->schema_wanted);
        if (h->schema < h->schema_wanted)
            fix(f, "shortd migrate --store URL (one transaction; safe while nodes of the older "
                   "version still serve it only if the release notes say so)");
        else
            fix(f, "run the newer shortd that migrated it");
        return;
    }
    struct finding *f = found(d, h->query_us > PG_SLOW_US ? DOCTOR_WARN : DOCTOR_OK, "store",
                              "postgres '%s': schema %d (current), connected in %.1f ms, the "
                              "fastest of %d round trips took %.1f ms",
                              shown, h->schema, (double)h->connect_us / 1000.0, STORE_HEALTH_PINGS,
                              (double)h->query_us / 1000.0);
    if (f->status == DOCTOR_WARN)
        fix(f, "every redirect the caches miss waits for this: put the database nearer (same "
               "network), or a shared cache (--cache redis://...) in front of it");
}

static void check_store(struct doctor *d)
{
    if (d->shared)
        check_pg(d);
    else
        check_sqlite(d);
}

/* ---- permissions ---- */

/* One file that holds secrets: the database (its meta table keeps the keys
 * that hash API keys and visitors), an admin key (older versions' first
 * start) or the setup URL (today's). Missing is fine. */
static void check_secret_file(struct doctor *d, const char *path, const char *what)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    char owner[64];
    user_name(st.st_uid, owner, sizeof(owner));
    if (st.st_mode & S_IROTH) {
        struct finding *f = found(d, DOCTOR_FAIL, "permissions",
                                  "%s '%s' is readable by every user (mode %04o, owner %s)", what,
                                  path, (unsigned)(st.st_mode & 07777), owner);
        fix(f, "chmod 600 '%s' (and start shortd with umask 077: UMask=0077 in a systemd unit)",
            path);
    } else if (st.st_mode & (S_IRGRP | S_IWGRP | S_IWOTH)) {
        struct finding *f = found(d, DOCTOR_WARN, "permissions",
                                  "%s '%s' is open to its group (mode %04o, owner %s)", what, path,
                                  (unsigned)(st.st_mode & 07777), owner);
        fix(f, "chmod 600 '%s' unless that group is meant to read it", path);
    }
}

static void check_permissions(struct doctor *d)
{
    int before = d->n;
    char path[1200];
    if (!d->shared) {
        check_secret_file(d, d->db_path, "the database");
        snprintf(path, sizeof(path), "%s-wal", d->db_path);
        check_secret_file(d, path, "the database's WAL");
        snprintf(path, sizeof(path), "%s-shm", d->db_path);
        check_secret_file(d, path, "the database's shared memory file");
        snprintf(path, sizeof(path), "%s.admin-key", d->db_path);
        check_secret_file(d, path, "the first admin key");
        snprintf(path, sizeof(path), "%s.setup-url", d->db_path);
        check_secret_file(d, path, "the setup URL");
        struct stat st;
        char dir[1024];
        parent_of(d->db_path, dir, sizeof(dir));
        if (stat(d->db_path, &st) == 0 && access(d->db_path, R_OK | W_OK) != 0) {
            char owner[64], me[64];
            user_name(st.st_uid, owner, sizeof(owner));
            user_name(geteuid(), me, sizeof(me));
            struct finding *f = found(d, DOCTOR_FAIL, "permissions",
                                      "the database '%s' (owner %s) cannot be read and written "
                                      "by %s",
                                      d->db_path, owner, me);
            fix(f, "chown %s '%s', or run shortd (and doctor) as %s", me, d->db_path, owner);
        }
        if (stat(dir, &st) == 0 && access(dir, W_OK | X_OK) != 0) {
            char me[64];
            user_name(geteuid(), me, sizeof(me));
            struct finding *f = found(d, DOCTOR_FAIL, "permissions",
                                      "the database's folder '%s' cannot be written by %s: "
                                      "SQLite makes its -wal and -shm files there",
                                      dir, me);
            fix(f, "chown %s '%s'", me, dir);
        }
    } else if (d->journal[0]) {
        snprintf(path, sizeof(path), "%s.admin-key", d->journal);
        check_secret_file(d, path, "the first admin key");
        snprintf(path, sizeof(path), "%s.setup-url", d->journal);
        check_secret_file(d, path, "the setup URL");
    }
    if (d->n == before) {
        char me[64], owner[64] = "";
        user_name(geteuid(), me, sizeof(me));
        struct stat st;
        bool file = !d->shared && stat(d->db_path, &st) == 0;
        if (file)
            user_name(st.st_uid, owner, sizeof(owner));
        if (d->shared)
            found(d, DOCTOR_OK, "permissions",
                  "no admin key or setup URL file is readable by others");
        else if (!file)
            found(d, DOCTOR_OK, "permissions", "no database file yet");
        else {
            /* Root may write anything: the check is only worth as much as
             * the user it runs as. */
            char note[200] = "";
            if (geteuid() == 0 && st.st_uid != 0)
                snprintf(note, sizeof(note),
                         "; as root, this says nothing of what %s may do: run the doctor as %s",
                         owner, owner);
            found(d, DOCTOR_OK, "permissions",
                  "the database (owner %s) and its files are readable by their owner only, and "
                  "%s may write them%s",
                  owner, me, note);
        }
    }
}

/* ---- the click journal ---- */

static bool journal_own_file(const char *name)
{
    size_t n = strlen(name);
    return !strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, "lock") ||
           !strcmp(name, "id") || !strcmp(name, "id.bak") ||
           (n > 4 && !strcmp(name + n - 4, ".jnl"));
}

/* Whether a process holds the journal's lock (a running shortd). */
static bool journal_in_use(const char *dir)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    bool busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return busy;
}

/* The journal's id (clicks.c keeps it in DIR/id and DIR/id.bak, as 32 hex
 * digits and a CRC): it names the journal's position in the store. */
static bool journal_read_id(const char *dir, char id[48])
{
    for (int i = 0; i < 2; i++) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s", dir, i ? "id.bak" : "id");
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(id, 1, 32, f);
        fclose(f);
        id[n] = '\0';
        if (n == 32 && strspn(id, "0123456789abcdef") == 32)
            return true;
    }
    return false;
}

static void check_journal(struct doctor *d)
{
    if (!d->journal[0])
        return; /* the config check said why */
    const char *dir = d->journal;
    struct stat st;
    if (stat(dir, &st) != 0) {
        char parent[1024];
        parent_of(dir, parent, sizeof(parent));
        bool parent_ok = access(parent, W_OK | X_OK) == 0;
        /* A SQLite store that has been served keeps its position in its
         * journal: the folder should be beside it. A PostgreSQL store
         * holds every node's, so the count says nothing of this one. */
        if (!d->shared && d->store_read && d->health.journal_marks > 0) {
            struct finding *f = found(d, DOCTOR_FAIL, "journal",
                                      "the click journal '%s' does not exist, yet the store has "
                                      "been served with one (it keeps %lld journal position%s): "
                                      "the folder was moved or deleted, or --journal names "
                                      "another",
                                      dir, (long long)d->health.journal_marks,
                                      d->health.journal_marks == 1 ? "" : "s");
            fix(f, "put the folder back beside the database, or set journal = to where it is; "
                   "if it is truly lost, shortd serve starts a new one (clicks journaled and not "
                   "yet counted are gone)");
        } else if (!parent_ok) {
            struct finding *f = found(d, DOCTOR_FAIL, "journal",
                                      "the click journal '%s' does not exist and its folder "
                                      "'%s' cannot be written to make it",
                                      dir, parent);
            fix(f, "mkdir -p '%s' for the user shortd runs as", dir);
        } else {
            found(d, DOCTOR_OK, "journal", "'%s' does not exist yet: shortd serve makes it", dir);
        }
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        struct finding *f = found(d, DOCTOR_FAIL, "journal", "'%s' is not a folder", dir);
        fix(f, "move it away, or set journal = to a folder");
        return;
    }
    if (access(dir, R_OK | W_OK | X_OK) != 0) {
        char owner[64], me[64];
        user_name(st.st_uid, owner, sizeof(owner));
        user_name(geteuid(), me, sizeof(me));
        struct finding *f = found(d, DOCTOR_FAIL, "journal",
                                  "the click journal '%s' (owner %s) cannot be written by %s", dir,
                                  owner, me);
        fix(f, "chown -R %s '%s', or run shortd as %s", me, dir, owner);
        return;
    }
    DIR *dh = opendir(dir);
    if (!dh) {
        found(d, DOCTOR_FAIL, "journal", "cannot list '%s': %s", dir, strerror(errno));
        return;
    }
    int segments = 0, strays = 0;
    double bytes = 0;
    int64_t end = 0; /* the journal's end position */
    bool has_id = false;
    char stray[256] = "";
    struct dirent *e;
    while ((e = readdir(dh))) {
        if (!journal_own_file(e->d_name)) {
            if (!strays)
                snprintf(stray, sizeof(stray), "%s", e->d_name);
            strays++;
            continue;
        }
        has_id = has_id || !strcmp(e->d_name, "id") || !strcmp(e->d_name, "id.bak");
        size_t n = strlen(e->d_name);
        if (n > 4 && !strcmp(e->d_name + n - 4, ".jnl")) {
            char path[1400];
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            struct stat s;
            if (stat(path, &s) == 0) {
                segments++;
                bytes += (double)s.st_size;
                /* A segment is named after the position of its first byte. */
                int64_t start = strtoll(e->d_name, NULL, 10);
                if (start + s.st_size > end)
                    end = start + s.st_size;
            }
        }
    }
    closedir(dh);
    bool busy = journal_in_use(dir);
    int before = d->n;
    if (strays) {
        struct finding *f = found(d, DOCTOR_WARN, "journal",
                                  "'%s' holds %d file%s not the journal's ('%s'%s)", dir, strays,
                                  strays == 1 ? "" : "s", stray, strays > 1 ? ", ..." : "");
        fix(f, "move them out of the journal folder; shortd neither reads nor removes them");
    }
    if (bytes > 0 && !has_id) {
        struct finding *f = found(d, DOCTOR_WARN, "journal",
                                  "'%s' holds %d segment%s but no id file: the store's position in "
                                  "them is unknown, so the next start counts none of their clicks",
                                  dir, segments, segments == 1 ? "" : "s");
        fix(f, "if id and id.bak were deleted by mistake, restore them from a backup before "
               "starting shortd");
    }
    char id[48], pending[160] = "";
    if (!busy && has_id && d->store_read && journal_read_id(dir, id)) {
        const struct store_health *h = &d->health;
        int m = 0;
        while (m < h->nmarks && strcmp(h->marks[m].id, id) != 0)
            m++;
        if (m < h->nmarks && end > h->marks[m].pos) {
            snprintf(pending, sizeof(pending),
                     "; %lld bytes of clicks not yet counted (shortd did not stop cleanly): "
                     "the next start counts them",
                     (long long)(end - h->marks[m].pos));
        } else if (m == h->nmarks && h->journal_marks <= h->nmarks && bytes > 0) {
            struct finding *f = found(d, DOCTOR_WARN, "journal",
                                      "'%s' (journal %s, %.1f MiB) has no position in this "
                                      "store, so the next start counts every click in it into "
                                      "this store",
                                      dir, id, bytes / MIB);
            if (h->journal_marks == 0)
                fix(f, "right if this database's first run stopped before it stored a click; if "
                       "the journal was left by another database, move it away before starting "
                       "shortd");
            else
                fix(f, "the store was served with another journal: if this one was left by "
                       "another database, move it away before starting shortd; if the database "
                       "was restored from a backup older than the journal, that is right");
        }
    }
    if (d->n == before)
        found(d, DOCTOR_OK, "journal", "'%s': %d segment%s, %.1f MiB%s%s", dir, segments,
              segments == 1 ? "" : "s", bytes / MIB, busy ? ", in use by a running shortd" : "",
              pending);
}

/* ---- free disk ---- */

/* The verdict on a file system with 'avail' of 'total' bytes free. */
static enum doctor_status space_verdict(double avail, double total)
{
    if (avail < (double)FREE_FAIL_BYTES)
        return DOCTOR_FAIL;
    if (avail < (double)FREE_WARN_BYTES || (total > 0 && avail * 100 < total * FREE_WARN_PERCENT))
        return DOCTOR_WARN;
    return DOCTOR_OK;
}

static void check_space_at(struct doctor *d, const char *path, const char *what, dev_t *seen,
                           int *nseen)
{
    char dir[1024];
    nearest_existing(path, dir, sizeof(dir));
    struct stat st;
    struct statvfs vfs;
    if (stat(dir, &st) != 0 || statvfs(dir, &vfs) != 0) {
        found(d, DOCTOR_WARN, "disk", "cannot tell the free space at '%s': %s", dir,
              strerror(errno));
        return;
    }
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == st.st_dev)
            return; /* the same file system, already told */
    seen[(*nseen)++] = st.st_dev;
    double avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
    double total = (double)vfs.f_blocks * (double)vfs.f_frsize;
    enum doctor_status s = space_verdict(avail, total);
    struct finding *f = found(d, s, "disk", "%s ('%s'): %.0f MiB free of %.0f MiB (%.0f%%)", what,
                              dir, avail / MIB, total / MIB, total > 0 ? avail * 100 / total : 0);
    if (s != DOCTOR_OK)
        fix(f,
            "free space there or move the %s to a larger disk: below %lld MiB SQLite and the "
            "journal stop writing, and clicks wait in memory",
            what, FREE_FAIL_BYTES / (1024 * 1024));
}

static void check_disk(struct doctor *d)
{
    dev_t seen[2];
    int nseen = 0;
    char dir[1024];
    parent_of(d->db_path, dir, sizeof(dir));
    if (!d->shared)
        check_space_at(d, dir, "database", seen, &nseen);
    if (d->journal[0])
        check_space_at(d, d->journal, "click journal", seen, &nseen);
}

/* ---- the clock ---- */

static void check_clock(struct doctor *d)
{
    int64_t now = now_ms();
    int before = d->n;
    const struct store_health *h = &d->health;
    char when[RFC3339_MAX];
    if (d->store_read && d->shared && h->server_now_ms > 0) {
        int64_t off = now - h->server_now_ms;
        int64_t mag = off < 0 ? -off : off;
        if (mag > CLOCK_WARN_MS) {
            struct finding *f = found(d, mag > CLOCK_FAIL_MS ? DOCTOR_FAIL : DOCTOR_WARN, "clock",
                                      "this clock is %.1f s %s PostgreSQL's", (double)mag / 1000.0,
                                      off < 0 ? "behind" : "ahead of");
            fix(f, "keep every node and the database on NTP (timedatectl set-ntp true, or "
                   "chrony): links expire and clicks count by day on each node's own clock");
        }
    }
    if (d->store_read && h->newest_link_ms > now + CLOCK_AHEAD_SLACK_MS) {
        rfc3339_format(h->newest_link_ms, when);
        struct finding *f = found(d, DOCTOR_FAIL, "clock",
                                  "the store's newest link was created at %s, %.0f s after this "
                                  "clock's now: the clock is behind",
                                  when, (double)(h->newest_link_ms - now) / 1000.0);
        fix(f, "set the clock right (timedatectl set-ntp true, or chrony); behind, shortd "
               "serves expired links and counts clicks on past days");
    }
    if (d->store_read && h->newest_day > day_number(now)) {
        char day[11], today[11];
        day_format(h->newest_day, day);
        day_format(day_number(now), today);
        struct finding *f = found(d, DOCTOR_FAIL, "clock",
                                  "the store has clicks on %s, but this clock says today is %s",
                                  day, today);
        fix(f, "set the clock right (timedatectl set-ntp true, or chrony)");
    }
    if (d->n == before) {
        rfc3339_format(now, when);
        if (d->store_read && d->shared)
            found(d, DOCTOR_OK, "clock", "%s, within %d ms of PostgreSQL's", when, CLOCK_WARN_MS);
        else
            found(d, DOCTOR_OK, "clock", "%s, not behind anything the store holds", when);
    }
}

/* ---- the shared cache ---- */

static void check_cache(struct doctor *d)
{
    if (!d->cfg.cache) {
        found(d, DOCTOR_OK, "cache", "no shared cache configured");
        return;
    }
    struct rcache_addr a;
    if (rcache_url_parse(d->cfg.cache, &a) != ERR_OK) {
        struct finding *f =
            found(d, DOCTOR_FAIL, "cache", "'%s' is not a redis:// URL", d->cfg.cache);
        fix(f, "set cache = redis://HOST:PORT[/DB] (or redis://:PASSWORD@HOST:PORT)");
        return;
    }
    char why[256] = "";
    int64_t t0 = mono_ms();
    redisContext *c = rcache_connect(&a, PROBE_TIMEOUT_MS, why, sizeof(why));
    redisReply *r = c ? redisCommand(c, "PING") : NULL;
    int64_t ms = mono_ms() - t0;
    bool ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG");
    if (c && !ok && !why[0]) {
        if (r && r->type == REDIS_REPLY_ERROR)
            snprintf(why, sizeof(why), "PING answered '%s'", r->str);
        else
            rcache_describe(c, why, sizeof(why));
    }
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    if (!ok) {
        struct finding *f = found(d, DOCTOR_FAIL, "cache", "redis %s:%d: %s", a.host, a.port, why);
        fix(f, "start Redis or correct cache =; while it is down shortd serves from the store, "
               "and rate limits are per node");
        return;
    }
    found(d, DOCTOR_OK, "cache", "redis %s:%d answers PING in %lld ms", a.host, a.port,
          (long long)ms);
}

/* ---- the listen address ---- */

/* Whether a shortd answers GET /healthz on 'listen' within the timeout. */
static bool healthz_answers(const char *listen)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof(host))
        return false;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t len;
    int port = atoi(colon + 1);
    if (host[0] == '[') {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        host[strlen(host) - 1] = '\0';
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
            return false;
        if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
            s6->sin6_addr = in6addr_loopback;
        len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (!strcmp(host, "localhost") || !strcmp(host, "0.0.0.0"))
            s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
            return false;
        len = sizeof(*s4);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return false;
    bool ok = false;
    char buf[512];
    size_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int64_t deadline = mono_ms() + PROBE_TIMEOUT_MS;
    if (connect(fd, (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS)
        goto out;
    if (poll(&p, 1, PROBE_TIMEOUT_MS) != 1)
        goto out;
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: doctor\r\nConnection: close\r\n\r\n";
    if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
        goto out;
    p.events = POLLIN;
    while (got < sizeof(buf) - 1) {
        int64_t left = deadline - mono_ms();
        if (left <= 0 || poll(&p, 1, (int)left) != 1)
            break;
        ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    ok = !strncmp(buf, "HTTP/1.1 200", 12) && strstr(buf, "{\"status\":\"ok\"}");
out:
    close(fd);
    return ok;
}

static void check_listen(struct doctor *d)
{
    const char *listen = d->cfg.listen;
    char who[256];
    int rc = server_probe_listen(listen, who, sizeof(who));
    if (rc == ERR_OK) {
        found(d, DOCTOR_OK, "listen", "'%s' is free", listen);
        return;
    }
    if (rc == ERR_INVALID) {
        struct finding *f = found(d, DOCTOR_FAIL, "listen", "'%s' is not ADDR:PORT", listen);
        fix(f, "set listen = 127.0.0.1:8080, 0.0.0.0:80 or [::]:8080 (an address, not a name)");
        return;
    }
    if (rc == ERR_IO) {
        struct finding *f =
            found(d, DOCTOR_FAIL, "listen", "cannot listen on '%s': %s", listen, who);
        fix(f, "a port below 1024 needs root or CAP_NET_BIND_SERVICE (the systemd unit gives "
               "it); an address must be one of this host's");
        return;
    }
    if (healthz_answers(listen)) {
        found(d, DOCTOR_OK, "listen",
              "'%s' is served by a running shortd%s%s: a second "
              "shortd serve there needs --takeover",
              listen, who[0] ? ", " : "", who);
        return;
    }
    struct finding *f = found(d, DOCTOR_FAIL, "listen", "'%s' is in use by %s, which is no shortd",
                              listen, who[0] ? who : "another process (/proc does not say which)");
    fix(f, "stop it, or choose another address with --listen");
}

/* ---- the GeoIP database ---- */

static void check_geoip(struct doctor *d)
{
    if (!d->cfg.geoip_db) {
        found(d, DOCTOR_OK, "geoip",
              "no GeoIP database configured (countries come from the '%s' "
              "header of trusted proxies, if any)",
              d->cfg.country_header);
        return;
    }
    MMDB_s mmdb;
    struct stat st;
    /* libmaxminddb says only that it could not open a file, not why. */
    int rc = stat(d->cfg.geoip_db, &st) != 0 ? MMDB_FILE_OPEN_ERROR
                                             : MMDB_open(d->cfg.geoip_db, MMDB_MODE_MMAP, &mmdb);
    if (rc != MMDB_SUCCESS) {
        struct finding *f = found(d, DOCTOR_FAIL, "geoip", "'%s': %s", d->cfg.geoip_db,
                                  rc == MMDB_FILE_OPEN_ERROR || rc == MMDB_IO_ERROR
                                      ? strerror(errno)
                                      : MMDB_strerror(rc));
        fix(f, "download a GeoLite2-Country or GeoIP2-Country .mmdb file there (geoipupdate), "
               "or remove geoip-db");
        return;
    }
    int64_t age_days = (now_ms() / 1000 - (int64_t)mmdb.metadata.build_epoch) / 86400;
    struct finding *f = found(d, age_days > 90 ? DOCTOR_WARN : DOCTOR_OK, "geoip",
                              "'%s': %s, built %lld days ago", d->cfg.geoip_db,
                              mmdb.metadata.database_type, (long long)age_days);
    if (f->status == DOCTOR_WARN)
        fix(f, "update it (geoipupdate): addresses move between countries");
    MMDB_close(&mmdb);
}

/* ---- the whole ---- */

struct doctor *doctor_new(const char *config_file, int nflags, const char *const *names,
                          const char *const *values)
{
    struct doctor *d = calloc(1, sizeof(*d));
    if (!d)
        abort();
    config_init(&d->cfg);
    check_config(d, config_file, nflags, names, values);
    d->store_url = d->cfg.store ? d->cfg.store : d->cfg.db;
    d->shared = store_is_shared(d->store_url);
    if (!d->shared)
        snprintf(d->db_path, sizeof(d->db_path), "%s",
                 strncmp(d->store_url, "sqlite:", 7) ? d->store_url : d->store_url + 7);
    if (d->cfg.journal)
        snprintf(d->journal, sizeof(d->journal), "%s", d->cfg.journal);
    else if (!d->shared)
        snprintf(d->journal, sizeof(d->journal), "%s.clicks", d->db_path);
    return d;
}

void doctor_free(struct doctor *d)
{
    if (!d)
        return;
    config_release(&d->cfg);
    free(d);
}

void doctor_run(struct doctor *d)
{
    if (strstr(d->store_url, "://") && !d->shared)
        return; /* no store to look at: the config check said so */
    check_store(d);
    check_permissions(d);
    check_journal(d);
    check_disk(d);
    check_clock(d);
    check_cache(d);
    check_listen(d);
    check_geoip(d);
}

int doctor_count(const struct doctor *d, enum doctor_status status)
{
    int n = 0;
    for (int i = 0; i < d->n; i++)
        n += d->f[i].status == status;
    return n;
}

int doctor_print(const struct doctor *d, FILE *out, bool json)
{
    int fails = doctor_count(d, DOCTOR_FAIL), warns = doctor_count(d, DOCTOR_WARN);
    if (json) {
        json_t *list = json_array();
        for (int i = 0; i < d->n; i++) {
            const struct finding *f = &d->f[i];
            json_t *o = json_pack("{s:s, s:s, s:s}", "check", f->check, "status",
                                  status_names[f->status], "what", f->what);
            if (f->fix[0])
                json_object_set_new(o, "fix", json_string(f->fix));
            json_array_append_new(list, o);
        }
        json_t *doc = json_pack("{s:o, s:i, s:i, s:i}", "checks", list, "ok",
                                doctor_count(d, DOCTOR_OK), "warn", warns, "fail", fails);
        json_dumpf(doc, out, JSON_INDENT(2));
        fputc('\n', out);
        json_decref(doc);
    } else {
        for (int i = 0; i < d->n; i++) {
            const struct finding *f = &d->f[i];
            fprintf(out, "%-4s  %-11s  %s\n", status_names[f->status], f->check, f->what);
            if (f->fix[0])
                fprintf(out, "      %-11s  fix: %s\n", "", f->fix);
        }
        fprintf(out, "doctor: %d ok, %d warning%s, %d failure%s\n", doctor_count(d, DOCTOR_OK),
                warns, warns == 1 ? "" : "s", fails, fails == 1 ? "" : "s");
    }
    fflush(out);
    return fails ? 1 : 0;
}
