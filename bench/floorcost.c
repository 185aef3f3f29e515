/* floorcost.c - the least a store can spend on a click at N links: SQLite
 * alone, no shortd code, a row holding nothing but a count.
 *
 *   build/bench/floorcost DB [LINKS] [BATCHES] [BATCH]
 *
 * Makes DB afresh (WAL, synchronous=FULL, a 128 MiB page cache: the click
 * store's settings) with a day table of LINKS (1,000,000) rows, one per
 * link, keyed by (code, day) as the store's day rows are. Then, for each of
 * BATCHES (5) batches of BATCH (100,000) clicks on codes drawn uniformly, it
 * stores the batch two ways, 4,000 rows a transaction, in key order:
 *
 *   keyed:  INSERT ... ON CONFLICT (code, day) DO UPDATE SET n = n + 1,
 *           into the day table (a click's own day row, counted);
 *   append: INSERT into a table with no key but its rowid (what a store
 *           that appends and compacts later pays first);
 *   segment: one row a transaction, its 4,000 (code, day, count) packed in
 *           a blob (what a store that appends in segments pays first).
 *
 * and prints the CPU of this thread (CLOCK_THREAD_CPUTIME_ID) per row, each.
 * Not part of make test: bench/HISTORY.md quotes what it measured. Written
 * against SQLite's API alone so that no part of shortd's own row format
 * or fold is in the figure: it is a floor under any design that keeps
 * exact counts in SQLite, not a measure of shortd's. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TXN_ROWS 4000

static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void check(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static void exec(sqlite3 *db, const char *sql) { check(db, sqlite3_exec(db, sql, 0, 0, 0), sql); }

/* xorshift64*: a fixed sequence, so runs compare */
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static void code_of(uint64_t i, char out[9]) { snprintf(out, 9, "%08llx", (unsigned long long)i); }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Stores 'n' sorted link numbers as segments: one blob of TXN_ROWS
 * (code, day, count) records a transaction; returns CPU µs spent. */
static double store_segments(sqlite3 *db, sqlite3_stmt *stmt, const uint64_t *links, size_t n,
                             int day)
{
    enum { REC = 8 + 4 + 4 };
    static unsigned char blob[TXN_ROWS * REC];
    double t0 = cpu_us();
    for (size_t i = 0; i < n; i += TXN_ROWS) {
        size_t m = n - i < TXN_ROWS ? n - i : TXN_ROWS;
        for (size_t j = 0; j < m; j++) {
            unsigned char *r = blob + j * REC;
            char code[9];
            code_of(links[i + j], code);
            memcpy(r, code, 8);
            uint32_t d = (uint32_t)day, one = 1;
            memcpy(r + 8, &d, 4);
            memcpy(r + 12, &one, 4);
        }
        exec(db, "BEGIN");
        sqlite3_bind_blob(stmt, 1, blob, (int)(m * REC), SQLITE_STATIC);
        check(db, sqlite3_step(stmt), "step");
        sqlite3_reset(stmt);
        exec(db, "COMMIT");
    }
    return cpu_us() - t0;
}

/* Stores 'n' sorted link numbers with 'stmt' (code, day), a transaction
 * every TXN_ROWS; returns CPU µs spent. */
static double store(sqlite3 *db, sqlite3_stmt *stmt, const uint64_t *links, size_t n, int day)
{
    double t0 = cpu_us();
    for (size_t i = 0; i < n; i++) {
        if (i % TXN_ROWS == 0)
            exec(db, "BEGIN");
        char code[9];
        code_of(links[i], code);
        sqlite3_bind_text(stmt, 1, code, 8, SQLITE_STATIC);
        sqlite3_bind_int(stmt, 2, day);
        check(db, sqlite3_step(stmt), "step");
        sqlite3_reset(stmt);
        if (i % TXN_ROWS == TXN_ROWS - 1 || i == n - 1)
            exec(db, "COMMIT");
    }
    return cpu_us() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: floorcost DB [LINKS] [BATCHES] [BATCH]\n");
        return 2;
    }
    const char *path = argv[1];
    uint64_t links = argc > 2 ? strtoull(argv[2], 0, 10) : 1000000;
    int batches = argc > 3 ? atoi(argv[3]) : 5;
    size_t batch = argc > 4 ? strtoull(argv[4], 0, 10) : 100000;
    if (!links || batches <= 0 || !batch)
        return 2;
    for (size_t i = 0; i < 3; i++) { /* a fresh file: no earlier run's pages */
        char f[4096];
        snprintf(f, sizeof(f), "%s%s", path, (const char *[]){"", "-wal", "-shm"}[i]);
        remove(f);
    }
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -131072;"
             "CREATE TABLE days (code TEXT NOT NULL, day INTEGER NOT NULL, n INTEGER NOT NULL,"
             " PRIMARY KEY (code, day)) WITHOUT ROWID;"
             "CREATE TABLE appended (code TEXT NOT NULL, day INTEGER NOT NULL, n INTEGER NOT NULL);"
             "CREATE TABLE segments (recs BLOB NOT NULL)");

    sqlite3_stmt *keyed, *append, *segment;
    check(db,
          sqlite3_prepare_v2(db,
                             "INSERT INTO days (code, day, n) VALUES (?1, ?2, 1) "
                             "ON CONFLICT (code, day) DO UPDATE SET n = n + 1",
                             -1, &keyed, 0),
          "prepare");
    check(db,
          sqlite3_prepare_v2(db, "INSERT INTO appended (code, day, n) VALUES (?1, ?2, 1)", -1,
                             &append, 0),
          "prepare");
    check(db, sqlite3_prepare_v2(db, "INSERT INTO segments (recs) VALUES (?1)", -1, &segment, 0),
          "prepare");

    /* a day's row for every link, as after a day of traffic */
    uint64_t *all = malloc(links * sizeof(*all));
    if (!all)
        return 1;
    for (uint64_t i = 0; i < links; i++)
        all[i] = i;
    (void)store(db, keyed, all, links, 0);
    free(all);
    exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    printf("%llu links; batches of %zu clicks, %d rows a transaction; CPU µs a row\n",
           (unsigned long long)links, batch, TXN_ROWS);
    printf("batch   rows  keyed  append  segment\n");

    uint64_t *b = malloc(batch * sizeof(*b));
    if (!b)
        return 1;
    for (int k = 0; k < batches; k++) {
        for (size_t i = 0; i < batch; i++)
            b[i] = next_rand() % links;
        qsort(b, batch, sizeof(*b), cmp_u64);
        size_t n = 0; /* one row a link: the fold has summed the rest */
        for (size_t i = 0; i < batch; i++)
            if (!n || b[n - 1] != b[i])
                b[n++] = b[i];
        double kt = store(db, keyed, b, n, 1);
        double at = store(db, append, b, n, 1);
        double st = store_segments(db, segment, b, n, 1);
        printf("%5d %6zu %6.2f %7.2f %8.2f\n", k + 1, n, kt / (double)n, at / (double)n,
               st / (double)n);
        fflush(stdout);
    }
    free(b);
    sqlite3_finalize(keyed);
    sqlite3_finalize(append);
    sqlite3_finalize(segment);
    sqlite3_close(db);
    return 0;
}
