/* storecost.c - what storing a click costs the store, apart from HTTP,
 * the journal and the machine's other load: CPU time of the calling thread
 * (CLOCK_THREAD_CPUTIME_ID) per link day stored, batch by batch.
 *
 *   build/bench/storecost STORE CODES UAS [BATCHES] [BATCH]
 *
 * STORE is a store URL (a copy of bench/run.sh's pristine.db, or a
 * PostgreSQL database holding the same links), CODES the data's codes.txt
 * (fixed 8-byte lines), UAS bench/uas.txt. Each of BATCHES (10) batches
 * folds BATCH (100,000) clicks on codes drawn uniformly, each with a user
 * agent, referrer, country and visitor of its own, through the aggregator's
 * own fold (aggregate_fold), sorts the link days as the aggregator does and
 * stores them 4,000 a transaction, as the click store does: appended under
 * a batch number of its own (with STORECOST_MERGE set, merged into the day
 * rows through agg_days, as both stores did before they appended), on a
 * background thread (coop.h) as the server's is (with STORECOST_FOREGROUND
 * set, on an ordinary one: SQLite's smaller cache). It prints, per batch,
 * the link days stored, how many of them the store held already, and the
 * microseconds of CPU per link day spent storing (begin, append or merge,
 * commit) and folding; then, when it appended, what compacting every
 * appended row into the day rows cost, per row and per click of the run
 * (4,000 link days a transaction, as the server's rounds; not with
 * STORECOST_NO_COMPACT set, and with BATCHES 0 it only compacts). Not part
 * of make test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/bump.h"
#include "base/coop.h"
#include "clicks/aggregate.h"
#include "clicks/classify.h"
#include "clicks/dayrow.h"
#include "store/store.h"
#include "store/store_stats.h"

#define CHUNK 4000
#define CODE_LEN 7

static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    if (!p || fread(p, 1, (size_t)len, f) != (size_t)len)
        exit(2);
    p[len] = '\0';
    fclose(f);
    *n = (size_t)len;
    return p;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct lday {
    char code[CODE_LEN + 1];
    struct dayrow row;
};

static int cmp_lday(const void *a, const void *b)
{
    return strcmp(((const struct lday *)a)->code, ((const struct lday *)b)->code);
}

static int64_t clicks_of(struct store *st, const char *code, int64_t day);

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: storecost STORE CODES UAS [BATCHES] [BATCH]\n");
        return 2;
    }
    int batches = argc > 4 ? atoi(argv[4]) : 10;
    size_t batch = argc > 5 ? (size_t)atol(argv[5]) : 100000;
    size_t ncodes_bytes, nuas_bytes;
    char *codes = slurp(argv[2], &ncodes_bytes);
    size_t ncodes = ncodes_bytes / (CODE_LEN + 1);
    char *uas = slurp(argv[3], &nuas_bytes);
    size_t nuas = 0;
    char **ua = malloc(sizeof(*ua) * 4096);
    for (char *p = uas, *nl; *p && nuas < 4096; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        ua[nuas++] = p;
    }
    /* A background thread, as the server's click store lane is: SQLite
     * then keeps that lane's page cache (store_sqlite.c). */
    if (!getenv("STORECOST_FOREGROUND"))
        coop_thread(0);
    struct store *st;
    if (store_open(argv[1], &st) != 0) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    struct classify *cl;
    if (classify_new(65536, &cl) != 0)
        return 2;
    const char *const self[] = {"sho.rt", NULL};
    const char *refs[] = {"https://www.google.com/", "https://t.co/x", "https://news.ycombinator.com/",
                          "", "https://www.reddit.com/r/x/"};
    const char *countries[] = {"US", "DE", "FR", "GB", "IN", "BR", "JP", ""};
    int64_t now_ms = (int64_t)time(NULL) * 1000;
    int64_t day = now_ms / 86400000;
    struct lday *ld = calloc(batch, sizeof(*ld));
    struct day_delta *d = calloc(batch, sizeof(*d));
    bool append = st->ops->days_append && !getenv("STORECOST_MERGE");
    size_t clicks = 0;
    printf("%s\n", append ? "appending" : "merging");
    printf("batch\tlink_days\tstored_before\tstore_us_per_link_day\tfold_us_per_link_day\n");
    for (int b = 0; b < batches; b++) {
        double f0 = cpu_us();
        for (size_t i = 0; i < batch; i++) {
            size_t k = next_rand() % ncodes;
            memcpy(ld[i].code, codes + k * (CODE_LEN + 1), CODE_LEN);
            ld[i].code[CODE_LEN] = '\0';
            dayrow_init(&ld[i].row);
        }
        qsort(ld, batch, sizeof(*ld), cmp_lday);
        size_t n = 0;
        for (size_t i = 0; i < batch; i++) {
            if (n && !strcmp(ld[n - 1].code, ld[i].code)) {
                dayrow_release(&ld[i].row);
            } else {
                if (n != i) {
                    memcpy(ld[n].code, ld[i].code, sizeof(ld[n].code));
                    ld[n].row = ld[i].row;
                }
                n++;
            }
            struct click_event e = {0};
            e.ts = now_ms;
            e.visitor = next_rand();
            memcpy(e.country, countries[next_rand() % 8], 3);
            e.code = (struct slice){ld[n - 1].code, CODE_LEN};
            const char *u = ua[next_rand() % nuas];
            e.ua = (struct slice){u, strlen(u)};
            const char *r = refs[next_rand() % 5];
            e.referer = (struct slice){r, strlen(r)};
            e.lang = (struct slice){"en-US,en;q=0.9", 14};
            aggregate_fold(cl, self, false, &ld[n - 1].row, &e);
        }
        size_t before = 0;
        for (size_t i = 0; i < n; i += n / 50 + 1)
            before += clicks_of(st, ld[i].code, day) > 0;
        for (size_t i = 0; i < n; i++)
            d[i] = (struct day_delta){ld[i].code, day, &ld[i].row, false};
        double s0 = cpu_us();
        int64_t batch_no = 0;
        for (size_t i = 0; i < n; i += CHUNK) {
            size_t m = n - i < CHUNK ? n - i : CHUNK;
            int rc = st->ops->begin(st);
            if (rc == 0 && append && !batch_no)
                rc = st->ops->days_batch(st, 0, &batch_no);
            if (rc == 0)
                rc = append ? st->ops->days_append(st, batch_no, d + i, m)
                            : st->ops->agg_days(st, d + i, m);
            if (rc != 0 || st->ops->commit(st) != 0) {
                fprintf(stderr, "store failed\n");
                return 1;
            }
        }
        double s1 = cpu_us();
        clicks += batch;
        for (size_t i = 0; i < n; i++)
            dayrow_release(&ld[i].row);
        printf("%d\t%zu\t%.0f%%\t%.2f\t%.2f\n", b + 1, n, 100.0 * (double)before / (double)(n / (n / 50 + 1) + 1),
               (s1 - s0) / (double)n, (s0 - f0) / (double)n);
        fflush(stdout);
    }
    if (append && !getenv("STORECOST_NO_COMPACT")) {
        double c0 = cpu_us();
        size_t rows = 0, got;
        do {
            if (st->ops->begin(st) != 0 ||
                st->ops->days_compact(st, INT64_MAX, CHUNK, NULL, NULL, &got) != 0 ||
                st->ops->commit(st) != 0) {
                fprintf(stderr, "compacting failed\n");
                return 1;
            }
            rows += got;
        } while (got);
        double c1 = cpu_us();
        printf("compacted %zu appended rows: %.2f us each, %.2f us a click of the run\n", rows,
               (c1 - c0) / (double)(rows ? rows : 1), (c1 - c0) / (double)(clicks ? clicks : 1));
    }
    st->ops->close(st);
    classify_free(cl);
    free(ld);
    free(d);
    free(ua);
    free(uas);
    free(codes);
    return 0;
}

struct one {
    int64_t clicks;
};

static int day_one(int64_t day, int64_t clicks, int64_t uniques, int64_t bots, void *arg)
{
    (void)day;
    (void)uniques;
    (void)bots;
    ((struct one *)arg)->clicks = clicks;
    return 1;
}

static int64_t clicks_of(struct store *st, const char *code, int64_t day)
{
    struct one o = {0};
    st->ops->stats_days(st, code, day, day, day_one, &o);
    return o.clicks;
}
