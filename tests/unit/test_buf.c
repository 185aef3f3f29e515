/* test_buf.c - the buf.h contract: always NUL-terminated once it holds
 * memory, "" for an empty buf, growth past any initial size, explicit
 * handover with buf_detach, and the slice helpers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "test.h"

#include "base/banned.h"

void test_buf_empty(void)
{
    struct buf b = BUF_INIT;
    CHECK(b.p == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_STR(buf_cstr(&b), "");

    struct buf c;
    memset(&c, 0xa5, sizeof(c));
    buf_init(&c);
    CHECK(c.p == NULL);
    CHECK_EQ_INT(c.len, 0);
    CHECK_EQ_INT(c.cap, 0);
    buf_release(&c); /* releasing an empty buf is fine */
    CHECK(c.p == NULL);
}

void test_buf_add(void)
{
    struct buf b = BUF_INIT;
    buf_add(&b, "abc", 3);
    CHECK_EQ_INT(b.len, 3);
    CHECK_EQ_STR(buf_cstr(&b), "abc");
    CHECK(b.cap > b.len); /* room for the NUL */

    buf_adds(&b, "def");
    buf_addc(&b, 'g');
    CHECK_EQ_STR(buf_cstr(&b), "abcdefg");
    CHECK_EQ_INT(b.len, 7);
    CHECK_EQ_INT(b.p[b.len], '\0');

    /* Bytes, not strings: an embedded NUL is kept and counted. */
    buf_add(&b, "x\0y", 3);
    CHECK_EQ_INT(b.len, 10);
    CHECK(memcmp(b.p, "abcdefgx\0y", 10) == 0);
    CHECK_EQ_INT(b.p[10], '\0');

    buf_add(&b, "ignored", 0);
    CHECK_EQ_INT(b.len, 10);

    /* Shorter text over longer: the NUL must follow the new end. */
    buf_reset(&b);
    buf_add(&b, "ab", 2);
    CHECK_EQ_STR(buf_cstr(&b), "ab");
    buf_release(&b);

    /* Memory reserved but nothing written yet still reads as "". */
    buf_reserve(&b, 100);
    CHECK(b.cap >= 101);
    CHECK(buf_cstr(&b)[0] == '\0'); /* not CHECK_EQ_STR: it would read past the end */
    buf_release(&b);
}

void test_buf_numbers(void)
{
    struct buf b = BUF_INIT;
    buf_add_u64(&b, 0);
    buf_addc(&b, ' ');
    buf_add_u64(&b, UINT64_MAX);
    buf_addc(&b, ' ');
    buf_add_i64(&b, -1);
    buf_addc(&b, ' ');
    buf_add_i64(&b, INT64_MIN);
    buf_addc(&b, ' ');
    buf_add_i64(&b, INT64_MAX);
    CHECK_EQ_STR(buf_cstr(&b),
                 "0 18446744073709551615 -1 -9223372036854775808 9223372036854775807");
    buf_release(&b);
}

void test_buf_printf(void)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, "[");
    buf_printf(&b, "%s=%d", "n", 42);
    buf_printf(&b, "%s", "");
    buf_adds(&b, "]");
    CHECK_EQ_STR(buf_cstr(&b), "[n=42]");
    CHECK_EQ_INT(b.len, 6);

    /* Longer than any small internal buffer an implementation might use. */
    char big[5000];
    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    buf_reset(&b);
    buf_printf(&b, "<%s>", big);
    CHECK_EQ_INT(b.len, sizeof(big) + 1);
    CHECK(b.p[0] == '<' && b.p[b.len - 1] == '>' && b.p[b.len] == '\0');
    CHECK(b.p[1] == 'q' && b.p[b.len - 2] == 'q');
    buf_release(&b);
}

void test_buf_growth(void)
{
    struct buf b = BUF_INIT;
    size_t total = 0;
    bool intact = true;
    for (int i = 0; i < 100000; i++) {
        buf_addc(&b, (char)('a' + i % 26));
        total++;
    }
    for (size_t i = 0; i < total; i++)
        intact = intact && b.p[i] == (char)('a' + i % 26);
    CHECK(intact);
    CHECK_EQ_INT(b.len, total);
    CHECK_EQ_INT(strlen(buf_cstr(&b)), total);

    buf_reserve(&b, 1 << 20);
    CHECK(b.cap >= b.len + (1 << 20) + 1);
    char *before = b.p;
    static const char more[1000];
    buf_add(&b, more, sizeof(more)); /* reserve promised the room: no move */
    CHECK(b.p == before);
    CHECK_EQ_INT(b.len, total + 1000);
    buf_release(&b);
}

void test_buf_reset_release(void)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, "hello");
    size_t cap = b.cap;
    buf_reset(&b);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.cap, cap); /* keeps its memory */
    CHECK_EQ_STR(buf_cstr(&b), "");
    buf_adds(&b, "again");
    CHECK_EQ_STR(buf_cstr(&b), "again");
    buf_truncate(&b, 3); /* drops the tail, NUL-terminated */
    CHECK_EQ_STR(buf_cstr(&b), "aga");
    buf_truncate(&b, 10); /* past the end: nothing to drop */
    CHECK_EQ_STR(buf_cstr(&b), "aga");
    buf_adds(&b, "in");
    CHECK_EQ_STR(buf_cstr(&b), "again");

    buf_release(&b);
    CHECK(b.p == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_STR(buf_cstr(&b), "");
    buf_adds(&b, "reusable");
    CHECK_EQ_STR(buf_cstr(&b), "reusable");
    buf_release(&b);
}

void test_buf_detach(void)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, "owned");
    size_t len = 0;
    char *p = buf_detach(&b, &len);
    CHECK_EQ_INT(len, 5);
    CHECK(p && strcmp(p, "owned") == 0);
    CHECK(b.p == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_STR(buf_cstr(&b), "");
    free(p);

    /* An empty buf hands over something free() accepts. */
    len = 99;
    p = buf_detach(&b, &len);
    CHECK_EQ_INT(len, 0);
    CHECK(!p || p[0] == '\0');
    free(p);
}

void test_slices(void)
{
    struct slice s = SLICE_LIT("Location");
    CHECK_EQ_INT(s.n, 8);
    CHECK(slice_eq(s, "Location"));
    CHECK(!slice_eq(s, "location"));
    CHECK(!slice_eq(s, "Locatio"));
    CHECK(!slice_eq(s, "Locations"));
    CHECK(slice_ieq(s, "LOCATION"));
    CHECK(slice_ieq(s, "location"));
    CHECK(!slice_ieq(s, "locatio"));
    CHECK(!slice_ieq(s, "locationx"));

    /* A slice is not NUL-terminated: only its n bytes count. */
    struct slice part = {"GET /x HTTP/1.1", 3};
    CHECK(slice_eq(part, "GET"));
    CHECK(!slice_eq(part, "GET /x"));
    char *d = slice_dup(part);
    CHECK_EQ_STR(d, "GET");
    free(d);

    struct slice empty = {"", 0};
    CHECK(slice_eq(empty, ""));
    CHECK(!slice_eq(empty, "a"));
    d = slice_dup(empty);
    CHECK_EQ_STR(d, "");
    free(d);
}
