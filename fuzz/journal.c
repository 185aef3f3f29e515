/* journal.c (fuzz) - what a damaged click journal could hold, read the way
 * a restart reads it: journal_open (which must cut a torn or corrupt tail,
 * never crash), journal_replay from the start, event_decode of every record
 * (event.h) and aggregate_add of every event that decodes, as the click
 * pipeline's replay does.
 *
 * The first byte picks the input's shape: 0, one click record (decoded,
 * encoded again and decoded again: the second encoding must equal the
 * first); 1, the content of the journal's only segment file; 2, two
 * segment files, split where the next two bytes say. The segment files'
 * names are those a real journal made in LLVMFuzzerInitialize (two records
 * in a journal that rotates after each), so the target knows nothing of
 * how they are named. The journal directory is on /dev/shm when there is
 * one: every open may truncate and sync. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clicks/aggregate.h"
#include "base/buf.h"
#include "clicks/classify.h"
#include "base/err.h"
#include "clicks/event.h"
#include "clicks/journal.h"
#include "base/log.h"
#include "base/banned.h"

#define SEGMENT_MAX 64 /* rotate after every record */

static char dir[64];
static char seg[2][512]; /* the two segment files' paths */
static struct classify *cls;
static const char *const self_hosts[] = {"sho.rt", NULL};

static void check(int cond)
{
    if (!cond)
        abort();
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    check(f != NULL);
    check(fwrite(p, 1, n, f) == n);
    check(fclose(f) == 0);
}

/* Removes the files in the journal directory, but for its lock when 'all'
 * is false. */
static void clear(bool all)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (de->d_name[0] != '.' && (all || strcmp(de->d_name, "lock") != 0))
            unlink(p);
    }
    closedir(d);
}

static void cleanup(void)
{
    clear(true);
    rmdir(dir);
    classify_free(cls);
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_level = LOG_OFF;
    snprintf(dir, sizeof(dir), "%s/shortd-fuzz-journal-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    check(mkdtemp(dir) != NULL);
    atexit(cleanup);
    check(classify_new(64, &cls) == ERR_OK);

    /* A real journal of two segments, to learn what its files are called. */
    struct journal *j;
    uint64_t end, pos;
    check(journal_open(dir, SEGMENT_MAX, &j, &end) == ERR_OK);
    for (int i = 0; i < 2; i++) {
        char rec[SEGMENT_MAX + 1];
        memset(rec, 'x', sizeof(rec));
        check(journal_append(j, rec, sizeof(rec), &pos) == ERR_OK);
        check(journal_sync(j, &pos) == ERR_OK);
    }
    journal_close(j);
    char names[8][256];
    size_t n = 0;
    DIR *d = opendir(dir);
    check(d != NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_type == DT_REG && strcmp(de->d_name, "lock") != 0 && n < 8)
            snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
    }
    closedir(d);
    check(n >= 2);
    qsort(names, n, sizeof(names[0]), by_name);
    for (size_t i = 0; i < n; i++) {
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        if (i < 2)
            snprintf(seg[i], sizeof(seg[i]), "%s", p);
        else
            unlink(p);
    }
    return 0;
}

static void check_event(const void *rec, size_t n, const struct click_event *e)
{
    const char *lo = rec, *hi = lo + n;
    const struct slice s[5] = {e->code, e->ua, e->referer, e->lang, e->query};
    for (int i = 0; i < 5; i++)
        check(s[i].n == 0 || (s[i].p >= lo && s[i].p + s[i].n <= hi));
    check(e->country[2] == '\0');
}

/* Decodes, re-encodes and decodes again; then counts it as a replay would. */
static void event(struct aggregate *a, const void *rec, size_t n)
{
    struct click_event e, e2, e3;
    if (event_decode(rec, n, &e) != ERR_OK)
        return;
    check_event(rec, n, &e);
    struct buf b1 = BUF_INIT, b2 = BUF_INIT;
    size_t n1 = event_encode(&e, &b1);
    check(n1 == b1.len && n1 <= EVENT_MAX);
    check(event_decode(b1.p, b1.len, &e2) == ERR_OK);
    check(e2.ts == e.ts && e2.visitor == e.visitor && e2.flags == e.flags);
    event_encode(&e2, &b2);
    check(b2.len == b1.len && memcmp(b1.p, b2.p, b1.len) == 0);
    check(event_decode(b2.p, b2.len, &e3) == ERR_OK);
    aggregate_add(a, &e);
    buf_release(&b1);
    buf_release(&b2);
}

struct replay {
    struct aggregate *agg;
    uint64_t last;
};

static int replay_one(const void *rec, size_t n, uint64_t pos_after, void *arg)
{
    struct replay *r = arg;
    check(n >= 1 && n <= 65535 && pos_after > r->last);
    r->last = pos_after;
    event(r->agg, rec, n);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct aggregate *a = aggregate_new(cls, self_hosts);
    check(a != NULL);
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (data[0] % 3 == 0) {
        event(a, p, n);
        aggregate_free(a);
        return 0;
    }
    clear(false);
    if (data[0] % 3 == 1 || n < 2) {
        write_file(seg[0], p, n);
    } else {
        size_t split = (size_t)(p[0] | p[1] << 8);
        p += 2;
        n -= 2;
        split = split < n ? split : n;
        write_file(seg[0], p, split);
        write_file(seg[1], p + split, n - split);
    }
    struct journal *j;
    uint64_t end;
    int rc = journal_open(dir, SEGMENT_MAX, &j, &end);
    check(rc == ERR_OK);
    struct replay r = {.agg = a};
    rc = journal_replay(j, 0, replay_one, &r);
    check(rc == ERR_OK);
    check(r.last <= end);
    /* What survived must stay appendable and readable. */
    uint64_t pos, synced;
    check(journal_append(j, "x", 1, &pos) == ERR_OK && pos > end);
    check(journal_sync(j, &synced) == ERR_OK && synced == pos);
    journal_close(j);
    aggregate_free(a);
    return 0;
}
