/* sqlite_coop.c - see sqlite_coop.h.
 *
 * DESIGN
 * SQLite's VFS layer is made for shims like this one (its own vfstrace.c is
 * one): xOpen asks the real VFS for a file that lives right after our small
 * header, then points the header at our methods, which call coop_point()
 * where I/O happens and forward every call to the real file. */
#include "sqlite_coop.h"

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

#include "coop.h"
#include "err.h"
#include "log.h"
#include "banned.h"

struct coop_file {
    sqlite3_file base;          /* pMethods = &coop_io */
    sqlite3_file *real;         /* right after this struct */
};

static sqlite3_vfs coop_vfs;
static sqlite3_vfs *real_vfs;

#define REAL(f) (((struct coop_file *)(f))->real)

static int c_close(sqlite3_file *f)
{
    return REAL(f)->pMethods->xClose(REAL(f));
}

static int c_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    coop_point();
    return REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}

static int c_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    coop_point();
    return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
}

static int c_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    coop_point();
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int c_sync(sqlite3_file *f, int flags)
{
    int rc = REAL(f)->pMethods->xSync(REAL(f), flags);
    coop_rest();    /* asleep in fsync: not computing */
    return rc;
}

static int c_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int c_lock(sqlite3_file *f, int lock)
{
    return REAL(f)->pMethods->xLock(REAL(f), lock);
}

static int c_unlock(sqlite3_file *f, int lock)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), lock);
}

static int c_check_lock(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int c_control(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int c_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int c_device(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int c_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, p);
}

static int c_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}

static void c_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int c_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static int c_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
    return REAL(f)->pMethods->xFetch(REAL(f), off, n, p);
}

static int c_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
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
    cf->real = (sqlite3_file *)(cf + 1);
    int rc = real_vfs->xOpen(real_vfs, name, cf->real, flags, out);
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
    coop_vfs = *real_vfs;      /* every other method is the real VFS's own */
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
