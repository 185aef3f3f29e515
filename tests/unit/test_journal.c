/* test_journal.c - the journal.h contract on real files under /tmp: round
 * trips across many rotations, the format on disk, positions that carry on
 * across reopenings, replay from any record boundary, every kind of torn or
 * corrupt tail (truncated, garbage, flipped bits), damage in an older segment,
 * release, the directory lock, record size limits and a failing write.
 *
 * Record i of every test is the same: rec_size(i) bytes of rec_fill(i), so its
 * position pos_tab[i + 1] is known in advance and a replay can check both. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "clicks/journal.h"
#include "base/log.h"
#include "test.h"

#include "base/banned.h"

#define NREC 600 /* records most tests write */
#define NALL 700 /* records any test writes, the extra ones after a reopen */
#define SEGS_MAX 1024
#define SMALL_SEG 4096 /* a rotation every sync or two */

static uint64_t pos_tab[NALL + 1];    /* position before record i, i.e. after record i - 1 */
static unsigned char scratch[65536];  /* what is appended */
static unsigned char expected[65536]; /* what a replayed record is compared with */

/* The extremes, either side of the header size, and sizes that straddle reads. */
static size_t rec_size(unsigned i)
{
    static const size_t sizes[] = {1, 17, 8, 300, 65535, 2, 1000, 4093, 9, 40000, 64, 513, 7};
    return sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void rec_fill(unsigned i, unsigned char *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        p[k] = (unsigned char)(i * 151u + k * 31u + (k >> 8));
}

static void pos_init(void)
{
    for (unsigned i = 0; i < NALL; i++)
        pos_tab[i + 1] = pos_tab[i] + 8 + rec_size(i);
}

/* Index i with pos_tab[i] == pos, or NALL + 1 when pos is not a record boundary. */
static unsigned pos_index(uint64_t pos)
{
    for (unsigned i = 0; i <= NALL; i++)
        if (pos_tab[i] == pos)
            return i;
    return NALL + 1;
}

/* Removing what a test made */

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        for (;;) {
            struct dirent *de = readdir(d);
            if (!de)
                break;
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            struct buf p = BUF_INIT;
            buf_printf(&p, "%s/%s", path, de->d_name);
            struct stat st;
            if (lstat(buf_cstr(&p), &st) == 0 && S_ISDIR(st.st_mode))
                rm_tree(buf_cstr(&p));
            else
                unlink(buf_cstr(&p));
            buf_release(&p);
        }
        closedir(d);
    }
    CHECK(rmdir(path) == 0);
}

/* A journal in a fresh temporary directory */

struct fx {
    char tmp[32]; /* from mkdtemp; fx_done removes it */
    char dir[48]; /* tmp/j: journal_open has to create it */
    struct journal *j;
    uint64_t end; /* from the last fx_open */
};

static bool fx_init(struct fx *f)
{
    pos_init();
    memset(f, 0, sizeof(*f));
    snprintf(f->tmp, sizeof(f->tmp), "/tmp/shortd-journal-XXXXXX");
    if (!CHECK(mkdtemp(f->tmp) != NULL))
        return false;
    snprintf(f->dir, sizeof(f->dir), "%s/j", f->tmp);
    return true;
}

static int fx_open(struct fx *f, uint64_t segment_max)
{
    return journal_open(f->dir, segment_max, &f->j, &f->end);
}

static void fx_close(struct fx *f)
{
    journal_close(f->j);
    f->j = NULL;
}

static void fx_done(struct fx *f)
{
    fx_close(f);
    rm_tree(f->tmp);
}

static void seg_path(const struct fx *f, uint64_t start, char *out, size_t n)
{
    snprintf(out, n, "%s/%020" PRIu64 ".jnl", f->dir, start);
}

/* The segment files on disk, by starting position */

struct segs {
    size_t n;
    uint64_t start[SEGS_MAX];
    uint64_t size[SEGS_MAX];
};

static void list_segs(const struct fx *f, struct segs *s)
{
    s->n = 0;
    DIR *d = opendir(f->dir);
    if (!CHECK(d != NULL))
        return;
    for (;;) {
        struct dirent *de = readdir(d);
        if (!de)
            break;
        size_t len = strlen(de->d_name);
        if (len != 24 || strcmp(de->d_name + 20, ".jnl") != 0)
            continue;
        if (!CHECK(s->n < SEGS_MAX))
            break;
        char *endp;
        uint64_t start = strtoull(de->d_name, &endp, 10);
        if (endp != de->d_name + 20)
            continue;
        char path[96];
        seg_path(f, start, path, sizeof(path));
        struct stat st;
        CHECK(stat(path, &st) == 0);
        size_t i = s->n++;
        while (i > 0 && s->start[i - 1] > start) {
            s->start[i] = s->start[i - 1];
            s->size[i] = s->size[i - 1];
            i--;
        }
        s->start[i] = start;
        s->size[i] = (uint64_t)st.st_size;
    }
    closedir(d);
}

/* The files tile the positions from 'first' to 'end' without gaps, each starts
 * at a record boundary, and each but the last reached segment_max. */
static void check_segs(const struct fx *f, uint64_t segment_max, uint64_t first, uint64_t end)
{
    struct segs s;
    list_segs(f, &s);
    if (!CHECK(s.n > 0))
        return;
    CHECK_EQ_INT(s.start[0], first);
    for (size_t i = 0; i < s.n; i++) {
        bool ok = CHECK(pos_index(s.start[i]) <= NALL);
        if (i + 1 < s.n) {
            ok &= CHECK_EQ_INT(s.start[i] + s.size[i], s.start[i + 1]);
            ok &= CHECK(s.size[i] >= segment_max);
        }
        if (!ok)
            test_note("segment %zu of %zu starts at %" PRIu64, i, s.n, s.start[i]);
    }
    CHECK_EQ_INT(s.start[s.n - 1] + s.size[s.n - 1], end);
}

/* Catching log lines: stderr goes to a temporary file in between */

struct capture {
    FILE *f;
    int saved_fd;
    enum log_level saved_level;
};

static void capture_begin(struct capture *c)
{
    fflush(stderr);
    c->f = tmpfile();
    c->saved_fd = dup(STDERR_FILENO);
    c->saved_level = log_level;
    log_level = LOG_INFO;
    if (c->f && c->saved_fd >= 0)
        dup2(fileno(c->f), STDERR_FILENO);
}

static void capture_end(struct capture *c, struct buf *out)
{
    buf_reset(out);
    log_level = c->saved_level;
    if (!CHECK(c->f != NULL && c->saved_fd >= 0))
        return;
    fflush(stderr);
    dup2(c->saved_fd, STDERR_FILENO);
    close(c->saved_fd);
    rewind(c->f);
    char chunk[512];
    size_t n;
    do {
        n = fread(chunk, 1, sizeof(chunk), c->f);
        buf_add(out, chunk, n);
    } while (n == sizeof(chunk));
    fclose(c->f);
}

static int count_lines(const struct buf *log, const char *needle)
{
    int count = 0;
    const char *p = buf_cstr(log);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        struct buf line = BUF_INIT;
        buf_add(&line, p, len);
        if (strstr(buf_cstr(&line), needle))
            count++;
        buf_release(&line);
        p += len + (nl ? 1 : 0);
    }
    return count;
}

/* Writing and replaying the standard records */

/* Appends records first..end-1, checking each position, and syncs after every
 * 'every' of them and at the end; every == 0 never syncs. */
static void append_range(struct journal *j, unsigned first, unsigned end, unsigned every)
{
    for (unsigned i = first; i < end; i++) {
        size_t n = rec_size(i);
        rec_fill(i, scratch, n);
        uint64_t after = 0;
        if (!CHECK_EQ_INT(journal_append(j, scratch, n, &after), ERR_OK) ||
            !CHECK_EQ_INT(after, pos_tab[i + 1])) {
            test_note("record %u", i);
            return;
        }
        if (every && ((i + 1 - first) % every == 0 || i + 1 == end)) {
            uint64_t synced = 0;
            CHECK_EQ_INT(journal_sync(j, &synced), ERR_OK);
            CHECK_EQ_INT(synced, after);
        }
    }
}

struct expect {
    unsigned next; /* index of the record the next call should carry */
    unsigned calls;
    unsigned wrong; /* records not matching the one that ends at their position */
    unsigned jumps; /* records that did not follow the one before */
    int stop_after; /* return 42 after this many calls; 0: never */
};

static int expect_cb(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    struct expect *e = arg;
    unsigned i = e->next;
    if (i >= NALL || pos_tab[i + 1] != pos_after) {
        e->jumps++;
        i = pos_index(pos_after) - 1; /* NALL when pos_after is no boundary */
    }
    if (i >= NALL || n != rec_size(i)) {
        e->wrong++;
    } else {
        rec_fill(i, expected, n);
        if (memcmp(rec, expected, n) != 0)
            e->wrong++;
    }
    e->next = i + 1;
    e->calls++;
    return e->stop_after && (int)e->calls >= e->stop_after ? 42 : 0;
}

/* Replays from 'from' and checks that exactly records first..end-1 come back. */
static void check_replay(struct journal *j, uint64_t from, unsigned first, unsigned end)
{
    struct expect e = {.next = first};
    struct capture c;
    struct buf log = BUF_INIT;
    capture_begin(&c);
    int rc = journal_replay(j, from, expect_cb, &e);
    capture_end(&c, &log);
    bool ok = CHECK_EQ_INT(rc, ERR_OK);
    ok &= CHECK_EQ_STR(buf_cstr(&log), ""); /* an intact journal has nothing to say */
    buf_release(&log);
    ok &= CHECK_EQ_INT(e.calls, end - first);
    ok &= CHECK_EQ_INT(e.next, end);
    ok &= CHECK_EQ_INT(e.wrong, 0);
    ok &= CHECK_EQ_INT(e.jumps, 0);
    if (!ok)
        test_note("replay from %" PRIu64 ", expecting records %u..%u", from, first, end - 1);
}

/* Damaging files */

static void file_truncate(const char *path, uint64_t size)
{
    CHECK(truncate(path, (off_t)size) == 0);
}

static void file_append(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (!CHECK(fd >= 0))
        return;
    CHECK(write(fd, p, n) == (ssize_t)n);
    close(fd);
}

static void file_flip(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    if (!CHECK(fd >= 0))
        return;
    unsigned char c = 0;
    CHECK(pread(fd, &c, 1, (off_t)off) == 1);
    c ^= 0x01;
    CHECK(pwrite(fd, &c, 1, (off_t)off) == 1);
    close(fd);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    if (!CHECK(stat(path, &st) == 0))
        return UINT64_MAX;
    return (uint64_t)st.st_size;
}

/* The tests */

void test_journal_round_trip(void)
{
    /* Small segments rotate at nearly every sync; big ones make replay
     * refill its read buffer in the middle of records. */
    static const uint64_t maxes[] = {SMALL_SEG, 1u << 20};
    for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
        struct fx f;
        if (!fx_init(&f))
            return;
        CHECK_EQ_INT(fx_open(&f, maxes[m]), ERR_OK);
        CHECK_EQ_INT(f.end, 0);
        append_range(f.j, 0, NREC, 5);
        check_replay(f.j, 0, 0, NREC);
        struct segs s;
        list_segs(&f, &s);
        if (!CHECK(s.n >= 4))
            test_note("segment_max %" PRIu64 ": only %zu segments", maxes[m], s.n);
        check_segs(&f, maxes[m], 0, pos_tab[NREC]);
        fx_done(&f);
    }
}

static int count_cb(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    (void)rec;
    (void)n;
    (void)pos_after;
    (*(int *)arg)++;
    return 0;
}

void test_journal_rotation(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 100), ERR_OK);
    memset(scratch, 'r', sizeof(scratch));

    /* The file is only checked when there is something to write into it. */
    static const struct {
        size_t n;           /* appended, then synced */
        uint64_t synced;    /* what the sync reports */
        size_t nsegs;       /* files afterwards */
        uint64_t last;      /* where the last one starts */
        uint64_t last_size; /* and its size */
    } steps[] = {
        {150, 158, 1, 0, 158},   /* one record can overfill a segment */
        {0, 158, 1, 0, 158},     /* a sync with nothing to write rotates nothing */
        {10, 176, 2, 158, 18},   /* the first sync after it does */
        {10, 194, 2, 158, 36},   /* still short of 100 */
        {100, 302, 2, 158, 144}, /* 36 < 100 before this write */
        {1, 311, 3, 302, 9},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        uint64_t pos = 0, synced = 0;
        if (steps[i].n)
            CHECK_EQ_INT(journal_append(f.j, scratch, steps[i].n, &pos), ERR_OK);
        CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
        struct segs s;
        list_segs(&f, &s);
        bool ok = CHECK_EQ_INT(synced, steps[i].synced);
        ok &= CHECK_EQ_INT(s.n, steps[i].nsegs);
        if (s.n > 0) {
            ok &= CHECK_EQ_INT(s.start[s.n - 1], steps[i].last);
            ok &= CHECK_EQ_INT(s.size[s.n - 1], steps[i].last_size);
        }
        if (!ok)
            test_note("step %zu", i);
    }
    int calls = 0;
    CHECK_EQ_INT(journal_replay(f.j, 0, count_cb, &calls), ERR_OK);
    CHECK_EQ_INT(calls, 5);
    fx_done(&f);

    /* Exactly full counts as full. */
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 100), ERR_OK);
    uint64_t pos = 0, synced = 0;
    CHECK_EQ_INT(journal_append(f.j, scratch, 92, &pos), ERR_OK);
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    CHECK_EQ_INT(journal_append(f.j, scratch, 1, &pos), ERR_OK);
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    struct segs s;
    list_segs(&f, &s);
    if (CHECK_EQ_INT(s.n, 2))
        CHECK_EQ_INT(s.start[1], 100);
    fx_done(&f);

    /* segment_max 0: every sync that writes starts a file, but never an empty one. */
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 0), ERR_OK);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(journal_append(f.j, scratch, 2, &pos), ERR_OK);
        CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    }
    list_segs(&f, &s);
    if (CHECK_EQ_INT(s.n, 3)) {
        CHECK_EQ_INT(s.start[1], 10);
        CHECK_EQ_INT(s.start[2], 20);
    }
    fx_done(&f);
}

void test_journal_format(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    uint64_t pos = 0, synced = 0;
    CHECK_EQ_INT(journal_append(f.j, "hello", 5, &pos), ERR_OK);
    CHECK_EQ_INT(pos, 13);
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    CHECK_EQ_INT(synced, 13);

    char path[96];
    seg_path(&f, 0, path, sizeof(path));
    CHECK(strstr(path, "/j/00000000000000000000.jnl") != NULL);
    unsigned char got[32];
    FILE *fp = fopen(path, "rb");
    if (!CHECK(fp != NULL)) {
        fx_done(&f);
        return;
    }
    size_t n = fread(got, 1, sizeof(got), fp);
    fclose(fp);
    /* length 5, then zlib's crc32 of "\x05\0\0\0hello" (0x5cac007a), both little-endian */
    static const unsigned char want[] = {5,    0,   0,   0,   0x7a, 0x00, 0xac,
                                         0x5c, 'h', 'e', 'l', 'l',  'o'};
    if (CHECK_EQ_INT(n, sizeof(want)))
        CHECK(memcmp(got, want, sizeof(want)) == 0);

    struct buf lock = BUF_INIT;
    buf_printf(&lock, "%s/lock", f.dir);
    CHECK(access(buf_cstr(&lock), F_OK) == 0);
    buf_release(&lock);
    fx_done(&f);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The frame's checksum is zlib's CRC-32, whatever computes it: journals
 * written by a build that used zlib's crc32 must read in this one. Records of
 * every length around the sizes where a CRC implementation changes method
 * (its vector widths and tails), each checked against zlib's own. */
void test_journal_crc_is_zlibs(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    unsigned char rec[600];
    for (size_t i = 0; i < sizeof(rec); i++)
        rec[i] = (unsigned char)(i * 167 + 13);
    uint64_t pos = 0, synced = 0;
    for (size_t n = 1; n <= sizeof(rec); n++)
        CHECK_EQ_INT(journal_append(f.j, rec, n, &pos), ERR_OK);
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);

    char path[96];
    seg_path(&f, 0, path, sizeof(path));
    struct buf all = BUF_INIT;
    FILE *fp = fopen(path, "rb");
    if (CHECK(fp != NULL)) {
        char chunk[4096];
        size_t got;
        while ((got = fread(chunk, 1, sizeof(chunk), fp)) > 0)
            buf_add(&all, chunk, got);
        fclose(fp);
    }
    const unsigned char *p = (const unsigned char *)all.p;
    size_t at = 0, bad = 0, seen = 0;
    for (size_t n = 1; n <= sizeof(rec) && at + 8 + n <= all.len; n++, seen++) {
        uint32_t len = le32(p + at), crc = le32(p + at + 4);
        uLong want = crc32(crc32(0L, p + at, 4), p + at + 8, (uInt)n);
        bad += len != n || crc != (uint32_t)want || memcmp(p + at + 8, rec, n) != 0;
        at += 8 + n;
    }
    CHECK_EQ_INT(seen, sizeof(rec));
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(at, all.len);
    buf_release(&all);
    fx_done(&f);
}

void test_journal_reopen(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    append_range(f.j, 0, 200, 7);
    append_range(f.j, 200, 210, 0); /* buffered only: close syncs them */
    fx_close(&f);

    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[210]);
    check_replay(f.j, 0, 0, 210);
    struct segs before;
    list_segs(&f, &before);
    fx_close(&f);

    /* Opening and closing with nothing in between changes no file. */
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[210]);
    fx_close(&f);
    struct segs after;
    list_segs(&f, &after);
    if (CHECK_EQ_INT(after.n, before.n))
        CHECK(memcmp(after.start, before.start, before.n * sizeof(before.start[0])) == 0 &&
              memcmp(after.size, before.size, before.n * sizeof(before.size[0])) == 0);

    /* Appending resumes after the end, across further rotations and reopenings. */
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    append_range(f.j, 210, 400, 9);
    fx_close(&f);
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK); /* another segment_max is fine */
    CHECK_EQ_INT(f.end, pos_tab[400]);
    append_range(f.j, 400, NALL, 50);
    fx_close(&f);
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[NALL]);
    check_replay(f.j, 0, 0, NALL);
    check_segs(&f, SMALL_SEG, 0, pos_tab[NALL]);
    fx_done(&f);
}

void test_journal_replay_from_middle(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    append_range(f.j, 0, NREC, 5);

    static const unsigned from[] = {0, 1, 2, 3, 4, 5, 57, 299, NREC - 1, NREC};
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++)
        check_replay(f.j, pos_tab[from[i]], from[i], NREC);

    /* From the first byte of a segment, and of the last one. */
    struct segs s;
    list_segs(&f, &s);
    if (CHECK(s.n >= 4)) {
        unsigned k = pos_index(s.start[2]);
        check_replay(f.j, s.start[2], k, NREC);
        k = pos_index(s.start[s.n - 1]);
        check_replay(f.j, s.start[s.n - 1], k, NREC);
    }

    /* A non-zero return stops the replay and comes back as it is. */
    struct expect e = {.next = 10, .stop_after = 5};
    CHECK_EQ_INT(journal_replay(f.j, pos_tab[10], expect_cb, &e), 42);
    CHECK_EQ_INT(e.calls, 5);
    CHECK_EQ_INT(e.next, 15);
    CHECK_EQ_INT(e.wrong, 0);

    /* Only what is synced is replayed; a buffered position is not an error. */
    append_range(f.j, NREC, NREC + 3, 0);
    check_replay(f.j, pos_tab[NREC - 2], NREC - 2, NREC);
    check_replay(f.j, pos_tab[NREC + 2], NREC + 2, NREC + 2);
    uint64_t synced = 0;
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    check_replay(f.j, pos_tab[NREC - 2], NREC - 2, NREC + 3);

    /* A position past the end was never handed out. */
    struct capture c;
    struct buf log = BUF_INIT;
    e = (struct expect){.next = 0};
    capture_begin(&c);
    int rc = journal_replay(f.j, pos_tab[NREC + 3] + 1, expect_cb, &e);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_INVALID);
    CHECK_EQ_INT(e.calls, 0);
    CHECK_EQ_INT(count_lines(&log, "has no position"), 1);
    buf_release(&log);
    fx_done(&f);
}

/* Sums every record and position a replay hands out. */
static int hash_cb(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    uint64_t *h = arg;
    const unsigned char *p = rec;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ p[i]) * 1099511628211u;
    *h = (*h ^ pos_after) * 1099511628211u;
    return 0;
}

void test_journal_replay_twice(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    append_range(f.j, 0, NREC, 5);
    struct segs before, after;
    list_segs(&f, &before);

    uint64_t h1 = 14695981039346656037u, h2 = h1, h0 = h1;
    CHECK_EQ_INT(journal_replay(f.j, pos_tab[123], hash_cb, &h1), ERR_OK);
    check_replay(f.j, pos_tab[123], 123, NREC);
    CHECK_EQ_INT(journal_replay(f.j, pos_tab[123], hash_cb, &h2), ERR_OK);
    check_replay(f.j, pos_tab[123], 123, NREC);
    CHECK(h1 != h0);
    CHECK(h1 == h2);

    /* Replaying wrote nothing, moved nothing. */
    list_segs(&f, &after);
    if (CHECK_EQ_INT(after.n, before.n))
        CHECK(memcmp(after.start, before.start, before.n * sizeof(before.start[0])) == 0 &&
              memcmp(after.size, before.size, before.n * sizeof(before.size[0])) == 0);
    uint64_t synced = 0;
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    CHECK_EQ_INT(synced, pos_tab[NREC]);
    uint64_t pos = 0;
    CHECK_EQ_INT(journal_append(f.j, "x", 1, &pos), ERR_OK);
    CHECK_EQ_INT(pos, pos_tab[NREC] + 9);
    fx_done(&f);
}

/* The last record written by the torn-tail cases is number TORN_N - 1, 300 bytes. */
#define TORN_N 43
#define TORN_LAST_FRAME 308

void test_journal_torn_tail(void)
{
    static const struct {
        const char *what;
        long keep;           /* >= 0: cut the last record's frame to this many bytes */
        long flip;           /* >= 0: flip a bit at this offset in the last record's frame */
        const char *garbage; /* appended to the last segment, or... */
        size_t garbage_n;
        bool new_segment;   /* ...put in a segment file of its own after it */
        const char *reason; /* in the warning; NULL: nothing to drop */
    } cases[] = {
        {"cut in the payload", 305, -1, NULL, 0, false, "short payload"},
        {"cut in the header", 5, -1, NULL, 0, false, "short header"},
        {"cut at a record boundary", 0, -1, NULL, 0, false, NULL},
        {"garbage", -1, -1, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 10, false,
         "impossible length"},
        {"a few bytes", -1, -1, "\x04\x00\x00", 3, false, "short header"},
        {"zeros", -1, -1, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16, false, "impossible length"},
        {"a header with the wrong checksum", -1, -1, "\x04\0\0\0\0\0\0\0abcd", 12, false,
         "checksum mismatch"},
        {"a length past the end of the file", -1, -1, "\x64\0\0\0\0\0\0\0abcdefghij", 18, false,
         "short payload"},
        {"a flipped payload bit", -1, 108, NULL, 0, false, "checksum mismatch"},
        {"a flipped length bit", -1, 0, NULL, 0, false, "short payload"},
        {"a flipped checksum bit", -1, 5, NULL, 0, false, "checksum mismatch"},
        {"garbage in a new segment", -1, -1, "\xab\xab\xab\xab\xab\xab\xab", 7, true,
         "short header"},
    };
    CHECK_EQ_INT(rec_size(TORN_N - 1), TORN_LAST_FRAME - 8);

    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        struct fx f;
        if (!fx_init(&f))
            return;
        bool ok = CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
        append_range(f.j, 0, TORN_N, 3);
        fx_close(&f);

        struct segs s;
        list_segs(&f, &s);
        if (!CHECK(s.n > 1)) {
            fx_done(&f);
            continue;
        }
        uint64_t last = s.start[s.n - 1];
        char path[96];
        seg_path(&f, last, path, sizeof(path));
        unsigned lost = 0;
        uint64_t dropped = cases[ci].garbage_n;
        if (cases[ci].keep >= 0) {
            file_truncate(path, pos_tab[TORN_N - 1] - last + (uint64_t)cases[ci].keep);
            lost = 1;
            dropped = (uint64_t)cases[ci].keep;
        } else if (cases[ci].flip >= 0) {
            file_flip(path, pos_tab[TORN_N - 1] - last + (uint64_t)cases[ci].flip);
            lost = 1;
            dropped = TORN_LAST_FRAME;
        } else if (cases[ci].new_segment) {
            last = pos_tab[TORN_N];
            seg_path(&f, last, path, sizeof(path));
            file_append(path, cases[ci].garbage, cases[ci].garbage_n);
        } else {
            file_append(path, cases[ci].garbage, cases[ci].garbage_n);
        }
        unsigned intact = TORN_N - lost;
        uint64_t end = pos_tab[intact];

        struct capture c;
        struct buf log = BUF_INIT;
        capture_begin(&c);
        int rc = fx_open(&f, SMALL_SEG);
        capture_end(&c, &log);
        ok &= CHECK_EQ_INT(rc, ERR_OK);
        ok &= CHECK_EQ_INT(f.end, end);
        ok &= CHECK_EQ_INT(count_lines(&log, " warn "), cases[ci].reason ? 1 : 0);
        ok &= CHECK_EQ_INT(count_lines(&log, " error "), 0);
        if (cases[ci].reason) {
            struct buf want = BUF_INIT;
            buf_printf(&want, "(%s): dropped %" PRIu64 " bytes at position %" PRIu64,
                       cases[ci].reason, dropped, end);
            ok &= CHECK_EQ_INT(count_lines(&log, buf_cstr(&want)), 1);
            ok &= CHECK_EQ_INT(count_lines(&log, path), 1);
            buf_release(&want);
        }
        ok &= CHECK_EQ_INT(file_size(path), end - last);
        if (!ok)
            test_note("case '%s', log: %s", cases[ci].what, buf_cstr(&log));
        if (!f.j) {
            buf_release(&log);
            fx_done(&f);
            continue;
        }

        /* The intact prefix replays, and the journal carries on after it. */
        check_replay(f.j, 0, 0, intact);
        append_range(f.j, intact, TORN_N + 20, 4);
        check_replay(f.j, 0, 0, TORN_N + 20);
        fx_close(&f);
        capture_begin(&c);
        rc = fx_open(&f, SMALL_SEG);
        capture_end(&c, &log);
        ok = CHECK_EQ_INT(rc, ERR_OK);
        ok &= CHECK_EQ_INT(f.end, pos_tab[TORN_N + 20]);
        ok &= CHECK_EQ_INT(count_lines(&log, " warn "), 0);
        if (!ok)
            test_note("case '%s' reopened, log: %s", cases[ci].what, buf_cstr(&log));
        check_replay(f.j, pos_tab[intact], intact, TORN_N + 20);
        /* A garbage segment was started before the one behind it was full. */
        check_segs(&f, cases[ci].new_segment ? 0 : SMALL_SEG, 0, pos_tab[TORN_N + 20]);
        buf_release(&log);
        fx_done(&f);
    }
}

void test_journal_damaged_older_segment(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    append_range(f.j, 0, NREC, 5);
    fx_close(&f);
    struct segs s;
    list_segs(&f, &s);
    if (!CHECK(s.n >= 4)) {
        fx_done(&f);
        return;
    }
    unsigned k1 = pos_index(s.start[1]), k2 = pos_index(s.start[2]);
    if (!CHECK(k1 + 2 <= k2 && k2 <= NREC)) { /* two records or more in segment 1 */
        fx_done(&f);
        return;
    }
    char path[96];
    seg_path(&f, s.start[1], path, sizeof(path));
    file_flip(path, 8); /* the first payload byte of its first record */

    /* Open verifies only the last segment, which is intact. */
    struct capture c;
    struct buf log = BUF_INIT;
    capture_begin(&c);
    int rc = fx_open(&f, SMALL_SEG);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[NREC]);
    CHECK_EQ_INT(count_lines(&log, " warn "), 0);
    if (!f.j) {
        buf_release(&log);
        fx_done(&f);
        return;
    }

    /* Replay reports the damage once and goes on with the next segment. */
    struct expect e = {.next = 0};
    capture_begin(&c);
    rc = journal_replay(f.j, 0, expect_cb, &e);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(e.calls, k1 + (NREC - k2));
    CHECK_EQ_INT(e.jumps, 1);
    CHECK_EQ_INT(e.wrong, 0);
    CHECK_EQ_INT(e.next, NREC);
    CHECK_EQ_INT(count_lines(&log, " warn "), 1);
    struct buf want = BUF_INIT;
    buf_printf(&want,
               "damaged at position %" PRIu64 " (checksum mismatch): replay skips to "
               "position %" PRIu64,
               s.start[1], s.start[2]);
    if (!CHECK_EQ_INT(count_lines(&log, buf_cstr(&want)), 1))
        test_note("log: %s", buf_cstr(&log));
    buf_release(&want);

    /* The records behind the damaged one are still there for whoever starts after it. */
    check_replay(f.j, pos_tab[k1 + 1], k1 + 1, NREC);
    check_replay(f.j, s.start[2], k2, NREC);
    buf_release(&log);
    fx_done(&f);
}

void test_journal_release(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    append_range(f.j, 0, NREC, 5);
    struct segs s, now;
    list_segs(&f, &s);
    if (!CHECK(s.n >= 6)) {
        fx_done(&f);
        return;
    }
    unsigned k3 = pos_index(s.start[3]), k = k3 + 2;
    if (!CHECK(pos_tab[k] < s.start[4])) { /* a boundary inside segment 3 */
        fx_done(&f);
        return;
    }

    /* Before anything is folded, nothing goes. */
    CHECK_EQ_INT(journal_release(f.j, 0), ERR_OK);
    CHECK_EQ_INT(journal_release(f.j, s.start[1] - 1), ERR_OK);
    list_segs(&f, &now);
    CHECK_EQ_INT(now.n, s.n);

    /* Inside segment 3: 0, 1 and 2 lie wholly before it, 3 does not. */
    CHECK_EQ_INT(journal_release(f.j, pos_tab[k]), ERR_OK);
    list_segs(&f, &now);
    if (CHECK_EQ_INT(now.n, s.n - 3))
        CHECK(memcmp(now.start, s.start + 3, now.n * sizeof(now.start[0])) == 0);
    check_replay(f.j, pos_tab[k], k, NREC);
    check_replay(f.j, 0, k3, NREC); /* before the oldest: from the oldest */
    check_replay(f.j, pos_tab[5], k3, NREC);

    /* Exactly at a segment's first byte: the one before it lies wholly before. */
    CHECK_EQ_INT(journal_release(f.j, s.start[4]), ERR_OK);
    list_segs(&f, &now);
    if (CHECK_EQ_INT(now.n, s.n - 4))
        CHECK_EQ_INT(now.start[0], s.start[4]);
    CHECK_EQ_INT(journal_release(f.j, pos_tab[k]), ERR_OK); /* going back is a no-op */
    list_segs(&f, &now);
    CHECK_EQ_INT(now.n, s.n - 4);

    /* Everything folded: the segment being written stays, and with it the position. */
    CHECK_EQ_INT(journal_release(f.j, pos_tab[NREC]), ERR_OK);
    CHECK_EQ_INT(journal_release(f.j, UINT64_MAX), ERR_OK);
    list_segs(&f, &now);
    if (CHECK_EQ_INT(now.n, 1))
        CHECK_EQ_INT(now.start[0], s.start[s.n - 1]);
    unsigned klast = pos_index(s.start[s.n - 1]);
    check_replay(f.j, 0, klast, NREC);
    append_range(f.j, NREC, NREC + 50, 5);
    fx_close(&f);

    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[NREC + 50]);
    check_replay(f.j, 0, klast, NREC + 50);
    check_segs(&f, SMALL_SEG, s.start[s.n - 1], pos_tab[NREC + 50]);
    fx_done(&f);
}

void test_journal_busy(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);

    struct journal *j2 = (struct journal *)&f; /* anything but NULL */
    uint64_t end2 = 0;
    struct capture c;
    struct buf log = BUF_INIT;
    capture_begin(&c);
    int rc = journal_open(f.dir, SMALL_SEG, &j2, &end2);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_BUSY);
    CHECK(j2 == NULL);
    struct buf want = BUF_INIT;
    buf_printf(&want, "journal '%s' is in use by another process", f.dir);
    if (!CHECK_EQ_INT(count_lines(&log, buf_cstr(&want)), 1))
        test_note("log: %s", buf_cstr(&log));
    buf_release(&want);
    buf_release(&log);

    /* And from another process. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO);
        struct journal *j3 = NULL;
        uint64_t end3;
        _exit(journal_open(f.dir, SMALL_SEG, &j3, &end3) == ERR_BUSY && !j3 ? 0 : 1);
    }
    int status = -1;
    if (CHECK(pid > 0) && CHECK(waitpid(pid, &status, 0) == pid))
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* The first one is unaffected; after it closes, the directory is free. */
    append_range(f.j, 0, 20, 3);
    fx_close(&f);
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[20]);
    fx_done(&f);
}

static int sizes_cb(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    size_t *seen = arg;
    const unsigned char *p = rec;
    /* seen[0]: calls; then the size of each record; 0 when its bytes are wrong */
    rec_fill((unsigned)n, expected, n);
    seen[++seen[0]] = memcmp(p, expected, n) == 0 ? n : 0;
    (void)pos_after;
    return seen[0] == 3 ? 1 : 0;
}

void test_journal_record_limits(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    uint64_t pos = 77;
    rec_fill(65535, scratch, 65535);
    CHECK_EQ_INT(journal_append(f.j, scratch, 0, &pos), ERR_INVALID);
    CHECK_EQ_INT(journal_append(f.j, NULL, 5, &pos), ERR_INVALID);
    CHECK_EQ_INT(journal_append(f.j, scratch, 65536, &pos), ERR_TOOBIG);
    CHECK_EQ_INT(journal_append(f.j, scratch, SIZE_MAX, &pos), ERR_TOOBIG);
    CHECK_EQ_INT(pos, 77); /* untouched, and nothing was added */

    CHECK_EQ_INT(journal_append(f.j, scratch, 65535, &pos), ERR_OK);
    CHECK_EQ_INT(pos, 65543);
    rec_fill(1, scratch, 1);
    CHECK_EQ_INT(journal_append(f.j, scratch, 1, &pos), ERR_OK);
    CHECK_EQ_INT(pos, 65552);
    uint64_t synced = 0;
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    CHECK_EQ_INT(synced, 65552);
    fx_close(&f);

    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, 65552);
    size_t seen[4] = {0};
    CHECK_EQ_INT(journal_replay(f.j, 0, sizes_cb, seen), ERR_OK);
    CHECK_EQ_INT(seen[0], 2);
    CHECK_EQ_INT(seen[1], 65535);
    CHECK_EQ_INT(seen[2], 1);
    fx_done(&f);
}

void test_journal_open_errors(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    journal_close(NULL);

    struct buf path = BUF_INIT, log = BUF_INIT;
    struct capture c;
    struct journal *j = (struct journal *)&f;
    uint64_t end = 0;

    /* A file where the directory should be. */
    buf_printf(&path, "%s/file", f.tmp);
    file_append(buf_cstr(&path), "x", 1);
    capture_begin(&c);
    int rc = journal_open(buf_cstr(&path), SMALL_SEG, &j, &end);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_IO);
    CHECK(j == NULL);
    struct buf want = BUF_INIT;
    buf_printf(&want, "cannot open journal directory '%s': Not a directory", buf_cstr(&path));
    if (!CHECK_EQ_INT(count_lines(&log, buf_cstr(&want)), 1))
        test_note("log: %s", buf_cstr(&log));

    /* Only the last directory of the path is created. */
    buf_reset(&path);
    buf_printf(&path, "%s/missing/j", f.tmp);
    j = (struct journal *)&f;
    capture_begin(&c);
    rc = journal_open(buf_cstr(&path), SMALL_SEG, &j, &end);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_IO);
    CHECK(j == NULL);
    buf_reset(&want);
    buf_printf(&want, "cannot create journal directory '%s': No such file", buf_cstr(&path));
    if (!CHECK_EQ_INT(count_lines(&log, buf_cstr(&want)), 1))
        test_note("log: %s", buf_cstr(&log));

    /* A new directory starts at 0 with its first segment already there. */
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, 0);
    struct segs s;
    list_segs(&f, &s);
    if (CHECK_EQ_INT(s.n, 1))
        CHECK_EQ_INT(s.start[0], 0);
    int calls = 0;
    CHECK_EQ_INT(journal_replay(f.j, 0, count_cb, &calls), ERR_OK);
    CHECK_EQ_INT(calls, 0);
    fx_close(&f);

    /* Files that are not segments are left alone. */
    static const char *const strays[] = {"notes.txt", "123.jnl", "0000000000000000000x.jnl",
                                         "99999999999999999999.jnl"};
    for (size_t i = 0; i < sizeof(strays) / sizeof(strays[0]); i++) {
        buf_reset(&path);
        buf_printf(&path, "%s/%s", f.dir, strays[i]);
        file_append(buf_cstr(&path), "junk", 4);
    }
    CHECK_EQ_INT(fx_open(&f, SMALL_SEG), ERR_OK);
    CHECK_EQ_INT(f.end, 0);
    append_range(f.j, 0, 10, 3);
    check_replay(f.j, 0, 0, 10);
    for (size_t i = 0; i < sizeof(strays) / sizeof(strays[0]); i++) {
        buf_reset(&path);
        buf_printf(&path, "%s/%s", f.dir, strays[i]);
        CHECK_EQ_INT(file_size(buf_cstr(&path)), 4);
    }
    buf_release(&want);
    buf_release(&path);
    buf_release(&log);
    fx_done(&f);
}

void test_journal_write_failure(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    append_range(f.j, 0, 10, 10);

    /* A file size limit makes the next write stop part of the way through. */
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t)(pos_tab[10] + 100);
    append_range(f.j, 10, 12, 0); /* 72 + 521 bytes: the limit falls inside the second */
    struct capture c;
    struct buf log = BUF_INIT;
    capture_begin(&c);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    uint64_t synced = 0;
    int rc = ERR_OK;
    if (CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0)) {
        rc = journal_sync(f.j, &synced);
        setrlimit(RLIMIT_FSIZE, &old);
    }
    signal(SIGXFSZ, old_handler);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_IO);
    CHECK_EQ_INT(synced, pos_tab[10]);
    char path[96];
    seg_path(&f, 0, path, sizeof(path));
    struct buf want = BUF_INIT;
    buf_printf(&want, "cannot write journal segment '%s': File too large", path);
    if (!CHECK_EQ_INT(count_lines(&log, buf_cstr(&want)), 1))
        test_note("log: %s", buf_cstr(&log));
    buf_release(&want);

    /* The partial write was cut off, and the records wait for the next sync. */
    CHECK_EQ_INT(file_size(path), pos_tab[10]);
    check_replay(f.j, 0, 0, 10);
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    CHECK_EQ_INT(synced, pos_tab[12]);
    check_replay(f.j, 0, 0, 12);
    fx_close(&f);

    capture_begin(&c);
    rc = fx_open(&f, 1u << 20);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[12]);
    CHECK_EQ_INT(count_lines(&log, " warn "), 0);
    buf_release(&log);
    fx_done(&f);
}

/* Sets or clears the append-only flag of 'path' (FS_IOC_SETFLAGS, root only),
 * which makes ftruncate fail while writes through an open descriptor go on. */
static bool set_append_only(const char *path, bool on)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    int flags = 0;
    bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    flags = on ? flags | FS_APPEND_FL : flags & ~FS_APPEND_FL;
    ok = ok && ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    close(fd);
    return ok;
}

/* Makes the next journal_sync fail with 'limit' as the largest file size
 * (the write stops part of the way); returns its rc and the log. */
static int sync_with_limit(struct journal *j, uint64_t limit, struct buf *log)
{
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t)limit;
    struct capture c;
    capture_begin(&c);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    uint64_t synced = 0;
    int rc = ERR_OK;
    if (CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0)) {
        rc = journal_sync(j, &synced);
        setrlimit(RLIMIT_FSIZE, &old);
    }
    signal(SIGXFSZ, old_handler);
    capture_end(&c, log);
    return rc;
}

/* A write that fails and cannot even be cut off (the file is append-only):
 * the journal goes down, says so in its health, and the next sync brings it
 * back in a new segment, without a restart. */
void test_journal_recovers_after_failure(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    append_range(f.j, 0, 10, 10);
    char path[96];
    seg_path(&f, 0, path, sizeof(path));
    if (!set_append_only(path, true)) {
        test_note("skipped: cannot make '%s' append-only (%s): needs root and ext4/tmpfs", path,
                  strerror(errno));
        fx_done(&f);
        return;
    }
    append_range(f.j, 10, 12, 0);
    struct buf log = BUF_INIT;
    CHECK_EQ_INT(sync_with_limit(f.j, pos_tab[10] + 100, &log), ERR_IO);
    CHECK_EQ_INT(count_lines(&log, "cannot write journal segment"), 1);
    CHECK(file_size(path) > pos_tab[10]); /* the cut failed: a torn tail stays */
    struct journal_health h;
    journal_health(f.j, &h);
    CHECK(h.down);
    CHECK_EQ_INT(h.failures, 1);
    CHECK_EQ_STR(h.error, "File too large");
    CHECK_EQ_INT(h.unsynced_bytes, pos_tab[12] - pos_tab[10]);

    struct capture c;
    capture_begin(&c);
    uint64_t synced = 0;
    int rc = journal_sync(f.j, &synced);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(synced, pos_tab[12]);
    CHECK_EQ_INT(count_lines(&log, "writes again, after 1 failed syncs"), 1);
    journal_health(f.j, &h);
    CHECK(!h.down);
    CHECK_EQ_INT(h.recoveries, 1);
    CHECK_EQ_INT(h.unsynced_bytes, 0);
    char next[96];
    seg_path(&f, pos_tab[10], next, sizeof(next));
    CHECK_EQ_INT(file_size(next), pos_tab[12] - pos_tab[10]);
    check_replay(f.j, 0, 0, 12); /* the old file is read up to the new one's start */
    append_range(f.j, 12, 20, 4);
    fx_close(&f);

    capture_begin(&c);
    rc = fx_open(&f, 1u << 20);
    capture_end(&c, &log);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[20]);
    CHECK_EQ_INT(count_lines(&log, " warn "), 0);
    check_replay(f.j, 0, 0, 20);
    set_append_only(path, false);
    buf_release(&log);
    fx_done(&f);
}

/* A journal gone down: records 0..9 synced, 10..19 buffered, and a sync
 * that could write only 100 bytes past record 10 (its log in 'log').
 * False when the fixture cannot be made (the test is then over). */
static bool fx_down(struct fx *f, struct buf *log)
{
    if (!fx_init(f))
        return false;
    CHECK_EQ_INT(fx_open(f, 1u << 20), ERR_OK);
    append_range(f->j, 0, 10, 10);
    append_range(f->j, 10, 20, 0);
    CHECK_EQ_INT(sync_with_limit(f->j, pos_tab[10] + 100, log), ERR_IO);
    return true;
}

/* While the journal is down the store takes its records: skipping to a
 * position past the synced end drops them from memory, and the journal
 * carries on from there in a new segment, its positions unchanged; later
 * failures are not logged again. Skipping past the end of an idle journal
 * (a store ahead of a journal that lost its tail) moves it there too. */
void test_journal_skip_to(void)
{
    struct fx f;
    struct buf log = BUF_INIT;
    if (!fx_down(&f, &log))
        return;
    CHECK_EQ_INT(count_lines(&log, "cannot write journal segment"), 1);
    CHECK_EQ_INT(sync_with_limit(f.j, pos_tab[10] + 100, &log), ERR_IO);
    CHECK_EQ_STR(buf_cstr(&log), "");
    struct journal_health h;
    journal_health(f.j, &h);
    CHECK(h.down);
    CHECK_EQ_INT(h.failures, 2);

    CHECK_EQ_INT(journal_skip_to(f.j, pos_tab[15]), ERR_OK);
    journal_health(f.j, &h);
    CHECK_EQ_INT(h.unsynced_bytes, pos_tab[20] - pos_tab[15]);
    uint64_t synced = 0;
    struct capture c;
    capture_begin(&c);
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    capture_end(&c, &log);
    CHECK_EQ_INT(synced, pos_tab[20]);
    CHECK_EQ_INT(count_lines(&log, "writes again, after 2 failed syncs"), 1);
    char path[96];
    seg_path(&f, pos_tab[15], path, sizeof(path));
    CHECK_EQ_INT(file_size(path), pos_tab[20] - pos_tab[15]);
    check_replay(f.j, pos_tab[15], 15, 20);
    /* From before the gap: the journal cannot tell it from a lost tail. */
    struct expect e = {.next = 0};
    capture_begin(&c);
    CHECK_EQ_INT(journal_replay(f.j, 0, expect_cb, &e), ERR_OK);
    capture_end(&c, &log);
    CHECK_EQ_INT(e.calls, 15); /* 0..9, then 15..19 */
    CHECK_EQ_INT(e.jumps, 1);
    CHECK_EQ_INT(e.wrong, 0);
    CHECK_EQ_INT(count_lines(&log, "replay skips to position"), 1);

    CHECK_EQ_INT(journal_skip_to(f.j, pos_tab[20]), ERR_OK); /* a no-op */
    CHECK_EQ_INT(journal_skip_to(f.j, UINT64_MAX), ERR_INVALID);
    CHECK_EQ_INT(journal_skip_to(f.j, pos_tab[25]), ERR_OK); /* nothing buffered */
    append_range(f.j, 25, 30, 5);
    fx_close(&f);
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[30]);
    check_replay(f.j, pos_tab[25], 25, 30);
    buf_release(&log);
    fx_done(&f);
}

/* Down with nothing left to write (the store took it all): a sync still
 * tells whether the disk writes again, with a byte it then cuts off, so the
 * journal does not stay down while no click comes. */
void test_journal_down_and_idle(void)
{
    struct fx f;
    struct buf log = BUF_INIT;
    if (!fx_down(&f, &log))
        return;
    CHECK_EQ_INT(journal_skip_to(f.j, pos_tab[20]), ERR_OK);
    struct journal_health h;
    journal_health(f.j, &h);
    CHECK(h.down);
    CHECK_EQ_INT(h.unsynced_bytes, 0);

    CHECK_EQ_INT(sync_with_limit(f.j, 0, &log), ERR_IO); /* not a byte */
    journal_health(f.j, &h);
    CHECK(h.down);
    CHECK_EQ_INT(h.failures, 2);

    struct capture c;
    capture_begin(&c);
    uint64_t synced = 0;
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    capture_end(&c, &log);
    CHECK_EQ_INT(synced, pos_tab[20]);
    CHECK_EQ_INT(count_lines(&log, "writes again, after 2 failed syncs"), 1);
    journal_health(f.j, &h);
    CHECK(!h.down);
    char path[96];
    seg_path(&f, pos_tab[20], path, sizeof(path));
    CHECK_EQ_INT(file_size(path), 0);                 /* the probe's byte is gone */
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK); /* up and idle: no I/O */
    append_range(f.j, 20, 25, 5);
    fx_close(&f);
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[25]);
    check_replay(f.j, pos_tab[20], 20, 25);
    buf_release(&log);
    fx_done(&f);
}

/* Rotating leaves the records synced so far in a segment of their own, so
 * that releasing up to them deletes them, however small the segment. */
void test_journal_rotate(void)
{
    struct fx f;
    if (!fx_init(&f))
        return;
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    CHECK_EQ_INT(journal_rotate(f.j), ERR_OK); /* nothing to leave: no new file */
    struct segs s;
    list_segs(&f, &s);
    CHECK_EQ_INT(s.n, 1);
    append_range(f.j, 0, 10, 10);
    CHECK_EQ_INT(journal_rotate(f.j), ERR_OK);
    CHECK_EQ_INT(journal_release(f.j, pos_tab[10]), ERR_OK);
    list_segs(&f, &s);
    if (CHECK_EQ_INT(s.n, 1)) {
        CHECK_EQ_INT(s.start[0], pos_tab[10]);
        CHECK_EQ_INT(s.size[0], 0);
    }
    CHECK_EQ_INT(journal_rotate(f.j), ERR_OK); /* the new one is empty: kept */
    list_segs(&f, &s);
    CHECK_EQ_INT(s.n, 1);

    /* Buffered records go to the new segment, at their positions. */
    append_range(f.j, 10, 15, 5);
    append_range(f.j, 15, 18, 0);
    CHECK_EQ_INT(journal_rotate(f.j), ERR_OK);
    uint64_t synced = 0;
    CHECK_EQ_INT(journal_sync(f.j, &synced), ERR_OK);
    CHECK_EQ_INT(synced, pos_tab[18]);
    check_replay(f.j, pos_tab[10], 10, 18);
    fx_close(&f);
    CHECK_EQ_INT(fx_open(&f, 1u << 20), ERR_OK);
    CHECK_EQ_INT(f.end, pos_tab[18]);
    check_segs(&f, 0, pos_tab[10], pos_tab[18]);
    fx_done(&f);
}
