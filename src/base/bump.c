/* bump.c - see bump.h.
 *
 * Written here because what it needs is small and particular: chunks kept
 * across clears, and given back slowly. (glibc's obstack frees its chunks
 * at once; talloc and APR pools add hierarchy and locking this does not
 * want.) */
#include "base/bump.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "base/banned.h"

/* Under AddressSanitizer, memory not handed out (or cleared) is poisoned,
 * so a link day used after its table was stored is caught as with free(). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CHUNK ((size_t)2 << 20)
#define ALIGN 16

struct chunk {
    struct chunk *next;
    size_t size; /* of the mapping, this header included */
};

struct bump {
    struct chunk *used;   /* newest first; allocations come from the first */
    struct chunk *spare;  /* CHUNK-sized, kept for reuse */
    size_t nused, nspare; /* CHUNK-sized ones */
    size_t keep;          /* spare ones kept at the last clear */
    size_t mapped;
    char *at, *end; /* free room in used's first chunk */
};

#define HEAD ((sizeof(struct chunk) + ALIGN - 1) & ~(size_t)(ALIGN - 1))

/* A mapping of 'size' bytes. Not huge pages (MADV_HUGEPAGE): the kernel
 * then zeroes 2 MiB at each first touch, and a server's first busy seconds
 * cost markedly more folding, with no gain in storing (measured: bench/
 * HISTORY.md, "Figures once quoted in code comments"). */
static struct chunk *chunk_map(struct bump *b, size_t size)
{
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        abort();
    struct chunk *c = (struct chunk *)p;
    c->size = size;
    b->mapped += size;
    POISON(p + HEAD, size - HEAD);
    return c;
}

static void chunk_unmap(struct bump *b, struct chunk *c)
{
    b->mapped -= c->size;
    UNPOISON(c, c->size); /* the range may be mapped again by anyone */
    munmap(c, c->size);
}

struct bump *bump_new(void)
{
    struct bump *b = calloc(1, sizeof(*b));
    if (!b)
        abort();
    return b;
}

/* Unmaps spare chunks until 'keep' are left. */
static void trim_spare(struct bump *b, size_t keep)
{
    while (b->nspare > keep) {
        struct chunk *c = b->spare;
        b->spare = c->next;
        b->nspare--;
        chunk_unmap(b, c);
    }
}

void bump_free(struct bump *b)
{
    if (!b)
        return;
    bump_clear(b);
    trim_spare(b, 0);
    free(b);
}

void *bump_alloc(struct bump *b, size_t n)
{
    n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (n <= (size_t)(b->end - b->at)) {
        void *p = b->at;
        b->at += n;
        UNPOISON(p, n);
        return p;
    }
    if (HEAD + n > CHUNK / 4) {
        /* Big: a mapping of its own, behind the chunk being filled. */
        struct chunk *c = chunk_map(b, (HEAD + n + CHUNK - 1) / CHUNK * CHUNK);
        if (b->used) {
            c->next = b->used->next;
            b->used->next = c;
        } else {
            c->next = NULL;
            b->used = c;
        }
        UNPOISON((char *)c + HEAD, n);
        return (char *)c + HEAD;
    }
    struct chunk *c = b->spare;
    if (c) {
        b->spare = c->next;
        b->nspare--;
    } else {
        c = chunk_map(b, CHUNK);
    }
    c->next = b->used;
    b->used = c;
    b->nused++;
    b->at = (char *)c + HEAD + n;
    b->end = (char *)c + CHUNK;
    UNPOISON((char *)c + HEAD, n);
    return (char *)c + HEAD;
}

void bump_clear(struct bump *b)
{
    size_t keep = b->nused;
    while (b->used) {
        struct chunk *c = b->used;
        b->used = c->next;
        if (c->size != CHUNK) {
            chunk_unmap(b, c);
            continue;
        }
        POISON((char *)c + HEAD, c->size - HEAD);
        c->next = b->spare;
        b->spare = c;
        b->nspare++;
    }
    /* Kept: as many as this round used, or nearly all that were kept
     * before, whichever is more, so the chunks of a burst go back to the
     * system slowly (a sixty-fourth, at least one, at each clear: half of
     * many in 44 clears, a minute or so). Mapping them again costs the
     * kernel's zeroing of every page, a large share of folding when quieter
     * seconds gave chunks back sooner (bench/HISTORY.md, "after commit
     * 3398b71", page faults). */
    size_t slowly = b->keep - (b->keep + 63) / 64;
    if (keep < slowly)
        keep = slowly;
    b->keep = keep;
    trim_spare(b, keep);
    b->nused = 0;
    b->at = b->end = NULL;
}

size_t bump_mapped(const struct bump *b) { return b->mapped; }

size_t bump_used(const struct bump *b) { return b->mapped - b->nspare * CHUNK; }
