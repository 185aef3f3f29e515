/* sqlite_coop.c - see sqlite_coop.h.
 *
 * DESIGN
 * SQLite's VFS layer is made for shims like this one (its own vfstrace.c is
 * one): xOpen asks the real VFS for a file that lives right after our small
 * header, then points the header at our methods, which call coop_point()
 * where I/O happens and forward every call to the real file.
 *
 * WAL writes are gathered (by hand: no SQLite setting does it). A commit
 * writes each frame as two calls, its 24-byte header then its page, so a
 * create's two or so pages were four pwrite()s, each finding and dirtying
 * page-cache folios on its own, the 24-byte ones a whole folio for a few
 * bytes. Writes that follow each other in a WAL file now wait in a buffer
 * of that file and reach the kernel as one pwrite() before any other call
 * on that file or on its database file: a connection's database and WAL
 * files are linked at open (sqlite3_filename_database() of the WAL's name
 * is the database's), and one connection's calls never overlap. So nothing
 * reads, syncs, truncates or sizes the WAL, and no frame is published to
 * other connections (the wal-index header is written after an xShmBarrier,
 * the write lock released with an xShmLock, both on the database file)
 * before its bytes are in the kernel; every write keeps its order against
 * every other call. At synchronous=FULL (every connection of shortd) a
 * commit's frames are written by its xSync, before it returns; a crash
 * loses what it loses without the buffer: a commit that had not returned. */
#include "store/sqlite_coop.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/coop.h"
#include "base/err.h"
#include "base/log.h"
#include "base/banned.h"

struct coop_file {
    sqlite3_file base;      /* pMethods = &coop_io */
    sqlite3_file *real;     /* right after this struct */
    bool is_wal;            /* a WAL file: its writes are gathered */
    struct coop_file *wal;  /* a database file: its WAL file while open */
    struct coop_file *db;   /* a WAL file: its database file while open */
    const char *name;       /* a database file: its name as SQLite passed it */
    struct coop_file *next; /* a database file: in 'dbs' */
    char *held;             /* a WAL file: 'nheld' bytes to write at 'at' */
    size_t nheld;
    sqlite3_int64 at;
};

/* Gathered writes up to this size (a WAL file's buffer is allocated at its
 * first write and freed with the file). SQLite's unix VFS passes at most
 * 128 KiB - 1 to one pwrite() (seekAndWriteFd masks the length with
 * 0x1ffff, and an exact 128 KiB then writes nothing and fails as "disk
 * full"), so a buffer must stay below that. */
#define HELD_MAX (64u << 10)

/* Open database files, for their WAL files to find at open. */
static pthread_mutex_t dbs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct coop_file *dbs;

static sqlite3_vfs coop_vfs;
static sqlite3_vfs *real_vfs;

#define REAL(f) (((struct coop_file *)(f))->real)

/* Before any other call on a WAL file or its database file: the WAL's
 * gathered writes go to the real file. SQLITE_OK or the write's error (the
 * bytes are dropped either way, as a failed write drops them). */
static int settle(sqlite3_file *f)
{
    struct coop_file *cf = (struct coop_file *)f;
    struct coop_file *w = cf->is_wal ? cf : cf->wal;
    if (!w || !w->nheld)
        return SQLITE_OK;
    coop_point();
    int rc = w->real->pMethods->xWrite(w->real, w->held, (int)w->nheld, w->at);
    w->nheld = 0;
    return rc;
}

static int c_close(sqlite3_file *f)
{
    struct coop_file *cf = (struct coop_file *)f;
    int rc = settle(f);
    free(cf->held);
    cf->held = NULL;
    if (cf->db)
        cf->db->wal = NULL;
    if (cf->wal)
        cf->wal->db = NULL;
    if (cf->name) {
        pthread_mutex_lock(&dbs_mu);
        struct coop_file **p = &dbs;
        while (*p != cf)
            p = &(*p)->next;
        *p = cf->next;
        pthread_mutex_unlock(&dbs_mu);
    }
    int closed = REAL(f)->pMethods->xClose(REAL(f));
    return rc != SQLITE_OK ? rc : closed;
}

static int c_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    int rc = settle(f);
    if (rc != SQLITE_OK)
        return rc;
    coop_point();
    return REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}

/* A WAL write that follows the gathered ones joins them; anything else
 * settles what is gathered first. */
static int c_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    struct coop_file *cf = (struct coop_file *)f;
    if (cf->nheld && off == cf->at + (sqlite3_int64)cf->nheld &&
        cf->nheld + (size_t)n <= HELD_MAX) {
        memcpy(cf->held + cf->nheld, p, (size_t)n);
        cf->nheld += (size_t)n;
        return SQLITE_OK;
    }
    int rc = settle(f);
    if (rc != SQLITE_OK)
        return rc;
    if (cf->is_wal && (size_t)n < HELD_MAX) {
        if (!cf->held && !(cf->held = malloc(HELD_MAX)))
            return SQLITE_IOERR_NOMEM;
        memcpy(cf->held, p, (size_t)n);
        cf->nheld = (size_t)n;
        cf->at = off;
        return SQLITE_OK;
    }
    coop_point();
    return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
}

static int c_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = settle(f);
    if (rc != SQLITE_OK)
        return rc;
    coop_point();
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int c_sync(sqlite3_file *f, int flags)
{
    int rc = settle(f);
    if (rc != SQLITE_OK)
        return rc;
    rc = REAL(f)->pMethods->xSync(REAL(f), flags);
    coop_rest(); /* asleep in fsync: not computing */
    return rc;
}

static int c_size(sqlite3_file *f, sqlite3_int64 *size)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int c_lock(sqlite3_file *f, int lock)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xLock(REAL(f), lock);
}

static int c_unlock(sqlite3_file *f, int lock)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xUnlock(REAL(f), lock);
}

static int c_check_lock(sqlite3_file *f, int *out)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int c_control(sqlite3_file *f, int op, void *arg)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int c_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }

static int c_device(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }

static int c_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **p)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, p);
}

static int c_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}

static void c_shm_barrier(sqlite3_file *f)
{
    /* At synchronous=FULL the commit's xSync wrote its frames before this
     * barrier, which comes before the wal-index header that publishes them;
     * at a lower level, a failure here would publish frames the file lacks. */
    if (settle(f) != SQLITE_OK)
        log_at(LOG_ERROR, "a gathered WAL write failed before a barrier");
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int c_shm_unmap(sqlite3_file *f, int del)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static int c_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFetch(REAL(f), off, n, p);
}

static int c_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    int rc = settle(f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods coop_io_v3 = {
    .iVersion = 3,
    .xClose = c_close,
    .xRead = c_read,
    .xWrite = c_write,
    .xTruncate = c_truncate,
    .xSync = c_sync,
    .xFileSize = c_size,
    .xLock = c_lock,
    .xUnlock = c_unlock,
    .xCheckReservedLock = c_check_lock,
    .xFileControl = c_control,
    .xSectorSize = c_sector,
    .xDeviceCharacteristics = c_device,
    .xShmMap = c_shm_map,
    .xShmLock = c_shm_lock,
    .xShmBarrier = c_shm_barrier,
    .xShmUnmap = c_shm_unmap,
    .xFetch = c_fetch,
    .xUnfetch = c_unfetch,
};

/* The same methods at the real file's version, so SQLite never calls one
 * that the real file lacks: [1] and [2] are set up with the VFS. */
static sqlite3_io_methods coop_io[4];

static int c_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    struct coop_file *cf = (struct coop_file *)f;
    *cf = (struct coop_file){.real = (sqlite3_file *)(cf + 1)};
    int rc = real_vfs->xOpen(real_vfs, name, cf->real, flags, out);
    if (rc == SQLITE_OK && name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL))) {
        pthread_mutex_lock(&dbs_mu);
        if (flags & SQLITE_OPEN_MAIN_DB) {
            cf->name = name;
            cf->next = dbs;
            dbs = cf;
        } else {
            /* The same pointer: SQLite keeps both names in one allocation */
            const char *db_name = sqlite3_filename_database(name);
            for (struct coop_file *d = dbs; d; d = d->next)
                if (d->name == db_name && !d->wal) {
                    cf->is_wal = true;
                    cf->db = d;
                    d->wal = cf;
                    break;
                }
        }
        pthread_mutex_unlock(&dbs_mu);
    }
    /* The real file's methods are set when its open succeeded (or needs
     * closing); ours only then, as SQLite expects of any VFS. */
    const sqlite3_io_methods *m = cf->real->pMethods;
    cf->base.pMethods = m ? &coop_io[m->iVersion >= 1 && m->iVersion <= 3 ? m->iVersion : 1] : NULL;
    return rc;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static void do_register(void)
{
    real_vfs = sqlite3_vfs_find(NULL);
    if (!real_vfs || real_vfs->iVersion < 2)
        return;
    for (int v = 1; v <= 3; v++) {
        coop_io[v] = coop_io_v3;
        coop_io[v].iVersion = v;
    }
    coop_vfs = *real_vfs; /* every other method is the real VFS's own */
    coop_vfs.szOsFile = (int)sizeof(struct coop_file) + real_vfs->szOsFile;
    coop_vfs.zName = SQLITE_COOP_VFS;
    coop_vfs.pNext = NULL;
    coop_vfs.xOpen = c_open;
    registered = sqlite3_vfs_register(&coop_vfs, 0);
}

int sqlite_coop_register(void)
{
    pthread_once(&once, do_register);
    if (registered != SQLITE_OK)
        return log_fail(ERR_STORAGE, "cannot register SQLite's cooperative VFS");
    return ERR_OK;
}
