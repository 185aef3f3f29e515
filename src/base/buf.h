/* buf.h - a growable byte string, always NUL-terminated once it holds memory
 * (curl's dynbuf, Git's strbuf). Allocation failure aborts: internal memory
 * is not something a request can exhaust, because sizes from clients are
 * checked against limits before they reach a buf. */
#ifndef SHORTD_BUF_H
#define SHORTD_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    char *p;    /* NULL until the first write */
    size_t len; /* bytes in use, not counting the NUL */
    size_t cap; /* bytes allocated */
};

/* Borrowed bytes: request data, parts of a buf. Never owns. */
struct slice {
    const char *p;
    size_t n;
};

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }
#define SLICE_LIT(s) ((struct slice){(s), sizeof(s) - 1})

void buf_init(struct buf *b);
void buf_release(struct buf *b);              /* frees; the buf is empty and reusable */
void buf_reset(struct buf *b);                /* len = 0, keeps the memory */
void buf_truncate(struct buf *b, size_t len); /* drops what is past 'len', if anything */
void buf_reserve(struct buf *b, size_t extra);

/* Appending */
void buf_add(struct buf *b, const void *p, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_addc(struct buf *b, char c);
void buf_add_u64(struct buf *b, uint64_t v);
void buf_add_i64(struct buf *b, int64_t v);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reading */
const char *buf_cstr(const struct buf *b); /* "" for an empty buf */

/* Hands the memory to the caller (free() it); the buf is left empty. */
char *buf_detach(struct buf *b, size_t *len);

/* Slices */
int slice_eq(struct slice s, const char *lit);  /* exact */
int slice_ieq(struct slice s, const char *lit); /* ASCII case-insensitive */
char *slice_dup(struct slice s);                /* malloc'd, NUL-terminated */
char *xstrdup(const char *s);                   /* strdup that aborts on failure */

#endif
