/* test_fuzzfound.c - what the libFuzzer targets (fuzz/, docs/fuzzing.md)
 * found, each checked through the module's public functions with the input
 * that showed it (also kept in fuzz/regressions/<target>/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config.h"
#include "clicks/dayrow.h"
#include "base/err.h"
#include "test.h"

#include "base/banned.h"

static int64_t count_of(const struct dayrow *r, int dim, const char *value)
{
    for (size_t i = 0; i < r->ntallies; i++) {
        const struct tally *t = &r->tallies[i];
        if (t->dim == dim && t->len == strlen(value) && !memcmp(r->arena + t->off, value, t->len))
            return t->n;
    }
    return -1;
}

/* fuzz/regressions/dayrow/tally-count-overflow: a stored dims blob whose
 * counts add up past INT64_MAX overflowed a signed integer while loading
 * (undefined; wrapped to a negative count). Now the sum saturates, and a
 * count no encoder writes (past INT64_MAX) is refused. */
void test_fuzzfound_dayrow_counts(void)
{
    static const char twice_max[] = "D"
                                    "\x00\x01"
                                    "a"
                                    "\xff\xff\xff\xff\xff\xff\xff\xff\x7f"
                                    "\x00\x01"
                                    "a"
                                    "\xff\xff\xff\xff\xff\xff\xff\xff\x7f";
    struct day_blobs b = {.clicks = 1, .dims = twice_max, .ndims = sizeof(twice_max) - 1};
    struct dayrow r;
    dayrow_init(&r);
    CHECK_EQ_INT(dayrow_load(&r, &b), ERR_OK);
    CHECK_EQ_INT(count_of(&r, 0, "a"), INT64_MAX);
    /* Adding more to a saturated count leaves it there. */
    dayrow_tally(&r, 0, "a", 1, 5);
    CHECK_EQ_INT(count_of(&r, 0, "a"), INT64_MAX);
    dayrow_release(&r);

    static const char past_max[] = "D"
                                   "\x00\x01"
                                   "a"
                                   "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01";
    b.dims = past_max;
    b.ndims = sizeof(past_max) - 1;
    dayrow_init(&r);
    CHECK_EQ_INT(dayrow_load(&r, &b), ERR_INVALID);
    dayrow_release(&r);
}

/* A config file made of 'text', loaded over the defaults into 'c'. */
static int load_config(struct config *c, const char *text, char *err, size_t errlen)
{
    char path[] = "/tmp/shortd-fuzzfound-XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0))
        return -1;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    config_init(c);
    int rc = config_load_file(c, path, err, errlen);
    unlink(path);
    return rc;
}

/* fuzz/regressions/config/long-comment-line: the reader took lines in
 * pieces of 4,095 bytes, so the rest of a longer comment was read as a
 * line of its own: an error when it had no '=', a setting when it had. */
void test_fuzzfound_config_long_lines(void)
{
    struct buf text = BUF_INIT;
    buf_addc(&text, '#');
    for (int i = 0; i < 4094; i++) /* the old buffer's 4,095 bytes end here */
        buf_addc(&text, 'x');
    buf_adds(&text, " threads = 3\nidle-timeout = 9\n");
    struct config c;
    char err[256] = "";
    CHECK_EQ_INT(load_config(&c, buf_cstr(&text), err, sizeof(err)), ERR_OK);
    CHECK_EQ_INT(c.threads, 0); /* the default: the comment set nothing */
    CHECK_EQ_INT(c.idle_timeout, 9);
    config_release(&c);

    /* A long value is one value, not a value and a line. */
    buf_reset(&text);
    buf_adds(&text, "home = https://example.com/");
    for (int i = 0; i < 5000; i++)
        buf_addc(&text, 'p');
    buf_adds(&text, "\n");
    CHECK_EQ_INT(load_config(&c, buf_cstr(&text), err, sizeof(err)), ERR_OK);
    CHECK(c.home && strlen(c.home) == strlen("https://example.com/") + 5000);
    config_release(&c);
    buf_release(&text);
}
