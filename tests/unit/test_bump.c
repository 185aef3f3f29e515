/* test_bump.c - the bump allocator of a folding table: alignment, big
 * allocations, and chunks kept across clears (then given back slowly). */
#include <stdint.h>
#include <string.h>

#include "base/bump.h"
#include "test.h"

#include "base/banned.h"

#define MIB ((size_t)1 << 20)

void test_bump(void)
{
    struct bump *b = bump_new();
    CHECK_EQ_INT(bump_mapped(b), 0);
    /* Small allocations: 16-aligned, apart, writable to their last byte. */
    char *prev = NULL;
    for (size_t n = 1; n < 3000; n += 37) {
        char *p = bump_alloc(b, n);
        CHECK_EQ_INT((uintptr_t)p % 16, 0);
        memset(p, 0xab, n);
        if (prev)
            CHECK(p != prev);
        prev = p;
    }
    CHECK_EQ_INT(bump_mapped(b), 2 * MIB);
    CHECK_EQ_INT(bump_used(b), 2 * MIB);
    /* A big one gets a mapping of its own, and the small ones carry on in
     * the chunk they were filling. */
    char *big = bump_alloc(b, 3 * MIB);
    memset(big, 1, 3 * MIB);
    CHECK_EQ_INT(bump_mapped(b), 2 * MIB + 4 * MIB);
    CHECK_EQ_INT(bump_used(b), 2 * MIB + 4 * MIB);
    char *after = bump_alloc(b, 64);
    CHECK(after > prev && after < prev + 2 * MIB);

    /* Fill 10 chunks' worth; a clear keeps them, and the same load again
     * maps nothing new. */
    bump_clear(b);
    CHECK_EQ_INT(bump_mapped(b), 2 * MIB); /* the big mapping is gone */
    CHECK_EQ_INT(bump_used(b), 0);         /* ... and the chunk kept is spare */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 10 * 2048 - 100; i++)
            memset(bump_alloc(b, 1024), round, 1024);
        if (!CHECK_EQ_INT(bump_mapped(b), 10 * 2 * MIB))
            test_note("round %d", round);
        CHECK_EQ_INT(bump_used(b), 10 * 2 * MIB);
        bump_clear(b);
        CHECK_EQ_INT(bump_used(b), 0);
    }
    /* Quiet rounds give the chunks back, a sixty-fourth (at least one) at a time. */
    bump_alloc(b, 100);
    bump_clear(b);
    CHECK_EQ_INT(bump_mapped(b), 9 * 2 * MIB);
    for (int round = 0; round < 400; round++) {
        bump_alloc(b, 100);
        bump_clear(b);
    }
    CHECK_EQ_INT(bump_mapped(b), 2 * MIB);
    bump_free(b);
    bump_free(NULL);
}
