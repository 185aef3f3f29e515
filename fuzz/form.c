/* form.c (fuzz) - form parameters (form.h) on any bytes.
 *
 * The input is a Content-Type, a body and a query string, separated by the
 * first two NUL bytes (a missing one leaves the later parts empty); its first
 * byte picks the parameter asked for and the most bytes taken. Besides
 * surviving it, form_value must keep its promises: a value is
 * NUL-terminated, within the most asked for, never longer than the part it
 * came from (decoding only shrinks), and asking again gives the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "http/form.h"
#include "base/banned.h"

static void check(int cond)
{
    if (!cond)
        abort();
}

/* The next part of the input, up to a NUL (or the end). */
static struct slice part(const char **p, const char *end)
{
    const char *start = *p;
    const char *nul = memchr(start, '\0', (size_t)(end - start));
    const char *stop = nul ? nul : end;
    *p = nul ? nul + 1 : end;
    return (struct slice){start, (size_t)(stop - start)};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"url", "signature", "action", "a", "", "format"};
    if (!size)
        return 0;
    const char *name = names[data[0] % 6];
    size_t max = data[0] & 0x80 ? 8 : 65536;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    struct slice ct = part(&p, end);
    struct slice body = part(&p, end);
    struct slice query = {p, (size_t)(end - p)};
    size_t n = 0;
    char *v = form_value(ct, body, query, name, max, &n);
    if (v) {
        check(n <= max);
        check(n <= (body.n > query.n ? body.n : query.n));
        check(v[n] == '\0');
        size_t n2 = 0;
        char *again = form_value(ct, body, query, name, max, &n2);
        check(again && n2 == n && memcmp(again, v, n) == 0);
        free(again);
    }
    free(v);
    /* no Content-Type: the body is not a form, whatever it holds */
    char *q = form_value((struct slice){NULL, 0}, body, (struct slice){NULL, 0}, name, max, &n);
    check(!q);
    return 0;
}
