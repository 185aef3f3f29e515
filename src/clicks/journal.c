/* journal.c - the durable click journal of journal.h: framed, checksummed
 * records appended to numbered segment files.
 *
 * DESIGN
 * A segment file is named after the position of its first byte
 * (DIR/00000000000000004096.jnl), so a byte's position is the file's name plus
 * its offset in the file: no index, and positions survive rotation, release and
 * reopening. A record is u32 length, u32 CRC-32 of those four bytes and the
 * payload, then the payload, little-endian. Appends only grow one buffer;
 * journal_sync writes it with pwrite at the synced end and fdatasync()s, so one
 * fsync covers every record since the last. A segment is left behind after a
 * successful sync, or after a failed one at the synced end, which is where the
 * next segment starts: an older segment is read only up to the next one's
 * start, so only the last one can have a torn tail that matters: open verifies
 * that segment alone and truncates whatever follows its last intact record.
 * Older segments are verified as replay reads them; a bad record there costs
 * the rest of its segment (logged), not the service. Reading goes through one
 * buffer allocated at open, big enough for several whole records. After a
 * failed fsync the page cache no longer tells what is on disk, so the journal
 * never writes to that file again: the retry starts a new segment at the
 * synced end. */
#include "clicks/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "base/banned.h"

#define HDR_SIZE 8u                           /* u32 length, u32 CRC-32 */
#define REC_MAX 65535u                        /* largest payload */
#define RBUF_SIZE (4u * (HDR_SIZE + REC_MAX)) /* the read buffer holds whole records */
#define POS_MAX ((uint64_t)INT64_MAX)         /* positions fit a signed SQL integer */
#define SEG_DIGITS 20
#define SEG_NAME_SIZE (SEG_DIGITS + sizeof(".jnl")) /* with the NUL */

struct journal {
    char *dir;              /* as given, for messages */
    int dirfd;              /* for openat, unlinkat and syncing the directory */
    int lockfd;             /* holds the flock on DIR/lock */
    int fd;                 /* the last segment, the one written */
    uint64_t segment_max;   /* rotate once the last segment holds this many bytes */
    uint64_t *segs;         /* first positions of the segment files, ascending */
    size_t nsegs, segs_cap; /* never 0 segments once open */
    uint64_t synced;        /* the disk holds intact records up to here */
    struct buf pending;     /* framed records after 'synced', not yet written */
    unsigned char *rbuf;    /* RBUF_SIZE bytes for reading segments */
    bool reseg;             /* the segment written is not to be trusted (a failed fsync or
                             * cut) or 'synced' moved past it: the next sync starts a new one */
    struct journal_health health;
    uint64_t failures_before; /* health.failures when it last went down */
};

/* One pass over part of a segment file through j->rbuf. */
struct reader {
    int fd;
    uint64_t start;  /* position of the file's first byte */
    uint64_t limit;  /* nothing at or past this position belongs to the segment */
    uint64_t pos;    /* position of the next record, which is at rbuf[at] */
    size_t at, have; /* rbuf[at..have) has been read but not consumed */
    const char *bad; /* why reading stopped before 'limit'; NULL if it did not */
};

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The checksum covers the length too, so a damaged length cannot pass for
 * another record. It is zlib's CRC-32, computed by libdeflate, whose
 * carry-less multiplication is an order of magnitude faster on a click's
 * record than zlib's tables (bench/HISTORY.md, "The journal's checksum"). */
static uint32_t frame_crc(const unsigned char *len_bytes, const void *payload, size_t n)
{
    return libdeflate_crc32(libdeflate_crc32(0, len_bytes, 4), payload, n);
}

static void seg_name(char name[SEG_NAME_SIZE], uint64_t start)
{
    snprintf(name, SEG_NAME_SIZE, "%020" PRIu64 ".jnl", start);
}

/* True for "<20 digits>.jnl" naming a position in range; other files are left alone. */
static bool seg_parse(const char *name, uint64_t *start)
{
    if (strlen(name) != SEG_NAME_SIZE - 1 || strcmp(name + SEG_DIGITS, ".jnl") != 0)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < SEG_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        unsigned d = (unsigned)(name[i] - '0');
        if (v > (POS_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *start = v;
    return true;
}

static uint64_t last_start(const struct journal *j) { return j->segs[j->nsegs - 1]; }

static void seg_push(struct journal *j, uint64_t start)
{
    if (j->nsegs == j->segs_cap) {
        size_t cap = j->segs_cap ? 2 * j->segs_cap : 16;
        uint64_t *segs = realloc(j->segs, cap * sizeof(*segs));
        if (!segs)
            abort();
        j->segs = segs;
        j->segs_cap = cap;
    }
    j->segs[j->nsegs++] = start;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A failure to write, sync or create a segment: kept as the journal's last
 * error, and logged when it is the first of a run (the journal goes down);
 * the recovery is logged by journal_sync. */
static int __attribute__((format(printf, 3, 4)))
write_fail(struct journal *j, const char *why, const char *fmt, ...)
{
    snprintf(j->health.error, sizeof(j->health.error), "%s", why);
    if (j->health.down)
        return ERR_IO;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    log_at(LOG_ERROR, "%s: %s", what, why);
    return ERR_IO;
}

static int sync_dir(struct journal *j)
{
    if (fsync(j->dirfd) != 0) {
        j->reseg = true;
        return write_fail(j, strerror(errno), "cannot sync journal directory '%s'", j->dir);
    }
    return ERR_OK;
}

/* A directory just created must reach the disk in its parent too, or a crash
 * could lose it with every record synced inside it. */
static int sync_parent(const char *dir)
{
    struct buf parent = BUF_INIT;
    const char *slash = strrchr(dir, '/');
    if (!slash)
        buf_addc(&parent, '.');
    else if (slash == dir)
        buf_addc(&parent, '/');
    else
        buf_add(&parent, dir, (size_t)(slash - dir));
    int rc = ERR_OK;
    int fd = open(buf_cstr(&parent), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = log_fail(ERR_IO, "cannot sync directory '%s': %s", buf_cstr(&parent), strerror(errno));
    if (fd >= 0)
        close(fd);
    buf_release(&parent);
    return rc;
}

static int take_lock(struct journal *j)
{
    j->lockfd = openat(j->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (j->lockfd < 0)
        return log_fail(ERR_IO, "cannot open journal lock '%s/lock': %s", j->dir, strerror(errno));
    if (flock(j->lockfd, LOCK_EX | LOCK_NB) == 0)
        return ERR_OK;
    if (errno == EWOULDBLOCK)
        return log_fail(ERR_BUSY, "journal '%s' is in use by another process", j->dir);
    return log_fail(ERR_IO, "cannot lock journal '%s/lock': %s", j->dir, strerror(errno));
}

static int list_segments(struct journal *j)
{
    int fd = fcntl(j->dirfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return log_fail(ERR_IO, "cannot list journal directory '%s': %s", j->dir, strerror(e));
    }
    int rc = ERR_OK;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno)
                rc = log_fail(ERR_IO, "cannot list journal directory '%s': %s", j->dir,
                              strerror(errno));
            break;
        }
        uint64_t start;
        if (seg_parse(de->d_name, &start))
            seg_push(j, start);
    }
    closedir(d);
    if (j->nsegs > 1)
        qsort(j->segs, j->nsegs, sizeof(j->segs[0]), cmp_u64);
    return rc;
}

/* Creates the segment starting at 'start' and makes it the one written.
 * When the last segment already starts there (it holds nothing synced: a
 * failure before anything reached it), that file is emptied and used again. */
static int new_segment(struct journal *j, uint64_t start)
{
    char name[SEG_NAME_SIZE];
    seg_name(name, start);
    bool again = j->nsegs > 0 && last_start(j) == start;
    int flags = again ? O_RDWR | O_TRUNC | O_CLOEXEC : O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
    int fd = openat(j->dirfd, name, flags, 0644);
    if (fd < 0)
        return write_fail(j, strerror(errno), "cannot create journal segment '%s/%s'", j->dir,
                          name);
    int rc = again ? (fdatasync(fd) == 0
                          ? ERR_OK
                          : write_fail(j, strerror(errno), "cannot sync journal segment '%s/%s'",
                                       j->dir, name))
                   : sync_dir(j);
    if (rc != ERR_OK) {
        close(fd);
        return rc;
    }
    if (!again)
        seg_push(j, start);
    if (j->fd >= 0)
        close(j->fd);
    j->fd = fd;
    j->reseg = false;
    return ERR_OK;
}

/* Makes at least 'need' bytes available at rbuf[at], short only at r->limit
 * or at the end of the file. Reads as much as fits, so most calls are free. */
static int fill(struct journal *j, struct reader *r, size_t need)
{
    if (r->have - r->at >= need)
        return ERR_OK;
    if (r->at > 0) {
        memmove(j->rbuf, j->rbuf + r->at, r->have - r->at);
        r->have -= r->at;
        r->at = 0;
    }
    while (r->have < need) {
        uint64_t next = r->pos + r->have; /* position of rbuf[have] */
        if (next >= r->limit)
            break;
        size_t want = RBUF_SIZE - r->have;
        if (want > r->limit - next)
            want = (size_t)(r->limit - next);
        ssize_t n = pread(r->fd, j->rbuf + r->have, want, (off_t)(next - r->start));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            char name[SEG_NAME_SIZE];
            seg_name(name, r->start);
            return log_fail(ERR_IO, "cannot read journal segment '%s/%s': %s", j->dir, name,
                            strerror(errno));
        }
        if (n == 0)
            break;
        r->have += (size_t)n;
    }
    return ERR_OK;
}

/* Reads records from r->pos up to r->limit, verifying each, and hands them to
 * cb if there is one. Stops early at the first damaged record with r->bad
 * saying why and r->pos at its start. Returns an error, cb's non-zero, or ERR_OK. */
static int scan(struct journal *j, struct reader *r, journal_cb cb, void *arg)
{
    r->bad = NULL;
    while (r->pos < r->limit) {
        int rc = fill(j, r, HDR_SIZE);
        if (rc != ERR_OK)
            return rc;
        if (r->have - r->at < HDR_SIZE) {
            r->bad = "short header";
            return ERR_OK;
        }
        const unsigned char *hdr = j->rbuf + r->at;
        uint32_t len = get_le32(hdr);
        if (len == 0 || len > REC_MAX) {
            r->bad = "impossible length";
            return ERR_OK;
        }
        rc = fill(j, r, HDR_SIZE + len);
        if (rc != ERR_OK)
            return rc;
        hdr = j->rbuf + r->at; /* fill may have moved it */
        if (r->have - r->at < HDR_SIZE + len) {
            r->bad = "short payload";
            return ERR_OK;
        }
        if (frame_crc(hdr, hdr + HDR_SIZE, len) != get_le32(hdr + 4)) {
            r->bad = "checksum mismatch";
            return ERR_OK;
        }
        r->at += HDR_SIZE + len;
        r->pos += HDR_SIZE + len;
        if (cb) {
            rc = cb(hdr + HDR_SIZE, len, r->pos, arg);
            if (rc != 0)
                return rc;
        }
    }
    return ERR_OK;
}

/* Opens the last segment for appending after its last intact record. */
static int open_last(struct journal *j)
{
    uint64_t start = last_start(j);
    char name[SEG_NAME_SIZE];
    seg_name(name, start);
    j->fd = openat(j->dirfd, name, O_RDWR | O_CLOEXEC);
    if (j->fd < 0)
        return log_fail(ERR_IO, "cannot open journal segment '%s/%s': %s", j->dir, name,
                        strerror(errno));
    struct stat st;
    if (fstat(j->fd, &st) != 0)
        return log_fail(ERR_IO, "cannot stat journal segment '%s/%s': %s", j->dir, name,
                        strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    if (size > POS_MAX - start)
        return log_fail(ERR_IO, "journal segment '%s/%s' runs past the largest position", j->dir,
                        name);

    struct reader r = {.fd = j->fd, .start = start, .limit = start + size, .pos = start};
    int rc = scan(j, &r, NULL, NULL);
    if (rc != ERR_OK)
        return rc;
    if (r.bad) {
        log_at(LOG_WARN,
               "journal segment '%s/%s' has a torn or corrupt tail (%s): dropped %" PRIu64
               " bytes at position %" PRIu64,
               j->dir, name, r.bad, start + size - r.pos, r.pos);
        if (ftruncate(j->fd, (off_t)(r.pos - start)) != 0 || fdatasync(j->fd) != 0)
            return log_fail(ERR_IO, "cannot truncate journal segment '%s/%s': %s", j->dir, name,
                            strerror(errno));
    }
    j->synced = r.pos;
    return ERR_OK;
}

static void journal_free(struct journal *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->lockfd >= 0)
        close(j->lockfd); /* releases the flock */
    if (j->dirfd >= 0)
        close(j->dirfd);
    buf_release(&j->pending);
    free(j->segs);
    free(j->rbuf);
    free(j->dir);
    free(j);
}

int journal_open(const char *dir, uint64_t segment_max_bytes, struct journal **out, uint64_t *end)
{
    *out = NULL;
    struct journal *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    j->dir = xstrdup(dir);
    j->dirfd = j->lockfd = j->fd = -1;
    j->segment_max = segment_max_bytes;
    buf_init(&j->pending);
    j->rbuf = malloc(RBUF_SIZE);
    if (!j->rbuf)
        abort();

    int rc = ERR_IO;
    bool created = mkdir(dir, 0755) == 0;
    if (!created && errno != EEXIST) {
        rc = log_fail(ERR_IO, "cannot create journal directory '%s': %s", dir, strerror(errno));
        goto out;
    }
    if (created) {
        rc = sync_parent(dir);
        if (rc != ERR_OK)
            goto out;
    }
    j->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dirfd < 0) {
        rc = log_fail(ERR_IO, "cannot open journal directory '%s': %s", dir, strerror(errno));
        goto out;
    }
    rc = take_lock(j);
    if (rc != ERR_OK)
        goto out;
    rc = list_segments(j);
    if (rc != ERR_OK)
        goto out;
    rc = j->nsegs ? open_last(j) : new_segment(j, 0);
    if (rc != ERR_OK)
        goto out;

    *end = j->synced;
    *out = j;
    j = NULL;
out:
    if (j)
        journal_free(j);
    return rc;
}

void journal_close(struct journal *j)
{
    if (!j)
        return;
    if (j->pending.len) {
        uint64_t synced;
        journal_sync(j, &synced); /* a failure has been logged; nothing more to do */
    }
    journal_free(j);
}

int journal_append(struct journal *j, const void *rec, size_t n, uint64_t *pos_after)
{
    if (n == 0 || !rec)
        return ERR_INVALID;
    if (n > REC_MAX)
        return ERR_TOOBIG;
    uint64_t after = j->synced + j->pending.len + HDR_SIZE + n;
    if (after > POS_MAX)
        return ERR_TOOBIG;

    unsigned char hdr[HDR_SIZE];
    put_le32(hdr, (uint32_t)n);
    put_le32(hdr + 4, frame_crc(hdr, rec, n));
    buf_reserve(&j->pending, HDR_SIZE + n);
    buf_add(&j->pending, hdr, HDR_SIZE);
    buf_add(&j->pending, rec, n);
    *pos_after = after;
    return ERR_OK;
}

uint64_t journal_end(const struct journal *j) { return j->synced + j->pending.len; }

static int write_all(struct journal *j, const char *p, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t w = pwrite(j->fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            char name[SEG_NAME_SIZE];
            seg_name(name, last_start(j));
            return write_fail(j, w < 0 ? strerror(errno) : "no progress",
                              "cannot write journal segment '%s/%s'", j->dir, name);
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return ERR_OK;
}

static int sync_pending(struct journal *j)
{
    uint64_t used = j->synced - last_start(j);
    if (j->reseg || (used > 0 && used >= j->segment_max)) {
        int rc = new_segment(j, j->synced);
        if (rc != ERR_OK)
            return rc;
    }
    uint64_t off = j->synced - last_start(j);
    int rc = write_all(j, j->pending.p, j->pending.len, off);
    if (rc != ERR_OK) {
        /* Cut off what did get written, so that the retry starts clean; if
         * even that fails, the retry starts a new segment instead (what the
         * old one holds past its synced end then lies past its replay limit,
         * the new one's start). */
        if (ftruncate(j->fd, (off_t)off) != 0)
            j->reseg = true;
        return rc;
    }
    if (fdatasync(j->fd) != 0) {
        /* The kernel may have dropped pages it could not write: the file no
         * longer says what is on disk, so the retry writes a new segment. */
        j->reseg = true;
        char name[SEG_NAME_SIZE];
        seg_name(name, last_start(j));
        return write_fail(j, strerror(errno), "cannot sync journal segment '%s/%s'", j->dir, name);
    }
    j->synced += j->pending.len;
    buf_reset(&j->pending);
    return ERR_OK;
}

/* The bookkeeping of journal_health around one attempt to write. */
static int attempted(struct journal *j, int rc)
{
    if (rc != ERR_OK) {
        if (!j->health.down) {
            j->health.down_since_ms = now_ms();
            j->failures_before = j->health.failures;
        }
        j->health.failures++;
        j->health.down = true;
        return rc;
    }
    if (j->health.down) {
        log_at(LOG_WARN, "journal '%s' writes again, after %" PRIu64 " failed syncs", j->dir,
               j->health.failures - j->failures_before);
        j->health.recoveries++;
    }
    j->health.down = false;
    return ERR_OK;
}

/* Down with nothing to write (the store took the records): whether the disk
 * takes a byte past the synced end, which is then cut off again. A crash in
 * between leaves a torn tail of one byte, which open cuts off. */
static int probe(struct journal *j)
{
    if (j->reseg) {
        int rc = new_segment(j, j->synced);
        if (rc != ERR_OK)
            return rc;
    }
    uint64_t off = j->synced - last_start(j);
    int rc = write_all(j, "", 1, off);
    char name[SEG_NAME_SIZE];
    seg_name(name, last_start(j));
    if (rc == ERR_OK && fdatasync(j->fd) != 0)
        rc = write_fail(j, strerror(errno), "cannot sync journal segment '%s/%s'", j->dir, name);
    if (ftruncate(j->fd, (off_t)off) != 0) {
        j->reseg = true;
        if (rc == ERR_OK)
            rc = write_fail(j, strerror(errno), "cannot truncate journal segment '%s/%s'", j->dir,
                            name);
    }
    return rc;
}

int journal_sync(struct journal *j, uint64_t *synced)
{
    *synced = j->synced;
    if (j->pending.len == 0 && !j->health.down)
        return ERR_OK;
    int rc = attempted(j, j->pending.len ? sync_pending(j) : probe(j));
    *synced = j->synced;
    return rc;
}

int journal_replay(struct journal *j, uint64_t from, journal_cb cb, void *arg)
{
    uint64_t end = j->synced + j->pending.len;
    if (from > end)
        return log_fail(ERR_INVALID,
                        "journal '%s' has no position %" PRIu64 ": it ends at %" PRIu64, j->dir,
                        from, end);
    size_t i = j->nsegs - 1;
    while (i > 0 && j->segs[i] > from)
        i--;
    for (; i < j->nsegs; i++) {
        uint64_t start = j->segs[i];
        uint64_t limit = i + 1 < j->nsegs ? j->segs[i + 1] : j->synced;
        if (from < start)
            from = start; /* before the oldest segment, or in a gap between two */
        if (from >= limit)
            continue;

        char name[SEG_NAME_SIZE];
        seg_name(name, start);
        int fd = openat(j->dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return log_fail(ERR_IO, "cannot open journal segment '%s/%s': %s", j->dir, name,
                            strerror(errno));
        struct reader r = {.fd = fd, .start = start, .limit = limit, .pos = from};
        int rc = scan(j, &r, cb, arg);
        close(fd);
        if (rc != 0)
            return rc;
        if (r.bad)
            log_at(LOG_WARN,
                   "journal segment '%s/%s' is damaged at position %" PRIu64
                   " (%s): replay skips to position %" PRIu64,
                   j->dir, name, r.pos, r.bad, limit);
        from = limit;
    }
    return ERR_OK;
}

/* The first positions of the segment files of 'dir', ascending. */
static int list_starts(const char *dir, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return log_fail(ERR_IO, "cannot read journal directory '%s': %s", dir, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint64_t start;
        if (!seg_parse(e->d_name, &start))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *grown = realloc(*out, cap * sizeof(**out));
            if (!grown)
                abort();
            *out = grown;
        }
        (*out)[(*n)++] = start;
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof(**out), cmp_u64);
    return ERR_OK;
}

int journal_read(const char *dir, uint64_t from, uint64_t upto, journal_cb cb, void *arg)
{
    uint64_t *segs;
    size_t nsegs;
    int rc = list_starts(dir, &segs, &nsegs);
    if (rc != ERR_OK)
        return rc;
    /* scan() needs only a read buffer and a name for messages. */
    struct journal j = {.dir = (char *)dir, .rbuf = malloc(RBUF_SIZE)};
    if (!j.rbuf)
        abort();
    for (size_t i = 0; i < nsegs && from < upto && rc == ERR_OK; i++) {
        uint64_t start = segs[i];
        uint64_t limit = i + 1 < nsegs ? segs[i + 1] : upto;
        if (limit > upto)
            limit = upto;
        if (from < start)
            from = start;
        if (from >= limit)
            continue;
        char name[SEG_NAME_SIZE], path[4096];
        seg_name(name, start);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            rc = log_fail(ERR_IO, "cannot open journal segment '%s': %s", path, strerror(errno));
            break;
        }
        struct reader r = {.fd = fd, .start = start, .limit = limit, .pos = from};
        rc = scan(&j, &r, cb, arg);
        close(fd);
        if (rc == ERR_OK && r.bad && limit < upto)
            log_at(LOG_WARN,
                   "journal segment '%s' is damaged at position %" PRIu64
                   " (%s): reading skips to position %" PRIu64,
                   path, r.pos, r.bad, limit);
        from = limit;
    }
    free(j.rbuf);
    free(segs);
    return rc;
}

int journal_release(struct journal *j, uint64_t upto)
{
    /* Segment i ends where i + 1 starts; the last one is never released. */
    size_t n = 0;
    while (n + 1 < j->nsegs && j->segs[n + 1] <= upto)
        n++;
    int rc = ERR_OK;
    size_t done = 0;
    for (; done < n; done++) {
        char name[SEG_NAME_SIZE];
        seg_name(name, j->segs[done]);
        if (unlinkat(j->dirfd, name, 0) != 0 && errno != ENOENT) {
            rc = log_fail(ERR_IO, "cannot delete journal segment '%s/%s': %s", j->dir, name,
                          strerror(errno));
            break;
        }
    }
    if (done == 0)
        return rc;
    memmove(j->segs, j->segs + done, (j->nsegs - done) * sizeof(j->segs[0]));
    j->nsegs -= done;
    /* A deleted segment that comes back after a crash only costs disk space:
     * replay starts from the reader's position, not from the oldest file. */
    if (fsync(j->dirfd) != 0 && rc == ERR_OK)
        rc = log_fail(ERR_IO, "cannot sync journal directory '%s': %s", j->dir, strerror(errno));
    return rc;
}

int journal_rotate(struct journal *j)
{
    if (j->reseg || j->synced == last_start(j))
        return ERR_OK; /* the next sync starts one anyway, or there is nothing to leave */
    int rc = new_segment(j, j->synced);
    if (rc != ERR_OK)
        j->reseg = true; /* tried again by the next sync */
    return attempted(j, rc);
}

int journal_skip_to(struct journal *j, uint64_t pos)
{
    if (pos <= j->synced)
        return ERR_OK;
    if (pos > POS_MAX)
        return ERR_INVALID;
    /* Not written, and not to be: the next sync starts a new segment at
     * 'pos', so that no position is ever written twice. */
    uint64_t drop = pos - j->synced;
    if (drop >= j->pending.len) {
        buf_reset(&j->pending);
    } else {
        memmove(j->pending.p, j->pending.p + drop, j->pending.len - (size_t)drop);
        j->pending.len -= (size_t)drop;
    }
    j->synced = pos;
    j->reseg = true;
    return ERR_OK;
}

void journal_health(const struct journal *j, struct journal_health *out)
{
    *out = j->health;
    out->unsynced_bytes = j->pending.len;
}
